/*
 * tests/tu_vals.h - what the tests of the value reports share
 * (test_vreports.c, test_vspec.c): hotlists fed a known stream, and a
 * database of a cycles profile with value profiles beside it.  Header-only;
 * include after <cmocka.h>.
 */
#ifndef DCPI_TU_VALS_H
#define DCPI_TU_VALS_H

#include <stdio.h>

#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "testutil.h"

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

/* Write the value profiles of image into epoch of db. */
typedef void (*tu_write_values)(struct prof_db *db, const char *epoch, const char *image);

/* A database at dir/name whose one epoch holds a cycles profile of image
 * with the n samples at (testutil.h's tu_cycles_db) and, unless values is
 * NULL, the value profiles it writes. */
static inline void tu_vals_db(const char *dir, const char *name, const char *image,
			      const struct tu_at *at, size_t n, tu_write_values values)
{
	struct prof_db *db;
	char path[256], epoch[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	tu_cycles_db(path, image, at, n, &db, epoch, sizeof(epoch));
	if (values)
		values(db, epoch, image);
	prof_db_close(db);
}

#endif /* DCPI_TU_VALS_H */
