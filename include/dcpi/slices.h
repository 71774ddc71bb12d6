/*
 * slices.h - samples by time slice, and the phase boundaries the collector
 * detected (docs/phases.md; docs/profile-format.md, "Time-slice profiles").
 *
 * An epoch keeps, beside each image's sample profile, "<key>.slices": the
 * samples of its first event counted per (slice, file offset), where slice
 * is the sample's time (the collector's perf clock, in ns) divided by
 * slice_ns, so that two files of one machine line up and merging is a plain
 * sum (associative, commutative).  The boundaries the collector declared
 * (collect/phase.c: at the start of a slice, by which rule) travel in every
 * image's file of the epoch; a merge takes their union.
 */
#ifndef DCPI_SLICES_H
#define DCPI_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"

#define SLICE_DEFAULT_NS 100000000ULL	/* 100 ms */

/* Which rule declared a boundary (docs/phases.md). */
#define SLICE_RULE_INVERSION 1u		/* order inversions of the periodic sort (seed 003) */
#define SLICE_RULE_DISTANCE 2u		/* distance between successive intervals' vectors */
#define SLICE_RULES_KNOWN 3u

struct slice_entry {
	uint64_t slice;		/* time / slice_ns */
	uint64_t offset;	/* file offset in the image */
	uint64_t count;
};

struct slice_bound {
	uint64_t slice;		/* the phase starts with this slice */
	uint32_t rules;		/* SLICE_RULE_* that declared it */
};

struct slice_profile {
	struct prof_image_id image;
	char event[PROF_EVENT_MAX];
	uint64_t slice_ns;
	uint64_t total;
	struct slice_entry *e;	/* sorted by (slice, offset), no duplicates */
	size_t n, cap;
	struct slice_bound *b;	/* sorted by slice, no duplicates */
	size_t nb, capb;
};

void slice_profile_init(struct slice_profile *p);
void slice_profile_free(struct slice_profile *p);
/* count samples at (slice, offset), any order (slice_normalize sorts). */
int slice_profile_add(struct slice_profile *p, uint64_t slice, uint64_t offset,
		      uint64_t count);
/* A boundary at the start of slice (rules OR'ed into one already there). */
int slice_profile_bound(struct slice_profile *p, uint64_t slice, uint32_t rules);
/* Sort entries and boundaries, merge duplicates, recompute total. */
int slice_normalize(struct slice_profile *p);
/* dst += src: the same image, event and slice width (-EINVAL otherwise). */
int slice_profile_merge(struct slice_profile *dst, const struct slice_profile *src,
			struct dcpi_err *err);

int slice_encode(const struct slice_profile *p, uint8_t **buf, size_t *len,
		 struct dcpi_err *err);
int slice_decode(const uint8_t *buf, size_t len, const char *name,
		 struct slice_profile *p, struct dcpi_err *err);
int slice_file_write(const char *path, const struct slice_profile *p, struct dcpi_err *err);
int slice_file_read(const char *path, struct slice_profile *p, struct dcpi_err *err);
int slice_file_merge(const char *path, const struct slice_profile *p, struct dcpi_err *err);

/* Merge one image's slices into the epoch's "<key>.slices". */
int slice_epoch_write(struct prof_db *db, const char *epoch, const struct slice_profile *p,
		      struct dcpi_err *err);
/* Every image's slices of an epoch (damaged files skipped with a note). */
int slice_epoch_read(struct prof_db *db, const char *epoch, struct slice_profile **out,
		     size_t *n, struct dcpi_err *err);
void slice_profiles_free(struct slice_profile *p, size_t n);
/*
 * The profiles in[0..nin) of an epoch restricted to slices [from, to) of
 * its slices sp[0..nsp) (one event, slice_epoch_read's), into *out (free
 * with prof_profiles_free): a profile of the slices' event gets its image's
 * counts in the range (its period and units kept; none when the image has
 * no slices); profiles of other events are left out (the slices hold one
 * event): *dropped counts them.  Profiles left empty are left out.
 */
int slice_window(const struct slice_profile *sp, size_t nsp, uint64_t from, uint64_t to,
		 const struct prof_profile *in, size_t nin, struct prof_profile **out,
		 size_t *nout, size_t *dropped, struct dcpi_err *err);
int slice_epoch_merge(struct prof_db *dst, const char *dst_epoch, struct prof_db *src,
		      const char *src_epoch, struct dcpi_err *err);

#endif /* DCPI_SLICES_H */
