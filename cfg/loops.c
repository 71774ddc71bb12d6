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
 *
 * Most procedures have no loop at all (four in five of cc1's), and most of
 * those have every edge going forward in block order: one look at the
 * edges finds that, and they need nothing more.  Otherwise the outermost
 * components come from the DFS that numbers the nodes in reverse
 * postorder: Tarjan's search from entry over successors in edge order is
 * that very DFS, so one walk gives both, and finds whether there is any
 * cycle.  The successors are the caller's to[] when the edges come sorted
 * by tail, as a CFG's do; the predecessors, needed only to count a nested
 * loop's entries, are laid out once one is found.  Every result is as it
 * was before any of this was made fast (tests/test_loops.c keeps that
 * version).
 */
#include <errno.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "graph.h"

#define NIL UINT32_MAX

struct lp_region {
	size_t nodes;		/* offset in struct lp's inside */
	uint32_t n;
	int parent;		/* the loop this region is the inside of, -1 at top */
};

/*
 * A node in Tarjan's search: its number (NIL: not seen yet), low link, next
 * edge, and its component, or ONSTK while on the stack (ONSTK_SELF: and it
 * has a self loop).  One struct, not an array each: the search keeps fewer
 * pointers than there are registers.  After the node is done, low holds its
 * postorder number.
 */
struct lp_node {
	uint32_t idx, low, pos, comp;
};

#define ONSTK (NIL - 1)
#define ONSTK_SELF (NIL - 2)

struct lp {
	const struct cfg_graph *g;
	uint32_t *succ_off, *pred_off, *pred;
	const uint32_t *succ;		/* succ_mem, or the caller's to[] (lp_succ) */
	uint32_t *succ_mem;
	struct lp_node *node;
	uint32_t *rpo, *tag, *stack, *scc, *scc_off;
	uint8_t *entry;			/* outermost loops: entered from outside */
	uint32_t *loopc, nloopc;	/* the components that are loops */
	uint32_t *mark;			/* loop index, when sorting its blocks */
	struct cfg_arena mem;		/* where the arrays above are */
	struct lp_region *work;
	size_t nwork, work_cap;
	uint32_t *inside;		/* the regions' nodes, one after another */
	size_t ninside, inside_cap;
	int have_pred;			/* pred_off, pred filled */
	struct cfg_loop *loops;
	size_t nloops, loops_cap;
	int *node_loop, *node_depth;
};

/*
 * Tarjan's components, iteratively, of what roots[0 .. n) reach: with t NIL,
 * every node (the outermost region, searched from entry), else only the
 * nodes tagged t.  scc[] holds the components one after another, component
 * c at scc[scc_off[c] .. scc_off[c + 1]), those that are loops (several
 * nodes, or a self loop) listed in loopc.  Returns whether any edge closes
 * a cycle.  From entry this search is the very DFS that numbers the nodes
 * in reverse postorder: rpo (NIL if unreachable) comes with it, when there
 * is a cycle (else no one asks).
 */
static int lp_scc(struct lp *p, const uint32_t *roots, uint32_t n, uint32_t t)
{
	uint32_t counter = 0, tsp = 0, fsp = 2 * p->g->nnodes, nc = 0, nout = 0, npost = 0;
	uint32_t nn = p->g->nnodes, nloopc = 0;
	const uint32_t *restrict succ_off = p->succ_off, *restrict succ = p->succ;
	const uint32_t *restrict tag = p->tag;
	struct lp_node *restrict node = p->node;
	/* Tarjan's stack from the bottom, the search's from the top */
	uint32_t *restrict stack = p->stack, *restrict scc = p->scc;
	int cyclic = 0;

	if (t == NIL)
		for (uint32_t u = 0; u < nn; u++)
			node[u].idx = NIL;
	else
		for (uint32_t i = 0; i < n; i++)
			node[roots[i]].idx = NIL;
	for (uint32_t i = 0; i < n; i++) {
		/* the node being searched is v, its next edge pos, its low lv: not
		 * reloaded from memory for every edge */
		uint32_t v = roots[i], pos, end, lv;

		if (node[v].idx != NIL)
			continue;
		node[v].idx = lv = counter++;
		node[v].comp = ONSTK;
		stack[tsp++] = v;
		pos = succ_off[v];
		end = succ_off[v + 1];
		for (;;) {
			if (pos < end) {
				uint32_t w = succ[pos++], iw, on;

				if (t != NIL && tag[w] != t)
					continue;
				iw = node[w].idx;
				if (iw == NIL) {
					node[v].pos = pos;
					node[v].low = lv;
					stack[--fsp] = v;
					v = w;
					node[v].idx = lv = counter++;
					node[v].comp = ONSTK;
					stack[tsp++] = v;
					pos = succ_off[v];
					end = succ_off[v + 1];
					continue;
				}
				/* no branch: an edge closes a cycle iff w is on the stack */
				on = node[w].comp >= ONSTK_SELF;
				cyclic |= on;
				iw = on ? iw : NIL;
				lv = iw < lv ? iw : lv;
				if (w == v)	/* rare: a branch, not a store per edge */
					node[v].comp = ONSTK_SELF;
				continue;
			}
			if (lv == node[v].idx) {
				uint32_t w, self = node[v].comp == ONSTK_SELF;

				p->scc_off[nc] = nout;
				do {
					w = stack[--tsp];
					node[w].comp = nc;
					scc[nout++] = w;
				} while (w != v);
				if (self || nout - p->scc_off[nc] > 1)
					p->loopc[nloopc++] = nc;
				nc++;
			}
			node[v].low = npost++;
			if (fsp == 2 * nn)
				break;
			v = stack[fsp++];
			lv = node[v].low < lv ? node[v].low : lv;
			pos = node[v].pos;
			end = succ_off[v + 1];
		}
	}
	p->scc_off[nc] = nout;
	p->nloopc = nloopc;
	if (t != NIL || !cyclic)
		return cyclic;
	for (uint32_t u = 0; u < nn; u++)
		p->rpo[u] = node[u].idx == NIL ? NIL : npost - 1 - node[u].low;
	return 1;
}

static int lp_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Is v entered from outside component c of the region tagged t? */
static int lp_is_entry(const struct lp *p, uint32_t v, uint32_t c, uint32_t t)
{
	if (v == p->g->entry)
		return 1;
	for (uint32_t k = p->pred_off[v]; k < p->pred_off[v + 1]; k++) {
		uint32_t u = p->pred[k];

		if (p->rpo[u] != NIL && (p->tag[u] != t || p->node[u].comp != c))
			return 1;
	}
	return 0;
}

/*
 * Which nodes of the outermost components are entered from outside theirs:
 * one pass over the edges, no predecessor lists.
 */
static void lp_top_entries(struct lp *p)
{
	const uint32_t *from = p->g->from, *to = p->g->to;

	p->entry[p->g->entry] = 1;
	for (uint32_t e = 0; e < p->g->nedges; e++) {
		uint32_t u = from[e], w = to[e];

		p->entry[w] |= (p->rpo[u] != NIL) & (p->node[u].comp != p->node[w].comp);
	}
}

/*
 * Sort loop l's blocks (distinct node numbers): insertion sort when short,
 * as most are; else, when they are not spread far, marked and picked up in
 * order; else qsort.
 */
static void lp_sort_blocks(struct lp *p, uint32_t *a, uint32_t n, uint32_t l)
{
	uint32_t lo = UINT32_MAX, hi = 0, k = 0;

	if (n > 24) {
		for (uint32_t i = 0; i < n; i++) {
			lo = a[i] < lo ? a[i] : lo;
			hi = a[i] > hi ? a[i] : hi;
			p->mark[a[i]] = l;
		}
		if ((hi - lo) / 8 >= n) {
			dcpi_qsort(a, n, sizeof(*a), lp_cmp_u32);
			return;
		}
		for (uint32_t v = lo; v <= hi; v++) {
			a[k] = v;
			k += p->mark[v] == l;
		}
		return;
	}
	for (uint32_t i = 1; i < n; i++) {
		uint32_t x = a[i], j = i;

		for (; j && a[j - 1] > x; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

static int lp_push_region(struct lp *p, size_t nodes, uint32_t n, int parent)
{
	if (dcpi_grow((void **)&p->work, &p->work_cap, p->nwork + 1, sizeof(*p->work)))
		return -ENOMEM;
	p->work[p->nwork++] = (struct lp_region){ nodes, n, parent };
	return 0;
}

/* Room for n more region nodes in p->inside; NULL when out of memory. */
static uint32_t *lp_inside_take(struct lp *p, uint32_t n)
{
	if (p->ninside + n > p->inside_cap) {
		size_t cap = 2 * (p->ninside + n) + 16;
		uint32_t *in = realloc(p->inside, cap * sizeof(*in));

		if (!in)
			return NULL;
		p->inside = in;
		p->inside_cap = cap;
	}
	p->ninside += n;
	return p->inside + p->ninside - n;
}

/* Record component nodes[0 .. n) as a loop inside parent, and queue its
 * inside (all but the header) for the loops nested in it. */
static int lp_add_loop(struct lp *p, const uint32_t *nodes, uint32_t n, uint32_t header,
		       int irreducible, int parent)
{
	struct cfg_loop *l;
	uint32_t *inside = NULL, k = 0;

	if (dcpi_grow((void **)&p->loops, &p->loops_cap, p->nloops + 1, sizeof(*p->loops)))
		return -ENOMEM;
	l = &p->loops[p->nloops];
	l->blocks = malloc(n * sizeof(*l->blocks));
	if (!l->blocks)
		return -ENOMEM;
	if (n > 1) {
		inside = lp_inside_take(p, n - 1);
		if (!inside || lp_push_region(p, (size_t)(inside - p->inside), n - 1,
					      (int)p->nloops)) {
			free(l->blocks);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		l->blocks[i] = nodes[i];
		if (nodes[i] != header)
			inside[k++] = nodes[i];
	}
	lp_sort_blocks(p, l->blocks, n, (uint32_t)p->nloops);
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

/* Record component c (scc / scc_off), a loop, of the region tagged t (NIL:
 * the outermost, entries from lp_top_entries). */
static int lp_component(struct lp *p, uint32_t c, uint32_t t, int parent)
{
	const uint32_t *nodes = p->scc + p->scc_off[c];
	uint32_t n = p->scc_off[c + 1] - p->scc_off[c], header = nodes[0];
	int entries = 0;

	if (t != NIL && !p->have_pred) {
		cfg_graph_csr_fill(p->g, 1, p->pred_off, p->pred);
		p->have_pred = 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		entries += t == NIL ? p->entry[nodes[i]] : lp_is_entry(p, nodes[i], c, t);
		if (p->rpo[nodes[i]] < p->rpo[header])
			header = nodes[i];
	}
	return lp_add_loop(p, nodes, n, header, entries > 1, parent);
}

/* Find the loops of one region; t is a tag no other region has had. */
static int lp_region(struct lp *p, const struct lp_region *r, uint32_t t)
{
	const uint32_t *nodes = p->inside + r->nodes;	/* moves as loops are added */

	for (uint32_t i = 0; i < r->n; i++)
		p->tag[nodes[i]] = t;
	lp_scc(p, nodes, r->n, t);
	for (uint32_t i = 0; i < p->nloopc; i++)
		if (lp_component(p, p->loopc[i], t, r->parent))
			return -ENOMEM;
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

/* Lay the arrays of p (a struct lp) out in a: counting, then carving (graph.h). */
static void lp_layout(void *obj, struct cfg_arena *a)
{
	struct lp *p = obj;
	size_t nn = p->g->nnodes, ne = p->g->nedges;

	p->succ_off = cfg_arena_take(a, nn + 2, sizeof(uint32_t));
	p->succ_mem = cfg_arena_take(a, ne, sizeof(uint32_t));
	p->pred_off = cfg_arena_take(a, nn + 2, sizeof(uint32_t));
	p->pred = cfg_arena_take(a, ne, sizeof(uint32_t));
	p->rpo = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->tag = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->node = cfg_arena_take(a, nn, sizeof(struct lp_node));
	p->stack = cfg_arena_take(a, 2 * nn, sizeof(uint32_t));
	p->scc = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->scc_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	p->entry = cfg_arena_take(a, nn, 1);
	p->loopc = cfg_arena_take(a, nn, sizeof(uint32_t));
	p->mark = cfg_arena_take(a, nn, sizeof(uint32_t));
}

/* Tags, marks and entries, once there is a loop. */
static void lp_prepare(struct lp *p)
{
	for (uint32_t v = 0; v < p->g->nnodes; v++) {
		p->tag[v] = NIL;
		p->mark[v] = NIL;
		p->entry[v] = 0;
	}
}

/*
 * The successors.  A CFG's edges come sorted by their tail (the builder adds
 * them block by block): then (sorted) the successors of v are to[] itself,
 * from the first edge out of v on, and only the offsets need making.  Else
 * cfg_graph_csr_fill, which finds an edge out of range (-1 - e).
 */
static long lp_succ(struct lp *p, int sorted)
{
	const uint32_t *restrict from = p->g->from;
	uint32_t *restrict off = p->succ_off, n = p->g->nnodes, ne = p->g->nedges;

	if (!sorted) {
		p->succ = p->succ_mem;
		return cfg_graph_csr_fill(p->g, 0, p->succ_off, p->succ_mem);
	}
	/* off[v + 1]: one past v's last edge, where v has edges; then filled in */
	for (uint32_t v = 0; v <= n; v++)
		off[v] = 0;
	for (uint32_t e = 0; e < ne; e++)
		off[from[e] + 1] = e + 1;
	for (uint32_t v = 1; v <= n; v++)
		off[v] = off[v] > off[v - 1] ? off[v] : off[v - 1];
	p->succ = p->g->to;
	return 0;
}

static void lp_free(struct lp *p)
{
	free(p->work);
	free(p->inside);
	cfg_arena_end(&p->mem);
}

/* The outermost loops, then the loops inside each loop found, innermost
 * last, then all in order. */
static int lp_find(struct lp *p)
{
	uint32_t tag = 0;

	if (!lp_scc(p, &p->g->entry, 1, NIL))
		return 0;	/* no cycle: no loop */
	lp_prepare(p);
	lp_top_entries(p);
	for (uint32_t i = 0; i < p->nloopc; i++)
		if (lp_component(p, p->loopc[i], NIL, -1))
			return -ENOMEM;
	while (p->nwork) {
		struct lp_region r = p->work[--p->nwork];

		if (lp_region(p, &r, tag++))
			return -ENOMEM;
	}
	return lp_sort(p);
}

enum { LP_FORWARD = 1, LP_SORTED = 2 };

/*
 * One look at the edges, no branch per edge: does every edge go to a
 * higher-numbered node (LP_FORWARD)?  Then there is no cycle, hence no
 * loop.  The blocks of a CFG are numbered in address order, the exit last,
 * and most procedures without a loop pass this test: for them, no
 * adjacency, no search.  Are the edges sorted by tail, all in range
 * (LP_SORTED, see lp_succ)?
 */
static int lp_shape(const struct cfg_graph *g)
{
	const uint32_t *restrict from = g->from, *restrict to = g->to;
	uint32_t n = g->nnodes, fwd = 1, sorted = 1, prev = 0;

	for (uint32_t e = 0; e < g->nedges; e++) {
		uint32_t f = from[e], t = to[e];

		fwd &= (f < t) & (t < n);
		sorted &= (prev <= f) & (f < n) & (t < n);
		prev = f;
	}
	return (fwd ? LP_FORWARD : 0) | (sorted ? LP_SORTED : 0);
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
	long bad;
	int ret, shape;

	if (!g || !g->nnodes || g->entry >= g->nnodes)
		return dcpi_errf(err, -EINVAL, "loops: no nodes or entry out of range");
	shape = lp_shape(g);
	if (shape & LP_FORWARD) {
		for (uint32_t v = 0; v < g->nnodes; v++) {
			node_loop[v] = -1;
			node_depth[v] = 0;
		}
		*loops = NULL;
		*nloops = 0;
		return 0;
	}
	/* every working array, its contents undefined */
	ret = cfg_arena_lay_out_dirty(&p.mem, s ? s : &own, lp_layout, &p);
	if (ret)
		goto fail;
	bad = lp_succ(&p, shape & LP_SORTED);
	if (bad) {
		uint32_t e = (uint32_t)(-1 - bad);

		lp_free(&p);
		free(own.mem);
		return dcpi_errf(err, -EINVAL, "loops: edge %u (%u -> %u) out of range", e,
				 g->from[e], g->to[e]);
	}
	for (uint32_t v = 0; v < g->nnodes; v++) {
		node_loop[v] = -1;
		node_depth[v] = 0;
	}
	ret = lp_find(&p);
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

int cfg_loop_innermost(const struct cfg *cfg, size_t l)
{
	for (size_t k = 0; k < cfg->nloops; k++)
		if (cfg->loops[k].parent == (int)l)
			return 0;
	return 1;
}
