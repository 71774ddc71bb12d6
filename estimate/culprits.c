/*
 * culprits.c - an estimate's dynamic stalls handed to culprit/dynamic.c
 * (DCPI paper sec. 6.3), with the event profiles that bound the causes.
 *
 * The dynamic stall of an instruction is its cycles beyond the best case:
 * S_i x cycles-per-sample - F x M_i, where F is its estimated executions.
 * Event profiles of the same image bound the causes: callgrind's simulated
 * D1mr, I1mr, Bcm and Bim (exact, charged to the instruction that caused
 * them) and a PMU's miss events (sampled: a sample lands up to `skid`
 * instructions after the instruction that missed, so it is charged back to
 * the nearest load or branch within that distance, in the same block).
 * IBS op and PEBS samples (import/ibs.c) tag the instruction itself: their
 * counts are charged where they are, and their measured latencies bound
 * the D-cache cause in cycles (the ProfileMe way: measured, not inferred).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/culprit.h"
#include "dcpi/estimate.h"

enum { EV_COUNT, EV_CYCLES, EV_DRAM };

static const struct {
	const char *name;
	enum cul_event ev;
	int sampled;		/* a PMU's: may land after the instruction */
	int role;		/* EV_COUNT events, EV_CYCLES their measured cycles,
				 * EV_DRAM the misses served from DRAM */
} ev_map[] = {
	{ "callgrind-D1mr", CUL_EV_DMISS, 0, EV_COUNT },
	{ "callgrind-I1mr", CUL_EV_IMISS, 0, EV_COUNT },
	{ "callgrind-Bcm", CUL_EV_MISPREDICT, 0, EV_COUNT },
	{ "callgrind-Bim", CUL_EV_MISPREDICT, 0, EV_COUNT },
	{ "L1-dcache-load-misses", CUL_EV_DMISS, 1, EV_COUNT },
	{ "L1-icache-load-misses", CUL_EV_IMISS, 1, EV_COUNT },
	{ "branch-misses", CUL_EV_MISPREDICT, 1, EV_COUNT },
	{ "ibs-dc-miss", CUL_EV_DMISS, 0, EV_COUNT },
	{ "ibs-dc-miss-latency", CUL_EV_DMISS, 0, EV_CYCLES },
	{ "ibs-dram", CUL_EV_DMISS, 0, EV_DRAM },
	{ "ibs-mispredict", CUL_EV_MISPREDICT, 0, EV_COUNT },
	{ "pebs-dc-miss", CUL_EV_DMISS, 0, EV_COUNT },
	{ "pebs-dc-miss-latency", CUL_EV_DMISS, 0, EV_CYCLES },
	{ "pebs-dram", CUL_EV_DMISS, 0, EV_DRAM },
};

static int ev_role(const char *event)
{
	for (size_t k = 0; k < sizeof(ev_map) / sizeof(ev_map[0]); k++)
		if (!strcmp(event, ev_map[k].name))
			return ev_map[k].role;
	return -1;
}

void est_events_free(struct est_events *e)
{
	for (size_t k = 0; k < e->n; k++) {
		free(e->counts[k]);
		free(e->names[k]);
	}
	free(e->counts);
	free(e->names);
	free(e->list);
	free(e->exact);
	memset(e, 0, sizeof(*e));
}

static int keep(struct est_events *e, const struct prof_profile *p, double *v)
{
	void *a = realloc(e->counts, (e->n + 1) * sizeof(*e->counts));
	void *b;

	if (!a)
		return -ENOMEM;
	e->counts = a;
	b = realloc(e->names, (e->n + 1) * sizeof(*e->names));
	if (!b)
		return -ENOMEM;
	e->names = b;
	e->names[e->n] = strdup(p->event);
	if (!e->names[e->n])
		return -ENOMEM;
	e->counts[e->n] = v;
	e->n++;
	return 0;
}

int est_events_for(const struct prof_profile *p, size_t np, const struct prof_image_id *id,
		   const struct cfg *cfg, const struct image *img, struct est_events *out,
		   struct dcpi_err *err)
{
	for (size_t k = 0; k < np; k++) {
		int exact = !strcmp(p[k].event, "callgrind-Ir");
		double *v, total = 0, period = p[k].period > 0 ? p[k].period : 1;

		if (!prof_image_id_equal(id, &p[k].image))
			continue;
		if (!exact && est_culprit_event(p[k].event, NULL) < 0)
			continue;
		if (exact && out->exact)
			continue;
		v = calloc(cfg->ninsns + 1, sizeof(*v));
		if (!v)
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", p[k].event);
		if (est_samples_from_profile(cfg, img, &p[k], v, &total, err) < 0) {
			free(v);
			return err->code ? err->code : -EINVAL;
		}
		for (size_t i = 0; i < cfg->ninsns; i++)
			v[i] *= period;
		if (exact) {
			out->exact = v;
		} else if (keep(out, &p[k], v) < 0) {
			free(v);
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", p[k].event);
		}
	}
	free(out->list);
	out->list = calloc(out->n + 1, sizeof(*out->list));
	if (!out->list)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	for (size_t k = 0; k < out->n; k++) {
		out->list[k].event = out->names[k];
		out->list[k].counts = out->counts[k];
	}
	return 0;
}

void est_use_exact(const struct cfg *cfg, struct est_result *r, const double *x)
{
	for (size_t i = 0; i < cfg->ninsns && i < r->ninsns; i++) {
		struct est_insn *ei = &r->insns[i];

		ei->executions = x[i];
		ei->cpi = x[i] > 0 ? ei->cycles / x[i] : 0;
		ei->conf = x[i] > 0 ? EST_CONF_HIGH : EST_CONF_NONE;
	}
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct est_block *eb = &r->blocks[b];

		if (!bl->n)
			continue;
		eb->executions = x[bl->first];
		eb->actual_cpi = eb->executions > 0 ? eb->cycles / (eb->executions * bl->n) : 0;
		eb->conf = eb->executions > 0 ? EST_CONF_HIGH : EST_CONF_NONE;
	}
}

int est_culprit_event(const char *event, int *sampled)
{
	for (size_t k = 0; k < sizeof(ev_map) / sizeof(ev_map[0]); k++)
		if (!strcmp(event, ev_map[k].name)) {
			if (sampled)
				*sampled = ev_map[k].sampled;
			return (int)ev_map[k].ev;
		}
	return -1;
}

static int charged_to(const struct cfg_insn *x, enum cul_event ev)
{
	switch (ev) {
	case CUL_EV_DMISS:
		return (x->flags & CFG_I_LOAD) != 0;
	case CUL_EV_MISPREDICT:
		return (x->flags & (CFG_I_COND | CFG_I_INDIRECT | CFG_I_RET)) != 0;
	default:
		return 1;
	}
}

/* A sampled event at instruction i goes to the nearest instruction at or
 * before it, within skid and its block, that can cause it. */
static void charge_back(const struct cfg *cfg, const double *in, double *out,
			enum cul_event ev, int skid)
{
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		for (uint32_t j = 0; j < bl->n; j++) {
			uint32_t i = bl->first + j, to = i;

			if (!(in[i] > 0))
				continue;
			for (int d = 0; d <= skid && d <= (int)j; d++)
				if (charged_to(&cfg->insns[i - d], ev)) {
					to = i - d;
					break;
				}
			out[to] += in[i];
		}
	}
}

/*
 * A block's stalls cannot exceed its cycles beyond its best case: samples
 * seldom cross a block's end (docs/estimate.md, skid), so the block is where
 * the sum is known; within it, a skid longer than the one undone below would
 * leave a waiting instruction's best case unclaimed and count its samples as
 * a stall.  The instructions' stalls are scaled down to the block's excess.
 */
static void cap_to_block(const struct cfg_block *bl, const struct est_result *r, double *dyn)
{
	double cyc = 0, best = 0, sum = 0, excess;

	for (uint32_t j = 0; j < bl->n; j++) {
		const struct est_insn *x = &r->insns[bl->first + j];

		cyc += x->cycles;
		best += x->executions * x->m;
		sum += dyn[bl->first + j];
	}
	excess = cyc - best;
	if (sum <= 0 || sum <= excess)
		return;
	for (uint32_t j = 0; j < bl->n; j++)
		dyn[bl->first + j] = excess > 0 ? dyn[bl->first + j] * excess / sum : 0;
}

/*
 * Dynamic stall cycles per instruction, S x cps - F x M, with the skid
 * undone: an instruction that waits gets few samples of its own (they land
 * up to `skid` instructions later), so its unclaimed best-case cycles are
 * taken from the samples of the next skid instructions of its block before
 * anything there counts as a stall.
 */
static void stalls(const struct cfg *cfg, const struct est_result *r, int skid,
		   double *dyn, double *exec)
{
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double owed[8] = { 0 };		/* owed[k]: left k instructions back */

		for (uint32_t j = 0; j < bl->n; j++) {
			uint32_t i = bl->first + j;
			const struct est_insn *x = &r->insns[i];
			double d = x->cycles - x->executions * x->m;

			exec[i] = x->executions;
			if (!(x->executions > 0) || x->conf == EST_CONF_NONE) {
				memset(owed, 0, sizeof(owed));
				continue;
			}
			/* pay what earlier instructions are owed, oldest first */
			for (int k = skid; k >= 1 && d > 0; k--) {
				double pay = owed[k] < d ? owed[k] : d;

				owed[k] -= pay;
				d -= pay;
			}
			memmove(owed + 2, owed + 1, (size_t)(skid > 1 ? skid - 1 : 0) *
				sizeof(owed[0]));
			owed[1] = d < 0 ? -d : 0;
			if (skid < 1)
				owed[1] = 0;
			dyn[i] = d > 1e-9 * (x->cycles > 1 ? x->cycles : 1) ? d : 0;
		}
		cap_to_block(bl, r, dyn);
	}
}

int est_culprits(const struct cfg *cfg, const struct est_result *r,
		 const struct est_event_counts *ev, size_t nev, int skid,
		 struct cul_result *out, struct dcpi_err *err)
{
	struct cul_input in;
	double *dyn = NULL, *exec = NULL, *ee = NULL, *ep = NULL, *evs[CUL_NEVENTS] = { 0 };
	double *cyc[CUL_NEVENTS] = { 0 }, *dram = NULL;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (r->ninsns != cfg->ninsns || r->nedges != cfg->nedges)
		return dcpi_errf(err, -EINVAL, "%s: estimate and CFG differ", cfg->name);
	dyn = calloc(cfg->ninsns + 1, sizeof(*dyn));
	exec = calloc(cfg->ninsns + 1, sizeof(*exec));
	ee = calloc(cfg->nedges + 1, sizeof(*ee));
	ep = calloc(cfg->nedges + 1, sizeof(*ep));
	if (!dyn || !exec || !ee || !ep)
		goto nomem;
	skid = skid < 0 ? 0 : skid > 4 ? 4 : skid;
	stalls(cfg, r, skid, dyn, exec);
	for (size_t e = 0; e < cfg->nedges; e++) {
		ee[e] = r->edges[e].executions;
		ep[e] = r->edges[e].prob;
	}
	for (size_t k = 0; k < nev; k++) {
		int sampled = 0, c = est_culprit_event(ev[k].event, &sampled);

		if (c < 0 || !ev[k].counts)
			continue;
		if (ev_role(ev[k].event) != EV_COUNT) {
			double **to = ev_role(ev[k].event) == EV_CYCLES ? &cyc[c] : &dram;

			if (!*to && !(*to = calloc(cfg->ninsns + 1, sizeof(double))))
				goto nomem;
			for (size_t i = 0; i < cfg->ninsns; i++)
				(*to)[i] += ev[k].counts[i];
			continue;
		}
		if (!evs[c] && !(evs[c] = calloc(cfg->ninsns + 1, sizeof(double))))
			goto nomem;
		if (sampled)
			charge_back(cfg, ev[k].counts, evs[c], (enum cul_event)c, skid);
		else
			for (size_t i = 0; i < cfg->ninsns; i++)
				evs[c][i] += ev[k].counts[i];
	}
	cul_input_default(&in);
	in.cfg = cfg;
	in.dyn = dyn;
	in.exec = exec;
	in.edge_exec = ee;
	in.edge_prob = ep;
	in.skid = skid;
	for (int c = 0; c < CUL_NEVENTS; c++) {
		in.events[c] = evs[c];
		in.measured_cycles[c] = cyc[c];
	}
	in.dram_misses = dram;
	rc = cul_analyze(&in, out, err);
	goto done;
nomem:
	rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
done:
	for (int c = 0; c < CUL_NEVENTS; c++) {
		free(evs[c]);
		free(cyc[c]);
	}
	free(dram);
	free(dyn);
	free(exec);
	free(ee);
	free(ep);
	return rc;
}
