/*
 * test_hashtab.c - the collector's aggregation table (collect/hashtab.h, DCPI
 * sec. 4.2): whatever the policy, draining everything returns exactly the
 * count of every (pid, event, pc) that went in - on skewed (Zipf-like)
 * streams, on streams whose keys all land in one bucket, on streams with more
 * distinct keys than entries, across counts that saturate an entry, and when
 * a drain callback stops half-way.  Also the overflow-full signal, the
 * statistics' identities and the policy names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/util.h"
#include "testutil.h"

#include "../collect/hashtab.h"
#include "tu_main.h"

struct key {
	uint64_t pc;
	uint32_t pid;
	uint16_t event;
	uint64_t count;
};

struct bag {
	struct key *k;
	size_t n, cap;
	size_t stop_after;	/* fail the drain callback after this many; 0: never */
	size_t seen;
};

static void bag_put(struct bag *b, uint32_t pid, uint16_t event, uint64_t pc, uint64_t count)
{
	assert_int_equal(dcpi_grow((void **)&b->k, &b->cap, b->n + 1, sizeof(*b->k)), 0);
	b->k[b->n++] = (struct key){ .pc = pc, .pid = pid, .event = event, .count = count };
}

static int key_cmp(const void *x, const void *y)
{
	const struct key *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	return 0;
}

/* Sort and merge equal keys, summing counts. */
static void bag_merge(struct bag *b)
{
	size_t o = 0;

	if (!b->n)
		return;
	qsort(b->k, b->n, sizeof(*b->k), key_cmp);
	for (size_t i = 1; i < b->n; i++) {
		if (key_cmp(&b->k[o], &b->k[i]) == 0)
			b->k[o].count += b->k[i].count;
		else
			b->k[++o] = b->k[i];
	}
	b->n = o + 1;
}

static int collect(void *arg, const struct ht_entry *e)
{
	struct bag *b = arg;

	if (b->stop_after && b->seen == b->stop_after)
		return -EINTR;
	b->seen++;
	assert_true(e->count > 0);
	bag_put(b, e->pid, e->event, e->pc, e->count);
	return 0;
}

/* A stream of n samples; want gets one count per sample. */
struct stream {
	struct key *s;
	size_t n;
};

static void stream_free(struct stream *st)
{
	free(st->s);
}

static void stream_alloc(struct stream *st, size_t n)
{
	st->s = calloc(n, sizeof(*st->s));
	assert_non_null(st->s);
	st->n = n;
}

/* Zipf-like: key rank r drawn with probability ~ 1/r over nkeys keys. */
static void stream_zipf(struct stream *st, size_t n, size_t nkeys)
{
	double *cdf = malloc(nkeys * sizeof(*cdf)), sum = 0;

	assert_non_null(cdf);
	for (size_t r = 0; r < nkeys; r++)
		cdf[r] = (sum += 1.0 / (double)(r + 1));
	stream_alloc(st, n);
	for (size_t i = 0; i < n; i++) {
		double u = (double)(tu_rng() >> 11) / 9007199254740992.0 * sum;
		size_t lo = 0, hi = nkeys - 1;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* rank -> key: 7 pids, 2 events, pcs 4 bytes apart; rank 0 is all zeros */
		st->s[i].pid = (uint32_t)(lo % 7) * 1000;
		st->s[i].event = (uint16_t)(lo / 7 % 2);
		st->s[i].pc = lo ? UINT64_C(0x400000) + (lo / 14) * 4 : 0;
		if (lo % 5 == 3)
			st->s[i].pc |= UINT64_C(0xffffffff81000000);	/* kernel pcs */
	}
	free(cdf);
}

/* The table's hash (collect/hashtab.c), to build keys that share a bucket. */
static uint32_t bucket_of(uint32_t pid, uint16_t event, uint64_t pc, uint32_t nbuckets)
{
	uint64_t tag = pid | (uint64_t)event << 32;
	uint64_t h = (pc ^ (tag << 29 | tag >> 35)) * UINT64_C(0x9E3779B97F4A7C15);

	return (uint32_t)(((h >> 32) * nbuckets) >> 32);
}

/* 40 keys that all land in bucket 0 of a 4-way table of 2^10 entries. */
static void stream_one_bucket(struct stream *st, size_t n)
{
	struct key keys[40];
	size_t nk = 0;

	for (uint64_t pc = 0x400000; nk < 40; pc += 1)
		if (bucket_of(42, 0, pc, 256) == 0)
			keys[nk++] = (struct key){ .pc = pc, .pid = 42 };
	stream_alloc(st, n);
	for (size_t i = 0; i < n; i++)
		st->s[i] = keys[(i % 3 == 0) ? 0 : tu_rng() % nk];
}

/* Every key distinct or nearly: 3 passes over 20000 keys. */
static void stream_many(struct stream *st, size_t n)
{
	stream_alloc(st, n);
	for (size_t i = 0; i < n; i++) {
		st->s[i].pid = (uint32_t)(i % 20000 % 97);
		st->s[i].pc = UINT64_C(0x7f0000000000) + (i % 20000) * 16;
	}
}

/* Feed st through a table of policy p, draining as told; check every count. */
static void check_stream(enum ht_policy p, unsigned log2, size_t ovf, const struct stream *st,
			 struct ht_stats *out)
{
	struct bag want = { 0 }, got = { 0 };
	struct hashtab *h;
	struct dcpi_err err = { 0 };
	struct ht_stats s;
	uint64_t sum = 0;

	assert_int_equal(ht_new(p, log2, ovf, &h, &err), 0);
	for (size_t i = 0; i < st->n; i++) {
		int r = ht_add(h, st->s[i].pid, st->s[i].event, st->s[i].pc);

		assert_true(r == 0 || r == 1);
		if (r == 1)
			assert_int_equal(ht_drain(h, 0, collect, &got), 0);
		bag_put(&want, st->s[i].pid, st->s[i].event, st->s[i].pc, 1);
	}
	assert_int_equal(ht_drain(h, 1, collect, &got), 0);
	assert_int_equal(ht_count(h), 0);
	ht_stats(h, &s);
	assert_int_equal(s.samples, st->n);
	assert_int_equal(s.hits + s.misses, s.samples);
	assert_int_equal(s.entries_out, got.n);
	assert_int_equal(s.lost, 0);
	for (size_t i = 0; i < got.n; i++)
		sum += got.k[i].count;
	assert_int_equal(sum, st->n);

	bag_merge(&want);
	bag_merge(&got);
	assert_int_equal(got.n, want.n);
	for (size_t i = 0; i < want.n; i++) {
		assert_int_equal(key_cmp(&got.k[i], &want.k[i]), 0);
		assert_int_equal(got.k[i].count, want.k[i].count);
	}
	/* a drained table is empty and usable again */
	assert_int_equal(ht_add(h, 1, 2, 3), 0);
	assert_int_equal(ht_count(h), 1);
	if (out)
		*out = s;
	free(want.k);
	free(got.k);
	ht_free(h);
}

/* check_stream of st for every policy p, its statistics in s[p]; st freed. */
static void check_policies(struct stream *st, unsigned log2, size_t ovf, struct ht_stats *s)
{
	for (int p = 0; p < HT_NPOLICY; p++)
		check_stream(p, log2, ovf, st, &s[p]);
	stream_free(st);
}

static void test_zipf(void **state)
{
	struct ht_stats s[HT_NPOLICY];
	struct stream st;

	stream_zipf(&st, 300000, 50000);
	for (int p = 0; p < HT_NPOLICY; p++)
		check_stream(p, 16, 8192, &st, NULL);
	check_policies(&st, 10, 64, s);
	for (int p = 0; p < HT_NPOLICY; p++)
		assert_true(s[p].hits > s[p].samples / 3);
	assert_true(s[HT_SORT].sorts > 0);
	assert_true(s[HT_OPEN].grows > 0);
}

static void test_one_bucket(void **state)
{
	struct ht_stats s[HT_NPOLICY];
	struct stream st;

	stream_one_bucket(&st, 100000);
	check_policies(&st, 10, 32, s);
	assert_true(s[HT_RR4].evictions > 1000);
	assert_true(s[HT_SWAP4].evictions > 1000);
}

static void test_more_keys_than_entries(void **state)
{
	struct ht_stats s[HT_NPOLICY];
	struct stream st;

	stream_many(&st, 60000);
	check_policies(&st, 8, 16, s);
	for (int p = 0; p < HT_NPOLICY; p++)
		assert_true(s[p].misses > 40000);
}

/* A hot key passes the 16-bit entry count several times. */
static void test_count_saturates(void **state)
{
	struct ht_stats s[HT_NPOLICY];
	struct stream st;

	stream_alloc(&st, 300000);
	for (size_t i = 0; i < st.n; i++)
		st.s[i] = (struct key){ .pc = i % 10 ? 0x401000 : 0x402000 + i % 7, .pid = 5 };
	check_policies(&st, 6, 16, s);
	for (int p = 0; p < HT_NPOLICY; p++)
		assert_true(s[p].evictions >= 4);
}

/* Nobody drains: the signal comes at the nominal size, yet nothing is lost. */
static void test_overflow_signal(void **state)
{
	for (int p = 0; p < HT_NPOLICY; p++) {
		struct bag got = { 0 };
		struct hashtab *h;
		struct ht_stats s;
		uint64_t sum = 0;
		int first = -1;

		assert_int_equal(ht_new(p, 4, 16, &h, NULL), 0);
		for (int i = 0; i < 5000; i++) {
			int r = ht_add(h, 1, 0, 0x1000 + (uint64_t)i * 8);

			assert_true(r == 0 || r == 1);
			if (r == 1 && first < 0)
				first = i;
			if (first >= 0)
				assert_int_equal(r, 1);
		}
		ht_stats(h, &s);
		assert_true(first > 0);
		assert_true(s.evictions >= 16);
		assert_int_equal(ht_drain(h, 0, collect, &got), 0);
		assert_int_equal(ht_add(h, 1, 0, 0x1000), 0);
		assert_int_equal(ht_drain(h, 1, collect, &got), 0);
		for (size_t i = 0; i < got.n; i++)
			sum += got.k[i].count;
		assert_int_equal(sum, 5001);
		free(got.k);
		ht_free(h);
	}
}

/* A callback that fails keeps the rest; a second drain hands it over. */
static void test_drain_stops(void **state)
{
	struct stream st;

	stream_zipf(&st, 50000, 20000);
	for (int p = 0; p < HT_NPOLICY; p++) {
		struct bag got = { 0 };
		struct hashtab *h;
		struct ht_stats s;
		uint64_t sum = 0;
		size_t held;

		assert_int_equal(ht_new(p, 8, 100000, &h, NULL), 0);
		for (size_t i = 0; i < st.n; i++)
			assert_int_equal(ht_add(h, st.s[i].pid, st.s[i].event, st.s[i].pc), 0);
		held = ht_count(h);
		ht_stats(h, &s);
		assert_true(s.evictions > 10);
		got.stop_after = 7;		/* inside the overflow buffer */
		assert_int_equal(ht_drain(h, 1, collect, &got), -EINTR);
		assert_int_equal(ht_count(h), held - 7);
		got.stop_after = s.evictions + 40;	/* inside the table */
		assert_int_equal(ht_drain(h, 1, collect, &got), -EINTR);
		assert_int_equal(ht_count(h), held - s.evictions - 40);
		got.stop_after = 0;
		assert_int_equal(ht_drain(h, 1, collect, &got), 0);
		assert_int_equal(ht_count(h), 0);
		for (size_t i = 0; i < got.n; i++)
			sum += got.k[i].count;
		assert_int_equal(sum, st.n);
		ht_stats(h, &s);
		assert_int_equal(s.entries_out, got.n);
		assert_int_equal(got.n, held);
		free(got.k);
		ht_free(h);
	}
	stream_free(&st);
}

static void test_names(void **state)
{
	for (int p = 0; p < HT_NPOLICY; p++) {
		const char *name = ht_policy_name(p);

		assert_non_null(name);
		assert_int_equal(ht_policy_by_name(name), p);
	}
	assert_string_equal(ht_policy_name(HT_RR4), "rr4");
	assert_null(ht_policy_name(HT_NPOLICY));
	assert_int_equal(ht_policy_by_name("lru"), -EINVAL);
	assert_int_equal(ht_policy_by_name(NULL), -EINVAL);
	assert_true(HT_DEFAULT_POLICY < HT_NPOLICY);
}

static void test_bad_args(void **state)
{
	struct hashtab *h = (struct hashtab *)1;
	struct dcpi_err err = { 0 };

	assert_int_equal(ht_new(HT_NPOLICY, 10, 64, &h, &err), -EINVAL);
	assert_null(h);
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "policy"));
	assert_int_equal(ht_new(HT_RR4, 3, 64, &h, &err), -EINVAL);
	assert_int_equal(ht_new(HT_RR4, 25, 64, &h, &err), -EINVAL);
	assert_int_equal(ht_new(HT_RR4, 10, 15, &h, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "overflow"));
	ht_free(NULL);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_names),
	cmocka_unit_test(test_bad_args),
	cmocka_unit_test(test_zipf),
	cmocka_unit_test(test_one_bucket),
	cmocka_unit_test(test_more_keys_than_entries),
	cmocka_unit_test(test_count_saturates),
	cmocka_unit_test(test_overflow_signal),
	cmocka_unit_test(test_drain_stops))
