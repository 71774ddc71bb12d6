/*
 * diffload.c - four procedures of fixed work, for dcpidiff's noise test
 * (tests/test_diff_noise.c): two runs with the same arguments do the same
 * work in each procedure, so any change dcpidiff reports between them is
 * noise; one procedure given more work is a real change.
 *
 * work_a .. work_d run the same dependent multiply-add chain (latency bound,
 * as tests/workloads/twoprocs.c) for n iterations a call; they alternate
 * reps times, so a slowdown of the machine hits all four alike.  The
 * procedure named by SLOW (a, b, c or d) runs n x (100 + PCT) / 100
 * iterations instead.
 *
 * usage: diffload [reps [n [SLOW PCT]]]   (defaults 100, 400000, none, 0)
 */
#include <stdio.h>
#include <stdlib.h>

#define CHAIN(x, n)							\
	do {								\
		for (unsigned long i = 0; i < (n); i++) {		\
			x = x * 2862933555777941757UL + i;		\
			__asm__ volatile("" : "+r"(x));			\
		}							\
	} while (0)

/* One procedure of the four: its own symbol, the same code. */
#define WORK(name)							\
	__attribute__((noinline)) unsigned long name(unsigned long x, unsigned long n) \
	{								\
		CHAIN(x, n);						\
		return x;						\
	}

WORK(work_a)
WORK(work_b)
WORK(work_c)
WORK(work_d)

int main(int argc, char **argv)
{
	unsigned long (*const work[4])(unsigned long, unsigned long) = {
		work_a, work_b, work_c, work_d,
	};
	unsigned long reps = argc > 1 ? strtoul(argv[1], NULL, 0) : 100;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 400000;
	int slow = argc > 3 ? argv[3][0] - 'a' : -1;
	unsigned long pct = argc > 4 ? strtoul(argv[4], NULL, 0) : 0;
	unsigned long x = (unsigned long)argc;

	for (unsigned long r = 0; r < reps; r++)
		for (int k = 0; k < 4; k++)
			x = work[k](x, k == slow ? n * (100 + pct) / 100 : n);
	printf("%lu\n", x & 0xff);
	return 0;
}
