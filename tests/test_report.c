/*
 * test_report.c - profiles compared (report/stats.c: dcpistats, dcpidiff)
 * and merged (dcpi merge), on databases built here with known counts over
 * two procedures of tests/workloads/twoprocs, checked against the numbers
 * worked out by hand.
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
#include <zlib.h>

#include "dcpi/report.h"
#include "testutil.h"
#include "tu_main.h"

static char dir[256], wl[1024];

/* A database at dir/name with one epoch: a samples in proc_a, b in proc_b. */
static void make_db(const char *name, uint64_t a, uint64_t b)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct prof_db *db;
	uint64_t lo, hi;
	char path[PROF_PATH_MAX], epoch[64];

	tu_profile_of(&p, wl, "cpu-clock", 250000, "ns");
	sym_range(wl, "proc_a", &lo, &hi);
	if (a)
		assert_int_equal(prof_profile_add(&p, lo, a), 0);
	sym_range(wl, "proc_b", &lo, &hi);
	if (b)
		assert_int_equal(prof_profile_add(&p, lo + 1, b), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(prof_db_open(path, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	prof_db_close(db);
	prof_profile_free(&p);
}

static void load(const char *name, struct rep_table *t)
{
	struct dcpi_err err = { 0 };
	char path[PROF_PATH_MAX], used[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(rep_load_table(path, NULL, t, used, sizeof(used), &err), 0);
}

static int setup(void **state)
{
	const char *build = getenv("DCPI_BUILD");

	(void)state;
	snprintf(wl, sizeof(wl), "%s/workloads/twoprocs", build ? build : "build");
	if (tu_workspace(dir, sizeof(dir), "report"))
		return -1;
	make_db("r1", 100, 50);
	make_db("r2", 120, 50);
	make_db("r3", 80, 70);
	make_db("r4", 0, 40);		/* proc_a missing from this run */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rm_unless_kept(dir);
	return 0;
}

static const struct rep_stat_row *row(const struct rep_stats *s, const char *name)
{
	for (size_t i = 0; i < s->nrows; i++)
		if (!strcmp(s->rows[i].name, name))
			return &s->rows[i];
	fail_msg("%s: not in the statistics", name);
	return NULL;
}

/* Fig. 3's columns, by hand: proc_a over 100, 120, 80. */
static void test_stats(void **state)
{
	struct rep_table t[4];
	struct rep_stats s;
	struct dcpi_err err = { 0 };
	const struct rep_stat_row *a, *b;

	(void)state;
	load("r1", &t[0]);
	load("r2", &t[1]);
	load("r3", &t[2]);
	assert_int_equal(rep_stats(t, 3, "cpu-clock", &s, &err), 0);
	assert_int_equal(s.total, 470);
	a = row(&s, "proc_a");
	assert_true(fabs(a->sum - 300) < 1e-9);
	assert_true(fabs(a->mean - 100) < 1e-9);
	assert_true(fabs(a->sd - 20) < 1e-9);		/* sqrt((0 + 400 + 400) / 2) */
	assert_true(a->min == 80 && a->max == 120);
	assert_true(fabs(a->range - 40.0 / 300) < 1e-12);
	assert_true(fabs(a->sum_share - 300.0 / 470) < 1e-12);
	assert_int_equal(a->n, 3);
	b = row(&s, "proc_b");
	assert_true(fabs(b->range - 20.0 / 170) < 1e-12);
	/* sorted by range: proc_a (13.3%) before proc_b (11.8%) */
	assert_string_equal(s.rows[0].name, "proc_a");
	rep_stats_sort(&s, 1);
	assert_string_equal(s.rows[0].name, "proc_a");	/* sum 300 > 170 */
	rep_stats_free(&s);
	/* a run without proc_a: 0 there, N counts the runs it is in */
	load("r4", &t[3]);
	assert_int_equal(rep_stats(t, 4, "cpu-clock", &s, &err), 0);
	a = row(&s, "proc_a");
	assert_int_equal(a->n, 3);
	assert_true(a->min == 0 && fabs(a->mean - 75) < 1e-9);
	rep_stats_free(&s);
	/* one run is not enough */
	assert_true(rep_stats(t, 1, "cpu-clock", &s, &err) < 0);
	assert_non_null(strstr(err.msg, "two runs"));
	for (int i = 0; i < 4; i++)
		rep_free(&t[i]);
}

/* dcpidiff: shares, change and z by hand. */
static void test_diff(void **state)
{
	struct rep_table a, b;
	struct rep_diff d;
	struct dcpi_err err = { 0 };
	double pa = 100.0 / 150, pb = 120.0 / 170, z;

	(void)state;
	load("r1", &a);
	load("r2", &b);
	assert_int_equal(rep_diff(&a, &b, "cpu-clock", &d, &err), 0);
	assert_int_equal(d.ta, 150);
	assert_int_equal(d.tb, 170);
	z = (pb - pa) / sqrt(100.0 / (150.0 * 150) + 120.0 / (170.0 * 170));
	for (size_t i = 0; i < d.nrows; i++)
		if (!strcmp(d.rows[i].name, "proc_a")) {
			assert_int_equal(d.rows[i].a, 100);
			assert_int_equal(d.rows[i].b, 120);
			assert_true(fabs(d.rows[i].change - (pb - pa)) < 1e-12);
			assert_true(fabs(d.rows[i].z - z) < 1e-9);
			assert_true(fabs(d.rows[i].z) < 3);	/* 0.74: noise */
		}
	rep_diff_free(&d);
	assert_true(rep_diff(&a, &b, "cycles", &d, &err) < 0);
	assert_non_null(strstr(err.msg, "cycles"));
	rep_free(&a);
	rep_free(&b);
}

/* dcpi merge: order does not change a byte; counts add. */
static void test_merge(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	struct rep_table t;
	uint64_t a = 0;

	(void)state;
	tu_need_run(bin != NULL);
	assert_int_equal(tu_sh("%s merge %s/r1 %s/r2 %s/r3 -o %s/m1 2> /dev/null", bin, dir, dir,
			       dir, dir), 0);
	assert_int_equal(tu_sh("%s merge %s/r3 %s/r1 %s/r2 -o %s/m2 2> /dev/null", bin, dir, dir,
			       dir, dir), 0);
	assert_int_equal(tu_sh("diff -r %s/m1 %s/m2", dir, dir), 0);
	load("m1", &t);
	for (size_t i = 0; i < t.nrows; i++)
		if (!strcmp(t.rows[i].name, "proc_a"))
			a = t.rows[i].samples[rep_event_index(&t, "cpu-clock")];
	assert_int_equal(a, 300);
	rep_free(&t);
	/* the output may not be an input; a missing input is named */
	assert_int_not_equal(tu_sh("%s merge %s/r1 -o %s/r1 2> /dev/null", bin, dir, dir), 0);
	assert_int_not_equal(tu_sh("%s merge %s/nonexistent -o %s/m3 2> %s/e.log", bin, dir, dir,
				   dir), 0);
	assert_int_equal(tu_sh("grep -q nonexistent %s/e.log", dir), 0);
}

/* The commands end to end: numbers in their JSON. */
static void test_commands(void **state)
{
	const char *bin = getenv("DCPI_BIN");

	(void)state;
	tu_need_run(bin != NULL);
	assert_int_equal(tu_sh("%s stats %s/r1 %s/r2 %s/r3 --json > %s/s.json", bin, dir, dir, dir,
			       dir), 0);
	assert_int_equal(tu_sh("grep -q '\"name\": \"proc_a\".*\"sum\": 300, .*\"sd\": 20,' %s/s.json",
			       dir), 0);
	assert_int_equal(tu_sh("%s stats %s/r1 %s/r2 --sort sum > %s/s.txt && grep -q 'proc_a' "
			       "%s/s.txt", bin, dir, dir, dir, dir), 0);
	assert_int_equal(tu_sh("%s diff %s/r1 %s/r3 --json > %s/d.json", bin, dir, dir, dir), 0);
	assert_int_equal(tu_sh("grep -q '\"before\": 100, \"after\": 80,' %s/d.json", dir), 0);
	/* the instructions executed scale with the samples over the same shape */
	assert_int_equal(tu_sh("python3 -c 'import json,sys\n"
			       "d = json.load(open(\"%s/d.json\"))\n"
			       "a = [p for p in d[\"procedures\"] if p[\"name\"] == \"proc_a\"][0]\n"
			       "assert a[\"instructions_before\"] > 0, a\n"
			       "r = a[\"instructions_after\"] / a[\"instructions_before\"]\n"
			       "assert abs(r - 0.8) < 1e-3, r'", dir), 0);
	assert_int_not_equal(tu_sh("%s stats %s/r1 2> /dev/null", bin, dir), 0);
	assert_int_not_equal(tu_sh("%s diff %s/r1 2> /dev/null", bin, dir), 0);
	assert_int_not_equal(tu_sh("%s stats %s/r1 %s/r2 --sort median 2> /dev/null", bin, dir,
				   dir), 0);
}

/* dcpilist on a recording: each line's samples are its instructions' sum,
 * the lines' sum is the procedure's; with exact counts a line's executions
 * are the most its instructions ran. */
static void test_list(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	char cul[1024], line[16384];
	double total = -1, lines = 0, insns = 0;
	size_t nlines = 0;
	FILE *f;

	(void)state;
	tu_need_run(bin && build);
	snprintf(cul, sizeof(cul), "%s/workloads/culprits", build);
	assert_int_equal(tu_sh("%s record --no-paths --db %s/lrec -- %s chase 300000 > /dev/null "
			       "2>&1", bin, dir, cul), 0);
	snprintf(line, sizeof(line), "%s/lexact", dir);
	tu_exact_db(line, cul, "cul_chase", (const double[]){ 1, 300000, 300000 });
	snprintf(line, sizeof(line), "%s list cul_chase --db %s/lrec --exact %s/lexact --json "
		 "--no-measure | python3 -c 'import json,sys\n"
		 "d = json.load(sys.stdin)\n"
		 "print(\"total\", d[\"samples\"])\n"
		 "for l in d[\"lines\"]:\n"
		 "    i = l[\"instructions\"]\n"
		 "    print(\"line\", l[\"samples\"], sum(x[\"samples\"] for x in i), l[\"executions\"],"
		 " max(x[\"executions\"] for x in i))'", bin, dir, dir);
	f = popen(line, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		double a, b, x, mx;

		if (sscanf(line, "total %lf", &total) == 1)
			continue;
		assert_int_equal(sscanf(line, "line %lf %lf %lf %lf", &a, &b, &x, &mx), 4);
		assert_true(fabs(a - b) < 1e-9);
		assert_true(fabs(x - mx) < 1e-9);
		lines += a;
		insns += b;
		nlines++;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(nlines >= 1);	/* hand-written assembly: one run, no line */
	assert_true(total > 0 && fabs(lines - total) < 1e-9);
	/* a C procedure: several lines, the same sums */
	assert_int_equal(tu_sh("%s record --no-paths --db %s/drec -- %s/workloads/demo_work 1 "
			       "> /dev/null 2>&1", bin, dir, build), 0);
	assert_int_equal(tu_sh("%s list mix_chain --db %s/drec --json --no-measure | python3 -c "
			       "'import json,sys\n"
			       "d = json.load(sys.stdin)\n"
			       "ls = d[\"lines\"]\n"
			       "assert len([l for l in ls if l[\"source\"]]) >= 2, ls\n"
			       "assert all(abs(l[\"samples\"] - sum(i[\"samples\"] for i in "
			       "l[\"instructions\"])) < 1e-9 for l in ls)\n"
			       "assert abs(sum(l[\"samples\"] for l in ls) - d[\"samples\"]) < 1e-9'",
			       bin, dir), 0);
	/* the image-wide summary (fig. 4 over every sampled procedure) holds at
	 * least demo_work's three hot procedures and more cycles than any one */
	assert_int_equal(tu_sh("%s calc '*' --db %s/drec --summary --json --no-measure > %s/all.json"
			       " && %s calc mix_chain --db %s/drec --summary --json --no-measure "
			       "> %s/one.json && python3 -c 'import json\n"
			       "a = json.load(open(\"%s/all.json\"))[\"summary\"]\n"
			       "o = json.load(open(\"%s/one.json\"))[\"summary\"]\n"
			       "assert a[\"procedures\"] >= 3, a\n"
			       "assert a[\"cycles\"] > o[\"cycles\"] > 0, (a, o)'", bin, dir, dir,
			       bin, dir, dir, dir, dir), 0);
	assert_int_not_equal(tu_sh("%s calc '*' --db %s/drec 2> /dev/null", bin, dir), 0);
	/* text: the load's line names its culprit */
	assert_int_equal(tu_sh("%s list cul_chase --db %s/lrec --exact %s/lexact --no-measure | "
			       "grep -q 'D-cache'", bin, dir, dir), 0);
}

/* dcpicfg with samples: the annotated graph; --all shows every block, the
 * default hides cold ones behind summary nodes; PNG renders; bad --hot. */
static void test_cfg_annotated(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	char out[4096];
	FILE *f;
	size_t n;

	(void)state;
	tu_need_run(bin && build);
	if (tu_sh("test -d %s/drec", dir))
		assert_int_equal(tu_sh("%s record --no-paths --db %s/drec -- %s/workloads/demo_work 1 "
				       "> /dev/null 2>&1", bin, dir, build), 0);
	/* every block of the plain graph is a node of the annotated one with --all */
	assert_int_equal(tu_sh("%s cfg --db %s/drec main --static --json | python3 -c "
			       "'import json,sys; print(len(json.load(sys.stdin)[\"blocks\"]))' > "
			       "%s/nb && %s cfg --db %s/drec main --all --no-measure > %s/all.dot && "
			       "test $(grep -cE '^[[:space:]]*b[0-9]+[[:space:]]*\\[' %s/all.dot) -eq $(($(cat %s/nb) + 1))",
			       bin, dir, dir, bin, dir, dir, dir, dir), 0);
	assert_int_equal(tu_sh("grep -q 'of cycles' %s/all.dot && grep -q legend %s/all.dot", dir,
			       dir), 0);
	/* by default main's cold blocks (its setup loops hold few samples) are
	 * summarized */
	assert_int_equal(tu_sh("%s cfg --db %s/drec main --hot 0.5 --no-measure > %s/hot.dot && "
			       "grep -q 'cold block' %s/hot.dot && test $(grep -cE '^[[:space:]]*b[0-9]+[[:space:]]*\\[' "
			       "%s/hot.dot) -lt $(grep -cE '^[[:space:]]*b[0-9]+[[:space:]]*\\[' %s/all.dot)", bin, dir,
			       dir, dir, dir, dir), 0);
	/* graphviz's cairo and fontconfig keep memory to the end (an ASan build of
	 * dcpi would report them, as test_cfg's svg render notes) */
	assert_int_equal(tu_sh("ASAN_OPTIONS=detect_leaks=0 %s cfg --db %s/drec mix_chain "
			       "--format png -o %s/g.png --no-measure", bin, dir, dir), 0);
	snprintf(out, sizeof(out), "%s/g.png", dir);
	f = fopen(out, "rb");
	assert_non_null(f);
	n = fread(out, 1, 8, f);
	fclose(f);
	assert_int_equal(n, 8);
	assert_memory_equal(out, "\x89PNG\r\n\x1a\n", 8);
	assert_int_not_equal(tu_sh("%s cfg --db %s/drec main --hot 2 2> %s/h.log", bin, dir, dir),
			     0);
	assert_int_equal(tu_sh("grep -q 'hot 2' %s/h.log", dir), 0);
}

/* ---- a minimal protobuf reader for the pprof export ---------------------- */

static uint64_t pb_varint(const uint8_t *b, size_t n, size_t *i)
{
	uint64_t r = 0;

	for (int sh = 0; *i < n && sh < 64; sh += 7) {
		uint8_t c = b[(*i)++];

		r |= (uint64_t)(c & 0x7f) << sh;
		if (c < 0x80)
			break;
	}
	return r;
}

/* Field f of message b: the k-th length-delimited one (data, len), or -1. */
static int pb_field(const uint8_t *b, size_t n, unsigned f, size_t k, const uint8_t **d,
		    size_t *len)
{
	size_t i = 0, seen = 0;

	while (i < n) {
		uint64_t key = pb_varint(b, n, &i), l;

		if ((key & 7) == 0) {
			pb_varint(b, n, &i);
			continue;
		}
		assert_int_equal(key & 7, 2);
		l = pb_varint(b, n, &i);
		assert_true(i + l <= n);
		if ((key >> 3) == f && seen++ == k) {
			*d = b + i;
			*len = (size_t)l;
			return 0;
		}
		i += (size_t)l;
	}
	return -1;
}

/* dcpi export --pprof: gunzipped, the samples' values add up to the
 * profile's, proc_a's and proc_b's names are functions, the build-id is in
 * the mapping. */
static void test_export_pprof(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	static uint8_t raw[1 << 20];
	char path[PROF_PATH_MAX];
	const uint8_t *d, *v;
	size_t len, vlen, n = 0;
	uint64_t total = 0;
	int have_a = 0, have_b = 0, have_id = 0;
	struct prof_image_id id;
	struct dcpi_err err = { 0 };
	gzFile gz;
	int got;

	(void)state;
	tu_need_run(bin != NULL);
	assert_int_equal(tu_sh("%s export --pprof --db %s/r1 -o %s/r1.pb.gz 2> /dev/null", bin,
			       dir, dir), 0);
	snprintf(path, sizeof(path), "%s/r1.pb.gz", dir);
	gz = gzopen(path, "rb");
	assert_non_null(gz);
	got = gzread(gz, raw, sizeof(raw));
	gzclose(gz);
	assert_true(got > 0 && got < (int)sizeof(raw));
	/* samples (2): values (field 2, packed) */
	for (size_t k = 0; pb_field(raw, (size_t)got, 2, k, &d, &len) == 0; k++) {
		size_t i = 0;

		assert_int_equal(pb_field(d, len, 2, 0, &v, &vlen), 0);
		while (i < vlen)
			total += pb_varint(v, vlen, &i);
		n++;
	}
	assert_int_equal(n, 2);		/* two sampled offsets */
	assert_int_equal(total, 150);	/* 100 in proc_a + 50 in proc_b */
	/* the string table (6) holds the function names and the build-id */
	assert_int_equal(prof_image_id_from_file(&id, wl, &err), 0);
	for (size_t k = 0; pb_field(raw, (size_t)got, 6, k, &d, &len) == 0; k++) {
		have_a |= len == 6 && !memcmp(d, "proc_a", 6);
		have_b |= len == 6 && !memcmp(d, "proc_b", 6);
		have_id |= len == strlen(id.build_id) && !memcmp(d, id.build_id, len);
	}
	assert_true(have_a && have_b && have_id);
	assert_int_equal(pb_field(raw, (size_t)got, 3, 0, &d, &len), 0);	/* a mapping */
	assert_int_not_equal(tu_sh("%s export --db %s/r1 -o %s/x.pb.gz 2> /dev/null", bin, dir,
				   dir), 0);	/* no format */
	if (tu_sh("go version > /dev/null 2>&1") == 0)
		assert_int_equal(tu_sh("cd %s && go tool pprof -top -sample_index=0 r1.pb.gz 2>&1 | "
				       "grep -q 'proc_a'", dir), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_stats),
	cmocka_unit_test(test_diff),
	cmocka_unit_test(test_merge),
	cmocka_unit_test(test_commands),
	cmocka_unit_test(test_list),
	cmocka_unit_test(test_cfg_annotated),
	cmocka_unit_test(test_export_pprof))
