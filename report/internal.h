/*
 * report/internal.h - module-private pieces of report/.
 */
#ifndef DCPI_REPORT_INTERNAL_H
#define DCPI_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/kallsyms.h"
#include "dcpi/util.h"

/* Is path a perf map file (/tmp/perf-PID.map)?  Its symbols load into the
 * table of the kernel's (include/dcpi/kallsyms.h: ksyms_find, ksyms_free). */
int rep_is_jitmap_path(const char *path);
int rep_jitmap_load(const char *path, struct ksyms *m, struct dcpi_err *err);
/* Is path the kernel's pseudo-image?  Its procedures from /proc/kallsyms,
 * as a perf map's (report/load.c). */
int rep_is_kernel_path(const char *path);
int rep_kernel_syms_load(struct ksyms *m, struct dcpi_err *err);
struct prof_profile;
/* spec names a kernel procedure with samples in p: -ENOENT and why no
 * analysis reads it; else 0. */
int rep_kernel_proc_note(const struct prof_profile *p, size_t n, const char *spec,
			 struct dcpi_err *err);

struct prof_image_id;
struct image;
/* Is the file at id->path still the image that was profiled (report/find.c)?
 * By build-id when both have one, else by size and mtime. */
int rep_still_profiled(const struct prof_image_id *id, const struct image *img);

#include <stdio.h>

struct rep_calc;
/* The JSON fields a procedure's report opens with (report/calc.c). */
void rep_calc_json_head(FILE *f, const struct rep_calc *c);
/* s as a JSON string (rep_json_str), or null when s is NULL (report/calc.c). */
void rep_json_str_or_null(FILE *f, const char *s);
struct cfg;
typedef struct Agraph_s Agraph_t;
/* The cluster of loop l (nested in its parents' clusters), made on first
 * use: report/cfgplain.c, for both CFG renderers. */
Agraph_t *rep_loop_graph(Agraph_t *root, Agraph_t **sub, const struct cfg *cfg, int l);
/* Graph g of the procedure name to f as DOT (format "dot") or laid out and
 * rendered by graphviz in format, then g closed: report/cfgplain.c, for both. */
int rep_graph_write(Agraph_t *g, const char *name, const char *format, FILE *f,
		    struct dcpi_err *err);

/*
 * The value reports' shared pieces (report/values.c for report/vreports.c).
 */
#include "dcpi/profile.h"
#include "dcpi/values.h"

#include "dcpi/image.h"

struct rv_img {				/* an image opened to name code */
	char *path;
	struct image *img;		/* NULL: could not (a note says why) */
};

struct rep_vals {
	struct prof_db *db;
	char epoch[256];
	struct prof_profile *p;		/* the epoch's sample profiles */
	size_t np;
	const char *event;		/* the event that weighs time, NULL: none */
	struct prof_epoch_meta meta;
	int have_meta;
	struct val_profile *vp;		/* its value profiles, normalized */
	size_t nvp;
	struct rv_img *imgs;
	size_t nimgs;
};

/* One value profile's image, samples and cycles per sample. */
struct rv_ctx {
	struct rep_vals *v;
	const struct val_profile *vp;
	struct image *img;		/* NULL: its code cannot be read */
	const struct prof_profile *prof;	/* NULL: no samples of it */
	double cps;			/* cycles per sample, 0: unknown */
};

struct rv_time {
	double samples, cycles;
	int have_cycles;		/* 0: what a sample is worth is unknown */
};

struct image *rv_image(struct rep_vals *v, const struct prof_image_id *id);
const struct prof_profile *rv_samples(const struct rep_vals *v, const struct prof_image_id *id);
void rv_image_ctx(struct rep_vals *v, const struct val_profile *vp, struct rv_ctx *c);
void rv_time(const struct rv_ctx *c, uint64_t lo, uint64_t hi, struct rv_time *t);
/* What lists are ordered by: cycles when known, else samples. */
double rv_weight(const struct rv_time *t);
struct cfg_insn;
int rv_decode(const struct rv_ctx *c, uint64_t off, struct cfg_insn *in);
const struct img_proc *rv_proc_at(const struct rv_ctx *c, uint64_t off, uint64_t *vaddr);
int rv_proc_range(const struct rv_ctx *c, const struct img_proc *p, uint64_t *lo,
		  uint64_t *hi);
void rv_place(const struct rv_ctx *c, uint64_t off, char *buf, size_t len);
const char *rv_code_text(const struct rv_ctx *c, uint64_t v, char *buf, size_t len);
const char *rv_value_text(const struct rv_ctx *c, uint32_t kind, uint64_t v, char *buf,
			  size_t len);
double rv_top_share(const struct val_hotlist *h);
void rv_value_json(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, uint32_t i);
void rv_list_json(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, size_t top);
void rv_list_text(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, size_t top);
int rv_find_proc(struct rep_vals *v, const char *spec, size_t *which,
		 const struct img_proc **proc, struct dcpi_err *err);
/* rv_find_proc, then the procedure's image context in c and its file
 * offsets [lo, hi); -ENOENT when it is in no loadable segment. */
int rv_find_proc_range(struct rep_vals *v, const char *spec, size_t *which,
		       const struct img_proc **proc, struct rv_ctx *c, uint64_t *lo,
		       uint64_t *hi, struct dcpi_err *err);
void rv_json_head(FILE *f, const struct rep_vals *v);

/* What DWARF says a procedure's argument registers hold (report/vreports.c,
 * over image/dwarf.c's img_params), for dcpivargs and dcpi specialize. */
#define RV_MAXPARAMS 16
struct rv_args {
	int dwarf;			/* 0: no DWARF, all six registers count */
	int variadic;			/* registers after the parameters may hold "..." */
	int ngpr;			/* argument registers the parameters use */
	size_t n, nall;			/* parameters kept in p[], and in all */
	struct img_param p[RV_MAXPARAMS];
};
void rv_args(const struct rv_ctx *c, uint64_t off, struct rv_args *a);
/* Argument register r (0..5, rdi..r9) as "k (rdi)", "v[8:16] (rsi)", "... (rdx)"
 * with DWARF, else "argR"; name (may be NULL) gets the bare name ("k", "argR").
 * 0 when the procedure takes nothing in r. */
int rv_arg_label(const struct rv_args *a, int r, char *buf, size_t len, char *name,
		 size_t nlen);

#endif /* DCPI_REPORT_INTERNAL_H */
