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
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dcpi/cfg.h"

#define MAXN 12
#define MAXE 40
#define MAXI (MAXN + MAXE)

struct run {
	int node[MAXI], edge[MAXI], n;
};

static uint64_t rng_state;

static uint32_t rng(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

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
	assert_int_equal(r.n, 2);
	assert_int_not_equal(r.node[0], r.edge[0]);
}

/* if/else: entry and join together, each arm with its two edges. */
static void test_diamond(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 3 } };
	struct run r;

	run_pairs(4, 0, 3, e, 4, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.node[0], r.node[3]);
	assert_int_equal(r.node[1], r.edge[0]);
	assert_int_equal(r.node[1], r.edge[2]);
	assert_int_equal(r.node[2], r.edge[1]);
	assert_int_equal(r.node[2], r.edge[3]);
	assert_int_not_equal(r.node[0], r.node[1]);
	assert_int_not_equal(r.node[0], r.node[2]);
	assert_int_not_equal(r.node[1], r.node[2]);
}

/* 1 heads the outer loop, 2 the inner one; 3 latches both. */
static void test_nested_loops(void **state)
{
	static const uint32_t e[][2] = {
		{ 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 2 }, { 3, 4 }, { 4, 1 }, { 4, 5 },
	};
	struct run r;

	run_pairs(6, 0, 5, e, 7, &r);
	assert_int_equal(r.n, 5);
	/* once per run */
	assert_int_equal(r.node[0], r.node[5]);
	assert_int_equal(r.node[0], r.edge[0]);
	assert_int_equal(r.node[0], r.edge[6]);
	/* once per outer iteration */
	assert_int_equal(r.node[1], r.node[4]);
	assert_int_equal(r.node[1], r.edge[1]);
	assert_int_equal(r.node[1], r.edge[4]);
	/* once per inner iteration */
	assert_int_equal(r.node[2], r.node[3]);
	assert_int_equal(r.node[2], r.edge[2]);
	/* the two back edges, each alone */
	assert_int_not_equal(r.edge[3], r.edge[5]);
	for (int c = 0; c < 3; c++) {
		assert_int_not_equal(r.edge[3], r.node[c]);
		assert_int_not_equal(r.edge[5], r.node[c]);
	}
	assert_int_not_equal(r.node[0], r.node[1]);
	assert_int_not_equal(r.node[1], r.node[2]);
}

static void test_loop_two_exits(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 1, 3 }, { 2, 3 } };
	struct run r;

	run_pairs(4, 0, 3, e, 5, &r);
	assert_int_equal(r.n, 6);
	assert_int_equal(r.node[0], r.node[3]);
	assert_int_equal(r.node[0], r.edge[0]);
	assert_int_equal(r.node[2], r.edge[1]);
	assert_int_not_equal(r.node[1], r.node[0]);
	assert_int_not_equal(r.node[1], r.node[2]);
	assert_int_not_equal(r.edge[3], r.edge[4]);
}

/* Two entries into the cycle 1 <-> 2. */
static void test_irreducible(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 } };
	struct run r;

	run_pairs(4, 0, 3, e, 5, &r);
	assert_int_equal(r.n, 6);
	assert_int_equal(r.node[0], r.node[3]);
	assert_int_equal(r.node[0], r.edge[4]);
	assert_int_equal(r.node[1], r.edge[2]);
	assert_int_not_equal(r.node[1], r.node[2]);
	assert_int_not_equal(r.edge[0], r.edge[1]);
	assert_int_not_equal(r.edge[3], r.node[1]);
}

/* 1 <-> 2 never reaches the exit 3: DCPI's extension links 1 and 2 to it. */
static void test_infinite_loop(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 2, 1 }, { 0, 3 } };
	struct run r;

	run_pairs(4, 0, 3, e, 4, &r);
	assert_int_equal(r.n, 6);
	assert_int_equal(r.node[0], r.node[3]);
	assert_int_equal(r.node[2], r.edge[1]);
	assert_int_not_equal(r.node[1], r.node[2]);
	assert_int_not_equal(r.node[1], r.edge[0]);
	assert_int_not_equal(r.edge[0], r.edge[3]);
	assert_int_not_equal(r.edge[2], r.node[1]);

	/* An idle loop as the whole procedure: the exit is reachable only
	 * through the internal edges. */
	static const uint32_t f[][2] = { { 0, 1 }, { 1, 0 } };

	run_pairs(3, 0, 2, f, 2, &r);
	assert_int_equal(r.n, 4);
	assert_int_not_equal(r.node[0], r.node[1]);
	assert_int_equal(r.node[1], r.edge[0]);
	assert_int_not_equal(r.node[2], r.node[0]);
	assert_int_not_equal(r.edge[1], r.node[0]);
}

static void test_self_loop(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 1 }, { 1, 2 } };
	struct run r;

	run_pairs(3, 0, 2, e, 3, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.node[0], r.node[2]);
	assert_int_equal(r.node[0], r.edge[0]);
	assert_int_equal(r.node[0], r.edge[2]);
	assert_int_not_equal(r.node[1], r.node[0]);
	assert_int_not_equal(r.edge[1], r.node[1]);
}

/* A conditional branch whose target is its own fall-through. */
static void test_parallel_edges(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 0, 1 }, { 1, 2 } };
	struct run r;

	run_pairs(3, 0, 2, e, 3, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.node[0], r.node[1]);
	assert_int_equal(r.node[0], r.node[2]);
	assert_int_equal(r.node[0], r.edge[2]);
	assert_int_not_equal(r.edge[0], r.edge[1]);
	assert_int_not_equal(r.edge[0], r.node[0]);
}

/* Dead code: every unreachable node and every edge leaving one is alone. */
static void test_unreachable(void **state)
{
	static const uint32_t e[][2] = { { 0, 1 }, { 2, 1 }, { 3, 3 }, { 1, 4 } };
	struct run r;

	run_pairs(5, 0, 4, e, 4, &r);
	assert_int_equal(r.n, 5);
	assert_int_equal(r.node[0], r.node[1]);
	assert_int_equal(r.node[0], r.node[4]);
	assert_int_equal(r.node[0], r.edge[0]);
	assert_int_equal(r.node[0], r.edge[3]);
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
			uint32_t o = opts[rng(nopt)];

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
	uint32_t nn = 1 + rng(MAXN), ne, cfg_like = rng(2);

	ne = rng(cfg_like ? 2 * nn + 1 : 3 * nn + 1);
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
		g->entry = rng(nn);
		g->exit = rng(nn);
	}
	while (g->nedges < MAXE && ne--) {
		from[g->nedges] = rng(nn);
		to[g->nedges] = rng(nn);
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

	rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 6000; i++) {
		random_graph(&g, from, to);
		run_graph(&g, &r);
		check_classes(&g, &r);
		check_walks(&g, &r);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_straight_line),
		cmocka_unit_test(test_single_node),
		cmocka_unit_test(test_diamond),
		cmocka_unit_test(test_nested_loops),
		cmocka_unit_test(test_loop_two_exits),
		cmocka_unit_test(test_irreducible),
		cmocka_unit_test(test_infinite_loop),
		cmocka_unit_test(test_self_loop),
		cmocka_unit_test(test_parallel_edges),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_random_vs_definition),
		cmocka_unit_test(test_large_chain),
		cmocka_unit_test(test_large_diamonds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
