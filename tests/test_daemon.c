/*
 * test_daemon.c - dcpid end to end (DCPI paper sec. 4.3): system-wide
 * samples of a workload started while it runs land on the workload's image
 * in its 3:1 ratio; a process already running when the daemon starts is
 * found through /proc/PID/maps; SIGUSR1 flushes while the daemon keeps
 * running, SIGHUP starts a new epoch, SIGINT flushes and exits 0.
 * Procedures are located with nm and readelf, not with dcpi's image code.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_main.h"
#include "tu_run.h"

static char ws[256], twoprocs[PROF_PATH_MAX];
static char db[TU_RUN_NAME], pidfile[TU_RUN_NAME], errfile[TU_RUN_NAME];
static const char *dcpi_bin;

static int setup(void **state)
{
	return tu_run_setup(&dcpi_bin, twoprocs, sizeof(twoprocs), "twoprocs", ws, sizeof(ws),
			    "daemon");
}

static void new_db(void)
{
	tu_run_names(ws, db, errfile, pidfile, "pid");
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Start argv with stdout to /dev/null, stderr to errfile. */
static pid_t start(char *const argv[])
{
	return tu_spawn(argv, NULL, errfile, TU_SPAWN_ERR_APPEND);
}

static int wait_exit(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void show_err(void)
{
	char buf[2048];

	if (tu_slurp(errfile, buf, sizeof(buf)) > 0)
		print_message("daemon said: %s", buf);
}

/* dcpid with extra options; returns once its pidfile says it samples. */
static pid_t start_daemon(const char *flush, const char *duration)
{
	char *argv[16] = { (char *)dcpi_bin, "daemon", "--db", db, "--pidfile", pidfile,
			   "--flush", (char *)flush, NULL };
	int k = 8;
	pid_t pid;

	if (duration) {
		argv[k++] = "--duration";
		argv[k++] = (char *)duration;
	}
	argv[k] = NULL;
	pid = start(argv);
	for (int i = 0; i < 200 && access(pidfile, F_OK); i++) {
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid) {
			show_err();
			fail_msg("dcpid exited before sampling");
		}
		sleep_ms(50);
	}
	assert_int_equal(access(pidfile, F_OK), 0);
	return pid;
}

static pid_t run_twoprocs(const char *reps)
{
	char *argv[] = { twoprocs, (char *)reps, NULL };

	return start(argv);
}

static size_t count_epochs(char ***names)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	size_t n = 0;

	*names = NULL;
	if (prof_db_open(db, 0, &d, &err))
		return 0;
	if (prof_db_epochs(d, names, &n, &err))
		n = 0;
	prof_db_close(d);
	return n;
}

/* Profiles and metadata of epoch i (oldest first). */
static void read_epoch(size_t i, struct prof_profile **p, size_t *n,
		       struct prof_epoch_meta *m)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char **names;
	size_t ne;

	assert_int_equal(prof_db_open(db, 0, &d, &err), 0);
	assert_int_equal(prof_db_epochs(d, &names, &ne, &err), 0);
	assert_true(i < ne);
	if (prof_epoch_read(d, names[i], p, n, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(prof_epoch_meta_read(d, names[i], m, &err), 0);
	prof_names_free(names, ne);
	prof_db_close(d);
}

static const struct prof_profile *need_twoprocs(const struct prof_profile *p, size_t n)
{
	const struct prof_profile *w = find_image(p, n, "/workloads/twoprocs");

	if (!w)
		fail_msg("no samples on twoprocs");
	return w;
}

/* A workload started while dcpid runs (--flush 1 --duration: it stops by itself). */
static void test_daemon_twoprocs(void **state)
{
	struct prof_epoch_meta m;
	struct prof_profile *p;
	char **names;
	pid_t d, w;
	size_t n;

	new_db();
	d = start_daemon("1", "4");
	w = run_twoprocs("100");
	assert_int_equal(wait_exit(w), 0);
	assert_int_equal(wait_exit(d), 0);
	assert_int_equal(access(pidfile, F_OK), -1);	/* removed at exit */
	assert_int_equal(count_epochs(&names), 1);
	prof_names_free(names, 1);
	read_epoch(0, &p, &n, &m);
	print_message("daemon: %llu samples, settings %s\n", (unsigned long long)m.samples,
		      m.settings);
	tu_check_twoprocs(twoprocs, need_twoprocs(p, n), "daemon");
	assert_non_null(strstr(m.settings, "system-wide"));
	assert_int_equal(m.calibrated, 1);
	/* every flush merged into the one epoch: the metadata has the sum */
	assert_true(m.samples == tu_sum_totals(p, n));
	assert_true(m.start_ns > 0 && m.end_ns > m.start_ns);
	prof_profiles_free(p, n);
}

/* A process running before dcpid starts: its maps come from /proc. */
static void test_daemon_preexisting(void **state)
{
	struct prof_epoch_meta m;
	struct prof_profile *p;
	pid_t d, t;
	size_t n;

	new_db();
	t = run_twoprocs("400");
	sleep_ms(200);
	d = start_daemon("60", NULL);
	assert_int_equal(wait_exit(t), 0);
	kill(d, SIGINT);
	assert_int_equal(wait_exit(d), 0);
	read_epoch(0, &p, &n, &m);
	tu_check_twoprocs(twoprocs, need_twoprocs(p, n), "preexisting");
	prof_profiles_free(p, n);
}

/* Whether any profile file exists in the newest epoch. */
static int has_profiles(void)
{
	char **names, dir[600];
	size_t ne = count_epochs(&names);
	struct dirent *de;
	int found = 0;
	DIR *dp;

	if (!ne)
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", db, names[ne - 1]);
	prof_names_free(names, ne);
	dp = opendir(dir);
	if (!dp)
		return 0;
	while ((de = readdir(dp)))
		found |= strlen(de->d_name) > 5 &&
			 !strcmp(de->d_name + strlen(de->d_name) - 5, ".prof");
	closedir(dp);
	return found;
}

/* SIGUSR1 flushes while running; SIGHUP starts a new epoch; SIGINT ends. */
static void test_daemon_signals(void **state)
{
	struct prof_epoch_meta m;
	struct prof_profile *p;
	char **names;
	pid_t d, w;
	size_t n, ne = 0;
	int i;

	new_db();
	d = start_daemon("3600", NULL);
	w = run_twoprocs("40");
	assert_int_equal(wait_exit(w), 0);
	assert_false(has_profiles());		/* nothing flushed yet */
	kill(d, SIGUSR1);
	for (i = 0; i < 100 && !has_profiles(); i++)
		sleep_ms(50);
	assert_true(has_profiles());
	assert_int_equal(kill(d, 0), 0);	/* and still running */
	kill(d, SIGHUP);
	sleep_ms(300);		/* taken at the next poll; the epoch's directory is
				 * made at its first flush (docs/profile-format.md: no empty epochs) */
	ne = count_epochs(&names);
	prof_names_free(names, ne);
	assert_int_equal(ne, 1);
	w = run_twoprocs("40");
	assert_int_equal(wait_exit(w), 0);
	kill(d, SIGINT);
	assert_int_equal(wait_exit(d), 0);
	ne = count_epochs(&names);
	prof_names_free(names, ne);
	assert_int_equal(ne, 2);
	for (size_t e = 0; e < 2; e++) {
		read_epoch(e, &p, &n, &m);
		print_message("epoch %zu: %llu samples\n", e, (unsigned long long)m.samples);
		tu_check_twoprocs(twoprocs, need_twoprocs(p, n), "signals");
		assert_true(m.samples == tu_sum_totals(p, n));
		prof_profiles_free(p, n);
	}
}

static void test_daemon_bad_options(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "daemon", "--db", db, "--flush", "x", NULL };
	char *argv2[] = { (char *)dcpi_bin, "daemon", "--db", db, "-e", "nope", NULL };

	new_db();
	assert_int_not_equal(wait_exit(start(argv)), 0);
	assert_int_not_equal(wait_exit(start(argv2)), 0);
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_daemon_bad_options),
	cmocka_unit_test(test_daemon_twoprocs),
	cmocka_unit_test(test_daemon_preexisting),
	cmocka_unit_test(test_daemon_signals))
