/*
 * dwarftest.c - a small deterministic program whose DWARF the image tests
 * compare against addr2line and readelf: several functions, a loop, a static
 * function forced inline (so -fno-inline cannot stop it) twice nested, and a
 * second force-inlined call site, giving inlined-subroutine DIEs with call
 * lines and discriminators.
 */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned mix_inner(unsigned x)
{
	x ^= x >> 7;
	x *= 0x9e3779b1u;
	return x ^ (x >> 13);
}

static inline __attribute__((always_inline)) unsigned mix(unsigned x, unsigned k)
{
	unsigned y = mix_inner(x + k);

	return y + (y >> 3);
}

static unsigned checksum(const unsigned *v, int n)
{
	unsigned s = 0;

	for (int i = 0; i < n; i++)
		s = mix(s, v[i]);
	return s;
}

static void fill(unsigned *v, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (i & 1) ? seed >> 3 : seed;
	}
}

static int count_odd(const unsigned *v, int n)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		if (v[i] & 1) c++;
	return c;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	unsigned *v;
	unsigned s;

	if (n <= 0)
		n = 1000;
	v = malloc(sizeof(*v) * (size_t)n);
	if (!v)
		return 1;
	fill(v, n, 42);
	s = checksum(v, n);
	s = mix(s, (unsigned)count_odd(v, n));
	printf("%u\n", s);
	free(v);
	return 0;
}
