/*
 * test_cycle_equiv.c - cfg_cycle_equiv (DCPI sec. 6.1.2; Johnson, Pearson,
 * Pingali, PLDI 1994): hand-made graphs with known classes, a brute-force
 * check of the definition on thousands of random graphs, random walks that
 * must give every member of a class the same count, and million-node graphs.
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

#define MAXN 12
#define MAXE 40
#define MAXI (MAXN + MAXE)

struct run {
	int node[MAXI], edge[MAXI], n;
};

static void run_graph(const struct cfg_graph *g, struct run *r)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(cfg_cycle_equiv(g, r->node, r->edge, &r->n, &err), 0);
}

/* Run on a small edge list given as "from to" pairs. */
static void run_pairs(uint32_t nn, uint32_t entry, uint32_t exit, const uint32_t (*pairs)[2],
		      uint32_t ne, struct run *r)
{
	uint32_t from[MAXE], to[MAXE];
	struct cfg_graph g = { nn, ne, from, to, entry, exit };

	for (uint32_t i = 0; i < ne; i++) {
		from[i] = pairs[i][0];
		to[i] = pairs[i][1];
	}
	run_graph(&g, r);
}

/* The class of the item at *s, "n<i>" (node i) or "e<i>" (edge i); *s past it. */
static int item_class(const struct run *r, const char **s)
{
	char kind = **s, *end;
	long i = strtol(*s + 1, &end, 10);

	if ((kind != 'n' && kind != 'e') || end == *s + 1 || i < 0 || i >= MAXI)
		fail_msg("bad item at '%s'", *s);
	*s = end;
	return kind == 'n' ? r->node[i] : r->edge[i];
}

/* r has n classes and, for each "a=b" of spec (space-separated), items a
 * and b share one; for each "a!b", they do not. */
static void expect(const struct run *r, int n, const char *spec)
{
	assert_int_equal(r->n, n);
	while (*spec) {
		const char *t = spec;
		int a = item_class(r, &spec), op = *spec++, b = item_class(r, &spec);

		if ((op != '=' && op != '!') || (a == b) != (op == '='))
			fail_msg("%.*s does not hold", (int)(spec - t), t);
		while (*spec == ' ')
			spec++;
	}
}

static void test_straight_line(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 } };
	struct run r;

	run_pairs(3, 0, 2, e, 2, &r);
	assert_int_equal(r.n, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r.node[i], 0);
	assert_int_equal(r.edge[0], 0);
	assert_int_equal(r.edge[1], 0);
}

static void test_single_node(void **state)
{
	static const uint32_t e[][2] = { { 0, 0 } };
	struct run r;

	run_pairs(1, 0, 0, e, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.node[0], 0);
	run_pairs(1, 0, 0, e, 1, &r);	/* a self loop: runs any number of times */
	expect(&r, 2, "n0!e0");
}

/* Hand-made graphs and their classes: how many, and which items share one
 * (expect's spec). */
static const struct {
	const char *what;
	uint32_t nodes, entry, exit, nedges;
	uint32_t e[7][2];
	int classes;
	const char *spec;
} hand[] = {
	/* if/else: entry and join together, each arm with its two edges */
	{ "diamond", 4, 0, 3, 4, { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 3 } },
	  3, "n0=n3 n1=e0 n1=e2 n2=e1 n2=e3 n0!n1 n0!n2 n1!n2" },
	/* 1 heads the outer loop, 2 the inner one; 3 latches both */
	{ "nested loops", 6, 0, 5, 7,
	  { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 2 }, { 3, 4 }, { 4, 1 }, { 4, 5 } },
	  5, "n0=n5 n0=e0 n0=e6 "		/* once per run */
	     "n1=n4 n1=e1 n1=e4 "		/* once per outer iteration */
	     "n2=n3 n2=e2 "			/* once per inner iteration */
	     "e3!e5 e3!n0 e3!n1 e3!n2 "		/* the two back edges, each alone */
	     "e5!n0 e5!n1 e5!n2 n0!n1 n1!n2" },
	{ "loop with two exits", 4, 0, 3, 5, { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 1, 3 }, { 2, 3 } },
	  6, "n0=n3 n0=e0 n2=e1 n1!n0 n1!n2 e3!e4" },
	/* two entries into the cycle 1 <-> 2 */
	{ "irreducible", 4, 0, 3, 5, { { 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 } },
	  6, "n0=n3 n0=e4 n1=e2 n1!n2 e0!e1 e3!n1" },
	/* 1 <-> 2 never reaches the exit 3: DCPI's extension links 1 and 2 to it */
	{ "infinite loop", 4, 0, 3, 4, { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 0, 3 } },
	  6, "n0=n3 n2=e1 n1!n2 n1!e0 e0!e3 e2!n1" },
	/* an idle loop as the whole procedure: the exit is reachable only
	 * through the internal edges */
	{ "idle loop", 3, 0, 2, 2, { { 0, 1 }, { 1, 0 } }, 4, "n0!n1 n1=e0 n2!n0 e1!n0" },
	{ "self loop", 3, 0, 2, 3, { { 0, 1 }, { 1, 1 }, { 1, 2 } },
	  3, "n0=n2 n0=e0 n0=e2 n1!n0 e1!n1" },
	/* a conditional branch whose target is its own fall-through */
	{ "parallel edges", 3, 0, 2, 3, { { 0, 1 }, { 0, 1 }, { 1, 2 } },
	  3, "n0=n1 n0=n2 n0=e2 e0!e1 e0!n0" },
};

static void test_hand_graphs(void **state)
{
	for (size_t i = 0; i < sizeof(hand) / sizeof(hand[0]); i++) {
		struct run r;

		print_message("%s\n", hand[i].what);
		run_pairs(hand[i].nodes, hand[i].entry, hand[i].exit, hand[i].e, hand[i].nedges,
			  &r);
		expect(&r, hand[i].classes, hand[i].spec);
	}
}

/* Dead code: every unreachable node and every edge leaving one is alone. */
static void test_unreachable(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 2, 1 }, { 3, 3 }, { 1, 4 } };
	struct run r;

	run_pairs(5, 0, 4, e, 4, &r);
	expect(&r, 5, "n0=n1 n0=n4 n0=e0 n0=e3");
	int seen[5] = { 0 };

	seen[r.node[0]]++;
	seen[r.node[2]]++;
	seen[r.node[3]]++;
	seen[r.edge[1]]++;
	seen[r.edge[2]]++;
	for (int i = 0; i < 5; i++)
		assert_int_equal(seen[i], 1);
}

static void test_bad_input(void **state)
{
	uint32_t from[] = { 0, 5 }, to[] = { 1, 1 };
	struct cfg_graph g = { 2, 2, from, to, 0, 1 };
	struct dcpi_err err = { 0 };
	int nc[2], ec[2], n;

	assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &n, &err), -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	g.nedges = 1;
	g.exit = 2;
	assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &n, &err), -EINVAL);
	g.nnodes = 0;
	assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &n, NULL), -EINVAL);
}

/*
 * The definition, by brute force.  In the strongly connected expanded graph
 * G (as cycle_equiv.c builds it, computed here independently), items a and
 * b are cycle-equivalent iff every cycle holding one holds the other.  The
 * cycles of G - a are exactly the cycles of G avoiding a, so "b lies on no
 * cycle of G - a" says "every cycle through b passes a"; both directions
 * together are the definition.  An edge x -> y lies on a cycle iff y reaches
 * x, which a bit-matrix transitive closure over <= 24 nodes answers.
 */
struct xg {
	int nx, nit, nint;
	int reach[MAXN];
	uint32_t it_from[MAXI], it_to[MAXI];	/* items: nodes then edges */
	int it_in[MAXI];			/* item in G (else unreachable) */
	uint32_t in_from[MAXN + 1], in_to[MAXN + 1]; /* internal edges */
	int live[MAXN];
};

static void close_over(uint32_t *r, int nx)
{
	for (int k = 0; k < nx; k++)
		for (int i = 0; i < nx; i++)
			if (r[i] >> k & 1)
				r[i] |= r[k];
}

static void expand(const struct cfg_graph *g, struct xg *x)
{
	uint32_t r[MAXN];

	memset(x, 0, sizeof(*x));
	x->nx = 2 * g->nnodes;
	/* live: reaches exit in the caller's graph */
	for (uint32_t v = 0; v < g->nnodes; v++)
		r[v] = 1u << v;
	for (uint32_t e = 0; e < g->nedges; e++)
		r[g->from[e]] |= 1u << g->to[e];
	close_over(r, g->nnodes);
	for (uint32_t v = 0; v < g->nnodes; v++)
		x->live[v] = r[v] >> g->exit & 1;
	/* reach: from entry, with the dead -> exit and exit -> entry edges */
	for (uint32_t v = 0; v < g->nnodes; v++)
		if (!x->live[v])
			r[v] |= 1u << g->exit;
	r[g->exit] |= 1u << g->entry;
	close_over(r, g->nnodes);
	for (uint32_t v = 0; v < g->nnodes; v++)
		x->reach[v] = r[g->entry] >> v & 1;
	for (uint32_t v = 0; v < g->nnodes; v++) {
		x->it_from[v] = 2 * v;
		x->it_to[v] = 2 * v + 1;
		x->it_in[v] = x->reach[v];
		if (x->reach[v] && !x->live[v]) {
			x->in_from[x->nint] = 2 * v + 1;
			x->in_to[x->nint++] = 2 * g->exit;
		}
	}
	x->in_from[x->nint] = 2 * g->exit + 1;
	x->in_to[x->nint++] = 2 * g->entry;
	for (uint32_t e = 0; e < g->nedges; e++) {
		x->it_from[g->nnodes + e] = 2 * g->from[e] + 1;
		x->it_to[g->nnodes + e] = 2 * g->to[e];
		x->it_in[g->nnodes + e] = x->reach[g->from[e]];
	}
	x->nit = g->nnodes + g->nedges;
}

/* oncyc[a][b]: item b lies on a cycle of G - a. */
static void brute_oncycle(const struct xg *x, uint8_t oncyc[MAXI][MAXI])
{
	for (int a = 0; a < x->nit; a++) {
		uint32_t r[2 * MAXN] = { 0 };

		if (!x->it_in[a])
			continue;
		for (int i = 0; i < x->nit; i++)
			if (i != a && x->it_in[i])
				r[x->it_from[i]] |= 1u << x->it_to[i];
		for (int i = 0; i < x->nint; i++)
			r[x->in_from[i]] |= 1u << x->in_to[i];
		close_over(r, x->nx);
		for (int b = 0; b < x->nit; b++)
			oncyc[a][b] = x->it_in[b] && (r[x->it_to[b]] >> x->it_from[b] & 1);
	}
}

static void check_classes(const struct cfg_graph *g, const struct run *r)
{
	static uint8_t oncyc[MAXI][MAXI];
	int cls[MAXI], used[2 * MAXI] = { 0 };
	struct xg x;

	expand(g, &x);
	brute_oncycle(&x, oncyc);
	for (uint32_t v = 0; v < g->nnodes; v++)
		cls[v] = r->node[v];
	for (uint32_t e = 0; e < g->nedges; e++)
		cls[g->nnodes + e] = r->edge[e];
	for (int a = 0; a < x.nit; a++) {
		assert_true(cls[a] >= 0 && cls[a] < r->n);
		used[cls[a]] = 1;
		for (int b = a + 1; b < x.nit; b++) {
			int eq;

			if (!x.it_in[a] || !x.it_in[b])
				eq = 0;	/* dead code: a class of its own */
			else
				eq = !oncyc[a][b] && !oncyc[b][a];
			if (eq != (cls[a] == cls[b]))
				fail_msg("items %d and %d: brute force says %s", a, b,
					 eq ? "equivalent" : "not equivalent");
		}
	}
	for (int c = 0; c < r->n; c++)
		assert_true(used[c]);
}

/*
 * Random closed walks entry -> ... -> exit -> entry through the augmented
 * graph: a closed walk is a sum of cycles, so equivalent items are crossed
 * equally often.  Independent of the brute force above.
 */
static void check_walks(const struct cfg_graph *g, const struct run *r)
{
	int cnt[MAXI] = { 0 }, cls_cnt[2 * MAXI];
	struct xg x;

	expand(g, &x);
	for (int w = 0; w < 4; w++) {
		int tmp[MAXI] = { 0 }, steps = 0;
		uint32_t v = g->entry;

		tmp[v]++;
		while (steps++ < 4000) {
			uint32_t opts[MAXE + 2], nopt = 0;

			for (uint32_t e = 0; e < g->nedges; e++)
				if (g->from[e] == v)
					opts[nopt++] = e;
			if (!x.live[v])
				opts[nopt++] = UINT32_MAX - 1;	/* stop: to the exit */
			if (v == g->exit)
				opts[nopt++] = UINT32_MAX;	/* end of the run */
			uint32_t o = opts[graph_rng(nopt)];

			if (o == UINT32_MAX)
				break;
			if (o == UINT32_MAX - 1) {
				v = g->exit;
			} else {
				tmp[g->nnodes + o]++;
				v = g->to[o];
			}
			tmp[v]++;
		}
		if (steps > 4000)
			continue;
		for (int i = 0; i < x.nit; i++)
			cnt[i] += tmp[i];
	}
	for (int c = 0; c < r->n; c++)
		cls_cnt[c] = -1;
	for (int i = 0; i < x.nit; i++) {
		int c = i < (int)g->nnodes ? r->node[i] : r->edge[i - g->nnodes];

		if (cls_cnt[c] < 0)
			cls_cnt[c] = cnt[i];
		assert_int_equal(cls_cnt[c], cnt[i]);
	}
}

static void random_graph(struct cfg_graph *g, uint32_t *from, uint32_t *to)
{
	uint32_t nn = 1 + graph_rng(MAXN), ne, cfg_like = graph_rng(2);

	ne = graph_rng(cfg_like ? 2 * nn + 1 : 3 * nn + 1);
	if (ne > MAXE)
		ne = MAXE;
	g->nnodes = nn;
	g->nedges = 0;
	if (cfg_like) {
		/* a fall-through chain 0 .. nn-1, exit last, plus branches */
		for (uint32_t v = 0; v + 1 < nn && g->nedges < MAXE; v++) {
			from[g->nedges] = v;
			to[g->nedges++] = v + 1;
		}
		g->entry = 0;
		g->exit = nn - 1;
	} else {
		g->entry = graph_rng(nn);
		g->exit = graph_rng(nn);
	}
	while (g->nedges < MAXE && ne--) {
		from[g->nedges] = graph_rng(nn);
		to[g->nedges] = graph_rng(nn);
		if (cfg_like && from[g->nedges] == nn - 1)
			continue;	/* the exit has no successors */
		g->nedges++;
	}
	g->from = from;
	g->to = to;
}

static void test_random_vs_definition(void **state)
{
	uint32_t from[MAXE], to[MAXE];
	struct cfg_graph g;
	struct run r;

	graph_rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 6000; i++) {
		random_graph(&g, from, to);
		run_graph(&g, &r);
		check_classes(&g, &r);
		check_walks(&g, &r);
	}
}

/*
 * The reference: cycle_equiv.c as it was before it was made faster
 * (bench/README.md, bench_cfg.sh): every node split in two, three walks,
 * JPP's pass in reverse preorder.
 * The fast one must give the very same numbers, not just the same classes.
 */
#define REF_NIL UINT32_MAX


struct ref_list {
	uint32_t top, bot, size;
};

struct ref {
	const struct cfg_graph *g;
	uint32_t nx, nex, nbr;		/* expanded nodes, edges, brackets */
	uint32_t *succ_off, *succ;	/* the caller's graph, forward */
	uint32_t *pred_off, *pred;	/* and backward */
	uint8_t *reach, *live;		/* from entry; to exit */
	uint32_t *ea, *eb;		/* expanded edge endpoints, REF_NIL if absent */
	uint32_t *adj_off, *adj;	/* undirected incidence lists */
	uint32_t *dfs, *order, *pedge, *hi, *pos;
	struct ref_list *bl;
	uint32_t *bprev, *bnext, *rsize, *cap_head, *cap_next;
	int *rclass, *cls, *map;
	int nclass;
};

/* Mark what start reaches along off/adj; stack has room for every node. */
static void ref_mark(uint32_t start, const uint32_t *off, const uint32_t *adj, uint8_t *seen,
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
static void ref_expand(struct ref *c)
{
	const struct cfg_graph *g = c->g;
	uint32_t n = g->nnodes, k = n + g->nedges + 1;

	for (uint32_t e = 0; e < c->nex; e++)
		c->ea[e] = c->eb[e] = REF_NIL;
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
		if (c->ea[e] == REF_NIL)
			continue;
		c->adj_off[c->ea[e] + 1]++;
		c->adj_off[c->eb[e] + 1]++;
	}
	for (uint32_t x = 0; x < c->nx; x++)
		c->adj_off[x + 1] += c->adj_off[x];
	for (uint32_t x = 0; x < c->nx; x++)
		c->pos[x] = c->adj_off[x];
	for (uint32_t e = 0; e < c->nex; e++) {
		if (c->ea[e] == REF_NIL)
			continue;
		c->adj[c->pos[c->ea[e]]++] = e;
		c->adj[c->pos[c->eb[e]]++] = e;
	}
}

static uint32_t ref_other(const struct ref *c, uint32_t e, uint32_t x)
{
	return c->ea[e] == x ? c->eb[e] : c->ea[e];
}

/* Iterative undirected DFS from entry_in: preorder numbers and tree edges. */
static void ref_dfs(struct ref *c)
{
	uint32_t *stack = c->hi;	/* free until the bracket pass */
	uint32_t sp = 0, num = 0, root = 2 * c->g->entry;

	for (uint32_t x = 0; x < c->nx; x++) {
		c->dfs[x] = REF_NIL;
		c->pedge[x] = REF_NIL;
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
		uint32_t t = ref_other(c, e, x);

		if (c->dfs[t] != REF_NIL)
			continue;
		c->dfs[t] = num;
		c->order[num++] = t;
		c->pedge[t] = e;
		stack[sp++] = t;
	}
	c->nx = num;	/* from here on, only the nodes the DFS reached count */
}

static void ref_push(struct ref *c, struct ref_list *l, uint32_t b)
{
	c->bprev[b] = REF_NIL;
	c->bnext[b] = l->top;
	if (l->top != REF_NIL)
		c->bprev[l->top] = b;
	else
		l->bot = b;
	l->top = b;
	l->size++;
}

static void ref_delete(struct ref *c, struct ref_list *l, uint32_t b)
{
	if (c->bprev[b] != REF_NIL)
		c->bnext[c->bprev[b]] = c->bnext[b];
	else
		l->top = c->bnext[b];
	if (c->bnext[b] != REF_NIL)
		c->bprev[c->bnext[b]] = c->bprev[b];
	else
		l->bot = c->bprev[b];
	l->size--;
}

/* Append list s below list l; s is consumed. */
static void ref_concat(struct ref *c, struct ref_list *l, struct ref_list *s)
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
	s->top = s->bot = REF_NIL;
	s->size = 0;
}

/* JPP fig. 4, first half: x's hi (the highest node a back edge from x's
 * subtree reaches), hi0 and hi2 for capping, the children's brackets. */
static void ref_collect(struct ref *c, uint32_t x, uint32_t *hi0, uint32_t *hi2)
{
	uint32_t dx = c->dfs[x], hi1 = REF_NIL;

	*hi0 = *hi2 = REF_NIL;
	for (uint32_t i = c->adj_off[x]; i < c->adj_off[x + 1]; i++) {
		uint32_t e = c->adj[i], t = ref_other(c, e, x);

		if (e == c->pedge[x])
			continue;
		if (c->pedge[t] == e) {		/* t is a child */
			if (c->hi[t] < hi1) {
				*hi2 = hi1;
				hi1 = c->hi[t];
			} else if (c->hi[t] < *hi2) {
				*hi2 = c->hi[t];
			}
			ref_concat(c, &c->bl[x], &c->bl[t]);
		} else if (c->dfs[t] < dx && c->dfs[t] < *hi0) {
			*hi0 = c->dfs[t];
		}
	}
	c->hi[x] = *hi0 < hi1 ? *hi0 : hi1;
}

/* The class of the tree edge into x from its bracket list (top, size). */
static void ref_classify(struct ref *c, uint32_t x)
{
	struct ref_list *l = &c->bl[x];
	uint32_t e = c->pedge[x], b = l->top;

	if (b == REF_NIL) {		/* a bridge: cannot happen when strongly connected */
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
static void ref_visit(struct ref *c, uint32_t x)
{
	struct ref_list *l = &c->bl[x];
	uint32_t dx = c->dfs[x], hi0, hi2;

	ref_collect(c, x, &hi0, &hi2);
	for (uint32_t b = c->cap_head[x]; b != REF_NIL; b = c->cap_next[b - c->nex])
		ref_delete(c, l, b);
	for (uint32_t i = c->adj_off[x]; i < c->adj_off[x + 1]; i++) {
		uint32_t e = c->adj[i], t = ref_other(c, e, x);

		if (e == c->pedge[x] || c->pedge[t] == e)
			continue;
		if (c->dfs[t] > dx) {		/* back edge from a descendant */
			ref_delete(c, l, e);
			if (c->cls[e] < 0)
				c->cls[e] = c->nclass++;
		} else {			/* back edge to an ancestor */
			ref_push(c, l, e);
		}
	}
	/* Capping back edge; JPP's hi2 < hi0 needs hi2 above x as well. */
	if (hi2 < hi0 && hi2 < dx) {
		uint32_t cap = c->nex + x, to = c->order[hi2];

		ref_push(c, l, cap);
		c->cap_next[x] = c->cap_head[to];
		c->cap_head[to] = cap;
	}
	if (c->pedge[x] != REF_NIL)
		ref_classify(c, x);
}

/* Number the caller's classes densely, nodes first, then edges. */
static int ref_report(struct ref *c, int *node_class, int *edge_class)
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


static void ref_alloc(struct ref *c)
{
	size_t nn = c->g->nnodes, ne = c->g->nedges, nx = c->nx, nex = c->nex, nbr = c->nbr;

	GRAPH_REF_TAKE(c->succ_off, nn + 1);
	GRAPH_REF_TAKE(c->succ, ne);
	GRAPH_REF_TAKE(c->pred_off, nn + 1);
	GRAPH_REF_TAKE(c->pred, ne);
	GRAPH_REF_TAKE(c->reach, nn);
	GRAPH_REF_TAKE(c->live, nn);
	GRAPH_REF_TAKE(c->ea, nex);
	GRAPH_REF_TAKE(c->eb, nex);
	GRAPH_REF_TAKE(c->adj_off, nx + 1);
	GRAPH_REF_TAKE(c->adj, 2 * nex);
	GRAPH_REF_TAKE(c->dfs, nx);
	GRAPH_REF_TAKE(c->order, nx);
	GRAPH_REF_TAKE(c->pedge, nx);
	GRAPH_REF_TAKE(c->hi, nx);
	GRAPH_REF_TAKE(c->pos, nx);
	GRAPH_REF_TAKE(c->bl, nx);
	GRAPH_REF_TAKE(c->bprev, nbr);
	GRAPH_REF_TAKE(c->bnext, nbr);
	GRAPH_REF_TAKE(c->rsize, nbr);
	GRAPH_REF_TAKE(c->cap_head, nx);
	GRAPH_REF_TAKE(c->cap_next, nx);
	GRAPH_REF_TAKE(c->rclass, nbr);
	GRAPH_REF_TAKE(c->cls, nbr);
	GRAPH_REF_TAKE(c->map, nbr);
	graph_ref_csr(c->g, 0, c->succ_off, c->succ);
	graph_ref_csr(c->g, 1, c->pred_off, c->pred);
}

static void ref_free(struct ref *c)
{
	void *p[] = { c->succ_off, c->succ, c->pred_off, c->pred, c->reach, c->live, c->ea,
		      c->eb, c->adj_off, c->adj, c->dfs, c->order, c->pedge, c->hi, c->pos,
		      c->bl, c->bprev, c->bnext, c->rsize, c->cap_head, c->cap_next, c->rclass,
		      c->cls, c->map };

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		free(p[i]);
}

/* The original cfg_cycle_equiv, for valid input. */
static int ref_cycle_equiv(const struct cfg_graph *g, int *node_class, int *edge_class)
{
	struct ref c = { .g = g };
	int n;

	c.nx = 2 * g->nnodes;
	c.nex = 2 * g->nnodes + g->nedges + 1;
	c.nbr = c.nex + c.nx;
	ref_alloc(&c);
	ref_mark(g->entry, c.succ_off, c.succ, c.reach, c.hi);
	if (!c.reach[g->exit])
		ref_mark(g->exit, c.succ_off, c.succ, c.reach, c.hi);
	ref_mark(g->exit, c.pred_off, c.pred, c.live, c.hi);
	ref_expand(&c);
	ref_dfs(&c);
	for (uint32_t x = 0; x < 2 * g->nnodes; x++) {
		c.bl[x].top = c.bl[x].bot = REF_NIL;
		c.cap_head[x] = REF_NIL;
	}
	for (uint32_t b = 0; b < c.nbr; b++)
		c.cls[b] = -1;
	for (uint32_t i = c.nx; i > 0; i--)
		ref_visit(&c, c.order[i - 1]);
	n = ref_report(&c, node_class, edge_class);
	ref_free(&c);
	return n;
}

/*
 * A graph for the reference comparison: up to 64 nodes, shaped to reach the
 * fast paths and their edges: long one-in-one-out chains (walked through),
 * chains that close on themselves, joins that branch (split), self loops,
 * parallel edges, latches that only jump back, dead ends and idle loops
 * (edges to the exit added), unreachable nodes, an exit with successors,
 * entry == exit.
 */
static void shaped_graph(struct cfg_graph *g, uint32_t *from, uint32_t *to, uint32_t maxe)
{
	uint32_t nn = 1 + graph_rng(64), ne = 0, kind = graph_rng(4);

	g->entry = kind == 3 ? graph_rng(nn) : 0;
	g->exit = kind == 3 ? graph_rng(nn) : nn - 1;
	for (uint32_t v = 0; v + 1 < nn && ne < maxe; v++) {
		uint32_t r = graph_rng(16);

		if (r < 10 || kind == 0) {		/* fall through */
			from[ne] = v;
			to[ne++] = v + 1;
		}
		if (r >= 8 && r < 12 && ne < maxe) {	/* a branch forward or back */
			from[ne] = v;
			to[ne++] = graph_rng(nn);
		}
		if (r == 12 && ne < maxe) {		/* a self loop */
			from[ne] = v;
			to[ne++] = v;
		}
		if (r == 13 && ne < maxe) {		/* a parallel edge */
			from[ne] = v;
			to[ne++] = v + 1;
		}
		/* r 14, 15 (and 10, 11 without the fall through): a jump, a dead end */
		if (r == 14 && ne < maxe) {
			from[ne] = v;
			to[ne++] = v < 4 ? 0 : v - 1 - graph_rng(4);
		}
	}
	for (uint32_t k = kind == 2 ? graph_rng(4) : 0; k && ne < maxe; k--) {
		from[ne] = g->exit;			/* an exit that goes on */
		to[ne++] = graph_rng(nn);
	}
	g->nnodes = nn;
	g->nedges = ne;
	g->from = from;
	g->to = to;
}

static void test_random_vs_reference(void **state)
{
	enum { N = 64, E = 160 };
	uint32_t from[E], to[E];
	int nc[N], ec[E], rnc[N], rec[E], n, rn;
	struct dcpi_err err = { 0 };
	struct cfg_graph g;

	graph_rng_state = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < 200000; i++) {
		shaped_graph(&g, from, to, E);
		assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &n, &err), 0);
		rn = ref_cycle_equiv(&g, rnc, rec);
		if (n == rn && !memcmp(nc, rnc, g.nnodes * sizeof(*nc)) &&
		    !memcmp(ec, rec, g.nedges * sizeof(*ec)))
			continue;
		fprintf(stderr, "graph %d: %u nodes, entry %u, exit %u, edges:", i, g.nnodes,
			g.entry, g.exit);
		for (uint32_t e = 0; e < g.nedges; e++)
			fprintf(stderr, " %u>%u", from[e], to[e]);
		fprintf(stderr, "\n");
		fail_msg("classes differ from the reference's");
	}
}

/* A million-node straight line: one class, and a DFS two million deep. */
static void test_large_chain(void **state)
{
	uint32_t n = 1000000, *from = malloc(n * sizeof(*from)), *to = malloc(n * sizeof(*to));
	int *nc = malloc(n * sizeof(*nc)), *ec = malloc(n * sizeof(*ec)), ncls;
	struct cfg_graph g = { n, n - 1, from, to, 0, n - 1 };
	struct dcpi_err err = { 0 };

	assert_non_null(from);
	assert_non_null(to);
	assert_non_null(nc);
	assert_non_null(ec);
	for (uint32_t i = 0; i + 1 < n; i++) {
		from[i] = i;
		to[i] = i + 1;
	}
	assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &ncls, &err), 0);
	assert_int_equal(ncls, 1);
	assert_int_equal(nc[0], 0);
	assert_int_equal(nc[n - 1], 0);
	assert_int_equal(ec[n / 2], 0);
	free(from);
	free(to);
	free(nc);
	free(ec);
}

/*
 * 250,000 if/else diamonds in a row, each arm a loop that may repeat: joins
 * share one class; each arm its node, its in and out edges; each back edge
 * its own.
 */
static void test_large_diamonds(void **state)
{
	uint32_t k = 250000, n = 3 * k + 1, m = 6 * k, *from, *to;
	int *nc, *ec, ncls;
	struct cfg_graph g = { n, m, NULL, NULL, 0, n - 1 };
	struct dcpi_err err = { 0 };

	from = malloc(m * sizeof(*from));
	to = malloc(m * sizeof(*to));
	nc = malloc(n * sizeof(*nc));
	ec = malloc(m * sizeof(*ec));
	assert_true(from && to && nc && ec);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t j = 3 * i, *f = from + 6 * i, *t = to + 6 * i;

		f[0] = j;	t[0] = j + 1;
		f[1] = j;	t[1] = j + 2;
		f[2] = j + 1;	t[2] = j + 3;
		f[3] = j + 2;	t[3] = j + 3;
		f[4] = j + 1;	t[4] = j + 1;
		f[5] = j + 2;	t[5] = j + 2;
	}
	g.from = from;
	g.to = to;
	assert_int_equal(cfg_cycle_equiv(&g, nc, ec, &ncls, &err), 0);
	assert_int_equal(ncls, 1 + 6 * (int)k);
	for (uint32_t i = 0; i < k; i++) {
		assert_int_equal(nc[3 * i], nc[0]);
		assert_int_equal(ec[6 * i], ec[6 * i + 2]);
		assert_int_not_equal(ec[6 * i], nc[3 * i + 1]);
	}
	assert_int_equal(nc[n - 1], nc[0]);
	free(from);
	free(to);
	free(nc);
	free(ec);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_straight_line),
	cmocka_unit_test(test_single_node),
	cmocka_unit_test(test_hand_graphs),
	cmocka_unit_test(test_unreachable),
	cmocka_unit_test(test_bad_input),
	cmocka_unit_test(test_random_vs_definition),
	cmocka_unit_test(test_random_vs_reference),
	cmocka_unit_test(test_large_chain),
	cmocka_unit_test(test_large_diamonds))
