/*
 * report.h - summaries of a set of profiles: samples per procedure or per
 * image, per event (what dcpiprof prints; DCPI paper sec. 3.1, fig. 1).
 *
 * Profiles are keyed by image identity and file offset; this part opens each
 * image (image.h), checks that it is the image that was profiled (build-id,
 * else size and mtime) and attributes each offset to its procedure.
 */
#ifndef DCPI_REPORT_H
#define DCPI_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dcpi/culprit.h"
#include "dcpi/analysis.h"
#include "dcpi/estimate.h"
#include "dcpi/profile.h"
#include "dcpi/util.h"

struct rep_row {
	char *name;		/* procedure as printed, or the image path with by_image */
	char *image;		/* image path */
	uint64_t addr;		/* procedure start (virtual address), 0 if none */
	uint64_t *samples;	/* one count per event of the table */
};

struct rep_event {
	char name[PROF_EVENT_MAX];
	uint64_t total;
	double period;		/* mean sampling period */
	char period_unit[16];
};

struct rep_table {
	size_t nevents;
	struct rep_event *events;
	size_t nrows;
	struct rep_row *rows;
	size_t nnotes;
	char **notes;		/* what could not be attributed, and why */
};

/*
 * Summarize n profiles per procedure (by_image = 0) or per image.  Samples at
 * offsets inside no procedure go to a row "[unknown]" of their image; images
 * that cannot be opened or no longer match the profiled one get one row
 * "[<reason>]" each and a note.
 */
int rep_summarize(const struct prof_profile *p, size_t n, int by_image,
		  struct rep_table *out, struct dcpi_err *err);
/* Sort rows by decreasing samples of event ev (ties: name, then image). */
void rep_sort(struct rep_table *t, size_t ev);
/* Index of an event by name, -1 if absent. */
int rep_event_index(const struct rep_table *t, const char *name);
void rep_free(struct rep_table *t);

/* Order of events for display and choice: cycles, cpu-clock, task-clock, rest. */
int rep_event_rank(const char *event);

/* The first nrows rows of t as dcpiprof prints them, sorted by event ev
 * (report/proftable.c); where names the database (or the fleet). */
void rep_prof_text(FILE *f, const struct rep_table *t, int by_image, const char *where,
		   const char *epoch, size_t nrows, size_t ev);
/* The same as one JSON object, with db's damaged files (rep_json_damaged). */
void rep_prof_json(FILE *f, const struct rep_table *t, int by_image, const char *epoch,
		   size_t nrows, const struct prof_db *db);

/*
 * Culprits of dynamic stalls as dcpicalc prints them (report/culprits.c;
 * docs/culprits.md).
 */
struct cfg;
struct image;
struct est_result;
struct cul_stall;
struct cul_result;
/* "   d  D-cache on 0x..." lines above a stalled instruction (none if s is
 * NULL); per_exec: its dynamic stall cycles per execution. */
void rep_culprit_bubbles(FILE *f, const struct cfg *cfg, const struct cul_stall *s,
			 double per_exec);
/* ", \"dynamic_cycles\": N, \"culprits\": [...]" inside an instruction's object. */
void rep_culprit_json(FILE *f, const struct cfg *cfg, const struct cul_stall *s);
/* Fig. 4 over one procedure or many (an image): cycles, dynamic stalls by
 * cause (min, max, likeliest split), static stalls by the model's reason. */
struct rep_stalls {
	size_t procs;
	double cycles, best, dynamic;
	double min[CUL_NCAUSES + 1], max[CUL_NCAUSES + 1], share[CUL_NCAUSES + 1];
	double by_reason[16];		/* enum model_reason */
	double measured_n[CUL_NEVENTS], measured_cycles[CUL_NEVENTS], measured_dram;
};
void rep_stalls_add(struct rep_stalls *t, const struct cfg *cfg, const struct est_result *r,
		    const struct cul_result *cr);
void rep_stalls_text(FILE *f, const char *what, const struct rep_stalls *t);
void rep_stalls_json(FILE *f, const struct rep_stalls *t);
/* Fig. 4: dynamic stalls by cause (min - max), static stalls by reason. */
void rep_culprit_summary_text(FILE *f, const char *proc, const struct cfg *cfg,
			      const struct est_result *r, const struct cul_result *cr);
void rep_culprit_summary_json(FILE *f, const struct cfg *cfg, const struct est_result *r,
			      const struct cul_result *cr);

/*
 * Profiles compared (report/stats.c): dcpistats over several runs (the
 * paper's fig. 3) and dcpidiff between two, from dcpiprof's tables.
 */
struct rep_stat_row {
	char *name, *image;
	uint64_t addr;
	size_t n;			/* runs it has samples in */
	double sum, sum_share, mean, sd, min, max;
	double range;			/* (max - min) / sum */
	double range_lo;		/* range less each end's 99% sampling error,
					 * >= 0: the evidence dcpistats ranks by */
	double *per_set;		/* samples in each run */
};

struct rep_stats {
	size_t nsets;
	uint64_t total;			/* the event's samples over all runs */
	double phi;			/* run-to-run dispersion of the shares
					 * (1: sampling noise only), 0 if unknown */
	size_t nrows;
	struct rep_stat_row *rows;	/* by evidence (range_lo), then sum */
};

enum rep_stats_order { REP_BY_EVIDENCE, REP_BY_SUM, REP_BY_RANGE };

int rep_stats(const struct rep_table *sets, size_t nsets, const char *event,
	      struct rep_stats *out, struct dcpi_err *err);
void rep_stats_sort(struct rep_stats *s, int order);	/* enum rep_stats_order */
void rep_stats_free(struct rep_stats *s);
void rep_stats_text(FILE *f, const struct rep_stats *s, const char *const *labels,
		    size_t limit);
void rep_stats_json(FILE *f, const struct rep_stats *s, const char *const *labels,
		    size_t limit);

struct rep_diff_row {
	char *name, *image;
	uint64_t a, b;			/* samples before and after */
	double pa, pb, change;		/* shares of each total, pb - pa */
	double z;			/* change / its error, sampling and run-to-run
					 * (docs/diff.md) */
	double p;			/* two-sided, Holm-adjusted; 1: not tested */
	int tested, sig;		/* sig: p <= the diff's level */
	double xa, xb;			/* estimated instructions executed before and
					 * after, -1: not estimated (rep_diff_executions) */
	int have_x, relative;		/* relative: x uncalibrated, only xb / xa means */
};

struct rep_diff {
	uint64_t ta, tb;
	size_t na, nb;			/* epochs of each side */
	double phi;			/* overdispersion used (>= 1) */
	double phi_raw;			/* as estimated, before the floor; 0: none */
	const char *phi_from;		/* "epochs", "procedures" or "none" */
	double level;			/* family-wise significance level */
	int normalized;			/* z against the other procedures' median */
	size_t ntested, nsig;
	size_t nrows;
	struct rep_diff_row *rows;	/* by |change| */
};

#define REP_DIFF_LEVEL 0.01

/* rep_diff_epochs with one epoch each side, at REP_DIFF_LEVEL. */
int rep_diff(const struct rep_table *a, const struct rep_table *b, const char *event,
	     struct rep_diff *out, struct dcpi_err *err);
/* Each side several epochs (na, nb >= 1) of one program, their samples
 * summed; the epochs' spread is the run-to-run variation (docs/diff.md). */
int rep_diff_epochs(const struct rep_table *a, size_t na, const struct rep_table *b, size_t nb,
		    const char *event, double level, struct rep_diff *out, struct dcpi_err *err);
void rep_diff_sort(struct rep_diff *d);
/* Estimated instructions executed by the first limit rows, from the profiles
 * of each side (database dir and its epochs, summed; NULL: the newest). */
int rep_diff_executions(struct rep_diff *d, const char *event, const char *dira,
			const char *const *epochsa, size_t na, const char *dirb,
			const char *const *epochsb, size_t nb, size_t limit, struct dcpi_err *err);
void rep_diff_free(struct rep_diff *d);
void rep_diff_text(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit);
void rep_diff_json(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit);

/* dcpilist (report/list.c): source lines with their instructions, per line
 * and instruction samples, executions, CPI and the first culprit. */
void rep_list_text(FILE *f, const struct cfg *cfg, struct image *img,
		   const struct est_result *r, const struct cul_result *cul);
void rep_list_json(FILE *f, const struct cfg *cfg, struct image *img,
		   const struct est_result *r, const struct cul_result *cul);

/*
 * The annotated CFG (report/cfgviz.c): blocks filled by share of cycles,
 * edges by estimated executions (dashed where path samples never saw them),
 * per block executions, CPIs and top culprit; only the blocks holding `hot`
 * of the cycles (0 < hot <= 1), cold regions collapsed.  h NULL or h->r NULL:
 * the plain graph.  format: dot, svg, png, pdf.
 */
struct rep_cfg_heat {
	const struct est_result *r;
	const struct cul_result *cul;	/* may be NULL */
	const double *edge_obs;		/* per edge, path transitions seen, or NULL */
	double hot;
};
int rep_cfg_render(const struct cfg *cfg, const struct rep_cfg_heat *h, const char *format,
		   FILE *f, struct dcpi_err *err);
/* The CFG without a profile (report/cfgplain.c): blocks with their
 * instructions, edges by kind, cycle-equivalence classes as colors. */
int rep_cfg_plain(const struct cfg *cfg, const char *format, FILE *f, struct dcpi_err *err);
void rep_cfg_json(FILE *f, const struct cfg *cfg, const char *image);

/* An epoch's profiles as a gzip'd pprof profile.proto (report/pprof.c):
 * *out malloc'd.  meta (may be NULL) gives the time span. */
int rep_pprof(const struct prof_profile *p, size_t np, const struct prof_epoch_meta *meta,
	      uint8_t **out, size_t *outlen, struct dcpi_err *err);

/*
 * dcpicalc's output (report/calc.c): the analysis of one procedure as
 * tools/cmd_calc.c made it (shallow copies: the tool owns and frees them), shown
 * as the paper's fig. 2 (text), as JSON, or as the model's static schedule.
 */
struct rep_mem_insn;
struct rep_calc {
	struct {
		int all, json, skid_given;
		struct est_opts opts;
		struct est_path_opts popts;
	} a;
	const char *epoch;
	const struct prof_db *db;		/* for its damaged files; may be NULL */
	const struct prof_profile *prof;	/* the (image, event) analysed */
	struct prof_epoch_meta meta;
	int have_meta;
	struct image *img;
	const struct img_proc *proc;
	const struct cfg *cfg;
	const struct model *model;
	const char *model_from;			/* its file, NULL: shipped */
	double total;				/* samples in the procedure */
	struct est_result r;
	const char *cal_path;			/* the skid calibration used */
	int have_cal;
	const char *exposure_note;		/* where destall.c's f came from */
	struct est_measurements meas;		/* best cases timed here */
	int have_meas;
	const char *meas_why;			/* why not, when not */
	const struct path_profile *pp;		/* NULL: no path samples */
	struct est_path_info pinfo;
	struct est_events ev;
	struct cul_result cul;
	const struct est_replay *replays;	/* loads replayed (estimate/replay.c) */
	size_t nreplays;
	const char *const *source_dirs;		/* dcpilist --source-dir, in order */
	size_t nsource_dirs;
	const struct rep_mem_insn *objs;	/* the object each instruction touched
						 * (include/dcpi/data.h); may be NULL */
	size_t nobjs;
};
/* The view of one analysis (borrowing from in and an): everything but the
 * caller's own (all, json, epoch, db, prof, img, proc). */
void rep_calc_of(struct rep_calc *v, const struct est_input *in, const struct est_analysis *an);
void rep_calc_text(FILE *f, const struct rep_calc *c);
void rep_calc_json(FILE *f, const struct rep_calc *c);
int rep_calc_static(FILE *f, const struct rep_calc *c, struct dcpi_err *err);

/* `dcpi model` (report/model.c): schedule insns[0..n) as one block and print
 * it, text or JSON (*first: no separator before it yet); which table is in
 * use and the source of each of its numbers (auto_chosen: not by name). */
int rep_model_block(FILE *f, const struct model *m, const struct cfg_insn *insns, size_t n,
		    int json, int *first, struct dcpi_err *err);
void rep_model_show(FILE *f, const struct model *m, int auto_chosen);
/* dcpi calibrate's summary of cal, written to path (report/model.c). */
void rep_calibration_text(FILE *f, const struct est_calibration *cal, const char *path);
/* dcpilist of the same analysis (report/list.c). */
void rep_calc_list(FILE *f, const struct rep_calc *c, int json);
/* s as a JSON string (quoted, escaped): every --json output uses it. */
void rep_json_str(FILE *f, const char *s);
/* "damaged": [...] of a --json output: the profile files of the epoch read
 * that were skipped as damaged (docs/profile-format.md), [] when none or
 * db is NULL (report/calc.c). */
void rep_json_damaged(FILE *f, const struct prof_db *db);

/* The prefetch-hints report (report/hints.c): text and JSON. */
struct opt_hints;
void rep_hints_text(FILE *f, const struct opt_hints *h);
void rep_hints_json(FILE *f, const struct opt_hints *h);

struct image;
struct img_proc;

/*
 * The profiled image that holds procedure spec (a name as dcpiprof prints
 * it, or 0xADDRESS): the profiles p[0..n) of event (any when NULL) are
 * searched, skipping pseudo-images ("[unknown]", "[vdso]") and files that are
 * no longer the profiled image.  On success *img is open (img_flags), *proc is
 * in it and *which is the index of its profile.  -ENOENT when no image holds
 * it (err names the nearest procedure, if one is near); -EEXIST when a name
 * is in several different images, or an address is in several and not in
 * exactly one with samples there (err lists them with their samples).
 */
int rep_find_proc(const struct prof_profile *p, size_t n, const char *event, const char *spec,
		  unsigned img_flags, struct image **img, const struct img_proc **proc,
		  size_t *which, struct dcpi_err *err);

/*
 * What dcpicalc, dcpilist and dcpicfg analyse: the event (event, else the
 * best-ranked one present, rep_event_rank), then spec in image (a path: its
 * profile of the event, by identity or path) or among the profiled images
 * (rep_find_proc).  spec "*" or "IMAGE:*" names a whole image (*proc NULL):
 * the most sampled image whose path ends in IMAGE.  *img is open on success.
 */
int rep_find_target(const struct prof_profile *p, size_t n, const char *event, const char *spec,
		    const char *image, struct image **img, const struct img_proc **proc,
		    const struct prof_profile **prof, struct dcpi_err *err);
/* Damerau-Levenshtein distance (optimal string alignment) of a and b, and
 * the most a suggestion for word may be from it ("did you mean"). */
int rep_edit_distance(const char *a, const char *b);
int rep_suggest_max(const char *word);
/* spec names every procedure of an image ("*", "IMAGE:*"). */
int rep_whole_image(const char *spec);
/*
 * Profiles of an epoch, or of every epoch merged when epoch is "all", or of
 * the newest epoch holding profiles when epoch is NULL (newer empty ones are
 * skipped with a note in prof_db_notes).  The epoch used is copied to used
 * (at least 64 bytes) when not NULL.
 */
int rep_load_profiles(struct prof_db *db, const char *epoch, struct prof_profile **out,
		      size_t *n, char *used, size_t usedlen, struct dcpi_err *err);
/* dcpiprof's per-procedure table of one epoch (NULL: the newest) of the
 * database at dbdir; used receives the epoch read. */
int rep_load_table(const char *dbdir, const char *epoch, struct rep_table *t, char *used,
		   size_t usedlen, struct dcpi_err *err);

/*
 * The value-sample reports (report/values.c; docs/values.md, "Invariance"
 * and "Value reports"): dcpivlist, dcpivargs, dcpivcg, dcpivblks over an
 * epoch's value profiles (dcpi/values.h), each list weighed by the time its
 * instruction (or, for arguments and call sites, its procedure) took in the
 * epoch's sample profile.  The invariance of an (instruction, kind) is the
 * share of its most frequent value.
 */
#define REP_VAL_INVARIANT 0.9		/* top share at least this: invariant */
#define REP_VAL_SEMI_INVARIANT 0.5	/* ... this: semi-invariant; else variant */
#define REP_VAL_TOP 4			/* values a list shows */

enum rep_val_class { REP_VAL_VARIANT, REP_VAL_SEMI, REP_VAL_INV };
enum rep_val_class rep_val_classify(double top_share);
const char *rep_val_class_name(enum rep_val_class c);	/* "invariant", ... */

struct rep_vals;
/*
 * The value and sample profiles of an epoch of the database at dbdir (NULL:
 * the newest holding profiles; "all": every epoch merged).  -ENOENT with
 * "no value samples in DB/EPOCH: record with dcpi record --values" when the
 * epoch has none; a corrupt value file is an error naming it.
 */
int rep_vals_open(const char *dbdir, const char *epoch, struct rep_vals **out,
		  struct dcpi_err *err);
void rep_vals_close(struct rep_vals *v);
/* The marking plan of epoch (report/plan.c; docs/values.md, "Marking plan")
 * into DB/EPOCH/plan.txt; *nmarks: the procedures it marks. */
int rep_plan_write(const char *dbdir, const char *epoch, size_t *nmarks, struct dcpi_err *err);
/* The database (for its notes: images that could not be opened, ...). */
struct prof_db *rep_vals_db(struct rep_vals *v);
/* Per instruction of proc with values: time, text, kind, values, class. */
int rep_vlist(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err);
/* Per procedure (proc, or every one when NULL): each argument's top value
 * and share, the call sites and theirs; by time. */
int rep_vargs(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err);
/* Per indirect call or jump site (in proc, or anywhere): its targets. */
int rep_vcg(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err);
/* Per basic block of proc: its instructions' value profiles summarised. */
int rep_vblks(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err);
/*
 * dcpi specialize (report/vspec.c; docs/values.md, "Specialization hints"):
 * in proc, or everywhere when NULL, by time at stake, the lists that saw at
 * least min_seen values and are candidates: argument registers the
 * procedure reads (its CFG) at least semi-invariant, invariant loads,
 * invariant non-zero strides of loads, indirect sites whose top target is
 * at least semi-invariant; each with a suggestion.
 */
#define REP_VSPEC_MIN_SEEN 20		/* --min-seen's default */
int rep_vspecialize(FILE *f, struct rep_vals *v, const char *proc, int json, unsigned min_seen,
		    struct dcpi_err *err);

#endif /* DCPI_REPORT_H */
