/*
 * collect/aggregate.c - sample counts per (image, file offset), the daemon's
 * in-memory hash table of the DCPI paper (sec. 4.3.1), and their flush into
 * one profile per (image, event) of an epoch (sec. 4.3.3).
 *
 * Open addressing with linear probing; a slot with count 0 is empty.  The
 * table only grows; a flush sorts a copy by (image, offset) so each image's
 * entries are contiguous and arrive at the profile writer already in order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct agg_slot {
	uint64_t offset;
	uint64_t count;
	uint32_t image;
};

struct agg {
	struct agg_slot *t;
	size_t cap, n;		/* cap a power of two */
};

static size_t slot_hash(uint32_t image, uint64_t offset)
{
	uint64_t h = (offset ^ ((uint64_t)image << 40)) * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h >> 17);
}

int agg_new(struct agg **out, struct dcpi_err *err)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (a) {
		a->cap = 4096;
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
	struct agg_slot *t = a->cap > 4 * 4096 ? calloc(4096, sizeof(*t)) : NULL;

	if (t) {
		free(a->t);
		a->t = t;
		a->cap = 4096;
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
				  uint64_t offset)
{
	size_t j = slot_hash(image, offset) & (cap - 1);

	while (t[j].count && (t[j].image != image || t[j].offset != offset))
		j = (j + 1) & (cap - 1);
	return &t[j];
}

static int grow(struct agg *a)
{
	size_t cap = 2 * a->cap;
	struct agg_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++)
		if (a->t[i].count)
			*slot_find(t, cap, a->t[i].image, a->t[i].offset) = a->t[i];
	free(a->t);
	a->t = t;
	a->cap = cap;
	return 0;
}

int agg_add(struct agg *a, uint32_t image, uint64_t offset, uint64_t count,
	    struct dcpi_err *err)
{
	struct agg_slot *s;

	if (!count)
		return 0;
	if (2 * (a->n + 1) > a->cap && grow(a))
		return dcpi_errf(err, -ENOMEM, "sample table of %zu entries: out of memory",
				 a->n);
	s = slot_find(a->t, a->cap, image, offset);
	if (!s->count) {
		s->image = image;
		s->offset = offset;
		a->n++;
	}
	s->count += count;
	return 0;
}

static int slot_cmp(const void *x, const void *y)
{
	const struct agg_slot *a = x, *b = y;

	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Write entries [0, n) of one image as one profile. */
static int flush_image(const struct agg_slot *s, size_t n, const struct maps *m,
		       const struct prof_profile *tmpl, struct prof_db *db,
		       const char *epoch, struct dcpi_err *err)
{
	struct prof_profile p;
	int ret = 0;

	prof_profile_init(&p);
	p.image = *maps_image(m, s[0].image);
	memcpy(p.event, tmpl->event, sizeof(p.event));
	p.period = tmpl->period;
	memcpy(p.period_unit, tmpl->period_unit, sizeof(p.period_unit));
	p.cycles_per_unit = tmpl->cycles_per_unit;
	for (size_t i = 0; i < n && !ret; i++)
		ret = prof_profile_add(&p, s[i].offset, s[i].count);
	if (ret) {
		ret = dcpi_errf(err, ret, "%s: %s profile: out of memory", p.image.path,
				p.event);
		goto out;
	}
	ret = prof_profile_normalize(&p);
	if (ret) {
		ret = dcpi_errf(err, ret, "%s: %s profile: out of memory", p.image.path,
				p.event);
		goto out;
	}
	ret = prof_epoch_write(db, epoch, &p, err);
out:
	prof_profile_free(&p);
	return ret;
}

int agg_flush(struct agg *a, const struct maps *m, const struct prof_profile *tmpl,
	      struct prof_db *db, const char *epoch, uint64_t *samples,
	      struct dcpi_err *err)
{
	struct agg_slot *s;
	size_t k = 0, i, j;
	uint64_t total = 0;
	int ret = 0;

	*samples = 0;
	if (!a->n)
		return 0;
	s = malloc(a->n * sizeof(*s));
	if (!s)
		return dcpi_errf(err, -ENOMEM, "sample table of %zu entries: out of memory",
				 a->n);
	for (i = 0; i < a->cap; i++)
		if (a->t[i].count)
			s[k++] = a->t[i];
	dcpi_qsort(s, k, sizeof(*s), slot_cmp);
	for (i = 0; i < k && !ret; i = j) {
		for (j = i; j < k && s[j].image == s[i].image; j++)
			total += s[j].count;
		ret = flush_image(&s[i], j - i, m, tmpl, db, epoch, err);
	}
	free(s);
	if (!ret)
		*samples = total;
	return ret;
}
