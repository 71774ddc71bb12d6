/*
 * test_pathrt.c - path samples end to end (collect/pathrt.c, the runtime
 * preloaded by `dcpi record`; collect/paths_spool.c, its spool files into
 * .paths profiles; docs/paths.md).
 *
 * The spool reader on hand-made files (exact edges, PATH_ELSEWHERE both
 * ways, the contention canaries' summary (collect/canary.h), a record cut
 * short by a crash).  Then `dcpi record` on
 * tests/workloads/pathloop.c: the branch at pl_branch falls through a known
 * fraction of the time (the workload prints the exact count) and the path
 * samples must recover it within statistical bounds, every burst timing
 * the canary on the program's core; threads, fork, exec,
 * the program's own SIGTRAP/SIGPROF handlers, blocked signals, signals
 * arriving during bursts (their handler is never stepped), rep-prefixed
 * instructions, syscalls, a crash mid-run (exit status kept, bursts kept),
 * a library loaded by dlopen, a statically linked program (a note, no
 * paths), --no-paths and bad
 * --paths values.  Addresses come from nm and readelf, not dcpi's image code.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "../collect/pathrt.h"
#include "../collect/paths.h"
#include "testutil.h"
#include "tu_run.h"
#include "tu_main.h"

#define RATE "--paths=250:32"	/* the kernel's tick caps CPU timers near 250/s */
#define K 32

static char ws[256], pathloop[PATH_MAX];
static char db[TU_RUN_NAME], outfile[TU_RUN_NAME], errfile[TU_RUN_NAME];
static const char *dcpi_bin, *src_dir;

static int setup(void **state)
{
	src_dir = getenv("DCPI_SRC");
	return tu_run_setup(&dcpi_bin, pathloop, sizeof(pathloop), "pathloop", ws, sizeof(ws),
			    "pathrt");
}

static void new_db(void)
{
	tu_run_names(ws, db, errfile, outfile, "out");
}

struct run {
	int status;
	double secs;		/* wall time */
	char out[4096], err[4096];
	char settings[2048];
	struct path_profile *p;
	size_t np;
};

static void slurp(const char *path, char *buf, size_t len)
{
	assert_true(tu_slurp(path, buf, len) >= 0);
}

/* The latest epoch's path profiles and settings line (none when absent). */
static void read_epoch(struct run *r)
{
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_db *d;
	char epoch[64];

	r->p = NULL;
	r->np = 0;
	r->settings[0] = '\0';
	if (prof_db_open(db, 0, &d, &err))
		return;
	if (!prof_db_latest_epoch(d, epoch, sizeof(epoch), &err)) {
		assert_int_equal(path_epoch_read(d, epoch, &r->p, &r->np, &err), 0);
		if (!prof_epoch_meta_read(d, epoch, &m, &err))
			snprintf(r->settings, sizeof(r->settings), "%s", m.settings);
	}
	prof_db_close(d);
}

#define RUN_TIMEOUT_S 60	/* a run that takes longer has hung: killed, failed */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run args with stdout and stderr to files, in a process group of its own,
 * killed with all it started after RUN_TIMEOUT_S (then the test fails).
 * The wall time it took into *secs. */
static void run_timed(char *const args[], const char *out_path, const char *err_path,
		      int *status, double *secs)
{
	double t0 = now_s();
	pid_t pid, w;

	pid = tu_spawn(args, out_path, err_path, TU_SPAWN_GROUP);
	for (;;) {
		siginfo_t si;
		struct timespec ts = { 0, 10000000L };

		memset(&si, 0, sizeof(si));
		assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
		if (si.si_pid == pid || now_s() - t0 >= RUN_TIMEOUT_S)
			break;
		nanosleep(&ts, NULL);
	}
	*secs = now_s() - t0;
	/* what it left running, or all of it on a timeout; not reaped yet, so
	 * the group's number is still ours */
	kill(-pid, SIGKILL);
	w = waitpid(pid, status, 0);
	assert_int_equal(w, pid);
	if (*secs >= RUN_TIMEOUT_S)
		fail_msg("%s %s: still running after %d s, killed", args[0],
			 args[1] ? args[1] : "", RUN_TIMEOUT_S);
}

/* dcpi record [opts...] -- argv..., NULL-terminated lists. */
static void record(struct run *r, const char *const *opts, const char *const *argv)
{
	char *args[64];
	int n = 0;

	new_db();
	memset(r, 0, sizeof(*r));
	args[n++] = (char *)dcpi_bin;
	args[n++] = "record";
	args[n++] = "--no-calibrate";
	args[n++] = "--db";
	args[n++] = db;
	for (; *opts; opts++)
		args[n++] = (char *)*opts;
	args[n++] = "--";
	for (; *argv; argv++)
		args[n++] = (char *)*argv;
	args[n] = NULL;
	run_timed(args, outfile, errfile, &r->status, &r->secs);
	slurp(outfile, r->out, sizeof(r->out));
	slurp(errfile, r->err, sizeof(r->err));
	read_epoch(r);
}

/* argv alone, as a shell would run it. */
static void native(struct run *r, const char *const *argv)
{
	new_db();
	memset(r, 0, sizeof(*r));
	run_timed((char *const *)argv, outfile, errfile, &r->status, &r->secs);
	slurp(outfile, r->out, sizeof(r->out));
	slurp(errfile, r->err, sizeof(r->err));
}

static void run_free(struct run *r)
{
	path_profiles_free(r->p, r->np);
	r->p = NULL;
	r->np = 0;
}

static int exit_code(const struct run *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* key=N in the settings line, -1 when absent. */
static long setting(const struct run *r, const char *key)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), " %s=", key);
	s = strstr(r->settings, pat);
	return s ? strtol(s + strlen(pat), NULL, 10) : -1;
}

static const struct path_profile *image(const struct run *r, const char *suffix)
{
	for (size_t i = 0; i < r->np; i++)
		if (tu_ends_with(r->p[i].image.path, suffix))
			return &r->p[i];
	return NULL;
}

/* --- the spool reader ------------------------------------------------------ */

static void put_rec(FILE *f, uint32_t type, const void *body, size_t len, uint32_t tid,
		    uint32_t flags)
{
	struct prt_rec h = { PRT_MAGIC, type, (uint32_t)(sizeof(h) + len), 42, tid, flags, 0 };

	assert_int_equal(fwrite(&h, sizeof(h), 1, f), 1);
	if (len)
		assert_int_equal(fwrite(body, len, 1, f), 1);
}

static void test_spool_reader(void **state)
{
	static const char maps[] = "1000 2000 0 /nonexistent/a\n"
				   "3000 4000 1000 /nonexistent/b\n"
				   "garbage line\n";
	static const uint64_t burst[] = { 0x1010, 0x1014, 0x3008, 0x300c, 0x1018, 0x9999,
					  0x101c };
	static const uint64_t early[] = { 0x1010, 0x1014 };
	static const struct prt_canary can[3] = { { 1000, 2000 }, { 1000, 3000 }, { 1000, 1500 } };
	struct dcpi_err err = { 0 };
	struct paths_canary cs;
	struct paths_stats st;
	struct path_profile *v;
	const struct path_profile *a, *b;
	char dir[300], path[400];
	size_t n;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/spool", ws);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/42-0.spool", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	put_rec(f, PRT_BURST, early, sizeof(early), 1, 0);	/* before any maps: dropped */
	put_rec(f, PRT_MAPS, maps, sizeof(maps) - 1, 1, 0);
	put_rec(f, PRT_BURST, burst, sizeof(burst), 1, 0);
	put_rec(f, PRT_BURST, burst, 3 * 8, 2, PRT_F_CUT);
	/* three canaries alone, one shared, one whose clock read an interrupt
	 * stretched (too fast: not the core alone) */
	for (int i = 0; i < 5; i++)
		put_rec(f, PRT_CANARY, &can[i < 3 ? 0 : i - 2], sizeof(can[0]), 1, 0);
	/* a crash during the last write: the header and half its pcs */
	put_rec(f, PRT_BURST, burst, 8, 3, 0);
	fseek(f, -4, SEEK_END);
	assert_int_equal(ftruncate(fileno(f), ftell(f)), 0);
	fclose(f);
	assert_int_equal(paths_spool_read(dir, &v, &n, &st, &err), 0);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.bursts, 3);
	assert_int_equal(st.steps, 2 + 7 + 3);
	assert_int_equal(st.cut, 1);
	assert_int_equal(st.bad, 1);
	/* 2.0, 3.0 and 1.5 core cycles per 8 adds, in bins of 1/64 */
	assert_int_equal(st.canaries, 5);
	paths_canary_summary(&st, 0, &cs);
	assert_true(fabs(cs.alone - 2.0) < 0.02 && fabs(cs.mean - 2.1) < 0.02);
	assert_true(fabs(cs.sd - sqrt(0.24)) < 0.02 && fabs(cs.shared - 0.2) < 1e-12);
	paths_canary_summary(&st, 1.5, &cs);	/* timed lower beside: that is alone */
	assert_true(cs.alone == 1.5 && fabs(cs.shared - 0.8) < 1e-12);
	paths_canary_summary(&st, 2.5, &cs);	/* higher: the bursts' mode is */
	assert_true(fabs(cs.alone - 2.0) < 0.02);
	assert_int_equal(st.threads, 2);
	assert_int_equal(n, 2);
	a = !strcmp(v[0].image.path, "/nonexistent/a") ? &v[0] : &v[1];
	b = a == &v[0] ? &v[1] : &v[0];
	assert_string_equal(a->image.path, "/nonexistent/a");
	assert_string_equal(b->image.path, "/nonexistent/b");
	assert_string_equal(a->source, "tf-step");
	assert_int_equal(a->bursts, 2);
	assert_int_equal(b->bursts, 2);
	/* a: 0x10 -> 0x14 twice, leaves to b, comes back, leaves to unknown */
	assert_int_equal(path_profile_edge(a, 0x10, 0x14), 2);
	assert_int_equal(path_profile_edge(a, 0x14, PATH_ELSEWHERE), 2);
	assert_int_equal(path_profile_edge(a, PATH_ELSEWHERE, 0x18), 1);
	assert_int_equal(path_profile_edge(a, 0x18, PATH_ELSEWHERE), 1);
	assert_int_equal(path_profile_edge(a, PATH_ELSEWHERE, 0x1c), 1);
	assert_int_equal(a->nedges, 5);
	assert_int_equal(path_profile_step(a, 0x10), 2);
	assert_int_equal(path_profile_step(a, 0x1c), 1);
	assert_int_equal(a->nsteps, 4);
	/* b at file offset 0x1000 + (pc - 0x3000) */
	assert_int_equal(path_profile_edge(b, PATH_ELSEWHERE, 0x1008), 2);
	assert_int_equal(path_profile_edge(b, 0x1008, 0x100c), 1);
	assert_int_equal(path_profile_edge(b, 0x100c, PATH_ELSEWHERE), 1);
	assert_int_equal(b->nedges, 3);
	assert_int_equal(path_profile_step(b, 0x1008), 2);
	path_profiles_free(v, n);

	/* A garbage file is counted bad, not trusted; so is a canary of the
	 * wrong length. */
	snprintf(path, sizeof(path), "%s/43-0.spool", dir);
	tu_write_text(path, "this is not a spool file at all, not even close......");
	snprintf(path, sizeof(path), "%s/44-0.spool", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	put_rec(f, PRT_CANARY, &can[0], 4, 1, 0);
	fclose(f);
	assert_int_equal(paths_spool_read(dir, &v, &n, &st, &err), 0);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.bad, 3);
	assert_int_equal(st.canaries, 5);
	path_profiles_free(v, n);
	snprintf(path, sizeof(path), "%s/nope", ws);
	assert_int_not_equal(paths_spool_read(path, &v, &n, &st, &err), 0);
	assert_non_null(strstr(err.msg, path));
}

/* --- dcpi record ------------------------------------------------------------- */

/* The workload's "fallthrough F of N" lines, summed. */
static void truth(const struct run *r, uint64_t *f, uint64_t *n)
{
	const char *s = r->out;
	unsigned long long a, b;

	*f = *n = 0;
	while ((s = strstr(s, "fallthrough "))) {
		assert_int_equal(sscanf(s, "fallthrough %llu of %llu", &a, &b), 2);
		*f += a;
		*n += b;
		s++;
	}
}

/* The branch's two outcomes as the paths saw them, against the truth. */
static void check_branch(const struct run *r, double want, uint64_t min_obs)
{
	const struct path_profile *p = image(r, "/pathloop");
	uint64_t br = tu_sym_off(pathloop, "pl_branch", NULL);
	uint64_t fall = tu_sym_off(pathloop, "pl_fall", NULL);
	uint64_t join = tu_sym_off(pathloop, "pl_join", NULL);
	uint64_t ft, tk, other = 0, obs;
	double got, bound;

	assert_non_null(p);
	ft = path_profile_edge(p, br, fall);
	tk = path_profile_edge(p, br, join);
	for (size_t i = 0; i < p->nedges; i++)
		if (p->edges[i].from == br && p->edges[i].to != fall && p->edges[i].to != join)
			other += p->edges[i].count;
	obs = ft + tk;
	assert_int_equal(other, 0);
	assert_true(obs >= min_obs);
	/* A burst sees about 4 iterations in a row of an LCG whose top bits
	 * are nearly independent: count half the observations as independent
	 * and allow 4 sigma. */
	got = (double)ft / (double)obs;
	bound = 4 * sqrt(want * (1 - want) / ((double)obs / 2)) + 0.005;
	print_message("branch: %" PRIu64 " observations, fall-through %.4f, exact %.4f "
		      "(bound %.4f)\n", obs, got, want, bound);
	assert_true(fabs(got - want) <= bound);
	/* every observed outcome was a step at the branch */
	assert_true(path_profile_step(p, br) >= obs);
	assert_true(path_profile_step(p, br) <= obs + p->bursts);
}

/* pathloop MODE N recorded at RATE into r; it exits 0. */
static void record_ok(struct run *r, const char *mode, const char *n)
{
	static const char *const opts[] = { RATE, NULL };
	const char *argv[] = { pathloop, mode, n, NULL };

	record(r, opts, argv);
	if (exit_code(r) != 0)
		print_message("%s %s: %s\n", mode, n, r->err);
	assert_int_equal(exit_code(r), 0);
}

/*
 * dcpicalc on the recording says what the canaries found, and a recording
 * whose core was shared in half its bursts (its metadata set so) gets every
 * count's low end up to 1.5x lower, as far as the sampled blocks would run
 * slower on half a core (estimate/interval.c), the counts unchanged.
 */
static void check_shared_core(void)
{
	static const char py[] =
		"import json, re, sys\n"
		"db = sys.argv[1]\n"
		"a = json.load(open(db + '/a.json'))\n"
		"b = json.load(open(db + '/b.json'))\n"
		"sa = a['core']['shared']\n"
		"assert a['core']['bursts'] > 0 and b['core']['shared'] == 0.5, b['core']\n"
		"n = 0\n"
		"for x, y in zip(a['blocks'], b['blocks']):\n"
		"    if x['executions'] <= 0: continue\n"
		"    assert abs(x['executions'] - y['executions']) <= 1e-9 * x['executions']\n"
		"    # lowered by 1 + share x (the sampled blocks' half-core slowdown - 1):\n"
		"    # between none (a dependent chain) and the whole (1 + sa -> 1.5)\n"
		"    k = (1 + sa) / 1.5\n"
		"    lo, hi = min(1, k) * x['interval'][0], max(1, k) * x['interval'][0]\n"
		"    tol = 1e-6 * x['executions']\n"
		"    assert lo - tol <= y['interval'][0] <= hi + tol, (x, y)\n"
		"    assert abs(y['interval'][1] - x['interval'][1]) <= 1e-6 * x['interval'][1]\n"
		"    n += 1\n"
		"assert n > 0\n";
	char py_path[TU_RUN_NAME + 16];

	snprintf(py_path, sizeof(py_path), "%s.py", db);
	tu_write_text(py_path, py);
	assert_int_equal(tu_sh("cd %s && %s calc --db . --no-measure --json pl_loop > a.json "
			       "2>/dev/null && "
			       "%s calc --db . --no-measure pl_loop 2>/dev/null | grep -q '^core: '",
			       db, dcpi_bin, dcpi_bin), 0);
	assert_int_equal(tu_sh("cd %s && m=$(ls -d 0*/meta | tail -1) && "
			       "sed -i 's/^canary_shared = .*/canary_shared = 0.5/' $m && "
			       "%s calc --db . --no-measure --json pl_loop > b.json 2>/dev/null && "
			       "%s calc --db . --no-measure pl_loop 2>/dev/null | grep -q "
			       "'^core: shared with a busy sibling in 50%% of .*up to 1.50x high' && "
			       "python3 %s %s", db, dcpi_bin, dcpi_bin, py_path, db), 0);
}

static void test_branch_ratio(void **state)
{
	uint64_t f, n;
	struct run r;

	const char *c;
	double alone, mean, shared;
	long canaries;

	record_ok(&r, "branch", "300000000");
	truth(&r, &f, &n);
	assert_int_equal(n, 300000000);
	assert_true(setting(&r, "bursts") > 50);
	assert_int_equal(setting(&r, "lost"), 0);
	check_branch(&r, (double)f / (double)n, 200);
	/* every burst timed the canary on the program's core: core cycles per
	 * 8 independent adds, 8 / the ALUs alone (2 on a Zen, at least 1 on
	 * any core of 8 or fewer ALUs), more when shared */
	c = strstr(r.settings, " canary=");
	assert_non_null(c);
	assert_int_equal(sscanf(c, " canary=%lf/%lf/%lf/%ld", &alone, &mean, &shared, &canaries),
			 4);
	print_message("canary: alone %.2f, mean %.2f, shared in %.0f%% of %ld bursts\n", alone,
		      mean, 100 * shared, canaries);
	assert_true(canaries >= setting(&r, "bursts") / 2 && canaries <= setting(&r, "bursts"));
	assert_true(alone >= 0.9 && alone <= 8 && mean >= 0.9 * alone);
	assert_true(shared >= 0 && shared <= 1);
	check_shared_core();
	assert_non_null(strstr(r.err, "path bursts"));
	run_free(&r);
}

static void test_threads(void **state)
{
	uint64_t f, n;
	struct run r;

	record_ok(&r, "threads", "40000000");
	truth(&r, &f, &n);
	assert_int_equal(n, 4 * 40000000ull);
	assert_true(setting(&r, "threads") >= 4);
	check_branch(&r, (double)f / (double)n, 100);
	run_free(&r);
}

static void test_fork_exec(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	const char *fork_argv[] = { pathloop, "fork", "100000000", NULL };
	const char *exec_argv[] = { pathloop, "exec", "100000000", NULL };
	char cmd[PATH_MAX + 64];
	const char *sh_argv[] = { "/bin/sh", "-c", cmd, NULL };
	uint64_t f, n;
	struct run r;

	record(&r, opts, fork_argv);		/* the child re-arms, new spool file */
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "spools") >= 2);
	truth(&r, &f, &n);
	check_branch(&r, (double)f / (double)n, 50);
	run_free(&r);

	record(&r, opts, exec_argv);		/* LD_PRELOAD carries over */
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "spools") >= 2);
	truth(&r, &f, &n);
	check_branch(&r, (double)f / (double)n, 50);
	run_free(&r);

	snprintf(cmd, sizeof(cmd), "'%s' branch 50000000; true", pathloop);
	record(&r, opts, sh_argv);		/* a shell's child */
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "spools") >= 2);
	assert_non_null(image(&r, "/pathloop"));
	run_free(&r);
}

/* The workload checks itself: every int3 reached its SIGTRAP handler, its
 * SIGPROF handler ran, sigaction returned its own handler. */
static void test_own_handlers(void **state)
{
	struct run r;

	record_ok(&r, "trap", "50000000");
	assert_true(setting(&r, "bursts") > 10);
	assert_non_null(strstr(r.out, "int3 "));
	run_free(&r);
}

static void test_blocked_signals(void **state)
{
	struct run r;

	record_ok(&r, "block", "100000000");
	assert_true(setting(&r, "bursts") > 10);
	run_free(&r);
}

/* The kernel clears TF for a signal handler and restores it at sigreturn:
 * the handler is never stepped and bursts keep their length. */
static void test_signals_in_burst(void **state)
{
	const struct path_profile *p;
	uint64_t lo, size, in = 0;
	long bursts, steps;
	struct run r;

	record_ok(&r, "signals", "150000000");
	p = image(&r, "/pathloop");
	assert_non_null(p);
	lo = tu_sym_off(pathloop, "on_alarm", &size);
	assert_true(size > 0);
	for (size_t i = 0; i < p->nsteps; i++)
		if (p->steps[i].offset >= lo && p->steps[i].offset < lo + size)
			in += p->steps[i].count;
	assert_int_equal(in, 0);
	bursts = setting(&r, "bursts");
	steps = setting(&r, "steps");
	assert_true(bursts > 10);
	assert_true(steps >= (long)(bursts * K * 9 / 10));
	assert_int_equal(setting(&r, "lost"), 0);
	run_free(&r);
}

static void test_rep_and_syscalls(void **state)
{
	const char *sys_argv[] = { pathloop, "syscalls", "2000000", NULL };
	static const char *const sys_opts[] = { "--paths=250:36", NULL };
	const struct path_profile *p;
	uint64_t rep = tu_sym_off(pathloop, "pl_rep", NULL);
	struct run r;

	record_ok(&r, "rep", "100000000");
	p = image(&r, "/pathloop");
	assert_non_null(p);
	assert_true(path_profile_step(p, rep) > 0);
	assert_int_equal(path_profile_edge(p, rep, rep), 0);	/* repeats collapse */
	run_free(&r);

	/* A burst that starts after one system call (tests/workloads/
	 * pathloop.c) meets the next as its 29th or 37th pc through glibc's
	 * syscall(), its 32nd or 40th through the runtime's syscall() in front
	 * of it (collect/pathrt.c, three instructions): with K = 36 every
	 * other such burst is cut there, as with K = 32 before. */
	record(&r, sys_opts, sys_argv);
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "bursts") > 10);
	assert_true(setting(&r, "cut") > 0);	/* bursts end before a syscall */
	run_free(&r);
}

/* A crash keeps its status through dcpi record, and the bursts so far. */
static void test_crash(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	const char *argv[] = { pathloop, "crash", "100000000", NULL };
	const char *mid_argv[] = { pathloop, "crashmid", NULL };
	uint64_t f, n;
	struct run r;

	record(&r, opts, argv);
	assert_int_equal(exit_code(&r), 128 + SIGSEGV);
	truth(&r, &f, &n);
	check_branch(&r, (double)f / (double)n, 50);
	run_free(&r);

	/* Killed while being stepped (it crashes when it sees TF set): the
	 * status is the program's, the 19 bursts before are kept. */
	record(&r, opts, mid_argv);
	assert_int_equal(exit_code(&r), 128 + SIGSEGV);
	assert_true(setting(&r, "bursts") >= 19);
	assert_non_null(image(&r, "/pathloop"));
	run_free(&r);
}

/* With value samples on (docs/values.md) the same runtime also keeps each
 * step's registers: threads (a register buffer each), fork, exec, the
 * program's own handlers and a crash while stepped behave as without. */
static void test_values_robust(void **state)
{
	static const char *const opts[] = { RATE, "--values", NULL };
	const char *thr[] = { pathloop, "threads", "20000000", NULL };
	const char *frk[] = { pathloop, "fork", "50000000", NULL };
	const char *exe[] = { pathloop, "exec", "50000000", NULL };
	const char *own[] = { pathloop, "trap", "30000000", NULL };
	const char *mid[] = { pathloop, "crashmid", NULL };
	uint64_t f, n;
	struct run r;

	record(&r, opts, thr);
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "threads") >= 4);
	assert_true(setting(&r, "values") > 0);
	truth(&r, &f, &n);
	check_branch(&r, (double)f / (double)n, 50);
	run_free(&r);

	record(&r, opts, frk);
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "spools") >= 2);
	assert_true(setting(&r, "values") > 0);
	run_free(&r);

	record(&r, opts, exe);
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "spools") >= 2);
	assert_true(setting(&r, "values") > 0);
	run_free(&r);

	record(&r, opts, own);
	assert_int_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.out, "int3 "));
	assert_true(setting(&r, "values") > 0);
	run_free(&r);

	record(&r, opts, mid);
	assert_int_equal(exit_code(&r), 128 + SIGSEGV);
	assert_true(setting(&r, "bursts") >= 19);
	assert_true(setting(&r, "values") > 0);
	run_free(&r);
}

/* pathloop linked statically into bin: 0 when it built. */
static int tu_sh_static(const char *bin)
{
	char cmd[PATH_MAX + 512];

	snprintf(cmd, sizeof(cmd), "cc -static -O2 -o '%s' '%s/tests/workloads/pathloop.c' "
		 "-lpthread >/dev/null 2>&1", bin, src_dir);
	return system(cmd);
}

static void test_static_and_off(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	static const char *const off[] = { "--no-paths", NULL };
	char bin[400];
	const char *argv[] = { bin, "branch", "20000000", NULL };
	const char *dyn_argv[] = { pathloop, "branch", "20000000", NULL };
	struct run r;

	record(&r, off, dyn_argv);
	assert_int_equal(exit_code(&r), 0);
	assert_int_equal(r.np, 0);
	assert_null(strstr(r.settings, "paths="));
	run_free(&r);

	/* no runtime where it is asked for: a note, and time samples as usual */
	setenv("DCPI_PATHS_LIB", "/nonexistent/libdcpi-paths.so", 1);
	record(&r, opts, dyn_argv);
	unsetenv("DCPI_PATHS_LIB");
	assert_int_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.err, "note: no path samples"));
	assert_int_equal(r.np, 0);
	run_free(&r);

	snprintf(bin, sizeof(bin), "%s/static", ws);
	if (!src_dir || system("cc --version >/dev/null 2>&1") ||
	    tu_sh_static(bin)) {
		print_message("no static libc: the static case is not run\n");
		return;
	}
	record(&r, opts, argv);
	assert_int_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.err, "statically linked"));
	assert_int_equal(r.np, 0);
	run_free(&r);
}

/* A library mapped by dlopen after the start: the runtime reads the maps
 * again when a burst runs outside every mapping it knows. */
static void test_dlopen(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	char lib[400], dlopener[PATH_MAX];
	const char *argv[] = { dlopener, lib, "1.5", NULL };	/* seconds of wall time */
	const struct path_profile *p;
	uint64_t lo, size, in = 0;
	struct run r;

	tu_hot_lib(ws, "-O2", lib, sizeof(lib), dlopener, sizeof(dlopener));
	record(&r, opts, argv);
	assert_int_equal(exit_code(&r), 0);
	p = image(&r, "/libhot.so");
	assert_non_null(p);
	lo = tu_sym_off(lib, "hot_in_lib", &size);
	for (size_t i = 0; i < p->nedges; i++)
		if (p->edges[i].from >= lo && p->edges[i].from < lo + size)
			in += p->edges[i].count;
	assert_true(in > 100);
	run_free(&r);
}

/* A program built with AddressSanitizer refuses a library preloaded before
 * its runtime unless told otherwise: dcpi record tells it. */
static void test_asan_program(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	char bin[400], cmd[PATH_MAX + 512];
	const char *argv[] = { bin, "branch", "30000000", NULL };
	struct run r;

	snprintf(bin, sizeof(bin), "%s/asan", ws);
	snprintf(cmd, sizeof(cmd), "cc -fsanitize=address -O1 -o '%s' '%s/tests/workloads/"
		 "pathloop.c' -lpthread >/dev/null 2>&1", bin, src_dir ? src_dir : ".");
	if (!src_dir || system(cmd)) {
		print_message("no AddressSanitizer here: not run\n");
		return;
	}
	record(&r, opts, argv);
	assert_int_equal(exit_code(&r), 0);
	assert_true(setting(&r, "bursts") > 0);
	run_free(&r);
}

/* --- every way of installing a handler (tests/workloads/sigways.c) ------- */

#define SW_N "100000000"	/* about 0.2 s of loop natively */

/* sigways NAT_MODE natively, then MODE under dcpi record: the same exit
 * status and output, a run time within a small multiple of the native one
 * (the modes differ for a program that asks to be traced: natively its
 * parent, no tracer, would leave it stopped at its first signal). */
static void sigways_pair(const char *mode, const char *nat_mode, const char *const *opts,
			 struct run *rec)
{
	char bin[PATH_MAX];
	const char *argv[] = { bin, mode, SW_N, NULL };
	const char *nat_argv[] = { bin, nat_mode, SW_N, NULL };
	const char *nl;
	struct run nat;

	snprintf(bin, sizeof(bin), "%s/workloads/sigways", getenv("DCPI_BUILD"));
	native(&nat, nat_argv);
	record(rec, opts, argv);
	print_message("sigways %s: native status %d %.2f s, recorded status %d %.2f s, "
		      "bursts %ld\n", mode, nat.status, nat.secs, rec->status, rec->secs,
		      setting(rec, "bursts"));
	assert_true(WIFEXITED(nat.status) || WIFSIGNALED(nat.status));
	assert_int_equal(rec->status >> 8 & 0xff, WIFSIGNALED(nat.status) ?
			 128 + WTERMSIG(nat.status) : WEXITSTATUS(nat.status));
	assert_true(WIFEXITED(rec->status));
	/* the program's last line is out before dcpi record returns */
	nl = strstr(nat.out, "sum ");
	assert_non_null(nl);
	assert_non_null(strstr(rec->out, nl));
	if (rec->secs > 4 * nat.secs + 3.0)
		fail_msg("sigways %s: %.2f s recorded, %.2f s native", mode, rec->secs, nat.secs);
}

/* glibc's every entry point for installing a handler of SIGTRAP or of the
 * runtime's timer signal: the program's handler is called for its own
 * SIGTRAP, reported back to it, one-shot where asked (sysv_signal), and
 * the runtime keeps stepping.  Before: sigset, bsd_signal, ssignal,
 * __sigaction and sigvec single-stepped the program forever (its handler
 * took our steps), sysv_signal died of SIGTRAP (133), resetting the RT
 * signals killed it with the timer signal (189). */
static void test_handler_entry_points(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	static const char *const modes[] = {
		"sigset", "sysv", "__sysv", "bsd", "ssignal", "__sigaction", "sigvec",
		"siginterrupt", "rtreset", "rawsys",
	};
	struct run r;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		sigways_pair(modes[i], modes[i], opts, &r);
		assert_int_equal(exit_code(&r), 0);
		/* its own raise(SIGTRAP) reached its handler once (none in rtreset) */
		assert_non_null(strstr(r.out, strcmp(modes[i], "rtreset") ? "traps 1" : "traps 0"));
		assert_true(setting(&r, "bursts") >= 5);	/* still stepped */
		assert_null(strstr(r.err, "path samples stopped"));
		run_free(&r);
	}
}

/* A SIGTRAP handler installed by an inline system call, which no library
 * call sees: the runtime notices at its next timer signal, never steps the
 * thread again, and dcpi record says so.  The program's own queries get
 * the kernel's answer from then on. */
static void test_handler_taken_over(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	struct run r;

	sigways_pair("asm", "asm", opts, &r);
	assert_int_equal(exit_code(&r), 0);
	assert_non_null(strstr(r.out, "traps 1"));
	assert_non_null(strstr(r.err, "note: path samples stopped in thread "));
	assert_non_null(strstr(r.err, "the program replaced the SIGTRAP handler"));
	run_free(&r);
}

/* Blocking SIGTRAP needs no interposition (collect/pathrt.c's header):
 * no burst starts while it is blocked and a burst ends before the system
 * call that blocks it. */
static void test_blocking_trap(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	static const char *const modes[] = { "sighold", "sigblock" };
	struct run r;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		sigways_pair(modes[i], modes[i], opts, &r);
		assert_int_equal(exit_code(&r), 0);
		assert_true(setting(&r, "bursts") <= 3);	/* blocked for the loop */
		assert_null(strstr(r.err, "path samples stopped"));
		run_free(&r);
	}
}

/* ptrace(PTRACE_TRACEME) makes dcpi record the tracer: the runtime stops
 * stepping that thread (a note says so), an exec'd image starts traced and
 * is left alone, and record passes every signal on (its handler runs, its
 * default action kills), drops the exec's SIGTRAP, leaves a SIGSTOP
 * stopped until SIGCONT, and returns the program's own status once it
 * has exited.  Compared with the same program untraced.  Before: record
 * took the first stop for the end and returned 1 while it ran on. */
static void test_traceme(void **state)
{
	static const char *const opts[] = { RATE, NULL };
	static const char *const modes[][2] = {
		{ "traceme", "plain" }, { "tracesig", "sig" }, { "traceexec", "exec" },
		{ "tracestop", "stop" }, { "tracekill", "kill" },
	};
	const char *s;
	struct run r;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		sigways_pair(modes[i][0], modes[i][1], opts, &r);
		assert_non_null(strstr(r.err, "the program asked to be traced (PTRACE_TRACEME)"));
		if (!strcmp(modes[i][0], "traceexec"))
			assert_non_null(strstr(r.err, "note: path samples off in process "));
		if (!strcmp(modes[i][0], "tracesig"))
			assert_non_null(strstr(r.out, "usr1 3"));
		if (!strcmp(modes[i][0], "tracestop")) {
			s = strstr(r.out, "stopped ");
			assert_non_null(s);
			assert_true(atoi(s + 8) >= 250);	/* SIGCONT came at 300 ms */
		}
		assert_int_equal(exit_code(&r), strcmp(modes[i][0], "tracekill") ? 0 :
				 128 + SIGTERM);
		run_free(&r);
	}
}

static void test_bad_options(void **state)
{
	static const char *const bad[][2] = {
		{ "--paths=0:32", NULL }, { "--paths=50", NULL }, { "--paths=50:1", NULL },
		{ "--paths=50:999", NULL }, { "--paths=x:32", NULL },
	};
	const char *argv[] = { pathloop, "branch", "1000", NULL };
	struct run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		record(&r, bad[i], argv);
		assert_int_equal(exit_code(&r), 1);
		assert_non_null(strstr(r.err, "--paths"));
		run_free(&r);
	}
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_spool_reader),
	cmocka_unit_test(test_branch_ratio),
	cmocka_unit_test(test_threads),
	cmocka_unit_test(test_fork_exec),
	cmocka_unit_test(test_own_handlers),
	cmocka_unit_test(test_blocked_signals),
	cmocka_unit_test(test_signals_in_burst),
	cmocka_unit_test(test_rep_and_syscalls),
	cmocka_unit_test(test_crash),
	cmocka_unit_test(test_values_robust),
	cmocka_unit_test(test_static_and_off),
	cmocka_unit_test(test_dlopen),
	cmocka_unit_test(test_asan_program),
	cmocka_unit_test(test_handler_entry_points),
	cmocka_unit_test(test_handler_taken_over),
	cmocka_unit_test(test_blocking_trap),
	cmocka_unit_test(test_traceme),
	cmocka_unit_test(test_bad_options))
