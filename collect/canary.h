/*
 * collect/canary.h - the contention canary, timed where the program runs:
 * TSC ticks of PRT_CANARY_N dependent adds (the clock: one core cycle each)
 * and of PRT_CANARY_N groups of 8 independent adds (bound by the ALUs'
 * throughput, which a busy sibling thread of the core takes a share of).
 * The path runtime (pathrt.c) times it at each burst's start on the
 * program's core; dcpi record (record.c) times it beside, for the core's
 * figure alone.  Header-only: the runtime links nothing of the collector.
 */
#ifndef DCPI_COLLECT_CANARY_H
#define DCPI_COLLECT_CANARY_H

#include <stdint.h>

#include "pathrt.h"

static inline uint64_t tsc_now(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

/* The contention canary on this core (pathrt.h, struct prt_canary): each
 * figure the least of three runs, less the least of three empty ones (the
 * fences and the clock's read). */
static inline void time_canary(struct prt_canary *c)
{
	uint64_t best_chain = UINT64_MAX, best_adds = UINT64_MAX, best_none = UINT64_MAX;

	for (int k = 0; k < 3; k++) {
		uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
		uint64_t t0 = tsc_now(), t1, t2, t3;

		__asm__ volatile(".rept " PRT_CANARY_REPT "\n\tadd $1, %0\n\t.endr" : "+r"(a0));
		t1 = tsc_now();
		__asm__ volatile(".rept " PRT_CANARY_REPT "\n\tadd $1, %0\n\tadd $1, %1\n\t"
				 "add $1, %2\n\tadd $1, %3\n\tadd $1, %4\n\tadd $1, %5\n\t"
				 "add $1, %6\n\tadd $1, %7\n\t.endr"
				 : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a4), "+r"(a5),
				   "+r"(a6), "+r"(a7));
		t2 = tsc_now();
		t3 = tsc_now();
		best_chain = t1 - t0 < best_chain ? t1 - t0 : best_chain;
		best_adds = t2 - t1 < best_adds ? t2 - t1 : best_adds;
		best_none = t3 - t2 < best_none ? t3 - t2 : best_none;
	}
	c->chain = c->adds = 0;
	if (best_chain > best_none && best_adds > best_none && best_adds < UINT32_MAX) {
		c->chain = (uint32_t)(best_chain - best_none);
		c->adds = (uint32_t)(best_adds - best_none);
	}
}

/* Core cycles per group of 8 adds, 0 if it could not be timed. */
static inline double canary_cycles(const struct prt_canary *c)
{
	return c->chain && c->adds ? (double)c->adds / c->chain : 0;
}

#endif /* DCPI_COLLECT_CANARY_H */
