/*
 * test_vreports.c - the value reports (report/values.c, report/vreports.c:
 * dcpivlist, dcpivargs, dcpivcg, dcpivblks) on a database built here: value
 * profiles of tests/workloads/twoprocs whose hotlists were fed known value
 * streams (seeded), beside a sample profile that puts 3x the time in proc_a.
 * The commands' JSON is checked with python3: top values and shares within
 * a tolerance, classes, ordering by time, code values named across images;
 * and the errors: an epoch without values, a corrupt .values file.
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

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_run.h"
#include "tu_vals.h"
#include "tu_main.h"

static struct tu_vals t;

/* Offsets used, found from the image */
static struct {
	uint64_t a_entry, a_insn, b_entry, b_insn, main_site, main_ret1, main_ret2;
	uint64_t other_entry;	/* mix_chain in demo_work */
} off;

/* The offset of proc's instruction k, and of its entry when entry is not NULL. */
static uint64_t insn_off(struct image *img, const char *proc, size_t k, uint64_t *entry)
{
	uint64_t o, e;
	struct cfg *cfg = tu_img_proc_cfg(img, proc, &e);

	assert_true(cfg->ninsns > k);
	assert_int_equal(img_vaddr_to_offset(img, cfg->insns[k].addr, &o), 0);
	if (entry)
		*entry = e;
	cfg_free(cfg);
	return o;
}

static void find_offsets(void)
{
	struct dcpi_err err;
	struct image *img;

	assert_int_equal(img_open(t.wl, 0, &img, &err), 0);
	off.a_insn = insn_off(img, "proc_a", 2, &off.a_entry);
	off.b_insn = insn_off(img, "proc_b", 2, &off.b_entry);
	off.main_site = insn_off(img, "main", 3, NULL);
	off.main_ret1 = insn_off(img, "main", 5, NULL);
	off.main_ret2 = insn_off(img, "main", 7, NULL);
	img_close(img);
	assert_int_equal(img_open(t.other, 0, &img, &err), 0);
	insn_off(img, "mix_chain", 0, &off.other_entry);
	img_close(img);
}

static void fill_values(struct val_profile *vp)
{
	struct val_rng r = { 12345 };
	struct prof_image_id oid;
	struct dcpi_err err;
	int tag;

	assert_int_equal(prof_image_id_from_file(&oid, t.other, &err), 0);
	tag = val_profile_image_tag(vp, &oid);
	assert_true(tag == 1);
	/* proc_a's hot instruction: result invariant (0.95), load semi (0.6) */
	tu_val_feed(vp, &r, off.a_insn, VAL_RESULT, 1000, 5, 0.95, 0, 0, 4);
	tu_val_feed(vp, &r, off.a_insn, VAL_LOAD, 1000, 42, 0.6, 0, 0, 8);
	/* proc_b's: variant, over 200 values */
	tu_val_feed(vp, &r, off.b_insn, VAL_RESULT, 2000, 7, 0.0, 0, 0, 200);
	/* entries: proc_a's arg0 3 (0.97), arg1 always 1000000; proc_b's arg0 7
	 * (0.55) seen more often than any of proc_a's, yet proc_a comes first */
	tu_val_feed(vp, &r, off.a_entry, VAL_ARG0, 1000, 3, 0.97, 0, 0, 4);
	tu_val_feed(vp, &r, off.a_entry, VAL_ARG0 + 1, 1000, 1000000, 1.0, 0, 0, 1);
	tu_val_feed(vp, &r, off.a_entry, VAL_CALLSITE, 1000, VAL_CODE(0, off.main_ret1), 0.7,
		    VAL_CODE(0, off.main_ret2), 0.3, 1);
	tu_val_feed(vp, &r, off.b_entry, VAL_ARG0, 5000, 7, 0.55, 0, 0, 12);
	tu_val_feed(vp, &r, off.b_entry, VAL_CALLSITE, 5000, VAL_CODE(0, off.main_ret2), 1.0,
		    0, 0, 1);
	/* an indirect site in main: proc_a 0.7, demo_work's mix_chain 0.2, no image 0.1 */
	tu_val_feed(vp, &r, off.main_site, VAL_TARGET, 1000, VAL_CODE(0, off.a_entry), 0.7,
		    VAL_CODE(tag, off.other_entry), 0.2, 1);
	/* (spread 1: the rest is 1000, remapped to VAL_CODE_NONE below) */
	{
		struct val_hotlist *h = val_profile_list(vp, off.main_site, VAL_TARGET);

		for (uint32_t i = 0; i < h->n; i++)
			if (h->t[i].value == 1000)
				h->t[i].value = VAL_CODE_NONE;
	}
}

/* A database at dir/name: 300 samples on proc_a's instruction, 100 on
 * proc_b's (cycles, one sample every 1000), and the values when asked. */
static void make_db(const char *name, int values)
{
	const struct tu_at at[] = { { off.a_insn, 300 }, { off.b_insn, 100 } };

	tu_vals_db(t.dir, name, t.wl, at, 2, values ? fill_values : NULL);
}

static int setup(void **state)
{
	return tu_vals_setup(state, &t, "workloads/twoprocs", "workloads/demo_work", "vreports");
}

static void need_db(void)
{
	if (!tu_vals_to_make(&t))
		return;
	find_offsets();
	make_db("db", 1);
	make_db("novals", 0);
}

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(rep_val_classify(1.0), REP_VAL_INV);
	assert_int_equal(rep_val_classify(REP_VAL_INVARIANT), REP_VAL_INV);
	assert_int_equal(rep_val_classify(0.89), REP_VAL_SEMI);
	assert_int_equal(rep_val_classify(REP_VAL_SEMI_INVARIANT), REP_VAL_SEMI);
	assert_int_equal(rep_val_classify(0.49), REP_VAL_VARIANT);
	assert_string_equal(rep_val_class_name(REP_VAL_SEMI), "semi-invariant");
}

static void test_vlist(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "vlist", "db proc_a",
		  "ins = d['instructions']\n"
		  "assert d['procedure'] == 'proc_a' and d['samples'] == 300, d\n"
		  "assert d['cycles'] == 300000, d['cycles']\n"
		  "hot = [i for i in ins if i['samples'] == 300]\n"
		  "assert len(hot) == 1, ins\n"
		  "ls = {l['kind']: l for l in hot[0]['lists']}\n"
		  "r, ld = ls['result'], ls['load']\n"
		  "assert r['values'][0]['text'] == '5', r\n"
		  "assert abs(r['top_share'] - 0.95) < 0.03, r\n"
		  "assert r['class'] == 'invariant' and r['distinct'] == 5, r\n"
		  "assert ld['values'][0]['text'] == '42' and abs(ld['top_share'] - 0.6) < 0.05\n"
		  "assert ld['class'] == 'semi-invariant' and len(ld['values']) == 4, ld\n"
		  "assert hot[0]['text'], hot\n"
		  "ent = [i for i in ins if any(l['kind'] == 'arg0' for l in i['lists'])]\n"
		  "assert len(ent) == 1 and ent[0]['samples'] == 0, ins");
	tu_vcheck(&t, "vlist", "db proc_b",
		  "r = [l for i in d['instructions'] for l in i['lists']\n"
		  "     if l['kind'] == 'result']\n"
		  "assert len(r) == 1 and r[0]['class'] == 'variant', r\n"
		  "assert r[0]['top_share'] < 0.1 and r[0]['seen'] == 2000, r");
	/* the DCPI name, as text */
	assert_int_equal(tu_sh("%s/dcpivlist --db %s/db proc_a > %s/vlist.txt && "
			       "grep -q 'result .* invariant .*5 (9[4-6]\\.[0-9]%%)' %s/vlist.txt "
			       "&& "
			       "grep -q 'semi-invariant' %s/vlist.txt", getenv("DCPI_BUILD"),
			       t.dir, t.dir, t.dir, t.dir), 0);
}

static void test_vargs(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "vargs", "db",
		  "ps = d['procedures']\n"
		  "assert [p['name'] for p in ps] == ['proc_a', 'proc_b'], ps\n"
		  "a, b = ps\n"
		  "assert a['samples'] == 300 and b['samples'] == 100 and b['calls'] == 5000\n"
		  "args = {x['arg']: x for x in a['args']}\n"
		  "assert args[0]['values'][0]['text'] == '3', args\n"
		  "assert abs(args[0]['top_share'] - 0.97) < 0.02 and args[0]['class'] == "
		  "'invariant'\n"
		  "assert args[1]['values'][0]['value'] == hex(1000000) and args[1]['top_share'] "
		  "== 1\n"
		  "cs = a['callsites']\n"
		  "assert cs[0]['text'].startswith('main+0x'), cs\n"
		  "assert abs(cs[0]['share'] - 0.7) < 0.04, cs\n"
		  "assert cs[1]['text'].startswith('main+0x'), cs\n"
		  "assert cs[0]['text'] != cs[1]['text'], cs\n"
		  "b0 = b['args'][0]\n"
		  "assert b0['class'] == 'semi-invariant', b0\n"
		  "assert abs(b0['top_share'] - 0.55) < 0.04, b0\n"
		  "assert b['callsites'][0]['share'] == 1, b");
	tu_vcheck(&t, "vargs", "db proc_b",
		  "assert [p['name'] for p in d['procedures']] == ['proc_b'], d");
	/* twoprocs has DWARF: proc_a(x, n) names its registers */
	assert_int_equal(tu_sh("%s/dcpivargs --db %s/db | grep -q '  n (rsi) *1000000 .*100.0%%  "
			       "invariant'", getenv("DCPI_BUILD"), t.dir), 0);
}

static void test_vcg(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "vcg", "db",
		  "s = d['sites']\n"
		  "assert len(s) == 1 and s[0]['site'].startswith('main+0x'), s\n"
		  "assert s[0]['samples'] == 0 and s[0]['cycles'] == 0, s\n"
		  "t = s[0]['values']\n"
		  "assert t[0]['text'] == 'proc_a' and abs(t[0]['share'] - 0.7) < 0.04, t\n"
		  "assert t[1]['text'] == 'mix_chain (demo_work)', t\n"
		  "assert t[1]['image'].endswith('/demo_work'), t\n"
		  "assert abs(t[1]['share'] - 0.2) < 0.04, t\n"
		  "assert t[2]['text'] == '[no image]' and t[2]['image'] is None, t");
	tu_vcheck(&t, "vcg", "db proc_a", "assert d['sites'] == [], d");
}

static void test_vblks(void **state)
{
	(void)state;
	need_db();
	tu_vcheck(&t, "vblks", "db proc_a",
		  "bs = d['blocks']\n"
		  "assert len(bs) >= 2, bs\n"
		  "hot = [b for b in bs if b['samples'] == 300]\n"
		  "assert len(hot) == 1, bs\n"
		  "h = hot[0]\n"
		  "assert h['invariant'] >= 1 and h['semi_invariant'] >= 1, h\n"
		  "assert h['top'][0]['class'] == 'invariant', h\n"
		  "assert sum(b['with_values'] for b in bs) == 2, bs\n"
		  "assert sum(b['lists'] for b in bs) == 5, bs");
}

static void test_errors(void **state)
{
	char cmd[PROF_PATH_MAX];

	(void)state;
	need_db();
	tu_vals_errors(&t, "vlist", "proc_a");
	/* a .values file cut short: the error names it */
	assert_int_equal(tu_sh("cp -r %s/db %s/bad && f=$(ls %s/bad/*/*.values) && "
			       "head -c 40 $f > $f.t && mv $f.t $f", t.dir, t.dir, t.dir), 0);
	snprintf(cmd, sizeof(cmd), "%s vargs --db %s/bad > /dev/null 2> %s/err.txt", t.bin, t.dir,
		 t.dir);
	assert_int_not_equal(tu_sh("%s", cmd), 0);
	assert_int_equal(tu_sh("grep -q '%s/bad/.*\\.values' %s/err.txt", t.dir, t.dir), 0);
}

TU_MAIN(setup, tu_vals_teardown,
	cmocka_unit_test(test_classify),
	cmocka_unit_test(test_vlist),
	cmocka_unit_test(test_vargs),
	cmocka_unit_test(test_vcg),
	cmocka_unit_test(test_vblks),
	cmocka_unit_test(test_errors))
