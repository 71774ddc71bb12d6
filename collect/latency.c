/*
 * collect/latency.c - the latency table of this machine (seed 000,
 * "Latency": at start-up, time loads over working sets larger than each
 * cache, then classify each measured latency), for the latency samples of
 * `dcpi record --values` (docs/values.md).
 *
 * Each level is timed with the runtime's own probe (lat_timed_load in
 * loadea.h: rdtscp, a load made dependent on it, rdtscp), so the table and
 * the samples carry the same overhead.  For L1 the lines of a ring of half
 * the L1d are probed after walking it; for L2 a ring of half the L2, for
 * L3 one of twice the L2, each walked once, then probed in the walk's
 * order, so each line was last touched a whole ring earlier (out of the
 * level below, still in this one); for DRAM random lines of a 64 MB buffer
 * written long before.  Sizes come from sysconf (32 KB and 1 MB when it
 * reports none; its L3 is not trusted: VMs report 320 MB).  The bounds
 * between levels are the geometric means of neighbouring medians; levels
 * whose medians are equal (the TSC of this VM counts in steps of 26) cannot
 * be told apart and share the lower one's class.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "latency.h"
#include "loadea.h"

#define PROBES 2001

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static long cache_size(int name, long dflt)
{
	long v = sysconf(name);

	return v > 0 ? v : dflt;
}

/* A ring of n lines in random order through buf (64-byte lines): buf[i]
 * holds the index of the next line. */
static void make_ring(uint64_t *buf, size_t n, uint64_t seed)
{
	size_t *ord = malloc(n * sizeof(*ord));

	if (!ord) {
		for (size_t i = 0; i < n; i++)
			buf[i * 8] = (i + 1) % n;
		return;
	}
	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j, t;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		j = seed % (i + 1);
		t = ord[i], ord[i] = ord[j], ord[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		buf[ord[i] * 8] = ord[(i + 1) % n];
	free(ord);
}

static size_t walk(const uint64_t *buf, size_t n, size_t start)
{
	size_t x = start;

	for (size_t i = 0; i < n; i++)
		x = *(volatile const uint64_t *)&buf[x * 8];
	return x;
}

/* Median probe over lines of a ring of bytes, walked `warm` times first,
 * then probed along the walk (each probe follows the ring). */
static int level(size_t bytes, int warm, uint64_t *out)
{
	size_t n = bytes / 64, x = 0;
	uint64_t *buf, t[PROBES];
	int k = 0;

	if (n < 16)
		n = 16;
	buf = aligned_alloc(64, n * 64);
	if (!buf)
		return -ENOMEM;
	make_ring(buf, n, 0x9e3779b97f4a7c15ULL ^ bytes);
	for (int w = 0; w < warm; w++)
		x = walk(buf, n, x);
	while (k < PROBES) {
		t[k++] = lat_timed_load((uint64_t)(uintptr_t)&buf[x * 8]);
		x = buf[x * 8];		/* a small ring comes round: the same distance */
	}
	free(buf);
	qsort(t, PROBES, sizeof(t[0]), cmp_u64);
	*out = t[PROBES / 2];
	return 0;
}

/* Lines of a large buffer written long before they are probed. */
static int dram(size_t bytes, uint64_t *out)
{
	size_t n = bytes / 64;
	uint8_t *buf = malloc(bytes);
	uint64_t t[PROBES], s = 88172645463325252ULL;

	if (!buf)
		return -ENOMEM;
	memset(buf, 1, bytes);
	for (int k = 0; k < PROBES; k++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		t[k] = lat_timed_load((uint64_t)(uintptr_t)(buf + (s % (n / 2)) * 64));
	}
	free(buf);
	qsort(t, PROBES, sizeof(t[0]), cmp_u64);
	*out = t[PROBES / 2];
	return 0;
}

int lat_calibrate(struct lat_table *t, struct dcpi_err *err)
{
	long l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
	long l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
	long l3 = cache_size(_SC_LEVEL3_CACHE_SIZE, 32 << 20);
	int ret;

	memset(t, 0, sizeof(*t));
	ret = level((size_t)l1 / 2, 4, &t->median[0]);
	if (!ret)
		ret = level((size_t)l2 / 2, 1, &t->median[1]);
	if (!ret)	/* past L2, inside the L3 of any current x86 (VMs report odd L3s) */
		ret = level((size_t)(2 * l2 < l3 / 2 || l3 <= l2 ? 2 * l2 : l3 / 2), 1,
			    &t->median[2]);
	if (!ret)
		ret = dram(64u << 20, &t->median[3]);
	if (ret)
		return dcpi_errf(err, ret, "latency table: out of memory");
	for (int i = 0; i < 3; i++) {
		double a = (double)t->median[i], b = (double)t->median[i + 1];

		/* a level no slower than the one above it cannot be told apart */
		t->bound[i] = b > a ? (uint64_t)__builtin_sqrt(a * b) : t->median[i];
	}
	t->ok = 1;
	return 0;
}

int lat_level(const struct lat_table *t, uint64_t ticks)
{
	for (int i = 0; i < 3; i++)
		if (ticks <= t->bound[i])
			return i;
	return 3;
}
