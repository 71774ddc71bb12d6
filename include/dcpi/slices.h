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

#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"

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

/* The kind's functions of include/dcpi/profile.h, for slice_profile. */
PROF_KIND_FILE_DECLARE(slice, slice_profile);
PROF_KIND_EPOCH_DECLARE(slice, slice_profile);
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

/*
 * Path samples by time slice: "<key>.pslices" beside the epoch's "<key>.paths"
 * (docs/phases.md, "Path samples in time", and its "Path-slice files" for
 * the bytes).  Each burst counts in the slice of its start
 * (CLOCK_MONOTONIC, the clock of the time slices' samples): its transitions,
 * its steps and the burst itself.  Summed over every slice they are the
 * epoch's path profile; over slices [from, to) the paths of that window.
 * An epoch without the file (older databases) has only the whole epoch's.
 */
struct slice_edge {
	uint64_t slice;
	uint64_t from, to;	/* as struct path_edge */
	uint64_t count;
};

struct pslice_profile {
	struct prof_image_id image;
	char source[PROF_EVENT_MAX];	/* as struct path_profile */
	uint32_t flags;
	uint64_t slice_ns;
	struct slice_edge *e;	/* sorted by (slice, from, to), no duplicates */
	size_t n, cap;
	struct slice_entry *s;	/* steps: sorted by (slice, offset) */
	size_t ns, caps;
	struct slice_entry *b;	/* bursts per slice (offset 0), sorted by slice */
	size_t nb, capb;
};

void pslice_profile_init(struct pslice_profile *p);
void pslice_profile_free(struct pslice_profile *p);
int pslice_add_edge(struct pslice_profile *p, uint64_t slice, uint64_t from, uint64_t to,
		    uint64_t count);
int pslice_add_step(struct pslice_profile *p, uint64_t slice, uint64_t offset, uint64_t count);
int pslice_add_burst(struct pslice_profile *p, uint64_t slice, uint64_t count);
/* Sort, sum duplicates (-EOVERFLOW when a count would wrap). */
int pslice_normalize(struct pslice_profile *p);
/* dst += src: the same image, source, flags and width (-EINVAL otherwise). */
int pslice_profile_merge(struct pslice_profile *dst, const struct pslice_profile *src,
			 struct dcpi_err *err);
/* The path profile of slices [from, to) into out (initialized here; free
 * with path_profile_free): image, source and flags of p. */
int pslice_window(const struct pslice_profile *p, uint64_t from, uint64_t to,
		  struct path_profile *out);

/* The kind's functions of include/dcpi/profile.h, for pslice_profile
 * (pslice_epoch_read of a database older than them: *n = 0). */
PROF_KIND_FILE_DECLARE(pslice, pslice_profile);
PROF_KIND_EPOCH_DECLARE(pslice, pslice_profile);
/* The paths of image id in slices [from, to) of the epoch into out (free
 * with path_profile_free; no records when the image had no burst there):
 * 1, or 0 when the epoch keeps no path slices at all (recorded before them,
 * or imported: only the whole epoch's paths say anything). */
int pslice_epoch_window(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			uint64_t from, uint64_t to, struct path_profile *out,
			struct dcpi_err *err);

/*
 * Value samples by time slice: "<key>.vslices" beside the epoch's
 * "<key>.values" (docs/phases.md, "Value samples in time", and its
 * "Value-slice files").  A hotlist cannot be cut by time once made, so the
 * collector keeps one value profile per slice (the bursts that started in
 * it), bounded by the slice's samples; a window's values are the merge of
 * its slices' profiles (val_profile_merge).
 */
struct vslice {
	uint64_t slice;
	struct val_profile v;	/* the slice's values; its image is the file's */
};

struct vslice_profile {
	struct prof_image_id image;
	uint64_t slice_ns;
	struct vslice *s;	/* sorted by slice, no duplicates */
	size_t n, cap;
};

void vslice_profile_init(struct vslice_profile *p);
void vslice_profile_free(struct vslice_profile *p);
/* Merge v (of p's image) into slice's profile. */
int vslice_add(struct vslice_profile *p, uint64_t slice, const struct val_profile *v,
	       struct dcpi_err *err);
/* dst += src: the same image and width (-EINVAL otherwise). */
int vslice_profile_merge(struct vslice_profile *dst, const struct vslice_profile *src,
			 struct dcpi_err *err);
/* The values of slices [from, to) into out (initialized here; free with
 * val_profile_free), normalized. */
int vslice_window(const struct vslice_profile *p, uint64_t from, uint64_t to,
		  struct val_profile *out, struct dcpi_err *err);
/* The kind's functions of include/dcpi/profile.h, for vslice_profile. */
PROF_KIND_FILE_DECLARE(vslice, vslice_profile);
PROF_KIND_EPOCH_DECLARE(vslice, vslice_profile);
/* As pslice_epoch_window, for the values: 1, or 0 when the epoch keeps no
 * value slices. */
int vslice_epoch_window(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			uint64_t from, uint64_t to, struct val_profile *out,
			struct dcpi_err *err);

#endif /* DCPI_SLICES_H */
