/*
 * estimate/calibrate/loop_lines.c - measure the front end's floor for loops on this
 * machine (the model's loop_line_bytes; docs/models.md "Loops across a
 * line"), for `dcpi calibrate --fit-model`.  The sandbox cannot: it times
 * bodies unrolled, and the floor is the loop's.  So three copies of one
 * loop (two adds, a compare and the branch back: 17 bytes) run here in
 * process, at fixed places in 64-byte-aligned code: inside one line, across
 * a 64-byte line, and across a 32-byte boundary only.  Zen 4: 1.01, 2.02,
 * 1.01 cycles an iteration, so 64.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "dcpi/model.h"

#define LL_ITERS 200000
#define LL_RUNS 15

/* The loop, PAD bytes into a 64-byte line; returns the TSC ticks it took. */
#define LL_LOOP(fn, pad)							\
	static uint64_t fn(void)						\
	{									\
		uint32_t lo, hi, lo2, hi2;					\
		__asm__ volatile("rdtsc\n\tmov %%eax,%0\n\tmov %%edx,%1\n\t"	\
				 "xor %%ecx,%%ecx\n\tjmp 1f\n\t.p2align 6\n\t"	\
				 ".fill " #pad ",1,0x90\n1:\n\t"		\
				 "add $1,%%rcx\n\tadd $1,%%r8\n\t"		\
				 "cmp $200000,%%rcx\n\tjne 1b\n\t"		\
				 "rdtsc\n\tmov %%eax,%2\n\tmov %%edx,%3"	\
				 : "=&r"(lo), "=&r"(hi), "=r"(lo2), "=r"(hi2)	\
				 : : "rax", "rcx", "rdx", "r8", "cc");		\
		return (((uint64_t)hi2 << 32) | lo2) - (((uint64_t)hi << 32) | lo); \
	}

LL_LOOP(ll_inside, 0)	/* 0x00-0x10 */
LL_LOOP(ll_across64, 56)	/* 0x38-0x48: across 64 (and 32) */
LL_LOOP(ll_across32, 24)	/* 0x18-0x28: across 32 only */

/* 10,000 dependent adds, one cycle each: TSC ticks for that many cycles. */
static uint64_t ll_chain(void)
{
	uint32_t lo, hi, lo2, hi2;
	long x = 0;

	__asm__ volatile("rdtsc\n\tmov %%eax,%1\n\tmov %%edx,%2\n\tmov $100,%%ecx\n2:\n\t"
			 ".rept 100\n\taddq $1,%0\n\t.endr\n\tdec %%ecx\n\tjnz 2b\n\t"
			 "rdtsc\n\tmov %%eax,%3\n\tmov %%edx,%4"
			 : "+r"(x), "=&r"(lo), "=&r"(hi), "=r"(lo2), "=r"(hi2)
			 : : "rax", "rcx", "rdx", "cc");
	return (((uint64_t)hi2 << 32) | lo2) - (((uint64_t)hi << 32) | lo);
}

int model_time_loop_lines(int cpu, double fig[3], struct dcpi_err *err)
{
	uint64_t best[4] = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
	cpu_set_t old, one;
	int pinned = 0;

	if (cpu >= 0 && sched_getaffinity(0, sizeof(old), &old) == 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	/* interleaved, so that a slow stretch of the machine hits all alike;
	 * contention only slows, so each keeps its least */
	for (int r = 0; r < LL_RUNS; r++) {
		uint64_t t[4] = { ll_chain(), ll_inside(), ll_across64(), ll_across32() };

		for (int k = 0; k < 4; k++)
			if (t[k] < best[k])
				best[k] = t[k];
	}
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	if (!best[0] || best[0] == UINT64_MAX)
		return dcpi_errf(err, -EIO, "loop timing: the TSC did not advance");
	for (int k = 0; k < 3; k++)	/* cycles an iteration */
		fig[k] = (double)best[k + 1] * 10000.0 / (double)best[0] / LL_ITERS;
	return 0;
}

int model_loop_line_bytes_of(const double fig[3])
{
	if (!(fig[0] > 0) || !(fig[1] > 1.5 * fig[0]))
		return 0;
	return fig[2] > 1.5 * fig[0] ? 32 : fig[2] < 1.25 * fig[0] ? 64 : 0;
}
