/*
 * dominators.c - immediate dominators of a CFG from its entry: which block
 * every path to a block must pass (natural loops are the back edges to a
 * dominator; DCPI paper sec. 6.1.1 builds the CFG they live in).  Cooper,
 * Harvey and Kennedy, "A simple, fast dominance algorithm" (2001): iterate
 * idom(v) = intersection of the processed predecessors' dominator-tree
 * paths, over reverse postorder, until nothing changes; near-linear on
 * CFGs.  The depth-first search is iterative, so million-block graphs do
 * not overflow the stack.
 */
#include <errno.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "graph.h"

#define NIL UINT32_MAX

struct dom {
	const struct cfg_graph *g;
	uint32_t *succ_off, *succ, *pred_off, *pred;
	uint32_t *rpo;		/* node -> reverse postorder number, NIL if unreachable */
	uint32_t *order;	/* reverse postorder number -> node */
	uint32_t *pos, *stack;
	uint32_t *idom;		/* by reverse postorder number */
	uint32_t n;		/* nodes reachable from entry */
};

/* Iterative DFS from entry, successors in edge order; numbers in reverse postorder. */
static void dom_rpo(struct dom *d)
{
	uint32_t sp = 0, post = 0, nn = d->g->nnodes;

	for (uint32_t v = 0; v < nn; v++) {
		d->rpo[v] = NIL;
		d->pos[v] = d->succ_off[v];
	}
	d->rpo[d->g->entry] = 0;	/* "seen"; renumbered below */
	d->stack[sp++] = d->g->entry;
	while (sp) {
		uint32_t v = d->stack[sp - 1];

		if (d->pos[v] < d->succ_off[v + 1]) {
			uint32_t w = d->succ[d->pos[v]++];

			if (d->rpo[w] == NIL) {
				d->rpo[w] = 0;
				d->stack[sp++] = w;
			}
			continue;
		}
		sp--;
		d->order[post++] = v;	/* postorder for now */
	}
	d->n = post;
	for (uint32_t i = 0; i < post / 2; i++) {
		uint32_t t = d->order[i];

		d->order[i] = d->order[post - 1 - i];
		d->order[post - 1 - i] = t;
	}
	for (uint32_t i = 0; i < post; i++)
		d->rpo[d->order[i]] = i;
}

static uint32_t dom_intersect(const uint32_t *idom, uint32_t a, uint32_t b)
{
	while (a != b) {
		while (a > b)
			a = idom[a];
		while (b > a)
			b = idom[b];
	}
	return a;
}

static void dom_iterate(struct dom *d)
{
	int changed = 1;

	for (uint32_t i = 0; i < d->n; i++)
		d->idom[i] = NIL;
	d->idom[0] = 0;
	while (changed) {
		changed = 0;
		for (uint32_t i = 1; i < d->n; i++) {
			uint32_t v = d->order[i], nd = NIL;

			for (uint32_t k = d->pred_off[v]; k < d->pred_off[v + 1]; k++) {
				uint32_t p = d->rpo[d->pred[k]];

				if (p == NIL || d->idom[p] == NIL)
					continue;
				nd = nd == NIL ? p : dom_intersect(d->idom, p, nd);
			}
			if (nd != d->idom[i]) {
				d->idom[i] = nd;
				changed = 1;
			}
		}
	}
}

static void dom_free(struct dom *d)
{
	free(d->succ_off);
	free(d->succ);
	free(d->pred_off);
	free(d->pred);
	free(d->rpo);
	free(d->order);
	free(d->pos);
	free(d->stack);
	free(d->idom);
}

int cfg_dominators(const struct cfg_graph *g, uint32_t *idom, struct dcpi_err *err)
{
	struct dom d = { .g = g };
	size_t nn;
	int ret = 0;

	if (!g || !g->nnodes || g->entry >= g->nnodes)
		return dcpi_errf(err, -EINVAL, "dominators: no nodes or entry out of range");
	for (uint32_t e = 0; e < g->nedges; e++) {
		if (g->from[e] >= g->nnodes || g->to[e] >= g->nnodes)
			return dcpi_errf(err, -EINVAL, "dominators: edge %u (%u -> %u) "
					 "out of range", e, g->from[e], g->to[e]);
	}
	nn = g->nnodes;
	d.rpo = malloc(nn * sizeof(*d.rpo));
	d.order = malloc(nn * sizeof(*d.order));
	d.pos = malloc(nn * sizeof(*d.pos));
	d.stack = malloc(nn * sizeof(*d.stack));
	d.idom = malloc(nn * sizeof(*d.idom));
	if (cfg_graph_csr(g, 0, &d.succ_off, &d.succ) || cfg_graph_csr(g, 1, &d.pred_off, &d.pred) ||
	    !d.rpo || !d.order || !d.pos || !d.stack || !d.idom) {
		ret = dcpi_errf(err, -ENOMEM, "dominators: %u nodes: out of memory", g->nnodes);
		goto out;
	}
	dom_rpo(&d);
	dom_iterate(&d);
	for (uint32_t v = 0; v < g->nnodes; v++)
		idom[v] = d.rpo[v] == NIL ? NIL : d.order[d.idom[d.rpo[v]]];
out:
	dom_free(&d);
	return ret;
}
