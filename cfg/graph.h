/*
 * cfg/graph.h - module-private helpers shared by the graph algorithms
 * (cycle_equiv.c, dominators.c, loops.c).
 */
#ifndef DCPI_CFG_GRAPH_H
#define DCPI_CFG_GRAPH_H

#include <stdint.h>

#include "dcpi/cfg.h"

/*
 * Compressed adjacency of g: successors (back = 0) or predecessors (back = 1)
 * of node v are adj[off[v] .. off[v+1]), in edge order.  Both arrays are
 * malloc'd (never NULL on success); on -ENOMEM the caller frees whichever
 * is not NULL; -EINVAL if an edge is out of range.
 */
int cfg_graph_csr(const struct cfg_graph *g, int back, uint32_t **off, uint32_t **adj);
/* The same into the caller's arrays: off has nnodes + 2 entries (the last
 * is scratch), adj nedges.  Returns 0, or -1 - e when edge e is out of
 * range (the arrays then undefined). */
long cfg_graph_csr_fill(const struct cfg_graph *g, int back, uint32_t *off, uint32_t *adj);

/*
 * Such memory kept from one run to the next (cfg_build_all: one for the
 * image), so most procedures allocate nothing.  cfg_scratch_get gives at
 * least size bytes, their contents undefined, or NULL; cfg_scratch_trim
 * frees the block when it is over keep bytes (a large procedure's is not
 * held for the rest).
 */
struct cfg_scratch {
	void *mem;
	size_t cap;
};

void *cfg_scratch_get(struct cfg_scratch *s, size_t size);
void cfg_scratch_trim(struct cfg_scratch *s, size_t keep);

#define CFG_SCRATCH_KEEP	(1u << 18)
#define CFG_ARENA_PARTS		32

/*
 * An algorithm's working arrays, zeroed, in one block from a scratch instead
 * of one allocation per array (25 per procedure: in a whole image's CFGs a
 * good part of malloc's time).  The arrays are laid out by one sequence of
 * cfg_arena_take calls run twice: first it counts (a zeroed arena), then,
 * after cfg_arena_start, it carves.  A layout over CFG_SCRATCH_KEEP bytes
 * gets one allocation per array instead (a large procedure's arrays fit in
 * the holes the heap has, a block of their sum would not): cfg_arena_end
 * frees them.  -ENOMEM from cfg_arena_start, or after the second pass when
 * failed is set.  With dirty set before the first pass the arrays are not
 * zeroed: for an algorithm that writes before it reads, clearing the whole
 * layout for every procedure cost more than most of its work.
 */
struct cfg_arena {
	uint8_t *base;
	size_t used;
	int split, nparts, failed, dirty;
	void *part[CFG_ARENA_PARTS];
};

void *cfg_arena_split_take(struct cfg_arena *a, size_t n, size_t size);

/* Inline: an algorithm lays out a dozen arrays or more, twice, per procedure. */
static inline void *cfg_arena_take(struct cfg_arena *a, size_t n, size_t size)
{
	void *p = a->base ? a->base + a->used : NULL;

	if (a->split)
		return cfg_arena_split_take(a, n, size);
	n = n ? n : 1;
	a->used += (n * size + 15) & ~(size_t)15;
	return p;
}
int cfg_arena_start(struct cfg_arena *a, struct cfg_scratch *s);
void cfg_arena_end(struct cfg_arena *a);
/* Both passes of layout(obj, a) with the memory from s between them, the
 * arrays not zeroed (dirty): 0 or -ENOMEM. */
int cfg_arena_lay_out_dirty(struct cfg_arena *a, struct cfg_scratch *s,
			    void (*layout)(void *obj, struct cfg_arena *a), void *obj);

/* cfg_cycle_equiv and cfg_find_loops with their working memory from s (NULL:
 * their own, freed on return). */
int cfg_cycle_equiv_with(const struct cfg_graph *g, int *node_class, int *edge_class,
			 int *nclasses, struct cfg_scratch *s, struct dcpi_err *err);
int cfg_find_loops_with(const struct cfg_graph *g, struct cfg_loop **loops, size_t *nloops,
			int *node_loop, int *node_depth, struct cfg_scratch *s,
			struct dcpi_err *err);

#endif /* DCPI_CFG_GRAPH_H */
