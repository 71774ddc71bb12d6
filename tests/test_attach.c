/*
 * test_attach.c - kernel samples and attaching to running programs
 * (collect/attach.c, image/kallsyms.c, report/load.c):
 *
 *   - /proc/kallsyms is read into procedures: text symbols only, one name
 *     per address (the global one), each up to the next; addresses that
 *     read as 0 are said to be unreadable;
 *   - a program that lives in write(2) and getpid(2) has kernel procedures
 *     among its top entries, named, as the image "[kernel.kallsyms]";
 *     --no-kernel leaves them out; dcpicalc on one says why it cannot;
 *   - `dcpi record -p PID --duration S` on workloads/twoprocs, started
 *     beforehand, gives the profile of a recording from the start: the same
 *     top procedures, shares within 3 points;
 *   - -p PID -- CMD stops when CMD exits; threads the program starts after
 *     -p are sampled too (workloads/latethreads); -t TID samples that
 *     thread, and recording ends by itself when it exits.
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
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dcpi/kallsyms.h"
#include "dcpi/report.h"
#include "tu_run.h"
#include "tu_main.h"

static const char *bin;
static char ws[256], sysloop[256], twoprocs[256];

static int setup(void **state)
{
	(void)state;
	if (tu_run_setup(&bin, sysloop, sizeof(sysloop), "sysloop", ws, sizeof(ws), "attach"))
		return -1;
	tu_build_file(twoprocs, sizeof(twoprocs), "workloads/twoprocs");
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- /proc/kallsyms ---------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_kallsyms_parse(void **state)
{
	char *path = tu_in(ws, "kallsyms");
	struct dcpi_err err = { 0 };
	struct ksyms k;

	(void)state;
	write_file(path,
		   "ffffffff81000000 T _stext\n"
		   "ffffffff81000000 t local_twin\n"
		   "ffffffff81000040 D some_data\n"
		   "ffffffff81000100 t helper\n"
		   "ffffffff81000180 W weak_fn\n"
		   "ffffffffc0001000 t modfn\t[ext4]\n");
	assert_int_equal(ksyms_load(path, &k, &err), 0);
	assert_int_equal(k.n, 4);	/* the twin merged, the data left out */
	assert_string_equal(k.e[0].name, "_stext");
	assert_int_equal(k.e[0].size, 0x100);
	assert_string_equal(k.e[1].name, "helper");
	assert_int_equal(k.e[1].size, 0x80);
	assert_string_equal(k.e[3].name, "modfn [ext4]");
	assert_int_equal(ksyms_find(&k, 0xffffffff81000040ULL), 0);
	assert_int_equal(ksyms_find(&k, 0xffffffff81000180ULL), 2);
	assert_int_equal(ksyms_find(&k, 0xffffffff80000000ULL), -1);
	ksyms_free(&k);

	/* what an unprivileged reader sees */
	write_file(path, "0000000000000000 T _stext\n0000000000000000 t helper\n");
	assert_int_equal(ksyms_load(path, &k, &err), -EPERM);
	assert_non_null(strstr(err.msg, "read as 0"));
	assert_int_equal(k.n, 0);
}

/* --- recordings ------------------------------------------------------------ */

/* Run a shell command line; its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return tu_sh("%s", cmd);
}

/* The share (%) of samples of procedure name in image (NULL: any), and
 * its rank among the rows (-1 when absent). */
static double share_of(const struct rep_table *t, const char *name, const char *image,
		       int *rank)
{
	uint64_t total = t->nevents ? t->events[0].total : 0;

	*rank = -1;
	for (size_t i = 0; i < t->nrows; i++) {
		if (strcmp(t->rows[i].name, name) || (image && strcmp(t->rows[i].image, image)))
			continue;
		*rank = (int)i;
		return total ? 100.0 * (double)t->rows[i].samples[0] / (double)total : 0;
	}
	return 0;
}

static void load(const char *db, struct rep_table *t)
{
	struct dcpi_err err = { 0 };
	int rc = rep_load_table(db, NULL, t, NULL, 0, &err);

	if (rc < 0)
		fail_msg("%s: %s", db, err.msg);
	assert_true(t->nevents > 0);
}

/* Samples of the kernel image and how many of its top rows are named. */
static uint64_t kernel_rows(const struct rep_table *t, size_t top, int *named)
{
	uint64_t n = 0;

	*named = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct rep_row *r = &t->rows[i];

		if (strcmp(r->image, KSYMS_IMAGE))
			continue;
		n += r->samples[0];
		if (i < top && r->name[0] != '[')
			(*named)++;
	}
	return n;
}

static void test_kernel_named(void **state)
{
	char db[TU_RUN_NAME], err[TU_RUN_NAME], out[TU_RUN_NAME], buf[4096];
	struct rep_table t;
	uint64_t k;
	int named;

	(void)state;
	tu_run_names(ws, db, err, out, "calc");
	assert_int_equal(run("%s record -q --no-paths --db %s -- %s 1 >/dev/null 2>%s", bin, db,
			     sysloop, err), 0);
	load(db, &t);
	k = kernel_rows(&t, 10, &named);
	print_message("kernel: %llu of %llu samples, %d named among the top 10\n",
		      (unsigned long long)k, (unsigned long long)t.events[0].total, named);
	assert_true(k * 4 > t.events[0].total);		/* mostly in system calls */
	assert_true(named >= 3);
	for (size_t i = 0; i < t.nrows; i++)
		if (!strcmp(t.rows[i].image, KSYMS_IMAGE) && t.rows[i].name[0] != '[') {
			/* dcpicalc on one: a clear refusal, no crash */
			assert_int_equal(run("%s calc --db %s '%s' >/dev/null 2>%s", bin, db,
					     t.rows[i].name, out), 1 << 8);
			assert_true(tu_slurp(out, buf, sizeof(buf)) > 0);
			assert_non_null(strstr(buf, "a kernel procedure"));
			break;
		}
	rep_free(&t);

	tu_run_names(ws, db, err, NULL, NULL);
	assert_int_equal(run("%s record -q --no-paths --no-kernel --db %s -- %s 0.5 >/dev/null "
			     "2>%s", bin, db, sysloop, err), 0);
	load(db, &t);
	assert_int_equal(kernel_rows(&t, 10, &named), 0);
	rep_free(&t);
}

static pid_t start(const char *prog, const char *arg)
{
	char *argv[] = { (char *)prog, (char *)arg, NULL };
	char *err = tu_in(ws, "bg.err");

	return tu_spawn(argv, NULL, err, 0);
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/*
 * `dcpi record --db DB OPTS` (OPTS from fmt: what to attach to, pid's -p or
 * -t, and how long), its errors in err; then pid stopped (SIGTERM) when
 * stop_it, else waited for.  The record succeeded; its wall-clock seconds.
 */
static double record_attached(pid_t pid, int stop_it, const char *db, const char *err,
			      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static double record_attached(pid_t pid, int stop_it, const char *db, const char *err,
			      const char *fmt, ...)
{
	char opts[512];
	double t0, took;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(opts, sizeof(opts), fmt, ap);
	va_end(ap);
	t0 = mono_s();
	rc = run("%s record --db %s %s 2>%s", bin, db, opts, err);
	took = mono_s() - t0;
	if (stop_it)
		stop(pid);
	else
		waitpid(pid, NULL, 0);
	assert_int_equal(rc, 0);
	return took;
}

static void test_attach_shape(void **state)
{
	char db[TU_RUN_NAME], err[TU_RUN_NAME];
	struct rep_table from, att;
	double a0, b0, a1, b1;
	int ra0, rb0, ra1, rb1;
	pid_t pid;

	(void)state;
	tu_run_names(ws, db, err, NULL, NULL);
	assert_int_equal(run("%s record -q --no-paths --db %s -- %s 150 >/dev/null 2>%s", bin,
			     db, twoprocs, err), 0);
	load(db, &from);

	pid = start(twoprocs, "2000");	/* far longer than we look */
	usleep(300000);
	tu_run_names(ws, db, err, NULL, NULL);
	record_attached(pid, 1, db, err, "-q -p %d --duration 1", (int)pid);
	load(db, &att);

	a0 = share_of(&from, "proc_a", NULL, &ra0);
	b0 = share_of(&from, "proc_b", NULL, &rb0);
	a1 = share_of(&att, "proc_a", NULL, &ra1);
	b1 = share_of(&att, "proc_b", NULL, &rb1);
	print_message("from the start: proc_a %.1f%% proc_b %.1f%% (%llu samples); attached: "
		      "proc_a %.1f%% proc_b %.1f%% (%llu samples)\n", a0, b0,
		      (unsigned long long)from.events[0].total, a1, b1,
		      (unsigned long long)att.events[0].total);
	assert_int_equal(ra0, 0);
	assert_int_equal(rb0, 1);
	assert_int_equal(ra1, 0);
	assert_int_equal(rb1, 1);
	assert_true(fabs(a0 - a1) <= 3.0);
	assert_true(fabs(b0 - b1) <= 3.0);
	assert_true(att.events[0].total > 200);	/* up to 4000 on an idle CPU */
	rep_free(&from);
	rep_free(&att);
}

/* -p PID -- CMD: CMD says how long; the path runtime's absence is said. */
static void test_attach_command(void **state)
{
	char db[TU_RUN_NAME], err[TU_RUN_NAME], buf[4096];
	struct rep_table t;
	int rank;
	pid_t pid;

	(void)state;
	pid = start(twoprocs, "2000");
	usleep(100000);
	tu_run_names(ws, db, err, NULL, NULL);
	assert_true(record_attached(pid, 1, db, err, "-p %d -- sleep 0.5", (int)pid) < 5.0);
	assert_true(tu_slurp(err, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "path and value samples need the program started by dcpi "
				    "record; -p records PC samples only"));
	load(db, &t);
	share_of(&t, "proc_a", NULL, &rank);
	assert_int_equal(rank, 0);
	rep_free(&t);
}

/* The CPU seconds latethreads printed in out ("cpu S"), or -1. */
static double cpu_of(const char *out)
{
	char buf[4096], *p;
	double s = -1;

	if (tu_slurp(out, buf, sizeof(buf)) > 0 && (p = strstr(buf, "cpu ")))
		s = atof(p + 4);
	return s;
}

/* Threads started after attaching are sampled too, however short. */
static void test_attach_new_threads(void **state)
{
	char db[TU_RUN_NAME], err[TU_RUN_NAME], out[TU_RUN_NAME], latethreads[256];
	char *argv[] = { latethreads, "1.5", NULL, NULL };
	struct rep_table t;
	double early, late, cpu, seen;
	int re, rl;
	pid_t pid;

	(void)state;
	tu_build_file(latethreads, sizeof(latethreads), "workloads/latethreads");
	tu_run_names(ws, db, err, out, "out");
	pid = tu_spawn(argv, out, tu_in(ws, "bg.err"), 0);
	usleep(200000);
	record_attached(pid, 0, db, err, "-q -p %d --duration 2", (int)pid);
	load(db, &t);
	early = share_of(&t, "early_work", NULL, &re);
	late = share_of(&t, "late_work", NULL, &rl);
	print_message("early_work %.1f%%, late_work (two threads started later) %.1f%%\n",
		      early, late);
	assert_true(re >= 0);
	assert_int_equal(rl, 0);
	assert_true(late > 40.0);
	rep_free(&t);

	/* a thread of 2 ms after another, until the program ends: their time
	 * is in the samples (a look at /proc every 20 ms saw one in ten) */
	argv[1] = "1";
	argv[2] = "churn";
	tu_run_names(ws, db, err, out, "out");
	pid = tu_spawn(argv, out, tu_in(ws, "bg.err"), 0);
	usleep(100000);
	record_attached(pid, 0, db, err, "-q --no-calibrate -p %d", (int)pid);
	load(db, &t);
	cpu = cpu_of(out);
	seen = (double)t.events[0].total * t.events[0].period * 1e-9;
	share_of(&t, "late_work", NULL, &rl);
	print_message("churn: %.2f s of CPU, %.2f s in samples\n", cpu, seen);
	assert_true(cpu > 0.1);
	assert_true(rl >= 0);
	assert_true(seen > 0.6 * cpu);
	rep_free(&t);
}

/* -t TID with no end given: recording ends when the thread does; kernel
 * samples of an attached program are named too. */
static void test_attach_until_exit(void **state)
{
	char db[TU_RUN_NAME], err[TU_RUN_NAME];
	struct rep_table t;
	int named;
	pid_t pid;

	(void)state;
	pid = start(sysloop, "1");
	usleep(100000);
	tu_run_names(ws, db, err, NULL, NULL);
	assert_true(record_attached(pid, 0, db, err, "-q -t %d", (int)pid) < 4.0);
	load(db, &t);
	assert_true(kernel_rows(&t, 10, &named) > 0);
	assert_true(named >= 3);
	rep_free(&t);

	/* nothing to attach to: an error, no epoch */
	tu_run_names(ws, db, err, NULL, NULL);
	assert_int_not_equal(run("%s record -q --db %s -p %d --duration 1 2>%s", bin, db,
				 (int)pid, err), 0);
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_kallsyms_parse),
	cmocka_unit_test(test_kernel_named),
	cmocka_unit_test(test_attach_shape),
	cmocka_unit_test(test_attach_command),
	cmocka_unit_test(test_attach_new_threads),
	cmocka_unit_test(test_attach_until_exit))
