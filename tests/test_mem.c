/*
 * tests/test_mem.c - data profiles (include/dcpi/data.h, profile/data.c,
 * collect/datarec.c, report/mem.c; docs/data.md).
 *
 * Unit: the codec round-trips, rejects damage, and merges associatively
 * and commutatively to the same bytes.  End to end on
 * tests/workloads/memobj.c: `dcpi mem` ranks hot_a, hot_b and the heap
 * table as their exact counts do (printed by the workload, 5:3:2 by
 * construction) with shares within 5 points; two threads on neighbouring
 * counters of one line are false sharing, the padded layout shows none,
 * one counter of both threads is true sharing.  `memobj sites`: three heap
 * call sites (a 2 KB context under the runtime's size threshold, a table, a
 * buffer per thread filled by `rep movsb`) get their bytes' shares and
 * ranking as constructed and, where valgrind is installed, as DHAT counts
 * them (bench/data/dhat_compare.py).  dcpicalc names the object of each
 * load in memobj's objects().  A thread created with every signal blocked
 * is sampled as the other, in proportion to its CPU time (`memobj masked`).
 * A read-modify-write counts its bytes twice, read and written (`memobj
 * rmw`).  Loops of different speeds (`memobj speeds`) are weighed by the
 * executions the second run's plan counted (report/mem_weight.c).
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

#include "dcpi/data.h"
#include "tu_main.h"
#include "tu_mem.h"
#include "tu_run.h"

static const char *bin;
static char wl[512], ws[256];

static void fill(struct data_profile *p, uint64_t seed)
{
	struct prof_image_id other = { .path = "/lib/other.so", .size = 7, .mtime = 9 };

	tu_mem_prog(p);
	for (uint64_t i = 0; i < 50; i++) {
		uint64_t x = (i * 2654435761u + seed * 97) % 37;
		struct data_entry e = { .k = { DATA_IMAGE, 0, 0, x * 64 }, .insn = 0x1000 + x % 5,
					.accesses = 1 + i % 3, .loads = 1 + i % 3,
					.mask = 0xffULL << (x % 8) };

		if (x % 4 == 1) {
			e.k.space = DATA_HEAP;
			e.k.tag = (uint32_t)data_profile_tag(p, &other);
			e.k.base = 0x40;
			e.size = 8192 + seed;
		}
		if (x % 4 == 2)
			e.stores = 1;
		assert_int_equal(data_profile_add(p, &e), 0);
	}
	struct data_share s = { .k = { DATA_IMAGE, 0, 0, 0x40 * (seed % 3) }, .seen = 4,
				.true_w = seed % 2, .false_w = 2, .mask_a = 0xff, .mask_b = 0xff00 };
	assert_int_equal(data_profile_share(p, &s), 0);
	assert_int_equal(data_normalize(p), 0);
}

static void encode(const struct data_profile *p, uint8_t **b, size_t *n)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(data_encode(p, b, n, &err), 0);
}

static void test_codec(void **state)
{
	struct data_profile p, q;

	(void)state;
	fill(&p, 1);
	tu_mem_roundtrip(&p, &q, 1, 7);
	assert_int_equal(q.nimgs, 1);
	data_profile_free(&q);
	data_profile_free(&p);
}

static void merged(int order, uint8_t **b, size_t *n)
{
	struct data_profile v[3], acc;
	struct dcpi_err err = { 0 };
	static const int ord[2][3] = { { 0, 1, 2 }, { 2, 0, 1 } };

	for (int i = 0; i < 3; i++)
		fill(&v[i], (uint64_t)i + 1);
	data_profile_init(&acc);
	acc.image = v[0].image;
	for (int i = 0; i < 3; i++)
		assert_int_equal(data_profile_merge(&acc, &v[ord[order][i]], &err), 0);
	encode(&acc, b, n);
	for (int i = 0; i < 3; i++)
		data_profile_free(&v[i]);
	data_profile_free(&acc);
}

static void test_merge_order(void **state)
{
	uint8_t *a, *b;
	size_t n, m;

	(void)state;
	merged(0, &a, &n);
	merged(1, &b, &m);
	assert_int_equal(n, m);
	assert_memory_equal(a, b, n);
	free(a);
	free(b);
}

static int setup(void **state)
{
	(void)state;
	return tu_run_setup(&bin, wl, sizeof(wl), "memobj", ws, sizeof(ws), "mem");
}

static int teardown(void **state)
{
	(void)state;
	tu_rm_tree(ws);
	return 0;
}

/* `memobj ARGS` recorded into ws/db with `record --paths PATHS`. */
static void record(const char *db, const char *paths, const char *args)
{
	char cmd[1200], opts[100];

	snprintf(cmd, sizeof(cmd), "%s %s", wl, args);
	snprintf(opts, sizeof(opts), "--paths %s", paths);
	tu_record_into(bin, ws, db, opts, cmd);
}

static void test_objects(void **state)
{
	(void)state;
	record("obj", "200:64", "objects 2");
	tu_mem_check(bin, ws, "obj", "",
		"exact = exact_of('obj')\n"
		"names = {'hot_a': 'hot_a', 'hot_b': 'hot_b', 'table': 'heap block allocated at main'}\n"
		"got = {}\n"
		"for o in d['objects']:\n"
		"    for k, n in names.items():\n"
		"        if o['name'].startswith(n): got[k] = o['accesses']\n"
		"assert len(got) == 3, got\n"
		"assert sum(got.values()) >= 1000, got\n"
		"shares_close(exact, got)\n"
		"rank = sorted(got, key=lambda k: -got[k])\n"
		"assert rank == sorted(exact, key=lambda k: -exact[k]), rank\n"
		"assert d['objects'][0]['kind'] == 'global' and d['objects'][0]['instructions']\n"
		"assert any(p['object'] == 'hot_a' for p in d['pages'])\n");
}

/* The sharing entries naming object obj must be of class want ("" none). */
static void sharing(const char *mode, const char *obj, const char *want)
{
	char py[1024];

	record(mode, "200:64", strcmp(mode, "padded") ? (strcmp(mode, "true") ? "false 1.5" :
						   "true 1.5") : "padded 1.5");
	snprintf(py, sizeof(py),
		 "s = [x for x in d['sharing'] if x['object'] == '%s']\n"
		 "print(s, file=sys.stderr)\n"
		 "want = '%s'\n"
		 "if not want:\n"
		 "    assert not s, s\n"
		 "else:\n"
		 "    assert len(s) == 1 and s[0]['class'] == want, s\n"
		 "    w = s[0]['true_windows'] if want == 'true' else s[0]['false_windows']\n"
		 "    assert w >= 3, s\n"
		 "    assert s[0]['instructions'] and 'worker' in s[0]['instructions'][0]['site']\n"
		 "    if want == 'false':\n"
		 "        assert s[0]['bytes_a'] == '+0x0..+0x7' and s[0]['bytes_b'] == '+0x8..+0xf', s\n"
		 "        assert 'pad' in s[0]['suggestion']\n",
		 obj, want);
	tu_mem_check(bin, ws, mode, "", py);
}

static void test_false_sharing(void **state)
{
	(void)state;
	sharing("false", "pair", "false");
}

static void test_padded(void **state)
{
	(void)state;
	sharing("padded", "padded", "");
}

static void test_true_sharing(void **state)
{
	(void)state;
	sharing("true", "shared", "true");
}

/*
 * Heap sites by bytes (accesses times their size, as DHAT counts): the
 * context (2 KB, first block of its site), the table and the per-thread
 * buffers (written by rep movsb) at 18%, 45%, 36% by construction.
 */
static void test_sites(void **state)
{
	char cmd[3000];

	(void)state;
	record("sites", "1000:64", "sites 40000000");
	tu_mem_check(bin, ws, "sites", "--top 100",
		"exact = exact_of('sites')\n"
		"by_size = {2048: 'ctx', 65536: 'table', 8192: 'buf'}\n"
		"got = {}\n"
		"for o in d['objects']:\n"
		"    if o['kind'] == 'heap' and o['size'] in by_size:\n"
		"        got[by_size[o['size']]] = o['bytes']\n"
		"assert len(got) == 3, got\n"
		"shares_close(exact, got)\n"
		"assert sorted(got, key=lambda k: -got[k]) == ['table', 'buf', 'ctx'], got\n");
	if (tu_sh("command -v valgrind > /dev/null")) {
		fprintf(stderr, "valgrind not installed: no DHAT comparison\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "valgrind --tool=dhat --dhat-out-file=%s/sites.dhat %s sites "
		 "200000 > /dev/null 2> %s/dhat.err && python3 %s/bench/data/dhat_compare.py "
		 "--dhat %s/sites.dhat --db %s/sites --image %s --dcpi %s --top 3 >&2",
		 ws, wl, ws, getenv("DCPI_SRC") ? getenv("DCPI_SRC") : ".", ws, ws, wl, bin);
	assert_int_equal(tu_sh("%s", cmd), 0);
}

/*
 * A read-modify-write moves its operand twice (read, then written back), as
 * DHAT counts it: `memobj rmw` adds in place to one table and loads from
 * another, equally often, so their bytes are 2:1 (16 and 8 a round).
 * Before report/mem.c's entry_bytes, both had 8 bytes an access: 50:50.
 * `--insns 1` lists one instruction per object, its bytes beside.
 */
static void test_rmw(void **state)
{
	(void)state;
	record("rmw", "1000:64", "rmw 400000000");
	tu_mem_check(bin, ws, "rmw", "--top 100 --insns 1",
		"exact = exact_of('rmw')\n"
		"got = {}\n"
		"for o in d['objects']:\n"
		"    if o['kind'] != 'heap' or 'allocated at rmw+' not in o['name']: continue\n"
		"    assert len(o['instructions']) == 1, o\n"
		"    got['rw' if o['stores'] else 'ro'] = o['bytes']\n"
		"    assert o['instructions'][0]['bytes'] == o['bytes'], o\n"
		"    assert o['bytes'] == 8 * (o['loads'] + o['stores']), o\n"
		"assert len(got) == 2, got\n"
		"assert sum(got.values()) >= 8000, got\n"
		"shares_close(exact, got)\n");
}

/*
 * A thread created with every signal blocked (as xz's mythread_create
 * does) is sampled like the other (collect/pathrt.c, unblock_ours): each
 * loads its own 64 KB table equally often.  Before, the blocked thread had
 * no burst and its table no access.  Bursts follow each thread's CPU time
 * (a timer on it), not its loads: a thread that shares its vCPU with the
 * collector runs slower and gets more (CI runs read 58.1% and 60.1% for
 * one of two equal threads).  So each table's share is held to 5 points of
 * its thread's share of CPU time, which the workload prints, and each
 * thread to at least a fifth of the accesses.  The first call site
 * (memobj.c masked: m[0]'s table, allocated first) is the open thread's.
 */
static void test_masked_thread(void **state)
{
	(void)state;
	record("masked", "1000:64", "masked 200000000");
	tu_mem_check(bin, ws, "masked", "--top 100",
		"exact = exact_of('masked')\n"
		"got = sorted((int(o['name'].split('+')[-1], 16), o['accesses']) for o in d['objects']\n"
		"             if o['kind'] == 'heap' and 'allocated at masked+' in o['name'])\n"
		"print(exact, got, file=sys.stderr)\n"
		"assert exact['open'] == exact['masked'], exact\n"
		"assert len(got) == 2, got\n"
		"gt = got[0][1] + got[1][1]\n"
		"assert gt >= 1000, gt\n"
		"cpu = exact['cpu_open'] + exact['cpu_masked']\n"
		"for (site, n), t in zip(got, ('cpu_open', 'cpu_masked')):\n"
		"    share, want = 100.0 * n / gt, 100.0 * exact[t] / cpu\n"
		"    print(t, 'CPU time %.1f%% accesses %.1f%%' % (want, share), file=sys.stderr)\n"
		"    assert abs(share - want) <= 5 and share >= 20, (site, share, want)\n");
}

/*
 * `memobj speeds`: a fast loop over two tables (the second in an if's arm)
 * holds 82% of the bytes and a few percent of the time, a chase through
 * 32 MB the rest, so the step samples, which start where time goes, give
 * the tables a few percent of the accesses.  The first run's plan counts a
 * class of each loop that holds 1% of the sampled accesses (report/plan.c
 * plan_data); in the second run `dcpi mem --weighted` then gives the fast
 * table its executions exactly (its load is in the counted class), the
 * arm's table the loop's measured ratio of executions to accesses, and all
 * three shares within 5 points of the bytes the workload counts, and says
 * that most of its weighted accesses are measured (none in the first run,
 * `weighted_measured`).  Without
 * the counts (the first run), weighed by estimated executions, the tables
 * read 1.8% and 0.3% (73% and 9% exact) in one run here.
 */
static void test_speeds_counted(void **state)
{
	const char *check =
		"exact = exact_of('speeds')\n"
		"by_size = {16384: 'fa', 32768: 'fb', 33554432: 'chase'}\n"
		"got, acc = {}, {}\n"
		"for o in d['objects']:\n"
		"    if o['kind'] == 'heap' and o['size'] in by_size:\n"
		"        got[by_size[o['size']]] = o['weighted_bytes']\n"
		"        acc[by_size[o['size']]] = o['weighted_accesses']\n"
		"assert len(got) == 3, got\n"
		"print(got, acc, file=sys.stderr)\n";
	char py[2048];

	(void)state;
	record("speeds", "1000:64", "speeds 4000000");
	assert_int_equal(tu_sh("grep -q '^block [0-9]* [0-9a-f]* count=.* speeds+' "
			       "%s/speeds/00000001/plan.txt", ws), 0);
	snprintf(py, sizeof(py), "%sassert d['weighted_measured'] == 0, d['weighted_measured']\n",
		 check);
	tu_mem_check(bin, ws, "speeds", "--weighted --epoch 00000001 --top 100", py);
	record("speeds", "1000:64 --plan auto", "speeds 4000000");
	snprintf(py, sizeof(py), "%s"
		 "assert abs(acc['fa'] - exact['fa'] / 8) <= 0.01 * exact['fa'] / 8, acc\n"
		 "assert d['weighted_measured'] >= 0.8, d['weighted_measured']\n"
		 "shares_close(exact, got)\n"
		 "assert sorted(got, key=lambda k: -got[k]) == ['fa', 'chase', 'fb'], got\n", check);
	tu_mem_check(bin, ws, "speeds", "--weighted --epoch 00000002 --top 100", py);
}

/* dcpicalc names the object of each load of objects(): hot_a five times,
 * hot_b three, the heap table twice, in the text and in --json. */
static void test_calc_objects(void **state)
{
	char args[600], db[300];

	(void)state;
	snprintf(db, sizeof(db), "%s/obj", ws);
	if (access(db, F_OK))
		record("obj", "200:64", "objects 2");
	snprintf(args, sizeof(args), "calc --db %s objects", db);
	tu_check_json(bin, ws, args,
		"n = {}\n"
		"for i in d['instructions']:\n"
		"    o = i['object']\n"
		"    if o is None: continue\n"
		"    k = o['name'] if o['kind'] != 'heap' else 'heap'\n"
		"    assert o['share'] >= 0.9 and o['accesses'] > 0, i\n"
		"    if k != 'heap' or 'at main' in o['name']: n[k] = n.get(k, 0) + 1\n"
		"print(n, file=sys.stderr)\n"
		"assert n.get('hot_a') == 5 and n.get('hot_b') == 3 and n.get('heap') == 2, n\n");
	assert_int_equal(tu_sh("%s calc --db %s objects > %s/calc.txt 2>&1 && "
			       "test $(grep -c -- '-> hot_a, ' %s/calc.txt) = 5 && "
			       "test $(grep -c -- '-> hot_b, ' %s/calc.txt) = 3 && "
			       "test $(grep -c -- '-> heap block allocated at main' %s/calc.txt) = 2",
			       bin, db, ws, ws, ws, ws), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_codec),
	cmocka_unit_test(test_merge_order),
	cmocka_unit_test(test_objects),
	cmocka_unit_test(test_false_sharing),
	cmocka_unit_test(test_padded),
	cmocka_unit_test(test_true_sharing),
	cmocka_unit_test(test_sites),
	cmocka_unit_test(test_calc_objects),
	cmocka_unit_test(test_masked_thread),
	cmocka_unit_test(test_rmw),
	cmocka_unit_test(test_speeds_counted))
