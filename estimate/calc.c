/*
 * calc.c - the per-procedure driver of estimation (DCPI paper sec. 6.1):
 * M_i from the model, class ratios and clusters (6.1.3), confidence (6.1.5),
 * local propagation (6.1.4), then optionally the global flow solver, and
 * from the block counts each instruction's executions (F x P) and CPI.
 *
 * EST_W_SKID runs the class step twice: once over whole blocks to learn the
 * edge counts, then with the samples of each block's first opts->skid
 * instructions handed back to its predecessors in proportion to those counts
 * (the samples a block's last instructions earned but its successors got):
 * opts->skid_share of them, the share `dcpi calibrate` measures moving on
 * (docs/estimate.md "Calibration: where samples land").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

void est_opts_default(struct est_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = EST_M_GLOBAL;
	o->window = EST_W_BLOCK;
	o->steady = EST_STEADY_SELF;
	o->skid = 1;
	o->skid_share = 0.6;
	o->spread = 1.5;
	o->min_frac = 0.25;
	o->few_samples = 20;
}

struct calc {
	const struct cfg *cfg;
	const double *s;
	const double *sr;	/* what the windows read (est_destall), or s */
	double cps;
	const struct est_opts *o;
	double *m, *x, *y, *blk_s;
	const double *mw;	/* what the windows divide by: m + expect_extra */
	int *reason, *culprit;
};

/* Samples per block with each block's head handed back to predecessors. */
static void skid_shift(struct calc *c)
{
	const struct cfg *cfg = c->cfg;

	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		c->blk_s[b] = 0;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			c->blk_s[b] += c->sr[i];
	}
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		uint32_t k = (uint32_t)c->o->skid;
		double head = 0, wsum = 0;

		if (!bl->npred || bl->n < 2)
			continue;
		if (k > bl->n - 1)
			k = bl->n - 1;
		for (uint32_t i = bl->first; i < bl->first + k; i++)
			head += c->sr[i] * c->o->skid_share;
		for (uint32_t p = 0; p < bl->npred; p++)
			wsum += fmax(c->y[bl->pred[p]], 0);
		c->blk_s[b] -= head;
		for (uint32_t p = 0; p < bl->npred; p++) {
			const struct cfg_edge *e = &cfg->edges[bl->pred[p]];
			double w = wsum > 0 ? fmax(c->y[bl->pred[p]], 0) / wsum : 1.0 / bl->npred;

			c->blk_s[e->from] += head * w;
		}
	}
}

/*
 * Confidence, propagation, then the flow solver: for the global method its
 * solution is the answer; for both it is the evidence confidence.c grades
 * agreement by (a class the flow pulls away from its estimate is low).
 * Solving again with the regraded weights was measured worse (a deflated
 * neighbour, e.g. a one-instruction block that lost its samples to skid,
 * makes a right class disagree too): the weights stay the first grades.
 */
static int settle(struct calc *c, struct est_class *cls, int global, double *resid,
		  struct dcpi_err *err)
{
	const struct cfg *cfg = c->cfg;
	size_t nb = cfg->nblocks, ne = cfg->nedges + 1;
	double *x0 = NULL, *y0 = NULL;
	int rc;

	est_confidence(cfg, cls);
	rc = est_propagate(cfg, cls, c->x, c->y, err);
	est_confidence(cfg, cls);	/* propagated classes too */
	if (rc < 0)
		return rc;
	x0 = malloc((nb + 1) * sizeof(*x0));
	y0 = malloc((ne + 1) * sizeof(*y0));
	if (!x0 || !y0) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		goto out;
	}
	memcpy(x0, c->x, nb * sizeof(*x0));
	memcpy(y0, c->y, ne * sizeof(*y0));
	rc = est_solve_flow(cfg, cls, c->x, c->y, resid, err);
	if (rc == -E2BIG) {
		dcpi_err_clear(err);
		rc = 0;	/* too large: the propagation result stands */
		memcpy(c->x, x0, nb * sizeof(*x0));
		goto out;
	}
	if (rc < 0)
		goto out;
	est_confidence_flow(cfg, cls, c->x);
	if (!global) {
		memcpy(c->x, x0, nb * sizeof(*x0));
		memcpy(c->y, y0, ne * sizeof(*y0));
		if (resid)
			*resid = 0;
	}
out:
	free(x0);
	free(y0);
	return rc;
}

static int estimate_classes(struct calc *c, struct est_class *cls, double *resid,
			    struct dcpi_err *err)
{
	const struct est_opts *o = c->o;
	int global = o->method == EST_M_GLOBAL;
	struct est_opts first = *o;
	int rc;

	if (o->window != EST_W_SKID) {
		rc = est_class_ratios(c->cfg, c->sr, c->cps, c->mw, c->culprit, NULL, o, cls, err);
		return rc < 0 ? rc : settle(c, cls, global, resid, err);
	}
	first.window = EST_W_BLOCK;
	rc = est_class_ratios(c->cfg, c->sr, c->cps, c->mw, c->culprit, NULL, &first, cls, err);
	if (rc == 0)
		rc = settle(c, cls, global, resid, err);
	if (rc < 0)
		return rc;
	skid_shift(c);
	rc = est_class_ratios(c->cfg, c->sr, c->cps, c->mw, c->culprit, c->blk_s, o, cls, err);
	return rc < 0 ? rc : settle(c, cls, global, resid, err);
}

static void fill_result(struct calc *c, struct est_result *r)
{
	const struct cfg *cfg = c->cfg;

	for (int k = 0; k < cfg->nclasses; k++)
		if (r->classes[k].source == EST_S_NONE && r->method == EST_M_GLOBAL)
			r->classes[k].source = EST_S_SOLVER, r->classes[k].conf = EST_CONF_LOW;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct est_block *eb = &r->blocks[b];
		double x = c->x[b] > 0 ? c->x[b] : 0;

		eb->executions = x;
		eb->conf = bl->cls >= 0 ? r->classes[bl->cls].conf : EST_CONF_NONE;
		if (c->x[b] < 0)
			eb->conf = EST_CONF_NONE;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			struct est_insn *ei = &r->insns[i];

			ei->samples = c->s[i];
			eb->window_samples += c->sr[i];
			ei->cycles = c->s[i] * r->cycles_per_sample;
			ei->m = c->m[i];
			eb->replay += c->mw[i] - c->m[i];
			ei->executions = x;
			ei->cpi = x > 0 ? ei->cycles / x : 0;
			ei->reason = c->reason[i];
			ei->culprit = c->culprit[i];
			ei->conf = eb->conf;
			eb->samples += ei->samples;
			eb->cycles += ei->cycles;
			eb->best += ei->m;
		}
		eb->best_cpi = bl->n ? eb->best / bl->n : 0;
		eb->actual_cpi = bl->n && x > 0 ? eb->cycles / (x * bl->n) : 0;
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		struct est_edge *ee = &r->edges[e];
		double from = r->blocks[cfg->edges[e].from].executions;

		ee->executions = c->y[e] > 0 ? c->y[e] : 0;
		ee->prob = from > 0 ? fmin(ee->executions / from, 1) : 0;
		ee->conf = cfg->edges[e].cls >= 0 ? r->classes[cfg->edges[e].cls].conf :
			   EST_CONF_NONE;
		if (c->y[e] < 0)
			ee->conf = EST_CONF_NONE;
	}
}

static int replayed(const struct cfg_block *bl, const double *extra)
{
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		if (extra[i] > 0)
			return 1;
	return 0;
}

/*
 * What the windows divide by: the best case, plus what replayed loads
 * measured beyond it (estimate/replay.c).  A block with such cycles is
 * counted from all its samples: it is not destalled (its miss is in the
 * expectation, not a pile to set aside); the witness destall.c found in it
 * stays, marked, as a cross-check of the count (interval.c).
 */
static int expect(struct calc *c, double **mw, double *sr, struct est_result *out,
		  struct dcpi_err *err)
{
	const struct cfg *cfg = c->cfg;
	const double *extra = c->o->expect_extra;

	c->mw = c->m;
	if (!extra)
		return 0;
	*mw = malloc((cfg->ninsns + 1) * sizeof(**mw));
	if (!*mw)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	for (uint32_t i = 0; i < cfg->ninsns; i++)
		(*mw)[i] = c->m[i] + extra[i];
	c->mw = *mw;
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		if (replayed(bl, extra) && sr)
			memcpy(sr + bl->first, c->s + bl->first, bl->n * sizeof(*sr));
	}
	for (size_t j = 0; j < out->nstalls; j++)	/* a witness cross-checks it */
		out->stalls[j].replayed = replayed(&cfg->blocks[out->stalls[j].block], extra);
	return 0;
}

int est_procedure(const struct cfg *cfg, const struct model *model, const double *samples,
		  double cps, const struct est_opts *opts, struct est_result *out,
		  struct dcpi_err *err)
{
	size_t ni = cfg->ninsns, nb = cfg->nblocks, ne = cfg->nedges;
	struct calc c = { cfg, samples, samples, cps > 0 ? cps : 1, opts, NULL, NULL, NULL,
			  NULL, NULL, NULL, NULL };
	double *sr = NULL, *mw = NULL;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->ninsns = ni, out->nblocks = nb, out->nedges = ne;
	out->nclasses = (size_t)(cfg->nclasses > 0 ? cfg->nclasses : 0);
	out->cycles_per_sample = c.cps;
	out->relative = cps <= 0;
	out->method = opts->method;
	out->window = opts->window;
	out->insns = calloc(ni + 1, sizeof(*out->insns));
	out->blocks = calloc(nb + 1, sizeof(*out->blocks));
	out->edges = calloc(ne + 1, sizeof(*out->edges));
	out->classes = calloc(out->nclasses + 1, sizeof(*out->classes));
	c.m = calloc(ni + 1, sizeof(double));
	c.reason = calloc(ni + 1, sizeof(int));
	c.culprit = calloc(ni + 1, sizeof(int));
	c.x = calloc(nb + 1, sizeof(double));
	c.y = calloc(ne + 1, sizeof(double));
	c.blk_s = calloc(nb + 1, sizeof(double));
	if (!out->insns || !out->blocks || !out->edges || !out->classes || !c.m ||
	    !c.reason || !c.culprit || !c.x || !c.y || !c.blk_s) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	rc = est_model_m(cfg, model, opts->steady, c.m, c.reason, c.culprit, err);
	if (rc == 0 && opts->measured)
		est_apply_measured(cfg, opts->measured, samples, c.m);	/* measured.c */
	if (rc == 0 && opts->stall_exposure >= 0) {	/* destall.c */
		sr = malloc((ni + 1) * sizeof(*sr));
		out->stalls = calloc(nb + 1, sizeof(*out->stalls));
		if (!sr || !out->stalls)
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
		else
			rc = est_destall(cfg, samples, c.m, c.reason, c.culprit, opts->streams,
					 opts->stall_exposure, sr, out->stalls, &out->nstalls);
		c.sr = sr ? sr : samples;
	}
	if (rc == 0)
		rc = expect(&c, &mw, sr, out, err);
	if (rc == 0)
		rc = estimate_classes(&c, out->classes, &out->flow_residual, err);
	if (rc == 0) {
		fill_result(&c, out);
		est_unreached(cfg, out);
	}
out:
	free(sr);
	free(mw);
	free(c.m);
	free(c.reason);
	free(c.culprit);
	free(c.x);
	free(c.y);
	free(c.blk_s);
	if (rc < 0)
		est_result_free(out);
	return rc;
}

/* Block b's count from its own samples at its best case; 0 when it has
 * neither. */
static double own_count(const struct cfg *cfg, const struct est_result *r, size_t b)
{
	const struct est_block *eb = &r->blocks[b];
	double m = eb->best + eb->replay;

	return eb->window_samples > 0 && m > 0 && cfg->blocks[b].n ?
	       eb->window_samples * r->cycles_per_sample / m : 0;
}

void est_set_block_count(const struct cfg *cfg, struct est_result *r, size_t b, double x)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	struct est_block *eb = &r->blocks[b];

	eb->executions = x;
	eb->actual_cpi = x > 0 && bl->n ? eb->cycles / (x * bl->n) : 0;
	for (uint32_t i = bl->first; i < bl->first + bl->n && i < r->ninsns; i++) {
		r->insns[i].executions = x;
		r->insns[i].cpi = x > 0 ? r->insns[i].cycles / x : 0;
	}
}

/*
 * A CFG missing edges (an unresolved indirect jump, cfg/build.c) has the
 * jump's edge to the exit, and its targets entered from nowhere the CFG
 * knows: the flow's conservation is false past the jump, and the solver
 * or the paths' shape can hold a block there at nearly 0 whatever its
 * samples (glibc's vfprintf under od: its format dispatch, 261 samples, 0
 * executions).  A block the flow left more than EST_UNREACHED_MOVE below
 * its own samples at its best case takes that count; which of the two is
 * right the samples cannot say (a stall no witness shows over-reads them:
 * wc's word loop without paths, the flow at 0.30 of the truth, its own
 * samples at 3.3), so its interval holds both (interval.c).  Elsewhere
 * the flow stands: it holds a loop's blocks together where it is not that
 * far off (wc's loop kept 99% of its samples inside their intervals so,
 * 60% with every block counted from its own samples; the own counts of
 * every block the jump's targets reach, once one was so far off, took
 * sqlite3's share within 15% down 3 to 4 points in three recordings).
 * The edges keep the flow's counts.
 */
void est_unreached(const struct cfg *cfg, struct est_result *r)
{
	if (!cfg->missing_edges || r->nblocks < cfg->nblocks)
		return;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		double own = own_count(cfg, r, b);

		if (own > 0 && r->blocks[b].executions * EST_UNREACHED_MOVE < own) {
			if (!r->blocks[b].unreached)
				r->blocks[b].flow_count = fmax(r->blocks[b].executions, 0);
			r->blocks[b].unreached = 1;
			est_set_block_count(cfg, r, b, own);
		}
	}
}

void est_result_free(struct est_result *r)
{
	free(r->insns);
	free(r->blocks);
	free(r->edges);
	free(r->classes);
	free(r->stalls);
	free(r->counted);
	memset(r, 0, sizeof(*r));
}

static const char *const conf_names[] = { "none", "low", "medium", "high" };
static const char *const source_names[] = { "none", "cluster", "sum", "propagated",
					    "solver", "bound" };
static const char *const method_names[] = { "dcpi", "global" };
static const char *const window_names[] = { "insn", "block", "skid" };

const char *est_conf_name(enum est_conf c)
{
	return (unsigned)c < 4 ? conf_names[c] : "?";
}

const char *est_source_name(enum est_source s)
{
	return (unsigned)s < 6 ? source_names[s] : "?";
}

const char *est_method_name(enum est_method m)
{
	return (unsigned)m < 2 ? method_names[m] : "?";
}

const char *est_window_name(enum est_window w)
{
	return (unsigned)w < 3 ? window_names[w] : "?";
}

int est_method_parse(const char *s, enum est_method *m)
{
	for (unsigned i = 0; i < 2; i++)
		if (!strcmp(s, method_names[i]))
			return *m = (enum est_method)i, 0;
	return -EINVAL;
}

int est_window_parse(const char *s, enum est_window *w)
{
	for (unsigned i = 0; i < 3; i++)
		if (!strcmp(s, window_names[i]))
			return *w = (enum est_window)i, 0;
	return -EINVAL;
}

int est_skid_parse(const char *s, int *skid, double *share)
{
	char *end;
	long k = strtol(s, &end, 10);
	double f = *share;

	if (*end == ':')
		f = strtod(end + 1, &end);
	if (end == s || *end || k < 1 || k > 8 || !(f > 0 && f <= 1))
		return -EINVAL;
	*skid = (int)k;
	*share = f;
	return 0;
}

int est_steady_parse(const char *s, enum est_steady *st)
{
	static const char *const names[] = { "none", "self", "loops", "context" };
	static const enum est_steady val[] = {
		EST_STEADY_NONE, EST_STEADY_SELF, EST_STEADY_LOOPS, EST_STEADY_CONTEXT,
	};

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return *st = val[i], 0;
	return -EINVAL;
}
