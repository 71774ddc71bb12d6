/*
 * cfg/graph.c - compressed adjacency (CSR) of a struct cfg_graph, the one
 * representation the linear-time graph algorithms walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

long cfg_graph_csr_fill(const struct cfg_graph *g, int back, uint32_t *off, uint32_t *adj)
{
	const uint32_t *a = back ? g->to : g->from, *b = back ? g->from : g->to;
	uint32_t n = g->nnodes;

	/*
	 * Counts at off[v + 2], prefix sums, then each edge placed at
	 * off[a + 1]++: that leaves off[v] the start of v, with no pass to shift
	 * the offsets back.
	 */
	for (uint32_t v = 0; v < n + 2; v++)
		off[v] = 0;
	for (uint32_t e = 0; e < g->nedges; e++) {
		if (a[e] >= n || b[e] >= n)
			return -1 - (long)e;
		off[a[e] + 2]++;
	}
	for (uint32_t v = 2; v < n + 2; v++)
		off[v] += off[v - 1];
	for (uint32_t e = 0; e < g->nedges; e++)
		adj[off[a[e] + 1]++] = b[e];
	return 0;
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

void *cfg_arena_split_take(struct cfg_arena *a, size_t n, size_t size)
{
	void *p = NULL;

	n = n ? n : 1;
	if (a->nparts < CFG_ARENA_PARTS)
		p = a->dirty ? (n <= SIZE_MAX / size ? malloc(n * size) : NULL) : calloc(n, size);
	if (p)
		a->part[a->nparts++] = p;
	a->failed |= !p;
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
	if (!a->dirty)
		memset(a->base, 0, a->used);
	a->used = 0;
	return 0;
}

int cfg_arena_lay_out_dirty(struct cfg_arena *a, struct cfg_scratch *s,
			    void (*layout)(void *obj, struct cfg_arena *a), void *obj)
{
	a->dirty = 1;
	layout(obj, a);
	if (cfg_arena_start(a, s) < 0)
		return -ENOMEM;
	layout(obj, a);
	return a->failed ? -ENOMEM : 0;
}

void cfg_arena_end(struct cfg_arena *a)
{
	for (int i = 0; i < a->nparts; i++)
		free(a->part[i]);
	a->nparts = 0;
}

int cfg_graph_csr(const struct cfg_graph *g, int back, uint32_t **off, uint32_t **adj)
{
	*off = malloc(((size_t)g->nnodes + 2) * sizeof(**off));
	*adj = malloc(((size_t)g->nedges + 1) * sizeof(**adj));
	if (!*off || !*adj)
		return -ENOMEM;
	return cfg_graph_csr_fill(g, back, *off, *adj) ? -EINVAL : 0;
}
