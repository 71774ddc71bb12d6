/*
 * optimize.h - compiler feedback from estimated counts (docs/architecture.md,
 * "Rooms";
 * the DCPI paper's sec. 6 estimates put to the use sec. 8 foresees).
 *
 * Every writer starts from ESTIMATED executions (estimate.h, est_procedure
 * over every sampled procedure of an image), not from raw samples: a sample
 * count says where time went, an execution count says how often code ran,
 * which is what a compiler's profile means.
 *
 *   opt_src_build   executions -> a source-level profile: per function (by
 *                   its linkage name, compiler clone suffixes dropped) the
 *                   count of every source location as (line - the function's
 *                   DW_AT_decl_line, discriminator), the call targets of each
 *                   call, and each inlined call site as a nested function.
 *                   A location's count is the largest over its instructions
 *                   (as AutoFDO does: one execution of a line runs each of
 *                   its instructions once).
 *   opt_llvm_write  LLVM's sample-profile text format
 *                   (clang -fprofile-sample-use; llvm-profdata show --sample)
 *   opt_gcc_write   the AutoFDO gcov format gcc -fauto-profile reads
 *   opt_bolt_write  BOLT's fdata: branch and call records with estimated
 *                   edge counts (llvm-bolt -data)
 *   prefetch hints  loads the dynamic-stall culprits charge with D-cache
 *                   cycles, in loops where their address steps by a
 *                   constant: LLVM's prefetch-hints file (a sample profile
 *                   whose call targets __prefetch_t0_N carry the byte delta;
 *                   clang -mllvm -prefetch-hints-file, with
 *                   -mllvm -x86-discriminate-memops at both builds)
 *
 * Writers produce the whole file in memory and write it atomically, so a
 * failure never leaves a malformed file behind.  A profile with no samples,
 * or (for the source-level formats) an image with no DWARF, is an error with
 * a message, not an empty file.
 */
#ifndef DCPI_OPTIMIZE_H
#define DCPI_OPTIMIZE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/analysis.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/profile.h"
#include "dcpi/util.h"

/* How the estimates are made: one for every writer.  The counts are
 * est_analyze's (include/dcpi/analysis.h), the same dcpicalc prints. */
struct opt_est {
	struct est_input *in;	/* the epoch's analysis input (est_input_open) */
	double min_samples;	/* skip procedures with fewer samples (default 1) */
	int raw_samples;	/* counts are samples, not executions: what a
				 * sampler without estimation (AutoFDO without
				 * LBR) has; for comparison */
};

struct opt_target {
	char *name;
	uint64_t count;
};

/* One source location of a function: line offset and discriminator. */
struct opt_loc {
	uint32_t offset, discr;
	uint64_t count;
	struct opt_target *targets;	/* calls made there, not inlined */
	size_t ntargets;
};

struct opt_func;

struct opt_callsite {
	uint32_t offset, discr;		/* of the call, in the caller */
	struct opt_func *callee;	/* the inlined instance */
};

struct opt_func {
	char *name;
	uint32_t decl_line;
	uint64_t total;			/* its locations and its inlinees', summed */
	uint64_t head;			/* entries (top level only): its incoming
					 * calls' count where the profile has
					 * calls to it, else its entry block's */
	struct opt_loc *locs;		/* sorted by (offset, discr) after build */
	size_t nlocs;
	struct opt_callsite *calls;	/* sorted likewise */
	size_t ncalls;
	uint64_t checksum;		/* probe-based: the CFG checksum the
					 * compiler checks the probes against */
};

/* Discriminators as DWARF holds them, or decoded the way a consumer reads
 * them: LLVM's base discriminator; gcc 12 ignores them. */
enum opt_discr {
	OPT_D_RAW,
	OPT_D_LLVM_BASE,
	OPT_D_NONE,
};

struct opt_src {
	struct opt_func **funcs;	/* top level, by decreasing total */
	size_t nfuncs;
	size_t nprocs;			/* procedures estimated */
	double samples;			/* samples placed in them */
	size_t no_line;			/* executed instructions with no line */
	size_t no_decl;			/* procedures with no DW_AT_decl_line */
	size_t skipped;			/* procedures whose code could not be read */
	enum opt_discr discr;
	int raw_heads;			/* heads are entry-block counts, not the
					 * sum of the calls into the function */
	int want_probes;		/* key by pseudo probes where the image has
					 * them (LLVM's format) */
	int probes;			/* keyed by pseudo probes, not lines: the
					 * image was built with
					 * -fpseudo-probe-for-profiling */
	size_t no_probe;		/* probes not placed: their function has no
					 * symbol or description here */
	size_t nimages;			/* images added */
};

/* Defaults: input in (est_input_open'd by the caller), min 1 sample. */
void opt_est_default(struct opt_est *e, struct est_input *in);

/*
 * The source-level profile of img from its profile p (one event).
 * -ENODATA when p has no samples in img's procedures or img has no DWARF
 * (err says which).
 */
int opt_src_build(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  enum opt_discr discr, struct opt_src **out, struct dcpi_err *err);
void opt_src_free(struct opt_src *s);
/* The same in steps, to gather several images into one profile: add each
 * image (-ENODATA when it has no DWARF or no sampled procedure; the profile
 * is unchanged), then finish (sorts, totals; -ENODATA when empty). */
struct opt_src *opt_src_new(enum opt_discr discr);
int opt_src_add(struct opt_src *s, struct image *img, const struct prof_profile *p,
		const struct opt_est *e, struct dcpi_err *err);
int opt_src_finish(struct opt_src *s, struct dcpi_err *err);

/* The text of the formats, malloc'd (for tests and for -o -). */
int opt_llvm_text(const struct opt_src *s, char **out, size_t *len, struct dcpi_err *err);
int opt_gcc_bytes(const struct opt_src *s, uint8_t **out, size_t *len, struct dcpi_err *err);
struct opt_walk;	/* counts of procedures estimated / skipped (may be NULL) */
int opt_bolt_text(struct image *img, const struct prof_profile *p,
		  const struct opt_est *e, char **out, size_t *len, struct opt_walk *w,
		  struct dcpi_err *err);

/* Write buf to the path the user named, by dcpi_write_output's rule
 * (include/dcpi/safefile.h: "-" is standard output). */
int opt_write_file(const char *path, const void *buf, size_t len, struct dcpi_err *err);

/* The name a compiler knows a procedure by: the symbol without a clone
 * suffix (".cold", ".part.0", ".isra.0", ...) and without "@plt"; clang's
 * ".__uniq.<digits>" is part of the name. */
void opt_base_name(const char *sym, char *out, size_t len);

/* An LLVM discriminator's base discriminator, and its duplication factor (1
 * when none is encoded): DILocation's encoding under -fdebug-info-for-profiling. */
uint32_t opt_llvm_base_discr(uint32_t d);
uint32_t opt_llvm_dup_factor(uint32_t d);

/* ---- one request: database in, feedback file out (the tools' work) ---- */

enum opt_format { OPT_F_LLVM, OPT_F_GCC, OPT_F_BOLT, OPT_F_PREFETCH };

/* One load considered for a prefetch hint, hinted or not (why says). */
struct opt_hint {
	char proc[160];
	uint64_t addr;			/* the load's virtual address */
	char file[160];
	unsigned line, discr;
	double executions;
	double stall;			/* D-cache stall cycles charged to it */
	double share;			/* of the image's sampled cycles */
	int64_t stride;			/* bytes per iteration, 0: none */
	double iter_cycles;		/* cycles per iteration of its loop */
	double iter_best;		/* the same in the best case (no miss) */
	double latency;			/* cycles a prefetch must run ahead */
	unsigned distance;		/* iterations ahead */
	int64_t delta;			/* distance x stride */
	char why[128];			/* "" when hinted, else why not */
};

struct opt_hints {
	struct opt_hint *v;
	size_t n, cap;
	double cycles;			/* the images' sampled cycles */
	int exact;			/* executions from callgrind, not estimated */
	size_t events;			/* event profiles that bounded the culprits */
};

struct opt_request {
	enum opt_format format;
	const char *db;			/* database directory */
	const char *epoch;		/* NULL: the newest */
	const char *event;		/* NULL: cycles, else cpu-clock, ... */
	const char *const *progs;	/* images; none: the most sampled one */
	size_t nprogs;
	const char *out;		/* file, or "-" */
	struct est_analysis_opts ana;	/* est_analysis_opts_default and the
					 * user's analysis options */
	int raw_samples;		/* opt_est.raw_samples */
	double min_samples;		/* 0: 1 */
	int lines;			/* LLVM: key by lines even where the image
					 * has pseudo probes */
	/* prefetch hints: */
	double min_share;		/* loads charged with at least this share
					 * of the cycles (0: 0.01) */
};

struct opt_summary {
	char epoch[256], event[PROF_EVENT_MAX];
	size_t nimages, nprocs, nfuncs, no_line, bytes;
	size_t skipped;			/* sampled procedures not decodable */
	double samples;
	int relative;			/* uncalibrated: counts are relative */
	uint64_t lbr_stacks;		/* counts from branch records (0: estimated) */
	char notes[2048];		/* images skipped, and why */
	int probes;			/* LLVM: keyed by pseudo probes */
	size_t no_probe;		/* probes not placed (no symbol here) */
	struct opt_hints hints;		/* OPT_F_PREFETCH: every load considered */
};

void opt_summary_free(struct opt_summary *sum);

const char *opt_format_name(enum opt_format f);
int opt_feedback(const struct opt_request *rq, struct opt_summary *sum, struct dcpi_err *err);

#endif /* DCPI_OPTIMIZE_H */
