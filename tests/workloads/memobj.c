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
 *   memobj sites ROUNDS      heap blocks of three call sites, two threads of
 *                            ROUNDS rounds: each round loads 4 longs of a
 *                            2 KB context (a block under the runtime's 4 KB
 *                            threshold, the only one of its site), 2 longs of
 *                            a 64 KB table, and copies 64 bytes of the table
 *                            into its thread's 8 KB buffer with `rep movsb`;
 *                            prints the exact bytes per site (32:80:64)
 *   memobj masked ROUNDS     two threads load their own 64 KB table (two call
 *                            sites) ROUNDS x 8 times each; the second is
 *                            created with every signal blocked, as xz's
 *                            mythread_create does: 50% each by construction;
 *                            each thread's CPU time printed after (cpu_open,
 *                            cpu_masked, nanoseconds)
 *   memobj rmw ROUNDS        each round adds 1 to a long of one 64 KB table in
 *                            place (`addq $1, (m)`: read and written) and loads
 *                            a long of another (two call sites): 16 and 8
 *                            bytes a round, 2:1 by construction (DHAT counts
 *                            a read and a write)
 *   memobj speeds ROUNDS     three heap blocks whose loops run at different
 *                            speeds: 8 x ROUNDS loads of a 16 KB table (a
 *                            fast loop), every eighth also one of a 32 KB
 *                            table (an if's arm inside it), then ROUNDS steps
 *                            of a chase through 32 MB built in place (each
 *                            element written once): the chase takes most of
 *                            the time, the tables most of the bytes; prints
 *                            the exact bytes per block (64, 8 and 8 a round,
 *                            the chase's 32 MB of stores besides)
 * Times are CPU seconds of the main loop, checked every 4096 rounds.
 */
#include <pthread.h>
#include <signal.h>
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

#define CTX_N 256		/* longs: 2 KB */
#define BUF_N 8192		/* bytes */

struct sites {
	volatile long *ctx, *table;
	unsigned long rounds, seed;
	long sum;
};

static void copy64(volatile char *dst, volatile const long *src)
{
	size_t n = 64;

	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static void *sites_worker(void *arg)
{
	struct sites *s = arg;
	volatile char *buf = malloc(BUF_N);	/* one site, a block per thread */
	unsigned long x = s->seed;

	if (!buf)
		return NULL;
	for (unsigned long r = 0; r < s->rounds; r++) {
		unsigned i;

		x = x * 6364136223846793005UL + 1442695040888963407UL;
		i = (unsigned)(x >> 33);
		s->sum += s->ctx[i % CTX_N] + s->ctx[(i + 1) % CTX_N] +
			  s->ctx[(i + 2) % CTX_N] + s->ctx[(i + 3) % CTX_N];
		s->sum += s->table[(i + 4) % TABLE_N] + s->table[(i + 5) % TABLE_N];
		copy64(buf + (i % (BUF_N / 64)) * 64, s->table + (i % (TABLE_N / 8)) * 8);
	}
	free((void *)buf);
	return NULL;
}

static int sites(unsigned long rounds)
{
	volatile long *ctx = calloc(CTX_N, sizeof(*ctx));
	struct sites s[2];
	pthread_t t[2];

	table = calloc(TABLE_N, sizeof(*table));
	if (!ctx || !table)
		return 1;
	for (int k = 0; k < 2; k++) {
		s[k] = (struct sites){ ctx, table, rounds, 12345 + 777 * (unsigned long)k, 0 };
		if (pthread_create(&t[k], NULL, sites_worker, &s[k]))
			return 1;
	}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("ctx %lu\ntable %lu\nbuf %lu\n", 2 * 32 * rounds, 2 * 80 * rounds,
	       2 * 64 * rounds);
	free((void *)ctx);
	free((void *)table);
	return 0;
}

struct masked {
	volatile long *table;
	unsigned long rounds;
	long sum;
	unsigned long cpu_ns;
};

static void *masked_worker(void *arg)
{
	struct masked *m = arg;
	struct timespec ts;
	unsigned long x = 88172645463325252UL;
	long sum = 0;

	for (unsigned long r = 0; r < m->rounds; r++) {
		unsigned i;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = (unsigned)x;
		for (unsigned k = 0; k < 8; k++)
			sum += m->table[(i + 64 * k) % TABLE_N];
	}
	m->sum = sum;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	m->cpu_ns = (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec;
	return NULL;
}

/* The first thread as usual, the second created with all signals blocked
 * (the creator's mask restored after); each loads its own table. */
static int masked(unsigned long rounds)
{
	struct masked m[2] = { { calloc(TABLE_N, sizeof(long)), rounds, 0, 0 },
			       { NULL, rounds, 0, 0 } };
	sigset_t all, old;
	pthread_t t[2];

	m[1].table = calloc(TABLE_N, sizeof(long));
	if (!m[0].table || !m[1].table || pthread_create(&t[0], NULL, masked_worker, &m[0]))
		return 1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t[1], NULL, masked_worker, &m[1]))
		return 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("open %lu\nmasked %lu\n", 8 * rounds, 8 * rounds);
	printf("cpu_open %lu\ncpu_masked %lu\n", m[0].cpu_ns, m[1].cpu_ns);
	free((void *)m[0].table);
	free((void *)m[1].table);
	return 0;
}

/* One read-modify-write of a long of rw, one load of a long of ro, a round. */
static int rmw(unsigned long rounds)
{
	long *rw = calloc(TABLE_N, sizeof(long));
	volatile long *ro = calloc(TABLE_N, sizeof(long));
	unsigned long x = 2463534242UL;
	long sum = 0;

	if (!rw || !ro)
		return 1;
	for (unsigned long r = 0; r < rounds; r++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("addq $1, %0" : "+m"(rw[x % TABLE_N]));
		sum += ro[(x >> 20) % TABLE_N];
	}
	printf("rw %lu\nro %lu\n", 16 * rounds, 8 * rounds);
	free(rw);
	free((void *)ro);
	return sum != 0;
}

/* The chase is an LCG's cycle, next[i] = (a i + c) mod n: a single cycle
 * through all n elements when n is a power of 2, c odd and a = 1 mod 4. */
static int speeds(unsigned long rounds)
{
	const size_t n = (32u << 20) / sizeof(long);
	volatile long *fa = calloc(2048, sizeof(long)), *fb = calloc(4096, sizeof(long));
	long *next = malloc(n * sizeof(long)), s = 0, p = 0;

	if (!fa || !fb || !next)
		return 1;
	for (size_t i = 0; i < n; i++)
		next[i] = (long)((6364136223846793005ULL * i + 1442695040888963407ULL) & (n - 1));
	for (unsigned long i = 0; i < 8 * rounds; i++) {
		s += fa[i & 2047];
		if (!(i & 7))
			s += fb[(i >> 3) & 4095];
	}
	for (unsigned long i = 0; i < rounds; i++)
		p = ((volatile long *)next)[p];
	printf("fa %lu\nfb %lu\nchase %lu\n", 64 * rounds, 8 * rounds, 8 * n + 8 * rounds);
	free((void *)fa);
	free((void *)fb);
	free(next);
	return (s ^ p) == 42;
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
	if (!strcmp(mode, "sites"))
		return sites(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000);
	if (!strcmp(mode, "masked"))
		return masked(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000);
	if (!strcmp(mode, "rmw"))
		return rmw(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000);
	if (!strcmp(mode, "speeds"))
		return speeds(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000);
	fprintf(stderr, "usage: memobj objects|false|padded|true [SECONDS] | "
		"sites|masked|rmw|speeds [ROUNDS]\n");
	return 2;
}
