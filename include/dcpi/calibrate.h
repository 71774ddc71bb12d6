/*
 * dcpi/calibrate.h - `dcpi calibrate`'s library (estimate/calibrate/): where
 * this machine's samples land, measured on the skid loops (skid.c; the fit of
 * one loop and the calibration file are estimate/calibrate/attribution.c,
 * declared in dcpi/estimate.h), and this machine's instruction costs, the
 * probes timed in the sandbox and the shipped model fitted to them
 * (tables.c, probe_time.c, loop_lines.c; the fit itself is
 * culprit/model/fit.c).  tools/cmd_calibrate.c parses options and prints.
 */
#ifndef DCPI_CALIBRATE_H
#define DCPI_CALIBRATE_H

#include <stddef.h>

#include "dcpi/estimate.h"
#include "dcpi/model.h"
#include "dcpi/util.h"

/* What a calibration is doing now, one line without a newline ("sampling
 * ...", a note about a measurements file's row); may be NULL. */
typedef void (*est_calib_note_fn)(void *arg, const char *msg);

/* The skid loops `dcpi __skidloops` runs (tools/cmd_skidloops.c), by symbol. */
extern const char *const est_calib_loops[];
extern const size_t est_calib_nloops;

struct est_calib_skid {
	/* in */
	const char *self;		/* this dcpi binary: runs `record` */
	const char *workload;		/* a binary with the loops; NULL: self __skidloops */
	const struct model *model;	/* the model the loops' M_i come from */
	unsigned long scale;		/* loop scale sampled */
	unsigned long cg_scale;		/* loop scale counted under callgrind */
	est_calib_note_fn note;
	void *arg;
	/* out */
	char scratch[256];		/* the scratch directory ("" before it exists) */
	struct est_calibration cal;	/* the loops and the machine's figures */
};

/*
 * Run the loops under `dcpi record` (cpu-clock, no path samples) and under
 * valgrind's callgrind in a scratch directory under $TMPDIR, import the
 * exact counts and fit each loop (est_calib_loop), then combine them.
 * s->scratch is left for est_calib_skid_clean, which removes it.
 */
int est_calib_skid(struct est_calib_skid *s, struct dcpi_err *err);
/* Remove s's scratch directory (keep: leave it); idempotent. */
void est_calib_skid_clean(struct est_calib_skid *s, int keep);

struct est_calib_tables_opts {
	const char *base;		/* the shipped model to fit; NULL: CPUID's */
	const char *model_file;		/* NULL: this machine's (model_file_path) */
	const char *measurements;	/* also write the probes' cycles here; or NULL */
	const char *refit;		/* fit to the cycles saved in this file, no timing */
	int passes;			/* timing passes over the probes, 1 to 64 */
	int cpu;			/* pin the timing here; -1 not pinned; -2 the last */
	est_calib_note_fn note;
	void *arg;
	model_progress_fn progress;	/* after each timing pass (model_time_probes) */
};

struct est_calib_tables {
	struct model *fitted;		/* the model written (free: est_calib_tables_free) */
	struct model_fit_report rep;
	char path[4096];		/* the model file written */
	int cpu;			/* the CPU the probes were timed on */
	size_t nprobes;			/* probes timed */
	double load[64];		/* the contention probe's figure per pass */
	int loop_lines;			/* 1: loop_line_bytes was timed (not with refit) */
	double loop_fig[3];		/* its figures (model_time_loop_lines) */
	int loop_line_bytes;
};

/*
 * `dcpi calibrate --fit-model`: time the probes (culprit/model/probes.txt) in the
 * sandbox, or read them from o->refit, fit a copy of the shipped model
 * (model_fit), time the loop-line floor, write the model file and, with
 * o->measurements, the probes' cycles.  Fills t (free it either way).
 */
int est_calib_tables(const struct est_calib_tables_opts *o, struct est_calib_tables *t,
		     struct dcpi_err *err);
void est_calib_tables_free(struct est_calib_tables *t);

/*
 * The measurements file: name<TAB>hex<TAB>cycles per probe, as bench/bhive's
 * tables.  est_calib_measurements_read fills cycles[i] of probes p[0..n) (0
 * where the file lacks it); a row whose bytes are not this dcpi's probe is
 * left out with a note; a row that does not parse is an error naming the
 * line.  Returns the probes found (at least one), or a negative errno.
 */
int est_calib_measurements_write(const char *path, const struct model_probe *p, size_t n,
				 const double *cycles, struct dcpi_err *err);
long est_calib_measurements_read(const char *path, const struct model_probe *p, size_t n,
				 double *cycles, est_calib_note_fn note, void *arg,
				 struct dcpi_err *err);

#endif /* DCPI_CALIBRATE_H */
