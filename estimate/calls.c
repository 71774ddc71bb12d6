/*
 * estimate/calls.c - a procedure's counts from its calls counted at the
 * entry (docs/estimate.md, "Calls counted at the entry").  Where the plan
 * marked the entry (entry=, report/plan.c) the path runtime counted every
 * call (collect/pathrt.c), and the epoch holds them as the image's
 * PROF_EVENT_CALLS profile.  The entry block runs once a call, so that
 * count is measured, not estimated: every count of the procedure is the
 * estimate's, with the flow solved again around the measured count
 * (est_use_calls).  What the samples' scale read at the entry is kept
 * (est_result.calls_scale) for the report.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"

double est_calls_counted(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
			 const struct image *img, uint64_t entry)
{
	uint64_t off;

	if (img_vaddr_to_offset(img, entry, &off))
		return 0;
	for (size_t i = 0; i < np; i++)
		if (!strcmp(p[i].event, PROF_EVENT_CALLS) && prof_image_id_equal(&p[i].image, id))
			return (double)prof_profile_count(&p[i], off);
	return 0;
}

/* The executions of cfg's blocks counted where a plan's block lines put
 * a counting trampoline (PROF_EVENT_EXECS, at each block's first byte):
 * out[b] the count, 0 where not counted; how many were. */
size_t est_blocks_counted(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
			  const struct image *img, const struct cfg *cfg, double *out)
{
	const struct prof_profile *ex = NULL;
	size_t n = 0;

	for (size_t i = 0; i < np && !ex; i++)
		if (!strcmp(p[i].event, PROF_EVENT_EXECS) && prof_image_id_equal(&p[i].image, id))
			ex = &p[i];
	for (size_t b = 0; b < cfg->nblocks; b++) {
		uint64_t off;

		out[b] = 0;
		if (ex && cfg->blocks[b].n && !img_vaddr_to_offset(img, cfg->blocks[b].start, &off))
			out[b] = (double)prof_profile_count(ex, off);
		n += out[b] > 0;
	}
	return n;
}

/* A loop's class is held at its count as if it had this many times its
 * samples: against the straight code, not against a better-sampled loop;
 * a counted class, this many times the heaviest other. */
#define EST_CALLS_HELD 1e3
/* A loop's block the re-solve moved further than this either way: the
 * solution did not hold the loops (its terms too far apart for the
 * solver), and only the counted classes take their counts. */
#define EST_CALLS_LOOP_MOVE 1.5

/* A block outside every loop the re-solve moved further than this beyond
 * the scale the calls set (calls / the entry's estimate), either way: the
 * solution gave it up to hold the loops (malloc's straight code in perl:
 * 458 executions for 33 samples of a block run 1,330,000 times). */
#define EST_CALLS_STRAIGHT_MOVE 10.0

/* Is block b, outside every loop and not counted, strained so by the
 * solution x: moved past EST_CALLS_STRAIGHT_MOVE, or run more often than
 * the procedure was called (it is passed at most once a call)? */
static int straight_strained(const struct cfg *cfg, const struct est_result *r, size_t b,
			     double x, double calls, double x0, const double *held)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double was = r->blocks[b].executions, scale = calls > 0 && x0 > 0 ? calls / x0 : 1;

	if (bl->loop_depth > 0 || !bl->n || (bl->cls >= 0 && held[bl->cls] > 0))
		return 0;
	if (calls > 0 && !cfg->missing_edges && x > 1.05 * calls)
		return 1;
	return was > 0 && r->blocks[b].samples > 0 &&
	       (x > EST_CALLS_STRAIGHT_MOVE * scale * was ||
		x * EST_CALLS_STRAIGHT_MOVE < scale * was);
}

/*
 * A recording without a sample's cycles (not calibrated: est_result
 * relative, cycles_per_sample 1) has counts in relative units, which a
 * measured count cannot be held against: every count and cycle is scaled
 * first by the counted classes' measured over relative counts (summed), so
 * that a sample is worth the cycles the counted code says
 * (r->cycles_per_sample, r->relative cleared); the factor.
 */
static double absolute(const struct cfg *cfg, struct est_result *r, const double *held)
{
	double num = 0, den = 0, f;
	uint8_t *seen = calloc(r->nclasses + 1, 1);

	for (size_t b = 0; seen && b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls;

		if (c < 0 || (size_t)c >= r->nclasses || !(held[c] > 0) || seen[c] ||
		    !(r->blocks[b].executions > 0))
			continue;
		seen[c] = 1;
		num += held[c];
		den += r->blocks[b].executions;
	}
	free(seen);
	if (!(num > 0 && den > 0))
		return 1;
	f = num / den;
	for (size_t b = 0; b < r->nblocks; b++) {
		r->blocks[b].executions *= f;
		r->blocks[b].cycles *= f;
	}
	for (size_t i = 0; i < r->ninsns; i++) {
		r->insns[i].executions *= f;
		r->insns[i].cycles *= f;
	}
	for (size_t e = 0; e < r->nedges; e++)
		r->edges[e].executions *= f;
	r->cycles_per_sample *= f;
	r->relative = 0;
	return f;
}

/* Is block b's innermost loop one with a counted class?  (A loop nested
 * in it keeps its own trip counts, the samples'.) */
static int in_counted_loop(const struct cfg *cfg, const uint8_t *loop_counted, uint32_t b)
{
	int L = cfg->blocks[b].loop;

	return L >= 0 && (size_t)L < cfg->nloops && loop_counted[L];
}

/* Was block b counted from a stalled load's witness (destall.c): its count
 * is not the loop's samples' scale. */
static int witnessed(const struct est_result *r, size_t b)
{
	for (size_t k = 0; k < r->nstalls; k++)
		if (r->stalls[k].block == b)
			return 1;
	return 0;
}

/*
 * Per block, the scale its innermost loop's counted classes measured: their
 * counts over what the estimate had said of them (*scale[nblocks], 1 for a
 * block of no such loop and one counted from a witness; NULL when no block
 * has another).  A loop's samples read all its blocks at one scale, so
 * where they misread the counted classes (a mispredicting loop's refetches
 * taken for executions: cut's field loop, 1.4 to 6 times its counts) they
 * misread the rest alike, and the re-solve starts the loop's other classes
 * from their estimates times it.
 */
static int loop_scales(const struct cfg *cfg, const struct est_result *r, const double *held,
		       double **scale)
{
	double *num = calloc(cfg->nloops + 1, sizeof(*num));
	double *den = calloc(cfg->nloops + 1, sizeof(*den));
	double *f = calloc(cfg->nblocks + 1, sizeof(*f));
	uint8_t *seen = calloc(r->nclasses + 1, 1);
	int any = 0, rc = 0;

	*scale = NULL;
	if (!num || !den || !f || !seen) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls, L = cfg->blocks[b].loop;

		if (c < 0 || (size_t)c >= r->nclasses || !(held[c] > 0) || seen[c] || L < 0 ||
		    (size_t)L >= cfg->nloops || !(r->blocks[b].executions > 0))
			continue;
		seen[c] = 1;
		num[L] += held[c];
		den[L] += r->blocks[b].executions;
	}
	for (size_t b = 0; b < cfg->nblocks; b++) {
		int L = cfg->blocks[b].loop;

		f[b] = L >= 0 && (size_t)L < cfg->nloops && den[L] > 0 && !witnessed(r, b) ?
		       num[L] / den[L] : 1;
		any |= f[b] != 1;
	}
	if (any) {
		*scale = f;
		f = NULL;
	}
out:
	free(num);
	free(den);
	free(f);
	free(seen);
	return rc;
}

/*
 * The flow solved again (est_solve_flow) with every counted class held at
 * its count (the entry's at the calls, a counted block's at its
 * executions), every class with a block in a loop that has no counted
 * class held at its count against the straight code (its iterations are
 * the samples' to say: a loop's back edge is free, and a shape's trip
 * counts from a few path bursts are no better; between loops the better
 * sampled wins), and every other class pulled to its count by its
 * samples, as the solver weighs them (the inverse of a Poisson variance):
 * the straight code of a call takes the measured scale, its branches
 * split by their samples (in the ratio of their counts where their best
 * cases are alike), and so do the other blocks of a counted loop.
 */
int est_use_counts(const struct cfg *cfg, struct est_result *r, double calls,
		   const double *counts, struct dcpi_err *err)
{
	struct est_class *cls = NULL;
	double *x = NULL, *y = NULL, *held = NULL, *scale = NULL, resid = 0, x0 = 0, wmax = 0;
	uint8_t *loop_counted = NULL;
	int ecls = -1, rc = 0, solved = 1;
	size_t nheld = 0, nblk = 0;

	if (cfg->entry < r->nblocks && cfg->blocks[cfg->entry].cls >= 0 &&
	    (size_t)cfg->blocks[cfg->entry].cls < r->nclasses) {
		ecls = cfg->blocks[cfg->entry].cls;
		x0 = r->blocks[cfg->entry].executions;
	}
	if (!(calls > 0 && ecls >= 0 && x0 >= 0))
		calls = 0;
	for (size_t b = 0; counts && b < cfg->nblocks && b < r->nblocks; b++)
		nblk += counts[b] > 0 && cfg->blocks[b].cls >= 0 &&
			(size_t)cfg->blocks[b].cls < r->nclasses;
	if (!calls && !nblk)
		return 0;
	cls = calloc(r->nclasses, sizeof(*cls));
	held = calloc(r->nclasses + 1, sizeof(*held));
	x = calloc(cfg->nblocks + 1, sizeof(*x));
	y = calloc(cfg->nedges + 1, sizeof(*y));
	loop_counted = calloc(cfg->nloops + 1, 1);
	free(r->counted);
	r->counted = calloc(r->nblocks + 1, 1);
	if (!cls || !held || !x || !y || !loop_counted || !r->counted) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		goto out;
	}
	if (calls)
		held[ecls] = calls;
	for (size_t b = 0; counts && b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls;

		if (!(counts[b] > 0) || c < 0 || (size_t)c >= r->nclasses || (calls && c == ecls))
			continue;
		held[c] = counts[b];	/* a class runs as often as each of its blocks */
		if (cfg->blocks[b].loop >= 0 && (size_t)cfg->blocks[b].loop < cfg->nloops)
			loop_counted[cfg->blocks[b].loop] = 1;
	}
	if (r->relative)
		x0 *= absolute(cfg, r, held);
	rc = loop_scales(cfg, r, held, &scale);
	if (rc < 0)
		goto out;
	for (size_t c = 0; c < r->nclasses; c++) {
		cls[c] = r->classes[c];
		cls[c].estimate = -1;
		nheld += held[c] > 0;
	}
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls;
		double f = scale ? scale[b] : 1;

		x[b] = r->blocks[b].executions * f;
		if (c < 0 || (size_t)c >= r->nclasses || !cfg->blocks[b].n)
			continue;
		if (cls[c].estimate < 0) {
			cls[c].estimate = r->blocks[b].executions * f;
			cls[c].source = EST_S_SUM;
			cls[c].used_samples = fmax(r->classes[c].samples, 1);
			if (cls[c].conf == EST_CONF_NONE)
				cls[c].conf = EST_CONF_LOW;
		}
		if (cfg->blocks[b].loop_depth > 0 && !in_counted_loop(cfg, loop_counted, (uint32_t)b))
			cls[c].used_samples = EST_CALLS_HELD * fmax(r->classes[c].samples, 1);
	}
	for (size_t e = 0; e < cfg->nedges && e < r->nedges; e++)
		y[e] = r->edges[e].executions;
	y[cfg->nedges] = x0;
	/* measured: EST_CALLS_HELD times any other class's weight (more would
	 * leave the solver's conjugate gradients unconverged) */
	for (size_t c = 0; c < r->nclasses; c++)
		if (cls[c].estimate > 0 && !(held[c] > 0))
			wmax = fmax(wmax, cls[c].used_samples / (cls[c].estimate * cls[c].estimate));
	for (size_t c = 0; c < r->nclasses; c++) {
		if (!(held[c] > 0))
			continue;
		cls[c].estimate = held[c];
		cls[c].source = EST_S_SUM;
		cls[c].conf = EST_CONF_HIGH;
		cls[c].used_samples = EST_CALLS_HELD * fmax(wmax, 1 / (held[c] * held[c])) *
				      held[c] * held[c];
	}
	rc = est_solve_flow(cfg, cls, x, y, &resid, err);
	if (rc < 0)
		goto out;
	if (cfg->missing_edges)
		solved = 0;	/* no flow to solve (estimate/calc.c estimate_classes) */
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++)
		if (cfg->blocks[b].loop_depth > 0 && cfg->blocks[b].n &&
		    !in_counted_loop(cfg, loop_counted, (uint32_t)b) &&
		    !(x[b] <= EST_CALLS_LOOP_MOVE * r->blocks[b].executions &&
		      x[b] * EST_CALLS_LOOP_MOVE >= r->blocks[b].executions))
			solved = 0;
		else if (straight_strained(cfg, r, b, x[b], calls, x0, held))
			solved = 0;
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls, counted = c >= 0 && (size_t)c < r->nclasses && held[c] > 0;
		double f = scale ? scale[b] : 1;

		if (!solved && !counted && f == 1)
			continue;
		/* a counted class's: measured, exactly; unsolved, the rest of a
		 * counted loop at the scale its counted classes measured */
		est_set_block_count(cfg, r, b, counted ? held[c] : solved ? x[b] :
					       r->blocks[b].executions * f);
		r->blocks[b].unreached = 0;
		r->counted[b] = (uint8_t)counted;
	}
	for (size_t e = 0; solved && e < cfg->nedges && e < r->nedges; e++)
		r->edges[e].executions = y[e];
	if (solved)
		r->flow_residual = resid;
	r->calls_solved = solved;
	r->calls = calls;
	r->calls_scale = calls ? x0 / calls : 0;
	r->classes_counted = nheld - (calls > 0);
	rc = 1;
out:
	free(scale);
	free(cls);
	free(held);
	free(x);
	free(y);
	free(loop_counted);
	return rc;
}

int est_use_calls(const struct cfg *cfg, struct est_result *r, double calls, struct dcpi_err *err)
{
	return calls > 0 ? est_use_counts(cfg, r, calls, NULL, err) : 0;
}
