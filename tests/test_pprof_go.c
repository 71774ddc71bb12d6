/*
 * tests/test_pprof_go.c - `dcpi export --pprof` read back by Go's own
 * reader: `go tool pprof -top` (Debian's golang-go) over the exported file
 * gives, function by function, the samples dcpiprof gives (report/pprof.c,
 * tools/cmd_export.c).  dcpiprof counts per procedure, so pprof is asked to
 * fold inlined frames into their procedure (-noinlines).  Go's caches and
 * home are inside the test's folder; without `go` the test skips.
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

#include "tu_run.h"
#include "tu_main.h"

static const char *bin;
static char ws[400], wl[600], wl2[600];

/* Reads dcpiprof --json (argv[1]) and go tool pprof -top (argv[2]); sums
 * dcpiprof's procedures by name and compares with pprof's flat column. */
static const char compare_py[] =
	"import json, re, sys\n"
	"d = json.load(open(sys.argv[1]))\n"
	"ev = d['events'][0]\n"
	"want = {}\n"
	"for r in d['procedures']:\n"
	"    want[r['name']] = want.get(r['name'], 0) + r['samples'][ev]\n"
	"got, on = {}, False\n"
	"for line in open(sys.argv[2]):\n"
	"    if re.match(r'^\\s+flat\\s+flat%', line):\n"
	"        on = True\n"
	"        continue\n"
	"    m = re.match(r'^\\s*(\\d+)samples\\s+\\S+\\s+\\S+\\s+\\d+samples\\s+\\S+\\s+(.*)$', line)\n"
	"    if on and m:\n"
	"        got[m.group(2)] = got.get(m.group(2), 0) + int(m.group(1))\n"
	"if not got or got != want or sum(got.values()) != d['total'][ev]:\n"
	"    for k in sorted(set(want) | set(got)):\n"
	"        if want.get(k) != got.get(k):\n"
	"            print('%s: dcpiprof %s, pprof %s' % (k, want.get(k), got.get(k)))\n"
	"    sys.exit('pprof -top differs from dcpiprof')\n"
	"print('%d functions, %d samples: pprof -top equals dcpiprof' % (len(got), d['total'][ev]))\n";

static int have_go(void)
{
	return tu_sh("command -v go >/dev/null 2>&1") == 0;
}

static int group_setup(void **state)
{
	(void)state;
	if (tu_run_setup(&bin, wl, sizeof(wl), "demo_work", ws, sizeof(ws), "pprof-go") < 0)
		return -1;
	tu_build_file(wl2, sizeof(wl2), "workloads/cpubound");
	return 0;
}

/* `go tool pprof -top` of file into out, Go's state kept inside ws. */
static int pprof_top(const char *file, const char *out)
{
	return tu_sh("cd '%1$s' && HOME='%1$s/home' GOCACHE='%1$s/gocache' GOPATH='%1$s/gopath' "
		     "GOFLAGS= GOTOOLCHAIN=local go tool pprof -top -noinlines -nodecount=1000000 "
		     "-nodefraction=0 '%2$s' > '%3$s' 2> '%1$s/pprof.err' || "
		     "{ cat '%1$s/pprof.err' >&2; exit 1; }", ws, file, out);
}

static void compare(const char *epoch)
{
	char py[600], pb[600], top[600], json[600];
	FILE *f;

	snprintf(py, sizeof(py), "%s/compare.py", ws);
	snprintf(pb, sizeof(pb), "%s/%s.pb.gz", ws, epoch);
	snprintf(top, sizeof(top), "%s/%s.top", ws, epoch);
	snprintf(json, sizeof(json), "%s/%s.json", ws, epoch);
	f = fopen(py, "w");
	assert_non_null(f);
	fputs(compare_py, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(tu_sh("'%s' export --pprof --db '%s/db' --epoch %s -o '%s' 2>/dev/null",
			       bin, ws, epoch, pb), 0);
	assert_int_equal(tu_sh("'%s' prof --db '%s/db' --epoch %s --json > '%s'", bin, ws, epoch,
			       json), 0);
	assert_int_equal(pprof_top(pb, top), 0);
	if (tu_sh("python3 '%s' '%s' '%s' >&2", py, json, top))
		fail_msg("epoch %s: go tool pprof -top differs from dcpiprof (%s)", epoch, top);
}

/*
 * Two recordings (demo_work, then cpubound) as two epochs: each epoch, and
 * both together, exported and read by go tool pprof: its -top per function
 * equals dcpiprof's, and so does the total.
 */
static void test_pprof_top_equals_dcpiprof(void **state)
{
	(void)state;
	if (!have_go()) {
		print_message("go is not installed (Debian's golang-go): nothing reads the "
			      "pprof file back\n");
		skip();
	}
	assert_int_equal(tu_sh("mkdir '%1$s/home' && '%2$s' record --db '%1$s/db' -- '%3$s' "
			       ">/dev/null 2>&1 && '%2$s' record --db '%1$s/db' -- '%4$s' "
			       ">/dev/null 2>&1", ws, bin, wl, wl2), 0);
	compare("00000001");
	compare("00000002");
	compare("all");
}

TU_MAIN(group_setup, tu_run_teardown,
	cmocka_unit_test(test_pprof_top_equals_dcpiprof))
