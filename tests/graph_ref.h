/*
 * graph_ref.h - a graph's CSR as cfg_graph_csr_fill made it before it was
 * made faster (bench/README.md, bench_cfg.sh), for the reference algorithm of
 * tests/test_cycle_equiv.c and the loop oracle of tests/test_loops.c, and
 * their arrays, zeroed, one spare slot each; and the xorshift64 generator
 * both draw their random graphs from.
 */
#ifndef DCPI_TESTS_GRAPH_REF_H
#define DCPI_TESTS_GRAPH_REF_H

#include <stdint.h>
#include <string.h>

#include "dcpi/cfg.h"

/* The CSR of g, forward (back 0) or backward: off has nnodes + 1 entries. */
static inline void graph_ref_csr(const struct cfg_graph *g, int back, uint32_t *off,
				 uint32_t *adj)
{
	const uint32_t *a = back ? g->to : g->from, *b = back ? g->from : g->to;

	memset(off, 0, ((size_t)g->nnodes + 1) * sizeof(*off));
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

/* Seeded by each test that draws graphs. */
static uint64_t graph_rng_state;

/* A number in [0, n). */
static inline uint32_t graph_rng(uint32_t n)
{
	graph_rng_state ^= graph_rng_state << 13;
	graph_rng_state ^= graph_rng_state >> 7;
	graph_rng_state ^= graph_rng_state << 17;
	return (uint32_t)(graph_rng_state % n);
}

#define GRAPH_REF_TAKE(p, n) (assert_non_null((p) = calloc((n) + 1, sizeof(*(p)))))

#endif /* DCPI_TESTS_GRAPH_REF_H */
