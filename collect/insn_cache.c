/*
 * collect/insn_cache.c - decoded instructions by (image, file offset), for
 * the spool readers (insn_cache.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/util.h"
#include "insn_cache.h"

/* The slot of (img, off) in slot[0..nslot), or the empty one where it goes. */
static size_t slot_of(const struct insn_cache_slot *slot, size_t nslot, uint32_t img,
		      uint64_t off)
{
	uint64_t h = (off * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)img * 0xc2b2ae3d27d4eb4fULL);
	size_t s = (size_t)(h ^ (h >> 29)) & (nslot - 1);

	while (slot[s].at && (slot[s].img != img || slot[s].off != off))
		s = (s + 1) & (nslot - 1);
	return s;
}

static int rehash(struct insn_cache *c)
{
	size_t ns = c->nslot ? 2 * c->nslot : 4096;
	struct insn_cache_slot *s = calloc(ns, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < c->nslot; i++)
		if (c->slot[i].at)
			s[slot_of(s, ns, c->slot[i].img, c->slot[i].off)] = c->slot[i];
	free(c->slot);
	c->slot = s;
	c->nslot = ns;
	return 0;
}

void *insn_cache_get(struct insn_cache *c, uint32_t img, uint64_t off, int *fresh)
{
	size_t s;
	char *e;

	*fresh = 0;
	if (2 * (c->n + 1) > c->nslot && rehash(c))
		return NULL;
	s = slot_of(c->slot, c->nslot, img, off);
	if (c->slot[s].at)
		return (char *)c->e + (c->slot[s].at - 1) * c->size;
	if (c->n >= UINT32_MAX || dcpi_grow(&c->e, &c->cap, c->n + 1, c->size))
		return NULL;
	e = (char *)c->e + c->n * c->size;
	memset(e, 0, c->size);
	c->slot[s] = (struct insn_cache_slot){ off, img, (uint32_t)++c->n };
	*fresh = 1;
	return e;
}

void insn_cache_free(struct insn_cache *c)
{
	free(c->e);
	free(c->slot);
	c->e = NULL;
	c->slot = NULL;
	c->n = c->cap = c->nslot = 0;
}
