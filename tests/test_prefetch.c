/*
 * test_prefetch.c - dcpi prefetch-hints (optimize/prefetch.c) on
 * tests/workloads/strided: one key of each 4160-byte record, a page-crossing
 * constant stride the hardware prefetchers do not follow.  Its profile is
 * built here, so the answer is known: exact executions by construction
 * (records x passes per outer iteration, six inner iterations each) and
 * samples of one cycle per execution plus a stall of 300 cycles per
 * iteration where a waiting load's samples land (the next instruction).
 * Whether this machine's caches stall there is the bench's question
 * (bench/feedback/prefetch.sh), not this test's.  The hint must name the
 * load, its stride and a delta of a whole number of strides; llvm-profdata
 * must read the file, and clang must put a prefetch before the load where
 * it is installed.  Below --min-share no file is written and the report
 * says why; bad options give clear errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_main.h"

#define RECORDS 20000
#define PASSES 2000
#define STALL 300		/* cycles each iteration waits after the load */

static char dir[256];

/* walk runs PASSES times; its outer loop RECORDS x PASSES times, the inner
 * six times as often */
static const double by_depth[3] = { PASSES, (double)RECORDS * PASSES,
				    6.0 * RECORDS * PASSES };
static uint64_t load_addr;

static int setup(void **state)
{
	const char *build = getenv("DCPI_BUILD");
	char db[PROF_PATH_MAX], wl[1024];

	(void)state;
	if (!build)
		return 0;
	if (tu_workspace(dir, sizeof(dir), "prefetch"))
		return -1;
	snprintf(wl, sizeof(wl), "%s/workloads/strided", build);
	/* rec: STALL more cycles per iteration on the instruction after the
	 * loop's load, where the samples of a load that waits land */
	snprintf(db, sizeof(db), "%s/rec", dir);
	load_addr = tu_stalled_db(db, wl, "walk", by_depth, STALL * by_depth[1]);
	snprintf(db, sizeof(db), "%s/exact", dir);
	tu_exact_db(db, wl, "walk", by_depth);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (dir[0])
		tu_sh("rm -rf %s", dir);
	return 0;
}

static int have_tools(void)
{
	if (!getenv("DCPI_BIN") || !getenv("DCPI_BUILD")) {
		print_message("DCPI_BIN/DCPI_BUILD unset: run through tests/run.sh\n");
		return 0;
	}
	return 1;
}

/* The value of "key": in the first line of file holding "hinted": true. */
static long long field(const char *file, const char *key)
{
	char line[4096], pat[64];
	long long v = -1;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, pat);

		if (p && strstr(line, "\"hinted\": true")) {
			v = strtoll(p + strlen(pat) + (p[strlen(pat)] == '"'), NULL, 0);
			break;
		}
	}
	fclose(f);
	return v;
}

static void test_hint_from_exact_counts(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	long long stride, delta, dist, addr;

	(void)state;
	if (!have_tools())
		skip();
	assert_int_equal(tu_sh("%s prefetch-hints --db %s/rec --exact %s/exact %s/workloads/strided "
			       "-o %s/h.afdo --json > %s/h.json 2> %s/h.log", bin, dir, dir, build,
			       dir, dir, dir), 0);
	stride = field(tu_in(dir, "h.json"), "stride");
	delta = field(tu_in(dir, "h.json"), "delta");
	dist = field(tu_in(dir, "h.json"), "distance");
	addr = field(tu_in(dir, "h.json"), "address");
	print_message("hint: load 0x%llx stride %lld distance %lld delta %lld\n", addr, stride,
		      dist, delta);
	assert_int_equal(stride, 4160);
	assert_true(dist >= 1 && dist <= 64);
	assert_int_equal(delta, dist * stride);
	assert_int_equal((uint64_t)addr, load_addr);
	/* the file names walk with the delta */
	assert_int_equal(tu_sh("grep -q '^walk:' %s/h.afdo && grep -q '__prefetch_t0_0:%lld$' "
			       "%s/h.afdo", dir, delta, dir), 0);
	if (tu_sh("llvm-profdata-19 --version > /dev/null 2>&1") == 0)
		assert_int_equal(tu_sh("llvm-profdata-19 show --sample %s/h.afdo 2>&1 | "
				       "grep -q 'calls: __prefetch_t0_0:%lld'", dir, delta), 0);
}

/* clang puts prefetcht0 delta(address) before the load. */
static void test_clang_applies(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *src = getenv("DCPI_SRC");
	const char *cc = NULL;

	(void)state;
	if (!have_tools() || !src)
		skip();
	if (tu_sh("clang-19 --version > /dev/null 2>&1") == 0)
		cc = "clang-19";
	else if (tu_sh("clang --version > /dev/null 2>&1") == 0)
		cc = "clang";
	if (!cc) {
		print_message("no clang: skipped\n");
		skip();
	}
	/* the profiling build: discriminators on memory operands */
	assert_int_equal(tu_sh("%s -O2 -g -fdebug-info-for-profiling -mllvm -x86-discriminate-memops "
			       "%s/tests/workloads/strided.c -o %s/sc 2> %s/cc.log", cc, src, dir,
			       dir), 0);
	{
		char db[PROF_PATH_MAX], wl[PROF_PATH_MAX];

		snprintf(wl, sizeof(wl), "%s/sc", dir);
		snprintf(db, sizeof(db), "%s/rec2", dir);
		tu_stalled_db(db, wl, "walk", by_depth, STALL * by_depth[1]);
		snprintf(db, sizeof(db), "%s/exact2", dir);
		/* clang unrolls the inner loop: walk has one loop level */
		tu_exact_db(db, wl, "walk", (const double[]){ PASSES, (double)RECORDS * PASSES,
							      (double)RECORDS * PASSES });
	}
	assert_int_equal(tu_sh("%s prefetch-hints --db %s/rec2 --exact %s/exact2 %s/sc "
			       "-o %s/h2.afdo > %s/h2.txt 2>&1", bin, dir, dir, dir, dir, dir), 0);
	assert_int_equal(tu_sh("%s -O2 -g -fdebug-info-for-profiling -mllvm -x86-discriminate-memops "
			       "-mllvm -prefetch-hints-file=%s/h2.afdo %s/tests/workloads/strided.c "
			       "-o %s/sch 2>> %s/cc.log", cc, dir, src, dir, dir), 0);
	assert_int_equal(tu_sh("objdump -d %s/sch | grep -q prefetcht0", dir), 0);
	assert_int_not_equal(tu_sh("objdump -d %s/sc | grep -q prefetcht0", dir), 0);
}

/* A load charged with less than --min-share gets no hint: no file, and a
 * report and a note that say so. */
static void test_no_hint_below_share(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");

	(void)state;
	if (!have_tools())
		skip();
	assert_int_equal(tu_sh("%s prefetch-hints --db %s/rec --exact %s/exact --min-share 0.99 "
			       "%s/workloads/strided -o %s/e.afdo > %s/e.txt 2> %s/e.log", bin, dir,
			       dir, build, dir, dir, dir), 0);
	assert_int_not_equal(tu_sh("test -e %s/e.afdo", dir), 0);
	assert_int_equal(tu_sh("grep -q 'no prefetch hint' %s/e.log && grep -q '0 hinted' %s/e.txt",
			       dir, dir), 0);
}

static void test_bad_options(void **state)
{
	const char *bin = getenv("DCPI_BIN");

	(void)state;
	if (!have_tools())
		skip();
	assert_int_not_equal(tu_sh("%s prefetch-hints --db %s/rec --min-share 2 -o %s/x 2> %s/b.log",
				   bin, dir, dir, dir), 0);
	assert_int_equal(tu_sh("grep -q 'min-share 2' %s/b.log", dir), 0);
	assert_int_not_equal(tu_sh("%s prefetch-hints --db %s/rec --exact %s/nonexistent -o %s/x "
				   "2> %s/b.log", bin, dir, dir, dir, dir), 0);
	assert_int_equal(tu_sh("grep -q 'nonexistent' %s/b.log && ! test -e %s/x", dir, dir), 0);
	/* a database that is not a callgrind run's */
	assert_int_not_equal(tu_sh("%s prefetch-hints --db %s/rec --exact %s/rec -o %s/x 2> %s/b.log",
				   bin, dir, dir, dir, dir), 0);
	assert_int_equal(tu_sh("grep -q 'no callgrind-Ir' %s/b.log", dir), 0);
	assert_int_not_equal(tu_sh("%s prefetch-hints --db %s/rec 2> /dev/null", bin, dir), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_hint_from_exact_counts),
	cmocka_unit_test(test_clang_applies),
	cmocka_unit_test(test_no_hint_below_share),
	cmocka_unit_test(test_bad_options))
