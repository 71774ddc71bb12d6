/*
 * estloops.c - small deterministic loops with known block counts, for the
 * frequency estimator's end-to-end test (tests/test_estimate.c) and its
 * accuracy figures (docs/estimate.md, DCPI paper sec. 6.2).
 *
 * Every count is exactly proportional to the scale argument, so exact counts
 * measured under callgrind at a small scale multiply up to a larger one:
 *   loop_mixed: per call, the outer loop runs 1000 times; an if inside it is
 *   taken one time in four; a nested inner loop runs 7 + (i & 7) times.
 *   loop_simple: a single-block counting loop of 4000 iterations per call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t loop_simple(uint64_t x)
{
	for (int i = 0; i < 4000; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ull + (uint64_t)i;
	return x;
}

__attribute__((noinline)) static uint64_t loop_mixed(uint64_t x)
{
	uint64_t acc = 0;

	for (unsigned i = 0; i < 1000; i++) {
		if ((i & 3) == 0)
			acc += x >> (i & 15);
		else
			acc ^= x + i;
		for (unsigned j = 0; j < 7 + (i & 7); j++)
			acc = acc * 3 + j;
		x += acc;
	}
	return acc;
}

int main(int argc, char **argv)
{
	uint64_t scale = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
	uint64_t x = 1;

	for (uint64_t r = 0; r < scale; r++) {
		x = loop_mixed(x + r);
		x = loop_simple(x);
	}
	sink = x;
	printf("%llu\n", (unsigned long long)x);
	return 0;
}
