/*
 * stats.c - profiles compared: dcpistats across several runs (the DCPI
 * paper's fig. 3: per procedure range %, sum, sum %, N, mean, std-dev, min,
 * max) and dcpidiff between two (per procedure the share of samples before
 * and after, the change, and how significant it is).  Both start from
 * dcpiprof's tables (summary.c), one per run or epoch.  docs/diff.md has the
 * method and the test that holds it to its stated level.
 *
 * range % is (max - min) / sum over the runs, the paper's normalized range:
 * a procedure whose samples move between runs while the others stay put is
 * what a variance hunt looks for.  A procedure missing from a run counts 0
 * samples there; N is the runs it appears in.  One sample in one run is a
 * range of 100% and says nothing, so dcpistats ranks by range_lo, the range
 * left once each end is moved by its 99% Poisson error.
 *
 * Significance: samples are Poisson, but two runs of one program differ by
 * more than Poisson error (the machine, the timer, where the run starts), so
 * a change's variance is phi x the Poisson one (quasi-Poisson).  phi comes
 * from the spread of a side's epochs when there are several (Pearson's
 * X^2 / df), else from the procedures of the two runs themselves (median z^2
 * / 0.455, the median of chi^2 with one degree of freedom), never below 1.
 * A procedure's change is its log ratio of shares less the weighted median
 * of the other procedures' (shares sum to one: one procedure's growth shrinks
 * every other share, and that is not their change).  p-values are two-sided
 * and Holm-adjusted over the procedures tested; * marks p <= level.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/analysis.h"
#include "dcpi/report.h"

#define Z99 2.5758		/* two-sided 99% normal quantile */
#define MEDIAN_CHI2_1 0.4549	/* median of chi^2 with one degree of freedom */
#define MIN_EXPECT 5		/* expected samples a bin needs in X^2 */
#define MIN_TESTED 10		/* samples (both sides) a procedure needs to be tested */
#define MIN_REF 20		/* samples each side to be another's reference */

struct key {
	const char *name, *image;
	uint64_t addr;
};

static int same(const struct rep_row *r, const struct key *k)
{
	return !strcmp(r->name, k->name) && !strcmp(r->image, k->image);
}

static uint64_t count_of(const struct rep_table *t, int ev, const struct key *k)
{
	if (ev < 0)
		return 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (same(&t->rows[i], k))
			return t->rows[i].samples[ev];
	return 0;
}

static uint64_t total_of(const struct rep_table *t, int ev)
{
	return ev >= 0 ? t->events[ev].total : 0;
}

/* Every procedure of every table, once. */
static int keys_of(const struct rep_table *t, size_t n, struct key **out, size_t *nk)
{
	struct key *k = NULL;
	size_t cnt = 0, cap = 0;

	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < t[s].nrows; i++) {
			const struct rep_row *r = &t[s].rows[i];
			size_t j;

			for (j = 0; j < cnt; j++)
				if (same(r, &k[j]))
					break;
			if (j < cnt)
				continue;
			if (dcpi_grow((void **)&k, &cap, cnt + 1, sizeof(*k))) {
				free(k);
				return -ENOMEM;
			}
			k[cnt++] = (struct key){ r->name, r->image, r->addr };
		}
	*out = k;
	*nk = cnt;
	return 0;
}

/*
 * Pearson's X^2 of the procedures' samples over n epochs (or runs) against
 * one share each, added to *x2 with its degrees of freedom to *df: bins are
 * the procedures expecting MIN_EXPECT samples in every epoch, and the rest
 * together when it does too.
 */
static void dispersion(const struct rep_table *t, size_t n, const int *ev,
		       const struct key *k, size_t nk, double *x2, double *df)
{
	double tot = 0, tmin = INFINITY, restp = 1, *rest = calloc(n, sizeof(*rest));
	size_t bins = 0;

	if (n < 2 || !rest)
		goto out;
	for (size_t e = 0; e < n; e++) {
		rest[e] = (double)total_of(&t[e], ev[e]);
		tot += rest[e];
		tmin = fmin(tmin, rest[e]);
	}
	for (size_t j = 0; j < nk && tot > 0; j++) {
		double c = 0, p;

		for (size_t e = 0; e < n; e++)
			c += (double)count_of(&t[e], ev[e], &k[j]);
		p = c / tot;
		if (p * tmin < MIN_EXPECT)
			continue;
		for (size_t e = 0; e < n; e++) {
			double o = (double)count_of(&t[e], ev[e], &k[j]), x = p * total_of(&t[e], ev[e]);

			*x2 += (o - x) * (o - x) / x;
			rest[e] -= o;
		}
		restp -= p;
		bins++;
	}
	if (restp * tmin >= MIN_EXPECT) {
		for (size_t e = 0; e < n; e++) {
			double x = restp * total_of(&t[e], ev[e]);

			*x2 += (rest[e] - x) * (rest[e] - x) / x;
		}
		bins++;
	}
	if (bins >= 2)
		*df += (double)((n - 1) * (bins - 1));
out:
	free(rest);
}

/* The range less each end's 99% Poisson error (an empty end counts one). */
static double range_lo(const struct rep_stat_row *r)
{
	double hi = r->max - Z99 * sqrt(r->max), lo = r->min + Z99 * sqrt(fmax(r->min, 1));

	return r->sum > 0 && hi > lo ? (hi - lo) / r->sum : 0;
}

static char *dup2(const char *s)
{
	return strdup(s ? s : "");
}

int rep_stats(const struct rep_table *sets, size_t nsets, const char *event,
	      struct rep_stats *out, struct dcpi_err *err)
{
	struct key *k = NULL;
	size_t nk = 0;
	int *ev;

	memset(out, 0, sizeof(*out));
	if (nsets < 2)
		return dcpi_errf(err, -EINVAL, "statistics need at least two runs, not %zu", nsets);
	ev = calloc(nsets, sizeof(*ev));
	if (!ev || keys_of(sets, nsets, &k, &nk) < 0) {
		free(ev);
		return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	for (size_t s = 0; s < nsets; s++) {
		ev[s] = rep_event_index(&sets[s], event);
		out->total += total_of(&sets[s], ev[s]);
	}
	out->nsets = nsets;
	out->rows = calloc(nk ? nk : 1, sizeof(*out->rows));
	if (!out->rows)
		goto nomem;
	for (size_t j = 0; j < nk; j++) {
		struct rep_stat_row *r = &out->rows[out->nrows];
		double sq = 0;

		r->per_set = calloc(nsets, sizeof(*r->per_set));
		r->name = dup2(k[j].name);
		r->image = dup2(k[j].image);
		out->nrows++;
		if (!r->per_set || !r->name || !r->image)
			goto nomem;
		r->addr = k[j].addr;
		r->min = INFINITY;
		for (size_t s = 0; s < nsets; s++) {
			double v = (double)count_of(&sets[s], ev[s], &k[j]);

			r->per_set[s] = v;
			r->n += v > 0;
			r->sum += v;
			r->min = fmin(r->min, v);
			r->max = fmax(r->max, v);
		}
		r->mean = r->sum / (double)nsets;
		for (size_t s = 0; s < nsets; s++)
			sq += (r->per_set[s] - r->mean) * (r->per_set[s] - r->mean);
		r->sd = sqrt(sq / (double)(nsets - 1));
		r->range = r->sum > 0 ? (r->max - r->min) / r->sum : 0;
		r->range_lo = range_lo(r);
		r->sum_share = out->total ? r->sum / (double)out->total : 0;
	}
	{
		double x2 = 0, df = 0;

		dispersion(sets, nsets, ev, k, nk, &x2, &df);
		out->phi = df > 0 ? x2 / df : 0;
	}
	free(k);
	free(ev);
	rep_stats_sort(out, REP_BY_EVIDENCE);
	return 0;
nomem:
	free(k);
	free(ev);
	rep_stats_free(out);
	return dcpi_errf(err, -ENOMEM, "out of memory");
}

static int by_sum(const void *a, const void *b)
{
	const struct rep_stat_row *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* By range, then as by_sum. */
static int by_range(const void *a, const void *b)
{
	const struct rep_stat_row *x = a, *y = b;

	if (x->range != y->range)
		return x->range < y->range ? 1 : -1;
	return by_sum(a, b);
}

/* By the range's lower bound, then as by_sum. */
static int by_evidence(const void *a, const void *b)
{
	const struct rep_stat_row *x = a, *y = b;

	if (x->range_lo != y->range_lo)
		return x->range_lo < y->range_lo ? 1 : -1;
	return by_sum(a, b);
}

void rep_stats_sort(struct rep_stats *s, int order)
{
	qsort(s->rows, s->nrows, sizeof(*s->rows), order == REP_BY_SUM ? by_sum :
	      order == REP_BY_RANGE ? by_range : by_evidence);
}

void rep_stats_free(struct rep_stats *s)
{
	for (size_t i = 0; i < s->nrows; i++) {
		free(s->rows[i].per_set);
		free(s->rows[i].name);
		free(s->rows[i].image);
	}
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

void rep_stats_text(FILE *f, const struct rep_stats *s, const char *const *labels,
		    size_t limit)
{
	fprintf(f, "Number of runs: %zu; total samples %llu\n", s->nsets,
		(unsigned long long)s->total);
	for (size_t k = 0; k < s->nsets && labels; k++)
		fprintf(f, "  run %zu: %s\n", k + 1, labels[k]);
	if (s->phi > 0)
		fprintf(f, "Run-to-run dispersion of the shares: %.2f x sampling noise\n", s->phi);
	fprintf(f, "%8s %8s %12s %7s %3s %12s %10s %11s %11s  %s\n", "range%", "beyond%", "sum",
		"sum%", "N", "mean", "std-dev", "min", "max", "procedure");
	for (size_t i = 0; i < s->nrows && (!limit || i < limit); i++) {
		const struct rep_stat_row *r = &s->rows[i];

		fprintf(f, "%7.2f%% %7.2f%% %12.0f %6.2f%% %3zu %12.2f %10.2f %11.0f %11.0f  %s\n",
			100 * r->range, 100 * r->range_lo, r->sum, 100 * r->sum_share, r->n,
			r->mean, r->sd, r->min, r->max, r->name);
	}
	fprintf(f, "(beyond%%: the range less each end's 99%% sampling error, what ranks)\n");
}

/* The opening of JSON row i of a procedures list: its name and image. */
static void json_row_open(FILE *f, size_t i, const char *name, const char *image)
{
	fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
	rep_json_str(f, name);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, image);
}

void rep_stats_json(FILE *f, const struct rep_stats *s, const char *const *labels,
		    size_t limit)
{
	fprintf(f, "{\"runs\": [");
	for (size_t k = 0; k < s->nsets; k++) {
		fprintf(f, "%s", k ? ", " : "");
		rep_json_str(f, labels ? labels[k] : "");
	}
	fprintf(f, "], \"total\": %llu, \"dispersion\": %.4g, \"procedures\": [",
		(unsigned long long)s->total, s->phi);
	for (size_t i = 0; i < s->nrows && (!limit || i < limit); i++) {
		const struct rep_stat_row *r = &s->rows[i];

		json_row_open(f, i, r->name, r->image);
		fprintf(f, ", \"range\": %.6g, \"range_lo\": %.6g, \"sum\": %.17g, "
			"\"sum_share\": %.6g, \"n\": %zu, \"mean\": %.17g, \"sd\": %.17g, "
			"\"min\": %.17g, \"max\": %.17g, \"samples\": [", r->range, r->range_lo,
			r->sum, r->sum_share, r->n, r->mean, r->sd, r->min, r->max);
		for (size_t k = 0; k < s->nsets; k++)
			fprintf(f, "%s%.17g", k ? ", " : "", r->per_set[k]);
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
}

/* ---- dcpidiff ------------------------------------------------------------ */

/* One side of a diff: its epochs' tables and the event's index in each. */
struct dside {
	const struct rep_table *t;
	size_t n;
	int *ev;
	uint64_t total;
};

static uint64_t side_count(const struct dside *s, const struct key *k)
{
	uint64_t c = 0;

	for (size_t e = 0; e < s->n; e++)
		c += count_of(&s->t[e], s->ev[e], k);
	return c;
}

/* log(share after / share before), half a sample added to each side so
 * that an empty side has a finite ratio; *v: its Poisson variance. */
static double log_ratio(const struct rep_diff *d, const struct rep_diff_row *r, double *v)
{
	double a = (double)r->a + 0.5, b = (double)r->b + 0.5;

	*v = 1 / a + 1 / b;
	return log(b / ((double)d->tb + 0.5)) - log(a / ((double)d->ta + 0.5));
}

struct wval {
	double x, w;
};

static int by_x_dbl(const void *p, const void *q)
{
	const double *a = p, *b = q;

	return (*a > *b) - (*a < *b);
}

static int by_x(const void *p, const void *q)
{
	const struct wval *a = p, *b = q;

	return (a->x > b->x) - (a->x < b->x);
}

static double wmedian(struct wval *v, size_t n)
{
	double half = 0, acc = 0;

	qsort(v, n, sizeof(*v), by_x);
	for (size_t i = 0; i < n; i++)
		half += v[i].w / 2;
	for (size_t i = 0; i < n; i++) {
		acc += v[i].w;
		if (acc >= half)
			return v[i].x;
	}
	return n ? v[n - 1].x : 0;
}

static int is_ref(const struct rep_diff_row *r)
{
	return r->a >= MIN_REF && r->b >= MIN_REF;
}

/*
 * z before phi: each tested procedure's log ratio less the weighted median
 * of the other references' (weights 1 / variance; the median's own variance
 * taken as pi/2 times the weighted mean's), or, with fewer than three
 * references, the change of share over its Poisson error.  z0 is scratch of
 * nrows.
 */
static int raw_z(struct rep_diff *d, double *z0)
{
	struct wval *v = calloc(d->nrows ? d->nrows : 1, sizeof(*v));
	size_t nref = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->nrows; i++)
		nref += is_ref(&d->rows[i]);
	d->normalized = nref >= 3;
	for (size_t i = 0; i < d->nrows; i++) {
		struct rep_diff_row *r = &d->rows[i];
		double vi, ri = log_ratio(d, r, &vi), sw = 0, va, vb;
		size_t m = 0;

		if (d->normalized) {
			for (size_t j = 0; j < d->nrows; j++) {
				double vj;

				if (j == i || !is_ref(&d->rows[j]))
					continue;
				v[m].x = log_ratio(d, &d->rows[j], &vj);
				v[m].w = 1 / vj;
				sw += v[m++].w;
			}
			z0[i] = (ri - wmedian(v, m)) / sqrt(vi + M_PI / 2 / sw);
			continue;
		}
		va = d->ta ? fmax((double)r->a, 1) / ((double)d->ta * (double)d->ta) : 0;
		vb = d->tb ? fmax((double)r->b, 1) / ((double)d->tb * (double)d->tb) : 0;
		z0[i] = va + vb > 0 ? r->change / sqrt(va + vb) : 0;
	}
	free(v);
	return 0;
}

/* phi from the epochs' spread, else from the references' z0, floored at 1. */
static int estimate_phi(struct rep_diff *d, const struct dside *sa, const struct dside *sb,
			const struct key *k, size_t nk, const double *z0)
{
	double x2 = 0, df = 0, *q;
	size_t m = 0;

	dispersion(sa->t, sa->n, sa->ev, k, nk, &x2, &df);
	dispersion(sb->t, sb->n, sb->ev, k, nk, &x2, &df);
	d->phi_from = "none";
	if (df > 0) {
		d->phi_raw = x2 / df;
		d->phi_from = "epochs";
	} else if (d->normalized) {
		q = calloc(d->nrows, sizeof(*q));
		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < d->nrows; i++)
			if (is_ref(&d->rows[i]))
				q[m++] = z0[i] * z0[i];
		qsort(q, m, sizeof(*q), by_x_dbl);
		d->phi_raw = (m % 2 ? q[m / 2] : (q[m / 2 - 1] + q[m / 2]) / 2) / MEDIAN_CHI2_1;
		d->phi_from = "procedures";
		free(q);
	}
	d->phi = fmax(1, d->phi_raw);
	return 0;
}

/* Holm's step-down over the tested rows: p-values adjusted, sig set. */
static int holm(struct rep_diff *d)
{
	struct wval *v = calloc(d->nrows ? d->nrows : 1, sizeof(*v));
	double run = 0;
	size_t m = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->nrows; i++)
		if (d->rows[i].tested)
			v[m++] = (struct wval){ d->rows[i].p, (double)i };
	qsort(v, m, sizeof(*v), by_x);
	for (size_t j = 0; j < m; j++) {
		struct rep_diff_row *r = &d->rows[(size_t)v[j].w];

		run = fmin(1, fmax(run, (double)(m - j) * v[j].x));
		r->p = run;
		r->sig = run <= d->level;
		d->nsig += r->sig;
	}
	d->ntested = m;
	free(v);
	return 0;
}

static int diff_rows(struct rep_diff *d, const struct dside *sa, const struct dside *sb,
		     const struct key *k, size_t nk)
{
	for (size_t j = 0; j < nk; j++) {
		struct rep_diff_row *r = &d->rows[d->nrows];

		r->name = dup2(k[j].name);
		r->image = dup2(k[j].image);
		d->nrows++;
		if (!r->name || !r->image)
			return -ENOMEM;
		r->a = side_count(sa, &k[j]);
		r->b = side_count(sb, &k[j]);
		r->pa = d->ta ? (double)r->a / (double)d->ta : 0;
		r->pb = d->tb ? (double)r->b / (double)d->tb : 0;
		r->change = r->pb - r->pa;
		r->tested = r->a + r->b >= MIN_TESTED && d->ta && d->tb;
		r->p = 1;
	}
	return 0;
}

static int diff_test(struct rep_diff *d, const struct dside *sa, const struct dside *sb,
		     const struct key *k, size_t nk)
{
	double *z0 = calloc(d->nrows ? d->nrows : 1, sizeof(*z0));
	int rc = z0 ? raw_z(d, z0) : -ENOMEM;

	if (rc >= 0)
		rc = estimate_phi(d, sa, sb, k, nk, z0);
	for (size_t i = 0; rc >= 0 && i < d->nrows; i++) {
		struct rep_diff_row *r = &d->rows[i];

		r->z = z0[i] / sqrt(d->phi);
		if (r->tested)
			r->p = erfc(fabs(r->z) / M_SQRT2);
	}
	if (rc >= 0)
		rc = holm(d);
	free(z0);
	return rc;
}

static int side_init(struct dside *s, const struct rep_table *t, size_t n, const char *event)
{
	s->t = t;
	s->n = n;
	s->ev = calloc(n, sizeof(*s->ev));
	if (!s->ev)
		return -ENOMEM;
	for (size_t e = 0; e < n; e++) {
		s->ev[e] = rep_event_index(&t[e], event);
		s->total += total_of(&t[e], s->ev[e]);
	}
	return 0;
}

int rep_diff_epochs(const struct rep_table *a, size_t na, const struct rep_table *b, size_t nb,
		    const char *event, double level, struct rep_diff *out, struct dcpi_err *err)
{
	struct rep_table *all = calloc(na + nb, sizeof(*all));
	struct dside sa = { 0 }, sb = { 0 };
	struct key *k = NULL;
	size_t nk = 0;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!na || !nb || !(level > 0 && level < 1)) {
		free(all);
		return dcpi_errf(err, -EINVAL, "a diff needs an epoch each side and a level in "
				 "(0, 1)");
	}
	if (!all || side_init(&sa, a, na, event) < 0 || side_init(&sb, b, nb, event) < 0)
		goto out;
	rc = -ENODATA;
	if (!sa.total && !sb.total) {
		dcpi_errf(err, rc, "neither profile has %s samples", event);
		goto out;
	}
	memcpy(all, a, na * sizeof(*a));
	memcpy(all + na, b, nb * sizeof(*b));
	rc = keys_of(all, na + nb, &k, &nk);
	out->ta = sa.total;
	out->tb = sb.total;
	out->na = na;
	out->nb = nb;
	out->level = level;
	out->rows = rc < 0 ? NULL : calloc(nk ? nk : 1, sizeof(*out->rows));
	rc = out->rows ? diff_rows(out, &sa, &sb, k, nk) : -ENOMEM;
	if (rc >= 0)
		rc = diff_test(out, &sa, &sb, k, nk);
	if (rc < 0)
		rep_diff_free(out);
	else
		rep_diff_sort(out);
out:
	if (rc == -ENOMEM)
		dcpi_errf(err, rc, "out of memory");
	free(k);
	free(all);
	free(sa.ev);
	free(sb.ev);
	return rc < 0 ? rc : 0;
}

int rep_diff(const struct rep_table *a, const struct rep_table *b, const char *event,
	     struct rep_diff *out, struct dcpi_err *err)
{
	return rep_diff_epochs(a, 1, b, 1, event, REP_DIFF_LEVEL, out, err);
}

static int by_change(const void *x, const void *y)
{
	const struct rep_diff_row *a = x, *b = y;
	double ca = fabs(a->change), cb = fabs(b->change);

	if (ca != cb)
		return ca < cb ? 1 : -1;
	return strcmp(a->name, b->name);
}

void rep_diff_sort(struct rep_diff *d)
{
	qsort(d->rows, d->nrows, sizeof(*d->rows), by_change);
}

void rep_diff_free(struct rep_diff *d)
{
	for (size_t i = 0; i < d->nrows; i++) {
		free(d->rows[i].name);
		free(d->rows[i].image);
	}
	free(d->rows);
	memset(d, 0, sizeof(*d));
}

static void diff_method(FILE *f, const struct rep_diff *d)
{
	fprintf(f, "significance: %g%% family-wise (Holm over %zu procedures with >= %d samples); "
		"%zu significant\n", 100 * d->level, d->ntested, MIN_TESTED, d->nsig);
	fprintf(f, "run-to-run dispersion phi = %.2f (from %s", d->phi, d->phi_from);
	if (d->phi_raw > 0 && d->phi_raw < 1)
		fprintf(f, ", %.2f raised to 1", d->phi_raw);
	fprintf(f, "; epochs %zu before, %zu after)\n", d->na, d->nb);
	if (!strcmp(d->phi_from, "none"))
		fprintf(f, "  note: too few procedures to estimate phi: only sampling error is "
			"modelled; give several epochs a side (docs/diff.md)\n");
}

static void fmt_x(char *buf, size_t len, const struct rep_diff_row *r, double x)
{
	if (r->have_x && x >= 0)
		snprintf(buf, len, "%.3g%s", x, r->relative ? "r" : "");
}

void rep_diff_text(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit)
{
	int rel = 0;

	fprintf(f, "before: %s (%llu samples)\nafter:  %s (%llu samples)\n", la,
		(unsigned long long)d->ta, lb, (unsigned long long)d->tb);
	diff_method(f, d);
	fprintf(f, "%10s %10s %8s %8s %9s %7s %8s %10s %10s  %s\n", "before", "after", "before%",
		"after%", "change", "z", "p", "insns<", "insns>", "procedure");
	for (size_t i = 0; i < d->nrows && (!limit || i < limit); i++) {
		const struct rep_diff_row *r = &d->rows[i];
		char xa[16] = "-", xb[16] = "-", p[16] = "-";

		fmt_x(xa, sizeof(xa), r, r->xa);
		fmt_x(xb, sizeof(xb), r, r->xb);
		rel |= r->have_x && r->relative;
		if (r->tested)
			snprintf(p, sizeof(p), "%.2g", r->p);
		fprintf(f, "%10llu %10llu %7.2f%% %7.2f%% %+8.2f%% %7.1f %8s%s %10s %10s  %s\n",
			(unsigned long long)r->a, (unsigned long long)r->b, 100 * r->pa,
			100 * r->pb, 100 * r->change, r->z, p, r->sig ? "*" : " ", xa, xb, r->name);
	}
	fprintf(f, "(* p <= %g: more than sampling noise and run-to-run variation; z, p: the "
		"change\n against the other procedures', p Holm-adjusted; insns: instructions "
		"executed,\n estimated%s)\n", d->level, rel ? "; r: relative, no calibration "
		"(only the ratio after/before means anything)" : "");
}

void rep_diff_json(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit)
{
	fprintf(f, "{\"before\": ");
	rep_json_str(f, la);
	fprintf(f, ", \"after\": ");
	rep_json_str(f, lb);
	fprintf(f, ", \"before_total\": %llu, \"after_total\": %llu, \"before_epochs\": %zu, "
		"\"after_epochs\": %zu, \"level\": %g, \"phi\": %.4g, \"phi_estimate\": %.4g, "
		"\"phi_from\": \"%s\", \"normalized\": %s, \"tested\": %zu, \"significant\": %zu, "
		"\"procedures\": [", (unsigned long long)d->ta, (unsigned long long)d->tb, d->na,
		d->nb, d->level, d->phi, d->phi_raw, d->phi_from, d->normalized ? "true" : "false",
		d->ntested, d->nsig);
	for (size_t i = 0; i < d->nrows && (!limit || i < limit); i++) {
		const struct rep_diff_row *r = &d->rows[i];

		json_row_open(f, i, r->name, r->image);
		fprintf(f, ", \"before\": %llu, \"after\": %llu, \"before_share\": %.6g, "
			"\"after_share\": %.6g, \"change\": %.6g, \"z\": %.4g, \"p\": %.4g, "
			"\"tested\": %s, \"significant\": %s",
			(unsigned long long)r->a, (unsigned long long)r->b, r->pa, r->pb,
			r->change, r->z, r->p, r->tested ? "true" : "false",
			r->sig ? "true" : "false");
		if (r->have_x)
			fprintf(f, ", \"instructions_before\": %.6g, \"instructions_after\": %.6g, "
				"\"instructions_relative\": %s", r->xa, r->xb,
				r->relative ? "true" : "false");
		fprintf(f, "}");
	}
	fprintf(f, "\n]}\n");
}

/* ---- estimated executions of the procedures a diff shows ---------------- */

/* One side of a diff: its database, epoch and the analysis input. */
struct diff_side {
	struct prof_db *db;
	struct prof_profile *p;
	size_t n;
	char used[256];
	struct est_input in;
	int open;
};

/* The instructions proc executed (est_analyze's executions, as dcpicalc
 * prints them, summed over its instructions); -1 when it cannot be
 * estimated.  With the samples' change it tells more work from slower work
 * (CPI). */
static double insns_executed(struct diff_side *sd, const char *event, const char *image,
			     const char *proc, int *relative)
{
	const struct prof_profile *pr = NULL;
	const struct img_proc *ip;
	struct est_analysis a;
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	double x = -1;

	for (size_t i = 0; i < sd->n && !pr; i++)
		if (!strcmp(sd->p[i].event, event) && !strcmp(sd->p[i].image.path, image))
			pr = &sd->p[i];
	if (!pr || img_open(image, IMG_NO_DWARF, &img, &err) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	if (img_proc_find(img, proc, &ip, &err) == 0 &&
	    est_analyze(&sd->in, img, pr, ip, &a, &err) == 0) {
		x = 0;
		for (size_t i = 0; i < a.r.ninsns; i++)
			x += a.r.insns[i].executions;
		*relative |= a.r.relative;
	}
	est_analysis_free(&a);
	img_close(img);
	return x;
}

static int side_open(struct diff_side *sd, const char *dir, const char *epoch,
		     const char *cache, struct dcpi_err *err)
{
	struct est_analysis_opts o;
	int rc = prof_db_open(dir, 0, &sd->db, err);

	if (rc >= 0)
		rc = rep_load_profiles(sd->db, epoch, &sd->p, &sd->n, sd->used, sizeof(sd->used),
				       err);
	est_analysis_opts_default(&o);
	o.cache_dir = cache;
	if (rc >= 0) {
		sd->open = 1;	/* closed whatever open did */
		rc = est_input_open(&sd->in, sd->db, dir, sd->used, sd->p, sd->n, &o, err);
	}
	return rc;
}

static void side_close(struct diff_side *sd)
{
	if (sd->open)
		est_input_close(&sd->in);
	prof_profiles_free(sd->p, sd->n);
	if (sd->db)
		prof_db_close(sd->db);
}

/* Adds one epoch's instructions to one side (b: after) of the first limit
 * rows; a row without an estimate in any epoch gets -1. */
static int epoch_executions(struct rep_diff *d, int b, const char *event, const char *dir,
			    const char *epoch, const char *cache, size_t limit,
			    struct dcpi_err *err)
{
	struct diff_side sd = { 0 };
	int rc = side_open(&sd, dir, epoch, cache, err);

	for (size_t i = 0; rc >= 0 && i < d->nrows && (!limit || i < limit); i++) {
		struct rep_diff_row *r = &d->rows[i];
		double *x = b ? &r->xb : &r->xa, v;

		if (!(b ? r->b : r->a) || *x < 0)
			continue;
		v = insns_executed(&sd, event, r->image, r->name, &r->relative);
		*x = v < 0 ? -1 : *x + v;
		r->have_x = 1;
	}
	side_close(&sd);
	return rc;
}

int rep_diff_executions(struct rep_diff *d, const char *event, const char *dira,
			const char *const *epochsa, size_t na, const char *dirb,
			const char *const *epochsb, size_t nb, size_t limit, struct dcpi_err *err)
{
	int rc = 0;

	/* both sides' best cases timed once, in the first database's cache:
	 * a change in the counts is then the samples', not the sandbox's */
	for (size_t e = 0; rc >= 0 && e < (na ? na : 1); e++)
		rc = epoch_executions(d, 0, event, dira, epochsa ? epochsa[e] : NULL, dira, limit,
				      err);
	for (size_t e = 0; rc >= 0 && e < (nb ? nb : 1); e++)
		rc = epoch_executions(d, 1, event, dirb, epochsb ? epochsb[e] : NULL, dira, limit,
				      err);
	for (size_t i = 0; i < d->nrows && (!limit || i < limit); i++)
		d->rows[i].have_x = 1;
	return rc;
}
