/*
 * solver.c - a global flow solver: the "global constraint solver" DCPI was
 * experimenting with (paper sec. 6.1.4, last paragraph).
 *
 * Unknowns are edge counts y (the CFG's edges plus the virtual exit -> entry
 * edge that closes the circulation).  Every y that conserves flow is a
 * combination y = C t of the fundamental cycles of a spanning forest (one per
 * non-tree edge), so conservation holds by construction and the problem is an
 * unconstrained weighted least squares in t:
 *
 *   min  sum_terms w (a . y - est)^2  +  eps sum_e (y_e - y0_e)^2
 *
 * with one term per block (a . y = the sum of its in-edges) and per edge of
 * every class that has a measured estimate (cluster or sum, not propagated),
 * w = confidence factor x samples / est^2 (the inverse of the Poisson
 * variance of est = cycles / M from that many samples) split over the
 * class's members, and a weak pull eps towards the local
 * propagation's values y0 so that unmeasured cycles stay where propagation
 * put them.  Solved by conjugate gradients on the normal equations, matrix
 * free (cost per step: the cycles' non-zeros).  Non-negativity: edges that
 * come out negative get a heavy pull to zero and the system is solved again,
 * a few rounds, then what is left is clipped.  Upper bounds the same way:
 * a class without samples of its own (ratios.c) enters with 0 and the
 * weight of one sample (1 / bound^2) when no sample can be its, and with a
 * heavy pull to its bound when the solution exceeds it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"

#define SOLVER_MAX_NNZ (16u << 20)

struct flow {
	size_t nb, ne;			/* ne includes the virtual edge */
	uint32_t *from, *to;
	uint32_t *cstart, *cedge;	/* CSR: cycle -> (edge, coef) */
	double *ccoef;
	size_t ncyc, nnz, cap;
	double *w_edge, *est_edge;	/* per edge term (0 weight: none) */
	double *w_blk, *est_blk;	/* per block term over its in-side */
	int *side_in;			/* 1: block term over in-edges, 0: out */
	double *pen, *y0, eps, wmax;
	double *y, *gy;			/* scratch, ne */
};

static double conf_weight(enum est_conf c)
{
	return c == EST_CONF_HIGH ? 4 : c == EST_CONF_MEDIUM ? 2 : c == EST_CONF_LOW ? 1 : 0;
}

static int cyc_push(struct flow *f, uint32_t e, double c)
{
	if (f->nnz == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		uint32_t *ne;
		double *nc;

		if (cap > SOLVER_MAX_NNZ)
			return -E2BIG;
		ne = realloc(f->cedge, cap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		f->cedge = ne;
		nc = realloc(f->ccoef, cap * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		f->ccoef = nc;
		f->cap = cap;
	}
	f->cedge[f->nnz] = e;
	f->ccoef[f->nnz++] = c;
	return 0;
}

/* Fundamental cycles of a BFS spanning forest over the undirected graph. */
static int cycles_build(struct flow *f, const struct cfg *cfg)
{
	size_t nb = f->nb, ne = f->ne;
	long *pe = malloc(nb * sizeof(*pe));
	int *depth = malloc(nb * sizeof(*depth)), *seen = calloc(nb, sizeof(int));
	uint32_t *queue = malloc(nb * sizeof(*queue));
	char *tree = calloc(ne, 1);
	int rc = -ENOMEM;

	f->cstart = malloc((ne + 1) * sizeof(*f->cstart));
	if (!pe || !depth || !seen || !queue || !tree || !f->cstart)
		goto out;
	for (size_t r = 0; r < nb; r++) {
		size_t qh = 0, qt = 0;

		if (seen[r])
			continue;
		seen[r] = 1, pe[r] = -1, depth[r] = 0, queue[qt++] = (uint32_t)r;
		while (qh < qt) {
			uint32_t v = queue[qh++];
			const struct cfg_block *bl = &cfg->blocks[v];
			uint32_t nadj = bl->nsucc + bl->npred + 1;

			for (uint32_t k = 0; k < nadj; k++) {
				size_t e;
				uint32_t u;

				if (k < bl->nsucc)
					e = bl->succ[k];
				else if (k < bl->nsucc + bl->npred)
					e = bl->pred[k - bl->nsucc];
				else if (v == cfg->exit || v == cfg->entry)
					e = ne - 1;
				else
					continue;
				u = f->from[e] == v ? f->to[e] : f->from[e];
				if (seen[u])
					continue;
				seen[u] = 1, pe[u] = (long)e, depth[u] = depth[v] + 1;
				tree[e] = 1;
				queue[qt++] = u;
			}
		}
	}
	f->ncyc = 0;
	for (size_t e = 0; e < ne; e++) {
		uint32_t a, b;

		if (tree[e])
			continue;
		f->cstart[f->ncyc++] = (uint32_t)f->nnz;
		if ((rc = cyc_push(f, (uint32_t)e, 1)) < 0)
			goto out;
		/* back from to[e] to from[e] through the tree */
		a = f->to[e], b = f->from[e];
		while (a != b) {
			if (depth[a] >= depth[b]) {
				size_t t = (size_t)pe[a];
				int fwd = f->from[t] == a;

				rc = cyc_push(f, (uint32_t)t, fwd ? 1 : -1);
				a = fwd ? f->to[t] : f->from[t];
			} else {
				size_t t = (size_t)pe[b];
				int fwd = f->to[t] == b;

				rc = cyc_push(f, (uint32_t)t, fwd ? 1 : -1);
				b = fwd ? f->from[t] : f->to[t];
			}
			if (rc < 0)
				goto out;
		}
	}
	f->cstart[f->ncyc] = (uint32_t)f->nnz;
	rc = 0;
out:
	free(pe);
	free(depth);
	free(seen);
	free(queue);
	free(tree);
	return rc;
}

/* The edges on block b's term side. */
static void side_of(const struct cfg *cfg, const struct flow *f, size_t b,
		    const uint32_t **list, uint32_t *n, int *virt)
{
	const struct cfg_block *bl = &cfg->blocks[b];

	if (f->side_in[b]) {
		*list = bl->pred, *n = bl->npred, *virt = b == cfg->entry;
	} else {
		*list = bl->succ, *n = bl->nsucc, *virt = b == cfg->exit;
	}
}

/* gy = d(objective)/dy at y, without the constant part (for N t), or the
 * right-hand side when rhs (y ignored). */
__attribute__((aligned(64))) static void grad_y(const struct cfg *cfg, struct flow *f, int rhs)
{
	for (size_t e = 0; e < f->ne; e++) {
		double v = rhs ? 0 : f->y[e];

		f->gy[e] = rhs ? f->eps * f->y0[e] + f->w_edge[e] * f->est_edge[e] :
				 (f->eps + f->w_edge[e] + f->pen[e]) * v;
	}
	for (size_t b = 0; b < f->nb; b++) {
		const uint32_t *list;
		uint32_t n;
		int virt;
		double z = 0;

		if (f->w_blk[b] <= 0)
			continue;
		side_of(cfg, f, b, &list, &n, &virt);
		if (rhs) {
			z = f->w_blk[b] * f->est_blk[b];
		} else {
			for (uint32_t k = 0; k < n; k++)
				z += f->y[list[k]];
			if (virt)
				z += f->y[f->ne - 1];
			z *= f->w_blk[b];
		}
		for (uint32_t k = 0; k < n; k++)
			f->gy[list[k]] += z;
		if (virt)
			f->gy[f->ne - 1] += z;
	}
}

__attribute__((aligned(64))) static void y_of_t(struct flow *f, const double *t)
{
	memset(f->y, 0, f->ne * sizeof(*f->y));
	for (size_t k = 0; k < f->ncyc; k++)
		for (uint32_t j = f->cstart[k]; j < f->cstart[k + 1]; j++)
			f->y[f->cedge[j]] += f->ccoef[j] * t[k];
}

__attribute__((aligned(64))) static void t_of_gy(const struct flow *f, double *out)
{
	for (size_t k = 0; k < f->ncyc; k++) {
		double s = 0;

		for (uint32_t j = f->cstart[k]; j < f->cstart[k + 1]; j++)
			s += f->ccoef[j] * f->gy[f->cedge[j]];
		out[k] = s;
	}
}

static void apply_n(const struct cfg *cfg, struct flow *f, const double *t, double *out)
{
	y_of_t(f, t);
	grad_y(cfg, f, 0);
	t_of_gy(f, out);
}

/* Preconditioned conjugate gradients on N t = r (t starts at its value). */
static int solve_cg(const struct cfg *cfg, struct flow *f, double *t)
{
	size_t k = f->ncyc;
	double *r = malloc(k * sizeof(*r)), *z = malloc(k * sizeof(*z));
	double *p = malloc(k * sizeof(*p)), *q = malloc(k * sizeof(*q));
	double *dinv = malloc(k * sizeof(*dinv));
	double rz = 0, r0 = 0;
	int rc = -ENOMEM;

	if (!r || !z || !p || !q || !dinv)
		goto out;
	/* Jacobi preconditioner: the diagonal of N, up to cross terms */
	memset(f->y, 0, f->ne * sizeof(*f->y));
	for (size_t c = 0; c < k; c++) {
		double d = 0;

		for (uint32_t j = f->cstart[c]; j < f->cstart[c + 1]; j++) {
			uint32_t e = f->cedge[j];
			uint32_t b = f->to[e];

			d += f->eps + f->w_edge[e] + f->pen[e] + (f->side_in[b] ? f->w_blk[b] : 0);
		}
		dinv[c] = d > 0 ? 1 / d : 1;
	}
	grad_y(cfg, f, 1);
	t_of_gy(f, r);
	apply_n(cfg, f, t, q);
	for (size_t c = 0; c < k; c++) {
		r[c] -= q[c];
		z[c] = dinv[c] * r[c];
		p[c] = z[c];
		rz += r[c] * z[c];
		r0 += r[c] * r[c];
	}
	for (size_t it = 0; it < 20 * k + 100 && rz > 0; it++) {
		double pq = 0, alpha, rz2 = 0, rr = 0;

		apply_n(cfg, f, p, q);
		for (size_t c = 0; c < k; c++)
			pq += p[c] * q[c];
		if (pq <= 0)
			break;
		alpha = rz / pq;
		for (size_t c = 0; c < k; c++) {
			t[c] += alpha * p[c];
			r[c] -= alpha * q[c];
			z[c] = dinv[c] * r[c];
			rz2 += r[c] * z[c];
			rr += r[c] * r[c];
		}
		if (rr <= 1e-24 * r0)
			break;
		for (size_t c = 0; c < k; c++)
			p[c] = z[c] + rz2 / rz * p[c];
		rz = rz2;
	}
	rc = 0;
out:
	free(r);
	free(z);
	free(p);
	free(q);
	free(dinv);
	return rc;
}

static int flow_alloc(struct flow *f, const struct cfg *cfg)
{
	size_t nb = cfg->nblocks, ne = cfg->nedges + 1;

	f->nb = nb, f->ne = ne;
	f->from = malloc(ne * sizeof(*f->from));
	f->to = malloc(ne * sizeof(*f->to));
	f->w_edge = calloc(ne, sizeof(double));
	f->est_edge = calloc(ne, sizeof(double));
	f->w_blk = calloc(nb, sizeof(double));
	f->est_blk = calloc(nb, sizeof(double));
	f->side_in = calloc(nb, sizeof(int));
	f->pen = calloc(ne, sizeof(double));
	f->y0 = calloc(ne, sizeof(double));
	f->y = calloc(ne, sizeof(double));
	f->gy = calloc(ne, sizeof(double));
	if (!f->from || !f->to || !f->w_edge || !f->est_edge || !f->w_blk || !f->est_blk ||
	    !f->side_in || !f->pen || !f->y0 || !f->y || !f->gy)
		return -ENOMEM;
	for (size_t e = 0; e + 1 < ne; e++) {
		f->from[e] = cfg->edges[e].from;
		f->to[e] = cfg->edges[e].to;
	}
	f->from[ne - 1] = cfg->exit;
	f->to[ne - 1] = cfg->entry;
	return 0;
}

static void flow_free(struct flow *f)
{
	free(f->from);
	free(f->to);
	free(f->cstart);
	free(f->cedge);
	free(f->ccoef);
	free(f->w_edge);
	free(f->est_edge);
	free(f->w_blk);
	free(f->est_blk);
	free(f->side_in);
	free(f->pen);
	free(f->y0);
	free(f->y);
	free(f->gy);
}

static int measured(const struct est_class *c)
{
	return (c->source == EST_S_CLUSTER || c->source == EST_S_SUM ||
		c->source == EST_S_BOUND) && c->estimate >= 0;
}

static double class_weight(const struct est_class *c, double floor)
{
	double e = fmax(c->estimate, floor);

	/* no samples: 0 known to within one sample's worth of executions */
	if (c->source == EST_S_BOUND)
		return conf_weight(c->conf) / (c->bound * c->bound);
	return conf_weight(c->conf) * fmax(c->used_samples, 1) / (e * e);
}

/* Term weights, split over the class's members. */
static void terms_build(struct flow *f, const struct cfg *cfg, const struct est_class *cls,
			const double *y)
{
	int *members = calloc((size_t)cfg->nclasses + 1, sizeof(int));
	double emax = 0, floor, wmin = INFINITY;

	for (int c = 0; c < cfg->nclasses; c++)
		if (measured(&cls[c]) && cls[c].estimate > emax)
			emax = cls[c].estimate;
	floor = emax > 0 ? 1e-3 * emax : 1;
	for (size_t b = 0; members && b < f->nb; b++)
		if (cfg->blocks[b].cls >= 0)
			members[cfg->blocks[b].cls]++;
	for (size_t e = 0; members && e + 1 < f->ne; e++)
		if (cfg->edges[e].cls >= 0)
			members[cfg->edges[e].cls]++;
	for (size_t b = 0; b < f->nb; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		const struct est_class *c = bl->cls >= 0 ? &cls[bl->cls] : NULL;

		f->side_in[b] = bl->npred > 0 || b == cfg->entry;
		if (!c || !measured(c))
			continue;
		f->w_blk[b] = class_weight(c, floor) / (members ? members[bl->cls] : 1);
		f->est_blk[b] = c->estimate;
		if (f->w_blk[b] > 0 && f->w_blk[b] < wmin)
			wmin = f->w_blk[b];
		f->wmax = fmax(f->wmax, f->w_blk[b]);
	}
	for (size_t e = 0; e + 1 < f->ne; e++) {
		const struct est_class *c = cfg->edges[e].cls >= 0 ? &cls[cfg->edges[e].cls] : NULL;

		if (!c || !measured(c))
			continue;
		f->w_edge[e] = class_weight(c, floor) / (members ? members[cfg->edges[e].cls] : 1);
		f->est_edge[e] = c->estimate;
		if (f->w_edge[e] > 0 && f->w_edge[e] < wmin)
			wmin = f->w_edge[e];
		f->wmax = fmax(f->wmax, f->w_edge[e]);
	}
	for (size_t e = 0; e < f->ne; e++)
		f->y0[e] = y[e] > 0 ? y[e] : 0;
	f->eps = isfinite(wmin) ? 1e-3 * wmin : 1.0 / (floor * floor);
	if (f->wmax <= 0)
		f->wmax = f->eps;
	free(members);
}

static void blocks_from_edges(const struct cfg *cfg, const struct flow *f, double *x,
			      double *resid)
{
	double xmax = 0, worst = 0;

	for (size_t b = 0; b < f->nb; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double in = 0, out = 0;

		for (uint32_t k = 0; k < bl->npred; k++)
			in += f->y[bl->pred[k]];
		for (uint32_t k = 0; k < bl->nsucc; k++)
			out += f->y[bl->succ[k]];
		if (b == cfg->entry)
			in += f->y[f->ne - 1];
		if (b == cfg->exit)
			out += f->y[f->ne - 1];
		if (bl->npred || b == cfg->entry)
			x[b] = in;
		else if (bl->nsucc)
			x[b] = out;
		else
			x[b] = x[b] > 0 ? x[b] : 0;
		if ((bl->npred || b == cfg->entry) && (bl->nsucc || b == cfg->exit) &&
		    fabs(in - out) > worst)
			worst = fabs(in - out);
		if (x[b] > xmax)
			xmax = x[b];
	}
	if (resid)
		*resid = xmax > 0 ? worst / xmax : 0;
}

/*
 * The most a class can have run: the bound of a skid-starved class
 * (ratios.c); 0: none.  A measured class's ratio is no such bound here:
 * an out-of-order core retires a cheap block in the shadow of an older
 * long-latency instruction, so its samples can fall far below count x M
 * (measured: capping measured classes at their estimates pulled gzip's
 * hottest loop to a third of its count through a 1-cycle block).
 */
static double class_cap(const struct est_class *c)
{
	if (c->samples <= 0 && c->bound > 0 && c->source != EST_S_BOUND)
		return c->bound;
	return 0;
}

/* Blocks above their class's cap get a heavy pull to it, as negative edges
 * get one to 0; returns 1 when some did. */
static int bounds_active(const struct cfg *cfg, const struct est_class *cls, struct flow *f)
{
	int any = 0;

	for (size_t b = 0; b < f->nb; b++) {
		const struct est_class *c = cfg->blocks[b].cls >= 0 ? &cls[cfg->blocks[b].cls] :
					    NULL;
		const uint32_t *list;
		uint32_t n;
		int virt;
		double z = 0;

		double cap;

		if (!c)
			continue;
		cap = class_cap(c);
		if (cap <= 0)
			continue;
		side_of(cfg, f, b, &list, &n, &virt);
		for (uint32_t k = 0; k < n; k++)
			z += f->y[list[k]];
		if (virt)
			z += f->y[f->ne - 1];
		if (z > cap * (1 + 1e-6)) {
			f->w_blk[b] = f->w_blk[b] > 0 ? 10 * f->w_blk[b] : 1e3 * f->wmax;
			f->est_blk[b] = cap;
			any = 1;
		}
	}
	return any;
}

int est_solve_flow(const struct cfg *cfg, const struct est_class *classes, double *x,
		   double *y, double *residual, struct dcpi_err *err)
{
	struct flow f = { 0 };
	double *t = NULL;
	int rc;

	if (residual)
		*residual = 0;
	rc = flow_alloc(&f, cfg);
	if (rc == 0)
		rc = cycles_build(&f, cfg);
	if (rc == 0 && !(t = calloc(f.ncyc + 1, sizeof(*t))))
		rc = -ENOMEM;
	if (rc < 0)
		goto out;
	terms_build(&f, cfg, classes, y);
	for (int round = 0; round < 8; round++) {
		double ymax = 0;
		int neg = 0;

		rc = solve_cg(cfg, &f, t);
		if (rc < 0)
			goto out;
		y_of_t(&f, t);
		for (size_t e = 0; e < f.ne; e++)
			ymax = fmax(ymax, f.y[e]);
		for (size_t e = 0; e < f.ne; e++) {
			if (f.y[e] < -1e-9 * ymax) {
				f.pen[e] = f.pen[e] > 0 ? 10 * f.pen[e] : 1e3 * f.wmax;
				neg = 1;
			}
		}
		if (bounds_active(cfg, classes, &f))
			neg = 1;
		if (!neg)
			break;
	}
	for (size_t e = 0; e < f.ne; e++) {
		if (f.y[e] < 0)
			f.y[e] = 0;
		y[e] = f.y[e];
	}
	blocks_from_edges(cfg, &f, x, residual);
out:
	if (rc == -E2BIG)
		dcpi_errf(err, rc, "%s: too large for the global solver", cfg->name);
	else if (rc < 0)
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
	free(t);
	flow_free(&f);
	return rc;
}
