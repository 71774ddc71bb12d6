/*
 * import/internal.h - what the importers share (import/import.c):
 * a table of counts keyed by (image, event, file offset) and its flush into
 * one profile per (image, event) of a new epoch, and reading a whole file.
 */
#ifndef DCPI_COLLECT_IMPORT_INTERNAL_H
#define DCPI_COLLECT_IMPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/import.h"
#include "dcpi/profile.h"

/* Largest file an importer reads into memory. */
#define IMP_FILE_MAX ((size_t)1 << 32)

struct imp_event {
	char name[PROF_EVENT_MAX];
	double period;			/* in unit; 0 when unknown */
	char unit[16];			/* "ns" or "events" */
};

/* The counts are collect/aggregate.c's table (agg_new, agg_add, agg_free). */
struct agg;

/* The identity of image index i, as the importer numbers its images. */
typedef const struct prof_image_id *(*imp_image_fn)(void *ctx, uint32_t image);

/* Turn a key's offset into the file offset written (callgrind's addresses);
 * nonzero drops the count. NULL: offsets are written as they are. */
typedef int (*imp_offset_fn)(void *ctx, uint32_t image, uint64_t *offset);

/* Write one profile per (image, event) of t into epoch; counts images and
 * profiles into st, and dropped counts into st->skipped. */
int imp_table_flush(struct agg *t, imp_image_fn image_id, imp_offset_fn xlate,
		    void *ctx,
		    const struct imp_event *events, size_t nevents, struct prof_db *db,
		    const char *epoch, struct import_stats *st, struct dcpi_err *err);

/* Read all of path into a malloc'd buffer (NUL-terminated). */
int imp_read_file(const char *path, uint8_t **buf, size_t *len, struct dcpi_err *err);
/* The name "<key><suffix>" of image id's file in an epoch (the key of
 * prof_image_key) into out: 0 or -ENAMETOOLONG. */
int imp_epoch_name(const struct prof_image_id *id, const char *suffix, char *out, size_t len);
/* Image id's text file "<key><suffix>" of the database's epoch into a
 * NUL-terminated malloc'd *text (its path into path, plen bytes): 0, 1
 * when there is none, or a negative errno (a NUL byte in it is one). */
int imp_read_epoch_text(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			const char *suffix, char **text, char *path, size_t plen,
			struct dcpi_err *err);

/*
 * An import is one transaction on a new epoch (docs/profile-format.md,
 * "Crash consistency"): begin makes the epoch (its name into st->epoch) and
 * opens it; end commits when ret is 0 and something was written, else
 * aborts and removes the epoch, so a failed or empty import leaves none.
 * end returns ret, or the commit's error, or -ENODATA naming path.
 */
int imp_epoch_begin(struct prof_db *db, struct import_stats *st, struct dcpi_err *err);
int imp_epoch_end(struct prof_db *db, const char *path, struct import_stats *st, int ret,
		  struct dcpi_err *err);

/* Import a perf.data image in memory (buf, taken and freed): the perf.data
 * reader's work after reading path (import/perfscript.c builds one). */
int imp_perf_buf(const char *path, uint8_t *buf, size_t len, const struct import_opts *o,
		 struct prof_db *db, struct import_stats *st, struct dcpi_err *err);

/* The formats' probes (import.c's table): 1 when head (the file's first n
 * bytes, NUL-terminated) is theirs, 0 when not, < 0 theirs but unreadable. */
int imp_probe_perf(const char *head, size_t n, const char *path, struct dcpi_err *err);
int imp_probe_callgrind(const char *head, size_t n, const char *path, struct dcpi_err *err);
int imp_probe_perfscript(const char *head, size_t n, const char *path, struct dcpi_err *err);

/* Branch-record counts per image (import/lbr.c): kind 'r' a range
 * (begin, end), 'b' a taken branch (from, to). */
struct imp_lbr;
struct imp_lbr_info {
	uint64_t stacks, entries, slots;
	double period;
	int taken;
	char event[64];
};
int imp_lbr_new(struct imp_lbr **out);
void imp_lbr_free(struct imp_lbr *t);
int imp_lbr_add(struct imp_lbr *t, uint32_t image, int kind, uint64_t a, uint64_t b);
/* One counts file per image into epoch; *nimages written.  No adds after. */
int imp_lbr_write(struct imp_lbr *t, imp_image_fn image_id, void *ctx,
		  const struct imp_lbr_info *in, struct prof_db *db, const char *epoch,
		  size_t *nimages, struct dcpi_err *err);

/*
 * Measured samples (import/ibs.c): IBS op raw records and PEBS memory
 * samples of an attribute become per-instruction events numbered from
 * base (IMP_HW_NEVENTS of them, after the file's own: imp_hw_events names
 * them, with the periods of file's attributes), and their data addresses
 * value samples, written by imp_hw_write (the note says what was used).
 */
#define IMP_HW_IBS 1
#define IMP_HW_PEBS 2
#define IMP_HW_NEVENTS 16
struct imp_hw;
struct perf_sample;
int imp_hw_new(struct imp_hw **out);
void imp_hw_free(struct imp_hw *h);
int imp_hw_kind(const char *event, uint64_t sample_type);
void imp_hw_events(const struct imp_hw *h, const struct imp_event *file, struct imp_event *ev);
int imp_hw_add(struct imp_hw *h, struct agg *t, uint32_t base, int kind, uint32_t attr,
	       uint32_t image, uint64_t offset, const struct perf_sample *ps,
	       struct dcpi_err *err);
int imp_hw_write(struct imp_hw *h, imp_image_fn image_id, void *ctx, struct prof_db *db,
		 const char *epoch, char *note, size_t nlen, struct dcpi_err *err);

#endif /* DCPI_COLLECT_IMPORT_INTERNAL_H */
