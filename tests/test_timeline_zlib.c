/*
 * tests/test_timeline_zlib.c - phases of a real program against two
 * truths: tests/workloads/zround.c (zlib, linked statically, compresses a
 * 4 MB text corpus, then decompresses it 60 times) recorded by dcpi record
 * and read back by dcpiprof --phases.  The boundary's truth is the
 * program's own instrumented times; the phases' top procedures' truth is
 * callgrind's exclusive instruction counts of a smaller run split by
 * --dump-before=compress_phase --dump-before=decompress_phase: the top two
 * of each phase's core (without its edge slices, which hold both phases:
 * up to 0.1 s of inflate_fast passed deflate_slow's 3% of the compression
 * before) are the truth's.  Figures in docs/phases.md, "A real program".
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dcpi/timeline.h"
#include "tu_run.h"
#include "tu_slices.h"
#include "tu_main.h"

/*
 * argv: the --phases JSON, the truth file, t0 (the reports' time 0 in
 * seconds of CLOCK_MONOTONIC), the callgrind dumps.  Each dump's exclusive
 * Ir per function (names compressed across the dumps of one run: read in
 * order), its phase from its trigger line.
 */
static const char check_py[] =
	"import json, re, sys\n"
	"names = {}\n"
	"def selfcost(path):\n"
	"    cost, fn, skip, trig = {}, None, False, ''\n"
	"    for line in open(path):\n"
	"        if skip:\n"
	"            skip = False\n"
	"            continue\n"
	"        if line.startswith('desc: Trigger:'):\n"
	"            trig = line\n"
	"        m = re.match(r'(c?fn)=\\((\\d+)\\)(?: (.*))?', line)\n"
	"        if m:\n"
	"            if m.group(3):\n"
	"                names[m.group(2)] = m.group(3).strip()\n"
	"            if m.group(1) == 'fn':\n"
	"                fn = names[m.group(2)]\n"
	"            continue\n"
	"        if line.startswith('calls='):\n"
	"            skip = True\n"
	"            continue\n"
	"        m = re.match(r'(?:[+-]?\\d+|\\*)\\s+(\\d+)', line)\n"
	"        if m and fn is not None:\n"
	"            cost[fn] = cost.get(fn, 0) + int(m.group(1))\n"
	"    return trig, cost\n"
	"phase_of = {'compress_phase': 'start-up', 'decompress_phase': 'compress'}\n"
	"truth_top = {}\n"
	"for p in sys.argv[4:]:\n"
	"    trig, cost = selfcost(p)\n"
	"    m = re.search(r'dump-before=(\\w+)', trig)\n"
	"    ph = phase_of[m.group(1)] if m else 'decompress'\n"
	"    truth_top[ph] = [k for k, v in sorted(cost.items(), key=lambda x: -x[1])[:2]]\n"
	"d = json.load(open(sys.argv[1]))\n"
	"t0 = float(sys.argv[3])\n"
	"tr = {}\n"
	"for line in open(sys.argv[2]):\n"
	"    n, a, b = line.split()\n"
	"    tr[n] = (int(a) / 1e9 - t0, int(b) / 1e9 - t0)\n"
	"ph = [p for p in d['phases'] if p['top'][0]['name'] not in ('main', 'make_corpus')]\n"
	"assert len(ph) == 2, d\n"
	"print('# truth (callgrind) top 2:', truth_top['compress'], truth_top['decompress'])\n"
	"for p, name in zip(ph, ('compress', 'decompress')):\n"
	"    got = [t['name'] for t in p['top'][:2]]\n"
	"    print('# %s: %.3f-%.3f s, truth %.3f-%.3f s; top 2 %s' % (name, p['start'], p['end'],\n"
	"          tr[name][0], tr[name][1], got))\n"
	"    assert set(got) == set(truth_top[name]), (name, got, truth_top[name])\n"
	"b = ph[1]['start']\n"
	"assert abs(b - tr['decompress'][0]) <= 0.1, (b, tr)\n";

static void test_zround(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX], db[PATH_MAX + 8], py[PATH_MAX + 16];
	const char *bin;
	FILE *f;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "zround", ws, sizeof(ws), "zround"),
			 0);
	if (tu_sh("command -v valgrind >/dev/null 2>&1")) {
		print_message("no valgrind: callgrind gives the truth; skipped\n");
		tu_rm_tree(ws);
		skip();
	}
	snprintf(db, sizeof(db), "%s/db", ws);
	assert_int_equal(tu_sh("DCPI_PHASES_OUT=%s/truth %s record --no-calibrate --db %s -- %s "
			       ">/dev/null 2>%s/record.err", ws, bin, db, wl, ws), 0);
	assert_int_equal(tu_sh("%s prof --db %s --phases --json >%s/phases.json", bin, db, ws), 0);
	/* the same code, a smaller run: 1 MB, one compression, four decompressions */
	assert_int_equal(tu_sh("cd %s && valgrind --tool=callgrind --dump-before=compress_phase "
			       "--dump-before=decompress_phase --callgrind-out-file=%s/cg.out %s "
			       "1 4 1 >/dev/null 2>%s/cg.err", ws, ws, wl, ws), 0);
	snprintf(py, sizeof(py), "%s/check.py", ws);
	f = fopen(py, "w");
	assert_non_null(f);
	fputs(check_py, f);
	fclose(f);
	if (tu_sh("python3 %s %s/phases.json %s/truth %.9f %s/cg.out.1 %s/cg.out.2 %s/cg.out", py,
		  ws, ws, tu_first_slice(db), ws, ws, ws))
		fail_msg("zround: phases or their top procedures differ from the truth");
	tu_rm_tree(ws);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_zround))
