/*
 * memobj - data objects with access counts known by construction, for the
 * data profiles (docs/data.md; tests/test_mem.c).
 *
 *   memobj objects SECONDS   hot_a (global), hot_b (static), a heap table:
 *                            every round loads hot_a 5 times, hot_b 3 times
 *                            and the table twice (volatile: one load each),
 *                            so their exact shares are 50%, 30%, 20%;
 *                            prints the exact counts at the end
 *   memobj false SECONDS     two threads each increment their own counter of
 *                            one 64-byte line (pair.a, pair.b): false sharing
 *   memobj padded SECONDS    the same counters 64 bytes apart (padded)
 *   memobj true SECONDS      both threads increment one counter (shared.n)
 * Times are CPU seconds of the main loop, checked every 4096 rounds.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOT_N 4096
#define TABLE_N 8192

volatile long hot_a[HOT_N];
static volatile long hot_b[HOT_N];
volatile long *table;

struct pair {
	volatile long a;
	volatile long b;
} __attribute__((aligned(64)));
struct pair pair;

struct padded {
	volatile long a;
	char pad[56];
	volatile long b;
} __attribute__((aligned(64)));
struct padded padded;

struct one {
	volatile long n;
} __attribute__((aligned(64)));
struct one shared;

static double seconds;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long objects(double secs)
{
	unsigned long x = 12345, rounds = 0;
	long sum = 0;
	double end = now() + secs;

	for (;;) {
		for (int k = 0; k < 4096; k++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			unsigned i = (unsigned)(x >> 33);

			sum += hot_a[i % HOT_N];
			sum += hot_a[(i + 1) % HOT_N];
			sum += hot_a[(i + 2) % HOT_N];
			sum += hot_a[(i + 3) % HOT_N];
			sum += hot_a[(i + 4) % HOT_N];
			sum += hot_b[(i + 5) % HOT_N];
			sum += hot_b[(i + 6) % HOT_N];
			sum += hot_b[(i + 7) % HOT_N];
			sum += table[(i + 8) % TABLE_N];
			sum += table[(i + 9) % TABLE_N];
		}
		rounds += 4096;
		if (now() > end)
			break;
	}
	printf("hot_a %lu\nhot_b %lu\ntable %lu\n", 5 * rounds, 3 * rounds, 2 * rounds);
	return sum;
}

static void *worker(void *arg)
{
	volatile long *c = arg;
	double end = now() + seconds;

	for (;;) {
		for (int k = 0; k < 65536; k++)
			(*c)++;
		if (now() > end)
			break;
	}
	return NULL;
}

static void *worker_atomic(void *arg)
{
	long *c = arg;
	double end = now() + seconds;

	for (;;) {
		for (int k = 0; k < 65536; k++)
			__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
		if (now() > end)
			break;
	}
	return NULL;
}

static int two(void *(*fn)(void *), volatile long *a, volatile long *b)
{
	pthread_t t[2];

	if (pthread_create(&t[0], NULL, fn, (void *)a) ||
	    pthread_create(&t[1], NULL, fn, (void *)b))
		return 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("counters %ld %ld\n", (long)*a, (long)*b);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "objects";

	seconds = argc > 2 ? atof(argv[2]) : 1.0;
	if (!strcmp(mode, "objects")) {
		table = calloc(TABLE_N, sizeof(*table));	/* 64 KB: a recorded block */
		if (!table)
			return 1;
		objects(seconds);
		free((void *)table);
		return 0;
	}
	if (!strcmp(mode, "false"))
		return two(worker, &pair.a, &pair.b);
	if (!strcmp(mode, "padded"))
		return two(worker, &padded.a, &padded.b);
	if (!strcmp(mode, "true"))
		return two(worker_atomic, &shared.n, &shared.n);
	fprintf(stderr, "usage: memobj objects|false|padded|true [SECONDS]\n");
	return 2;
}
