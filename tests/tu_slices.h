/*
 * tests/tu_slices.h - what the tests of time slices share (test_phase.c,
 * test_timeline.c, test_timeline_zlib.c): the reports' time 0 of a recorded
 * database (report/phases.c's rep_slice_seconds counts from it).
 * Include after cmocka.h.
 */
#ifndef DCPI_TU_SLICES_H
#define DCPI_TU_SLICES_H

#include "dcpi/profile.h"
#include "dcpi/timeline.h"

/* The reports' time 0, in seconds: the start of db's epoch 00000001's
 * first slice. */
static inline double tu_first_slice(const char *db)
{
	struct rep_slices s;
	struct prof_db *pdb;
	struct dcpi_err err = { 0 };
	double t0;

	assert_int_equal(prof_db_open(db, 0, &pdb, &err), 0);
	assert_int_equal(rep_slices_load(pdb, "00000001", &s, &err), 0);
	t0 = (double)s.first * (double)s.slice_ns / 1e9;
	rep_slices_free(&s);
	prof_db_close(pdb);
	return t0;
}

#endif
