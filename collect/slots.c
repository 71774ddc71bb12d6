/*
 * collect/slots.c - an open-addressing index over an array's entries
 * (slots.h).
 */
#include <errno.h>
#include <stdlib.h>

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
