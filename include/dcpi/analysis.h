/*
 * analysis.h - the one analysis every tool that prints or writes a count
 * calls (estimate/analyze.c): for one procedure of one epoch, its CFG, the
 * samples per instruction, the epoch's path samples of the image, the
 * measured best cases of its hot blocks and loops, the calibration of where
 * samples land, the event counts and exact executions, the estimate, and
 * the culprits of its dynamic stalls.
 *
 * Two steps, so that nothing reads the database in the middle of the
 * analysis: est_input_open reads what an epoch offers once (meta, the
 * calibration file, --exact's database, path samples per image on first
 * use), then est_analyze is called per procedure.  dcpicalc, dcpilist,
 * dcpicfg, dcpidiff, the feedback writers (llvm-prof, gcc-prof, bolt-prof,
 * prefetch-hints) all go through it with the same defaults
 * (est_analysis_opts_default), so no two of them print different counts for
 * the same procedure of the same recording (tests/test_analysis.c).
 */
#ifndef DCPI_ANALYSIS_H
#define DCPI_ANALYSIS_H

#include <stddef.h>

#include "dcpi/calibrate.h"
#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/import.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/sandbox.h"
#include "dcpi/values.h"

struct est_analysis_opts {
	const struct model *model;	/* NULL: model_for_this_cpu() */
	struct est_opts opts;
	struct est_path_opts popts;
	int skid_given;			/* opts.skid is the user's: the calibration
					 * does not set it */
	const char *calib_path;		/* NULL: DB/calibration-<model>.txt if present */
	int no_calib;			/* ignore any calibration file */
	int no_paths;			/* ignore the epoch's path samples */
	int no_measure;			/* the model's best cases only */
	int remeasure;			/* time cached noisy figures again */
	int no_events;			/* culprits from the code alone */
	int no_replay;			/* no self-fed load's walk replayed
					 * (estimate/replay.c) */
	int no_calls;			/* calls counted at the entry not used
					 * (estimate/calls.c) */
	const struct path_profile *paths;	/* instead of the epoch's (--path-edges) */
	const char *exact_db;		/* executions from callgrind-Ir there */
	/* a procedure's hot blocks and loops are timed in the sandbox when it
	 * holds at least this share of its image's samples (cached per body in
	 * DB/measured-costs.txt); below it the model's best cases are used */
	double measure_share;
	/* A CPU with no model file of its own gets one measured on first use
	 * (dcpi calibrate --fit-model, est_calib_tables), unless no_calibrate, the
	 * environment's DCPI_NO_CALIBRATE (not "0") or DCPI_MODEL say no, or a
	 * model is given; note (may be NULL) hears what it is doing. */
	int no_calibrate;
	est_calib_note_fn note;
	void *note_arg;
	const char *cache_dir;		/* measured costs kept here (NULL: the
					 * database's directory); a comparison of
					 * two databases times with one cache */
	/* windowed: the samples of the epoch's time slices [slice_from,
	 * slice_to) only (--time, --phase; include/dcpi/slices.h): profiles of
	 * another event than the slices' are left out.  Path and value samples
	 * too, from the epoch's path and value slices (the whole epoch's when
	 * it has none). */
	int windowed;
	uint64_t slice_from, slice_to;
};

/* The defaults every tool uses unless its user says otherwise. */
void est_analysis_opts_default(struct est_analysis_opts *o);

#define EST_MAX_WALKS	16
#define EST_MAX_REPLAYS	8

/* Walks timed for replayed loads (estimate/replay.c): kept per process and
 * in dir's cache of measured costs (NULL: none), unless remeasure. */
struct est_walks {
	const char *dir;
	int remeasure;
	uint64_t deadline;		/* dcpi_now_ns() past which no walk is
					 * timed (0: none); loads left counted */
	size_t left;
	struct sbx_walk w[EST_MAX_WALKS];
	uint64_t key[EST_MAX_WALKS];
	size_t n;
	char note[256];			/* a problem with the cache */
};

/* A load replayed (estimate/replay.c): fed by its own result, it walks a
 * region whose size its value samples' addresses gave; a walk of that
 * region timed here costs `extra` cycles a step beyond an L1 hit, added to
 * the expected cycles of instruction `shown` (where its miss shows). */
struct est_replay {
	uint32_t insn, shown;		/* cfg instruction indices */
	size_t addrs;			/* addresses the region was sized from */
	uint64_t bytes;			/* the region */
	uint32_t elem;			/* its elements' size */
	struct sbx_walk walk;		/* the walk timed (cycles, L1, spread) */
	double extra;			/* walk.cycles - walk.l1_cycles */
	uint64_t bytes_lo, bytes_hi;	/* the region's 90% range from addrs
					 * (est_replay_footprint_range) */
	double cycles_lo, cycles_hi;	/* their walks' cycles a step */
	double spread;			/* the count's relative spread from the
					 * walk: its timing's and its region's */
	double far;			/* a region past the private L2 and within
					 * twice the L3, which other cores share:
					 * a walk past the L3's cycles beyond an
					 * L1 hit over extra's (>= 1); 1 when not
					 * such a region */
};

/* What one epoch offers every procedure's analysis. */
struct est_input {
	struct prof_db *db;		/* borrowed; the epoch's database */
	char dbdir[4096];		/* its directory: caches and calibration */
	char epoch[256];		/* the epoch read, or "all" */
	const struct prof_profile *p;	/* borrowed: every (image, event) profile,
					 * or win when o.windowed */
	size_t np;
	struct prof_profile *win;	/* the profiles cut to the time window */
	size_t nwin;
	struct prof_epoch_meta meta;
	int have_meta;
	struct est_analysis_opts o;	/* as given, opts calibrated */
	const struct model *model;
	char model_note[320];		/* where the model came from, when measured
					 * now or its file was refused */
	struct est_calib_tables auto_cal;	/* a model measured now */
	int have_auto;
	struct est_calibration cal;
	int have_cal;
	char cal_path[4200];
	int skid;			/* where samples land, for culprits (2) */
	char exposure_note[256];	/* where destall.c's f came from */
	struct prof_db *xdb;		/* --exact */
	struct prof_profile *xp;
	size_t nxp;
	char xepoch[256];
	/* path samples of the last image asked for (est_analyze) */
	struct prof_image_id pp_image;
	struct path_profile pp;
	int pp_loaded, have_pp;
	/* branch-record counts of the last image asked for (import/lbr.c) */
	struct prof_image_id lbr_image;
	struct import_lbr lbr;
	int lbr_loaded;
	/* value samples of the last image asked for: the loads' addresses */
	struct prof_image_id vp_image;
	struct val_profile vp;
	int vp_loaded, have_vp;
	struct est_walks walks;		/* timed for replayed loads, reused */
	char note[512];			/* a problem worth a note, once */
};

/*
 * Open the analysis of an epoch: db and its directory dbdir, the epoch name
 * used (or "all"), its profiles p[0..np) (borrowed, as rep_load_profiles or
 * prof_epoch_read gave them).  Reads the epoch's meta, the calibration and
 * --exact's database; with o->windowed, the epoch's time slices, and cuts
 * p to them: in->p then holds what the analysis sees, and a caller picks
 * its image's profile from in->p.  Free with est_input_close.
 */
int est_input_open(struct est_input *in, struct prof_db *db, const char *dbdir,
		   const char *epoch, const struct prof_profile *p, size_t np,
		   const struct est_analysis_opts *o, struct dcpi_err *err);
void est_input_close(struct est_input *in);
/* The file in->model was read from or written to, NULL for a shipped table. */
const char *est_model_source(const struct est_input *in);

/* Everything the analysis of one procedure found. */
struct est_analysis {
	const struct prof_profile *prof;	/* the (image, event) profile */
	const struct img_proc *proc;
	struct cfg *cfg;
	double *s;			/* samples per instruction */
	double total;			/* samples in the procedure */
	double cps;			/* cycles per sample (0: relative) */
	struct est_result r;
	struct est_measurements meas;
	int have_meas;
	char meas_why[128];		/* why not measured */
	const struct path_profile *pp;	/* path samples used, or NULL */
	struct est_path_obs obs;
	struct est_path_info pinfo;
	struct est_events ev;		/* event counts, exact executions */
	struct cul_result cul;
	int have_cul;
	int exact;			/* counts are callgrind's, not estimated */
	int lbr;			/* counts are branch records' (est_lbr_use) */
	uint64_t lbr_stacks;		/* the stacks they come from */
	size_t lbr_dropped;		/* ranges crossing the procedure's ends */
	struct est_replay replays[EST_MAX_REPLAYS];
	size_t nreplays;
	double *extra;			/* per instruction: replayed cycles (or NULL) */
	uint8_t *streams;		/* per instruction: a load walking its lines
					 * in order (est_replay_stream_loads), or NULL */
};

/*
 * Analyse proc of img from prof (one of in->p).  Fills a; free with
 * est_analysis_free (also after an error).  Errors: the procedure cannot be
 * decoded (-EINVAL, -ENOENT from cfg_build), memory, a bad --exact.
 */
int est_analyze(struct est_input *in, struct image *img, const struct prof_profile *prof,
		const struct img_proc *proc, struct est_analysis *a, struct dcpi_err *err);
void est_analysis_free(struct est_analysis *a);

/* Replay a->cfg's self-fed loads that vp's addresses show walking a region
 * past L1 (estimate/replay.c): fills a->replays and a->extra. */
int est_replay_loads(struct est_input *in, const struct image *img, const struct val_profile *vp,
		     struct est_analysis *a, struct dcpi_err *err);
/* Its parts: is load i fed by its own result (a register it writes, or one
 * computed from it, reaches its address round its innermost loop on every
 * path, through however many blocks)?  The region n sorted distinct
 * addresses were drawn from (0 when fewer than 8 agree), its elements'
 * size, the addresses used. */
int est_replay_self_fed(const struct cfg *cfg, uint32_t i);
/* Do a load's sampled addresses (h, VAL_ADDR: at least the few a footprint
 * needs) lie within the L1 data cache's size? */
int est_replay_in_l1(const struct val_hotlist *h);
/* Does a load's stride list (h, VAL_STRIDE) show it walking its lines in
 * order: one stride in at least 90% of at least 8 strides seen, nonzero and
 * shorter than a cache line? */
int est_replay_streams(const struct val_hotlist *h);
/* The loads of a->cfg whose value samples (vp) show them walking their
 * lines in order (est_replay_streams): a->streams, for est_destall. */
int est_replay_stream_loads(const struct image *img, const struct val_profile *vp,
			    struct est_analysis *a, struct dcpi_err *err);
/* Each sampled load's region (a->r.insns[i].region), for the intervals. */
void est_replay_regions(const struct image *img, const struct val_profile *vp,
			struct est_analysis *a);
/*
 * Time, right after a recording, the walks the analysis will replay: every
 * self-fed load of the epoch's value samples whose region is past L1, in
 * dir's cache, while the machine is as the run left it (`dcpi record`
 * calls it), until budget_ns have passed (0: no bound); the loads left are
 * timed by the analysis when it needs them.  *nwalks: walks timed, *left:
 * loads not timed, or not all their walks, for the budget; *bytes the
 * largest region.
 */
int est_replay_epoch(struct prof_db *db, const char *dir, const char *epoch, uint64_t budget_ns,
		     size_t *nwalks, size_t *left, uint64_t *bytes, struct dcpi_err *err);
void est_replay_footprint(const uint64_t *a, size_t n, uint64_t *bytes, uint32_t *elem,
			  size_t *used);
void est_replay_footprint_range(uint64_t bytes, uint32_t elem, size_t used, uint64_t *lo,
				uint64_t *hi);

/*
 * Block, edge and instruction counts of cfg's procedure in img from branch
 * records l (estimate/lbr_counts.c): 1 when it has ranges and r's counts
 * were replaced, 0 when not, -ENOMEM; *dropped: ranges not counted (an end
 * outside the procedure or not on an instruction).  est_lbr_intervals: the
 * 90% intervals (Poisson on the occurrences) and confidence of them.
 */
int est_lbr_use(const struct cfg *cfg, const struct image *img, const struct import_lbr *l,
		struct est_result *r, size_t *dropped);
void est_lbr_intervals(const struct cfg *cfg, struct est_result *r, const struct import_lbr *l);

#endif /* DCPI_ANALYSIS_H */
