/*
 * import.h - profiles made by other tools, imported into the database as one
 * new epoch each (docs/import.md).
 *
 *   perf.data    perf record's file, read directly (no perf binary needed):
 *                samples become (image, file offset, event) counts through
 *                each process's mappings, as the live collector does.
 *   callgrind    valgrind --tool=callgrind --dump-instr=yes output: exact
 *                per-instruction execution counts ("callgrind-Ir"), simulated
 *                cache and branch events, and jump counts kept per image as
 *                edges (DCPI sec. 6.2 used dcpix the same way, as ground truth).
 *
 * Imported data cannot be calibrated: the epoch metadata says calibrated = 0.
 */
#ifndef DCPI_IMPORT_H
#define DCPI_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"
#include "dcpi/util.h"

enum import_kind {
	IMPORT_UNKNOWN,
	IMPORT_PERF,		/* "PERFILE2" */
	IMPORT_CALLGRIND,	/* "# callgrind format" or an "events:" header */
};

struct import_stats {
	enum import_kind kind;
	uint64_t samples;		/* perf: samples; callgrind: cost lines read */
	uint64_t lost;			/* perf: samples the kernel dropped */
	uint64_t unknown_samples;	/* mapped to no image (kept in "[unknown]") */
	uint64_t unknown_records;	/* perf record types skipped */
	uint64_t skipped;		/* perf: samples of no known event; callgrind:
					 * costs in objects that could not be mapped */
	uint64_t images;		/* distinct images written */
	uint64_t profiles;		/* (image, event) profiles written */
	uint64_t jumps;			/* callgrind: jump edges written */
	uint64_t jumps_dropped;		/* callgrind: jumps leaving their object */
	int truncated;			/* the file ended early; what was complete
					 * was imported (note says where) */
	char epoch[64];			/* the epoch written */
	/* perf: where and how it was recorded, for calibrating at import */
	char hostname[65];		/* HEADER_HOSTNAME, "" when absent */
	char event[64];			/* the first event's name */
	double period;			/* its period (mean in frequency mode) */
	int period_ns;			/* the period counts ns (cpu-clock, task-clock) */
	char note[DCPI_ERR_MAX];	/* what was dropped, for the tool to print */
};

/* Which importer reads path (from its first bytes). */
int import_detect(const char *path, enum import_kind *kind, struct dcpi_err *err);

/* Import path into a new epoch of db; st is filled even on some errors. */
int import_perf(const char *path, struct prof_db *db, struct import_stats *st,
		struct dcpi_err *err);
int import_callgrind(const char *path, struct prof_db *db, struct import_stats *st,
		     struct dcpi_err *err);
/* import_detect, then the right importer. */
int import_file(const char *path, struct prof_db *db, struct import_stats *st,
		struct dcpi_err *err);

/*
 * Jump edges of one image from callgrind's --collect-jumps, by file offset.
 * A conditional jump from one place is one record with its taken count and
 * the number of times the branch executed.
 */
struct import_jump {
	uint64_t from;		/* file offset of the jump instruction */
	uint64_t to;		/* file offset of the target */
	uint64_t count;		/* times the jump was taken */
	uint64_t executed;	/* times the jump instruction ran (conditional) or count */
	int conditional;
};

/* The file name, inside an epoch directory, of an image's jump edges. */
int import_jumps_name(const struct prof_image_id *id, char *out, size_t len);
/* Read the jump edges of image id in epoch, sorted by (from, to).  *n = 0
 * and 0 returned when the epoch has none for that image.  Free with free(). */
int import_read_jumps(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
		      struct import_jump **out, size_t *n, struct dcpi_err *err);

#endif /* DCPI_IMPORT_H */
