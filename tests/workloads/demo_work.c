/*
 * demo_work.c - the workload `make demo` profiles: three procedures with
 * different characters (dependent arithmetic, a cache-missing pointer chase,
 * a branchy sort), deterministic for a given size argument.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static uint64_t mix_chain(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) static uint64_t chase(const uint32_t *next, uint64_t steps)
{
	uint32_t p = 0;

	for (uint64_t i = 0; i < steps; i++)
		p = next[p];
	return p;
}

__attribute__((noinline)) static void insertion_sort(uint32_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		size_t j = i;

		while (j > 0 && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

int main(int argc, char **argv)
{
	uint64_t scale = argc > 1 ? strtoull(argv[1], NULL, 10) : 10;
	size_t n = 1u << 22, m = 6000;
	uint32_t *next = malloc(n * sizeof(*next)), *a = malloc(m * sizeof(*a));
	uint64_t x = 1, sum = 0;

	if (!next || !a)
		return 1;
	/* one random cycle through n slots (Sattolo), so the chase misses caches */
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j;
		uint32_t t;

		x = mix_chain(1, x);
		j = (size_t)(x >> 33) % i;
		t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	for (uint64_t r = 0; r < scale; r++) {
		sum += mix_chain(60000000, r);
		sum += chase(next, 500000);
		for (size_t i = 0; i < m; i++)
			a[i] = (uint32_t)(mix_chain(1, i + r) >> 40);
		insertion_sort(a, m);
		sum += a[m / 2];
	}
	printf("%llu\n", (unsigned long long)sum);
	free(next);
	free(a);
	return 0;
}
