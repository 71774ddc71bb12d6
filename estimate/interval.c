/*
 * interval.c - a 90% interval on every block and edge count, from the
 * evidence behind it, and the confidence words defined by it
 * (docs/estimate.md "Intervals").
 *
 * A count is a scale (executions per cycle of best case, from samples)
 * times a shape (paths' branch probabilities, or the windows' own ratio per
 * class).  Its uncertainty, each part as a relative 90% half-width in log
 * units, added in quadrature:
 *   sampling  the samples the scale rests on, Poisson: the blocks' window
 *             samples, a stalled block's by its witness (destall.c) only;
 *             binomial in the run's samples (sampling_f): narrower where
 *             the procedure holds most of the run;
 *   best case the best case the samples are divided by: a measured one's
 *             spread (at least 2%), a modelled one 10% (the model's mean
 *             error on real loops, docs/models.md), or where the
 *             procedure's timed blocks say how far the model is from this
 *             machine (measured.c model_scale) as far as their ratios go;
 *             A replayed load's block (replay.c) adds EST_REPLAY_REL: its
 *             walk was timed after the run, on a machine whose load differs;
 *   exposure  a block counted from a witness: what the machine shows of the
 *             waiter's cycles varies with the miss and the load (0.25 to 1.2 of the
 *             latency over four chase sizes on a Zen 4, docs/estimate.md):
 *             EST_STALL_EXPOSURE_SPREAD either way;
 *   shape     paths: the block's observations, binomial (1.645 / sqrt(n));
 *             windows: the cluster's spread (tightness) and its samples.
 * And one one-sided term: a block whose samples pile on one instruction
 * beyond its share of the best case may have stalled there (a miss, a
 * mispredict) without a witness; its count is then bounded below by what
 * its other instructions say, so the interval reaches down to that, and
 * down to 0 where nothing else has a best case and the pile sits on or
 * after a load.
 * And one more one-sided term, the core shared during the recording: the
 * path runtime times a contention canary on the program's core at every
 * burst (collect/canary.h), and in the share of bursts where it ran more
 * than 10% slow a busy sibling took part of the core.  A best case is timed
 * with the core to itself; a sibling takes at most half of it, so every
 * count may over-read by up to 1 + that share, as far as the code the
 * counts rest on would run slower on half a core: the sampled blocks
 * scheduled again with half the dispatch and retire slots and every port
 * held twice as long, weighed by their samples (1 for a dependent chain,
 * which a busy sibling did not slow; 2 for the canary's own adds), and the
 * interval reaches down so far.  How much a body slows beside a sibling varies (b2sum's
 * compression block 1.3-1.5x, the canary 1.6x, a chain of dependent adds
 * not at all), and the canary's mean over a recording's few bursts did not
 * predict a program's slowdown well enough to correct the counts
 * (docs/estimate.md, "A shared core"): the count keeps the best case.
 * And the block's own evidence: its samples at its best case, which the
 * interval always holds (own_evidence: where the count was set elsewhere and
 * the two disagree, the truth has lain on either side).
 * Exact counts (--exact) have the point interval.  Words: high when the
 * interval is within 15% either way, medium within 50%, low beyond.
 */
#include <math.h>
#include <string.h>

#include "dcpi/estimate.h"

#define Z90 1.645
#define MODEL_REL 0.10
#define EXPOSURE_REL (EST_STALL_EXPOSURE_SPREAD - 1)
#define SCALE_HOLD 0.75

static double lg(double rel)
{
	return log1p(rel > 0 ? rel : 0);
}

/* Relative 90% Poisson half-width of n samples, in log units (both sides'
 * larger). */
static double poisson_h(double n)
{
	if (n <= 0)
		return 3;	/* nothing behind it: a factor of 20 */
	return fmax(log(est_poisson_upper(n, Z90) / n),
		    -log(fmax(est_poisson_lower(n, Z90), 1e-3) / n));
}

/*
 * How much of the Poisson spread n samples out of the run's N have: a
 * sample lands in the code with the share of the time it runs, at random
 * (the collector's periods are random, collect/random.c), so a thread's
 * count is binomial, variance N_t q_t (1 - q_t), and over threads and
 * phases at most n (1 - n / N).  Poisson's n is right for a block of
 * little of the run; a loop that holds most of it is known closer (every
 * sample in it: its time exactly).  N = 0 (not known): 1.
 */
static double sampling_f(double n, double N)
{
	return N > 0 && n > 0 ? sqrt(fmax(1 - n / N, 0)) : 1;
}

/* The 90% half-width of n samples of the run's N, in log units. */
static double sampling_h(const struct est_result *r, double n)
{
	return n > 0 ? poisson_h(n) * sampling_f(n, r->run_samples) : poisson_h(n);
}

/* s samples' 90% upper and lower bounds, binomial as sampling_f. */
static double sampled_upper(const struct est_result *r, double s)
{
	return s + (est_poisson_upper(s, Z90) - s) * sampling_f(s, r->run_samples);
}

static double sampled_lower(const struct est_result *r, double s)
{
	return s - (s - est_poisson_lower(s, Z90)) * sampling_f(s, r->run_samples);
}

static int stalled(const struct est_result *r, size_t b, double *witness)
{
	for (size_t k = 0; k < r->nstalls; k++)
		if (r->stalls[k].block == b && !r->stalls[k].replayed) {
			*witness = r->stalls[k].witness_samples;
			return 1;
		}
	return 0;
}

/* The spread of the walks replayed in block b (their timing's own noise:
 * a machine busy then was likely busy during the run too). */
static double replay_spread(const struct est_result *r, size_t b)
{
	return b < r->nblocks ? r->blocks[b].replay_spread : 0;
}

/* Is block b's best case the model's in a procedure whose timed blocks say
 * how far the model is from this machine (measured.c model_scale)? */
static int modelled_scaled(const struct est_measurements *meas, size_t b)
{
	return meas && b < meas->nblocks && meas->blocks[b].source != EST_BEST_MEASURED &&
	       meas->model_scale > 0 && meas->model_scale_lo > 0;
}

/* How far the model's figure may be from this machine's, in log units:
 * the farther of the timed blocks' 5% and 95% quantiles of measured /
 * model. */
static double model_scale_h(const struct est_measurements *meas)
{
	return fmax(fabs(log(meas->model_scale_lo)), fabs(log(meas->model_scale_hi)));
}

/* What the procedure's scale rests on: samples and the best case's
 * uncertainty, over the blocks with samples and a best case. */
static void scale_evidence(const struct cfg *cfg, const struct est_result *r,
			   const struct est_measurements *meas, double *n, double *h_best,
			   int *witnessed)
{
	double wsum = 0, hsum = 0;

	*n = 0;
	*witnessed = 0;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct est_block *eb = &r->blocks[b];
		double w, hb = lg(MODEL_REL);

		if (eb->window_samples <= 0 || eb->best <= 0)
			continue;
		if (stalled(r, b, &w))
			*witnessed = 1;
		else
			w = eb->window_samples;
		if (meas && b < meas->nblocks && meas->blocks[b].source == EST_BEST_MEASURED)
			hb = lg(fmax(meas->blocks[b].spread, 0.02));
		else if (modelled_scaled(meas, b))
			hb = model_scale_h(meas);
		if (eb->replay > 0) {	/* a walk timed here, not during the run */
			double hr = lg(EST_REPLAY_REL + replay_spread(r, b));

			hb = sqrt(hb * hb + hr * hr);
		}
		*n += w;
		wsum += w;
		hsum += w * hb;
	}
	*h_best = wsum > 0 ? hsum / wsum : lg(MODEL_REL);
}

/* Could instruction i be a load that misses far: a load whose addresses are
 * unknown or span a region past L2 (a region its value samples show small
 * stays in the caches: its pile is the best case's, not a miss). */
static int may_miss(const struct cfg *cfg, const struct est_result *r, uint32_t i)
{
	return (cfg->insns[i].flags & CFG_I_LOAD) &&
	       !(r->insns[i].region > 0 && r->insns[i].region < EST_RESIDENT_BYTES);
}

#define STALL_REACH 2	/* a stall's samples land on the next instruction
			 * or the one after (skid, docs/estimate.md
			 * "Where samples land") */

/* Was load i's walk replayed on this machine (replay.c): its misses are
 * measured, their cycles counted in the block's best case plus replay,
 * and their uncertainty in the scale's (scale_evidence, cross_check). */
static int replayed_load(const struct est_result *r, uint32_t i)
{
	return i < r->ninsns && r->insns[i].replayed;
}

/* Could load i miss far by an unknown length: may_miss, not a slot of the
 * stack frame (rsp and a displacement: a spill or a local, written lately,
 * in L1), and not a load whose walk was replayed. */
static int may_miss_far(const struct cfg *cfg, const struct est_result *r, uint32_t i)
{
	return !cfg_insn_stack_slot(&cfg->insns[i]) && may_miss(cfg, r, i) &&
	       !replayed_load(r, i);
}

/* Is one of the instructions i - k0 .. i - STALL_REACH, as laid out, a load
 * that may miss far? */
static int miss_before(const struct cfg *cfg, const struct est_result *r, uint32_t i,
		       uint32_t k0)
{
	for (uint32_t k = k0; k <= STALL_REACH && k <= i; k++)
		if (may_miss_far(cfg, r, i - k))
			return 1;
	return 0;
}

/* Could the samples on instruction p of block b be a miss's: p, or one of
 * the STALL_REACH instructions before it (laid out before it, or at the end
 * of a block that branches to b), a load that may miss far. */
static int miss_within_reach(const struct cfg *cfg, const struct est_result *r, size_t b,
			     uint32_t p)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	uint32_t back = p - bl->first;	/* instructions of b before p */

	if (miss_before(cfg, r, p, 0))
		return 1;
	for (uint32_t j = 0; back < STALL_REACH && j < bl->npred; j++) {
		const struct cfg_block *from = &cfg->blocks[cfg->edges[bl->pred[j]].from];

		for (uint32_t k = 0; k < STALL_REACH - back && k < from->n; k++)
			if (may_miss_far(cfg, r, from->first + from->n - 1 - k))
				return 1;
	}
	return 0;
}

/*
 * What a pile no miss can explain may hold beyond the best case: the
 * refetch after a mispredicted branch into block b.  An entry along edge e,
 * which carries a share q of its source's executions, was mispredicted at
 * most 1 - q of the time (a predictor that learns nothing of the branch,
 * as branch_allowance), at the model's penalty; per execution of b,
 * weighted by the edges' counts.  A loop's back edge taken nearly always
 * adds nearly nothing.
 */
static double refetch_allowance(const struct cfg *cfg, const struct est_result *r, size_t b,
				const struct model *model)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double x = r->blocks[b].executions, a = 0;

	if (!model || !(x > 0))
		return 0;
	for (uint32_t k = 0; k < bl->npred; k++) {
		const struct cfg_edge *e = &cfg->edges[bl->pred[k]];
		const struct est_edge *ee = &r->edges[bl->pred[k]];

		if (e->kind == CFG_E_TAKEN || e->kind == CFG_E_NOT_TAKEN || e->kind == CFG_E_TABLE)
			a += fmax(ee->executions, 0) / x * (1 - fmin(fmax(ee->prob, 0), 1));
		else if (e->kind == CFG_E_EXIT_ENTRY)	/* entered from a call: any
							 * caller's refetch */
			a += fmax(ee->executions, 0) / x;
	}
	return fmin(a, 1) * model->mispredict_penalty;
}

/* Block b's count from its instructions other than the one its samples pile
 * on, as a share of x: 1 when no pile, lower when one instruction holds far
 * more than its part of the best case (skid one: i shows i - 1's cycles).
 * A pile that no load within the skid's reach can have fed is the best
 * case's own wait (a chain of dependent instructions: every sample on the
 * one that waits, twoprocs' imul and add) or a refetch: the count is then
 * at least best / (best + refetch_allowance) of x. */
static double pile_floor(const struct cfg *cfg, const struct est_result *r, size_t b,
			 const struct model *model)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	const struct est_block *eb = &r->blocks[b];
	double rest_s = 0, rest_m = 0, top = 0;
	uint32_t pile = bl->first;

	if (bl->n < 2 || eb->samples <= 0 || eb->best <= 0 || eb->replay > 0)
		return 1;	/* a replayed load's miss is expected, not a pile */
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		if (r->insns[i].samples > top)
			top = r->insns[i].samples, pile = i;
	if (top < 0.5 * eb->samples)
		return 1;
	if (!miss_within_reach(cfg, r, b, pile))
		return eb->best / (eb->best + refetch_allowance(cfg, r, b, model));
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		double mprev = i > bl->first ? r->insns[i - 1].m : r->insns[bl->first + bl->n - 1].m;

		if (i == pile)
			continue;
		rest_s += est_poisson_lower(r->insns[i].samples, Z90);
		rest_m += mprev;
	}
	if (rest_m <= 0) {
		/* nothing else in the block has a best case to bound the count
		 * with; a pile right after a load may be its miss, of any
		 * length: the count may be far lower (a chase whose load feeds
		 * itself, tests/workloads/demo_work.c) */
		uint32_t prev = pile > bl->first ? pile - 1 : bl->first + bl->n - 1;

		return may_miss(cfg, r, prev) || may_miss(cfg, r, pile) ? 0 : 1;
	}
	/* the rest's rate against the whole block's */
	return fmin(1, (rest_s / rest_m) / (eb->samples / eb->best));
}

/*
 * A replayed block's count against its witness's (the samples after the
 * load's waiter, destall.c): two measurements of one count, the walk timed
 * after the run and the witness during it.  Where they disagree beyond both
 * their spreads (the machine's load changed between the run and the
 * replay: a shared L3 full of another program's lines), the interval holds
 * both.  A witness that reads more than the count does so at any exposure
 * up to the spread's top; one that reads fewer speaks only where f was
 * measured on this machine: how little a machine may show is not bounded
 * by the Zen 4 figures EST_STALL_EXPOSURE rests on (a Zen 5 VM: dcpi
 * calibrate's sk_miss put none of 13,799 samples on its witness, f below
 * 0.11; a 256 KB chase of 1e8 steps 5 where f = 0.55 expects about 390;
 * and a witness of one sample took the interval of a count 1.5x the truth
 * down to 1/170 of it).
 */
static void cross_check(const struct est_result *r, size_t b, double h, double *lo, double *hi)
{
	double x = r->blocks[b].executions;

	for (size_t k = 0; k < r->nstalls; k++) {
		const struct est_stall *st = &r->stalls[k];
		double xw = st->per_cps * r->cycles_per_sample, hw;

		if (st->block != b || !st->replayed || !(xw > 0) || !(x > 0))
			continue;
		if (xw < x && !st->f_measured)
			continue;
		hw = sqrt(poisson_h(st->witness_samples) * poisson_h(st->witness_samples) +
			  lg(EXPOSURE_REL) * lg(EXPOSURE_REL));
		if (fabs(log(x / xw)) <= sqrt(h * h + hw * hw))
			continue;
		*lo = fmin(*lo, xw * exp(-hw));
		*hi = fmax(*hi, xw * exp(hw));
	}
}

/*
 * Block b's samples that no miss can have put where they are: not within
 * STALL_REACH instructions after a load that may miss far (of the block, or
 * at the end of the block laid out before it, whose miss shows on this
 * one's first instructions).  The cycles behind them are at most the best
 * case's, so they bound the count from below however long the misses were
 * (perl's hash chain: 140 cycles an execution against a best case of 4,
 * every sample after a load).  -1 when no such load is near.
 */
static double clean_samples(const struct cfg *cfg, const struct est_result *r, size_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double clean = 0;
	int any = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		if (miss_before(cfg, r, i, 1))
			any = 1;
		else
			clean += r->insns[i].samples;
	}
	return any ? clean : -1;
}

/* The most block b's closing branch may cost beyond the best case an
 * execution: taken with probability p, a predictor that learns nothing of
 * its pattern mispredicts 2p(1 - p) of the time, at the model's penalty. */
static double branch_allowance(const struct cfg *cfg, const struct est_result *r, size_t b,
			       const struct model *model)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double p = 0.5;

	if (!model || !bl->n || !(cfg->insns[bl->first + bl->n - 1].flags & CFG_I_COND))
		return 0;
	for (uint32_t k = 0; k < bl->nsucc; k++)
		if (r->blocks[b].executions > 0 && cfg->edges[bl->succ[k]].kind == CFG_E_TAKEN)
			p = fmin(fmax(r->edges[bl->succ[k]].prob, 0), 1);
	return 2 * p * (1 - p) * model->mispredict_penalty;
}

/*
 * What block b's own samples say of its count: its samples at its best case
 * (and a replayed walk's cycles), each side at its Poisson 90% bound, read
 * both where they landed and where the windows put them (one instruction
 * earlier: a block's first instruction shows the cycles of the one before
 * it, often another block's), since the machine's skid is a spread of both.
 * The low side also allows the block's closing branch its mispredicts
 * (branch_allowance): a block slowed evenly by the refetch after them shows
 * no pile, and its samples read as runs (bc's digit loop: 2.8x, "high").
 * The count may have been set elsewhere (the class's cluster, the flow
 * solver, the paths' shape); where the two disagree the truth has lain on
 * either side: the block's samples over-read its count when it stalls
 * without a witness (a miss, a mispredict), the count set elsewhere is wrong
 * when the flow or the cluster is (a loop whose body the solver pulled
 * towards its entry).  The interval holds both (docs/estimate.md
 * "Intervals"); of a block stalled by its witness (destall.c) the samples
 * bound the count from above only (the witness's estimate of the miss was
 * 30x low on gzip's longest-match loop).
 */
static void own_evidence(const struct cfg *cfg, const struct est_result *r, size_t b,
			 const struct model *model, const struct est_measurements *meas,
			 double *lo, double *hi)
{
	const struct est_block *eb = &r->blocks[b];
	double m = eb->best + eb->replay, cps = r->cycles_per_sample, w;
	double s_lo = fmin(eb->samples, eb->window_samples);
	double s_hi = fmax(eb->samples, eb->window_samples);
	double m_lo = m, m_hi = m;

	if (!(s_hi > 0) || !(m > 0) || !(cps > 0))
		return;
	if (modelled_scaled(meas, b)) {	/* as far as the timed blocks were */
		m_lo = m * fmin(meas->model_scale_lo, 1);
		m_hi = m * fmax(meas->model_scale_hi, 1);
	}
	*hi = fmax(*hi, sampled_upper(r, s_hi) * cps / m_lo);
	if (!stalled(r, b, &w))	/* a witnessed stall over-reads them; and the
				 * branch may have mispredicted */
		*lo = fmin(*lo, (s_lo > 0 ? sampled_lower(r, s_lo) : 0) * cps /
				(m_hi + branch_allowance(cfg, r, b, model)));
	/* and what it must be however long its loads missed: the samples no
	 * miss fed cover at most the best case */
	w = clean_samples(cfg, r, b);
	if (w >= 0)
		*lo = fmin(*lo, sampled_lower(r, w) * cps / m_hi);
}

/*
 * Each block's floor: its own pile's, and that of any block whose pile could
 * have set the procedure's scale: one holding more than a quarter-quantile
 * rule leaves to the others (SCALE_HOLD of the window samples), which lowers
 * every block (a chase in one block: tests/workloads/demo_work.c).
 */
static void floors(const struct cfg *cfg, struct est_result *r, const struct model *model)
{
	double total = 0, all = 1;

	for (size_t b = 0; b < cfg->nblocks; b++)
		total += fmax(r->blocks[b].window_samples, 0);
	for (size_t b = 0; b < cfg->nblocks; b++) {
		struct est_block *eb = &r->blocks[b];
		double w;

		eb->lo = 1;	/* the floor, until est_intervals sets the interval */
		if (eb->window_samples > 0 && !stalled(r, b, &w))
			eb->lo = pile_floor(cfg, r, b, model);
		if (eb->window_samples > SCALE_HOLD * total)
			all = fmin(all, eb->lo);
	}
	for (size_t b = 0; b < cfg->nblocks; b++)
		r->blocks[b].lo = fmin(r->blocks[b].lo, all);
}

double est_shared_allowance(const struct est_result *r)
{
	return r->shared_core > 0 ? 1 + fmin(r->shared_core, 1) : 1;
}

double est_shared_lowering(const struct est_result *r)
{
	if (!(r->shared_core > 0) || !(r->shared_slowdown > 0))
		return 1;
	return 1 + (est_shared_allowance(r) - 1) * (r->shared_slowdown - 1);
}

/* A class's port held twice as long (a pipelined one for two cycles). */
static void hold_twice(const struct model_class *c)
{
	struct model_class *w = (struct model_class *)c;	/* a model_copy's row */

	w->busy = (uint8_t)(c->busy < 128 ? 2 * (c->busy ? c->busy : 1) : 255);
}

/* The core as a busy sibling leaves it: half the dispatch and retire
 * slots, every port held twice as long; latencies as they were.  NULL when
 * it cannot be made (the allowance is then the whole of it). */
static struct model *half_core(const struct model *model)
{
	struct dcpi_err err = { 0 };
	struct model *h = model ? model_copy(model, "half", &err) : NULL;

	if (!h)
		return NULL;
	h->dispatch_width = (h->dispatch_width + 1) / 2;
	h->retire_width = (h->retire_width + 1) / 2;
	for (size_t k = 0; k < h->nclasses; k++)
		hold_twice(&h->classes[k]);
	hold_twice(h->fallback);
	return h;
}

/* How much slower block b would run on that half core, as a loop body: 1
 * for a dependent chain (which a busy sibling did not slow, docs/estimate.md
 * "A shared core"), up to 2 where ports and slots bind it, as they bind the
 * contention canary's adds.  2 when it cannot be scheduled. */
static double sibling_slowdown(const struct cfg *cfg, const struct model *model,
			       const struct model *half, size_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	struct sched_block full = { 0 }, hb = { 0 };
	struct dcpi_err err = { 0 };
	double f = 2;

	if (!half || !bl->n)
		return 2;
	if (model_schedule(model, &cfg->insns[bl->first], bl->n, NULL, 0, &full, &err) == 0 &&
	    model_schedule(half, &cfg->insns[bl->first], bl->n, NULL, 0, &hb, &err) == 0 &&
	    full.steady_cycles > 0)
		f = fmin(fmax(hb.steady_cycles / full.steady_cycles, 1), 2);
	sched_block_free(&full);
	sched_block_free(&hb);
	return f;
}

static enum est_conf conf_of(double lo, double x, double hi)
{
	double h;

	if (!(x > 0))
		return EST_CONF_NONE;
	h = fmax(hi / x, lo > 0 ? x / lo : 1e9);
	return h <= 1.15 ? EST_CONF_HIGH : h <= 1.5 ? EST_CONF_MEDIUM : EST_CONF_LOW;
}

/*
 * Block b's count from its own samples at its best case, whatever the
 * shape, 0 when it has none: the paths' scale is the ratio of one block
 * (scale.c quantile_block), and a block of that block's class runs as often
 * as it does, so the shape's ratio between the two is 1 exactly.  What set
 * the count since may have moved it: the flow solved around counted calls
 * keeps a loop's count near its samples' (estimate/calls.c), a witness
 * sets a stalled block's; the interval then holds both (sampled_interval).
 */
static double own_count(const struct cfg *cfg, const struct est_path_info *pi, size_t b)
{
	long q = pi ? pi->scale_block : -1;

	if (!pi || !pi->used || !pi->xrel || q < 0 || (size_t)q >= cfg->nblocks)
		return 0;
	if ((size_t)q != b && (cfg->blocks[b].cls < 0 || cfg->blocks[b].cls != cfg->blocks[q].cls))
		return 0;
	return fmax(pi->scale * pi->xrel[q], 0);
}

static double shape_h(const struct cfg *cfg, const struct est_result *r,
		      const struct est_path_info *pi, size_t b)
{
	int cls = cfg->blocks[b].cls;

	if (own_count(cfg, pi, b) > 0)
		return 0;	/* the shape does not enter its count */
	if (pi && pi->used && pi->block_obs)
		return Z90 / sqrt(pi->block_obs[b] + 1);
	if (cls < 0)
		return 3;
	if (r->classes[cls].source != EST_S_CLUSTER)
		return lg(1);	/* propagated, solved: a factor of 2 */
	return lg(r->classes[cls].tightness - 1) + poisson_h(r->classes[cls].used_samples);
}

/* How much slower the blocks whose samples the procedure's counts rest on
 * would run beside a busy sibling: their sibling_slowdown weighed by their
 * samples (2 when none has samples). */
static double shared_slowdown(const struct cfg *cfg, const struct est_result *r,
			      const struct model *model)
{
	struct model *half = half_core(model);
	double w = 0, f = 0;

	for (size_t b = 0; b < cfg->nblocks; b++)
		if (r->blocks[b].window_samples > 0) {
			w += r->blocks[b].window_samples;
			f += r->blocks[b].window_samples * sibling_slowdown(cfg, model, half, b);
		}
	if (half)
		model_free(half);
	return w > 0 ? f / w : 2;
}

/*
 * Which samples are block b's own, where its count is its samples at its
 * best case (own_count): a sample lands on the instruction a stall names
 * or up to STALL_REACH after it, so b's last cycles may show on the first
 * STALL_REACH instructions of a block it branches to, and the cycles of a
 * block that branches to b on b's first ones.  *out: the samples on each
 * successor's first instructions, as far as b's edge brings its entries
 * (estloops' inner loop: its exit block's first two instructions, 142
 * samples against its 3,374, after an exit mispredicted every time);
 * *in: those on b's first instructions, as far as other blocks bring its
 * entries (the same loop: 2,091 samples, one entry in 10.5 from outside),
 * none where b's best case holds a replayed walk: its first instructions
 * wait for that load, as expected (tests/workloads/chase_if.c).
 */
/* The samples on block b's first STALL_REACH instructions. */
static double head_samples(const struct cfg *cfg, const struct est_result *r, uint32_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double s = 0;

	for (uint32_t i = 0; i < STALL_REACH && i < bl->n; i++)
		s += r->insns[bl->first + i].samples;
	return s;
}

static void skid_reach(const struct cfg *cfg, const struct est_result *r, size_t b,
		       double *in, double *out)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double x = r->blocks[b].executions, from_out = 0;

	*in = *out = 0;
	if (!(x > 0))
		return;
	for (uint32_t k = 0; k < bl->nsucc; k++) {
		const struct cfg_edge *e = &cfg->edges[bl->succ[k]];
		double xt = r->blocks[e->to].executions;

		if (e->to == b || e->to == cfg->exit || !cfg->blocks[e->to].n || !(xt > 0) ||
		    e->kind == CFG_E_CALL_RETURN)
			continue;
		*out += head_samples(cfg, r, e->to) *
			fmin(fmax(r->edges[bl->succ[k]].executions, 0) / xt, 1);
	}
	if (r->blocks[b].replay > 0)
		return;	/* its first instructions wait on a replayed load: expected */
	for (uint32_t k = 0; k < bl->npred; k++)
		if (cfg->edges[bl->pred[k]].from != b)
			from_out += fmax(r->edges[bl->pred[k]].executions, 0);
	*in = head_samples(cfg, r, (uint32_t)b) * fmin(from_out / x, 1);
}

/* Block b's interval from its samples (h: the scale's and the shape's
 * terms together), its replays, its own evidence and a shared core (lowering:
 * est_shared_lowering); eb->lo holds its floor (floors) on entry.  own: the
 * count of its own samples where the shape does not enter it (own_count),
 * else 0. */
static void sampled_interval(const struct cfg *cfg, struct est_result *r, size_t b, double h,
			     const struct model *model, double lowering,
			     const struct est_measurements *meas, double own)
{
	struct est_block *eb = &r->blocks[b];
	double x = eb->executions;

	eb->lo = (own > 0 ? fmin(x, own) : x) * exp(-h) * eb->lo;	/* eb->lo held the floor */
	eb->hi = (own > 0 ? fmax(x, own) : x) * exp(h);
	if (own > 0 && eb->samples > 0) {	/* its samples' edges (skid_reach) */
		double in, out;

		skid_reach(cfg, r, b, &in, &out);
		eb->hi *= 1 + out / eb->samples;
		eb->lo *= fmax(1 - in / eb->samples, 0);
	}
	if (eb->unreached)	/* the flow's count it replaced (calc.c
				 * est_unreached): the truth has lain on
				 * either side */
		eb->lo = fmin(eb->lo, eb->flow_count * exp(-h));
	if (eb->replay > 0)
		cross_check(r, b, h, &eb->lo, &eb->hi);
	if (eb->replay > 0 && eb->replay_far > 1)	/* the L3 shared */
		eb->lo = fmin(eb->lo, x * exp(-h) * (eb->best + eb->replay) /
				      (eb->best + eb->replay * eb->replay_far));
	own_evidence(cfg, r, b, model, meas, &eb->lo, &eb->hi);
	eb->lo /= lowering;
	if (cfg->blocks[b].cls >= 0 && r->classes[cfg->blocks[b].cls].source == EST_S_BOUND) {
		eb->lo = 0;
		eb->hi = fmax(eb->hi, r->classes[cfg->blocks[b].cls].bound);
	}
}

/*
 * Block b's interval when calls counted at the entry gave its count
 * (estimate/calls.c: a block outside every loop, which flow ties to the
 * entry; a loop's blocks keep their samples' count and interval): the
 * scale is measured, so no term of the samples' scale (their Poisson
 * spread, the best case's, a witness, a pile, a replay, a shared core) is
 * left, only the shape's: the path observations behind the block, or with
 * the windows' shape its class's ratio to the entry's (both classes'
 * terms).  The entry's own class runs once a call: the count.
 */
static void calls_interval(const struct cfg *cfg, struct est_result *r,
			   const struct est_path_info *pi, size_t b)
{
	struct est_block *eb = &r->blocks[b];
	int cls = cfg->blocks[b].cls, ecls = cfg->blocks[cfg->entry].cls;
	double x = eb->executions, hs = shape_h(cfg, r, pi, b), he = 0;

	if (!(pi && pi->used && pi->block_obs))
		he = shape_h(cfg, r, pi, cfg->entry);
	if (cls >= 0 && cls == ecls)
		hs = he = 0;
	eb->lo = x * exp(-sqrt(hs * hs + he * he));
	eb->hi = x * exp(sqrt(hs * hs + he * he));
}

void est_intervals(const struct cfg *cfg, struct est_result *r, const struct est_path_info *pi,
		   const struct est_measurements *meas, const struct model *model, int exact)
{
	double lowering, n, h_best, h_scale, h_clock;
	int witnessed;

	r->shared_slowdown = exact ? 1 : r->shared_core > 0 ? shared_slowdown(cfg, r, model) : 0;
	lowering = est_shared_lowering(r);
	scale_evidence(cfg, r, meas, &n, &h_best, &witnessed);
	h_clock = r->clock_h;	/* est_clock_h */
	h_scale = sqrt(sampling_h(r, n) * sampling_h(r, n) + h_best * h_best + h_clock * h_clock +
		       (witnessed ? lg(EXPOSURE_REL) * lg(EXPOSURE_REL) : 0));
	floors(cfg, r, model);
	for (size_t b = 0; b < cfg->nblocks; b++) {
		struct est_block *eb = &r->blocks[b];
		double x = eb->executions, hs = shape_h(cfg, r, pi, b);
		double h = sqrt(h_scale * h_scale + hs * hs);

		if (exact) {
			eb->lo = eb->hi = x;
			eb->conf = x > 0 ? EST_CONF_HIGH : EST_CONF_NONE;
			continue;
		}
		if (r->counted && r->counted[b])
			eb->lo = eb->hi = x;		/* counted: exactly */
		else if (r->calls > 0 && (r->calls_solved ? cfg->blocks[b].loop_depth == 0 :
				     cfg->blocks[b].cls == cfg->blocks[cfg->entry].cls) &&
			 (x > 0 || !(eb->samples > 0)))
			calls_interval(cfg, r, pi, b);	/* tied to the entry (a block
							 * with samples the flow left
							 * at 0 keeps its own) */
		else
			sampled_interval(cfg, r, b, h, model, lowering, meas,
					 own_count(cfg, pi, b));
		eb->conf = conf_of(eb->lo, x, eb->hi);
		for (uint32_t i = cfg->blocks[b].first;
		     i < cfg->blocks[b].first + cfg->blocks[b].n; i++)
			r->insns[i].conf = eb->conf;
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		struct est_edge *ee = &r->edges[e];
		const struct est_block *from = &r->blocks[cfg->edges[e].from];
		double x = ee->executions, hp = 0;

		if (exact) {
			ee->lo = ee->hi = x;
			ee->conf = x > 0 ? EST_CONF_HIGH : EST_CONF_NONE;
			continue;
		}
		if (pi && pi->used && pi->edge_obs)	/* the branch's own share */
			hp = Z90 / sqrt(pi->edge_obs[e] + 1);
		ee->lo = from->executions > 0 ? x * (from->lo / from->executions) * exp(-hp) : 0;
		ee->hi = from->executions > 0 ? x * (from->hi / from->executions) * exp(hp) : 0;
		ee->conf = conf_of(ee->lo, x, ee->hi);
	}
}
