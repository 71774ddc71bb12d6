/*
 * valloop.c - a workload with values known exactly, for value samples
 * (tests/test_valrec.c; docs/values.md).  Each iteration of the main loop
 * draws from an LCG and
 *   - calls vl_scale(k, x): k is 7 three times in four, else 1, 2 or 3
 *     (chosen without a branch);
 *     x is the iteration (variant); vl_scale loads the global vl_mode,
 *     always 5;
 *   - calls through vl_ops[] (an indirect call): vl_add two times in three,
 *     else vl_sub;
 *   - every 16th iteration, vl_walk sums 64 longs of an array (a load with
 *     a constant stride of 8 bytes).
 * It prints the exact counts: "calls C k7 K7 add A sub S walks W".
 * SEED (default 12345) starts the LCG; with PCT, k is 7 in PCT of 100
 * residues of the draw instead of 3 in 4 (tests/test_plan.c: 80).
 *
 * usage: valloop N [SEED [PCT]]
 */
#include <stdio.h>
#include <stdlib.h>

volatile long vl_mode = 5;
long vl_array[64];

__attribute__((noinline)) long vl_scale(long k, long x)
{
	return x * k + vl_mode;
}

__attribute__((noinline)) long vl_add(long a, long b)
{
	return a + b;
}

__attribute__((noinline)) long vl_sub(long a, long b)
{
	return a - b;
}

long (*volatile vl_ops[2])(long, long) = { vl_add, vl_sub };

__attribute__((noinline)) long vl_walk(const long *a, long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += a[i];
	return s;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	unsigned long x = argc > 2 ? strtoul(argv[2], NULL, 10) : 12345, k7 = 0, adds = 0;
	unsigned long walks = 0;
	unsigned pct = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 0;
	long acc = 0;

	for (int i = 0; i < 64; i++)
		vl_array[i] = i;
	for (unsigned long i = 0; i < n; i++) {
		unsigned r, k, op, other;

		x = x * 6364136223846793005UL + 1442695040888963407UL;
		r = (unsigned)(x >> 33);
		/* without a branch: a mispredicted one before the call would
		 * make the calls with k != 7 slower to reach, and bursts, which
		 * start in proportion to time, would see them more often than
		 * they run (docs/values.md, the phase bias) */
		other = pct ? -(unsigned)((r >> 12) % 100 >= pct) : -(unsigned)((r & 3) == 0);
		k = (7 & ~other) | ((1 + (r >> 2) % 3) & other);
		k7 += k == 7;
		acc += vl_scale(k, (long)i);
		op = (r >> 8) % 3 == 2;
		adds += !op;
		acc = vl_ops[op](acc, (long)r);
		if (!(i & 15)) {
			acc += vl_walk(vl_array, 64);
			walks++;
		}
	}
	printf("calls %lu k7 %lu add %lu sub %lu walks %lu (%ld)\n", n, k7, adds, n - adds,
	       walks, acc & 1);
	return 0;
}
