/*
 * test_held.c - the "held list": robustness properties a stress run of dcpi
 * established and the project keeps, checked end to end through the
 * binaries (dcpi record, dcpid, dcpi merge, dcpiprof, dcpi import):
 *
 *   concurrent_records  N `dcpi record` at once into one database: one
 *                       epoch each, no epoch lost or doubled, totals exact
 *   mixed               records, merges and reports at once for S seconds:
 *                       no failure, every epoch's meta = its profiles, and
 *                       dcpiprof --epoch all = the sum of the epochs
 *   signal_storm        dcpid under many SIGUSR1 (flush) and a few SIGHUP
 *                       (new epoch): exits 0, one epoch per SIGHUP + 1,
 *                       every sample it counted in the database
 *   sigkill_in_flush    dcpid SIGKILLed from outside while it flushes: every
 *                       epoch readable and consistent, one per daemon
 *   soak                dcpid under a stream of short processes: RSS and
 *                       open fds bounded, samples counted, none lost
 *   corrupt_perf_data   bit flips and truncations of a real perf.data:
 *                       `dcpi import` imports or fails naming the file,
 *                       never crashes or hangs (CI runs it under ASan)
 *   corrupt_databases   the same done to profile, paths, values and meta
 *                       files: every report (dcpiprof, dcpicalc, dcpivlist) exits
 *                       with a message, no crash, no hang
 *   hostile_programs    tests/workloads/held_hostile.c recorded: its native
 *                       exit status, within a time bound
 *   disk_full_recovers  several flushes in a row fail with ENOSPC (the
 *                       failpoints of util/safefile.c), then the disk has
 *                       room again: every sample is written, each failure
 *                       counted
 *
 * What tests/test_harden.c and tests/test_daemon.c already check (a kill at
 * each failpoint of a flush, one failed flush, one SIGUSR1 and one SIGHUP)
 * is not repeated here.  The figures are the short form's; the HELD_*
 * variables below raise them, and bench/soak/soak.sh runs this binary with
 * the stress run's full figures.  Under valgrind (TEST_WRAPPER) or in the
 * ASan build the short form shrinks again, as dcpi or this binary runs
 * several times slower there.
 *
 *   HELD_RECORDS N  HELD_MIXED_SECONDS S  HELD_USR1 N  HELD_HUP N
 *   HELD_KILLS N  HELD_SOAK_SECONDS S  HELD_RSS_MB M (growth allowed)
 *   HELD_PERF_FILES N  HELD_DB_FILES N  HELD_ENOSPC N (at most 7)
 *   HELD_IMPORT_BIN  the dcpi that imports the corrupt perf.data files
 *   HELD_ONLY        a cmocka test filter ("test_soak", "*daemon*")
 *
 * Each test prints one "held:" line with its figures.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_run.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#else
#define ASAN_BUILD 0
#endif

static struct {
	int records, mixed_s, usr1, hup, kills, soak_s, rss_mb, perf_files, db_files, enospc;
} P;
static int slow;		/* valgrind or ASan */
static char ws[256];
static const char *dcpi_bin, *build_dir, *import_bin;
static char twoprocs[PROF_PATH_MAX], hostile[PROF_PATH_MAX];
static int seq;
static pid_t kids[64];		/* started and not yet reaped */
static int nkids;

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static void params(void)
{
	const char *w = getenv("TEST_WRAPPER");

	slow = ASAN_BUILD || (w && strstr(w, "valgrind"));
	P.records = env_int("HELD_RECORDS", slow ? 4 : 8);
	P.mixed_s = env_int("HELD_MIXED_SECONDS", slow ? 4 : 10);
	P.usr1 = env_int("HELD_USR1", slow ? 20 : 50);
	P.hup = env_int("HELD_HUP", 2);
	P.kills = env_int("HELD_KILLS", slow ? 2 : 3);
	P.soak_s = env_int("HELD_SOAK_SECONDS", slow ? 4 : 6);
	P.rss_mb = env_int("HELD_RSS_MB", 6);
	P.perf_files = env_int("HELD_PERF_FILES", slow ? 60 : 200);
	P.db_files = env_int("HELD_DB_FILES", slow ? 15 : 40);
	P.enospc = env_int("HELD_ENOSPC", 3);
	if (P.enospc > 7)
		P.enospc = 7;	/* util/safefile.c keeps 8 failpoints */
}

static int setup(void **state)
{
	if (tu_run_setup(&dcpi_bin, twoprocs, sizeof(twoprocs), "twoprocs", ws, sizeof(ws),
			 "held"))
		return -1;
	build_dir = getenv("DCPI_BUILD");
	import_bin = getenv("HELD_IMPORT_BIN") ? getenv("HELD_IMPORT_BIN") : dcpi_bin;
	tu_build_file(hostile, sizeof(hostile), "workloads/held_hostile");
	return 0;
}

static void track(pid_t pid)
{
	if (pid > 0 && nkids < (int)(sizeof(kids) / sizeof(kids[0])))
		kids[nkids++] = pid;
}

static void untrack(pid_t pid)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] == pid)
			kids[i--] = kids[--nkids];
}

/* In a child just forked: killed when the test process dies (an alarm). */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(97);
}

/* A hang guard: the commands have their own timeouts, this is the last one. */
static int each_setup(void **state)
{
	alarm(120 + P.mixed_s + P.soak_s + P.usr1 / 10 + 5 * P.kills + P.perf_files / 4 +
	      P.db_files + 2 * P.enospc);
	return 0;
}

/* A failed test leaves no daemon or busy loop behind. */
static int each_teardown(void **state)
{
	alarm(0);
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	nkids = 0;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void fresh(char *path, size_t len, const char *what)
{
	snprintf(path, len, "%s/%s%d", ws, what, seq++);
}

/* ---- running commands ---------------------------------------------------- */

/* A child of ours, tracked, that dies with us and carries no alarm of
 * ours; 0 in the child. */
static pid_t fork_worker(void)
{
	pid_t parent = getpid(), pid = fork();

	assert_true(pid >= 0);
	track(pid);
	if (pid == 0) {
		alarm(0);
		die_with_parent(parent);
	}
	return pid;
}

/* argv with stdout and stderr into out (truncated; NULL: /dev/null), env a
 * "NAME=VALUE" to add or NULL. */
static pid_t start(char *const argv[], const char *out, const char *env)
{
	pid_t parent = getpid(), pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd;

		die_with_parent(parent);
		fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) :
			       open("/dev/null", O_WRONLY);

		if (fd < 0)
			_exit(99);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
		if (env)
			putenv((char *)env);
		execv(argv[0], argv);
		_exit(98);
	}
	track(pid);
	return pid;
}

/* Its status as a shell says it (128 + signal), or -1 when it ran past secs
 * and was killed. */
static int wait_for(pid_t pid, double secs)
{
	double end = now_s() + secs;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			untrack(pid);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		assert_true(r == 0);
		if (now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			untrack(pid);
			return -1;
		}
		sleep_ms(2);
	}
}

#define MAXARGS 24

/* run(out, secs, env, "prog", "arg", ..., NULL): wait_for's answer. */
static int run(const char *out, double secs, const char *env, ...)
{
	char *argv[MAXARGS];
	va_list ap;
	int n = 0;

	va_start(ap, env);
	while (n < MAXARGS - 1 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return wait_for(start(argv, out, env), secs);
}

static size_t slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return n;
}

/* "dcpi record: N samples (L lost) of EVENT into DB/EPOCH" */
static int record_said(const char *text, uint64_t *samples, uint64_t *lost, char *epoch,
		       size_t elen)
{
	for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		unsigned long long n, l;
		char into[600];

		if (sscanf(s, "%*[^:]: %llu samples (%llu lost) of %*s into %599s", &n, &l,
			   into) == 3) {
			const char *slash = strrchr(into, '/');

			*samples = n;
			*lost = l;
			snprintf(epoch, elen, "%.40s", slash ? slash + 1 : into);
			return 0;
		}
	}
	return -1;
}

struct dsaid {
	unsigned long long samples, lost, epochs, flushes, failed, dropped;
};

/* "dcpi daemon: N samples (L lost, ...) in E epoch(s), F flushes, ..." and
 * "dcpi daemon: F flush(es) failed and were retried, D samples dropped". */
static int daemon_said(const char *text, struct dsaid *d)
{
	int found = -1;

	memset(d, 0, sizeof(*d));
	for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		const char *in = strstr(s, ") in ");
		const char *nl = strchr(s, '\n');
		unsigned long long f, dr;

		if (sscanf(s, "%*[^:]: %llu samples (%llu lost", &d->samples, &d->lost) == 2 &&
		    in && (!nl || in < nl) &&
		    sscanf(in, ") in %llu epoch(s), %llu flushes", &d->epochs, &d->flushes) == 2)
			found = 0;
		if (sscanf(s, "%*[^:]: %llu flush(es) failed and were retried, %llu samples "
			   "dropped", &f, &dr) == 2) {
			d->failed = f;
			d->dropped = dr;
		}
	}
	return found;
}

static int sanitizer_said(const char *text)
{
	return strstr(text, "Sanitizer") || strstr(text, "runtime error:");
}

/* ---- the database, read through the library ------------------------------ */

struct dbsum {
	size_t epochs, empty;
	uint64_t total, failed_flushes;
};

/* Every epoch readable and its meta's samples = its profiles' totals; an
 * epoch with neither (a collector killed before its first commit) counts
 * as empty. */
static void db_check(const char *dbp, struct dbsum *s)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char **names;
	size_t n;

	memset(s, 0, sizeof(*s));
	if (prof_db_open(dbp, 0, &db, &err))
		fail_msg("%s", err.msg);
	if (prof_db_epochs(db, &names, &n, &err))
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		struct prof_epoch_meta m;
		struct prof_profile *p;
		uint64_t t = 0;
		size_t np;
		int rc;

		if (prof_epoch_read(db, names[i], &p, &np, &err))
			fail_msg("%s", err.msg);
		for (size_t k = 0; k < np; k++)
			t += p[k].total;
		prof_profiles_free(p, np);
		rc = prof_epoch_meta_read(db, names[i], &m, &err);
		if (rc == -ENOENT && !t && !np) {
			s->empty++;
			continue;
		}
		if (rc)
			fail_msg("%s", err.msg);
		if (m.samples != t)
			fail_msg("%s/%s: meta says %llu samples, its profiles hold %llu", dbp,
				 names[i], (unsigned long long)m.samples, (unsigned long long)t);
		s->epochs++;
		s->total += t;
		s->failed_flushes += m.failed_flushes;
	}
	prof_names_free(names, n);
	prof_db_close(db);
}

/* Stop the daemon dm with SIGTERM: it must exit 0 and say its totals
 * (into d) on its stderr, errf; then its database dbp is checked (into s). */
static void daemon_stop(pid_t dm, const char *errf, struct dsaid *d, const char *dbp,
			struct dbsum *s)
{
	char text[16384];
	int rc;

	kill(dm, SIGTERM);
	rc = wait_for(dm, 60);
	slurp(errf, text, sizeof(text));
	if (rc || daemon_said(text, d))
		fail_msg("dcpid: status %d: %s", rc, text);
	db_check(dbp, s);
}

/* Epochs of dbp holding a meta. */
static size_t committed_epochs(const char *dbp)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char **names, path[PROF_PATH_MAX];
	size_t n, c = 0;

	if (prof_db_open(dbp, 0, &db, &err))
		return 0;
	if (!prof_db_epochs(db, &names, &n, &err)) {
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/%s/meta", dbp, names[i]);
			c += !access(path, F_OK);
		}
		prof_names_free(names, n);
	}
	prof_db_close(db);
	return c;
}

/* dcpiprof --epoch all's total over every event. */
static uint64_t prof_all_total(const char *dbp)
{
	char out[PROF_PATH_MAX], text[1 << 16];
	unsigned long long v;
	uint64_t t = 0;
	const char *s;
	int rc;

	fresh(out, sizeof(out), "prof-all.out");
	rc = run(out, 60, NULL, dcpi_bin, "prof", "--db", dbp, "--epoch", "all", "--json",
		 (char *)NULL);
	slurp(out, text, sizeof(text));
	if (rc)
		fail_msg("dcpiprof --epoch all: status %d: %.2000s", rc, text);
	s = strstr(text, "\"total\": {");
	assert_non_null(s);
	s += strlen("\"total\": {");
	while (*s && *s != '}') {
		const char *colon = strchr(s, ':');

		assert_non_null(colon);
		assert_int_equal(sscanf(colon + 1, " %llu", &v), 1);
		t += v;
		s = colon + 1;
		while (*s && *s != ',' && *s != '}')
			s++;
		if (*s == ',')
			s++;
	}
	return t;
}

/* A busy program to sample while dcpid runs; stop() ends it. */
static pid_t busy(void)
{
	char *argv[] = { twoprocs, "12000", NULL };	/* about 10 min at most */

	return start(argv, NULL, NULL);
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	untrack(pid);
}

/* dcpid --flush F into dbp; back once its pidfile says it samples. */
static pid_t daemon_start(const char *dbp, const char *flush, const char *errf,
			  const char *env)
{
	char pidf[PROF_PATH_MAX];
	char *argv[] = { (char *)dcpi_bin, "daemon", "--db", (char *)dbp, "--flush",
			 (char *)flush, "--pidfile", pidf, NULL };
	pid_t pid;

	fresh(pidf, sizeof(pidf), "pid");
	pid = start(argv, errf, env);
	for (int i = 0; i < 400 && access(pidf, F_OK); i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			char text[4096];

			untrack(pid);
			slurp(errf, text, sizeof(text));
			fail_msg("dcpid exited before sampling: %s", text);
		}
		sleep_ms(25);
	}
	assert_int_equal(access(pidf, F_OK), 0);
	return pid;
}

/* ---- 1. concurrent records ----------------------------------------------- */

static void test_concurrent_records(void **state)
{
	int n = P.records;
	pid_t *pid = calloc((size_t)n, sizeof(*pid));
	char (*epoch)[64] = calloc((size_t)n, sizeof(*epoch));
	char dbp[PROF_PATH_MAX], out[PROF_PATH_MAX], text[8192];
	uint64_t said = 0, s, lost;
	struct dbsum sum;
	double t0 = now_s();

	assert_non_null(pid);
	assert_non_null(epoch);
	fresh(dbp, sizeof(dbp), "db");
	for (int i = 0; i < n; i++) {
		char *argv[] = { (char *)dcpi_bin, "record", "--db", dbp, "--", twoprocs, "2",
				 NULL };

		snprintf(out, sizeof(out), "%s/rec-%d.out", ws, i);
		pid[i] = start(argv, out, NULL);
	}
	for (int i = 0; i < n; i++) {
		struct dcpi_err err = { 0 };
		struct prof_epoch_meta m;
		struct prof_db *db;
		int rc = wait_for(pid[i], 120);

		snprintf(out, sizeof(out), "%s/rec-%d.out", ws, i);
		slurp(out, text, sizeof(text));
		if (rc || record_said(text, &s, &lost, epoch[i], sizeof(epoch[i])))
			fail_msg("record %d: status %d: %s", i, rc, text);
		for (int j = 0; j < i; j++)
			if (!strcmp(epoch[i], epoch[j]))
				fail_msg("records %d and %d both say epoch %s", j, i, epoch[i]);
		assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
		if (prof_epoch_meta_read(db, epoch[i], &m, &err))
			fail_msg("%s", err.msg);
		prof_db_close(db);
		if (m.samples != s)
			fail_msg("record %d said %llu samples into %s, its meta %llu", i,
				 (unsigned long long)s, epoch[i], (unsigned long long)m.samples);
		said += s;
	}
	db_check(dbp, &sum);
	print_message("held: records: %d concurrent, %zu epochs, %llu samples said, %llu in "
		      "the database, %.1f s\n", n, sum.epochs, (unsigned long long)said,
		      (unsigned long long)sum.total, now_s() - t0);
	assert_int_equal(sum.epochs, n);
	assert_int_equal(sum.empty, 0);
	assert_int_equal(sum.total, said);
	assert_int_equal(prof_all_total(dbp), said);
	free(pid);
	free(epoch);
}

/* ---- 2. records, merges and reports at once ------------------------------ */

enum { W_REC1, W_REC2, W_MERGE, W_REPORT, NWORKERS };

struct mixed {
	unsigned long long runs[NWORKERS], fails[NWORKERS], samples;
	char failure[1024];
};

static void mixed_worker(int w, struct mixed *mx, const char *a, const char *b, double end)
{
	char out[PROF_PATH_MAX], text[4096];

	snprintf(out, sizeof(out), "%s/mixed-%d.out", ws, w);
	for (unsigned k = 0; now_s() < end; k++) {
		uint64_t s, lost;
		char epoch[64];
		int rc;

		if (w == W_REC1 || w == W_REC2)
			rc = run(out, 60, NULL, dcpi_bin, "record", "--db", a, "--", twoprocs, "1",
				 (char *)NULL);
		else if (w == W_MERGE)
			rc = run(out, 60, NULL, dcpi_bin, "merge", a, "-o", b, (char *)NULL);
		else if (k % 2)
			rc = run(out, 60, NULL, dcpi_bin, "prof", "--db", a, "--epoch", "all",
				 (char *)NULL);
		else
			rc = run(out, 60, NULL, dcpi_bin, "prof", "-i", "--db", b, (char *)NULL);
		slurp(out, text, sizeof(text));
		if (!rc && w <= W_REC2 && record_said(text, &s, &lost, epoch, sizeof(epoch)))
			rc = 1000;
		__atomic_add_fetch(&mx->runs[w], 1, __ATOMIC_SEQ_CST);
		if (rc) {
			__atomic_add_fetch(&mx->fails[w], 1, __ATOMIC_SEQ_CST);
			snprintf(mx->failure, sizeof(mx->failure), "worker %d: status %d: %.900s",
				 w, rc, text);
		} else if (w <= W_REC2) {
			__atomic_add_fetch(&mx->samples, s, __ATOMIC_SEQ_CST);
		}
	}
}

static void test_mixed(void **state)
{
	struct mixed *mx = mmap(NULL, sizeof(*mx), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char a[PROF_PATH_MAX], b[PROF_PATH_MAX], out[PROF_PATH_MAX], text[4096];
	unsigned long long fails = 0;
	pid_t pid[NWORKERS];
	struct dbsum sa, sb;
	uint64_t s, lost;
	double end;
	char epoch[64];

	assert_true(mx != MAP_FAILED);
	memset(mx, 0, sizeof(*mx));
	fresh(a, sizeof(a), "mixed-a");
	fresh(b, sizeof(b), "mixed-b");
	fresh(out, sizeof(out), "mixed-first.out");
	/* an epoch in each first, so the first merge and report find one */
	assert_int_equal(run(out, 60, NULL, dcpi_bin, "record", "--db", a, "--", twoprocs, "1",
			     (char *)NULL), 0);
	slurp(out, text, sizeof(text));
	assert_int_equal(record_said(text, &s, &lost, epoch, sizeof(epoch)), 0);
	mx->samples = s;
	assert_int_equal(run(out, 60, NULL, dcpi_bin, "merge", a, "-o", b, (char *)NULL), 0);
	end = now_s() + P.mixed_s;
	for (int w = 0; w < NWORKERS; w++) {
		pid[w] = fork_worker();
		if (pid[w] == 0) {
			mixed_worker(w, mx, a, b, end);
			_exit(0);
		}
	}
	for (int w = 0; w < NWORKERS; w++) {
		assert_int_equal(wait_for(pid[w], P.mixed_s + 120), 0);
		fails += mx->fails[w];
	}
	db_check(a, &sa);
	db_check(b, &sb);
	print_message("held: mixed: %d s, %llu + %llu records, %llu merges, %llu reports, "
		      "%llu failures; %zu + %zu epochs consistent\n", P.mixed_s,
		      mx->runs[W_REC1], mx->runs[W_REC2], mx->runs[W_MERGE], mx->runs[W_REPORT],
		      fails, sa.epochs, sb.epochs);
	if (fails)
		fail_msg("%llu failures; the last: %s", fails, mx->failure);
	assert_int_equal(sa.epochs, 1 + mx->runs[W_REC1] + mx->runs[W_REC2]);
	assert_int_equal(sa.total, mx->samples);
	assert_int_equal(sb.epochs, 1 + mx->runs[W_MERGE]);
	assert_true(mx->runs[W_MERGE] > 0 && mx->runs[W_REPORT] > 0);
	assert_int_equal(prof_all_total(a), sa.total);
	assert_int_equal(prof_all_total(b), sb.total);
	munmap(mx, sizeof(*mx));
}

/* ---- 3. SIGUSR1 and SIGHUP storm ----------------------------------------- */

static void test_signal_storm(void **state)
{
	char dbp[PROF_PATH_MAX], errf[PROF_PATH_MAX];
	int hups = 0;
	struct dsaid d;
	struct dbsum sum;
	pid_t dm, w;
	double t0 = now_s();

	fresh(dbp, sizeof(dbp), "storm");
	fresh(errf, sizeof(errf), "storm.err");
	w = busy();
	dm = daemon_start(dbp, "3600", errf, NULL);
	for (int i = 0; i < P.usr1; i++) {
		assert_int_equal(kill(dm, SIGUSR1), 0);
		sleep_ms(15);
		if (hups < P.hup && (i + 1) * (P.hup + 1) / P.usr1 > hups) {
			sleep_ms(50);	/* samples for the epoch before */
			assert_int_equal(kill(dm, SIGHUP), 0);
			hups++;
			sleep_ms(50);
		}
	}
	sleep_ms(100);
	daemon_stop(dm, errf, &d, dbp, &sum);
	stop(w);
	print_message("held: storm: %d SIGUSR1, %d SIGHUP: %llu flushes, %llu epochs, %llu "
		      "samples (%llu lost), %llu in the database, %.1f s\n", P.usr1, hups,
		      d.flushes, d.epochs, d.samples, d.lost, (unsigned long long)sum.total,
		      now_s() - t0);
	assert_int_equal(sum.epochs, hups + 1);
	assert_int_equal(d.epochs, hups + 1);
	assert_int_equal(sum.empty, 0);
	assert_int_equal(sum.total, d.samples);
	/* signals that come while a flush runs are one flush (a flag, as the
	 * kernel's pending signal is one): at least one per epoch, never more
	 * than were asked for */
	assert_true(d.flushes >= d.epochs);
	assert_true(d.flushes <= (unsigned long long)(P.usr1 + hups + 1));
}

/* ---- 4. SIGKILL during flushes ------------------------------------------- */

static void test_sigkill_in_flush(void **state)
{
	char dbp[PROF_PATH_MAX], errf[PROF_PATH_MAX];
	struct dbsum sum;
	pid_t w = busy();
	double t0 = now_s();
	int st;

	fresh(dbp, sizeof(dbp), "kills");
	for (int k = 0; k < P.kills; k++) {
		pid_t dm;
		int i;

		fresh(errf, sizeof(errf), "kills.err");
		dm = daemon_start(dbp, "3600", errf, NULL);
		/* one committed flush of this daemon's epoch, then a kill in the next */
		for (i = 0; i < 400 && committed_epochs(dbp) < (size_t)k + 1; i++) {
			kill(dm, SIGUSR1);
			sleep_ms(25);
		}
		assert_int_equal(committed_epochs(dbp), k + 1);
		sleep_ms(20);
		kill(dm, SIGUSR1);
		sleep_ms((int)(tu_rng() % 12));
		assert_int_equal(kill(dm, SIGKILL), 0);
		assert_int_equal(waitpid(dm, &st, 0), dm);
		untrack(dm);
		db_check(dbp, &sum);
		assert_int_equal(sum.epochs, k + 1);
	}
	stop(w);
	db_check(dbp, &sum);
	print_message("held: kills: %d SIGKILLs in flushes, %zu epochs consistent (%zu empty), "
		      "%llu samples, %.1f s\n", P.kills, sum.epochs, sum.empty,
		      (unsigned long long)sum.total, now_s() - t0);
	assert_int_equal(sum.epochs, P.kills);
	assert_int_equal(sum.empty, 0);
	assert_int_equal(prof_all_total(dbp), sum.total);
}

/* ---- 5. a stream of short processes under dcpid -------------------------- */

static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':')
			kb = atol(line + fl + 1);
	fclose(f);
	return kb;
}

static int open_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *dp;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	dp = opendir(path);
	if (!dp)
		return -1;
	while ((de = readdir(dp)))
		n += de->d_name[0] != '.';
	closedir(dp);
	return n;
}

/* Short processes until end: /bin/true, and every 16th a shell loop. */
static void spawner(unsigned long long *count, double end)
{
	while (now_s() < end) {
		for (int i = 0; i < 16; i++) {
			pid_t pid = fork();

			if (pid < 0)
				_exit(1);
			if (pid == 0) {
				int fd = open("/dev/null", O_WRONLY);

				dup2(fd, 1);
				dup2(fd, 2);
				if (i)
					execl("/bin/true", "true", (char *)NULL);
				else
					execl("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 2000 ]; "
					      "do i=$((i+1)); done", (char *)NULL);
				_exit(127);
			}
			waitpid(pid, NULL, 0);
			__atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
		}
	}
}

static void test_soak(void **state)
{
	unsigned long long *count = mmap(NULL, sizeof(*count), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char dbp[PROF_PATH_MAX], errf[PROF_PATH_MAX];
	long rss0, rss_base = -1, rss_max = 0, rss;
	int fd_min = 1 << 30, fd_max = 0, fds, nsp = 2;
	double t0, end;
	pid_t dm, sp[2];
	struct dbsum sum;
	struct dsaid d;

	assert_true(count != MAP_FAILED);
	*count = 0;
	fresh(dbp, sizeof(dbp), "soak");
	fresh(errf, sizeof(errf), "soak.err");
	dm = daemon_start(dbp, "1", errf, NULL);
	rss0 = status_kb(dm, "VmRSS");
	t0 = now_s();
	end = t0 + P.soak_s;
	for (int i = 0; i < nsp; i++) {
		sp[i] = fork_worker();
		if (sp[i] == 0) {
			spawner(count, end);
			_exit(0);
		}
	}
	while (now_s() < end) {
		sleep_ms(200);
		rss = status_kb(dm, "VmRSS");
		fds = open_fds(dm);
		assert_true(rss > 0 && fds > 0);
		/* the tables and maps reach their working size in the first flushes */
		if (rss_base < 0 && now_s() - t0 >= 1.5)
			rss_base = rss;
		if (rss > rss_max)
			rss_max = rss;
		fd_min = fds < fd_min ? fds : fd_min;
		fd_max = fds > fd_max ? fds : fd_max;
	}
	for (int i = 0; i < nsp; i++)
		assert_int_equal(wait_for(sp[i], 60), 0);
	daemon_stop(dm, errf, &d, dbp, &sum);
	if (rss_base < 0)
		rss_base = rss0;
	print_message("held: soak: %d s, %llu processes (%.0f/s), dcpid RSS %.1f -> %.1f MB "
		      "(max %.1f), fds %d-%d, %llu samples, %llu lost, %llu in the database\n",
		      P.soak_s, *count, *count / (now_s() - t0), rss0 / 1024.0,
		      rss_base / 1024.0, rss_max / 1024.0, fd_min, fd_max, d.samples, d.lost,
		      (unsigned long long)sum.total);
	assert_true(*count > 0);
	assert_true(d.samples > 0);
	assert_int_equal(d.lost, 0);
	assert_int_equal(sum.total, d.samples);
	assert_true(fd_max - fd_min <= 3);
	if (!ASAN_BUILD)	/* ASan's quarantine holds freed memory */
		assert_true(rss_max - rss_base <= P.rss_mb * 1024L);
	munmap(count, sizeof(*count));
}

/* ---- 6, 7. corrupt files ------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

/* Write a damaged copy of buf to path: bit flips (anywhere, or in the
 * first 512 bytes where headers are), a truncation, or both; what was done
 * into how. */
static void damage(const uint8_t *buf, size_t len, const char *path, char *how, size_t hlen)
{
	uint8_t *c = malloc(len + 1);
	size_t keep = len, o = 0;
	int kind = (int)(tu_rng() % 4), flips = 1 + (int)(tu_rng() % 8);
	FILE *f;

	assert_non_null(c);
	memcpy(c, buf, len);
	how[0] = '\0';
	if (kind != 1 && len) {
		size_t span = kind == 2 && len > 512 ? 512 : len;

		for (int i = 0; i < flips; i++) {
			size_t at = (size_t)(tu_rng() % span);
			int bit = (int)(tu_rng() % 8);

			c[at] ^= (uint8_t)(1u << bit);
			o += (size_t)snprintf(how + o, o < hlen ? hlen - o : 0, "flip %zu.%d ",
					      at, bit);
		}
	}
	if (kind == 1 || kind == 3) {
		keep = len ? (size_t)(tu_rng() % len) : 0;
		snprintf(how + (o < hlen ? o : hlen - 1), o < hlen ? hlen - o : 1,
			 "truncate %zu of %zu", keep, len);
	}
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(c, 1, keep, f), keep);
	fclose(f);
	free(c);
}

struct verdict {
	int ok, refused, bad;
	char first_bad[2048];
};

/* A report or import: status 0, or non-zero with a message naming name;
 * never a signal, a sanitizer report or a hang. */
static void judge(struct verdict *v, int rc, const char *text, const char *name,
		  const char *what)
{
	const char *why = NULL;

	if (rc < 0)
		why = "hung (killed after its timeout)";
	else if (rc >= 128)
		why = "died of a signal";
	else if (sanitizer_said(text))
		why = "a sanitizer report";
	else if (rc && (!*text || (name && !strstr(text, name))))
		why = name ? "failed without naming the file" : "failed without a message";
	if (!why) {
		v->ok += !rc;
		v->refused += !!rc;
		return;
	}
	if (!v->bad++)
		snprintf(v->first_bad, sizeof(v->first_bad), "%s: %s (status %d): %.1500s", what,
			 why, rc, text);
}

static void test_corrupt_perf_data(void **state)
{
	char base[PROF_PATH_MAX], file[PROF_PATH_MAX], out[PROF_PATH_MAX], dbp[PROF_PATH_MAX];
	char how[512], what[PROF_PATH_MAX + 600], text[8192];
	struct verdict v = { 0 };
	struct dbsum sum;
	double t0 = now_s();
	uint8_t *buf;
	size_t len;

	if (system("command -v perf > /dev/null 2>&1")) {
		print_message("held: perf-data: no perf here, skipped\n");
		skip();
	}
	fresh(base, sizeof(base), "base.perf.data");
	fresh(out, sizeof(out), "perf.out");
	/* no build-id cache: nothing written outside ws (perf's is ~/.debug) */
	if (run(out, 60, NULL, "/bin/sh", "-c", "exec perf record -q --no-buildid-cache "
		"-e cpu-clock -c 50000 -o \"$0\" -- \"$1\" 3", base, twoprocs, (char *)NULL)) {
		slurp(out, text, sizeof(text));
		print_message("held: perf-data: perf record failed, skipped: %s\n", text);
		skip();
	}
	buf = read_all(base, &len);
	fresh(dbp, sizeof(dbp), "imports");
	fresh(file, sizeof(file), "bad.perf.data");
	for (int i = 0; i < P.perf_files; i++) {
		int rc;

		damage(buf, len, file, how, sizeof(how));
		rc = run(out, 30, NULL, import_bin, "import", "--no-calibrate", "-q", "--db", dbp,
			 file, (char *)NULL);
		slurp(out, text, sizeof(text));
		snprintf(what, sizeof(what), "file %d (%s)", i, how);
		judge(&v, rc, text, file, what);
	}
	free(buf);
	db_check(dbp, &sum);
	print_message("held: perf-data: %d damaged copies of a %zu-byte perf.data: %d imported, "
		      "%d refused naming the file, %d crashed, hung or said nothing; %zu epochs "
		      "consistent; %.1f s\n", P.perf_files, len, v.ok, v.refused, v.bad,
		      sum.epochs, now_s() - t0);
	if (v.bad)
		fail_msg("%s", v.first_bad);
	assert_int_equal(sum.epochs, v.ok);
}

/* The regular files of the database's epochs, as "EPOCH/NAME". */
static size_t db_files(const char *dbp, char names[][128], size_t max)
{
	struct dirent *e, *f;
	char dir[1024];
	size_t n = 0;
	DIR *dp = opendir(dbp), *ep;

	assert_non_null(dp);
	while ((e = readdir(dp)) && n < max) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%.500s/%.255s", dbp, e->d_name);
		ep = opendir(dir);
		if (!ep)
			continue;
		while ((f = readdir(ep)) && n < max)
			if (f->d_type == DT_REG)
				snprintf(names[n++], 128, "%.20s/%.100s", e->d_name, f->d_name);
		closedir(ep);
	}
	closedir(dp);
	return n;
}

static void test_corrupt_databases(void **state)
{
	static const char *const reports[][6] = {
		{ "prof", NULL },
		{ "prof", "-i", "--epoch", "all", "--json", NULL },
		{ "calc", "--no-measure", "proc_a", NULL },
		{ "vlist", "proc_a", NULL },
	};
	char base[512], cdb[512], out[PROF_PATH_MAX], path[1024];
	char how[512], what[PROF_PATH_MAX + 800], text[8192], names[64][128];
	struct verdict v = { 0 };
	double t0 = now_s();
	int reps = 0;
	size_t nf;

	fresh(base, sizeof(base), "cbase");
	fresh(cdb, sizeof(cdb), "cdb");
	fresh(out, sizeof(out), "cdb.out");
	/* profiles, paths, values and meta files to damage */
	assert_int_equal(run(out, 60, NULL, dcpi_bin, "record", "--values", "--db", base, "--",
			     twoprocs, "10", (char *)NULL), 0);
	assert_int_equal(run(out, 60, NULL, dcpi_bin, "record", "--db", base, "--", twoprocs,
			     "10", (char *)NULL), 0);
	nf = db_files(base, names, 64);
	assert_true(nf >= 6);
	for (int i = 0; i < P.db_files; i++) {
		const char *victim = names[tu_rng() % nf];
		size_t len;
		uint8_t *buf;

		assert_int_equal(tu_sh("rm -rf '%s' && cp -a '%s' '%s'", cdb, base, cdb), 0);
		snprintf(path, sizeof(path), "%s/%s", cdb, victim);
		buf = read_all(path, &len);
		damage(buf, len, path, how, sizeof(how));
		free(buf);
		for (size_t r = 0; r < sizeof(reports) / sizeof(reports[0]); r++) {
			char *argv[MAXARGS] = { (char *)dcpi_bin };
			int k = 1, rc;

			for (int j = 0; reports[r][j]; j++)
				argv[k++] = (char *)reports[r][j];
			argv[k++] = "--db";
			argv[k++] = cdb;
			argv[k] = NULL;
			rc = wait_for(start(argv, out, NULL), 30);
			slurp(out, text, sizeof(text));
			snprintf(what, sizeof(what), "dcpi %s %s on %s damaged (%s)",
				 reports[r][0], reports[r][1] ? reports[r][1] : "", victim, how);
			judge(&v, rc, text, NULL, what);
			reps++;
		}
	}
	print_message("held: databases: %d damaged copies (%zu files to choose from), %d "
		      "reports: %d printed, %d refused with a message, %d crashed, hung or said "
		      "nothing; %.1f s\n", P.db_files, nf, reps, v.ok, v.refused, v.bad,
		      now_s() - t0);
	if (v.bad)
		fail_msg("%s", v.first_bad);
}

/* ---- 8. hostile programs ------------------------------------------------- */

static void test_hostile_programs(void **state)
{
	static const struct {
		const char *mode, *n;
		int status;
	} progs[] = {
		{ "children", "200", 7 }, { "threads", "64", 7 }, { "blocked", "0", 7 },
		{ "trap", "0", 7 }, { "segv", "0", 128 + SIGSEGV }, { "setuid", "0", 7 },
		{ "cgo", "0", 7 },
	};
	char dbp[PROF_PATH_MAX], out[PROF_PATH_MAX], text[8192], suid[PROF_PATH_MAX];
	size_t np = sizeof(progs) / sizeof(progs[0]);
	double worst = 0;

	fresh(dbp, sizeof(dbp), "hostile");
	fresh(out, sizeof(out), "hostile.out");
	for (size_t i = 0; i <= np; i++) {
		const char *prog = hostile, *mode, *n;
		int want, native, rec;
		double t0, tn, tr;

		if (i < np) {
			mode = progs[i].mode;
			n = progs[i].n;
			want = progs[i].status;
		} else {	/* a set-user-ID binary, when root can make one */
			if (geteuid() != 0)
				break;
			fresh(suid, sizeof(suid), "suid-hostile");
			assert_int_equal(tu_sh("cp '%s' '%s' && chown 65534:65534 '%s' && "
					       "chmod 4755 '%s'", hostile, suid, suid, suid), 0);
			prog = suid;
			mode = "threads";
			n = "8";
			want = 7;
		}
		t0 = now_s();
		native = run(out, 60, NULL, prog, mode, n, "7", (char *)NULL);
		tn = now_s() - t0;
		assert_int_equal(native, want);
		t0 = now_s();
		rec = run(out, 20 + 10 * tn, NULL, dcpi_bin, "record", "--db", dbp, "--", prog,
			  mode, n, "7", (char *)NULL);
		tr = now_s() - t0;
		slurp(out, text, sizeof(text));
		print_message("held: hostile: %s %s%s: status %d native, %d recorded; %.2f s "
			      "native, %.2f s recorded\n", mode, n,
			      prog == suid ? " (setuid bit)" : "", native, rec, tn, tr);
		if (rec != native)
			fail_msg("%s: status %d native, %d under dcpi record: %s", mode, native,
				 rec, text);
		worst = tr - tn > worst ? tr - tn : worst;
	}
	print_message("held: hostile: %zu programs, native statuses kept, at most %.2f s "
		      "added\n", np + (geteuid() == 0), worst);
}

/* ---- 9. a full disk for several flushes ---------------------------------- */

static void test_disk_full_recovers(void **state)
{
	char dbp[PROF_PATH_MAX], errf[PROF_PATH_MAX], *env;
	size_t o;
	struct dbsum sum;
	struct dsaid d;
	pid_t dm, w;

	/* the pidfile takes write 1; each failing flush stops at its first */
	env = malloc(256);
	assert_non_null(env);
	o = (size_t)snprintf(env, 256, "DCPI_FAILPOINT=");
	for (int k = 0; k < P.enospc; k++)
		o += (size_t)snprintf(env + o, 256 - o, "%swrite:%d:enospc", k ? "," : "", k + 2);
	fresh(dbp, sizeof(dbp), "full");
	fresh(errf, sizeof(errf), "full.err");
	w = busy();
	dm = daemon_start(dbp, "3600", errf, env);
	for (int i = 0; i < P.enospc + 3; i++) {
		sleep_ms(150);
		kill(dm, SIGUSR1);
	}
	sleep_ms(150);
	daemon_stop(dm, errf, &d, dbp, &sum);
	stop(w);
	print_message("held: disk-full: %d flushes failed in a row (meta %llu): %llu samples "
		      "said, %llu in the database, %llu dropped\n", (int)d.failed,
		      (unsigned long long)sum.failed_flushes, d.samples,
		      (unsigned long long)sum.total, d.dropped);
	assert_int_equal(d.failed, P.enospc);
	assert_int_equal(sum.failed_flushes, P.enospc);
	assert_int_equal(d.dropped, 0);
	assert_true(d.samples > 0);
	assert_int_equal(sum.total, d.samples);
	free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TU_EACH(test_concurrent_records),
		TU_EACH(test_mixed),
		TU_EACH(test_signal_storm),
		TU_EACH(test_sigkill_in_flush),
		TU_EACH(test_soak),
		TU_EACH(test_corrupt_perf_data),
		TU_EACH(test_corrupt_databases),
		TU_EACH(test_hostile_programs),
		TU_EACH(test_disk_full_recovers),
	};

	params();
	if (getenv("HELD_ONLY"))
		cmocka_set_test_filter(getenv("HELD_ONLY"));
	return cmocka_run_group_tests(tests, setup, tu_run_teardown);
}
