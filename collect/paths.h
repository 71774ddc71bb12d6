/*
 * collect/paths.h - path samples in `dcpi record` (docs/paths.md): setting
 * up the preloaded runtime for the command (paths_run.c) and turning its
 * spool files into per-image path profiles in the epoch (paths_spool.c).
 */
#ifndef DCPI_COLLECT_PATHS_H
#define DCPI_COLLECT_PATHS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "datarec.h"
#include "latency.h"
#include "values_spool.h"

#define PATHS_SOURCE "tf-step"

struct paths_run {
	int on;
	char dir[PATH_MAX];		/* the spool directory, mode 0700 */
	char lib[PATH_MAX];		/* the runtime, absolute */
	char preload[2 * PATH_MAX + 8];	/* LD_PRELOAD for the command */
	char rate[32];			/* "RATE:K" */
	int values;			/* registers too: value samples */
	int latency;			/* and latency probes (docs/values.md) */
	char plan[PATH_MAX];		/* the runtime's plan file (collect/plan.c), or "" */
	struct lat_table lat;		/* values: this machine's load latencies */
};

#define PATHS_CANARY_RES 64	/* bins per cycle */
#define PATHS_CANARY_BINS (16 * PATHS_CANARY_RES)

/* What the spool files held (collect_result carries it out). */
struct paths_stats {
	uint64_t files;		/* spool files: processes and exec'd images */
	uint64_t bursts, steps;	/* bursts read, pcs in them */
	uint64_t cut, lost;	/* ended at a syscall / lost TF (PRT_F_*) */
	uint64_t threads;	/* distinct (pid, tid) */
	uint64_t edges, images;	/* edge records and images written */
	uint64_t bad;		/* records skipped as malformed or truncated */
	struct vals_stats values;	/* value samples (docs/values.md) */
	struct data_rec_stats data;	/* data profiles (docs/data.md) */
	/* the bursts' contention canaries (pathrt.h, PRT_CANARY): how many, and
	 * their core cycles per 8 adds in bins of 1 / PATHS_CANARY_RES */
	uint64_t canaries;
	uint32_t canary[PATHS_CANARY_BINS];
	/* calls counted at the entries a plan marked (PRT_CALLS), and the
	 * entries that had any */
	uint64_t calls, calls_procs;
	uint64_t blocks_counted;	/* blocks whose executions were counted */
};

/*
 * The canaries in core cycles per 8 independent adds: the core's figure
 * alone (the lower of the bursts' most frequent figure and beside, the
 * collector's own timing; not the bursts' least, which a clock read
 * stretched by an interrupt makes too low; 0 for none), their mean and
 * standard deviation, and the share of bursts whose canary was more than
 * PATHS_CANARY_SHARED times alone: the core shared with a busy sibling then
 * (docs/estimate.md, "A shared core").  All 0 without canaries.
 */
#define PATHS_CANARY_SHARED 1.10
struct paths_canary {
	double alone, mean, sd, shared;
};
void paths_canary_summary(const struct paths_stats *st, double beside,
			  struct paths_canary *out);

/*
 * Make the spool directory and find the runtime: lib, else $DCPI_PATHS_LIB,
 * else the copy embedded in dcpi (written into the spool directory), else
 * libdcpi-paths.so beside this executable, in its parent directory or in
 * ../lib/dcpi; -ENOENT when there is none.  Then the environment strings.  rate: bursts per CPU
 * second of each thread; k: steps per burst.
 */
int paths_prepare(struct paths_run *r, unsigned rate, unsigned k, const char *lib,
		  struct dcpi_err *err);
/* In the forked child, before exec: export the settings (setenv). */
void paths_child_env(const struct paths_run *r);
/* Read every spool file, write one path profile per image into epoch. */
int paths_collect(struct paths_run *r, struct prof_db *db, const char *epoch,
		  struct paths_stats *st, struct dcpi_err *err);
/* The runtime's notes ("<pid>.note" files in the spool directory, one
 * line each: a thread it stopped stepping and why, a process it left
 * alone), the first PATHS_NOTES_MAX lines into out, then a count of the
 * rest; returns how many there were. */
#define PATHS_NOTES_MAX 8
unsigned paths_notes(const struct paths_run *r, char *out, size_t len);
/* Remove the spool directory and its files. */
void paths_cleanup(struct paths_run *r);
/* 1 when cmd (searched in PATH like execvp) is an ELF without PT_INTERP,
 * so a preloaded runtime never loads; 0 otherwise or when unknown. */
int paths_static_command(const char *cmd);

/* The runtime embedded in this binary (paths_blob.c); NULL, 0 when not. */
const unsigned char *paths_blob(size_t *len);

/* The spool files of dir into per-image profiles (paths_spool.c); *out
 * has *n profiles, free with path_profiles_free. */
int paths_spool_read(const char *dir, struct path_profile **out, size_t *n,
		     struct paths_stats *st, struct dcpi_err *err);
/* The same, and with vout the value samples of PRT_VBURST records as one
 * value profile per image (*vn of them; free with val_profiles_free; what
 * they held in st->values), latency samples classified with lat (NULL or
 * not ok: left out). */
int paths_spool_read_values(const char *dir, struct path_profile **out, size_t *n,
			    struct paths_stats *st, struct val_profile **vout, size_t *vn,
			    const struct lat_table *lat, struct dcpi_err *err);
/* The calls counted at the entries of the runtime's plan in dir (PRT_CALLS
 * records; none without a plan that counts), as one PROF_EVENT_CALLS
 * profile per image: *n of them, free with prof_profiles_free; their sum
 * and entries in st->calls, st->calls_procs. */
int paths_spool_read_calls(const char *dir, struct prof_profile **out, size_t *n,
			   struct paths_stats *st, struct dcpi_err *err);
/* All of it into epoch of db (values when asked; calls when the plan counted
 * them), and the paths by time slice ("<key>.pslices", include/dcpi/slices.h). */
int paths_spool_write(const char *dir, struct prof_db *db, const char *epoch, int values,
		      const struct lat_table *lat, struct paths_stats *st,
		      struct dcpi_err *err);

#endif /* DCPI_COLLECT_PATHS_H */
