/*
 * estimate/calibrate/attribution.c - where this machine's samples land, measured on known
 * loops against exact counts (docs/estimate.md "Calibration: where samples
 * land"; the paper's
 * processor reported six cycles late, sec. 4.1.2, and the paper built that
 * in; x86's skid has to be measured).
 *
 * For one loop procedure: exact executions E_i (callgrind), samples S_i and
 * the model's M_i.  The model says the cycles are spent at p_i ~ E_i x M_i;
 * the samples say they are reported at q_i ~ S_i.  T is the "next executed
 * instruction" operator of the procedure (i -> i+1 inside a block, the
 * successor blocks' first instructions by edge count at a block end), so
 * T^k p is where the cycles would be reported if every sample landed k
 * instructions late.  The attribution A[0..K] minimises |q - sum_k A_k T^k p|
 * with A >= 0 (non-negative least squares, coordinate descent on the 5x5
 * normal equations), normalised to sum 1.  Running the same operator
 * restricted to in-block steps tells which part of the reported cycles has
 * crossed a block end: the share a block window loses to its successors,
 * and at each block position j the share of its samples that were earned
 * before the block (what EST_W_SKID hands back).
 *
 * Loops whose measured cycles per iteration are far from the model's
 * (a mispredicted branch, a slower divider) have dynamic stalls that the
 * model does not place; they are reported but left out of the mean.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/safefile.h"
#include "dcpi/estimate.h"

#define K EST_CALIB_K
#define NNLS_SWEEPS 2000
#define MODEL_HOLDS_LO 0.67	/* measured / model cycles within this range: */
#define MODEL_HOLDS_HI 1.5	/* the model places the cycles, the loop is used */
#define HEAD_FROM_PRED 0.25	/* a head position whose samples came from before
				 * the block at least this often is a skid position */

struct calib {
	const struct cfg *cfg;
	double *y;		/* edge counts */
	double *x;		/* block counts */
	int *blk;		/* block of each instruction */
	int *pos;		/* position inside its block */
};

/* Edge counts from exact block counts: an edge into a block with one
 * predecessor carries that block's count; the rest of a block's count goes
 * to its other successors in proportion to their counts. */
static void edges_from_blocks(struct calib *c)
{
	const struct cfg *cfg = c->cfg;

	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double known = 0, wsum = 0;
		int nunk = 0;

		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t e = bl->succ[k], t = cfg->edges[e].to;

			c->y[e] = -1;
			if (cfg->blocks[t].npred == 1 && cfg->blocks[t].n) {
				c->y[e] = c->x[t];
				known += c->x[t];
			} else {
				nunk++;
				wsum += cfg->blocks[t].n ? c->x[t] : 0;
			}
		}
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t e = bl->succ[k], t = cfg->edges[e].to;
			double rest = fmax(c->x[b] - known, 0);

			if (c->y[e] >= 0)
				continue;
			if (nunk == 1 || wsum <= 0)
				c->y[e] = rest / nunk;
			else
				c->y[e] = rest * (cfg->blocks[t].n ? c->x[t] : 0) / wsum;
		}
	}
}

/* out = T in; inblock: only the steps that stay inside a block. */
static void step(const struct calib *c, const double *in, double *out, int inblock)
{
	const struct cfg *cfg = c->cfg;

	memset(out, 0, cfg->ninsns * sizeof(*out));
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		uint32_t last;

		if (!bl->n)
			continue;
		last = bl->first + bl->n - 1;
		for (uint32_t i = bl->first; i < last; i++)
			out[i + 1] += in[i];
		if (inblock || c->x[b] <= 0 || in[last] == 0)
			continue;
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t e = bl->succ[k];
			const struct cfg_block *t = &cfg->blocks[cfg->edges[e].to];

			if (t->n && c->y[e] > 0)
				out[t->first] += in[last] * c->y[e] / c->x[b];
		}
	}
}

/* min |q - X a|^2, a >= 0, X = cols[0..K] (n rows each). */
static void nnls(double *const *cols, const double *q, size_t n, double *a)
{
	double g[K + 1][K + 1], h[K + 1];

	for (int i = 0; i <= K; i++) {
		h[i] = 0;
		for (size_t r = 0; r < n; r++)
			h[i] += cols[i][r] * q[r];
		for (int j = 0; j <= K; j++) {
			g[i][j] = 0;
			for (size_t r = 0; r < n; r++)
				g[i][j] += cols[i][r] * cols[j][r];
		}
		a[i] = 1.0 / (K + 1);
	}
	for (int sweep = 0; sweep < NNLS_SWEEPS; sweep++) {
		for (int i = 0; i <= K; i++) {
			double v = h[i];

			if (g[i][i] <= 0) {
				a[i] = 0;
				continue;
			}
			for (int j = 0; j <= K; j++)
				if (j != i)
					v -= g[i][j] * a[j];
			a[i] = fmax(v / g[i][i], 0);
		}
	}
}

static void measure(struct calib *c, const double *p, const double *q, double *const *f,
		    double *const *gin, struct est_calib_loop *out)
{
	const struct cfg *cfg = c->cfg;
	size_t ni = cfg->ninsns;
	double asum = 0, fit_sum = 0, res = 0, cross = 0, hc = 0, ht = 0;

	nnls(f, q, ni, out->attrib);
	for (int k = 0; k <= K; k++)
		asum += out->attrib[k];
	for (int k = 0; k <= K && asum > 0; k++)
		out->attrib[k] /= asum;
	for (size_t i = 0; i < ni; i++) {
		double fit = 0, crossed = 0;

		for (int k = 0; k <= K; k++) {
			fit += out->attrib[k] * f[k][i];
			crossed += out->attrib[k] * fmax(f[k][i] - gin[k][i], 0);
		}
		fit_sum += fit;
		cross += crossed;
		res += fabs(q[i] - fit);
		if (c->pos[i] == 0) {
			hc += crossed;
			ht += fit;
		}
	}
	out->residual = res / 2;
	out->cross = fit_sum > 0 ? cross / fit_sum : 0;
	out->head_from_pred = ht > 0 ? hc / ht : 0;
	(void)p;
}

static void block_shares(struct calib *c, const double *p, const double *q, const double *e,
			 struct est_calib_loop *out)
{
	const struct cfg *cfg = c->cfg;
	double tv = 0, hs = 0, hi = 0, etot = 0;

	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double pb = 0, qb = 0;

		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			pb += p[i];
			qb += q[i];
			etot += e[i];
		}
		tv += fabs(pb - qb);
		if (bl->n) {
			hs += q[bl->first];
			hi += e[bl->first];
		}
	}
	out->block_tv = tv / 2;
	out->head_samples = hs;
	out->head_insns = etot > 0 ? hi / etot : 0;
}

static int calib_alloc(struct calib *c, double **v, size_t nv)
{
	size_t ni = c->cfg->ninsns + 1;

	c->x = calloc(c->cfg->nblocks + 1, sizeof(double));
	c->y = calloc(c->cfg->nedges + 1, sizeof(double));
	c->blk = calloc(ni, sizeof(int));
	c->pos = calloc(ni, sizeof(int));
	if (!c->x || !c->y || !c->blk || !c->pos)
		return -ENOMEM;
	for (size_t k = 0; k < nv; k++)
		if (!(v[k] = calloc(ni, sizeof(double))))
			return -ENOMEM;
	return 0;
}

int est_calib_loop(const struct cfg *cfg, const struct model *model, const double *exact,
		   const double *s, double cps, struct est_calib_loop *out, struct dcpi_err *err)
{
	struct calib c = { .cfg = cfg };
	/* v: m, p, q, f[0..K], gin[0..K] */
	double *v[3 + 2 * (K + 1)] = { 0 };
	double *m, *p, *q, **f = v + 3, **gin = v + 4 + K;
	size_t nv = sizeof(v) / sizeof(v[0]), ni = cfg->ninsns;
	double ptot = 0, qtot = 0, iters = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", cfg->name);
	rc = calib_alloc(&c, v, nv);
	if (rc < 0) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	m = v[0], p = v[1], q = v[2];
	rc = est_model_m(cfg, model, EST_STEADY_SELF, m, NULL, NULL, err);
	if (rc < 0)
		goto out;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		c.x[b] = bl->n ? exact[bl->first] : 0;
		iters = fmax(iters, c.x[b]);
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			c.blk[i] = (int)b, c.pos[i] = (int)(i - bl->first);
	}
	edges_from_blocks(&c);
	for (size_t i = 0; i < ni; i++) {
		p[i] = exact[i] * m[i];
		q[i] = s[i];
		ptot += p[i];
		qtot += q[i];
	}
	if (ptot <= 0 || qtot <= 0 || iters <= 0) {
		rc = dcpi_errf(err, -ENODATA, "%s: no %s", cfg->name,
			       qtot <= 0 ? "samples" : "executions");
		goto out;
	}
	for (size_t i = 0; i < ni; i++)
		p[i] /= ptot, q[i] /= qtot;
	memcpy(f[0], p, ni * sizeof(*p));
	memcpy(gin[0], p, ni * sizeof(*p));
	for (int k = 1; k <= K; k++) {
		step(&c, f[k - 1], f[k], 0);
		step(&c, gin[k - 1], gin[k], 1);
	}
	out->samples = qtot;
	out->iterations = iters;
	out->cyc_iter = qtot * (cps > 0 ? cps : 1) / iters;
	out->model_iter = ptot / iters;
	out->used = out->cyc_iter >= MODEL_HOLDS_LO * out->model_iter &&
		    out->cyc_iter <= MODEL_HOLDS_HI * out->model_iter;
	/* a loop whose load misses: what the timer shows of its waiter */
	out->exposure = out->used ? 0 : est_exposure_measured(cfg, model, exact, s, cps);
	measure(&c, p, q, f, gin, out);
	block_shares(&c, p, q, exact, out);
out:
	for (size_t k = 0; k < nv; k++)
		free(v[k]);
	free(c.x);
	free(c.y);
	free(c.blk);
	free(c.pos);
	return rc;
}

void est_calib_combine(struct est_calibration *cal)
{
	double w = 0, hf = 0, hw = 0, fe = 0, fw = 0;
	int any = 0;

	for (size_t l = 0; l < cal->nloops; l++)
		any |= cal->loops[l].used;
	memset(cal->attrib, 0, sizeof(cal->attrib));
	cal->cross = cal->head_samples = cal->head_insns = cal->block_tv = 0;
	for (size_t l = 0; l < cal->nloops; l++) {
		const struct est_calib_loop *lp = &cal->loops[l];

		if (lp->exposure > 0)	/* a loop that misses: never "used" */
			fe += lp->samples * lp->exposure, fw += lp->samples;
		if (any && !lp->used)
			continue;
		w += lp->samples;
		for (int k = 0; k <= K; k++)
			cal->attrib[k] += lp->samples * lp->attrib[k];
		cal->cross += lp->samples * lp->cross;
		cal->head_samples += lp->samples * lp->head_samples;
		cal->head_insns += lp->samples * lp->head_insns;
		cal->block_tv += lp->samples * lp->block_tv;
		/* the hand-back acts on the samples heads receive */
		hf += lp->samples * lp->head_samples * lp->head_from_pred;
		hw += lp->samples * lp->head_samples;
	}
	if (w > 0) {
		for (int k = 0; k <= K; k++)
			cal->attrib[k] /= w;
		cal->cross /= w, cal->head_samples /= w, cal->head_insns /= w;
		cal->block_tv /= w;
	}
	/* Samples reach position j of a block from before it only by skids
	 * longer than j: the skid window covers the positions a skid of at
	 * least HEAD_FROM_PRED of the cycles still reaches. */
	cal->skid = 1;
	for (int k = 2; k <= K; k++) {
		double tail = 0;

		for (int j = k; j <= K; j++)
			tail += cal->attrib[j];
		if (tail >= HEAD_FROM_PRED)
			cal->skid = k;
	}
	cal->skid_share = hw > 0 ? fmin(hf / hw, 1) : 0;
	cal->exposure = fw > 0 ? fe / fw : 0;
	cal->version = EST_CALIB_VERSION;
}

int est_calib_path(const char *dbdir, const char *model, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/calibration-%s.txt", dbdir, model);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * user: a path the user named (calibrate -o), written by the rule for
 * outputs (dcpi_write_output: a device, FIFO or link treated as perf treats
 * -o); else the database's own file (dcpi_write_file: a link planted at the
 * name is replaced, never followed).
 */
static int calib_write(const char *path, const struct est_calibration *cal, int user,
		       struct dcpi_err *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp;
	int bad, rc;

	/* formatted in memory, then written through the directory without
	 * following a link planted at the name or its temporary, mode 0644 */
	fp = open_memstream(&text, &len);
	if (!fp)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	fprintf(fp, "# dcpi calibration: where samples land (docs/estimate.md)\n"
		    "version %d\nmodel %s\nevent %s\ncycles_per_sample %.6g\nattrib",
		EST_CALIB_VERSION, cal->model, cal->event, cal->cycles_per_sample);
	for (int k = 0; k <= K; k++)
		fprintf(fp, " %.4f", cal->attrib[k]);
	fprintf(fp, "\ncross %.4f\nhead_samples %.4f\nhead_insns %.4f\nblock_tv %.4f\n"
		    "skid %d\nskid_share %.4f\n"
		    "# loop name used samples iterations cyc_iter model_iter residual cross "
		    "head_samples head_insns block_tv head_from_pred attrib[0..%d]\n",
		cal->cross, cal->head_samples, cal->head_insns, cal->block_tv, cal->skid,
		cal->skid_share, K);
	if (cal->exposure > 0)
		fprintf(fp, "stall_exposure %.4f\n", cal->exposure);
	for (size_t l = 0; l < cal->nloops; l++) {
		const struct est_calib_loop *lp = &cal->loops[l];

		fprintf(fp, "loop %s %d %.0f %.0f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f",
			lp->name, lp->used, lp->samples, lp->iterations, lp->cyc_iter,
			lp->model_iter, lp->residual, lp->cross, lp->head_samples,
			lp->head_insns, lp->block_tv, lp->head_from_pred);
		for (int k = 0; k <= K; k++)
			fprintf(fp, " %.4f", lp->attrib[k]);
		fputc('\n', fp);
	}
	bad = ferror(fp);
	if (fclose(fp) != 0 || bad) {
		free(text);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	}
	rc = user ? dcpi_write_output(path, text, len, 0644, err) :
	     dcpi_write_file(path, text, len, 0644, err);
	free(text);
	return rc;
}

int est_calib_write(const char *path, const struct est_calibration *cal, struct dcpi_err *err)
{
	return calib_write(path, cal, 0, err);
}

int est_calib_write_output(const char *path, const struct est_calibration *cal,
			   struct dcpi_err *err)
{
	return calib_write(path, cal, 1, err);
}

static int read_loop(const char *line, struct est_calib_loop *lp)
{
	double *a = lp->attrib;
	int n;

	n = sscanf(line, "%63s %d %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
		   lp->name, &lp->used, &lp->samples, &lp->iterations, &lp->cyc_iter,
		   &lp->model_iter, &lp->residual, &lp->cross, &lp->head_samples,
		   &lp->head_insns, &lp->block_tv, &lp->head_from_pred, &a[0], &a[1], &a[2],
		   &a[3], &a[4]);
	return n == 12 + K + 1 ? 0 : -EINVAL;
}

static int read_line(const char *key, const char *v, struct est_calibration *cal)
{
	double *a = cal->attrib;

	if (!strcmp(key, "version"))
		return sscanf(v, "%d", &cal->version) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "model"))
		return sscanf(v, "%31s", cal->model) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "event"))
		return sscanf(v, "%63s", cal->event) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "cycles_per_sample"))
		return sscanf(v, "%lf", &cal->cycles_per_sample) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "attrib"))
		return sscanf(v, "%lf %lf %lf %lf %lf", &a[0], &a[1], &a[2], &a[3], &a[4]) ==
		       K + 1 ? 0 : -EINVAL;
	if (!strcmp(key, "cross"))
		return sscanf(v, "%lf", &cal->cross) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "head_samples"))
		return sscanf(v, "%lf", &cal->head_samples) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "head_insns"))
		return sscanf(v, "%lf", &cal->head_insns) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "block_tv"))
		return sscanf(v, "%lf", &cal->block_tv) == 1 ? 0 : -EINVAL;
	if (!strcmp(key, "skid"))
		return sscanf(v, "%d", &cal->skid) == 1 && cal->skid >= 1 && cal->skid <= K ?
		       0 : -EINVAL;
	if (!strcmp(key, "skid_share"))
		return sscanf(v, "%lf", &cal->skid_share) == 1 && cal->skid_share >= 0 &&
		       cal->skid_share <= 1 ? 0 : -EINVAL;
	if (!strcmp(key, "stall_exposure"))
		return sscanf(v, "%lf", &cal->exposure) == 1 && cal->exposure > 0 &&
		       cal->exposure < 10 ? 0 : -EINVAL;
	if (!strcmp(key, "loop")) {
		if (cal->nloops >= EST_CALIB_MAXLOOPS)
			return 0;	/* more loops than we keep: the mean stands */
		return read_loop(v, &cal->loops[cal->nloops++]);
	}
	return 0;	/* a key of a later version */
}

int est_calib_read(const char *path, struct est_calibration *cal, struct dcpi_err *err)
{
	char line[1024], key[32];
	FILE *fp = dcpi_fopen_read(path, err);
	int lineno = 0, rc = 0, off;

	memset(cal, 0, sizeof(*cal));
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%31s %n", key, &off) != 1) {
			rc = -EINVAL;
			break;
		}
		if ((rc = read_line(key, line + off, cal)) < 0)
			break;
	}
	fclose(fp);
	if (rc < 0)
		return dcpi_errf(err, rc, "%s:%d: malformed", path, lineno);
	if (cal->version != EST_CALIB_VERSION)
		return dcpi_errf(err, -EINVAL, "%s: version %d, not %d", path, cal->version,
				 EST_CALIB_VERSION);
	if (cal->skid < 1 || !cal->model[0])
		return dcpi_errf(err, -EINVAL, "%s: no model or skid", path);
	return 0;
}

void est_opts_calibrated(struct est_opts *o, const struct est_calibration *cal)
{
	o->skid = cal->skid;
	o->skid_share = cal->skid_share;
	if (cal->exposure > 0 && o->stall_exposure == 0)	/* < 0: destalling off */
		o->stall_exposure = cal->exposure;
}
