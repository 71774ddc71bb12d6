/*
 * test_import.c - the perf.data and callgrind importers against independent
 * truth: perf report's sample counts per procedure, objdump's addresses with
 * a loop of known trip counts, callgrind_annotate's per-function totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <linux/perf_event.h>

#include <cmocka.h>

#include "testutil.h"
#include "tu_perf.h"

#include "dcpi/collect.h"
#include "dcpi/image.h"
#include "dcpi/import.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "tu_main.h"

struct named_count {
	char name[256];
	uint64_t count;
};

static char tmpdir[256];
static char build[512];

static int setup(void **state)
{
	const char *b = getenv("DCPI_BUILD");

	if (tu_ws_setup(state, tmpdir, sizeof(tmpdir), "import"))
		return -1;
	snprintf(build, sizeof(build), "%s", b ? b : "build");
	return 0;
}

static struct prof_db *fresh_db(const char *name)
{
	char dir[512];
	struct prof_db *db = NULL;
	struct dcpi_err err = { 0 };

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	return db;
}

/* The profile of (image path ending in suffix, event) in the epoch, or NULL. */
static struct prof_profile *find_profile(struct prof_profile *v, size_t n, const char *suffix,
					 const char *event)
{
	for (size_t i = 0; i < n; i++) {
		size_t lp = strlen(v[i].image.path), ls = strlen(suffix);

		if (lp >= ls && !strcmp(v[i].image.path + lp - ls, suffix) &&
		    !strcmp(v[i].event, event))
			return &v[i];
	}
	return NULL;
}

static void add_named(struct named_count *v, size_t *n, size_t cap, const char *name,
		      uint64_t c)
{
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(v[i].name, name)) {
			v[i].count += c;
			return;
		}
	}
	assert_true(*n < cap);
	snprintf(v[*n].name, sizeof(v[*n].name), "%s", name);
	v[(*n)++].count = c;
}

/* Our samples per procedure of one image, through image.h. */
static size_t per_proc(const struct prof_profile *p, const char *elf, struct named_count *v,
		       size_t cap)
{
	struct image *img = NULL;
	struct dcpi_err err = { 0 };
	size_t n = 0;

	assert_int_equal(img_open(elf, IMG_NO_DWARF, &img, &err), 0);
	for (size_t i = 0; i < p->n; i++) {
		const struct img_proc *pr;
		uint64_t va;

		if (img_offset_to_vaddr(img, p->e[i].offset, &va))
			continue;
		pr = img_proc_at(img, va);
		add_named(v, &n, cap, pr ? pr->name : "?", p->e[i].count);
	}
	img_close(img);
	return n;
}

static uint64_t named(const struct named_count *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return v[i].count;
	return 0;
}

/* --- perf.data ---------------------------------------------------------------- */

static int record_perf(char *data, size_t len)
{
	snprintf(data, len, "%s/perf.data", tmpdir);
	if (!access(data, R_OK))
		return 0;	/* recorded by an earlier test */
	if (access("/usr/bin/perf", X_OK) && tu_sh("command -v perf >/dev/null 2>&1"))
		return -1;
	return tu_sh("perf record -q -e cpu-clock -c 250000 -o '%s' -- '%s/workloads/demo_work' 1 "
		   ">/dev/null 2>&1", data, build) ? -1 : 0;
}

static void test_perf_matches_report(void **state)
{
	char data[512], line[1024], elf[1024];
	struct named_count ours[64], theirs[64];
	size_t nours, ntheirs = 0, np, checked = 0;
	struct prof_profile *v, *p;
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	struct utsname u;
	FILE *f;

	if (record_perf(data, sizeof(data))) {
		print_message("perf cannot record here: skipping\n");
		skip();
	}
	db = fresh_db("perfdb");
	assert_int_equal(import_file(data, db, &st, &err), 0);
	assert_int_equal(st.kind, IMPORT_PERF);
	assert_true(st.samples > 100);
	assert_int_equal(st.truncated, 0);
	/* what calibrating at import rests on: perf's own header */
	assert_int_equal(uname(&u), 0);
	assert_string_equal(st.hostname, u.nodename);
	assert_string_equal(st.event, "cpu-clock");
	assert_int_equal(st.period_ns, 1);
	assert_true(st.period == 250000);
	assert_int_equal(prof_epoch_read(db, st.epoch, &v, &np, &err), 0);
	p = find_profile(v, np, "/workloads/demo_work", "cpu-clock");
	assert_non_null(p);
	assert_int_equal((int)p->period, 250000);
	assert_string_equal(p->period_unit, "ns");
	snprintf(elf, sizeof(elf), "%s/workloads/demo_work", build);
	nours = per_proc(p, elf, ours, 64);

	f = tu_popen("perf report -i '%s' --stdio --sort dso,sym -n "
		     "--no-children 2>/dev/null", data);
	while (fgets(line, sizeof(line), f)) {
		char dso[256], sym[256];
		unsigned long long n;
		double pct;

		if (sscanf(line, " %lf%% %llu %255s [.] %255s", &pct, &n, dso, sym) == 4 &&
		    !strcmp(dso, "demo_work"))
			add_named(theirs, &ntheirs, 64, sym, n);
	}
	pclose(f);
	assert_true(ntheirs >= 3);
	for (size_t i = 0; i < ntheirs; i++) {
		if (theirs[i].count < 10)
			continue;
		print_message("%-28s perf %6" PRIu64 "  dcpi %6" PRIu64 "\n", theirs[i].name,
			      theirs[i].count, named(ours, nours, theirs[i].name));
		assert_int_equal(named(ours, nours, theirs[i].name), theirs[i].count);
		checked++;
	}
	assert_true(checked >= 3);
	prof_profiles_free(v, np);
	prof_db_close(db);
}

/*
 * A perf.data recorded here is calibrated at import the way dcpi record
 * calibrates: the known-cycle loop under the same event and period.  One
 * sample is then worth less than period x clock (the sampling overhead is
 * charged to the sampled program) but not far less, and dcpicalc says so.
 */
static void test_perf_calibrated_at_import(void **state)
{
	char data[512], dbdir[600], out[700];
	const char *dcpi = getenv("DCPI_BIN");
	struct dcpi_err err = { 0 };
	double cps = 0, cpns = 0;
	FILE *f;
	char line[512];
	int said = 0;

	if (record_perf(data, sizeof(data))) {
		print_message("perf cannot record here: skipping\n");
		skip();
	}
	assert_int_equal(collect_calibrate("cpu-clock", 250000, 100, &cps, &cpns, &err), 0);
	print_message("cpu-clock every 250 us = %.0f cycles, clock %.3f GHz (period x clock %.0f)\n",
		      cps, cpns, 250000 * cpns);
	/* under valgrind the loop runs emulated: its clock is valgrind's */
	if (!getenv("TEST_WRAPPER") || !strstr(getenv("TEST_WRAPPER"), "valgrind")) {
		assert_true(cpns > 0.5 && cpns < 8);
		assert_true(cps > 0.5 * 250000 * cpns && cps < 1.05 * 250000 * cpns);
	} else {
		assert_true(cpns > 0 && cps > 0);
	}
	assert_int_equal(collect_calibrate("no-such-event", 1000, 10, &cps, &cpns, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no-such-event"));

	if (!dcpi)
		skip();
	snprintf(dbdir, sizeof(dbdir), "%s/calibdb", tmpdir);
	snprintf(out, sizeof(out), "%s/calib.out", tmpdir);
	assert_int_equal(tu_sh("'%s' import --db '%s' '%s' > '%s' 2>&1 && '%s' calc --db '%s' "
			       "mix_chain >> '%s' 2>&1", dcpi, dbdir, data, out, dcpi, dbdir, out), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		double v;

		if (strstr(line, "calibrated at import (recorded on this host)"))
			said |= 1;
		if (sscanf(line, "1 sample = %lf cycles (calibrated)", &v) == 1 && v > 0)
			said |= 2;
	}
	fclose(f);
	assert_int_equal(said, 3);
	/* --no-calibrate keeps the old behaviour: relative counts */
	assert_int_equal(tu_sh("rm -rf '%s' && '%s' import --no-calibrate --db '%s' '%s' >/dev/null "
			       "2>&1 && '%s' calc --db '%s' mix_chain 2>&1 | grep -q 'uncalibrated'",
			       dbdir, dcpi, dbdir, data, dcpi, dbdir), 0);
}

static void test_perf_truncated(void **state)
{
	char data[512], half[600];
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	long size;
	FILE *f;
	int ret;

	if (record_perf(data, sizeof(data))) {
		print_message("perf cannot record here: skipping\n");
		skip();
	}
	f = fopen(data, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	snprintf(half, sizeof(half), "%s/half.data", tmpdir);
	assert_int_equal(tu_sh("head -c %ld '%s' > '%s'", size / 2, data, half), 0);
	db = fresh_db("halfdb");
	ret = import_perf(half, db, &st, &err);
	if (ret) {
		assert_non_null(strstr(err.msg, half));
	} else {
		assert_int_equal(st.truncated, 1);
		assert_true(st.note[0] != '\0');
		assert_true(st.samples > 0);
	}
	prof_db_close(db);
}

/* Cut before its first sample: an error naming the file, and no epoch
 * (an empty newest epoch would stand in front of the good ones). */
static void test_perf_cut_before_samples(void **state)
{
	char data[512], cut[600];
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char **names;
	size_t n;

	(void)state;
	if (record_perf(data, sizeof(data))) {
		print_message("perf cannot record here: skipping\n");
		skip();
	}
	snprintf(cut, sizeof(cut), "%s/cut.data", tmpdir);
	assert_int_equal(tu_sh("head -c 300 '%s' > '%s'", data, cut), 0);
	db = fresh_db("cutdb");
	assert_int_equal(import_perf(cut, db, &st, &err), -ENODATA);
	assert_non_null(strstr(err.msg, cut));
	assert_non_null(strstr(err.msg, "no samples"));
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	assert_int_equal(n, 0);
	free(names);
	prof_db_close(db);
}

/*
 * perf report names libc's and ld.so's procedures from their separate debug
 * files (libc6-dbg); dcpi must too, with the same samples for every symbol
 * perf names (sort spends its time in libc's string compares).
 */
static void test_perf_names_as_report(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	char data[600], line[1024];
	struct named_count ours[256], theirs[256];
	size_t nours = 0, ntheirs = 0, libs = 0;
	FILE *f;

	(void)state;
	if (!bin || tu_sh("command -v perf >/dev/null 2>&1") ||
	    tu_sh("dpkg -s libc6-dbg >/dev/null 2>&1")) {
		print_message("no perf, dcpi or libc6-dbg: skipping\n");
		skip();
	}
	snprintf(data, sizeof(data), "%s/sort.data", tmpdir);
	if (tu_sh("seq 300000 | shuf --random-source=/dev/zero > %s/in.txt && "
		  "perf record -q -e cpu-clock -c 250000 -o %s -- sort %s/in.txt > /dev/null 2>&1",
		  tmpdir, data, tmpdir)) {
		print_message("perf cannot record here: skipping\n");
		skip();
	}
	assert_int_equal(tu_sh("%s import %s --db %s/sortdb > /dev/null 2>&1", bin, data, tmpdir),
			 0);
	f = tu_popen("%s prof --db %s/sortdb --json", bin, tmpdir);
	while (fgets(line, sizeof(line), f)) {
		char name[256];
		unsigned long long n;
		const char *c = strstr(line, "\"cpu-clock\": ");

		if (sscanf(line, "  {\"name\": \"%255[^\"]\"", name) == 1 && c &&
		    sscanf(c + 13, "%llu", &n) == 1)
			add_named(ours, &nours, 256, name, n);
	}
	assert_int_equal(pclose(f), 0);
	f = tu_popen("perf report -i %s --stdio -F sample,sym 2>/dev/null", data);
	while (fgets(line, sizeof(line), f)) {
		char sym[256];
		unsigned long long n;

		/* user-space symbols perf names (not its raw addresses) */
		if (sscanf(line, " %llu [.] %255s", &n, sym) == 2 && strncmp(sym, "0x", 2))
			add_named(theirs, &ntheirs, 256, sym, n);
	}
	pclose(f);
	assert_true(ntheirs >= 3);
	for (size_t i = 0; i < ntheirs; i++) {
		size_t len = strlen(theirs[i].name);

		print_message("%-36s perf %6" PRIu64 "  dcpi %6" PRIu64 "\n", theirs[i].name,
			      theirs[i].count, named(ours, nours, theirs[i].name));
		/* perf names libc's PLT stubs in .rela.plt order, which is not
		 * the stubs' (its __tls_get_addr@plt sits on an IRELATIVE stub,
		 * objdump's *ABS*+0x9c6a0@plt, or a bare "@plt"); dcpi decodes
		 * each stub, as objdump does: those names may differ, nothing
		 * else may */
		if (len >= 4 && !strcmp(theirs[i].name + len - 4, "@plt") &&
		    named(ours, nours, theirs[i].name) != theirs[i].count)
			continue;
		assert_int_equal(named(ours, nours, theirs[i].name), theirs[i].count);
		libs += !strncmp(theirs[i].name, "__str", 5) || !strncmp(theirs[i].name, "__mem", 5);
	}
	assert_true(libs >= 1);		/* libc's, named from libc6-dbg */
}

static void test_perf_bad_magic(void **state)
{
	char path[600];
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db = fresh_db("baddb");
	char **names;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/bad.data", tmpdir);
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs("PERFILE3", f);
	for (int i = 0; i < 200; i++)
		fputc(0, f);
	fclose(f);
	assert_int_equal(import_perf(path, db, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "magic"));
	dcpi_err_clear(&err);
	assert_true(import_file(path, db, &st, &err) < 0);
	assert_non_null(strstr(err.msg, path));
	/* no epoch is left behind by a rejected file */
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	assert_int_equal(n, 0);
	prof_names_free(names, n);
	prof_db_close(db);
}

/* --- callgrind ------------------------------------------------------------------ */

struct insn {
	uint64_t addr;
	char op[16];
	uint64_t target;	/* of a jump, 0 if none */
};

/* tiny_loop's instructions from objdump. */
static size_t objdump_fn(const char *elf, const char *fn, struct insn *v, size_t cap)
{
	char line[512], head[300];
	size_t n = 0;
	int in = 0;
	FILE *f = tu_popen("objdump -d --no-show-raw-insn '%s'", elf);

	snprintf(head, sizeof(head), "<%s>:", fn);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, t;
		char op[16];

		if (strstr(line, head)) {
			in = 1;
			continue;
		}
		if (!in)
			continue;
		if (line[0] == '\n')
			break;
		if (sscanf(line, " %llx: %15s", &a, op) != 2 || n == cap)
			continue;
		v[n].addr = a;
		snprintf(v[n].op, sizeof(v[n].op), "%s", op);
		v[n].target = 0;
		if (op[0] == 'j' && sscanf(line, " %*x: %*s %llx", &t) == 1)
			v[n].target = t;
		n++;
	}
	pclose(f);
	return n;
}

/* callgrind_annotate's self Ir per function of one object. */
static size_t annotate(const char *out, const char *elf, struct named_count *v, size_t cap)
{
	char line[2048], tail[1100];
	size_t n = 0;
	FILE *f = tu_popen("callgrind_annotate --threshold=100 '%s' 2>/dev/null", out);

	snprintf(tail, sizeof(tail), " [%s]", elf);
	while (fgets(line, sizeof(line), f)) {
		char num[64], *colon, *end;
		uint64_t c = 0;

		line[strcspn(line, "\n")] = '\0';
		end = strstr(line, tail);
		if (!end || end[strlen(tail)] || sscanf(line, " %63s", num) != 1)
			continue;
		*end = '\0';
		for (char *p = num; *p; p++)
			if (*p >= '0' && *p <= '9')
				c = 10 * c + (uint64_t)(*p - '0');
		colon = strrchr(line, ':');
		if (colon)
			add_named(v, &n, cap, colon + 1, c);
	}
	pclose(f);
	return n;
}

static void test_callgrind_exact(void **state)
{
	char elf[1024], out[600];
	struct insn ins[64];
	struct named_count ours[128], theirs[128];
	struct prof_profile *v, *p;
	struct import_stats st;
	struct import_jump *j;
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	struct prof_db *db;
	size_t n, np, nj, nours, ntheirs, head = 0, back = 0, arm = 0;
	uint64_t sum_ours = 0, sum_theirs = 0, off, off2;
	int found = 0;

	snprintf(elf, sizeof(elf), "%s/workloads/tinyloop", build);
	snprintf(out, sizeof(out), "%s/cg.out", tmpdir);
	if (tu_sh("valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes "
		"--callgrind-out-file='%s' '%s' >/dev/null 2>&1", out, elf)) {
		print_message("valgrind cannot run here: skipping\n");
		skip();
	}
	db = fresh_db("cgdb");
	assert_int_equal(import_file(out, db, &st, &err), 0);
	assert_int_equal(st.kind, IMPORT_CALLGRIND);
	assert_int_equal(prof_epoch_read(db, st.epoch, &v, &np, &err), 0);
	p = find_profile(v, np, "/workloads/tinyloop", "callgrind-Ir");
	assert_non_null(p);
	assert_int_equal(img_open(elf, IMG_NO_DWARF, &img, &err), 0);

	/* the loop: head = target of the backward jump; arm = skipped by a
	 * forward jump inside the loop.  1000 trips, the arm 250 times. */
	n = objdump_fn(elf, "tiny_loop", ins, 64);
	assert_true(n > 5);
	for (size_t i = 0; i < n; i++)
		if (ins[i].target && ins[i].target < ins[i].addr)
			back = i;
	assert_true(back > 0);
	for (size_t i = 0; i < back; i++)
		if (ins[i].addr == ins[back].target)
			head = i;
	for (size_t i = head; i <= back; i++) {
		uint64_t want = 1000;

		for (size_t k = head; k < i; k++)
			if (ins[k].target > ins[k].addr && ins[i].addr < ins[k].target)
				want = 250;
		arm += want == 250;
		assert_int_equal(img_vaddr_to_offset(img, ins[i].addr, &off), 0);
		print_message("%#" PRIx64 " %-6s callgrind-Ir %" PRIu64 " want %" PRIu64 "\n",
			      ins[i].addr, ins[i].op, prof_profile_count(p, off), want);
		assert_int_equal(prof_profile_count(p, off), want);
	}
	assert_true(arm >= 1);

	/* the back-edge: taken 999 times of 1000 */
	assert_int_equal(import_read_jumps(db, st.epoch, &p->image, &j, &nj, &err), 0);
	assert_int_equal(img_vaddr_to_offset(img, ins[back].addr, &off), 0);
	assert_int_equal(img_vaddr_to_offset(img, ins[back].target, &off2), 0);
	for (size_t i = 0; i < nj; i++) {
		if (j[i].from == off && j[i].to == off2) {
			assert_int_equal(j[i].count, 999);
			assert_int_equal(j[i].executed, 1000);
			assert_true(j[i].conditional);
			found = 1;
		}
	}
	assert_true(found);
	free(j);

	/* per-function self cost and the object's total against callgrind_annotate */
	nours = per_proc(p, elf, ours, 128);
	ntheirs = annotate(out, elf, theirs, 128);
	assert_true(ntheirs >= 2);
	for (size_t i = 0; i < nours; i++)
		sum_ours += ours[i].count;
	for (size_t i = 0; i < ntheirs; i++)
		sum_theirs += theirs[i].count;
	print_message("tinyloop Ir: dcpi %" PRIu64 " callgrind_annotate %" PRIu64 "\n",
		      sum_ours, sum_theirs);
	assert_int_equal(sum_ours, sum_theirs);
	assert_int_equal(named(ours, nours, "tiny_loop"), named(theirs, ntheirs, "tiny_loop"));
	assert_int_equal(named(ours, nours, "main"), named(theirs, ntheirs, "main"));
	img_close(img);
	prof_profiles_free(v, np);
	prof_db_close(db);
}

static void test_callgrind_bad_line(void **state)
{
	char path[600];
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db = fresh_db("cgbad");

	snprintf(path, sizeof(path), "%s/bad.cg", tmpdir);
	tu_write_text(path, "# callgrind format\nversion: 1\npositions: instr line\nevents: Ir\n"
		      "ob=(1) /bin/true\nfn=(1) main\n0x10 1 5\n+2 * zz\n");
	assert_int_equal(import_file(path, db, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "line 8"));
	prof_db_close(db);
}

/* --- branch stacks (perf record -b) -> path profiles ------------------------------ */

/* One user-mode SAMPLE at ip with a branch stack (newest first). */
static void put_stack(struct tu_pbuf *p, uint64_t ip, uint64_t time, const uint64_t (*br)[2],
		      size_t n)
{
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
		   (uint16_t)(8 + 8 + 8 + 8 + 8 + 8 + 8 + 24 * n));
	tu_put64(p, ip);
	tu_put32(p, 42), tu_put32(p, 42);		/* pid, tid */
	tu_put64(p, time);
	tu_put64(p, 100000);			/* period */
	tu_put64(p, n);				/* bnr */
	tu_put64(p, 0);				/* hw_idx */
	for (size_t k = 0; k < n; k++) {
		tu_put64(p, br[k][0]);
		tu_put64(p, br[k][1]);
		tu_put64(p, 0);			/* flags */
	}
}

/*
 * A perf.data built byte by byte: one cpu-clock attribute with
 * PERF_SAMPLE_BRANCH_STACK (any branch, user, hw_idx), an MMAP of a file
 * holding loop_if (tests/loop_if.h) at file offset 0x1000, and stacks of
 * its iterations.  The taken branches land as transitions at file offsets,
 * the straight-line code between two entries gives the not-taken branch
 * inside it, and a branch from the kernel enters from PATH_ELSEWHERE.
 */
static void test_perf_branch_stacks(void **state)
{
	static const uint8_t loop_if_code[] = {
		0x31, 0xc0, 0x31, 0xc9, 0xf6, 0xc1, 0x03, 0x75, 0x05, 0x48, 0x01, 0xc8, 0xeb,
		0x03, 0x48, 0x31, 0xc8, 0x48, 0x8d, 0x04, 0x40, 0x48, 0x83, 0xc1, 0x01, 0x48,
		0x81, 0xf9, 0xe8, 0x03, 0x00, 0x00, 0x75, 0xe2, 0xc3,
	};
	const uint64_t B = 0x400000;	/* mapped at B, file offset 0 */
	const uint64_t s1[][2] = {	/* newest first */
		{ B + 0x1020, B + 0x1004 }, { B + 0x100c, B + 0x1011 },
		{ B + 0x1020, B + 0x1004 }, { B + 0x1007, B + 0x100e },
		{ B + 0x1020, B + 0x1004 },
	};
	const uint64_t s2[][2] = {
		{ B + 0x1007, B + 0x100e },			/* range 0x1004 -> 0x1007 */
		{ 0xffffffff81000000ull, B + 0x1004 },		/* from the kernel */
		{ B + 0x1020, 0x7f0000001000ull },		/* to nothing mapped */
	};
	struct tu_pbuf *p = calloc(1, sizeof(*p));
	struct perf_event_attr attr;
	char code[600], data[600], mm[600];
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct path_profile *pp = NULL;
	struct prof_db *db;
	size_t npp = 0, data_at, mlen;
	FILE *f;

	(void)state;
	assert_non_null(p);
	snprintf(code, sizeof(code), "%s/code.bin", tmpdir);
	f = fopen(code, "wb");
	assert_non_null(f);
	for (int i = 0; i < 0x1000; i++)
		fputc(0x90, f);
	fwrite(loop_if_code, 1, sizeof(loop_if_code), f);
	for (int i = 0; i < 0x1000; i++)
		fputc(0xcc, f);
	fclose(f);

	tu_sw_attr(&attr, PERF_COUNT_SW_CPU_CLOCK, 100000, PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		   PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_BRANCH_STACK);
	attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER |
				  PERF_SAMPLE_BRANCH_HW_INDEX;
	/* header: magic, size, attr_size, attrs, data, event_types, features */
	tu_put(p, "PERFILE2", 8);
	tu_put64(p, 104);
	tu_put64(p, sizeof(attr) + 16);
	tu_put64(p, 104), tu_put64(p, sizeof(attr) + 16);
	data_at = 104 + sizeof(attr) + 16;
	tu_put64(p, data_at), tu_put64(p, 0);		/* data size patched below */
	tu_put64(p, 0), tu_put64(p, 0);
	for (int i = 0; i < 4; i++)
		tu_put64(p, 0);
	tu_put(p, &attr, sizeof(attr));
	tu_put64(p, 0), tu_put64(p, 0);		/* no ids */
	assert_int_equal(p->n, data_at);
	/* MMAP of code.bin at B */
	snprintf(mm, sizeof(mm), "%s", code);
	mlen = (strlen(mm) + 1 + 7) & ~(size_t)7;
	tu_put_hdr(p, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, (uint16_t)(8 + 32 + mlen));
	tu_put32(p, 42), tu_put32(p, 42);
	tu_put64(p, B), tu_put64(p, 0x3000), tu_put64(p, 0);
	memset(mm + strlen(mm), 0, sizeof(mm) - strlen(mm));
	tu_put(p, mm, mlen);
	put_stack(p, B + 0x1011, 1000, s1, 5);
	put_stack(p, B + 0x1011, 2000, s1, 5);
	put_stack(p, B + 0x100e, 3000, s2, 3);
	{
		uint64_t dsize = p->n - data_at;

		memcpy(p->b + 48, &dsize, 8);
	}
	snprintf(data, sizeof(data), "%s/branches.data", tmpdir);
	f = fopen(data, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p->b, 1, p->n, f), p->n);
	fclose(f);

	db = fresh_db("brdb");
	assert_int_equal(import_perf(data, db, &st, &err), 0);
	assert_int_equal(st.samples, 3);
	assert_non_null(strstr(st.note, "3 branch stacks"));
	assert_int_equal(path_epoch_read(db, st.epoch, &pp, &npp, &err), 0);
	assert_int_equal(npp, 1);
	assert_non_null(strstr(pp[0].image.path, "code.bin"));
	assert_true(pp[0].flags & PATH_F_TAKEN_ONLY);
	assert_int_equal(pp[0].bursts, 3);
	assert_int_equal(path_profile_edge(&pp[0], 0x1020, 0x1004), 6);
	assert_int_equal(path_profile_edge(&pp[0], 0x100c, 0x1011), 2);
	assert_int_equal(path_profile_edge(&pp[0], 0x1007, 0x100e), 3);
	/* the fall-through B -> C, from the range 0x1004 .. 0x100c of each s1 */
	assert_int_equal(path_profile_edge(&pp[0], 0x1007, 0x1009), 2);
	assert_int_equal(path_profile_edge(&pp[0], PATH_ELSEWHERE, 0x1004), 1);
	assert_int_equal(path_profile_edge(&pp[0], 0x1020, PATH_ELSEWHERE), 1);
	path_profiles_free(pp, npp);
	prof_db_close(db);
	free(p);
}

/*
 * A small perf.data built byte by byte: one cpu-clock attribute, one sample,
 * a PERF_RECORD_LOST of `lost`; data size dsize (0: the true one); when
 * feat_off, the HOSTNAME feature's section header says (feat_off, 8).
 */
static size_t tiny_perf(struct tu_pbuf *p, uint64_t lost, uint64_t dsize, uint64_t feat_off)
{
	struct perf_event_attr attr;
	size_t data_at = 104 + sizeof(attr) + 16;
	uint64_t feats = feat_off ? 1ull << 3 : 0;	/* HOSTNAME */

	memset(p, 0, sizeof(*p));
	tu_sw_attr(&attr, PERF_COUNT_SW_CPU_CLOCK, 100000, PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		   PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD);
	tu_put(p, "PERFILE2", 8);
	tu_put64(p, 104);
	tu_put64(p, sizeof(attr) + 16);
	tu_put64(p, 104), tu_put64(p, sizeof(attr) + 16);
	tu_put64(p, data_at), tu_put64(p, 0);		/* data size patched below */
	tu_put64(p, 0), tu_put64(p, 0);
	tu_put64(p, feats), tu_put64(p, 0), tu_put64(p, 0), tu_put64(p, 0);
	tu_put(p, &attr, sizeof(attr));
	tu_put64(p, 0), tu_put64(p, 0);		/* no ids */
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 40);
	tu_put64(p, 0x401000);
	tu_put32(p, 42), tu_put32(p, 42);
	tu_put64(p, 1000);
	tu_put64(p, 100000);
	tu_put_hdr(p, PERF_RECORD_LOST, 0, 24);
	tu_put64(p, 0);
	tu_put64(p, lost);
	if (!dsize)
		dsize = p->n - data_at;
	memcpy(p->b + 48, &dsize, 8);
	if (feat_off)
		tu_put64(p, feat_off), tu_put64(p, 8);
	return p->n;
}

static int import_tiny(const char *name, struct tu_pbuf *p, struct prof_db *db,
		       struct import_stats *st, struct dcpi_err *err, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p->b, 1, p->n, f), p->n);
	fclose(f);
	return import_perf(path, db, st, err);
}

/* Implausible header fields and counts are errors naming the file and the
 * field, and no epoch is written: a bit-flipped lost count, a data size of
 * 2^64 - 1, a feature section past the end of the file. */
static void test_perf_implausible_fields(void **state)
{
	struct tu_pbuf *p = calloc(1, sizeof(*p));
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db = fresh_db("implausible");
	char path[600], **names;
	size_t n;

	(void)state;
	assert_non_null(p);
	tiny_perf(p, 5, 0, 0);		/* plausible: imported, 5 lost */
	assert_int_equal(import_tiny("ok.data", p, db, &st, &err, path, sizeof(path)), 0);
	assert_int_equal(st.samples, 1);
	assert_int_equal(st.lost, 5);
	tiny_perf(p, 3547273436309907778ull, 0, 0);
	assert_int_equal(import_tiny("lost.data", p, db, &st, &err, path, sizeof(path)),
			 -EINVAL);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "PERF_RECORD_LOST.lost = 3547273436309907778"));
	tiny_perf(p, 5, UINT64_MAX, 0);
	assert_int_equal(import_tiny("dsize.data", p, db, &st, &err, path, sizeof(path)),
			 -EINVAL);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "data.size = 18446744073709551615"));
	assert_null(strstr(err.msg, "ending at offset"));
	tiny_perf(p, 5, 0, 1ull << 40);
	assert_int_equal(import_tiny("feat.data", p, db, &st, &err, path, sizeof(path)),
			 -EINVAL);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "feature 3"));
	/* only the plausible file made an epoch */
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	assert_int_equal(n, 1);
	prof_names_free(names, n);
	prof_db_close(db);
	free(p);
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_perf_bad_magic),
	cmocka_unit_test(test_callgrind_bad_line),
	cmocka_unit_test(test_callgrind_exact),
	cmocka_unit_test(test_perf_matches_report),
	cmocka_unit_test(test_perf_truncated),
	cmocka_unit_test(test_perf_cut_before_samples),
	cmocka_unit_test(test_perf_names_as_report),
	cmocka_unit_test(test_perf_calibrated_at_import),
	cmocka_unit_test(test_perf_branch_stacks),
	cmocka_unit_test(test_perf_implausible_fields))
