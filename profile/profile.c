/*
 * profile.c - in-memory profiles of one (image, event): adding samples,
 * normalizing to sorted unique offsets, lookup and merging (DCPI sec. 4.3.3).
 *
 * Merging is a reduce over a fleet of machines and epochs, so it must be
 * associative and commutative.  Entries and totals merge exactly (counts
 * add).  The period and cycles-per-unit are sample-weighted means combined
 * by prof_mean_combine(): commutative exactly, associative up to floating
 * point rounding (a relative error near 1e-15), exact when the operands
 * agree, which is the common case of one collector setting.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"
#include "internal.h"

void prof_profile_init(struct prof_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void prof_profile_free(struct prof_profile *p)
{
	if (!p)
		return;
	free(p->e);
	p->e = NULL;
	p->n = 0;
	p->cap = 0;
	p->total = 0;
}

static int prof_reserve(struct prof_profile *p, size_t want)
{
	return dcpi_grow((void **)&p->e, &p->cap, want, sizeof(*p->e));
}

int prof_profile_add(struct prof_profile *p, uint64_t offset, uint64_t count)
{
	int rc;

	if (p->total + count < p->total)
		return -EOVERFLOW;
	rc = prof_reserve(p, p->n + 1);
	if (rc)
		return rc;
	p->e[p->n].offset = offset;
	p->e[p->n].count = count;
	p->n++;
	p->total += count;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct prof_entry *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

static int prof_is_sorted(const struct prof_entry *e, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (e[i].offset <= e[i - 1].offset)
			return 0;
	return 1;
}

/* Sum duplicates of a sorted array in place and drop zero counts. */
static int prof_squash(struct prof_entry *e, size_t *n, uint64_t *total)
{
	size_t out = 0;
	uint64_t sum = 0;

	for (size_t i = 0; i < *n; i++) {
		if (out && e[out - 1].offset == e[i].offset) {
			if (e[out - 1].count + e[i].count < e[out - 1].count)
				return -EOVERFLOW;
			e[out - 1].count += e[i].count;
		} else {
			e[out++] = e[i];
		}
		if (sum + e[i].count < sum)
			return -EOVERFLOW;
		sum += e[i].count;
	}
	*n = 0;
	for (size_t i = 0; i < out; i++)
		if (e[i].count)
			e[(*n)++] = e[i];
	*total = sum;
	return 0;
}

int prof_profile_normalize(struct prof_profile *p)
{
	int sorted = prof_is_sorted(p->e, p->n);
	int rc;

	if (!sorted)
		dcpi_qsort(p->e, p->n, sizeof(*p->e), cmp_entry);
	rc = prof_squash(p->e, &p->n, &p->total);
	return rc;
}

uint64_t prof_profile_count(const struct prof_profile *p, uint64_t offset)
{
	size_t lo = dcpi_lower_bound(p->e, p->n, sizeof(*p->e),
				     offsetof(struct prof_entry, offset), offset);

	if (lo < p->n && p->e[lo].offset == offset)
		return p->e[lo].count;
	return 0;
}

double prof_mean_combine(double va, double wa, double vb, double wb)
{
	if (va == vb)
		return va;
	if (wa <= 0 && wb <= 0)
		return va > vb ? va : vb;
	if (wb <= 0)
		return va;
	if (wa <= 0)
		return vb;
	return (va * wa + vb * wb) / (wa + wb);
}

int prof_image_id_cmp(const struct prof_image_id *a, const struct prof_image_id *b)
{
	int c = strcmp(a->path, b->path);

	if (c)
		return c;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return 0;
}

/* Copy a const profile's entries normalized, when they are not already. */
static int prof_sorted_view(const struct prof_profile *src, struct prof_profile *tmp,
			    const struct prof_entry **e, size_t *n)
{
	int rc;

	prof_profile_init(tmp);
	if (prof_is_sorted(src->e, src->n)) {
		*e = src->e;
		*n = src->n;
		for (size_t i = 0; i < src->n; i++) {
			if (!src->e[i].count)
				goto copy;
		}
		return 0;
	}
copy:
	rc = prof_reserve(tmp, src->n);
	if (rc)
		return rc;
	if (src->n)
		memcpy(tmp->e, src->e, src->n * sizeof(*src->e));
	tmp->n = src->n;
	rc = prof_profile_normalize(tmp);
	if (rc) {
		prof_profile_free(tmp);
		return rc;
	}
	*e = tmp->e;
	*n = tmp->n;
	return 0;
}

static int prof_merge_entries(const struct prof_entry *a, size_t na,
			      const struct prof_entry *b, size_t nb,
			      struct prof_entry **out, size_t *nout, uint64_t *total)
{
	struct prof_entry *m;
	size_t i = 0, j = 0, k = 0;
	uint64_t sum = 0;

	if (na > SIZE_MAX / sizeof(*m) - nb)
		return -ENOMEM;
	m = malloc((na + nb ? na + nb : 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	while (i < na || j < nb) {
		if (j == nb || (i < na && a[i].offset < b[j].offset)) {
			m[k] = a[i++];
		} else if (i == na || b[j].offset < a[i].offset) {
			m[k] = b[j++];
		} else {
			m[k].offset = a[i].offset;
			m[k].count = a[i].count + b[j].count;
			if (m[k].count < a[i].count)
				goto overflow;
			i++;
			j++;
		}
		if (sum + m[k].count < sum)
			goto overflow;
		sum += m[k++].count;
	}
	*out = m;
	*nout = k;
	*total = sum;
	return 0;
overflow:
	free(m);
	return -EOVERFLOW;
}

/* Sum of counts; the caller has already checked it does not overflow. */
static uint64_t prof_sum(const struct prof_entry *e, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += e[i].count;
	return sum;
}

int prof_profile_merge(struct prof_profile *dst, const struct prof_profile *src,
		       struct dcpi_err *err)
{
	struct prof_profile sa, sb;
	const struct prof_entry *a, *b;
	struct prof_entry *m = NULL;
	size_t na, nb, nm;
	uint64_t total;
	double wa, wb;
	int rc;

	if (!prof_image_id_equal(&dst->image, &src->image))
		return dcpi_errf(err, -EINVAL, "%s: cannot merge profiles of different images "
				 "(%s)", dst->image.path, src->image.path);
	if (strcmp(dst->event, src->event))
		return dcpi_errf(err, -EINVAL, "%s: cannot merge event %s into event %s",
				 dst->image.path, src->event, dst->event);
	if (strcmp(dst->period_unit, src->period_unit))
		return dcpi_errf(err, -EINVAL, "%s: %s: period units differ (%s, %s)",
				 dst->image.path, dst->event, dst->period_unit,
				 src->period_unit);
	rc = prof_sorted_view(dst, &sa, &a, &na);
	if (rc)
		goto fail;
	rc = prof_sorted_view(src, &sb, &b, &nb);
	if (rc)
		goto fail;
	rc = prof_merge_entries(a, na, b, nb, &m, &nm, &total);
	if (rc)
		goto fail;
	/* Weights are the totals the operands carry (after normalizing). */
	wa = (double)prof_sum(a, na);
	wb = (double)prof_sum(b, nb);
	dst->period = prof_mean_combine(dst->period, wa, src->period, wb);
	dst->cycles_per_unit = prof_mean_combine(dst->cycles_per_unit, wa,
						 src->cycles_per_unit, wb);
	if (prof_image_id_cmp(&src->image, &dst->image) < 0)
		dst->image = src->image;
	free(dst->e);
	dst->e = m;
	dst->n = nm;
	dst->cap = nm;
	dst->total = total;
	rc = 0;
fail:
	prof_profile_free(&sa);
	prof_profile_free(&sb);
	if (rc == -ENOMEM)
		return dcpi_errf(err, rc, "%s: %s: out of memory merging profiles",
				 dst->image.path, dst->event);
	if (rc == -EOVERFLOW)
		return dcpi_errf(err, rc, "%s: %s: sample count overflows 64 bits",
				 dst->image.path, dst->event);
	return rc;
}
