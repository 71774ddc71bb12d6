/*
 * optimize/internal.h - what the feedback writers share inside optimize/:
 * the walk over every sampled procedure of an image with its estimate, and a
 * growing text buffer.
 */
#ifndef DCPI_OPTIMIZE_INTERNAL_H
#define DCPI_OPTIMIZE_INTERNAL_H

#include <stdarg.h>

#include "dcpi/cfg.h"
#include "dcpi/optimize.h"

/* Called once per estimated procedure; a negative return stops the walk. */
typedef int (*opt_proc_fn)(struct image *img, const struct img_proc *proc,
			   struct est_analysis *a, void *ctx, struct dcpi_err *err);

/* What a walk did: procedures estimated, their samples, and procedures
 * skipped because their code could not be decoded or read (counted, so a
 * writer can say what it dropped). */
struct opt_walk {
	size_t nprocs, skipped;
	double samples;
};

/*
 * Estimate every procedure of img that holds at least e->min_samples of p's
 * samples, in address order, and call fn for each; w (may be NULL) receives
 * the counts.  -ENODATA when none qualifies.
 */
int opt_each_proc(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  opt_proc_fn fn, void *ctx, struct opt_walk *w, struct dcpi_err *err);

struct opt_buf {
	char *s;
	size_t len, cap;
	int oom;
};

void opt_buf_printf(struct opt_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void opt_buf_put(struct opt_buf *b, const void *data, size_t len);

/* Place a call target named target with count value at in's source
 * location (inline stack followed) in proc's function of s: how the prefetch
 * hints ride in a sample profile.  -ENODATA when in has no line or proc no
 * DW_AT_decl_line. */
int opt_src_target(struct opt_src *s, struct image *img, const struct img_proc *proc,
		   const struct cfg_insn *in, uint64_t count, const char *target,
		   uint64_t value, struct dcpi_err *err);

/* Prefetch hints for img's loads into src, every load considered into h
 * (prefetch.c): p the image's samples; the culprits are est_analyze's. */
int opt_prefetch_add(struct opt_src *src, struct image *img, const struct prof_profile *p,
		     const struct opt_est *e, double min_share, struct opt_hints *h,
		     struct dcpi_err *err);

/* Pseudo probes of an image (probes.c): the probes sorted by address, the
 * inline tree nodes they belong to, and the functions' descriptions. */
struct opt_probe {
	uint64_t addr;
	uint32_t index;			/* the block's (or call's) id in its function */
	uint32_t node;			/* opt_probes.nodes[] */
	uint8_t type;			/* 0 block, 1 indirect call, 2 direct call */
};

struct opt_pnode {
	uint64_t guid;			/* the function the probes are of */
	uint32_t parent;		/* UINT32_MAX at a top-level function */
	uint32_t site;			/* the call's probe index in the parent */
};

struct opt_pdesc {
	uint64_t guid, hash;		/* hash: the CFG checksum */
	char *name;
};

struct opt_probes {
	struct opt_probe *v;
	size_t n;
	struct opt_pnode *nodes;
	size_t nn;
	struct opt_pdesc *desc;		/* sorted by guid */
	size_t nd;
	size_t unresolved;		/* probes of functions with no symbol here */
};

/* -ENOENT (no message) when img has no pseudo-probe sections. */
int opt_probes_load(struct image *img, struct opt_probes *pp, struct dcpi_err *err);
void opt_probes_free(struct opt_probes *pp);
const struct opt_pdesc *opt_probes_desc(const struct opt_probes *pp, uint64_t guid);
/* Index of the first probe at or after addr. */
size_t opt_probes_first(const struct opt_probes *pp, uint64_t addr);

/* Round an estimated count; negative and NaN are 0. */
uint64_t opt_count(double executions);

#endif /* DCPI_OPTIMIZE_INTERNAL_H */
