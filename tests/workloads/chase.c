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

int main(int argc, char **argv)
{
	size_t n = (argc > 1 ? strtoull(argv[1], NULL, 0) : (8u << 20)) / sizeof(unsigned);
	long steps = argc > 2 ? strtol(argv[2], NULL, 0) : 10000000;
	unsigned *next = malloc(n * sizeof(*next));
	uint64_t x = 88172645463325252ull;

	if (!next || n < 2)
		return 1;
	WL_SATTOLO(next, n, x);		/* one cycle through all */
	printf("%ld\n", walk(next, steps));
	free(next);
	return 0;
}
