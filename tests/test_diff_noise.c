/*
 * test_diff_noise.c - dcpidiff and dcpistats against run-to-run variation
 * (report/stats.c, docs/diff.md).  tests/workloads/diffload runs four
 * procedures of fixed work, ~0.35 s a run at 20 kHz.
 *
 * - Ten pairs of identical runs: dcpidiff at its default level (1%, Holm)
 *   calls a change in at most one pair; the twenty runs as two sides of ten
 *   epochs each (phi from the epochs) show no change either.
 * - Ten pairs where work_b does 20% more work (runs of 0.7 s, so that the
 *   change stands well above the 1% level): work_b is flagged in all ten,
 *   another procedure in at most two.
 * - dcpistats over the ten epochs ranks a procedure with thousands of
 *   samples first, not one seen once (range 100%).
 * - The numbers of the report that started this (two identical runs, all
 *   four procedures at |z| 4.4-4.8 from Poisson error alone), through
 *   rep_diff and rep_diff_epochs: no significant change, phi above 1.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/report.h"
#include "testutil.h"
#include "tu_main.h"

#define PAIRS 10
/* user code only: the kernel's share of a run (softirqs, page faults) follows
 * what else the machine does, not the workload */
#define RECORD "record -F 20000 --no-paths --no-values --no-calibrate --no-kernel"

static char dir[4096], wl[4096];
static const char *bin;

static int setup(void **state)
{
	const char *build = getenv("DCPI_BUILD"), *tmp = getenv("TMPDIR");

	(void)state;
	bin = getenv("DCPI_BIN");
	if (!bin || !build)
		return 0;
	snprintf(wl, sizeof(wl), "%s/workloads/diffload", build);
	snprintf(dir, sizeof(dir), "%s/dcpi-test-diff-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (dir[0])
		tu_sh("rm -rf '%s'", dir);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * dcpidiff --json's procedures flagged significant, from file: whether
 * work_b is one (*b) and how many others there are; -1 when the output has
 * no verdicts.
 */
static int flagged(const char *file, int *b)
{
	char *js = slurp(file), *p;
	int others = 0, seen = 0;

	*b = 0;
	if (!js)
		return -1;
	for (p = strstr(js, "{\"name\": \""); p; p = strstr(p + 1, "{\"name\": \"")) {
		char *end = strchr(p, '}'), *sig = strstr(p, "\"significant\": ");

		if (!end || !sig || sig > end)
			continue;
		seen++;
		if (strncmp(sig + 15, "true", 4))
			continue;
		if (!strncmp(p + 10, "work_b\"", 7))
			*b = 1;
		else
			others++;
	}
	free(js);
	return seen ? others : -1;
}

/* One run of diffload (args) as a new epoch of database db. */
static void record(const char *db, const char *args)
{
	assert_int_equal(tu_sh("%s " RECORD " --db %s/%s -- %s %s > /dev/null 2>> %s/rec.log",
			       bin, dir, db, wl, args, dir), 0);
}

/* dcpidiff of epoch e of a and of b; the procedures it flags. */
static int diff_pair(const char *a, const char *b, int e, int *flag_b)
{
	char out[4200];

	snprintf(out, sizeof(out), "%s/%s-%s-%d.json", dir, a, b, e);
	assert_int_equal(tu_sh("%s diff %s/%s:%08d %s/%s:%08d --json --limit 0 > %s 2>> %s/diff.log",
			       bin, dir, a, e, dir, b, e, out, dir), 0);
	return flagged(out, flag_b);
}

/* How many flags PAIRS pairs of runs get: runs of diffload (a_args) into
 * database a and (b_args) into b, each pair's epochs diffed; f: pairs with
 * work_b flagged, with another procedure flagged, with either. */
struct flags {
	int b, others, any;
};

static void diff_runs(const char *a, const char *a_args, const char *b, const char *b_args,
		      struct flags *f)
{
	memset(f, 0, sizeof(*f));
	for (int e = 1; e <= PAIRS; e++) {
		int fb, n;

		record(a, a_args);
		record(b, b_args);
		n = diff_pair(a, b, e, &fb);
		assert_true(n >= 0);
		f->b += fb;
		f->others += n > 0;
		f->any += n + fb > 0;
	}
}

static void test_identical_runs(void **state)
{
	int noisy, fb;
	struct flags f;
	char out[4200];

	(void)state;
	if (!bin)
		skip();
	diff_runs("same1", "", "same2", "", &f);
	noisy = f.any;
	print_message("identical runs: %d of %d pairs with a significant change\n", noisy, PAIRS);
	assert_true(noisy <= 1);
	/* ten epochs a side: phi from their spread, and still no change */
	snprintf(out, sizeof(out), "%s/epochs.json", dir);
	assert_int_equal(tu_sh("%s diff --epochs %s/same1 %s/same2 --json > %s", bin, dir, dir,
			       out), 0);
	assert_int_equal(tu_sh("grep -q '\"phi_from\": \"epochs\"' %s", out), 0);
	assert_int_equal(flagged(out, &fb), 0);
	assert_false(fb);
}

static void test_slowdown_found(void **state)
{
	struct flags f;
	int found, others;

	(void)state;
	if (!bin)
		skip();
	/* 200 rounds a run (0.7 s): at 100, work_b's z was 3.6-4.2 against
	 * Holm's 3.2 for the first of four, and one pair in ten could miss */
	diff_runs("base", "200", "slow", "200 400000 b 20", &f);
	found = f.b;
	others = f.others;
	print_message("20%% slowdown of work_b: found in %d of %d pairs, another procedure "
		      "flagged in %d\n", found, PAIRS, others);
	/* one pair in ten may miss, as one in ten identical pairs may flag:
	 * a test at a fixed significance cannot promise every pair (a CI run's
	 * ASan stage on 2026-11-28 found it in 9 of 10) */
	assert_true(found >= PAIRS - 1);
	assert_true(others <= 2);
}

/* dcpistats over the identical runs' epochs: the first row has evidence. */
static void test_stats_rank(void **state)
{
	char out[4200], *js, *first;

	(void)state;
	if (!bin)
		skip();
	snprintf(out, sizeof(out), "%s/stats.json", dir);
	assert_int_equal(tu_sh("%s stats --db %s/same1 --json > %s", bin, dir, out), 0);
	js = slurp(out);
	assert_non_null(js);
	first = strstr(js, "{\"name\": \"");
	assert_non_null(first);
	assert_int_equal(strncmp(first + 10, "work_", 5), 0);
	free(js);
}

/* A table of the four procedures with these cpu-clock samples. */
static void synth(struct rep_table *t, struct rep_row *rows, uint64_t *counts)
{
	static char *names[4] = { "work_a", "work_b", "work_c", "work_d" };

	memset(t, 0, sizeof(*t));
	t->nevents = 1;
	t->events = calloc(1, sizeof(*t->events));
	assert_non_null(t->events);
	snprintf(t->events[0].name, sizeof(t->events[0].name), "cpu-clock");
	for (int i = 0; i < 4; i++) {
		rows[i] = (struct rep_row){ names[i], "/bin/w", 0x1000u * (unsigned)i, &counts[i] };
		t->events[0].total += counts[i];
	}
	t->rows = rows;
	t->nrows = 4;
}

static void test_overdispersed_numbers(void **state)
{
	uint64_t c[6][4] = {
		{ 3000, 2000, 2500, 2500 }, { 2650, 2300, 2850, 2200 },
		{ 2900, 2100, 2600, 2400 }, { 2700, 2250, 2800, 2250 },
		{ 2950, 2050, 2550, 2450 }, { 2800, 2200, 2700, 2300 },
	};
	struct rep_row rows[6][4];
	struct rep_table t[6];
	struct rep_diff d;
	struct dcpi_err err = { 0 };

	(void)state;
	for (int k = 0; k < 6; k++)
		synth(&t[k], rows[k], c[k]);
	/* two runs: |z| 4.4-4.8 from Poisson error in every procedure */
	assert_int_equal(rep_diff(&t[0], &t[1], "cpu-clock", &d, &err), 0);
	print_message("two runs: phi %.1f (%s), %zu significant of %zu\n", d.phi, d.phi_from,
		      d.nsig, d.ntested);
	assert_int_equal(d.ntested, 4);
	assert_int_equal(d.nsig, 0);
	assert_true(d.phi > 10);
	assert_string_equal(d.phi_from, "procedures");
	for (size_t i = 0; i < d.nrows; i++)
		assert_true(fabs(d.rows[i].z) < 3 && d.rows[i].p > 0.01);
	rep_diff_free(&d);
	/* three epochs a side, spread as much within a side as between */
	assert_int_equal(rep_diff_epochs(&t[0], 3, &t[3], 3, "cpu-clock", 0.01, &d, &err), 0);
	print_message("3 + 3 epochs: phi %.1f (%s), %zu significant\n", d.phi, d.phi_from,
		      d.nsig);
	assert_string_equal(d.phi_from, "epochs");
	assert_true(d.phi > 5);
	assert_int_equal(d.nsig, 0);
	rep_diff_free(&d);
	for (int k = 0; k < 6; k++)
		free(t[k].events);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_identical_runs),
	cmocka_unit_test(test_slowdown_found),
	cmocka_unit_test(test_stats_rank),
	cmocka_unit_test(test_overdispersed_numbers))
