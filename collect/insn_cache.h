/*
 * collect/insn_cache.h - the instructions a spool reader has decoded, kept by
 * (image, file offset) so that each is decoded once: elements of the
 * caller's own type (datarec.c's struct dinsn, values_spool.c's struct
 * vinsn) in one array, found through an open-addressing index.
 */
#ifndef DCPI_COLLECT_INSN_CACHE_H
#define DCPI_COLLECT_INSN_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct insn_cache_slot {
	uint64_t off;
	uint32_t img;
	uint32_t at;		/* index in e + 1; 0: the slot is empty */
};

/* Start from { .size = sizeof(element) }; free with insn_cache_free. */
struct insn_cache {
	void *e;		/* n elements of size bytes, in the order first asked */
	size_t n, cap, size;
	struct insn_cache_slot *slot;
	size_t nslot;		/* 0 or a power of 2, at least twice n */
};

/*
 * The element of (img, off); a new one (zeroed, *fresh set, for the caller
 * to fill) when it was not there; NULL when out of memory.  It moves when a
 * later call grows the array: copy what must outlive that.
 */
void *insn_cache_get(struct insn_cache *c, uint32_t img, uint64_t off, int *fresh);
void insn_cache_free(struct insn_cache *c);

#endif /* DCPI_COLLECT_INSN_CACHE_H */
