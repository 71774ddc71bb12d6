/*
 * calltree.c - a program with a known call tree, for call graphs
 * (tests/test_callgraph.c, docs/callgraph.md).  Built with frame pointers
 * and without inlining (Makefile), so every call below is a frame.
 *
 *   main -> a -> leaf(3)             30% of leaf's work
 *             -> mid(2) -> leaf(2)   20%
 *        -> b -> leaf(1)             10%
 *             -> mid(4) -> leaf(4)   40%
 *
 * leaf(n) runs n units of a dependent multiply chain; everything else is
 * a few instructions a call, so each path's share of the time is its
 * share of leaf's units: leaf's callers a 30%, b 10%, mid 60%; mid's
 * callers a 1/3, b 2/3; main's callees a 50%, b 50%.  The argument is the
 * number of rounds (default 100: about a second here).  A unit is long beside the
 * sampling period (0.5 ms against 0.25), so that the call tree's rhythm
 * does not alias with the samples'.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define UNIT 400000

static uint64_t acc = 1;

__attribute__((noinline)) static void store(uint64_t x)
{
	acc = x;
}

/* It calls store so that it is no leaf procedure: GCC 12 sets up no frame
 * in one even with -fno-omit-frame-pointer, and a frame-pointer chain
 * sampled there skips its caller (docs/callgraph.md, "Limits"). */
__attribute__((noinline)) static uint64_t leaf(unsigned n)
{
	uint64_t x = acc;

	for (unsigned i = 0; i < n * UNIT; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	store(x);
	return x;
}

__attribute__((noinline)) static uint64_t mid(unsigned n)
{
	return leaf(n) + 1;
}

__attribute__((noinline)) static uint64_t a(void)
{
	return leaf(3) ^ mid(2);
}

__attribute__((noinline)) static uint64_t b(void)
{
	return leaf(1) ^ mid(4);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
	uint64_t s = 0;

	for (long r = 0; r < rounds; r++)
		s += a() + b();
	printf("%llu\n", (unsigned long long)(s & 0xff));
	return 0;
}
