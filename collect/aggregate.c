/*
 * collect/aggregate.c - sample counts per (image, event, file offset), the
 * daemon's in-memory hash table of the DCPI paper (sec. 4.3.1) with the
 * event in the key, and their flush into one profile per (image, event) of
 * an epoch (sec. 4.3.3).  The one table both the live session (collect/
 * session.c, after its (pid, pc, event) table of hashtab.h and maps_place)
 * and the importers (import/perf.c, import/callgrind.c, import/ibs.c, flushed
 * by import/import.c's imp_table_flush) count into; declared in
 * include/dcpi/collect.h.
 *
 * Open addressing with linear probing; a slot with count 0 is empty.  Each
 * slot also counts what arrived since the last agg_interval, which hands
 * those interval counts to the time slices and the phase detector (collect/
 * phase.c) and restarts them.  A
 * flush sorts a copy by (image, event, offset) so each profile's entries are
 * contiguous and arrive at the profile writer already in order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/collect.h"
#include "dcpi/profile.h"

#define AGG_MIN_CAP 4096

struct agg_slot {
	uint64_t offset;
	uint64_t count;		/* 0: empty */
	uint32_t image, event;
	uint64_t icount;	/* of count, since the last agg_interval */
};

struct agg {
	struct agg_slot *t;
	size_t cap, n;		/* cap a power of two */
};

static size_t slot_hash(uint32_t image, uint32_t event, uint64_t offset)
{
	uint64_t h = offset ^ ((uint64_t)image << 40) ^ ((uint64_t)event << 24);

	return (size_t)((h * 0x9E3779B97F4A7C15ULL) >> 17);
}

int agg_new(struct agg **out, struct dcpi_err *err)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (a) {
		a->cap = AGG_MIN_CAP;
		a->t = calloc(a->cap, sizeof(*a->t));
	}
	if (!a || !a->t) {
		agg_free(a);
		return dcpi_errf(err, -ENOMEM, "sample table: out of memory");
	}
	*out = a;
	return 0;
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	free(a->t);
	free(a);
}

/* A flush leaves the table empty; one that grew for a burst shrinks back,
 * so a long-running daemon holds no more than one interval's samples. */
void agg_clear(struct agg *a)
{
	struct agg_slot *t = a->cap > 4 * AGG_MIN_CAP ? calloc(AGG_MIN_CAP, sizeof(*t)) : NULL;

	if (t) {
		free(a->t);
		a->t = t;
		a->cap = AGG_MIN_CAP;
	} else {
		memset(a->t, 0, a->cap * sizeof(*a->t));
	}
	a->n = 0;
}

void agg_count(const struct agg *a, uint64_t *entries, uint64_t *samples)
{
	uint64_t t = 0;

	for (size_t i = 0; i < a->cap; i++)
		t += a->t[i].count;
	*entries += a->n;
	*samples += t;
}

static struct agg_slot *slot_find(struct agg_slot *t, size_t cap, uint32_t image,
				  uint32_t event, uint64_t offset)
{
	size_t j = slot_hash(image, event, offset) & (cap - 1);

	while (t[j].count && (t[j].offset != offset || t[j].image != image ||
			      t[j].event != event))
		j = (j + 1) & (cap - 1);
	return &t[j];
}

static int slot_live(const void *rec)
{
	return ((const struct agg_slot *)rec)->count != 0;
}

static uint64_t slot_home(const void *rec)
{
	const struct agg_slot *s = rec;

	return slot_hash(s->image, s->event, s->offset);
}

int agg_add(struct agg *a, uint32_t image, uint32_t event, uint64_t offset, uint64_t count,
	    struct dcpi_err *err)
{
	struct agg_slot *s;

	if (!count)
		return 0;
	if (2 * (a->n + 1) > a->cap &&
	    recs_rehash((void **)&a->t, &a->cap, 2 * a->cap, sizeof(*a->t), slot_live, slot_home,
			NULL))
		return dcpi_errf(err, -ENOMEM, "sample table of %zu entries: out of memory",
				 a->n);
	s = slot_find(a->t, a->cap, image, event, offset);
	if (!s->count) {
		s->image = image;
		s->event = event;
		s->offset = offset;
		a->n++;
	}
	s->count += count;
	s->icount += count;
	return 0;
}

int agg_remap(struct agg *a, agg_remap_fn *fn, void *ctx, uint64_t *moved,
	      struct dcpi_err *err)
{
	struct agg_slot *old = a->t, *t = calloc(a->cap, sizeof(*t));

	*moved = 0;
	if (!t)
		return dcpi_errf(err, -ENOMEM, "sample table of %zu entries: out of memory", a->n);
	a->t = t;
	a->n = 0;
	for (size_t j = 0; j < a->cap; j++) {
		struct agg_slot o = old[j], *s;

		if (!o.count)
			continue;
		if (fn(ctx, &o.image, &o.offset))
			*moved += o.count;
		s = slot_find(a->t, a->cap, o.image, o.event, o.offset);
		if (!s->count) {
			*s = o;
			s->count = s->icount = 0;
			a->n++;
		}
		s->count += o.count;
		s->icount += o.icount;
	}
	free(old);
	return 0;
}

/* The time slices of include/dcpi/slices.h: one walk per slice (100 ms) over
 * the table, beside the cumulative counts the flush writes. */
int agg_interval(struct agg *a, agg_interval_fn *fn, void *ctx)
{
	int ret = 0;

	for (size_t i = 0; i < a->cap && !ret; i++) {
		struct agg_slot *s = &a->t[i];

		if (s->icount) {
			ret = fn(ctx, s->image, s->event, s->offset, s->icount);
			s->icount = 0;
		}
	}
	return ret;
}

static int slot_cmp(const void *x, const void *y)
{
	const struct agg_slot *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->image, a->event, a->offset },
			     (uint64_t[]){ b->image, b->event, b->offset }, 3);
}

/* Fill p with slots [0, n) (one image and event), offsets through k. */
static int fill_profile(struct prof_profile *p, const struct agg_slot *s, size_t n,
			const struct agg_sink *k, struct agg_flushed *out)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t off = s[i].offset;

		if (k->offset && k->offset(k->ctx, s[i].image, &off)) {
			out->skipped += s[i].count;
			continue;
		}
		ret = prof_profile_add(p, off, s[i].count);
		out->samples += s[i].count;
	}
	return ret ? ret : prof_profile_normalize(p);
}

/* Write slots [0, n) (one image and event) as one profile; none when the
 * sink's offsets dropped every count. */
static int flush_one(const struct agg_slot *s, size_t n, const struct agg_sink *k,
		     struct prof_db *db, const char *epoch, struct agg_flushed *out,
		     struct dcpi_err *err)
{
	const struct agg_event *ev = &k->events[s[0].event];
	struct prof_profile p;
	int ret;

	prof_profile_init(&p);
	p.image = *k->image_id(k->ctx, s[0].image);
	snprintf(p.event, sizeof(p.event), "%s", ev->name);
	p.period = ev->period;
	snprintf(p.period_unit, sizeof(p.period_unit), "%s", ev->unit);
	p.cycles_per_unit = ev->cycles_per_unit;
	ret = fill_profile(&p, s, n, k, out);
	if (ret)
		ret = dcpi_errf(err, ret, "%s: %s profile: out of memory", p.image.path,
				p.event);
	else if (p.n)
		ret = prof_epoch_write(db, epoch, &p, err);
	if (!ret && p.n)
		out->profiles++;
	prof_profile_free(&p);
	return ret;
}

int agg_flush(struct agg *a, const struct agg_sink *k, struct prof_db *db, const char *epoch,
	      struct agg_flushed *out, struct dcpi_err *err)
{
	struct agg_slot *s;
	size_t n = 0, i, j;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!a->n)
		return 0;
	s = malloc(a->n * sizeof(*s));
	if (!s)
		return dcpi_errf(err, -ENOMEM, "sample table of %zu entries: out of memory",
				 a->n);
	for (i = 0; i < a->cap; i++)
		if (a->t[i].count)
			s[n++] = a->t[i];
	dcpi_qsort(s, n, sizeof(*s), slot_cmp);
	for (i = 0; i < n && !ret; i = j) {
		for (j = i; j < n && s[j].image == s[i].image && s[j].event == s[i].event; j++)
			;
		if (s[i].event >= k->nevents) {
			ret = dcpi_errf(err, -EINVAL, "sample table: event %u of %zu",
					s[i].event, k->nevents);
			break;
		}
		ret = flush_one(&s[i], j - i, k, db, epoch, out, err);
		if (!i || s[i - 1].image != s[i].image)
			out->images++;
	}
	free(s);
	return ret;
}
