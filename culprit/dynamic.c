/*
 * dynamic.c - culprits of dynamic stalls, guilty until proven innocent
 * (DCPI paper sec. 6.3; docs/culprits.md).
 *
 * For every instruction with dynamic stall cycles we walk back along what
 * executed just before it: its own block, then the tails of the predecessors
 * that carry a real share of its executions (the paper ignores rare edges).
 * That trail, W instructions long, is where the waiting instruction is: on an
 * out-of-order core the instruction at the head of the reorder buffer when
 * the sample is taken is the one that waits, and the sample lands `skid`
 * instructions after it (docs/estimate.md measured one to three here).
 *
 * Each cause then keeps its suspects unless ruled out:
 * - D-cache/DTLB: a load within the skid of the stall, or one whose result
 *   the stalled instruction (or one within its skid) reads, directly or
 *   through a short chain of register writes;
 * - store forwarding: such a load whose address has the base and index of
 *   an earlier store in the trail (or in the loop) with another size or an
 *   overlapping other displacement: the store is the guilty one;
 * - mispredict: the stall is within skid + 1 instructions of its block's
 *   start, and a predecessor ends in a conditional or indirect branch whose
 *   direction is uncertain (probability between 2% and 98%, where edge
 *   probabilities are known);
 * - I-cache / ITLB: an instruction within the skid starts a new 64-byte
 *   line (4 KB page) relative to the instruction executed before it;
 * - long latency: a divide or square root feeds it or is within the skid;
 * - synchronization: a lock-prefixed instruction, fence or pause within
 *   the skid.
 * Event counts clear a cause whose suspects have none, and bound the rest
 * by events x cost.  What no cause keeps is unexplained.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/culprit.h"

#define TRAIL_MAX 24		/* instructions looked back */
#define CHAIN_DEPTH 3		/* register producers followed */
#define RARE_EDGE 0.1		/* edges below this share of the stall's executions */
#define SHADOW 8		/* instructions after a mispredict that wait for it */
#define LINE 64
#define PAGE 4096

static const char *const cause_names[CUL_NCAUSES + 1] = {
	[CUL_DCACHE] = "D-cache",
	[CUL_ICACHE] = "I-cache",
	[CUL_ITLB] = "ITLB",
	[CUL_MISPREDICT] = "branch mispredict",
	[CUL_STORE_FWD] = "store forwarding",
	[CUL_LONG_LAT] = "long-latency unit",
	[CUL_SYNC] = "synchronization",
	[CUL_UNEXPLAINED] = "unexplained",
};

const char *cul_cause_name(enum cul_cause c)
{
	return (unsigned)c <= CUL_UNEXPLAINED ? cause_names[c] : "?";
}

void cul_input_default(struct cul_input *in)
{
	memset(in, 0, sizeof(*in));
	in->skid = 2;
	in->event_cost[CUL_EV_DMISS] = 1000;	/* a fill from DRAM, page walk included */
	in->event_cost[CUL_EV_IMISS] = 1000;
	in->event_cost[CUL_EV_MISPREDICT] = 30;	/* a flush and refetch (19 measured here) */
}

/* How far a cause's own evidence puts it up the list, before distance. */
static const double cause_weight[CUL_NCAUSES] = {
	[CUL_STORE_FWD] = 6,	/* the most specific pattern: when it is there, it is it */
	[CUL_DCACHE] = 5,
	[CUL_MISPREDICT] = 4,
	[CUL_LONG_LAT] = 4,
	[CUL_SYNC] = 3,
	[CUL_ICACHE] = 1,
	[CUL_ITLB] = 0.5,
};

struct trail {
	int insn[TRAIL_MAX];	/* insn[0]: the stalled one, then back in time */
	int n;
	int head_at;		/* position of the stalled block's first insn */
};

struct ctx {
	const struct cul_input *in;
	const struct cfg *cfg;
	int *blk;		/* block of each instruction */
};

static int is_load(const struct cfg_insn *x)
{
	return (x->flags & CFG_I_LOAD) && !(x->flags & (CFG_I_STACK | CFG_I_PREFETCH)) &&
	       !(x->flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET));
}

static int is_store(const struct cfg_insn *x)
{
	return (x->flags & CFG_I_STORE) && !(x->flags & CFG_I_STACK) && x->nmem;
}

static int is_long_lat(const struct cfg_insn *x)
{
	return (x->flags & CFG_I_DIV) || strstr(x->mnemonic, "sqrt") != NULL;
}

static int is_sync(const struct cfg_insn *x)
{
	return (x->flags & CFG_I_LOCK) || !strcmp(x->mnemonic, "mfence") ||
	       !strcmp(x->mnemonic, "lfence") || !strcmp(x->mnemonic, "sfence") ||
	       !strcmp(x->mnemonic, "pause") || !strncmp(x->mnemonic, "cpuid", 5);
}

/* The predecessor block through which most of block b's executions arrive,
 * and whether any other carries a real share of them. */
static int main_pred(const struct ctx *c, uint32_t b)
{
	const struct cfg_block *bl = &c->cfg->blocks[b];
	double best = -1;
	int who = -1;

	for (uint32_t k = 0; k < bl->npred; k++) {
		uint32_t e = bl->pred[k];
		const struct cfg_edge *ed = &c->cfg->edges[e];
		double w = c->in->edge_exec ? c->in->edge_exec[e] : 1;

		if (ed->kind == CFG_E_EXIT_ENTRY || ed->from == c->cfg->exit)
			continue;
		if (c->cfg->blocks[ed->from].n == 0)
			continue;
		if (w > best) {
			best = w;
			who = (int)ed->from;
		}
	}
	return who;
}

/* What ran just before instruction i: i itself, back to its block's start,
 * then the likeliest predecessor's tail, and so on. */
static void build_trail(const struct ctx *c, uint32_t i, struct trail *t)
{
	int b = c->blk[i];
	int at = (int)i;
	int hops = 0;

	t->n = 0;
	t->head_at = -1;
	while (t->n < TRAIL_MAX && b >= 0) {
		const struct cfg_block *bl = &c->cfg->blocks[b];

		t->insn[t->n++] = at;
		if ((uint32_t)at == bl->first) {
			if (t->head_at < 0)
				t->head_at = t->n - 1;
			if (++hops > 4)
				break;
			b = main_pred(c, (uint32_t)b);
			if (b < 0)
				break;
			bl = &c->cfg->blocks[b];
			if (!bl->n)
				break;
			at = (int)(bl->first + bl->n - 1);
		} else {
			at--;
		}
	}
}

/* The instructions in trail positions [from, n) whose results position p
 * reads, following register producers CHAIN_DEPTH deep: marks pos[]. */
static void producers(const struct ctx *c, const struct trail *t, int p, int depth,
		      unsigned char *feeds)
{
	uint64_t want = c->cfg->insns[t->insn[p]].regs_read &
			~(CFG_RBIT(CFG_R_RIP) | CFG_RBIT(CFG_R_RSP));

	for (int q = p + 1; q < t->n && want; q++) {
		const struct cfg_insn *x = &c->cfg->insns[t->insn[q]];
		uint64_t hit = x->regs_written & want;

		if (!hit)
			continue;
		want &= ~hit;
		if (!feeds[q]) {
			feeds[q] = (unsigned char)(depth + 1);
			if (depth + 1 < CHAIN_DEPTH && !is_load(x))
				producers(c, t, q, depth + 1, feeds);
		}
	}
}

/* An earlier store whose address shares the load's base and index, with a
 * size or displacement that keeps the load from taking its data whole. */
static int fwd_conflict(const struct cfg_insn *ld, const struct cfg_insn *st)
{
	const struct cfg_mem *a = &ld->mem, *b = &st->mem;
	int64_t lo, hi;

	if (a->rip_relative != b->rip_relative || a->base != b->base || a->index != b->index ||
	    a->scale != b->scale || a->segment != b->segment)
		return 0;
	if (!a->size || !b->size)
		return 0;
	lo = a->disp > b->disp ? a->disp : b->disp;
	hi = a->disp + a->size < b->disp + b->size ? a->disp + a->size : b->disp + b->size;
	if (hi <= lo)
		return 0;	/* disjoint */
	/* forwarding works when the load lies inside the store */
	return !(a->disp >= b->disp && a->disp + a->size <= b->disp + b->size);
}

/* An induction step r += *d (add, sub, inc, dec of a constant; lea c(r), r):
 * 1 and the step, 0 for any other write of r. */
static int steps(const struct cfg_insn *y, unsigned r, int64_t *d)
{
	const char *mn = y->mnemonic;
	int neg = !strncmp(mn, "sub", 3) || !strncmp(mn, "dec", 3);

	if (!strncmp(mn, "inc", 3) || !strncmp(mn, "dec", 3)) {
		*d = neg ? -1 : 1;
		return 1;
	}
	if ((!strncmp(mn, "add", 3) || neg) && y->form == CFG_F_REG &&
	    !(y->regs_read & ~(CFG_RBIT(r) | CFG_RBIT(CFG_R_RIP) | CFG_RBIT(CFG_R_FLAGS)))) {
		/* no register read but r: an immediate */
		*d = neg ? -(int64_t)y->imm : (int64_t)y->imm;
		return 1;
	}
	if ((y->flags & CFG_I_LEA) && y->mem.base == r && y->mem.index == CFG_REG_NONE &&
	    !y->mem.rip_relative) {
		*d = y->mem.disp;
		return 1;
	}
	return 0;
}

/* The address registers' step per iteration of the innermost loop around
 * insn, in bytes; 0 when some write of them is not a constant step, or runs
 * other than once per iteration (not in the header's equivalence class). */
static int64_t loop_stride(const struct cfg *cfg, const int *blk, uint32_t insn)
{
	const struct cfg_insn *x = &cfg->insns[insn];
	int b = blk[insn];
	const struct cfg_loop *l;
	int64_t stride = 0;
	int seen = 0;

	if (b < 0 || cfg->blocks[b].loop < 0 || !x->nmem || x->mem.rip_relative)
		return 0;
	l = &cfg->loops[cfg->blocks[b].loop];
	for (uint32_t k = 0; k < l->nblocks; k++) {
		const struct cfg_block *bl = &cfg->blocks[l->blocks[k]];

		for (uint32_t j = bl->first; j < bl->first + bl->n; j++) {
			const struct cfg_insn *y = &cfg->insns[j];
			int64_t d;

			for (int which = 0; which < 2; which++) {
				unsigned r = which ? x->mem.index : x->mem.base;
				int64_t f = which ? x->mem.scale : 1;

				if (r >= CFG_NREGS || !(y->regs_written & CFG_RBIT(r)))
					continue;
				if (!steps(y, r, &d) || bl->cls != cfg->blocks[l->header].cls)
					return 0;
				stride += d * f;
				seen = 1;
			}
		}
	}
	return seen ? stride : 0;
}

int cul_stride(const struct cfg *cfg, uint32_t insn, int64_t *stride)
{
	int *blk;

	*stride = 0;
	if (insn >= cfg->ninsns)
		return -EINVAL;
	blk = malloc((cfg->ninsns ? cfg->ninsns : 1) * sizeof(*blk));
	if (!blk)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->ninsns; i++)
		blk[i] = -1;
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++)
			blk[cfg->blocks[b].first + j] = (int)b;
	*stride = loop_stride(cfg, blk, insn);
	free(blk);
	return 0;
}

/* A stride within a page is what the hardware prefetchers follow; one of
 * 2 KB or more crosses pages, where they stop. */
#define PREFETCHED_STRIDE 2048

/*
 * How likely a load misses, from its address alone: the stack and
 * rip-relative data (locals, spills, constants, globals) stay in the cache,
 * a stride the loop steps through is prefetched (unless it crosses pages), a
 * pointer just loaded from memory (a chase: the next node of a list or tree)
 * is where misses are.  1 for anything else.
 */
static double miss_likelihood(const struct ctx *c, const struct trail *t, int q)
{
	const struct cfg_insn *x = &c->cfg->insns[t->insn[q]];
	uint64_t regs = 0;
	int64_t stride;

	if (x->mem.rip_relative || x->mem.base == CFG_R_RSP ||
	    (x->mem.base == CFG_R_RBP && x->mem.index == CFG_REG_NONE))
		return 0.1;
	if (x->mem.base < CFG_NREGS)
		regs |= CFG_RBIT(x->mem.base);
	if (x->mem.index < CFG_NREGS)
		regs |= CFG_RBIT(x->mem.index);
	stride = loop_stride(c->cfg, c->blk, (uint32_t)t->insn[q]);
	if (stride)
		return llabs(stride) < PREFETCHED_STRIDE ? 0.3 : 1.5;
	for (int p = q + 1; p < t->n && regs; p++) {
		const struct cfg_insn *y = &c->cfg->insns[t->insn[p]];

		if (!(y->regs_written & regs))
			continue;
		if (is_load(y))
			return 2;
		regs &= ~y->regs_written;
	}
	return 1;
}

static int find_store_for(const struct ctx *c, const struct trail *t, int lq)
{
	const struct cfg_insn *ld = &c->cfg->insns[t->insn[lq]];
	int b;

	for (int q = lq + 1; q < t->n; q++) {
		const struct cfg_insn *x = &c->cfg->insns[t->insn[q]];

		if (is_store(x) && fwd_conflict(ld, x))
			return t->insn[q];
	}
	/* in a loop, last iteration's store comes before this load too */
	b = c->blk[t->insn[lq]];
	if (b >= 0 && c->cfg->blocks[b].loop >= 0) {
		const struct cfg_loop *l = &c->cfg->loops[c->cfg->blocks[b].loop];

		for (uint32_t k = 0; k < l->nblocks; k++) {
			const struct cfg_block *bl = &c->cfg->blocks[l->blocks[k]];

			for (uint32_t j = bl->first; j < bl->first + bl->n; j++)
				if (is_store(&c->cfg->insns[j]) &&
				    fwd_conflict(ld, &c->cfg->insns[j]))
					return (int)j;
		}
	}
	return -1;
}

static void add_w(struct cul_stall *s, enum cul_cause cause, int insn, int dist, double like)
{
	struct cul_suspect *u;

	for (size_t k = 0; k < s->nsuspects; k++)
		if (s->sus[k].cause == cause && s->sus[k].insn == insn)
			return;
	if (s->nsuspects == CUL_MAX_SUSPECTS)
		return;
	u = &s->sus[s->nsuspects++];
	u->cause = cause;
	u->insn = insn;
	u->distance = dist;
	u->bound = -1;
	u->score = cause_weight[cause] * like / (1.0 + dist);
}

static void add(struct cul_stall *s, enum cul_cause cause, int insn, int dist)
{
	add_w(s, cause, insn, dist, 1.0);
}

/* How likely the branch ending pred goes wrong on its way to b: 0 when it
 * is certain (below 2% or above 98%), else 2 min(p, 1 - p) (a random 50%
 * branch 1; unknown probabilities count as that). */
static double uncertain_branch(const struct ctx *c, uint32_t pred, uint32_t b)
{
	const struct cfg_block *pb = &c->cfg->blocks[pred];
	const struct cfg_insn *last;

	if (!pb->n)
		return 0;
	last = &c->cfg->insns[pb->first + pb->n - 1];
	if (!(last->flags & (CFG_I_COND | CFG_I_INDIRECT)))
		return 0;
	if (!(last->flags & (CFG_I_BRANCH | CFG_I_CALL)))
		return 0;
	if (!c->in->edge_prob)
		return 1;
	for (uint32_t k = 0; k < pb->nsucc; k++) {
		uint32_t e = pb->succ[k];

		if (c->cfg->edges[e].to == b) {
			double p = c->in->edge_prob[e];

			return p > 0.02 && p < 0.98 ? 2 * (p < 1 - p ? p : 1 - p) : 0;
		}
	}
	return 1;
}

/* The likelihood of a load found off the trail (no trail to look along for
 * a chase: its own block before it stands in). */
static double miss_likelihood_at(const struct ctx *c, uint32_t j)
{
	struct trail t;

	build_trail(c, j, &t);
	return miss_likelihood(c, &t, 0);
}

#define REACH_BUDGET 256	/* instructions visited per search */
#define REACH_MAX 48		/* instructions back along any path */

struct reach {
	struct reach_item {
		uint32_t insn;
		uint64_t want;
		int dist, depth;
	} q[REACH_BUDGET];
	size_t head, tail;
};

/* Queue the instructions executed just before at: the one before it in its
 * block, or the last of each predecessor block. */
static void push_preds(const struct ctx *c, struct reach *r, uint32_t at, uint64_t want,
		       int dist, int depth)
{
	const struct cfg *cfg = c->cfg;
	const struct cfg_block *b = &cfg->blocks[c->blk[at]];

	if (at > b->first) {
		if (r->tail < REACH_BUDGET)
			r->q[r->tail++] = (struct reach_item){ at - 1, want, dist + 1, depth };
		return;
	}
	for (uint32_t k = 0; k < b->npred && r->tail < REACH_BUDGET; k++) {
		const struct cfg_edge *e = &cfg->edges[b->pred[k]];
		const struct cfg_block *p = &cfg->blocks[e->from];

		if (e->kind == CFG_E_EXIT_ENTRY || !p->n)
			continue;
		r->q[r->tail++] = (struct reach_item){ p->first + p->n - 1, want, dist + 1, depth };
	}
}

static uint64_t data_regs(const struct cfg_insn *x)
{
	return x->regs_read & ~(CFG_RBIT(CFG_R_RIP) | CFG_RBIT(CFG_R_RSP) | CFG_RBIT(CFG_R_FLAGS));
}

/*
 * Loads whose results reach instruction i's reads, along every path into
 * it (not only the likeliest one the trail follows: an inner loop's first
 * iteration reads what the outer loop loaded, through the inner loop's
 * entry, while the trail goes round its back edge).  Backward breadth-first
 * over the CFG, each path stopping at the first write of each register;
 * non-load writers pass their own reads on, CHAIN_DEPTH deep.
 */
static void reach_loads(const struct ctx *c, uint32_t i, int base, struct cul_stall *s)
{
	const struct cfg *cfg = c->cfg;
	uint64_t *seen = calloc(cfg->ninsns + 1, sizeof(*seen));
	struct reach *r = malloc(sizeof(*r));

	if (!seen || !r)
		goto out;
	r->head = r->tail = 0;
	if (data_regs(&cfg->insns[i]))
		push_preds(c, r, i, data_regs(&cfg->insns[i]), base, 0);
	while (r->head < r->tail) {
		struct reach_item it = r->q[r->head++];
		const struct cfg_insn *x = &cfg->insns[it.insn];
		uint64_t want = it.want & ~seen[it.insn], hit;

		if (!want || it.dist > REACH_MAX)
			continue;
		seen[it.insn] |= want;
		hit = x->regs_written & want;
		if (hit) {
			if (is_load(x))
				add_w(s, CUL_DCACHE, (int)it.insn, it.dist,
				      miss_likelihood_at(c, it.insn));
			else if (is_long_lat(x))
				add(s, CUL_LONG_LAT, (int)it.insn, it.dist);
			else if (it.depth + 1 < CHAIN_DEPTH && data_regs(x))
				push_preds(c, r, it.insn, data_regs(x), it.dist, it.depth + 1);
			want &= ~hit;
		}
		if (want)
			push_preds(c, r, it.insn, want, it.dist, it.depth);
	}
out:
	free(r);
	free(seen);
}

static void suspects(const struct ctx *c, uint32_t i, struct cul_stall *s)
{
	const struct cfg *cfg = c->cfg;
	int skid = c->in->skid;
	unsigned char feeds[TRAIL_MAX];
	struct trail t;

	build_trail(c, i, &t);
	memset(feeds, 0, sizeof(feeds));
	/* the waiting instruction is within the skid; what feeds any of them */
	for (int p = 0; p <= skid && p < t.n; p++)
		producers(c, &t, p, 0, feeds);

	for (int q = 0; q < t.n; q++) {
		const struct cfg_insn *x = &cfg->insns[t.insn[q]];
		int near = q <= skid;

		if (!near && !feeds[q])
			continue;
		if (is_load(x)) {
			int st = find_store_for(c, &t, q);

			if (st >= 0)
				add(s, CUL_STORE_FWD, st, q);
			add_w(s, CUL_DCACHE, t.insn[q], q + (feeds[q] ? 0 : 1),
			      miss_likelihood(c, &t, q));
		}
		if (is_long_lat(x))
			add(s, CUL_LONG_LAT, t.insn[q], q);
		if (near && is_sync(x))
			add(s, CUL_SYNC, t.insn[q], q);
	}

	/* loads reaching the skid's reads along any path, not only the trail */
	for (int p = 0; p <= skid && p < t.n; p++)
		reach_loads(c, (uint32_t)t.insn[p], p, s);

	/* fetch: a new line or page among the last skid + 1 instructions */
	for (int q = 0; q <= skid && q + 1 < t.n; q++) {
		uint64_t a = cfg->insns[t.insn[q]].addr, bfr = cfg->insns[t.insn[q + 1]].addr;

		if (a / PAGE != bfr / PAGE)
			add(s, CUL_ITLB, t.insn[q], q);
		if (a / LINE != bfr / LINE)
			add(s, CUL_ICACHE, t.insn[q], q);
	}

	/* mispredict, in the flush's shadow: the instructions fetched after a
	 * mispredicted branch arrive late, and whichever of the first ones is
	 * oldest waits for them; so an uncertain branch up to SHADOW
	 * instructions back along the trail is a suspect */
	for (int q = 0; q + 1 < t.n && q <= skid + SHADOW; q++) {
		int b = c->blk[t.insn[q]], pb = c->blk[t.insn[q + 1]];
		double like;

		if ((uint32_t)t.insn[q] != cfg->blocks[b].first || pb == b)
			continue;
		like = uncertain_branch(c, (uint32_t)pb, (uint32_t)b);
		if (like > 0)
			add_w(s, CUL_MISPREDICT, t.insn[q + 1], q + 1, like);
	}
	/* and at the start of a block some uncertain branch chose (or within
	 * the skid after it), from any predecessor that is not a rare edge */
	if (t.head_at >= 0 && t.head_at <= skid) {
		int b = c->blk[t.insn[t.head_at]];
		const struct cfg_block *bl = &cfg->blocks[b];
		double here = c->in->exec ? c->in->exec[t.insn[t.head_at]] : 0, like;

		for (uint32_t k = 0; k < bl->npred; k++) {
			uint32_t e = bl->pred[k];
			uint32_t from = cfg->edges[e].from;

			if (cfg->edges[e].kind == CFG_E_EXIT_ENTRY || !cfg->blocks[from].n)
				continue;
			if (c->in->edge_exec && here > 0 &&
			    c->in->edge_exec[e] < RARE_EDGE * here)
				continue;
			like = uncertain_branch(c, from, (uint32_t)b);
			if (like > 0)
				add_w(s, CUL_MISPREDICT,
				      (int)(cfg->blocks[from].first + cfg->blocks[from].n - 1),
				      t.head_at + 1, like);
		}
	}
}

/* Events clear a cause whose suspects saw none, and bound the others. */
static void apply_events(const struct ctx *c, struct cul_stall *s)
{
	size_t k = 0;

	for (size_t j = 0; j < s->nsuspects; j++) {
		struct cul_suspect u = s->sus[j];
		int ev = u.cause == CUL_DCACHE ? CUL_EV_DMISS :
			 u.cause == CUL_ICACHE ? CUL_EV_IMISS :
			 u.cause == CUL_MISPREDICT ? CUL_EV_MISPREDICT : -1;

		if (ev >= 0 && c->in->events[ev] && u.insn >= 0) {
			double n = c->in->events[ev][u.insn];

			if (n <= 0)
				continue;	/* innocent */
			u.bound = n * c->in->event_cost[ev];
			if (c->in->measured_cycles[ev] && c->in->measured_cycles[ev][u.insn] > 0)
				u.bound = c->in->measured_cycles[ev][u.insn];	/* measured */
			/* rank by what the events can explain of this stall */
			u.score = cause_weight[u.cause] / (1.0 + u.distance) *
				  (0.5 + fmin(1.0, u.bound / (s->cycles > 0 ? s->cycles : 1)));
		}
		s->sus[k++] = u;
	}
	s->nsuspects = k;
}

static int by_score(const void *a, const void *b)
{
	const struct cul_suspect *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->insn - y->insn;
}

static int by_cycles(const void *a, const void *b)
{
	const struct cul_stall *x = a, *y = b;

	if (x->cycles != y->cycles)
		return x->cycles < y->cycles ? 1 : -1;
	return (int)x->insn - (int)y->insn;
}

/* A stall's cycles over its causes by score (the best suspect of each),
 * each part at most its bound; the rest is unexplained. */
static void split(const struct cul_stall *s, double *share)
{
	double score[CUL_NCAUSES] = { 0 }, bound[CUL_NCAUSES], total = 0, given = 0;

	for (int c = 0; c < CUL_NCAUSES; c++)
		bound[c] = -1;
	for (size_t j = 0; j < s->nsuspects; j++) {
		const struct cul_suspect *u = &s->sus[j];

		score[u->cause] = fmax(score[u->cause], u->score);
		if (u->bound >= 0)
			bound[u->cause] = fmax(bound[u->cause], u->bound);
		else
			bound[u->cause] = INFINITY;
	}
	for (int c = 0; c < CUL_NCAUSES; c++)
		total += score[c];
	for (int c = 0; c < CUL_NCAUSES && total > 0; c++) {
		double v = s->cycles * score[c] / total;

		if (bound[c] >= 0 && v > bound[c])
			v = bound[c];
		share[c] += v;
		given += v;
	}
	share[CUL_UNEXPLAINED] += s->cycles - given;
}

static void summarize(struct cul_result *r)
{
	struct cul_summary *m = &r->sum;

	for (size_t k = 0; k < r->nstalls; k++) {
		const struct cul_stall *s = &r->stalls[k];
		double cause_max[CUL_NCAUSES] = { 0 };
		int ncauses = 0, only = -1;

		m->dynamic += s->cycles;
		for (size_t j = 0; j < s->nsuspects; j++) {
			const struct cul_suspect *u = &s->sus[j];
			double v = u->bound < 0 ? s->cycles : fmin(s->cycles, u->bound);

			if (cause_max[u->cause] == 0)
				ncauses++, only = (int)u->cause;
			cause_max[u->cause] = fmax(cause_max[u->cause], v);
		}
		for (int c = 0; c < CUL_NCAUSES; c++)
			m->max[c] += fmin(s->cycles, cause_max[c]);
		split(s, m->share);
		if (ncauses == 0) {
			m->min[CUL_UNEXPLAINED] += s->cycles;
			m->max[CUL_UNEXPLAINED] += s->cycles;
		} else if (ncauses == 1) {
			m->min[only] += cause_max[only];
			/* what its bound leaves is unexplained */
			m->min[CUL_UNEXPLAINED] += s->cycles - cause_max[only];
			m->max[CUL_UNEXPLAINED] += s->cycles - cause_max[only];
		}
		/* several causes left: each may explain it all (max), none
		 * surely does (min 0), as the paper's ranges */
	}
}

/* The measured evidence over the procedure, for the summary. */
static void measured(const struct cul_input *in, struct cul_summary *m)
{
	for (int ev = 0; ev < CUL_NEVENTS; ev++) {
		if (!in->measured_cycles[ev])
			continue;
		for (size_t i = 0; i < in->cfg->ninsns; i++) {
			m->measured_n[ev] += in->events[ev] ? in->events[ev][i] : 0;
			m->measured_cycles[ev] += in->measured_cycles[ev][i];
		}
	}
	for (size_t i = 0; in->dram_misses && i < in->cfg->ninsns; i++)
		m->measured_dram += in->dram_misses[i];
}

int cul_analyze(const struct cul_input *in, struct cul_result *out, struct dcpi_err *err)
{
	const struct cfg *cfg = in->cfg;
	struct ctx c = { .in = in, .cfg = cfg };
	double total = 0;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if (!cfg || !in->dyn)
		return dcpi_errf(err, -EINVAL, "culprits: no CFG or no stall cycles given");
	if (in->skid < 0 || in->skid > 4)
		return dcpi_errf(err, -EINVAL, "culprits: skid %d is not in 0..4", in->skid);
	c.blk = malloc((cfg->ninsns ? cfg->ninsns : 1) * sizeof(*c.blk));
	if (!c.blk)
		return dcpi_errf(err, -ENOMEM, "culprits: out of memory");
	for (size_t i = 0; i < cfg->ninsns; i++)
		c.blk[i] = -1;
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++)
			c.blk[cfg->blocks[b].first + j] = (int)b;
	for (size_t i = 0; i < cfg->ninsns; i++)
		if (in->dyn[i] > 0 && isfinite(in->dyn[i]) && c.blk[i] >= 0)
			total += in->dyn[i], n++;
	out->stalls = calloc(n ? n : 1, sizeof(*out->stalls));
	if (!out->stalls) {
		free(c.blk);
		return dcpi_errf(err, -ENOMEM, "culprits: out of memory");
	}
	for (size_t i = 0; i < cfg->ninsns; i++) {
		struct cul_stall *s;

		if (!(in->dyn[i] > 0) || !isfinite(in->dyn[i]) || c.blk[i] < 0)
			continue;
		if (in->min_dyn > 0 && in->dyn[i] < in->min_dyn * total)
			continue;
		s = &out->stalls[out->nstalls++];
		s->insn = (uint32_t)i;
		s->cycles = in->dyn[i];
		suspects(&c, (uint32_t)i, s);
		apply_events(&c, s);
		qsort(s->sus, s->nsuspects, sizeof(s->sus[0]), by_score);
	}
	qsort(out->stalls, out->nstalls, sizeof(*out->stalls), by_cycles);
	summarize(out);
	measured(in, &out->sum);
	free(c.blk);
	return 0;
}

void cul_charges(const struct cul_result *r, enum cul_cause cause, double *per_insn,
		 size_t n)
{
	for (size_t k = 0; k < r->nstalls; k++) {
		const struct cul_stall *s = &r->stalls[k];
		double total = 0, best[CUL_NCAUSES] = { 0 };

		for (size_t j = 0; j < s->nsuspects; j++)
			best[s->sus[j].cause] = fmax(best[s->sus[j].cause], s->sus[j].score);
		for (int c = 0; c < CUL_NCAUSES; c++)
			total += best[c];
		if (!(total > 0) || !(best[cause] > 0))
			continue;
		/* the cause's part goes to its best suspect */
		for (size_t j = 0; j < s->nsuspects; j++) {
			const struct cul_suspect *u = &s->sus[j];
			double v = s->cycles * best[cause] / total;

			if (u->cause != cause || u->score != best[cause] || u->insn < 0 ||
			    (size_t)u->insn >= n)
				continue;
			if (u->bound >= 0 && v > u->bound)
				v = u->bound;
			per_insn[u->insn] += v;
			break;
		}
	}
}

const struct cul_stall *cul_stall_of(const struct cul_result *r, uint32_t insn)
{
	for (size_t k = 0; k < r->nstalls; k++)
		if (r->stalls[k].insn == insn)
			return &r->stalls[k];
	return NULL;
}

void cul_result_free(struct cul_result *r)
{
	free(r->stalls);
	memset(r, 0, sizeof(*r));
}
