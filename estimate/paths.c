/*
 * paths.c - the shape of a procedure's counts from path samples
 * (docs/estimate.md "Path samples"): observed transitions mapped onto the
 * CFG's edges, per-branch outcome probabilities with a static prior where a
 * branch was seen rarely, and relative block and edge frequencies from the
 * flow equations x_b = entry_b + sum_p x_p prob(p -> b).
 *
 * Each observed step i -> j is a real transition whatever started the burst
 * (bursts start at time-weighted points, so how often an address was SEEN
 * says nothing; which way its branch WENT does, weighted by the time spent
 * just before each execution: an outcome that follows slower code than the
 * other is over-counted, docs/paths.md "Time weighting").  The DCPI paper (sec. 6.1)
 * had no such evidence; this is the AutoFDO / BOLT route with the
 * branch records made in software.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/estimate.h"
#include "dcpi/paths.h"

#define PATH_LEAK 1e-9

void est_path_obs_free(struct est_path_obs *obs)
{
	free(obs->edge);
	free(obs->depart);
	free(obs->seen);
	memset(obs, 0, sizeof(*obs));
}

static int obs_alloc(const struct cfg *cfg, struct est_path_obs *obs, struct dcpi_err *err)
{
	memset(obs, 0, sizeof(*obs));
	obs->nblocks = cfg->nblocks;
	obs->nedges = cfg->nedges;
	obs->edge = calloc(cfg->nedges + 1, sizeof(double));
	obs->depart = calloc(cfg->nblocks + 1, sizeof(double));
	obs->seen = calloc(cfg->nblocks + 1, sizeof(double));
	if (!obs->edge || !obs->depart || !obs->seen) {
		est_path_obs_free(obs);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	}
	return 0;
}

/* The edge of block b to the block starting at va, or of kind k; -1. */
static long edge_to(const struct cfg *cfg, uint32_t b, int have_va, uint64_t va, int kind)
{
	const struct cfg_block *bl = &cfg->blocks[b];

	for (uint32_t k = 0; k < bl->nsucc; k++) {
		const struct cfg_edge *e = &cfg->edges[bl->succ[k]];

		if (kind >= 0 && e->kind == (enum cfg_edge_kind)kind)
			return bl->succ[k];
		if (kind < 0 && have_va && e->to != cfg->exit && cfg->blocks[e->to].start == va)
			return bl->succ[k];
	}
	return -1;
}

/* One transition whose source is in the procedure, at block b's end. */
static void obs_depart(const struct cfg *cfg, struct est_path_obs *obs, uint32_t b, int t_in,
		       uint64_t vt, double n)
{
	const struct cfg_insn *last = &cfg->insns[cfg->blocks[b].first + cfg->blocks[b].n - 1];
	long e = -1;

	if (last->flags & CFG_I_CALL) {
		e = edge_to(cfg, b, 0, 0, CFG_E_CALL_RETURN);
		if (t_in && vt == cfg->blocks[cfg->entry].start)
			obs->entries += n;	/* a recursive call */
	} else if (last->flags & CFG_I_RET) {
		e = edge_to(cfg, b, 0, 0, CFG_E_RETURN);
	} else if (t_in) {
		e = edge_to(cfg, b, 1, vt, -1);
	} else {
		e = edge_to(cfg, b, 0, 0, CFG_E_TAILCALL);
	}
	if (e < 0) {
		obs->unmatched += n;
		return;
	}
	obs->edge[e] += n;
	obs->depart[b] += n;
	obs->seen[b] += n;
	if (cfg->edges[e].to != cfg->exit)
		obs->seen[cfg->edges[e].to] += n;
	obs->transitions += n;
}

int est_path_obs_at(const struct cfg *cfg, uint64_t off0, const struct path_profile *pp,
		    struct est_path_obs *obs, struct dcpi_err *err)
{
	uint64_t len = cfg->end > cfg->start ? cfg->end - cfg->start : 0;
	int rc = obs_alloc(cfg, obs, err);

	if (rc < 0 || !pp || !len)
		return rc;
	obs->bursts = (double)pp->bursts;
	obs->taken_only = !!(pp->flags & PATH_F_TAKEN_ONLY);
	for (size_t k = 0; k < pp->nedges; k++) {
		const struct path_edge *pe = &pp->edges[k];
		int f_in = pe->from != PATH_ELSEWHERE && pe->from >= off0 && pe->from - off0 < len;
		int t_in = pe->to != PATH_ELSEWHERE && pe->to >= off0 && pe->to - off0 < len;
		uint64_t vf = cfg->start + (pe->from - off0), vt = cfg->start + (pe->to - off0);
		double n = (double)pe->count;
		int b;

		if (!f_in) {
			if (t_in && vt == cfg->blocks[cfg->entry].start) {
				obs->entries += n;
				obs->seen[cfg->entry] += n;
			}
			continue;
		}
		b = cfg_block_at(cfg, vf);
		if (b < 0 || !cfg->blocks[b].n)
			continue;
		if (cfg->insns[cfg->blocks[b].first + cfg->blocks[b].n - 1].addr != vf)
			continue;	/* a step inside the block */
		obs_depart(cfg, obs, (uint32_t)b, t_in, vt, n);
	}
	return 0;
}

int est_path_obs_from_profile(const struct cfg *cfg, const struct image *img,
			      const struct path_profile *pp, struct est_path_obs *obs,
			      struct dcpi_err *err)
{
	uint64_t off0 = 0;

	if (pp && cfg->end > cfg->start && img_vaddr_to_offset(img, cfg->start, &off0) < 0) {
		memset(obs, 0, sizeof(*obs));
		return dcpi_errf(err, -ENOENT, "%s: procedure at 0x%llx is not in the file",
				 cfg->name, (unsigned long long)cfg->start);
	}
	return est_path_obs_at(cfg, off0, pp, obs, err);
}

/* Is block t inside loop l (nested loops included)? */
static int in_loop(const struct cfg *cfg, uint32_t t, int l)
{
	for (int k = cfg->blocks[t].loop; k >= 0; k = cfg->loops[k].parent)
		if (k == l)
			return 1;
	return 0;
}

/*
 * Ball and Larus (PLDI 1993), loop heuristics: a branch one of whose
 * successors leaves the innermost loop stays in it with 8:1 odds (0.89,
 * their measured 88%); a successor that never returns (abort, trap) gets
 * 1:100; otherwise every successor alike.
 */
void est_path_prior(const struct cfg *cfg, double *prior)
{
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		int l = bl->loop, leaves = 0, stays = 0;
		double sum = 0;

		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t t = cfg->edges[bl->succ[k]].to;

			if (l >= 0 && (t == cfg->exit || !in_loop(cfg, t, l)))
				leaves++;
			else
				stays++;
		}
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t t = cfg->edges[bl->succ[k]].to;
			double h = 1;

			if (leaves && stays)
				h = l >= 0 && t != cfg->exit && in_loop(cfg, t, l) ? 8 : 1;
			if (t != cfg->exit && (cfg->blocks[t].flags & CFG_B_NORETURN))
				h *= 0.01;
			prior[bl->succ[k]] = h;
			sum += h;
		}
		for (uint32_t k = 0; k < bl->nsucc; k++)
			prior[bl->succ[k]] /= sum;
	}
}

void est_path_probs(const struct cfg *cfg, const struct est_path_obs *obs, double w,
		    double *prob)
{
	est_path_prior(cfg, prob);
	if (!obs || !obs->edge)
		return;
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double nb = obs->depart[b];

		if (nb + w <= 0)
			continue;
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t e = bl->succ[k];

			prob[e] = (obs->edge[e] + w * prob[e]) / (nb + w);
		}
	}
}

/* Solve a x = r in place (n x n, row-major) by Gaussian elimination with
 * partial pivoting; a pivot below tiny is taken as tiny (singular: a block
 * on a closed cycle), so the answer stays finite. */
static void dense_solve(double *a, double *r, size_t n)
{
	for (size_t c = 0; c < n; c++) {
		size_t piv = c;
		double best = fabs(a[c * n + c]);

		for (size_t i = c + 1; i < n; i++)
			if (fabs(a[i * n + c]) > best)
				best = fabs(a[i * n + c]), piv = i;
		if (piv != c) {
			for (size_t j = c; j < n; j++) {
				double t = a[c * n + j];

				a[c * n + j] = a[piv * n + j];
				a[piv * n + j] = t;
			}
			double t = r[c];

			r[c] = r[piv];
			r[piv] = t;
		}
		if (fabs(a[c * n + c]) < 1e-12)
			a[c * n + c] = 1e-12;
		for (size_t i = c + 1; i < n; i++) {
			double f = a[i * n + c] / a[c * n + c];

			if (f == 0)
				continue;
			for (size_t j = c; j < n; j++)
				a[i * n + j] -= f * a[c * n + j];
			r[i] -= f * r[c];
		}
	}
	for (size_t c = n; c-- > 0;) {
		double s = r[c];

		for (size_t j = c + 1; j < n; j++)
			s -= a[c * n + j] * r[j];
		r[c] = s / a[c * n + c];
	}
}

int est_path_shape(const struct cfg *cfg, const double *prob, double *x, double *y,
		   struct dcpi_err *err)
{
	size_t n = cfg->nblocks;
	double *a;

	if (n > EST_PATH_MAX_BLOCKS)
		return dcpi_errf(err, -E2BIG, "%s: %zu blocks, too many for the path solver",
				 cfg->name, n);
	a = calloc(n * n + 1, sizeof(*a));
	if (!a)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	for (size_t b = 0; b < n; b++) {
		a[b * n + b] = 1;
		x[b] = b == cfg->entry ? 1 : 0;
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];

		a[(size_t)ed->to * n + ed->from] -= prob[e] * (1 - PATH_LEAK);
	}
	dense_solve(a, x, n);
	free(a);
	for (size_t b = 0; b < n; b++)
		if (!(x[b] > 0) || !isfinite(x[b]))
			x[b] = 0;
	for (size_t e = 0; e < cfg->nedges; e++)
		y[e] = x[cfg->edges[e].from] * prob[e];
	y[cfg->nedges] = 1;
	return 0;
}

void est_path_info_free(struct est_path_info *pi)
{
	if (!pi)
		return;
	free(pi->xrel);
	free(pi->edge_obs);
	free(pi->block_obs);
	free(pi->source);
	memset(pi, 0, sizeof(*pi));
}

static const char *const bsource_names[] = { "windows", "paths", "both" };

const char *est_bsource_name(enum est_bsource s)
{
	return (unsigned)s < 3 ? bsource_names[s] : "?";
}
