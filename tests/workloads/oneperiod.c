/*
 * oneperiod.c - a loop whose iteration takes exactly one sampling period,
 * the worst case for a sampler with a fixed period (DCPI paper sec. 4.1.1).
 *
 * Each iteration is a slot of P ns of the TSC: part_a (dependent adds) runs
 * for the first tenth of the slot, part_b (dependent multiplies, a very
 * different sequence) for the rest.  The slots are locked to the clock, not
 * to an instruction count, so the loop stays in step with a timer-driven
 * sampler of period P however fast the machine runs: a fixed-period sampler
 * sees the same phase of every slot and reports part_a's share as 0 or 1,
 * a randomized one reports 10%.  Both parts read the TSC inline, so every
 * sample of the loop lands in one of the two procedures.
 *
 * usage: oneperiod [period_ns [seconds [cpu]]]   (defaults 250000, 1.5, none)
 * cpu >= 0 pins the process there, so the per-CPU timer never changes.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A macro: the workloads are built with -fno-inline, and the TSC must be
 * read inside part_a and part_b for their samples to land there. */
#define rdtsc() ({ uint32_t lo_, hi_; \
	__asm__ volatile("rdtsc" : "=a"(lo_), "=d"(hi_)); \
	((uint64_t)hi_ << 32) | lo_; })

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) uint64_t part_a(uint64_t x, uint64_t until)
{
	while (rdtsc() < until)
		for (int i = 0; i < 8; i++)
			__asm__ volatile("add $1, %0\n\tadd $3, %0" : "+r"(x));
	return x;
}

__attribute__((noinline)) uint64_t part_b(uint64_t x, uint64_t until)
{
	while (rdtsc() < until)
		for (int i = 0; i < 4; i++)
			__asm__ volatile("imul %0, %0\n\tor $1, %0" : "+r"(x));
	return x;
}

int main(int argc, char **argv)
{
	double period = argc > 1 ? strtod(argv[1], NULL) : 250000;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 1.5;
	int cpu = argc > 3 ? atoi(argv[3]) : -1;
	uint64_t t0, c0, t1, c1, slot, a_len, next, end, x = (uint64_t)argc;
	double tsc_per_ns;

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	t0 = now_ns();
	c0 = rdtsc();
	while (now_ns() - t0 < 20000000)
		;
	t1 = now_ns();
	c1 = rdtsc();
	tsc_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
	slot = (uint64_t)(period * tsc_per_ns);
	a_len = slot / 10;
	next = rdtsc();
	end = next + (uint64_t)(seconds * 1e9 * tsc_per_ns);
	while (next < end) {
		x = part_a(x, next + a_len);
		x = part_b(x, next + slot);
		next += slot;
	}
	printf("%llu\n", (unsigned long long)(x & 0xff));
	return 0;
}
