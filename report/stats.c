/*
 * stats.c - profiles compared: dcpistats across several runs (the DCPI
 * paper's fig. 3: per procedure range %, sum, sum %, N, mean, std-dev, min,
 * max) and dcpidiff between two (per procedure the share of samples before
 * and after, the change, and how significant it is given the sampling
 * error).  Both start from dcpiprof's tables (summary.c), one per run.
 *
 * range % is (max - min) / sum over the runs, the paper's normalized range:
 * a procedure whose samples move between runs while the others stay put is
 * what a variance hunt looks for.  A procedure missing from a run counts 0
 * samples there; N is the runs it appears in.
 *
 * Significance: samples are Poisson, so a share p = a / A has variance about
 * a / A^2; the change p2 - p1 over sqrt(a / A^2 + b / B^2) is a z-score
 * (|z| >= 3: the change is not sampling noise, at the usual 99.7%).
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
		r->sum_share = out->total ? r->sum / (double)out->total : 0;
	}
	free(k);
	free(ev);
	rep_stats_sort(out, 0);
	return 0;
nomem:
	free(k);
	free(ev);
	rep_stats_free(out);
	return dcpi_errf(err, -ENOMEM, "out of memory");
}

static int by_range(const void *a, const void *b)
{
	const struct rep_stat_row *x = a, *y = b;

	if (x->range != y->range)
		return x->range < y->range ? 1 : -1;
	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_sum(const void *a, const void *b)
{
	const struct rep_stat_row *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return strcmp(x->name, y->name);
}

void rep_stats_sort(struct rep_stats *s, int sum_first)
{
	qsort(s->rows, s->nrows, sizeof(*s->rows), sum_first ? by_sum : by_range);
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
	fprintf(f, "%8s %12s %7s %3s %12s %10s %11s %11s  %s\n", "range%", "sum", "sum%", "N",
		"mean", "std-dev", "min", "max", "procedure");
	for (size_t i = 0; i < s->nrows && (!limit || i < limit); i++) {
		const struct rep_stat_row *r = &s->rows[i];

		fprintf(f, "%7.2f%% %12.0f %6.2f%% %3zu %12.2f %10.2f %11.0f %11.0f  %s\n",
			100 * r->range, r->sum, 100 * r->sum_share, r->n, r->mean, r->sd, r->min,
			r->max, r->name);
	}
}

void rep_stats_json(FILE *f, const struct rep_stats *s, const char *const *labels,
		    size_t limit)
{
	fprintf(f, "{\"runs\": [");
	for (size_t k = 0; k < s->nsets; k++) {
		fprintf(f, "%s", k ? ", " : "");
		rep_json_str(f, labels ? labels[k] : "");
	}
	fprintf(f, "], \"total\": %llu, \"procedures\": [", (unsigned long long)s->total);
	for (size_t i = 0; i < s->nrows && (!limit || i < limit); i++) {
		const struct rep_stat_row *r = &s->rows[i];

		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		rep_json_str(f, r->name);
		fprintf(f, ", \"image\": ");
		rep_json_str(f, r->image);
		fprintf(f, ", \"range\": %.6g, \"sum\": %.17g, \"sum_share\": %.6g, \"n\": %zu, "
			"\"mean\": %.17g, \"sd\": %.17g, \"min\": %.17g, \"max\": %.17g, "
			"\"samples\": [", r->range, r->sum, r->sum_share, r->n, r->mean, r->sd,
			r->min, r->max);
		for (size_t k = 0; k < s->nsets; k++)
			fprintf(f, "%s%.17g", k ? ", " : "", r->per_set[k]);
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
}

/* ---- dcpidiff ------------------------------------------------------------ */

int rep_diff(const struct rep_table *a, const struct rep_table *b, const char *event,
	     struct rep_diff *out, struct dcpi_err *err)
{
	const struct rep_table both[2] = { *a, *b };
	int ea = rep_event_index(a, event), eb = rep_event_index(b, event);
	struct key *k = NULL;
	size_t nk = 0;

	memset(out, 0, sizeof(*out));
	if (ea < 0 && eb < 0)
		return dcpi_errf(err, -ENODATA, "neither profile has %s samples", event);
	if (keys_of(both, 2, &k, &nk) < 0)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	out->ta = total_of(a, ea);
	out->tb = total_of(b, eb);
	out->rows = calloc(nk ? nk : 1, sizeof(*out->rows));
	if (!out->rows) {
		free(k);
		return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	for (size_t j = 0; j < nk; j++) {
		struct rep_diff_row *r = &out->rows[out->nrows];
		double va, vb;

		r->name = dup2(k[j].name);
		r->image = dup2(k[j].image);
		out->nrows++;
		if (!r->name || !r->image) {
			free(k);
			rep_diff_free(out);
			return dcpi_errf(err, -ENOMEM, "out of memory");
		}
		r->a = count_of(a, ea, &k[j]);
		r->b = count_of(b, eb, &k[j]);
		r->pa = out->ta ? (double)r->a / (double)out->ta : 0;
		r->pb = out->tb ? (double)r->b / (double)out->tb : 0;
		r->change = r->pb - r->pa;
		va = out->ta ? (double)r->a / ((double)out->ta * (double)out->ta) : 0;
		vb = out->tb ? (double)r->b / ((double)out->tb * (double)out->tb) : 0;
		/* a procedure with no samples on one side still has its share's
		 * error from one sample there (the Poisson 0 is not certain) */
		if (!r->a && out->ta)
			va = 1.0 / ((double)out->ta * (double)out->ta);
		if (!r->b && out->tb)
			vb = 1.0 / ((double)out->tb * (double)out->tb);
		r->z = va + vb > 0 ? r->change / sqrt(va + vb) : 0;
	}
	free(k);
	rep_diff_sort(out);
	return 0;
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

void rep_diff_text(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit)
{
	fprintf(f, "before: %s (%llu samples)\nafter:  %s (%llu samples)\n", la,
		(unsigned long long)d->ta, lb, (unsigned long long)d->tb);
	fprintf(f, "%10s %10s %8s %8s %9s %7s %10s %10s  %s\n", "before", "after", "before%",
		"after%", "change", "z", "insns<", "insns>", "procedure");
	for (size_t i = 0; i < d->nrows && (!limit || i < limit); i++) {
		const struct rep_diff_row *r = &d->rows[i];

		char xa[16] = "-", xb[16] = "-";

		if (r->have_x && r->xa >= 0)
			snprintf(xa, sizeof(xa), "%.3g", r->xa);
		if (r->have_x && r->xb >= 0)
			snprintf(xb, sizeof(xb), "%.3g", r->xb);
		fprintf(f, "%10llu %10llu %7.2f%% %7.2f%% %+8.2f%% %7.1f%s %10s %10s  %s\n",
			(unsigned long long)r->a, (unsigned long long)r->b, 100 * r->pa,
			100 * r->pb, 100 * r->change, r->z, fabs(r->z) >= 3 ? "*" : " ", xa, xb,
			r->name);
	}
	fprintf(f, "(* |z| >= 3: more than sampling noise; insns: the instructions the procedure\n"
		" executed before and after, estimated)\n");
}

void rep_diff_json(FILE *f, const struct rep_diff *d, const char *la, const char *lb,
		   size_t limit)
{
	fprintf(f, "{\"before\": ");
	rep_json_str(f, la);
	fprintf(f, ", \"after\": ");
	rep_json_str(f, lb);
	fprintf(f, ", \"before_total\": %llu, \"after_total\": %llu, \"procedures\": [",
		(unsigned long long)d->ta, (unsigned long long)d->tb);
	for (size_t i = 0; i < d->nrows && (!limit || i < limit); i++) {
		const struct rep_diff_row *r = &d->rows[i];

		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		rep_json_str(f, r->name);
		fprintf(f, ", \"image\": ");
		rep_json_str(f, r->image);
		fprintf(f, ", \"before\": %llu, \"after\": %llu, \"before_share\": %.6g, "
			"\"after_share\": %.6g, \"change\": %.6g, \"z\": %.4g",
			(unsigned long long)r->a, (unsigned long long)r->b, r->pa, r->pb,
			r->change, r->z);
		if (r->have_x)
			fprintf(f, ", \"instructions_before\": %.6g, \"instructions_after\": %.6g", r->xa,
				r->xb);
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
			     const char *proc)
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

int rep_diff_executions(struct rep_diff *d, const char *event, const char *dira,
			const char *epocha, const char *dirb, const char *epochb, size_t limit,
			struct dcpi_err *err)
{
	struct diff_side a = { 0 }, b = { 0 };
	int rc;

	/* both sides' best cases timed once, in the first database's cache:
	 * a change in the counts is then the samples', not the sandbox's */
	rc = side_open(&a, dira, epocha, dira, err);
	if (rc >= 0)
		rc = side_open(&b, dirb, epochb, dira, err);
	for (size_t i = 0; rc >= 0 && i < d->nrows && (!limit || i < limit); i++) {
		struct rep_diff_row *r = &d->rows[i];

		r->xa = r->a ? insns_executed(&a, event, r->image, r->name) : 0;
		r->xb = r->b ? insns_executed(&b, event, r->image, r->name) : 0;
		r->have_x = 1;
	}
	side_close(&a);
	side_close(&b);
	return rc;
}
