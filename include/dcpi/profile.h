/*
 * profile.h - the profile database (DCPI paper sec. 4.4; docs/profile-format.md).
 *
 * A database is a directory.  Each epoch is a subdirectory; epoch names sort
 * in creation order.  An epoch holds one profile file per (image, event) of
 * (file offset, count) pairs, plus a text metadata file.  Files are written to
 * a temporary name, fsync'd and renamed, so a reader never sees half a file.
 * Merging profiles, epochs or databases is associative and commutative.
 *
 * Samples are keyed by image identity and file offset, never by virtual
 * address.  Samples that map to no image go to the "unknown" image
 * (PROF_UNKNOWN_PATH, no build-id).
 */
#ifndef DCPI_PROFILE_H
#define DCPI_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

#define PROF_PATH_MAX 4096
#define PROF_EVENT_MAX 64
#define PROF_BUILD_ID_MAX 65		/* up to 32 bytes as hex, plus NUL */
#define PROF_UNKNOWN_PATH "[unknown]"
/* dcpi record's path-sample runtime, preloaded from a directory removed after
 * the run: its samples are the collector's own cost (collect/maps.c). */
#define PROF_PATHRT_PATH "[dcpi-paths]"
/* The event of calls counted at procedures' entries (the path runtime's
 * counting trampolines, a plan's entry= marks: docs/paths.md "Calls counted
 * at the entry"): one entry per counted procedure, at its entry's file
 * offset, period 1 (exact counts, not samples). */
#define PROF_EVENT_CALLS "calls"
/* The event of a block's executions counted the same way (a plan's block
 * lines: the loops that walk a chain, docs/estimate.md "Loops counted"):
 * one entry per counted block, at its first byte's file offset. */
#define PROF_EVENT_EXECS "executions"

/* Who an image is: build-id when it has one, else path, size and mtime. */
struct prof_image_id {
	char build_id[PROF_BUILD_ID_MAX];	/* lower-case hex, "" if none */
	char path[PROF_PATH_MAX];
	uint64_t size;
	int64_t mtime;				/* seconds since the epoch */
};

struct prof_entry {
	uint64_t offset;	/* file offset of the instruction in the image */
	uint64_t count;		/* samples */
};

/*
 * One (image, event) profile.  entries are sorted by offset with no
 * duplicates once prof_profile_normalize() has run; the reader returns them
 * normalized.
 */
struct prof_profile {
	struct prof_image_id image;
	char event[PROF_EVENT_MAX];	/* "cycles", "cpu-clock", ... */
	double period;			/* mean sampling period, in period_unit */
	char period_unit[16];		/* "events" or "ns" */
	double cycles_per_unit;		/* cycles per period_unit, 0 if unknown */
	uint64_t total;			/* sum of counts */
	size_t n, cap;
	struct prof_entry *e;
};

void prof_profile_init(struct prof_profile *p);
void prof_profile_free(struct prof_profile *p);
/* Add count samples at offset (any order; duplicates are summed later). */
int prof_profile_add(struct prof_profile *p, uint64_t offset, uint64_t count);
/* Sort entries by offset and merge duplicates; recomputes total. */
int prof_profile_normalize(struct prof_profile *p);
/* Count at an offset (after normalize), 0 if none. */
uint64_t prof_profile_count(const struct prof_profile *p, uint64_t offset);
/*
 * dst += src.  Image identity and event must match (-EINVAL otherwise).
 * The merged period is the sample-weighted mean of the two.
 */
int prof_profile_merge(struct prof_profile *dst, const struct prof_profile *src,
		       struct dcpi_err *err);
/* True when two image identities name the same image. */
int prof_image_id_equal(const struct prof_image_id *a, const struct prof_image_id *b);
/* Fill id for an image file on disk: path, size, mtime and ELF build-id. */
int prof_image_id_from_file(struct prof_image_id *id, const char *path,
			    struct dcpi_err *err);
void prof_image_id_unknown(struct prof_image_id *id);
/*
 * The key that names an image's files in an epoch directory: its build-id,
 * else "p" and a 64-bit hash of path, size and mtime.  Other per-image files
 * (jump counts, value profiles) use it too.  out needs PROF_BUILD_ID_MAX + 8.
 */
int prof_image_key(const struct prof_image_id *id, char *out, size_t len);

/*
 * The functions every profile kind kept in files has (this header's
 * sample profiles; callgraph.h, data.h, paths.h, slices.h, values.h), for struct TYPE:
 *   PFX_encode, PFX_decode: to and from a buffer of a file's bytes (decode
 *     validates everything, every error names name, "(buffer)" when NULL);
 *   PFX_file_write: atomically (temporary file, fsync, rename);
 *   PFX_file_read: read and validate, errors naming the file and the reason;
 *   PFX_file_merge: p merged into the file at path (created when absent),
 *     atomically, under a lock on its directory.
 * And of the per-image kinds kept beside an epoch's sample profiles in a
 * file "<key><suffix>" each (the key of prof_image_key; profile/kind.c):
 *   PFX_epoch_write: p merged into its image's file of the epoch;
 *   PFX_epoch_read: every profile of an epoch, sorted by file name (none:
 *     *n = 0; damaged files skipped with a note), freed by PFX_profiles_free;
 *   PFX_epoch_merge: the kind's files of src_epoch of src into dst_epoch of
 *     dst (the .prof files and the metadata are prof_epoch_merge's).
 */
#define PROF_KIND_FILE_DECLARE(pfx, type)						\
int pfx##_encode(const struct type *p, uint8_t **buf, size_t *len, struct dcpi_err *err); \
int pfx##_decode(const uint8_t *buf, size_t len, const char *name, struct type *p,	\
		 struct dcpi_err *err);							\
int pfx##_file_write(const char *path, const struct type *p, struct dcpi_err *err);	\
int pfx##_file_read(const char *path, struct type *p, struct dcpi_err *err);		\
int pfx##_file_merge(const char *path, const struct type *p, struct dcpi_err *err)

#define PROF_KIND_EPOCH_DECLARE(pfx, type)						\
int pfx##_epoch_write(struct prof_db *db, const char *epoch, const struct type *p,	\
		      struct dcpi_err *err);						\
int pfx##_epoch_read(struct prof_db *db, const char *epoch, struct type **out, size_t *n, \
		     struct dcpi_err *err);						\
void pfx##_profiles_free(struct type *p, size_t n);					\
int pfx##_epoch_merge(struct prof_db *dst, const char *dst_epoch, struct prof_db *src,	\
		      const char *src_epoch, struct dcpi_err *err)

/* Both: the whole of a per-image kind's files and epochs (profile/kind.c's
 * PROF_KIND_API defines them). */
#define PROF_KIND_DECLARE(pfx, type)							\
PROF_KIND_FILE_DECLARE(pfx, type);							\
PROF_KIND_EPOCH_DECLARE(pfx, type)

/* Bytes the encoded file takes (header included), for bytes-per-entry figures. */
size_t prof_encoded_size(const struct prof_profile *p);
/* prof_encode, prof_decode, prof_file_write, prof_file_read, prof_file_merge */
PROF_KIND_FILE_DECLARE(prof, prof_profile);

/* Make the size and CRC-32C fields of the len bytes (at least 24) of a
 * profile file of any kind (.prof, .paths, .values) match them: how tests
 * and fuzzers reach the checks behind the checksum. */
void prof_file_reseal(uint8_t *buf, size_t len);

/* Epoch metadata: a text file of key = value lines in the epoch directory. */
struct prof_epoch_meta {
	char cpu_vendor[16];		/* "AuthenticAMD" */
	unsigned cpu_family, cpu_model, cpu_stepping;
	char cpu_name[128];
	double cycles_per_ns;		/* measured clock, 0 if not measured */
	double cycles_per_sample;	/* calibrated worth of one sample, 0 if not */
	int calibrated;			/* 1 when cycles_per_sample was measured */
	/* the clock's change over the recording: the end's calibration of
	 * cycles_per_sample over the start's (collect/calibrate.c cal_sample;
	 * cycles_per_sample is their mean); 0 when not measured */
	double clock_change;
	char settings[2048];		/* collector settings, free text */
	uint64_t start_ns, end_ns;	/* wall clock, ns since the Unix epoch */
	uint64_t lost_samples;		/* PERF_RECORD_LOST and friends */
	uint64_t samples;		/* samples written */
	uint64_t dropped_samples;	/* samples a collector could not write and dropped */
	uint64_t failed_flushes;	/* flushes that failed and were retried */
	/* the contention canary timed on the program's core at each path
	 * burst (collect/canary.h), in core cycles per 8 independent adds: the
	 * core's figure alone, the bursts' mean and standard deviation, the
	 * share of bursts that found the core shared (collect/paths.h,
	 * paths_canary_summary), and the bursts behind them; all 0 when not
	 * measured */
	double canary_alone, canary_cycles, canary_sd, canary_shared;
	uint64_t canary_bursts;
	/* what the timer shows of a load waiter's cycles (estimate/destall.c's
	 * f), measured at record by collect/calibrate.c cal_exposure: the
	 * samples on the witness of its chase, all its samples, and its cycles
	 * a step (f = witness x cycles a step / samples); 0 when not measured */
	uint64_t exposure_witness, exposure_samples;
	double exposure_cycles_step;
};

/* dst += src, the rules of an epoch merge (profile/meta.c): commutative and
 * associative, the all-zero meta its identity. */
void prof_meta_merge(struct prof_epoch_meta *dst, const struct prof_epoch_meta *src);

/* Fill the CPU identity of this machine (from CPUID / /proc/cpuinfo). */
void prof_meta_this_machine(struct prof_epoch_meta *m);

struct prof_db;

#define PROF_DB_CREATE 1	/* create the directory if it does not exist */
#define PROF_DB_STRICT 2	/* refuse a directory other users can write (sshd's
				 * StrictModes): for writers running as root */

int prof_db_open(const char *dir, unsigned flags, struct prof_db **out,
		 struct dcpi_err *err);
void prof_db_close(struct prof_db *db);
const char *prof_db_path(const struct prof_db *db);
/* 1 when dir names db's directory (the same st_dev and st_ino, whatever the
 * spelling: "db/", a link, "../x/db"), else 0. */
int prof_db_is_dir(const struct prof_db *db, const char *dir);
/* 0 when dir can become (or is) a database a writer adds an epoch to:
 * absent, empty, or holding an epoch.  "-", a file, or a non-empty directory
 * with no epoch is an error saying so. */
int prof_db_check_target(const char *dir, struct dcpi_err *err);

/* Create a new, empty epoch; its name (which sorts after every older one)
 * is copied to name (at least 64 bytes). */
int prof_db_epoch_new(struct prof_db *db, char *name, size_t len, struct dcpi_err *err);
/* 0 when a new epoch can be created in db (checked by creating and removing
 * a directory), else "<db>: cannot create epoch: <why>". */
int prof_db_check_writable(struct prof_db *db, struct dcpi_err *err);
/* Remove an epoch directory if it is empty (a write into it failed). */
void prof_db_epoch_drop_empty(struct prof_db *db, const char *epoch);
/* Epoch names, oldest first.  Free with prof_names_free. */
int prof_db_epochs(struct prof_db *db, char ***names, size_t *n, struct dcpi_err *err);
void prof_names_free(char **names, size_t n);
/* The newest epoch that holds profiles into name (empty newer ones are
 * skipped with a note naming them; when all are empty, the newest): the
 * epoch every tool reads when given none.  -ENOENT if there is none. */
int prof_db_latest_epoch(struct prof_db *db, char *name, size_t len, struct dcpi_err *err);

/* Merge one profile into the epoch's file for its (image, event). */
int prof_epoch_write(struct prof_db *db, const char *epoch, const struct prof_profile *p,
		     struct dcpi_err *err);
/* Read every profile of an epoch.  Free with prof_profiles_free.  A profile
 * file that fails its checks is skipped with a note naming it and why, and
 * listed by prof_db_damaged; the rest of the epoch is returned. */
int prof_epoch_read(struct prof_db *db, const char *epoch, struct prof_profile **out,
		    size_t *n, struct dcpi_err *err);
void prof_profiles_free(struct prof_profile *p, size_t n);

/*
 * Writing several files of an epoch as one (docs/profile-format.md, "Crash
 * consistency"): begin locks the epoch and finishes or cleans what a killed
 * writer left; every prof_epoch_write, prof_epoch_meta_write and
 * prof_epoch_write_file until commit goes to a temporary; commit makes them
 * all visible at once (a journal renamed into place is the commit point);
 * abort drops them.  Without begin each of those calls is its own
 * transaction.  One transaction per database handle at a time.
 */
int prof_epoch_begin(struct prof_db *db, const char *epoch, struct dcpi_err *err);
int prof_epoch_commit(struct prof_db *db, struct dcpi_err *err);
void prof_epoch_abort(struct prof_db *db);
/*
 * Any file of an epoch by name (profile kinds other than .prof, jump counts):
 * written atomically, mode 0644, never through a link, inside the open
 * transaction if there is one.  name: no '/', no leading '.'.
 */
int prof_epoch_write_file(struct prof_db *db, const char *epoch, const char *name,
			  const void *buf, size_t len, struct dcpi_err *err);
/* Its bytes as last committed (NUL-terminated); -ENOENT when absent, -EINVAL
 * when not a regular file, -ELOOP for a link. */
int prof_epoch_read_file(struct prof_db *db, const char *epoch, const char *name,
			 uint8_t **buf, size_t *len, struct dcpi_err *err);
/* Names of the epoch's files ending in suffix (".paths"), as last committed,
 * sorted; temporaries never.  Free with prof_names_free. */
int prof_epoch_names(struct prof_db *db, const char *epoch, const char *suffix,
		     char ***names, size_t *n, struct dcpi_err *err);
/* 1 when the epoch holds no profile, 0 when it does, or a negative error. */
int prof_epoch_is_empty(struct prof_db *db, const char *epoch, struct dcpi_err *err);
/*
 * What the database skipped or set aside since the last clear (a FIFO where a
 * profile should be, a corrupt profile of a live epoch moved out of the way),
 * one message per line, "" when nothing.  Tools print them as notes.
 */
const char *prof_db_notes(const struct prof_db *db);
void prof_db_notes_clear(struct prof_db *db);
/* Paths of the profile files readers of this handle skipped as damaged
 * (docs/profile-format.md: reports mark the epoch "damaged"): their count,
 * *files valid until the handle is closed. */
size_t prof_db_damaged(const struct prof_db *db, const char *const **files);
/* Add a line to them (readers above the database use it too). */
void prof_db_note(struct prof_db *db, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int prof_epoch_meta_write(struct prof_db *db, const char *epoch,
			  const struct prof_epoch_meta *m, struct dcpi_err *err);
/* -ENOENT when the epoch has no metadata file. */
int prof_epoch_meta_read(struct prof_db *db, const char *epoch,
			 struct prof_epoch_meta *m, struct dcpi_err *err);

/* Merge epoch src_epoch of src into epoch dst_epoch of dst (profiles and
 * metadata: lost and written samples add, time span widens).  A damaged
 * profile in src is an error naming it: nothing is merged silently short. */
int prof_epoch_merge(struct prof_db *dst, const char *dst_epoch,
		     struct prof_db *src, const char *src_epoch, struct dcpi_err *err);

#endif /* DCPI_PROFILE_H */
