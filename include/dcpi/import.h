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

#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/util.h"

enum import_kind {
	IMPORT_UNKNOWN,
	IMPORT_PERF,		/* "PERFILE2" */
	IMPORT_CALLGRIND,	/* "# callgrind format" or an "events:" header */
	IMPORT_PERFSCRIPT,	/* perf script -F ip,brstack text (import/perfscript.c) */
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
 * Where the images of a recording made elsewhere are (perf: --symfs, the
 * build-id cache, --binary; img_locate).  The profiles of an image found
 * elsewhere carry the path where it was found, so reports open that file;
 * the note names the images not found and what they cost.
 */
struct import_opts {
	struct img_locate_opts find;
	/* Add only the branch records and the IBS/PEBS samples into this
	 * epoch, which the caller has begun and will commit (the live
	 * collector's hardware evidence, collect/hwspool.c); NULL: a new
	 * epoch of everything. */
	const char *into_epoch;
};
int import_file_opts(const char *path, const struct import_opts *o, struct prof_db *db,
		     struct import_stats *st, struct dcpi_err *err);
int import_perf_opts(const char *path, const struct import_opts *o, struct prof_db *db,
		     struct import_stats *st, struct dcpi_err *err);
/* perf script's branch-stack text (docs/import.md "perf script text"). */
int import_perfscript_opts(const char *path, const struct import_opts *o, struct prof_db *db,
			   struct import_stats *st, struct dcpi_err *err);

/*
 * Branch-record counts of one image (perf record -b; import/lbr.c,
 * docs/import.md "Branch records are counts"), as AutoFDO and llvm-profgen
 * count them: every (from, to) entry of a stack is one taken branch, and the
 * straight-line range between two consecutive entries (the older one's
 * target to the newer one's source) ran once.  Offsets are file offsets;
 * a range's end is its last instruction executed.  IMPORT_LBR_OUTSIDE is
 * the other end of a branch into or out of the image.
 */
#define IMPORT_LBR_OUTSIDE UINT64_MAX

struct import_lbr_range {
	uint64_t begin, end;
	double count;		/* occurrences x range_scale */
};

struct import_lbr_branch {
	uint64_t from, to;
	double count;		/* occurrences x branch_scale */
};

struct import_lbr {
	uint64_t stacks;	/* stacks of the recording (all images) */
	uint64_t entries;	/* their entries, after the quirks */
	uint64_t slots;		/* consecutive pairs: places a range can be */
	double period;		/* the sampled event's (mean) period */
	int taken;		/* the event counts taken branches: absolute */
	char event[64];
	/* executions one occurrence stands for: period / ranges per stack
	 * (period / entries per stack for branches) when taken, else
	 * 1 (ranges) and slots / entries (branches): relative */
	double range_scale, branch_scale;
	struct import_lbr_range *ranges;	/* sorted by (begin, end) */
	size_t nranges;
	struct import_lbr_branch *branches;	/* sorted by (from, to) */
	size_t nbranches;
};

/* The file name, inside an epoch directory, of an image's branch counts. */
int import_lbr_name(const struct prof_image_id *id, char *out, size_t len);
/* Add image id's branch counts in epoch to *out (zeroed first by the
 * caller); 0 and nothing added when there are none.  Free with
 * import_lbr_free. */
int import_read_lbr(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
		    struct import_lbr *out, struct dcpi_err *err);
void import_lbr_free(struct import_lbr *l);

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
