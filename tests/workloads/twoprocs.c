/*
 * twoprocs.c - two procedures whose time ratio is 3:1 by construction, for
 * checking that samples land where the time goes.
 *
 * proc_a and proc_b run the same dependent multiply-add chain (latency
 * bound, so alignment and the front end do not matter), proc_a for 3n
 * iterations and proc_b for n.  They alternate, so any slowdown of the
 * machine hits both alike.  The empty asm keeps the compiler from turning
 * the chain into a closed form; the arguments come from argv so nothing is
 * folded.
 *
 * usage: twoprocs [reps [n [exit_status]]]   (defaults 100, 1000000, 0)
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) unsigned long proc_a(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < 3 * n; i++) {
		x = x * 2862933555777941757UL + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) unsigned long proc_b(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = x * 2862933555777941757UL + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

int main(int argc, char **argv)
{
	unsigned long reps = argc > 1 ? strtoul(argv[1], NULL, 0) : 100;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1000000;
	int status = argc > 3 ? atoi(argv[3]) : 0;
	unsigned long x = (unsigned long)argc;

	for (unsigned long r = 0; r < reps; r++) {
		x = proc_a(x, n);
		x = proc_b(x, n);
	}
	printf("%lu\n", x & 0xff);
	return status;
}
