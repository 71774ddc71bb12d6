/*
 * test_loops.c - cfg_dominators and cfg_find_loops: hand-made graphs (single,
 * nested, shared-header, two-exit, irreducible and self loops), then random
 * graphs checked against brute-force dominance (d dominates v iff v cannot
 * be reached from entry without d) and natural loops computed from their
 * definition, and large shaped graphs against the whole loop forest built
 * from its definition by brute force (oracle_loops).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dcpi/cfg.h"
#include "graph_ref.h"
#include "tu_main.h"

#define MAXN 14
#define MAXE 48

struct found {
	struct cfg_loop *loops;
	size_t n;
	int node_loop[MAXN], node_depth[MAXN];
};

static void find(uint32_t nn, const uint32_t (*pairs)[2], uint32_t ne, struct found *f)
{
	uint32_t from[MAXE], to[MAXE];
	struct cfg_graph g = { nn, ne, from, to, 0, nn - 1 };
	struct dcpi_err err = { 0 };

	for (uint32_t i = 0; i < ne; i++) {
		from[i] = pairs[i][0];
		to[i] = pairs[i][1];
	}
	assert_int_equal(cfg_find_loops(&g, &f->loops, &f->n, f->node_loop, f->node_depth,
					&err), 0);
}

/* Loop l has exactly the blocks in the bit set want. */
static void assert_blocks(const struct cfg_loop *l, uint32_t want)
{
	uint32_t got = 0;

	for (uint32_t i = 0; i < l->nblocks; i++) {
		if (i)
			assert_true(l->blocks[i - 1] < l->blocks[i]);
		got |= 1u << l->blocks[i];
	}
	assert_int_equal(got, want);
}

static void test_single_loop(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 2, 3 } };
	struct found f;

	find(4, e, 4, &f);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.loops[0].header, 1);
	assert_int_equal(f.loops[0].parent, -1);
	assert_int_equal(f.loops[0].depth, 1);
	assert_int_equal(f.loops[0].irreducible, 0);
	assert_blocks(&f.loops[0], 0x6);
	assert_int_equal(f.node_loop[0], -1);
	assert_int_equal(f.node_depth[0], 0);
	assert_int_equal(f.node_loop[2], 0);
	assert_int_equal(f.node_depth[2], 1);
	assert_int_equal(f.node_loop[3], -1);
	cfg_loops_free(f.loops, f.n);
}

/* Three deep: 1 { 2 { 3 { 4 } } } with 5 in the outer loop only. */
static void test_nested_loops(void **state)
{
	static const uint32_t e[][2] = {
		{ 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 4, 4 }, { 4, 3 }, { 3, 2 },
		{ 2, 5 }, { 5, 1 }, { 5, 6 },
	};
	struct found f;

	find(7, e, 10, &f);
	assert_int_equal(f.n, 4);
	assert_int_equal(f.loops[0].header, 1);
	assert_blocks(&f.loops[0], 0x3e);
	assert_int_equal(f.loops[1].header, 2);
	assert_blocks(&f.loops[1], 0x1c);
	assert_int_equal(f.loops[1].parent, 0);
	assert_int_equal(f.loops[1].depth, 2);
	assert_int_equal(f.loops[2].header, 3);
	assert_blocks(&f.loops[2], 0x18);
	assert_int_equal(f.loops[2].parent, 1);
	assert_int_equal(f.loops[3].header, 4);
	assert_blocks(&f.loops[3], 0x10);
	assert_int_equal(f.loops[3].parent, 2);
	assert_int_equal(f.loops[3].depth, 4);
	static const int depth[] = { 0, 1, 2, 3, 4, 1, 0 };
	static const int loop[] = { -1, 0, 1, 2, 3, 0, -1 };

	for (int v = 0; v < 7; v++) {
		assert_int_equal(f.node_depth[v], depth[v]);
		assert_int_equal(f.node_loop[v], loop[v]);
	}
	for (size_t i = 0; i < f.n; i++)
		assert_int_equal(f.loops[i].irreducible, 0);
	/* only the deepest has none nested in it */
	{
		struct cfg c = { .loops = f.loops, .nloops = f.n };

		for (size_t i = 0; i < f.n; i++)
			assert_int_equal(cfg_loop_innermost(&c, i), i == 3);
	}
	cfg_loops_free(f.loops, f.n);
}

/* Graphs with one loop (exits to the last node): its header and blocks. */
static const struct {
	const char *what;
	uint32_t nodes, nedges;
	uint32_t e[6][2];
	int header;
	uint32_t blocks;
} one_loop[] = {
	{ "two exits", 4, 5, { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 1, 3 }, { 2, 3 } }, 1, 0x6 },
	/* two back edges to 1, a continue and the latch: one loop */
	{ "shared header", 5, 6,
	  { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 1, 3 }, { 3, 1 }, { 3, 4 } }, 1, 0xe },
	{ "self loop", 3, 3, { { 0, 1 }, { 1, 1 }, { 1, 2 } }, 1, 0x2 },
};

static void test_one_loop(void **state)
{
	for (size_t i = 0; i < sizeof(one_loop) / sizeof(one_loop[0]); i++) {
		struct found f;

		print_message("%s\n", one_loop[i].what);
		find(one_loop[i].nodes, one_loop[i].e, one_loop[i].nedges, &f);
		assert_int_equal(f.n, 1);
		assert_int_equal(f.loops[0].header, one_loop[i].header);
		assert_blocks(&f.loops[0], one_loop[i].blocks);
		cfg_loops_free(f.loops, f.n);
	}
}

/* The cycle 1 <-> 2 entered at both; 3 a self loop inside it. */
static void test_irreducible(void **state)
{
	static const uint32_t e[][2] = {
		{ 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 3 }, { 3, 3 }, { 3, 1 }, { 2, 4 },
	};
	struct found f;

	find(5, e, 7, &f);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.loops[0].irreducible, 1);
	assert_int_equal(f.loops[0].header, 1);	/* first in reverse postorder */
	assert_blocks(&f.loops[0], 0xe);
	assert_int_equal(f.loops[1].irreducible, 0);
	assert_int_equal(f.loops[1].header, 3);
	assert_int_equal(f.loops[1].parent, 0);
	assert_int_equal(f.node_depth[3], 2);
	assert_int_equal(f.node_depth[2], 1);
	assert_int_equal(f.node_loop[4], -1);
	cfg_loops_free(f.loops, f.n);
}

/* A natural loop 2 <-> 3 headed by the second entry of an irreducible one. */
static void test_irreducible_nested(void **state)
{
	static const uint32_t e[][2] = {
		{ 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 }, { 3, 2 }, { 3, 4 },
	};
	struct found f;

	find(5, e, 7, &f);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.loops[0].irreducible, 1);
	assert_blocks(&f.loops[0], 0xe);
	assert_int_equal(f.loops[1].header, 2);
	assert_blocks(&f.loops[1], 0xc);
	assert_int_equal(f.loops[1].irreducible, 0);
	cfg_loops_free(f.loops, f.n);
}

/* The entry heads a loop; 3 and 4 are dead code with a cycle: in no loop. */
static void test_entry_header_and_dead(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 0 }, { 1, 2 }, { 3, 4 }, { 4, 3 } };
	uint32_t from[5], to[5];
	struct cfg_graph g = { 5, 5, from, to, 0, 2 };
	struct found f;

	for (int i = 0; i < 5; i++) {
		from[i] = e[i][0];
		to[i] = e[i][1];
	}
	assert_int_equal(cfg_find_loops(&g, &f.loops, &f.n, f.node_loop, f.node_depth, NULL), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.loops[0].header, 0);
	assert_blocks(&f.loops[0], 0x3);
	assert_int_equal(f.node_loop[3], -1);
	assert_int_equal(f.node_loop[4], -1);
	cfg_loops_free(f.loops, f.n);
}

static void test_no_loops_and_errors(void **state)
{
	uint32_t from[] = { 0, 9 }, to[] = { 1, 1 }, idom[2];
	struct cfg_graph g = { 2, 1, from, to, 0, 1 };
	struct dcpi_err err = { 0 };
	struct found f;

	assert_int_equal(cfg_find_loops(&g, &f.loops, &f.n, f.node_loop, f.node_depth, &err), 0);
	assert_int_equal(f.n, 0);
	cfg_loops_free(f.loops, f.n);
	g.nedges = 2;
	assert_int_equal(cfg_find_loops(&g, &f.loops, &f.n, f.node_loop, f.node_depth, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	assert_int_equal(cfg_dominators(&g, idom, &err), -EINVAL);
	g.nedges = 1;
	g.entry = 2;
	assert_int_equal(cfg_dominators(&g, idom, &err), -EINVAL);
}

static void test_dominators_hand(void **state)
{
	/* diamond, then a loop 4 <-> 5, and an unreachable 6 */
	uint32_t from[] = { 0, 0, 1, 2, 3, 4, 5, 5, 6 }, to[] = { 1, 2, 3, 3, 4, 5, 4, 7, 5 };
	struct cfg_graph g = { 8, 9, from, to, 0, 7 };
	static const uint32_t want[] = { 0, 0, 0, 0, 3, 4, UINT32_MAX, 5 };
	uint32_t idom[8];

	assert_int_equal(cfg_dominators(&g, idom, NULL), 0);
	for (int v = 0; v < 8; v++)
		assert_int_equal(idom[v], want[v]);
}

/* --- random graphs against the definitions -------------------------------- */

struct bg {
	const struct cfg_graph *g;
	uint32_t reach;			/* from entry */
	uint32_t dom[MAXN];		/* dom[v]: the set of v's dominators */
	uint32_t succ[MAXN], pred[MAXN];
};

/* Nodes reached from start along succ, never entering the set avoid. */
static uint32_t reach_from(const uint32_t *adj, uint32_t start, uint32_t avoid)
{
	uint32_t seen = 0, todo;

	if (avoid >> start & 1)
		return 0;
	todo = seen = 1u << start;
	while (todo) {
		uint32_t v = (uint32_t)__builtin_ctz(todo), nw;

		todo &= todo - 1;
		nw = adj[v] & ~seen & ~avoid;
		seen |= nw;
		todo |= nw;
	}
	return seen;
}

static void brute(const struct cfg_graph *g, struct bg *b)
{
	memset(b, 0, sizeof(*b));
	b->g = g;
	for (uint32_t e = 0; e < g->nedges; e++) {
		b->succ[g->from[e]] |= 1u << g->to[e];
		b->pred[g->to[e]] |= 1u << g->from[e];
	}
	b->reach = reach_from(b->succ, g->entry, 0);
	for (uint32_t d = 0; d < g->nnodes; d++) {
		uint32_t without = reach_from(b->succ, g->entry, 1u << d);

		for (uint32_t v = 0; v < g->nnodes; v++)
			if ((b->reach >> v & 1) && (v == d || !(without >> v & 1)))
				b->dom[v] |= 1u << d;
	}
}

/* The natural loop of header h: h and what reaches a back-edge source
 * without passing h (dead code aside).  0 if h has no back edge. */
static uint32_t natural_loop(const struct bg *b, uint32_t h)
{
	uint32_t body = 0;

	for (uint32_t u = 0; u < b->g->nnodes; u++)
		if ((b->pred[h] >> u & 1) && (b->reach >> u & 1) && (b->dom[u] >> h & 1))
			body |= reach_from(b->pred, u, 1u << h) | 1u << h;
	return body & b->reach;
}

static void check_dominators(const struct cfg_graph *g, const struct bg *b)
{
	uint32_t idom[MAXN];

	assert_int_equal(cfg_dominators(g, idom, NULL), 0);
	for (uint32_t v = 0; v < g->nnodes; v++) {
		uint32_t set = 0, w = v;

		if (!(b->reach >> v & 1)) {
			assert_int_equal(idom[v], UINT32_MAX);
			continue;
		}
		for (int steps = 0; steps <= MAXN; steps++) {
			set |= 1u << w;
			if (w == g->entry)
				break;
			w = idom[w];
			assert_true(w < g->nnodes);
		}
		assert_int_equal(idom[g->entry], g->entry);
		assert_int_equal(set, b->dom[v]);
	}
}

static uint32_t loop_set(const struct cfg_loop *l)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < l->nblocks; i++)
		s |= 1u << l->blocks[i];
	return s;
}

/* Nodes of s entered from outside s (or the entry). */
static uint32_t entries_of(const struct bg *b, uint32_t s)
{
	uint32_t en = 0;

	for (uint32_t v = 0; v < b->g->nnodes; v++)
		if ((s >> v & 1) && (v == b->g->entry || (b->pred[v] & b->reach & ~s)))
			en |= 1u << v;
	return en;
}

static void check_one_loop(const struct bg *b, const struct found *f, size_t i)
{
	const struct cfg_loop *l = &f->loops[i];
	uint32_t s = loop_set(l), h = l->header, nat = natural_loop(b, h);

	assert_true(s >> h & 1);
	assert_int_equal(s & ~b->reach, 0);
	/* strongly connected inside itself */
	for (uint32_t v = 0; v < b->g->nnodes; v++) {
		uint32_t in[MAXN];

		if (!(s >> v & 1))
			continue;
		for (uint32_t w = 0; w < b->g->nnodes; w++)
			in[w] = b->succ[w] & s;
		assert_int_equal(reach_from(in, v, ~s) & s, s);
		assert_true(l->nblocks > 1 || (b->succ[v] >> v & 1));
	}
	if (l->parent >= 0) {
		uint32_t ps = loop_set(&f->loops[l->parent]);

		assert_true(l->parent < (int)i);
		assert_int_equal(s & ~ps, 0);
		assert_int_not_equal(s, ps);
		assert_int_equal(l->depth, f->loops[l->parent].depth + 1);
	} else {
		assert_int_equal(l->depth, 1);
	}
	if (!l->irreducible) {
		/* the natural loops of h merged; h dominates them; one entry */
		assert_int_equal(s, nat);
		for (uint32_t v = 0; v < b->g->nnodes; v++)
			if (s >> v & 1)
				assert_true(b->dom[v] >> h & 1);
		assert_int_equal(entries_of(b, s), 1u << h);
	} else {
		uint32_t en = entries_of(b, s);

		assert_true(__builtin_popcount(en) >= 2);
		assert_true(en >> h & 1);
		assert_int_equal(nat & ~s, 0);
	}
}

static void check_loops(const struct cfg_graph *g, const struct bg *b)
{
	struct found f;
	uint32_t succ_r[MAXN];

	assert_int_equal(cfg_find_loops(g, &f.loops, &f.n, f.node_loop, f.node_depth, NULL), 0);
	for (size_t i = 0; i < f.n; i++) {
		check_one_loop(b, &f, i);
		for (size_t j = 0; j < i; j++) {	/* laminar: nested or disjoint */
			uint32_t x = loop_set(&f.loops[i]), y = loop_set(&f.loops[j]);

			assert_true(!(x & y) || (x & ~y) == 0 || (y & ~x) == 0);
			assert_int_not_equal(f.loops[i].header, f.loops[j].header);
		}
	}
	/* every back edge u -> h is in a loop headed by h */
	for (uint32_t h = 0; h < g->nnodes; h++) {
		uint32_t nat = natural_loop(b, h);
		size_t i;

		if (!nat)
			continue;
		for (i = 0; i < f.n && f.loops[i].header != h; i++)
			;
		assert_true(i < f.n);
	}
	/* innermost loop and depth per node; in a loop iff on a cycle */
	for (uint32_t v = 0; v < g->nnodes; v++)
		succ_r[v] = b->succ[v] & b->reach;
	for (uint32_t v = 0; v < g->nnodes; v++) {
		int k = f.node_loop[v], on_cycle = 0;

		if (b->reach >> v & 1)
			for (uint32_t w = 0; w < g->nnodes; w++)
				if ((b->succ[v] >> w & 1) &&
				    (reach_from(succ_r, w, 0) >> v & 1))
					on_cycle = 1;
		assert_int_equal(k >= 0, on_cycle);
		if (k < 0) {
			assert_int_equal(f.node_depth[v], 0);
			continue;
		}
		assert_true(loop_set(&f.loops[k]) >> v & 1);
		assert_int_equal(f.node_depth[v], f.loops[k].depth);
		for (size_t i = 0; i < f.n; i++)
			if (f.loops[i].parent == k)
				assert_false(loop_set(&f.loops[i]) >> v & 1);
	}
	cfg_loops_free(f.loops, f.n);
}

static void test_random_graphs(void **state)
{
	uint32_t from[MAXE], to[MAXE];
	struct cfg_graph g = { .from = from, .to = to };
	struct bg b;
	int irreducible = 0;

	graph_rng_state = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < 5000; i++) {
		uint32_t nn = 1 + graph_rng(MAXN), ne = graph_rng(3 * nn + 1);

		g.nnodes = nn;
		g.nedges = 0;
		g.entry = graph_rng(nn);
		g.exit = graph_rng(nn);
		if (graph_rng(2)) {	/* CFG-like: a fall-through chain plus branches */
			g.entry = 0;
			for (uint32_t v = 0; v + 1 < nn; v++) {
				from[g.nedges] = v;
				to[g.nedges++] = v + 1;
			}
			ne /= 2;
		}
		while (ne-- && g.nedges < MAXE) {
			from[g.nedges] = graph_rng(nn);
			to[g.nedges++] = graph_rng(nn);
		}
		brute(&g, &b);
		check_dominators(&g, &b);
		check_loops(&g, &b);
		struct found f;

		cfg_find_loops(&g, &f.loops, &f.n, f.node_loop, f.node_depth, NULL);
		for (size_t k = 0; k < f.n; k++)
			irreducible += f.loops[k].irreducible;
		cfg_loops_free(f.loops, f.n);
	}
	assert_true(irreducible > 100);	/* the generator does exercise them */
}

/*
 * The oracle for the large graphs: the loop forest by its definition, by
 * brute force.  The loops of a region (at first every node the entry
 * reaches) are its strongly connected parts that hold a cycle: v's part is
 * what v reaches inside the region and what reaches v there.  A loop's
 * header is its first node in reverse postorder (a recursive depth-first
 * search taking each node's edges in order), it is irreducible when more
 * than one of its nodes is the entry or has a reached predecessor outside
 * it, and the loops nested in it are those of its nodes less the header.
 * Loops are numbered by their header's place in reverse postorder.
 */
enum { ON = 402, OE = 1400 };

struct oracle {
	const struct cfg_graph *g;
	uint32_t off[ON + 1], adj[OE], poff[ON + 1], padj[OE];
	uint32_t rpo[ON];		/* UINT32_MAX: not reached */
	uint32_t part[ON];		/* a number no other part has had */
	uint32_t fwd[ON], bwd[ON], stamp, nparts;
	uint32_t stack[ON];
	struct cfg_loop loops[ON];
	size_t n;
	int node_loop[ON], node_depth[ON];
};

static void or_dfs(struct oracle *o, uint32_t v, uint32_t *post)
{
	o->rpo[v] = 0;
	for (uint32_t k = o->off[v]; k < o->off[v + 1]; k++)
		if (o->rpo[o->adj[k]] == UINT32_MAX)
			or_dfs(o, o->adj[k], post);
	o->stack[(*post)++] = v;
}

/* Stamp in seen what v reaches along (off, adj) through nodes of part p. */
static void or_reach(struct oracle *o, const uint32_t *off, const uint32_t *adj, uint32_t v,
		     uint32_t p, uint32_t *seen)
{
	uint32_t sp = 0;

	seen[v] = o->stamp;
	o->stack[sp++] = v;
	while (sp) {
		uint32_t u = o->stack[--sp];

		for (uint32_t k = off[u]; k < off[u + 1]; k++)
			if (o->part[adj[k]] == p && seen[adj[k]] != o->stamp) {
				seen[adj[k]] = o->stamp;
				o->stack[sp++] = adj[k];
			}
	}
}

static int or_self_loop(const struct oracle *o, uint32_t v)
{
	for (uint32_t k = o->off[v]; k < o->off[v + 1]; k++)
		if (o->adj[k] == v)
			return 1;
	return 0;
}

static void or_region(struct oracle *o, const uint32_t *nodes, uint32_t n, int parent);

/* Record the nodes of part p among nodes[0 .. n) (ascending) as a loop in
 * parent, unless they hold no cycle, then the loops inside it. */
static void or_loop(struct oracle *o, const uint32_t *nodes, uint32_t n, uint32_t p, int parent)
{
	struct cfg_loop *l = &o->loops[o->n];
	uint32_t m = 0, h, entries = 0, *inside;

	l->blocks = malloc(n * sizeof(*l->blocks));
	assert_non_null(l->blocks);
	for (uint32_t i = 0; i < n; i++)
		if (o->part[nodes[i]] == p)
			l->blocks[m++] = nodes[i];
	if (m == 1 && !or_self_loop(o, l->blocks[0])) {
		free(l->blocks);
		return;
	}
	h = l->blocks[0];
	for (uint32_t i = 0; i < m; i++) {
		uint32_t v = l->blocks[i], outside = v == o->g->entry;

		for (uint32_t k = o->poff[v]; k < o->poff[v + 1]; k++)
			outside |= o->rpo[o->padj[k]] != UINT32_MAX && o->part[o->padj[k]] != p;
		entries += outside;
		if (o->rpo[v] < o->rpo[h])
			h = v;
	}
	*l = (struct cfg_loop){ .blocks = l->blocks, .nblocks = m, .header = h, .parent = parent,
				.depth = parent < 0 ? 1 : o->loops[parent].depth + 1,
				.irreducible = entries > 1 };
	for (uint32_t i = 0; i < m; i++) {
		o->node_loop[l->blocks[i]] = (int)o->n;
		o->node_depth[l->blocks[i]] = l->depth;
	}
	inside = malloc(m * sizeof(*inside));
	assert_non_null(inside);
	n = 0;
	for (uint32_t i = 0; i < m; i++)
		if (l->blocks[i] != h)
			inside[n++] = l->blocks[i];
	or_region(o, inside, n, (int)o->n++);
	free(inside);
}

/* The loops among nodes[0 .. n) (ascending): first every part, then each. */
static void or_region(struct oracle *o, const uint32_t *nodes, uint32_t n, int parent)
{
	uint32_t region = ++o->nparts, first = o->nparts + 1;

	for (uint32_t i = 0; i < n; i++)
		o->part[nodes[i]] = region;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = nodes[i], p;

		if (o->part[v] != region)
			continue;
		p = ++o->nparts;
		o->stamp++;
		or_reach(o, o->off, o->adj, v, region, o->fwd);
		or_reach(o, o->poff, o->padj, v, region, o->bwd);
		for (uint32_t j = 0; j < n; j++)
			if (o->fwd[nodes[j]] == o->stamp && o->bwd[nodes[j]] == o->stamp)
				o->part[nodes[j]] = p;
	}
	for (uint32_t p = first, last = o->nparts; p <= last; p++)
		or_loop(o, nodes, n, p, parent);
}

/* The loops of g by the definition above, into o. */
static void oracle_loops(const struct cfg_graph *g, struct oracle *o)
{
	uint32_t post = 0, reached[ON], nr = 0;
	int newidx[ON];
	struct cfg_loop sorted[ON];

	assert_true(g->nnodes <= ON && g->nedges <= OE);
	o->g = g;
	o->n = 0;
	graph_ref_csr(g, 0, o->off, o->adj);
	graph_ref_csr(g, 1, o->poff, o->padj);
	for (uint32_t v = 0; v < g->nnodes; v++) {
		o->rpo[v] = UINT32_MAX;
		o->part[v] = 0;
		o->node_loop[v] = -1;
		o->node_depth[v] = 0;
	}
	or_dfs(o, g->entry, &post);
	for (uint32_t i = 0; i < post; i++)
		o->rpo[o->stack[i]] = post - 1 - i;
	for (uint32_t v = 0; v < g->nnodes; v++)
		if (o->rpo[v] != UINT32_MAX)
			reached[nr++] = v;
	or_region(o, reached, nr, -1);
	for (size_t i = 0; i < o->n; i++) {
		newidx[i] = 0;
		for (size_t j = 0; j < o->n; j++)
			newidx[i] += o->rpo[o->loops[j].header] < o->rpo[o->loops[i].header];
	}
	for (size_t i = 0; i < o->n; i++) {
		sorted[newidx[i]] = o->loops[i];
		if (o->loops[i].parent >= 0)
			sorted[newidx[i]].parent = newidx[o->loops[i].parent];
	}
	memcpy(o->loops, sorted, o->n * sizeof(*sorted));
	for (uint32_t v = 0; v < g->nnodes; v++)
		if (o->node_loop[v] >= 0)
			o->node_loop[v] = newidx[o->node_loop[v]];
}

/*
 * A graph for the comparison with the definition, shaped to reach the fast paths and
 * their edges: CFG-like (fall-through chain, branches forward and back,
 * self loops; edges sorted by tail, so successors are read in place) or
 * shuffled (not sorted), all forward (no search at all), loops nested deep,
 * irreducible entries, unreachable parts, and loops of more than 24 blocks
 * near together (sorted by marks) or spread far apart (sorted by qsort).
 */
static uint32_t shaped_graph(struct cfg_graph *g, uint32_t *from, uint32_t *to, uint32_t maxe)
{
	uint32_t nn = 2 + graph_rng(graph_rng(4) ? 60 : 400), ne = 0, kind = graph_rng(6);

	g->entry = kind == 5 ? graph_rng(nn) : 0;
	g->exit = nn - 1;
	for (uint32_t v = 0; v + 1 < nn && ne + 3 < maxe; v++) {
		uint32_t r = graph_rng(16);

		if (r < 12) {
			from[ne] = v;
			to[ne++] = v + 1;
		}
		if (r >= 9 && r < 13)		/* forward */
			from[ne] = v, to[ne++] = v + 1 + graph_rng(nn - 1 - v);
		if (kind != 1 && r == 13)	/* back, maybe far */
			from[ne] = v, to[ne++] = graph_rng(4) ? v - graph_rng(v < 8 ? v + 1 : 8) :
							       graph_rng(v + 1);
		if (kind != 1 && r == 14)	/* a self loop */
			from[ne] = v, to[ne++] = v;
		if (kind == 2 && r == 15)	/* into the middle of a loop: irreducible */
			from[ne] = graph_rng(nn), to[ne++] = graph_rng(nn);
	}
	if (kind == 3 && ne + 40 < maxe) {	/* one big loop over far nodes */
		uint32_t k = 25 + graph_rng(10), first = graph_rng(nn), prev = first;

		for (uint32_t i = 0; i < k; i++) {
			uint32_t next = graph_rng(nn);

			from[ne] = prev;
			to[ne++] = next;
			prev = next;
		}
		from[ne] = prev;
		to[ne++] = first;
	}
	if (kind == 4) {			/* not sorted by tail */
		for (uint32_t e = ne; e > 1; e--) {
			uint32_t k = graph_rng(e), t;

			t = from[e - 1], from[e - 1] = from[k], from[k] = t;
			t = to[e - 1], to[e - 1] = to[k], to[k] = t;
		}
	}
	g->nnodes = nn;
	g->nedges = ne;
	g->from = from;
	g->to = to;
	return kind;
}

static void test_random_vs_definition(void **state)
{
	static uint32_t from[OE], to[OE];
	static int nl[ON], nd[ON];
	static struct oracle o;
	struct cfg_graph g;
	int shapes[6] = { 0 }, loops = 0;

	graph_rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 30000; i++) {
		struct cfg_loop *l;
		size_t n;
		int same;

		shapes[shaped_graph(&g, from, to, OE)]++;
		assert_int_equal(cfg_find_loops(&g, &l, &n, nl, nd, NULL), 0);
		oracle_loops(&g, &o);
		same = n == o.n && !memcmp(nl, o.node_loop, g.nnodes * sizeof(*nl)) &&
		       !memcmp(nd, o.node_depth, g.nnodes * sizeof(*nd));
		for (size_t k = 0; same && k < n; k++)
			same = l[k].header == o.loops[k].header &&
			       l[k].parent == o.loops[k].parent &&
			       l[k].depth == o.loops[k].depth &&
			       l[k].nblocks == o.loops[k].nblocks &&
			       l[k].irreducible == o.loops[k].irreducible &&
			       !memcmp(l[k].blocks, o.loops[k].blocks,
				       l[k].nblocks * sizeof(uint32_t));
		if (!same) {
			fprintf(stderr, "graph %d: %u nodes, entry %u, exit %u, edges:", i,
				g.nnodes, g.entry, g.exit);
			for (uint32_t e = 0; e < g.nedges; e++)
				fprintf(stderr, " %u>%u", from[e], to[e]);
			fprintf(stderr, "\n");
			fail_msg("loops differ from their definition's");
		}
		loops += (int)n;
		cfg_loops_free(l, n);
		for (size_t k = 0; k < o.n; k++)
			free(o.loops[k].blocks);
	}
	for (int k = 0; k < 6; k++)
		assert_true(shapes[k] > 1000);
	assert_true(loops > 30000);
}

/* A million blocks: 100,000 loops in a row, and a nest 1000 deep. */
static void test_large(void **state)
{
	uint32_t n = 1000000, m = n - 1 + n / 10, *from, *to, *idom;
	int *nl = malloc(n * sizeof(*nl)), *nd = malloc(n * sizeof(*nd));
	struct cfg_graph g = { n, m, NULL, NULL, 0, n - 1 };
	struct cfg_loop *loops;
	size_t nloops;

	from = malloc(m * sizeof(*from));
	to = malloc(m * sizeof(*to));
	idom = malloc(n * sizeof(*idom));
	assert_true(from && to && nl && nd && idom);
	for (uint32_t i = 0; i + 1 < n; i++) {
		from[i] = i;
		to[i] = i + 1;
	}
	for (uint32_t k = 0; k < n / 10; k++) {
		from[n - 1 + k] = 10 * k + 9;
		to[n - 1 + k] = 10 * k;
	}
	g.from = from;
	g.to = to;
	assert_int_equal(cfg_dominators(&g, idom, NULL), 0);
	assert_int_equal(idom[n - 1], n - 2);
	assert_int_equal(cfg_find_loops(&g, &loops, &nloops, nl, nd, NULL), 0);
	assert_int_equal(nloops, n / 10);
	assert_int_equal(loops[nloops - 1].header, n - 10);
	assert_int_equal(loops[nloops - 1].nblocks, 10);
	assert_int_equal(nd[n / 2], 1);
	cfg_loops_free(loops, nloops);

	/* nest: chain 0 .. 2D, back edges (2D - k) -> k for k = 1 .. D */
	uint32_t depth = 1000;

	g.nnodes = 2 * depth + 2;
	g.exit = g.nnodes - 1;
	g.nedges = 0;
	for (uint32_t i = 0; i + 1 < g.nnodes; i++) {
		from[g.nedges] = i;
		to[g.nedges++] = i + 1;
	}
	for (uint32_t k = 1; k <= depth; k++) {
		from[g.nedges] = 2 * depth + 1 - k;
		to[g.nedges++] = k;
	}
	assert_int_equal(cfg_find_loops(&g, &loops, &nloops, nl, nd, NULL), 0);
	assert_int_equal(nloops, depth);
	assert_int_equal(nd[depth], (int)depth);
	assert_int_equal(loops[depth - 1].depth, (int)depth);
	assert_int_equal(loops[depth - 1].parent, (int)depth - 2);
	cfg_loops_free(loops, nloops);
	free(from);
	free(to);
	free(idom);
	free(nl);
	free(nd);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_single_loop),
	cmocka_unit_test(test_nested_loops),
	cmocka_unit_test(test_one_loop),
	cmocka_unit_test(test_irreducible),
	cmocka_unit_test(test_irreducible_nested),
	cmocka_unit_test(test_entry_header_and_dead),
	cmocka_unit_test(test_no_loops_and_errors),
	cmocka_unit_test(test_dominators_hand),
	cmocka_unit_test(test_random_graphs),
	cmocka_unit_test(test_random_vs_definition),
	cmocka_unit_test(test_large))
