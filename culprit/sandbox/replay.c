/*
 * replay.c - a load's walk timed on this machine (docs/estimate.md
 * "Replayed loads").  A load whose address comes from its own last result
 * (i = next[i], p = p->next) waits for each step's data before it can issue
 * the next: its loop runs at the latency of a random line of the region it
 * walks, whatever the pipeline model says of an L1 hit.  The path bursts'
 * addresses give the region's size and its elements' (estimate/replay.c);
 * here a dependent walk through random elements of a buffer of that size
 * is timed, in
 * cycles per step (clocked by a chain of one-cycle adds, as the sandbox is),
 * beside the same walk over a ring that stays in L1, the hit a best case
 * assumes.  The walk runs in the calling process on the CPU it is on.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/sandbox.h"

#define REPS		7
#define STEPS		20000
#define REP_TICKS	20000000	/* about 8 ms of a 2.5 GHz TSC */
#define CLOCK_ADDS	1000
#define CLOCK_LOOPS	50
#define L1_BYTES	4096
#define MAX_BYTES	(1ull << 30)
#define ROUNDS		3
#define QUIET		0.10	/* a round spread less is kept */

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n rdtsc\n lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

/* Ticks per cycle: the least of several runs of a dependent add chain. */
static double ticks_per_cycle(void)
{
	double best = 0;

	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = tsc(), x = 0, t;

		for (int k = 0; k < CLOCK_LOOPS; k++)
			__asm__ volatile(".rept 1000\n add $1, %0\n .endr" : "+r"(x));
		t = tsc() - t0;
		if (t > 0 && (best == 0 || t < best))
			best = (double)t;
	}
	return best / (CLOCK_ADDS * CLOCK_LOOPS);
}

/* Uninstrumented: under ASan each step would also read its shadow byte, a
 * second miss a step over a large region (the walk is timed, and its
 * addresses are the ring's own, in bounds by construction). */
__attribute__((no_sanitize("address", "undefined")))
static uint32_t walk(const uint8_t *buf, size_t elem, size_t steps, uint32_t i)
{
	for (size_t k = 0; k < steps; k++)
		i = *(volatile const uint32_t *)(buf + (size_t)i * elem);
	return i;
}

/* One random cycle through the n elements of elem bytes of buf (Sattolo's
 * algorithm, xorshift64): each element's first 4 bytes hold the index of
 * the next, as a chase's array does; a line is visited again at random, not
 * a whole ring later (a ring of lines is every cache's worst case and was
 * 1.7 times slower than an array chase over 16 MB here). */
static void make_cycle(uint8_t *buf, size_t n, size_t elem, uint64_t seed)
{
	for (size_t k = 0; k < n; k++)
		*(uint32_t *)(buf + k * elem) = (uint32_t)k;
	for (size_t k = n - 1; k > 0; k--) {
		uint32_t *a = (uint32_t *)(buf + k * elem), *b, t;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		b = (uint32_t *)(buf + (seed % k) * elem);
		t = *a, *a = *b, *b = t;
	}
}

/* Median ticks per step of REPS timed walks over bytes in elements of elem,
 * after a warm-up that leaves caches and TLB as a long walk would; *spread
 * is the interquartile range over the median. */
static int time_walk(size_t bytes, size_t elem, double *ticks, double *spread)
{
	size_t n = bytes / elem, warm, steps;
	double t[REPS];
	uint8_t *buf;
	uint32_t i = 0;

	if (n < 16)
		n = 16;
	buf = aligned_alloc(64, (n * elem + 63) / 64 * 64);
	if (!buf)
		return -ENOMEM;
	make_cycle(buf, n, elem, 0x9e3779b97f4a7c15ULL ^ bytes);
	warm = 3 * n < 50000 ? 50000 : 3 * n > 2000000 ? 2000000 : 3 * n;
	i = walk(buf, elem, warm, i);
	{	/* repetitions of REP_TICKS each: long enough to meet what a run
		 * meets (a sibling's traffic, interrupts), not a quiet instant */
		uint64_t t0 = tsc();

		i = walk(buf, elem, STEPS, i);
		steps = (size_t)((double)REP_TICKS * STEPS / (double)(tsc() - t0 + 1));
		steps = steps < STEPS ? STEPS : steps > 50 * STEPS ? 50 * STEPS : steps;
	}
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = tsc();

		i = walk(buf, elem, steps, i);
		t[r] = (double)(tsc() - t0) / (double)steps;
	}
	free(buf);
	qsort(t, REPS, sizeof(t[0]), dcpi_cmp_double);
	*ticks = t[REPS / 2];
	*spread = t[REPS / 2] > 0 ? (t[3 * REPS / 4] - t[REPS / 4]) / t[REPS / 2] : 0;
	return 0;
}

/* Contention only slows a walk: a noisy round is timed again, the quickest
 * of ROUNDS kept (as the sandbox keeps its bodies' figures). */
static int quickest(size_t bytes, size_t elem, double *ticks, double *spread)
{
	int rc = 0;

	for (int round = 0; rc == 0 && round < ROUNDS; round++) {
		double t, st;

		rc = time_walk(bytes, elem, &t, &st);
		if (rc == 0 && (round == 0 || t < *ticks))
			*ticks = t, *spread = st;
		if (*spread <= QUIET)
			break;
	}
	return rc;
}

int sbx_replay_walk(size_t bytes, size_t elem, struct sbx_walk *out, struct dcpi_err *err)
{
	double tpc, far = 0, near = 0, sfar = 0, snear = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (elem < 4 || elem > 4096 || (elem & (elem - 1)))
		return dcpi_errf(err, -EINVAL, "replay: elements of %zu bytes (4 to 4096, a "
				 "power of 2)", elem);
	if (bytes > MAX_BYTES)
		bytes = MAX_BYTES;	/* past any cache and TLB reach */
	tpc = ticks_per_cycle();
	if (!(tpc > 0))
		return dcpi_errf(err, -EIO, "replay: the clock chain did not run");
	rc = quickest(L1_BYTES, elem, &near, &snear);
	if (rc == 0)
		rc = quickest(bytes, elem, &far, &sfar);
	if (rc < 0)
		return dcpi_errf(err, rc, "replay: no memory for a walk over %zu bytes", bytes);
	out->bytes = bytes;
	out->elem = elem;
	out->cycles = far / tpc;
	out->l1_cycles = near / tpc;
	out->spread = sfar;
	return 0;
}
