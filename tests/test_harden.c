/*
 * test_harden.c - the database and the tools against faults and a hostile
 * local user (include/dcpi/safefile.h): FIFOs and links planted where the tools read and
 * write, a kill at every step of a flush, ENOSPC and EIO at every write, a
 * corrupt profile in the live epoch, modes under umask 000, a database other
 * users can write, empty epochs, and the messages each of them gives.
 *
 * Faults come from the failpoints of include/dcpi/safefile.h
 * (DCPI_FAILPOINT=name:N:action).  Every test runs under alarm(): a hang is a
 * failure, not a stuck `make check`.  After each fault the database must be
 * readable, its metadata must count what its profiles hold, no temporary may
 * outlive the next writer, and nothing may be written outside it.
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
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/safefile.h"
#include "testutil.h"
#include "tu_run.h"
#include "tu_main.h"

#define TEST_TIMEOUT 60		/* seconds: any test longer than this hangs */
#define NPROF 4			/* profiles one simulated flush writes */

static char ws[256];
static const char *dcpi_bin, *build_dir;
static int dbseq;

static int setup(void **state)
{
	dcpi_bin = getenv("DCPI_BIN");
	build_dir = getenv("DCPI_BUILD");
	return tu_workspace(ws, sizeof(ws), "harden");
}

static int teardown(void **state)
{
	tu_rm_tree(ws);
	return 0;
}

static int each_setup(void **state)
{
	alarm(TEST_TIMEOUT);
	unsetenv("DCPI_FAILPOINT");
	dcpi_failpoints_init();
	return 0;
}

static int each_teardown(void **state)
{
	alarm(0);
	unsetenv("DCPI_FAILPOINT");
	dcpi_failpoints_init();
	return 0;
}

static void fresh(char *path, size_t len)
{
	snprintf(path, len, "%s/db%d", ws, dbseq++);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A profile of image k ("/opt/img<k>", build-id "00..0k") with n entries. */
static void mkprof(struct prof_profile *p, int k, unsigned n, uint64_t count)
{
	prof_profile_init(p);
	snprintf(p->image.path, sizeof(p->image.path), "/opt/img%d", k);
	snprintf(p->image.build_id, sizeof(p->image.build_id), "%040x", k + 1);
	snprintf(p->event, sizeof(p->event), "cpu-clock");
	snprintf(p->period_unit, sizeof(p->period_unit), "ns");
	p->period = 1000;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(prof_profile_add(p, 16 * i + (uint64_t)k, count), 0);
	assert_int_equal(prof_profile_normalize(p), 0);
}

/* One flush as dcpid does it: NPROF profiles and the meta, one transaction. */
static int flush_round(struct prof_db *db, const char *epoch, uint64_t count,
		       struct dcpi_err *err)
{
	struct prof_epoch_meta m;
	struct prof_profile p;
	int rc = prof_epoch_begin(db, epoch, err);

	if (rc)
		return rc;
	rc = prof_epoch_meta_read(db, epoch, &m, err);
	if (rc) {	/* none yet, or a FIFO or link planted at its name */
		memset(&m, 0, sizeof(m));
		rc = 0;
	}
	for (int k = 0; k < NPROF && !rc; k++) {
		mkprof(&p, k, 20, count);
		rc = prof_epoch_write(db, epoch, &p, err);
		m.samples += p.total;
		prof_profile_free(&p);
	}
	if (!rc)
		rc = prof_epoch_meta_write(db, epoch, &m, err);
	if (!rc)
		return prof_epoch_commit(db, err);
	prof_epoch_abort(db);
	return rc;
}

/* Sum of the epoch's profile totals; its meta's samples into *meta. */
static uint64_t epoch_totals(const char *dbp, const char *epoch, uint64_t *meta)
{
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_profile *p;
	struct prof_db *db;
	uint64_t t = 0;
	size_t n;
	int rc;

	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	if (prof_epoch_read(db, epoch, &p, &n, &err))
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < n; i++)
		t += p[i].total;
	prof_profiles_free(p, n);
	rc = prof_epoch_meta_read(db, epoch, &m, &err);
	if (rc && rc != -ENOENT)
		fail_msg("%s", err.msg);
	*meta = rc ? 0 : m.samples;
	prof_db_close(db);
	return t;
}

/* Temporaries and journals left in a directory. */
static int leftovers(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	assert_non_null(dp);
	while ((d = readdir(dp)))
		n += dcpi_is_temp_name(d->d_name) || !strcmp(d->d_name, ".journal");
	closedir(dp);
	return n;
}

static void new_epoch(const char *dbp, char *epoch, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;

	assert_int_equal(prof_db_open(dbp, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, len, &err), 0);
	prof_db_close(db);
}

/* A new database (its path in dbp) with one new epoch (its name in epoch). */
static void fresh_epoch(char *dbp, size_t dlen, char *epoch, size_t len)
{
	fresh(dbp, dlen);
	new_epoch(dbp, epoch, len);
}

/* fresh_epoch's database opened, its epoch flushed once (flush_round). */
static struct prof_db *flushed_epoch(char *dbp, size_t dlen, char *epoch, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;

	fresh_epoch(dbp, dlen, epoch, len);
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	assert_int_equal(flush_round(db, epoch, 1, &err), 0);
	return db;
}

/* A child killed at failpoint k of a flush: the epoch is the old or the new
 * state, never a mix; meta agrees with the profiles; the next writer
 * finishes or cleans up.  Both sides of the commit point get hit. */
static void test_kill_at_each_step(void **state)
{
	char dbp[300], epoch[64], dir[400], spec[64];
	struct dcpi_err err = { 0 };
	uint64_t base, meta, now, step = (uint64_t)NPROF * 20 * 3;
	int before = 0, after = 0, k;

	fresh_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(dir, sizeof(dir), "%s/%s", dbp, epoch);
	{
		struct prof_db *db;

		assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
		assert_int_equal(flush_round(db, epoch, 1, &err), 0);
		prof_db_close(db);
	}
	base = epoch_totals(dbp, epoch, &meta);
	assert_int_equal(base, meta);
	for (k = 1; k < 200; k++) {
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			struct prof_db *db;

			snprintf(spec, sizeof(spec), "*:%d:kill", k);
			setenv("DCPI_FAILPOINT", spec, 1);
			dcpi_failpoints_init();
			if (prof_db_open(dbp, 0, &db, &err) || flush_round(db, epoch, 3, &err))
				_exit(1);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		now = epoch_totals(dbp, epoch, &meta);
		if (now != meta)
			fail_msg("kill at step %d: meta says %llu, profiles hold %llu", k,
				 (unsigned long long)meta, (unsigned long long)now);
		if (WIFEXITED(st)) {
			assert_int_equal(WEXITSTATUS(st), 0);
			assert_int_equal(now, base + step);
			break;
		}
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		if (now == base) {
			before++;
		} else {
			assert_int_equal(now, base + step);	/* all or nothing */
			after++;
		}
		/* the next writer finishes the journal and deletes the temporaries */
		{
			struct prof_db *db;

			assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
			assert_int_equal(prof_epoch_begin(db, epoch, &err), 0);
			assert_int_equal(prof_epoch_commit(db, &err), 0);
			prof_db_close(db);
		}
		assert_int_equal(leftovers(dir), 0);
		assert_int_equal(epoch_totals(dbp, epoch, &meta), now);
		base = now;
	}
	print_message("kill points: %d before the commit point, %d after\n", before, after);
	assert_true(k < 200);
	assert_true(before >= NPROF + 1 && after >= 2);
}

/* ENOSPC and EIO at each write, fsync, create and rename: the flush fails
 * whole, the epoch keeps its last state, no temporary stays behind. */
static void test_enospc_eio_each_write(void **state)
{
	static const char *const points[] = { "write", "fsync", "create", "rename", "commit" };
	static const char *const actions[] = { "enospc", "eio" };
	char dbp[300], epoch[64], dir[400], spec[64];
	struct dcpi_err err = { 0 };
	uint64_t base, meta, now;
	struct prof_db *db;

	fresh_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(dir, sizeof(dir), "%s/%s", dbp, epoch);
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	for (size_t pi = 0; pi < sizeof(points) / sizeof(points[0]); pi++) {
		for (size_t ai = 0; ai < 2; ai++) {
			int failed = 0;

			for (int k = 1; k < 50; k++) {
				int rc;

				base = epoch_totals(dbp, epoch, &meta);
				snprintf(spec, sizeof(spec), "%s:%d:%s", points[pi], k, actions[ai]);
				setenv("DCPI_FAILPOINT", spec, 1);
				dcpi_failpoints_init();
				rc = flush_round(db, epoch, 1, &err);
				unsetenv("DCPI_FAILPOINT");
				dcpi_failpoints_init();
				now = epoch_totals(dbp, epoch, &meta);
				assert_int_equal(now, meta);
				if (!rc && !strcmp(points[pi], "commit")) {
					/* past the commit point: the next writer finishes */
					assert_int_equal(prof_epoch_begin(db, epoch, &err), 0);
					assert_int_equal(prof_epoch_commit(db, &err), 0);
					assert_int_equal(epoch_totals(dbp, epoch, &meta), now);
				}
				assert_int_equal(leftovers(dir), 0);
				if (!rc) {
					/* past the failpoint, or after the commit point */
					assert_int_equal(now, base + NPROF * 20);
					if (strcmp(points[pi], "commit") || k > NPROF + 1)
						break;
					continue;
				}
				failed++;
				assert_int_equal(rc, ai ? -EIO : -ENOSPC);
				assert_int_equal(now, base);
				assert_non_null(strstr(err.msg, dbp));
			}
			if (strcmp(points[pi], "commit"))
				assert_true(failed > 0);
		}
	}
	prof_db_close(db);
}

/* A corrupt profile in the live epoch is set aside, reported, restarted. */
static void test_corrupt_live_file(void **state)
{
	char dbp[300], epoch[64], dir[400], name[600];
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct prof_db *db;
	struct dirent *d;
	uint64_t meta, t;
	int aside = 0;
	DIR *dp;
	FILE *f;

	db = flushed_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(dir, sizeof(dir), "%s/%s", dbp, epoch);
	mkprof(&p, 0, 1, 1);
	snprintf(name, sizeof(name), "%s/%040x.cpu-clock.prof", dir, 1);
	prof_profile_free(&p);
	f = fopen(name, "r+");
	assert_non_null(f);
	fseek(f, 40, SEEK_SET);
	fputs("garbage", f);
	fclose(f);
	prof_db_notes_clear(db);
	assert_int_equal(flush_round(db, epoch, 1, &err), 0);
	print_message("note: %s", prof_db_notes(db));
	assert_non_null(strstr(prof_db_notes(db), "set aside"));
	assert_non_null(strstr(prof_db_notes(db), "bad checksum"));
	prof_db_close(db);
	dp = opendir(dir);
	while ((d = readdir(dp)))
		aside += strstr(d->d_name, ".prof.bad-") != NULL;
	closedir(dp);
	assert_int_equal(aside, 1);
	/* the new file holds this flush only (the corrupt one's samples went
	 * aside with it, as the note says) */
	t = epoch_totals(dbp, epoch, &meta);
	assert_int_equal(t, (uint64_t)NPROF * 20 * 2 - 20);
}

/* FIFOs where readers look: no hang, a clear message or a skip with a note. */
static void test_fifos_do_not_hang(void **state)
{
	char dbp[300], epoch[64], path[600];
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_profile *p, one;
	struct prof_image_id id;
	struct image *img;
	struct prof_db *db;
	size_t n;

	db = flushed_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(path, sizeof(path), "%s/%s/zz.cpu-clock.prof", dbp, epoch);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(prof_epoch_read(db, epoch, &p, &n, &err), 0);
	assert_int_equal(n, NPROF);
	prof_profiles_free(p, n);
	assert_non_null(strstr(prof_db_notes(db), "FIFO"));
	assert_non_null(strstr(prof_db_notes(db), "zz.cpu-clock.prof"));
	snprintf(path, sizeof(path), "%s/%s/meta", dbp, epoch);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(prof_epoch_meta_read(db, epoch, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "FIFO"));
	/* the writer replaces the FIFO with a real meta */
	memset(&m, 0, sizeof(m));
	assert_int_equal(prof_epoch_meta_write(db, epoch, &m, &err), 0);
	assert_int_equal(prof_epoch_meta_read(db, epoch, &m, &err), 0);
	prof_db_close(db);
	/* a FIFO at an image path: a collector must not block on it */
	snprintf(path, sizeof(path), "%s/fifo-image", ws);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(prof_image_id_from_file(&id, path, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "FIFO"));
	assert_true(img_open(path, 0, &img, &err) < 0);
	assert_non_null(strstr(err.msg, "FIFO"));
	assert_true(prof_file_read(path, &one, &err) < 0);
	assert_non_null(strstr(err.msg, path));
}

/* An epoch directory replaced by a link: nothing is written through it. */
static void test_symlinked_epoch(void **state)
{
	char dbp[300], epoch[64], path[600], outside[400];
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct prof_db *db;
	char **names;
	size_t n;

	fresh_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(outside, sizeof(outside), "%s/outside%d", ws, dbseq);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s", dbp, epoch);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(symlink(outside, path), 0);
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	mkprof(&p, 0, 10, 1);
	assert_true(prof_epoch_write(db, epoch, &p, &err) < 0);
	assert_non_null(strstr(err.msg, "not followed"));
	prof_profile_free(&p);
	assert_true(flush_round(db, epoch, 1, &err) < 0);
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	assert_int_equal(n, 0);		/* a link is not an epoch */
	prof_names_free(names, n);
	prof_db_close(db);
	assert_int_equal(rmdir(outside), 0);	/* still empty */
}

/* Links planted at a file's name and at its temporary names. */
static void test_symlinks_at_names(void **state)
{
	char dbp[300], epoch[64], path[600], victim[400], tmp[600];
	struct dcpi_err err = { 0 };
	struct est_calibration cal;
	struct prof_db *db;
	struct stat st;
	uint64_t meta, now;

	snprintf(victim, sizeof(victim), "%s/victim", ws);
	assert_int_equal(tu_sh("echo precious > '%s' && chmod 600 '%s'", victim, victim), 0);
	fresh_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(path, sizeof(path), "%s/%s/meta", dbp, epoch);
	assert_int_equal(symlink(victim, path), 0);
	{	/* the next temporary names this process will try */
		unsigned seq;
		char name[128];

		assert_int_equal(dcpi_temp_name("meta", name, sizeof(name)), 0);
		assert_int_equal(sscanf(strrchr(name, '-'), "-%u", &seq), 1);
		for (unsigned i = seq + 1; i < seq + 40; i++) {
			snprintf(tmp, sizeof(tmp), "%s/%s/.meta.tmp%ld-%u", dbp, epoch,
				 (long)getpid(), i);
			assert_int_equal(symlink(victim, tmp), 0);
		}
	}
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	assert_int_equal(flush_round(db, epoch, 1, &err), 0);
	prof_db_close(db);
	now = epoch_totals(dbp, epoch, &meta);
	assert_int_equal(now, meta);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(tu_sh("grep -qx precious '%s'", victim), 0);
	/* a link at a profile's name and at the journal's: set aside, not followed */
	{
		char e2[64], prof[700], jr[700];

		new_epoch(dbp, e2, sizeof(e2));
		snprintf(prof, sizeof(prof), "%s/%s/%040x.cpu-clock.prof", dbp, e2, 1);
		snprintf(jr, sizeof(jr), "%s/%s/.journal", dbp, e2);
		assert_int_equal(symlink(victim, prof), 0);
		assert_int_equal(symlink(victim, jr), 0);
		assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
		assert_int_equal(flush_round(db, e2, 1, &err), 0);
		print_message("%s", prof_db_notes(db));
		assert_non_null(strstr(prof_db_notes(db), "symbolic link"));
		assert_non_null(strstr(prof_db_notes(db), "journal"));
		prof_db_close(db);
		now = epoch_totals(dbp, e2, &meta);
		assert_int_equal(now, (uint64_t)NPROF * 20);
		assert_int_equal(now, meta);
		assert_int_equal(lstat(prof, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(tu_sh("grep -qx precious '%s'", victim), 0);
	}
	/* the calibration file and its old temporary name */
	memset(&cal, 0, sizeof(cal));
	snprintf(cal.model, sizeof(cal.model), "zen5");
	snprintf(cal.event, sizeof(cal.event), "cpu-clock");
	cal.skid = 1;
	snprintf(path, sizeof(path), "%s/calibration-zen5.txt", dbp);
	assert_true(strlen(path) + 4 < sizeof(tmp));
	memcpy(tmp, path, strlen(path));
	memcpy(tmp + strlen(path), ".tmp", 5);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(est_calib_write(path, &cal, &err), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(tu_sh("grep -qx precious '%s'", victim), 0);
}

/* umask 000: files 0644, directories 0755. */
static void test_modes_whatever_umask(void **state)
{
	char dbp[300], epoch[64], path[600];
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	struct stat st;
	mode_t old = umask(0);

	fresh(dbp, sizeof(dbp));
	assert_int_equal(prof_db_open(dbp, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(flush_round(db, epoch, 1, &err), 0);
	prof_db_close(db);
	snprintf(path, sizeof(path), "%s/pidfile", ws);
	assert_int_equal(dcpi_write_file(path, "1\n", 2, 0644, &err), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(stat(dbp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	snprintf(path, sizeof(path), "%s/%s", dbp, epoch);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	snprintf(path, sizeof(path), "%s/%s/meta", dbp, epoch);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	snprintf(path, sizeof(path), "%s/%s/%040x.cpu-clock.prof", dbp, epoch, 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
}

/* StrictModes: a database other users can write is refused, with the fix. */
static void test_strict_modes(void **state)
{
	char dbp[300];
	struct dcpi_err err = { 0 };
	struct prof_db *db;

	fresh(dbp, sizeof(dbp));
	assert_int_equal(mkdir(dbp, 0755), 0);
	assert_int_equal(prof_db_open(dbp, PROF_DB_STRICT, &db, &err), 0);
	prof_db_close(db);
	assert_int_equal(chmod(dbp, 0777), 0);
	assert_int_equal(prof_db_open(dbp, PROF_DB_STRICT, &db, &err), -EPERM);
	assert_non_null(strstr(err.msg, dbp));
	assert_non_null(strstr(err.msg, "chmod go-w"));
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);	/* readers may */
	prof_db_close(db);
	if (geteuid() == 0) {
		assert_int_equal(chmod(dbp, 0755), 0);
		assert_int_equal(chown(dbp, 12345, 12345), 0);
		assert_int_equal(prof_db_open(dbp, PROF_DB_STRICT, &db, &err), -EPERM);
		assert_non_null(strstr(err.msg, "owned by uid 12345"));
	}
}

/* The newest epoch is empty: reports use the newest with profiles, noted. */
static void test_empty_epochs_skipped(void **state)
{
	char dbp[300], e1[64], e2[64], used[64];
	struct dcpi_err err = { 0 };
	struct prof_profile *p;
	struct prof_db *db;
	size_t n;

	db = flushed_epoch(dbp, sizeof(dbp), e1, sizeof(e1));
	assert_int_equal(prof_db_epoch_new(db, e2, sizeof(e2), &err), 0);
	assert_int_equal(prof_epoch_is_empty(db, e2, &err), 1);
	assert_int_equal(prof_epoch_is_empty(db, e1, &err), 0);
	assert_int_equal(rep_load_profiles(db, NULL, &p, &n, used, sizeof(used), &err), 0);
	assert_string_equal(used, e1);
	assert_int_equal(n, NPROF);
	assert_non_null(strstr(prof_db_notes(db), "skipped 1 empty epoch"));
	prof_profiles_free(p, n);
	prof_db_close(db);
}

/* Garbled or empty meta: an error naming the file. */
static void test_bad_meta_is_an_error(void **state)
{
	char dbp[300], epoch[64], path[600];
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_db *db;

	fresh_epoch(dbp, sizeof(dbp), epoch, sizeof(epoch));
	snprintf(path, sizeof(path), "%s/%s/meta", dbp, epoch);
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	assert_int_equal(tu_sh(": > '%s'", path), 0);
	assert_int_equal(prof_epoch_meta_read(db, epoch, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "empty"));
	assert_int_equal(tu_sh("head -c 300 /dev/urandom | tr -d '\\000' > '%s'", path), 0);
	assert_int_equal(prof_epoch_meta_read(db, epoch, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	prof_db_close(db);
}

/* /tmp/perf-PID.map: a FIFO does not hang the report; a file another user
 * planted for someone else's process is not trusted (perf's rule). */
static void test_perf_map_rules(void **state)
{
	char map[64];
	struct dcpi_err err = { 0 };
	struct rep_table t;
	struct prof_profile p;
	pid_t pid = 999999;	/* above any pid_max default: no such process */
	int found = 0;

	snprintf(map, sizeof(map), "/tmp/perf-%ld.map", (long)pid);
	unlink(map);
	prof_profile_init(&p);
	snprintf(p.image.path, sizeof(p.image.path), "%s", map);
	snprintf(p.event, sizeof(p.event), "cpu-clock");
	snprintf(p.period_unit, sizeof(p.period_unit), "ns");
	p.period = 1000;
	assert_int_equal(prof_profile_add(&p, 0x1000, 5), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(mkfifo(map, 0644), 0);
	assert_int_equal(rep_summarize(&p, 1, 0, &t, &err), 0);
	for (size_t i = 0; i < t.nnotes; i++)
		found += strstr(t.notes[i], "FIFO") != NULL;
	rep_free(&t);
	assert_int_equal(found, 1);
	unlink(map);
	if (geteuid() == 0) {
		assert_int_equal(tu_sh("echo '1000 100 evil_name' > %s && chown 12345 %s", map,
				       map), 0);
		assert_int_equal(rep_summarize(&p, 1, 0, &t, &err), 0);
		found = 0;
		for (size_t i = 0; i < t.nnotes; i++)
			found += strstr(t.notes[i], "not trusted") != NULL;
		for (size_t i = 0; i < t.nrows; i++)
			assert_null(strstr(t.rows[i].name, "evil_name"));
		rep_free(&t);
		assert_int_equal(found, 1);
		assert_int_equal(chown(map, 0, 0), 0);	/* root's: trusted */
		assert_int_equal(rep_summarize(&p, 1, 0, &t, &err), 0);
		found = 0;
		for (size_t i = 0; i < t.nrows; i++)
			found += strstr(t.rows[i].name, "evil_name") != NULL;
		rep_free(&t);
		assert_int_equal(found, 1);
	}
	unlink(map);
	prof_profile_free(&p);
}

/* The failpoint machinery itself: Nth hit, N+ hits, unknown names, off. */
static void test_failpoints(void **state)
{
	setenv("DCPI_FAILPOINT", "write:2:eio,fsync:1+:enospc,bad", 1);
	dcpi_failpoints_init();
	assert_int_equal(dcpi_fail("write"), 0);
	assert_int_equal(dcpi_fail("write"), -EIO);
	assert_int_equal(dcpi_fail("write"), 0);
	assert_int_equal(dcpi_fail("fsync"), -ENOSPC);
	assert_int_equal(dcpi_fail("fsync"), -ENOSPC);
	assert_int_equal(dcpi_fail("other"), 0);
	unsetenv("DCPI_FAILPOINT");
	dcpi_failpoints_init();
	assert_int_equal(dcpi_failpoints_on, 0);
	assert_int_equal(dcpi_fail("write"), 0);
	assert_true(dcpi_is_temp_name(".meta.tmp12-0"));
	assert_false(dcpi_is_temp_name("meta.tmp12-0"));
	assert_false(dcpi_is_temp_name(".meta.tmp12"));
}

/* ---- the tools, end to end (reproductions of the issue) ------------------ */

/* Run a shell command under timeout(1) with stderr and stdout into out. */
static int run_vcapture(char *out, size_t len, const char *fmt, va_list ap)
{
	char cmd[4096], full[4400];
	FILE *f;
	size_t n;
	int st;

	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	snprintf(full, sizeof(full), "timeout -s KILL 30 sh -c '%s' 2>&1", cmd);
	f = popen(full, "r");
	assert_non_null(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int run_capture(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int run_capture(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = run_vcapture(out, len, fmt, ap);
	va_end(ap);
	return rc;
}

static void dcpi_expect(char *out, size_t len, int want, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Run `dcpi ARGS` (ARGS printf-style) as run_capture does, its output
 * printed: it must exit with status want. */
static void dcpi_expect(char *out, size_t len, int want, const char *fmt, ...)
{
	char args[4000];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	rc = run_capture(out, len, "%s %s", dcpi_bin, args);
	print_message("%s", out);
	assert_int_equal(rc, want);
}

/* Skip the test when dcpi or the workloads are not there to run. */
static void need_tools(void)
{
	if (!dcpi_bin || !build_dir || access(dcpi_bin, X_OK))
		skip();
}

/* One more epoch in the database at dbp: a recording of a small workload. */
static void record_into(const char *dbp)
{
	char out[4096];

	if (run_capture(out, sizeof(out), "%s record --no-paths --db %s -- %s/workloads/twoprocs 5",
			dcpi_bin, dbp, build_dir))
		fail_msg("record: %s", out);
}

/* A database with one recorded epoch of a small workload. */
static void recorded_db(char *dbp, size_t len)
{
	fresh(dbp, len);
	record_into(dbp);
}

/* dcpi record on a full disk: exit 1 naming the file, the reason and the
 * samples lost, and no partial epoch (profiles without meta) left behind. */
static void test_record_enospc(void **state)
{
	char dbp[300], out[4096];
	int rc;

	need_tools();
	for (int k = 1; k <= 3; k++) {
		fresh(dbp, sizeof(dbp));
		rc = run_capture(out, sizeof(out), "DCPI_FAILPOINT=write:%d:enospc %s record "
				 "--no-paths --db %s -- %s/workloads/twoprocs 5", k, dcpi_bin, dbp,
				 build_dir);
		print_message("%s", out);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(out, "No space left on device"));
		assert_non_null(strstr(out, dbp));
		/* and what it cost, as dcpid says it */
		assert_non_null(strstr(out, "samples of the command lost (not written)"));
		/* nothing committed: no epoch, or one with meta and profiles */
		assert_int_equal(tu_sh("test ! -d %s/00000001 || test -f %s/00000001/meta", dbp,
				       dbp), 0);
		assert_int_equal(tu_sh("test -z \"$(find %s -name \".*tmp*\")\"", dbp), 0);
	}
}

static void test_tools_fifo_in_db(void **state)
{
	char dbp[300], out[4096];

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	assert_int_equal(tu_sh("mkfifo %s/00000001/zz.cpu-clock.prof", dbp), 0);
	dcpi_expect(out, sizeof(out), 0, "prof --db %s", dbp);
	assert_non_null(strstr(out, "not a regular file (a FIFO)"));
	assert_int_equal(tu_sh("rm %s/00000001/meta && mkfifo %s/00000001/meta", dbp, dbp), 0);
	dcpi_expect(out, sizeof(out), 1, "calc --db %s proc_a", dbp);
	assert_non_null(strstr(out, "meta: not a regular file (a FIFO)"));
}

static void test_tools_messages(void **state)
{
	char dbp[300], out[4096], rnd[400];
	int rc;

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	snprintf(rnd, sizeof(rnd), "%s/rand.bin", ws);
	assert_int_equal(tu_sh("head -c 4096 /dev/urandom > %s", rnd), 0);
	dcpi_expect(out, sizeof(out), 1, "calc --db %s --image %s main", dbp, rnd);
	assert_non_null(strstr(out, "not an ELF file"));
	dcpi_expect(out, sizeof(out), 1, "record -F 10000000 --db %s -- true", dbp);
	assert_non_null(strstr(out, "perf_event_max_sample_rate"));
	/* an empty newest epoch (a collector killed before its first flush)
	 * does not hide the good one */
	assert_int_equal(tu_sh("mkdir %s/00000002", dbp), 0);
	dcpi_expect(out, sizeof(out), 0, "prof --db %s", dbp);
	assert_non_null(strstr(out, "skipped 1 empty epoch newer than 00000001"));
	assert_non_null(strstr(out, "proc_a"));
	/* a full disk under dcpi record: exit 1 and no half-written epoch */
	rc = run_capture(out, sizeof(out), "DCPI_FAILPOINT=write:3:enospc %s record --no-paths --db %s "
			 "-- %s/workloads/twoprocs 2", dcpi_bin, dbp, build_dir);
	print_message("%s", out);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "No space left on device"));
	assert_int_equal(tu_sh("test ! -e %s/00000003", dbp), 0);
	/* an empty meta: dcpicalc says so instead of dropping the calibration */
	assert_int_equal(tu_sh(": > %s/00000001/meta", dbp), 0);
	dcpi_expect(out, sizeof(out), 1, "calc --db %s proc_a", dbp);
	assert_non_null(strstr(out, "00000001/meta: empty"));
}

/* ---- all or nothing: merge, import; damaged files; early checks ---------- */

/* Two recorded epochs in dbp. */
static void recorded_db2(char *dbp, size_t len)
{
	recorded_db(dbp, len);
	record_into(dbp);
}

/* A copy of dbp at bad whose second epoch has one garbage profile. */
static void damaged_copy(const char *dbp, char *bad, size_t len)
{
	fresh(bad, len);
	assert_int_equal(tu_sh("cp -r %s %s && f=$(ls %s/00000002/*.prof | head -1) && "
			       "echo garbage > $f", dbp, bad, bad), 0);
}

static int count_epochs(const char *dbp)
{
	char out[256];

	run_capture(out, sizeof(out), "ls %s 2>/dev/null | grep -c \"^[0-9]\\{8\\}$\"", dbp);
	return atoi(out);
}

/* merge good bad -o out, bad's second epoch damaged: exit 1 naming the file,
 * and out holds no epoch (a retry cannot double-count). */
static void test_merge_all_or_nothing(void **state)
{
	char good[300], bad[300], outdb[300], out[4096];
	int rc;

	need_tools();
	recorded_db2(good, sizeof(good));
	damaged_copy(good, bad, sizeof(bad));
	fresh(outdb, sizeof(outdb));
	dcpi_expect(out, sizeof(out), 1, "merge %s %s -o %s", good, bad, outdb);
	assert_non_null(strstr(out, "00000002/"));
	assert_non_null(strstr(out, "bad magic"));
	assert_int_equal(count_epochs(outdb), 0);
	/* and a good merge still works, then a full disk leaves nothing */
	dcpi_expect(out, sizeof(out), 0, "merge %s -o %s", good, outdb);
	assert_int_equal(count_epochs(outdb), 1);
	for (int k = 1; k <= 3; k++) {
		rc = run_capture(out, sizeof(out), "DCPI_FAILPOINT=write:%d:enospc %s merge %s -o %s",
				 k, dcpi_bin, good, outdb);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(out, "No space left on device"));
		assert_int_equal(count_epochs(outdb), 1);
	}
}

/* merge self -o self/: refused by device and inode before anything is written. */
static void test_merge_self(void **state)
{
	char dbp[300], out[4096];
	int rc;

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	dcpi_expect(out, sizeof(out), 1, "merge %s -o %s/", dbp, dbp);
	assert_int_equal(count_epochs(dbp), 1);
	rc = run_capture(out, sizeof(out), "cd %s/.. && %s merge %s -o ./%s/../%s", dbp,
			 dcpi_bin, dbp, strrchr(dbp, '/') + 1, strrchr(dbp, '/') + 1);
	print_message("%s", out);
	assert_int_equal(rc, 1);
	assert_int_equal(count_epochs(dbp), 1);
}

/* -o -, a directory that is not a database, a missing input: refused, and
 * nothing created or changed. */
static void test_merge_refusals(void **state)
{
	char dbp[300], other[300], outdb[300], out[4096];
	int rc;

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	rc = run_capture(out, sizeof(out), "cd %s && %s merge %s -o -", ws, dcpi_bin, dbp);
	print_message("%s", out);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "standard output"));
	assert_int_equal(tu_sh("test ! -e %s/-", ws), 0);
	fresh(other, sizeof(other));
	assert_int_equal(tu_sh("mkdir %s && echo mine > %s/notes.txt", other, other), 0);
	dcpi_expect(out, sizeof(out), 1, "merge %s -o %s", dbp, other);
	assert_non_null(strstr(out, other));
	assert_int_equal(tu_sh("test \"$(ls -A %s)\" = notes.txt", other), 0);
	fresh(outdb, sizeof(outdb));
	dcpi_expect(out, sizeof(out), 1, "merge %s %s/missing -o %s", dbp, ws, outdb);
	assert_non_null(strstr(out, "missing"));
	assert_int_equal(tu_sh("test ! -e %s", outdb), 0);
	/* into an existing database: a new epoch */
	dcpi_expect(out, sizeof(out), 0, "merge %s -o %s", dbp, outdb);
	dcpi_expect(out, sizeof(out), 1, "merge %s %s/missing -o %s", dbp, ws, outdb);
	assert_int_equal(count_epochs(outdb), 1);
}

/* A full disk under dcpi import: exit 1, no epoch (no empty newest one). */
static void test_import_enospc(void **state)
{
	char dbp[300], data[400], out[4096];
	int rc;

	need_tools();
	snprintf(data, sizeof(data), "%s/perf.data", ws);
	if (tu_sh("perf record -q -e cpu-clock -c 250000 -o %s -- %s/workloads/twoprocs 2 "
		  ">/dev/null 2>&1", data, build_dir))
		skip();
	recorded_db(dbp, sizeof(dbp));
	for (int k = 1; k <= 4; k++) {
		rc = run_capture(out, sizeof(out), "DCPI_FAILPOINT=write:%d:enospc %s import "
				 "--no-calibrate --db %s %s", k, dcpi_bin, dbp, data);
		print_message("%s", out);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(out, "No space left on device"));
		assert_int_equal(count_epochs(dbp), 1);
	}
	dcpi_expect(out, sizeof(out), 0, "import --no-calibrate --db %s %s", dbp, data);
	assert_int_equal(count_epochs(dbp), 2);
}

/* An empty newest epoch: every tool skips it with the same note. */
static void test_empty_epoch_every_tool(void **state)
{
	static const char *const cmds[] = { "prof", "llvm-prof -o %s/l.txt %s/workloads/twoprocs",
					    "gcc-prof -o %s/g.afdo %s/workloads/twoprocs",
					    "bolt-prof -o %s/b.fdata %s/workloads/twoprocs",
					    "calc proc_a" };
	char dbp[300], out[8192], cmd[1200];
	int rc;

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	assert_int_equal(tu_sh("mkdir %s/00000002", dbp), 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(cmd, sizeof(cmd), cmds[i], ws, build_dir);
		rc = run_capture(out, sizeof(out), "%s %s --db %s", dcpi_bin, cmd, dbp);
		print_message("%s: %s", cmd, out);
		assert_int_equal(rc, 0);
		assert_null(strstr(out, "holds no samples"));
		assert_non_null(strstr(out, "skipped 1 empty epoch newer than 00000001 "
				       "(00000002)"));
	}
}

/* One garbage, truncated or empty profile: the reports skip it with a note
 * naming it, report the rest and mark the epoch damaged in --json. */
static void test_damaged_file_reports(void **state)
{
	static const char *const damage[] = { "echo garbage > $f", "truncate -s 100 $f",
					      ": > $f" };
	char dbp[300], out[8192], f[600];

	need_tools();
	for (size_t d = 0; d < 3; d++) {
		recorded_db(dbp, sizeof(dbp));
		/* another image's profile (libc's, ld.so's): twoprocs' own is
		 * what calc and llvm-prof read below */
		run_capture(f, sizeof(f), "ls %s/00000001/*.prof | grep -v \"$(readelf -n "
			    "%s/workloads/twoprocs | grep \"Build ID\" | sed \"s/.*: //\")\" | "
			    "head -1", dbp, build_dir);
		f[strcspn(f, "\n")] = '\0';
		if (f[0] != '/')	/* only twoprocs was sampled: another image's file */
			snprintf(f, sizeof(f), "%s/00000001/%040d.cpu-clock.prof", dbp, 0);
		assert_int_equal(tu_sh("f=%s; %s", f, damage[d]), 0);
		dcpi_expect(out, sizeof(out), 0, "prof --db %s", dbp);
		assert_non_null(strstr(out, f));
		assert_non_null(strstr(out, "skipped, the rest of epoch 00000001 is reported"));
		dcpi_expect(out, sizeof(out), 0, "prof --json --db %s 2>/dev/null", dbp);
		assert_non_null(strstr(out, "\"damaged\": [\""));
		dcpi_expect(out, sizeof(out), 0, "diff --json %s %s 2>/dev/null", dbp, dbp);
		assert_non_null(strstr(out, "\"damaged\": [\""));
		dcpi_expect(out, sizeof(out), 0, "export --pprof --db %s -o %s/x.pb.gz", dbp, ws);
		dcpi_expect(out, sizeof(out), 0, "calc --db %s proc_a", dbp);
		dcpi_expect(out, sizeof(out), 0, "llvm-prof --db %s -o %s/l.txt "
			    "%s/workloads/twoprocs", dbp, ws, build_dir);
	}
}

/* A damaged path or value file: skipped with a note naming it, the rest
 * reported; merge refuses it. */
static void test_damaged_paths_reports(void **state)
{
	char dbp[300], out[8192], f[600];
	int rc;

	need_tools();
	fresh(dbp, sizeof(dbp));
	if (run_capture(out, sizeof(out), "%s record --paths 200:32 --db %s -- "
			"%s/workloads/twoprocs 5", dcpi_bin, dbp, build_dir))
		fail_msg("record: %s", out);
	run_capture(f, sizeof(f), "ls %s/00000001/*.paths | head -1", dbp);
	f[strcspn(f, "\n")] = '\0';
	assert_true(f[0] == '/');
	assert_int_equal(tu_sh("echo garbage > %s", f), 0);
	dcpi_expect(out, sizeof(out), 0, "calc --db %s proc_a", dbp);
	assert_non_null(strstr(out, f));
	assert_non_null(strstr(out, "skipped, the rest of epoch 00000001 is reported"));
	dcpi_expect(out, sizeof(out), 0, "calc --db %s proc_a --json 2>/dev/null", dbp);
	assert_non_null(strstr(out, "\"damaged\": [\""));
	rc = run_capture(out, sizeof(out), "%s merge %s -o %s/m", dcpi_bin, dbp, ws);
	print_message("%s", out);
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(out, "not merged"));
	assert_int_equal(tu_sh("test ! -e %s/m/00000001", ws), 0);
}

/* A database the user cannot write: refused before the command runs. */
static void test_record_unwritable_first(void **state)
{
	char dbp[300], out[4096], mark[400];
	int rc;

	need_tools();
	if (geteuid() != 0 || tu_sh("command -v setpriv >/dev/null"))
		skip();
	fresh(dbp, sizeof(dbp));
	assert_int_equal(mkdir(dbp, 0755), 0);
	assert_int_equal(chmod(ws, 0755), 0);
	snprintf(mark, sizeof(mark), "%s/ran", ws);
	rc = run_capture(out, sizeof(out), "setpriv --reuid=65534 --regid=65534 --clear-groups "
			 "%s record --no-paths --db %s -- sh -c \"echo RAN\"", dcpi_bin, dbp);
	print_message("%s", out);
	assert_int_equal(rc, 1);
	assert_null(strstr(out, "RAN"));
	/* "cannot create epoch", or, where a folder above the workspace is
	 * closed to that user (tests/run.sh's are 0700), "cannot open" */
	assert_non_null(strstr(out, "Permission denied"));
	assert_non_null(strstr(out, dbp));
	assert_int_equal(chmod(ws, 0700), 0);
}

/* dcpidiff names the path the user gave, not the default database. */
static void test_diff_names_path(void **state)
{
	static const char *const what[] = { "fifo", "file", "missing" };
	char dbp[300], x[400], out[4096];
	int rc;

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	for (size_t i = 0; i < 3; i++) {
		snprintf(x, sizeof(x), "%s/diff-%s", ws, what[i]);
		if (i == 0)
			assert_int_equal(mkfifo(x, 0644), 0);
		if (i == 1)
			assert_int_equal(tu_sh("echo x > %s", x), 0);
		rc = run_capture(out, sizeof(out), "cd %s && %s diff %s %s", ws, dcpi_bin, dbp, x);
		print_message("%s", out);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(out, x));
		assert_null(strstr(out, "dcpidb"));
	}
}

/* Error paths that leaked (ASan's leak check fails the exit status). */
static void test_error_paths_no_leak(void **state)
{
	char dbp[300], out[4096];

	need_tools();
	recorded_db(dbp, sizeof(dbp));
	dcpi_expect(out, sizeof(out), 1, "stats --db %s", dbp);
	assert_non_null(strstr(out, "at least two runs"));
	assert_null(strstr(out, "LeakSanitizer"));
	assert_int_equal(tu_sh("mkdir %s/00000002", dbp), 0);
	dcpi_expect(out, sizeof(out), 1, "export --pprof --db %s --epoch 00000002 -o %s/e.pb",
		    dbp, ws);
	assert_non_null(strstr(out, "no samples"));
	assert_null(strstr(out, "LeakSanitizer"));
}

static void test_daemon_pidfile(void **state)
{
	char dbp[300], out[4096], pidf[400], victim[400];
	struct stat st;
	int rc;

	need_tools();
	fresh(dbp, sizeof(dbp));
	dcpi_expect(out, sizeof(out), 1, "daemon --db %s --pidfile /nonexistent/dir/pid "
		    "--duration 1 --no-calibrate", dbp);
	assert_non_null(strstr(out, "/nonexistent/dir/pid:"));
	assert_null(strstr(out, ".tmp"));
	assert_int_equal(tu_sh("test -z \"$(ls -A %s 2>/dev/null)\"", dbp), 0);	/* no epoch */
	/* a link at the old temporary name, umask 000 */
	snprintf(pidf, sizeof(pidf), "%s/pid-%d", ws, dbseq);
	snprintf(victim, sizeof(victim), "%s/victim-pid", ws);
	assert_int_equal(tu_sh("echo precious > %s && ln -s %s %s.tmp", victim, victim, pidf), 0);
	rc = run_capture(out, sizeof(out), "umask 000; %s daemon --db %s --pidfile %s "
			 "--duration 2 --no-calibrate -q & for i in $(seq 100); do "
			 "[ -e %s ] && break; sleep 0.05; done; stat -c %%a %s; wait",
			 dcpi_bin, dbp, pidf, pidf, pidf);
	print_message("%s", out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "644"));
	assert_int_equal(tu_sh("grep -qx precious %s", victim), 0);
	assert_int_equal(lstat(pidf, &st), -1);	/* removed at exit */
}

static void test_daemon_strict(void **state)
{
	char dbp[300], out[4096];

	need_tools();
	fresh(dbp, sizeof(dbp));
	assert_int_equal(mkdir(dbp, 0777), 0);
	assert_int_equal(chmod(dbp, 0777), 0);
	dcpi_expect(out, sizeof(out), 1, "daemon --db %s --duration 0.2 --no-calibrate", dbp);
	assert_non_null(strstr(out, "chmod go-w"));
}

/* dcpid with a workload: argv tail, returns its pid (stderr to errf). */
static pid_t daemon_start(const char *dbp, const char *errf, const char *fp, const char *pidf)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(99);
		dup2(fd, 2);
		dup2(fd, 1);
		if (fp)
			setenv("DCPI_FAILPOINT", fp, 1);
		else
			unsetenv("DCPI_FAILPOINT");
		execl(dcpi_bin, dcpi_bin, "daemon", "--db", dbp, "--flush", "1", "--pidfile",
		      pidf, "--no-calibrate", (char *)NULL);
		_exit(98);
	}
	for (int i = 0; i < 200 && access(pidf, F_OK); i++) {
		if (kill(pid, 0))	/* died: a zombie still answers 0, so ask waitpid */
			break;
		if (waitpid(pid, NULL, WNOHANG | WNOWAIT) == pid)
			break;
		sleep_ms(25);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void spin_workload(void)
{
	assert_int_equal(tu_sh("%s/workloads/twoprocs 5 > /dev/null", build_dir), 0);
}

/* The summary line's sample count ("dcpid: N samples"). */
static uint64_t daemon_said(const char *errf, char *text, size_t len)
{
	unsigned long long n = 0;
	FILE *f = fopen(errf, "r");
	size_t k;
	char *s;

	assert_non_null(f);
	k = fread(text, 1, len - 1, f);
	text[k] = '\0';
	fclose(f);
	for (s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		unsigned long long v;

		if (sscanf(s, "%*[^:\n]: %llu samples (", &v) == 1)
			n = v;
	}
	return n;
}

/* Sum of totals and meta samples over every epoch of a database. */
static uint64_t db_totals(const char *dbp, uint64_t *meta)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char **names;
	size_t n;
	uint64_t t = 0, m;

	*meta = 0;
	assert_int_equal(prof_db_open(dbp, 0, &db, &err), 0);
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	prof_db_close(db);
	for (size_t i = 0; i < n; i++) {
		t += epoch_totals(dbp, names[i], &m);
		*meta += m;
	}
	prof_names_free(names, n);
	return t;
}

/* A full disk at the first flush: dcpid keeps the samples and writes them at
 * the next; nothing is lost at SIGTERM; the failure is counted. */
static void test_daemon_survives_enospc(void **state)
{
	char dbp[300], errf[400], pidf[400], text[8192];
	uint64_t said, t, m;
	pid_t d;

	need_tools();
	fresh(dbp, sizeof(dbp));
	snprintf(errf, sizeof(errf), "%s/err-%d", ws, dbseq);
	snprintf(pidf, sizeof(pidf), "%s/pidf-%d", ws, dbseq);
	d = daemon_start(dbp, errf, "write:2:enospc", pidf);	/* 1: the pidfile */
	spin_workload();
	sleep_ms(1500);
	assert_int_equal(kill(d, 0), 0);	/* still running */
	spin_workload();
	kill(d, SIGTERM);
	assert_int_equal(wait_status(d), 0);
	said = daemon_said(errf, text, sizeof(text));
	print_message("%s", text);
	assert_non_null(strstr(text, "flush failed"));
	assert_non_null(strstr(text, "No space left on device"));
	assert_non_null(strstr(text, "1 flush(es) failed"));
	t = db_totals(dbp, &m);
	assert_true(said > 0);
	assert_int_equal(t, said);	/* nothing lost */
	assert_int_equal(m, t);
	assert_int_equal(tu_sh("grep -q '^failed_flushes = 1' %s/00000001/meta", dbp), 0);
}

/* A full disk for good with a small bound: drops are counted, dcpid runs on. */
static void test_daemon_drops_past_bound(void **state)
{
	char dbp[300], errf[400], pidf[400], text[8192];
	pid_t d;
	int rc;

	need_tools();
	fresh(dbp, sizeof(dbp));
	snprintf(errf, sizeof(errf), "%s/err-%d", ws, dbseq);
	snprintf(pidf, sizeof(pidf), "%s/pidf-%d", ws, dbseq);
	d = fork();
	assert_true(d >= 0);
	if (d == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 2);
		setenv("DCPI_FAILPOINT", "write:2+:enospc", 1);	/* 1: the pidfile */
		execl(dcpi_bin, dcpi_bin, "daemon", "--db", dbp, "--flush", "1", "--pidfile",
		      pidf, "--no-calibrate", "--max-held", "1", (char *)NULL);
		_exit(98);
	}
	for (int i = 0; i < 200 && access(pidf, F_OK); i++)
		sleep_ms(25);
	spin_workload();
	sleep_ms(1200);
	assert_int_equal(kill(d, 0), 0);
	kill(d, SIGTERM);
	rc = wait_status(d);
	daemon_said(errf, text, sizeof(text));
	print_message("%s", text);
	assert_int_equal(rc, 1);	/* the last flush failed too: said, not hidden */
	assert_non_null(strstr(text, "samples dropped"));
	assert_non_null(strstr(text, "samples not written"));
}

/* dcpid killed at each of its first failpoints: the database stays readable
 * and its meta agrees with its profiles; the next dcpid cleans up. */
static void test_daemon_kill_in_flush(void **state)
{
	char dbp[300], errf[400], pidf[400], spec[64], text[8192];
	uint64_t t, m;

	need_tools();
	fresh(dbp, sizeof(dbp));
	static const int steps[] = { 5, 6, 8, 11, 20, 45 };	/* the pidfile takes 1-4 */

	for (size_t si = 0; si < sizeof(steps) / sizeof(steps[0]); si++) {
		int k = steps[si], rc;
		pid_t d;

		snprintf(errf, sizeof(errf), "%s/err-%d-%d", ws, dbseq, k);
		snprintf(pidf, sizeof(pidf), "%s/pidf-%d-%d", ws, dbseq, k);
		snprintf(spec, sizeof(spec), "*:%d:kill", k);
		d = daemon_start(dbp, errf, spec, pidf);
		spin_workload();
		for (int i = 0; i < 80 && waitpid(d, &rc, WNOHANG | WNOWAIT) == 0; i++)
			sleep_ms(50);
		kill(d, SIGTERM);	/* fewer failpoints than k: stop it */
		wait_status(d);
		unlink(pidf);
		t = db_totals(dbp, &m);
		if (t != m) {
			daemon_said(errf, text, sizeof(text));
			fail_msg("kill at %d: meta %llu, profiles %llu\n%s", k,
				 (unsigned long long)m, (unsigned long long)t, text);
		}
	}
	/* a last clean daemon finishes journals and removes temporaries */
	{
		pid_t d;

		snprintf(errf, sizeof(errf), "%s/err-%d-last", ws, dbseq);
		snprintf(pidf, sizeof(pidf), "%s/pidf-%d-last", ws, dbseq);
		d = daemon_start(dbp, errf, NULL, pidf);
		spin_workload();
		sleep_ms(1200);
		kill(d, SIGTERM);
		assert_int_equal(wait_status(d), 0);
	}
	t = db_totals(dbp, &m);
	assert_int_equal(t, m);
	assert_int_equal(tu_sh("test -z \"$(find %s -name '.*tmp*' -o -name .journal)\"", dbp),
			 0);
}

/* One corrupt profile in the live epoch: dcpid sets it aside and runs on. */
static void test_daemon_corrupt_live(void **state)
{
	char dbp[300], errf[400], pidf[400], text[8192];
	pid_t d;

	need_tools();
	fresh(dbp, sizeof(dbp));
	snprintf(errf, sizeof(errf), "%s/err-%d", ws, dbseq);
	snprintf(pidf, sizeof(pidf), "%s/pidf-%d", ws, dbseq);
	d = daemon_start(dbp, errf, NULL, pidf);
	spin_workload();
	for (int i = 0; i < 100 && tu_sh("ls %s/00000001/*.prof >/dev/null 2>&1", dbp); i++)
		sleep_ms(50);
	/* the workload's profile: it gets samples again at the next flush */
	assert_int_equal(tu_sh("for f in $(grep -l twoprocs %s/00000001/*.prof); do "
			       "printf garbage | dd of=$f bs=1 seek=40 conv=notrunc 2>/dev/null; "
			       "done", dbp), 0);
	spin_workload();
	sleep_ms(1200);
	assert_int_equal(kill(d, 0), 0);
	kill(d, SIGTERM);
	assert_int_equal(wait_status(d), 0);
	daemon_said(errf, text, sizeof(text));
	print_message("%s", text);
	assert_non_null(strstr(text, "set aside"));
	assert_int_equal(tu_sh("ls %s/00000001/*.prof.bad-* >/dev/null 2>&1", dbp), 0);
	assert_int_equal(tu_sh("%s prof --db %s > /dev/null", dcpi_bin, dbp), 0);
}

/* An executable mapped, deleted and replaced by a FIFO before dcpid names
 * it: dcpid must not block opening it (it used to stop flushing for good). */
static void test_daemon_fifo_image(void **state)
{
	char dbp[300], errf[400], pidf[400], img[400], text[8192];
	pid_t d, evil, got = 0;
	int rc = -1, st = 0;

	need_tools();
	fresh(dbp, sizeof(dbp));
	snprintf(errf, sizeof(errf), "%s/err-%d", ws, dbseq);
	snprintf(pidf, sizeof(pidf), "%s/pidf-%d", ws, dbseq);
	snprintf(img, sizeof(img), "%s/evil-%d", ws, dbseq);
	assert_int_equal(tu_sh("cp %s/workloads/twoprocs %s", build_dir, img), 0);
	d = daemon_start(dbp, errf, NULL, pidf);
	evil = fork();
	assert_true(evil >= 0);
	if (evil == 0) {
		int fd = open(img, O_RDONLY);
		void *m = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_EXEC,
						      MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED || unlink(img) || mkfifo(img, 0644))
			_exit(1);
		sleep(3);
		_exit(0);
	}
	spin_workload();
	sleep_ms(1500);		/* a flush after the MMAP2 record */
	/* flushing goes on while the FIFO is there (it used to stop until a
	 * signal interrupted the open) */
	rc = tu_sh("ls %s/00000001/*.prof > /dev/null 2>&1", dbp);
	kill(d, SIGTERM);
	for (int i = 0; i < 100 && (got = waitpid(d, &st, WNOHANG)) == 0; i++)
		sleep_ms(50);
	if (got == 0) {
		kill(d, SIGKILL);
		waitpid(d, &st, 0);
		fail_msg("dcpid hung on a FIFO at a mapped image's path");
	}
	assert_int_equal(wait_status(evil), 0);
	daemon_said(errf, text, sizeof(text));
	print_message("%s", text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(rc, 0);
	unlink(img);
}

TU_MAIN(setup, teardown,
	TU_EACH(test_failpoints),
	TU_EACH(test_kill_at_each_step),
	TU_EACH(test_enospc_eio_each_write),
	TU_EACH(test_corrupt_live_file),
	TU_EACH(test_fifos_do_not_hang),
	TU_EACH(test_symlinked_epoch),
	TU_EACH(test_symlinks_at_names),
	TU_EACH(test_modes_whatever_umask),
	TU_EACH(test_strict_modes),
	TU_EACH(test_empty_epochs_skipped),
	TU_EACH(test_bad_meta_is_an_error),
	TU_EACH(test_perf_map_rules),
	TU_EACH(test_tools_fifo_in_db),
	TU_EACH(test_tools_messages),
	TU_EACH(test_record_enospc),
	TU_EACH(test_merge_all_or_nothing),
	TU_EACH(test_merge_self),
	TU_EACH(test_merge_refusals),
	TU_EACH(test_import_enospc),
	TU_EACH(test_empty_epoch_every_tool),
	TU_EACH(test_damaged_file_reports),
	TU_EACH(test_damaged_paths_reports),
	TU_EACH(test_record_unwritable_first),
	TU_EACH(test_diff_names_path),
	TU_EACH(test_error_paths_no_leak),
	TU_EACH(test_daemon_pidfile),
	TU_EACH(test_daemon_strict),
	TU_EACH(test_daemon_survives_enospc),
	TU_EACH(test_daemon_drops_past_bound),
	TU_EACH(test_daemon_kill_in_flush),
	TU_EACH(test_daemon_corrupt_live),
	TU_EACH(test_daemon_fifo_image))
