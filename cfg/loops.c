/*
 * loops.c - the loops of a CFG and how they nest (DCPI paper sec. 6.1.1
 * builds the CFG; loops give the tools and the estimator their structure),
 * including irreducible regions.
 *
 * Bourdoncle's hierarchical decomposition ("Efficient chaotic iteration
 * strategies with widenings", 1993): the strongly connected components
 * (iterative Tarjan) of the nodes reachable from entry are the outermost
 * loops; each loop's header is removed and the components of what remains
 * are the loops nested in it, and so on.  A component entered only through
 * its header h (or containing the entry) is exactly the union of the
 * natural loops of h's back edges u -> h (h dominates u), merged per header
 * as in the dragon book, and its inner components are the natural loops
 * nested in it.  A component with several entries is irreducible: it is
 * reported once, with irreducible = 1 and as header its entry first in
 * reverse postorder (successors visited in edge order), which is also its
 * node first in reverse postorder; its other entries stay inside it and may
 * head loops nested in it.  A natural loop headed by such a first entry is
 * merged into the irreducible loop.
 *
 * Loops come out sorted by their header's reverse postorder number, so an
 * enclosing loop always precedes the loops inside it.  Nodes unreachable
 * from entry are in no loop.  Work is O((N + E) * nesting depth).
 */
#include <errno.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "graph.h"

#define NIL UINT32_MAX

struct lp_region {
	uint32_t *nodes, n;
	int parent;		/* the loop this region is the inside of, -1 at top */
};

struct lp {
	const struct cfg_graph *g;
	uint32_t *succ_off, *succ, *pred_off, *pred;
	uint32_t *rpo, *tag, *idx, *low, *comp, *fpos;
	uint32_t *tstack, *fstack, *scc, *scc_off;
	uint8_t *onstk;
	uint32_t *all;			/* the reachable nodes in reverse postorder */
	struct cfg_arena mem;		/* where the arrays above are */
	struct lp_region *work;
	size_t nwork, work_cap;
	struct cfg_loop *loops;
	size_t nloops, loops_cap;
	int *node_loop, *node_depth;
};

/* Reverse postorder numbers from entry (NIL if unreachable); the reachable
 * nodes in that order go to p->all, *n of them. */
static void lp_rpo(struct lp *p, uint32_t *n)
{
	uint32_t sp = 0, post = 0, nn = p->g->nnodes, *st = p->fstack, *order = p->all;

	for (uint32_t v = 0; v < nn; v++) {
		p->rpo[v] = NIL;
		p->fpos[v] = p->succ_off[v];
	}
	p->rpo[p->g->entry] = 0;
	st[sp++] = p->g->entry;
	while (sp) {
		uint32_t v = st[sp - 1];

		if (p->fpos[v] < p->succ_off[v + 1]) {
			uint32_t w = p->succ[p->fpos[v]++];

			if (p->rpo[w] == NIL) {
				p->rpo[w] = 0;
				st[sp++] = w;
			}
			continue;
		}
		sp--;
		order[post++] = v;
	}
	for (uint32_t i = 0; i < post; i++)
		p->rpo[order[i]] = post - 1 - i;
	for (uint32_t i = 0; i < post / 2; i++) {
		uint32_t t = order[i];

		order[i] = order[post - 1 - i];
		order[post - 1 - i] = t;
	}
	*n = post;
}

/* Tarjan's components of the nodes tagged t, iteratively: scc[] holds them
 * one after another, component c at scc[scc_off[c] .. scc_off[c + 1]). */
static uint32_t lp_tarjan(struct lp *p, const struct lp_region *r, uint32_t t)
{
	uint32_t counter = 0, tsp = 0, fsp = 0, nscc = 0, nout = 0;

	for (uint32_t i = 0; i < r->n; i++)
		p->idx[r->nodes[i]] = NIL;
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t root = r->nodes[i];

		if (p->idx[root] != NIL)
			continue;
		p->idx[root] = p->low[root] = counter++;
		p->onstk[root] = 1;
		p->tstack[tsp++] = root;
		p->fpos[root] = p->succ_off[root];
		p->fstack[fsp++] = root;
		while (fsp) {
			uint32_t v = p->fstack[fsp - 1];

			if (p->fpos[v] < p->succ_off[v + 1]) {
				uint32_t w = p->succ[p->fpos[v]++];

				if (p->tag[w] != t)
					continue;
				if (p->idx[w] == NIL) {
					p->idx[w] = p->low[w] = counter++;
					p->onstk[w] = 1;
					p->tstack[tsp++] = w;
					p->fpos[w] = p->succ_off[w];
					p->fstack[fsp++] = w;
				} else if (p->onstk[w] && p->idx[w] < p->low[v]) {
					p->low[v] = p->idx[w];
				}
				continue;
			}
			fsp--;
			if (p->low[v] == p->idx[v]) {
				uint32_t w;

				p->scc_off[nscc] = nout;
				do {
					w = p->tstack[--tsp];
					p->onstk[w] = 0;
					p->comp[w] = nscc;
					p->scc[nout++] = w;
				} while (w != v);
				nscc++;
			}
			if (fsp && p->low[v] < p->low[p->fstack[fsp - 1]])
				p->low[p->fstack[fsp - 1]] = p->low[v];
		}
	}
	p->scc_off[nscc] = nout;
	return nscc;
}

static int lp_has_self_loop(const struct lp *p, uint32_t v)
{
	for (uint32_t k = p->succ_off[v]; k < p->succ_off[v + 1]; k++)
		if (p->succ[k] == v)
			return 1;
	return 0;
}

/* Is v entered from outside component c of the region tagged t? */
static int lp_is_entry(const struct lp *p, uint32_t v, uint32_t c, uint32_t t)
{
	if (v == p->g->entry)
		return 1;
	for (uint32_t k = p->pred_off[v]; k < p->pred_off[v + 1]; k++) {
		uint32_t u = p->pred[k];

		if (p->rpo[u] != NIL && (p->tag[u] != t || p->comp[u] != c))
			return 1;
	}
	return 0;
}

static int lp_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int lp_push_region(struct lp *p, uint32_t *nodes, uint32_t n, int parent)
{
	if (p->nwork == p->work_cap) {
		size_t cap = p->work_cap ? 2 * p->work_cap : 16;
		struct lp_region *w = realloc(p->work, cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		p->work = w;
		p->work_cap = cap;
	}
	p->work[p->nwork++] = (struct lp_region){ nodes, n, parent };
	return 0;
}

/* Record component nodes[0 .. n) as a loop inside parent, and queue its
 * inside (all but the header) for the loops nested in it. */
static int lp_add_loop(struct lp *p, const uint32_t *nodes, uint32_t n, uint32_t header,
		       int irreducible, int parent)
{
	struct cfg_loop *l;
	uint32_t *inside = NULL, k = 0;

	if (p->nloops == p->loops_cap) {
		size_t cap = p->loops_cap ? 2 * p->loops_cap : 16;
		struct cfg_loop *nl = realloc(p->loops, cap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		p->loops = nl;
		p->loops_cap = cap;
	}
	l = &p->loops[p->nloops];
	l->blocks = malloc(n * sizeof(*l->blocks));
	if (!l->blocks)
		return -ENOMEM;
	if (n > 1) {
		inside = malloc((n - 1) * sizeof(*inside));
		if (!inside || lp_push_region(p, inside, n - 1, (int)p->nloops)) {
			free(inside);
			free(l->blocks);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		l->blocks[i] = nodes[i];
		if (nodes[i] != header)
			inside[k++] = nodes[i];
	}
	dcpi_qsort(l->blocks, n, sizeof(*l->blocks), lp_cmp_u32);
	l->header = header;
	l->parent = parent;
	l->depth = parent < 0 ? 1 : p->loops[parent].depth + 1;
	l->nblocks = n;
	l->irreducible = irreducible;
	for (uint32_t i = 0; i < n; i++) {
		p->node_loop[nodes[i]] = (int)p->nloops;
		p->node_depth[nodes[i]] = l->depth;
	}
	p->nloops++;
	return 0;
}

/* Find the loops of one region; t is a tag no other region has had. */
static int lp_region(struct lp *p, const struct lp_region *r, uint32_t t)
{
	uint32_t nscc;

	for (uint32_t i = 0; i < r->n; i++)
		p->tag[r->nodes[i]] = t;
	nscc = lp_tarjan(p, r, t);
	for (uint32_t c = 0; c < nscc; c++) {
		const uint32_t *nodes = p->scc + p->scc_off[c];
		uint32_t n = p->scc_off[c + 1] - p->scc_off[c], header = nodes[0];
		int entries = 0;

		if (n == 1 && !lp_has_self_loop(p, nodes[0]))
			continue;
		for (uint32_t i = 0; i < n; i++) {
			entries += lp_is_entry(p, nodes[i], c, t);
			if (p->rpo[nodes[i]] < p->rpo[header])
				header = nodes[i];
		}
		if (lp_add_loop(p, nodes, n, header, entries > 1, r->parent))
			return -ENOMEM;
	}
	return 0;
}

struct lp_key {
	uint32_t rpo;
	int loop;
};

static int lp_cmp_key(const void *a, const void *b)
{
	const struct lp_key *x = a, *y = b;

	return x->rpo < y->rpo ? -1 : x->rpo > y->rpo;
}

/* Order loops by header in reverse postorder: parents before children. */
static int lp_sort(struct lp *p)
{
	struct lp_key *key;
	struct cfg_loop *sorted;
	int *newidx;

	if (p->nloops < 2)	/* one loop has no parent: nothing to renumber */
		return 0;
	key = malloc((p->nloops + 1) * sizeof(*key));
	sorted = malloc((p->nloops + 1) * sizeof(*sorted));
	newidx = malloc((p->nloops + 1) * sizeof(*newidx));
	if (!key || !sorted || !newidx) {
		free(key);
		free(sorted);
		free(newidx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nloops; i++)
		key[i] = (struct lp_key){ p->rpo[p->loops[i].header], (int)i };
	dcpi_qsort(key, p->nloops, sizeof(*key), lp_cmp_key);
	for (size_t i = 0; i < p->nloops; i++) {
		newidx[key[i].loop] = (int)i;
		sorted[i] = p->loops[key[i].loop];
	}
	for (size_t i = 0; i < p->nloops; i++)
		if (sorted[i].parent >= 0)
			sorted[i].parent = newidx[sorted[i].parent];
	for (uint32_t v = 0; v < p->g->nnodes; v++)
		if (p->node_loop[v] >= 0)
			p->node_loop[v] = newidx[p->node_loop[v]];
	free(p->loops);
	p->loops = sorted;
	free(key);
	free(newidx);
	return 0;
}

/* Lay the arrays out in a: counting, then carving (graph.h). */
static void lp_layout(struct lp *p, struct cfg_arena *a)
{
	size_t nn = p->g->nnodes, ne = p->g->nedges;

	p->succ_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	p->succ = cfg_arena_take(a, ne, sizeof(uint32_t));
	p->pred_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	p->pred = cfg_arena_take(a, ne, sizeof(uint32_t));
	p->rpo = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->tag = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->idx = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->low = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->comp = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->fpos = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->tstack = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->fstack = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->scc = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->scc_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	p->all = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->onstk = cfg_arena_take(a, nn, 1);
}

/* Every working array from s (graph.h). */
static int lp_alloc(struct lp *p, struct cfg_scratch *s)
{
	size_t nn = p->g->nnodes;

	lp_layout(p, &p->mem);
	if (cfg_arena_start(&p->mem, s) < 0)
		return -ENOMEM;
	lp_layout(p, &p->mem);
	if (p->mem.failed)
		return -ENOMEM;
	cfg_graph_csr_fill(p->g, 0, p->succ_off, p->succ);
	cfg_graph_csr_fill(p->g, 1, p->pred_off, p->pred);
	for (size_t v = 0; v < nn; v++)
		p->tag[v] = NIL;
	return 0;
}

/* A region's nodes are its own, but for the first (p->all). */
static void lp_free(struct lp *p)
{
	for (size_t i = 0; i < p->nwork; i++)
		if (p->work[i].nodes != p->all)
			free(p->work[i].nodes);
	free(p->work);
	cfg_arena_end(&p->mem);
}

static int lp_check(const struct cfg_graph *g, struct dcpi_err *err)
{
	if (!g || !g->nnodes || g->entry >= g->nnodes)
		return dcpi_errf(err, -EINVAL, "loops: no nodes or entry out of range");
	for (uint32_t e = 0; e < g->nedges; e++) {
		if (g->from[e] >= g->nnodes || g->to[e] >= g->nnodes)
			return dcpi_errf(err, -EINVAL, "loops: edge %u (%u -> %u) out of range",
					 e, g->from[e], g->to[e]);
	}
	return 0;
}

int cfg_find_loops(const struct cfg_graph *g, struct cfg_loop **loops, size_t *nloops,
		   int *node_loop, int *node_depth, struct dcpi_err *err)
{
	return cfg_find_loops_with(g, loops, nloops, node_loop, node_depth, NULL, err);
}

int cfg_find_loops_with(const struct cfg_graph *g, struct cfg_loop **loops, size_t *nloops,
			int *node_loop, int *node_depth, struct cfg_scratch *s,
			struct dcpi_err *err)
{
	struct cfg_scratch own = { NULL, 0 };
	struct lp p = { .g = g, .node_loop = node_loop, .node_depth = node_depth };
	uint32_t nall, tag = 0;
	int ret;

	ret = lp_check(g, err);
	if (ret)
		return ret;
	for (uint32_t v = 0; v < g->nnodes; v++) {
		node_loop[v] = -1;
		node_depth[v] = 0;
	}
	ret = -ENOMEM;
	if (lp_alloc(&p, s ? s : &own))
		goto fail;
	lp_rpo(&p, &nall);
	if (lp_push_region(&p, p.all, nall, -1))
		goto fail;
	while (p.nwork) {
		struct lp_region r = p.work[--p.nwork];

		ret = lp_region(&p, &r, tag++);
		if (r.nodes != p.all)
			free(r.nodes);
		if (ret)
			goto fail;
	}
	ret = lp_sort(&p);
	if (ret)
		goto fail;
	*loops = p.loops;
	*nloops = p.nloops;
	lp_free(&p);
	free(own.mem);
	return 0;
fail:
	cfg_loops_free(p.loops, p.nloops);
	lp_free(&p);
	free(own.mem);
	for (uint32_t v = 0; v < g->nnodes; v++) {
		node_loop[v] = -1;
		node_depth[v] = 0;
	}
	return dcpi_errf(err, ret, "loops: %u nodes, %u edges: out of memory", g->nnodes,
			 g->nedges);
}

void cfg_loops_free(struct cfg_loop *loops, size_t nloops)
{
	if (!loops)
		return;
	for (size_t i = 0; i < nloops; i++)
		free(loops[i].blocks);
	free(loops);
}
