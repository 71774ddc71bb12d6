/*
 * test_outputs.c - every path a command writes follows one rule
 * (util/safefile.c's dcpi_write_output, include/dcpi/safefile.h): a device
 * or FIFO is written in place and stays what it was, a FIFO without a reader
 * is an error within seconds, a symbolic link is followed only where Linux's
 * fs.protected_symlinks rule would, a regular file keeps its owner, group and
 * mode, a hard link is written in place, a directory is an error, and a full
 * disk leaves the old contents and no temporary.
 *
 * The writers: llvm-prof, gcc-prof, bolt-prof, prefetch-hints, export
 * --pprof, dcpicfg -o (annotated and --static), over a database made here
 * for build/workloads/strided (the same construction as test_prefetch.c's),
 * and the library function itself.  Cases that need root (a file of another
 * user, a link owned by another user, a device node of our own) are skipped
 * without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/safefile.h"
#include "testutil.h"

#define NOBODY 65534
#define OLD "old contents\n"

static char ws[256];
static const char *bin, *build;

struct writer {
	const char *name;
	char cmd[1024];		/* the command line up to " -o FILE" */
	char ref[300];		/* its output written to a new regular file */
};

static struct writer writers[7];
static size_t nwriters;

/* ---- the database --------------------------------------------------------- */

/*
 * An epoch of `cycles` samples over walk in wl: one per execution of each
 * instruction and a stall after the loop's first load, so that the stall
 * analysis charges that load (prefetch-hints has a hint to write).
 */
static void stalled_db(const char *db, const char *wl)
{
	const double n = 20000.0 * 2000, by_depth[3] = { 2000, n, 6 * n };

	tu_stalled_db(db, wl, "walk", by_depth, 300 * n);
	tu_exact_db(strcat(strcpy((char[300]){ 0 }, ws), "/exact"), wl, "walk", by_depth);
}

static void add_writer(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_writer(const char *name, const char *fmt, ...)
{
	struct writer *w = &writers[nwriters++];
	va_list ap;

	w->name = name;
	va_start(ap, fmt);
	vsnprintf(w->cmd, sizeof(w->cmd), fmt, ap);
	va_end(ap);
	snprintf(w->ref, sizeof(w->ref), "%s/ref.%zu", ws, nwriters - 1);
}

/* Run w with -o out (and env in front, e.g. a failpoint), its messages into
 * ws/log; no command may take more than 20 s (a hang is a failure, not a
 * stuck test).  The exit status, 124 for the timeout. */
static int run(const struct writer *w, const char *env, const char *out)
{
	int st = tu_sh("%s timeout -s KILL 20 %s -o '%s' > /dev/null 2> %s/log", env ? env : "",
		       w->cmd, out, ws);

	if (!WIFEXITED(st))
		return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return WEXITSTATUS(st) == 137 ? 124 : WEXITSTATUS(st);
}

static int log_has(const char *s)
{
	return tu_sh("grep -qF -- '%s' %s/log", s, ws) == 0;
}

static char *in_ws(const char *name)
{
	return tu_in(ws, name);
}

static int same_file(const char *a, const char *b)
{
	return tu_sh("cmp -s '%s' '%s'", a, b) == 0;
}

static int has_temp(void)
{
	return tu_sh("ls -a %s | grep -q '\\.tmp[0-9]*-[0-9]*$'", ws) == 0;
}

static int setup(void **state)
{
	char wl[1024];

	(void)state;
	if (tu_workspace(ws, sizeof(ws), "outputs"))
		return -1;
	bin = getenv("DCPI_BIN");
	build = getenv("DCPI_BUILD");
	if (!bin || !build)
		return 0;
	snprintf(wl, sizeof(wl), "%s/workloads/strided", build);
	stalled_db(in_ws("db"), wl);
	add_writer("llvm-prof", "%s llvm-prof --db %s/db %s", bin, ws, wl);
	add_writer("gcc-prof", "%s gcc-prof --db %s/db %s", bin, ws, wl);
	add_writer("bolt-prof", "%s bolt-prof --db %s/db %s", bin, ws, wl);
	add_writer("prefetch-hints", "%s prefetch-hints --db %s/db --exact %s/exact %s", bin, ws,
		   ws, wl);
	add_writer("export --pprof", "%s export --pprof --db %s/db", bin, ws);
	add_writer("dcpicfg", "%s/dcpicfg --db %s/db --no-measure walk", build, ws);
	add_writer("dcpicfg --static", "%s/dcpicfg --static --image %s walk", build, wl);
	for (size_t i = 0; i < nwriters; i++) {
		struct stat st;

		if (run(&writers[i], NULL, writers[i].ref) || stat(writers[i].ref, &st) ||
		    st.st_size == 0) {
			print_message("%s: no output to compare with\n", writers[i].name);
			tu_sh("cat %s/log", ws);
			return -1;
		}
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (ws[0]) {
		tu_sh("chmod -R u+rwx %s; rm -rf %s", ws, ws);
		ws[0] = '\0';
	}
	return 0;
}

static void need_tools(void)
{
	if (!bin || !build) {
		print_message("DCPI_BIN/DCPI_BUILD unset: run through tests/run.sh\n");
		skip();
	}
}

/* ---- the writers ------------------------------------------------------------ */

/* -o /dev/null: exit 0, /dev/null still the character device it was. */
static void test_dev_null(void **state)
{
	struct stat before, after;

	(void)state;
	need_tools();
	assert_int_equal(stat("/dev/null", &before), 0);
	if (!S_ISCHR(before.st_mode)) {
		print_message("/dev/null is not a character device before the test: broken "
			      "by something else; skipped\n");
		skip();
	}
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o /dev/null\n", writers[i].name);
		assert_int_equal(run(&writers[i], NULL, "/dev/null"), 0);
		assert_int_equal(stat("/dev/null", &after), 0);
		assert_true(S_ISCHR(after.st_mode));
		assert_int_equal(after.st_mode, before.st_mode);
		assert_int_equal(after.st_rdev, before.st_rdev);
		assert_int_equal(after.st_ino, before.st_ino);
	}
}

/* A character device of the workspace's own (1:3, the null device), mode
 * 0620: written in place, never replaced, never truncated. */
static void test_own_device(void **state)
{
	const char *dev = in_ws("nulldev");
	struct stat st;

	(void)state;
	need_tools();
	if (geteuid() != 0) {
		print_message("not root: no device node of our own\n");
		skip();
	}
	assert_int_equal(mknod(dev, S_IFCHR | 0620, makedev(1, 3)), 0);
	assert_int_equal(chmod(dev, 0620), 0);
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a device\n", writers[i].name);
		assert_int_equal(run(&writers[i], NULL, dev), 0);
		assert_int_equal(lstat(dev, &st), 0);
		assert_true(S_ISCHR(st.st_mode));
		assert_int_equal(st.st_mode & 07777, 0620);
		assert_int_equal(st.st_rdev, makedev(1, 3));
	}
	assert_false(has_temp());
	unlink(dev);
}

/* A FIFO with a reader: the reader gets every byte, the FIFO stays a FIFO. */
static void test_fifo_reader(void **state)
{
	const char *fifo = in_ws("fifo"), *got = in_ws("got");
	struct stat st;

	(void)state;
	need_tools();
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a FIFO with a reader\n", writers[i].name);
		unlink(got);
		/* the reader gives up after 20 s (no hang if nothing opens the FIFO) */
		assert_int_equal(tu_sh("timeout -s KILL 20 cat %s > %s & r=$!; "
				       "timeout -s KILL 20 %s -o %s > /dev/null 2> %s/log; "
				       "s=$?; wait $r; exit $s", fifo, got, writers[i].cmd,
				       fifo, ws), 0);
		assert_true(same_file(got, writers[i].ref));
		assert_int_equal(lstat(fifo, &st), 0);
		assert_true(S_ISFIFO(st.st_mode));
	}
	unlink(fifo);
}

/* A FIFO nobody reads: an error naming it within a few seconds. */
static void test_fifo_no_reader(void **state)
{
	const char *fifo = in_ws("lonely");
	struct timespec t0, t1;
	struct stat st;

	(void)state;
	need_tools();
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < nwriters; i++) {
		int rc;

		print_message("%s -o a FIFO without a reader\n", writers[i].name);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = run(&writers[i], NULL, fifo);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_int_not_equal(rc, 0);
		assert_int_not_equal(rc, 124);
		assert_true(t1.tv_sec - t0.tv_sec < 10);
		assert_true(log_has("no reader"));
		assert_true(log_has(fifo));
		assert_int_equal(lstat(fifo, &st), 0);
		assert_true(S_ISFIFO(st.st_mode));
	}
	assert_false(has_temp());
	unlink(fifo);
}

/* A link in a folder of ours is followed: the link stays, its target gets
 * the output. */
static void test_symlink_followed(void **state)
{
	const char *target = in_ws("target"), *link = in_ws("link");
	struct stat st;

	(void)state;
	need_tools();
	assert_int_equal(symlink("target", link), 0);
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a link\n", writers[i].name);
		tu_write_text(target, OLD);
		assert_int_equal(run(&writers[i], NULL, link), 0);
		assert_int_equal(lstat(link, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
		assert_true(same_file(target, writers[i].ref));
	}
	unlink(link);
	unlink(target);
}

/* In a sticky world-writable folder (/tmp's kind) a link owned by another
 * user than us and the folder's owner is refused, naming the link; one of
 * our own is followed. */
static void test_symlink_sticky(void **state)
{
	const char *dir = in_ws("sticky"), *victim = in_ws("victim");
	char link[320], mine[320];
	struct stat st;

	(void)state;
	need_tools();
	if (geteuid() != 0) {
		print_message("not root: cannot give a link to another user\n");
		skip();
	}
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 01777), 0);
	snprintf(link, sizeof(link), "%s/planted", dir);
	snprintf(mine, sizeof(mine), "%s/mine", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(lchown(link, NOBODY, NOBODY), 0);
	assert_int_equal(symlink(victim, mine), 0);
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o another user's link in a sticky folder\n", writers[i].name);
		tu_write_text(victim, OLD);
		assert_int_not_equal(run(&writers[i], NULL, link), 0);
		assert_true(log_has(link));
		assert_int_equal(lstat(link, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
		assert_int_equal(tu_sh("printf '%%s' '" OLD "' | cmp -s - %s", victim), 0);
		print_message("%s -o our own link in a sticky folder\n", writers[i].name);
		assert_int_equal(run(&writers[i], NULL, mine), 0);
		assert_true(same_file(victim, writers[i].ref));
		assert_int_equal(lstat(mine, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
	}
	tu_sh("rm -rf %s %s", dir, victim);
}

/* Another user's private file keeps its owner, group and mode 0600. */
static void test_other_owner(void **state)
{
	const char *priv = in_ws("private");
	struct stat st;

	(void)state;
	need_tools();
	if (geteuid() != 0) {
		print_message("not root: cannot make another user's file\n");
		skip();
	}
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a 0600 file of uid %d\n", writers[i].name, NOBODY);
		tu_write_text(priv, OLD);
		assert_int_equal(chown(priv, NOBODY, NOBODY), 0);
		assert_int_equal(chmod(priv, 0600), 0);
		assert_int_equal(run(&writers[i], NULL, priv), 0);
		assert_int_equal(lstat(priv, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_uid, NOBODY);
		assert_int_equal(st.st_gid, NOBODY);
		assert_int_equal(st.st_mode & 07777, 0600);
		assert_true(same_file(priv, writers[i].ref));
	}
	assert_false(has_temp());
	unlink(priv);
}

/* A hard link: written in place, both names see the new contents. */
static void test_hard_link(void **state)
{
	const char *a = in_ws("h1"), *b = in_ws("h2");
	struct stat sa, sb;

	(void)state;
	need_tools();
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a hard-linked file\n", writers[i].name);
		unlink(a);
		unlink(b);
		/* longer than any output: what is left past the end is cut */
		tu_write_text(a, OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD OLD
			      OLD OLD);
		assert_int_equal(link(a, b), 0);
		assert_int_equal(run(&writers[i], NULL, a), 0);
		assert_int_equal(lstat(a, &sa), 0);
		assert_int_equal(lstat(b, &sb), 0);
		assert_int_equal(sa.st_ino, sb.st_ino);
		assert_int_equal(sa.st_nlink, 2);
		assert_true(same_file(a, writers[i].ref));
		assert_true(same_file(b, writers[i].ref));
	}
	assert_false(has_temp());
	unlink(a);
	unlink(b);
}

/* A directory: an error naming it, the directory as it was. */
static void test_directory(void **state)
{
	const char *dir = in_ws("adir");
	struct stat st;

	(void)state;
	need_tools();
	assert_int_equal(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o a directory\n", writers[i].name);
		assert_int_not_equal(run(&writers[i], NULL, dir), 0);
		assert_true(log_has(dir));
		assert_int_equal(lstat(dir, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(tu_sh("test -z \"$(ls -A %s)\"", dir), 0);
	}
	assert_false(has_temp());
	rmdir(dir);
}

/* A full disk (the first write fails with ENOSPC): the old contents stay,
 * a new name is not created, no temporary is left. */
static void test_full_disk(void **state)
{
	const char *old = in_ws("full"), *fresh = in_ws("fresh");
	const char *fp = "DCPI_FAILPOINT=write:1:enospc";

	(void)state;
	need_tools();
	for (size_t i = 0; i < nwriters; i++) {
		print_message("%s -o FILE on a full disk\n", writers[i].name);
		tu_write_text(old, OLD);
		assert_int_not_equal(run(&writers[i], fp, old), 0);
		assert_int_equal(tu_sh("printf '%%s' '" OLD "' | cmp -s - %s", old), 0);
		assert_int_not_equal(run(&writers[i], fp, fresh), 0);
		assert_int_not_equal(access(fresh, F_OK), 0);
		assert_false(has_temp());
	}
	unlink(old);
}

/* ---- the library function ------------------------------------------------ */

static const char text[] = "the new contents\n";

static int write_out(const char *path, struct dcpi_err *err)
{
	return dcpi_write_output(path, text, sizeof(text) - 1, 0644, err);
}

static int has_text(const char *path)
{
	return tu_sh("printf '%%s' '%s' | cmp -s - '%s'", text, path) == 0;
}

static void test_unit_new_and_dev_null(void **state)
{
	const char *f = in_ws("u-new");
	struct dcpi_err err = { 0 };
	struct stat st, null0;

	(void)state;
	assert_int_equal(write_out(f, &err), 0);
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_true(has_text(f));
	unlink(f);
	assert_int_equal(stat("/dev/null", &null0), 0);
	if (!S_ISCHR(null0.st_mode)) {
		print_message("/dev/null is not a character device before the test: broken "
			      "by something else; skipped\n");
		skip();
	}
	assert_int_equal(write_out("/dev/null", &err), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_ino, null0.st_ino);
	assert_int_equal(st.st_mode, null0.st_mode);
}

static void test_unit_fifo(void **state)
{
	const char *fifo = in_ws("u-fifo"), *got = in_ws("u-got");
	struct dcpi_err err = { 0 };
	struct timespec t0, t1;
	struct stat st;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* no reader: -ENXIO after about 2 s, naming the FIFO */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(write_out(fifo, &err), -ENXIO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 6);
	assert_non_null(strstr(err.msg, "no reader"));
	assert_non_null(strstr(err.msg, fifo));
	/* a reader, started after the writer is already waiting */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(300 * 1000);
		execlp("sh", "sh", "-c", "exec cat \"$0\" > \"$1\"", fifo, got, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(write_out(fifo, &err), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(has_text(got));
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	unlink(fifo);
	unlink(got);
}

static void test_unit_kinds(void **state)
{
	const char *dir = in_ws("u-dir"), *a = in_ws("u-h1"), *b = in_ws("u-h2");
	struct dcpi_err err = { 0 };
	struct stat st;

	(void)state;
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(write_out(dir, &err), -EISDIR);
	assert_non_null(strstr(err.msg, dir));
	rmdir(dir);
	tu_write_text(a, OLD OLD OLD);
	assert_int_equal(link(a, b), 0);
	assert_int_equal(write_out(a, &err), 0);
	assert_true(has_text(b));
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	unlink(a);
	unlink(b);
	/* a dangling link of ours: its target is created */
	assert_int_equal(symlink("u-target", a), 0);
	assert_int_equal(write_out(a, &err), 0);
	assert_true(has_text(in_ws("u-target")));
	assert_int_equal(lstat(a, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(a);
	unlink(in_ws("u-target"));
}

/* -o /dev/stdout with standard output a pipe: /proc's link ("pipe:[N]", no
 * path) is opened through, the bytes go down the pipe. */
static void test_unit_proc_link(void **state)
{
	const char *l = in_ws("u-stdout");
	struct dcpi_err err = { 0 };
	char link[64], got[64] = "";
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", p[1]);
	assert_int_equal(symlink(link, l), 0);
	assert_int_equal(write_out(l, &err), 0);
	close(p[1]);
	assert_int_equal(read(p[0], got, sizeof(got) - 1), (ssize_t)sizeof(text) - 1);
	assert_string_equal(got, text);
	close(p[0]);
	unlink(l);
}

static void test_unit_full_disk(void **state)
{
	const char *f = in_ws("u-full"), *g = in_ws("u-fresh");
	struct dcpi_err err = { 0 };

	(void)state;
	tu_write_text(f, OLD);
	setenv("DCPI_FAILPOINT", "write:1+:enospc", 1);
	dcpi_failpoints_init();
	assert_int_equal(write_out(f, &err), -ENOSPC);
	assert_int_equal(write_out(g, &err), -ENOSPC);
	unsetenv("DCPI_FAILPOINT");
	dcpi_failpoints_init();
	assert_int_equal(tu_sh("printf '%%s' '" OLD "' | cmp -s - %s", f), 0);
	assert_int_not_equal(access(g, F_OK), 0);
	assert_false(has_temp());
	unlink(f);
}

/* Root keeps another user's owner and mode; that user, not root, cannot
 * replace a file of root's they could not write, even in a folder they may
 * write (a rename there would be allowed). */
static void test_unit_owner(void **state)
{
	const char *dir = in_ws("u-open"), *priv = in_ws("u-open/priv");
	const char *roots = in_ws("u-open/roots");
	struct dcpi_err err = { 0 };
	struct stat st;
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0) {
		print_message("not root\n");
		skip();
	}
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	tu_write_text(priv, OLD);
	assert_int_equal(chown(priv, NOBODY, NOBODY), 0);
	assert_int_equal(chmod(priv, 0600), 0);
	assert_int_equal(write_out(priv, &err), 0);
	assert_int_equal(stat(priv, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(st.st_gid, NOBODY);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(has_text(priv));
	tu_write_text(roots, OLD);
	assert_int_equal(chmod(roots, 0644), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(3);
		_exit(write_out(roots, &err) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_int_equal(stat(roots, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(tu_sh("printf '%%s' '" OLD "' | cmp -s - %s", roots), 0);
	tu_sh("rm -rf %s", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unit_new_and_dev_null),
		cmocka_unit_test(test_unit_fifo),
		cmocka_unit_test(test_unit_kinds),
		cmocka_unit_test(test_unit_proc_link),
		cmocka_unit_test(test_unit_full_disk),
		cmocka_unit_test(test_unit_owner),
		cmocka_unit_test(test_dev_null),
		cmocka_unit_test(test_own_device),
		cmocka_unit_test(test_fifo_reader),
		cmocka_unit_test(test_fifo_no_reader),
		cmocka_unit_test(test_symlink_followed),
		cmocka_unit_test(test_symlink_sticky),
		cmocka_unit_test(test_other_owner),
		cmocka_unit_test(test_hard_link),
		cmocka_unit_test(test_directory),
		cmocka_unit_test(test_full_disk),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
