/*
 * cfg/graph.c - compressed adjacency (CSR) of a struct cfg_graph, the one
 * representation the linear-time graph algorithms walk.
 */
#include <errno.h>
#include <stdlib.h>

#include "graph.h"

int cfg_graph_csr(const struct cfg_graph *g, int back, uint32_t **off, uint32_t **adj)
{
	const uint32_t *a = back ? g->to : g->from, *b = back ? g->from : g->to;

	*off = calloc((size_t)g->nnodes + 1, sizeof(**off));
	*adj = malloc(((size_t)g->nedges + 1) * sizeof(**adj));
	if (!*off || !*adj)
		return -ENOMEM;
	/* count, prefix-sum, place (advancing each start), then shift back */
	for (uint32_t e = 0; e < g->nedges; e++)
		(*off)[a[e] + 1]++;
	for (uint32_t v = 0; v < g->nnodes; v++)
		(*off)[v + 1] += (*off)[v];
	for (uint32_t e = 0; e < g->nedges; e++)
		(*adj)[(*off)[a[e]]++] = b[e];
	for (uint32_t v = g->nnodes; v > 0; v--)
		(*off)[v] = (*off)[v - 1];
	(*off)[0] = 0;
	return 0;
}
