/*
 * test_values.c - value hotlists and the value profile kind
 * (profile/values.c; seed 000 "Hotlists (Gibbons-Matias)";
 * docs/profile-format.md "Value files"): accuracy against exact frequencies
 * on seeded streams, the seed's worked example (N = 3, f = 8/7), SatCount's
 * mode switches, merge (against one list fed both streams, determinism, tag
 * remapping), byte round trips, every truncation and bit flip, content
 * errors behind a valid checksum, files and epochs.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/paths.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_db.h"
#include "tu_main.h"

/* --- streams with known distributions ------------------------------------ */

enum dist { ZIPF, HEAVY, EIGHT, DISTINCT, NDIST };

static const char *const dist_name[NDIST] = {
	"zipf(1) over 1000", "60% + uniform noise", "8 values 5-30%", "all distinct",
};

static double zipf_cdf[1000];

static void zipf_init(void)
{
	double s = 0, c = 0;

	for (int i = 0; i < 1000; i++)
		s += 1.0 / (i + 1);
	for (int i = 0; i < 1000; i++) {
		c += 1.0 / (i + 1) / s;
		zipf_cdf[i] = c;
	}
	zipf_cdf[999] = 1;
}

static uint64_t draw(enum dist d, struct val_rng *g)
{
	static const double w[8] = { .30, .20, .15, .10, .08, .07, .05, .05 };
	double u = val_rng_unit(g), c = 0;
	int lo = 0, hi = 999;

	switch (d) {
	case ZIPF:
		while (lo < hi) {
			int mid = (lo + hi) / 2;

			if (zipf_cdf[mid] <= u)
				lo = mid + 1;
			else
				hi = mid;
		}
		return (uint64_t)lo;
	case HEAVY:
		return u < 0.6 ? 7 : 1000 + val_rng_next(g) % 100000;
	case EIGHT:
		for (int i = 0; i < 8; i++) {
			c += w[i];
			if (u < c)
				return 100 + (uint64_t)i;
		}
		return 107;
	default:
		return val_rng_next(g);
	}
}

/* Values of d whose true share may reach 5% (the others never do). */
static int candidates(enum dist d, uint64_t *v)
{
	int n = 0;

	if (d == ZIPF)
		for (n = 0; n < 3; n++)
			v[n] = (uint64_t)n;
	else if (d == HEAVY)
		v[n++] = 7;
	else if (d == EIGHT)
		for (n = 0; n < 8; n++)
			v[n] = 100 + (uint64_t)n;
	return n;
}

static int slot_of(const struct val_hotlist *h, uint64_t v)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].value == v)
			return (int)i;
	return -1;
}

static double share_of(const struct val_hotlist *h, uint64_t v)
{
	int i = slot_of(h, v);

	return i < 0 ? 0 : val_hotlist_share(h, (uint32_t)i);
}

struct run {
	double worst, sum;	/* share errors of values with true share >= 5% */
	int checked, missing, top_missing;
};

/* One seeded stream of len values of d into h; errors into r. */
static void run_stream(enum dist d, uint64_t seed, size_t len, struct val_hotlist *h,
		       struct run *r, int ss)
{
	struct val_rng g = { seed * 104729 + (uint64_t)d }, coins = { seed * 7919 };
	uint64_t cand[8], cnt[8] = { 0 };
	int nc = candidates(d, cand);

	val_hotlist_init(h, 0x40, VAL_LOAD);
	if (ss)
		h->mode = VAL_SPACESAVING;
	for (size_t i = 0; i < len; i++) {
		uint64_t v = draw(d, &g);

		for (int k = 0; k < nc; k++)
			cnt[k] += v == cand[k];
		val_hotlist_add(h, v, &coins);
	}
	assert_int_equal(h->seen, len);
	assert_true(h->n <= VAL_N);
	for (int k = 0; k < nc; k++) {
		double truth = (double)cnt[k] / (double)len, e;

		if (truth < 0.05)
			continue;
		e = fabs(share_of(h, cand[k]) - truth);
		r->checked++;
		r->sum += e;
		if (e > r->worst)
			r->worst = e;
		if (slot_of(h, cand[k]) < 0) {
			r->missing++;
			r->top_missing += k == 0;
		}
	}
}

/* The streams of d of len values, 12 seeds (4 past 10,000 values), into r
 * and h (space-saving when ss), their errors printed; how many seeds. */
static int run_seeds(enum dist d, size_t len, struct val_hotlist *h, struct run *r, int ss)
{
	int seeds = len > 10000 ? 4 : 12;

	for (int s = 1; s <= seeds; s++)
		run_stream(d, (uint64_t)s, len, h, r, ss);
	print_message("%s%-20s %6zu values, %2d seeds: worst share error %.4f, mean %.4f, "
		      "%d of %d absent\n", ss ? "space-saving " : "", dist_name[d], len, seeds,
		      r->worst, r->checked ? r->sum / r->checked : 0, r->missing, r->checked);
	return seeds;
}

/*
 * Space-Saving with VAL_N = 64 counters, the collector's lists: a count is
 * never below the occurrences and at most seen / 64 above them, so every
 * share is within 1/64 of the truth and a value at >= 5% is always kept.
 * Measured here (the same streams and seeds as below), worst share errors
 * are printed; the bound is asserted.
 */
static void test_accuracy_ss(void **state)
{
	static const size_t lens[] = { 1000, 10000, 100000 };

	(void)state;
	zipf_init();
	for (int d = 0; d < NDIST; d++) {
		for (size_t l = 0; l < 3; l++) {
			struct run r = { 0 };
			struct val_hotlist h;

			run_seeds((enum dist)d, lens[l], &h, &r, 1);
			assert_true(r.worst <= 1.0 / VAL_N + 1e-9);
			assert_true(r.worst <= 0.02);
			assert_int_equal(r.missing, 0);
			assert_int_equal(h.mode, VAL_SPACESAVING);
		}
	}
}

/*
 * The brief asked for every share of a value at >= 5% within 2 points.  The
 * seed's algorithm with N = 16 meets that only when the distinct values fit
 * in the list (EIGHT: exact).  When noise keeps the list full, 1/p grows as
 * the misses times ln f, and the error is of the order of 1/p occurrences in
 * counting mode, sqrt(C) of C = p * occurrences in concise mode.  Measured
 * here, worst share errors: ZIPF 0.130 / 0.069 / 0.068 at 1,000 / 10,000 /
 * 100,000 values (counting mode; a value at >= 5% absent in 9 of 60
 * checks), HEAVY 0.241 / 0.174 / 0.161 (concise mode), EIGHT 0; over 400
 * seeds in a separate run the worst were 0.15 (ZIPF) and 0.40 (HEAVY), at
 * every length, since the error scales with the stream.  What holds, and is
 * asserted: exact shares without noise, the estimates unbiased (mean over
 * seeds within 2 points, test_unbiased), the heavy value always present,
 * and the mean error bounded.
 */
static void test_accuracy(void **state)
{
	static const size_t lens[] = { 1000, 10000, 100000 };

	zipf_init();
	for (int d = 0; d < NDIST; d++) {
		for (size_t l = 0; l < 3; l++) {
			struct run r = { 0 };
			struct val_hotlist h;
			int seeds = run_seeds((enum dist)d, lens[l], &h, &r, 0);

			if (d == EIGHT) {
				assert_true(r.worst <= 0.02);
				assert_int_equal(r.missing, 0);
			} else if (d == HEAVY) {
				assert_int_equal(r.missing, 0);
				assert_true(r.sum / r.checked <= 0.16);
				assert_true(r.worst <= 0.45);
			} else if (d == ZIPF) {
				assert_true(r.sum / r.checked <= 0.07);
				assert_true(r.top_missing * 4 <= seeds);
			} else {
				assert_int_equal(r.checked, 0);
				assert_int_equal(h.mode, VAL_COUNTING);
			}
		}
	}
}

/* Mean estimated share over many seeds within 2 points of the truth. */
static void test_unbiased(void **state)
{
	zipf_init();
	for (int d = ZIPF; d <= HEAVY; d++) {
		double sum = 0, truth = d == ZIPF ? 1 / 7.4854708606 : 0.6;
		int seeds = 300;

		for (int s = 1; s <= seeds; s++) {
			struct val_rng g = { (uint64_t)s * 31 + (uint64_t)d }, c = { (uint64_t)s };
			struct val_hotlist h;

			val_hotlist_init(&h, 0, VAL_RESULT);
			for (int i = 0; i < 2000; i++)
				val_hotlist_add(&h, draw((enum dist)d, &g), &c);
			sum += share_of(&h, d == ZIPF ? 0 : 7);
		}
		print_message("%-20s mean share of the top value %.4f (true %.4f)\n",
			      dist_name[d], sum / seeds, truth);
		assert_true(fabs(sum / seeds - truth) <= 0.02);
	}
}

/* --- the seed's worked example ---------------------------------------------- */

static const uint64_t example[32] = {
	0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4,
	0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 5,
};

static void print_list(const char *what, const struct val_hotlist *h)
{
	char line[256];
	int k = 0;

	for (uint32_t i = 0; i < h->n; i++)
		k += snprintf(line + k, sizeof(line) - (size_t)k, "%s(%" PRIu64 ",%" PRIu64 ")",
			      i ? "," : "", h->t[i].value, h->t[i].count);
	print_message("%s: [%s] p=%.4f\n", what, line, h->p);
}

static void example_runs(enum val_mode mode)
{
	int runs = 2000, zero_top = 0, zero_kept = 0, one_second = 0;
	double e0 = 0, e1 = 0, p = 0;

	for (int s = 1; s <= runs; s++) {
		struct val_rng r = { (uint64_t)s };
		struct val_hotlist h;

		val_hotlist_init(&h, 0, VAL_RESULT);
		if (mode == VAL_CONCISE) {	/* 32 values cannot bring it down to 0 */
			h.mode = VAL_CONCISE;
			h.sat = VAL_SAT_MAX;
		}
		for (int i = 0; i < 32; i++)
			val_hotlist_add_nf(&h, example[i], &r, 3, 8.0 / 7);
		assert_int_equal(h.mode, mode);
		assert_true(h.n <= 3);
		val_hotlist_sort(&h);
		if (s == 1)
			print_list(mode == VAL_CONCISE ? "concise, seed 1" : "counting, seed 1",
				   &h);
		zero_top += h.n && h.t[0].value == 0;
		zero_kept += slot_of(&h, 0) >= 0;
		one_second += h.n > 1 && h.t[1].value == 1;
		for (uint32_t i = 0; i < h.n; i++) {
			if (h.t[i].value == 0)
				e0 += val_hotlist_estimate(&h, i);
			if (h.t[i].value == 1)
				e1 += val_hotlist_estimate(&h, i);
		}
		p += h.p;
	}
	e0 /= runs;
	e1 /= runs;
	p /= runs;
	print_message("%s over %d runs: 0 kept %d, on top %d, 1 second %d, mean estimates "
		      "%.2f (true 16) and %.2f (true 8), mean p %.3f\n",
		      mode == VAL_CONCISE ? "concise" : "counting", runs, zero_kept, zero_top,
		      one_second, e0, e1, p);
	/* Measured: concise 0 kept 1865, on top 1676, 1 second 1250, estimates
	 * 15.60 and 8.02; counting 1865, 1794, 1344, 15.95 and 7.91. */
	assert_true(zero_kept >= runs * 9 / 10);
	assert_true(zero_top >= runs * 3 / 4);
	assert_true(one_second >= runs / 2);
	assert_true(fabs(e0 - 16) <= 2);
	assert_true(fabs(e1 - 8) <= 1.5);
	/*
	 * The seed's counting table ends at p = 0.67 after three reductions, but
	 * in each of them all four tuples lose a count, which under the rule its
	 * text gives (first coin 1 - 1/f = 1/8) has probability (1/8)^12: the
	 * table looks drawn with the first coin at 1/f, which biases C + 1/p - 1
	 * low (its own estimates: 11.5 and 4.5 for 16 and 8).  We follow the
	 * text (Gibbons-Matias); it needs about four reductions per overflow,
	 * and p ends near 0.25 (mean 0.254 measured), the estimates unbiased.
	 */
	if (mode == VAL_COUNTING)
		assert_true(p >= 0.2 && p <= 0.32);
}

static void test_seed_example(void **state)
{
	example_runs(VAL_CONCISE);
	example_runs(VAL_COUNTING);
}

/* --- SatCount ------------------------------------------------------------------ */

static void test_satcount(void **state)
{
	struct val_rng r = { 5 };
	struct val_hotlist h;
	uint64_t i;

	val_hotlist_init(&h, 0, VAL_BRANCH);
	assert_int_equal(h.mode, VAL_COUNTING);
	val_hotlist_add(&h, 1, &r);	/* a miss at 0 stays 0 */
	for (i = 1; i < 50; i++)
		val_hotlist_add(&h, 1, &r);
	assert_int_equal(h.sat, 49);
	assert_int_equal(h.mode, VAL_COUNTING);
	val_hotlist_add(&h, 1, &r);	/* the 50th hit */
	assert_int_equal(h.sat, VAL_SAT_MAX);
	assert_int_equal(h.mode, VAL_CONCISE);
	for (i = 0; i < 1000; i++)
		val_hotlist_add(&h, 1, &r);
	assert_int_equal(h.mode, VAL_CONCISE);
	assert_true(h.p == 1);
	assert_int_equal(h.t[0].count, 1051);	/* p = 1: exact through the switch */
	assert_true(val_hotlist_share(&h, 0) == 1);
	/* All distinct: back to counting once SatCount reaches 0. */
	for (i = 0; i < 10000 && h.mode == VAL_CONCISE; i++)
		val_hotlist_add(&h, 1000 + i, &r);
	assert_int_equal(h.mode, VAL_COUNTING);
	assert_int_equal(h.sat, 0);
	print_message("concise to counting after %" PRIu64 " distinct values\n", i);
	for (i = 0; i < 10000; i++)
		val_hotlist_add(&h, 100000 + i, &r);
	assert_int_equal(h.mode, VAL_COUNTING);
	assert_true(h.n <= VAL_N);
	assert_true(h.p < 0.01);
}

/* A switch keeps p and, roughly, the estimates. */
static void test_switch_keeps_estimates(void **state)
{
	double before = 0, after = 0;

	for (int s = 1; s <= 200; s++) {
		struct val_rng r = { (uint64_t)s }, g = { (uint64_t)s * 3 };
		struct val_hotlist h;
		int i;

		val_hotlist_init(&h, 0, VAL_RESULT);
		h.sat = 1;	/* so that the first hits do not switch yet */
		for (i = 0; i < 3000; i++)	/* 50% value 9, 50% distinct: counting */
			val_hotlist_add(&h, (val_rng_next(&g) & 1) ? 9 : val_rng_next(&g),
					&r);
		before += share_of(&h, 9) * (double)h.seen;
		while (h.mode == VAL_COUNTING)
			val_hotlist_add(&h, 9, &r);
		after += share_of(&h, 9) * (double)h.seen - (double)(h.seen - 3000);
	}
	print_message("estimate of the 50%% value before the switch %.1f, after %.1f "
		      "(true about 1500)\n", before / 200, after / 200);
	assert_true(fabs(after - before) / 200 <= 60);
}

/* --- merge ------------------------------------------------------------------------ */

/* A profile of image `image` with lists at a few offsets fed seeded streams. */
static void make_profile(struct val_profile *p, int image, uint64_t seed, size_t len)
{
	struct val_rng g = { seed }, c = { seed ^ 0x5555 };

	zipf_init();
	val_profile_init(p);
	make_id(&p->image, image);
	for (size_t i = 0; i < len; i++) {
		uint64_t off = 0x1000 + 4 * (i % 5);
		uint32_t kind = (uint32_t)(1 + i % 3);
		struct val_hotlist *h = val_profile_list(p, off, kind);

		assert_non_null(h);
		val_hotlist_add(h, draw(i % 2 ? EIGHT : HEAVY, &g), &c);
		p->samples++;
	}
	assert_int_equal(val_profile_normalize(p), 0);
}

/* Two lists fed a stream each, merged, against one list fed both. */
static void merge_pair(enum dist da, enum dist db, uint64_t seed, struct val_hotlist *m1,
		       struct val_hotlist *both)
{
	struct val_rng ga = { seed }, gb = { seed + 1 }, ca = { seed + 2 }, cb = { seed + 3 };
	struct val_rng cc = { seed + 4 };
	struct val_hotlist a, b, m2;

	val_hotlist_init(&a, 0, VAL_LOAD);
	val_hotlist_init(&b, 0, VAL_LOAD);
	val_hotlist_init(both, 0, VAL_LOAD);
	for (int i = 0; i < 20000; i++) {
		uint64_t x = draw(da, &ga), y = draw(db, &gb) + (da == db ? 4 : 0);

		val_hotlist_add(&a, x, &ca);
		val_hotlist_add(&b, y, &cb);
		val_hotlist_add(both, x, &cc);
		val_hotlist_add(both, y, &cc);
	}
	*m1 = a;
	val_hotlist_merge(m1, &b);
	m2 = b;
	val_hotlist_merge(&m2, &a);
	assert_int_equal(m1->seen, 40000);
	assert_int_equal(m1->mode, VAL_CONCISE);
	assert_true(m1->p == (a.p < b.p ? a.p : b.p));
	/* Deterministic and commutative, to the bit. */
	assert_int_equal(m1->n, m2.n);
	assert_memory_equal(m1->t, m2.t, m1->n * sizeof(m1->t[0]));
	/* An empty list is neutral either side. */
	val_hotlist_init(&m2, 0, VAL_LOAD);
	val_hotlist_merge(&m2, &a);
	assert_memory_equal(&m2, &a, offsetof(struct val_hotlist, t));
	m2 = a;
	val_hotlist_init(&b, 0, VAL_LOAD);
	val_hotlist_merge(&m2, &b);
	assert_memory_equal(&m2, &a, sizeof(a));
}

static void test_merge_vs_one(void **state)
{
	struct val_hotlist m, both;
	double em = 0, eb = 0;
	int seeds = 20;

	zipf_init();
	/* Values 100..107 and 104..111: 12 values, p stays 1, all exact. */
	merge_pair(EIGHT, EIGHT, 1, &m, &both);
	assert_true(m.p == 1 && both.p == 1);
	val_hotlist_sort(&both);
	assert_int_equal(m.n, 12);
	assert_int_equal(both.n, 12);
	assert_memory_equal(m.t, both.t, 12 * sizeof(m.t[0]));
	/* With noise: 7 is 30% of the union, 100 15%; as close to the truth
	 * merged as fed together. */
	for (int s = 1; s <= seeds; s++) {
		merge_pair(HEAVY, EIGHT, (uint64_t)s * 10, &m, &both);
		if (s == 1) {
			print_list("merged", &m);
			print_list("one list fed both", &both);
		}
		em += fabs(share_of(&m, 7) - 0.3) + fabs(share_of(&m, 100) - 0.15);
		eb += fabs(share_of(&both, 7) - 0.3) + fabs(share_of(&both, 100) - 0.15);
	}
	print_message("mean share error of 7 and 100: merged %.4f, one list %.4f\n",
		      em / (2 * seeds), eb / (2 * seeds));
	assert_true(em / (2 * seeds) <= 0.08);
	assert_true(em <= 2 * eb + 0.02 * seeds);
}

static void encode_ok(const struct val_profile *p, uint8_t **buf, size_t *len)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(val_encode(p, buf, len, &err), 0);
}

static void test_merge_profiles(void **state)
{
	struct dcpi_err err = { 0 };
	struct val_profile a, b, ab, ba, other;
	uint8_t *x, *y;
	size_t xl, yl;

	make_profile(&a, 0, 11, 3000);
	make_profile(&b, 0, 12, 2000);
	make_profile(&ab, 0, 11, 3000);
	make_profile(&ba, 0, 12, 2000);
	assert_int_equal(val_profile_merge(&ab, &b, &err), 0);
	assert_int_equal(val_profile_merge(&ba, &a, &err), 0);
	assert_int_equal(ab.samples, 5000);
	encode_ok(&ab, &x, &xl);
	encode_ok(&ba, &y, &yl);
	assert_int_equal(xl, yl);
	assert_memory_equal(x, y, xl);
	free(x);
	free(y);
	for (size_t i = 0; i < ab.nlists; i++) {
		const struct val_hotlist *h = &ab.lists[i];
		const struct val_hotlist *ha = val_profile_find(&a, h->offset, h->kind);
		const struct val_hotlist *hb = val_profile_find(&b, h->offset, h->kind);

		assert_non_null(ha);
		assert_non_null(hb);
		assert_int_equal(h->seen, ha->seen + hb->seen);
		assert_ptr_equal(val_profile_find(&ab, h->offset, h->kind), h);
	}
	assert_null(val_profile_find(&ab, 0x999, 1));
	make_profile(&other, 2, 1, 10);
	assert_int_equal(val_profile_merge(&a, &other, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "different images"));
	val_profile_free(&a);
	val_profile_free(&b);
	val_profile_free(&ab);
	val_profile_free(&ba);
	val_profile_free(&other);
}

static void test_tags(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id x, y, own;
	struct val_profile a, b;
	struct val_hotlist *h;
	struct val_rng r = { 1 };
	const struct val_hotlist *m;
	int tx, ty;

	make_id(&x, 3);
	make_id(&y, 4);
	val_profile_init(&a);
	val_profile_init(&b);
	make_id(&a.image, 0);
	make_id(&b.image, 0);
	own = a.image;
	assert_int_equal(val_profile_image_tag(&a, &own), 0);
	assert_int_equal(val_profile_image_tag(&a, &x), 1);
	assert_int_equal(val_profile_image_tag(&a, &x), 1);
	assert_int_equal(a.nimages, 1);
	h = val_profile_list(&a, 0x10, VAL_TARGET);
	val_hotlist_add(h, VAL_CODE(1, 0x500), &r);
	val_hotlist_add(h, VAL_CODE(0, 0x80), &r);
	val_hotlist_add(h, VAL_CODE_NONE, &r);
	/* b knows y first: x is its tag 2. */
	assert_int_equal((ty = val_profile_image_tag(&b, &y)), 1);
	assert_int_equal((tx = val_profile_image_tag(&b, &x)), 2);
	h = val_profile_list(&b, 0x10, VAL_TARGET);
	val_hotlist_add(h, VAL_CODE(tx, 0x500), &r);
	val_hotlist_add(h, VAL_CODE(ty, 0x500), &r);
	val_hotlist_add(h, VAL_CODE_NONE, &r);
	h = val_profile_list(&b, 0x20, VAL_CALLSITE);
	val_hotlist_add(h, VAL_CODE(ty, 0x66), &r);
	h = val_profile_list(&b, 0x20, VAL_RESULT);	/* not code: not remapped */
	val_hotlist_add(h, VAL_CODE(2, 0x66), &r);
	assert_int_equal(val_profile_normalize(&a), 0);
	assert_int_equal(val_profile_normalize(&b), 0);
	assert_int_equal(val_profile_merge(&a, &b, &err), 0);
	assert_int_equal(a.nimages, 2);
	assert_true(prof_image_id_equal(&a.images[1], &y));
	m = val_profile_find(&a, 0x10, VAL_TARGET);
	assert_non_null(m);
	assert_int_equal(m->n, 4);
	assert_int_equal(m->t[0].count, 2);	/* x:0x500 from both */
	assert_int_equal(m->t[0].value, VAL_CODE(1, 0x500));
	assert_true(slot_of(m, VAL_CODE(2, 0x500)) >= 0);
	assert_true(m->t[slot_of(m, VAL_CODE_NONE)].count == 2);
	m = val_profile_find(&a, 0x20, VAL_CALLSITE);
	assert_int_equal(m->t[0].value, VAL_CODE(2, 0x66));
	m = val_profile_find(&a, 0x20, VAL_RESULT);
	assert_int_equal(m->t[0].value, VAL_CODE(2, 0x66));
	/* A tag beyond the table is refused. */
	h = val_profile_list(&b, 0x30, VAL_TARGET);
	val_hotlist_add(h, VAL_CODE(7, 0x1), &r);
	assert_int_equal(val_profile_merge(&a, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "image tag"));
	val_profile_free(&a);
	val_profile_free(&b);
}

/* --- bytes ---------------------------------------------------------------------- */

static void assert_same(const struct val_profile *a, const struct val_profile *b)
{
	assert_true(prof_image_id_equal(&a->image, &b->image));
	assert_string_equal(a->image.path, b->image.path);
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->nimages, b->nimages);
	for (size_t i = 0; i < a->nimages; i++) {
		assert_string_equal(a->images[i].path, b->images[i].path);
		assert_int_equal(a->images[i].mtime, b->images[i].mtime);
	}
	assert_int_equal(a->nlists, b->nlists);
	for (size_t i = 0; i < a->nlists; i++) {
		const struct val_hotlist *x = &a->lists[i], *y = &b->lists[i];

		assert_memory_equal(x, y, offsetof(struct val_hotlist, t));
		assert_memory_equal(x->t, y->t, x->n * sizeof(x->t[0]));
	}
}

/* fuzz/seed-fuzz_values.sh runs the test with DCPI_VALUES_SEEDS=DIR: the
 * encoded profiles become the fuzzer's seeds. */
static void save_seed(const char *name, const uint8_t *buf, size_t len)
{
	const char *dir = getenv("DCPI_VALUES_SEEDS");
	char path[1024];
	FILE *f;

	if (!dir || !dir[0])
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_roundtrip(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id lib;
	struct val_profile a, b;
	uint8_t *buf;
	size_t len;

	make_profile(&a, 0, 99, 5000);
	make_id(&lib, 5);
	lib.mtime = -12345;	/* negative mtimes survive */
	assert_int_equal(val_profile_image_tag(&a, &lib), 1);
	encode_ok(&a, &buf, &len);
	assert_int_equal(val_decode(buf, len, "x.values", &b, &err), 0);
	assert_same(&a, &b);
	print_message("%zu hotlists in %zu bytes\n", a.nlists, len);
	save_seed("seed-roundtrip", buf, len);
	free(buf);
	val_profile_free(&a);
	val_profile_free(&b);
}

/* The sample every corruption test starts from: no images, two lists. */
static const char sample_bid[] = "abcd";
static const char sample_path[] = "/bin/x";

static void encode_sample(uint8_t **buf, size_t *len, int code)
{
	struct val_profile p;
	struct val_hotlist *h;
	struct prof_image_id a, b;
	struct val_rng r = { 1 };

	val_profile_init(&p);
	strcpy(p.image.build_id, sample_bid);
	strcpy(p.image.path, sample_path);
	h = val_profile_list(&p, 0x10, code ? VAL_TARGET : VAL_RESULT);
	for (int i = 0; i < 3; i++)
		val_hotlist_add(h, code ? VAL_CODE(2, 0x10) : 5, &r);
	h = val_profile_list(&p, 0x20, VAL_RESULT);
	val_hotlist_add(h, 6, &r);
	if (code) {
		make_id(&a, 1);
		make_id(&b, 2);
		assert_int_equal(val_profile_image_tag(&p, &a), 1);
		assert_int_equal(val_profile_image_tag(&p, &b), 2);
	}
	assert_int_equal(val_profile_normalize(&p), 0);
	encode_ok(&p, buf, len);
	val_profile_free(&p);
}

/* Where the first list's record starts (no images). */
#define LIST0 (64 + 1 + sizeof(sample_bid) - 1 + 1 + sizeof(sample_path) - 1)

static void expect_error(const uint8_t *buf, size_t len, const char *want)
{
	struct dcpi_err err = { 0 };
	struct val_profile p;

	assert_int_equal(val_decode(buf, len, "x.values", &p, &err), -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("wanted \"%s\" in \"%s\"", want, err.msg);
	assert_memory_equal(err.msg, "x.values: ", 10);
	val_profile_free(&p);
}

/* A byte of a valid file changed, the checksum made good again, and the
 * error that must name it. */
static const struct {
	size_t at;
	uint8_t to;
	const char *want;
} resealed[] = {
	{ LIST0 + 1, 99, "x.values: hotlist 0: kind 99 unknown" },
	{ LIST0 + 1, 0, "hotlist 0: kind 0 unknown" },
	{ LIST0 + 4, VAL_N + 1, "x.values: hotlist 0: 65 tuples (at most 64)" },
	{ LIST0 + 3, 51, "SatCount 51" },
	{ LIST0 + 2, 3, "mode 3 unknown" },
	{ LIST0 + 16, 0, "hotlist 1: (0x10, kind 1) duplicate or not sorted" },
	{ LIST0 + 15, 0, "hotlist 0: tuple 0: zero count" },	/* the count of (5, 3) */
	{ 24, 200, "do not fit" },				/* nlists */
};

/* The first list's probability replaced, and the error. */
static const struct {
	double p;
	const char *want;
} bad_p[] = {
	{ 0, "hotlist 0: probability 0 outside (0, 1]" },
	{ 2, "probability 2 outside" },
};

static void test_corrupt(void **state)
{
	uint8_t *buf, *b;
	size_t len;

	encode_sample(&buf, &len, 0);
	save_seed("seed-small", buf, len);
	b = malloc(len + 1);
	assert_non_null(b);
	for (size_t l = 0; l < len; l++)
		expect_error(buf, l, "x.values: ");
	expect_error(buf, len - 1, "truncated");
	for (size_t bit = 0; bit < len * 8; bit++) {
		memcpy(b, buf, len);
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		expect_error(b, len, "x.values: ");
	}
	memcpy(b, buf, len);
	b[len - 1] ^= 1;
	expect_error(b, len, "bad checksum");
	memcpy(b, buf, len);
	b[len] = 0;
	expect_error(b, len + 1, "trailing garbage");
	/* Content errors behind a valid checksum: the first list is 0x10, a
	 * result; list 0: offset, 4 bytes, p, seen 3, (5, 3): 16 bytes; then
	 * list 1, at 0x10 too. */
	assert_int_equal(buf[LIST0], 0x10);
	assert_int_equal(buf[LIST0 + 1], VAL_RESULT);
	assert_int_equal(buf[LIST0 + 16], 0x10);
	for (size_t i = 0; i < sizeof(resealed) / sizeof(resealed[0]); i++) {
		memcpy(b, buf, len);
		b[resealed[i].at] = resealed[i].to;
		prof_file_reseal(b, len);
		expect_error(b, len, resealed[i].want);
	}
	for (size_t i = 0; i < sizeof(bad_p) / sizeof(bad_p[0]); i++) {
		memcpy(b, buf, len);
		/* the file is little-endian, as this host */
		memcpy(b + LIST0 + 5, &bad_p[i].p, 8);
		prof_file_reseal(b, len);
		expect_error(b, len, bad_p[i].want);
	}
	free(buf);
	free(b);
	/* A tag beyond the table of two images. */
	encode_sample(&buf, &len, 1);
	save_seed("seed-tagged", buf, len);
	{
		uint8_t want[10], repl[10];
		size_t k = dcpi_varint_put(want, VAL_CODE(2, 0x10));
		uint8_t *at = memmem(buf, len, want, k);

		assert_int_equal(dcpi_varint_put(repl, VAL_CODE(3, 0x10)), k);
		assert_non_null(at);
		memcpy(at, repl, k);
		prof_file_reseal(buf, len);
		expect_error(buf, len, "tuple 0: image tag 3 beyond the 2 of the table");
	}
	free(buf);
}

static void test_encode_rejects(void **state)
{
	struct dcpi_err err = { 0 };
	struct val_profile p;
	uint8_t *buf;
	size_t len;

	make_profile(&p, 0, 1, 100);
	p.lists[0].kind = 42;
	assert_int_equal(val_encode(&p, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "kind 42 unknown"));
	p.lists[0].kind = 1;
	p.lists[1] = p.lists[0];
	assert_int_equal(val_encode(&p, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not sorted"));
	assert_null(buf);
	val_profile_free(&p);
	assert_null(val_kind_name(0));
	assert_null(val_kind_name(VAL_KIND_MAX + 1));
	assert_string_equal(val_kind_name(VAL_ARG0 + 2), "arg2");
	assert_string_equal(val_kind_name(VAL_CALLSITE), "callsite");
	for (int k = 1; k <= VAL_KIND_MAX; k++)
		assert_non_null(val_kind_name(k));
}

/* --- files and epochs ------------------------------------------------------------ */

static int setup_tmp(void **state)
{
	return tu_tmp_make("values");
}

static void test_files(void **state)
{
	struct dcpi_err err = { 0 };
	struct val_profile a, b, c;
	char path[512];

	make_profile(&a, 0, 7, 1000);
	make_profile(&b, 2, 7, 10);
	snprintf(path, sizeof(path), "%s/f.values", tmp_root);
	assert_int_equal(val_file_merge(path, &a, &err), 0);	/* created */
	assert_int_equal(val_file_read(path, &c, &err), 0);
	assert_same(&a, &c);
	val_profile_free(&c);
	assert_int_equal(val_file_merge(path, &a, &err), 0);
	assert_int_equal(val_file_read(path, &c, &err), 0);
	assert_int_equal(c.samples, 2 * a.samples);
	assert_int_equal(c.lists[0].seen, 2 * a.lists[0].seen);
	val_profile_free(&c);
	assert_int_equal(val_file_merge(path, &b, &err), -EINVAL);
	assert_int_equal(val_file_write(path, &b, &err), 0);
	assert_int_equal(val_file_read(path, &c, &err), 0);
	assert_same(&b, &c);
	val_profile_free(&c);
	snprintf(path, sizeof(path), "%s/none.values", tmp_root);
	assert_int_equal(val_file_read(path, &c, &err), -ENOENT);
	val_profile_free(&a);
	val_profile_free(&b);
}

static void test_epoch(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("db"), *db2 = open_db("db2");
	struct val_profile a, b, *v, *w;
	struct path_profile *pv;
	char e1[64], e2[64], path[1024];
	size_t n, m;
	FILE *f;

	assert_int_equal(prof_db_epoch_new(db, e1, sizeof(e1), &err), 0);
	assert_int_equal(val_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	make_profile(&a, 0, 3, 500);
	make_profile(&b, 1, 4, 300);
	assert_int_equal(val_epoch_write(db, e1, &a, &err), 0);
	assert_int_equal(val_epoch_write(db, e1, &b, &err), 0);
	assert_int_equal(val_epoch_write(db, e1, &a, &err), 0);	/* merges */
	snprintf(path, sizeof(path), "%s/%s/.x.values.tmp1-0", prof_db_path(db), e1);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("half", f);
	fclose(f);
	assert_int_equal(val_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		const struct val_profile *src = v[i].image.build_id[0] ? &a : &b;
		uint64_t k = src == &a ? 2 : 1;

		assert_int_equal(v[i].samples, k * src->samples);
		assert_int_equal(v[i].lists[0].seen, k * src->lists[0].seen);
	}
	/* The path reader leaves .values files alone. */
	assert_int_equal(path_epoch_read(db, e1, &pv, &m, &err), 0);
	assert_int_equal(m, 0);
	assert_int_equal(prof_db_epoch_new(db2, e2, sizeof(e2), &err), 0);
	assert_int_equal(val_epoch_merge(db2, e2, db, e1, &err), 0);
	assert_int_equal(val_epoch_merge(db2, e2, db, e1, &err), 0);
	assert_int_equal(val_epoch_read(db2, e2, &w, &m, &err), 0);
	assert_int_equal(m, n);
	for (size_t i = 0; i < m; i++)
		assert_int_equal(w[i].samples, 2 * v[i].samples);
	val_profiles_free(w, m);
	val_profiles_free(v, n);
	assert_int_equal(val_epoch_merge(db, e1, db, e1, &err), -EINVAL);
	snprintf(path, sizeof(path), "%s/%s/ffff.values", prof_db_path(db), e1);
	tu_write_text(path, "DCPIVALS but not really");
	/* skipped with a note, listed as damaged; a merge refuses it */
	assert_int_equal(val_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, m);
	val_profiles_free(v, n);
	assert_non_null(strstr(prof_db_notes(db), "ffff.values"));
	assert_int_equal(val_epoch_merge(db2, e2, db, e1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ffff.values"));
	val_profile_free(&a);
	val_profile_free(&b);
	prof_db_close(db);
	prof_db_close(db2);
}

TU_MAIN(setup_tmp, teardown_tmp,
	cmocka_unit_test(test_accuracy),
	cmocka_unit_test(test_accuracy_ss),
	cmocka_unit_test(test_unbiased),
	cmocka_unit_test(test_seed_example),
	cmocka_unit_test(test_satcount),
	cmocka_unit_test(test_switch_keeps_estimates),
	cmocka_unit_test(test_merge_vs_one),
	cmocka_unit_test(test_merge_profiles),
	cmocka_unit_test(test_tags),
	cmocka_unit_test(test_roundtrip),
	cmocka_unit_test(test_corrupt),
	cmocka_unit_test(test_encode_rejects),
	cmocka_unit_test(test_files),
	cmocka_unit_test(test_epoch))
