/*
 * tests/test_dsys.c - the kernel's transfers into and out of heap blocks,
 * counted exactly (collect/pathrt_io.c, collect/datarec.c, profile/data.c,
 * report/mem.c; docs/data.md, "Kernel transfers").
 *
 * Unit: a data profile with kernel transfers round-trips (version 2),
 * rejects damage, merges by summing; one without them is written as
 * version 1, as before.  End to end on tests/workloads/memobj_io.c: the
 * bytes read(2), pread(2), readv(2) and fread's direct part put into the
 * blocks of five sites, and write(2) took from one, equal in `dcpi mem
 * --json` what the workload's return values say, byte for byte; a site's
 * later small blocks (eight 512-byte blocks one after another) count too.
 * The weighting by estimated executions (report/mem_weight.c) gives
 * memobj's objects their constructed 5:3:2.
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
	struct data_entry e = { .k = { DATA_HEAP, 0, 0x40, 64 }, .insn = 0x1000, .accesses = 2,
				.loads = 2, .mask = 0xff, .size = 8192 };

	tu_mem_prog(p);
	assert_int_equal(data_profile_add(p, &e), 0);
	for (uint64_t i = 0; i < 6; i++) {
		struct data_kio x = { .k = { DATA_HEAP, 0, 0x40 + 0x10 * ((i + seed) % 3), 0 },
				      .calls = 1, .in = 100 * i + seed, .out = i % 2 };

		if (i % 2)
			x.k.tag = (uint32_t)data_profile_tag(p, &other);
		assert_int_equal(data_profile_kio(p, &x), 0);
	}
	assert_int_equal(data_normalize(p), 0);
}

static void test_codec(void **state)
{
	struct data_profile p, q;

	(void)state;
	fill(&p, 1);
	assert_true(p.nk > 0 && p.nk <= 6);
	tu_mem_roundtrip(&p, &q, 2, 1);	/* version 2: kernel transfers held */
	data_profile_free(&q);
	p.nk = 0;			/* none: version 1, as before */
	tu_mem_roundtrip(&p, &q, 1, 1);
	assert_int_equal(q.nk, 0);
	data_profile_free(&q);
	data_profile_free(&p);
}

static void test_merge(void **state)
{
	struct data_profile a, b, acc;
	struct dcpi_err err = { 0 };
	uint64_t in = 0, in_acc = 0;

	(void)state;
	fill(&a, 1);
	fill(&b, 2);
	for (size_t i = 0; i < a.nk; i++)
		in += a.kio[i].in;
	for (size_t i = 0; i < b.nk; i++)
		in += b.kio[i].in;
	data_profile_init(&acc);
	acc.image = a.image;
	assert_int_equal(data_profile_merge(&acc, &a, &err), 0);
	assert_int_equal(data_profile_merge(&acc, &b, &err), 0);
	for (size_t i = 0; i < acc.nk; i++)
		in_acc += acc.kio[i].in;
	assert_true(acc.nk <= 6);
	assert_int_equal(in_acc, in);
	data_profile_free(&a);
	data_profile_free(&b);
	data_profile_free(&acc);
}

/* The counted bytes per site equal the workload's, exactly. */
static void test_exact(void **state)
{
	char cmd[1800];

	(void)state;
	assert_int_equal(tu_sh("head -c 300000 /dev/urandom > %s/in", ws), 0);
	snprintf(cmd, sizeof(cmd), "%s %s/in %s/out", wl, ws, ws);
	tu_record_into(bin, ws, "io", "--paths 200:16", cmd);
	tu_mem_check(bin, ws, "io", "--top 100",
		"import re\n"
		"exact = exact_of('io')\n"
		"got = {}\n"
		"for o in d['objects']:\n"
		"    m = re.search(r'allocated at (alloc_[a-e])\\+', o['name'])\n"
		"    if o['kind'] == 'heap' and m:\n"
		"        got[m.group(1)] = (o['kernel_in'], o['kernel_out'])\n"
		"print('exact', exact, 'counted', got, file=sys.stderr)\n"
		"assert got == exact, (got, exact)\n"
		"tot = sum(i + o for i, o in exact.values())\n"
		"assert d['kernel_bytes'] == tot, d['kernel_bytes']\n");
}

/* memobj objects: every load runs once a round, so weighted by executions
 * hot_a, hot_b and the table take 5:3:2 of the bytes; --with-syscalls
 * refuses relative executions (recorded with --no-calibrate). */
static void test_weighted(void **state)
{
	char memobj[600], cmd[700];

	(void)state;
	snprintf(memobj, sizeof(memobj), "%.500s/workloads/memobj", getenv("DCPI_BUILD"));
	snprintf(cmd, sizeof(cmd), "%s objects 2", memobj);
	tu_record_into(bin, ws, "obj", "--paths 200:64", cmd);
	tu_mem_check(bin, ws, "obj", "--top 100 --weighted",
		"assert d['weighting'] == 'executions', d['weighting']\n"
		"got = {}\n"
		"for o in d['objects']:\n"
		"    k = o['name'] if o['kind'] == 'global' else ('table' if o['kind'] == 'heap' "
		"and o['size'] == 65536 else None)\n"
		"    if k in ('hot_a', 'hot_b', 'table'):\n"
		"        got[k] = got.get(k, 0) + o['weighted_bytes']\n"
		"assert len(got) == 3, got\n"
		"shares_close({'hot_a': 50, 'hot_b': 30, 'table': 20}, got)\n");
	assert_int_not_equal(tu_sh("%s mem --db %s/obj --with-syscalls > /dev/null 2> %s/ws.err",
				   bin, ws, ws), 0);
	assert_int_equal(tu_sh("grep -q 'relative' %s/ws.err", ws), 0);
}

static int setup(void **state)
{
	(void)state;
	return tu_run_setup(&bin, wl, sizeof(wl), "memobj_io", ws, sizeof(ws), "dsys");
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_codec),
	cmocka_unit_test(test_merge),
	cmocka_unit_test(test_exact),
	cmocka_unit_test(test_weighted))
