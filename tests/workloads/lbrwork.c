/*
 * lbrwork.c - a deterministic workload for branch-record counts
 * (tests/test_lbr.c): lw_hot runs a loop whose lines run at different
 * rates (an LCG picks one of three arms, an inner loop of varying trip
 * count), and calls lw_leaf on one arm, so lines, blocks, taken and
 * fall-through edges and a call all have counts callgrind knows exactly.
 *
 * usage: lbrwork N    prints the checksum
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned lw_state = 12345;

unsigned lw_leaf(unsigned x)
{
	x ^= x >> 7;
	x *= 2654435761u;
	return x ^ (x >> 13);
}

unsigned lw_hot(long n)
{
	unsigned acc = 0;

	for (long i = 0; i < n; i++) {
		lw_state = lw_state * 1103515245u + 12345u;
		unsigned r = lw_state >> 16;

		if ((r & 3) == 0) {
			acc += lw_leaf(r);
		} else if ((r & 3) == 1) {
			acc ^= r << 3;
		} else {
			for (unsigned k = 0; k < (r & 7); k++)
				acc = acc * 33 + k;
		}
	}
	return acc;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;

	printf("%u\n", lw_hot(n));
	return 0;
}
