/*
 * estimate/calls.c - a procedure's counts from its calls counted at the
 * entry (docs/estimate.md, "Calls counted at the entry").  Where the plan
 * marked the entry (entry=, report/plan.c) the path runtime counted every
 * call (collect/pathrt.c), and the epoch holds them as the image's
 * PROF_EVENT_CALLS profile.  The entry block runs once a call, so that
 * count is measured, not estimated: every count of the procedure is the
 * estimate's shape (path probabilities, or the windows' ratios between
 * classes) times calls over the entry block's estimate.  What the samples'
 * scale read is kept (est_result.calls_scale) for the report.
 */
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

int est_use_calls(const struct cfg *cfg, struct est_result *r, double calls)
{
	double x0, k;

	if (!(calls > 0) || cfg->entry >= r->nblocks || !((x0 = r->blocks[cfg->entry].executions) > 0))
		return 0;
	k = calls / x0;
	for (size_t i = 0; i < r->ninsns; i++) {
		r->insns[i].executions *= k;
		r->insns[i].cpi = r->insns[i].executions > 0 ? r->insns[i].cycles /
							       r->insns[i].executions : 0;
	}
	for (size_t b = 0; b < r->nblocks && b < cfg->nblocks; b++) {
		struct est_block *eb = &r->blocks[b];

		eb->executions *= k;
		eb->actual_cpi = eb->executions > 0 && cfg->blocks[b].n ?
				 eb->cycles / (eb->executions * cfg->blocks[b].n) : 0;
	}
	for (size_t e = 0; e < r->nedges; e++)
		r->edges[e].executions *= k;
	for (size_t c = 0; c < r->nclasses; c++)
		if (r->classes[c].estimate > 0)
			r->classes[c].estimate *= k;
	for (size_t b = 0; b < r->nblocks && b < cfg->nblocks; b++)
		if (b == cfg->entry || (cfg->blocks[b].cls >= 0 &&
					cfg->blocks[b].cls == cfg->blocks[cfg->entry].cls)) {
			r->blocks[b].executions = calls;	/* once a call: exactly */
			for (uint32_t i = cfg->blocks[b].first;
			     i < cfg->blocks[b].first + cfg->blocks[b].n && i < r->ninsns; i++)
				r->insns[i].executions = calls;
		}
	r->calls = calls;
	r->calls_scale = 1 / k;
	return 1;
}
