/*
 * test_entry_count.c - calls counted at the entry (docs/paths.md, "Calls
 * counted at the entry"): a plan's entry=HEX (collect/plan.c) patched by the
 * path runtime into a jump to a counting trampoline (collect/pathrt.c), its
 * PRT_CALLS records read into the epoch's "calls" profile
 * (collect/paths_spool.c).
 *   - test_plan_entries: entry=HEX into the runtime's plan file, a bad HEX
 *     (odd, under 5 or over 15 bytes, not hex) counted as a bad line; a
 *     procedure marked only to be counted is not "hot";
 *   - test_spool_calls: hand-made spool files: each thread's last (largest)
 *     counts, threads told apart by pid, tid and start (an exec keeps the
 *     pid and tid), summed per entry into one profile per image; a record
 *     naming a line the plan does not count is bad;
 *   - test_counted: tests/workloads/calls.c calls cl_count N times from
 *     main, M from a second thread, K in a forked child: the epoch's "calls"
 *     profile holds exactly N + M + K at cl_count's file offset, dcpi record
 *     says so, and the program's output and status are what they are
 *     without dcpi;
 *   - test_other_bytes: a plan whose bytes are not the binary's patches
 *     nothing, a note says so, and the program runs as without dcpi;
 *   - test_stepped: path bursts at a high rate with the entry's breakpoint
 *     (args) on the same entry: the count is still exact, and the bursts
 *     that stepped through the trampoline recorded the displaced
 *     instructions at their own offsets (cl_count + 0, 1, 4, 8, nothing
 *     skipped);
 *   - test_dlopen: a library opened by path is patched at its dlopen and
 *     counted; opened by a bare name (LD_LIBRARY_PATH) it is not counted;
 *   - test_loop_counted: a loop that walks a chain (tests/workloads/chase,
 *     its loop run exactly STEPS times): the first recording's plan counts
 *     its block (a "block" line, report/plan.c), the second counts exactly
 *     STEPS executions there ("executions" profile; dcpicalc on the first
 *     epoch says `dcpi record --plan auto` would), dcpicalc prints that
 *     count with a point interval, and the samples the loop took in its
 *     trampoline are walk's, not an unknown image's;
 *   - test_chase_counted: chases over 256 KB, 16 MB (in the L3 the VM
 *     shares) and 64 MB (past it, the other vCPU busy), recorded twice
 *     (--plan auto): walk's loop counted exactly, D-cache its largest
 *     dynamic cause (>= 80% past the L2);
 *   - test_chain_counted: a hash table's chain walk (tests/workloads/chain),
 *     its latch a compare and a branch the trampoline makes near and takes
 *     itself (a block line's branch=): the plan of a long run counts its
 *     loop's blocks, one of them with its jcc; a short run with that plan
 *     gives the same output, and every count it took equals callgrind's
 *     count of the same run at that block's first instruction.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dcpi/image.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "../collect/pathrt.h"
#include "../collect/paths.h"
#include "../collect/plan.h"
#include "testutil.h"
#include "tu_image.h"
#include "tu_main.h"

#define ENTRY "534889fb4883ec10"	/* cl_count's first three instructions */

static struct tu_image t;

TU_IMAGE_GROUP(t, "entry-count", "workloads/calls")

/* A plan file at dir/name marking proc of image (a build-id from img) with
 * why. */
static void write_plan(const char *name, const struct image *img, const char *image,
		       const char *proc, const char *why, char *path, size_t len)
{
	const struct img_proc *p = img_proc_by_name(img, proc);
	uint64_t off;
	FILE *f;

	assert_non_null(p);
	assert_int_equal(img_vaddr_to_offset(img, p->addr, &off), 0);
	snprintf(path, len, "%s/%s", t.dir, name);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s\nimage 0 %s %s\nproc 0 %" PRIx64 " %" PRIx64 " %s %s\n", VAL_PLAN_MAGIC,
		img_build_id(img)[0] ? img_build_id(img) : "-", image, off, p->size, why, proc);
	fclose(f);
}

/* The "calls" profile of the image whose path ends in suffix in the newest
 * epoch of db (NULL: none); free with prof_profiles_free(*all, *n). */
static const struct prof_profile *calls_of(const char *db, const char *suffix,
					   struct prof_profile **all, size_t *n)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char path[600], epoch[64];

	snprintf(path, sizeof(path), "%s/%s", t.dir, db);
	assert_int_equal(prof_db_open(path, 0, &d, &err), 0);
	assert_int_equal(prof_db_latest_epoch(d, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(prof_epoch_read(d, epoch, all, n, &err), 0);
	prof_db_close(d);
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*all)[i].event, PROF_EVENT_CALLS) &&
		    tu_ends_with((*all)[i].image.path, suffix))
			return &(*all)[i];
	return NULL;
}

/* `dcpi record OPTS --db DIR/db -- ARGS` with the output in DIR/db.out and
 * DIR/db.err; its exit status, and the same command alone into DIR/db.native
 * (which must give the same output and status). */
static void record_both(const char *db, const char *opts, const char *args)
{
	int rc, native;

	rc = tu_sh("%s record --no-calibrate %s --db %s/%s -- %s > %s/%s.out 2> %s/%s.err",
		   t.bin, opts, t.dir, db, args, t.dir, db, t.dir, db);
	if (rc)
		tu_sh("cat %s/%s.err >&2", t.dir, db);
	native = tu_sh("%s > %s/%s.native", args, t.dir, db);
	assert_int_equal(rc, native);
	assert_int_equal(rc, 0);
	assert_int_equal(tu_sh("cmp -s %s/%s.out %s/%s.native", t.dir, db, t.dir, db), 0);
}

static void test_plan_entries(void **state)
{
	struct dcpi_err err = { 0 };
	struct plan_info info;
	struct plan_rt_mark *m;
	char plan[600], out[700], text[2048];
	size_t n;
	FILE *f;

	(void)state;
	snprintf(plan, sizeof(plan), "%s/entries.txt", t.dir);
	assert_non_null(f = fopen(plan, "w"));
	fprintf(f, "%s\nimage 0 - %s\n"
		"proc 0 100 20 entry=" ENTRY " only_counted\n"
		"proc 0 200 20 hot,args=01,entry=4889f8c3AB load_too\n"
		"proc 0 300 20 hot,entry=534889fb4883ec1 odd\n"
		"proc 0 300 20 hot,entry=53488955 short\n"
		"proc 0 300 20 entry=00112233445566778899aabbccddeeff long\n"
		"proc 0 300 20 hot,entry=53488955zz not_hex\n"
		"proc 0 400 20 hot plain\n", VAL_PLAN_MAGIC, t.prog);
	fclose(f);
	assert_int_equal(plan_runtime_file(plan, t.dir, out, sizeof(out), &info, &err), 0);
	assert_int_equal(info.marks, 3);
	assert_int_equal(info.counts, 2);
	assert_int_equal(info.breakpoints, 1);
	assert_int_equal(info.bad, 4);
	{
		char cmd[800];

		snprintf(cmd, sizeof(cmd), "cat %s", out);
		assert_int_equal(tu_sh_out(cmd, text, sizeof(text)), 0);
	}
	print_message("%s", text);
	{
		char want[2048];

		snprintf(want, sizeof(want), "100 20 4 " ENTRY " %s\n"
			 "200 20 %x 4889f8c3ab %s\n400 20 1 %s\n", t.prog,
			 PRT_PLAN_HOT | PRT_PLAN_BP | PRT_PLAN_COUNT | 1u << PRT_PLAN_REGS_SHIFT,
			 t.prog, t.prog);
		assert_string_equal(text, want);
	}
	/* and read back as dcpi record reads it */
	assert_int_equal(plan_rt_read(t.dir, &m, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(m[0].nentry, 8);
	assert_memory_equal(m[0].entry, "\x53\x48\x89\xfb\x48\x83\xec\x10", 8);
	assert_int_equal(m[1].nentry, 5);
	assert_int_equal(m[1].entry[4], 0xab);
	assert_int_equal(m[2].nentry, 0);
	assert_string_equal(m[2].path, t.prog);
	plan_rt_free(m, n);
	unlink(out);
}

struct seen {
	uint32_t image;
	uint64_t off[16], count[16];
	size_t n;
};

static int seen_one(void *ctx, uint32_t image, uint32_t event, uint64_t offset, uint64_t count)
{
	struct seen *s = ctx;

	(void)event;
	if (image == MAPS_UNKNOWN)
		offset |= 1ull << 63;	/* still unknown */
	else
		assert_int_equal(image, s->image);
	assert_true(s->n < 16);
	s->off[s->n] = offset;
	s->count[s->n++] = count;
	return 0;
}

static uint64_t seen_at(const struct seen *s, uint64_t off)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->off[i] == off)
			return s->count[i];
	return 0;
}

/* The runtime's file rt (test_plan_blocks': lines 0 to 2 count 0x1400, 6
 * bytes; 0x1408, 4 + a short jcc; 0x1500, 3 + a near jcc) and a <pid>.tramp
 * naming three trampolines: samples at their pcs in the unknown image go to
 * the instructions they copy. */
static void tramp_samples(const char *rt)
{
	struct dcpi_err err = { 0 };
	struct maps *maps = NULL;
	struct agg *agg = NULL;
	struct seen s = { 0 };
	uint64_t moved = 0;
	char path[700];
	FILE *f;

	(void)rt;
	snprintf(path, sizeof(path), "%s/123%s", t.dir, PRT_TRAMP_SUFFIX);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "1000000 6 0 0\n1000032 6 1 2\n1000064 9 2 6\n1000096 6 7 0\n");
	fclose(f);
	assert_int_equal(maps_new(&maps, &err), 0);
	assert_int_equal(agg_new(&agg, &err), 0);
	assert_int_equal(maps_intern(maps, t.prog, &s.image, &err), 0);
	/* step: the increment, a moved instruction, the jump back */
	agg_add(agg, MAPS_UNKNOWN, 0, 1000000 + 2, 1, &err);
	agg_add(agg, MAPS_UNKNOWN, 0, 1000000 + 9 + 3, 2, &err);
	agg_add(agg, MAPS_UNKNOWN, 0, 1000000 + 9 + 6, 4, &err);
	/* latch: its jcc (near in the trampoline), the jump back */
	agg_add(agg, MAPS_UNKNOWN, 0, 1000032 + 9 + 4, 8, &err);
	agg_add(agg, MAPS_UNKNOWN, 0, 1000032 + 9 + 4 + 6, 16, &err);
	/* near: its jcc after 3 bytes */
	agg_add(agg, MAPS_UNKNOWN, 0, 1000064 + 9 + 3 + 2, 32, &err);
	/* past the slots, and a line the plan does not have: unknown still */
	agg_add(agg, MAPS_UNKNOWN, 0, 1000096 + 2, 64, &err);
	agg_add(agg, MAPS_UNKNOWN, 0, 5000000, 128, &err);
	assert_int_equal(plan_tramp_remap(t.dir, maps, agg, &moved, &err), 0);
	assert_int_equal(moved, 1 + 2 + 4 + 8 + 16 + 32);
	assert_int_equal(agg_interval(agg, seen_one, &s), 0);
	assert_int_equal(seen_at(&s, 0x1400), 1);
	assert_int_equal(seen_at(&s, 0x1403), 2);
	assert_int_equal(seen_at(&s, 0x1406), 4);
	assert_int_equal(seen_at(&s, 0x140c), 8);
	assert_int_equal(seen_at(&s, 0x140e), 16);
	assert_int_equal(seen_at(&s, 0x1503), 32);
	assert_int_equal(seen_at(&s, (1000096 + 2) | 1ull << 63), 64);
	assert_int_equal(seen_at(&s, 5000000 | 1ull << 63), 128);
	agg_free(agg);
	maps_free(maps);
	unlink(path);
}

/* A plan's block lines (report/plan.c) into the runtime's file: the bytes,
 * PRT_PLAN_BLOCK, and a jcc ending them (branch=2 or 6) when its form is
 * the one named; anything else a bad line.  And the trampolines' samples
 * (plan_tramp_remap) by the runtime's <pid>.tramp lines. */
static void test_plan_blocks(void **state)
{
	struct dcpi_err err = { 0 };
	struct plan_info info;
	char plan[600], out[700], text[2048], want[2048], cmd[800];
	FILE *f;

	(void)state;
	snprintf(plan, sizeof(plan), "%s/blocks.txt", t.dir);
	assert_non_null(f = fopen(plan, "w"));
	fprintf(f, "%s\nimage 0 - %s\n"
		"block 0 1400 count=488b004885c0 step\n"
		"block 0 1408 count=4839500875f2,branch=2 latch\n"
		"block 0 1500 count=833f070f84f7ffffff,branch=6 near\n"
		"block 0 1600 count=4839500875f2,branch=6 wrong_form\n"
		"block 0 1700 count=4839500875f2,branch=3 bad_length\n"
		"block 0 1800 count=48395008 short\n"
		"block 0 1900 entry=4839500875f2 not_count\n"
		"block 0 1a00 count=00112233445566778899aabb0f8400000000,branch=6 too_long\n",
		VAL_PLAN_MAGIC, t.prog);
	fclose(f);
	assert_int_equal(plan_runtime_file(plan, t.dir, out, sizeof(out), &info, &err), 0);
	assert_int_equal(info.marks, 3);
	assert_int_equal(info.blocks, 3);
	assert_int_equal(info.bad, 5);
	snprintf(cmd, sizeof(cmd), "cat %s", out);
	assert_int_equal(tu_sh_out(cmd, text, sizeof(text)), 0);
	snprintf(want, sizeof(want), "1400 6 %x 488b004885c0 %s\n1408 6 %x 4839500875f2 %s\n"
		 "1500 9 %x 833f070f84f7ffffff %s\n", PRT_PLAN_COUNT | PRT_PLAN_BLOCK, t.prog,
		 PRT_PLAN_COUNT | PRT_PLAN_BLOCK | PRT_PLAN_JCC8, t.prog,
		 PRT_PLAN_COUNT | PRT_PLAN_BLOCK | PRT_PLAN_JCC32, t.prog);
	assert_string_equal(text, want);
	tramp_samples(out);
	unlink(out);
}

static void put_rec(FILE *f, uint32_t type, const void *body, size_t len, uint32_t pid,
		    uint32_t tid, uint64_t time)
{
	struct prt_rec h = { PRT_MAGIC, type, (uint32_t)(sizeof(h) + len), pid, tid, 0, time };

	assert_int_equal(fwrite(&h, sizeof(h), 1, f), 1);
	if (len)
		assert_int_equal(fwrite(body, len, 1, f), 1);
}

static FILE *spool(const char *dir, const char *name)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	return f;
}

static void test_spool_calls(void **state)
{
	static const char maps[] = "1000 2000 0 /nonexistent/a\n";
	struct prt_calls c[2];
	struct dcpi_err err = { 0 };
	struct paths_stats st;
	struct prof_profile *p;
	const struct prof_profile *a, *b;
	char dir[400], path[500];
	size_t n;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/spool", t.dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, PRT_PLAN_NAME);
	tu_write_text(path, "10 20 4 534889fb4883 /nonexistent/a\n"
			    "garbage\n"
			    "30 8 1 /nonexistent/a\n"
			    "40 8 4 0102030405 /nonexistent/b\n");
	f = spool(dir, "42-0.spool");
	put_rec(f, PRT_MAPS, maps, sizeof(maps) - 1, 42, 42, 0);
	c[0] = (struct prt_calls){ 0, 0, 5 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 42, 42, 100);
	c[0] = (struct prt_calls){ 0, 0, 7 };
	c[1] = (struct prt_calls){ 3, 0, 1 };
	put_rec(f, PRT_CALLS, c, sizeof(c), 42, 43, 150);	/* another thread */
	c[0] = (struct prt_calls){ 0, 0, 9 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 42, 42, 100);	/* its later counts */
	fclose(f);
	/* the same process's spool reopened (it lost its descriptor): the
	 * thread's counts so far again, not more calls */
	f = spool(dir, "42-1.spool");
	c[0] = (struct prt_calls){ 0, 0, 8 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 42, 42, 100);
	fclose(f);
	/* an exec'd image: the same pid and tid, counting anew */
	f = spool(dir, "42-2.spool");
	c[0] = (struct prt_calls){ 0, 0, 4 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 42, 42, 200);
	fclose(f);
	/* a forked child; then a record of a line the plan does not count */
	f = spool(dir, "44-0.spool");
	c[0] = (struct prt_calls){ 3, 0, 2 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 44, 44, 300);
	c[0] = (struct prt_calls){ 2, 0, 1000 };
	put_rec(f, PRT_CALLS, c, sizeof(c[0]), 44, 44, 300);
	fclose(f);
	/* a cut record */
	f = spool(dir, "45-0.spool");
	put_rec(f, PRT_CALLS, c, sizeof(c[0]) - 4, 45, 45, 400);
	fclose(f);
	assert_int_equal(paths_spool_read_calls(dir, &p, &n, &st, &err), 0);
	assert_int_equal(st.bad, 2);
	assert_int_equal(n, 2);
	a = find_image(p, n, "/nonexistent/a");
	b = find_image(p, n, "/nonexistent/b");
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a->event, PROF_EVENT_CALLS);
	assert_true(a->period == 1 && !strcmp(a->period_unit, "events") &&
		    a->cycles_per_unit == 0);
	assert_int_equal(a->n, 1);
	assert_int_equal(prof_profile_count(a, 0x10), 9 + 7 + 4);
	assert_int_equal(a->total, 20);
	assert_int_equal(b->n, 1);
	assert_int_equal(prof_profile_count(b, 0x40), 1 + 2);
	assert_int_equal(st.calls, 23);
	assert_int_equal(st.calls_procs, 2);
	prof_profiles_free(p, n);
	/* no plan: no calls, the records passed over */
	unlink(path);
	assert_int_equal(paths_spool_read_calls(dir, &p, &n, &st, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(st.calls, 0);
	tu_sh("rm -rf %s", dir);
}

static void test_counted(void **state)
{
	struct prof_profile *all;
	const struct prof_profile *c;
	char plan[600], args[1200];
	size_t n;

	(void)state;
	write_plan("counted.txt", t.img, t.prog, "cl_count", "entry=" ENTRY, plan,
		   sizeof(plan));
	snprintf(args, sizeof(args), "%s 3000000 2000000 1000000", t.prog);
	{
		char opts[700];

		snprintf(opts, sizeof(opts), "--plan %s", plan);
		record_both("counted", opts, args);
	}
	assert_int_equal(tu_sh("grep -q '^dcpi record: 6000000 calls counted at the entries "
			       "of 1 procedures$' %s/counted.err", t.dir), 0);
	assert_int_equal(tu_sh("grep -q ' counted=1 counted-calls=6000000 counted-procs=1' "
			       "%s/counted/00000001/meta", t.dir), 0);
	assert_int_not_equal(tu_sh("grep -q 'not counted' %s/counted.err", t.dir), 0);
	c = calls_of("counted", "/workloads/calls", &all, &n);
	assert_non_null(c);
	assert_int_equal(c->n, 1);
	assert_int_equal(prof_profile_count(c, tu_image_off(&t, "cl_count", 0)), 6000000);
	assert_string_equal(c->image.build_id, img_build_id(t.img));
	/* beside the samples of the same image: the same identity */
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].event, PROF_EVENT_CALLS) &&
		    tu_ends_with(all[i].image.path, "/workloads/calls"))
			assert_true(prof_image_id_equal(&all[i].image, &c->image));
	prof_profiles_free(all, n);
	/* dcpiprof lists calls beside the time, not as the time */
	assert_int_equal(tu_sh("%s prof --db %s/counted 2>/dev/null | grep -Eq "
			       "'^ *(cpu-clock|cycles) .* calls .* procedure'", t.bin, t.dir), 0);
}

static void test_other_bytes(void **state)
{
	struct prof_profile *all;
	char plan[600], args[1200], opts[700];
	size_t n;

	(void)state;
	write_plan("other.txt", t.img, t.prog, "cl_count", "hot,entry=534889fb4883ec11", plan,
		   sizeof(plan));
	snprintf(args, sizeof(args), "%s 300000 200000 100000", t.prog);
	snprintf(opts, sizeof(opts), "--plan %s", plan);
	record_both("other", opts, args);
	assert_int_equal(tu_sh("grep -q '^dcpi record: 0 calls counted at the entries of 0 "
			       "procedures$' %s/other.err", t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'note: calls not counted in process [0-9]*: "
			       "calls+0x%" PRIx64 ": the bytes at its entry are not the plan' "
			       "%s/other.err", tu_image_off(&t, "cl_count", 0), t.dir), 0);
	assert_null(calls_of("other", "/workloads/calls", &all, &n));
	prof_profiles_free(all, n);
}

/* Edge from -> to of p, 0 when p is NULL. */
static uint64_t edge(const struct path_profile *p, uint64_t from, uint64_t to)
{
	return p ? path_profile_edge(p, from, to) : 0;
}

static void test_stepped(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *all;
	const struct prof_profile *c;
	struct path_profile *pp = NULL;
	const struct path_profile *p = NULL;
	struct prof_db *d;
	char plan[600], args[1200], opts[700], path[600];
	uint64_t off = tu_image_off(&t, "cl_count", 0);
	size_t n, np = 0;

	(void)state;
	write_plan("stepped.txt", t.img, t.prog, "cl_count", "hot,args=01,entry=" ENTRY, plan,
		   sizeof(plan));
	snprintf(args, sizeof(args), "%s 100000000 20000000 10000000", t.prog);
	snprintf(opts, sizeof(opts), "--paths 2000:32 --plan %s", plan);
	record_both("stepped", opts, args);
	c = calls_of("stepped", "/workloads/calls", &all, &n);
	assert_non_null(c);
	assert_int_equal(prof_profile_count(c, off), 130000000);
	prof_profiles_free(all, n);
	snprintf(path, sizeof(path), "%s/stepped", t.dir);
	assert_int_equal(prof_db_open(path, 0, &d, &err), 0);
	assert_int_equal(path_epoch_read(d, "00000001", &pp, &np, &err), 0);
	prof_db_close(d);
	for (size_t i = 0; i < np; i++)
		if (tu_ends_with(pp[i].image.path, "/workloads/calls"))
			p = &pp[i];
	print_message("cl_count's entry stepped: %" PRIu64 ", %" PRIu64 ", %" PRIu64
		      " times; skipped %" PRIu64 "\n", edge(p, off, off + 1),
		      edge(p, off + 1, off + 4), edge(p, off + 4, off + 8), edge(p, off, off + 8));
	assert_true(edge(p, off, off + 1) > 0 && edge(p, off + 1, off + 4) > 0 &&
		    edge(p, off + 4, off + 8) > 0);
	assert_int_equal(edge(p, off, off + 8), 0);
	path_profiles_free(pp, np);
}

static void test_dlopen(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *all;
	const struct prof_profile *c;
	struct image *img = NULL;
	const char *src = getenv("DCPI_SRC");
	char lib[600], plan[600], args[1500], opts[700];
	uint64_t off;
	size_t n;

	(void)state;
	tu_need_run(src != NULL);
	snprintf(lib, sizeof(lib), "%s/libcalls.so", t.dir);
	assert_int_equal(tu_sh("cc -O2 -shared -fPIC -DCL_LIB -o %s %s/tests/workloads/calls.c",
			       lib, src), 0);
	assert_int_equal(img_open(lib, IMG_NO_DWARF, &img, &err), 0);
	write_plan("lib.txt", img, lib, "cl_count", "entry=" ENTRY, plan, sizeof(plan));
	assert_int_equal(img_vaddr_to_offset(img, img_proc_by_name(img, "cl_count")->addr, &off),
			 0);
	img_close(img);
	snprintf(opts, sizeof(opts), "--plan %s", plan);
	snprintf(args, sizeof(args), "%s dlopen %s 5000000", t.prog, lib);
	record_both("dlopen", opts, args);
	c = calls_of("dlopen", "/libcalls.so", &all, &n);
	assert_non_null(c);
	assert_int_equal(prof_profile_count(c, off), 5000000);
	prof_profiles_free(all, n);
	/* by a bare name its caller's search path decides: not wrapped, not
	 * counted */
	snprintf(args, sizeof(args), "env LD_LIBRARY_PATH=%s %s dlopen libcalls.so 5000000",
		 t.dir, t.prog);
	record_both("bare", opts, args);
	assert_null(calls_of("bare", "/libcalls.so", &all, &n));
	prof_profiles_free(all, n);
	assert_int_equal(tu_sh("grep -q '^dcpi record: 0 calls counted' %s/bare.err", t.dir), 0);
}

/* The samples of event ev in the newest epoch of db: of the image whose path
 * ends in suffix within [lo, hi) (file offsets), and of the unknown image. */
static void samples_in(const char *db, const char *suffix, uint64_t lo, uint64_t hi,
		       uint64_t *in, uint64_t *unknown)
{
	struct prof_profile *all;
	size_t n;

	*in = *unknown = 0;
	(void)calls_of(db, suffix, &all, &n);
	for (size_t i = 0; i < n; i++) {
		const struct prof_profile *p = &all[i];

		if (strcmp(p->event, "cpu-clock"))
			continue;
		for (size_t k = 0; k < p->n; k++) {
			if (tu_ends_with(p->image.path, suffix) && p->e[k].offset >= lo &&
			    p->e[k].offset < hi)
				*in += p->e[k].count;
			if (!p->image.path[0] || !strcmp(p->image.path, PROF_UNKNOWN_PATH))
				*unknown += p->e[k].count;
		}
	}
	prof_profiles_free(all, n);
}

static void test_loop_counted(void **state)
{
	const long steps = 20000000;
	struct prof_profile *all;
	struct image *img = NULL;
	struct dcpi_err err = { 0 };
	const struct img_proc *walk;
	char chase[600], args[700], opts[700];
	uint64_t lo, in, unknown, execs = 0;
	size_t n, l;

	(void)state;
	snprintf(chase, sizeof(chase), "%s", t.prog);
	l = strlen(chase);
	assert_true(l > 5 && !strcmp(chase + l - 5, "calls"));
	memcpy(chase + l - 5, "chase", 5);
	snprintf(args, sizeof(args), "%s 1048576 %ld", chase, steps);
	record_both("loop1", "", args);
	assert_int_equal(tu_sh("grep -Eq '^block [0-9]+ [0-9a-f]+ count=[0-9a-f]+ walk' "
			       "%s/loop1/00000001/plan.txt", t.dir), 0);
	/* dcpicalc on that first epoch says what --plan auto would count */
	assert_int_equal(tu_sh("%s calc walk --db %s/loop1 2>/dev/null | grep -q '^counts: none "
			       "measured here; .*1 block of loops'", t.bin,
			       t.dir), 0);
	snprintf(opts, sizeof(opts), "--plan %s/loop1/00000001/plan.txt", t.dir);
	record_both("loop2", opts, args);
	assert_int_equal(tu_sh("grep -q '^dcpi record: the executions of 1 blocks' %s/loop2.err",
			       t.dir), 0);
	/* the count, exactly, at the loop's block */
	assert_int_equal(img_open(chase, 0, &img, &err), 0);
	assert_non_null(walk = img_proc_by_name(img, "walk"));
	assert_int_equal(img_vaddr_to_offset(img, walk->addr, &lo), 0);
	(void)calls_of("loop2", "/workloads/chase", &all, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i].event, PROF_EVENT_EXECS) &&
		    tu_ends_with(all[i].image.path, "/workloads/chase")) {
			assert_int_equal(all[i].n, 1);
			assert_true(all[i].e[0].offset > lo && all[i].e[0].offset < lo + walk->size);
			execs = all[i].e[0].count;
		}
	prof_profiles_free(all, n);
	assert_int_equal(execs, steps);
	/* dcpicalc: that count, exact, on the loop's block */
	assert_int_equal(tu_sh("%s calc walk --db %s/loop2 --json 2>/dev/null | grep -Eq "
			       "'\"executions\": %ld, .*\"interval\": \\[%ld, %ld\\], "
			       "\"confidence\": \"high\", \"counted\": true'",
			       t.bin, t.dir, steps, steps, steps), 0);
	/* the loop's samples, most of them in the trampoline, are walk's */
	samples_in("loop2", "/workloads/chase", lo, lo + walk->size, &in, &unknown);
	assert_true(in > 20);
	assert_true(unknown * 20 < in);
	img_close(img);
}

/* The textbook case counted (docs/estimate.md, "Loops counted"): a pointer
 * chase over 256 KB (past L1, in L2), over 16 MB (in the L3 other tenants
 * share, where one recording's replayed walk can meet another machine than
 * the run did: tests/test_trust.c) and over 64 MB (past the L3) with a
 * process spinning beside it, recorded once and again with the plan the
 * first left (--plan auto): dcpicalc's executions of walk's loop are the
 * step count exactly, and --summary names D-cache its largest dynamic
 * cause, at 80% of walk's cycles or more past the L2. */
static void test_chase_counted(void **state)
{
	static const struct {
		long bytes, steps;
		int dcache_min, busy;
	} c[] = { { 262144, 30000000, 0, 0 }, { 16777216, 3000000, 80, 0 },
		  { 67108864, 3000000, 80, 1 } };
	char chase[600], args[700], db[64];
	size_t l;

	(void)state;
	snprintf(chase, sizeof(chase), "%s", t.prog);
	l = strlen(chase);
	memcpy(chase + l - 5, "chase", 5);
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		pid_t spin;

		snprintf(args, sizeof(args), "%s %ld %ld", chase, c[k].bytes, c[k].steps);
		snprintf(db, sizeof(db), "chase%zu", k);
		spin = tu_spinner(c[k].busy);
		/* calibrated: the summary wants a sample's cycles */
		for (int run = 0; run < 2; run++)
			assert_int_equal(tu_sh("%s record %s --db %s/%s -- %s > /dev/null 2> "
					       "%s/%s.err", t.bin, run ? "--plan auto" : "", t.dir,
					       db, args, t.dir, db), 0);
		tu_spinner_stop(spin);
		assert_int_equal(tu_sh("%s calc walk --db %s/%s --json 2>/dev/null | grep -Eq "
				       "'\"executions\": %ld, .*\"counted\": true'", t.bin, t.dir,
				       db, c[k].steps), 0);
		/* the first cause under "by cause" is D-cache, its likeliest share
		 * the last figure */
		assert_int_equal(tu_sh("%s calc --summary walk --db %s/%s 2>/dev/null | awk "
				       "'/by cause/ { getline; ok = $1 == \"D-cache\" && $NF + 0 >= %d } "
				       "END { exit !ok }'", t.bin, t.dir, db, c[k].dcache_min), 0);
	}
}

/* A chase its addresses keep within L1 goes round as fast as a counter
 * would: the plan counts no block of it, neither as a chain's loop nor as
 * the loop holding the data accesses (report/plan.c plan_loops,
 * plan_data); its entry is still counted. */
static void test_l1_chase_uncounted(void **state)
{
	char chase[600];
	size_t l;

	(void)state;
	snprintf(chase, sizeof(chase), "%s", t.prog);
	l = strlen(chase);
	memcpy(chase + l - 5, "chase", 5);
	assert_int_equal(tu_sh("%s record --db %s/l1 -- %s 16384 100000000 > /dev/null 2> "
			       "%s/l1.err", t.bin, t.dir, chase, t.dir), 0);
	assert_int_equal(tu_sh("grep -q ' walk$' %s/l1/00000001/plan.txt", t.dir), 0);
	if (tu_sh("grep -q '^block .* walk+' %s/l1/00000001/plan.txt", t.dir) == 0)
		tu_sh("cat %s/l1/00000001/plan.txt >&2", t.dir);
	assert_int_not_equal(tu_sh("grep -q '^block .* walk+' %s/l1/00000001/plan.txt", t.dir),
			     0);
}

/* The count at offset off of the profile of event ev and the image whose
 * path ends in suffix in the newest epoch of db (-1: no such profile). */
static long long count_at(const char *db, const char *ev, const char *suffix, uint64_t off)
{
	struct prof_profile *all;
	long long c = -1;
	size_t n;

	(void)calls_of(db, suffix, &all, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i].event, ev) && tu_ends_with(all[i].image.path, suffix))
			c = (long long)prof_profile_count(&all[i], off);
	prof_profiles_free(all, n);
	return c;
}

static void test_chain_counted(void **state)
{
	struct prof_profile *all;
	char chain[600], args[700], opts[700];
	size_t n, l, checked = 0;

	(void)state;
	if (tu_sh("valgrind --version > /dev/null 2>&1") != 0) {
		print_message("no valgrind: skipped\n");
		skip();
	}
	snprintf(chain, sizeof(chain), "%s", t.prog);
	l = strlen(chain);
	assert_true(l > 5 && !strcmp(chain + l - 5, "calls"));
	memcpy(chain + l - 5, "chain", 5);
	snprintf(args, sizeof(args), "%s 1048576 4000000", chain);
	record_both("chain1", "", args);
	if (tu_sh("grep -Eq '^block [0-9]+ [0-9a-f]+ count=[0-9a-f]+,branch=2 lookup' "
		  "%s/chain1/00000001/plan.txt", t.dir))
		tu_sh("cat %s/chain1/00000001/plan.txt %s/chain1.err >&2", t.dir, t.dir);
	assert_int_equal(tu_sh("grep -Eq '^block [0-9]+ [0-9a-f]+ count=[0-9a-f]+,branch=2 lookup' "
			       "%s/chain1/00000001/plan.txt", t.dir), 0);
	snprintf(opts, sizeof(opts), "--plan %s/chain1/00000001/plan.txt", t.dir);
	snprintf(args, sizeof(args), "%s 1048576 200000", chain);
	record_both("chain2", opts, args);
	assert_int_equal(tu_sh("valgrind --tool=callgrind --dump-instr=yes "
			       "--callgrind-out-file=%s/chain.cg %s > %s/chain.cgout 2> %s/chain.cglog"
			       " && cmp -s %s/chain.cgout %s/chain2.native", t.dir, args, t.dir, t.dir,
			       t.dir, t.dir), 0);
	assert_int_equal(tu_sh("%s import %s/chain.cg --db %s/chaincg > /dev/null 2>&1", t.bin, t.dir,
			       t.dir), 0);
	(void)calls_of("chain2", "/workloads/chain", &all, &n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(all[i].event, PROF_EVENT_EXECS) ||
		    !tu_ends_with(all[i].image.path, "/workloads/chain"))
			continue;
		for (size_t k = 0; k < all[i].n; k++) {
			long long ex = count_at("chaincg", "callgrind-Ir", "/workloads/chain",
						all[i].e[k].offset);

			if ((long long)all[i].e[k].count != ex)
				print_message("block at file offset 0x%llx: counted %llu, callgrind "
					      "%lld\n", (unsigned long long)all[i].e[k].offset,
					      (unsigned long long)all[i].e[k].count, ex);
			assert_int_equal((long long)all[i].e[k].count, ex);
			checked++;
		}
	}
	prof_profiles_free(all, n);
	assert_true(checked >= 2);	/* the latch (its jcc moved) and the step */
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_plan_entries),
	cmocka_unit_test(test_plan_blocks),
	cmocka_unit_test(test_spool_calls),
	cmocka_unit_test(test_counted),
	cmocka_unit_test(test_other_bytes),
	cmocka_unit_test(test_stepped),
	cmocka_unit_test(test_dlopen),
	cmocka_unit_test(test_loop_counted),
	cmocka_unit_test(test_chase_counted),
	cmocka_unit_test(test_l1_chase_uncounted),
	cmocka_unit_test(test_chain_counted))
