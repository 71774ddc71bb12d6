/*
 * test_lookup.c - procedures found by the names people type (README.md, PROC;
 * image/lookup.c and report/find.c): the plain C++ name without parameters,
 * the mangled name, the demangled signature, overloads (a clear error that
 * lists them), a method by its unqualified name, a procedure before its
 * clones, IMAGE:NAME, addresses; and the same rules in dcpicalc, dcpicfg and
 * dcpi model on a profile of tests/workloads/lookup.cc, compiled here by
 * g++.  The truth is nm's: addresses come from `nm`, not from dcpi.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "tu_main.h"

static char tmp[256];
static char bin[300];
static int have_gxx;

static int setup(void **state)
{
	const char *src = getenv("DCPI_SRC");

	if (tu_ws_setup(state, tmp, sizeof(tmp), "lookup"))
		return -1;
	snprintf(bin, sizeof(bin), "%s/lookup", tmp);
	have_gxx = tu_sh("command -v g++ >/dev/null 2>&1") == 0 &&
		   tu_sh("g++ -O2 -g -o %s %s/tests/workloads/lookup.cc", bin,
			 src ? src : ".") == 0;
	return 0;
}

/* The address nm gives the symbol whose demangled name is exactly name. */
static unsigned long long nm_addr(const char *name)
{
	char line[512];
	unsigned long long a = 0, v;
	FILE *f;

	f = tu_popen("nm -C --defined-only '%s'", bin);
	while (fgets(line, sizeof(line), f)) {
		char type;
		int off = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx %c %n", &v, &type, &off) == 2 && off &&
		    !strcmp(line + off, name))
			a = v;
	}
	pclose(f);
	assert_true(a != 0);
	return a;
}

static void find_ok(struct image *img, const char *spec, const char *truth)
{
	struct dcpi_err err = { 0 };
	const struct img_proc *p = NULL;
	int rc = img_proc_find(img, spec, &p, &err);

	if (rc)
		print_error("%s: %s\n", spec, err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(p->addr, nm_addr(truth));
	assert_string_equal(p->name, truth);
	assert_ptr_equal(img_proc_lookup(img, spec), p);
}

static void find_fails(struct image *img, const char *spec, int code, const char *msg1,
		       const char *msg2)
{
	struct dcpi_err err = { 0 };
	const struct img_proc *p = NULL;

	assert_int_equal(img_proc_find(img, spec, &p, &err), code);
	assert_null(p);
	assert_null(img_proc_lookup(img, spec));
	if (!strstr(err.msg, msg1) || (msg2 && !strstr(err.msg, msg2)))
		fail_msg("%s: message '%s' lacks '%s' or '%s'", spec, err.msg, msg1,
			 msg2 ? msg2 : "");
}

static void test_forms(void **state)
{
	struct dcpi_err err = { 0 };
	struct image *img;
	char spec[600];

	(void)state;
	if (!have_gxx)
		skip();
	assert_int_equal(img_open(bin, IMG_NO_DWARF, &img, &err), 0);
	find_ok(img, "spin_unique", "spin_unique(long)");		/* plain */
	find_ok(img, "_Z11spin_uniquel", "spin_unique(long)");		/* mangled */
	find_ok(img, "spin_unique(long)", "spin_unique(long)");		/* signature */
	find_ok(img, "geo::scale(int)", "geo::scale(int)");
	find_ok(img, "geo::scale(double)", "geo::scale(double)");
	find_ok(img, "geo::Grid::cell", "geo::Grid::cell(long) const");	/* qualified */
	find_ok(img, "cell", "geo::Grid::cell(long) const");		/* unqualified */
	find_ok(img, "twin", "twin(long)");			/* itself before its clone */
	find_ok(img, "twin(long) [clone .cold]", "twin(long) [clone .cold]");
	find_ok(img, "lonely", "lonely(long) [clone .isra.0]");	/* only a clone left */
	find_ok(img, "main", "main");
	find_ok(img, "lookup:spin_unique", "spin_unique(long)");	/* image:name */
	snprintf(spec, sizeof(spec), "%s:checked", bin);
	find_ok(img, spec, "checked(long)");
	snprintf(spec, sizeof(spec), "0x%llx", nm_addr("checked(long)") + 2);
	find_ok(img, spec, "checked(long)");				/* address inside */
	snprintf(spec, sizeof(spec), "lookup:0x%llx", nm_addr("checked(long)"));
	find_ok(img, spec, "checked(long)");
	/* overloads: an error naming both, with the way to pick one */
	find_fails(img, "geo::scale", -EEXIST, "geo::scale(int)", "geo::scale(double)");
	find_fails(img, "scale", -EEXIST, "geo::scale(int)", "signature");
	find_fails(img, "no_such_proc", -ENOENT, "no_such_proc", bin);
	find_fails(img, "libc:spin_unique", -ENOENT, "libc", NULL);
	find_fails(img, "spin", -ENOENT, "spin", NULL);			/* no prefixes */
	img_close(img);
}

/* The splitting of IMAGE:NAME, "::" and colons inside parameters not counted:
 * whether each spec splits, its image and its name (NULL: not checked). */
static const struct {
	const char *spec;
	int split;
	const char *im, *name;
} splits[] = {
	{ "cc1:bitmap_set_bit", 1, "cc1", "bitmap_set_bit" },
	{ "ns::f", 0, NULL, "ns::f" },
	{ "f(std::string)", 0, NULL, NULL },
	{ "libc.so.6:std::f", 1, "libc.so.6", "std::f" },
	{ "/usr/bin/x:0x10", 1, NULL, "0x10" },
	{ "x:", 0, NULL, NULL },
};

static void test_spec_split(void **state)
{
	char im[64];
	const char *name;

	(void)state;
	for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
		int rc = img_spec_split(splits[i].spec, im, sizeof(im), &name);

		if (rc != splits[i].split)
			fail_msg("%s: %d, wanted %d", splits[i].spec, rc, splits[i].split);
		if (splits[i].im)
			assert_string_equal(im, splits[i].im);
		if (splits[i].name)
			assert_string_equal(name, splits[i].name);
	}
}

/* The same rules in every command that takes PROC, on a profile of the workload. */
static void test_tools(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char db[400], out[400];

	(void)state;
	if (!have_gxx || !dcpi)
		skip();
	snprintf(db, sizeof(db), "%s/db", tmp);
	snprintf(out, sizeof(out), "%s/out", tmp);
	assert_int_equal(tu_sh("%s record -e cpu-clock -c 200000 --db %s -- %s >/dev/null 2>&1",
			       dcpi, db, bin), 0);
	/* dcpicalc: plain, mangled, signature, image:name */
	assert_int_equal(tu_sh("%s calc spin_unique --db %s >%s 2>&1", dcpi, db, out), 0);
	assert_int_equal(tu_sh("grep -q 'spin_unique(long)' %s", out), 0);
	assert_int_equal(tu_sh("%s calc _Z11spin_uniquel --db %s >/dev/null", dcpi, db), 0);
	assert_int_equal(tu_sh("%s calc 'spin_unique(long)' --db %s >/dev/null", dcpi, db), 0);
	assert_int_equal(tu_sh("%s calc lookup:spin_unique --db %s >/dev/null", dcpi, db), 0);
	assert_int_equal(tu_sh("%s calc spin_unique --db %s --image %s >/dev/null", dcpi, db,
			       bin), 0);
	/* overloads: the error lists both and says how to choose */
	assert_int_not_equal(tu_sh("%s calc geo::scale --db %s >%s 2>&1", dcpi, db, out), 0);
	assert_int_equal(tu_sh("grep -q 'geo::scale(int)' %s && grep -q 'geo::scale(double)' %s"
			       " && grep -q signature %s", out, out, out), 0);
	/* dcpicfg from the database and with --image */
	assert_int_equal(tu_sh("%s cfg spin_unique --db %s --json -o %s", dcpi, db, out), 0);
	assert_int_equal(tu_sh("grep -q '\"procedure\": \"spin_unique(long)\"' %s", out), 0);
	assert_int_equal(tu_sh("%s cfg cell --image %s --json -o %s", dcpi, bin, out), 0);
	assert_int_equal(tu_sh("grep -q 'geo::Grid::cell(long) const' %s", out), 0);
	assert_int_not_equal(tu_sh("%s cfg scale --image %s >/dev/null 2>%s", dcpi, bin, out), 0);
	assert_int_equal(tu_sh("grep -q 'geo::scale(double)' %s", out), 0);
	/* dcpi model */
	assert_int_equal(tu_sh("%s model --image %s spin_unique >%s 2>&1", dcpi, bin, out), 0);
	assert_int_equal(tu_sh("%s model --image %s _Z4twinl >/dev/null", dcpi, bin), 0);
	assert_int_not_equal(tu_sh("%s model --image %s geo::scale >%s 2>&1", dcpi, bin, out), 0);
	assert_int_equal(tu_sh("grep -q 'geo::scale(int)' %s", out), 0);
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_spec_split),
	cmocka_unit_test(test_forms),
	cmocka_unit_test(test_tools))
