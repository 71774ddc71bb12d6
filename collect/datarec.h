/*
 * collect/datarec.h - data profiles from the runtime's spool (datarec.c;
 * docs/data.md): `dcpi record` with value samples calls data_spool_collect
 * after the command ends.
 */
#ifndef DCPI_COLLECT_DATAREC_H
#define DCPI_COLLECT_DATAREC_H

#include <stdint.h>

#include "dcpi/data.h"

struct data_rec_stats {
	uint64_t accesses;	/* loads and stores placed */
	uint64_t space[DATA_NSPACES];	/* of them per space */
	uint64_t blocks;	/* heap blocks the runtime recorded */
	uint64_t shared;	/* lines shared in at least one window */
	uint64_t kio_bytes;	/* bytes the kernel moved in or out of recorded blocks */
	uint64_t profiles;	/* data profiles written */
};

/* Read the spool files and heap records of dir; one data profile per
 * image of the accessing instructions, merged into epoch of db. */
int data_spool_collect(const char *dir, struct prof_db *db, const char *epoch,
		       struct data_rec_stats *st, struct dcpi_err *err);
/* The same into memory (tests): *out has *n profiles (data_profiles_free). */
int data_spool_read(const char *dir, struct data_profile **out, size_t *n,
		    struct data_rec_stats *st, struct dcpi_err *err);

#endif /* DCPI_COLLECT_DATAREC_H */
