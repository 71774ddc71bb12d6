/*
 * chase.c - the textbook DCPI case for tests/test_trust.c: a dependent
 * pointer chase over one random cycle of BYTES bytes (Sattolo's algorithm,
 * fixed seed), STEPS steps; the loop of walk() runs exactly STEPS times.
 *
 * usage: chase BYTES STEPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_common.h"

__attribute__((noinline)) long walk(const unsigned *next, long steps)
{
	unsigned i = 0;
	long s = 0;

	while (steps--) {
		i = next[i];
		s += i;
	}
	return s;
}

WL_CHASE_MAIN(walk, 8u << 20, 10000000)
