/*
 * cycle_equiv.c - cycle-equivalence classes of a CFG's nodes and edges, the
 * sets of blocks and edges DCPI's estimator knows to execute equally often
 * (DCPI paper sec. 6.1.2).  Linear time, after Johnson, Pearson and Pingali,
 * "The program structure tree: computing control regions in linear time"
 * (PLDI 1994), fig. 4, with DCPI's extension for infinite loops.
 *
 * The graph is made strongly connected:
 *   - an internal exit -> entry edge;
 *   - DCPI's extension: every node reachable from entry that cannot reach the
 *     exit (an infinite loop, an idle loop) gets an internal edge to the exit.
 *     A profile covers a finite window, so such code may stop anywhere; the
 *     classes then hold for every execution cut off at any point of it;
 *   - nodes unreachable from entry (dead code the builder could not rule
 *     out) are left out: each of them, and each edge leaving one, gets a
 *     class of its own.
 * Each node v becomes v_in = 2v and v_out = 2v + 1 joined by a "node edge",
 * so node and edge classes come out of one computation; a self loop v -> v
 * (and exit -> entry when entry == exit) becomes v_out -> v_in, so the
 * expanded graph has no self loops, and parallel edges are told apart by id.
 * In a strongly connected graph, directed and undirected cycle equivalence
 * agree (JPP sec. 3), so the rest is JPP's undirected algorithm: one DFS, then
 * nodes in reverse preorder, each collecting the brackets (back edges over
 * its tree edge) of its children in a doubly linked list.  Two tree edges are
 * equivalent iff their bracket sets are equal, which the (top bracket, list
 * size) pair decides in O(1) thanks to capping back edges; a back edge is
 * equivalent to a tree edge iff it is that edge's only bracket.
 *
 * Expanded edge ids: [0, N) node edges, [N, N+E) the caller's edges, N+E
 * the exit -> entry edge, then one per dead node.  Bracket ids are expanded
 * edge ids, plus nex + x for the capping back edge created at node x.
 * Internal edges' classes are dropped and the rest renumbered densely.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "graph.h"

#define NIL UINT32_MAX

struct ceq_list {
	uint32_t top, bot, size;
};

struct ceq {
	const struct cfg_graph *g;
	uint32_t nx, nex, nbr;		/* expanded nodes, edges, brackets */
	uint32_t *succ_off, *succ;	/* the caller's graph, forward */
	uint32_t *pred_off, *pred;	/* and backward */
	uint8_t *reach, *live;		/* from entry; to exit */
	uint32_t *ea, *eb;		/* expanded edge endpoints, NIL if absent */
	uint32_t *adj_off, *adj;	/* undirected incidence lists */
	uint32_t *dfs, *order, *pedge, *hi, *pos;
	struct ceq_list *bl;
	uint32_t *bprev, *bnext, *rsize, *cap_head, *cap_next;
	int *rclass, *cls, *map;
	int nclass;
	struct cfg_arena mem;		/* where the arrays are */
};

/* Mark what start reaches along off/adj; stack has room for every node. */
static void ceq_mark(uint32_t start, const uint32_t *off, const uint32_t *adj, uint8_t *seen,
		     uint32_t *stack)
{
	uint32_t sp = 0;

	seen[start] = 1;
	stack[sp++] = start;
	while (sp) {
		uint32_t v = stack[--sp];

		for (uint32_t i = off[v]; i < off[v + 1]; i++) {
			if (!seen[adj[i]]) {
				seen[adj[i]] = 1;
				stack[sp++] = adj[i];
			}
		}
	}
}

/* Build the expanded, strongly connected graph and its incidence lists. */
static void ceq_expand(struct ceq *c)
{
	const struct cfg_graph *g = c->g;
	uint32_t n = g->nnodes, k = n + g->nedges + 1;

	for (uint32_t e = 0; e < c->nex; e++)
		c->ea[e] = c->eb[e] = NIL;
	for (uint32_t v = 0; v < n; v++) {
		if (!c->reach[v])
			continue;
		c->ea[v] = 2 * v;
		c->eb[v] = 2 * v + 1;
		if (!c->live[v]) {
			c->ea[k] = 2 * v + 1;
			c->eb[k++] = 2 * g->exit;
		}
	}
	for (uint32_t e = 0; e < g->nedges; e++) {
		if (c->reach[g->from[e]]) {
			c->ea[n + e] = 2 * g->from[e] + 1;
			c->eb[n + e] = 2 * g->to[e];
		}
	}
	c->ea[n + g->nedges] = 2 * g->exit + 1;
	c->eb[n + g->nedges] = 2 * g->entry;
	c->nex = k;
	for (uint32_t e = 0; e < c->nex; e++) {
		if (c->ea[e] == NIL)
			continue;
		c->adj_off[c->ea[e] + 1]++;
		c->adj_off[c->eb[e] + 1]++;
	}
	for (uint32_t x = 0; x < c->nx; x++)
		c->adj_off[x + 1] += c->adj_off[x];
	for (uint32_t x = 0; x < c->nx; x++)
		c->pos[x] = c->adj_off[x];
	for (uint32_t e = 0; e < c->nex; e++) {
		if (c->ea[e] == NIL)
			continue;
		c->adj[c->pos[c->ea[e]]++] = e;
		c->adj[c->pos[c->eb[e]]++] = e;
	}
}

static uint32_t ceq_other(const struct ceq *c, uint32_t e, uint32_t x)
{
	return c->ea[e] == x ? c->eb[e] : c->ea[e];
}

/* Iterative undirected DFS from entry_in: preorder numbers and tree edges. */
static void ceq_dfs(struct ceq *c)
{
	uint32_t *stack = c->hi;	/* free until the bracket pass */
	uint32_t sp = 0, num = 0, root = 2 * c->g->entry;

	for (uint32_t x = 0; x < c->nx; x++) {
		c->dfs[x] = NIL;
		c->pedge[x] = NIL;
		c->pos[x] = c->adj_off[x];
	}
	c->dfs[root] = num;
	c->order[num++] = root;
	stack[sp++] = root;
	while (sp) {
		uint32_t x = stack[sp - 1];

		if (c->pos[x] == c->adj_off[x + 1]) {
			sp--;
			continue;
		}
		uint32_t e = c->adj[c->pos[x]++];
		uint32_t t = ceq_other(c, e, x);

		if (c->dfs[t] != NIL)
			continue;
		c->dfs[t] = num;
		c->order[num++] = t;
		c->pedge[t] = e;
		stack[sp++] = t;
	}
	c->nx = num;	/* from here on, only the nodes the DFS reached count */
}

static void ceq_push(struct ceq *c, struct ceq_list *l, uint32_t b)
{
	c->bprev[b] = NIL;
	c->bnext[b] = l->top;
	if (l->top != NIL)
		c->bprev[l->top] = b;
	else
		l->bot = b;
	l->top = b;
	l->size++;
}

static void ceq_delete(struct ceq *c, struct ceq_list *l, uint32_t b)
{
	if (c->bprev[b] != NIL)
		c->bnext[c->bprev[b]] = c->bnext[b];
	else
		l->top = c->bnext[b];
	if (c->bnext[b] != NIL)
		c->bprev[c->bnext[b]] = c->bprev[b];
	else
		l->bot = c->bprev[b];
	l->size--;
}

/* Append list s below list l; s is consumed. */
static void ceq_concat(struct ceq *c, struct ceq_list *l, struct ceq_list *s)
{
	if (!s->size)
		return;
	if (!l->size) {
		*l = *s;
	} else {
		c->bnext[l->bot] = s->top;
		c->bprev[s->top] = l->bot;
		l->bot = s->bot;
		l->size += s->size;
	}
	s->top = s->bot = NIL;
	s->size = 0;
}

/* JPP fig. 4, first half: x's hi (the highest node a back edge from x's
 * subtree reaches), hi0 and hi2 for capping, the children's brackets. */
static void ceq_collect(struct ceq *c, uint32_t x, uint32_t *hi0, uint32_t *hi2)
{
	uint32_t dx = c->dfs[x], hi1 = NIL;

	*hi0 = *hi2 = NIL;
	for (uint32_t i = c->adj_off[x]; i < c->adj_off[x + 1]; i++) {
		uint32_t e = c->adj[i], t = ceq_other(c, e, x);

		if (e == c->pedge[x])
			continue;
		if (c->pedge[t] == e) {		/* t is a child */
			if (c->hi[t] < hi1) {
				*hi2 = hi1;
				hi1 = c->hi[t];
			} else if (c->hi[t] < *hi2) {
				*hi2 = c->hi[t];
			}
			ceq_concat(c, &c->bl[x], &c->bl[t]);
		} else if (c->dfs[t] < dx && c->dfs[t] < *hi0) {
			*hi0 = c->dfs[t];
		}
	}
	c->hi[x] = *hi0 < hi1 ? *hi0 : hi1;
}

/* The class of the tree edge into x from its bracket list (top, size). */
static void ceq_classify(struct ceq *c, uint32_t x)
{
	struct ceq_list *l = &c->bl[x];
	uint32_t e = c->pedge[x], b = l->top;

	if (b == NIL) {		/* a bridge: cannot happen when strongly connected */
		c->cls[e] = c->nclass++;
		return;
	}
	if (c->rsize[b] != l->size) {
		c->rsize[b] = l->size;
		c->rclass[b] = c->nclass++;
	}
	c->cls[e] = c->rclass[b];
	if (l->size == 1)	/* b is e's only bracket: the two are equivalent */
		c->cls[b] = c->cls[e];
}

/* JPP fig. 4 for node x: its bracket list, then its tree edge's class. */
static void ceq_visit(struct ceq *c, uint32_t x)
{
	struct ceq_list *l = &c->bl[x];
	uint32_t dx = c->dfs[x], hi0, hi2;

	ceq_collect(c, x, &hi0, &hi2);
	for (uint32_t b = c->cap_head[x]; b != NIL; b = c->cap_next[b - c->nex])
		ceq_delete(c, l, b);
	for (uint32_t i = c->adj_off[x]; i < c->adj_off[x + 1]; i++) {
		uint32_t e = c->adj[i], t = ceq_other(c, e, x);

		if (e == c->pedge[x] || c->pedge[t] == e)
			continue;
		if (c->dfs[t] > dx) {		/* back edge from a descendant */
			ceq_delete(c, l, e);
			if (c->cls[e] < 0)
				c->cls[e] = c->nclass++;
		} else {			/* back edge to an ancestor */
			ceq_push(c, l, e);
		}
	}
	/* Capping back edge; JPP's hi2 < hi0 needs hi2 above x as well. */
	if (hi2 < hi0 && hi2 < dx) {
		uint32_t cap = c->nex + x, to = c->order[hi2];

		ceq_push(c, l, cap);
		c->cap_next[x] = c->cap_head[to];
		c->cap_head[to] = cap;
	}
	if (c->pedge[x] != NIL)
		ceq_classify(c, x);
}

/* Number the caller's classes densely, nodes first, then edges. */
static int ceq_report(struct ceq *c, int *node_class, int *edge_class)
{
	const struct cfg_graph *g = c->g;
	int *map = c->map, next = 0;

	/* a class is made per edge or bracket at most: nclass <= nbr */
	for (int i = 0; i < c->nclass; i++)
		map[i] = -1;
	for (uint32_t i = 0; i < g->nnodes + g->nedges; i++) {
		int k = c->cls[i];
		int *out = i < g->nnodes ? &node_class[i] : &edge_class[i - g->nnodes];

		if (k < 0) {
			*out = next++;		/* unreachable from entry */
			continue;
		}
		if (map[k] < 0)
			map[k] = next++;
		*out = map[k];
	}
	return next;
}

static int ceq_check(const struct cfg_graph *g, struct dcpi_err *err)
{
	if (!g || !g->nnodes)
		return dcpi_errf(err, -EINVAL, "cycle equivalence: empty graph");
	if (g->entry >= g->nnodes || g->exit >= g->nnodes)
		return dcpi_errf(err, -EINVAL, "cycle equivalence: entry %u or exit %u "
				 "out of range", g->entry, g->exit);
	if ((uint64_t)g->nnodes * 4 + g->nedges + 2 > INT_MAX)
		return dcpi_errf(err, -EOVERFLOW, "cycle equivalence: %u nodes, %u edges: "
				 "too many", g->nnodes, g->nedges);
	for (uint32_t e = 0; e < g->nedges; e++) {
		if (g->from[e] >= g->nnodes || g->to[e] >= g->nnodes)
			return dcpi_errf(err, -EINVAL, "cycle equivalence: edge %u (%u -> %u) "
					 "out of range", e, g->from[e], g->to[e]);
	}
	return 0;
}

/* Lay the arrays out in a: counting, then carving (graph.h). */
static void ceq_layout(struct ceq *c, struct cfg_arena *a)
{
	size_t nn = c->g->nnodes, ne = c->g->nedges, nx = c->nx, nex = c->nex, nbr = c->nbr;

	c->succ_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	c->succ = cfg_arena_take(a, ne, sizeof(uint32_t));
	c->pred_off = cfg_arena_take(a, nn + 1, sizeof(uint32_t));
	c->pred = cfg_arena_take(a, ne, sizeof(uint32_t));
	c->reach = cfg_arena_take(a, nn, 1);
	c->live = cfg_arena_take(a, nn, 1);
	c->ea = cfg_arena_take(a, nex, sizeof(uint32_t));
	c->eb = cfg_arena_take(a, nex, sizeof(uint32_t));
	c->adj_off = cfg_arena_take(a, nx + 1, sizeof(uint32_t));
	c->adj = cfg_arena_take(a, 2 * nex, sizeof(uint32_t));
	c->dfs = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->order = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->pedge = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->hi = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->pos = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->bl = cfg_arena_take(a, nx, sizeof(struct ceq_list));
	c->bprev = cfg_arena_take(a, nbr, sizeof(uint32_t));
	c->bnext = cfg_arena_take(a, nbr, sizeof(uint32_t));
	c->rsize = cfg_arena_take(a, nbr, sizeof(uint32_t));
	c->cap_head = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->cap_next = cfg_arena_take(a, nx, sizeof(uint32_t));
	c->rclass = cfg_arena_take(a, nbr, sizeof(int));
	c->cls = cfg_arena_take(a, nbr, sizeof(int));
	c->map = cfg_arena_take(a, nbr, sizeof(int));
}

/* Every working array, zeroed, from s (graph.h). */
static int ceq_alloc_all(struct ceq *c, struct cfg_scratch *s)
{
	ceq_layout(c, &c->mem);
	if (cfg_arena_start(&c->mem, s) < 0)
		return -ENOMEM;
	ceq_layout(c, &c->mem);
	if (c->mem.failed)
		return -ENOMEM;
	cfg_graph_csr_fill(c->g, 0, c->succ_off, c->succ);
	cfg_graph_csr_fill(c->g, 1, c->pred_off, c->pred);
	return 0;
}

int cfg_cycle_equiv(const struct cfg_graph *g, int *node_class, int *edge_class,
		    int *nclasses, struct dcpi_err *err)
{
	return cfg_cycle_equiv_with(g, node_class, edge_class, nclasses, NULL, err);
}

int cfg_cycle_equiv_with(const struct cfg_graph *g, int *node_class, int *edge_class,
			 int *nclasses, struct cfg_scratch *s, struct dcpi_err *err)
{
	struct cfg_scratch own = { NULL, 0 };
	struct ceq c = { .g = g };
	int ret;

	ret = ceq_check(g, err);
	if (ret)
		return ret;
	c.nx = 2 * g->nnodes;
	c.nex = 2 * g->nnodes + g->nedges + 1;	/* an upper bound until expanded */
	c.nbr = c.nex + c.nx;
	if (ceq_alloc_all(&c, s ? s : &own)) {
		ret = dcpi_errf(err, -ENOMEM, "cycle equivalence: %u nodes, %u edges: "
				"out of memory", g->nnodes, g->nedges);
		goto out;
	}
	ceq_mark(g->entry, c.succ_off, c.succ, c.reach, c.hi);
	if (!c.reach[g->exit])	/* entry is dead: its edge leads to the exit */
		ceq_mark(g->exit, c.succ_off, c.succ, c.reach, c.hi);
	ceq_mark(g->exit, c.pred_off, c.pred, c.live, c.hi);
	ceq_expand(&c);
	ceq_dfs(&c);
	for (uint32_t x = 0; x < 2 * g->nnodes; x++) {
		c.bl[x].top = c.bl[x].bot = NIL;
		c.cap_head[x] = NIL;
	}
	for (uint32_t b = 0; b < c.nbr; b++)
		c.cls[b] = -1;
	for (uint32_t i = c.nx; i > 0; i--)
		ceq_visit(&c, c.order[i - 1]);
	ret = ceq_report(&c, node_class, edge_class);
	if (ret < 0) {
		ret = dcpi_errf(err, ret, "cycle equivalence: out of memory");
		goto out;
	}
	*nclasses = ret;
	ret = 0;
out:
	cfg_arena_end(&c.mem);
	free(own.mem);
	return ret;
}
