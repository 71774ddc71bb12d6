/*
 * tests/test_fleet_daemon.c - `dcpid --push URL` (tools/cmd_daemon.c,
 * fleet/queue.c): after each flush the epoch is pushed; while the server
 * cannot be reached the epochs wait in the database's push-queue and are
 * pushed later, in order, losing nothing.  The server (tests/tu_clickhouse.h)
 * is down for the first flushes and epochs, then started: every epoch of the
 * host's database arrives, its newest version counted once with the
 * database's own total, the epochs first pushed in their order, and the
 * queue is empty at the end.  Without clickhouse-server the test skips.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "tu_fleet.h"
#include "tu_main.h"

static char ws[400], wl[600], db[500], url[200];
static const char *bin;
static struct tu_ch srv;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int group_setup(void **state)
{
	(void)state;
	if (tu_run_setup(&bin, wl, sizeof(wl), "cpubound", ws, sizeof(ws), "fleet-daemon") < 0)
		return -1;
	snprintf(db, sizeof(db), "%s/db", ws);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return tu_fleet_stop(&srv, ws);
}

static char *query(const char *sql)
{
	struct dcpi_err err = { 0 };
	struct fleet_conn *c = NULL;
	char *out = NULL;

	if (fleet_connect(url, &c, &err) || fleet_query(c, sql, NULL, 0, &out, &err))
		fail_msg("%s: %s", sql, err.msg);
	fleet_close(c);
	return out;
}

/* Lines of the queue file (0 when it is missing). */
static int queued(void)
{
	char path[600], buf[4096];
	int n = 0;

	snprintf(path, sizeof(path), "%s/push-queue", db);
	if (tu_slurp(path, buf, sizeof(buf)) < 0)
		return 0;
	for (char *s = buf; *s; s++)
		n += *s == '\n';
	return n;
}

/* "epoch\ttotal\n" of every epoch of the local database, oldest first. */
static void local_totals(char *out, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d = NULL;
	char **names = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(prof_db_open(db, 0, &d, &err), 0);
	assert_int_equal(prof_db_epochs(d, &names, &n, &err), 0);
	out[0] = '\0';
	for (size_t e = 0; e < n; e++) {
		struct prof_profile *v = NULL;
		uint64_t t = 0;
		size_t np = 0;

		assert_int_equal(prof_epoch_read(d, names[e], &v, &np, &err), 0);
		for (size_t i = 0; i < np; i++)
			t += v[i].total;
		prof_profiles_free(v, np);
		k += (size_t)snprintf(out + k, len - k, "%s\t%llu\n", names[e],
				      (unsigned long long)t);
		assert_true(k < len);
	}
	prof_names_free(names, n);
	prof_db_close(d);
}

static pid_t start_daemon(void)
{
	char pidfile[600], errfile[600];
	char *argv[] = { (char *)bin, "daemon", "--db", db, "--pidfile", pidfile, "--flush", "1",
			 "--push", url, "--user-only", "--no-calibrate", "-F", "500", "-q", NULL };
	pid_t pid;

	snprintf(pidfile, sizeof(pidfile), "%s/pid", ws);
	snprintf(errfile, sizeof(errfile), "%s/dcpid.err", ws);
	pid = tu_spawn(argv, NULL, errfile, 0);
	for (int i = 0; i < 400 && access(pidfile, F_OK); i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			tu_sh("cat '%s' >&2", errfile);
			fail_msg("dcpid exited before sampling");
		}
		sleep_ms(50);
	}
	assert_int_equal(access(pidfile, F_OK), 0);
	return pid;
}

/* A busy loop of the workload, in a process group of its own. */
static pid_t start_load(void)
{
	char cmd[800], err[600];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	snprintf(cmd, sizeof(cmd), "while :; do '%s' >/dev/null; done", wl);
	snprintf(err, sizeof(err), "%s/load.err", ws);
	return tu_spawn(argv, NULL, err, TU_SPAWN_GROUP);
}

/* Three epochs while the server is down (two SIGHUPs, a flush each second),
 * then the server and its schema; one more epoch; dcpid stopped. */
static void run_fleet_daemon(void)
{
	pid_t d, load = start_load();
	int st;

	d = start_daemon();
	sleep_ms(2500);
	kill(d, SIGHUP);
	sleep_ms(2500);
	kill(d, SIGHUP);
	sleep_ms(2500);
	fprintf(stderr, "fleet_daemon: %d epochs queued while the server is down\n", queued());
	assert_true(queued() >= 2);
	assert_int_equal(tu_ch_start(&srv), 0);
	assert_int_equal(tu_sh("'%s' push --to %s --init 2>/dev/null", bin, url), 0);
	sleep_ms(2500);
	kill(d, SIGHUP);
	sleep_ms(2000);
	kill(d, SIGTERM);
	assert_int_equal(waitpid(d, &st, 0), d);
	kill(-load, SIGKILL);
	waitpid(load, NULL, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tu_sh("cat '%s/dcpid.err' >&2", ws);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_push_queue_in_order(void **state)
{
	char local[4096], *fleet, *order;

	(void)state;
	if (!tu_ch_available())
		skip();
	assert_int_equal(tu_ch_prepare(&srv, ws, "ch"), 0);
	snprintf(url, sizeof(url), "%s", srv.url);
	run_fleet_daemon();
	local_totals(local, sizeof(local));
	/* each epoch's newest committed version, its rows each once */
	fleet = query("SELECT epoch, sum(count) FROM (SELECT DISTINCT host, epoch, start_ns, "
		      "version, build_id, path, size, mtime, event, offset, count FROM dcpi.samples "
		      "WHERE (host, epoch, start_ns, version) IN (SELECT host, epoch, start_ns, "
		      "max(version) FROM dcpi.epochs GROUP BY host, epoch, start_ns)) "
		      "GROUP BY epoch ORDER BY epoch");
	order = query("SELECT groupArray(epoch) FROM (SELECT epoch, min(pushed_ns) AS t FROM "
		      "dcpi.epochs GROUP BY epoch ORDER BY t)");
	fprintf(stderr, "fleet_daemon: local epochs and totals:\n%sfleet's:\n%sfirst pushed in "
		"the order %s", local, fleet, order);
	assert_true(strchr(local, '\n') != strrchr(local, '\n'));	/* several epochs */
	assert_string_equal(fleet, local);
	assert_int_equal(queued(), 0);
	free(fleet);
	fleet = query("SELECT groupArray(epoch) FROM (SELECT DISTINCT epoch FROM dcpi.epochs "
		      "ORDER BY epoch)");
	assert_string_equal(order, fleet);
	free(order);
	free(fleet);
}

TU_MAIN(group_setup, group_teardown,
	cmocka_unit_test(test_push_queue_in_order))
