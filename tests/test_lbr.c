/*
 * test_lbr.c - branch records as counts (docs/import.md "Branch records are
 * counts", estimate/lbr_counts.c) and images found elsewhere
 * (image/locate.c), on a perf.data built byte by byte from a real program's
 * exact control flow: tests/workloads/lbrwork is single-stepped under
 * ptrace, every taken branch that touches it is kept in order, and 16-entry
 * stacks are sampled from that sequence every ~200 taken branches (a taken-
 * branch event, raw 0x20c4), so the counts are known by construction.
 * callgrind's exact counts of the same run, and AutoFDO's create_llvm_prof
 * on the same file where it is installed, are the references.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "testutil.h"
#include "tu_lbr.h"

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/import.h"
#include "tu_main.h"

#define LW_N "60000"		/* lw_hot's iterations */
#define PERIOD 200

static char tmpdir[256], work[PATH_MAX], dcpi[600];
static struct tu_lbr run;	/* lbrwork's taken branches */

/* --- the tests ----------------------------------------------------------------- */

static int setup(void **state)
{
	const char *src = getenv("DCPI_SRC"), *d = getenv("DCPI_BIN");

	(void)state;
	if (tu_workspace(tmpdir, sizeof(tmpdir), "lbr"))
		return -1;
	/* DWARF 4: AutoFDO 0.19's reader does not know DWARF 5's line tables */
	snprintf(work, sizeof(work), "%s/lbrwork", tmpdir);
	if (tu_sh("cc -std=gnu11 -O2 -gdwarf-4 -fno-omit-frame-pointer -fno-inline -no-pie -o '%s' "
		  "'%s/tests/workloads/lbrwork.c'", work, src ? src : "."))
		return -1;
	snprintf(dcpi, sizeof(dcpi), "%s", d ? d : "build/dcpi");
	if (access(dcpi, X_OK))
		return -1;
	setenv("DCPI_MEASURE", "0", 1);
	tu_lbr_trace(&run, work, (char *const[]){ work, LW_N, NULL }, 0);
	return run.n > 100000 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(run.brs);
	tu_rm_unless_kept(tmpdir);
	return 0;
}

/*
 * The recorded file is not here: the note names it and what it cost, and
 * no range is decoded; --binary finds it by file name, perf's build-id
 * cache (--buildid-dir) by its build-id, and the profiles name where.
 */
static void test_images_elsewhere(void **state)
{
	char data[700], out[700], bid[sizeof(((struct prof_image_id *)0)->build_id)];
	struct prof_image_id id;
	struct dcpi_err err;
	uint8_t raw[20];

	(void)state;
	snprintf(data, sizeof(data), "%s/gone.data", tmpdir);
	tu_lbr_write_perf(&run, data, "/nonexistent/build/lbrwork", NULL, PERIOD);
	snprintf(out, sizeof(out), "%s/gone.txt", tmpdir);
	assert_int_equal(tu_sh("'%s' import --db '%s/gonedb' '%s' >'%s' 2>&1", dcpi, tmpdir, data,
			       out), 0);
	assert_int_equal(tu_sh("grep -q 'not found: /nonexistent/build/lbrwork (.* samples "
			       "unnamed, [1-9][0-9]* ranges not decoded' '%s'", out), 0);
	assert_int_equal(tu_sh("grep -q ' 0 of [0-9]* straight-line ranges decoded' '%s'", out),
			 0);
	assert_int_equal(tu_sh("'%s' import --db '%s/bindb' --binary '%s' '%s' >'%s' 2>&1", dcpi,
			       tmpdir, work, data, out), 0);
	assert_int_equal(tu_sh("grep -q 'found at %s (--binary, by file name' '%s'", work, out),
			 0);
	assert_int_equal(tu_sh("grep -q 'not found' '%s'", out), 256);
	assert_int_equal(tu_sh("grep -q '^# image %s$' '%s'/bindb/*/*.lbr-counts", work, tmpdir),
			 0);

	/* by build-id, from perf's cache layout */
	assert_int_equal(prof_image_id_from_file(&id, work, &err), 0);
	assert_int_equal(strlen(id.build_id), 40);
	for (int i = 0; i < 20; i++) {
		unsigned v;

		sscanf(id.build_id + 2 * i, "%2x", &v);
		raw[i] = (uint8_t)v;
	}
	snprintf(bid, sizeof(bid), "%s", id.build_id);
	assert_int_equal(tu_sh("mkdir -p '%s/cache/.build-id/%.2s/%s' && cp '%s' "
			       "'%s/cache/.build-id/%.2s/%s/elf'", tmpdir, bid, bid + 2, work,
			       tmpdir, bid, bid + 2), 0);
	tu_lbr_write_perf(&run, data, "/nonexistent/build/lbrwork", raw, PERIOD);
	assert_int_equal(tu_sh("'%s' import --db '%s/cachedb' --buildid-dir '%s/cache' '%s' "
			       ">'%s' 2>&1", dcpi, tmpdir, tmpdir, data, out), 0);
	assert_int_equal(tu_sh("grep -q '(build-id cache)' '%s'", out), 0);
	assert_int_equal(tu_sh("grep -q 'not found' '%s'", out), 256);
}

/*
 * Counts from the stacks against callgrind's exact counts of the same run,
 * line by line through the same writer (llvm-prof --exact), and against
 * create_llvm_prof on the same file when it is installed.
 */
static void test_counts_exact(void **state)
{
	char data[700], out[700];
	static struct tu_sprof lbr, exact, peer;
	size_t stacks, n;
	const char *hot = "lw_hot";

	(void)state;
	snprintf(data, sizeof(data), "%s/lbr.data", tmpdir);
	stacks = tu_lbr_write_perf(&run, data, work, NULL, PERIOD);
	snprintf(out, sizeof(out), "%s/import.txt", tmpdir);
	assert_int_equal(tu_sh("'%s' import --db '%s/db' '%s' >'%s' 2>&1", dcpi, tmpdir, data,
			       out), 0);
	assert_int_equal(tu_sh("grep -q '%zu branch stacks' '%s'", stacks, out), 0);
	/* lbrwork, libc and ld.so: the branches between them count for each */
	assert_int_equal(tu_sh("grep -q 'counts: branch records of 3 images (raw-4-20c4 every "
			       "200)' '%s'", out), 0);
	tu_lbr_perf_script(data, stacks);
	tu_lbr_exact(dcpi, tmpdir, work, LW_N, &exact);
	assert_int_equal(tu_sh("'%s' llvm-prof --db '%s/db' -o '%s/lbr.prof' '%s' 2>'%s'", dcpi,
			       tmpdir, tmpdir, work, out), 0);
	assert_int_equal(tu_sh("grep -q 'counts: branch records (%zu stacks)' '%s'", stacks, out),
			 0);
	assert_int_equal(tu_sh("grep -q uncalibrated '%s'", out), 256);
	assert_int_equal(tu_sh("'%s' calc --db '%s/db' '%s' 2>/dev/null | grep -q "
			       "'^counts: branch records (%zu stacks)$'", dcpi, tmpdir, hot, stacks),
			 0);
	snprintf(out, sizeof(out), "%s/lbr.prof", tmpdir);
	tu_read_prof(out, &lbr);
	n = tu_compare_lines(&lbr, &exact, hot, 1, 0.10);
	assert_true(n >= 5);
	print_message("lw_hot: %zu lines within 10%% of callgrind's exact counts\n", n);

	if (tu_sh("command -v create_llvm_prof >/dev/null 2>&1")) {
		print_message("create_llvm_prof is not installed (apt-get install autofdo): "
			      "the comparison with AutoFDO is skipped\n");
		return;
	}
	assert_int_equal(tu_sh("create_llvm_prof --binary '%s' --profile '%s' --format=text "
			       "--out '%s/peer.prof' >/dev/null 2>&1", work, data, tmpdir), 0);
	snprintf(out, sizeof(out), "%s/peer.prof", tmpdir);
	tu_read_prof(out, &peer);
	/* before the kernel's MMAP came first in the file it wrote no function
	 * (tu_lbr.h) */
	tu_lbr_against_peer(&lbr, &peer, hot);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_images_elsewhere),
	cmocka_unit_test(test_counts_exact))
