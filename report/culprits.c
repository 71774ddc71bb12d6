/*
 * culprits.c - dynamic-stall culprits as dcpicalc prints them: the bubbles
 * above a stalled instruction (the paper's fig. 2) and the procedure's stall
 * summary (fig. 4), text and JSON (docs/culprits.md).
 */
#include <errno.h>
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/model.h"
#include "dcpi/report.h"

void rep_culprit_bubbles(FILE *f, const struct cfg *cfg, const struct cul_stall *s,
			 double per_exec)
{
	if (!s)
		return;
	if (!s->nsuspects) {
		fprintf(f, "   d  unexplained ... %.1fcy\n", per_exec);
		return;
	}
	for (size_t k = 0; k < s->nsuspects && k < 4; k++) {
		const struct cul_suspect *u = &s->sus[k];

		fprintf(f, "   d  %s", cul_cause_name(u->cause));
		if (u->insn >= 0)
			fprintf(f, " on 0x%llx", (unsigned long long)cfg->insns[u->insn].addr);
		if (u->bound >= 0)
			fprintf(f, " (at most %.3g cycles)", u->bound);
		if (k == 0)
			fprintf(f, " ... %.1fcy", per_exec);
		fprintf(f, "\n");
	}
	if (s->nsuspects > 4)
		fprintf(f, "   d  (%zu more suspects: --json)\n", s->nsuspects - 4);
}

void rep_culprit_json(FILE *f, const struct cfg *cfg, const struct cul_stall *s)
{
	fprintf(f, ", \"dynamic_cycles\": %.6g, \"culprits\": [", s ? s->cycles : 0.0);
	for (size_t k = 0; s && k < s->nsuspects; k++) {
		const struct cul_suspect *u = &s->sus[k];

		fprintf(f, "%s{\"cause\": \"%s\", \"address\": ", k ? ", " : "",
			cul_cause_name(u->cause));
		if (u->insn >= 0)
			fprintf(f, "\"0x%llx\"", (unsigned long long)cfg->insns[u->insn].addr);
		else
			fprintf(f, "null");
		fprintf(f, ", \"distance\": %d, \"bound\": ", u->distance);
		if (u->bound >= 0)
			fprintf(f, "%.6g", u->bound);
		else
			fprintf(f, "null");
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

static_assert(MODEL_R_COUNT <= 16, "rep_stalls.by_reason holds every reason");

void rep_stalls_add(struct rep_stalls *t, const struct cfg *cfg, const struct est_result *r,
		    const struct cul_result *cr)
{
	const struct cul_summary *m = &cr->sum;

	for (size_t i = 0; i < cfg->ninsns && i < r->ninsns; i++) {
		const struct est_insn *x = &r->insns[i];

		t->cycles += x->cycles;
		if (!(x->executions > 0))
			continue;
		/* static stall cycles by the model's reason: F x M_i where it waited */
		t->best += x->executions * x->m;
		if (x->reason != MODEL_R_NONE && x->reason < MODEL_R_COUNT)
			t->by_reason[x->reason] += x->executions * x->m;
	}
	t->dynamic += m->dynamic;
	for (int c = 0; c <= CUL_UNEXPLAINED; c++) {
		t->min[c] += m->min[c];
		t->max[c] += m->max[c];
		t->share[c] += m->share[c];
	}
	for (int e = 0; e < CUL_NEVENTS; e++) {
		t->measured_n[e] += m->measured_n[e];
		t->measured_cycles[e] += m->measured_cycles[e];
	}
	t->measured_dram += m->measured_dram;
	t->procs++;
}

void rep_stalls_text(FILE *f, const char *what, const struct rep_stalls *t)
{
	double pct = t->cycles > 0 ? 100.0 / t->cycles : 0;

	fprintf(f, "\n*** Stall summary of %s: %.4g cycles", what, t->cycles);
	if (t->procs > 1)
		fprintf(f, " in %zu procedures", t->procs);
	fprintf(f, "\n*** Dynamic stalls %.4g cycles (%.1f%%), by cause: min - max (causes "
		"overlap), and the likeliest split:\n", t->dynamic, t->dynamic * pct);
	for (int c = 0; c <= CUL_UNEXPLAINED; c++) {
		if (t->max[c] <= 0 && t->share[c] <= 0 && c != CUL_UNEXPLAINED)
			continue;
		fprintf(f, "      %-20s %5.1f%% - %5.1f%%   %5.1f%%\n",
			cul_cause_name((enum cul_cause)c), t->min[c] * pct, t->max[c] * pct,
			t->share[c] * pct);
	}
	if (t->measured_n[CUL_EV_DMISS] > 0)
		fprintf(f, "*** D-cache misses measured (IBS op / PEBS samples): %.4g, "
			"%.0f cycles each (mean measured latency), %.0f%% from DRAM\n",
			t->measured_n[CUL_EV_DMISS],
			t->measured_cycles[CUL_EV_DMISS] / t->measured_n[CUL_EV_DMISS],
			100 * t->measured_dram / t->measured_n[CUL_EV_DMISS]);
	fprintf(f, "*** Static stalls (the model's best case), by reason:\n");
	for (int k = 1; k < MODEL_R_COUNT; k++)
		if (t->by_reason[k] > 0)
			fprintf(f, "      %-20s %5.1f%%\n", model_reason_name((enum model_reason)k),
				t->by_reason[k] * pct);
	fprintf(f, "*** Best case (executions x M_i) %.4g cycles (%.1f%%)\n", t->best,
		t->best * pct);
	if (t->best > 1.05 * t->cycles)
		fprintf(f, "(the best case exceeds the cycles sampled: the estimated executions "
			"are too high here\n (docs/estimate.md); --exact DB gives callgrind's)\n");
}

void rep_stalls_json(FILE *f, const struct rep_stalls *t)
{
	fprintf(f, "{\"procedures\": %zu, \"cycles\": %.6g, \"dynamic\": %.6g, "
		"\"best_case\": %.6g, \"causes\": {", t->procs, t->cycles, t->dynamic, t->best);
	for (int c = 0; c <= CUL_UNEXPLAINED; c++)
		fprintf(f, "%s\"%s\": {\"min\": %.6g, \"max\": %.6g, \"share\": %.6g}",
			c ? ", " : "", cul_cause_name((enum cul_cause)c), t->min[c], t->max[c],
			t->share[c]);
	fprintf(f, "}, \"static\": {");
	for (int k = 1, first = 1; k < MODEL_R_COUNT; k++, first = 0)
		fprintf(f, "%s\"%s\": %.6g", first ? "" : ", ",
			model_reason_name((enum model_reason)k), t->by_reason[k]);
	fprintf(f, "}}");
}

void rep_culprit_summary_text(FILE *f, const char *proc, const struct cfg *cfg,
			      const struct est_result *r, const struct cul_result *cr)
{
	struct rep_stalls t;

	memset(&t, 0, sizeof(t));
	rep_stalls_add(&t, cfg, r, cr);
	rep_stalls_text(f, proc, &t);
}

void rep_culprit_summary_json(FILE *f, const struct cfg *cfg, const struct est_result *r,
			      const struct cul_result *cr)
{
	struct rep_stalls t;

	memset(&t, 0, sizeof(t));
	rep_stalls_add(&t, cfg, r, cr);
	rep_stalls_json(f, &t);
}
