/*
 * collect/phase.c - phase changes from the order of interval counts (seed
 * note 003: "if a sort reverses two entries whose counts were an order of
 * magnitude apart, a phase change probably occurred"), and for comparison
 * the distance between successive intervals' count vectors.  The rules are
 * in include/dcpi/phase.h and docs/phases.md.
 *
 * The table holds one entry per key seen in the last three intervals: open addressing, linear probing, load <= 1/2.  phase_end
 * compares the two intervals, then rebuilds the table from the current
 * interval's entries alone, so it never holds more than three intervals' keys
 * (the cumulative counts live in the aggregation table, collect/aggregate.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/phase.h"
#include "dcpi/slices.h"
#include "internal.h"

#define PH_MIN_CAP 256
#define PH_MAX_HOT 64		/* entries over min_share: at most 1 / min_share */

struct ph_entry {
	uint64_t key;
	uint64_t c[3];		/* this interval, the previous, the one before; all 0: empty */
};

struct phase_det {
	struct phase_params p;
	struct ph_entry *t;
	size_t cap, n;
	uint64_t total[3];
	unsigned fired;		/* rules that fired at the last compared interval */
};

void phase_params_default(struct phase_params *p)
{
	p->factor = 10.0;
	p->min_share = 0.10;
	p->max_distance = 0.5;
	p->min_samples = 20;
	p->min_hot = 16;
}

int phase_new(const struct phase_params *p, struct phase_det **out, struct dcpi_err *err)
{
	struct phase_det *d = calloc(1, sizeof(*d));

	if (d) {
		d->cap = PH_MIN_CAP;
		d->t = calloc(d->cap, sizeof(*d->t));
	}
	if (!d || !d->t) {
		phase_free(d);
		return dcpi_errf(err, -ENOMEM, "phase detector: out of memory");
	}
	if (p)
		d->p = *p;
	else
		phase_params_default(&d->p);
	if (d->p.min_share <= 0 || d->p.min_share > 1)
		d->p.min_share = 0.10;
	*out = d;
	return 0;
}

void phase_free(struct phase_det *d)
{
	if (!d)
		return;
	free(d->t);
	free(d);
}

static uint64_t ph_hash(uint64_t key)
{
	return (key * 0x9E3779B97F4A7C15ULL) >> 20;
}

static struct ph_entry *ph_find(struct ph_entry *t, size_t cap, uint64_t key)
{
	size_t j = ph_hash(key) & (cap - 1);

	while ((t[j].c[0] || t[j].c[1] || t[j].c[2]) && t[j].key != key)
		j = (j + 1) & (cap - 1);
	return &t[j];
}

static int ph_live(const void *rec)
{
	const struct ph_entry *e = rec;

	return e->c[0] || e->c[1] || e->c[2];
}

/* An entry that still has a count once its counts move one interval back. */
static int ph_lasts(const void *rec)
{
	const struct ph_entry *e = rec;

	return e->c[0] || e->c[1];
}

static uint64_t ph_home(const void *rec)
{
	return ph_hash(((const struct ph_entry *)rec)->key);
}

/* Rehash the live entries of d into a table of cap slots; shift: each
 * interval's counts move one interval back, the oldest are forgotten. */
static int ph_rebuild(struct phase_det *d, size_t cap, int shift)
{
	int ret = recs_rehash((void **)&d->t, &d->cap, cap, sizeof(*d->t),
			      shift ? ph_lasts : ph_live, ph_home, &d->n);

	for (size_t i = 0; !ret && shift && i < d->cap; i++) {
		struct ph_entry *e = &d->t[i];

		if (ph_live(e))
			*e = (struct ph_entry){ e->key, { 0, e->c[0], e->c[1] } };
	}
	return ret;
}

int phase_add(struct phase_det *d, uint64_t key, uint64_t count)
{
	struct ph_entry *e;

	if (!count)
		return 0;
	if (2 * (d->n + 1) > d->cap && ph_rebuild(d, 2 * d->cap, 0))
		return -ENOMEM;
	e = ph_find(d->t, d->cap, key);
	if (!e->c[0] && !e->c[1] && !e->c[2]) {
		e->key = key;
		d->n++;
	}
	e->c[0] += count;
	d->total[0] += count;
	return 0;
}

/* Entries at or over min_share of interval w (0: this one). */
static size_t hot(const struct phase_det *d, int w, const struct ph_entry **out)
{
	size_t n = 0;

	for (size_t i = 0; i < d->cap && n < PH_MAX_HOT; i++) {
		uint64_t c = d->t[i].c[w];

		if (c && c >= d->p.min_hot && (double)c >= d->p.min_share * (double)d->total[w])
			out[n++] = &d->t[i];
	}
	return n;
}

/* Pairs (x hot in interval w, y hot now) an order of magnitude apart in w,
 * in reverse order now: what the periodic sort swaps. */
static uint64_t inversions_since(const struct phase_det *d, int w)
{
	const struct ph_entry *hp[PH_MAX_HOT], *hc[PH_MAX_HOT];
	size_t np = d->total[w] ? hot(d, w, hp) : 0, nc = hot(d, 0, hc);
	uint64_t inv = 0;

	for (size_t i = 0; i < np; i++)
		for (size_t j = 0; j < nc; j++) {
			const struct ph_entry *x = hp[i], *y = hc[j];

			if (x != y && (double)x->c[w] >= d->p.factor * (double)y->c[w] &&
			    y->c[0] > x->c[0])
				inv++;
		}
	return inv;
}

/* Against the previous interval, and the one before it: a change inside
 * the previous interval leaves it mixed, no pair an order of magnitude
 * apart, and only the interval before shows the old order. */
static uint64_t inversions(const struct phase_det *d)
{
	return inversions_since(d, 1) + inversions_since(d, 2);
}

static double distance(const struct phase_det *d)
{
	double s = 0;

	for (size_t i = 0; i < d->cap; i++) {
		const struct ph_entry *e = &d->t[i];
		double a = (double)e->c[1] / (double)d->total[1];
		double b = (double)e->c[0] / (double)d->total[0];

		if (e->c[0] || e->c[1])
			s += a > b ? a - b : b - a;
	}
	return s / 2;
}

int phase_end(struct phase_det *d, struct phase_verdict *v)
{
	unsigned rules = 0;

	memset(v, 0, sizeof(*v));
	v->samples = d->total[0];
	if (d->total[0] < d->p.min_samples || !d->total[0]) {
		/* too few to judge: forget them, keep the references */
		for (size_t i = 0; i < d->cap; i++)
			d->t[i].c[0] = 0;
		d->total[0] = 0;
		return ph_rebuild(d, d->cap, 0);
	}
	if (d->total[1]) {
		v->inversions = inversions(d);
		v->distance = distance(d);
		if (v->inversions)
			rules |= SLICE_RULE_INVERSION;
		if (v->distance >= d->p.max_distance)
			rules |= SLICE_RULE_DISTANCE;
		v->rules = rules & ~d->fired;
		d->fired = v->rules;
	}
	d->total[2] = d->total[1];
	d->total[1] = d->total[0];
	d->total[0] = 0;
	return ph_rebuild(d, d->cap > PH_MIN_CAP && 4 * d->n < d->cap ? d->cap / 2 : d->cap, 1);
}

/* --- a session's time slices (collect/session.c) ---------------------------- */

int ssl_init(struct sess_slices *t, uint64_t slice_ns, struct dcpi_err *err)
{
	memset(t, 0, sizeof(*t));
	t->slice_ns = slice_ns;
	return slice_ns ? phase_new(NULL, &t->det, err) : 0;
}

void ssl_free(struct sess_slices *t)
{
	ssl_clear(t);
	free(t->img);
	free(t->b);
	phase_free(t->det);
	memset(t, 0, sizeof(*t));
}

struct take_ctx {
	struct sess_slices *t;
};

/* One interval count of the aggregation table into its image's slice and
 * the detector; only the first event's (the time event's) samples. */
static int take_one(void *ctx, uint32_t image, uint32_t event, uint64_t offset,
		    uint64_t count)
{
	struct sess_slices *t = ctx;

	if (event)
		return 0;
	if (image >= t->nimg) {
		size_t n = image + 16;
		struct slice_profile *v = realloc(t->img, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t i = t->nimg; i < n; i++)
			slice_profile_init(&v[i]);
		t->img = v;
		t->nimg = n;
	}
	if (slice_profile_add(&t->img[image], t->cur, offset, count) ||
	    phase_add(t->det, phase_key(image, offset), count))
		return -ENOMEM;
	return 0;
}

int ssl_take(struct sess_slices *t, struct agg *a, struct dcpi_err *err)
{
	int ret = t->slice_ns ? agg_interval(a, take_one, t) : 0;

	return ret ? dcpi_errf(err, ret, "time slices: out of memory") : 0;
}

int ssl_end(struct sess_slices *t, struct agg *a, uint64_t next, struct dcpi_err *err)
{
	struct phase_verdict v;
	struct slice_bound *b;
	int ret = ssl_take(t, a, err);

	if (ret)
		return ret;
	if (phase_end(t->det, &v))
		return dcpi_errf(err, -ENOMEM, "phase detector: out of memory");
	if (v.rules) {
		if (!(b = dcpi_append((void **)&t->b, &t->nb, &t->capb, sizeof(*b))))
			return dcpi_errf(err, -ENOMEM, "time slices: out of memory");
		*b = (struct slice_bound){ t->cur, v.rules };
		t->bounds++;
	}
	t->cur = next;
	return 0;
}

int ssl_write(struct sess_slices *t, const char *event, ssl_image_fn *id, void *ctx,
	      struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	int ret = 0;

	for (size_t i = 0; i < t->nimg && !ret; i++) {
		struct slice_profile *p = &t->img[i];

		if (!p->n)
			continue;
		p->image = *id(ctx, (uint32_t)i);
		snprintf(p->event, sizeof(p->event), "%s", event);
		p->slice_ns = t->slice_ns;
		for (size_t j = 0; j < t->nb && !ret; j++)
			ret = slice_profile_bound(p, t->b[j].slice, t->b[j].rules);
		if (!ret)
			ret = slice_normalize(p);
		if (ret)
			return dcpi_errf(err, ret, "time slices: out of memory");
		ret = slice_epoch_write(db, epoch, p, err);
	}
	return ret;
}

void ssl_clear(struct sess_slices *t)
{
	for (size_t i = 0; i < t->nimg; i++)
		slice_profile_free(&t->img[i]);
	t->nb = 0;
}
