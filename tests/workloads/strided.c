/*
 * strided.c - a loop whose load misses with a constant stride, for dcpi
 * prefetch-hints (tests/test_optimize.c, bench/feedback/prefetch.sh): one
 * 8-byte key of each 4160-byte record (a stride across pages, which the
 * hardware prefetchers do not follow), a dependent hash chain on each, over
 * more records than the caches hold.
 *
 *   strided RECORDS PASSES   prints the hash, and the walk's time on stderr
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct rec {
	uint64_t key;
	uint64_t pad[519];
};

__attribute__((noinline)) uint64_t walk(const struct rec *a, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = a[i].key;

		for (int k = 0; k < 6; k++)
			h = h * 31 + (x >> k);
	}
	return h;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	size_t passes = argc > 2 ? strtoull(argv[2], NULL, 10) : 4;
	struct rec *a = calloc(n, sizeof(*a));
	struct timespec t0, t1;
	uint64_t h = 0;

	if (!a)
		return 1;
	for (size_t i = 0; i < n; i++)
		a[i].key = i * 2654435761u;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t p = 0; p < passes; p++)
		h = walk(a, n, h);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "walk %.3f s\n", (double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("%llu\n", (unsigned long long)h);
	free(a);
	return 0;
}
