/*
 * test_session.c - the one decoder of perf records (collect/perf_session.c)
 * and the one (image, event, offset) table (collect/aggregate.c): the same
 * synthetic records fed to the live session's callbacks (sess_feed, as the
 * rings hold them) and written byte by byte into a perf.data for `dcpi
 * import` give the same profiles; a record that lies about its size is an
 * error naming its type and offset on both paths.  And the one JIT-map
 * trust rule (util/jitmap_trust.c) both the collector and the reports use.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/perf_event.h>

#include <cmocka.h>

#include "dcpi/import.h"
#include "dcpi/jitmap.h"
#include "dcpi/profile.h"
#include "../collect/internal.h"
#include "../report/internal.h"
#include "testutil.h"
#include "tu_main.h"
#include "tu_perf.h"
#include "tu_sess.h"

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	    PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER)
#define FLAGS_REG 9		/* the one user register the sampler asks for */
#define PERIOD 250000
#define ID_CPU 7		/* the two counters' ids: cpu-clock, task-clock */
#define ID_TASK 9
#define KADDR 0xffffffff81000010ull

static char tmpdir[256];

static int setup(void **state)
{
	return tu_ws_setup(state, tmpdir, sizeof(tmpdir), "session");
}

/* --- records, byte by byte ---------------------------------------------------- */

/* The sample_id every other record ends with (sample_id_all): tid, time, id. */
static void put_id(struct tu_pbuf *p, uint32_t pid)
{
	tu_put32(p, pid), tu_put32(p, pid);
	tu_put64(p, p->time++);
	tu_put64(p, ID_CPU);
}

static void put_name(struct tu_pbuf *p, const char *s, size_t padded)
{
	char z[8] = { 0 };

	tu_put(p, s, strlen(s));
	tu_put(p, z, padded - strlen(s));
}

static size_t pad8(const char *s)
{
	return (strlen(s) + 1 + 7) & ~(size_t)7;
}

/* A sample as the sampler asks for it: id, ip, pid/tid, time, period, the
 * user registers' abi and the flags register (IF, not TF). */
static void rec_sample(struct tu_pbuf *p, uint16_t misc, uint64_t id, uint64_t ip, uint32_t pid,
		       uint32_t tid)
{
	tu_put_hdr(p, PERF_RECORD_SAMPLE, misc, 8 + 7 * 8);
	tu_put64(p, id), tu_put64(p, ip);
	tu_put32(p, pid), tu_put32(p, tid);
	tu_put64(p, p->time++), tu_put64(p, PERIOD);
	tu_put64(p, PERF_SAMPLE_REGS_ABI_64), tu_put64(p, 0x202);
}

static void rec_mmap(struct tu_pbuf *p, int v2, uint32_t pid, uint64_t start, uint64_t len,
		     uint64_t pgoff, const char *name)
{
	tu_put_hdr(p, v2 ? PERF_RECORD_MMAP2 : PERF_RECORD_MMAP, PERF_RECORD_MISC_USER,
		   8 + 32 + (v2 ? 32 : 0) + pad8(name) + 24);
	tu_put32(p, pid), tu_put32(p, pid);
	tu_put64(p, start), tu_put64(p, len), tu_put64(p, pgoff);
	if (v2) {
		/* maj/min, ino, generation */
		tu_put64(p, 8), tu_put64(p, 1234), tu_put64(p, 0);
		tu_put32(p, 5), tu_put32(p, 2);			/* PROT_READ|EXEC, MAP_PRIVATE */
	}
	put_name(p, name, pad8(name));
	put_id(p, pid);
}

static void rec_comm_exec(struct tu_pbuf *p, uint32_t pid, const char *comm)
{
	tu_put_hdr(p, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 8 + 8 + pad8(comm) + 24);
	tu_put32(p, pid), tu_put32(p, pid);
	put_name(p, comm, pad8(comm));
	put_id(p, pid);
}

static void rec_task(struct tu_pbuf *p, uint32_t type, uint32_t pid, uint32_t ppid)
{
	tu_put_hdr(p, type, 0, 8 + 24 + 24);
	tu_put32(p, pid), tu_put32(p, ppid), tu_put32(p, pid), tu_put32(p, ppid);
	tu_put64(p, p->time);
	put_id(p, pid);
}

static void rec_lost(struct tu_pbuf *p, uint64_t lost)
{
	tu_put_hdr(p, PERF_RECORD_LOST, 0, 8 + 16 + 24);
	tu_put64(p, ID_CPU), tu_put64(p, lost);
	put_id(p, 0);
}

/*
 * Two processes' lives: exec, an ELF mapped by MMAP2 at a page offset, a
 * file by MMAP, samples of two events in both, in the kernel, in no mapping
 * and of an id no counter has; a fork whose child inherits the maps, then
 * execs (its old addresses map to nothing); lost samples; a thread.
 */
static void script(struct tu_pbuf *p, const char *exe, const char *lib)
{
	rec_comm_exec(p, 100, "prog");
	rec_mmap(p, 1, 100, 0x400000, 0x20000, 0x1000, exe);
	rec_mmap(p, 0, 100, 0x7f0000000000ull, 0x4000, 0, lib);
	for (int i = 0; i < 3; i++)
		rec_sample(p, PERF_RECORD_MISC_USER, ID_CPU, 0x400010, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_TASK, 0x400020, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_TASK, 0x400020, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_CPU, 0x7f0000000100ull, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_CPU, 0x12345, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_KERNEL, ID_CPU, KADDR, 100, 100);
	rec_sample(p, PERF_RECORD_MISC_KERNEL, ID_CPU, KADDR, 100, 100);
	rec_task(p, PERF_RECORD_FORK, 200, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_CPU, 0x400010, 200, 200);
	rec_sample(p, PERF_RECORD_MISC_USER, 11, 0x400010, 200, 200);	/* no such counter */
	rec_comm_exec(p, 200, "other");
	rec_sample(p, PERF_RECORD_MISC_USER, ID_CPU, 0x400010, 200, 200);
	rec_lost(p, 3);
	rec_task(p, PERF_RECORD_EXIT, 200, 100);
	rec_sample(p, PERF_RECORD_MISC_USER, ID_TASK, 0x400030, 100, 101);
}

/* --- the live path: the session's callbacks --------------------------------- */

static void live_session(struct session *s, struct collect_opts *o, struct smp_counter *k)
{
	memset(o, 0, sizeof(*o));
	o->events[0] = collect_event_find("cpu-clock");
	o->events[1] = collect_event_find("task-clock");
	o->nevents = 2;
	o->period = PERIOD;
	o->fixed_period = 1;
	o->no_calibrate = 1;
	tu_sess_live(s, o, k, ID_CPU, ID_TASK, ST);
	s->kernel = 1;
}

static void live_write(struct session *s, const char *dbdir, char *epoch, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	uint64_t written;

	assert_int_equal(prof_db_open(dbdir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, len, &err), 0);
	assert_int_equal(prof_epoch_begin(db, epoch, &err), 0);
	assert_int_equal(sess_write(s, db, epoch, &written, &err), 0);
	assert_int_equal(prof_epoch_commit(db, &err), 0);
	assert_int_equal(written, 12);	/* 13 samples, one of no counter */
	prof_db_close(db);
}

/* --- the file path: a perf.data around the same records ----------------------- */

static void perf_attr(struct perf_event_attr *a, uint64_t config)
{
	tu_sw_attr(a, config, PERIOD, ST);
	a->sample_regs_user = 1ull << FLAGS_REG;
	a->sample_id_all = 1;
}

/* Header, two attributes with their ids, then the records of data. */
static void perf_file(const char *path, const struct tu_pbuf *data)
{
	static const uint64_t ids[2] = { ID_CPU, ID_TASK };
	struct tu_pbuf *p = calloc(1, sizeof(*p));
	struct perf_event_attr a[2];
	FILE *f;

	assert_non_null(p);
	perf_attr(&a[0], PERF_COUNT_SW_CPU_CLOCK);
	perf_attr(&a[1], PERF_COUNT_SW_TASK_CLOCK);
	tu_put_perf_head(p, a, ids, 2, data->n, 0);	/* no features */
	assert_int_equal(p->n, 104 + 2 * (sizeof(a[0]) + 16) + 16);
	tu_put(p, data->b, data->n);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p->b, 1, p->n, f), p->n);
	assert_int_equal(fclose(f), 0);
	free(p);
}

/* --- comparing ------------------------------------------------------------------ */

static const struct prof_profile *find(const struct prof_profile *v, size_t n,
				       const struct prof_profile *like)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].image.path, like->image.path) &&
		    !strcmp(v[i].event, like->event))
			return &v[i];
	return NULL;
}

static void same_profiles(const struct prof_profile *a, size_t na, const struct prof_profile *b,
			  size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		const struct prof_profile *o = find(b, nb, &a[i]);

		print_message("%s %s: %zu offsets, %llu samples\n", a[i].image.path, a[i].event,
			      a[i].n, (unsigned long long)a[i].total);
		assert_non_null(o);
		assert_true(prof_image_id_equal(&a[i].image, &o->image));
		assert_true(a[i].period == o->period);
		assert_string_equal(a[i].period_unit, o->period_unit);
		assert_int_equal(a[i].n, o->n);
		assert_memory_equal(a[i].e, o->e, a[i].n * sizeof(a[i].e[0]));
	}
}

static uint64_t count_of(const struct prof_profile *v, size_t n, const char *path,
			 const char *event, uint64_t offset)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].image.path, path) && !strcmp(v[i].event, event))
			return prof_profile_count(&v[i], offset);
	return 0;
}

static void read_epoch(const char *dbdir, const char *epoch, struct prof_profile **v, size_t *n)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;

	assert_int_equal(prof_db_open(dbdir, 0, &db, &err), 0);
	assert_int_equal(prof_epoch_read(db, epoch, v, n, &err), 0);
	prof_db_close(db);
}

/* The same records through the live session's callbacks and through a
 * perf.data and the importer: the same profiles, and the counts the
 * records say. */
static void test_live_and_file_agree(void **state)
{
	struct tu_pbuf *p = calloc(1, sizeof(*p));
	char exe[4096], lib[600], data[600], ldb[600], fdb[600], epoch[64];
	struct collect_opts o;
	struct smp_counter k[2];
	struct session s;
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_profile *lv, *fv;
	struct prof_db *db;
	size_t nl, nf;
	ssize_t len;

	(void)state;
	assert_non_null(p);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);	/* an ELF: its build-id */
	assert_true(len > 0);
	exe[len] = '\0';
	snprintf(lib, sizeof(lib), "%s/lib.bin", tmpdir);
	tu_write_text(lib, "not an ELF: keyed by path, size and mtime\n");
	script(p, exe, lib);

	live_session(&s, &o, k);
	assert_int_equal(sess_feed(&s, p->b, p->n, &err), 0);
	assert_int_equal(s.lost, 3);
	snprintf(ldb, sizeof(ldb), "%s/live", tmpdir);
	live_write(&s, ldb, epoch, sizeof(epoch));
	sess_free(&s);
	read_epoch(ldb, epoch, &lv, &nl);

	snprintf(data, sizeof(data), "%s/same.data", tmpdir);
	perf_file(data, p);
	snprintf(fdb, sizeof(fdb), "%s/file", tmpdir);
	assert_int_equal(prof_db_open(fdb, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(import_perf(data, db, &st, &err), 0);
	prof_db_close(db);
	assert_int_equal(st.samples, 12);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.lost, 3);
	read_epoch(fdb, st.epoch, &fv, &nf);

	same_profiles(lv, nl, fv, nf);
	assert_int_equal(count_of(lv, nl, exe, "cpu-clock", 0x1010), 4);	/* 100 + fork */
	assert_int_equal(count_of(lv, nl, exe, "task-clock", 0x1020), 2);
	assert_int_equal(count_of(lv, nl, exe, "task-clock", 0x1030), 1);	/* a thread */
	assert_int_equal(count_of(lv, nl, lib, "cpu-clock", 0x100), 1);
	assert_int_equal(count_of(lv, nl, MAPS_KERNEL_PATH, "cpu-clock", KADDR), 2);
	assert_int_equal(count_of(lv, nl, PROF_UNKNOWN_PATH, "cpu-clock", 0x12345), 1);
	assert_int_equal(count_of(lv, nl, PROF_UNKNOWN_PATH, "cpu-clock", 0x400010), 1);
	prof_profiles_free(lv, nl);
	prof_profiles_free(fv, nf);
	free(p);
}

/* A record shorter than its fields is an error naming its type and offset,
 * on the live path and in a file, never a read past its end. */
static void test_record_lies_about_size(void **state)
{
	struct tu_pbuf *p = calloc(1, sizeof(*p));
	char data[600], dbdir[600], want[128];
	struct collect_opts o;
	struct smp_counter k[2];
	struct session s;
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	size_t bad;

	(void)state;
	assert_non_null(p);
	rec_comm_exec(p, 100, "prog");
	bad = p->n;
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 24);	/* id, ip, tid */
	tu_put64(p, ID_CPU), tu_put64(p, 0x400010);
	tu_put32(p, 100), tu_put32(p, 100);
	live_session(&s, &o, k);
	assert_int_equal(sess_feed(&s, p->b, p->n, &err), -EINVAL);
	print_message("%s\n", err.msg);
	snprintf(want, sizeof(want), "PERF_RECORD_SAMPLE at offset %zu", bad);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "TIME"));
	sess_free(&s);

	snprintf(data, sizeof(data), "%s/lies.data", tmpdir);
	perf_file(data, p);
	snprintf(dbdir, sizeof(dbdir), "%s/liesdb", tmpdir);
	assert_int_equal(prof_db_open(dbdir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(import_perf(data, db, &st, &err), -EINVAL);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, data));
	/* in the file, after the header (104), two attributes and their ids */
	snprintf(want, sizeof(want), "PERF_RECORD_SAMPLE at offset %zu",
		 104 + 2 * (sizeof(struct perf_event_attr) + 16) + 16 + bad);
	assert_non_null(strstr(err.msg, want));

	/* an MMAP2 too short for its file name */
	p->n = 0;
	tu_put_hdr(p, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 8 + 40);
	for (int i = 0; i < 5; i++)
		tu_put64(p, 0);
	live_session(&s, &o, k);
	assert_int_equal(sess_feed(&s, p->b, p->n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "PERF_RECORD_MMAP2 at offset 0"));
	sess_free(&s);
	prof_db_close(db);
	free(p);
}

/* --- the JIT-map trust rule ------------------------------------------------------ */

static void make_map(const char *path, unsigned mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1000 10 jit_fn\n", 15), 15);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* Refused by the rule (util/jitmap_trust.c) and by the report's loader,
 * with a reason naming the file and what. */
static void refused(const char *path, const char *why)
{
	struct dcpi_err err = { 0 };
	struct ksyms m;

	assert_int_equal(jitmap_trusted(path, &err), -EPERM);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, why));
	memset(&err, 0, sizeof(err));
	assert_true(rep_jitmap_load(path, &m, &err) < 0);
	assert_non_null(strstr(err.msg, path));
}

static void used(const char *path)
{
	struct dcpi_err err = { 0 };
	struct ksyms m;

	assert_int_equal(jitmap_trusted(path, &err), 0);
	assert_int_equal(rep_jitmap_load(path, &m, &err), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.e[0].name, "jit_fn");
	ksyms_free(&m);
}

/* perf's rule: a regular file, written only by its owner, owned by root,
 * the user asking or the process's user; anything else refused with a
 * note.  Before, both rules trusted a group- or world-writable map. */
static void test_jitmap_trust(void **state)
{
	char path[600], target[600];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/mine.map", tmpdir);
	make_map(path, 0644);
	used(path);				/* root's, or the user's asking */
	snprintf(target, sizeof(target), "%s", path);

	snprintf(path, sizeof(path), "%s/group.map", tmpdir);
	make_map(path, 0664);
	refused(path, "writable by its group");
	snprintf(path, sizeof(path), "%s/world.map", tmpdir);
	make_map(path, 0646);
	refused(path, "writable by others");

	snprintf(path, sizeof(path), "%s/fifo.map", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	refused(path, "a FIFO");
	snprintf(path, sizeof(path), "%s/link.map", tmpdir);
	assert_int_equal(symlink(target, path), 0);
	refused(path, "a symbolic link");

	if (geteuid() != 0) {
		print_message("not root: a file of another user cannot be made\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/other.map", tmpdir);
	make_map(path, 0644);
	assert_int_equal(chown(path, 65534, 65534), 0);
	refused(path, "owned by uid 65534");	/* not root's, not the asker's */
	assert_int_equal(lstat(path, &st), 0);
	/* ... unless the process runs as that user */
	assert_int_equal(jitmap_check(&st, 65534, path, NULL), 0);
	assert_int_equal(jitmap_check(&st, 65533, path, NULL), -EPERM);
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_live_and_file_agree),
	cmocka_unit_test(test_record_lies_about_size),
	cmocka_unit_test(test_jitmap_trust))
