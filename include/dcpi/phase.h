/*
 * phase.h - phase changes read from the collector's periodic sort
 * (seed note 003; docs/phases.md says the rules and what they were measured
 * to do).
 *
 * The detector keeps, per key (the collector's: an image and a 64-byte line
 * of its file offsets, a stand-in for a procedure's hot loop since the
 * collector has no symbols; 256-byte regions merged two small procedures of
 * tests/workloads/phases.c and hid their phases), a cumulative count and the counts of the current and the
 * previous interval.  phase_end sorts the interval's entries by count, as
 * the bounded sort of collect/hashtab.c orders a deep bucket, and compares
 * the order with the previous interval's:
 *
 *   inversion  a pair (x, y) with ref(x) >= factor * ref(y) that the sort
 *              reverses, cur(y) > cur(x), where ref is the previous interval
 *              or the one before it (a change inside the previous interval
 *              leaves it mixed), x held at least min_share of ref's samples
 *              and y holds at least min_share of this interval's, both at
 *              least min_hot samples (so that the Poisson noise of a few
 *              samples cannot pass for an order of magnitude).  One such
 *              pair declares a boundary.
 *   distance   half the L1 distance between the two intervals' normalized
 *              count vectors (total variation, 0..1) reaches max_distance.
 *
 * Either rule is silent for an interval with fewer than min_samples samples
 * (the previous interval is then kept as the reference), and in the interval
 * right after one where it fired (a change that straddles an interval's
 * start shows in two).
 */
#ifndef DCPI_PHASE_H
#define DCPI_PHASE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

struct phase_params {
	double factor;		/* seed 003: an order of magnitude, 10 */
	double min_share;	/* 0.10 */
	double max_distance;	/* 0.5 */
	uint64_t min_samples;	/* 20 */
	uint64_t min_hot;	/* 16: a hot entry's fewest samples */
};

/* The defaults above. */
void phase_params_default(struct phase_params *p);

struct phase_verdict {
	unsigned rules;		/* SLICE_RULE_* (include/dcpi/slices.h) that fired */
	uint64_t inversions;	/* qualifying pairs the sort reversed */
	double distance;	/* total variation to the previous interval */
	uint64_t samples;	/* in the interval just ended */
};

struct phase_det;

int phase_new(const struct phase_params *p, struct phase_det **out, struct dcpi_err *err);
void phase_free(struct phase_det *d);
/* count samples of key in the current interval; -ENOMEM. */
int phase_add(struct phase_det *d, uint64_t key, uint64_t count);
/* End the current interval: compare it with the previous one into *v (its
 * rules say whether a new phase starts with it). */
int phase_end(struct phase_det *d, struct phase_verdict *v);
/* The collector's key for (image, file offset). */
static inline uint64_t phase_key(uint32_t image, uint64_t offset)
{
	return (uint64_t)image << 40 ^ offset >> 6;
}

#endif /* DCPI_PHASE_H */
