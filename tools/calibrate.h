/*
 * calibrate.h - `dcpi calibrate`'s options, shared by its two halves:
 * tools/calibrate.c (where samples land) and tools/calibrate_model.c (the
 * instruction tables: the model file).
 */
#ifndef DCPI_TOOLS_CALIBRATE_H
#define DCPI_TOOLS_CALIBRATE_H

#include "dcpi/model.h"

struct cal_args {
	const char *db, *model, *out, *workload;
	unsigned long scale, cg_scale;
	int keep, quiet;
	/* the instruction tables */
	const char *base, *model_file, *measurements;
	const char *refit;		/* fit to these saved probe cycles, no timing */
	int tables_only, no_tables, passes, cpu;	/* cpu -2: the last */
};

/* Time the probes, fit, write the model file; *fitted is the model (free
 * with model_free).  0, or 1 after printing why. */
int calibrate_tables(const struct cal_args *a, struct model **fitted);

#endif /* DCPI_TOOLS_CALIBRATE_H */
