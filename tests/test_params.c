/*
 * test_params.c - a procedure's formal parameters from DWARF (image/dwarf.c's
 * img_params) and the reports that name argument registers after them
 * (report/vreports.c's dcpivargs, report/vspec.c's dcpi specialize).
 *
 * tests/workloads/params.c is compiled here with gcc -g -O1 -fno-inline (and
 * once without -g: no DWARF).  img_params must give each procedure's
 * parameters with the System V registers: none; int and pointer in rdi and
 * rsi; int, double, long in rdi, xmm0, rsi; a 16-byte struct in rdi and rsi;
 * a 40-byte struct in memory; a returned 40-byte struct's hidden pointer in
 * rdi.  Then value profiles with all six argument registers fed at the
 * entries (as the runtime records them) must show only the parameters'
 * registers, named, and without DWARF all six, said so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/image.h"
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_run.h"

static char dir[64], wl[256], nodw[256];
static const char *bin;

static int setup(void **state)
{
	const char *src = getenv("DCPI_SRC");

	(void)state;
	bin = getenv("DCPI_BIN");
	if (tu_workspace(dir, sizeof(dir), "params"))
		return -1;
	snprintf(wl, sizeof(wl), "%s/params", dir);
	snprintf(nodw, sizeof(nodw), "%s/params-nodwarf", dir);
	if (tu_sh("cd %s && gcc -std=gnu11 -g -O1 -fno-inline -o %s %s/tests/workloads/params.c "
		  "&& gcc -std=gnu11 -O1 -fno-inline -o %s %s/tests/workloads/params.c", dir, wl,
		  src ? src : ".", nodw, src ? src : "."))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_sh("test -n \"$KEEP\" || rm -rf %s", dir);
	return 0;
}

/* "name:type:reg reg|memory" of each parameter, joined by ", ". */
static void describe(struct image *img, const char *proc, char *buf, size_t len)
{
	const struct img_proc *p = img_proc_by_name(img, proc);
	const struct img_param *pa;
	size_t n;
	int va;

	assert_non_null(p);
	assert_int_equal(img_params(img, p->addr, &pa, &n, &va), 0);
	assert_int_equal(va, 0);
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(buf);

		snprintf(buf + k, len - k, "%s%s:%s:", i ? ", " : "", pa[i].name, pa[i].type);
		for (int b = 0; b < pa[i].nregs; b++) {
			k = strlen(buf);
			snprintf(buf + k, len - k, "%s%s", b ? " " : "",
				 img_param_reg_name(pa[i].reg[b]));
		}
		if (!pa[i].nregs) {
			k = strlen(buf);
			snprintf(buf + k, len - k, "memory");
		}
	}
}

static void test_img_params(void **state)
{
	const struct img_param *pa;
	struct dcpi_err err;
	struct image *img;
	char got[512];
	size_t n;

	(void)state;
	assert_int_equal(img_open(wl, 0, &img, &err), 0);
	describe(img, "pa_none", got, sizeof(got));
	assert_string_equal(got, "");
	describe(img, "pa_two", got, sizeof(got));
	assert_string_equal(got, "k:int:rdi, s:const char *:rsi");
	describe(img, "pa_mixed", got, sizeof(got));
	assert_string_equal(got, "k:int:rdi, x:double:xmm0, n:long int:rsi");
	describe(img, "pa_small", got, sizeof(got));
	assert_string_equal(got, "v:struct pa_small:rdi rsi, k:int:rdx");
	describe(img, "pa_big", got, sizeof(got));
	assert_string_equal(got, "v:struct pa_big:memory, k:int:rdi");
	describe(img, "pa_ret", got, sizeof(got));
	assert_string_equal(got, "(sret):struct pa_big *:rdi, k:int:rsi");
	assert_int_equal(img_params(img, img_proc_by_name(img, "pa_big")->addr, &pa, &n, NULL),
			 0);
	assert_int_equal(pa[0].size, 40);
	img_close(img);
	/* no -g: no parameters to give */
	assert_int_equal(img_open(nodw, 0, &img, &err), 0);
	assert_int_equal(img_params(img, img_proc_by_name(img, "pa_two")->addr, &pa, &n, NULL),
			 -ENOENT);
	assert_int_equal(n, 0);
	img_close(img);
}

/* A database at dir/name over image: samples on each fed procedure, and all
 * six argument registers fed at its entry (register r holds 100 + r). */
static void make_db(const char *name, const char *image)
{
	static const char *const procs[] = { "pa_two", "pa_mixed", "pa_big" };
	struct tu_at at[3];
	uint64_t entry[3];
	struct val_rng r = { 777 };
	struct val_profile vp;
	struct prof_db *db;
	struct dcpi_err err;
	struct image *img;
	char path[256], epoch[64];

	assert_int_equal(img_open(image, IMG_NO_DWARF, &img, &err), 0);
	for (size_t i = 0; i < 3; i++) {
		const struct img_proc *p = img_proc_by_name(img, procs[i]);

		assert_non_null(p);
		assert_int_equal(img_vaddr_to_offset(img, p->addr, &entry[i]), 0);
		at[i].offset = entry[i];
		at[i].count = 100 * (3 - i);
	}
	img_close(img);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	tu_cycles_db(path, image, at, 3, &db, epoch, sizeof(epoch));
	val_profile_init(&vp);
	assert_int_equal(prof_image_id_from_file(&vp.image, image, &err), 0);
	for (size_t i = 0; i < 3; i++) {
		for (uint32_t a = 0; a < 6; a++) {
			struct val_hotlist *h = val_profile_list(&vp, entry[i], VAL_ARG0 + a);

			assert_non_null(h);
			for (int k = 0; k < 50; k++)
				val_hotlist_add(h, 100 + a, &r);
			vp.samples += 50;
		}
	}
	assert_int_equal(val_profile_normalize(&vp), 0);
	assert_int_equal(val_epoch_write(db, epoch, &vp, &err), 0);
	val_profile_free(&vp);
	prof_db_close(db);
}

static int have_db;

static void need_db(void)
{
	if (!bin) {
		print_message("DCPI_BIN unset: run through tests/run.sh\n");
		skip();
	}
	if (!have_db) {
		make_db("db", wl);
		make_db("nodw", nodw);
		have_db = 1;
	}
}

static void test_vargs_named(void **state)
{
	char args[256];

	(void)state;
	need_db();
	snprintf(args, sizeof(args), "vargs --db %s/db", dir);
	tu_check_json(bin, dir, args,
		      "ps = {p['name']: p for p in d['procedures']}\n"
		      "def regs(p): return [(a['name'], a['register'], a['values'][0]['text'])\n"
		      "                     for a in ps[p]['args']]\n"
		      "assert regs('pa_two') == [('k', 'rdi', '100'), ('s', 'rsi', '101')], ps\n"
		      "assert regs('pa_mixed') == [('k', 'rdi', '100'), ('n', 'rsi', '101')], ps\n"
		      "assert regs('pa_big') == [('k', 'rdi', '100')], ps\n"
		      "m = ps['pa_mixed']\n"
		      "assert m['dwarf'] is True, m\n"
		      "assert [(x['name'], x['type'], x['registers']) for x in m['parameters']] == "
		      "[('k', 'int', ['rdi']), ('x', 'double', ['xmm0']), ('n', 'long int', ['rsi'])]\n"
		      "b = ps['pa_big']['parameters']\n"
		      "assert b[0]['size'] == 40 and b[0]['registers'] == [], b");
	snprintf(args, sizeof(args), "%s vargs --db %s/db > %s/vargs.txt", bin, dir, dir);
	assert_int_equal(tu_sh("%s", args), 0);
	assert_int_equal(tu_sh("grep -q '^  k (rdi) *100 .*100.0%%  invariant' %s/vargs.txt", dir),
			 0);
	assert_int_equal(tu_sh("grep -q '^  s (rsi) *101 ' %s/vargs.txt", dir), 0);
	assert_int_equal(tu_sh("grep -q '^  x (xmm0) *double: xmm registers are not sampled' "
			       "%s/vargs.txt", dir), 0);
	assert_int_equal(tu_sh("grep -q '^  v (memory) *struct pa_big, 40 bytes: passed in "
			       "memory' %s/vargs.txt", dir), 0);
	/* rdx .. r9 hold what callers left: not arguments of these procedures */
	assert_int_equal(tu_sh("! grep -q 'rdx\\|rcx\\|r8\\|r9\\|arg[0-9]\\|no DWARF' %s/vargs.txt",
			       dir), 0);
}

static void test_vargs_nodwarf(void **state)
{
	char args[256];

	(void)state;
	need_db();
	snprintf(args, sizeof(args), "vargs --db %s/nodw pa_two", dir);
	tu_check_json(bin, dir, args,
		      "p = d['procedures'][0]\n"
		      "assert p['dwarf'] is False and 'parameters' not in p, p\n"
		      "assert [a['register'] for a in p['args']] == "
		      "['rdi', 'rsi', 'rdx', 'rcx', 'r8', 'r9'], p\n"
		      "assert all('name' not in a for a in p['args']), p");
	assert_int_equal(tu_sh("%s vargs --db %s/nodw pa_two > %s/nodw.txt && "
			       "grep -q '(no DWARF: all six argument registers)' %s/nodw.txt && "
			       "grep -q '^  arg5 (r9) *105 ' %s/nodw.txt", bin, dir, dir, dir, dir),
			 0);
}

static void test_specialize_named(void **state)
{
	char args[256];

	(void)state;
	need_db();
	snprintf(args, sizeof(args), "specialize --db %s/db --min-seen 1", dir);
	tu_check_json(bin, dir, args,
		      "a = [(x['procedure'], x['register'], x['name']) for x in d['entries']\n"
		      "     if x['kind'] == 'argument']\n"
		      "assert all(r in ('rdi', 'rsi') for _, r, _ in a), a\n"
		      "assert ('pa_mixed', 'rsi', 'n') in a and ('pa_two', 'rdi', 'k') in a, a\n"
		      "assert not [x for x in a if x[0] == 'pa_big' and x[1] != 'rdi'], a\n"
		      "c = [x for x in d['entries'] if x.get('name') == 'n'][0]\n"
		      "assert c['suggestion'] == 'clone pa_mixed for n == 101 (constant-propagate "
		      "it)', c");
	assert_int_equal(tu_sh("%s specialize --db %s/db --min-seen 1 | grep -q "
			       "'argument  pa_mixed n (rsi) = 101'", bin, dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_img_params),
		cmocka_unit_test(test_vargs_named),
		cmocka_unit_test(test_vargs_nodwarf),
		cmocka_unit_test(test_specialize_named),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
