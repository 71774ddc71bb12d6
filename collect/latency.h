/*
 * collect/latency.h - this machine's load latencies per memory level, for
 * classifying latency samples (latency.c; docs/values.md).
 */
#ifndef DCPI_COLLECT_LATENCY_H
#define DCPI_COLLECT_LATENCY_H

#include <stdint.h>

#include "dcpi/util.h"

struct lat_table {
	int ok;
	uint64_t median[4];	/* probe TSC ticks: L1, L2, L3, DRAM */
	uint64_t bound[3];	/* at most bound[i]: level i */
};

/* Measure (about 0.1 s); -ENOMEM only. */
int lat_calibrate(struct lat_table *t, struct dcpi_err *err);
/* enum val_level of a probe's ticks. */
int lat_level(const struct lat_table *t, uint64_t ticks);

#endif /* DCPI_COLLECT_LATENCY_H */
