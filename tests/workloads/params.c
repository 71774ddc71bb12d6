/*
 * params.c - procedures whose parameters DWARF describes, one per way the
 * System V x86-64 ABI passes arguments (tests/test_params.c reads them with
 * img_params and through dcpivargs and dcpi specialize):
 *
 *   pa_none()                              no parameters
 *   pa_two(int k, const char *s)           k in rdi, s in rsi
 *   pa_mixed(int k, double x, long n)      k in rdi, x in xmm0, n in rsi
 *   pa_small(struct pa_small v, int k)     v's two eightbytes in rdi and rsi, k in rdx
 *   pa_big(struct pa_big v, int k)         v (40 bytes) in memory, k in rdi
 *   pa_ret(int k)                          returns pa_big: hidden pointer in rdi, k in rsi
 *
 * usage: params [n]   (default 1000 rounds)
 */
#include <stdio.h>
#include <stdlib.h>

struct pa_small {
	long a;
	int b;
};

struct pa_big {
	long v[5];
};

volatile long pa_sink;

__attribute__((noinline)) long pa_none(void)
{
	return pa_sink + 1;
}

__attribute__((noinline)) long pa_two(int k, const char *s)
{
	return k + s[k & 3];
}

__attribute__((noinline)) long pa_mixed(int k, double x, long n)
{
	return k + (long)(x * 2.0) + n;
}

__attribute__((noinline)) long pa_small(struct pa_small v, int k)
{
	return v.a + v.b + k;
}

__attribute__((noinline)) long pa_big(struct pa_big v, int k)
{
	return v.v[0] + v.v[4] + k;
}

__attribute__((noinline)) struct pa_big pa_ret(int k)
{
	struct pa_big r = { { k, k + 1, k + 2, k + 3, k + 4 } };

	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 0) : 1000, acc = 0;

	for (long i = 0; i < n; i++) {
		struct pa_small s = { i, (int)i };
		struct pa_big b = pa_ret((int)i);

		acc += pa_none() + pa_two((int)i, "abcd") + pa_mixed(3, (double)i, i);
		acc += pa_small(s, 7) + pa_big(b, 5);
	}
	pa_sink = acc;
	printf("%ld\n", acc);
	return 0;
}
