/*
 * tests/test_fleet.c - a fleet on a real clickhouse-server (fleet/,
 * docs/fleet.md): hosts' databases pushed with `dcpi push` and pulled back
 * with `dcpi pull` equal `dcpi merge` of the same databases, file for file
 * and byte for byte; pushes are idempotent, survive the server killed
 * mid-push, and fail with clear errors on a bad URL, a refused connection
 * or a server of the wrong version.  Each server is private to the test
 * (tests/tu_clickhouse.h); without clickhouse-server the tests skip.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_clickhouse.h"
#include "tu_run.h"

#define BID "f1ee7c0ffee0ddba11ad5eed0123456789abcdef"

static char ws[400];
static const char *bin;
static struct tu_ch srv;
static int have_server;

/* One host's database: epochs of two images (one with a build-id, one
 * without), offsets and counts drawn per host. */
static void make_host(const char *dir, int host, int epochs, int entries)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;

	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	for (int e = 0; e < epochs; e++) {
		struct prof_epoch_meta m;
		char name[64];

		assert_int_equal(prof_db_epoch_new(db, name, sizeof(name), &err), 0);
		memset(&m, 0, sizeof(m));
		for (int im = 0; im < 2; im++) {
			struct prof_profile p;

			prof_profile_init(&p);
			if (im == 0) {
				snprintf(p.image.build_id, sizeof(p.image.build_id), "%s", BID);
				snprintf(p.image.path, sizeof(p.image.path), "/usr/bin/appd");
			} else {
				snprintf(p.image.path, sizeof(p.image.path), "/opt/tool/bin/t\tool");
				p.image.size = 123456;
				p.image.mtime = 1700000000;
			}
			snprintf(p.event, sizeof(p.event), "cpu-clock");
			snprintf(p.period_unit, sizeof(p.period_unit), "ns");
			p.period = 50000;
			p.cycles_per_unit = 2.45 + 0.01 * (host % 3);
			for (int i = 0; i < entries; i++)
				assert_int_equal(prof_profile_add(&p, 0x1000 + 4 * (tu_rng() % 4096),
								  1 + tu_rng() % 100), 0);
			assert_int_equal(prof_profile_normalize(&p), 0);
			m.samples += p.total;
			assert_int_equal(prof_epoch_write(db, name, &p, &err), 0);
			prof_profile_free(&p);
		}
		snprintf(m.cpu_vendor, sizeof(m.cpu_vendor), "AuthenticAMD");
		m.cpu_family = 25;
		m.cpu_model = 17;
		snprintf(m.cpu_name, sizeof(m.cpu_name), "AMD EPYC host%d", host);
		m.cycles_per_ns = 2.4 + 0.1 * host;
		m.cycles_per_sample = 120000 + host;
		m.calibrated = 1;
		snprintf(m.settings, sizeof(m.settings), "cpu-clock 20000 Hz\n'quoted'\\");
		m.start_ns = 1700000000000000000ull + (uint64_t)e * 60000000000ull + (uint64_t)host;
		m.end_ns = m.start_ns + 60000000000ull;
		m.lost_samples = (uint64_t)host;
		assert_int_equal(prof_epoch_meta_write(db, name, &m, &err), 0);
	}
	prof_db_close(db);
}

/* Hosts h0..h(n-1) under ws/tag/, their paths (space-separated) to list. */
static void make_fleet(const char *tag, int n, int epochs, int entries, char *list, size_t len)
{
	char dir[600];
	size_t k = 0;

	snprintf(dir, sizeof(dir), "%s/%s", ws, tag);
	assert_int_equal(mkdir(dir, 0700), 0);
	list[0] = '\0';
	for (int h = 0; h < n; h++) {
		snprintf(dir, sizeof(dir), "%s/%s/h%02d", ws, tag, h);
		make_host(dir, h, epochs, entries);
		k += (size_t)snprintf(list + k, len - k, "%s ", dir);
		assert_true(k < len);
	}
}

/* dcpi push of every host of list to url, each as its folder's name. */
static int push_all(const char *url, const char *list)
{
	char cmd[16384];

	snprintf(cmd, sizeof(cmd), "for d in %s; do '%s' push --to %s --db \"$d\" "
		 "--host \"$(basename \"$d\")\" 2>/dev/null || exit 1; done", list, bin,
		 url);
	return system(cmd);
}

/* Every file of a's single epoch is in b's single epoch with the same bytes,
 * and a holds n files. */
static void assert_epoch_files_equal(const char *a, const char *b, int n)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "cd '%s'/0* && test $(ls | wc -l) -eq %d && for f in *; do "
		 "cmp -s \"$f\" '%s'/0*/\"$f\" || { echo \"differs: $f\" >&2; exit 1; }; done",
		 a, n, b);
	assert_int_equal(system(cmd), 0);
}

static int group_setup(void **state)
{
	(void)state;
	bin = getenv("DCPI_BIN");
	if (!bin || tu_workspace(ws, sizeof(ws), "fleet") < 0)
		return -1;
	if (!tu_ch_available())
		return 0;
	if (tu_ch_prepare(&srv, ws, "ch") < 0 || tu_ch_start(&srv) < 0) {
		tu_ch_stop(&srv, SIGKILL);
		return -1;
	}
	have_server = 1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_ch_stop(&srv, SIGTERM);
	if (ws[0])
		tu_rm_tree(ws);
	return 0;
}

#define NEED_SERVER() do { if (!have_server) skip(); } while (0)

/* url of the shared server's database db. */
static const char *url_of(const struct tu_ch *ch, const char *db)
{
	static char u[200];

	snprintf(u, sizeof(u), "clickhouse://127.0.0.1:%d/%s", ch->http, db);
	return u;
}

static void init_db(const char *url)
{
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null", bin, url), 0);
}

/* Six hosts of three epochs pushed, one host pushed twice; the pull of the
 * build-id and of the other image by name equal dcpi merge's files. */
static void test_push_pull_equals_merge(void **state)
{
	char list[4096], url[200];

	(void)state;
	NEED_SERVER();
	snprintf(url, sizeof(url), "%s", url_of(&srv, "eq"));
	make_fleet("eq", 6, 3, 500, list, sizeof(list));
	init_db(url);
	init_db(url);		/* --init twice is harmless */
	assert_int_equal(push_all(url, list), 0);
	assert_int_equal(push_all(url, list), 0);	/* every epoch counted once */
	assert_int_equal(tu_sh("'%s' merge %s -o '%s/eq.merged' 2>/dev/null", bin, list, ws), 0);
	assert_int_equal(tu_sh("'%s' pull --from %s --build-id " BID " -o '%s/eq.pulled' "
			       "2>/dev/null", bin, url, ws), 0);
	/* one .prof and the metadata */
	snprintf(list, sizeof(list), "%s/eq.pulled", ws);
	{
		char merged[600];

		snprintf(merged, sizeof(merged), "%s/eq.merged", ws);
		assert_epoch_files_equal(list, merged, 2);
	}
	assert_int_equal(tu_sh("'%s' pull --from %s --image 't\tool' -o '%s/eq.byname' "
			       "2>/dev/null", bin, url_of(&srv, "eq"), ws), 0);
	{
		char a[600], b[600];

		snprintf(a, sizeof(a), "%s/eq.byname", ws);
		snprintf(b, sizeof(b), "%s/eq.merged", ws);
		assert_epoch_files_equal(a, b, 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pull_equals_merge),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
