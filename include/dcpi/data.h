/*
 * data.h - data profiles: which data the sampled loads and stores touched,
 * and which cache lines threads shared (seed 001; docs/data.md;
 * docs/profile-format.md, "Data files").
 *
 * The value samples' steps (collect/pathrt.c) hold the registers before
 * each instruction, so every stepped load and store gives its address.
 * collect/datarec.c places each address in a data space independent of
 * ASLR (struct data_key) and counts, per (64-byte line, instruction), the
 * accesses, loads and stores and the bytes touched.  Per line it also
 * keeps the sharing seed 001 defines: in each window of DATA_WINDOW_NS,
 * the bytes each thread read and wrote; a line written by one thread and
 * touched by another in one window is shared, truly when they touched a
 * common byte, falsely when their bytes were disjoint.
 *
 * One profile per image holding the accessing instructions, "<key>.data"
 * in the epoch; images of the data (tags) are listed in the profile: tag
 * 0 is the profile's own image, tag i > 0 its imgs[i - 1].  Merging is a
 * sum of counts and an OR of byte masks (associative, commutative).
 */
#ifndef DCPI_DATA_H
#define DCPI_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"
#include "dcpi/util.h"

#define DATA_LINE 64			/* bytes of a cache line */
#define DATA_WINDOW_NS 100000000ULL	/* sharing windows of 100 ms */
#define DATA_HEAP_MIN 4096		/* blocks the runtime records, bytes */

/* Where a line is; numbers are stored in files: only add. */
enum data_space {
	DATA_IMAGE = 0,		/* an image's data: line = link-time vaddr */
	DATA_HEAP = 1,		/* a block allocated at (tag, base): line = offset in it */
	DATA_STACK = 2,		/* near the stack pointer: line = address - rsp (signed) */
	DATA_ANON = 3,		/* anything else: line = the address */
	DATA_NSPACES = 4,
};

struct data_key {
	uint32_t space;		/* enum data_space */
	uint32_t tag;		/* DATA_IMAGE: the data's image; DATA_HEAP: the call
				 * site's image; else 0 */
	uint64_t base;		/* DATA_HEAP: the call site's file offset; else 0 */
	uint64_t line;		/* a multiple of DATA_LINE (two's complement) */
};

struct data_entry {
	struct data_key k;
	uint64_t insn;		/* file offset of the accessing instruction */
	uint64_t accesses;	/* executions seen (a read-modify-write is one) */
	uint64_t loads, stores;	/* of them reading, writing (both for an RMW) */
	uint64_t mask;		/* bytes of the line touched: bit i = byte i */
	uint64_t size;		/* DATA_HEAP: the largest block seen; else 0 */
};

struct data_share {
	struct data_key k;
	uint64_t seen;		/* windows in which the line was touched */
	uint64_t true_w;	/* windows with a byte written by one thread and
				 * touched by another */
	uint64_t false_w;	/* windows with a writer and another thread, no
				 * common byte */
	uint64_t true_mask;	/* the common bytes */
	uint64_t mask_a;	/* false sharing: the bytes of the thread with the
				 * lower id of a pair */
	uint64_t mask_b;	/* and of the other */
};

/* The kernel's transfers into and out of heap blocks of one allocation
 * site (collect/pathrt_io.c: read(2) fills a buffer, write(2) reads one),
 * counted exactly, not sampled: key (DATA_HEAP, tag, base, line 0). */
struct data_kio {
	struct data_key k;
	uint64_t calls;		/* transfers (> 0) */
	uint64_t in;		/* bytes the kernel wrote into the blocks */
	uint64_t out;		/* bytes it read from them */
};

struct data_profile {
	struct prof_image_id image;
	uint64_t window_ns;
	struct prof_image_id *imgs;	/* tag i is imgs[i - 1] */
	size_t nimgs;
	struct data_entry *e;		/* sorted by (key, insn), no duplicates */
	size_t n, cap;
	struct data_share *s;		/* sorted by key, no duplicates */
	size_t ns, caps;
	struct data_kio *kio;		/* sorted by key, no duplicates */
	size_t nk, capk;
};

void data_profile_init(struct data_profile *p);
void data_profile_free(struct data_profile *p);
int data_key_cmp(const struct data_key *a, const struct data_key *b);
/* The tag of id in p (0: p's own image), added when new; negative errno. */
int data_profile_tag(struct data_profile *p, const struct prof_image_id *id);
/* The identity of tag; NULL when out of range. */
const struct prof_image_id *data_profile_image(const struct data_profile *p, uint32_t tag);
/* Add to the entry (k, insn) / the sharing of k (any order; normalize). */
int data_profile_add(struct data_profile *p, const struct data_entry *e);
int data_profile_share(struct data_profile *p, const struct data_share *s);
int data_profile_kio(struct data_profile *p, const struct data_kio *x);
/* Sort, merge duplicates, order the image table (tags renumbered). */
int data_normalize(struct data_profile *p);
/* dst += src: the same image and window (-EINVAL otherwise). */
int data_profile_merge(struct data_profile *dst, const struct data_profile *src,
		       struct dcpi_err *err);

/* data_encode, data_decode, data_file_write, data_file_read,
 * data_file_merge; files "<key>.data": data_epoch_write, data_epoch_read,
 * data_profiles_free, data_epoch_merge (include/dcpi/profile.h,
 * PROF_KIND_DECLARE). */
PROF_KIND_DECLARE(data, data_profile);

/*
 * The report of `dcpi mem` / dcpimem (report/mem.c; docs/data.md): objects
 * (image data by symbol, heap blocks by allocation site, stack frames by
 * procedure, anonymous memory), pages and shared lines of one epoch (NULL:
 * the newest with profiles; "all": every epoch merged) of the database at
 * dbdir, top entries of each list, text or JSON.
 */
#include <stdio.h>

struct rep_mem_opts {
	const char *epoch;
	int json;
	unsigned top;		/* objects and pages listed (0: 20) */
	int weighted;		/* each access weighs its instruction's estimated
				 * executions (report/mem_weight.c): objects by
				 * weighted bytes */
	int with_syscalls;	/* weighted, and the kernel's counted bytes added
				 * to each object's */
	unsigned insns;		/* busiest instructions listed per object (0: 4) */
};
int rep_mem(FILE *f, const char *dbdir, const struct rep_mem_opts *o, struct dcpi_err *err);

/*
 * What dcpicalc prints beside an instruction (report/calc.c): for each
 * instruction of image id whose accesses the data profiles of epoch saw,
 * the object most of them touched (named as `dcpi mem` names it), sorted by
 * insn.  No data profile of the image: *n = 0 and 0.
 */
struct rep_mem_insn {
	uint64_t insn;			/* the instruction's file offset */
	uint64_t accesses;		/* its sampled accesses */
	uint64_t in_object;		/* of them in the object */
	char object[256];
	const char *kind;		/* global, section, heap, stack, anon */
};
int rep_mem_insn_objects(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			 struct rep_mem_insn **out, size_t *n, struct dcpi_err *err);
/* The entry of insn in v[0..n) (sorted), else NULL. */
const struct rep_mem_insn *rep_mem_insn_find(const struct rep_mem_insn *v, size_t n,
					     uint64_t insn);

#endif /* DCPI_DATA_H */
