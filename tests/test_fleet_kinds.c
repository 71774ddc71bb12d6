/*
 * tests/test_fleet_kinds.c - the path, value and data profiles of a fleet on
 * a real clickhouse-server (fleet/kinds.c, docs/fleet.md "Paths, values and
 * data"): pushed twice and pulled back, each kind's file equals `dcpi merge`
 * of the hosts' databases byte for byte (value hotlists that overflow, so
 * their merge rounds, included); a database of schema version 1 is refused
 * with a clear error until --init upgrades it; dcpiprof --from takes
 * --since and --until as dcpi pull does.  The server is private to the test
 * (tests/tu_clickhouse.h); without clickhouse-server the tests skip.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/data.h"
#include "dcpi/fleet.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_fleet.h"
#include "tu_main.h"

#define BID "f1ee7c0ffee0ddba11ad5eed0123456789abcdef"
#define LIBC "0123456789abcdef0123456789abcdef01234567"
#define T0 1700000000000000000ull	/* 2023-11-14T22:13:20 */
#define DAY 86400000000000ull

static char ws[400];
static const char *bin;
static struct tu_ch srv;

static void image(struct prof_image_id *id, const char *bid, const char *path)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->build_id, sizeof(id->build_id), "%s", bid);
	snprintf(id->path, sizeof(id->path), "%s", path);
}

static void put_samples(struct prof_db *db, const char *ep, uint64_t start, int host,
			uint64_t n)
{
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_profile p;

	prof_profile_init(&p);
	image(&p.image, BID, "/usr/bin/appd");
	snprintf(p.event, sizeof(p.event), "cpu-clock");
	snprintf(p.period_unit, sizeof(p.period_unit), "ns");
	p.period = 50000;
	p.cycles_per_unit = 2.45;
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(prof_profile_add(&p, 0x1000 + 4 * (tu_rng() % 64), 1), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(prof_epoch_write(db, ep, &p, &err), 0);
	memset(&m, 0, sizeof(m));
	snprintf(m.cpu_name, sizeof(m.cpu_name), "host%d", host);
	m.samples = p.total;
	m.start_ns = start;
	m.end_ns = start + 60000000000ull;
	assert_int_equal(prof_epoch_meta_write(db, ep, &m, &err), 0);
	prof_profile_free(&p);
}

static void put_paths(struct prof_db *db, const char *ep)
{
	struct dcpi_err err = { 0 };
	struct path_profile p;

	path_profile_init(&p);
	image(&p.image, BID, "/usr/bin/appd");
	snprintf(p.source, sizeof(p.source), "tf-step");
	p.bursts = 10 + tu_rng() % 50;
	for (int i = 0; i < 200; i++) {
		uint64_t from = 0x1000 + 4 * (tu_rng() % 128);

		assert_int_equal(path_profile_add_edge(&p, from, tu_rng() % 3 ? from + 4 :
						       PATH_ELSEWHERE, 1 + tu_rng() % 9), 0);
		assert_int_equal(path_profile_add_step(&p, from, 1 + tu_rng() % 5), 0);
	}
	assert_int_equal(path_profile_add_edge(&p, PATH_ELSEWHERE, 0x1000, 3), 0);
	assert_int_equal(path_profile_normalize(&p), 0);
	assert_int_equal(path_epoch_write(db, ep, &p, &err), 0);
	path_profile_free(&p);
}

/* Loads of 200 distinct values (more than a list keeps: merges round), an
 * indirect call's targets tagged in libc, a branch. */
static void put_values(struct prof_db *db, const char *ep)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id libc;
	struct val_hotlist *h;
	struct val_profile p;
	int tag;

	val_profile_init(&p);
	image(&p.image, BID, "/usr/bin/appd");
	image(&libc, LIBC, "/lib/libc.so.6");
	p.new_mode = VAL_SPACESAVING;
	tag = val_profile_image_tag(&p, &libc);
	assert_true(tag > 0);
	for (int i = 0; i < 3000; i++) {
		assert_non_null(h = val_profile_list(&p, 0x1100, VAL_LOAD));
		val_hotlist_add_ss(h, tu_rng() % 4 ? 42 : tu_rng() % 200);
		assert_non_null(h = val_profile_list(&p, 0x1180, VAL_TARGET));
		val_hotlist_add_ss(h, VAL_CODE(tag, 0x9000 + 16 * (tu_rng() % 3)));
		assert_non_null(h = val_profile_list(&p, 0x1040, VAL_BRANCH));
		val_hotlist_add_ss(h, tu_rng() % 5 == 0);
		p.samples += 3;
	}
	assert_int_equal(val_profile_normalize(&p), 0);
	assert_int_equal(val_epoch_write(db, ep, &p, &err), 0);
	val_profile_free(&p);
}

static void put_data(struct prof_db *db, const char *ep)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id libc;
	struct data_profile p;
	int tag;

	data_profile_init(&p);
	image(&p.image, BID, "/usr/bin/appd");
	image(&libc, LIBC, "/lib/libc.so.6");
	p.window_ns = DATA_WINDOW_NS;
	tag = data_profile_tag(&p, &libc);
	assert_true(tag > 0);
	for (int i = 0; i < 300; i++) {
		int st = (int)(tu_rng() % 2);
		struct data_entry e = {
			.k = { .space = (uint32_t)(tu_rng() % 2), .line = 64 * (tu_rng() % 40) },
			.insn = 0x1100 + 4 * (tu_rng() % 8), .accesses = 1, .loads = (uint64_t)!st,
			.stores = (uint64_t)st, .mask = 1ull << (tu_rng() % 64),
		};

		if (e.k.space == DATA_HEAP) {
			e.k.tag = (uint32_t)tag;
			e.k.base = 0x9040;
			e.size = 4096 + 64 * (tu_rng() % 9);
		}
		assert_int_equal(data_profile_add(&p, &e), 0);
	}
	for (int i = 0; i < 20; i++) {
		struct data_share s = { .k = { .space = DATA_ANON, .line = 64 * (tu_rng() % 10) },
					.seen = 3, .true_w = tu_rng() % 2, .false_w = 1,
					.mask_a = 0xff, .mask_b = 0xff00 };

		assert_int_equal(data_profile_share(&p, &s), 0);
	}
	assert_int_equal(data_normalize(&p), 0);
	assert_int_equal(data_epoch_write(db, ep, &p, &err), 0);
	data_profile_free(&p);
}

/* Host h's database at dir: epochs days apart, each with every kind. */
static void make_host(const char *dir, int h, int epochs)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;

	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	for (int e = 0; e < epochs; e++) {
		char name[64];

		assert_int_equal(prof_db_epoch_new(db, name, sizeof(name), &err), 0);
		put_samples(db, name, T0 + (uint64_t)e * DAY + (uint64_t)h, h, 300);
		put_paths(db, name);
		put_values(db, name);
		put_data(db, name);
	}
	prof_db_close(db);
}

static const char *url_of(const char *db)
{
	static char u[200];

	snprintf(u, sizeof(u), "clickhouse://127.0.0.1:%d/%s", srv.http, db);
	return u;
}

static int group_setup(void **state)
{
	(void)state;
	return tu_fleet_setup(&bin, ws, sizeof(ws), "fleetk", &srv);
}

static int group_teardown(void **state)
{
	(void)state;
	return tu_fleet_stop(&srv, ws);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *query(const char *url, const char *sql)
{
	struct dcpi_err err = { 0 };
	struct fleet_conn *c = NULL;
	char *out = NULL;

	assert_int_equal(fleet_connect(url, &c, &err), 0);
	if (fleet_query(c, sql, NULL, 0, &out, &err) < 0)
		fail_msg("%s", err.msg);
	fleet_close(c);
	return out;
}

/* Every row of db.table again as a version one higher that no epochs row
 * commits: what a push cut before its commit leaves; a pull must not see
 * it. */
static void add_uncommitted(const char *db, const char *table)
{
	char sql[4096], *cols, *nl;

	snprintf(sql, sizeof(sql), "SELECT arrayStringConcat(groupArray(if(name = 'version', "
		 "'version + 1', name)), ', ') FROM (SELECT name FROM system.columns WHERE "
		 "database = '%s' AND table = '%s')", db, table);
	cols = query(url_of(db), sql);
	if ((nl = strchr(cols, '\n')))
		*nl = '\0';
	assert_non_null(strstr(cols, "version + 1"));
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s SELECT %s FROM %s.%s", db, table, cols, db,
		 table);
	free(query(url_of(db), sql));
	free(cols);
}

/*
 * Four hosts of two epochs, every kind, each pushed twice, and every row
 * again as an uncommitted version: the pull of the build-id holds the
 * .prof, the metadata and one .paths, .values and .data file, each equal
 * to dcpi merge's byte for byte.  Merged the other way round, the value
 * file comes out otherwise (printed, not asserted): the pull's (host,
 * epoch) order is what makes it equal.
 */
static void test_kinds_pull_equals_merge(void **state)
{
	char list[2048] = "", rev[2048] = "", dir[600];
	size_t k = 0, r = 0;
	double t[3];
	int same;

	(void)state;
	TU_NEED_SERVER();
	for (int h = 0; h < 4; h++) {
		snprintf(dir, sizeof(dir), "%s/h%02d", ws, h);
		make_host(dir, h, 2);
		k += (size_t)snprintf(list + k, sizeof(list) - k, "'%s' ", dir);
		snprintf(dir, sizeof(dir), "'%s/h%02d' ", ws, 3 - h);
		r += (size_t)snprintf(rev + r, sizeof(rev) - r, "%s", dir);
	}
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null", bin, url_of("kinds")), 0);
	for (int twice = 0; twice < 2; twice++)
		assert_int_equal(tu_sh("for d in %s; do '%s' push --to %s --db \"$d\" "
				       "--host \"$(basename \"$d\")\" 2>/dev/null || exit 1; done",
				       list, bin, url_of("kinds")), 0);
	/* rows of a push cut before its commit are invisible */
	add_uncommitted("kinds", "paths");
	add_uncommitted("kinds", "value_lists");
	add_uncommitted("kinds", "data_lines");
	t[0] = now_s();
	assert_int_equal(tu_sh("'%s' merge %s -o '%s/merged' 2>/dev/null", bin, list, ws), 0);
	t[1] = now_s();
	assert_int_equal(tu_sh("'%s' pull --from %s --build-id " BID " -o '%s/pulled'", bin,
			       url_of("kinds"), ws), 0);
	t[2] = now_s();
	fprintf(stderr, "kinds: dcpi merge %.2f s, dcpi pull %.2f s\n", t[1] - t[0], t[2] - t[1]);
	assert_int_equal(tu_sh("'%s' merge %s -o '%s/reversed' 2>/dev/null", bin, rev, ws), 0);
	assert_int_equal(tu_sh("cd '%1$s'/pulled/0* && test $(ls | wc -l) -eq 5 && "
			       "ls *.paths *.values *.data >/dev/null && for f in *; do "
			       "cmp \"$f\" '%1$s'/merged/0*/\"$f\" || exit 1; done", ws), 0);
	same = !tu_sh("cmp -s '%1$s'/merged/0*/*.values '%1$s'/reversed/0*/*.values", ws);
	fprintf(stderr, "kinds: dcpi merge in reverse host order gives %s value file\n",
		same ? "the same" : "another");
}

/* A database whose schema is version 1 (before the kinds' tables): push
 * and pull refuse it, naming both versions and the upgrade; --init
 * upgrades it and the push then goes through. */
static void test_old_schema(void **state)
{
	char dir[600], out[2048];
	FILE *f;
	size_t n;

	(void)state;
	TU_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s/old", ws);
	make_host(dir, 0, 1);
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null", bin, url_of("old")), 0);
	assert_int_equal(tu_sh("curl -sf 'http://127.0.0.1:%d/' --data-binary 'DROP TABLE "
			       "old.schema' && curl -sf 'http://127.0.0.1:%d/' --data-binary "
			       "'CREATE TABLE old.schema (version UInt32) ENGINE = TinyLog' && "
			       "curl -sf 'http://127.0.0.1:%d/' --data-binary 'INSERT INTO "
			       "old.schema VALUES (1)'", srv.http, srv.http, srv.http), 0);
	f = tu_popen("'%s' push --to %s --db '%s' 2>&1; echo rc=$?", bin, url_of("old"), dir);
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	pclose(f);
	fprintf(stderr, "old schema: %s", out);
	assert_non_null(strstr(out, "holds dcpi schema version 1; this dcpi reads and writes "
				    "version 5"));
	assert_non_null(strstr(out, "'dcpi push --init' upgrades it"));
	assert_null(strstr(out, "rc=0"));
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null && '%s' push --to %s --db "
			       "'%s' 2>/dev/null && '%s' pull --from %s --build-id " BID " -o "
			       "'%s/old.pulled' 2>/dev/null && ls '%s'/old.pulled/0*/*.values "
			       ">/dev/null", bin, url_of("old"), bin, url_of("old"), dir, bin,
			       url_of("old"), ws, ws), 0);
}

/* cpu-clock's total in dcpiprof --from URL ARGS --json, -1 on failure. */
static long long fleet_total(const char *args)
{
	FILE *f = tu_popen("'%s' prof --from %s -i --json %s 2>/dev/null | python3 -c "
			   "\"import json, sys; "
			   "print(json.load(sys.stdin)['total']['cpu-clock'])\"",
			   bin, url_of("since"), args);
	long long v = -1;

	assert_non_null(f);
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	pclose(f);
	return v;
}

/*
 * One host, two epochs a day apart (300 samples each): dcpiprof --from with
 * --since between them counts the second only, --until between them the
 * first only, both around them both; dcpi pull --since between them gives
 * the second epoch's path, value and data files as they are; a bad time is
 * refused as dcpi pull refuses it.
 */
static void test_prof_since_until(void **state)
{
	char dir[600], mid[32];

	(void)state;
	TU_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s/since", ws);
	make_host(dir, 0, 2);
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null && '%s' push --to %s --db "
			       "'%s' 2>/dev/null", bin, url_of("since"), bin, url_of("since"),
			       dir), 0);
	snprintf(mid, sizeof(mid), "%llu", (unsigned long long)((T0 + DAY / 2) / 1000000000ull));
	assert_int_equal(fleet_total(""), 600);
	{
		char a[80];

		snprintf(a, sizeof(a), "--since %s", mid);
		assert_int_equal(fleet_total(a), 300);
		snprintf(a, sizeof(a), "--until %s", mid);
		assert_int_equal(fleet_total(a), 300);
		assert_int_equal(fleet_total("--since 2023-11-14 --until 2023-11-16T00:00:00"),
				 600);
		assert_int_equal(fleet_total("--since 2023-11-15T12:00:00"), 300);
	}
	/* dcpi pull --since the same: the second epoch's files of every kind */
	assert_int_equal(tu_sh("'%s' pull --from %s --build-id " BID " --since %s -o "
			       "'%s/since.pulled' 2>/dev/null && cd '%s/since.pulled'/0* && "
			       "test $(ls | wc -l) -eq 5 && for f in *.paths *.values *.data; do "
			       "cmp \"$f\" '%s'/00000002/\"$f\" || exit 1; done", bin,
			       url_of("since"), mid, ws, ws, dir), 0);
	assert_int_equal(tu_sh("'%s' prof --from %s --since yesterday 2>&1 | grep -q "
			       "'yesterday: not a time (seconds, or "
			       "YYYY-MM-DD\\[THH:MM:SS\\])' && '%s' pull --from %s "
			       "--image appd --since yesterday -o '%s/x' 2>&1 | "
			       "grep -q 'yesterday: not a time'", bin, url_of("since"), bin,
			       url_of("since"), ws), 0);
}

TU_MAIN(group_setup, group_teardown,
	cmocka_unit_test(test_kinds_pull_equals_merge),
	cmocka_unit_test(test_old_schema),
	cmocka_unit_test(test_prof_since_until))
