/*
 * wl_common.h - what the workloads share (culprits.c, membound.c, chase.c,
 * chase_if.c): a pointer chase's random cycle, the same on every machine,
 * and the main that builds and walks one (chase.c, chase_if.c).
 * Macros, not functions: the workloads are built with -fno-inline
 * (Makefile), and a profile read by procedure wants the set-up's time in the
 * procedure that does it, not in a helper of its own.  phases.c keeps its
 * own copy: its code layout is part of what tests/test_phase.c measures
 * (phase keys are 64-byte lines, include/dcpi/phase.h's phase_key, and
 * moving phase_chase's loop into phase_alu's line hides the A-B-A
 * boundaries).
 */
#ifndef DCPI_WL_COMMON_H
#define DCPI_WL_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* One step of xorshift64 (Marsaglia, shifts 13, 7, 17) on the uint64_t x. */
#define WL_XORSHIFT(x) ((x) ^= (x) << 13, (x) ^= (x) >> 7, (x) ^= (x) << 17)

/* p[0..n), of any integer type, becomes one cycle through all n slots in a
 * random order (Sattolo's shuffle), drawing on the uint64_t generator x. */
#define WL_SATTOLO(p, n, x)						\
	do {								\
		for (size_t wl_i = 0; wl_i < (n); wl_i++)		\
			(p)[wl_i] = wl_i;				\
		for (size_t wl_i = (n) - 1; wl_i > 0; wl_i--) {		\
			size_t wl_j = (size_t)(WL_XORSHIFT(x) % wl_i);	\
			__typeof__(*(p)) wl_t = (p)[wl_i];		\
									\
			(p)[wl_i] = (p)[wl_j];				\
			(p)[wl_j] = wl_t;				\
		}							\
	} while (0)

/*
 * The main of a pointer chase: a ring of BYTES bytes (argv[1], else bytes)
 * of unsigned indices made one cycle through all (WL_SATTOLO, fixed seed),
 * walked STEPS steps (argv[2], else steps) by long walk(next, steps), whose
 * value it prints.
 */
#define WL_CHASE_MAIN(walk, bytes, steps_)					\
	int main(int argc, char **argv)						\
	{									\
		size_t n = (argc > 1 ? strtoull(argv[1], NULL, 0) : (bytes)) /	\
			   sizeof(unsigned);					\
		long steps = argc > 2 ? strtol(argv[2], NULL, 0) : (steps_);	\
		unsigned *next = malloc(n * sizeof(*next));			\
		uint64_t x = 88172645463325252ull;				\
										\
		if (!next || n < 2)						\
			return 1;						\
		WL_SATTOLO(next, n, x);						\
		printf("%ld\n", walk(next, steps));				\
		free(next);							\
		return 0;							\
	}

#endif
