/*
 * membound.c - a fixed amount of memory-bound work that times itself, for
 * bench/bench_overhead.sh (DCPI paper sec. 5 measured its collector on
 * memory-heavy workloads as well as CPU-bound ones: a collector that
 * pollutes the caches and TLB costs more there than its CPU time).
 *
 * A dependent pointer chase through one random cycle over 64 MiB (far
 * larger than the last-level cache, so almost every step misses), built with
 * Sattolo's algorithm from a fixed seed: the same permutation every run.
 * The array is built before the clock starts; the timed part is the chase.
 *
 * The last two lines of stdout are "cpu SECONDS" (this process's CPU time,
 * which the sampling interrupts are charged to but other processes'
 * time is not) and "elapsed SECONDS" (CLOCK_MONOTONIC around the
 * chase).
 *
 * usage: membound [steps [MiB]]   (defaults 6000000 steps, 64 MiB; ~1 s here)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "wl_common.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* next[i] forms a single cycle through all n slots (Sattolo). */
static size_t *make_cycle(size_t n)
{
	size_t *next = malloc(n * sizeof(*next));
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	if (!next)
		return NULL;
	WL_SATTOLO(next, n, seed);
	return next;
}

__attribute__((noinline)) size_t chase(const size_t *next, size_t p, unsigned long steps)
{
	for (unsigned long i = 0; i < steps; i++)
		p = next[p];
	return p;
}

int main(int argc, char **argv)
{
	unsigned long steps = argc > 1 ? strtoul(argv[1], NULL, 0) : 6000000UL;
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 64;
	size_t n = mib * 1024 * 1024 / sizeof(size_t);
	size_t *next = make_cycle(n), p = 0;
	double t0, c0;

	if (!next) {
		fprintf(stderr, "membound: %zu MiB: out of memory\n", mib);
		return 1;
	}
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	p = chase(next, p, steps);
	printf("result %zu\n", p);
	printf("cpu %.6f\n", clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	printf("elapsed %.6f\n", clock_s(CLOCK_MONOTONIC) - t0);
	free(next);
	return 0;
}
