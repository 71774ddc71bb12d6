/*
 * consist.c - one recording, every tool: a procedure with a hot loop, a
 * branch taken about a third of the time, an inlined helper and a call, for
 * tests/test_analysis.c, which checks that dcpicalc, dcpilist, dcpicfg,
 * dcpidiff, llvm-prof and bolt-prof print the same counts for it.
 */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned mix(unsigned h, unsigned x)
{
	return (h ^ x) * 0x9e3779b1u;
}

__attribute__((noinline)) unsigned rare(unsigned h)
{
	return h * 7 + 3;
}

__attribute__((noinline)) unsigned hot(unsigned n)
{
	unsigned h = 1, s = 0;

	for (unsigned i = 0; i < n; i++) {
		h = mix(h, i);
		if (h % 3 == 0)
			s += rare(h);
		else
			s ^= h >> 7;
	}
	return s + h;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 150000000u;

	printf("%u\n", hot(n));
	return 0;
}
