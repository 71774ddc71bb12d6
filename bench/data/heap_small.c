/*
 * bench/data/heap_small.c - what the runtime's small-block records cost
 * (collect/pathrt.c, "Blocks under heap_min"; docs/data.md, "Cost"): the
 * wall time of malloc/free pairs of small blocks, one site churning, and
 * many live blocks of one site.  Run it plain and under `dcpi record`; it
 * prints ns per pair of each loop.
 *
 *   heap_small [PAIRS]     (default 4,000,000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void *site(size_t n)
{
	void *p = malloc(n);

	if (p)
		*(volatile char *)p = 1;
	return p;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 4000000, live = 1024;
	void **v = calloc((size_t)live, sizeof(*v));
	double t;

	if (!v)
		return 1;
	t = now();
	for (long i = 0; i < pairs; i++)	/* one block at a time */
		free(site(64));
	printf("churn %.1f ns/pair\n", (now() - t) / pairs * 1e9);
	t = now();
	for (long i = 0; i < pairs; i++) {	/* 1024 live, replaced in turn */
		free(v[i % live]);
		v[i % live] = site(32 + i % 512);
	}
	printf("live %.1f ns/pair\n", (now() - t) / pairs * 1e9);
	for (long i = 0; i < live; i++)
		free(v[i]);
	free(v);
	return 0;
}
