/*
 * scale.c - the one number per procedure (or loop region) that turns the
 * path shape (paths.c) into executions, from the samples (tests/test_estimate_paths.c;
 * docs/estimate.md "Path samples", where the rules' figures are side by
 * side), and est_procedure_paths, which puts the two together.
 *
 * With relative counts x_b known, every block is a window whose ratio
 * S_b cps / (x_b M_b) estimates the same scale; stalls only ever raise a
 * ratio, shadow retirement (a cheap block retiring under an older
 * long-latency one) lowers a single block's.  Over a whole loop the cycles
 * stay inside the loop whatever block reports them, so loop-sized windows
 * are only raised.  On an out-of-order core a loop's iterations overlap:
 * the loop rule scales the blocks' single-pass M by the model's steady
 * state of the loop's hottest path (DCPI paper sec. 6.1.3 had single
 * in-order blocks).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

#define PATH_MAX_INSNS 512

void est_path_opts_default(struct est_path_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->prior_weight = 2;
	o->min_transitions = 20;
	o->rule = EST_SCALE_QUANTILE;
	o->quantile = 0.25;
	o->regions = 0;
	o->region_samples = 200;
}

static const char *const rule_names[] = { "sum", "quantile", "loops", "minloop", "windows" };

const char *est_scale_rule_name(enum est_scale_rule r)
{
	return (unsigned)r < EST_SCALE_NRULES ? rule_names[r] : "?";
}

int est_scale_rule_parse(const char *s, enum est_scale_rule *r)
{
	for (unsigned i = 0; i < EST_SCALE_NRULES; i++)
		if (!strcmp(s, rule_names[i]))
			return *r = (enum est_scale_rule)i, 0;
	return -EINVAL;
}

int est_scale_parse(const char *s, struct est_path_opts *p)
{
	char *end;

	if (!strncmp(s, "quantile:", 9)) {
		double q = strtod(s + 9, &end);

		if (end == s + 9 || *end || !(q > 0 && q <= 1))
			return -EINVAL;
		p->quantile = q;
		p->rule = EST_SCALE_QUANTILE;
		return 0;
	}
	return est_scale_rule_parse(s, &p->rule);
}

static int in_loop(const struct cfg *cfg, uint32_t t, int l)
{
	for (int k = cfg->blocks[t].loop; k >= 0; k = cfg->loops[k].parent)
		if (k == l)
			return 1;
	return 0;
}

/*
 * Steady-state over single-pass cycles of loop l's hottest path (from its
 * header along the likeliest successor inside the loop back to it): how
 * much the model overlaps one iteration with the next.  1 when unknown.
 */
static double overlap(const struct cfg *cfg, const struct model *model, size_t l,
		      const double *prob)
{
	const struct cfg_loop *lp = &cfg->loops[l];
	struct cfg_insn *buf = malloc(PATH_MAX_INSNS * sizeof(*buf));
	struct sched_block sb;
	struct dcpi_err err = { 0 };
	uint32_t b = lp->header;
	size_t n = 0;
	double f = 1;

	if (!buf)
		return 1;
	for (int steps = 0; steps < 64; steps++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		long next = -1;
		double best = -1;

		if (n + bl->n > PATH_MAX_INSNS)
			break;
		memcpy(buf + n, &cfg->insns[bl->first], bl->n * sizeof(*buf));
		n += bl->n;
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			const struct cfg_edge *e = &cfg->edges[bl->succ[k]];
			double p = prob[bl->succ[k]];

			if (e->to == cfg->exit || !in_loop(cfg, e->to, (int)l))
				continue;
			if (e->kind == CFG_E_CALL_RETURN)
				p *= 0.999;
			if (p > best)
				best = p, next = e->to;
		}
		if (next < 0 || (uint32_t)next == lp->header)
			break;
		b = (uint32_t)next;
	}
	if (n && model_schedule(model, buf, n, NULL, 0, &sb, &err) == 0) {
		if (sb.cycles > 0 && sb.steady_cycles > 0)
			f = fmin(fmax(sb.steady_cycles / sb.cycles, 0.1), 1.5);
		sched_block_free(&sb);
	}
	free(buf);
	return f;
}

static int cmp_ratio(const void *a, const void *b)
{
	const double *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The q-quantile of the values r[2k] weighted by r[2k + 1]; sorts r. */
static double wquantile(double *r, size_t n, double q)
{
	double tot = 0, acc = 0, out = 0;

	for (size_t k = 0; k < n; k++)
		tot += r[2 * k + 1];
	qsort(r, n, 2 * sizeof(*r), cmp_ratio);
	for (size_t k = 0; k < n; k++) {
		acc += r[2 * k + 1];
		out = r[2 * k];
		if (acc >= q * tot)
			break;
	}
	return out;
}

double est_path_scale_windows(const struct cfg *cfg, const double *s_blk, const double *win,
			      const double *x, const int *in_region)
{
	double *r = malloc(2 * (cfg->nblocks + 1) * sizeof(*r)), out;
	size_t n = 0;

	if (!r)
		return 0;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		if ((in_region && !in_region[b]) || s_blk[b] <= 0 || win[b] <= 0 || x[b] <= 0)
			continue;
		r[2 * n] = win[b] / x[b];
		r[2 * n + 1] = s_blk[b];
		n++;
	}
	out = n ? wquantile(r, n, 0.5) : 0;
	free(r);
	return out;
}

/* Block b's ratio S cps / (x M): its scale alone; 0 when it has none. */
static double block_ratio(const double *s, const double *m, const double *x, double cps,
			  size_t b)
{
	return s[b] > 0 && x[b] * m[b] > 0 ? s[b] * cps / (x[b] * m[b]) : 0;
}

static double rule_quantile(const struct cfg *cfg, double q, const double *s,
			    const double *m, const double *x, double cps, const int *reg)
{
	double *r = malloc(2 * cfg->nblocks * sizeof(*r)), out;
	size_t n = 0;

	if (!r)
		return 0;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		if ((reg && !reg[b]) || !(block_ratio(s, m, x, cps, b) > 0))
			continue;
		r[2 * n] = block_ratio(s, m, x, cps, b);
		r[2 * n + 1] = s[b];
		n++;
	}
	out = wquantile(r, n, q);
	free(r);
	return out;
}

/* The block whose ratio rule_quantile returned (scale), -1 when none:
 * block_ratio computes both, so the figure matches to the bit. */
static long quantile_block(const struct cfg *cfg, const double *s, const double *m,
			   const double *x, double cps, double scale)
{
	for (size_t b = 0; b < cfg->nblocks; b++)
		if (block_ratio(s, m, x, cps, b) > 0 && block_ratio(s, m, x, cps, b) == scale)
			return (long)b;
	return -1;
}

/* sum S cps / sum x M over the region, loops' blocks with their overlap
 * (m_single and f) when f is given. */
static double rule_sum(const struct cfg *cfg, const double *s, const double *m,
		       const double *x, double cps, const int *reg, const double *f)
{
	double num = 0, den = 0;

	for (size_t b = 0; b < cfg->nblocks; b++) {
		int l = cfg->blocks[b].loop;

		if (reg && !reg[b])
			continue;
		num += s[b] * cps;
		den += x[b] * m[b] * (f && l >= 0 ? f[l] : 1);
	}
	return num > 0 && den > 0 ? num / den : 0;
}

double est_path_scale(const struct cfg *cfg, const struct model *model, enum est_scale_rule rule,
		      double quantile, const double *s_blk, const double *m_blk,
		      const double *x, const double *prob, double cps, const int *in_region)
{
	double *f = NULL, best = 0;
	int *reg = NULL;

	if (rule == EST_SCALE_SUM || (!model && rule != EST_SCALE_QUANTILE))
		return rule_sum(cfg, s_blk, m_blk, x, cps, in_region, NULL);
	if (rule == EST_SCALE_QUANTILE)
		return rule_quantile(cfg, quantile, s_blk, m_blk, x, cps, in_region);
	f = malloc((cfg->nloops + 1) * sizeof(*f));
	reg = malloc((cfg->nblocks + 1) * sizeof(*reg));
	if (!f || !reg)
		goto out;
	/* the overlap of each block's innermost loop */
	for (size_t l = 0; l < cfg->nloops; l++)
		f[l] = cfg_loop_innermost(cfg, l) ? overlap(cfg, model, l, prob) : 1;
	if (rule == EST_SCALE_LOOPS) {
		best = rule_sum(cfg, s_blk, m_blk, x, cps, in_region, f);
		goto out;
	}
	/* minloop: the smallest scale of the innermost loops and the rest,
	 * each with samples enough to mean something (20) */
	for (long l = -1; l < (long)cfg->nloops; l++) {
		double sc, ss = 0;

		if (l >= 0 && !cfg_loop_innermost(cfg, (size_t)l))
			continue;
		for (size_t b = 0; b < cfg->nblocks; b++) {
			int bl = cfg->blocks[b].loop;
			int mine = l >= 0 ? bl == l : bl < 0 || !cfg_loop_innermost(cfg, (size_t)bl);

			reg[b] = mine && (!in_region || in_region[b]);
			ss += reg[b] ? s_blk[b] : 0;
		}
		if (ss < 20)
			continue;
		sc = rule_sum(cfg, s_blk, m_blk, x, cps, reg, f);
		if (sc > 0 && (best <= 0 || sc < best))
			best = sc;
	}
	if (best <= 0)
		best = rule_sum(cfg, s_blk, m_blk, x, cps, in_region, f);
out:
	free(f);
	free(reg);
	return best;
}

static int info_alloc(const struct cfg *cfg, const struct est_path_obs *obs,
		      struct est_path_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->scale_block = -1;
	pi->nblocks = cfg->nblocks, pi->nedges = cfg->nedges;
	pi->xrel = calloc(cfg->nblocks + 1, sizeof(double));
	pi->edge_obs = calloc(cfg->nedges + 1, sizeof(double));
	pi->block_obs = calloc(cfg->nblocks + 1, sizeof(double));
	pi->source = calloc(cfg->nblocks + 1, sizeof(*pi->source));
	if (!pi->xrel || !pi->edge_obs || !pi->block_obs || !pi->source)
		return -ENOMEM;
	if (obs && obs->edge && obs->nblocks == cfg->nblocks && obs->nedges == cfg->nedges) {
		memcpy(pi->edge_obs, obs->edge, cfg->nedges * sizeof(double));
		memcpy(pi->block_obs, obs->seen, cfg->nblocks * sizeof(double));
		pi->transitions = obs->transitions, pi->entries = obs->entries;
		pi->bursts = obs->bursts, pi->unmatched = obs->unmatched;
	}
	return 0;
}

/* Confidence of a path count: how many observations stand behind it. */
static enum est_conf path_conf(double seen, double proc_samples)
{
	enum est_conf c = seen >= 100 ? EST_CONF_HIGH : seen >= 10 ? EST_CONF_MEDIUM :
			  EST_CONF_LOW;

	if (proc_samples < 20 && c > EST_CONF_LOW)
		c = EST_CONF_LOW;	/* the scale rests on too few samples */
	return c;
}

struct pscale {
	const struct cfg *cfg;
	const struct model *model;
	const struct est_path_opts *po;
	const double *s, *m, *msingle, *x, *prob, *win;
	double cps;
};

/* The scale of rule over the blocks of reg (NULL: all). */
static double scale_by(const struct pscale *ps, enum est_scale_rule rule, const int *reg)
{
	int single = rule == EST_SCALE_LOOPS || rule == EST_SCALE_MINLOOP;

	if (rule == EST_SCALE_WINDOWS)
		return est_path_scale_windows(ps->cfg, ps->s, ps->win, ps->x, reg);
	return est_path_scale(ps->cfg, ps->model, rule, ps->po->quantile, ps->s,
			      single ? ps->msingle : ps->m, ps->x, ps->prob, ps->cps, reg);
}

/* Per-block scale: the procedure's, or with regions each outermost loop's
 * own where it has samples enough.  (The blocks outside loops as a region
 * of their own: measured worse, docs/estimate.md.) */
static int region_scales(const struct pscale *ps, double proc, double *bscale)
{
	const struct cfg *cfg = ps->cfg;
	int *reg = malloc((cfg->nblocks + 1) * sizeof(*reg));

	if (!reg)
		return -ENOMEM;
	for (size_t b = 0; b < cfg->nblocks; b++)
		bscale[b] = proc;
	for (size_t l = 0; ps->po->regions && l < cfg->nloops; l++) {
		double ss = 0, sc;

		if (cfg->loops[l].parent >= 0)
			continue;
		for (size_t b = 0; b < cfg->nblocks; b++) {
			reg[b] = in_loop(cfg, (uint32_t)b, (int)l);
			ss += reg[b] ? ps->s[b] : 0;
		}
		if (ss < ps->po->region_samples)
			continue;
		sc = scale_by(ps, ps->po->rule, reg);
		for (size_t b = 0; sc > 0 && b < cfg->nblocks; b++)
			if (reg[b])
				bscale[b] = sc;
	}
	free(reg);
	return 0;
}

static void apply(const struct cfg *cfg, const double *x, const double *y, const double *bscale,
		  const struct est_path_info *pi, double proc_samples, struct est_result *r)
{
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct est_block *eb = &r->blocks[b];
		double xb = x[b] * bscale[b];

		eb->executions = xb;
		eb->unreached = 0;	/* the shape's count now (est_unreached again) */
		eb->actual_cpi = bl->n && xb > 0 ? eb->cycles / (xb * bl->n) : 0;
		eb->conf = path_conf(pi->block_obs[b], proc_samples);
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			struct est_insn *ei = &r->insns[i];

			ei->executions = xb;
			ei->cpi = xb > 0 ? ei->cycles / xb : 0;
			ei->conf = eb->conf;
		}
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];
		double from = r->blocks[ed->from].executions;
		struct est_edge *ee = &r->edges[e];

		ee->executions = y[e] * bscale[ed->from];
		ee->prob = from > 0 ? fmin(ee->executions / from, 1) : 0;
		ee->conf = path_conf(pi->edge_obs[e] + 0.1 * pi->block_obs[ed->from],
				     proc_samples);
	}
	r->flow_residual = 0;
}

static int with_paths(const struct cfg *cfg, const struct model *model,
		      const struct est_path_opts *po, const struct est_path_obs *obs,
		      struct est_result *out, struct est_path_info *pi, struct dcpi_err *err)
{
	size_t nb = cfg->nblocks, ne = cfg->nedges;
	double *prob = calloc(ne + 1, sizeof(double)), *x = calloc(nb + 1, sizeof(double));
	double *y = calloc(ne + 1, sizeof(double)), *s = calloc(nb + 1, sizeof(double));
	double *m = calloc(nb + 1, sizeof(double)), *ms = calloc(nb + 1, sizeof(double));
	double *mi = calloc(cfg->ninsns + 1, sizeof(double));
	double *bscale = calloc(nb + 1, sizeof(double));
	double *win = calloc(nb + 1, sizeof(double)), total = 0;
	struct pscale ps = { cfg, model, po, s, m, ms, x, prob, win, out->cycles_per_sample };
	int rc = -ENOMEM;

	if (!prob || !x || !y || !s || !m || !ms || !mi || !bscale || !win) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	est_path_probs(cfg, obs, po->prior_weight, prob);
	rc = est_path_shape(cfg, prob, x, y, err);
	if (rc == -E2BIG) {
		dcpi_err_clear(err);
		rc = 0;		/* too large: the windows' estimate stands */
		goto out;
	}
	if (rc == 0)
		rc = est_model_m(cfg, model, EST_STEADY_NONE, mi, NULL, NULL, err);
	if (rc < 0)
		goto out;
	for (size_t b = 0; b < nb; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		s[b] = out->blocks[b].window_samples;
		/* a replayed load's measured cycles are expected (replay.c) */
		m[b] = out->blocks[b].best + out->blocks[b].replay;
		ms[b] = out->blocks[b].replay;
		win[b] = out->blocks[b].executions;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			ms[b] += mi[i];
		total += s[b];
	}
	for (int r = 0; r < EST_SCALE_NRULES; r++)
		pi->rule_scale[r] = scale_by(&ps, (enum est_scale_rule)r, NULL);
	pi->scale = pi->rule_scale[po->rule];
	if (pi->scale <= 0)
		pi->scale = pi->rule_scale[EST_SCALE_SUM];
	if (pi->scale <= 0)
		goto out;	/* no samples with best-case cycles: windows stand */
	rc = region_scales(&ps, pi->scale, bscale);
	if (rc < 0) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	memcpy(pi->xrel, x, nb * sizeof(double));
	for (size_t b = 0; b < nb; b++)
		pi->source[b] = s[b] > 0 ? EST_BS_BOTH : EST_BS_PATHS;
	if (po->rule == EST_SCALE_QUANTILE && !po->regions &&
	    pi->scale == pi->rule_scale[EST_SCALE_QUANTILE])
		pi->scale_block = quantile_block(cfg, s, m, x, out->cycles_per_sample, pi->scale);
	apply(cfg, x, y, bscale, pi, total, out);
	est_unreached(cfg, out);	/* the shape's flow, past an unresolved jump */
	pi->used = 1;
out:
	free(prob);
	free(x);
	free(y);
	free(s);
	free(m);
	free(ms);
	free(mi);
	free(bscale);
	free(win);
	return rc;
}

int est_procedure_paths(const struct cfg *cfg, const struct model *model, const double *samples,
			double cps, const struct est_opts *opts, const struct est_path_opts *popts,
			const struct est_path_obs *obs, struct est_result *out,
			struct est_path_info *info, struct dcpi_err *err)
{
	struct est_path_opts dflt;
	struct est_path_info local;
	struct est_path_info *pi = info ? info : &local;
	int rc;

	if (!popts) {
		est_path_opts_default(&dflt);
		popts = &dflt;
	}
	rc = est_procedure(cfg, model, samples, cps, opts, out, err);
	if (rc < 0)
		return rc;
	if (info_alloc(cfg, obs, pi) < 0) {
		est_result_free(out);
		est_path_info_free(pi);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	}
	if (obs && obs->transitions >= popts->min_transitions && obs->transitions > 0)
		rc = with_paths(cfg, model, popts, obs, out, pi, err);
	if (rc < 0) {
		est_result_free(out);
		est_path_info_free(pi);
	}
	if (!info)
		est_path_info_free(&local);
	return rc;
}
