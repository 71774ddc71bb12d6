/*
 * test_replay.c - loads replayed on this machine (estimate/replay.c,
 * culprit/sandbox/replay.c): which loads walk, the region and element their
 * addresses give (drawn here from regions known by construction), and the
 * walk's timing ordered as the memory hierarchy is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/analysis.h"
#include "dcpi/cfg.h"
#include "dcpi/profile.h"
#include "dcpi/sandbox.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_main.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* n distinct addresses of elements of elem bytes drawn from [base, base+bytes). */
static size_t draw(uint64_t *a, size_t n, uint64_t base, uint64_t bytes, uint32_t elem)
{
	size_t k = 0;

	while (k < n) {
		uint64_t v = base + next() % (bytes / elem) * elem;
		int dup = 0;

		for (size_t j = 0; j < k; j++)
			dup |= a[j] == v;
		if (!dup)
			a[k++] = v;
	}
	return k;
}

/* est_replay_footprint of the 64 addresses of a, sorted first as it wants. */
static void footprint64(uint64_t *a, uint64_t *bytes, uint32_t *e, size_t *used)
{
	qsort(a, 64, sizeof(a[0]), cmp_u64);
	est_replay_footprint(a, 64, bytes, e, used);
}

static void check_region(uint64_t bytes, uint32_t elem, double tol)
{
	uint64_t a[64], got;
	uint32_t e;
	size_t used;

	for (int trial = 0; trial < 20; trial++) {
		draw(a, 64, 0x7f0000001000ull, bytes, elem);
		footprint64(a, &got, &e, &used);
		assert_int_equal(used, 64);
		assert_true(e >= elem);	/* a power of 2 dividing every step */
		assert_in_range((uint64_t)(got * 1000.0 / bytes), (uint64_t)(1000 * (1 - tol)),
				(uint64_t)(1000 * (1 + tol)));
	}
}

/* 64 uniform draws span the region within about 10% (the span of n draws
 * misses about 2/(n+1) of it, corrected; its spread is about 3%). */
static void test_footprint(void **state)
{
	(void)state;
	check_region(16u << 20, 4, 0.12);
	check_region(256u << 20, 4, 0.12);
	check_region(1u << 20, 64, 0.12);
}

/* A list of 64-byte nodes: the element is the node (all addresses share
 * their offset in the line). */
static void test_element(void **state)
{
	uint64_t a[64], bytes;
	uint32_t e;
	size_t used;

	(void)state;
	draw(a, 64, 0x555500000040ull, 8u << 20, 64);
	footprint64(a, &bytes, &e, &used);
	assert_int_equal(e, 64);
	draw(a, 64, 0x555500000000ull, 8u << 20, 4);
	footprint64(a, &bytes, &e, &used);
	assert_int_equal(e, 4);
}

/* Two processes' addresses (ASLR) in one list: the larger run is the
 * region, not the distance between the two. */
static void test_two_regions(void **state)
{
	uint64_t a[64], bytes;
	uint32_t e;
	size_t used;

	(void)state;
	draw(a, 40, 0x7f1000000000ull, 4u << 20, 4);
	draw(a + 40, 24, 0x7f5000000000ull, 4u << 20, 4);
	footprint64(a, &bytes, &e, &used);
	assert_int_equal(used, 40);
	assert_true(bytes > (3u << 20) && bytes < (5u << 20));
	est_replay_footprint(a, 4, &bytes, &e, &used);	/* too few to say */
	assert_int_equal(bytes, 0);
}

/* The region's 90% range from few addresses (est_replay_footprint_range):
 * over 2000 draws of n addresses from a region known by construction, the
 * range holds the region 85-95% of the time, and it narrows as n grows. */
static void test_footprint_range(void **state)
{
	static const size_t ns[] = { 6, 9, 16 };
	const uint64_t region = 3u << 20;
	double width[3];

	(void)state;
	for (int k = 0; k < 3; k++) {
		size_t in = 0, n = ns[k], trials = 2000;
		double w = 0;

		for (size_t t = 0; t < trials; t++) {
			uint64_t a[16], bytes, lo, hi;
			uint32_t e;
			size_t used;

			draw(a, n, 0x7f0000000000ull, region, 64);
			qsort(a, n, sizeof(a[0]), cmp_u64);
			est_replay_footprint(a, n, &bytes, &e, &used);
			assert_int_equal(used, n);
			est_replay_footprint_range(bytes, e, used, &lo, &hi);
			assert_true(lo <= bytes && bytes <= hi);
			in += lo <= region && region <= hi;
			w += log((double)hi / (double)lo);
		}
		print_message("# %zu addresses: the region inside the range %zu of %zu times, "
			      "mean width x%.2f\n", n, in, trials, exp(w / (double)trials));
		assert_true(in >= trials * 85 / 100 && in <= trials * 95 / 100);
		width[k] = w;
	}
	assert_true(width[0] > width[1] && width[1] > width[2]);
}

/* The first load of a loop built from bytes: is it fed by its own result? */
static int fed(const uint8_t *code, size_t len)
{
	struct cfg *cfg;
	struct dcpi_err err = { 0 };
	int r = -1;

	assert_int_equal(cfg_build_bytes(code, len, 0x1000, "loop", &cfg, &err), 0);
	for (uint32_t i = 0; i < cfg->ninsns; i++)
		if (cfg->insns[i].flags & CFG_I_LOAD) {
			r = est_replay_self_fed(cfg, i);
			break;
		}
	cfg_free(cfg);
	assert_true(r >= 0);
	return r;
}

/* mov (%rdi,%rdx,4),%edx feeds itself, and mov 8(%rax),%rbx; mov %rbx,%rax
 * round its loop; a load into another register summed, or whose register
 * is overwritten from elsewhere before the next round, does not. */
static void test_self_fed(void **state)
{
	static const uint8_t chase[] = {	/* tests/workloads/chase's walk */
		0x8b, 0x14, 0x97, 0x48, 0x01, 0xd1, 0x48, 0x83, 0xe8, 0x01, 0x73, 0xf4, 0xc3 };
	static const uint8_t list[] = {
		0x48, 0x8b, 0x58, 0x08, 0x48, 0x89, 0xd8, 0x48, 0x83, 0xe9, 0x01, 0x75, 0xf3,
		0xc3 };
	static const uint8_t sum[] = {
		0x8b, 0x04, 0x8f, 0x01, 0xc3, 0x48, 0x83, 0xc1, 0x01, 0x48, 0x39, 0xd1, 0x75,
		0xf2, 0xc3 };
	static const uint8_t reset[] = {
		0x48, 0x8b, 0x58, 0x08, 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe9, 0x01, 0x75, 0xf3,
		0xc3 };

	(void)state;
	assert_true(fed(chase, sizeof(chase)));
	assert_true(fed(list, sizeof(list)));
	assert_false(fed(sum, sizeof(sum)));
	assert_false(fed(reset, sizeof(reset)));
}

/* The load at addr of code built at 0x1000: fed by its own result? */
static int fed_at(const uint8_t *code, size_t len, uint64_t addr)
{
	struct cfg *cfg;
	struct dcpi_err err = { 0 };
	int i, r;

	assert_int_equal(cfg_build_bytes(code, len, 0x1000, "loop", &cfg, &err), 0);
	i = cfg_insn_at(cfg, addr);
	assert_true(i >= 0);
	assert_true(cfg->insns[i].flags & CFG_I_LOAD);
	r = est_replay_self_fed(cfg, (uint32_t)i);
	cfg_free(cfg);
	return r;
}

/* Chains carried round loops of several blocks: p = p->next with an if
 * inside the loop, the next pointer moved to the address register in the
 * block after the if; the same with one arm overwriting it from elsewhere
 * (not on every path: not fed); gzip's longest-match loop (/usr/bin/gzip
 * 0x4308-0x4330: the chain load prev[cur & wmask] and the window load, a
 * compare fused with its branch, fed by the chain but not by itself). */
static void test_fed_round_blocks(void **state)
{
	static const uint8_t if_inside[] = {
		0x48, 0x8b, 0x58, 0x08, 0xf6, 0xc3, 0x01, 0x74, 0x04, 0x48, 0x83, 0xc1, 0x01,
		0x48, 0x89, 0xd8, 0x48, 0x83, 0xea, 0x01, 0x75, 0xea, 0xc3 };
	static const uint8_t one_arm[] = {
		0x48, 0x8b, 0x58, 0x08, 0xf6, 0xc3, 0x01, 0x74, 0x03, 0x48, 0x89, 0xfb, 0x48,
		0x89, 0xd8, 0x48, 0x83, 0xea, 0x01, 0x75, 0xeb, 0xc3 };
	static const uint8_t gzip[] = {
		0x81, 0xe2, 0xff, 0x7f, 0x00, 0x00, 0x41, 0x0f, 0xb7, 0x14, 0x53, 0x39, 0xd7,
		0x73, 0x10, 0x83, 0xe9, 0x01, 0x74, 0x0b, 0x89, 0xd0, 0x4c, 0x01, 0xc8, 0x44,
		0x38, 0x14, 0x30, 0x75, 0xe1, 0xc3 };
	static const uint8_t reuse[] = {
		0x41, 0x89, 0xc0, 0x46, 0x0f, 0xb6, 0x04, 0x02, 0x44, 0x01, 0xc1, 0x83, 0xc0,
		0x01, 0x39, 0xf0, 0x75, 0xee, 0xc3 };
	struct cfg *cfg;
	struct dcpi_err err = { 0 };

	(void)state;
	assert_int_equal(cfg_build_bytes(if_inside, sizeof(if_inside), 0x1000, "loop", &cfg,
					 &err), 0);
	assert_true(cfg->nblocks >= 3);
	cfg_free(cfg);
	assert_true(fed_at(if_inside, sizeof(if_inside), 0x1000));
	assert_false(fed_at(one_arm, sizeof(one_arm), 0x1000));
	assert_true(fed_at(gzip, sizeof(gzip), 0x1006));
	/* movzbl (%rdx,%r8),%r8d, r8 set from eax before it each time round
	 * (xz's match finder): its destination is not its next address */
	assert_false(fed_at(reuse, sizeof(reuse), 0x1003));
	/* cmpb %r10b,(%rax,%rsi): a load (fed_at checks), not fed by itself */
	assert_false(fed_at(gzip, sizeof(gzip), 0x1019));
}

/* A walk over 64 MB costs more a step than one over 256 KB, which costs
 * more than the L1 walk beside it (orders of the hierarchy, not figures). */
static void test_walk_order(void **state)
{
	struct sbx_walk small, big;
	struct dcpi_err err = { 0 };
	char why[256];

	(void)state;
	assert_int_equal(sbx_replay_walk(64u << 20, 3, &big, &err), -EINVAL);
	if (!sbx_usable(why, sizeof(why))) {	/* valgrind's own CPU: no timing */
		print_message("# %s: walk timings not checked\n", why);
		return;
	}
	assert_int_equal(sbx_replay_walk(256u << 10, 4, &small, &err), 0);
	assert_int_equal(sbx_replay_walk(64u << 20, 4, &big, &err), 0);
	print_message("walk 256 KB %.1f cycles (L1 %.1f), 64 MB %.1f cycles\n", small.cycles,
		      small.l1_cycles, big.cycles);
	assert_true(small.cycles > small.l1_cycles);
	assert_true(big.cycles > 2 * small.cycles);
}

/* dcpi record times the walks of a recording's self-fed loads right after
 * the run (tools/cmd_record.c replay_now), within a budget: a chase recorded
 * without that timing (DCPI_NO_REPLAY), then est_replay_epoch with a budget
 * already spent leaves its load to the analysis, and with none times it. */
static void test_replay_budget(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	char dir[4096], dbdir[4200];
	size_t n = 9, left = 9;
	uint64_t bytes = 0;

	(void)state;
	if (!bin || !build)
		skip();
	assert_int_equal(tu_workspace(dir, sizeof(dir), "replay"), 0);
	snprintf(dbdir, sizeof(dbdir), "%s/db", dir);
	assert_int_equal(tu_sh("DCPI_NO_REPLAY=1 %s record -q --paths 400:64 --db %s -- "
			       "%s/workloads/chase 262144 30000000 > /dev/null", bin, dbdir, build),
			 0);
	assert_int_equal(prof_db_open(dbdir, 0, &db, &err), 0);
	assert_int_equal(est_replay_epoch(db, dbdir, "00000001", 1, &n, &left, &bytes, &err), 0);
	assert_int_equal(n, 0);
	assert_true(left >= 1);		/* walk's load, not timed */
	assert_int_equal(est_replay_epoch(db, dbdir, "00000001", 0, &n, &left, &bytes, &err), 0);
	assert_true(n >= 1);
	assert_int_equal(left, 0);
	assert_true(bytes >= 131072 && bytes <= 524288);	/* the 256 KB ring: in L2, no
								 * walk past the L3 */
	prof_db_close(db);
	tu_sh("rm -rf '%s'", dir);
}

/* A load walking its lines in order: one stride nonzero and shorter than a
 * line in at least 90% of at least 8 strides (est_replay_streams). */
static void stride_list(struct val_hotlist *h, int64_t stride, int n, int other)
{
	val_hotlist_init(h, 0x40, VAL_STRIDE);
	for (int k = 0; k < n; k++)
		val_hotlist_add_ss(h, (uint64_t)(k < other ? 4096 * (k + 1) : stride));
}

static void test_streams(void **state)
{
	struct val_hotlist h;

	(void)state;
	stride_list(&h, 1, 60, 0);		/* gzip's crc bytes: +1, 60 of 60 */
	assert_true(est_replay_streams(&h));
	stride_list(&h, -8, 40, 2);		/* backwards, 38 of 40 */
	assert_true(est_replay_streams(&h));
	stride_list(&h, 8, 40, 8);		/* 32 of 40: not invariant */
	assert_false(est_replay_streams(&h));
	stride_list(&h, 64, 40, 0);		/* a line a step: a miss a step */
	assert_false(est_replay_streams(&h));
	stride_list(&h, 0, 40, 0);		/* the same address */
	assert_false(est_replay_streams(&h));
	stride_list(&h, 1, 7, 0);		/* too few to say */
	assert_false(est_replay_streams(&h));
	val_hotlist_init(&h, 0x40, VAL_ADDR);
	val_hotlist_add_ss(&h, 1);
	assert_false(est_replay_streams(&h));
	assert_false(est_replay_streams(NULL));
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_streams),
	cmocka_unit_test(test_replay_budget),
	cmocka_unit_test(test_footprint),
	cmocka_unit_test(test_element),
	cmocka_unit_test(test_two_regions),
	cmocka_unit_test(test_footprint_range),
	cmocka_unit_test(test_self_fed),
	cmocka_unit_test(test_fed_round_blocks),
	cmocka_unit_test(test_walk_order))
