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
 * Node v is in principle v_in = 2v and v_out = 2v + 1 joined by a "node
 * edge", so node and edge classes come out of one computation.  But when v
 * has one edge in (or one out) in the strongly connected graph, v_in (v_out)
 * has just two incident edges, which every cycle crosses together: v is
 * cycle-equivalent to that edge, and merging v_in with v_out changes no
 * other class.  Most blocks are such (one predecessor, or one successor),
 * so only the others are split.  Nodes with a self loop are always split,
 * so the graph has no self loops (nor has exit -> entry when entry == exit);
 * parallel edges are told apart by id.  In a strongly connected graph,
 * directed and undirected cycle equivalence agree (JPP sec. 3), so the rest
 * is JPP's undirected algorithm: one DFS, each node collecting the brackets
 * (back edges over its tree edge) of its children in a doubly linked list
 * when it finishes.  Two tree edges are equivalent iff their bracket sets
 * are equal, which the (top bracket, list size) pair decides in O(1) thanks
 * to capping back edges; a back edge is equivalent to a tree edge iff it is
 * that edge's only bracket.  JPP visit nodes in reverse preorder; postorder
 * does as well (a bracket's tree edges lie on one tree path, which both
 * orders visit bottom-up), so the DFS does the work as it goes, with each
 * node's list and bounds in its stack frame.  A vertex with two edges (a
 * block with one predecessor and one successor, most of them) makes them
 * equivalent: the DFS walks through chains of such without a frame.
 *
 * The work is a few passes over the edges and the nodes, then the DFS:
 * counting the degrees, laying out each node's incidence (in, node edge,
 * out) as if every node were reachable and reached the exit, with sweeps
 * over the edges for which nodes do (a CFG's edges come sorted by block, and
 * most go forward: the sweeps find most), marks for the rest; if a node is
 * dead or unreachable after all (in few procedures), the incidence is laid
 * out again.  A straight-line procedure is one class, found at once.
 *
 * Ids: vertices 2v (v_in, or v when not split) and 2v + 1 (v_out);
 * edges [0, E) the caller's, E + v node edges, E + N exit -> entry,
 * E + N + 1 + v the dead node v's edge to the exit, E + 2N + 1 + x the
 * capping back edge made at vertex x.  Which ids end up in a class depends
 * on the DFS, but the classes do not: they are renumbered densely in the
 * order of first appearance, nodes first, then edges, exactly as before
 * any of this was made fast (tests/test_cycle_equiv.c keeps that version).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "graph.h"

#define NIL UINT32_MAX

enum {
	CEQ_REACH = 1,		/* reachable from entry */
	CEQ_LIVE = 2,		/* reaches the exit */
	CEQ_SELF_SHIFT = 2,
	CEQ_SELF = 1 << CEQ_SELF_SHIFT,		/* has a self loop */
	CEQ_SPLIT_SHIFT = 3,
	CEQ_SPLIT = 1 << CEQ_SPLIT_SHIFT,	/* v_in and v_out apart */
	CEQ_PASS = 16,		/* not split, one edge in, one out: walked through */
};

/*
 * Incidence of node v in adj, internal edges included: [lo, mid) the edges
 * in (val = 2u + 1 for u -> v), then, if v is split, the node edge at mid
 * (val = 2v + 1), then up to hi the edges out (val = 2w for v -> w).  v_in
 * walks [lo, mid], v_out [mid, hi), an unsplit v [lo, hi).
 */
struct ceq_ent {
	uint32_t val, id;
};

/* One bracket (or any edge: tree edges use the class fields only). */
struct ceq_br {
	uint32_t prev, next, rsize;
	int rclass;
};

/* A vertex on the DFS stack: its walk, bounds, brackets, caps to delete. */
struct ceq_frame {
	uint32_t x, d, pos, end, pedge;
	uint32_t hi0, hi1, hi2;
	uint32_t top, bot, size, caps;
};

struct ceq {
	const struct cfg_graph *g;
	uint32_t n, ne, capbase;
	uint32_t *lo, *mid, *hi;	/* see struct ceq_ent */
	uint32_t *work;			/* the reach mark's stack */
	uint8_t *flags;			/* CEQ_* */
	struct ceq_ent *adj;
	uint32_t *dfs;			/* per vertex: preorder number, NIL unvisited */
	uint32_t *fdepth, *cap_next;	/* by dfs number: place on the DFS stack */
	struct ceq_frame *st;
	struct ceq_br *br;
	int *cls, *map;
	int nclass;
	struct cfg_arena mem;		/* where the arrays are */
};

/*
 * Degrees (into mid: in, hi: out), self loops, the edges' bounds (-1 - e for
 * a bad edge e), and a first sweep of reachability from entry: t is reached
 * if f is when the edge comes (ceq_reach_live finds what the sweep missed).
 * Edges come sorted by block, and most go forward, so the sweep finds most.
 */
static long ceq_count(struct ceq *c)
{
	const uint32_t *restrict from = c->g->from, *restrict to = c->g->to;
	uint32_t *restrict nin = c->mid, *restrict nout = c->hi, n = c->n, ne = c->ne;
	uint8_t *restrict flags = c->flags;

	for (uint32_t v = 0; v < n; v++) {
		nin[v] = nout[v] = 0;
		flags[v] = 0;
	}
	flags[c->g->entry] = CEQ_REACH;
	for (uint32_t e = 0; e < ne; e++) {
		uint32_t f = from[e], t = to[e];

		if (f >= n || t >= n)
			return -1 - (long)e;
		nin[t]++;
		nout[f]++;
		flags[t] |= (flags[f] & CEQ_REACH) | (f == t) << CEQ_SELF_SHIFT;
	}
	if (c->g->entry == c->g->exit)	/* exit -> entry is a self loop */
		flags[c->g->entry] |= CEQ_SELF;
	return 0;
}

/*
 * Lay the incidence out from the degrees in mid, hi, internal edges added
 * (exit -> entry, and, when which nodes are dead is known, their ndead
 * edges to the exit), and decide which nodes are split or passed through.
 * mid and hi are left the cursors where ceq_fill puts each node's edges in
 * and out.
 */
static void ceq_lay(struct ceq *c, int known, uint32_t ndead)
{
	uint32_t *restrict lo = c->lo, *restrict mid = c->mid, *restrict hi = c->hi;
	uint32_t *restrict dfs = c->dfs, n = c->n, ne = c->ne, p = 0;
	uint32_t entry = c->g->entry, exit = c->g->exit;
	struct ceq_ent *restrict adj = c->adj;
	uint8_t *restrict flags = c->flags;

	for (uint32_t v = 0; v < n; v++) {
		uint32_t fl = flags[v], dead = known && (fl & (CEQ_REACH | CEQ_LIVE)) == CEQ_REACH;
		uint32_t nin = mid[v] + (v == entry) + (v == exit ? ndead : 0);
		uint32_t nout = hi[v] + (v == exit) + dead;
		/* no branch on what a node is: no pattern a predictor could learn */
		uint32_t split = (fl & CEQ_SELF) || (nin > 1 && nout > 1);
		uint32_t pass = !split && nin + nout == 2;

		lo[v] = mid[v] = p;
		adj[p + nin] = (struct ceq_ent){ 2 * v + 1, ne + v };	/* if split */
		hi[v] = p + nin + split;
		p += nin + split + nout;
		flags[v] = (uint8_t)(fl | (split ? CEQ_SPLIT : 0) | (pass ? CEQ_PASS : 0));
		dfs[2 * v] = dfs[2 * v + 1] = NIL;
	}
}

/* Add edge u -> w (id) to both incidences. */
static void ceq_link(struct ceq *c, uint32_t u, uint32_t w, uint32_t id)
{
	c->adj[c->hi[u]++] = (struct ceq_ent){ 2 * w, id };
	c->adj[c->mid[w]++] = (struct ceq_ent){ 2 * u + 1, id };
}

/*
 * Put the edges in place, taking them backward (the order of a node's edges
 * does not matter): a first sweep of the nodes that reach the exit, as
 * ceq_count's of those reached.  Then the internal edges.
 */
static void ceq_fill(struct ceq *c)
{
	const uint32_t *restrict from = c->g->from, *restrict to = c->g->to;
	uint32_t *restrict mid = c->mid, *restrict hi = c->hi;
	struct ceq_ent *restrict adj = c->adj;
	uint8_t *restrict flags = c->flags;

	flags[c->g->exit] |= CEQ_LIVE;
	for (uint32_t e = c->ne; e-- > 0;) {
		uint32_t f = from[e], t = to[e];

		adj[mid[t]++] = (struct ceq_ent){ 2 * f + 1, e };
		adj[hi[f]++] = (struct ceq_ent){ 2 * t, e };
		flags[f] |= flags[t] & CEQ_LIVE;
	}
	ceq_link(c, c->g->exit, c->g->entry, c->ne + c->n);
}

/*
 * Flag with bit what the nodes on stack (sp of them) reach, forward (out
 * edges) or back (in edges); the stack has a place per node and one more.
 * Every node is pushed, only new ones kept: whether a node was seen is the
 * one branch a mark would mispredict, a third of the time on CFGs.  The
 * internal exit -> entry edge leads nowhere new (both ends are flagged).
 */
static void ceq_mark(struct ceq *c, uint32_t *restrict stack, uint32_t sp, int back,
		     uint8_t bit)
{
	const uint32_t *restrict lo = c->lo, *restrict mid = c->mid, *restrict hi = c->hi;
	const struct ceq_ent *restrict adj = c->adj;
	uint8_t *restrict flags = c->flags;

	while (sp) {
		uint32_t v = stack[--sp];
		uint32_t i = back ? lo[v] : mid[v] + (flags[v] >> CEQ_SPLIT_SHIFT & 1);
		uint32_t end = back ? mid[v] : hi[v];

		for (; i < end; i++) {
			uint32_t w = adj[i].val >> 1;
			uint8_t fl = flags[w];

			stack[sp] = w;
			sp += !(fl & bit);
			flags[w] = fl | bit;
		}
	}
}

/*
 * The nodes reached from entry (and from the exit when entry cannot reach
 * it) and those that reach the exit, from the sweeps: a node the forward
 * sweep missed but that has an edge in from a reached node was passed over
 * because that edge came before its tail was reached, and a mark goes on
 * from there; likewise backward.  What the sweeps miss is little (a latch
 * that only jumps back; after a second backward sweep, cold code laid out
 * past the return that jumps back into the body), so the nodes are scanned
 * for it, and only those are looked at.  Returns whether any node is dead
 * or unreachable.
 */
static int ceq_reach_live(struct ceq *c)
{
	const struct ceq_ent *restrict adj = c->adj;
	const uint32_t *restrict lo = c->lo, *restrict mid = c->mid, *restrict hi = c->hi;
	const uint32_t *restrict from = c->g->from, *restrict to = c->g->to;
	uint32_t *restrict rs = c->work, *restrict ls = c->fdepth, *restrict odd = c->cap_next;
	uint32_t rsp = 0, lsp = 0, nodd = 0, n = c->n;
	uint8_t *restrict flags = c->flags;

	/* a second backward sweep: code laid out after the return that jumps
	 * back (a cold path) is seen to reach the exit only now */
	for (uint32_t e = c->ne; e-- > 0;)
		flags[from[e]] |= flags[to[e]] & CEQ_LIVE;
	for (uint32_t v = 0; v < n; v++) {
		uint8_t fl = flags[v];

		if ((fl & (CEQ_REACH | CEQ_LIVE)) == (CEQ_REACH | CEQ_LIVE))
			continue;
		odd[nodd++] = v;
		for (uint32_t i = lo[v]; !(fl & CEQ_REACH) && i < mid[v]; i++)
			fl |= flags[adj[i].val >> 1] & CEQ_REACH;
		for (uint32_t i = mid[v] + (fl >> CEQ_SPLIT_SHIFT & 1);
		     !(fl & CEQ_LIVE) && i < hi[v]; i++)
			fl |= flags[adj[i].val >> 1] & CEQ_LIVE;
		rs[rsp] = v;
		rsp += (fl & ~flags[v] & CEQ_REACH) != 0;
		ls[lsp] = v;
		lsp += (fl & ~flags[v] & CEQ_LIVE) != 0;
		flags[v] = fl;
	}
	ceq_mark(c, rs, rsp, 0, CEQ_REACH);
	ceq_mark(c, ls, lsp, 1, CEQ_LIVE);
	/* entry is dead: its edge to the exit leads on from there */
	if (!(flags[c->g->exit] & CEQ_REACH)) {
		flags[c->g->exit] |= CEQ_REACH;
		rs[0] = c->g->exit;
		ceq_mark(c, rs, 1, 0, CEQ_REACH);
	}
	/* the marks flag only nodes the scan found unflagged */
	for (uint32_t i = 0; i < nodd; i++)
		if ((flags[odd[i]] & (CEQ_REACH | CEQ_LIVE)) != (CEQ_REACH | CEQ_LIVE))
			return 1;
	return 0;
}

/*
 * With dead or unreachable nodes (none in most procedures), the incidence
 * again: the edges of reachable nodes only, and an edge to the exit from
 * each dead node.
 */
static void ceq_relay(struct ceq *c)
{
	const uint32_t *restrict from = c->g->from, *restrict to = c->g->to;
	uint32_t *restrict mid = c->mid, *restrict hi = c->hi, n = c->n, ne = c->ne, ndead = 0;
	uint8_t *restrict flags = c->flags;

	for (uint32_t v = 0; v < n; v++) {
		mid[v] = hi[v] = 0;
		flags[v] &= CEQ_REACH | CEQ_LIVE | CEQ_SELF;
		ndead += (flags[v] & (CEQ_REACH | CEQ_LIVE)) == CEQ_REACH;
	}
	for (uint32_t e = 0; e < ne; e++) {
		if (flags[from[e]] & CEQ_REACH) {
			mid[to[e]]++;
			hi[from[e]]++;
		}
	}
	ceq_lay(c, 1, ndead);
	for (uint32_t e = 0; e < ne; e++) {
		if (flags[from[e]] & CEQ_REACH) {
			c->adj[mid[to[e]]++] = (struct ceq_ent){ 2 * from[e] + 1, e };
			c->adj[hi[from[e]]++] = (struct ceq_ent){ 2 * to[e], e };
		}
	}
	ceq_link(c, c->g->exit, c->g->entry, ne + n);
	for (uint32_t v = 0; v < n; v++)
		if ((flags[v] & (CEQ_REACH | CEQ_LIVE)) == CEQ_REACH)
			ceq_link(c, v, c->g->exit, ne + n + 1 + v);
}

/*
 * The bracket list operations take the arrays as arguments, not the state:
 * held in registers by the DFS, they are not reloaded through c (a store
 * to a uint32_t array might change c's counts, for all the compiler knows).
 */
static inline void ceq_push(struct ceq_br *restrict br, int *restrict cls, struct ceq_frame *f,
			    uint32_t b)
{
	br[b].prev = NIL;
	br[b].next = f->top;
	br[b].rsize = 0;
	cls[b] = -1;
	if (f->top != NIL)
		br[f->top].prev = b;
	else
		f->bot = b;
	f->top = b;
	f->size++;
}

static inline void ceq_delete(struct ceq_br *restrict br, struct ceq_frame *f, uint32_t b)
{
	uint32_t p = br[b].prev, nx = br[b].next;

	if (p != NIL)
		br[p].next = nx;
	else
		f->top = nx;
	if (nx != NIL)
		br[nx].prev = p;
	else
		f->bot = p;
	f->size--;
}

/* Append the finished child's list s below its parent's, l. */
static inline void ceq_concat(struct ceq_br *restrict br, struct ceq_frame *l,
			      const struct ceq_frame *s)
{
	if (!s->size)
		return;
	if (!l->size) {
		l->top = s->top;
		l->bot = s->bot;
	} else {
		br[l->bot].next = s->top;
		br[s->top].prev = l->bot;
		l->bot = s->bot;
	}
	l->size += s->size;
}

static void ceq_open(struct ceq *c, struct ceq_frame *f, uint32_t x, uint32_t pedge, uint32_t d)
{
	uint32_t v = x >> 1;

	f->x = x;
	f->d = d;
	f->pedge = pedge;
	if (x & 1) {
		f->pos = c->mid[v];
		f->end = c->hi[v];
	} else {
		f->pos = c->lo[v];
		f->end = c->flags[v] & CEQ_SPLIT ? c->mid[v] + 1 : c->hi[v];
	}
	f->hi0 = f->hi1 = f->hi2 = NIL;
	f->top = f->bot = NIL;
	f->size = 0;
	f->caps = NIL;
	c->dfs[x] = d;
}

/* The class of the tree edge into f's vertex from its bracket list (top,
 * size); *nclass is the next class. */
static void ceq_classify(struct ceq_br *restrict br, int *restrict cls, const struct ceq_frame *f,
			 int *nclass)
{
	uint32_t e = f->pedge, b = f->top;

	if (b == NIL) {		/* a bridge: cannot happen when strongly connected */
		cls[e] = (*nclass)++;
		return;
	}
	if (br[b].rsize != f->size) {
		br[b].rsize = f->size;
		br[b].rclass = (*nclass)++;
	}
	cls[e] = br[b].rclass;
	if (f->size == 1)	/* b is e's only bracket: the two are equivalent */
		cls[b] = cls[e];
}

/* JPP fig. 4 for the vertex of f once its subtree is done; st holds it and
 * its ancestors.  Returns its hi. */
static uint32_t ceq_finish(struct ceq *c, struct ceq_frame *st, struct ceq_frame *f,
			   int *nclass)
{
	for (uint32_t b = f->caps; b != NIL; b = c->cap_next[b - c->capbase])
		ceq_delete(c->br, f, b);
	/* Capping back edge; JPP's hi2 < hi0 needs hi2 above x as well. */
	if (f->hi2 < f->hi0 && f->hi2 < f->d) {
		struct ceq_frame *to = &st[c->fdepth[f->hi2]];
		uint32_t cap = c->capbase + f->x;

		ceq_push(c->br, c->cls, f, cap);
		c->cap_next[f->x] = to->caps;
		to->caps = cap;
	}
	if (f->pedge != NIL)
		ceq_classify(c->br, c->cls, f, nclass);
	return f->hi0 < f->hi1 ? f->hi0 : f->hi1;
}

/* Child s of p is done: its hi and its brackets go to p. */
static void ceq_return(struct ceq_br *restrict br, struct ceq_frame *p, const struct ceq_frame *s,
		       uint32_t hi)
{
	uint32_t h1 = p->hi1;

	p->hi1 = hi < h1 ? hi : h1;
	hi = hi < h1 ? h1 : hi;
	p->hi2 = hi < p->hi2 ? hi : p->hi2;
	ceq_concat(br, p, s);
}

/* The vertex at the other end of an incidence entry, fl its node's flags. */
static inline uint32_t ceq_vertex(uint32_t val, uint32_t fl)
{
	/* an unsplit node's two halves are one vertex */
	return val - (val & 1 & ~(fl >> CEQ_SPLIT_SHIFT));
}

/*
 * Edge *e leads to t, unvisited, with one other edge: the two are crossed by
 * the same cycles, so are one class, and so on along the chain of such
 * vertices up to the first that has more edges or is visited, returned with
 * *e the chain's last edge (as that vertex sees it).  The chain is then one
 * edge of the DFS, known by that id: a tree edge, a back edge, or a cycle
 * back to where it started.  The chain's vertices get dfs numbers (the
 * vertex at its end finds them below it) but no frame; fdepth at their
 * numbers keeps the chain's edges until each is made an alias of the last:
 * cls = -2 - last.  Most blocks are such vertices (one predecessor, one
 * successor): they cost no frame and none of the DFS's branches.
 */
static uint32_t ceq_pass(struct ceq *c, uint32_t t, uint32_t *e, uint32_t *num)
{
	const struct ceq_ent *restrict adj = c->adj;
	const uint32_t *restrict lo = c->lo;
	const uint8_t *restrict flags = c->flags;
	uint32_t *restrict dfs = c->dfs, *restrict fdepth = c->fdepth;
	uint32_t first = *num, n = first, id = *e, fl;

	do {
		const struct ceq_ent *a = &adj[lo[t >> 1]];

		dfs[t] = n;
		fdepth[n++] = id;
		a += a->id == id;	/* the other of the two */
		id = a->id;
		fl = flags[a->val >> 1];
		t = ceq_vertex(a->val, fl);
	} while (dfs[t] == NIL && (fl & CEQ_PASS));
	for (uint32_t i = first; i < n; i++)
		c->cls[fdepth[i]] = -2 - (int)id;
	*num = n;
	*e = id;
	return t;
}

/*
 * Iterative undirected DFS from entry_in, JPP's work done as it goes; fdepth
 * maps a dfs number to the vertex's place on the stack st.  The frame on
 * top is f, its walk pos .. end kept in registers.
 */
static void ceq_dfs(struct ceq *c)
{
	const struct ceq_ent *restrict adj = c->adj;
	const uint8_t *restrict flags = c->flags;
	uint32_t *restrict dfs = c->dfs;
	struct ceq_br *restrict br = c->br;
	int *restrict cls = c->cls, nclass = 0;
	struct ceq_frame *st = c->st, *f = st;
	uint32_t num = 0, pos, end, hi;

	c->fdepth[num] = 0;
	ceq_open(c, f, 2 * c->g->entry, NIL, num++);
	pos = f->pos;
	end = f->end;
	for (;;) {
		if (pos < end) {
			uint32_t e = adj[pos].id, val = adj[pos].val, fl = flags[val >> 1], t, d;

			pos++;
			t = ceq_vertex(val, fl);
			t ^= t == f->x;		/* the node edge, seen from v_out */
			d = dfs[t];
			if (d == NIL && (fl & CEQ_PASS)) {
				t = ceq_pass(c, t, &e, &num);
				d = dfs[t];
				if (d == f->d) {	/* a cycle through f's vertex alone */
					ceq_push(br, cls, f, e);
					continue;
				}
			}
			if (d == NIL) {
				f->pos = pos;
				f++;
				c->fdepth[num] = (uint32_t)(f - st);
				ceq_open(c, f, t, e, num++);
				pos = f->pos;
				end = f->end;
			} else if (d < f->d) {		/* back edge to an ancestor */
				if (e == f->pedge)
					continue;
				ceq_push(br, cls, f, e);
				f->hi0 = d < f->hi0 ? d : f->hi0;
			} else {			/* back edge from a descendant */
				ceq_delete(br, f, e);
				if (cls[e] < 0)
					cls[e] = nclass++;
			}
			continue;
		}
		hi = ceq_finish(c, st, f, &nclass);
		if (f == st)
			break;
		ceq_return(br, f - 1, f, hi);
		f--;
		pos = f->pos;
		end = f->end;
	}
	c->nclass = nclass;
}

/* The caller's number of internal class k, the next one if k is new.  No
 * branch: whether k was seen is as unpredictable as it is frequent. */
static inline int ceq_number(int *map, int k, int *next)
{
	int m = map[k], fresh = m < 0;

	m = fresh ? *next : m;
	*next += fresh;
	map[k] = m;
	return m;
}

/* Edge id's internal class, through its alias if it has one (ceq_pass). */
static inline int ceq_class(const int *cls, uint32_t id)
{
	int k = cls[id];

	return cls[k < -1 ? (uint32_t)(-2 - k) : id];
}

/* Number the caller's classes densely, nodes first, then edges. */
static int ceq_report(struct ceq *c, int *restrict node_class, int *restrict edge_class)
{
	const uint32_t *restrict from = c->g->from, *restrict lo = c->lo, *restrict mid = c->mid;
	const struct ceq_ent *restrict adj = c->adj;
	const uint8_t *restrict flags = c->flags;
	const int *restrict cls = c->cls;
	int *restrict map = c->map, next = 0;
	uint32_t n = c->n, ne = c->ne;

	/* a class is made per edge or bracket at most: nclass fits in map */
	for (int i = 0; i < c->nclass; i++)
		map[i] = -1;
	for (uint32_t v = 0; v < n; v++) {
		if (!(flags[v] & CEQ_REACH))
			node_class[v] = next++;		/* unreachable from entry */
		else if (flags[v] & CEQ_SPLIT)
			node_class[v] = ceq_number(map, ceq_class(cls, ne + v), &next);
		else	/* with its one edge in, or else its one edge out */
			node_class[v] = ceq_number(map, ceq_class(cls, adj[mid[v] - lo[v] == 1 ?
								    lo[v] : mid[v]].id), &next);
	}
	for (uint32_t e = 0; e < ne; e++) {
		if (!(flags[from[e]] & CEQ_REACH))
			edge_class[e] = next++;
		else
			edge_class[e] = ceq_number(map, ceq_class(cls, e), &next);
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
	return 0;
}

/* Lay the arrays of c (a struct ceq) out in a: counting, then carving (graph.h). */
static void ceq_layout(void *obj, struct cfg_arena *a)
{
	struct ceq *c = obj;
	size_t n = c->n, ne = c->ne, nbr = ne + 4 * n + 1;

	c->lo = cfg_arena_take(a, n, sizeof(uint32_t));
	c->mid = cfg_arena_take(a, n, sizeof(uint32_t));
	c->hi = cfg_arena_take(a, n, sizeof(uint32_t));
	c->work = cfg_arena_take(a, n + 1, sizeof(uint32_t));
	c->flags = cfg_arena_take(a, n, 1);
	c->adj = cfg_arena_take(a, 2 * ne + 3 * n + 2, sizeof(struct ceq_ent));
	c->dfs = cfg_arena_take(a, 2 * n, sizeof(uint32_t));
	c->fdepth = cfg_arena_take(a, 2 * n, sizeof(uint32_t));
	c->cap_next = cfg_arena_take(a, 2 * n, sizeof(uint32_t));
	c->st = cfg_arena_take(a, 2 * n, sizeof(struct ceq_frame));
	c->br = cfg_arena_take(a, nbr, sizeof(struct ceq_br));
	c->cls = cfg_arena_take(a, nbr, sizeof(int));
	c->map = cfg_arena_take(a, nbr, sizeof(int));
}

/*
 * A procedure that is one straight line, blocks 0 .. n - 1 from entry to
 * exit with edges 0 -> 1 -> ... (as the builder numbers a CFG: address
 * order, exit last), is with exit -> entry one cycle: everything is in
 * class 0.  Over a third of a binary's procedures are such (often one
 * block and the exit); no need to lay anything out.  Fills the classes
 * and returns 1 if g is one.
 */
static int ceq_chain(const struct cfg_graph *g, int *node_class, int *edge_class)
{
	const uint32_t *restrict from = g->from, *restrict to = g->to;
	uint32_t n = g->nnodes, line = n > 1 && g->entry == 0 && g->exit == n - 1 &&
					g->nedges == n - 1;

	for (uint32_t e = 0; line && e < g->nedges; e++)
		line = from[e] == e && to[e] == e + 1;
	if (!line)
		return 0;
	for (uint32_t v = 0; v < n; v++)
		node_class[v] = 0;
	for (uint32_t e = 0; e < g->nedges; e++)
		edge_class[e] = 0;
	return 1;
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
	long bad;
	int ret;

	ret = ceq_check(g, err);
	if (ret)
		return ret;
	if (ceq_chain(g, node_class, edge_class)) {
		*nclasses = 1;
		return 0;
	}
	c.n = g->nnodes;
	c.ne = g->nedges;
	c.capbase = c.ne + 2 * c.n + 1;
	/* every working array, its contents undefined */
	if (cfg_arena_lay_out_dirty(&c.mem, s ? s : &own, ceq_layout, &c)) {
		ret = dcpi_errf(err, -ENOMEM, "cycle equivalence: %u nodes, %u edges: "
				"out of memory", g->nnodes, g->nedges);
		goto out;
	}
	bad = ceq_count(&c);
	if (bad) {
		uint32_t e = (uint32_t)(-1 - bad);

		ret = dcpi_errf(err, -EINVAL, "cycle equivalence: edge %u (%u -> %u) "
				"out of range", e, g->from[e], g->to[e]);
		goto out;
	}
	/* laid out as if every node were reachable and reached the exit */
	ceq_lay(&c, 0, 0);
	ceq_fill(&c);
	if (ceq_reach_live(&c))
		ceq_relay(&c);
	ceq_dfs(&c);
	*nclasses = ceq_report(&c, node_class, edge_class);
out:
	cfg_arena_end(&c.mem);
	free(own.mem);
	return ret;
}
