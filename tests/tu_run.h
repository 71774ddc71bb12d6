/*
 * tests/tu_run.h - what the tests that run the dcpi binary share: their
 * setup (DCPI_BIN, a workload of DCPI_BUILD, a workspace), the removal of
 * that workspace, the names of each run's files in it, starting a program
 * with its output sent to files, reading a file back, a library for
 * workloads/dlopener to load, and checking `dcpi ... --json` with python3.
 * Header-only: each test is one binary.  Include after <cmocka.h>.
 */
#ifndef DCPI_TU_RUN_H
#define DCPI_TU_RUN_H

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "testutil.h"

/* The workspace of tu_run_setup, which tu_run_teardown removes. */
static const char *tu_run_ws;

/*
 * *bin from DCPI_BIN, wl the workload DCPI_BUILD/workloads/<workload>, ws
 * a new workspace named after name (testutil.h's tu_workspace).  -1 with a
 * message when tests/run.sh did not set them or the workspace failed.
 */
static inline int tu_run_setup(const char **bin, char *wl, size_t wl_len, const char *workload,
			       char *ws, size_t ws_len, const char *name)
{
	const char *build = getenv("DCPI_BUILD");

	*bin = getenv("DCPI_BIN");
	if (!*bin || !build) {
		fprintf(stderr, "DCPI_BIN and DCPI_BUILD must be set (tests/run.sh)\n");
		return -1;
	}
	snprintf(wl, wl_len, "%s/workloads/%s", build, workload);
	tu_run_ws = ws;
	return tu_workspace(ws, ws_len, name);
}

/* out: DCPI_BUILD/rel, or build/rel outside tests/run.sh. */
static inline void tu_build_file(char *out, size_t len, const char *rel)
{
	const char *build = getenv("DCPI_BUILD");

	snprintf(out, len, "%s/%s", build ? build : "build", rel);
}

static inline int tu_rm_one(const char *path, const struct stat *sb, int flag,
			    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove the workspace ws and all in it (never following a link). */
static inline void tu_rm_tree(const char *ws)
{
	nftw(ws, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A cmocka group teardown: tu_run_setup's workspace removed. */
static inline int tu_run_teardown(void **state)
{
	(void)state;
	if (tu_run_ws && *tu_run_ws)
		tu_rm_tree(tu_run_ws);
	return 0;
}

/* Each TU_RUN_NAME bytes: the names of the next run's files in ws. */
#define TU_RUN_NAME 300

/* The next run's database ws/db<n> in db, its stderr file ws/err<n> in err
 * and, unless other is NULL, ws/<other_name><n> in other. */
static inline void tu_run_names(const char *ws, char *db, char *err, char *other,
				const char *other_name)
{
	static int seq;

	snprintf(db, TU_RUN_NAME, "%s/db%d", ws, seq);
	snprintf(err, TU_RUN_NAME, "%s/err%d", ws, seq);
	if (other)
		snprintf(other, TU_RUN_NAME, "%s/%s%d", ws, other_name, seq);
	seq++;
}

enum {
	TU_SPAWN_ERR_APPEND = 1,	/* append to err_path rather than truncate it */
	TU_SPAWN_GROUP = 2,		/* in a process group of its own */
};

/*
 * Start argv with stdout to out_path (NULL: /dev/null) and stderr to
 * err_path, without core dumps; its pid.
 */
static inline pid_t tu_spawn(char *const argv[], const char *out_path, const char *err_path,
			     int flags)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit nocore = { 0, 0 };
		int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) :
				     open("/dev/null", O_WRONLY);
		int errfd = open(err_path, O_WRONLY | O_CREAT |
				 (flags & TU_SPAWN_ERR_APPEND ? O_APPEND : O_TRUNC), 0644);

		if (flags & TU_SPAWN_GROUP)
			setpgid(0, 0);
		setrlimit(RLIMIT_CORE, &nocore);
		if (out < 0 || errfd < 0)
			_exit(99);
		dup2(out, 1);
		dup2(errfd, 2);
		execv(argv[0], argv);
		_exit(98);
	}
	if (flags & TU_SPAWN_GROUP)
		setpgid(pid, pid);	/* either side may come first */
	return pid;
}

/* The first len - 1 bytes of the file at path into buf, NUL-terminated;
 * how many, or -1 (buf empty) when it cannot be opened. */
static inline long tu_slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (long)n;
}

/*
 * twoprocs' proc_a does three times proc_b's work.  A sample of the
 * workload twoprocs' profile w lands in a or b with probability 3/4 and 1/4
 * (skid across their few boundary instructions is negligible), so
 * a/(a+b) is binomial: within 5 sigma plus 1% of 0.75, and nearly all of
 * the image's time is in the two loops.  The share; the counts printed
 * after what.
 */
static inline double tu_check_twoprocs(const char *twoprocs, const struct prof_profile *w,
				       const char *what)
{
	uint64_t alo, ahi, blo, bhi, a, b;
	double n, p, sigma;

	sym_range(twoprocs, "proc_a", &alo, &ahi);
	sym_range(twoprocs, "proc_b", &blo, &bhi);
	a = count_in(w, alo, ahi);
	b = count_in(w, blo, bhi);
	n = (double)(a + b);
	p = n ? (double)a / n : 0;
	sigma = n ? sqrt(0.75 * 0.25 / n) : 0;
	print_message("%s: proc_a %llu proc_b %llu share %.4f (sigma %.4f), "
		      "%.1f%% of the image's %llu samples\n", what, (unsigned long long)a,
		      (unsigned long long)b, p, sigma,
		      w->total ? 100.0 * n / (double)w->total : 0, (unsigned long long)w->total);
	assert_true(n >= 100);
	if (fabs(p - 0.75) > 5 * sigma + 0.01)
		fail_msg("proc_a share %.4f, expected 0.75 +- %.4f", p, 5 * sigma + 0.01);
	assert_true(n >= 0.95 * (double)w->total);
	return p;
}

/*
 * Build ws/libhot.so (its name into lib, len bytes) with cc and cflags from
 * one procedure that loops n times, hot_in_lib(n), for workloads/dlopener
 * (its path into dlopener, dlopener_len bytes) to map after its start.
 */
static inline void tu_hot_lib(const char *ws, const char *cflags, char *lib, size_t len,
			      char *dlopener, size_t dlopener_len)
{
	char src[400];
	FILE *f;

	tu_build_file(dlopener, dlopener_len, "workloads/dlopener");
	snprintf(src, sizeof(src), "%s/hot.c", ws);
	snprintf(lib, len, "%s/libhot.so", ws);
	f = fopen(src, "w");
	assert_non_null(f);
	fprintf(f, "unsigned long hot_in_lib(unsigned long n)\n{\n\tunsigned long x = n;\n"
		"\tfor (unsigned long i = 0; i < n; i++)\n"
		"\t\tx = x * 2862933555777941757ul + 3037000493ul;\n\treturn x;\n}\n");
	fclose(f);
	assert_int_equal(tu_sh("cc %s -shared -fPIC -o '%s' '%s'", cflags, lib, src), 0);
}

/*
 * Run `bin ARGS --json` (stdout to dir/out.json, stderr to dir/err.txt) and
 * the python check py on it, where d is the parsed JSON; both must succeed.
 */
static inline void tu_check_json(const char *bin, const char *dir, const char *args,
				 const char *py)
{
	char path[PROF_PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/check.py", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "import json, sys\nd = json.load(open(sys.argv[1]))\n%s\n", py);
	fclose(f);
	if (tu_sh("%s %s --json > %s/out.json 2> %s/err.txt && python3 %s %s/out.json", bin,
		  args, dir, dir, path, dir)) {
		tu_sh("cat %s/err.txt >&2", dir);
		fail_msg("dcpi %s --json: the check failed", args);
	}
}

/*
 * `bin record --no-calibrate OPTS --db dir/NAME -- CMD`, its output in
 * dir/NAME.out and dir/NAME.err; a failure shows the errors and fails.
 */
static inline void tu_record_into(const char *bin, const char *dir, const char *name,
				  const char *opts, const char *cmd)
{
	if (tu_sh("%s record --no-calibrate %s --db %s/%s -- %s > %s/%s.out 2> %s/%s.err", bin,
		  opts, dir, name, cmd, dir, name, dir, name)) {
		tu_sh("cat %s/%s.err >&2", dir, name);
		fail_msg("dcpi record %s failed", cmd);
	}
}

#endif /* DCPI_TU_RUN_H */
