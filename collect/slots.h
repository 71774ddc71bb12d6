/*
 * collect/slots.h - an open-addressing index over the entries of an array
 * (callchain.c's stacks, maps.c's images): slot[k] holds an entry's index + 1,
 * 0 an empty slot; nslot is a power of 2 and entries probe linearly from
 * their hash.  Finding an entry is the caller's, with its own equality.
 * The tables that keep their records in the slots themselves grow with
 * recs_rehash (slots.c, declared in include/dcpi/collect.h for import/lbr.c).
 */
#ifndef DCPI_COLLECT_SLOTS_H
#define DCPI_COLLECT_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/*
 * *slot rebuilt twice as large (first slots when *nslot is 0) for the
 * entries lo..n-1, entry i at hash(ctx, i): 0, or -ENOMEM with *slot and
 * *nslot as they were.
 */
int slots_grow(uint32_t **slot, size_t *nslot, size_t first, size_t lo, size_t n,
	       uint64_t (*hash)(const void *ctx, size_t i), const void *ctx);

#endif /* DCPI_COLLECT_SLOTS_H */
