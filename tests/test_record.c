/*
 * test_record.c - `dcpi record` end to end: the twoprocs workload's samples
 * split 3:1 between its two procedures within sampling error, the total
 * agrees with the CPU time spent, the epoch metadata says how it was
 * sampled; exit statuses, exec failures, bad events, signals and children
 * behave as a shell user expects.  Procedures are located with nm and
 * readelf, not with dcpi's image code.  Several events at once, the
 * calibration, random periods against a loop of exactly one period
 * (oneperiod), JIT code named by a perf map (jitlike), and a shared object
 * loaded by dlopen (dlopener).  Also unit tests of the image maps
 * (collect/internal.h), which decide where every sample lands.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "dcpi/estimate.h"
#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_main.h"
#include "tu_run.h"
#include "../collect/internal.h"

static char ws[256], db[TU_RUN_NAME], errfile[TU_RUN_NAME], twoprocs[PROF_PATH_MAX];
static const char *dcpi_bin;

static int setup(void **state)
{
	return tu_run_setup(&dcpi_bin, twoprocs, sizeof(twoprocs), "twoprocs", ws, sizeof(ws),
			    "record");
}

/* A fresh database directory name for each test. */
static void new_db(void)
{
	tu_run_names(ws, db, errfile, NULL, NULL);
}

struct run {
	int status;		/* wait status */
	double cpu;		/* user + sys seconds of dcpi and its children */
	char err[4096];		/* what dcpi printed on stderr */
};

/* Run argv with stdout to /dev/null and stderr captured; signal_after_ms > 0
 * sends SIGINT to it after that long. */
static void run_argv(char *const argv[], int signal_after_ms, struct run *r)
{
	struct rusage ru;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	pid = tu_spawn(argv, NULL, errfile, 0);
	if (signal_after_ms > 0) {
		struct timespec ts = { signal_after_ms / 1000,
				       (signal_after_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		kill(pid, SIGINT);
	}
	assert_int_equal(wait4(pid, &r->status, 0, &ru), pid);
	r->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	assert_true(tu_slurp(errfile, r->err, sizeof(r->err)) >= 0);
}

static int exit_code(const struct run *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* The latest epoch's profiles and metadata. */
static void read_latest(struct prof_profile **p, size_t *n, struct prof_epoch_meta *m)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char epoch[64];

	assert_int_equal(prof_db_open(db, 0, &d, &err), 0);
	assert_int_equal(prof_db_latest_epoch(d, epoch, sizeof(epoch), &err), 0);
	if (prof_epoch_read(d, epoch, p, n, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(prof_epoch_meta_read(d, epoch, m, &err), 0);
	prof_db_close(d);
}

/* read_latest, and the profile of the image whose path ends in suffix
 * (there must be one). */
static const struct prof_profile *latest_of(struct prof_profile **p, size_t *n,
					    struct prof_epoch_meta *m, const char *suffix)
{
	const struct prof_profile *w;

	read_latest(p, n, m);
	w = find_image(*p, *n, suffix);
	assert_non_null(w);
	return w;
}

/*
 * The exposure's chase (collect/calibrate.c cal_exposure): its samples are
 * read by address, nearly all of them in its loop (the rest the kernel's or
 * a reprogramming's), the witness's among them; a step misses L1 and hits
 * L2 (past an L1 hit's 4 cycles, well short of a DRAM miss).
 */
static void check_exposure(const struct prof_epoch_meta *m)
{
	const char *at = strstr(m->settings, "exposure_in_loop=");
	unsigned long long in = 0;
	double up, f;

	assert_non_null(at);
	assert_int_equal(sscanf(at, "exposure_in_loop=%llu", &in), 1);
	f = est_exposure_recorded(m->exposure_witness, m->exposure_samples,
				  m->exposure_cycles_step, &up);
	print_message("exposure: %llu of %llu samples on the witness (%llu in the loop), %.1f "
		      "cycles a step: f %.3g (90%% upper %.3f)\n",
		      (unsigned long long)m->exposure_witness,
		      (unsigned long long)m->exposure_samples, in, m->exposure_cycles_step, f, up);
	assert_true(m->exposure_samples > 0);
	assert_true(in >= 0.9 * (double)m->exposure_samples && in <= m->exposure_samples);
	assert_true(m->exposure_witness <= in);
	assert_true(m->exposure_cycles_step > 4 && m->exposure_cycles_step < 100);
}

/* The CPU time the exposure chase took: its steps x cycles a step. */
static double exposure_seconds(const struct prof_epoch_meta *m)
{
	const char *at = strstr(m->settings, "exposure_steps=");
	unsigned long long steps = 0;

	if (!at || sscanf(at, "exposure_steps=%llu", &steps) != 1 || !(m->cycles_per_ns > 0))
		return 0;
	return (double)steps * m->exposure_cycles_step / m->cycles_per_ns / 1e9;
}

/*
 * The known-cycle loop's samples: one sample is worth about period x clock
 * cycles, more than that never by much (sampling's own cost makes a sample
 * worth fewer of the program's cycles, not more).  Generous bounds: a busy
 * VM can stretch either measurement.
 */
static void check_calibration(const struct prof_epoch_meta *m, double period_ns)
{
	double nominal = period_ns * m->cycles_per_ns;

	print_message("calibration: %.0f cycles per sample, %.4f cycles/ns, "
		      "period x clock %.0f (ratio %.3f)\n", m->cycles_per_sample,
		      m->cycles_per_ns, nominal, m->cycles_per_sample / nominal);
	assert_int_equal(m->calibrated, 1);
	assert_true(m->cycles_per_ns > 0.2 && m->cycles_per_ns < 10);
	assert_true(m->cycles_per_sample > 0.5 * nominal && m->cycles_per_sample < 3 * nominal);
	assert_non_null(strstr(m->settings, "tsc_per_ns="));
	check_exposure(m);
}

static void test_twoprocs_ratio(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--", twoprocs, NULL };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	const struct prof_profile *w;
	struct run r;
	double worth, own;
	size_t n;

	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	assert_string_equal(r.err, "");		/* -q: not even the fallback note */
	w = latest_of(&p, &n, &m, "/workloads/twoprocs");
	tu_check_twoprocs(twoprocs, w, "twoprocs");
	/* the default: cycles with a PMU, else cpu-clock every 250 us */
	if (!strcmp(w->event, "cpu-clock")) {
		assert_string_equal(w->period_unit, "ns");
		/* random periods from [P * 15/16, P]: the mean lies inside */
		assert_true(w->period >= 250000 * 15 / 16 - 1 && w->period <= 250000 + 1);
		assert_non_null(strstr(m.settings, "event=cpu-clock period=250000ns"));
		assert_non_null(strstr(m.settings, "random=15/16"));
		/* the clocks' profiles say what a ns is worth */
		assert_true(w->cycles_per_unit == m.cycles_per_ns);
		check_calibration(&m, w->period);
		/* samples x period is the CPU time sampled: dcpi's own is small,
		 * its exposure chase (100 ms, collect/calibrate.c) aside */
		worth = (double)m.samples * w->period / 1e9;
		own = exposure_seconds(&m);
		print_message("twoprocs: %llu samples = %.3f s of %.3f s CPU (%.3f s of it the "
			      "exposure chase)\n", (unsigned long long)m.samples, worth, r.cpu, own);
		assert_true(worth > 0.6 * (r.cpu - own) && worth < 1.3 * r.cpu + 0.02);
	} else {
		assert_string_equal(w->event, "cycles");
		assert_string_equal(w->period_unit, "events");
	}
	assert_int_equal(m.calibrated, 1);
	assert_non_null(strstr(m.settings, "inherit=1"));
	assert_true(m.samples == tu_sum_totals(p, n));
	assert_true(m.lost_samples * 100 <= m.samples);
	assert_true(m.start_ns > 0 && m.end_ns > m.start_ns);
	assert_true(m.end_ns - m.start_ns < 60ULL * 1000000000ULL);
	prof_profiles_free(p, n);
}

static void test_exit_status(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--", twoprocs, "1",
			 "1000", "3", NULL };
	struct run r;

	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 3);
}

static void test_crash_status(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--", "/bin/sh", "-c",
			 "kill -SEGV $$", NULL };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	struct run r;
	size_t n;

	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 128 + SIGSEGV);
	read_latest(&p, &n, &m);	/* the crash still gets its epoch */
	prof_profiles_free(p, n);
}

static void test_exec_failure(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "--",
			 "/nonexistent/dcpi-no-such-cmd", "x", NULL };
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char epoch[64];
	struct run r;

	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 127);
	assert_non_null(strstr(r.err, "dcpi record: /nonexistent/dcpi-no-such-cmd: "
			       "No such file or directory"));
	/* nothing ran, so no epoch */
	assert_int_equal(prof_db_open(db, 0, &d, &err), 0);
	assert_int_equal(prof_db_latest_epoch(d, epoch, sizeof(epoch), &err), -ENOENT);
	prof_db_close(d);
}

static void test_bad_options(void **state)
{
	char *bad_event[] = { (char *)dcpi_bin, "record", "--db", db, "-e", "bogus-event",
			      "--", "/bin/true", NULL };
	char *bad_count[] = { (char *)dcpi_bin, "record", "--db", db, "-c", "12x", "--",
			      "/bin/true", NULL };
	char *cycles[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "-e", "cycles",
			   "--", "/bin/true", NULL };
	struct run r;

	new_db();
	run_argv(bad_event, 0, &r);
	assert_int_not_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.err, "bogus-event: unknown event"));
	run_argv(bad_count, 0, &r);
	assert_int_not_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.err, "--count 12x"));
	/* cycles asked for by name: no fallback; without a PMU, an error naming it */
	run_argv(cycles, 0, &r);
	if (exit_code(&r) != 0) {
		assert_non_null(strstr(r.err, "cycles: "));
		assert_null(strstr(r.err, "cpu-clock"));
	}
}

/* A shell runs twoprocs as its child: samples still land on twoprocs. */
static void test_follows_children(void **state)
{
	char cmd[PROF_PATH_MAX + 64];
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "-e", "task-clock",
			 "-c", "100000", "--", "/bin/sh", "-c", cmd, NULL };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	const struct prof_profile *w;
	struct run r;
	size_t n;

	snprintf(cmd, sizeof(cmd), "'%s' 40 1000000; true", twoprocs);
	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	w = latest_of(&p, &n, &m, "/workloads/twoprocs");
	assert_string_equal(w->event, "task-clock");
	assert_true(w->period >= 100000 * 15 / 16 - 1 && w->period <= 100000 + 1);
	assert_non_null(strstr(m.settings, "event=task-clock period=100000ns"));
	assert_true(w->total >= 0.8 * (double)m.samples);
	tu_check_twoprocs(twoprocs, w, "twoprocs");
	prof_profiles_free(p, n);
}

/*
 * A shared object mapped by dlopen after the exec: its samples land in the
 * object at hot_in_lib's file offsets (from nm and readelf), not in the
 * executable and not in the unknown image.
 */
static void test_dlopen(void **state)
{
	char lib[400], dlopener[PROF_PATH_MAX];
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--no-calibrate", "--",
			 dlopener, lib, "0.4", NULL };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	const struct prof_profile *w;
	uint64_t lo, hi;
	struct run r;
	size_t n;

	tu_hot_lib(ws, "-O2 -g", lib, sizeof(lib), dlopener, sizeof(dlopener));
	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	w = latest_of(&p, &n, &m, "/libhot.so");
	sym_range(lib, "hot_in_lib", &lo, &hi);
	/* nearly all the time is in the library's one hot procedure */
	assert_true(w->total >= 0.8 * (double)m.samples);
	assert_true(count_in(w, lo, hi) >= 0.95 * (double)w->total);
	prof_profiles_free(p, n);
}

/* SIGINT to dcpi record reaches the command; what was sampled is kept. */
static void test_interrupt(void **state)
{
	/* no calibration: its loops are dcpi's CPU time, not the command's */
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--no-calibrate", "--",
			 twoprocs, "2000", "1000000", NULL };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	const struct prof_profile *w;
	struct run r;
	double worth;
	size_t n;

	new_db();
	run_argv(argv, 400, &r);
	assert_int_equal(exit_code(&r), 128 + SIGINT);
	assert_true(r.cpu < 5);		/* stopped long before its 9 s of work */
	w = latest_of(&p, &n, &m, "/workloads/twoprocs");
	print_message("interrupt: %llu samples after %.3f s CPU\n",
		      (unsigned long long)m.samples, r.cpu);
	assert_true(m.samples == tu_sum_totals(p, n));
	/* however little CPU a loaded machine gave it, every sample is kept (the
	 * meta == profiles check above).  r.cpu is dcpi record's CPU as well as
	 * the command's: startup, path-sample spool, writing the epoch, tens of
	 * ms that on a loaded machine are as much as the command got in 400 ms
	 * of wall time, so the lower bound here is loose. */
	worth = (double)m.samples * w->period / 1e9;
	if (!strcmp(w->event, "cpu-clock"))
		assert_true(worth > 0.3 * r.cpu - 0.005 && worth < 1.3 * r.cpu + 0.02);
	assert_true(w->total >= 10);
	prof_profiles_free(p, n);
}

/*
 * A command that makes dcpi record its tracer (ptrace(PTRACE_TRACEME), as
 * anti-debugging code does) stops at each signal it gets; record must pass
 * each on and wait for its real end (collect/record.c, struct trace).
 * Without path samples, so the stops are the program's own signals.  Each
 * traced mode of tests/workloads/sigways.c against the same program
 * untraced: same exit status, same last line, out before record returns.
 * Before: record took the first stop for the end and returned 1.
 */
#define TRACED_TIMEOUT_S 60

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* argv with stdout into out (NUL-terminated), in its own process group,
 * killed with all it left after it ends or after TRACED_TIMEOUT_S. */
static int run_out(char *const argv[], char *out, size_t len, double *secs)
{
	char path[320];
	double t0 = mono_s();
	siginfo_t si;
	int status;
	FILE *f;
	size_t n;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/out", ws);
	pid = tu_spawn(argv, path, errfile, TU_SPAWN_GROUP);
	do {
		struct timespec ts = { 0, 10000000L };

		memset(&si, 0, sizeof(si));
		assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
		if (si.si_pid != pid)
			nanosleep(&ts, NULL);
	} while (si.si_pid != pid && mono_s() - t0 < TRACED_TIMEOUT_S);
	*secs = mono_s() - t0;
	kill(-pid, SIGKILL);	/* not reaped yet: the group is still ours */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (si.si_pid != pid)
		fail_msg("%s %s: still running after %d s, killed", argv[0], argv[1],
			 TRACED_TIMEOUT_S);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

static void test_traced_command(void **state)
{
	static const char *const modes[][2] = {
		{ "traceme", "plain" }, { "tracesig", "sig" }, { "traceexec", "exec" },
		{ "tracestop", "stop" }, { "tracekill", "kill" },
		{ "threadtrace", "threadsig" },
	};
	char sigways[PROF_PATH_MAX], nat_out[4096], rec_out[4096];
	const char *last, *s;
	double nat_s, rec_s;
	int nat, rec;

	snprintf(sigways, sizeof(sigways), "%s/workloads/sigways", getenv("DCPI_BUILD"));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *nat_argv[] = { sigways, (char *)modes[i][1], "50000000", NULL };
		char *rec_argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q",
				     "--no-calibrate", "--no-paths", "--", sigways,
				     (char *)modes[i][0], "50000000", NULL };

		new_db();
		nat = run_out(nat_argv, nat_out, sizeof(nat_out), &nat_s);
		rec = run_out(rec_argv, rec_out, sizeof(rec_out), &rec_s);
		print_message("%s: status %d in %.2f s under dcpi record, %s: %d in %.2f s\n",
			      modes[i][0], rec, rec_s, modes[i][1], nat, nat_s);
		assert_int_equal(rec, nat);
		assert_int_equal(nat, strcmp(modes[i][1], "kill") ? 0 : 128 + SIGTERM);
		last = strstr(nat_out, "sum ");
		assert_non_null(last);
		assert_non_null(strstr(rec_out, last));
		if ((s = strstr(nat_out, "usr1 ")))
			assert_non_null(strstr(rec_out, "usr1 3"));
		if ((s = strstr(rec_out, "stopped ")))
			assert_true(atoi(s + 8) >= 250);	/* SIGCONT came at 300 ms */
		if (rec_s > 4 * nat_s + 3.0)
			fail_msg("%s: %.2f s under dcpi record, %.2f s untraced", modes[i][0],
				 rec_s, nat_s);
	}
}

/* Two events at once: each gets its own profile and its times. */
static void test_two_events(void **state)
{
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "-e",
			 "cpu-clock,task-clock", "--", twoprocs, "60", NULL };
	const struct prof_profile *pc = NULL, *pt = NULL;
	struct prof_epoch_meta m;
	struct prof_profile *p;
	struct run r;
	size_t n;

	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	read_latest(&p, &n, &m);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(p[i].image.path);

		if (l < 19 || strcmp(p[i].image.path + l - 19, "/workloads/twoprocs"))
			continue;
		if (!strcmp(p[i].event, "cpu-clock"))
			pc = &p[i];
		else if (!strcmp(p[i].event, "task-clock"))
			pt = &p[i];
	}
	assert_non_null(pc);
	assert_non_null(pt);
	print_message("two events: cpu-clock %llu, task-clock %llu samples\n",
		      (unsigned long long)pc->total, (unsigned long long)pt->total);
	tu_check_twoprocs(twoprocs, pc, "twoprocs");
	tu_check_twoprocs(twoprocs, pt, "twoprocs");
	/* both clocks count the same time */
	assert_true(pc->total > 0.6 * (double)pt->total && pc->total < 1.6 * (double)pt->total);
	assert_non_null(strstr(m.settings, "event=cpu-clock,task-clock "));
	assert_non_null(strstr(m.settings, "event:cpu-clock enabled="));
	assert_non_null(strstr(m.settings, "event:task-clock enabled="));
	assert_true(m.samples == tu_sum_totals(p, n));
	prof_profiles_free(p, n);
}

/* Share of oneperiod's samples in part_a (true share 0.1). */
static double oneperiod_share(const char *extra, uint64_t *nsamples)
{
	char wl[PROF_PATH_MAX];
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "-e", "cpu-clock",
			 "-c", "250000", (char *)extra, "--", wl, "250000", "1.5", "1", NULL };
	const struct prof_profile *w;
	struct prof_epoch_meta m;
	struct prof_profile *p;
	uint64_t alo, ahi, blo, bhi, a, b;
	struct run r;
	size_t n;

	snprintf(wl, sizeof(wl), "%s/workloads/oneperiod", getenv("DCPI_BUILD"));
	if (!extra[0])		/* no extra option: shift the command left */
		memmove(&argv[9], &argv[10], 6 * sizeof(argv[0]));
	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	w = latest_of(&p, &n, &m, "/workloads/oneperiod");
	sym_range(wl, "part_a", &alo, &ahi);
	sym_range(wl, "part_b", &blo, &bhi);
	a = count_in(w, alo, ahi);
	b = count_in(w, blo, bhi);
	prof_profiles_free(p, n);
	*nsamples = a + b;
	assert_true(a + b >= 1000);
	return (double)a / (double)(a + b);
}

/*
 * DCPI sec. 4.1.1: a loop whose iteration is exactly one period.  With the
 * period drawn at random, part_a's share is its true 10%.  With a fixed
 * period the samples stay near one phase of the loop; how far off that is
 * depends on the timer's jitter on this machine, so it is printed, not
 * asserted (measured here, pinned to one CPU: 0.00, 0.04, 0.06, 0.18 and
 * once 0.104 against 0.10; randomized: 0.084 to 0.108).
 */
static void test_random_period(void **state)
{
	uint64_t nr, nf;
	double rnd = oneperiod_share("", &nr), fixed = oneperiod_share("--fixed-period", &nf);
	double bound = 5 * sqrt(0.1 * 0.9 / (double)nr) + 0.02;

	print_message("oneperiod: part_a share randomized %.4f (%llu samples, bound "
		      "0.1 +- %.4f), fixed %.4f (%llu samples), true 0.1\n", rnd,
		      (unsigned long long)nr, bound, fixed, (unsigned long long)nf);
	if (fabs(rnd - 0.1) > bound)
		fail_msg("randomized share %.4f, expected 0.1 +- %.4f", rnd, bound);
}

/* Anonymous code described by /tmp/perf-PID.map keeps its samples there. */
static void test_jit_map(void **state)
{
	char wl[PROF_PATH_MAX], line[256];
	char *argv[] = { (char *)dcpi_bin, "record", "--db", db, "-q", "--", wl, "0.5", NULL };
	const struct prof_profile *w = NULL;
	struct prof_epoch_meta m;
	struct prof_profile *p;
	unsigned long long start = 0, size = 0;
	struct run r;
	size_t n;
	FILE *f;

	snprintf(wl, sizeof(wl), "%s/workloads/jitlike", getenv("DCPI_BUILD"));
	new_db();
	run_argv(argv, 0, &r);
	assert_int_equal(exit_code(&r), 0);
	read_latest(&p, &n, &m);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(p[i].image.path, "/tmp/perf-", 10))
			w = &p[i];
	assert_non_null(w);
	f = fopen(w->image.path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	unlink(w->image.path);
	assert_int_equal(sscanf(line, "%llx %llx", &start, &size), 2);
	print_message("jit: %llu of %llu samples in %s, %llu in its loop\n",
		      (unsigned long long)w->total, (unsigned long long)m.samples,
		      w->image.path, (unsigned long long)count_in(w, start, start + size));
	assert_true(w->total >= 0.8 * (double)m.samples);
	/* offsets are raw pcs, so the map file names them */
	assert_true(count_in(w, start, start + size) >= 0.95 * (double)w->total);
	prof_profiles_free(p, n);
}

static void test_event_table(void **state)
{
	static const char *names[] = { "cycles", "instructions", "branch-misses",
				       "cache-misses", "L1-icache-load-misses",
				       "L1-dcache-load-misses", "dTLB-load-misses",
				       "iTLB-load-misses", "cpu-clock", "task-clock" };
	const struct collect_event *ev[COLLECT_MAX_EVENTS];
	struct dcpi_err err = { 0 };
	unsigned n;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_non_null(collect_event_find(names[i]));
		assert_non_null(strstr(collect_event_names(), names[i]));
	}
	assert_int_equal(collect_events_parse("cycles,branch-misses", ev, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ev[1]->name, "branch-misses");
	assert_int_not_equal(collect_events_parse("cycles,nope", ev, &n, &err), 0);
	assert_non_null(strstr(err.msg, "nope: unknown event"));
	assert_int_not_equal(collect_events_parse("cycles,cycles", ev, &n, &err), 0);
	assert_int_not_equal(collect_events_parse("cpu-clock,", ev, &n, &err), 0);
	/* the clocks exist everywhere */
	assert_int_equal(collect_event_probe(collect_event_find("task-clock"), &err), 0);
}

static void test_random_periods_unit(void **state)
{
	struct rnd a, b;
	uint64_t lo = UINT64_MAX, hi = 0;
	double sum = 0;

	rnd_init(&a, 42);
	rnd_init(&b, 42);
	for (int i = 0; i < 100000; i++) {
		uint64_t p = rnd_period(&a, 64000);

		assert_int_equal(p, rnd_period(&b, 64000));	/* seeded: reproducible */
		lo = p < lo ? p : lo;
		hi = p > hi ? p : hi;
		sum += (double)p;
	}
	/* the paper's window: 60K to 64K */
	assert_int_equal(lo, 60000);
	assert_int_equal(hi, 64000);
	assert_true(fabs(sum / 100000 - 62000) < 30);
}

/* A PERF_RECORD_SAMPLE as the sampler asks for it: identifier, ip, pid/tid,
 * time, period, then (regs) the user registers' abi and the flags register. */
static void mk_sample(uint8_t *buf, uint16_t misc, int regs, uint64_t abi, uint64_t flags)
{
	struct perf_event_header h = { PERF_RECORD_SAMPLE, misc, 0 };
	uint64_t w[8] = { 7, 0x401000, (uint64_t)42 << 32 | 41, 1000, 100000, abi, flags };
	size_t n = regs ? (abi ? 7 : 6) : 5;

	h.size = (uint16_t)(sizeof(h) + n * 8);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), w, n * 8);
}

/* Samples taken while the path runtime single-steps the thread (the user
 * flags hold TF) are marked, so the session leaves them out. */
static void test_stepped_samples(void **state)
{
	struct smp_counter k = { -1, 0, 0, 7 };
	struct sampler s;
	struct smp_sample sm;
	uint8_t rec[128];
	const uint64_t base = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			      PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.ctr = &k;
	s.nctr = 1;
	s.sample_type = base | PERF_SAMPLE_REGS_USER;
	mk_sample(rec, PERF_RECORD_MISC_USER, 1, 2, 0x302);	/* TF, IF */
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_int_equal(sm.ip, 0x401000);
	assert_int_equal(sm.tid, 42);
	assert_int_equal(sm.period, 100000);
	assert_true(sm.user);
	assert_true(sm.stepped);
	mk_sample(rec, PERF_RECORD_MISC_USER, 1, 2, 0x202);	/* IF only */
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_false(sm.stepped);
	/* in the kernel with TF in the user flags: the step's trap and signal
	 * (record samples the kernel too), the runtime's cost as well */
	mk_sample(rec, PERF_RECORD_MISC_KERNEL, 1, 2, 0x302);
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_true(sm.stepped);
	mk_sample(rec, PERF_RECORD_MISC_KERNEL, 1, 2, 0x202);
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_false(sm.stepped);
	/* abi NONE (a kernel thread): no register follows */
	mk_sample(rec, PERF_RECORD_MISC_USER, 1, 0, 0);
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_false(sm.stepped);
	/* a kernel without user registers in samples: the plain type */
	s.sample_type = base;
	mk_sample(rec, PERF_RECORD_MISC_USER, 0, 0, 0);
	assert_int_equal(smp_parse_sample(&s, rec, &sm), 0);
	assert_int_equal(sm.ip, 0x401000);
	assert_false(sm.stepped);
	/* another sample type is refused */
	s.sample_type = base | PERF_SAMPLE_CALLCHAIN;
	assert_int_not_equal(smp_parse_sample(&s, rec, &sm), 0);
}

/* --- the image maps ------------------------------------------------------ */

static void expect_at(struct maps *m, uint32_t pid, uint64_t ip, const char *path,
		      uint64_t offset)
{
	struct dcpi_err err = { 0 };
	uint32_t image;
	uint64_t off;

	assert_int_equal(maps_resolve(m, pid, ip, &image, &off, &err), 0);
	assert_string_equal(maps_image(m, image)->path, path);
	if (strcmp(path, PROF_UNKNOWN_PATH))
		assert_int_equal(off, offset);
}

static void test_maps(void **state)
{
	struct dcpi_err err = { 0 };
	/* a pid that cannot exist, so /proc/PID/maps is never found */
	const uint32_t pid = 0x7ffffff0u, kid = pid + 1;
	struct maps *m;

	assert_int_equal(maps_new(&m, &err), 0);
	assert_int_equal(maps_mmap(m, pid, 0x10000, 0x8000, 0x2000, "/nonexistent/a", &err),
			 0);
	expect_at(m, pid, 0x10000, "/nonexistent/a", 0x2000);
	expect_at(m, pid, 0x17fff, "/nonexistent/a", 0x9fff);
	expect_at(m, pid, 0x18000, PROF_UNKNOWN_PATH, 0);
	/* a mapping in the middle splits the old one in two */
	assert_int_equal(maps_mmap(m, pid, 0x12000, 0x1000, 0, "/nonexistent/b", &err), 0);
	expect_at(m, pid, 0x11fff, "/nonexistent/a", 0x3fff);
	expect_at(m, pid, 0x12800, "/nonexistent/b", 0x800);
	expect_at(m, pid, 0x13000, "/nonexistent/a", 0x5000);
	assert_int_equal(maps_mmap(m, pid, 0x20000, 0x1000, 0, "[vdso]", &err), 0);
	expect_at(m, pid, 0x20010, "[vdso]", 0x10);
	assert_int_equal(maps_mmap(m, pid, 0x30000, 0x1000, 0, "//anon", &err), 0);
	expect_at(m, pid, 0x30010, PROF_UNKNOWN_PATH, 0);
	/* dcpi record's temporary copy of the path runtime has a name of its own */
	assert_int_equal(maps_mmap(m, pid, 0x40000, 0x1000, 0x1000,
				   "/tmp/dcpi-paths-Ab12Cd/libdcpi-paths.so", &err), 0);
	expect_at(m, pid, 0x40010, PROF_PATHRT_PATH, 0x1010);
	assert_int_equal(maps_mmap(m, pid, 0x50000, 0x1000, 0, "/opt/dcpi/libdcpi-paths.so",
				   &err), 0);
	expect_at(m, pid, 0x50010, "/opt/dcpi/libdcpi-paths.so", 0x10);
	/* a child starts with its parent's maps; exec clears them */
	assert_int_equal(maps_fork(m, kid, pid, &err), 0);
	expect_at(m, kid, 0x12800, "/nonexistent/b", 0x800);
	maps_exec(m, kid);
	expect_at(m, kid, 0x12800, PROF_UNKNOWN_PATH, 0);
	expect_at(m, pid, 0x12800, "/nonexistent/b", 0x800);
	/* an exited process is forgotten one batch later */
	maps_exit(m, pid);
	maps_reap(m);
	expect_at(m, pid, 0x12800, "/nonexistent/b", 0x800);
	maps_reap(m);
	maps_reap(m);
	maps_free(m);
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_maps),
	cmocka_unit_test(test_twoprocs_ratio),
	cmocka_unit_test(test_exit_status),
	cmocka_unit_test(test_crash_status),
	cmocka_unit_test(test_exec_failure),
	cmocka_unit_test(test_dlopen),
	cmocka_unit_test(test_bad_options),
	cmocka_unit_test(test_follows_children),
	cmocka_unit_test(test_interrupt),
	cmocka_unit_test(test_traced_command),
	cmocka_unit_test(test_event_table),
	cmocka_unit_test(test_random_periods_unit),
	cmocka_unit_test(test_stepped_samples),
	cmocka_unit_test(test_two_events),
	cmocka_unit_test(test_random_period),
	cmocka_unit_test(test_jit_map))
