/*
 * test_valrec.c - value samples end to end (docs/values.md): `dcpi record
 * --values` on tests/workloads/valloop.c, whose values are known exactly
 * (it prints the counts), and the value profiles it writes:
 *   - vl_scale's first argument is 7 in the share the workload printed,
 *     within sampling error; its load of vl_mode is always 5, from the
 *     address of vl_mode;
 *   - the indirect call through vl_ops goes to vl_add and vl_sub in the
 *     printed shares (tagged code values: file offsets of the image);
 *   - vl_walk's load strides by 8 bytes, always;
 *   - vl_scale's call site is the return address of a call in main;
 *   - the conditional branch of vl_walk's loop is taken 63 times in 64;
 *   - no value profile without --values; --values with --no-paths refused.
 * The spool reader on a hand-made PRT_VBURST record of valloop's code gives
 * exactly the values the registers say (test_spool_values).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_image.h"
#include "../collect/pathrt.h"
#include "../collect/paths.h"
#include "../collect/values_spool.h"
#include "tu_main.h"

static struct tu_image t;

TU_IMAGE_GROUP(t, "valrec", "workloads/valloop")

/* The value profile of valloop in the latest epoch of db. */
static void read_values(const char *db, struct val_profile **v, size_t *n,
			const struct val_profile **mine)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char path[600], epoch[64];

	snprintf(path, sizeof(path), "%s/%s", t.dir, db);
	assert_int_equal(prof_db_open(path, 0, &d, &err), 0);
	assert_int_equal(prof_db_latest_epoch(d, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(val_epoch_read(d, epoch, v, n, &err), 0);
	prof_db_close(d);
	*mine = NULL;
	for (size_t i = 0; i < *n; i++) {
		size_t l = strlen((*v)[i].image.path);

		if (l >= 8 && !strcmp((*v)[i].image.path + l - 8, "/valloop"))
			*mine = &(*v)[i];
	}
}

/* The share of value in (offset, kind); -1 when the list is absent. */
static double share(const struct val_profile *p, uint64_t off, uint32_t kind, uint64_t value,
		    uint64_t *seen)
{
	const struct val_hotlist *h = val_profile_find(p, off, kind);

	*seen = h ? h->seen : 0;
	if (!h)
		return -1;
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].value == value)
			return val_hotlist_share(h, i);
	return 0;
}

/* Within 4 binomial sigmas of n observations, plus 2 points for the
 * hotlist's own error (tests/test_values.c bounds it). */
static void near(const char *what, double got, double truth, uint64_t n)
{
	double tol = 4 * sqrt(truth * (1 - truth) / (double)(n ? n : 1)) + 0.02;

	print_message("%s: %.3f, truth %.3f, %" PRIu64 " seen, tolerance %.3f\n", what, got,
		      truth, n, tol);
	assert_true(n >= 30);
	assert_true(fabs(got - truth) <= tol);
}

static void test_valloop(void **state)
{
	unsigned long calls, k7, adds, subs, walks;
	struct val_profile *v;
	const struct val_profile *p;
	const struct val_hotlist *h;
	uint64_t seen, walk_load = 0, main_lo, main_hi;
	double got;
	char out[600];
	size_t n;
	FILE *f;

	(void)state;
	assert_int_equal(tu_sh("%s record --no-calibrate --values --paths 250:128 --db %s/db "
			       "-- %s 60000000 > %s/out 2> %s/err", t.bin, t.dir, t.prog, t.dir,
			       t.dir), 0);
	snprintf(out, sizeof(out), "%s/out", t.dir);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "calls %lu k7 %lu add %lu sub %lu walks %lu", &calls, &k7,
				&adds, &subs, &walks), 5);
	fclose(f);
	assert_int_equal(tu_sh("grep -q 'value samples' %s/err", t.dir), 0);
	read_values("db", &v, &n, &p);
	assert_non_null(p);
	assert_true(p->samples > 1000);

	/* vl_scale(k, x): k = 7 in k7 / calls */
	got = share(p, tu_image_off(&t, "vl_scale", 0), VAL_ARG0, 7, &seen);
	near("vl_scale arg0 = 7", got, (double)k7 / (double)calls, seen);
	/* its call site: a return address inside main */
	h = val_profile_find(p, tu_image_off(&t, "vl_scale", 0), VAL_CALLSITE);
	assert_non_null(h);
	main_lo = tu_image_off(&t, "main", 0);
	main_hi = main_lo + img_proc_by_name(t.img, "main")->size;
	assert_true(h->t[0].value >= main_lo && h->t[0].value < main_hi);
	assert_true(val_hotlist_share(h, 0) > 0.95);

	/* the load of vl_mode in vl_scale (the instruction reading memory) */
	{
		const struct img_proc *sc = img_proc_by_name(t.img, "vl_scale");
		const struct img_proc *mode = img_proc_by_name(t.img, "vl_mode");
		int found = 0;

		(void)mode;
		for (uint64_t d = 0; d < sc->size; d++) {
			uint64_t o = tu_image_off(&t, "vl_scale", d);

			if (!(h = val_profile_find(p, o, VAL_LOAD)))
				continue;
			found = 1;
			assert_int_equal(h->t[0].value, 5);
			assert_true(val_hotlist_share(h, 0) > 0.99);
			h = val_profile_find(p, o, VAL_ADDR);
			assert_non_null(h);
			assert_true(val_hotlist_share(h, 0) > 0.99);	/* one address */
		}
		assert_true(found);
	}

	/* the indirect call in main: vl_add adds / calls, vl_sub the rest */
	{
		uint64_t lo = main_lo, add = tu_image_off(&t, "vl_add", 0);
		uint64_t sub = tu_image_off(&t, "vl_sub", 0);
		int found = 0;

		for (uint64_t o = lo; o < main_hi; o++) {
			if (!(h = val_profile_find(p, o, VAL_TARGET)))
				continue;
			found = 1;
			got = share(p, o, VAL_TARGET, VAL_CODE(0, add), &seen);
			near("target vl_add", got, (double)adds / (double)calls, seen);
			got = share(p, o, VAL_TARGET, VAL_CODE(0, sub), &seen);
			near("target vl_sub", got, (double)subs / (double)calls, seen);
		}
		assert_true(found);
	}

	/* vl_walk: its load strides by 8; its loop branch is taken 63 in 64 */
	{
		const struct img_proc *w = img_proc_by_name(t.img, "vl_walk");
		int branches = 0;

		for (uint64_t d = 0; d < w->size; d++) {
			uint64_t o = tu_image_off(&t, "vl_walk", d);

			if ((h = val_profile_find(p, o, VAL_STRIDE)) && h->seen >= 30) {
				walk_load = o;
				assert_int_equal(h->t[0].value, 8);
				assert_true(val_hotlist_share(h, 0) > 0.99);
			}
			if ((h = val_profile_find(p, o, VAL_BRANCH)) && h->seen >= 30 &&
			    (got = share(p, o, VAL_BRANCH, 1, &seen)) > 0.5) {
				branches++;
				near("vl_walk loop branch taken", got, 63.0 / 64.0, seen);
			}
		}
		assert_true(walk_load != 0);
		assert_int_equal(branches, 1);
	}
	val_profiles_free(v, n);
}

/* The instructions of procedure name (cfg_decode; free *out). */
static void decode_proc(const char *name, struct cfg_insn **out, size_t *n)
{
	const struct img_proc *p = img_proc_by_name(t.img, name);
	struct dcpi_err err = { 0 };
	size_t avail = 0;
	const uint8_t *b;

	assert_non_null(p);
	b = img_bytes(t.img, p->addr, &avail);
	assert_non_null(b);
	assert_true(avail >= p->size);
	assert_int_equal(cfg_decode(b, p->size, p->addr, out, n, &err), 0);
}

static void put(FILE *f, uint32_t type, const void *body, size_t len)
{
	struct prt_rec h = { PRT_MAGIC, type, (uint32_t)(sizeof(h) + len), 42, 42, 0, 0 };

	assert_int_equal(fwrite(&h, sizeof(h), 1, f), 1);
	assert_int_equal(fwrite(body, len, 1, f), 1);
}

/*
 * A hand-made spool: valloop mapped at B, one PRT_VBURST of main's call of
 * vl_scale, vl_scale's entry (rdi = 7, rsi = 1000), its rip-relative load of
 * vl_mode and the instruction after it (rax = 5).  The reader must give
 * exactly: the arguments, the call site (the call's return address), the
 * load's address (B + vl_mode's address) and value, and nothing for the
 * burst's first step, not even as the reference of a stride.
 */
static void test_spool_values(void **state)
{
	const uint64_t B = 0x555555554000;
	struct cfg_insn *mn, *sc;
	size_t nm, ns, nv = 0, np = 0;
	const struct cfg_insn *call = NULL, *ld = NULL, *after = NULL;
	const struct img_proc *scale = img_proc_by_name(t.img, "vl_scale");
	uint64_t pcs[4], off;
	struct prt_regs regs[4];
	struct val_profile *v = NULL;
	struct path_profile *pp = NULL;
	struct paths_stats st;
	struct dcpi_err err = { 0 };
	const struct val_profile *p = NULL;
	const struct val_hotlist *h;
	char path[600], maps[700], body[4 * 8 + 4 * sizeof(struct prt_regs)];
	FILE *f;

	(void)state;
	decode_proc("main", &mn, &nm);
	for (size_t i = 0; i < nm && !call; i++)
		if ((mn[i].flags & CFG_I_CALL) && mn[i].target == scale->addr)
			call = &mn[i];
	decode_proc("vl_scale", &sc, &ns);
	for (size_t i = 0; i + 1 < ns && !ld; i++)
		if (sc[i].nmem == 1 && sc[i].mem.rip_relative && (sc[i].flags & CFG_I_LOAD)) {
			ld = &sc[i];
			after = &sc[i + 1];
		}
	assert_non_null(call);
	assert_non_null(ld);
	/* file offsets: the whole file mapped at B, so pc = B + offset */
	assert_int_equal(img_vaddr_to_offset(t.img, call->addr, &off), 0);
	pcs[0] = B + off;
	assert_int_equal(img_vaddr_to_offset(t.img, scale->addr, &off), 0);
	pcs[1] = B + off;
	assert_int_equal(img_vaddr_to_offset(t.img, ld->addr, &off), 0);
	pcs[2] = B + off;
	assert_int_equal(img_vaddr_to_offset(t.img, after->addr, &off), 0);
	pcs[3] = B + off;
	memset(regs, 0, sizeof(regs));
	regs[1].r[7] = 7;		/* rdi */
	regs[1].r[6] = 1000;		/* rsi */
	regs[1].r[2] = 0x1234;		/* rdx */
	for (int i = 0; i < 4; i++)
		regs[i].r[4] = 0x7ffff000;	/* rsp */
	regs[3].r[0] = 5;		/* rax after the load */
	memcpy(body, pcs, sizeof(pcs));
	memcpy(body + sizeof(pcs), regs, sizeof(regs));
	snprintf(path, sizeof(path), "%s/spool", t.dir);
	assert_int_equal(tu_sh("mkdir -p %s", path), 0);
	snprintf(path, sizeof(path), "%s/spool/42-0.spool", t.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	snprintf(maps, sizeof(maps), "%llx %llx 0 %s\n", (unsigned long long)B,
		 (unsigned long long)B + 0x100000, t.prog);
	put(f, PRT_MAPS, maps, strlen(maps));
	put(f, PRT_VBURST, body, sizeof(body));
	/* a second burst starting at the load, which runs again at step 2: its
	 * only earlier run is step 0, whose address is not a value, so no
	 * stride */
	{
		uint64_t again[4] = { pcs[2], pcs[3], pcs[2], pcs[3] };

		memcpy(body, again, sizeof(again));
		put(f, PRT_VBURST, body, sizeof(body));
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/spool", t.dir);
	assert_int_equal(paths_spool_read_values(path, &pp, &np, &st, &v, &nv, NULL, &err), 0);
	for (size_t i = 0; i < nv; i++)
		if (strstr(v[i].image.path, "/valloop"))
			p = &v[i];
	assert_non_null(p);
	assert_int_equal(p->samples, 6);	/* the first step of each gives none */
	assert_int_equal(st.values.samples, 6);
	off = pcs[1] - B;
	h = val_profile_find(p, off, VAL_ARG0);
	assert_non_null(h);
	assert_int_equal(h->t[0].value, 7);
	assert_int_equal(h->seen, 1);
	assert_int_equal(val_profile_find(p, off, VAL_ARG0 + 1)->t[0].value, 1000);
	assert_int_equal(val_profile_find(p, off, VAL_ARG0 + 2)->t[0].value, 0x1234);
	h = val_profile_find(p, off, VAL_CALLSITE);
	assert_non_null(h);
	assert_int_equal(h->t[0].value, VAL_CODE(0, pcs[0] - B + call->size));
	off = pcs[2] - B;
	h = val_profile_find(p, off, VAL_LOAD);
	assert_non_null(h);
	assert_int_equal(h->t[0].value, 5);
	h = val_profile_find(p, off, VAL_ADDR);
	assert_non_null(h);
	/* rip-relative: vl_mode's address as the program sees it, base + vaddr
	 * (text here has offset == vaddr, so pc = B + vaddr too) */
	assert_int_equal(pcs[2] - B, ld->addr);
	assert_int_equal(h->t[0].value, B + (uint64_t)ld->mem.disp);
	assert_null(val_profile_find(p, pcs[2] - B, VAL_STRIDE));
	/* nothing of the call itself (step 0) */
	assert_null(val_profile_find(p, pcs[0] - B, VAL_ADDR));
	assert_null(val_profile_find(p, pcs[0] - B, VAL_TARGET));
	val_profiles_free(v, nv);
	path_profiles_free(pp, np);
	free(mn);
	free(sc);
}

static void test_off(void **state)
{
	struct val_profile *v;
	const struct val_profile *p;
	size_t n;

	(void)state;
	/* value samples come with path samples by default; --no-values and
	 * --no-paths each turn them off */
	assert_int_equal(tu_sh("%s record --no-calibrate --paths 250:32 --db %s/on -- %s 20000000 "
			       "> /dev/null 2>&1", t.bin, t.dir, t.prog), 0);
	read_values("on", &v, &n, &p);
	/* the program's own image; a burst may also end in libc or ld.so */
	assert_true(n >= 1);
	assert_non_null(p);
	assert_true(p->samples > 0);
	val_profiles_free(v, n);
	assert_int_equal(tu_sh("%s record --no-calibrate --no-values --db %s/off -- %s 1000000 "
			       "> /dev/null 2>&1", t.bin, t.dir, t.prog), 0);
	read_values("off", &v, &n, &p);
	assert_int_equal(n, 0);
	val_profiles_free(v, n);
	assert_int_equal(tu_sh("%s record --no-calibrate --no-paths --db %s/nop -- %s 1000000 "
			       "> /dev/null 2>&1", t.bin, t.dir, t.prog), 0);
	read_values("nop", &v, &n, &p);
	assert_int_equal(n, 0);
	val_profiles_free(v, n);
	assert_int_not_equal(tu_sh("%s record --no-calibrate --values --no-paths --db %s/bad -- "
				   "%s 1000 > /dev/null 2> %s/bad.err", t.bin, t.dir, t.prog,
				   t.dir), 0);
	assert_int_equal(tu_sh("grep -q 'values needs path samples' %s/bad.err", t.dir), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_spool_values),
	cmocka_unit_test(test_valloop),
	cmocka_unit_test(test_off))
