/*
 * collect/slots.c - an open-addressing index over an array's entries
 * (slots.h), and the rehash of the tables that hold their records in the
 * slots themselves (recs_rehash, include/dcpi/collect.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/collect.h"
#include "slots.h"

int slots_grow(uint32_t **slot, size_t *nslot, size_t first, size_t lo, size_t n,
	       uint64_t (*hash)(const void *ctx, size_t i), const void *ctx)
{
	size_t ns = *nslot ? 2 * *nslot : first;
	uint32_t *s = calloc(ns, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = lo; i < n; i++) {
		size_t k = hash(ctx, i) & (ns - 1);

		while (s[k])
			k = (k + 1) & (ns - 1);
		s[k] = (uint32_t)i + 1;
	}
	free(*slot);
	*slot = s;
	*nslot = ns;
	return 0;
}

int recs_rehash(void **t, size_t *cap, size_t ncap, size_t size, int (*live)(const void *rec),
		uint64_t (*home)(const void *rec), size_t *n)
{
	char *to = calloc(ncap, size);
	const char *from = *t;
	size_t moved = 0;

	if (!to)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		const char *r = from + i * size;
		size_t j;

		if (!live(r))
			continue;
		/* the keys are distinct: the first free slot from home is its own */
		for (j = home(r) & (ncap - 1); live(to + j * size); j = (j + 1) & (ncap - 1))
			;
		memcpy(to + j * size, r, size);
		moved++;
	}
	free(*t);
	*t = to;
	*cap = ncap;
	if (n)
		*n = moved;
	return 0;
}
