/*
 * ratios.c - frequency of each cycle-equivalence class from the ratios of
 * sample cycles to best-case cycles over windows (DCPI paper sec. 6.1.3).
 *
 * A window W with sum_W M > 0 gives the ratio r_W = sum_W S x cps / sum_W M,
 * an upper bound of the class's executions (dynamic stalls only add
 * samples).  The paper's windows are issue points (M_i > 0), widened to the
 * dependence span j+1..i when issue point i waits on j.  On x86 the skid
 * moves samples one to three instructions on (docs/estimate.md, "Calibration:
 * where samples land"), so windows
 * may instead be whole blocks (EST_W_BLOCK) or blocks whose first
 * instructions' samples were handed back to their predecessors (EST_W_SKID,
 * computed by the caller as blk_s).
 *
 * The estimate is the M-weighted mean of the cluster of smallest ratios whose
 * max is within opts->spread of its min; a cluster is rejected as anomalous
 * when its ratio is 0 while the class has samples, when it holds fewer than
 * opts->min_frac of the class's windows, or when it would imply that some
 * other window stalls more than EST_MAX_STALL times its best case.  A cluster
 * resting on fewer than opts->few_samples samples is noise (a window of one
 * sample has a ratio off by 100%), not a small ratio, and is passed over (a
 * deviation from the paper, measured against it in bench/notes/estimate-log.md: no
 * better, no worse).  Classes with fewer than opts->few_samples samples use
 * sum S / sum M.
 *
 * Upper bounds.  A block's cycles are reported at its own instructions, at
 * its successors' first instructions (skid) or, when it retires in the
 * shadow of an older long-latency instruction, at its predecessors.  With S
 * samples in that window (the block and every block next to it, but of
 * a successor deeper in loops only its first opts->skid instructions),
 * count x sum_block M <= S_up x cps, S_up the 95% Poisson upper limit of S
 * (3 when S = 0), since M is a best case.  A class with no samples in any
 * such window is near zero and at most that bound: estimate 0 (source
 * EST_S_BOUND, low confidence) instead of whatever flow would push into it
 * (entry and exit blocks run a handful of times).  A class with no samples
 * of its own but samples next to it can be a hot short block whose cycles
 * were all reported elsewhere: propagation and the solver decide it, under
 * its bound.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

#define EST_MAX_STALL 300.0

struct est_point {
	int cls;
	double cyc, m;		/* window sums */
	double ratio;
	double samples;
};

static int point_cmp(const void *a, const void *b)
{
	const struct est_point *p = a, *q = b;

	if (p->cls != q->cls)
		return p->cls < q->cls ? -1 : 1;
	return p->ratio < q->ratio ? -1 : p->ratio > q->ratio;
}

/* Issue points of block b, widened to their dependence spans. */
static size_t points_insn(const struct cfg *cfg, size_t b, const double *s, double cps,
			  const double *m, const int *culprit, struct est_point *pt)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	size_t n = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		uint32_t j = i;
		double cyc = 0, mm = 0;

		if (m[i] <= 0)
			continue;
		if (culprit && culprit[i] >= (int)bl->first && culprit[i] < (int)i)
			j = (uint32_t)culprit[i] + 1;
		for (uint32_t k = j; k <= i; k++) {
			cyc += s[k] * cps;
			mm += m[k];
		}
		pt[n++] = (struct est_point){ bl->cls, cyc, mm, cyc / mm, cyc / cps };
	}
	return n;
}

/* Choose the cluster of class points pt[0..n) (sorted by ratio). */
static void cluster(struct est_point *pt, size_t n, double cls_samples,
		    const struct est_opts *o, struct est_class *c)
{
	double need = o->min_frac * (double)n;
	double maxr = pt[n - 1].ratio;

	for (size_t i = 0; i < n; i++) {
		double cyc = 0, mm = 0, ss = 0, f;
		size_t j = i;

		if (pt[i].ratio <= 0 && cls_samples > 0)
			continue;
		while (j + 1 < n && pt[j + 1].ratio <= o->spread * pt[i].ratio)
			j++;
		if ((double)(j - i + 1) < need)
			continue;
		for (size_t k = i; k <= j; k++) {
			cyc += pt[k].cyc;
			mm += pt[k].m;
			ss += pt[k].samples;
		}
		if (ss < o->few_samples)
			continue;	/* Poisson noise, not a ratio */
		f = cyc / mm;
		if (f > 0 && maxr / f > EST_MAX_STALL)
			continue;
		c->estimate = f;
		c->nused = (int)(j - i + 1);
		c->used_samples = ss;
		c->tightness = pt[i].ratio > 0 ? pt[j].ratio / pt[i].ratio : 1;
		c->source = EST_S_CLUSTER;
		return;
	}
}

/* Few samples, or no acceptable cluster: sum S / sum M over the class. */
static void class_sum(const struct est_point *pt, size_t n, struct est_class *c)
{
	double cyc = 0, mm = 0, ss = 0;

	for (size_t k = 0; k < n; k++) {
		cyc += pt[k].cyc;
		mm += pt[k].m;
		ss += pt[k].samples;
	}
	if (mm <= 0)
		return;
	c->used_samples = ss;
	c->estimate = cyc / mm;
	c->nused = (int)n;
	c->tightness = 1;
	c->source = EST_S_SUM;
}

static size_t collect_points(const struct cfg *cfg, const double *s, double cps,
			     const double *m, const int *culprit, const double *blk_s,
			     const struct est_opts *o, struct est_point *pt)
{
	size_t np = 0;

	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double ss = 0, mm = 0;

		if (!bl->n || bl->cls < 0)
			continue;
		if (o->window == EST_W_INSN) {
			np += points_insn(cfg, b, s, cps, m, culprit, pt + np);
			continue;
		}
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			ss += s[i];
			mm += m[i];
		}
		if (blk_s)
			ss = blk_s[b];
		if (mm > 0)
			pt[np++] = (struct est_point){ bl->cls, ss * cps, mm, ss * cps / mm, ss };
	}
	return np;
}

/* 95% one-sided Poisson upper limit of the mean for s observed (>= exact). */
static double poisson_upper(double s)
{
	return s + 3 + 2 * sqrt(s);
}

static double block_samples(const struct cfg_block *bl, const double *s)
{
	double sum = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		sum += s[i];
	return sum;
}

/*
 * The window of block b: b and every block next to it.  An out-of-order
 * core retires a cheap block in the shadow of an older long-latency
 * instruction (its cycles are reported there, or one instruction on), so
 * its own samples and its successors' heads are not enough: a one-
 * instruction block of a hot loop can get none at all (measured: gzip's
 * longest_match, 1.2e8 executions, 0 samples).  Only a block whose whole
 * neighbourhood is cold is known to be cold.  Neighbours deeper in loops
 * than the block run apart from it (the blocks before and after a hot
 * loop): of those only the first `skid` instructions of a successor count.
 */
static double window_samples(const struct cfg *cfg, const struct cfg_block *bl, const double *s,
			     uint32_t skid)
{
	double sw = block_samples(bl, s);

	for (uint32_t k = 0; k < bl->nsucc + bl->npred; k++) {
		const struct cfg_edge *e = &cfg->edges[k < bl->nsucc ? bl->succ[k] :
						       bl->pred[k - bl->nsucc]];
		const struct cfg_block *t = &cfg->blocks[k < bl->nsucc ? e->to : e->from];

		if (t->loop_depth <= bl->loop_depth)
			sw += block_samples(t, s);
		else if (k < bl->nsucc)	/* a loop it enters: only the skid */
			for (uint32_t i = t->first; i < t->first + t->n && i < t->first + skid; i++)
				sw += s[i];
	}
	return sw;
}

static void class_bounds(const struct cfg *cfg, const double *s, double cps, const double *m,
			 const struct est_opts *o, struct est_class *classes)
{
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct est_class *c;
		double sw, mm = 0, bound;

		if (!bl->n || bl->cls < 0 || bl->cls >= cfg->nclasses)
			continue;
		c = &classes[bl->cls];
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			mm += m[i];
		if (mm <= 0)
			continue;
		sw = window_samples(cfg, bl, s, (uint32_t)(o->skid > 0 ? o->skid : 1));
		bound = poisson_upper(sw) * cps / mm;
		if (c->bound <= 0 || bound < c->bound) {
			c->bound = bound;
			c->window_samples = sw;
		}
	}
}

int est_class_ratios(const struct cfg *cfg, const double *s, double cps, const double *m,
		     const int *culprit, const double *blk_s, const struct est_opts *o,
		     struct est_class *classes, struct dcpi_err *err)
{
	struct est_point *pt = malloc((cfg->ninsns + cfg->nblocks + 1) * sizeof(*pt));
	size_t np, i = 0;

	if (!pt)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	if (cps <= 0)
		cps = 1;
	for (int c = 0; c < cfg->nclasses; c++)
		classes[c] = (struct est_class){ .estimate = -1, .tightness = 1, .flow = -1 };
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		if (bl->cls < 0 || bl->cls >= cfg->nclasses)
			continue;
		for (uint32_t k = bl->first; k < bl->first + bl->n; k++)
			classes[bl->cls].samples += s[k];
	}
	class_bounds(cfg, s, cps, m, o, classes);
	np = collect_points(cfg, s, cps, m, culprit, blk_s, o, pt);
	dcpi_qsort(pt, np, sizeof(*pt), point_cmp);
	while (i < np) {
		size_t j = i;
		struct est_class *c = &classes[pt[i].cls];

		while (j < np && pt[j].cls == pt[i].cls)
			j++;
		c->npoints = (int)(j - i);
		if (c->samples <= 0) {
			if (c->window_samples <= 0 && c->bound > 0)
				c->estimate = 0, c->source = EST_S_BOUND;
			i = j;
			continue;	/* skid-starved: propagation decides, bounded */
		}
		if (c->samples >= o->few_samples)
			cluster(pt + i, j - i, c->samples, o, c);
		if (c->source == EST_S_NONE)
			class_sum(pt + i, j - i, c);
		i = j;
	}
	free(pt);
	return 0;
}
