/*
 * cfg/build.c - the control-flow graph of one procedure from its bytes alone
 * (DCPI paper sec. 6.1.1): recursive traversal from the entry, jump tables
 * resolved and followed, calls ending blocks (with a call-return edge unless
 * the callee never returns), leftover bytes swept as padding or as code that
 * only unknown control flow reaches.  Then the graph algorithms: loops and
 * cycle-equivalence classes (sec. 6.1.2), or, with missing edges, one class
 * per block and edge as the paper does.
 *
 * Data structures: during the traversal each byte of the procedure has a
 * state in at[] (an instruction index for an instruction's first byte, or one
 * of the AT_ codes); instructions are appended as found.  assemble() turns
 * that into the sorted struct cfg, and is rerun whenever jump tables or the
 * sweep of leftover bytes add code.  It sorts the instructions in place and
 * renumbers them (at[], the jumps' indices), so cfg->insns is the builder's
 * own array, handed over when the build ends: each instruction is held by
 * the decode cache and here, not copied a third time.
 *
 * Bounded work: a byte leaves AT_NONE the first time an instruction is
 * decoded at it, whatever the outcome (recorded, undecodable, or overlapping
 * code found earlier: AT_BAD), and is never decoded there again by step();
 * the sweep decodes each gap in one pass.  So every byte is decoded a small
 * constant number of times (step, the padding test of the sweep, the padding
 * test after a call), and assemble() runs once per round of newly resolved
 * jump tables.  A decode budget and a round cap stop pathological input
 * anyway: what was not reached is then a "not decoded" range and the CFG has
 * missing edges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "internal.h"

#define AT_NONE		-1	/* not decoded (yet) */
#define AT_INSIDE	-2	/* inside an instruction, not its first byte */
#define AT_BAD		-3	/* undecodable */
#define AT_TABLE	-4	/* a jump table inside the procedure */
#define AT_PAD		-5	/* padding */
#define AT_SKIP		-6	/* not decoded: the budget below ran out */

#define JT_PATH_MAX	96	/* instructions walked back from an indirect jump */
/*
 * Decodes allowed per byte of the procedure, and rounds of discover().  The
 * builder needs at most about 3 decodes per byte and one round per level of
 * jump tables reached only through other tables; these are far above that.
 */
#define DECODES_PER_BYTE	16
#define DECODES_MIN		4096
#define ROUNDS_MAX		512

/*
 * What assemble() reads of an instruction, beside b->v: walking 16 bytes per
 * instruction instead of a struct cfg_insn's 208 keeps it in the cache.
 */
struct brief {
	uint64_t target;
	uint32_t flags;
	uint8_t size;
	uint8_t noret;			/* a call that never returns */
};

struct jt_key {
	uint32_t insn, rec;		/* index in b->v, in b->jts */
};

struct jt_rec {
	uint32_t insn;			/* index in b->v of the jump (renumbered) */
	int tried, ok;
	int tail;			/* not a table: a tail call through a pointer */
	struct cfg_jt jt;
};

struct builder {
	const struct image *img;
	const uint8_t *bytes;
	size_t len;
	uint64_t start;
	int depth;
	struct cfg_dec *dec;
	int own_dec;			/* dec opened (and closed) by this build */
	unsigned long calls0;		/* cfg_dec_count(dec) when the build began */
	struct cfg_all *all;		/* whole-image mode (all.c), or NULL */
	int nr_proved;			/* a call ended by the callee's noreturn proof */
	uint64_t path_hash;		/* of img's path, for noreturn.c (0: not yet) */
	int32_t *at;			/* per byte, see AT_ */
	uint8_t *root;			/* per byte: a leader found by the sweep */
	/* instructions, in address order up to the last assemble(), then as found */
	struct cfg_insn *v;
	struct brief *brief;		/* and what assemble() reads of them */
	size_t n, cap, capnr;
	uint32_t *map;			/* assemble(): sorted index -> index in v */
	size_t capmap;
	uint32_t *work;			/* offsets still to traverse */
	size_t nwork, capwork;
	struct jt_rec *jts;		/* in the order found */
	struct jt_key *jtx;		/* jts by their jump's index in v (assemble()) */
	size_t njts, capjts, capjtx;
	int gap_code;			/* the sweep found code no edge reaches */
	int conflict;			/* a branch into the middle of an instruction */
	unsigned long budget;		/* decodes allowed (cfg_dec_count) */
	int truncated;			/* budget or round cap hit: bytes left undecoded */
};

/* The public struct and the arrays its blocks point into. */
struct cfg_priv {
	struct cfg pub;
	uint32_t *succ_all, *pred_all;
};

static int push_work(struct builder *b, uint64_t addr)
{
	if (addr < b->start || addr >= b->start + b->len)
		return 0;
	if (dcpi_grow((void **)&b->work, &b->capwork, b->nwork + 1, sizeof(*b->work)) < 0)
		return -ENOMEM;
	b->work[b->nwork++] = (uint32_t)(addr - b->start);
	return 0;
}

static int inside(const struct builder *b, uint64_t addr)
{
	return addr >= b->start && addr < b->start + b->len;
}

/* Only bytes of padding, from off to the end of the procedure? */
static int pad_to_end(struct builder *b, size_t off)
{
	return off >= b->len || off + cfg_pad_len(b->dec, b->bytes + off, b->len - off,
						  b->start + off) >= b->len;
}

static int add_jt(struct builder *b, uint32_t insn)
{
	if (dcpi_grow((void **)&b->jts, &b->capjts, b->njts + 1, sizeof(*b->jts)) < 0)
		return -ENOMEM;
	memset(&b->jts[b->njts], 0, sizeof(b->jts[0]));
	b->jts[b->njts++].insn = insn;
	return 0;
}

/* Is the indirect jump a tail call through the GOT (jmp *sym@GOTPCREL(%rip))? */
static int is_got_jump(const struct cfg_insn *in)
{
	return in->nmem && in->mem.rip_relative && in->mem.index == CFG_REG_NONE;
}

/*
 * Does a call to target never return?  A whole-image build (all.c) builds the
 * callee first, so its instructions are decoded once for both questions, and
 * keeps the answer per procedure.  The callee is looked up once per call.
 */
static int noreturn_of(struct builder *b, uint64_t target)
{
	const struct img_proc *p;
	int nr, named;

	if (!b->img || !(p = img_proc_at(b->img, target)) || p->addr != target)
		return 0;
	if (b->all && b->depth == 1)
		nr = cfg_all_noreturn(b->all, p, &named);
	else
		nr = cfg_noreturn_proc(b->img, p, b->depth, NULL, &b->path_hash, &named);
	if (nr && b->depth > 0 && !named)
		b->nr_proved = 1;
	return nr;
}

/* Decode one instruction at off and record it.  1 when the path ends here. */
static int step(struct builder *b, size_t *off)
{
	struct cfg_insn *in;
	size_t o = *off;
	uint32_t idx = (uint32_t)b->n;

	if (b->at[o] != AT_NONE) {
		if (b->at[o] == AT_INSIDE)
			b->conflict = 1;
		return 1;
	}
	if (cfg_dec_count(b->dec) - b->calls0 >= b->budget) {
		b->truncated = 1;
		return 1;
	}
	if (dcpi_grow((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)) < 0 ||
	    dcpi_grow((void **)&b->brief, &b->capnr, b->n + 1, sizeof(*b->brief)) < 0)
		return -ENOMEM;
	in = &b->v[idx];
	if (cfg_dec_insn(b->dec, b->bytes + o, b->len - o, b->start + o, in) < 0) {
		b->at[o] = AT_BAD;
		return 1;
	}
	for (size_t k = 1; k < in->size; k++) {
		/*
		 * Overlaps what we decoded: stop.  The byte is settled too, or
		 * every later path (and every sweep) would decode it again.
		 */
		if (b->at[o + k] != AT_NONE) {
			b->at[o] = AT_BAD;
			b->conflict = 1;
			return 1;
		}
	}
	b->n++;
	b->brief[idx] = (struct brief){ in->target, in->flags, in->size, 0 };
	b->at[o] = (int32_t)idx;
	for (size_t k = 1; k < in->size; k++)
		b->at[o + k] = AT_INSIDE;
	*off = o + in->size;
	if (in->flags & (CFG_I_RET | CFG_I_TRAP))
		return 1;
	if (in->flags & CFG_I_CALL) {
		int nr = in->target && noreturn_of(b, in->target);

		/* a call followed by nothing but padding cannot come back here */
		if (!nr && pad_to_end(b, *off))
			nr = 1;
		b->brief[idx].noret = (uint8_t)nr;
		return nr;
	}
	if (!(in->flags & CFG_I_BRANCH))
		return 0;
	if (in->flags & CFG_I_INDIRECT) {
		if (!is_got_jump(in) && add_jt(b, idx) < 0)
			return -ENOMEM;
		return 1;
	}
	if (push_work(b, in->target) < 0)
		return -ENOMEM;
	return !(in->flags & CFG_I_COND);
}

static int traverse(struct builder *b)
{
	while (b->nwork) {
		size_t off = b->work[--b->nwork];
		int rc = 0;

		while (off < b->len && rc == 0)
			rc = step(b, &off);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The jump table record of instruction insn, by jtx[] (set by assemble()). */
static struct jt_rec *jt_of(const struct builder *b, uint32_t insn)
{
	size_t lo = 0, hi = b->njts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->jtx[mid].insn < insn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->njts && b->jtx[lo].insn == insn ? &b->jts[b->jtx[lo].rec] : NULL;
}

static int add_edge(struct cfg *cfg, size_t *cap, uint32_t from, uint32_t to,
		    enum cfg_edge_kind kind)
{
	if (dcpi_grow((void **)&cfg->edges, cap, cfg->nedges + 1, sizeof(*cfg->edges)) < 0)
		return -ENOMEM;
	cfg->edges[cfg->nedges++] = (struct cfg_edge){ from, to, kind, -1 };
	return 0;
}

/* Block that starts exactly at addr, or -1. */
static int block_starting(const struct cfg *cfg, uint64_t addr)
{
	int i = cfg_block_at(cfg, addr);

	return i >= 0 && cfg->blocks[i].start == addr ? i : -1;
}

static int ends_block(const struct builder *b, uint32_t vi)
{
	return (b->brief[vi].flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET | CFG_I_TRAP)) != 0;
}

/* Mark leaders in lead[] (per byte). */
static void mark_leaders(const struct builder *b, uint8_t *lead)
{
	int prev_end = 1;

	for (size_t o = 0; o < b->len; o++) {
		int32_t vi = b->at[o];
		const struct brief *in;

		if (vi == AT_INSIDE)
			continue;
		if (vi < 0) {
			prev_end = 1;
			continue;
		}
		if (prev_end || b->root[o])
			lead[o] = 1;
		prev_end = ends_block(b, (uint32_t)vi);
		in = &b->brief[vi];
		if ((in->flags & CFG_I_BRANCH) && !(in->flags & CFG_I_INDIRECT) &&
		    inside(b, in->target) && b->at[in->target - b->start] >= 0)
			lead[in->target - b->start] = 1;
		o += in->size - 1;		/* its other bytes are AT_INSIDE */
	}
	lead[0] = b->at[0] >= 0;
	for (size_t i = 0; i < b->njts; i++) {
		const struct jt_rec *r = &b->jts[i];

		for (size_t k = 0; r->ok && k < r->jt.count; k++)
			if (inside(b, r->jt.targets[k]) && b->at[r->jt.targets[k] - b->start] >= 0)
				lead[r->jt.targets[k] - b->start] = 1;
	}
}

static int cmp_jt_key(const void *a, const void *b)
{
	uint32_t x = ((const struct jt_key *)a)->insn, y = ((const struct jt_key *)b)->insn;

	return x < y ? -1 : x > y;
}

/*
 * Put v[] and brief[] in address order in place: map[k] is the old index of
 * the k-th instruction by address, and at[] holds the new indices already
 * (make_blocks).  The jumps' indices follow (before v[] moves: they are read
 * through it), jtx[] orders them, and map[] ends as the identity.
 */
static int renumber(struct builder *b)
{
	for (size_t i = 0; i < b->njts; i++)
		b->jts[i].insn = (uint32_t)b->at[b->v[b->jts[i].insn].addr - b->start];
	for (size_t s = 0; s < b->n; s++) {
		struct cfg_insn tmp;
		struct brief tb;
		size_t k = s;

		if (b->map[s] == s)
			continue;
		tmp = b->v[s];
		tb = b->brief[s];
		for (;;) {		/* the cycle through s: each moves once */
			size_t j = b->map[k];

			b->map[k] = (uint32_t)k;
			if (j == s)
				break;
			b->v[k] = b->v[j];
			b->brief[k] = b->brief[j];
			k = j;
		}
		b->v[k] = tmp;
		b->brief[k] = tb;
	}
	if (dcpi_grow((void **)&b->jtx, &b->capjtx, b->njts + 1, sizeof(*b->jtx)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < b->njts; i++)
		b->jtx[i] = (struct jt_key){ b->jts[i].insn, (uint32_t)i };
	dcpi_qsort(b->jtx, b->njts, sizeof(*b->jtx), cmp_jt_key);
	return 0;
}

/*
 * Instructions in address order (renumbered in place: cfg->insns is b->v),
 * and blocks over them (the exit node last).
 */
static int make_blocks(struct builder *b, struct cfg *cfg)
{
	uint8_t *lead = calloc(b->len ? b->len : 1, 1);
	size_t nb = 0, capb = 0;
	int rc = -ENOMEM;

	if (!lead)
		return -ENOMEM;
	mark_leaders(b, lead);
	if (dcpi_grow((void **)&b->map, &b->capmap, b->n + 1, sizeof(*b->map)) < 0)
		goto out;
	for (size_t o = 0; o < b->len; o++) {
		int32_t vi = b->at[o];
		struct cfg_block *bl;

		if (vi < 0)
			continue;
		b->map[cfg->ninsns] = (uint32_t)vi;
		b->at[o] = (int32_t)cfg->ninsns;
		if (lead[o]) {
			if (dcpi_grow((void **)&cfg->blocks, &capb, nb + 2,
				      sizeof(*cfg->blocks)) < 0)
				goto out;
			bl = &cfg->blocks[nb++];
			memset(bl, 0, sizeof(*bl));
			bl->start = b->start + o;
			bl->first = (uint32_t)cfg->ninsns;
		}
		bl = &cfg->blocks[nb - 1];
		bl->n++;
		bl->end = b->start + o + b->brief[vi].size;
		cfg->ninsns++;
		o += b->brief[vi].size - 1;		/* its other bytes are AT_INSIDE */
	}
	/* every instruction has its first byte in at[]: ninsns == b->n */
	if (renumber(b) < 0)
		goto out;
	cfg->insns = b->v;
	if (dcpi_grow((void **)&cfg->blocks, &capb, nb + 1, sizeof(*cfg->blocks)) < 0)
		goto out;
	memset(&cfg->blocks[nb], 0, sizeof(cfg->blocks[0]));
	cfg->blocks[nb].start = cfg->blocks[nb].end = cfg->end;
	cfg->blocks[nb].first = (uint32_t)cfg->ninsns;
	cfg->blocks[nb].flags = CFG_B_EXIT;
	cfg->nblocks = nb + 1;
	cfg->exit = (uint32_t)nb;
	for (size_t i = 0; i < cfg->nblocks; i++) {
		cfg->blocks[i].loop = -1;
		cfg->blocks[i].cls = -1;
	}
	rc = 0;
out:
	free(lead);
	return rc;
}

/* Out-edges of block bi (not the exit), from its last instruction. */
static int block_edges(const struct builder *b, struct cfg *cfg, size_t *cap, uint32_t bi,
		       uint32_t vi)
{
	struct cfg_block *bl = &cfg->blocks[bi];
	const struct brief *in = &b->brief[vi];
	uint32_t x = cfg->exit;
	/* blocks are in address order: one starting at bl->end is the next */
	int next = bi + 1 < x && cfg->blocks[bi + 1].start == bl->end ? (int)bi + 1 : -1;
	int t, rc = 0;

	if (in->flags & CFG_I_RET)
		return add_edge(cfg, cap, bi, x, CFG_E_RETURN);
	if ((in->flags & CFG_I_TRAP) || in->noret) {
		bl->flags |= CFG_B_NORETURN;
		return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
	}
	if (in->flags & CFG_I_CALL) {
		if (next < 0)
			return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
		return add_edge(cfg, cap, bi, (uint32_t)next, CFG_E_CALL_RETURN);
	}
	if (!(in->flags & CFG_I_BRANCH)) {
		if (next < 0)	/* runs off the decoded code: into the next procedure */
			return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
		return add_edge(cfg, cap, bi, (uint32_t)next, CFG_E_FALLTHROUGH);
	}
	if (in->flags & CFG_I_INDIRECT) {
		const struct jt_rec *r = jt_of(b, vi);

		if (!r)		/* through the GOT: a tail call */
			return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
		bl->flags |= CFG_B_INDIRECT;
		if (r->tail)	/* through a pointer (tailcall.c): not counted */
			return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
		cfg->indirect_jumps++;
		if (!r->ok) {
			bl->flags |= CFG_B_UNRESOLVED;
			cfg->missing_edges = 1;
			return add_edge(cfg, cap, bi, x, CFG_E_TAILCALL);
		}
		cfg->indirect_resolved++;
		for (size_t k = 0; k < r->jt.count && rc == 0; k++) {
			uint64_t a = r->jt.targets[k];
			int dup = 0, out = !inside(b, a);

			t = out ? (int)x : block_starting(cfg, a);
			for (size_t j = 0; j < k; j++)	/* one edge per target (per exit) */
				dup |= r->jt.targets[j] == a ||
				       (out && !inside(b, r->jt.targets[j]));
			if (t < 0) {
				cfg->missing_edges = 1;
				continue;
			}
			if (!dup)	/* into a .cold fragment: out of the procedure */
				rc = add_edge(cfg, cap, bi, (uint32_t)t,
					      out ? CFG_E_TAILCALL : CFG_E_TABLE);
		}
		return rc;
	}
	t = inside(b, in->target) ? block_starting(cfg, in->target) : -1;
	if (t < 0 && inside(b, in->target))
		cfg->missing_edges = 1;		/* into the middle of an instruction */
	if (in->flags & CFG_I_COND) {
		rc = add_edge(cfg, cap, bi, t < 0 ? x : (uint32_t)t,
			      t < 0 ? CFG_E_TAILCALL : CFG_E_TAKEN);
		if (rc == 0)
			rc = add_edge(cfg, cap, bi, next < 0 ? x : (uint32_t)next,
				      next < 0 ? CFG_E_TAILCALL : CFG_E_NOT_TAKEN);
		return rc;
	}
	return add_edge(cfg, cap, bi, t < 0 ? x : (uint32_t)t, t < 0 ? CFG_E_TAILCALL :
		       CFG_E_JUMP);
}

/* succ and pred lists of every block, in two shared arrays. */
static int link_blocks(struct cfg_priv *p)
{
	struct cfg *cfg = &p->pub;
	size_t ne = cfg->nedges ? cfg->nedges : 1;

	p->succ_all = malloc(ne * sizeof(uint32_t));
	p->pred_all = malloc(ne * sizeof(uint32_t));
	if (!p->succ_all || !p->pred_all)
		return -ENOMEM;
	for (size_t e = 0; e < cfg->nedges; e++) {
		cfg->blocks[cfg->edges[e].from].nsucc++;
		cfg->blocks[cfg->edges[e].to].npred++;
	}
	for (size_t i = 0, s = 0, q = 0; i < cfg->nblocks; i++) {
		cfg->blocks[i].succ = p->succ_all + s;
		cfg->blocks[i].pred = p->pred_all + q;
		s += cfg->blocks[i].nsucc;
		q += cfg->blocks[i].npred;
		cfg->blocks[i].nsucc = cfg->blocks[i].npred = 0;
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		struct cfg_block *f = &cfg->blocks[cfg->edges[e].from];
		struct cfg_block *t = &cfg->blocks[cfg->edges[e].to];

		f->succ[f->nsucc++] = (uint32_t)e;
		t->pred[t->npred++] = (uint32_t)e;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int collect_callees(const struct builder *b, struct cfg *cfg)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++)
		n += (b->brief[i].flags & CFG_I_CALL) && b->brief[i].target;
	if (!n)
		return 0;
	cfg->callees = malloc(n * sizeof(*cfg->callees));
	if (!cfg->callees)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < b->n; i++)
		if ((b->brief[i].flags & CFG_I_CALL) && b->brief[i].target)
			cfg->callees[n++] = b->brief[i].target;
	dcpi_qsort(cfg->callees, n, sizeof(*cfg->callees), cmp_u64);
	cfg->ncallees = 0;
	for (size_t i = 0; i < n; i++)
		if (!cfg->ncallees || cfg->callees[cfg->ncallees - 1] != cfg->callees[i])
			cfg->callees[cfg->ncallees++] = cfg->callees[i];
	return 0;
}

static const char *range_kind(int32_t at)
{
	switch (at) {
	case AT_BAD:
		return "undecodable";
	case AT_TABLE:
		return "jump table";
	case AT_SKIP:
		return "not decoded";
	default:
		return "padding";
	}
}

/* Every byte in no instruction is data: padding, a table, or undecodable. */
static int collect_data(const struct builder *b, struct cfg *cfg)
{
	size_t cap = 0;

	for (size_t o = 0; o < b->len;) {
		const char *what;
		size_t e = o;

		if (b->at[o] >= 0) {
			o += b->brief[b->at[o]].size;
			continue;
		}
		if (b->at[o] == AT_INSIDE) {
			o++;
			continue;
		}
		what = range_kind(b->at[o]);
		while (e < b->len && b->at[e] < 0 && b->at[e] != AT_INSIDE &&
		       range_kind(b->at[e]) == what)
			e++;
		if (dcpi_grow((void **)&cfg->data, &cap, cfg->ndata + 1, sizeof(*cfg->data)) < 0)
			return -ENOMEM;
		cfg->data[cfg->ndata++] = (struct cfg_range){ b->start + o, b->start + e, what };
		o = e;
	}
	return 0;
}

static void free_parts(struct cfg_priv *p)
{
	struct cfg *cfg = &p->pub;

	free(cfg->insns);
	free(cfg->blocks);
	free(cfg->edges);
	free(cfg->data);
	free(cfg->callees);
	cfg_loops_free(cfg->loops, cfg->nloops);
	free(p->succ_all);
	free(p->pred_all);
	cfg->insns = NULL;
	cfg->blocks = NULL;
	cfg->edges = NULL;
	cfg->data = NULL;
	cfg->callees = NULL;
	cfg->loops = NULL;
	p->succ_all = p->pred_all = NULL;
	cfg->ninsns = cfg->nblocks = cfg->nedges = cfg->ndata = cfg->ncallees = 0;
	cfg->nloops = 0;
	cfg->missing_edges = 0;
	cfg->indirect_jumps = cfg->indirect_resolved = 0;
}

_Thread_local unsigned long cfg_build_rounds;

/*
 * The struct cfg of what the builder holds now.  Its insns are b->v until
 * build_core hands them over: valid until the next step().
 */
static int assemble(struct builder *b, struct cfg_priv *p)
{
	struct cfg *cfg = &p->pub;
	size_t cap = 0;
	int rc;

	cfg_build_rounds++;
	cfg->insns = NULL;		/* b->v: not freed here */
	free_parts(p);
	rc = make_blocks(b, cfg);
	for (uint32_t i = 0; rc == 0 && i + 1 < cfg->nblocks; i++) {
		struct cfg_block *bl = &cfg->blocks[i];

		rc = block_edges(b, cfg, &cap, i, bl->first + bl->n - 1);
	}
	if (rc == 0)
		rc = link_blocks(p);
	if (rc == 0)
		rc = collect_callees(b, cfg);
	if (rc == 0)
		rc = collect_data(b, cfg);
	if (rc < 0)
		return rc;
	cfg->entry = cfg->nblocks > 1 && cfg->blocks[0].start == cfg->start ? 0 : cfg->exit;
	cfg->blocks[cfg->entry].flags |= CFG_B_ENTRY;
	if (b->gap_code || b->conflict || b->truncated)
		cfg->missing_edges = 1;
	return 0;
}

/* The instructions before the jump at sorted index si, newest first. */
static void walk_back(const struct cfg *cfg, uint32_t si, const struct cfg_insn **insn,
		      uint64_t *next, size_t *n)
{
	int bi = cfg_block_at(cfg, cfg->insns[si].addr);
	uint64_t after = 0;
	int hops = 0;

	*n = 0;
	while (bi >= 0 && *n < JT_PATH_MAX) {
		const struct cfg_block *bl = &cfg->blocks[bi];
		const struct cfg_edge *e;

		for (int64_t i = si; i >= (int64_t)bl->first && *n < JT_PATH_MAX; i--) {
			insn[*n] = &cfg->insns[i];
			next[(*n)++] = after;
			after = cfg->insns[i].addr;
		}
		if (bl->npred != 1 || ++hops > 8)
			break;
		e = &cfg->edges[bl->pred[0]];
		if (e->from == (uint32_t)bi || e->from == cfg->exit)
			break;
		after = bl->start;
		bi = (int)e->from;
		si = cfg->blocks[bi].first + cfg->blocks[bi].n - 1;
	}
}

static void mark_table(struct builder *b, const struct cfg_jt *jt)
{
	uint64_t lo = jt->table, hi = jt->table + jt->count * jt->entry_size;

	for (uint64_t a = lo; a < hi; a++)
		if (inside(b, a) && b->at[a - b->start] == AT_NONE)
			b->at[a - b->start] = AT_TABLE;
}

/* Try the jump tables not tried yet; 1 when new code may be reachable. */
static int resolve_tables(struct builder *b, const struct cfg *cfg)
{
	const struct cfg_insn *insn[JT_PATH_MAX];
	uint64_t next[JT_PATH_MAX];
	struct cfg_jt_path path = { insn, next, 0, cfg };
	int added = 0, rc;

	for (size_t i = 0; i < b->njts; i++) {
		struct jt_rec *r = &b->jts[i];
		int si;

		if (r->tried)
			continue;
		r->tried = 1;
		si = cfg_insn_at(cfg, b->v[r->insn].addr);
		if (si < 0)
			continue;
		walk_back(cfg, (uint32_t)si, insn, next, &path.n);
		rc = cfg_jt_resolve(b->img, &path, b->start, b->start + b->len, &r->jt);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			continue;
		r->ok = 1;
		mark_table(b, &r->jt);
		for (size_t k = 0; k < r->jt.count; k++)
			if (push_work(b, r->jt.targets[k]) < 0)
				return -ENOMEM;
		added = 1;
	}
	return added;
}

/*
 * The jumps left unresolved that are tail calls through a pointer (see
 * tailcall.c): stack as at entry, and no table into this procedure.  1 when
 * any was found (the CFG must then be assembled again).
 */
static int find_tailcalls(struct builder *b, const struct cfg *cfg)
{
	const struct cfg_insn *insn[JT_PATH_MAX];
	uint64_t next[JT_PATH_MAX];
	struct cfg_jt_path path = { insn, next, 0, cfg };
	int64_t *sp = NULL, *fp = NULL, d;
	int found = 0, rc = 0;

	for (size_t i = 0; i < b->njts; i++) {
		struct jt_rec *r = &b->jts[i];
		int si;

		if (r->ok || r->tail)
			continue;
		si = cfg_insn_at(cfg, b->v[r->insn].addr);
		if (si < 0)
			continue;
		if (!sp) {
			sp = malloc(cfg->nblocks * sizeof(*sp));
			fp = malloc(cfg->nblocks * sizeof(*fp));
			if (!sp || !fp || cfg_sp_at_blocks(cfg, sp, fp) < 0) {
				rc = -ENOMEM;
				break;
			}
		}
		if (cfg_sp_before(cfg, sp, fp, (uint32_t)si, &d) < 0 || d != 0)
			continue;
		walk_back(cfg, (uint32_t)si, insn, next, &path.n);
		if (cfg_jt_is_table(b->img, &path, b->start, b->start + b->len))
			continue;
		r->tail = 1;
		found = 1;
	}
	free(sp);
	free(fp);
	return rc < 0 ? rc : found;
}

/*
 * Padding in the gaps becomes data; the first other byte of a gap, a root,
 * traversed at once.  One pass: the traversal only settles bytes, so when
 * the pass moves on past a root every byte before it is settled, and no byte
 * is a root twice (the old way, one root per gap and round, took a round per
 * run of code in a gap of data, and never ended on a root whose instruction
 * overlapped code decoded before).  1 when code was found.
 */
static int sweep_gaps(struct builder *b)
{
	int added = 0, rc;

	for (size_t o = 0; o < b->len && !b->truncated; o++) {
		size_t e = o, pad;

		if (b->at[o] >= 0) {		/* step over the instruction */
			o += b->brief[b->at[o]].size - 1;
			continue;
		}
		if (b->at[o] != AT_NONE)
			continue;
		while (e < b->len && b->at[e] == AT_NONE)
			e++;
		pad = cfg_pad_len(b->dec, b->bytes + o, e - o, b->start + o);
		if (pad > e - o)
			pad = e - o;
		for (size_t k = o; k < o + pad; k++)
			b->at[k] = AT_PAD;
		o += pad;
		if (o == e) {
			o--;
			continue;
		}
		b->root[o] = 1;
		b->gap_code = 1;
		added = 1;
		if (push_work(b, b->start + o) < 0)
			return -ENOMEM;
		rc = traverse(b);
		if (rc < 0)
			return rc;
		if (b->at[o] == AT_NONE)	/* only when the budget ran out */
			b->root[o] = 0;
	}
	return added;
}

/* What the budget left undecoded is said so, not taken for padding. */
static void mark_skipped(struct builder *b)
{
	for (size_t o = 0; o < b->len; o++)
		if (b->at[o] == AT_NONE)
			b->at[o] = AT_SKIP;
}

/* Blocks that cannot reach the exit: infinite loops (CFG_B_DEAD).  stack and
 * seen have a place per block. */
static void mark_dead(struct cfg *cfg, uint32_t *stack, uint8_t *seen)
{
	size_t sp = 0;

	memset(seen, 0, cfg->nblocks);
	stack[sp++] = cfg->exit;
	seen[cfg->exit] = 1;
	while (sp) {
		const struct cfg_block *bl = &cfg->blocks[stack[--sp]];

		for (uint32_t k = 0; k < bl->npred; k++) {
			uint32_t f = cfg->edges[bl->pred[k]].from;

			if (!seen[f]) {
				seen[f] = 1;
				stack[sp++] = f;
			}
		}
	}
	for (size_t i = 0; i < cfg->nblocks; i++)
		if (!seen[i])
			cfg->blocks[i].flags |= CFG_B_DEAD;
}

static void own_classes(struct cfg *cfg, int *node_class, int *edge_class)
{
	int k = 0;

	for (size_t i = 0; i < cfg->nblocks; i++)
		node_class[i] = k++;
	for (size_t e = 0; e < cfg->nedges; e++)
		edge_class[e] = k++;
	cfg->nclasses = k;
}

/*
 * Classes, loops, loop depths, dead blocks (DCPI paper sec. 6.1.2).  Working
 * memory from scr[0] (the arrays here) and scr[1] (the algorithms').
 */
static int analyze(struct cfg *cfg, struct cfg_scratch *scr, struct dcpi_err *err)
{
	size_t nb = cfg->nblocks, ne = cfg->nedges;
	uint32_t *from, *to, *stack;
	int *ncls, *ecls, *nloop, *ndepth;
	uint8_t *seen;
	struct cfg_arena a = { 0 };
	struct cfg_graph g;
	int rc = -ENOMEM;

	for (int pass = 0; pass < 2; pass++) {	/* count, then carve (graph.h) */
		if (pass && cfg_arena_start(&a, &scr[0]) < 0)
			return dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		from = cfg_arena_take(&a, ne, sizeof(*from));
		to = cfg_arena_take(&a, ne, sizeof(*to));
		ecls = cfg_arena_take(&a, ne, sizeof(*ecls));
		ncls = cfg_arena_take(&a, nb, sizeof(*ncls));
		nloop = cfg_arena_take(&a, nb, sizeof(*nloop));
		ndepth = cfg_arena_take(&a, nb, sizeof(*ndepth));
		stack = cfg_arena_take(&a, nb, sizeof(*stack));
		seen = cfg_arena_take(&a, nb, 1);
	}
	if (a.failed) {
		cfg_arena_end(&a);
		return dcpi_errf(err, rc, "%s: out of memory", cfg->name);
	}
	for (size_t e = 0; e < ne; e++) {
		from[e] = cfg->edges[e].from;
		to[e] = cfg->edges[e].to;
	}
	g = (struct cfg_graph){ (uint32_t)nb, (uint32_t)ne, from, to, cfg->entry, cfg->exit };
	mark_dead(cfg, stack, seen);
	if (cfg->missing_edges || cfg->entry == cfg->exit) {
		own_classes(cfg, ncls, ecls);
	} else {
		rc = cfg_cycle_equiv_with(&g, ncls, ecls, &cfg->nclasses, &scr[1], err);
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < nb; i++)
		cfg->blocks[i].cls = ncls[i];
	for (size_t e = 0; e < ne; e++)
		cfg->edges[e].cls = ecls[e];
	rc = cfg_find_loops_with(&g, &cfg->loops, &cfg->nloops, nloop, ndepth, &scr[1],
				 err);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < nb; i++) {
		cfg->blocks[i].loop = nloop[i];
		cfg->blocks[i].loop_depth = ndepth[i];
	}
	for (size_t l = 0; l < cfg->nloops; l++) {
		const struct cfg_loop *lp = &cfg->loops[l];

		if (lp->header < nb)
			cfg->blocks[lp->header].flags |= CFG_B_LOOP_HEAD;
		for (uint32_t k = 0; lp->irreducible && k < lp->nblocks; k++)
			if (lp->blocks[k] < nb)
				cfg->blocks[lp->blocks[k]].flags |= CFG_B_IRREDUCIBLE;
	}
out:
	cfg_arena_end(&a);
	return rc;
}

static void builder_free(struct builder *b)
{
	if (b->own_dec)
		cfg_dec_close(b->dec);
	free(b->at);
	free(b->root);
	free(b->v);
	free(b->brief);
	free(b->map);
	free(b->jtx);
	free(b->work);
	for (size_t i = 0; i < b->njts; i++)
		free(b->jts[i].jt.targets);
	free(b->jts);
}

/*
 * Traverse, assemble, resolve tables, sweep gaps, until nothing new turns up
 * (or the budget or the round cap ends it: missing edges).
 */
static int discover(struct builder *b, struct cfg_priv *p)
{
	int rc, rounds = 0;

	rc = push_work(b, b->start);
	while (rc == 0) {
		rc = traverse(b);
		if (rc == 0 && (b->truncated || ++rounds > ROUNDS_MAX)) {
			b->truncated = 1;
			b->nwork = 0;
			mark_skipped(b);
		}
		if (rc == 0)
			rc = assemble(b, p);
		if (rc == 0 && b->truncated)
			break;
		if (rc == 0)
			rc = resolve_tables(b, &p->pub);
		if (rc == 0)
			rc = sweep_gaps(b);
		if (rc > 0) {
			rc = 0;
			continue;
		}
		if (rc == 0)
			rc = find_tailcalls(b, &p->pub);
		if (rc > 0)
			rc = assemble(b, p);
		break;
	}
	return rc;
}

static int build_core(const struct image *img, const uint8_t *bytes, size_t len,
		      uint64_t addr, const char *name, int depth, int graph, struct cfg_dec *dec,
		      struct cfg_all *all, int *nr_proved, struct cfg **out,
		      struct dcpi_err *err)
{
	struct builder b = { .img = img, .bytes = bytes, .len = len, .start = addr,
			     .depth = depth, .dec = dec, .all = all };
	struct cfg_priv *p;
	int rc, proved;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
	p->pub.name = strdup(name ? name : "?");
	p->pub.start = addr;
	p->pub.end = addr + len;
	b.at = malloc((len ? len : 1) * sizeof(*b.at));
	b.root = calloc(len ? len : 1, 1);
	if (!p->pub.name || !b.at || !b.root) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
		goto fail;
	}
	_Static_assert(AT_NONE == -1, "at[] is set to AT_NONE byte by byte");
	memset(b.at, 0xff, (len ? len : 1) * sizeof(*b.at));
	if (!b.dec) {
		rc = cfg_dec_open(&b.dec, err);
		if (rc < 0)
			goto fail;
		b.own_dec = 1;
	}
	b.calls0 = cfg_dec_count(b.dec);
	/* about one instruction per 4 bytes: few reallocs of the big arrays */
	b.cap = b.capnr = len / 4 + 16;
	b.v = malloc(b.cap * sizeof(*b.v));
	b.brief = malloc(b.capnr * sizeof(*b.brief));
	if (!b.v || !b.brief) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
		goto fail;
	}
	b.budget = len < (SIZE_MAX - DECODES_MIN) / DECODES_PER_BYTE ?
		   DECODES_PER_BYTE * len + DECODES_MIN : SIZE_MAX;
	rc = discover(&b, p);
	if (rc < 0) {
		p->pub.insns = NULL;	/* b.v's, freed with it */
		dcpi_errf(err, rc, "%s: out of memory building the CFG", name);
		goto fail;
	}
	/* the instructions are the CFG's now, trimmed to size */
	p->pub.insns = b.n < b.cap ? realloc(b.v, (b.n ? b.n : 1) * sizeof(*b.v)) : b.v;
	if (!p->pub.insns)
		p->pub.insns = b.v;
	b.v = NULL;
	proved = b.nr_proved;
	builder_free(&b);	/* before the analysis: with it, the peak of memory */
	if (graph) {
		struct cfg_scratch own[2] = { { NULL, 0 }, { NULL, 0 } };
		struct cfg_scratch *scr = all ? cfg_all_scratch(all) : own;

		rc = analyze(&p->pub, scr, err);
		for (int i = 0; i < 2; i++)
			cfg_scratch_trim(&scr[i], all ? CFG_SCRATCH_KEEP : 0);
		if (rc < 0) {
			cfg_free(&p->pub);
			return rc;
		}
	}
	if (nr_proved)
		*nr_proved = proved;
	*out = &p->pub;
	return 0;
fail:
	builder_free(&b);
	cfg_free(&p->pub);
	return rc;
}

const uint8_t *cfg_proc_bytes(const struct image *img, const struct img_proc *proc,
			      size_t *len)
{
	const uint8_t *bytes;
	size_t avail = 0;

	bytes = img_bytes(img, proc->addr, &avail);
	if (!bytes || !avail)
		return NULL;
	*len = avail > proc->size ? (size_t)proc->size : avail;
	return bytes;
}

int cfg_build_with(const struct image *img, const struct img_proc *proc, int depth,
		   int graph, struct cfg_dec *dec, struct cfg_all *all, int *nr_proved,
		   struct cfg **out, struct dcpi_err *err)
{
	const uint8_t *bytes;
	size_t len = 0;

	*out = NULL;
	bytes = cfg_proc_bytes(img, proc, &len);
	if (!bytes)
		return dcpi_errf(err, -ENOENT, "%s: 0x%llx: not in the file", proc->name,
				 (unsigned long long)proc->addr);
	return build_core(img, bytes, len, proc->addr, proc->name, depth, graph, dec, all,
			  nr_proved, out, err);
}

int cfg_build_depth(const struct image *img, const struct img_proc *proc, int depth,
		    int graph, struct cfg **out, struct dcpi_err *err)
{
	return cfg_build_with(img, proc, depth, graph, NULL, NULL, NULL, out, err);
}

/*
 * Lazy: only proc's bytes are decoded.  The one exception is the noreturn
 * proof of its direct callees (cfg_noreturn_at), which builds each callee's
 * blocks once, without classes or loops, at depth 0: a callee's own callees
 * are judged by name only, so the work is bounded by the number of distinct
 * direct callees, and cached per image.  Jump tables and the tail-call test
 * only read table words and look up addresses (img_read, img_proc_at).
 * Measured on cc1 (20 MB of code): `dcpi cfg _cpp_parse_expr --json` takes
 * 0.17 s, of which 0.11 s is opening the image.
 */
int cfg_build(const struct image *img, const struct img_proc *proc, struct cfg **out,
	      struct dcpi_err *err)
{
	return cfg_build_depth(img, proc, 1, 1, out, err);
}

int cfg_build_bytes(const uint8_t *bytes, size_t len, uint64_t addr, const char *name,
		    struct cfg **out, struct dcpi_err *err)
{
	return build_core(NULL, bytes, len, addr, name, 0, 1, NULL, NULL, NULL, out, err);
}

void cfg_free(struct cfg *cfg)
{
	struct cfg_priv *p = (struct cfg_priv *)cfg;

	if (!cfg)
		return;
	free_parts(p);
	free(cfg->name);
	free(p);
}

int cfg_block_at(const struct cfg *cfg, uint64_t addr)
{
	size_t nb = cfg->nblocks ? cfg->nblocks - 1 : 0;	/* not the exit */
	size_t lo = dcpi_upper_bound(cfg->blocks, nb, sizeof(*cfg->blocks),
				     offsetof(struct cfg_block, end), addr);

	if (lo + 1 < cfg->nblocks && addr >= cfg->blocks[lo].start && addr < cfg->blocks[lo].end)
		return (int)lo;
	return -1;
}

int cfg_self_loop(const struct cfg *cfg, size_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];

	for (uint32_t k = 0; k < bl->nsucc; k++)
		if (cfg->edges[bl->succ[k]].to == b)
			return 1;
	return 0;
}

int cfg_insn_at(const struct cfg *cfg, uint64_t addr)
{
	size_t lo = dcpi_lower_bound(cfg->insns, cfg->ninsns, sizeof(*cfg->insns),
				     offsetof(struct cfg_insn, addr), addr);

	return lo < cfg->ninsns && cfg->insns[lo].addr == addr ? (int)lo : -1;
}

const char *cfg_edge_kind_name(enum cfg_edge_kind kind)
{
	static const char *const names[] = {
		[CFG_E_FALLTHROUGH] = "fallthrough",
		[CFG_E_TAKEN] = "taken",
		[CFG_E_NOT_TAKEN] = "not-taken",
		[CFG_E_JUMP] = "jump",
		[CFG_E_TABLE] = "table",
		[CFG_E_CALL_RETURN] = "call-return",
		[CFG_E_RETURN] = "return",
		[CFG_E_TAILCALL] = "tailcall",
		[CFG_E_EXIT_ENTRY] = "exit-entry",
	};

	if ((unsigned)kind < sizeof(names) / sizeof(names[0]) && names[kind])
		return names[kind];
	return "?";
}
