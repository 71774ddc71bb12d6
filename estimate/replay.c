/*
 * replay.c - loads that walk memory, replayed on this machine (docs/estimate.md
 * "Replayed loads").
 *
 * A load whose address comes from its own last value (i = next[i],
 * p = p->next) cannot issue before the previous step's data arrives: each
 * execution costs the latency of the region it walks, not the L1 hit the
 * best case assumes.  The samples such a loop receives are that latency,
 * not executions, and windows that divide them by the best case count the
 * miss as runs (a chase 120 times over).  The path bursts' value samples
 * hold the load's addresses: their spread gives the region's size and
 * their common alignment the element's.  culprit/sandbox/replay.c walks a
 * region of that size on this machine; what a step costs beyond an L1 hit is
 * added to the expected cycles the windows divide by (est_opts.expect_extra),
 * so the count comes from all the loop's samples; a chain round several
 * blocks shares the step among the blocks every iteration passes
 * (share_round).  The best case stays what it is: the culprits see the
 * measured miss as the block's dynamic stall, and name it (D-cache).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/analysis.h"
#include "dcpi/model.h"
#include "dcpi/sandbox.h"
#include "dcpi/values.h"

#define MIN_ADDRS	6		/* addresses a footprint is estimated from: the
					 * region's 90% range spans a factor of 2.2 from
					 * 6, of 2.7 from 5 (est_replay_footprint_range) */
#define L1D_BYTES	(32u << 10)	/* when sysconf does not say */
#define GAP_SPLIT	20		/* a gap this many typical gaps apart: another
					 * region (another process's addresses) */
#define STREAM_MIN	8		/* strides seen before a load is said to stream */
#define STREAM_SHARE	0.9		/* the top stride's share: an invariant value
					 * (docs/values.md) */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

#define GPRS 0xffffull	/* rax .. r15: the registers an address is made of */

/* The block of instruction i, -1 when none (padding). */
static int block_of(const struct cfg *cfg, uint32_t i)
{
	return cfg_block_at(cfg, cfg->insns[i].addr);
}

#define MAX_LOOP_BLOCKS 64	/* loops followed round; larger ones are not */

/* Does instruction j read a register of fed (as an operand or in its
 * address)? */
static int reads_fed(const struct cfg_insn *j, uint64_t fed)
{
	if (j->flags & CFG_I_ZERO_IDIOM)
		return 0;
	if (j->regs_read & GPRS & fed)
		return 1;
	return j->nmem && ((j->mem.base != CFG_REG_NONE && (fed & CFG_RBIT(j->mem.base))) ||
			   (j->mem.index != CFG_REG_NONE && (fed & CFG_RBIT(j->mem.index))));
}

/* The registers fed by the load after instructions [from, to): one that
 * reads a fed register feeds what it writes; one that writes a register
 * from others only clears it; a call keeps only the callee-saved ones. */
static uint64_t carry(const struct cfg *cfg, uint32_t from, uint32_t to, uint64_t fed)
{
	for (uint32_t k = from; k < to && fed; k++) {
		const struct cfg_insn *j = &cfg->insns[k];

		if (j->flags & CFG_I_CALL)
			fed &= CFG_KEPT_BY_CALL;
		else if (reads_fed(j, fed))
			fed |= j->regs_written & GPRS;
		else
			fed &= ~(j->regs_written & GPRS);
	}
	return fed;
}

/* Index of block c among loop lp's blocks, -1 when not in it. */
static int loop_index(const struct cfg_loop *lp, uint32_t c)
{
	for (uint32_t k = 0; k < lp->nblocks; k++)
		if (lp->blocks[k] == c)
			return (int)k;
	return -1;
}

/* What every path into loop block k from inside the loop carries: the
 * meet (intersection) of its in-loop predecessors' out[]. */
static uint64_t carried_in(const struct cfg *cfg, const struct cfg_loop *lp, uint32_t k,
			   const uint64_t *out)
{
	const struct cfg_block *bl = &cfg->blocks[lp->blocks[k]];
	uint64_t in = GPRS;
	int any = 0;

	for (uint32_t e = 0; e < bl->npred; e++) {
		int p = loop_index(lp, cfg->edges[bl->pred[e]].from);

		if (p >= 0)
			in &= out[p], any = 1;
	}
	return any ? in : 0;
}

/*
 * Must the registers fed after load i (in block b, whose innermost loop is
 * lp) reach i's address again round the loop, on every path?  A forward
 * dataflow over the loop's blocks from i's own block, meeting paths by
 * intersection, so that a register one branch of an if overwrites from
 * elsewhere does not count (conservative: a chain claimed is a chain on
 * every path).
 */
static int fed_round_loop(const struct cfg *cfg, uint32_t i, int b, uint64_t fed, uint64_t addr)
{
	const struct cfg_loop *lp;
	const struct cfg_block *bb = &cfg->blocks[b];
	uint64_t out[MAX_LOOP_BLOCKS];
	int kb, changed = 1;

	if (bb->loop < 0 || (size_t)bb->loop >= cfg->nloops)
		return 0;
	lp = &cfg->loops[bb->loop];
	kb = loop_index(lp, (uint32_t)b);
	if (kb < 0 || lp->nblocks > MAX_LOOP_BLOCKS)
		return 0;
	for (uint32_t k = 0; k < lp->nblocks; k++)
		out[k] = GPRS;		/* top: nothing yet known to clear */
	out[kb] = carry(cfg, i + 1, bb->first + bb->n, fed);
	for (uint32_t round = 0; changed && round <= lp->nblocks + 1; round++) {
		changed = 0;
		for (uint32_t k = 0; k < lp->nblocks; k++) {
			const struct cfg_block *bl = &cfg->blocks[lp->blocks[k]];
			uint64_t o;

			if ((int)k == kb)
				continue;
			o = carry(cfg, bl->first, bl->first + bl->n, carried_in(cfg, lp, k, out));
			changed |= o != out[k];
			out[k] = o;
		}
	}
	return (carry(cfg, bb->first, i, carried_in(cfg, lp, (uint32_t)kb, out)) & addr) != 0;
}

/*
 * Is load i fed by its own result: does its address, the next time round its
 * loop, depend on the value it loads?  The register it writes, or one
 * computed from it, reaches its base or index register round its innermost
 * loop, through however many blocks (i = next[i], p = p->next through
 * another register, a load of a field then of the next node, a chain
 * carried past an if inside the loop).
 */
int est_replay_self_fed(const struct cfg *cfg, uint32_t i)
{
	const struct cfg_insn *in = &cfg->insns[i];
	uint64_t addr = 0, fed = in->regs_written & GPRS;
	int b;

	if (!(in->flags & CFG_I_LOAD) || in->nmem != 1 || in->mem.rip_relative ||
	    in->mem.segment)
		return 0;
	if (in->mem.base != CFG_REG_NONE)
		addr |= CFG_RBIT(in->mem.base);
	if (in->mem.index != CFG_REG_NONE)
		addr |= CFG_RBIT(in->mem.index);
	/* not merely its destination among its address registers: xz's match
	 * finder loads buf[r8] into r8, whose next value comes from elsewhere */
	b = block_of(cfg, i);
	return b >= 0 && fed_round_loop(cfg, i, b, fed, addr);
}

/*
 * The region n sorted addresses a[] were drawn from: uniform draws from a
 * region of F bytes span F (n - 1) / (n + 1) on average, so F is the span
 * times (n + 1) / (n - 1), over the largest run of addresses without a gap
 * of GAP_SPLIT typical gaps.  The typical gap is the mean of the smaller
 * 90% of them, not their median: a hash chain's addresses come in clusters
 * near recent positions (gzip's prev[], 64 KB: 36 addresses over 58 KB,
 * half the gaps under 320 bytes, four over 20 times that, so the median
 * cut it to 22 addresses over 18 KB), while uniform draws' largest gap is
 * about ln(n) mean gaps and two processes' heaps are terabytes apart.
 * The element: the largest power of 2 (4 to
 * 4096) dividing every difference.
 */
void est_replay_footprint(const uint64_t *a, size_t n, uint64_t *bytes, uint32_t *elem,
			  size_t *used)
{
	uint64_t *gap, typ, sum = 0, all = 0;
	size_t best = 0, bstart = 0, start = 0, ntyp = n > 1 ? ((n - 1) * 9 + 9) / 10 : 0;

	*bytes = 0, *elem = 0, *used = 0;
	if (n < MIN_ADDRS || !(gap = malloc(n * sizeof(*gap))))
		return;
	for (size_t k = 1; k < n; k++)
		gap[k - 1] = a[k] - a[k - 1];
	qsort(gap, n - 1, sizeof(*gap), cmp_u64);
	for (size_t k = 0; k < ntyp; k++)
		sum += gap[k];
	typ = sum / ntyp;
	free(gap);
	for (size_t k = 1; k <= n; k++)
		if (k == n || a[k] - a[k - 1] > GAP_SPLIT * (typ ? typ : 1)) {
			if (k - start > best)
				best = k - start, bstart = start;
			start = k;
		}
	if (best < MIN_ADDRS)
		return;
	for (size_t k = bstart + 1; k < bstart + best; k++)
		all |= a[k] - a[k - 1];
	*elem = 4;
	while (*elem < 4096 && all && !(all & ((uint64_t)*elem * 2 - 1)))
		*elem *= 2;
	*bytes = (uint64_t)((double)(a[bstart + best - 1] - a[bstart]) * (double)(best + 1) /
			    (double)(best - 1)) + *elem;
	*used = best;
}

/* The q-quantile of Beta(a, 2), the span of a + 1 uniform draws over a
 * region of size 1: its distribution x^a (a + 1 - a x), by bisection. */
static double span_quantile(double a, double q)
{
	double lo = 0, hi = 1;

	for (int k = 0; k < 60; k++) {
		double x = (lo + hi) / 2;

		if (pow(x, a) * (a + 1 - a * x) < q)
			lo = x;
		else
			hi = x;
	}
	return (lo + hi) / 2;
}

/*
 * The 90% range of the region a footprint of bytes came from, sized from
 * used addresses (est_replay_footprint): the span of n uniform draws is
 * Beta(n - 1, 2) times the region, so the region lies between the span
 * over its 95% and over its 5% quantile.  6 addresses: 1.07 to 2.4 times
 * the span; 16: 1.02 to 1.36; 64: 1.00 to 1.08.
 */
void est_replay_footprint_range(uint64_t bytes, uint32_t elem, size_t used, uint64_t *lo,
				uint64_t *hi)
{
	double span, a = (double)used - 1;

	*lo = *hi = bytes;
	if (used < 2 || bytes <= elem)
		return;
	span = (double)(bytes - elem) * (a / ((double)used + 1));
	*lo = (uint64_t)(span / span_quantile(a, 0.95)) + elem;
	*hi = (uint64_t)(span / span_quantile(a, 0.05)) + elem;
}

/* A walk over (bytes, elem): timed once per CPU and kept in the cache of
 * measured costs (estimate/measured.c; the entry's median slot holds the L1
 * walk's cycles), so that reports repeat; --remeasure times it again.
 * *timed: 1 when it was timed now. */
static int walk_of(struct est_walks *c, uint64_t bytes, uint32_t elem, struct sbx_walk *w,
		   int *timed, struct dcpi_err *err)
{
	/* one figure per quarter octave of size: a region timed is reused */
	uint64_t key = (uint64_t)llround(4 * log2((double)bytes));
	char name[64];
	double fig[3];
	int rc;

	*timed = 0;
	for (size_t k = 0; k < c->n; k++)
		if (c->key[k] == key && c->w[k].elem == elem)
			return *w = c->w[k], 0;
	snprintf(name, sizeof(name), "walk:%llu:%u", (unsigned long long)key, elem);
	if (!c->remeasure && est_cache_lookup(c->dir, name, fig, c->note, sizeof(c->note))) {
		*w = (struct sbx_walk){ .bytes = (size_t)exp2((double)key / 4), .elem = elem,
					.cycles = fig[0], .l1_cycles = fig[1], .spread = fig[2] };
	} else {
		rc = sbx_replay_walk((size_t)exp2((double)key / 4), elem, w, err);
		if (rc < 0)
			return rc;
		fig[0] = w->cycles, fig[1] = w->l1_cycles, fig[2] = w->spread;
		est_cache_store(c->dir, name, fig, c->note, sizeof(c->note));
		*timed = 1;
	}
	if (c->n < EST_MAX_WALKS) {
		c->key[c->n] = key;
		c->w[c->n++] = *w;
	}
	return 0;
}

/* The region a load's sampled addresses span (est_replay_footprint). */
static uint64_t footprint_of(const struct val_hotlist *h, uint32_t *elem, size_t *used)
{
	uint64_t addr[VAL_N], bytes;

	for (uint32_t k = 0; k < h->n; k++)
		addr[k] = h->t[k].value;
	qsort(addr, h->n, sizeof(addr[0]), cmp_u64);
	est_replay_footprint(addr, h->n, &bytes, elem, used);
	return bytes;
}

/* The L1 data cache's size: regions within it are the best case's hits. */
static uint64_t l1d_bytes(void)
{
	long v = sysconf(_SC_LEVEL1_DCACHE_SIZE);

	return v > 0 ? (uint64_t)v : L1D_BYTES;
}

/* ... 0 for a region within L1.  Past L1 the walk is timed, whatever the
 * region: one that stays in L2 costs what its timing says (gzip's 64 KB
 * hash chain, L2 hits; EST_RESIDENT_BYTES left it out). */
static uint64_t region_of(const struct val_hotlist *h, uint32_t *elem, size_t *used)
{
	uint64_t bytes = footprint_of(h, elem, used);

	return bytes <= l1d_bytes() ? 0 : bytes;
}

int est_replay_in_l1(const struct val_hotlist *h)
{
	uint32_t elem;
	size_t used;

	return h && h->kind == VAL_ADDR && h->n >= MIN_ADDRS &&
	       footprint_of(h, &elem, &used) <= l1d_bytes();
}

/* A cache line's bytes: a stride shorter walks each line in order. */
static uint64_t line_bytes(void)
{
	long v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);

	return v > 0 ? (uint64_t)v : 64;
}

int est_replay_streams(const struct val_hotlist *h)
{
	uint32_t top = 0;
	int64_t stride;

	if (!h || h->kind != VAL_STRIDE || h->n == 0 || h->seen < STREAM_MIN)
		return 0;
	for (uint32_t i = 1; i < h->n; i++)
		if (val_hotlist_estimate(h, i) > val_hotlist_estimate(h, top))
			top = i;
	stride = (int64_t)h->t[top].value;
	return val_hotlist_share(h, top) >= STREAM_SHARE && stride != 0 &&
	       (uint64_t)(stride < 0 ? -stride : stride) < line_bytes();
}

int est_replay_stream_loads(const struct image *img, const struct val_profile *vp,
			    struct est_analysis *a, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	uint64_t off0;

	if (!vp || img_vaddr_to_offset(img, cfg->start, &off0) < 0)
		return 0;
	for (uint32_t i = 0; i < cfg->ninsns; i++) {
		uint64_t off = off0 + (cfg->insns[i].addr - cfg->start);

		if (!(cfg->insns[i].flags & CFG_I_LOAD) ||
		    !est_replay_streams(val_profile_find(vp, off, VAL_STRIDE)))
			continue;
		if (!a->streams && !(a->streams = calloc(cfg->ninsns + 1, 1)))
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		a->streams[i] = 1;
	}
	return 0;
}

/* The instruction a load's miss shows on: the next one of its block (the
 * skid), else the load. */
static uint32_t shown_on(const struct cfg *cfg, uint32_t i)
{
	int b = block_of(cfg, i);

	return b >= 0 && i + 1 < cfg->blocks[b].first + cfg->blocks[b].n ? i + 1 : i;
}

/* Push loop block k's successors in lp not seen yet; 1 when one of them is
 * block kb (back at the load's block). */
static int pushed_round(const struct cfg *cfg, const struct cfg_loop *lp, uint32_t k, int kb,
			uint8_t *seen, uint32_t *stack, uint32_t *n)
{
	const struct cfg_block *bl = &cfg->blocks[lp->blocks[k]];

	for (uint32_t e = 0; e < bl->nsucc; e++) {
		int j = loop_index(lp, cfg->edges[bl->succ[e]].to);

		if (j == kb)
			return 1;	/* back at b */
		if (j >= 0 && !seen[j])
			seen[j] = 1, stack[(*n)++] = (uint32_t)j;
	}
	return 0;
}

/* Does every way round loop lp from block kb back to it pass block kc? */
static int on_every_round(const struct cfg *cfg, const struct cfg_loop *lp, int kb, int kc)
{
	uint8_t seen[MAX_LOOP_BLOCKS] = { 0 };
	uint32_t stack[MAX_LOOP_BLOCKS], n = 0;

	if (kc == kb)
		return 1;
	seen[kc] = seen[kb] = 1;
	if (pushed_round(cfg, lp, (uint32_t)kb, kb, seen, stack, &n))
		return 0;
	while (n)
		if (pushed_round(cfg, lp, stack[--n], kb, seen, stack, &n))
			return 0;
	return 1;
}

/* The round of load r's loop: the blocks every iteration passes (of that
 * loop itself, not of one nested in it); in[] marks them by block. */
static size_t round_blocks(const struct cfg *cfg, uint32_t load, uint8_t *in)
{
	int b = block_of(cfg, load), kb;
	const struct cfg_loop *lp;
	size_t n = 0;

	if (b < 0 || cfg->blocks[b].loop < 0 || (size_t)cfg->blocks[b].loop >= cfg->nloops)
		return 0;
	lp = &cfg->loops[cfg->blocks[b].loop];
	kb = loop_index(lp, (uint32_t)b);
	if (kb < 0 || lp->nblocks > MAX_LOOP_BLOCKS)
		return 0;
	for (uint32_t k = 0; k < lp->nblocks; k++) {
		uint32_t c = lp->blocks[k];

		if (cfg->blocks[c].loop == cfg->blocks[b].loop && cfg->blocks[c].n &&
		    on_every_round(cfg, lp, kb, (int)k))
			in[c] = 1, n++;
	}
	return n;
}

/* Best cases per instruction as the windows will have them: the model's,
 * scaled to the blocks' measured cycles (estimate/measured.c). */
static int best_cases(struct est_input *in, const struct cfg *cfg, const struct est_analysis *a,
		      double *m, struct dcpi_err *err)
{
	size_t n = cfg->ninsns + 1;
	int *reason = calloc(n, sizeof(*reason)), *culprit = calloc(n, sizeof(*culprit));
	int rc = -ENOMEM;

	if (!reason || !culprit) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		goto out;
	}
	rc = est_model_m(cfg, in->model, in->o.opts.steady, m, reason, culprit, err);
	if (rc >= 0 && a->have_meas)
		est_apply_measured(cfg, &a->meas, a->s, m);
out:
	free(reason);
	free(culprit);
	return rc;
}

/* The instruction of block c with the most samples: where its stall shows. */
static uint32_t pile_of(const struct cfg *cfg, const double *s, uint32_t c)
{
	const struct cfg_block *bl = &cfg->blocks[c];
	uint32_t top = bl->first;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		if (s[i] > s[top])
			top = i;
	return top;
}

/*
 * What one step of the chain takes: the walk's cycles beyond an L1 hit, the
 * hit itself (the model's load-to-use), and a cycle for each instruction of
 * the round that writes one of the load's address registers (and $0x7fff,
 * mov %rbx,%rax): the round cannot run faster.  The rest of its body runs
 * in the chain's shadow, out of order, as long as it is shorter.
 */
static double chain_cycles(const struct model *model, const struct cfg *cfg,
			   const struct est_replay *r, const uint8_t *round)
{
	const struct cfg_insn *ld = &cfg->insns[r->insn];
	uint64_t addr = 0;
	double c = r->extra;

	if (ld->mem.base != CFG_REG_NONE)
		addr |= CFG_RBIT(ld->mem.base);
	if (ld->mem.index != CFG_REG_NONE)
		addr |= CFG_RBIT(ld->mem.index);
	if (model)
		c += model->load_lat + (ld->mem.index != CFG_REG_NONE &&
					(ld->mem.scale > 1 || ld->mem.disp) ?
					model->load_lat_complex : 0);
	for (uint32_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t i = cfg->blocks[b].first; round[b] && i < cfg->blocks[b].first +
		     cfg->blocks[b].n; i++)
			if (i != r->insn && (cfg->insns[i].regs_written & addr))
				c += 1;
	return c;
}

/*
 * Where a replayed step's cycles are expected.  A chain round one block
 * (a self loop): on the instruction its miss shows on.  A chain round a
 * loop of several blocks stalls wherever an instruction waits on the
 * step's data, in any block of the round (gzip's longest match: the cmp
 * after the chain load and the branch after the window load it feeds,
 * blocks apart).  The round runs once an iteration, in C = the larger of
 * its blocks' best cases M and the chain's step (chain_cycles), so
 * x = T / C samples' worth (T the round's samples), and each block of the
 * round is expected to take its share S_c C / T: the extra it shows,
 * beyond its best case, is set on its most sampled instruction.
 */
static int share_round(struct est_input *in, const struct cfg *cfg, const struct est_replay *r,
		       struct est_analysis *a, struct dcpi_err *err)
{
	uint8_t *round = calloc(cfg->nblocks + 1, 1);
	double *m = NULL, t = 0, mb = 0, c;
	int rc = 0;

	if (!round)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	if (round_blocks(cfg, r->insn, round) < 2) {
		a->extra[r->shown] += r->extra;
		goto out;
	}
	m = calloc(cfg->ninsns + 1, sizeof(*m));
	if (!m) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		goto out;
	}
	rc = best_cases(in, cfg, a, m, err);
	if (rc < 0)
		goto out;
	for (uint32_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t i = cfg->blocks[b].first; round[b] && i < cfg->blocks[b].first +
		     cfg->blocks[b].n; i++)
			t += a->s[i], mb += m[i];
	if (!(t > 0)) {
		a->extra[r->shown] += r->extra;
		goto out;
	}
	c = fmax(mb, chain_cycles(in->model, cfg, r, round));
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		double sb = 0, bb = 0;

		for (uint32_t i = cfg->blocks[b].first; round[b] && i < cfg->blocks[b].first +
		     cfg->blocks[b].n; i++)
			sb += a->s[i], bb += m[i];
		if (round[b] && sb * c / t > bb)
			a->extra[pile_of(cfg, a->s, b)] += sb * c / t - bb;
	}
out:
	free(m);
	free(round);
	return rc;
}

/* Has the budget of c's timing (est_replay_epoch) run out? */
static int past_deadline(const struct est_walks *c)
{
	return c->deadline && dcpi_now_ns() > c->deadline;
}

/* The walks of a region and of the ends of its 90% range; *timed: how
 * many were timed now (the others came from the cache). */
static int walks_of(struct est_walks *c, uint64_t bytes, uint32_t elem, size_t used,
		    struct sbx_walk w[3], uint64_t range[2], int *timed, struct dcpi_err *err)
{
	int rc, t;

	*timed = 0;
	memset(w, 0, 3 * sizeof(*w));
	est_replay_footprint_range(bytes, elem, used, &range[0], &range[1]);
	rc = walk_of(c, bytes, elem, &w[0], &t, err);
	*timed += t;
	for (int k = 0; k < 2 && rc >= 0; k++) {
		if (past_deadline(c)) {
			c->left++;	/* the range's ends: the analysis times them */
			break;
		}
		rc = walk_of(c, range[k], elem, &w[1 + k], &t, err);
		*timed += t;
	}
	return rc;
}

/* How far the count may move with the walk: its timing's spread, and the
 * walks of the region's range beside the region's own (log units, in
 * quadrature; interval.c takes it as a relative half-width). */
static double walk_spread(const struct sbx_walk w[3])
{
	double fp = 0;

	for (int k = 1; k < 3; k++)
		if (w[k].cycles > 0 && w[0].cycles > 0)
			fp = fmax(fp, fabs(log(w[k].cycles / w[0].cycles)));
	return expm1(hypot(log1p(w[0].spread), fp));
}

/*
 * A region past the core's own L2 and within twice the L3 meets an L3 that
 * other cores (other tenants of a VM's host) share: how much of it the run
 * had, and the walk timed after it, differ (a Zen 5 VM's 16 MB chase: the
 * run 2.2-2.4 times the walk's cycles a step, 217-323 against 94-134, while
 * an hour earlier the two agreed within 20%).  Its walk is also timed past
 * the L3 (four times its size), and the ratio of the two steps' cycles
 * beyond an L1 hit bounds what the run may have paid: 1 for other regions
 * or when a cache size is unknown.
 */
/* The size of this CPU's level-`level` data or unified cache, as the
 * kernel reads it (sysfs: a VM's CPUID leaves can say otherwise, glibc's
 * sysconf 384 MB of L3 on a Zen 5 VM whose kernel says 32 MB); 0 when
 * unknown. */
static long cache_bytes(int level)
{
	char path[96], buf[32];
	long size = 0;

	for (int k = 0; k < 8 && !size; k++) {
		FILE *f;
		int lv = -1;
		char unit = 0;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", k);
		if (!(f = fopen(path, "r")))
			break;
		if (fscanf(f, "%d", &lv) != 1)
			lv = -1;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", k);
		if (lv != level || !(f = fopen(path, "r")))
			continue;
		buf[0] = 0;
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", k);
		if (!strncmp(buf, "Instruction", 11) || !(f = fopen(path, "r")))
			continue;
		if (fscanf(f, "%ld%c", &size, &unit) < 1)
			size = 0;
		fclose(f);
		size *= unit == 'K' ? 1024 : unit == 'M' ? 1048576 : 1;
	}
	return size;
}

static double far_ratio(struct est_walks *c, uint64_t bytes, uint32_t elem,
			const struct sbx_walk *w, int *timed, struct dcpi_err *err)
{
	long l2 = cache_bytes(2), l3 = cache_bytes(3);
	struct sbx_walk wf;
	int t = 0;

	if (l2 <= 0 || l3 <= 0 || bytes <= (uint64_t)l2 || bytes > 2 * (uint64_t)l3 ||
	    !(w->cycles > w->l1_cycles))
		return 1;
	if (walk_of(c, 4 * (uint64_t)l3, elem, &wf, &t, err) < 0) {
		dcpi_err_clear(err);	/* the count stands; its interval without it */
		return 1;
	}
	*timed += t;
	return fmax(1, (wf.cycles - wf.l1_cycles) / (w->cycles - w->l1_cycles));
}

static int replay_one(struct est_input *in, const struct cfg *cfg, uint32_t i,
		      const struct val_hotlist *h, struct est_analysis *a, struct dcpi_err *err)
{
	uint64_t bytes, range[2];
	uint32_t elem;
	size_t used;
	struct sbx_walk w[3];
	struct est_replay *r;
	int rc, timed;

	bytes = region_of(h, &elem, &used);
	if (!bytes)
		return 0;
	if (!in->walks.dir)
		in->walks.dir = in->o.cache_dir ? in->o.cache_dir : in->dbdir[0] ? in->dbdir : NULL;
	in->walks.remeasure = in->o.remeasure;
	rc = walks_of(&in->walks, bytes, elem, used, w, range, &timed, err);
	if (in->walks.note[0] && !strstr(in->note, in->walks.note))
		snprintf(in->note, sizeof(in->note), "%s", in->walks.note);
	if (rc < 0)
		return rc;
	if (!(w[0].cycles > w[0].l1_cycles))
		return 0;
	r = &a->replays[a->nreplays++];
	*r = (struct est_replay){ .insn = i, .shown = shown_on(cfg, i), .addrs = used,
				  .bytes = bytes, .elem = elem, .walk = w[0],
				  .extra = w[0].cycles - w[0].l1_cycles,
				  .bytes_lo = range[0], .bytes_hi = range[1],
				  .cycles_lo = w[1].cycles, .cycles_hi = w[2].cycles,
				  .spread = walk_spread(w) };
	r->far = far_ratio(&in->walks, bytes, elem, &w[0], &timed, err);
	return share_round(in, cfg, r, a, err);
}

int est_replay_loads(struct est_input *in, const struct image *img, const struct val_profile *vp,
		     struct est_analysis *a, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	uint64_t off0;
	int rc = 0;

	if (!vp || img_vaddr_to_offset(img, cfg->start, &off0) < 0)
		return 0;
	for (uint32_t i = 0; i < cfg->ninsns && rc >= 0; i++) {
		const struct val_hotlist *h;

		if (!est_replay_self_fed(cfg, i) || a->s[i] + a->s[shown_on(cfg, i)] <= 0)
			continue;
		h = val_profile_find(vp, off0 + (cfg->insns[i].addr - cfg->start), VAL_ADDR);
		if (!h || h->n < MIN_ADDRS || a->nreplays >= EST_MAX_REPLAYS)
			continue;
		if (!a->extra) {
			a->extra = calloc(cfg->ninsns + 1, sizeof(*a->extra));
			if (!a->extra)
				return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		}
		rc = replay_one(in, cfg, i, h, a, err);
	}
	return rc;
}

void est_replay_regions(const struct image *img, const struct val_profile *vp,
			struct est_analysis *a)
{
	const struct cfg *cfg = a->cfg;
	uint64_t off0;
	uint32_t elem;
	size_t used;

	if (!vp || img_vaddr_to_offset(img, cfg->start, &off0) < 0)
		return;
	for (uint32_t i = 0; i < cfg->ninsns && i < a->r.ninsns; i++) {
		const struct val_hotlist *h;

		if (!(cfg->insns[i].flags & CFG_I_LOAD))
			continue;
		h = val_profile_find(vp, off0 + (cfg->insns[i].addr - cfg->start), VAL_ADDR);
		if (!h)
			continue;
		a->r.insns[i].region = (double)footprint_of(h, &elem, &used);
	}
}

/* The self-fed loads of one image's value samples: their walks timed. */
static int replay_image(struct est_walks *c, const struct val_profile *vp, size_t *nwalks,
			uint64_t *maxb, struct dcpi_err *err)
{
	struct image *img = NULL;
	struct cfg *cfg = NULL;
	const struct img_proc *cur = NULL;
	int rc;

	if (img_open(vp->image.path, 0, &img, err) < 0) {
		dcpi_err_clear(err);	/* gone or not ours: the analysis will say */
		return 0;
	}
	for (size_t l = 0; l < vp->nlists; l++) {
		const struct val_hotlist *h = &vp->lists[l];
		const struct img_proc *proc;
		uint64_t va, bytes, range[2];
		uint32_t elem;
		size_t used;
		struct sbx_walk w[3];
		int i, timed;

		if (h->kind != VAL_ADDR || h->n < MIN_ADDRS ||
		    img_offset_to_vaddr(img, h->offset, &va) < 0 || !(proc = img_proc_at(img, va)))
			continue;
		if (proc != cur) {
			cfg_free(cfg);
			cfg = NULL;
			cur = proc;
			if (cfg_build(img, proc, &cfg, err) < 0) {
				dcpi_err_clear(err);
				continue;
			}
		}
		if (!cfg || (i = cfg_insn_at(cfg, va)) < 0 || !est_replay_self_fed(cfg, (uint32_t)i) ||
		    !(bytes = region_of(h, &elem, &used)))
			continue;
		if (past_deadline(c)) {
			c->left++;	/* the analysis times it when it needs it */
			continue;
		}
		rc = walks_of(c, bytes, elem, used, w, range, &timed, err);
		if (rc < 0) {
			cfg_free(cfg);
			img_close(img);
			return rc;
		}
		*nwalks += (size_t)timed;
		*maxb = range[1] > *maxb ? range[1] : *maxb;
	}
	cfg_free(cfg);
	img_close(img);
	return 0;
}

int est_replay_epoch(struct prof_db *db, const char *dir, const char *epoch, uint64_t budget_ns,
		     size_t *nwalks, size_t *left, uint64_t *bytes, struct dcpi_err *err)
{
	struct est_walks c = { .dir = dir, .remeasure = 1,
			       .deadline = budget_ns ? dcpi_now_ns() + budget_ns : 0 };
	struct val_profile *vp = NULL;
	size_t n = 0;
	int rc = val_epoch_read(db, epoch, &vp, &n, err);

	*nwalks = 0, *bytes = 0;
	for (size_t k = 0; rc >= 0 && k < n; k++)
		rc = replay_image(&c, &vp[k], nwalks, bytes, err);
	val_profiles_free(vp, n);
	*left = c.left;
	return rc;
}
