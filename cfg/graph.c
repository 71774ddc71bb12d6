/*
 * cfg/graph.c - compressed adjacency (CSR) of a struct cfg_graph, the one
 * representation the linear-time graph algorithms walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

void cfg_graph_csr_fill(const struct cfg_graph *g, int back, uint32_t *off, uint32_t *adj)
{
	const uint32_t *a = back ? g->to : g->from, *b = back ? g->from : g->to;

	memset(off, 0, ((size_t)g->nnodes + 1) * sizeof(*off));
	/* count, prefix-sum, place (advancing each start), then shift back */
	for (uint32_t e = 0; e < g->nedges; e++)
		off[a[e] + 1]++;
	for (uint32_t v = 0; v < g->nnodes; v++)
		off[v + 1] += off[v];
	for (uint32_t e = 0; e < g->nedges; e++)
		adj[off[a[e]]++] = b[e];
	for (uint32_t v = g->nnodes; v > 0; v--)
		off[v] = off[v - 1];
	off[0] = 0;
}

void *cfg_scratch_get(struct cfg_scratch *s, size_t size)
{
	if (size > s->cap) {
		free(s->mem);
		s->mem = malloc(size);
		s->cap = s->mem ? size : 0;
	}
	return s->mem;
}

void cfg_scratch_trim(struct cfg_scratch *s, size_t keep)
{
	if (s->cap > keep) {
		free(s->mem);
		s->mem = NULL;
		s->cap = 0;
	}
}

void *cfg_arena_take(struct cfg_arena *a, size_t n, size_t size)
{
	void *p = a->base ? a->base + a->used : NULL;

	n = n ? n : 1;
	if (a->split) {
		p = a->nparts < CFG_ARENA_PARTS ? calloc(n, size) : NULL;
		if (p)
			a->part[a->nparts++] = p;
		a->failed |= !p;
		return p;
	}
	a->used += (n * size + 15) & ~(size_t)15;
	return p;
}

int cfg_arena_start(struct cfg_arena *a, struct cfg_scratch *s)
{
	if (a->used > CFG_SCRATCH_KEEP) {
		a->split = 1;
		return 0;
	}
	a->base = cfg_scratch_get(s, a->used);
	if (!a->base)
		return -ENOMEM;
	memset(a->base, 0, a->used);
	a->used = 0;
	return 0;
}

void cfg_arena_end(struct cfg_arena *a)
{
	for (int i = 0; i < a->nparts; i++)
		free(a->part[i]);
	a->nparts = 0;
}

int cfg_graph_csr(const struct cfg_graph *g, int back, uint32_t **off, uint32_t **adj)
{
	*off = malloc(((size_t)g->nnodes + 1) * sizeof(**off));
	*adj = malloc(((size_t)g->nedges + 1) * sizeof(**adj));
	if (!*off || !*adj)
		return -ENOMEM;
	cfg_graph_csr_fill(g, back, *off, *adj);
	return 0;
}
