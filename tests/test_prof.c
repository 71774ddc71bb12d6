/*
 * test_prof.c - dcpiprof over databases built here: samples placed at file
 * offsets of this test binary's own procedures, located with nm and readelf
 * (not with dcpi's image code), and the printed table checked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "testutil.h"

__attribute__((noinline)) int alpha_proc(int x) { return x * 3 + 1; }
__attribute__((noinline)) int beta_proc(int x) { return x * 5 + 2; }
__attribute__((noinline)) int gamma_proc(int x) { return x * 7 + 3; }

static char self[PROF_PATH_MAX];
static char tmpdir[256];

static void make_profile(struct prof_profile *p, const char *event, const char *image)
{
	struct dcpi_err err = { 0 };

	prof_profile_init(p);
	snprintf(p->event, sizeof(p->event), "%s", event);
	snprintf(p->period_unit, sizeof(p->period_unit), "ns");
	p->period = 250000;
	if (image)
		assert_int_equal(prof_image_id_from_file(&p->image, image, &err), 0);
	else
		prof_image_id_unknown(&p->image);
}

/* Write a profile of (symbol, count) pairs: 3 samples per symbol at 3 offsets. */
static void put(struct prof_db *db, const char *epoch, const char *event, const char *image,
		const char **syms, const uint64_t *counts, size_t n)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;

	make_profile(&p, event, image);
	for (size_t i = 0; i < n; i++) {
		uint64_t off = image ? tu_sym_off(self, syms[i], NULL) : 0x1000 + i;

		assert_int_equal(prof_profile_add(&p, off, counts[i] - counts[i] / 2), 0);
		assert_int_equal(prof_profile_add(&p, off + 1, counts[i] / 2), 0);
	}
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	prof_profile_free(&p);
}

/* Run dcpi with args; return its stdout (malloc'd) and its exit status
 * into *status, or, with status NULL, check it is 0. */
static char *vrun(int *status, const char *fmt, va_list ap)
{
	char cmd[4096], *out = NULL;
	size_t len = 0;
	FILE *f, *mem = open_memstream(&out, &len);
	int c;

	snprintf(cmd, sizeof(cmd), "%s ", getenv("DCPI_BIN"));
	vsnprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), fmt, ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	f = popen(cmd, "r");
	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		fputc(c, mem);
	c = pclose(f);
	fclose(mem);
	if (status)
		*status = c;
	else
		assert_int_equal(c, 0);
	return out;
}

static char *run(int *status, const char *fmt, ...)
{
	va_list ap;
	char *out;

	va_start(ap, fmt);
	out = vrun(status, fmt, ap);
	va_end(ap);
	return out;
}

/* dcpi with args exits 0 (fails: with another status) and its output holds
 * has and not lacks (either NULL: not looked for). */
static void expect(int fails, const char *has, const char *lacks, const char *fmt, ...)
{
	va_list ap;
	char *out;
	int st;

	va_start(ap, fmt);
	out = vrun(&st, fmt, ap);
	va_end(ap);
	if (fails)
		assert_int_not_equal(st, 0);
	else
		assert_int_equal(st, 0);
	if (has)
		assert_non_null(strstr(out, has));
	if (lacks)
		assert_null(strstr(out, lacks));
	free(out);
}

/* The output line that mentions word, or NULL. */
static const char *line_with(const char *out, const char *word)
{
	static char buf[1024];
	const char *p = strstr(out, word), *b, *e;

	if (!p)
		return NULL;
	for (b = p; b > out && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	if (!e)
		e = p + strlen(p);
	snprintf(buf, sizeof(buf), "%.*s", (int)(e - b), b);
	return buf;
}

/* The output has a line that mentions word and holds text. */
static void assert_line(const char *out, const char *word, const char *text)
{
	const char *l = line_with(out, word);

	if (!l || !strstr(l, text))
		fail_msg("no line with '%s' holding '%s' in:\n%s", word, text, out);
}

static struct prof_db *fresh_db(const char *name, char *epoch)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, 64, &err), 0);
	return db;
}

static const char *syms[] = { "alpha_proc", "beta_proc", "gamma_proc" };

static void test_per_procedure(void **state)
{
	static const uint64_t cyc[] = { 600, 300, 100 }, bm[] = { 5, 0, 50 };
	char epoch[64], *out;
	struct prof_db *db = fresh_db("db1", epoch);

	put(db, epoch, "cpu-clock", self, syms, cyc, 3);
	put(db, epoch, "branch-misses", self, syms, bm, 3);
	prof_db_close(db);

	out = run(NULL, "prof --db %s/db1", tmpdir);
	assert_non_null(strstr(out, "cpu-clock = 1000"));
	assert_non_null(strstr(out, "branch-misses = 55"));
	assert_line(out, "alpha_proc", "600  60.00%  60.00%");
	assert_line(out, "alpha_proc", "5   9.09%");
	assert_line(out, "alpha_proc", self);
	assert_line(out, "beta_proc", "300  30.00%  90.00%");
	/* sorted by the first event: alpha, beta, gamma */
	assert_true(strstr(out, "alpha_proc") < strstr(out, "beta_proc"));
	assert_true(strstr(out, "beta_proc") < strstr(out, "gamma_proc"));
	free(out);

	/* --event sorts by another event; --limit cuts rows */
	expect(0, "gamma_proc", "alpha_proc", "prof --db %s/db1 --event branch-misses --limit 1",
	       tmpdir);

	out = run(NULL, "prof --db %s/db1 --json", tmpdir);
	assert_non_null(strstr(out, "\"total\": {\"cpu-clock\": 1000, \"branch-misses\": 55}"));
	assert_line(out, "\"name\": \"beta_proc\"",
		    "\"samples\": {\"cpu-clock\": 300, \"branch-misses\": 0}");
	free(out);

	/* per image: one row with everything */
	out = run(NULL, "prof --db %s/db1 -i", tmpdir);
	assert_line(out, self, "1000 100.00% 100.00%");
	free(out);
}

static void test_unknown_and_epochs(void **state)
{
	static const uint64_t a[] = { 40 }, u[] = { 10, 10 };
	char e1[64], e2[64], *out;
	struct dcpi_err err = { 0 };
	struct prof_db *db = fresh_db("db2", e1);

	put(db, e1, "cpu-clock", self, syms, a, 1);
	put(db, e1, "cpu-clock", NULL, syms, u, 2);
	assert_int_equal(prof_db_epoch_new(db, e2, sizeof(e2), &err), 0);
	put(db, e2, "cpu-clock", self, syms, a, 1);
	prof_db_close(db);

	/* the newest epoch by default */
	expect(0, "cpu-clock = 40", "[unknown]", "prof --db %s/db2", tmpdir);

	out = run(NULL, "prof --db %s/db2 --epoch all", tmpdir);
	assert_non_null(strstr(out, "cpu-clock = 100"));
	assert_line(out, "alpha_proc", "80  80.00%");
	assert_line(out, "[unknown]", "20  20.00% 100.00%");
	free(out);

	expect(0, "cpu-clock = 60", NULL, "prof --db %s/db2 --epoch %s", tmpdir, e1);
}

static void test_errors(void **state)
{
	char epoch[64], path[1024], *out;
	struct prof_db *db = fresh_db("db3", epoch);
	struct prof_profile p;
	struct dcpi_err err = { 0 };
	FILE *f;

	/* empty epoch */
	prof_db_close(db);
	expect(1, "no samples", NULL, "prof --db %s/db3", tmpdir);

	/* a database that does not exist */
	expect(1, "nonexistent", NULL, "prof --db %s/nonexistent", tmpdir);

	/* an image rebuilt since: a profile claims another build-id */
	make_profile(&p, "cpu-clock", self);
	snprintf(p.image.build_id, sizeof(p.image.build_id), "%s", "0123456789abcdef");
	assert_int_equal(prof_profile_add(&p, 0x1000, 7), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	db = fresh_db("db4", epoch);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	prof_profile_free(&p);
	prof_db_close(db);
	out = run(NULL, "prof --db %s/db4", tmpdir);
	assert_non_null(strstr(out, "[image unavailable]"));
	assert_non_null(strstr(out, "not the profiled image"));
	free(out);

	/* a corrupt profile file is an error naming the file */
	snprintf(path, sizeof(path), "ls -d %s/db4/%s/* | grep -v meta | head -n 1", tmpdir,
		 epoch);
	f = popen(path, "r");
	assert_non_null(fgets(path, sizeof(path), f));
	pclose(f);
	path[strcspn(path, "\n")] = 0;
	f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, -3, SEEK_END);
	fputc(0x5a, f);
	fclose(f);
	expect(1, path, NULL, "prof --db %s/db4", tmpdir);
	expect(1, NULL, NULL, "prof --bogus");
}

/* Samples under a perf map (JIT code) are named from the map's lines. */
static void test_jit_map(void **state)
{
	char epoch[64], map[64], *out;
	struct prof_db *db = fresh_db("db5", epoch);
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	FILE *f;
	int st;

	snprintf(map, sizeof(map), "/tmp/perf-%d.map", 900000000 + (int)getpid() % 1000000);
	f = fopen(map, "w");
	assert_non_null(f);
	fprintf(f, "7f0000001000 40 jit_fast\n7f0000001040 100 LazyCompile:*slow js/app.js:3\n");
	fclose(f);
	prof_profile_init(&p);
	snprintf(p.event, sizeof(p.event), "cpu-clock");
	snprintf(p.period_unit, sizeof(p.period_unit), "ns");
	p.period = 250000;
	snprintf(p.image.path, sizeof(p.image.path), "%s", map);
	assert_int_equal(prof_profile_add(&p, 0x7f0000001000, 5), 0);
	assert_int_equal(prof_profile_add(&p, 0x7f000000103f, 2), 0);
	assert_int_equal(prof_profile_add(&p, 0x7f0000001100, 30), 0);
	assert_int_equal(prof_profile_add(&p, 0x7f0000009000, 3), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	prof_profile_free(&p);
	prof_db_close(db);

	out = run(&st, "prof --db %s/db5", tmpdir);
	unlink(map);
	assert_int_equal(st, 0);
	assert_line(out, "LazyCompile:*slow js/app.js:3", "30  75.00%  75.00%");
	assert_line(out, "jit_fast", "7  17.50%");
	assert_line(out, "[unknown]", "3   7.50%");
	free(out);
}

/* rep_find_proc: the profiled image holding a procedure named by a user. */
static void test_find_proc(void **state)
{
	struct dcpi_err err = { 0 };
	const struct img_proc *proc;
	struct prof_profile p[3];
	struct image *img;
	char copy[400], cmd[PROF_PATH_MAX + 500];
	size_t k;

	make_profile(&p[0], "cpu-clock", NULL);
	make_profile(&p[1], "cpu-clock", self);
	make_profile(&p[2], "branch-misses", self);
	assert_int_equal(rep_find_proc(p, 3, "cpu-clock", "beta_proc", IMG_NO_DWARF, &img,
				       &proc, &k, &err), 0);
	assert_int_equal(k, 1);
	assert_string_equal(proc->name, "beta_proc");
	/* an address inside it names it too */
	snprintf(cmd, sizeof(cmd), "0x%llx", (unsigned long long)proc->addr + 1);
	img_close(img);
	assert_int_equal(rep_find_proc(p, 3, NULL, cmd, IMG_NO_DWARF, &img, &proc, &k, &err), 0);
	assert_string_equal(proc->name, "beta_proc");
	img_close(img);
	assert_int_equal(rep_find_proc(p, 3, NULL, "no_such_proc", IMG_NO_DWARF, &img, &proc,
				       &k, &err), -ENOENT);
	assert_null(img);
	assert_non_null(strstr(err.msg, "no_such_proc"));

	/* the same procedure in two profiled files is ambiguous, and says where */
	snprintf(copy, sizeof(copy), "%s/copy-of-test", tmpdir);
	assert_int_equal(tu_sh("cp '%s' '%s'", self, copy), 0);
	prof_profile_free(&p[0]);
	make_profile(&p[0], "cpu-clock", copy);
	assert_int_equal(rep_find_proc(p, 3, "cpu-clock", "gamma_proc", IMG_NO_DWARF, &img,
				       &proc, &k, &err), -EEXIST);
	assert_null(img);
	assert_non_null(strstr(err.msg, copy));
	assert_non_null(strstr(err.msg, self));
	for (int i = 0; i < 3; i++)
		prof_profile_free(&p[i]);
}

static int setup(void **state)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || !getenv("DCPI_BIN"))
		return -1;
	self[n] = 0;
	return tu_ws_setup(state, tmpdir, sizeof(tmpdir), "prof");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_procedure),
		cmocka_unit_test(test_unknown_and_epochs),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_jit_map),
		cmocka_unit_test(test_find_proc),
	};

	(void)alpha_proc(1);
	(void)beta_proc(1);
	(void)gamma_proc(1);
	return cmocka_run_group_tests(tests, setup, tu_ws_teardown);
}
