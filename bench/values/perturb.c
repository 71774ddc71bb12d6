/*
 * perturb.c - how much of the data cache a burst of single steps disturbs
 * (seed 002 measured its handler's cache footprint; docs/values.md,
 * "Perturbation").  A pointer chase over a ring of WS bytes (one pointer per
 * 64-byte line, random order; 24 KB fits a 32 KB L1d) is walked pass after
 * pass, each pass timed with rdtsc.  A pass that held a burst is far slower
 * (a step costs microseconds) and is left out; the pass right after it runs
 * on whatever the burst left in the cache.  Printed: the median clean pass,
 * the mean pass after a burst, their difference in cycles, and that over
 * the cost of one L1 miss that hits L2 (measured here as the median pass
 * over a ring twice the L1d, per line, minus the L1 pass per line): lines
 * the burst evicted.
 *
 * usage: perturb WS_BYTES PASSES
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

static void **ring(size_t bytes)
{
	size_t n = bytes / 64, *ord = malloc(n * sizeof(*ord));
	char *m = aligned_alloc(64, n * 64);
	uint64_t x = 88172645463325252ULL;

	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j, t;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = x % (i + 1);
		t = ord[i], ord[i] = ord[j], ord[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(m + ord[i] * 64) = m + ord[(i + 1) % n] * 64;
	free(ord);
	return (void **)m;
}

static void **volatile sink;	/* keeps the chase from being optimized away */

static uint64_t pass(void **p, size_t n, void ***end)
{
	uint64_t t0, t1;
	unsigned aux;

	t0 = __rdtscp(&aux);
	for (size_t i = 0; i < n; i++)
		p = *p;
	t1 = __rdtscp(&aux);
	sink = p;
	*end = p;
	return t1 - t0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t median_pass(void **p, size_t n, int k)
{
	uint64_t *t = malloc(k * sizeof(*t)), m;

	for (int i = 0; i < k; i++)
		t[i] = pass(p, n, &p);
	qsort(t, k, sizeof(*t), cmp);
	m = t[k / 2];
	free(t);
	return m;
}

int main(int argc, char **argv)
{
	size_t ws = argc > 1 ? strtoul(argv[1], NULL, 0) : 24576, n = ws / 64;
	long passes = argc > 2 ? atol(argv[2]) : 2000000;
	void **p = ring(ws), **big = ring(2 * 32768);
	uint64_t *t = malloc(passes * sizeof(*t)), clean, miss, after = 0;
	long nafter = 0, nburst = 0;
	double l2;

	/* the cost of a line from L2: a ring of 64 KB against the L1 one */
	miss = median_pass(big, 1024, 2001);
	clean = median_pass(p, n, 2001);
	l2 = (double)miss / 1024 - (double)clean / n;
	for (long i = 0; i < passes; i++)
		t[i] = pass(p, n, &p);
	clean = 0;
	{
		uint64_t *s = malloc(passes * sizeof(*s));

		memcpy(s, t, passes * sizeof(*s));
		qsort(s, passes, sizeof(*s), cmp);
		clean = s[passes / 2];
		free(s);
	}
	for (long i = 0; i + 1 < passes; i++)
		if (t[i] > 20 * clean) {	/* a burst ran in it */
			nburst++;
			if (t[i + 1] <= 20 * clean) {
				after += t[i + 1];
				nafter++;
			}
		}
	printf("ring %zu bytes (%zu lines), %ld passes: clean pass %llu cycles; %ld passes "
	       "held a burst; the pass after one: %.0f cycles, +%.0f; L2 line %.1f cycles: "
	       "%.1f lines evicted per burst\n", ws, n, passes, (unsigned long long)clean, nburst,
	       nafter ? (double)after / nafter : 0, nafter ? (double)after / nafter - clean : 0,
	       l2, nafter && l2 > 0 ? ((double)after / nafter - clean) / l2 : 0);
	return 0;
}
