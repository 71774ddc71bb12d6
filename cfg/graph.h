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
 * is not NULL.
 */
int cfg_graph_csr(const struct cfg_graph *g, int back, uint32_t **off, uint32_t **adj);

#endif /* DCPI_CFG_GRAPH_H */
