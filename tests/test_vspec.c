/*
 * test_vspec.c - dcpi specialize (report/vspec.c) on databases built here:
 * value profiles of tests/workloads/valloop whose hotlists were fed known
 * streams, beside a sample profile that gives vl_walk 500 samples, vl_scale
 * 200 and main's indirect call 100 (cycles, one sample every 1000).  Checked
 * with python3 on the JSON: which candidates are listed (an argument the
 * procedure reads, not one it never touches; semi-invariant arguments
 * guarded; invariant loads; invariant non-zero strides; a target at 80%; no
 * list under --min-seen), their order by time at stake, their fields; an
 * image that is no longer the profiled one (arguments unchecked, kept); and
 * the error of a database without values.
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
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_run.h"
#include "tu_vals.h"
#include "tu_main.h"

static struct tu_vals t;
static char copy[PROF_PATH_MAX];

/* Offsets in valloop, found from its code */
static struct {
	uint64_t scale, scale_load;		/* vl_scale: entry, its load of vl_mode */
	uint64_t walk, walk_load, walk_next;	/* vl_walk: entry, its load, the next insn */
	uint64_t add, sub, site;		/* vl_add, vl_sub, main's indirect call */
} off;

/* The entry of proc and, unless insn is NULL, the first instruction with all
 * of flags (0: none) and the one after it (next, unless NULL). */
static void find_in(struct image *img, const char *proc, uint32_t flags, uint64_t *entry,
		    uint64_t *insn, uint64_t *next)
{
	struct cfg *cfg = tu_img_proc_cfg(img, proc, entry);

	if (!insn) {
		cfg_free(cfg);
		return;
	}
	for (size_t i = 0; i < cfg->ninsns; i++) {
		if ((cfg->insns[i].flags & flags) != flags)
			continue;
		assert_int_equal(img_vaddr_to_offset(img, cfg->insns[i].addr, insn), 0);
		if (next) {
			assert_true(i + 1 < cfg->ninsns);
			assert_int_equal(img_vaddr_to_offset(img, cfg->insns[i + 1].addr, next), 0);
		}
		cfg_free(cfg);
		return;
	}
	fail_msg("%s: no instruction with flags 0x%x", proc, flags);
}

static void find_offsets(void)
{
	struct dcpi_err err;
	struct image *img;
	uint64_t main_entry;

	assert_int_equal(img_open(t.wl, 0, &img, &err), 0);
	find_in(img, "vl_scale", CFG_I_LOAD, &off.scale, &off.scale_load, NULL);
	find_in(img, "vl_walk", CFG_I_LOAD, &off.walk, &off.walk_load, &off.walk_next);
	find_in(img, "vl_add", 0, &off.add, NULL, NULL);
	find_in(img, "vl_sub", 0, &off.sub, NULL, NULL);
	find_in(img, "main", CFG_I_CALL | CFG_I_INDIRECT, &main_entry, &off.site, NULL);
	img_close(img);
}

static void fill_values(struct val_profile *vp)
{
	struct val_rng r = { 4242 };

	/* vl_walk(a, n): n is always 64 (read: test %rsi); a always the same
	 * address (an object fixed for the run: no clone for it) */
	tu_val_feed(vp, &r, off.walk, VAL_ARG0 + 1, 500, 64, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.walk, VAL_ARG0, 500, 0x555555558040, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.walk_load, VAL_STRIDE, 500, 8, 1.0, 0, 0, 1);
	/* vl_scale(k, x): k 7 three times in four; x variant; rdx and rcx, which
	 * it never touches, invariant garbage; its load of vl_mode always 5,
	 * at stride 0 (one address) */
	tu_val_feed(vp, &r, off.scale, VAL_ARG0, 1000, 7, 0.75, 0, 0, 3);
	tu_val_feed(vp, &r, off.scale, VAL_ARG0 + 1, 1000, 0, 0.0, 0, 0, 500);
	tu_val_feed(vp, &r, off.scale, VAL_ARG0 + 2, 1000, 0x7fffffffe000, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.scale, VAL_ARG0 + 3, 1000, 17, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.scale, VAL_CALLSITE, 1000, VAL_CODE(0, off.site + 2), 1.0, 0, 0,
		    1);
	tu_val_feed(vp, &r, off.scale_load, VAL_LOAD, 1000, 5, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.scale_load, VAL_STRIDE, 1000, 0, 1.0, 0, 0, 1);
	/* main's indirect call: vl_add 80%, vl_sub 20% */
	{
		struct val_hotlist *h = val_profile_list(vp, off.site, VAL_TARGET);

		for (int i = 0; i < 1000; i++)
			val_hotlist_add(h, VAL_CODE(0, i % 5 ? off.add : off.sub), &r);
	}
	/* vl_add(a, b): a invariant but seen 10 times only */
	tu_val_feed(vp, &r, off.add, VAL_ARG0, 10, 3, 1.0, 0, 0, 1);
}

/* A database at dir/name for the image at image (a copy of valloop, or it). */
static void make_db(const char *name, const char *image, int values)
{
	const struct tu_at at[] = { { off.walk_load, 400 }, { off.walk_next, 100 },
				    { off.scale_load, 200 }, { off.site, 100 } };

	tu_vals_db(t.dir, name, image, at, 4, values ? fill_values : NULL);
}

static int setup(void **state)
{
	return tu_vals_setup(state, &t, "workloads/valloop", "workloads/twoprocs", "vspec");
}

static void need_db(void)
{
	if (!tu_vals_to_make(&t))
		return;
	find_offsets();
	make_db("db", t.wl, 1);
	make_db("novals", t.wl, 0);
	/* profiled from a copy that is then replaced: its code cannot be read */
	snprintf(copy, sizeof(copy), "%s/valloop-copy", t.dir);
	assert_int_equal(tu_sh("cp %s %s", t.wl, copy), 0);
	make_db("gone", copy, 1);
	assert_int_equal(tu_sh("cp %s %s", t.other, copy), 0);
}

static void test_candidates(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "specialize", "db",
		  "e = d['entries']\n"
		  "assert d['min_seen'] == 20, d\n"
		  "got = [(x['kind'], x['procedure'], x.get('argument')) for x in e]\n"
		  "assert got == [('argument', 'vl_walk', 'arg0'), ('argument', 'vl_walk', 'arg1'),\n"
		  "               ('stride', 'vl_walk', None),\n"
		  "               ('load', 'vl_scale', None), ('argument', 'vl_scale', 'arg0'),\n"
		  "               ('target', 'main', None)], got\n"
		  "st = [x['at_stake'] for x in e]\n"
		  "assert st == sorted(st, reverse=True), st\n"
		  "p, w, s, l, a, t = e\n"
		  "assert p['value'] == '0x555555558040' and p['class'] == 'invariant', p\n"
		  "assert p['name'] == 'a' and w['name'] == 'n' and a['name'] == 'k', e\n"
		  "assert p['suggestion'].startswith('a is the same address (0x555555558040) "
		  "in every call of vl_walk sampled: an object fixed for the run'), p\n"
		  "assert w['at_stake'] == 500000 and w['samples'] == 500, w\n"
		  "assert w['cycles'] == 500000 and w['at_stake_unit'] == 'cycles', w\n"
		  "assert w['register'] == 'rsi' and w['arguments_checked'] is True, w\n"
		  "assert w['value'] == '0x40' and w['value_text'] == '64', w\n"
		  "assert w['class'] == 'invariant' and w['share'] == 1 and w['seen'] == 500\n"
		  "assert w['suggestion'] == 'clone vl_walk for n == 64 "
		  "(constant-propagate it)', w\n"
		  "assert w['offset'].startswith('0x') and w['image'].endswith('/valloop'), w\n"
		  "assert w['call_sites'] == [], w\n"
		  "assert s['value'] == '0x8' and s['value_text'] == '+8', s\n"
		  "assert s['at_stake'] == 400000 and s['samples'] == 400, s\n"
		  "assert 'prefetch' in s['suggestion'] and '+8' in s['suggestion'], s\n"
		  "assert l['value_text'] == '5' and l['at_stake'] == 200000, l\n"
		  "assert l['suggestion'].startswith('the load at vl_scale+0x'), l\n"
		  "assert 'always reads 5 (100.0%)' in l['suggestion'] and not l['stack'], l\n"
		  "assert l['site'].startswith('vl_scale+0x'), l\n"
		  "assert a['register'] == 'rdi' and a['value_text'] == '7', a\n"
		  "assert a['class'] == 'semi-invariant' and abs(a['share'] - 0.75) < 0.04, a\n"
		  "assert abs(a['at_stake'] - 200000 * a['share']) < 1e-6, a\n"
		  "assert a['samples'] == 200, a\n"
		  "assert a['suggestion'] == 'guard: if (k == 7) a specialized copy, "
		  "else the general one', a\n"
		  "cs = a['call_sites']\n"
		  "assert len(cs) == 1 and cs[0]['site'].startswith('main+0x'), cs\n"
		  "assert cs[0]['share'] == 1, cs\n"
		  "assert t['value_text'] == 'vl_add' and abs(t['share'] - 0.8) < 1e-9, t\n"
		  "assert t['class'] == 'semi-invariant' and t['jump'] is False, t\n"
		  "assert abs(t['at_stake'] - 80000) < 1e-6 and t['samples'] == 100, t\n"
		  "assert t['suggestion'] == 'promote: compare the target with vl_add and "
		  "call vl_add directly (inline it)', t\n"
		  "for x in e:\n"
		  "    for k in ('kind', 'procedure', 'image', 'offset', 'value', 'value_text',\n"
		  "              'share', 'class', 'seen', 'samples', 'cycles', 'at_stake',\n"
		  "              'suggestion'):\n"
		  "        assert k in x, (k, x)");
	/* under --min-seen 5, vl_add's arg0 (10 values) comes in */
	tu_vcheck(&t, "specialize", "db --min-seen 5",
		  "x = [x for x in d['entries'] if x['procedure'] == 'vl_add']\n"
		  "assert len(x) == 1 and x[0]['argument'] == 'arg0', x\n"
		  "assert x[0]['seen'] == 10 and x[0]['at_stake'] == 0, x");
	/* PROC */
	tu_vcheck(&t, "specialize", "db vl_scale",
		  "got = [(x['kind'], x.get('argument')) for x in d['entries']]\n"
		  "assert got == [('load', None), ('argument', 'arg0')], got");
}

static void test_text(void **state)
{
	const char *txt;
	char path[PROF_PATH_MAX];

	(void)state;
	need_db();
	snprintf(path, sizeof(path), "%s/spec.txt", t.dir);
	assert_int_equal(tu_sh("%s specialize --db %s/db > %s", t.bin, t.dir, path), 0);
	txt = path;
	/* valloop has DWARF: the arguments are named after the parameters */
	assert_int_equal(tu_sh("grep -q '^2\\. argument  vl_walk n (rsi) = 64  100.0%% "
			       "invariant' %s", txt), 0);
	assert_int_equal(tu_sh("grep -q -- '-> clone vl_walk for n == 64' %s", txt), 0);
	assert_int_equal(tu_sh("grep -q -- '-> guard: if (k == 7)' %s", txt), 0);
	assert_int_equal(tu_sh("grep -q 'called from main+0x.* (100.0%%)' %s", txt), 0);
	assert_int_equal(tu_sh("grep -q -- '-> promote: compare the target with vl_add' %s",
			       txt), 0);
	assert_int_equal(tu_sh("! grep -q '(rdx)\\|(rcx)\\|vl_add a (' %s", txt), 0);
	/* --min-seen is specialize's alone */
	assert_int_not_equal(tu_sh("%s vargs --db %s/db --min-seen 3 2> /dev/null", t.bin, t.dir),
			     0);
	assert_int_not_equal(tu_sh("%s specialize --db %s/db --min-seen x 2> /dev/null", t.bin,
				   t.dir), 0);
}

static void test_unchecked(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "specialize", "gone",
		  "a = [x for x in d['entries'] if x['kind'] == 'argument']\n"
		  "assert a and all(x['arguments_checked'] is False for x in a), a\n"
		  "regs = sorted(x['register'] for x in a)\n"
		  "assert regs == ['rcx', 'rdi', 'rdi', 'rdx', 'rsi'], regs");
	assert_int_equal(tu_sh("grep -q 'no longer the profiled image' %s/err.txt", t.dir), 0);
	assert_int_equal(tu_sh("%s specialize --db %s/gone 2> /dev/null | grep -q "
			       "'arguments not checked'", t.bin, t.dir), 0);
}

static void test_errors(void **state)
{
	(void)state;
	need_db();
	tu_vals_errors(&t, "specialize", "");
}

TU_MAIN(setup, tu_vals_teardown,
	cmocka_unit_test(test_candidates),
	cmocka_unit_test(test_text),
	cmocka_unit_test(test_unchecked),
	cmocka_unit_test(test_errors))
