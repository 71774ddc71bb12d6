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

/* A loop's class is held at its count as if it had this many times its
 * samples: against the straight code, not against a better-sampled loop;
 * the entry's class, this many times the heaviest other. */
#define EST_CALLS_HELD 1e3
/* A loop's block the re-solve moved further than this either way: the
 * solution did not hold the loops (its terms too far apart for the
 * solver), and only the entry's class takes the calls. */
#define EST_CALLS_LOOP_MOVE 1.5

/*
 * The flow solved again (est_solve_flow) with the entry's class held at
 * calls, every class with a block in a loop held at its count against the
 * straight code (its iterations are the samples' to say: a loop's back edge
 * is free, and a shape's trip counts from a few path bursts are no better;
 * between loops the better sampled wins), and every other class pulled to
 * its count by its samples, as the solver weighs them (the inverse of a
 * Poisson variance): the straight code of a call takes the measured scale,
 * its branches split by their samples (in the ratio of their counts where
 * their best cases are alike).
 */
int est_use_calls(const struct cfg *cfg, struct est_result *r, double calls, struct dcpi_err *err)
{
	struct est_class *cls = NULL;
	double *x = NULL, *y = NULL, resid = 0, x0, wmax = 0;
	int ecls, rc = 0, solved = 1;

	if (!(calls > 0) || cfg->entry >= r->nblocks || (ecls = cfg->blocks[cfg->entry].cls) < 0 ||
	    (size_t)ecls >= r->nclasses || !((x0 = r->blocks[cfg->entry].executions) > 0))
		return 0;
	cls = calloc(r->nclasses, sizeof(*cls));
	x = calloc(cfg->nblocks + 1, sizeof(*x));
	y = calloc(cfg->nedges + 1, sizeof(*y));
	if (!cls || !x || !y) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		goto out;
	}
	for (size_t c = 0; c < r->nclasses; c++) {
		cls[c] = r->classes[c];
		cls[c].estimate = -1;
	}
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		int c = cfg->blocks[b].cls;

		x[b] = r->blocks[b].executions;
		if (c < 0 || (size_t)c >= r->nclasses || !cfg->blocks[b].n)
			continue;
		if (cls[c].estimate < 0) {
			cls[c].estimate = r->blocks[b].executions;
			cls[c].source = EST_S_SUM;
			cls[c].used_samples = fmax(r->classes[c].samples, 1);
			if (cls[c].conf == EST_CONF_NONE)
				cls[c].conf = EST_CONF_LOW;
		}
		if (cfg->blocks[b].loop_depth > 0)	/* its iterations: the samples' */
			cls[c].used_samples = EST_CALLS_HELD * fmax(r->classes[c].samples, 1);
	}
	for (size_t e = 0; e < cfg->nedges && e < r->nedges; e++)
		y[e] = r->edges[e].executions;
	y[cfg->nedges] = x0;
	cls[ecls].estimate = calls;
	cls[ecls].source = EST_S_SUM;
	cls[ecls].conf = EST_CONF_HIGH;
	/* measured: EST_CALLS_HELD times any other class's weight (more would
	 * leave the solver's conjugate gradients unconverged) */
	for (size_t c = 0; c < r->nclasses; c++)
		if (cls[c].estimate > 0 && (int)c != ecls)
			wmax = fmax(wmax, cls[c].used_samples / (cls[c].estimate * cls[c].estimate));
	cls[ecls].used_samples = EST_CALLS_HELD * fmax(wmax, 1 / (calls * calls)) * calls * calls;
	rc = est_solve_flow(cfg, cls, x, y, &resid, err);
	if (rc < 0)
		goto out;
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++)
		if (cfg->blocks[b].loop_depth > 0 && cfg->blocks[b].n &&
		    !(x[b] <= EST_CALLS_LOOP_MOVE * r->blocks[b].executions &&
		      x[b] * EST_CALLS_LOOP_MOVE >= r->blocks[b].executions))
			solved = 0;
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		struct est_block *eb = &r->blocks[b];
		const struct cfg_block *bl = &cfg->blocks[b];

		if (!solved && bl->cls != ecls)
			continue;
		eb->executions = bl->cls == ecls ? calls : x[b];	/* once a call: exactly */
		eb->actual_cpi = eb->executions > 0 && bl->n ? eb->cycles / (eb->executions * bl->n)
							      : 0;
		for (uint32_t i = bl->first; i < bl->first + bl->n && i < r->ninsns; i++) {
			r->insns[i].executions = eb->executions;
			r->insns[i].cpi = eb->executions > 0 ? r->insns[i].cycles / eb->executions : 0;
		}
	}
	for (size_t e = 0; solved && e < cfg->nedges && e < r->nedges; e++)
		r->edges[e].executions = y[e];
	if (solved)
		r->flow_residual = resid;
	r->calls_solved = solved;
	r->calls = calls;
	r->calls_scale = x0 / calls;
	rc = 1;
out:
	free(cls);
	free(x);
	free(y);
	return rc;
}
