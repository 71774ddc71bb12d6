/*
 * test_pmu.c - recording where a PMU exists (collect/pmu.c, collect/hwspool.c,
 * docs/collect.md "Hardware evidence"), on machines that have none: the
 * PMU is a constructed sysfs and /proc/cpuinfo under the test's folder and
 * an opener that plays the kernel (accepting or refusing each attribute, and
 * keeping what it was given); the rings' records are built byte by byte and
 * fed to the live session, whose branch stacks must reach the epoch as
 * branch-record counts through the importer, exactly once.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "dcpi/profile.h"
#include "../collect/internal.h"
#include "testutil.h"
#include "tu_main.h"
#include "tu_perf.h"
#include "tu_sess.h"

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	    PERF_SAMPLE_PERIOD)
#define ID_CLOCK 7
#define ID_BR 9
#define BR_PERIOD 1000
#define BASE 0x400000ull
#define PID 100

static char tmpdir[256];

static int setup(void **state)
{
	return tu_ws_setup(state, tmpdir, sizeof(tmpdir), "pmu");
}

/* --- a machine, constructed ------------------------------------------------ */

static void put_file(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A machine: vendor line, cpu flags, and the sysfs files given as pairs
 * (relative path, contents), NULL-terminated. */
static void machine(char *root, size_t len, const char *name, const char *vendor,
		    const char *flags, ...)
{
	char info[512];
	va_list ap;
	const char *rel;

	snprintf(root, len, "%s/%s", tmpdir, name);
	snprintf(info, sizeof(info), "processor\t: 0\nvendor_id\t: %s\ncpu family\t: 25\n"
		 "flags\t\t: fpu sse2 %s\n\n", vendor, flags);
	put_file(root, "proc/cpuinfo", info);
	va_start(ap, flags);
	while ((rel = va_arg(ap, const char *)))
		put_file(root, rel, va_arg(ap, const char *));
	va_end(ap);
}

/* The kernel, played: refuses what its rules say, keeps what it was given. */
struct kernel {
	int no_hw;		/* PERF_TYPE_HARDWARE: EOPNOTSUPP */
	int no_branches;	/* a branch stack: EOPNOTSUPP */
	uint32_t ibs_type;	/* per-task opens of this type: EINVAL */
	struct perf_event_attr seen[16];
	int pid[16];
	int n;
};

static long fake_open(struct perf_event_attr *a, int pid, int cpu, void *arg)
{
	struct kernel *k = arg;

	(void)cpu;
	if (k->n < 16) {
		k->seen[k->n] = *a;
		k->pid[k->n++] = pid;
	}
	errno = EOPNOTSUPP;
	if (k->no_hw && a->type == PERF_TYPE_HARDWARE)
		return -1;
	if (k->no_branches && (a->sample_type & PERF_SAMPLE_BRANCH_STACK))
		return -1;
	errno = EINVAL;
	if (k->ibs_type && a->type == k->ibs_type && pid != -1)
		return -1;
	return 3;
}

static const struct perf_event_attr *seen_type(const struct kernel *k, uint32_t type, int pid)
{
	for (int i = k->n - 1; i >= 0; i--)
		if (k->seen[i].type == type && (pid == -2 || k->pid[i] == pid))
			return &k->seen[i];
	return NULL;
}

/* The machine under root detected, k playing its kernel: p. */
static void detect(const char *root, struct kernel *k, struct collect_pmu *p)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(collect_pmu_detect(root, fake_open, k, p, &err), 0);
}

/* The events p chooses are want (their names, comma-separated). */
static void events_are(const struct collect_pmu *p, const char *want)
{
	const struct collect_event *ev[COLLECT_MAX_EVENTS];
	char out[256] = "";
	unsigned n;

	collect_pmu_events(p, ev, &n);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? "," : "",
			 ev[i]->name);
	assert_string_equal(out, want);
}

/* collect_pmu_describe's line for p holds text. */
static void described(const struct collect_pmu *p, const char *text)
{
	char line[512];

	collect_pmu_describe(p, line, sizeof(line));
	assert_non_null(strstr(line, text));
}

/* This VM's case: no cpu event source: cpu-clock alone, and why. */
static void test_no_pmu(void **state)
{
	struct kernel k = { 0 };
	struct collect_pmu p;
	char root[PATH_MAX];

	(void)state;
	machine(root, sizeof(root), "vm", "AuthenticAMD", "hypervisor", NULL);
	detect(root, &k, &p);
	assert_int_equal(p.hardware, 0);
	assert_int_equal(k.n, 0);		/* nothing was opened */
	events_are(&p, "cpu-clock");
	described(&p, "pmu: none");
	described(&p, "no cpu event source");

	/* a PMU listed whose cycles the hypervisor refuses: the same */
	machine(root, sizeof(root), "vm2", "AuthenticAMD", "", "sys/bus/event_source/devices/cpu/type",
		"4\n", NULL);
	k.no_hw = 1;
	detect(root, &k, &p);
	assert_int_equal(p.hardware, 0);
	assert_non_null(strstr(p.why, "cannot be sampled"));
}

/* Intel with a 32-deep LBR: cycles, instructions, and the retired taken
 * branches (0x20c4) with stacks of every branch kind, user only. */
static void test_intel_lbr(void **state)
{
	struct kernel k = { 0 };
	struct collect_pmu p;
	const struct perf_event_attr *a;
	struct perf_event_attr b;
	char root[PATH_MAX];

	(void)state;
	machine(root, sizeof(root), "intel", "GenuineIntel", "pdcm arch_lbr",
		"sys/bus/event_source/devices/cpu/type", "4\n",
		"sys/bus/event_source/devices/cpu/caps/branches", "32\n", NULL);
	detect(root, &k, &p);
	assert_int_equal(p.hardware, 1);
	assert_int_equal(p.branches, 1);
	assert_int_equal(p.branch_depth, 32);
	assert_string_equal(p.branch_kind, "lbr");
	assert_int_equal(p.ibs, 0);
	events_are(&p, "cycles,instructions,branches-taken");
	a = seen_type(&k, PERF_TYPE_RAW, -2);
	assert_non_null(a);
	assert_int_equal(a->config, 0x20c4);
	assert_true(a->sample_type & PERF_SAMPLE_BRANCH_STACK);
	assert_int_equal(a->branch_sample_type, PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER);
	assert_int_equal(a->exclude_kernel, 1);
	assert_int_equal(a->freq, 0);
	assert_true(a->sample_period > 16);
	/* with kernel code sampled, the stacks hold kernel branches too; a
	 * frequency asked for is a period still (BRS refuses frequency mode) */
	collect_event_attr(&b, &p.branch_ev, 0, 4000, 1);
	assert_int_equal(b.branch_sample_type, PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER |
		PERF_SAMPLE_BRANCH_KERNEL);
	assert_int_equal(b.exclude_kernel, 0);
	assert_int_equal(b.freq, 0);
	assert_int_equal(b.sample_period, p.branch_ev.default_period);
	described(&p, "branch stacks (lbr, 32 entries");

	/* listed but refused (a hypervisor that hides LBR): said, not taken */
	k = (struct kernel){ .no_branches = 1 };
	detect(root, &k, &p);
	assert_int_equal(p.branches, 0);
	assert_non_null(strstr(p.why, "refused"));
	events_are(&p, "cycles,instructions");
}

/* AMD Zen 3: BRS on retired taken branches (0xc4) and IBS op, which this
 * kernel takes per CPU only. */
static void test_amd_brs_ibs(void **state)
{
	struct kernel k = { .ibs_type = 11 };
	struct collect_pmu p;
	const struct perf_event_attr *a;
	struct perf_event_attr b;
	char root[PATH_MAX];

	(void)state;
	machine(root, sizeof(root), "zen3", "AuthenticAMD", "brs ibs",
		"sys/bus/event_source/devices/cpu/type", "4\n",
		"sys/bus/event_source/devices/cpu/caps/branches", "16\n",
		"sys/bus/event_source/devices/ibs_op/type", "11\n", NULL);
	detect(root, &k, &p);
	assert_int_equal(p.branches, 1);
	assert_string_equal(p.branch_kind, "brs");
	assert_int_equal(p.branch_ev.config, 0xc4);
	assert_int_equal(p.ibs, 1);
	assert_int_equal(p.ibs_cpu_wide, 1);
	assert_int_equal(p.ibs_op_type, 11);
	assert_true(p.ibs_ev.flags & COLLECT_EV_CPU_WIDE);
	events_are(&p, "cycles,instructions,branches-taken,ibs_op");
	a = seen_type(&k, 11, -1);		/* the per-CPU open that was taken */
	assert_non_null(a);
	assert_true(a->sample_type & PERF_SAMPLE_RAW);
	assert_int_equal(a->inherit, 0);
	collect_event_attr(&b, &p.ibs_ev, 0, 0, 0);
	assert_int_equal(b.type, 11);
	assert_int_equal(b.enable_on_exec, 0);
	assert_true(b.sample_type & PERF_SAMPLE_RAW);
	described(&p, "ibs_op (per CPU)");

	/* Zen 4's LbrExtV2, IBS per task: no CPU-wide flag */
	machine(root, sizeof(root), "zen4", "AuthenticAMD", "amd_lbr_v2",
		"sys/bus/event_source/devices/cpu/type", "4\n",
		"sys/bus/event_source/devices/cpu/caps/branches", "16\n",
		"sys/bus/event_source/devices/ibs_op/type", "11\n", NULL);
	k = (struct kernel){ 0 };
	detect(root, &k, &p);
	assert_string_equal(p.branch_kind, "lbrv2");
	assert_int_equal(p.ibs, 1);
	assert_int_equal(p.ibs_cpu_wide, 0);
	assert_false(p.ibs_ev.flags & COLLECT_EV_CPU_WIDE);

	/* an Intel machine with ibs_op listed (impossible, but a tree can say
	 * so): IBS is AMD's, never taken */
	machine(root, sizeof(root), "odd", "GenuineIntel", "",
		"sys/bus/event_source/devices/cpu/type", "4\n",
		"sys/bus/event_source/devices/ibs_op/type", "11\n", NULL);
	detect(root, &k, &p);
	assert_int_equal(p.ibs, 0);
	assert_int_equal(p.branches, 0);
}

/* --- the live session's branch stacks into the epoch ------------------------- */

static void put_id(struct tu_pbuf *p)
{
	tu_put32(p, PID), tu_put32(p, PID);
	tu_put64(p, p->time++);
	tu_put64(p, ID_CLOCK);
}

static void rec_mmap2(struct tu_pbuf *p, uint64_t len, const char *name)
{
	size_t pad = (strlen(name) + 1 + 7) & ~(size_t)7;
	char z[8] = { 0 };

	tu_put_hdr(p, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 8 + 64 + pad + 24);
	tu_put32(p, PID), tu_put32(p, PID);
	tu_put64(p, BASE), tu_put64(p, len), tu_put64(p, 0);
	tu_put64(p, 8), tu_put64(p, 1234), tu_put64(p, 0);
	tu_put32(p, 5), tu_put32(p, 2);
	tu_put(p, name, strlen(name));
	tu_put(p, z, pad - strlen(name));
	put_id(p);
}

static void rec_clock(struct tu_pbuf *p, uint64_t ip)
{
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 5 * 8);
	tu_put64(p, ID_CLOCK), tu_put64(p, ip);
	tu_put32(p, PID), tu_put32(p, PID);
	tu_put64(p, p->time++), tu_put64(p, 250000);
}

/* A taken-branch sample of pid with a stack of two: newest (a, b), then
 * (c, d). */
static void rec_branches_of(struct tu_pbuf *p, uint32_t pid, uint64_t a, uint64_t b, uint64_t c,
			    uint64_t d)
{
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 6 * 8 + 2 * 24);
	tu_put64(p, ID_BR), tu_put64(p, a);
	tu_put32(p, pid), tu_put32(p, pid);
	tu_put64(p, p->time++), tu_put64(p, BR_PERIOD);
	tu_put64(p, 2);
	tu_put64(p, a), tu_put64(p, b), tu_put64(p, 0);
	tu_put64(p, c), tu_put64(p, d), tu_put64(p, 0);
}

static void rec_branches(struct tu_pbuf *p, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	rec_branches_of(p, PID, a, b, c, d);
}

static struct collect_event br_ev = {
	"branches-taken", PERF_TYPE_RAW, 0xc4, "events", BR_PERIOD, COLLECT_EV_BRANCHES
};
static int import_calls;
static int import_fails;

static int test_import(const char *perf_data, struct prof_db *db, const char *epoch,
		       char *note, size_t len, struct dcpi_err *err)
{
	struct import_opts io = { 0 };
	struct import_stats st;

	import_calls++;
	if (import_fails)
		return dcpi_errf(err, -EIO, "%s: the importer failed (test)", perf_data);
	memset(&st, 0, sizeof(st));
	io.into_epoch = epoch;
	if (import_perf_opts(perf_data, &io, db, &st, err))
		return -1;
	snprintf(note, len, "imported %llu", (unsigned long long)st.samples);
	return 0;
}

/* What sess_open would set up, without perf_event_open. */
static void live(struct session *s, struct collect_opts *o, struct smp_counter *k,
		 const char *spool, const struct collect_event *ev)
{
	struct dcpi_err err = { 0 };

	memset(o, 0, sizeof(*o));
	o->events[0] = collect_event_find("cpu-clock");
	o->events[1] = ev;
	o->nevents = 2;
	o->fixed_period = 1;
	o->no_calibrate = 1;
	o->no_slices = 1;
	o->hw_import = test_import;
	o->hw_spool_dir = spool;
	o->hw_vendor = "AMD";
	tu_sess_live(s, o, k, ID_CLOCK, ID_BR, ST);
	s->smp.cfg = s->cfg;
	collect_event_attr(&s->smp.attr[0], o->events[0], 250000, 0, 0);
	collect_event_attr(&s->smp.attr[1], ev, BR_PERIOD, 0, 0);
	assert_int_equal(hws_open(&s->hw, spool, &err), 0);
}

/* The profile of event in epoch: its samples in all images. */
static uint64_t event_samples(struct prof_db *db, const char *epoch, const char *event)
{
	struct prof_profile *p;
	struct dcpi_err err = { 0 };
	uint64_t n = 0;
	size_t np;

	assert_int_equal(prof_epoch_read(db, epoch, &p, &np, &err), 0);
	for (size_t i = 0; i < np; i++)
		if (!strcmp(p[i].event, event))
			n += p[i].total;
	prof_profiles_free(p, np);
	return n;
}

static double branch_count(const struct import_lbr *l, uint64_t from, uint64_t to)
{
	for (size_t i = 0; i < l->nbranches; i++)
		if (l->branches[i].from == from && l->branches[i].to == to)
			return l->branches[i].count;
	return -1;
}

/* A live session test's files and results: this program (exe, its size),
 * a new database (db in dbdir), the new spool folder, the epoch written
 * and what the session said of it (res). */
struct live_fx {
	char exe[PATH_MAX], dbdir[PATH_MAX], spool[PATH_MAX], epoch[64];
	uint64_t size;
	struct prof_db *db;
	struct collect_result res;
};

/* f of tmpdir/db_name and tmpdir/spool_name; the importer's calls reset. */
static void live_fx_open(struct live_fx *f, const char *db_name, const char *spool_name)
{
	struct dcpi_err err = { 0 };
	struct stat sb;

	assert_non_null(realpath("/proc/self/exe", f->exe));
	assert_int_equal(stat(f->exe, &sb), 0);
	f->size = (uint64_t)sb.st_size;
	snprintf(f->dbdir, sizeof(f->dbdir), "%s/%s", tmpdir, db_name);
	snprintf(f->spool, sizeof(f->spool), "%s/%s", tmpdir, spool_name);
	assert_int_equal(mkdir(f->spool, 0700), 0);
	assert_int_equal(prof_db_open(f->dbdir, PROF_DB_CREATE, &f->db, &err), 0);
	import_calls = import_fails = 0;
}

/* The records through the session, then its epoch as rec_write_epoch
 * writes it into f: the tables, the hardware evidence, one commit. */
static void commit(struct session *s, struct live_fx *f, const struct tu_pbuf *rec)
{
	struct collect_result *res = &f->res;
	struct dcpi_err err = { 0 };
	uint64_t written;

	assert_int_equal(sess_feed(s, rec->b, rec->n, &err), 0);
	memset(res, 0, sizeof(*res));
	assert_int_equal(prof_db_epoch_new(f->db, f->epoch, sizeof(f->epoch), &err), 0);
	assert_int_equal(prof_epoch_begin(f->db, f->epoch, &err), 0);
	assert_int_equal(sess_write(s, f->db, f->epoch, &written, &err), 0);
	assert_int_equal(sess_hw_import(s, f->db, f->epoch, res->hw_note, sizeof(res->hw_note),
					&res->hw_samples), 0);
	assert_int_equal(prof_epoch_commit(f->db, &err), 0);
	assert_null(s->hw);	/* the spool is closed */
}

/* One recording's records through the session into f: n stacks of
 * (A->B, C->D) and m of (A->B, E->F), clock samples between. */
static void record(struct live_fx *f, int n, int m)
{
	static struct tu_pbuf buf;
	struct session s;
	struct collect_opts o;
	struct smp_counter k[2];
	struct dcpi_err err = { 0 };

	live(&s, &o, k, f->spool, &br_ev);
	memset(&buf, 0, sizeof(buf));
	rec_mmap2(&buf, f->size, f->exe);
	for (int i = 0; i < n + m; i++) {
		rec_clock(&buf, BASE + 0x1010);
		if (i < n)
			rec_branches(&buf, BASE + 0x1100, BASE + 0x1040, BASE + 0x1080, BASE + 0x1000);
		else
			rec_branches(&buf, BASE + 0x1100, BASE + 0x1040, BASE + 0x1200, BASE + 0x1000);
	}
	commit(&s, f, &buf);
	/* dcpid's next interval gets a file of its own, gone at the end */
	assert_int_equal(sess_hw_restart(&s, &err), 0);
	assert_non_null(s.hw);
	sess_free(&s);
}

/* An IBS op sample (PERF_SAMPLE_RAW: caps, then the seven op registers) of
 * a load at ip that missed to DRAM after lat cycles. */
static void rec_ibs(struct tu_pbuf *p, uint32_t pid, uint64_t ip, uint64_t lat, uint64_t addr)
{
	uint64_t r[7] = { 1ull << 18 | 1ull << 17 | 0x100, ip, (lat + 40) << 16 | 2, 3,
			  1ull | 1ull << 7 | 1ull << 17 | 1ull << 20 | 3ull << 22 | lat << 32,
			  addr, 0 };
	uint32_t caps = 1u << 0 | 1u << 2 | 1u << 7;	/* avail, op sampling, rip check */

	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 5 * 8 + 4 + 4 + 56);
	tu_put64(p, ID_BR), tu_put64(p, ip);
	tu_put32(p, pid), tu_put32(p, pid);
	tu_put64(p, p->time++), tu_put64(p, BR_PERIOD);
	tu_put32(p, 4 + 56);
	tu_put32(p, caps);
	tu_put(p, r, 56);
}

static struct collect_event ibs_ev = {
	"ibs_op", 11, 0, "events", BR_PERIOD, COLLECT_EV_RAW | COLLECT_EV_CPU_WIDE
};

/* IBS op samples through the live session: measured D-cache misses in the
 * epoch, as the importer makes them from a perf.data (test_ibs.c).  Taken
 * per CPU, IBS samples every process: another's are left out (counted in
 * the settings), not named from /proc, not imported. */
static void test_live_ibs(void **state)
{
	static struct tu_pbuf buf;
	static struct live_fx f;
	struct session s;
	struct collect_opts o;
	struct smp_counter k[2];

	(void)state;
	live_fx_open(&f, "dbi", "spooli");
	live(&s, &o, k, f.spool, &ibs_ev);
	memset(&buf, 0, sizeof(buf));
	rec_mmap2(&buf, f.size, f.exe);
	for (int i = 0; i < 24; i++) {
		rec_clock(&buf, BASE + 0x1010);
		rec_ibs(&buf, PID, BASE + 0x1008, 300, 0x7f1200000000ull + 4096ull * (uint64_t)i);
		rec_ibs(&buf, (uint32_t)getpid(), BASE + 0x1008, 300, 0x7f1200000000ull);
	}
	commit(&s, &f, &buf);
	assert_int_equal(s.foreign, 24);
	sess_free(&s);
	assert_int_equal(import_calls, 1);
	assert_int_equal(f.res.hw_samples, 24);
	assert_int_equal(event_samples(f.db, f.epoch, "ibs_op"), 24);	/* once */
	assert_true(event_samples(f.db, f.epoch, "ibs-dc-miss-latency") > 0);
	prof_db_close(f.db);
	assert_int_equal(rmdir(f.spool), 0);
}

/* addr's file offset in this process, from /proc/self/maps. */
static uint64_t self_offset(uint64_t addr)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t off = UINT64_MAX;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, pg;

		if (sscanf(line, "%llx-%llx %*s %llx", &a, &b, &pg) == 3 && addr >= a && addr < b)
			off = addr - a + pg;
	}
	fclose(f);
	assert_true(off != UINT64_MAX);
	return off;
}

/*
 * A process that ran before the counters (dcpid, attach): no MMAP2 of it
 * in the rings.  Its maps are synthesized from /proc when its first
 * evidence sample is kept, so the branches still name their image: here
 * this test process, between two of its own functions.
 */
static void test_live_synth(void **state)
{
	static struct tu_pbuf buf;
	static struct live_fx f;
	struct dcpi_err err = { 0 };
	struct session s;
	struct collect_opts o;
	struct smp_counter k[2];
	struct prof_image_id id;
	struct import_lbr l;
	uint64_t a = (uint64_t)(uintptr_t)&test_live_synth, b = (uint64_t)(uintptr_t)&setup;
	uint32_t me = (uint32_t)getpid();

	(void)state;
	live_fx_open(&f, "dbs", "spools");
	live(&s, &o, k, f.spool, &br_ev);
	memset(&buf, 0, sizeof(buf));
	for (int i = 0; i < 8; i++)
		rec_branches_of(&buf, me, a, b, b + 16, a);
	commit(&s, &f, &buf);
	sess_free(&s);
	assert_int_equal(f.res.hw_samples, 8);
	assert_int_equal(prof_image_id_from_file(&id, f.exe, &err), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(import_read_lbr(f.db, f.epoch, &id, &l, &err), 0);
	assert_true(branch_count(&l, self_offset(a), self_offset(b)) == 8.0 * BR_PERIOD / 2);
	assert_true(branch_count(&l, self_offset(b + 16), self_offset(a)) == 8.0 * BR_PERIOD / 2);
	import_lbr_free(&l);
	prof_db_close(f.db);
	assert_int_equal(rmdir(f.spool), 0);
}

static void test_live_branches(void **state)
{
	static struct live_fx f;
	struct dcpi_err err = { 0 };
	struct prof_image_id id;
	struct import_lbr l;

	(void)state;
	live_fx_open(&f, "db", "spool");
	record(&f, 30, 10);
	assert_int_equal(rmdir(f.spool), 0);	/* imported: nothing left in its folder */
	assert_int_equal(import_calls, 1);
	assert_int_equal(f.res.hw_samples, 40);
	assert_non_null(strstr(f.res.hw_note, "imported 40"));
	/* the pc samples once: the collector's, not again the importer's */
	assert_int_equal(event_samples(f.db, f.epoch, "branches-taken"), 40);
	assert_int_equal(event_samples(f.db, f.epoch, "cpu-clock"), 40);
	/* every entry one taken branch; a stack of two stands for the period's
	 * taken branches, half each */
	assert_int_equal(prof_image_id_from_file(&id, f.exe, &err), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(import_read_lbr(f.db, f.epoch, &id, &l, &err), 0);
	assert_int_equal(l.stacks, 40);
	assert_int_equal(l.taken, 1);
	assert_true(branch_count(&l, 0x1100, 0x1040) == 40.0 * BR_PERIOD / 2);
	assert_true(branch_count(&l, 0x1080, 0x1000) == 30.0 * BR_PERIOD / 2);
	assert_true(branch_count(&l, 0x1200, 0x1000) == 10.0 * BR_PERIOD / 2);
	import_lbr_free(&l);
	prof_db_close(f.db);
}

/* The importer fails: the epoch keeps the collector's samples, and the
 * perf.data is kept under a new name that dcpi import reads. */
static void test_import_fails(void **state)
{
	static struct live_fx f;
	struct prof_db *db;
	struct dcpi_err err = { 0 };
	struct import_stats st;
	char dbdir[PATH_MAX], kept[PATH_MAX + 80];
	struct stat sb;

	(void)state;
	live_fx_open(&f, "db2", "spool2");
	import_fails = 1;
	record(&f, 5, 0);
	snprintf(kept, sizeof(kept), "%s/hw-%s.perf.data", f.spool, f.epoch);
	assert_int_equal(import_calls, 1);
	assert_non_null(strstr(f.res.hw_note, "not imported"));
	assert_non_null(strstr(f.res.hw_note, kept));
	assert_int_equal(event_samples(f.db, f.epoch, "cpu-clock"), 5);
	prof_db_close(f.db);
	/* the kept file is a perf.data the importer reads whole */
	assert_int_equal(stat(kept, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	snprintf(dbdir, sizeof(dbdir), "%s/db3", tmpdir);
	assert_int_equal(prof_db_open(dbdir, PROF_DB_CREATE, &db, &err), 0);
	memset(&st, 0, sizeof(st));
	assert_int_equal(import_perf(kept, db, &st, &err), 0);
	assert_int_equal(st.samples, 5);	/* the evidence samples, only they were kept */
	prof_db_close(db);
	import_fails = 0;
}

/* -e names the PMU's events too; where they are not offered (this VM), the
 * command says so and runs nothing, and an unknown name lists them. */
static void test_events_named(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char cmd[PATH_MAX * 2], text[4096];
	struct stat sb;

	(void)state;
	if (!dcpi)
		skip();
	snprintf(cmd, sizeof(cmd), "'%s' record -e nope -- true 2>&1", dcpi);
	assert_int_not_equal(tu_sh_out(cmd, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "nope: unknown event"));
	assert_non_null(strstr(text, "branches-taken, ibs_op"));
	if (!stat("/sys/bus/event_source/devices/cpu", &sb))
		return;		/* a PMU: whether it offers them is the machine's */
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' record -e cpu-clock,branches-taken -- true 2>&1",
		 tmpdir, dcpi);
	assert_int_not_equal(tu_sh_out(cmd, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "branches-taken: not offered on this machine"));
	snprintf(cmd, sizeof(cmd), "%s/dcpidb", tmpdir);
	assert_int_not_equal(stat(cmd, &sb), 0);	/* nothing recorded */
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_no_pmu),
	cmocka_unit_test(test_intel_lbr),
	cmocka_unit_test(test_amd_brs_ibs),
	cmocka_unit_test(test_live_branches),
	cmocka_unit_test(test_live_ibs),
	cmocka_unit_test(test_live_synth),
	cmocka_unit_test(test_import_fails),
	cmocka_unit_test(test_events_named))
