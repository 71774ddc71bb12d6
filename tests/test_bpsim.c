/*
 * test_bpsim.c - the branch predictors of bpsim, the simulated-mispredict
 * yardstick of make culprits (bench/culprits/bpsim/bp_pred.c,
 * docs/culprits.md "Fig. 10"), driven natively on outcome streams whose
 * behaviour is known: periodic patterns of period 2 to 16 behind filler
 * branches (callgrind's predictor sees only its own 2-bit counter, TAGE learns
 * them), a 50% random branch (neither can), loop exits at fixed trip counts,
 * a branch that repeats one 11 branches earlier, indirect targets in a cycle,
 * and the exact counts callgrind's predictor gives on a short stream.  When
 * make bpsim has built the valgrind tool, it runs on tests/workloads/switchy
 * beside callgrind: with callgrind's predictor it must count the same
 * branches and mispredicts, with TAGE the same branches and fewer conditional
 * mispredicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../bench/culprits/bpsim/bp_pred.h"
#include "testutil.h"
#include "tu_main.h"

#define FILLER_PC 0x1001u	/* filler k at FILLER_PC + 8k: low 7 bits odd */

static struct bp_pred *pred_new(enum bp_kind kind)
{
	struct bp_pred *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	assert_int_equal(bp_pred_init(p, kind), 0);
	return p;
}

static void fillers(struct bp_pred *p, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		bp_cond(p, FILLER_PC + 8 * k, 1);
}

/* A pattern of the period's length with at least a quarter of minority outcomes. */
static unsigned pattern_of(unsigned period)
{
	for (;;) {
		unsigned bits = (unsigned)tu_rng() & ((1u << period) - 1), ones = 0;

		for (unsigned i = 0; i < period; i++)
			ones += (bits >> i) & 1;
		if (4 * ones >= period && 4 * (period - ones) >= period)
			return bits;
	}
}

/* Mispredicts of the branch at 0x4000 following pattern bits over the last
 * half of iters iterations, each behind 8 always-taken fillers. */
static double periodic_rate(enum bp_kind kind, unsigned bits, unsigned period, unsigned iters)
{
	struct bp_pred *p = pred_new(kind);
	unsigned miss = 0, n = 0;

	for (unsigned it = 0; it < iters; it++) {
		int m;

		fillers(p, 8);
		m = bp_cond(p, 0x4000, (int)((bits >> (it % period)) & 1));
		if (it >= iters / 2) {
			miss += (unsigned)m;
			n++;
		}
	}
	free(p);
	return (double)miss / n;
}

static void test_periodic(void **state)
{
	for (unsigned period = 2; period <= 16; period++) {
		unsigned bits = pattern_of(period);
		double bim = periodic_rate(BP_BIMODAL, bits, period, 6000);
		double tage = periodic_rate(BP_TAGE, bits, period, 6000);

		print_message("period %2u pattern %04x: bimodal %.3f tage %.4f\n", period, bits,
			      bim, tage);
		assert_true(bim > 0.15);
		assert_true(tage < 0.01);
	}
}

static void test_random(void **state)
{
	enum bp_kind kinds[] = { BP_BIMODAL, BP_TAGE };

	for (unsigned k = 0; k < 2; k++) {
		struct bp_pred *p = pred_new(kinds[k]);
		unsigned miss = 0, n = 200000;

		for (unsigned i = 0; i < n; i++) {
			fillers(p, 2);
			miss += (unsigned)bp_cond(p, 0x4000, (int)((tu_rng() >> 31) & 1));
		}
		print_message("random 50%%, %s: %.3f\n", bp_kind_name(kinds[k]), (double)miss / n);
		assert_true(miss > 0.45 * n && miss < 0.55 * n);
		free(p);
	}
}

/* Mispredicted exits of an inner loop of trip iterations (its branch taken
 * trip - 1 times) over the last half of outer iterations. */
static double loop_exit_misses(enum bp_kind kind, unsigned trip, unsigned outer)
{
	struct bp_pred *p = pred_new(kind);
	unsigned miss = 0, body = 0;

	for (unsigned o = 0; o < outer; o++) {
		for (unsigned i = 0; i < trip; i++) {
			int m = bp_cond(p, 0x2000, i + 1 < trip);

			if (o >= outer / 2)
				miss += (unsigned)m;
		}
		body += o >= outer / 2;
		bp_cond(p, 0x2101, 1);	/* the outer loop's branch */
	}
	free(p);
	return (double)miss / body;
}

static void test_loop_exit(void **state)
{
	unsigned trips[] = { 12, 40, 150 };

	for (unsigned k = 0; k < 3; k++) {
		double bim = loop_exit_misses(BP_BIMODAL, trips[k], 3000);
		double tage = loop_exit_misses(BP_TAGE, trips[k], 3000);

		print_message("trip count %u: mispredicts per loop, bimodal %.3f tage %.3f\n",
			      trips[k], bim, tage);
		assert_true(bim >= 0.9);	/* 7 history bits never see the last exit */
		assert_true(tage < 0.02);
	}
}

/* B repeats A's random outcome 10 fillers later. */
static void test_correlated(void **state)
{
	enum bp_kind kinds[] = { BP_BIMODAL, BP_TAGE };
	double rate_a[2], rate_b[2];

	for (unsigned k = 0; k < 2; k++) {
		struct bp_pred *p = pred_new(kinds[k]);
		unsigned miss_a = 0, miss_b = 0, n = 0, iters = 40000;

		for (unsigned i = 0; i < iters; i++) {
			int a = (int)((tu_rng() >> 31) & 1), ma, mb;

			ma = bp_cond(p, 0x3000, a);
			fillers(p, 10);
			mb = bp_cond(p, 0x3102, a);
			if (i >= iters / 2) {
				miss_a += (unsigned)ma;
				miss_b += (unsigned)mb;
				n++;
			}
		}
		rate_a[k] = (double)miss_a / n;
		rate_b[k] = (double)miss_b / n;
		print_message("correlated, %s: A %.3f B %.4f\n", bp_kind_name(kinds[k]),
			      rate_a[k], rate_b[k]);
		free(p);
	}
	assert_true(rate_a[0] > 0.45 && rate_a[1] > 0.45);
	assert_true(rate_b[0] > 0.4);
	assert_true(rate_b[1] < 0.01);
}

/* An indirect jump cycling over 4 targets (an interpreter's dispatch of a
 * fixed bytecode loop), and one with a single target. */
static void test_indirect(void **state)
{
	static const uint64_t targets[4] = { 0x7000, 0x7340, 0x7a10, 0x7c88 };
	enum bp_kind kinds[] = { BP_BIMODAL, BP_TAGE };

	for (unsigned k = 0; k < 2; k++) {
		struct bp_pred *p = pred_new(kinds[k]);
		unsigned miss = 0, miss1 = 0, n = 0, iters = 20000;

		for (unsigned i = 0; i < iters; i++) {
			int m, m1;

			fillers(p, 2);
			m = bp_ind(p, 0x5000, targets[i % 4]);
			m1 = bp_ind(p, 0x5123, 0x9000);
			if (i >= iters / 2) {
				miss += (unsigned)m;
				miss1 += (unsigned)m1;
				n++;
			}
		}
		print_message("4-target cycle, %s: %.4f; one target %.4f\n", bp_kind_name(kinds[k]),
			      (double)miss / n, (double)miss1 / n);
		if (kinds[k] == BP_BIMODAL)
			assert_int_equal(miss, n);	/* the last target is never the next */
		else
			assert_true(miss < 0.01 * n);
		assert_int_equal(miss1, 0);
		free(p);
	}
}

/* callgrind's predictor, by hand: counters start at 0 (strongly not taken)
 * and are indexed by 7 history bits above 7 address bits, so an always-taken
 * branch meets a fresh counter at histories 0, 1, 3, ..., 63, then needs two
 * more at 127; targets are remembered by the low 9 address bits. */
static void test_bimodal_exact(void **state)
{
	struct bp_pred *p = pred_new(BP_BIMODAL);
	unsigned miss = 0;

	for (unsigned i = 0; i < 10; i++)
		miss += (unsigned)bp_cond(p, 0x400123, 1);
	assert_int_equal(miss, 9);
	assert_int_equal(bp_cond(p, 0x400123, 1), 0);
	/* 128 bytes apart, same history (127): the same counter, now at 3 */
	assert_int_equal(bp_cond(p, 0x400123 + 128, 1), 0);
	/* not taken: mispredicted, and the history becomes 126, a fresh counter */
	assert_int_equal(bp_cond(p, 0x400123, 0), 1);
	assert_int_equal(bp_cond(p, 0x400123, 1), 1);

	assert_int_equal(bp_ind(p, 0x100, 0x5000), 1);
	assert_int_equal(bp_ind(p, 0x100, 0x5000), 0);
	assert_int_equal(bp_ind(p, 0x100 + 512, 0x6000), 1);	/* aliases */
	assert_int_equal(bp_ind(p, 0x100, 0x5000), 1);
	free(p);
}

static void test_names_and_budget(void **state)
{
	struct bp_pred *p = pred_new(BP_TAGE);
	uint64_t bytes = bp_pred_bits(p) / 8;

	print_message("tage: %llu bytes of predictor state\n", (unsigned long long)bytes);
	assert_true(bytes >= 32 * 1024 && bytes <= 64 * 1024);
	assert_int_equal(bp_kind_parse("tage"), BP_TAGE);
	assert_int_equal(bp_kind_parse("bimodal"), BP_BIMODAL);
	assert_int_equal(bp_kind_parse("gshare"), -1);
	assert_int_equal(bp_kind_parse("tag"), -1);
	assert_string_equal(bp_kind_name(BP_BIMODAL), "bimodal");
	assert_int_equal(bp_pred_init(p, (enum bp_kind)7), -1);
	free(p);
}

/* "Branches:" and "Mispredicts:" of a valgrind log: total, cond, ind each. */
static int read_totals(const char *log, unsigned long long br[3], unsigned long long mp[3])
{
	char line[512];
	int found = 0;
	FILE *f = fopen(log, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long *v = strstr(line, "Branches:") ? br :
					strstr(line, "Mispredicts:") ? mp : NULL;
		char digits[512], *w = digits, *p;
		int k = 0;

		if (!v)
			continue;
		for (p = strchr(line, ':') + 1; *p; p++)	/* 1,234 -> 1234 */
			if (*p != ',')
				*w++ = *p;
		*w = '\0';
		for (p = digits; *p && k < 3; p++) {
			if (*p >= '0' && *p <= '9') {
				v[k++] = strtoull(p, &p, 10);
				p--;
			}
		}
		found += k == 3;
	}
	fclose(f);
	return found == 2 ? 0 : -1;
}

static void test_valgrind_tool(void **state)
{
	const char *build = getenv("DCPI_BUILD");
	char tool[1024], wl[1024], dir[256], log[3][1100];
	unsigned long long br[3][3], mp[3][3];

	if (!build || snprintf(tool, sizeof(tool), "%s/bpsim/lib/bpsim-amd64-linux", build) < 0 ||
	    access(tool, X_OK) || system("command -v valgrind > /dev/null 2>&1")) {
		print_message("no bpsim tool (make bpsim) or no valgrind: skipped\n");
		skip();
		return;
	}
	snprintf(wl, sizeof(wl), "%s/workloads/switchy", build);
	assert_int_equal(tu_workspace(dir, sizeof(dir), "bpsim"), 0);
	for (int k = 0; k < 3; k++)
		snprintf(log[k], sizeof(log[k]), "%s/log%d", dir, k);
	/* The output options have the same length: the client's start-up
	 * strings move with valgrind's command line, and ld.so's string scans
	 * branch on their alignment. */
	assert_int_equal(tu_sh("VALGRIND_LIB=%s/bpsim/lib valgrind --tool=callgrind "
				"--branch-sim=yes --callgrind-out-file=%s/cg %s 20000 > /dev/null "
				"2> %s", build, dir, wl, log[0]), 0);
	assert_int_equal(tu_sh("VALGRIND_LIB=%s/bpsim/lib valgrind --tool=bpsim "
				"--predictor=bimodal --bpsim-out-file=%s/bim1 %s 20000 > /dev/null "
				"2> %s", build, dir, wl, log[1]), 0);
	assert_int_equal(tu_sh("VALGRIND_LIB=%s/bpsim/lib valgrind --tool=bpsim "
				"--predictor=tage --bpsim-out-file=%s/tag1 %s 20000 > /dev/null "
				"2> %s", build, dir, wl, log[2]), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(read_totals(log[k], br[k], mp[k]), 0);
	print_message("switchy: branches %llu cond + %llu ind; mispredicts callgrind %llu + %llu, "
		      "bpsim bimodal %llu + %llu, tage %llu + %llu\n", br[0][1], br[0][2],
		      mp[0][1], mp[0][2], mp[1][1], mp[1][2], mp[2][1], mp[2][2]);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(br[1][i], br[0][i]);
		assert_int_equal(mp[1][i], mp[0][i]);
		assert_int_equal(br[2][i], br[0][i]);
	}
	/* TAGE learns the i % 7, % 12, % 41 range checks of the switches; their
	 * jump tables' targets, interleaved, stay mispredicted by both */
	assert_true(mp[2][1] * 3 < mp[0][1] * 2);
	assert_true(mp[2][0] < mp[0][0]);
	assert_int_equal(tu_sh("rm -rf %s", dir), 0);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_periodic),
	cmocka_unit_test(test_random),
	cmocka_unit_test(test_loop_exit),
	cmocka_unit_test(test_correlated),
	cmocka_unit_test(test_indirect),
	cmocka_unit_test(test_bimodal_exact),
	cmocka_unit_test(test_names_and_budget),
	cmocka_unit_test(test_valgrind_tool))
