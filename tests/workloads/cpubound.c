/*
 * cpubound.c - a fixed amount of CPU-bound work that times itself, for
 * bench/bench_overhead.sh (DCPI paper sec. 5: the collector's overhead is the
 * workload's slowdown).  The work touches almost no memory: a dependent
 * multiply-add chain in integer registers and a short FP recurrence, so what
 * slows it down under a collector is the sampling interrupts and the
 * collector's own CPU time, not cache or TLB pollution.
 *
 * The last two lines of stdout are "cpu SECONDS" (this process's CPU time,
 * which the sampling interrupts are charged to but other processes'
 * time is not) and "elapsed SECONDS" (CLOCK_MONOTONIC around the
 * work), so a wrapper's own start-up and shut-down are not counted.
 *
 * usage: cpubound [iterations]   (default 1000000000, about 1 s bare here)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) unsigned long int_chain(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) double fp_chain(double y, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		y = y * 0.999999 + 1e-6;
		__asm__ volatile("" : "+x"(y));
	}
	return y;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000000UL;
	unsigned long x = 1;
	double y = 0.5, t0 = clock_s(CLOCK_MONOTONIC), c0;
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);

	/* Ten alternating rounds, so a burst of noise hits both kinds alike. */
	for (int r = 0; r < 10; r++) {
		x = int_chain(x, n / 20);
		y = fp_chain(y, n / 40);
	}
	printf("result %lu %.6f\n", x & 0xffff, y);
	printf("cpu %.6f\n", clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	printf("elapsed %.6f\n", clock_s(CLOCK_MONOTONIC) - t0);
	return 0;
}
