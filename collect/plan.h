/*
 * collect/plan.h - the marking plan in dcpi record (plan.c; docs/values.md,
 * "Marking plan"): the plan file turned into the runtime's (pathrt.h).
 */
#ifndef DCPI_COLLECT_PLAN_H
#define DCPI_COLLECT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"
#include "pathrt.h"

struct plan_info {
	uint64_t marks;		/* procedures handed to the runtime */
	uint64_t breakpoints;	/* ... of them with a breakpoint (args) */
	uint64_t dropped;	/* of images no longer the file planned, or too many */
	uint64_t images_changed;
	uint64_t bad;		/* lines not understood */
	uint64_t counts;	/* marks whose calls are counted (entry=) */
	uint64_t blocks;	/* blocks whose executions are counted (block lines) */
};

/* Write spool_dir/PRT_PLAN_NAME from the plan file plan (its path in out). */
int plan_runtime_file(const char *plan, const char *spool_dir, char *out, size_t len,
		      struct plan_info *info, struct dcpi_err *err);

struct paths_run;
struct collect_result;
/* The plan for the run pr prepares: its file for the runtime, counts in res. */
int plan_prepare_run(struct paths_run *pr, const char *plan, struct collect_result *res,
		     struct dcpi_err *err);

/* A line of the runtime's plan file (collect/pathrt.h) as dcpi record reads
 * it back: path NULL when the line was not understood (the runtime skips
 * it too, and the lines keep their indices). */
struct plan_rt_mark {
	uint64_t off, size;
	uint32_t flags;			/* PRT_PLAN_* */
	uint8_t entry[PRT_ENTRY_MAX];	/* PRT_PLAN_COUNT: the entry's bytes */
	size_t nentry;
	char *path;
};

/* The runtime's plan file of the spool directory dir, a mark a line (none:
 * *n = 0); free with plan_rt_free. */
int plan_rt_read(const char *dir, struct plan_rt_mark **out, size_t *n, struct dcpi_err *err);
void plan_rt_free(struct plan_rt_mark *m, size_t n);

/* The time samples the run's trampolines took (the runtime's *.tramp files
 * in the spool directory dir, the unknown image's raw pcs in agg) given to
 * the instructions they run copies of, in the images of the plan's marks;
 * *moved gets how many. */
struct maps;
struct agg;
int plan_tramp_remap(const char *dir, struct maps *maps, struct agg *agg, uint64_t *moved,
		     struct dcpi_err *err);

#endif /* DCPI_COLLECT_PLAN_H */
