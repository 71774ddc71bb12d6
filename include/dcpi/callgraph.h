/*
 * callgraph.h - call-graph profiles: the user call chains of the samples
 * (PERF_SAMPLE_CALLCHAIN, frame pointers; docs/callgraph.md; the bytes in
 * docs/profile-format.md, "Call-graph files").
 *
 * A stack is a list of frames (image, file offset), leaf first: frame 0 is
 * the sampled instruction, frame i > 0 the call instruction of the i-th
 * caller (the return address minus one, so that it falls inside the call
 * and inside the calling procedure even when the call is a procedure's
 * last instruction).  Kernel frames are dropped.  Stacks are deduplicated
 * in a table with a count per (event, stack).
 *
 * One profile per image of the leaf frames, "<key>.cg" in the epoch: tag 0
 * is the profile's own image (every stack's frame 0 is in it), tag i > 0
 * its imgs[i - 1].  Merging sums the counts of equal (event, stack)
 * entries: associative and commutative, and the bytes do not depend on
 * the order (images, events and stacks are kept sorted).
 */
#ifndef DCPI_CALLGRAPH_H
#define DCPI_CALLGRAPH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dcpi/profile.h"
#include "dcpi/util.h"

#define CG_DEPTH_MAX 512	/* frames of one stack (the kernel's default is 127) */
#define CG_IMGS_MAX 4096	/* images one profile's stacks name */
#define CG_EVENTS_MAX 64
#define CG_EVENT_MAX 64		/* bytes of an event name, with its NUL */

struct cg_frame {
	uint32_t tag;		/* 0: the profile's image; i: imgs[i - 1] */
	uint64_t offset;	/* file offset in that image */
};

struct cg_stack {
	uint32_t event;		/* index into events */
	uint32_t depth;		/* frames, at least 1 */
	size_t first;		/* its frames: frames[first .. first + depth) */
	uint64_t count;		/* samples */
};

struct cg_profile {
	struct prof_image_id image;		/* of every leaf frame */
	struct prof_image_id *imgs;		/* tag i is imgs[i - 1] */
	size_t nimgs;
	char (*events)[CG_EVENT_MAX];		/* sorted, distinct */
	size_t nevents;
	struct cg_stack *s;			/* sorted by (event, frames), distinct */
	size_t n, cap;
	struct cg_frame *f;
	size_t nf, capf;
};

void cg_profile_init(struct cg_profile *p);
void cg_profile_free(struct cg_profile *p);
/* The tag of id in p (0: p's own image), added when new; negative errno. */
int cg_profile_tag(struct cg_profile *p, const struct prof_image_id *id);
/* The identity of tag; NULL when out of range. */
const struct prof_image_id *cg_profile_image(const struct cg_profile *p, uint32_t tag);
/* The index of event name, added when new; negative errno. */
int cg_profile_event(struct cg_profile *p, const char *name);
/* Add count samples of event (an index) on the stack fr[0..depth) (any
 * order; cg_normalize sums duplicates).  fr[0].tag must be 0. */
int cg_profile_add(struct cg_profile *p, uint32_t event, const struct cg_frame *fr,
		   uint32_t depth, uint64_t count);
/* Sort images, events and stacks, sum duplicates (tags and indexes renumbered). */
int cg_normalize(struct cg_profile *p);
/* dst += src: the same leaf image (-EINVAL otherwise). */
int cg_profile_merge(struct cg_profile *dst, const struct cg_profile *src,
		     struct dcpi_err *err);
uint64_t cg_profile_total(const struct cg_profile *p);

/* cg_encode, cg_decode, cg_file_write, cg_file_read, cg_file_merge; files
 * "<key>.cg": cg_epoch_write, cg_epoch_read, cg_profiles_free, cg_epoch_merge
 * (include/dcpi/profile.h, PROF_KIND_FILE_DECLARE). */
PROF_KIND_FILE_DECLARE(cg, cg_profile);
PROF_KIND_EPOCH_DECLARE(cg, cg_profile);

/*
 * The collector's stack table (collect/callchain.c), for `dcpi record -g`,
 * dcpid -g and the perf.data importer: each sample's call chain, as the
 * kernel gives it (PERF_SAMPLE_CALLCHAIN: PERF_CONTEXT_* markers between
 * the kernel's and the user's addresses), placed in images through the
 * process's maps at the time of the sample and counted per (event, stack);
 * kernel frames are dropped, a chain is cut at its first unmapped caller.
 * Flushed as one call-graph profile per leaf image into an epoch.
 */
struct maps;
struct cg_table;

struct cg_table_stats {
	uint64_t samples;	/* chains added */
	uint64_t stacks;	/* distinct (event, stack) held */
	uint64_t no_user;	/* chains without a user frame in a known image: dropped */
	uint64_t cut;		/* chains cut at an unmapped caller */
};

int cg_table_new(struct cg_table **t, struct dcpi_err *err);
void cg_table_free(struct cg_table *t);
/* chain: nr little-endian u64s as in the sample record. */
int cg_table_add(struct cg_table *t, struct maps *m, uint32_t pid, unsigned event,
		 const uint8_t *chain, uint64_t nr, struct dcpi_err *err);
/* Every held stack into epoch, as call-graph profiles (merged with what is
 * there); image_id(ctx, i) is the identity of the maps' image i (copied at
 * once), events[i] names event index i.  cg_table_clear empties it. */
typedef const struct prof_image_id *(*cg_image_fn)(void *ctx, uint32_t image);
int cg_table_flush(struct cg_table *t, cg_image_fn image_id, void *ctx,
		   const char *const *events, unsigned nevents, struct prof_db *db,
		   const char *epoch, struct dcpi_err *err);
void cg_table_clear(struct cg_table *t);
void cg_table_stats(const struct cg_table *t, struct cg_table_stats *st);

/*
 * Callers and callees (report/callers.c; docs/callgraph.md): over the
 * stacks of one event, the samples in which procedure PROC (img_proc_find's
 * spec, "IMAGE:" allowed) is on the stack (its inclusive samples), split by
 * the procedure that called it (the frame above its outermost occurrence;
 * "[root]" when it is the outermost frame) or by the one it called (the
 * frame below; "[self]" when it is the leaf).  Frames are named by their
 * procedure, "IMAGE+0xOFFSET" when the image or the symbol is missing.
 */
struct cg_row {
	char name[256];
	char image[PROF_PATH_MAX];
	uint64_t samples;
};

struct cg_split {
	char proc[256];
	char event[CG_EVENT_MAX];
	int callees;		/* rows are callees, not callers */
	uint64_t total;		/* samples with proc on the stack */
	uint64_t all;		/* every stack's samples of the event */
	struct cg_row *rows;	/* most samples first */
	size_t n;
};

/* The call-graph profiles of epoch used (a name or "all": merged). */
int rep_cg_load(struct prof_db *db, const char *used, struct cg_profile **out, size_t *n,
		struct dcpi_err *err);
/* event NULL: the first event (by name) of the profiles. -ENOENT when no
 * image has proc, -ENODATA when there are no stacks. */
int rep_cg_split(const struct cg_profile *p, size_t n, const char *proc, const char *event,
		 int callees, struct cg_split *out, struct dcpi_err *err);
void rep_cg_split_free(struct cg_split *s);
void rep_cg_split_print(FILE *f, const struct cg_split *s, int json);
/* dcpiprof --callers / --callees PROC of an epoch, at most limit rows
 * (< 0: all), to f; -ENODATA when the epoch has no call graphs. */
int rep_cg_callers(FILE *f, struct prof_db *db, const char *epoch, const char *proc,
		   const char *event, int callees, long limit, int json, struct dcpi_err *err);

/* rep_pprof (report/pprof.c) with the stacks of cg as samples of several
 * frames; a location's samples on no stack stay one-frame samples. */
struct prof_epoch_meta;
int rep_pprof_cg(const struct prof_profile *p, size_t np, const struct cg_profile *cg,
		 size_t ncg, const struct prof_epoch_meta *meta, uint8_t **out, size_t *outlen,
		 struct dcpi_err *err);

#endif
