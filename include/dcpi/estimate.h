/*
 * estimate.h - execution frequency and CPI of every instruction, block and
 * edge of one procedure from its samples (DCPI paper sec. 6.1.3 - 6.1.5;
 * docs/estimate.md).
 *
 * Units.  S_i are samples at instruction i; one sample is worth
 * cycles_per_sample cycles (the epoch's calibration), so cyc_i = S_i x cps
 * is the cycles i spent as the oldest unretired instruction.  M_i (model.h)
 * is the best-case cycles per execution.  A window W (an issue point, a
 * dependence span, a block, a class) then gives the frequency estimate
 * F x P = sum_W cyc / sum_W M in executions, directly.  With no calibration
 * cps is 1 and executions are relative (est_result.relative).
 *
 * Estimation is a pure function of the CFG (with its equivalence classes),
 * the per-instruction samples and the pipeline model.
 */
#ifndef DCPI_ESTIMATE_H
#define DCPI_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/profile.h"
#include "dcpi/util.h"

enum est_conf {
	EST_CONF_NONE,		/* no estimate at all (no samples, no constraint) */
	EST_CONF_LOW,
	EST_CONF_MEDIUM,
	EST_CONF_HIGH,
};

enum est_method {
	EST_M_DCPI,		/* class ratios + local propagation (sec. 6.1.3, 6.1.4) */
	EST_M_GLOBAL,		/* the same, then weighted least squares under flow */
};

/* Which samples and cycles a ratio is taken over (docs/estimate.md: skid). */
enum est_window {
	EST_W_INSN,		/* the paper: per issue point, dependence spans */
	EST_W_BLOCK,		/* whole blocks: sum S / sum M per block */
	EST_W_SKID,		/* whole blocks, skid_share of the samples of the
				 * first `skid` instructions of each block handed
				 * back to its predecessors in proportion to their
				 * edge counts */
};

/* Where a class's estimate came from. */
enum est_source {
	EST_S_NONE,
	EST_S_CLUSTER,		/* a cluster of small ratios (sec. 6.1.3) */
	EST_S_SUM,		/* few samples: sum S / sum M over the class */
	EST_S_PROPAGATED,	/* flow constraints (sec. 6.1.4) */
	EST_S_SOLVER,		/* only the global solver constrains it */
	EST_S_BOUND,		/* no samples where its cycles can land: near 0,
				 * at most `bound` (ratios.c) */
};

/* Which M_i a block uses. */
enum est_steady {
	EST_STEADY_NONE,	/* single-pass M_i everywhere (the paper) */
	EST_STEADY_SELF,	/* m_loop for blocks that are their own loop body */
	EST_STEADY_LOOPS,	/* m_loop for every block inside a loop */
	EST_STEADY_CONTEXT,	/* self loops as SELF; every other block scheduled
				 * after its most frequent predecessor (the one
				 * deepest in loops), so M_i is its marginal cost */
};

struct est_measurements;

struct est_opts {
	enum est_method method;
	enum est_window window;
	enum est_steady steady;
	int skid;		/* EST_W_SKID: instructions, 1..3 */
	double skid_share;	/* EST_W_SKID: share of their samples handed back */
	double spread;		/* cluster: max ratio <= spread x min ratio (1.5) */
	double min_frac;	/* a cluster needs this share of the class's points */
	double few_samples;	/* classes with fewer samples: sum S / sum M */
	/* measured best cases (est_measure, below) replacing the model's per
	 * measured block and loop path; NULL: the model's everywhere */
	const struct est_measurements *measured;
	/* what the machine shows of the cycles of an instruction waiting on a
	 * load, once the data is there (est_destall; the calibration's
	 * stall_exposure); 0: EST_STALL_EXPOSURE, < 0: no destalling */
	double stall_exposure;
	/* per instruction, cycles an execution expects beyond its best case,
	 * measured (a replayed load's walk, estimate/replay.c): the windows and
	 * the path scale divide by best + extra; NULL: none */
	const double *expect_extra;
	/* per instruction, 1 for a load whose value samples show it walking
	 * its lines in order (est_replay_stream_loads): it misses at most once
	 * a line, ahead of the prefetcher, and is no destalling witness's
	 * miss; NULL: none known */
	const uint8_t *streams;
};

/*
 * A block counted from the instruction after a stalled load's waiter
 * (estimate/destall.c): the load at `load` missed, `waiter` waited on its
 * register and the instruction after it received witness_samples for
 * `exposure` cycles an execution: executions = per_cps x cycles per sample;
 * the block's own window said window_per_cps x cycles per sample.
 */
/* How far a walk timed after the run may be from what the run's loads met
 * (estimate/replay.c): 90% of chases, relative, measured in docs/estimate.md
 * "Replayed loads". */
#define EST_REPLAY_REL 0.35
/* A load whose sampled addresses span less stays in L1 or L2: it is not
 * replayed and its pile is not taken for a miss (estimate/interval.c). */
#define EST_RESIDENT_BYTES (64u << 10)

/* What a machine shows of a load waiter's latency when no measurement says
 * (estimate/destall.c: 0.25 - 1.2 measured on a Zen 4 VM, the ends with the other
 * vCPU busy; about their geometric middle),
 * and the factor either way the interval allows for it (interval.c). */
#define EST_STALL_EXPOSURE 0.55
#define EST_STALL_EXPOSURE_SPREAD 2.4

/*
 * The f a recording's own measurement gives (collect/calibrate.c
 * cal_exposure: witness of samples on its chase's witness, cycles_step its
 * cycles a step): f when the witness's samples know it within the spread
 * the interval allows (EST_STALL_EXPOSURE_SPREAD either way, their 90%
 * Poisson range); -1 (no destalling) when even their upper limit lies below
 * the spread's low end about EST_STALL_EXPOSURE: the machine shows too
 * little after a waiter for a witness to count from; 0 (the default f)
 * otherwise.  *upper (may be NULL): f's 90% upper limit.
 */
double est_exposure_recorded(uint64_t witness, uint64_t samples, double cycles_step,
			     double *upper);

struct est_stall {
	uint32_t block, load, waiter;
	double witness_samples, exposure, per_cps, window_per_cps;
	int replayed;		/* the block's load was replayed (replay.c): the
				 * witness only cross-checks its count */
	int f_measured;		/* f was measured on this machine (the
				 * calibration's stall_exposure), not
				 * EST_STALL_EXPOSURE */
};

/* Poisson limits of a count n at z standard deviations (one-sided;
 * Wilson-Hilferty, within a few percent down to n = 1). */
double est_poisson_upper(double n, double z);
double est_poisson_lower(double n, double z);

/* What the machine shows of a load waiter's cycles where the executions are
 * known (dcpi calibrate's sk_miss, exact from callgrind): S_{k+1} cps /
 * (M_k E_k) at the waiter whose witness has the most samples; 0 when none. */
double est_exposure_measured(const struct cfg *cfg, const struct model *model,
			     const double *exact, const double *s, double cps);
/*
 * The samples windows should read, s_out[cfg->ninsns]: s, with the pile a
 * missing load left on the instruction after it brought down to a stall-free
 * run's where an instruction waiting on the load shows the block's count
 * significantly lower than its window (docs/estimate.md "After a stalled
 * load").  m, reason, culprit: est_model_m's; f the stall exposure (0:
 * EST_STALL_EXPOSURE); streams (may be NULL): est_opts.streams, loads that
 * are no witness's miss.
 * st (may be NULL) receives one entry per such block (at most nblocks).
 */
int est_destall(const struct cfg *cfg, const double *s, const double *m, const int *reason,
		const int *culprit, const uint8_t *streams, double f, double *s_out,
		struct est_stall *st, size_t *nst);

/* The defaults measured best (docs/estimate.md). */
void est_opts_default(struct est_opts *o);

struct est_insn {
	double samples;		/* S_i */
	double cycles;		/* S_i x cycles_per_sample */
	double m;		/* M_i used (single pass or steady state) */
	double executions;	/* F x P: the block's count */
	double cpi;		/* cycles / executions, 0 when not executed */
	int reason;		/* enum model_reason of the static stall */
	int culprit;		/* instruction index (cfg->insns) or -1 */
	enum est_conf conf;
	double region;		/* a load's: the bytes its sampled addresses span
				 * (estimate/replay.c), 0 unknown */
	int replayed;		/* a load whose walk was timed on this machine
				 * (estimate/replay.c): its misses are measured */
};

struct est_block {
	double samples, cycles;	/* over the block's instructions */
	double window_samples;	/* what its windows read: samples, less a
				 * missing load's pile (est_destall) */
	double best;		/* sum M_i: best-case cycles per execution */
	double replay;		/* measured cycles beyond it (expect_extra) */
	double replay_spread;	/* those walks' spread (est_analyze sets it) */
	double replay_far;	/* how much dearer a step could have been had the
				 * run met the region in DRAM (est_replay.far;
				 * est_analyze sets it; 0 or 1: no such term) */
	double executions;
	double best_cpi;	/* best / n */
	double actual_cpi;	/* cycles / (executions x n), 0 when not executed */
	double lo, hi;		/* 90% interval of executions (est_intervals) */
	int unreached;		/* est_unreached replaced the flow's count,
				 * flow_count, by the block's own samples' (its
				 * interval holds both) */
	double flow_count;
	enum est_conf conf;
};

struct est_edge {
	double executions;
	double prob;		/* executions / executions of the source block */
	double lo, hi;		/* 90% interval of executions (est_intervals) */
	enum est_conf conf;
};

struct est_class {
	double samples;		/* over its blocks */
	double estimate;	/* executions, < 0 before propagation when none */
	int npoints;		/* issue points (or windows) with a ratio */
	int nused;		/* in the chosen cluster */
	double used_samples;	/* samples of the chosen windows */
	double tightness;	/* max / min ratio of the cluster, 1 when one */
	double window_samples;	/* samples where its cycles can land: its
				 * blocks' and their neighbour blocks' */
	double bound;		/* upper bound on executions from them (95%),
				 * 0 when it has no best-case cycles */
	double flow;		/* the flow solver's count for it (mean over its
				 * blocks), -1 when not solved */
	enum est_source source;
	enum est_conf conf;
};

struct est_result {
	size_t ninsns, nblocks, nedges, nclasses;	/* as the cfg's */
	struct est_insn *insns;
	struct est_block *blocks;
	struct est_edge *edges;
	struct est_class *classes;
	double cycles_per_sample;	/* used; 1 when relative */
	int relative;			/* no calibration: counts are relative */
	enum est_method method;
	enum est_window window;
	double flow_residual;		/* max |in - out| / max count after solving */
	struct est_stall *stalls;	/* blocks counted after a stalled load */
	size_t nstalls;
	uint64_t lbr_stacks;		/* counts from branch records of this many
					 * stacks (estimate/lbr_counts.c); 0: not */
	double calls;			/* calls counted at the entry (est_use_calls):
					 * the counts' scale is measured; 0: not */
	double calls_scale;		/* what the estimate read of them (x0 / calls) */
	int calls_solved;		/* the straight code solved around them; 0:
					 * only the counted classes hold them */
	size_t classes_counted;		/* classes but the entry's whose executions
					 * were counted (a plan's block lines) */
	uint8_t *counted;		/* per block, NULL: its class's executions
					 * counted (est_use_counts), exact */
	double shared_core;		/* the share of the recording's path bursts
					 * whose contention canary found the
					 * program's core shared with a busy sibling
					 * (prof_epoch_meta.canary_shared); every
					 * count's interval reaches down by up to
					 * 1 + it (estimate/interval.c); 0: not
					 * measured */
	double shared_slowdown;		/* how much slower the sampled blocks would
					 * run on half a core (1 to 2), weighed by
					 * their samples; est_intervals; 0: not
					 * computed */
	double clock_h;			/* how far off the clock may leave cycles
					 * per sample (est_clock_h): a 90%
					 * half-width in log units, in every
					 * sampled count's interval; 0: not
					 * measured */
	double run_samples;		/* the samples of the procedure's event
					 * over every image of the epoch: those its
					 * blocks' samples are drawn from
					 * (estimate/interval.c sampling_f); 0: not
					 * known (Poisson) */
};

/*
 * Samples per instruction of cfg's procedure in img from profile p (an
 * (image, event) profile keyed by file offset).  Samples at offsets inside
 * the procedure but at no instruction start go to the instruction containing
 * them.  s has cfg->ninsns entries.  *total receives the samples placed.
 */
int est_samples_from_profile(const struct cfg *cfg, const struct image *img,
			     const struct prof_profile *p, double *s, double *total,
			     struct dcpi_err *err);

/*
 * Cycles one sample of p is worth: the epoch's calibration when there is
 * one, else period_ns x cycles_per_ns for a time-based event, else 0
 * (uncalibrated: counts will be relative).
 */
double est_cycles_per_sample(const struct prof_profile *p, const struct prof_epoch_meta *meta);

/*
 * Estimate everything for one procedure.  samples[cfg->ninsns]; cps is the
 * cycles per sample (0: relative).  out is filled; free with est_result_free.
 */
int est_procedure(const struct cfg *cfg, const struct model *model, const double *samples,
		  double cps, const struct est_opts *opts, struct est_result *out,
		  struct dcpi_err *err);
/* A block of a CFG missing edges that the flow left more than this below
 * its own samples at its best case takes that count (est_unreached; the
 * factor of estimate/calls.c EST_CALLS_STRAIGHT_MOVE). */
#define EST_UNREACHED_MOVE 10.0
void est_unreached(const struct cfg *cfg, struct est_result *r);
/* Block b's count x, on the block and its instructions (their CPIs with
 * it; 0 where x is not positive). */
void est_set_block_count(const struct cfg *cfg, struct est_result *r, size_t b, double x);
void est_result_free(struct est_result *r);

const char *est_conf_name(enum est_conf c);
const char *est_source_name(enum est_source s);
const char *est_method_name(enum est_method m);
const char *est_window_name(enum est_window w);
/* Parse names ("dcpi", "global"; "insn", "block", "skid"); -EINVAL if unknown. */
int est_method_parse(const char *s, enum est_method *m);
int est_window_parse(const char *s, enum est_window *w);
/* "N" or "N:F" (1 <= N <= 8, 0 < F <= 1; F kept when absent), and none,
 * self, loops, context: -EINVAL otherwise. */
int est_skid_parse(const char *s, int *skid, double *share);
int est_steady_parse(const char *s, enum est_steady *st);

/*
 * The pieces, for tests and for tools that want them alone.
 *
 * est_model_m: M_i per instruction and static-stall reasons/culprits (in
 * cfg->insns indices) for every block, by opts->steady.
 */
int est_model_m(const struct cfg *cfg, const struct model *model, enum est_steady steady,
		double *m, int *reason, int *culprit, struct dcpi_err *err);

/*
 * est_class_ratios: per class, the DCPI cluster estimate in executions from
 * samples s[] (x cps cycles each) and M m[] over windows chosen by
 * opts->window (sec. 6.1.3).  blk_s (may be NULL) replaces the per-block
 * sample sums of the block windows (the skid-shifted window).  Fills
 * classes[cfg->nclasses] (estimate < 0 where there is none).
 */
int est_class_ratios(const struct cfg *cfg, const double *s, double cps, const double *m,
		     const int *culprit, const double *blk_s, const struct est_opts *opts,
		     struct est_class *classes, struct dcpi_err *err);

/*
 * est_propagate: DCPI local propagation (sec. 6.1.4) over the flow
 * constraints; fills classes without an estimate where the constraints
 * determine them (source EST_S_PROPAGATED), never below zero.  x[nblocks]
 * and y[nedges + 1] receive the counts (-1 where still unknown); y[nedges]
 * is the virtual exit -> entry edge.
 */
int est_propagate(const struct cfg *cfg, struct est_class *classes, double *x, double *y,
		  struct dcpi_err *err);

/*
 * est_solve_flow: the global solver.  Block and edge counts x, y >= 0 that
 * conserve flow (closed by exit -> entry) and minimise
 * sum over estimated classes w_c (count - est_c)^2, w_c the inverse of
 * the estimate's sampling variance (samples / est_c^2) times a confidence
 * factor.  x, y hold the starting point (the
 * propagation result; < 0 unknown; y has nedges + 1 entries, the last the
 * exit -> entry edge) and receive the solution.  -E2BIG when the procedure
 * is too large for it (x and y are then unchanged).
 */
int est_solve_flow(const struct cfg *cfg, const struct est_class *classes, double *x,
		   double *y, double *residual, struct dcpi_err *err);

/* est_confidence: confidence of each class estimate (sec. 6.1.5). */
void est_confidence(const struct cfg *cfg, struct est_class *classes);

/*
 * est_confidence_flow: regrade measured classes by how well the flow
 * solution x[nblocks] (est_solve_flow) agrees with their own estimates:
 * fills classes[].flow; a class the flow pulls more than 15% away is low,
 * one it confirms within 5% on enough samples and windows is high.
 */
void est_confidence_flow(const struct cfg *cfg, struct est_class *classes, const double *x);

/*
 * Calibration of where samples land (docs/estimate.md "Calibration: where
 * samples land";
 * estimate/calibrate/attribution.c, `dcpi calibrate`).  Known loops are sampled and
 * counted exactly; the model says where their cycles are spent (E_i x M_i)
 * and the samples say where they are reported.  attrib[k] is the share of
 * an instruction's cycles whose samples land k instructions later along the
 * executed path (k = 0 .. EST_CALIB_K), fitted by non-negative least
 * squares; cross is the share that lands in another block execution (past
 * a block end).  skid and skid_share are what EST_W_SKID should use: the
 * head instructions that receive samples from before the block, and the
 * share of their samples that came from there.
 */
#define EST_CALIB_K 4
#define EST_CALIB_MAXLOOPS 16
#define EST_CALIB_VERSION 1

struct est_calib_loop {
	char name[64];
	double samples;		/* in the procedure */
	double iterations;	/* exact executions of its hottest block */
	double cyc_iter;	/* measured cycles per iteration (samples x cps) */
	double model_iter;	/* the model's best case per iteration (sum E x M) */
	double attrib[EST_CALIB_K + 1];
	double residual;	/* of the fit: |q - A p|_1 / 2, 0 .. 1 */
	double cross;		/* predicted share crossing a block end */
	double head_samples;	/* share of samples at block-leading insns */
	double head_insns;	/* share of executed insns that lead a block */
	double block_tv;	/* 1/2 sum_b |samples_b - model_b| (shares) */
	double head_from_pred;	/* share of head samples from earlier blocks */
	int used;		/* the model holds (0.67 .. 1.5): in the mean */
	double exposure;	/* what the timer shows of a load waiter's cycles
				 * (est_exposure_measured), 0: no waiter */
};

struct est_calibration {
	int version;
	char model[32];
	char event[64];
	double cycles_per_sample;
	double attrib[EST_CALIB_K + 1];	/* sample-weighted over used loops */
	double cross, head_samples, head_insns, block_tv;
	int skid;			/* for EST_W_SKID, 1 .. EST_CALIB_K */
	double skid_share;
	double exposure;		/* f of estimate/destall.c measured here, 0:
					 * none (the file's stall_exposure) */
	size_t nloops;
	struct est_calib_loop loops[EST_CALIB_MAXLOOPS];
};

/*
 * Measure one loop procedure: exact[i] executions and s[i] samples per
 * instruction of cfg (cps cycles each).  Fills out (name from cfg).
 */
int est_calib_loop(const struct cfg *cfg, const struct model *model, const double *exact,
		   const double *s, double cps, struct est_calib_loop *out, struct dcpi_err *err);
/* Combine the loops (cal->loops, cal->nloops) into the machine's figures. */
void est_calib_combine(struct est_calibration *cal);
/* The file a database keeps it in: DIR/calibration-<model>.txt. */
int est_calib_path(const char *dbdir, const char *model, char *out, size_t len);
/* Write / read the text file (docs/estimate.md, "Calibration file"). */
int est_calib_write(const char *path, const struct est_calibration *cal, struct dcpi_err *err);
/* The same to a path the user named, by dcpi_write_output's rule
 * (include/dcpi/safefile.h); est_calib_write is for the database's file. */
int est_calib_write_output(const char *path, const struct est_calibration *cal,
			   struct dcpi_err *err);
int est_calib_read(const char *path, struct est_calibration *cal, struct dcpi_err *err);
/* Set opts->skid and skid_share from a calibration. */
void est_opts_calibrated(struct est_opts *o, const struct est_calibration *cal);

/*
 * Measured best cases (estimate/measured.c; docs/estimate.md, "Measured block
 * costs"; include/dcpi/sandbox.h).  The hot blocks of a procedure, and one
 * iteration of each hot innermost loop along its dominant path, are timed on
 * this machine in the sandbox; est_procedure then uses a measured block's
 * figure as its best case (the model's M_i scaled to sum to it) and a measured
 * loop's cycles per iteration as the best case of its path's blocks together
 * (an out-of-order core overlaps them).  Results are cached per (body bytes,
 * CPU) in DIR/measured-costs.txt of the database.
 */
struct path_profile;
#include "dcpi/sandbox.h"

enum est_best_source {
	EST_BEST_MODELLED,
	EST_BEST_MEASURED,
};

struct est_meas_block {
	enum est_best_source source;
	double cycles;		/* measured best case per execution (the low figure) */
	double median;		/* median of the sandbox's repetitions */
	double spread;		/* their interquartile range / median */
	double model;		/* the model's sum M_i, 0 without a model */
	int tried;		/* a body was built and timed or found cached */
	int cached;		/* the figure came from the cache */
	int status;		/* enum sbx_status when tried */
	int lines;		/* a loop on itself that the front end holds to a
				 * cycle per line of its code (model_loop_lines):
				 * cycles is that floor, not the sandbox's figure */
	char why[112];		/* when modelled and tried: why */
};

struct est_meas_loop {
	uint32_t loop;		/* index in cfg->loops */
	enum est_best_source source;
	double cycles;		/* measured cycles per iteration along path */
	double median, spread;
	double model;		/* the model's best cases of the path's blocks, summed */
	uint32_t *path;		/* blocks of one iteration, header first */
	uint32_t npath;
	int from_paths;		/* successors chosen from path samples */
	int cached;
	int status;		/* enum sbx_status, -1 when no body could be built */
	int lines;		/* as est_meas_block's: cycles is the front end's
				 * floor for the path's code, not the sandbox's */
	char why[112];
};

struct est_measurements {
	char cpu[192];			/* "AuthenticAMD family 26 model 2 ..." */
	size_t nblocks;			/* cfg->nblocks */
	struct est_meas_block *blocks;
	size_t nloops;			/* the loops tried: hot innermost ones */
	struct est_meas_loop *loops;
	unsigned timed, cached;		/* bodies timed now, found in the cache */
	unsigned contended;		/* of those timed now, how many while the
					 * core was shared (sandbox canary): timed
					 * again next time, the lower kept */
	double seconds;			/* spent timing */
	int apply_loops;		/* est_procedure uses loop figures (1) */
	/* The model against the sandbox on this procedure: measured / model
	 * over its timed blocks (at least EST_MODEL_SCALE_MIN of them), the
	 * median, and the 5% and 95% quantiles; 0 when too few.  The blocks
	 * not timed keep the model's figure, and their intervals reach as far
	 * as the quantiles (measured.c model_scale, interval.c). */
	double model_scale, model_scale_lo, model_scale_hi;
	unsigned model_scale_n;
	char note[256];			/* a problem with the cache, if any */
};

#define EST_MODEL_SCALE_MIN 5

struct est_measure_opts {
	double hot_share;		/* hot blocks: the top ones holding this
					 * share of the samples (0.99) */
	double min_share;		/* each at least this share (0.002) */
	unsigned max_blocks;		/* at most this many blocks (24) */
	unsigned max_loops;		/* and loops (8) */
	unsigned max_path;		/* blocks per loop iteration (64) */
	const char *cache_dir;		/* database directory; NULL: no cache */
	const struct image *img;	/* file offsets, for paths; NULL: the
					 * offsets are the addresses (cfg_build_bytes) */
	const struct path_profile *paths;	/* may be NULL */
	const struct model *model;	/* for the model figures beside; may be NULL */
	enum est_steady steady;		/* which M_i the model figures use */
	int cache_only;			/* never time: the cache or the model */
	int remeasure;			/* time cached noisy figures again */
	struct sbx_opts sbx;		/* reps 15, timeout 1000 ms */
};

void est_measure_opts_default(struct est_measure_opts *o);

/*
 * The front end's floor for one iteration of a loop, path[0..n) its blocks
 * in order (header first): the lines of code it fetches (model_loop_lines
 * over its runs of consecutive blocks, the last running on into the first
 * when it falls through to the header), 0 when model has no such floor.
 * est_measure raises a measured loop, or a measured block that loops on
 * itself, to it: the sandbox times them unrolled, as straight-line code.
 */
int est_path_lines(const struct cfg *cfg, const struct model *model, const uint32_t *path,
		   uint32_t n);

/*
 * Time the hot blocks and innermost loops of cfg's procedure (samples per
 * instruction, as est_procedure takes).  Fills out (free with
 * est_measurements_free); blocks and loops not measured keep source
 * EST_BEST_MODELLED with why they were not.  Errors only for memory; the
 * sandbox's and the cache's problems leave blocks modelled (out->note).
 */
int est_measure(const struct cfg *cfg, const double *samples, const struct est_measure_opts *o,
		struct est_measurements *out, struct dcpi_err *err);
void est_measurements_free(struct est_measurements *m);

/*
 * Scale m[cfg->ninsns] (M_i) to the measurements: what est_procedure does.
 * A measured block's M_i sum to its figure; a measured loop's cycles per
 * iteration are shared by its path's blocks as samples[] (may be NULL) are
 * (at least 20 on the path), else as their best cases are.
 */
void est_apply_measured(const struct cfg *cfg, const struct est_measurements *meas,
			const double *samples, double *m);

/*
 * The timeable body of block b: its bytes without the ending branch, call or
 * return.  *len 0 when the block is only that.  out holds at least
 * (block end - block start) bytes.  -EINVAL when b has no instructions.
 */
int est_block_body(const struct cfg *cfg, uint32_t b, uint8_t *out, size_t *len);
/*
 * One iteration along path[0..n) (blocks of one loop, header first): the
 * blocks' bytes, branches inside made nops of the same length, the last
 * block's back edge left out.  -EINVAL with why when a block calls, returns
 * or jumps indirectly.  out holds the blocks' bytes together.
 */
int est_path_body(const struct cfg *cfg, const uint32_t *path, uint32_t n, uint8_t *out,
		  size_t *len, char *why, size_t wlen);

/* The cache file of a database: DIR/measured-costs.txt. */
/* A figure of this CPU's (cycles, median, spread) kept in dir's cache of
 * measured costs under a name (estimate/measured.c): lookup 1 when found;
 * store writes it at once; problems go to note. */
int est_cache_lookup(const char *dir, const char *name, double fig[3], char *note, size_t nlen);
void est_cache_store(const char *dir, const char *name, const double fig[3], char *note,
		     size_t nlen);
int est_measure_cache_path(const char *dbdir, char *out, size_t len);

/*
 * ---- Path samples (docs/estimate.md "Path samples";
 * estimate/paths.c, estimate/scale.c) ----
 *
 * Where a procedure has path data (dcpi/paths.h: observed transitions from
 * single steps or branch records), the SHAPE of its counts comes from the
 * paths: per-branch outcome probabilities from the observed transitions,
 * with a static prior where a branch was seen rarely, give relative block
 * and edge frequencies by solving x_b = entry_b + sum_p x_p prob(p -> b).
 * Only the SCALE (executions per relative unit, one number per procedure
 * or per loop region) comes from the samples: samples x cycles_per_sample
 * over relative frequency x best case, by one of the rules below.
 */
struct path_profile;

/* What the path data says about one procedure's CFG. */
struct est_path_obs {
	size_t nblocks, nedges;		/* as the cfg's */
	double *edge;			/* [nedges] transitions seen on each edge */
	double *depart;			/* [nblocks] departures seen (sum over succ) */
	double *seen;			/* [nblocks] arrivals + departures seen */
	double entries;			/* entries from outside (calls to it) */
	double transitions;		/* transitions matched to the CFG's edges */
	double unmatched;		/* leaving a block's end along no edge */
	double bursts;			/* of the image's profile */
	int taken_only;			/* PATH_F_TAKEN_ONLY */
};

/*
 * Map pp's transitions (file offsets of img) onto cfg's edges: a
 * transition from a block's last instruction to a successor's first is
 * that edge; a call (to anywhere) counts on its call-return edge; a return
 * or a jump out of the procedure on its edge to the exit; a transition from
 * outside (or PATH_ELSEWHERE) to the entry, or a call to it, is an entry.
 * Steps inside a block add nothing.  obs is allocated; free with
 * est_path_obs_free.  pp may be NULL (empty obs).
 */
int est_path_obs_from_profile(const struct cfg *cfg, const struct image *img,
			      const struct path_profile *pp, struct est_path_obs *obs,
			      struct dcpi_err *err);
/* The same with the file offset of cfg->start given (no image needed). */
int est_path_obs_at(const struct cfg *cfg, uint64_t off0, const struct path_profile *pp,
		    struct est_path_obs *obs, struct dcpi_err *err);
void est_path_obs_free(struct est_path_obs *obs);

/*
 * Prior outcome probabilities of every edge from the CFG alone (Ball and
 * Larus's loop heuristics): prior[nedges], summing to 1 over each block's
 * successors.
 */
void est_path_prior(const struct cfg *cfg, double *prior);

/*
 * Branch probabilities: prob_e = (n_e + w prior_e) / (N_b + w), n_e the
 * observed transitions on e, N_b the block's observed departures, w the
 * prior's weight in pseudo-observations.  prob[nedges].
 */
void est_path_probs(const struct cfg *cfg, const struct est_path_obs *obs, double w,
		    double *prob);

/*
 * Relative frequencies: solve x = e + P^T x (e = 1 at the entry), loops
 * included; x[nblocks], y[nedges + 1] (y[nedges] = the virtual exit ->
 * entry edge = 1).  A leak of 1e-9 per block keeps cycles with
 * probability 1 (no way out) finite.  -E2BIG above EST_PATH_MAX_BLOCKS.
 */
#define EST_PATH_MAX_BLOCKS 3000
int est_path_shape(const struct cfg *cfg, const double *prob, double *x, double *y,
		   struct dcpi_err *err);

/* Scale rules (estimate/scale.c); docs/estimate.md compares them. */
enum est_scale_rule {
	EST_SCALE_SUM,		/* sum S cps / sum x M over all blocks */
	EST_SCALE_QUANTILE,	/* sample-weighted low quantile of block ratios */
	EST_SCALE_LOOPS,	/* loops: S cps / (x M along the path, overlapped) */
	EST_SCALE_MINLOOP,	/* the smallest of the loops' and the rest's scales */
	EST_SCALE_WINDOWS,	/* sample-weighted median of window estimate / x
				 * (the class ratios + solver, robust per class) */
	EST_SCALE_NRULES,
};

struct est_path_opts {
	double prior_weight;	/* pseudo-observations of the prior per branch */
	double min_transitions;	/* fewer in the procedure: windows only */
	enum est_scale_rule rule;
	double quantile;	/* EST_SCALE_QUANTILE */
	int regions;		/* each loop with enough samples its own scale */
	double region_samples;	/* ... at least this many */
};

void est_path_opts_default(struct est_path_opts *o);
const char *est_scale_rule_name(enum est_scale_rule r);
int est_scale_rule_parse(const char *s, enum est_scale_rule *r);
/* A rule or "quantile:Q" (0 < Q <= 1) into p; -EINVAL otherwise. */
int est_scale_parse(const char *s, struct est_path_opts *p);

/* Where a block's count came from. */
enum est_bsource {
	EST_BS_WINDOWS,		/* no path data: window ratios as before */
	EST_BS_PATHS,		/* path shape, scale from other blocks' samples */
	EST_BS_BOTH,		/* path shape and its own samples in the scale */
};
const char *est_bsource_name(enum est_bsource s);

struct est_path_info {
	int used;			/* the counts come from the paths */
	double transitions, entries, bursts, unmatched;
	double scale;			/* executions per relative unit (procedure) */
	double rule_scale[EST_SCALE_NRULES];	/* each rule's figure */
	long scale_block;		/* the block whose ratio is the scale (the
					 * quantile rule over the whole procedure),
					 * -1 when none is: its count is its own
					 * samples at its best case, the shape aside */
	size_t nblocks, nedges;
	double *xrel;			/* [nblocks] relative frequencies */
	double *edge_obs;		/* [nedges] transitions seen */
	double *block_obs;		/* [nblocks] observations behind each block */
	enum est_bsource *source;	/* [nblocks] */
};
void est_path_info_free(struct est_path_info *pi);

/*
 * The scale from block samples s_blk[nb] (x cps cycles each), best-case
 * cycles per execution m_blk[nb], single-pass m_single[nb] (for the loop
 * rule's overlap; may equal m_blk) and relative counts x[nb] by rule.
 * model may be NULL (loops then use m_blk as is).  0 when no block has
 * samples and best-case cycles.
 */
double est_path_scale(const struct cfg *cfg, const struct model *model, enum est_scale_rule rule,
		      double quantile, const double *s_blk, const double *m_blk,
		      const double *x, const double *prob, double cps, const int *in_region);
/* EST_SCALE_WINDOWS: win[nb] the windows' block counts (est_procedure). */
double est_path_scale_windows(const struct cfg *cfg, const double *s_blk, const double *win,
			      const double *x, const int *in_region);

/*
 * est_procedure with path data: the windows' estimate first (exactly
 * est_procedure), then, when obs has at least popts->min_transitions,
 * block, edge and instruction counts from the path shape x the scale.
 * obs may be NULL.  info (may be NULL) is filled; free with
 * est_path_info_free.
 */
int est_procedure_paths(const struct cfg *cfg, const struct model *model, const double *samples,
			double cps, const struct est_opts *opts, const struct est_path_opts *popts,
			const struct est_path_obs *obs, struct est_result *out,
			struct est_path_info *info, struct dcpi_err *err);

/*
 * The 90% interval of every block and edge count of r from the evidence
 * behind it (samples under the scale, best-case spread, a witness's
 * exposure, path observations, a pile of samples on one instruction), and
 * the confidence words from it: high within 15% either way, medium 50%
 * (estimate/interval.c; docs/estimate.md "Intervals"), r->shared_core's
 * allowance and r->clock_h.  pi, meas, model may be NULL (model: the
 * mispredict penalty a branch may add); exact: the counts are callgrind's
 * (point intervals).
 */
struct est_path_info;
void est_intervals(const struct cfg *cfg, struct est_result *r, const struct est_path_info *pi,
		   const struct est_measurements *meas, const struct model *model, int exact);
/* How far a count may over-read on a shared core, where ports and slots
 * bind the code: 1 + r->shared_core (at most 2), 1 when 0. */
double est_shared_allowance(const struct est_result *r);
/* How far the clock may have been from its calibrations during the run
 * (estimate/samples.c, docs/estimate.md "The clock"): a 90% half-width in
 * log units from the change between the calibrations before and after it;
 * 0 when not measured. */
struct prof_epoch_meta;
double est_clock_h(const struct prof_epoch_meta *meta);
/* The factor est_intervals lowers every low end by: 1 + the allowance's
 * share x (r->shared_slowdown - 1); 1 when either is 0. */
double est_shared_lowering(const struct est_result *r);

/*
 * Culprits of the estimate's dynamic stalls (culprit.h; estimate/culprits.c):
 * per instruction S_i x cps - F x M_i where positive.  ev: per instruction
 * event counts of the same procedure (counts x period), by event name;
 * names est_culprit_event does not know are skipped.  skid: instructions a
 * sample lands after the one that waits (the calibration's, else 2).
 */
struct cul_result;
struct est_event_counts {
	const char *event;		/* "callgrind-D1mr", "branch-misses", ... */
	const double *counts;		/* per instruction (cfg->insns), events */
};
/*
 * From profiles p[0..np) of image id: the per-instruction counts of every
 * event that bounds a culprit (est_culprit_event) and, where there is one,
 * callgrind-Ir's exact executions (exact, NULL otherwise); counts are
 * samples x period.  Called again with other profiles, it adds to them.
 */
struct est_events {
	size_t n;
	char **names;			/* event names */
	double **counts;		/* per instruction */
	struct est_event_counts *list;	/* the same, for est_culprits */
	double *exact;			/* callgrind-Ir per instruction, or NULL */
};
int est_events_for(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
		   const struct cfg *cfg, const struct image *img, struct est_events *out,
		   struct dcpi_err *err);
void est_events_free(struct est_events *e);
/* Exact executions per instruction (callgrind-Ir) replace the estimate's:
 * instructions' and blocks' counts and CPIs, confidence high where run. */
void est_use_exact(const struct cfg *cfg, struct est_result *r, const double *exact);
/*
 * Calls counted at the entry (estimate/calls.c; docs/estimate.md "Calls
 * counted at the entry"): est_calls_counted gives the count at entry (a
 * virtual address of img) in p[0..np)'s PROF_EVENT_CALLS profile of image
 * id, 0 when not counted; est_use_calls solves r's flow again with the
 * entry's class held at calls and every other class at its count, by its
 * samples' weight (r->calls, r->calls_scale set): 1 when done, 0 when the
 * entry block has no estimate, -ENOMEM.  est_intervals then takes what
 * flow ties to the entry as measured.
 */
double est_calls_counted(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
			 const struct image *img, uint64_t entry);
int est_use_calls(const struct cfg *cfg, struct est_result *r, double calls, struct dcpi_err *err);
/*
 * Executions counted at blocks (a plan's block lines, PROF_EVENT_EXECS;
 * docs/estimate.md "Loops counted"): est_blocks_counted fills out[b] with
 * block b's count (0: not counted) and returns how many were;
 * est_use_counts is est_use_calls with those classes held too (calls may
 * be 0: the entry not counted), and a counted class's loop's other classes
 * pulled by their samples instead of held (r->classes_counted,
 * r->counted).
 */
size_t est_blocks_counted(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
			  const struct image *img, const struct cfg *cfg, double *out);
int est_use_counts(const struct cfg *cfg, struct est_result *r, double calls,
		   const double *counts, struct dcpi_err *err);
/* enum cul_event of a profile's event name, or -1; *sampled: a PMU's. */
int est_culprit_event(const char *event, int *sampled);
int est_culprits(const struct cfg *cfg, const struct est_result *r,
		 const struct est_event_counts *ev, size_t nev, int skid,
		 struct cul_result *out, struct dcpi_err *err);

#endif /* DCPI_ESTIMATE_H */
