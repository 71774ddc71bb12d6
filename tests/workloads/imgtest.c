/*
 * imgtest.c - a small, deterministic program for the image/ tests: global,
 * static, weak and aliased functions (several symbols at one address), calls
 * through the PLT (puts, printf, strtol), and a function-pointer table so
 * nothing is folded away.  Built with -DIMGTEST_LIB it has no main and is
 * linked as a shared object.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int imgtest_square(int x)
{
	return x * x;
}

__attribute__((noinline)) int imgtest_sum(int n)
{
	int s = 0, i;

	for (i = 0; i < n; i++)
		s += imgtest_square(i);
	return s;
}

/* a global and its local alias: the global one must win */
__attribute__((noinline)) int imgtest_twice(int x)
{
	return 2 * x + (x > 1000 ? imgtest_sum(x & 7) : 0);
}
static int imgtest_twice_alias(int x) __attribute__((alias("imgtest_twice"), used));

__attribute__((noinline, weak)) int imgtest_weak(int x)
{
	return x - 3;
}

__attribute__((noinline)) long imgtest_parse(const char *s)
{
	return strtol(s, NULL, 10);
}

int (*const imgtest_table[])(int) = { imgtest_sum, imgtest_twice, imgtest_weak };

#ifndef IMGTEST_LIB
int main(int argc, char **argv)
{
	long v = imgtest_parse(argc > 1 ? argv[1] : "12");
	int i, r = 0;

	for (i = 0; i < 3; i++)
		r += imgtest_table[i]((int)v);
	puts("imgtest");
	printf("%d\n", r);
	return 0;
}
#endif
