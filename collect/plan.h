/*
 * collect/plan.h - the marking plan in dcpi record (plan.c; docs/values.md,
 * "Marking plan"): the plan file turned into the runtime's (pathrt.h).
 */
#ifndef DCPI_COLLECT_PLAN_H
#define DCPI_COLLECT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

struct plan_info {
	uint64_t marks;		/* procedures handed to the runtime */
	uint64_t breakpoints;	/* ... of them with a breakpoint (args) */
	uint64_t dropped;	/* of images no longer the file planned, or too many */
	uint64_t images_changed;
	uint64_t bad;		/* lines not understood */
};

/* Write spool_dir/PRT_PLAN_NAME from the plan file plan (its path in out). */
int plan_runtime_file(const char *plan, const char *spool_dir, char *out, size_t len,
		      struct plan_info *info, struct dcpi_err *err);

struct paths_run;
struct collect_result;
/* The plan for the run pr prepares: its file for the runtime, counts in res. */
int plan_prepare_run(struct paths_run *pr, const char *plan, struct collect_result *res,
		     struct dcpi_err *err);

#endif /* DCPI_COLLECT_PLAN_H */
