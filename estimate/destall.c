/*
 * destall.c - the samples of the instructions that do not stall give the
 * count where a load misses (docs/estimate.md "After a stalled load").
 *
 * A timer interrupt is taken at an instruction boundary and names the
 * oldest instruction not yet retired, so a load that misses piles its
 * samples on the instruction after it (skid, docs/estimate.md "Where samples
 * land").  Time samples alone cannot tell such a pile from executions: a
 * window's ratio S x cps / M counts the miss's cycles as runs of the block
 * (a pointer chase estimated 120 times too often).  But the instruction k
 * that waits on the load's register cannot retire before the data arrives,
 * and then it is the oldest instruction for its own latency: the instruction
 * after it, k + 1, receives k's cycles M_k, whatever the miss cost.  Its
 * samples give the block's executions
 *
 *   x = S_{k+1} x cps / (M_k x f)
 *
 * where f is what the machine shows of those M_k cycles: a part of the
 * latency overlaps the data's arrival.  It is a property of the machine and
 * varies with the miss: on a Zen 4 VM, chases of 256 KB, 4 MB, 32 MB and
 * 256 MB showed 0.54, 0.45 (0.70 at another rate), 1.05 and 0.74 of the
 * add's one cycle (docs/estimate.md "After a stalled load").  Without a
 * measurement of the machine at hand f is EST_STALL_EXPOSURE, their
 * geometric middle, and the interval spans the range (interval.c).
 * Where x's 95% upper limit lies below the block's own window ratio, the
 * block waited on that load, and the samples the ratios see are those a
 * run without the miss would give: each instruction keeps at most x x M of
 * the instruction before it (whose cycles the skid hands it) / cps, and
 * est_procedure's windows and the path scale read the block at x.  The samples reported per instruction, CPI and the
 * culprits keep the real ones: the difference is the miss's dynamic stall.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

/* 95% one-sided Poisson upper limit of a count n (Wilson-Hilferty). */
double est_poisson_upper(double n, double z)
{
	double a = n + 1, t = 1 - 1 / (9 * a) + z / (3 * sqrt(a));

	return a * t * t * t;
}

/* ... and lower limit (0 for n = 0). */
double est_poisson_lower(double n, double z)
{
	double t;

	if (n <= 0)
		return 0;
	t = 1 - 1 / (9 * n) - z / (3 * sqrt(n));
	return t > 0 ? n * t * t * t : 0;
}

/* Does instruction k of cfg wait on a load's register (j its index)? */
static int waits_on_load(const struct cfg *cfg, const int *reason, const int *culprit,
			 const uint8_t *streams, uint32_t k, uint32_t *j)
{
	int c = culprit[k];

	if (reason[k] != MODEL_R_REG_DEP || c < 0 || (uint32_t)c >= cfg->ninsns)
		return 0;
	if (!(cfg->insns[c].flags & CFG_I_LOAD))
		return 0;
	/* a load walking its lines in order (its value samples' stride) misses
	 * at most once a line, ahead of the prefetcher: its waiter retires with
	 * the rest, and where the next instruction gets no sample the block
	 * waited on something else (gzip's crc loop: the byte stream's waiter
	 * 617 samples, the one after it none, 4670 after the table load that
	 * carries the crc round: counted from that witness at 0.11x) */
	if (streams && streams[c])
		return 0;
	/* a slot of the stack frame (rsp and a displacement: a spill, a
	 * local) was written lately and hits L1: its waiter witnesses no miss
	 * (xz's match finder: the pile after a heap load of the block before
	 * read as a stack load's miss, 6.7x) */
	if (cfg_insn_stack_slot(&cfg->insns[c]))
		return 0;
	*j = (uint32_t)c;
	return 1;
}

/* The instruction whose cycles land on i (skid one): the one before it, the
 * block's last for the first of a block that loops on itself, else i. */
static uint32_t prev_insn(const struct cfg *cfg, uint32_t b, uint32_t i)
{
	const struct cfg_block *bl = &cfg->blocks[b];

	if (i > bl->first)
		return i - 1;
	return cfg_self_loop(cfg, b) ? bl->first + bl->n - 1 : i;
}

/* Block b: the best "after the load" witness, 0 when none is significant. */
static int block_witness(const struct cfg *cfg, uint32_t b, const double *s, const double *m,
			 const int *reason, const int *culprit, const uint8_t *streams, double f,
			 struct est_stall *out)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double sb = 0, mb = 0, best = -1;
	int found = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		sb += s[i];
		mb += m[i];
	}
	if (mb <= 0 || sb <= 0)
		return 0;
	for (uint32_t k = bl->first; k + 1 < bl->first + bl->n; k++) {
		uint32_t j;
		double w = s[k + 1], up;

		if (!waits_on_load(cfg, reason, culprit, streams, k, &j) || m[k] <= 0 ||
		    j < bl->first || j >= k)
			continue;
		/* significant: even its upper limit is below the window's count */
		up = est_poisson_upper(w, 1.645) / (m[k] * f);
		if (!(up < sb / mb) || w <= best)
			continue;
		best = w;
		*out = (struct est_stall){ .block = b, .load = j, .waiter = k,
					   .witness_samples = w, .exposure = m[k] * f,
					   .per_cps = w / (m[k] * f), .window_per_cps = sb / mb };
		found = 1;
	}
	return found;
}

int est_destall(const struct cfg *cfg, const double *s, const double *m, const int *reason,
		const int *culprit, const uint8_t *streams, double f, double *s_out,
		struct est_stall *st, size_t *nst)
{
	size_t n = 0;
	int measured = f > 0;

	if (!measured)
		f = EST_STALL_EXPOSURE;
	memcpy(s_out, s, cfg->ninsns * sizeof(*s));
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		struct est_stall w;
		double x;

		if (!block_witness(cfg, b, s, m, reason, culprit, streams, f, &w))
			continue;
		w.f_measured = measured;
		/* every instruction keeps at most what a stall-free run gives it:
		 * the cycles of the one before it (the skid), x of them */
		x = w.per_cps;
		for (uint32_t i = cfg->blocks[b].first; i < cfg->blocks[b].first + cfg->blocks[b].n;
		     i++)
			s_out[i] = fmin(s[i], x * m[prev_insn(cfg, b, i)]);
		/* and the witness stands for the waiter's whole M_k */
		s_out[w.waiter + 1] = x * m[w.waiter];
		if (st)
			st[n] = w;
		n++;
	}
	if (nst)
		*nst = n;
	return 0;
}

double est_exposure_measured(const struct cfg *cfg, const struct model *model,
			     const double *exact, const double *s, double cps)
{
	size_t n = cfg->ninsns + 1;
	double *m = calloc(n, sizeof(*m)), f = 0, best = 0;
	int *reason = calloc(n, sizeof(*reason)), *culprit = calloc(n, sizeof(*culprit));
	struct dcpi_err err = { 0 };

	if (!m || !reason || !culprit ||
	    est_model_m(cfg, model, EST_STEADY_SELF, m, reason, culprit, &err) < 0)
		goto out;
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		for (uint32_t k = bl->first; k + 1 < bl->first + bl->n; k++) {
			uint32_t j;

			/* the waiter with the most witness samples names f */
			if (!waits_on_load(cfg, reason, culprit, NULL, k, &j) || m[k] <= 0 ||
			    exact[k] <= 0 || s[k + 1] <= best)
				continue;
			best = s[k + 1];
			f = s[k + 1] * cps / (m[k] * exact[k]);
		}
	}
out:
	free(m);
	free(reason);
	free(culprit);
	return f;
}

double est_exposure_recorded(uint64_t witness, uint64_t samples, double cycles_step,
			     double *upper)
{
	double w = (double)witness, per = samples ? cycles_step / (double)samples : 0;
	double up = est_poisson_upper(w, 1.645) * per, down = est_poisson_lower(w, 1.645) * per;

	if (upper)
		*upper = up;
	if (!(per > 0))
		return 0;
	if (w > 0 && up <= w * per * EST_STALL_EXPOSURE_SPREAD &&
	    down >= w * per / EST_STALL_EXPOSURE_SPREAD)
		return w * per;
	if (up < EST_STALL_EXPOSURE / EST_STALL_EXPOSURE_SPREAD)
		return -1;
	return 0;
}
