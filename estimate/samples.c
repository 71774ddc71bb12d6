/*
 * samples.c - the inputs of estimation: S_i per instruction from a profile
 * keyed by file offset, the cycles one sample is worth, and M_i per
 * instruction from the pipeline model (DCPI paper sec. 6.1.3).
 *
 * M_i: the paper schedules each block alone, ignoring its predecessors.  On
 * an out-of-order core a block that is its own loop body overlaps one
 * iteration with the next, so its single-pass M_i overstate the cycles per
 * execution; for those blocks the steady-state m_loop is used (EST_STEADY_SELF,
 * the default; docs/estimate.md has the measurements).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

/* Index of the instruction containing vaddr, -1 if none. */
static long insn_containing(const struct cfg *cfg, uint64_t va)
{
	size_t lo = 0, hi = cfg->ninsns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cfg_insn *in = &cfg->insns[mid];

		if (va < in->addr)
			hi = mid;
		else if (va >= in->addr + in->size)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

int est_samples_from_profile(const struct cfg *cfg, const struct image *img,
			     const struct prof_profile *p, double *s, double *total,
			     struct dcpi_err *err)
{
	uint64_t off0, off1;
	double sum = 0;

	memset(s, 0, cfg->ninsns * sizeof(*s));
	if (total)
		*total = 0;
	if (cfg->end <= cfg->start)
		return 0;
	if (img_vaddr_to_offset(img, cfg->start, &off0) < 0 ||
	    img_vaddr_to_offset(img, cfg->end - 1, &off1) < 0)
		return dcpi_errf(err, -ENOENT, "%s: procedure at 0x%llx is not in the file",
				 cfg->name, (unsigned long long)cfg->start);
	for (size_t k = 0; k < p->n; k++) {
		const struct prof_entry *e = &p->e[k];
		long i;

		if (e->offset < off0 || e->offset > off1)
			continue;
		i = insn_containing(cfg, cfg->start + (e->offset - off0));
		if (i < 0)
			continue;	/* padding or data inside the procedure */
		s[i] += (double)e->count;
		sum += (double)e->count;
	}
	if (total)
		*total = sum;
	return 0;
}

/*
 * The clock: cycles per sample are the mean of two calibrations, one before
 * the program ran and one after (collect/calibrate.c cal_sample), on a core
 * whose clock wanders with the host's load (docs/estimate.md "The clock":
 * a busy core timed in 100 ms pieces on a Zen 5 VM, 10th to 90th percentile
 * 4.10 to 4.22 GHz; six recordings of one program calibrated 324,500 to
 * 354,800 cycles a sample, their counts 0.93 to 1.02 of the truth).  The
 * two readings a and b estimate the wander, sigma about |log(b/a)| / sqrt 2,
 * and the run's own clock is one more draw of it, which their mean misses
 * by sigma sqrt(3/2): a 90% half-width of 1.645 sqrt(3) / 2 |log(b/a)|.
 */
double est_clock_h(const struct prof_epoch_meta *meta)
{
	if (!meta || !meta->calibrated || !(meta->clock_change > 0))
		return 0;
	return 1.645 * sqrt(3) / 2 * fabs(log(meta->clock_change));
}

double est_cycles_per_sample(const struct prof_profile *p, const struct prof_epoch_meta *meta)
{
	if (meta && meta->calibrated && meta->cycles_per_sample > 0)
		return meta->cycles_per_sample;
	if (!strcmp(p->period_unit, "ns")) {
		if (meta && meta->cycles_per_ns > 0)
			return p->period * meta->cycles_per_ns;
		if (p->cycles_per_unit > 0)
			return p->period * p->cycles_per_unit;
		return 0;
	}
	if (!strcmp(p->event, "cycles"))
		return p->period;
	if (p->cycles_per_unit > 0)
		return p->period * p->cycles_per_unit;
	return 0;
}

/* The predecessor a block most likely runs after: the deepest in loops,
 * the one laid out just before it on a tie; -1 when none. */
static long context_pred(const struct cfg *cfg, size_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	long best = -1;

	for (uint32_t k = 0; k < bl->npred; k++) {
		uint32_t p = cfg->edges[bl->pred[k]].from;

		if (p == b || !cfg->blocks[p].n)
			continue;
		if (best < 0 || cfg->blocks[p].loop_depth > cfg->blocks[best].loop_depth ||
		    (cfg->blocks[p].loop_depth == cfg->blocks[best].loop_depth && p + 1 == b))
			best = p;
	}
	return best;
}

int est_model_m(const struct cfg *cfg, const struct model *model, enum est_steady steady,
		double *m, int *reason, int *culprit, struct dcpi_err *err)
{
	for (size_t i = 0; i < cfg->ninsns; i++) {
		m[i] = 0;
		if (reason)
			reason[i] = MODEL_R_NONE;
		if (culprit)
			culprit[i] = -1;
	}
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct sched_block sb;
		const struct cfg_insn *pre = NULL;
		size_t npre = 0;
		int loop;
		int rc;

		if (!bl->n)
			continue;
		if (steady == EST_STEADY_CONTEXT && !cfg_self_loop(cfg, b)) {
			long p = context_pred(cfg, b);

			if (p >= 0) {
				pre = &cfg->insns[cfg->blocks[p].first];
				npre = cfg->blocks[p].n;
			}
		}
		rc = model_schedule(model, &cfg->insns[bl->first], bl->n, pre, npre, &sb, err);
		if (rc < 0)
			return rc;
		loop = steady == EST_STEADY_LOOPS ? bl->loop_depth > 0 :
		       steady == EST_STEADY_SELF || steady == EST_STEADY_CONTEXT ?
		       cfg_self_loop(cfg, b) : 0;
		for (uint32_t k = 0; k < bl->n && k < sb.n; k++) {
			const struct sched_insn *si = &sb.insns[k];
			size_t i = bl->first + k;

			m[i] = loop ? si->m_loop : si->m;
			if (reason)
				reason[i] = si->reason;
			if (culprit)
				culprit[i] = si->culprit >= 0 ? (int)bl->first + si->culprit : -1;
		}
		sched_block_free(&sb);
	}
	return 0;
}
