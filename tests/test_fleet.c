/*
 * tests/test_fleet.c - a fleet on a real clickhouse-server (fleet/,
 * docs/fleet.md): hosts' databases pushed with `dcpi push` and pulled back
 * with `dcpi pull` equal `dcpi merge` of the same databases, file for file
 * and byte for byte (the metadata too, the contention canaries of the hosts
 * that have them included); pushes are idempotent, survive the server killed
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
#include "tu_fleet.h"
#include "tu_main.h"

#define BID "f1ee7c0ffee0ddba11ad5eed0123456789abcdef"

static char ws[400];
static const char *bin;
static struct tu_ch srv;
static struct tu_ch shard_a, shard_b;	/* test_two_shards's, stopped here too */

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
		if (host % 2 == 0) {	/* path bursts' canaries; the odd hosts have none */
			m.canary_bursts = 5 + (uint64_t)host;
			m.canary_alone = 2.0;
			m.canary_cycles = 2.0 + 0.1 * e + 1.0 / 3;
			m.canary_sd = 0.05 * host;
			m.canary_shared = 0.1 * (host % 3);
		}
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

static int group_setup(void **state)
{
	(void)state;
	return tu_fleet_setup(&bin, ws, sizeof(ws), "fleet", &srv);
}

static int group_teardown(void **state)
{
	(void)state;
	tu_ch_stop(&shard_a, SIGTERM);
	tu_ch_stop(&shard_b, SIGTERM);
	return tu_fleet_stop(&srv, ws);
}

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
	TU_NEED_SERVER();
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
		tu_assert_epoch_files_equal(list, merged, 2);
	}
	assert_int_equal(tu_sh("'%s' pull --from %s --image 't\tool' -o '%s/eq.byname' "
			       "2>/dev/null", bin, url_of(&srv, "eq"), ws), 0);
	{
		char a[600], b[600];

		snprintf(a, sizeof(a), "%s/eq.byname", ws);
		snprintf(b, sizeof(b), "%s/eq.merged", ws);
		tu_assert_epoch_files_equal(a, b, 2);
	}
}

/* sum of the local databases' samples of list, read back through dcpi pull
 * of both images into ws/tag.pulled.N, each compared with dcpi merge. */
static void assert_pull_equals_merge(const char *url, const char *list, const char *tag)
{
	char a[600], b[600];

	snprintf(a, sizeof(a), "%s/%s.pulled", ws, tag);
	snprintf(b, sizeof(b), "%s/%s.merged", ws, tag);
	assert_int_equal(tu_sh("'%s' merge %s -o '%s' 2>/dev/null", bin, list, b), 0);
	assert_int_equal(tu_sh("'%s' pull --from %s --build-id " BID " -o '%s' 2>/dev/null",
			       bin, url, a), 0);
	tu_assert_epoch_files_equal(a, b, 2);
}

/*
 * The server killed (SIGKILL) while four hosts push, then restarted: the
 * pushes fail or not, depending on when the kill lands; pushed again, the
 * fleet's aggregate equals dcpi merge's: no epoch lost, none counted twice.
 */
static void test_kill_mid_push(void **state)
{
	char list[4096], url[200];
	struct timespec ts = { 0, 400000000 };
	pid_t pid;
	int st = 0;

	(void)state;
	TU_NEED_SERVER();
	snprintf(url, sizeof(url), "%s", url_of(&srv, "kill"));
	make_fleet("kill", 4, 6, 6000, list, sizeof(list));
	init_db(url);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(push_all(url, list) ? 1 : 0);
	nanosleep(&ts, NULL);
	tu_ch_stop(&srv, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fprintf(stderr, "kill: the first pushes %s\n", st ? "failed (cut by the kill)" :
		"ended before the kill");
	assert_int_equal(tu_ch_start(&srv), 0);
	assert_int_equal(push_all(url, list), 0);
	assert_pull_equals_merge(url, list, "kill");
}

static char *query(const char *url, const char *sql)
{
	struct dcpi_err err = { 0 };
	struct fleet_conn *c = NULL;
	char *out = NULL;

	assert_int_equal(fleet_connect(url, &c, &err), 0);
	assert_int_equal(fleet_query(c, sql, NULL, 0, &out, &err), 0);
	fleet_close(c);
	return out;
}

/* Samples of the build-id image in epoch (NULL: the newest) of ws/db. */
static uint64_t bid_total(const char *rel, const char *epoch)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *v = NULL;
	struct prof_db *db = NULL;
	char dir[600], name[64];
	uint64_t t = 0;
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s/%s", ws, rel);
	assert_int_equal(prof_db_open(dir, 0, &db, &err), 0);
	if (!epoch) {
		assert_int_equal(prof_db_latest_epoch(db, name, sizeof(name), &err), 0);
		epoch = name;
	}
	assert_int_equal(prof_epoch_read(db, epoch, &v, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].image.build_id, BID))
			t += v[i].total;
	prof_profiles_free(v, n);
	prof_db_close(db);
	assert_true(t > 0);
	return t;
}

/*
 * A push cut after its sample rows and before its commit row (the commit
 * removed by hand): the pull leaves those rows out; the push sent again
 * repeats them, and they count once.
 */
static void test_partial_push_counted_once(void **state)
{
	char list[4096], url[200], *v;
	struct timespec ts = { 0, 100000000 };
	int i;

	(void)state;
	TU_NEED_SERVER();
	snprintf(url, sizeof(url), "%s", url_of(&srv, "part"));
	make_fleet("part", 2, 2, 300, list, sizeof(list));
	init_db(url);
	assert_int_equal(push_all(url, list), 0);
	free(query(url, "ALTER TABLE part.epochs DELETE WHERE host = 'h01' AND epoch = "
			"'00000002'"));
	for (i = 0; i < 300; i++) {
		v = query(url, "SELECT count() FROM part.epochs");
		if (atoi(v) == 3) {
			free(v);
			break;
		}
		free(v);
		nanosleep(&ts, NULL);
	}
	assert_true(i < 300);
	/* uncommitted rows are not counted: h01's second epoch is missing */
	assert_int_equal(tu_sh("'%s' pull --from %s --build-id " BID " --hosts 'h01' -o "
			       "'%s/part.one' 2>/dev/null", bin, url, ws), 0);
	assert_int_equal(bid_total("part.one", NULL), bid_total("part/h01", "00000001"));
	assert_int_equal(push_all(url, list), 0);
	v = query(url, "SELECT count() FROM part.epochs");
	assert_int_equal(atoi(v), 4);
	free(v);
	assert_pull_equals_merge(url, list, "part");
}

/* A fake server that answers every request with an old version string. */
static int fake_fd = -1;

static void *fake_server(void *arg)
{
	static const char ans[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close"
				  "\r\n\r\n1.1.54394\n";

	(void)arg;
	for (;;) {
		char buf[4096];
		int c = accept(fake_fd, NULL, NULL);

		if (c < 0)
			return NULL;
		if (read(c, buf, sizeof(buf)) > 0 && write(c, ans, sizeof(ans) - 1) < 0)
			perror("fake server");
		close(c);
	}
}

/* md5sum of every file of a database: what "nothing lost locally" checks. */
static void db_digest(const char *db, char *out, size_t len)
{
	char cmd[700];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -type f | sort | xargs md5sum", db);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	assert_int_equal(pclose(f), 0);
	assert_true(n > 0);
}

static void expect_fail(const char *args, const char *says)
{
	char err[600], buf[2048];
	long n;

	snprintf(err, sizeof(err), "%s/err.txt", ws);
	assert_int_not_equal(tu_sh("'%s' %s 2>'%s'", bin, args, err), 0);
	n = tu_slurp(err, buf, sizeof(buf));
	assert_true(n > 0);
	if (!strstr(buf, says))
		fail_msg("'%s' says '%s', not '%s'", args, buf, says);
}

/* A malformed URL, a refused connection, a server of the wrong version:
 * each a clear error, and the host's database as it was. */
static void test_errors(void **state)
{
	char list[4096], before[8192], after[8192], db[600], args[1200];
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	pthread_t th;

	(void)state;
	make_fleet("err", 1, 1, 50, list, sizeof(list));
	snprintf(db, sizeof(db), "%s/err/h00", ws);
	db_digest(db, before, sizeof(before));
	snprintf(args, sizeof(args), "push --db '%s' --to http://127.0.0.1:8123/x", db);
	expect_fail(args, "not a clickhouse://HOST:PORT/DATABASE URL");
	snprintf(args, sizeof(args), "push --db '%s' --to clickhouse://127.0.0.1:99999/x", db);
	expect_fail(args, "bad port '99999'");
	snprintf(args, sizeof(args), "push --db '%s' --to 'clickhouse://127.0.0.1:80/x;drop'", db);
	expect_fail(args, "bad database name");
	snprintf(args, sizeof(args), "push --db '%s' --to clickhouse://127.0.0.1:%d/x", db,
		 tu_free_port());
	expect_fail(args, "Couldn't connect to server");
	fake_fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fake_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fake_fd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(listen(fake_fd, 8), 0);
	assert_int_equal(pthread_create(&th, NULL, fake_server, NULL), 0);
	snprintf(args, sizeof(args), "push --db '%s' --to clickhouse://127.0.0.1:%d/x", db,
		 ntohs(a.sin_port));
	expect_fail(args, "ClickHouse '1.1.54394' answered; dcpi needs 18.16 or newer");
	shutdown(fake_fd, SHUT_RDWR);
	close(fake_fd);
	pthread_join(th, NULL);
	if (tu_fleet_up) {
		snprintf(args, sizeof(args), "push --db '%s' --to %s", db, url_of(&srv, "noschema"));
		expect_fail(args, "no dcpi schema in database noschema");
	}
	db_digest(db, after, sizeof(after));
	assert_string_equal(before, after);
}

/*
 * Two shards behind Distributed tables, hosts sharded by name: every host
 * pushes to the first server, both shards hold some of them, and the pull
 * from either equals dcpi merge's files byte for byte.
 */

static void test_two_shards(void **state)
{
	char list[4096], remote[1024], url[200], *v;
	struct tu_ch *a = &shard_a, *b = &shard_b;
	int ok;

	(void)state;
	TU_NEED_SERVER();
	assert_int_equal(tu_ch_alloc(a, ws, "shard1"), 0);
	assert_int_equal(tu_ch_alloc(b, ws, "shard2"), 0);
	snprintf(remote, sizeof(remote), "<fleet2><shard><replica><host>127.0.0.1</host><port>%d"
		 "</port></replica></shard><shard><replica><host>127.0.0.1</host><port>%d</port>"
		 "</replica></shard></fleet2>", a->tcp, b->tcp);
	ok = !tu_ch_config(a, remote) && !tu_ch_config(b, remote) && !tu_ch_start(a) &&
	     !tu_ch_start(b);
	if (ok) {
		snprintf(url, sizeof(url), "%s", url_of(a, "dist"));
		ok = !tu_sh("'%s' push --to %s --init --cluster fleet2 2>/dev/null", bin, url) &&
		     !tu_sh("'%s' push --to %s --init --cluster fleet2 2>/dev/null", bin,
			    url_of(b, "dist"));
	}
	if (ok) {
		make_fleet("dist", 8, 2, 400, list, sizeof(list));
		ok = !push_all(url, list);
	}
	if (ok) {
		v = query(url_of(b, "dist"), "SELECT uniqExact(host) FROM dist.epochs_local");
		ok = atoi(v) > 0 && atoi(v) < 8;
		free(v);
		v = query(url_of(a, "dist"), "SELECT uniqExact(host) FROM dist.epochs_local");
		ok = ok && atoi(v) > 0 && atoi(v) < 8;
		free(v);
	}
	if (ok)
		assert_pull_equals_merge(url_of(b, "dist"), list, "dist");
	tu_ch_stop(a, SIGTERM);
	tu_ch_stop(b, SIGTERM);
	assert_true(ok);
}

TU_MAIN(group_setup, group_teardown,
	cmocka_unit_test(test_push_pull_equals_merge),
	cmocka_unit_test(test_partial_push_counted_once),
	cmocka_unit_test(test_kill_mid_push),
	cmocka_unit_test(test_errors),
	cmocka_unit_test(test_two_shards))
