/*
 * test_plan.c - the marking plan (docs/values.md, "Marking plan"), end to
 * end on tests/workloads/valloop.c, seeded, with k = 7 in 80 of 100
 * residues: the workload prints how many of its calls of vl_scale(k, x) had
 * k = 7, so the truth is exact.
 *   - test_plan_auto, at record's default burst rate: `dcpi record
 *     --values` leaves a plan (plan.txt) that marks vl_scale for its two
 *     arguments (args=03); `dcpi record --values --plan auto` catches
 *     vl_scale's calls at a breakpoint on its entry, re-armed after each,
 *     and the share of arg0 = 7 is within 3 points of the truth, from at
 *     least the calls the binomial needs there (val_calls_needed);
 *   - test_needed: without a plan dcpivargs says how many calls were seen
 *     and how many +-3 points need (the binomial at the adjusted share),
 *     and the burst rate that would see them;
 *   - test_plan_changed: a plan whose image has another build-id marks
 *     nothing, and the run says so; --plan without value samples, or auto
 *     with no plan in the database, is refused; a run too short for a
 *     burst writes no plan and says why;
 *   - test_plan_robust: tests/workloads/pathloop.c with pl_loop marked for
 *     its arguments, in the modes where the breakpoint meets something:
 *     the program's own int3 and SIGTRAP handler (trap), SIGTRAP blocked
 *     around other code (block), threads (no breakpoint is armed while the
 *     process has more than one), fork: each exits as it does alone, and
 *     calls are caught in trap and block;
 *   - test_unseen_args: at 4 bursts a CPU second (1 to 3 bursts a run; at
 *     2 a second one run in 11 had none, so no value samples and no plan)
 *     no burst sees vl_scale's entry in about half the runs, yet the plan asks for its arguments (DWARF lists two: it is
 *     hot and unseen), dcpivargs says 0 calls seen and what the least
 *     certain share needs, and the run with the plan (at the default rate)
 *     catches its calls;
 *   - test_plan_own_callee: libc's clock_gettime marked for its arguments,
 *     which the runtime's handlers call themselves with SIGTRAP blocked:
 *     the program exits as it does alone (the int3 killed it, every run).
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <time.h>

#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_image.h"
#include "tu_main.h"

/* ~0.5 s of CPU here, at record's default burst rate */
#define ITERS "50000000"
#define SEED "4242"

static struct tu_image t;
static unsigned long calls, k7;

TU_IMAGE_GROUP(t, "plan", "workloads/valloop")

/* The workload's own counts, from its output file. */
static void read_truth(const char *out)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", t.dir, out);
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(fscanf(f, "calls %lu k7 %lu", &calls, &k7), 2);
	fclose(f);
	assert_true(calls > 0);
}

/* proc's arg0 list in epoch of db: the share of value (< 0: of its most
 * common value, as dcpi vargs reports it) and the calls seen. */
static double arg0_share(const char *db, const char *epoch, const char *proc, uint64_t *seen,
			 int64_t value)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	struct val_profile *v;
	const struct val_hotlist *h = NULL;
	char path[600];
	double share = 0;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", t.dir, db);
	assert_int_equal(prof_db_open(path, 0, &d, &err), 0);
	assert_int_equal(val_epoch_read(d, epoch, &v, &n, &err), 0);
	prof_db_close(d);
	for (size_t i = 0; i < n && !h; i++)
		if (strstr(v[i].image.path, "/valloop"))
			h = val_profile_find(&v[i], tu_image_off(&t, proc, 0), VAL_ARG0);
	assert_non_null(h);
	*seen = h->seen;
	for (uint32_t i = 0; i < h->n; i++)
		if (value < 0 ? val_hotlist_share(h, i) > share : h->t[i].value == (uint64_t)value)
			share = val_hotlist_share(h, i);
	val_profiles_free(v, n);
	return share;
}

/*
 * The plan's entry= marks (report/plan.c, cfg/entry.c) on valloop's
 * procedures are counted in the second run (collect/pathrt.c), and dcpicalc
 * takes the count as the entry's (estimate/calls.c): for each of vl_scale,
 * vl_add, vl_sub, vl_walk the plan marks, exactly the calls valloop made;
 * at least one is marked.
 */
static void counted_calls(void)
{
	unsigned long n = 0, k = 0, add = 0, sub = 0, walks = 0;
	const char *proc[] = { "vl_scale", "vl_add", "vl_sub", "vl_walk" };
	unsigned long truth[4];
	char path[600];
	int marked = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/out2", t.dir);
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(fscanf(f, "calls %lu k7 %lu add %lu sub %lu walks %lu", &n, &k, &add, &sub,
				&walks), 5);
	fclose(f);
	truth[0] = n;
	truth[1] = add;
	truth[2] = sub;
	truth[3] = walks;
	for (int i = 0; i < 4; i++) {
		if (tu_sh("grep -Eq '^proc [0-9]+ %" PRIx64 " [0-9a-f]+ [a-z0-9,=]*entry=[0-9a-f]+"
			  "[a-z0-9,=]* %s$' %s/db/00000001/plan.txt",
			  tu_image_off(&t, proc[i], 0), proc[i], t.dir))
			continue;
		marked++;
		print_message("%s: %lu calls made, the plan counts them\n", proc[i], truth[i]);
		assert_int_equal(tu_sh("%s calc %s --db %s/db --json 2> /dev/null | grep -q "
				       "'\"calls\": {\"counted\": %lu,'", t.bin, proc[i], t.dir,
				       truth[i]), 0);
	}
	assert_true(marked > 0);
	assert_int_equal(tu_sh("grep -q 'calls counted at the entries of [1-9]' %s/err2", t.dir),
			 0);
}

static void test_plan_auto(void **state)
{
	uint64_t seen;
	double got, truth;

	(void)state;
	assert_int_equal(tu_sh("%s record --no-calibrate --values --db %s/db -- %s " ITERS
			       " " SEED " 80 > %s/out1 2> %s/err1", t.bin, t.dir, t.prog, t.dir,
			       t.dir), 0);
	/* the analysis left a plan marking vl_scale for its arguments (valloop
	 * need not be image 0: a burst may end in libc or ld.so), whether a
	 * burst saw its entry or not (report/plan.c args_unseen) */
	assert_int_equal(tu_sh("grep -q '^dcpi-plan 1$' %s/db/00000001/plan.txt", t.dir), 0);
	assert_int_equal(tu_sh("grep -Eq '^proc [0-9]+ %" PRIx64 " [0-9a-f]+ "
			       "[a-z0-9,=]*args=03[a-z0-9,=]* vl_scale$' %s/db/00000001/plan.txt",
			       tu_image_off(&t, "vl_scale", 0), t.dir), 0);
	assert_int_equal(tu_sh("%s record --no-calibrate --values --plan auto "
			       "--db %s/db -- %s " ITERS " " SEED " 80 > %s/out2 2> %s/err2",
			       t.bin, t.dir, t.prog, t.dir, t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'plan %s/db/00000001/plan.txt: [1-9][0-9]* procedures "
			       "marked (0 dropped), [1-9][0-9]* calls caught' %s/err2", t.dir,
			       t.dir), 0);
	read_truth("out2");
	truth = (double)k7 / (double)calls;
	got = arg0_share("db", "00000002", "vl_scale", &seen, 7);
	print_message("vl_scale arg0 = 7: %.4f from %" PRIu64 " calls, truth %.4f\n", got, seen,
		      truth);
	/* at least what the plan asked for: the calls a share near the truth
	 * needs for +-3 points at 95% (683 at 80%; the runtime stops near 1,600,
	 * pathrt.h) */
	assert_true(seen >= val_calls_needed(truth, VAL_PLAN_POINTS));
	assert_true(fabs(got - truth) <= 0.03);
	/* vl_add's two arguments vary (an accumulator, a draw): when the plan
	 * marked it, the runtime knows that after some 64-200 calls and
	 * stops, where the plan's need from a few calls was ~1,000 */
	if (!tu_sh("grep -Eq '[ ,]args=03[a-z0-9,=]* vl_add$' %s/db/00000001/plan.txt", t.dir)) {
		arg0_share("db", "00000002", "vl_add", &seen, 7);
		print_message("vl_add: %" PRIu64 " calls\n", seen);
		assert_true(seen >= 64 && seen < val_calls_needed(truth, VAL_PLAN_POINTS));
	}
	/* the epoch says it had a plan, and how many calls it caught */
	assert_int_equal(tu_sh("grep -q 'plan=[1-9][0-9]* plan-calls=[1-9]' %s/db/00000002/meta",
			       t.dir), 0);
	counted_calls();
}

static void test_needed(void **state)
{
	char cmd[1200], line[512];
	unsigned long seen, need, pct;
	uint64_t lseen;
	double share;

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s vargs --db %s/db --epoch 00000001 vl_scale | "
		 "grep 'calls seen'", t.bin, t.dir);
	tu_sh_line(cmd, line, sizeof(line));
	print_message("%s\n", line);
	assert_int_equal(sscanf(line, " %lu calls seen; for +-3 points at %lu%% about %lu calls "
				"are needed", &seen, &pct, &need), 3);
	assert_non_null(strstr(line, "--plan auto"));
	if (!seen) {	/* no burst saw the entry (a CI run): the least certain share */
		assert_int_equal(pct, 50);
		assert_int_equal(need, val_calls_needed(0.5, 0.03));
		assert_non_null(strstr(line, "no burst saw its entry"));
		return;
	}
	/* the share vargs prints is its top value's: with few calls seen (one,
	 * in a CI run) not always 7's */
	share = arg0_share("db", "00000001", "vl_scale", &lseen, -1);
	assert_int_equal(seen, lseen);
	assert_int_equal(pct, (unsigned long)lround(100 * share));
	assert_int_equal(need, val_calls_needed(val_share_adjusted(share, lseen), 0.03));
	assert_true(need > seen);
	{	/* and the burst rate that would see them: need / seen, rounded up */
		char want[64];

		snprintf(want, sizeof(want), "about %lux this run's burst rate",
			 (need + seen - 1) / seen);
		assert_non_null(strstr(line, want));
	}
	/* the binomial itself: 80% +-3 points at 95% needs 683 */
	assert_int_equal(val_calls_needed(0.8, 0.03), 683);
	assert_int_equal(val_calls_needed(0.5, 0.03), 1068);
}

static void test_plan_changed(void **state)
{
	(void)state;
	/* every image of the plan rebuilt since */
	assert_int_equal(tu_sh("sed 's/^image \\([0-9]*\\) [0-9a-f-]* /image \\1 0123abcd /' "
			       "%s/db/00000001/plan.txt > %s/other.txt", t.dir, t.dir), 0);
	assert_int_equal(tu_sh("%s record --no-calibrate --values --plan %s/other.txt "
			       "--db %s/db2 -- %s 1000000 > /dev/null 2> %s/err3", t.bin, t.dir,
			       t.dir, t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -q ': 0 procedures marked ([1-9][0-9]* dropped), 0 calls' "
			       "%s/err3", t.dir), 0);
	assert_int_not_equal(tu_sh("%s record --no-calibrate --no-values --plan auto "
				   "--db %s/db -- %s 1000 > /dev/null 2> %s/err4", t.bin, t.dir,
				   t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'plan needs value samples' %s/err4", t.dir), 0);
	assert_int_not_equal(tu_sh("%s record --no-calibrate --values --plan auto "
				   "--db %s/empty -- %s 1000 > /dev/null 2> %s/err5", t.bin, t.dir,
				   t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'no epoch of .* has a plan' %s/err5", t.dir), 0);
	/* a run too short for a burst: no value sample, no plan, and it says so */
	assert_int_equal(tu_sh("%s record --no-calibrate --values --paths 1:32 --db %s/tiny "
			       "-- %s 1000 > /dev/null 2> %s/err6", t.bin, t.dir, t.prog, t.dir),
			 0);
	assert_int_equal(tu_sh("grep -q ': 0 value samples' %s/err6 && grep -q 'no plan "
			       "written: no burst took a value sample (0 bursts)' %s/err6 && "
			       "! test -e %s/tiny/00000001/plan.txt", t.dir, t.dir, t.dir), 0);
}

/* A plan file marking procedure p of img (at path) with why, as name. */
static void write_plan(const char *plan, const struct image *img, const char *path,
		       const struct img_proc *p, const char *why, const char *name)
{
	uint64_t off;
	FILE *f;

	assert_int_equal(img_vaddr_to_offset(img, p->addr, &off), 0);
	assert_non_null(f = fopen(plan, "w"));
	fprintf(f, "%s\nimage 0 %s %s\nproc 0 %" PRIx64 " %" PRIx64 " %s %s\n", VAL_PLAN_MAGIC,
		img_build_id(img)[0] ? img_build_id(img) : "-", path, off, p->size, why, name);
	fclose(f);
}

static void test_plan_robust(void **state)
{
	static const struct {
		const char *mode;
		int caught;	/* calls must be caught */
	} modes[] = { { "trap", 1 }, { "block", 1 }, { "threads", 0 }, { "fork", 0 } };
	char pl[PATH_MAX], plan[600];
	struct image *pimg = NULL;
	struct dcpi_err err = { 0 };
	const struct img_proc *p;

	(void)state;
	snprintf(pl, sizeof(pl), "%s/workloads/pathloop", t.build);
	assert_int_equal(img_open(pl, IMG_NO_DWARF, &pimg, &err), 0);
	assert_non_null(p = img_proc_by_name(pimg, "pl_loop"));
	snprintf(plan, sizeof(plan), "%s/pathloop.plan", t.dir);
	write_plan(plan, pimg, pl, p, "hot,args", "pl_loop");
	img_close(pimg);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		print_message("pathloop %s\n", modes[i].mode);
		assert_int_equal(tu_sh("%s record --no-calibrate --values --paths 1000:32 "
				       "--plan %s --db %s/robust -- %s %s 100000000 > /dev/null "
				       "2> %s/rerr", t.bin, plan, t.dir, pl, modes[i].mode, t.dir),
				 0);
		assert_int_equal(tu_sh("grep -q ': 1 procedures marked (0 dropped), %s calls' "
				       "%s/rerr", modes[i].caught ? "[1-9][0-9]*" : "[0-9]*",
				       t.dir), 0);
	}
}

static void test_unseen_args(void **state)
{
	(void)state;
	assert_int_equal(tu_sh("%s record --no-calibrate --values --paths 4:32 --db %s/unseen "
			       "-- %s " ITERS " " SEED " 80 > /dev/null 2> %s/uerr1", t.bin, t.dir,
			       t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -Eq '^proc [0-9]+ %" PRIx64 " [0-9a-f]+ "
			       "[a-z0-9,=]*args=03[a-z0-9,=]* vl_scale$' %s/unseen/00000001/plan.txt",
			       tu_image_off(&t, "vl_scale", 0), t.dir), 0);
	/* a burst may still have seen it; if none did, vargs says so */
	assert_int_equal(tu_sh("%s vargs --db %s/unseen --epoch 00000001 vl_scale > %s/uv; "
			       "grep -q ' 0 calls seen' %s/uv || grep -q ' [1-9][0-9]* calls seen' "
			       "%s/uv", t.bin, t.dir, t.dir, t.dir, t.dir), 0);
	assert_int_equal(tu_sh("! grep -q ' 0 calls seen' %s/uv || grep -q 'at 50%% about %lu "
			       "calls are needed (no burst saw its entry' %s/uv", t.dir,
			       (unsigned long)val_calls_needed(0.5, 0.03), t.dir), 0);
	/* at record's default rate: at a low one the breakpoint has few ticks
	 * to be armed at (at 2 a second an ASan build caught 139 calls alone,
	 * none in a CI run; 2,114 at the default rate) */
	assert_int_equal(tu_sh("%s record --no-calibrate --values --plan auto "
			       "--db %s/unseen -- %s " ITERS " " SEED " 80 > /dev/null 2> %s/uerr2",
			       t.bin, t.dir, t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'procedures marked (0 dropped), [1-9][0-9]* calls "
			       "caught' %s/uerr2", t.dir), 0);
}

/* The runtime calls clock_gettime in its timer and trap handlers, where
 * SIGTRAP is blocked: a breakpoint armed at its entry must not be met
 * there (collect/pathrt.c bp_guard). */
static void test_plan_own_callee(void **state)
{
	char plan[600], path[PATH_MAX];
	struct image *libc = NULL;
	struct dcpi_err err = { 0 };
	const struct img_proc *p;
	Dl_info di;

	(void)state;
	assert_true(dladdr((void *)clock_gettime, &di) && di.dli_fname && di.dli_saddr);
	/* the mapping's name (/lib is a link to /usr/lib on Debian) */
	assert_non_null(realpath(di.dli_fname, path));
	assert_int_equal(img_open(path, IMG_NO_DWARF, &libc, &err), 0);
	p = img_proc_at(libc, (uint64_t)((uintptr_t)di.dli_saddr - (uintptr_t)di.dli_fbase));
	assert_non_null(p);
	snprintf(plan, sizeof(plan), "%s/own.plan", t.dir);
	write_plan(plan, libc, path, p, "hot,args=03", "clock_gettime");
	img_close(libc);
	for (int run = 0; run < 3; run++)
		assert_int_equal(tu_sh("%s record --no-calibrate --values --paths 1000:32 "
				       "--plan %s --db %s/own -- %s 20000000 " SEED " 80 > /dev/null "
				       "2> %s/oerr", t.bin, plan, t.dir, t.prog, t.dir), 0);
	assert_int_equal(tu_sh("grep -q ': 1 procedures marked (0 dropped)' %s/oerr", t.dir), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_plan_auto),
	cmocka_unit_test(test_needed),
	cmocka_unit_test(test_plan_changed),
	cmocka_unit_test(test_plan_robust),
	cmocka_unit_test(test_unseen_args),
	cmocka_unit_test(test_plan_own_callee))
