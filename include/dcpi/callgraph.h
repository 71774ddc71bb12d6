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

int cg_encode(const struct cg_profile *p, uint8_t **buf, size_t *len, struct dcpi_err *err);
int cg_decode(const uint8_t *buf, size_t len, const char *name, struct cg_profile *p,
	      struct dcpi_err *err);
int cg_file_write(const char *path, const struct cg_profile *p, struct dcpi_err *err);
int cg_file_read(const char *path, struct cg_profile *p, struct dcpi_err *err);
int cg_file_merge(const char *path, const struct cg_profile *p, struct dcpi_err *err);

int cg_epoch_write(struct prof_db *db, const char *epoch, const struct cg_profile *p,
		   struct dcpi_err *err);
int cg_epoch_read(struct prof_db *db, const char *epoch, struct cg_profile **out,
		  size_t *n, struct dcpi_err *err);
void cg_profiles_free(struct cg_profile *p, size_t n);
int cg_epoch_merge(struct prof_db *dst, const char *dst_epoch, struct prof_db *src,
		   const char *src_epoch, struct dcpi_err *err);

#endif
