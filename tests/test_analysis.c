/*
 * test_analysis.c - one analysis (estimate/analyze.c): on one recording of
 * tests/workloads/consist (a loop, a branch taken a third of the time, an
 * inlined helper, a call), dcpicalc, dcpilist, dcpicfg (JSON and DOT),
 * dcpidiff's executed instructions, llvm-prof's line counts and bolt-prof's
 * edge counts for `hot` are the same numbers (tests/consistency.py compares
 * them); and a second dcpicalc prints what the first printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tu_main.h"

static char dir[4096];
static const char *bin, *src;
static char wl[4096];

static int setup(void **state)
{
	const char *build = getenv("DCPI_BUILD");

	bin = getenv("DCPI_BIN");
	src = getenv("DCPI_SRC");
	if (!bin || !build || !src)
		return 0;
	snprintf(wl, sizeof(wl), "%s/workloads/consist", build);
	if (tu_ws_setup(state, dir, sizeof(dir), "analysis"))
		return -1;
	/* 150 million iterations: about 0.6 s, a few thousand samples */
	return tu_sh("%s record --db %s/db -- %s > %s/record.log 2>&1", bin, dir, wl, dir) ? -1
												   : 0;
}

static void test_tools_agree(void **state)
{
	(void)state;
	tu_need_run(bin != NULL);
	assert_int_equal(tu_sh("cd %s && %s calc hot --db db --json > calc.json", dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && %s list hot --db db --json > list.json", dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && %s cfg hot --db db --json > cfg.json", dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && %s cfg hot --db db --all > cfg.dot", dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && %s llvm-prof --db db --lines %s -o - > llvm.prof "
			       "2> llvm.log", dir, bin, wl), 0);
	assert_int_equal(tu_sh("cd %s && %s bolt-prof --db db %s -o - > bolt.fdata 2> bolt.log",
			       dir, bin, wl), 0);
	assert_int_equal(tu_sh("cd %s && %s diff db db --json > diff.json", dir, bin), 0);
	assert_int_equal(tu_sh("python3 %s/tests/consistency.py hot %s", src, dir), 0);
}

/* The same command twice on one database: the same output, byte for byte
 * (sandbox timings are taken once and cached, estimate/measured.c). */
static void test_repeatable(void **state)
{
	(void)state;
	if (!bin)
		skip();
	assert_int_equal(tu_sh("cd %s && %s calc hot --db db > a.txt 2>&1 && "
			       "%s calc hot --db db > b.txt 2>&1 && cmp -s a.txt b.txt", dir, bin,
			       bin), 0);
	assert_int_equal(tu_sh("cd %s && %s llvm-prof --db db %s -o - > a.prof 2>/dev/null && "
			       "%s llvm-prof --db db %s -o - > b.prof 2>/dev/null && "
			       "cmp -s a.prof b.prof", dir, bin, wl, bin, wl), 0);
}

/* Each analysing command's --help names the command itself. */
static void test_own_usage(void **state)
{
	(void)state;
	if (!bin)
		skip();
	assert_int_equal(tu_sh("%s list --help | head -1 | grep -q 'usage: dcpi list'", bin), 0);
	assert_int_equal(tu_sh("%s cfg --help | head -1 | grep -q 'usage: dcpi cfg'", bin), 0);
	assert_int_equal(tu_sh("%s calc --help | head -1 | grep -q 'usage: dcpi calc'", bin), 0);
	/* and every one takes the analysis options */
	assert_int_equal(tu_sh("%s list --help | grep -q -- '--no-measure'", bin), 0);
	assert_int_equal(tu_sh("%s llvm-prof --help | grep -q -- '--scale'", bin), 0);
	assert_int_equal(tu_sh("%s prefetch-hints --help | grep -q -- '--steady'", bin), 0);
}

/* A CPU with no model file: the first analysis measures one (dcpi calibrate
 * --model's fit), says so, writes it where later runs find it and uses it;
 * the second run reads the file and prints the same numbers; --no-calibrate
 * and DCPI_NO_CALIBRATE=1 leave the shipped table. */
static void test_auto_model(void **state)
{
	(void)state;
	if (!bin)
		skip();
	assert_int_equal(tu_sh("cd %s && mkdir -p models && DCPI_MODEL_DIR=%s/models "
			       "%s calc hot --db db --no-calibrate > s.txt 2> s.log && "
			       "grep -q 'the shipped table' s.txt && ! grep -q measuring s.log && "
			       "test -z \"$(ls models)\"", dir, dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && env -u DCPI_NO_CALIBRATE DCPI_MODEL_DIR=%s/models "
			       "%s calc hot --db db --no-measure > a.txt 2> a.log", dir, dir, bin), 0);
	assert_int_equal(tu_sh("cd %s && grep -q 'measuring its instruction costs now' a.log && "
			       "grep -q 'measured now on this CPU, written to' a.log && "
			       "ls models/*.model > /dev/null && ! grep -q 'the shipped table' a.txt",
			       dir), 0);
	assert_int_equal(tu_sh("cd %s && env -u DCPI_NO_CALIBRATE DCPI_MODEL_DIR=%s/models "
			       "%s calc hot --db db --no-measure > b.txt 2> b.log && "
			       "! grep -q measuring b.log && cmp -s a.txt b.txt", dir, dir, bin), 0);
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_tools_agree),
	cmocka_unit_test(test_repeatable),
	cmocka_unit_test(test_own_usage),
	cmocka_unit_test(test_auto_model))
