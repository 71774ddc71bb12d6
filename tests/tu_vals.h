/*
 * tests/tu_vals.h - what the tests of the value reports share
 * (test_vreports.c, test_vspec.c): hotlists fed a known stream, a
 * database of a cycles profile with value profiles beside it, and a
 * procedure's CFG and entry, where the values go.  Header-only;
 * include after <cmocka.h>.
 */
#ifndef DCPI_TU_VALS_H
#define DCPI_TU_VALS_H

#include <stdio.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "testutil.h"
#include "tu_run.h"

/* A value-report test program's fixture: dcpi (DCPI_BIN), the image the
 * values are of (wl), another one (other), the workspace (dir), and whether
 * its databases are made. */
struct tu_vals {
	const char *bin;
	char dir[256], wl[1024], other[1024];
	int have_db;
};

/* A cmocka group setup's part: t (in *state) with the workloads wl and
 * other of the build and a new workspace named after name; 0, or -1 with
 * errno. */
static inline int tu_vals_setup(void **state, struct tu_vals *t, const char *wl,
				const char *other, const char *name)
{
	*state = t;
	t->bin = getenv("DCPI_BIN");
	tu_build_file(t->wl, sizeof(t->wl), wl);
	tu_build_file(t->other, sizeof(t->other), other);
	return tu_workspace(t->dir, sizeof(t->dir), name);
}

/* The group teardown: the workspace of the fixture in *state removed,
 * unless KEEP is set. */
static inline int tu_vals_teardown(void **state)
{
	tu_rm_unless_kept(((struct tu_vals *)*state)->dir);
	return 0;
}

/* Whether t's databases are to be made now, by the caller (once, by the
 * first test that needs them); the test is skipped without tests/run.sh. */
static inline int tu_vals_to_make(struct tu_vals *t)
{
	tu_need_run(t->bin != NULL);
	return !t->have_db++;
}

/* Run `dcpi CMD --db DIR/DB --json` (db: the database's name in t's
 * workspace and any further arguments) and the python check py on it. */
static inline void tu_vcheck(const struct tu_vals *t, const char *cmd, const char *db,
			     const char *py)
{
	char args[1024];

	snprintf(args, sizeof(args), "%s --db %s/%s", cmd, t->dir, db);
	tu_check_json(t->bin, t->dir, args, py);
}

/* dcpi CMD fails on t's database without values (novals; the further
 * arguments args) saying how to record them, and on the database db with an
 * unknown procedure, naming it. */
static inline void tu_vals_errors(const struct tu_vals *t, const char *cmd, const char *args)
{
	assert_int_not_equal(tu_sh("%s %s --db %s/novals %s > /dev/null 2> %s/err.txt", t->bin,
				   cmd, t->dir, args, t->dir), 0);
	assert_int_equal(tu_sh("grep -q 'no value samples in %s/novals/.*: record with dcpi "
			       "record --values' %s/err.txt", t->dir, t->dir), 0);
	assert_int_not_equal(tu_sh("%s %s --db %s/db no_such_proc > /dev/null 2> %s/err.txt",
				   t->bin, cmd, t->dir, t->dir), 0);
	assert_int_equal(tu_sh("grep -q no_such_proc %s/err.txt", t->dir), 0);
}

/*
 * Offer n values to the (offset o, kind) list: value a with probability pa,
 * else b with probability pb, else one of `spread` others (1000 + i).
 */
static inline void tu_val_feed(struct val_profile *vp, struct val_rng *r, uint64_t o,
			       uint32_t kind, size_t n, uint64_t a, double pa, uint64_t b,
			       double pb, unsigned spread)
{
	struct val_hotlist *h = val_profile_list(vp, o, kind);

	assert_non_null(h);
	for (size_t i = 0; i < n; i++) {
		double u = val_rng_unit(r);
		uint64_t v = u < pa ? a : u < pa + pb ? b : 1000 + val_rng_next(r) % spread;

		val_hotlist_add(h, v, r);
	}
	vp->samples += n;
}

/* Feed the value profile vp (its image id set) its hotlists. */
typedef void (*tu_fill_values)(struct val_profile *vp);

/* A database at dir/name whose one epoch holds a cycles profile of image
 * with the n samples at (testutil.h's tu_cycles_db) and, unless fill is
 * NULL, a value profile of image that fill feeds, normalized. */
static inline void tu_vals_db(const char *dir, const char *name, const char *image,
			      const struct tu_at *at, size_t n, tu_fill_values fill)
{
	struct dcpi_err err = { 0 };
	struct val_profile vp;
	struct prof_db *db;
	char path[PROF_PATH_MAX], epoch[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	tu_cycles_db(path, image, at, n, &db, epoch, sizeof(epoch));
	if (fill) {
		val_profile_init(&vp);
		assert_int_equal(prof_image_id_from_file(&vp.image, image, &err), 0);
		fill(&vp);
		assert_int_equal(val_profile_normalize(&vp), 0);
		assert_int_equal(val_epoch_write(db, epoch, &vp, &err), 0);
		val_profile_free(&vp);
	}
	prof_db_close(db);
}

/* The CFG of procedure proc of img, and the file offset of its entry. */
static inline struct cfg *tu_img_proc_cfg(struct image *img, const char *proc,
					  uint64_t *entry)
{
	const struct img_proc *p;
	struct dcpi_err err = { 0 };
	struct cfg *cfg;

	assert_int_equal(img_proc_find(img, proc, &p, &err), 0);
	assert_int_equal(img_vaddr_to_offset(img, p->addr, entry), 0);
	assert_int_equal(cfg_build(img, p, &cfg, &err), 0);
	return cfg;
}

#endif /* DCPI_TU_VALS_H */
