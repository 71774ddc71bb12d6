/*
 * report/mem_weight.h - the executions each sampled access of a data
 * profile stands for (report/mem_weight.c; docs/data.md, "Weighting").
 */
#ifndef DCPI_REPORT_MEM_WEIGHT_H
#define DCPI_REPORT_MEM_WEIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/data.h"

struct mem_wt {
	size_t prof;		/* index of the data profile */
	uint64_t insn;		/* the accessing instruction's file offset */
	double accesses;	/* its sampled accesses, all objects */
	double execs;		/* the analysis's executions; -1 none, -2 a string insn */
	double weight;		/* executions one sampled access stands for (0: unknown) */
	int measured;		/* its executions counted, or its loop's ratio measured
				 * by a counted class (counted_ratios) */
};

/* One entry per distinct (profile, instruction) of p[0..np), sorted; *rel
 * when some executions are relative (no calibrated cycles per sample). */
int mem_weights(const char *dbdir, const char *epoch, const struct data_profile *p, size_t np,
		struct mem_wt **out, size_t *nout, int *rel, struct dcpi_err *err);
/* The weight of (prof, insn) in w[0..n), 0 when not there. */
double mem_weight_of(const struct mem_wt *w, size_t n, size_t prof, uint64_t insn);
/* The share of w's weighted accesses (weight x accesses) that are measured. */
double mem_weight_measured(const struct mem_wt *w, size_t n);

#endif /* DCPI_REPORT_MEM_WEIGHT_H */
