/*
 * test_lbr_peer.c - branch records as counts on a real program with line
 * tables that we did not write, against AutoFDO's create_llvm_prof on the
 * same perf.data and against callgrind's exact counts of the same run
 * (docs/import.md, "A real program with line tables").  The program is
 * zlib's examples/enough.c (Debian's zlib1g-dev ships it), built -O2 -g:
 * it is single-stepped under ptrace from main, calls into libc running
 * freely (tests/tu_lbr.h), and 16-entry stacks of its taken branches are
 * written as a perf.data.  `dcpi import --binary` and `dcpi llvm-prof`
 * then must agree with create_llvm_prof: every procedure with at least 1%
 * of the total within 5%, every line of the hottest procedure with at
 * least 5% of its hottest line within 10%; and with callgrind line by line
 * (llvm-prof --exact).  Skipped, saying why, when enough.c, valgrind or
 * create_llvm_prof is not installed.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tu_lbr.h"
#include "tu_main.h"

#define ENOUGH_SRC "/usr/share/doc/zlib1g-dev/examples/enough.c"
/* 25 symbols, root 6, lengths to 10: 0.36 M instructions of its own, ~10 s stepped */
#define ARGS "25", "6", "10"
#define ARGS_TEXT "25 6 10"
#define PERIOD 24		/* taken branches between stacks: most are in one */

static char tmpdir[256], prog[PATH_MAX], dcpi[600];
static const char *missing;	/* what is not installed, or NULL */
static struct tu_lbr run;

/* main's address in prog, from nm. */
static uint64_t main_addr(void)
{
	unsigned long long a = 0;
	FILE *p = tu_popen("nm '%s' | awk '$3 == \"main\" { print $1 }'", prog);

	assert_int_equal(fscanf(p, "%llx", &a), 1);
	pclose(p);
	return a;
}

static int setup(void **state)
{
	const char *d = getenv("DCPI_BIN");

	(void)state;
	if (access(ENOUGH_SRC, R_OK))
		missing = ENOUGH_SRC " (zlib1g-dev's examples)";
	else if (tu_sh("command -v create_llvm_prof >/dev/null 2>&1"))
		missing = "create_llvm_prof (apt-get install autofdo)";
	else if (tu_sh("command -v valgrind >/dev/null 2>&1"))
		missing = "valgrind";
	if (missing)
		return 0;
	if (tu_workspace(tmpdir, sizeof(tmpdir), "lbr-peer"))
		return -1;
	snprintf(dcpi, sizeof(dcpi), "%s", d ? d : "build/dcpi");
	if (access(dcpi, X_OK))
		return -1;
	setenv("DCPI_MEASURE", "0", 1);
	/* DWARF 4: AutoFDO 0.19 does not read DWARF 5's line tables; -z now:
	 * no lazy binding, so a call into libc returns where tu_lbr.h expects */
	snprintf(prog, sizeof(prog), "%s/enough", tmpdir);
	if (tu_sh("cc -O2 -gdwarf-4 -no-pie -Wl,-z,now -o '%s' '" ENOUGH_SRC "'", prog))
		return -1;
	tu_lbr_trace(&run, prog, (char *const[]){ prog, ARGS, NULL }, main_addr());
	print_message("enough " ARGS_TEXT ": %zu instructions stepped, %zu taken branches\n",
		      run.steps, run.n);
	return run.n > 20000 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(run.brs);
	if (tmpdir[0])
		tu_rm_unless_kept(tmpdir);
	return 0;
}

/* The hottest procedure of p. */
static const char *hottest(const struct tu_sprof *p)
{
	size_t h = 0;

	assert_true(p->nfns > 0);
	for (size_t i = 1; i < p->nfns; i++)
		if (p->totals[i] > p->totals[h])
			h = i;
	return p->fns[h];
}

static void test_against_autofdo(void **state)
{
	static struct tu_sprof ours, peer, exact;
	char data[700], path[700];
	const char *hot;
	size_t stacks, n;

	(void)state;
	if (missing) {
		print_message("%s is not installed: skipped\n", missing);
		skip();
	}
	/* recorded where it was built elsewhere: --binary finds it by name */
	snprintf(data, sizeof(data), "%s/lbr.data", tmpdir);
	stacks = tu_lbr_write_perf(&run, data, "/build/zlib/examples/enough", NULL, PERIOD);
	tu_lbr_perf_script(data, stacks);
	assert_int_equal(tu_sh("'%s' import --db '%s/db' --binary '%s' '%s' >'%s/import.txt' 2>&1",
			       dcpi, tmpdir, prog, data, tmpdir), 0);
	assert_int_equal(tu_sh("grep -q '%zu branch stacks' '%s/import.txt'", stacks, tmpdir), 0);
	assert_int_equal(tu_sh("grep -q 'found at %s (--binary' '%s/import.txt'", prog, tmpdir),
			 0);
	/* every range decoded from the file --binary found */
	assert_int_equal(tu_sh("grep -qE ' ([0-9]+) of \\1 straight-line ranges decoded' "
			       "'%s/import.txt'", tmpdir), 0);
	assert_int_equal(tu_sh("'%s' llvm-prof --db '%s/db' -o '%s/ours.prof' '%s' 2>/dev/null",
			       dcpi, tmpdir, tmpdir, prog), 0);
	assert_int_equal(tu_sh("cd '%s' && create_llvm_prof --binary '%s' --profile '%s' "
			       "--format=text --out peer.prof >peer.log 2>&1", tmpdir, prog, data),
			 0);
	tu_lbr_exact(dcpi, tmpdir, prog, ARGS_TEXT, &exact);
	snprintf(path, sizeof(path), "%s/ours.prof", tmpdir);
	tu_read_prof(path, &ours);
	snprintf(path, sizeof(path), "%s/peer.prof", tmpdir);
	tu_read_prof(path, &peer);

	hot = hottest(&peer);
	tu_lbr_against_peer(&ours, &peer, hot);
	n = tu_compare_lines(&ours, &exact, hot, 1, 0.10);
	assert_true(n >= 5);
	print_message("%s: %zu lines within 10%% of callgrind's exact counts\n", hot, n);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_against_autofdo))
