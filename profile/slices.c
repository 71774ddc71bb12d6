/*
 * slices.c - the time-slice profile kind (include/dcpi/slices.h): samples per
 * (slice, file offset) of one image and event, and the phase boundaries the
 * collector declared (collect/phase.c).  Bytes in docs/profile-format.md,
 * "Time-slice profiles": the kind header (kind.c), fixed fields, three
 * strings, then the entries sorted by (slice, offset) as varint deltas and
 * the boundaries sorted by slice.  Merging sums counts of equal (slice,
 * offset) and ORs the rules of equal boundaries, so it is associative and
 * commutative.  The decoder checks everything and is fuzzed
 * (fuzz/fuzz_slices.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/slices.h"
#include "internal.h"

#define SLICE_MAGIC	"DCPISLC1"
#define SLICE_VERSION	1
#define SOFF_NENTRIES	24
#define SOFF_NBOUNDS	32
#define SOFF_TOTAL	40
#define SOFF_WIDTH	48
#define SOFF_ISIZE	56
#define SOFF_MTIME	64
#define SLICE_HDR_SIZE	72

static const struct kind_field slice_fields[] = {
	KIND_COUNT(slice_profile, n, SOFF_NENTRIES, 3, "entries"),
	KIND_COUNT(slice_profile, nb, SOFF_NBOUNDS, 2, "boundaries"),
	KIND_FIELD(slice_profile, slice_ns, SOFF_WIDTH),
};
static const struct kind_str slice_strs[] = {
	KIND_STR(slice_profile, image.build_id), KIND_STR(slice_profile, image.path),
	KIND_STR(slice_profile, event),
};
PROF_KIND_FORMAT(slice, slice_profile, SLICE_MAGIC, "a dcpi time-slice profile",
		 "slices", SLICE_HDR_SIZE, SLICE_VERSION, SOFF_ISIZE);

void slice_profile_init(struct slice_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void slice_profile_free(struct slice_profile *p)
{
	free(p->e);
	free(p->b);
	slice_profile_init(p);
}

int slice_profile_add(struct slice_profile *p, uint64_t slice, uint64_t offset,
		      uint64_t count)
{
	struct slice_entry *e;

	if (!count)
		return 0;
	e = dcpi_append((void **)&p->e, &p->n, &p->cap, sizeof(*p->e));
	if (!e)
		return -ENOMEM;
	*e = (struct slice_entry){ slice, offset, count };
	p->total += count;
	return 0;
}

int slice_profile_bound(struct slice_profile *p, uint64_t slice, uint32_t rules)
{
	struct slice_bound *b;

	for (size_t i = 0; i < p->nb; i++)
		if (p->b[i].slice == slice) {
			p->b[i].rules |= rules;
			return 0;
		}
	b = dcpi_append((void **)&p->b, &p->nb, &p->capb, sizeof(*p->b));
	if (!b)
		return -ENOMEM;
	*b = (struct slice_bound){ slice, rules };
	return 0;
}

static int entry_cmp(const void *x, const void *y)
{
	const struct slice_entry *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->slice, a->offset },
			     (uint64_t[]){ b->slice, b->offset }, 2);
}

static int bound_cmp(const void *x, const void *y)
{
	const struct slice_bound *a = x, *b = y;

	return a->slice < b->slice ? -1 : a->slice > b->slice;
}

static int entry_sum(void *into, const void *from, void *ctx)
{
	((struct slice_entry *)into)->count += ((const struct slice_entry *)from)->count;
	return 0;
}

static int bound_union(void *into, const void *from, void *ctx)
{
	((struct slice_bound *)into)->rules |= ((const struct slice_bound *)from)->rules;
	return 0;
}

int slice_normalize(struct slice_profile *p)
{
	dcpi_sort_fold(p->e, &p->n, sizeof(*p->e), entry_cmp, entry_sum, NULL);
	p->total = 0;
	for (size_t i = 0; i < p->n; i++)
		p->total += p->e[i].count;
	dcpi_sort_fold(p->b, &p->nb, sizeof(*p->b), bound_cmp, bound_union, NULL);
	return 0;
}

int slice_profile_merge(struct slice_profile *dst, const struct slice_profile *src,
			struct dcpi_err *err)
{
	if (!prof_image_id_equal(&dst->image, &src->image) || strcmp(dst->event, src->event) ||
	    dst->slice_ns != src->slice_ns)
		return dcpi_errf(err, -EINVAL, "%s: slices: cannot merge %s/%" PRIu64 " ns "
				 "into %s/%" PRIu64 " ns (image, event and width must match)",
				 dst->image.path, src->event, src->slice_ns, dst->event,
				 dst->slice_ns);
	if (dcpi_grow((void **)&dst->e, &dst->cap, dst->n + src->n, sizeof(*dst->e)) ||
	    dcpi_grow((void **)&dst->b, &dst->capb, dst->nb + src->nb, sizeof(*dst->b)))
		return dcpi_errf(err, -ENOMEM, "%s: slices: out of memory", dst->image.path);
	if (src->n)
		memcpy(dst->e + dst->n, src->e, src->n * sizeof(*src->e));
	dst->n += src->n;
	if (src->nb)
		memcpy(dst->b + dst->nb, src->b, src->nb * sizeof(*src->b));
	dst->nb += src->nb;
	return slice_normalize(dst);
}

/* --- bytes ------------------------------------------------------------------ */

/* The entry's offset as stored: a delta within its slice, else absolute. */
static uint64_t off_delta(const struct slice_entry *prev, const struct slice_entry *e)
{
	return prev && prev->slice == e->slice ? e->offset - prev->offset : e->offset;
}

static size_t encoded_size(const struct slice_profile *p)
{
	size_t size = kind_head_len(&slice_format, p);

	for (size_t i = 0; i < p->n; i++) {
		const struct slice_entry *prev = i ? &p->e[i - 1] : NULL;

		size += varint_len(p->e[i].slice - (prev ? prev->slice : 0)) +
			varint_len(off_delta(prev, &p->e[i])) + varint_len(p->e[i].count);
	}
	for (size_t i = 0; i < p->nb; i++)
		size += varint_len(p->b[i].slice - (i ? p->b[i - 1].slice : 0)) +
			varint_len(p->b[i].rules);
	return size;
}

static const char *check_head(const void *v)
{
	const struct slice_profile *p = v;
	size_t ev = strnlen(p->event, sizeof(p->event));

	if (!ev || ev >= sizeof(p->event))
		return "event empty or too long";
	if (!p->slice_ns)
		return "slice width 0";
	return NULL;
}

static const char *check_records(const struct slice_profile *p, uint64_t *total)
{
	int rc = kind_check_counts(p->e, p->n, sizeof(*p->e), entry_cmp,
				   offsetof(struct slice_entry, count), total);

	if (rc)
		return rc == KIND_UNSORTED ? "entries not normalized" :
					     "zero or overflowing count";
	for (size_t i = 0; i < p->nb; i++) {
		if (i && p->b[i - 1].slice >= p->b[i].slice)
			return "boundaries not normalized";
		if (!p->b[i].rules || (p->b[i].rules & ~SLICE_RULES_KNOWN))
			return "boundary without a known rule";
	}
	return NULL;
}

int slice_encode(const struct slice_profile *p, uint8_t **buf, size_t *len,
		 struct dcpi_err *err)
{
	const char *why = kind_check_head(&slice_format, p);
	size_t size, pos;
	uint64_t total;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (!why)
		why = check_records(p, &total);
	if (why)
		return kind_cannot(&slice_format, &p->image, why, err);
	size = encoded_size(p);
	if (kind_alloc(&slice_format, &p->image, size, &b, err))
		return -ENOMEM;
	put64(b + SOFF_TOTAL, total);
	pos = kind_put_fields(&slice_format, p, b);
	for (size_t i = 0; i < p->n; i++) {
		const struct slice_entry *prev = i ? &p->e[i - 1] : NULL;

		pos += dcpi_varint_put(b + pos, p->e[i].slice - (prev ? prev->slice : 0));
		pos += dcpi_varint_put(b + pos, off_delta(prev, &p->e[i]));
		pos += dcpi_varint_put(b + pos, p->e[i].count);
	}
	for (size_t i = 0; i < p->nb; i++) {
		pos += dcpi_varint_put(b + pos, p->b[i].slice - (i ? p->b[i - 1].slice : 0));
		pos += dcpi_varint_put(b + pos, p->b[i].rules);
	}
	return kind_sealed(b, size, buf, len);
}

static int decode_entries(struct kind_cursor *c, uint64_t n, const char *name,
			  struct slice_profile *p, struct dcpi_err *err)
{
	uint64_t slice = 0, off = 0, ds, d, cnt;

	for (uint64_t i = 0; i < n; i++) {
		struct slice_entry *e = &p->e[i];

		if (!kind_next(c, &ds) || !kind_next(c, &d) || !kind_next(c, &cnt))
			return dcpi_errf(err, -EINVAL, "%s: entry %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		if (slice + ds < slice || (i && !ds && off + d < off))
			return dcpi_errf(err, -EINVAL, "%s: entry %" PRIu64 ": wraps past 2^64",
					 name, i);
		off = (i && !ds) ? off + d : d;
		slice += ds;
		*e = (struct slice_entry){ slice, off, cnt };
		if ((i && entry_cmp(e - 1, e) >= 0) || !cnt || p->total + cnt < p->total)
			return dcpi_errf(err, -EINVAL, "%s: entry %" PRIu64 " (slice %" PRIu64
					 ", offset 0x%" PRIx64 "): duplicate, zero or overflowing",
					 name, i, slice, off);
		p->total += cnt;
		p->n = (size_t)i + 1;
	}
	return 0;
}

static int decode_bounds(struct kind_cursor *c, uint64_t n, const char *name,
			 struct slice_profile *p, struct dcpi_err *err)
{
	uint64_t slice = 0, ds, rules;

	for (uint64_t i = 0; i < n; i++) {
		if (!kind_next(c, &ds) || !kind_next(c, &rules))
			return dcpi_errf(err, -EINVAL, "%s: boundary %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		if ((i && !ds) || slice + ds < slice || !rules || (rules & ~SLICE_RULES_KNOWN))
			return dcpi_errf(err, -EINVAL, "%s: boundary %" PRIu64 ": duplicate, "
					 "unsorted or without a known rule", name, i);
		slice += ds;
		p->b[i] = (struct slice_bound){ slice, (uint32_t)rules };
		p->nb = (size_t)i + 1;
	}
	return 0;
}

/* Allocate what the header declares, bounded by the body (an entry takes at
 * least 3 bytes, a boundary 2). */
static int decode_body(struct kind_cursor *c, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct slice_profile *p = v;
	uint64_t ne = get64(c->buf + SOFF_NENTRIES), nb = get64(c->buf + SOFF_NBOUNDS);
	uint64_t total = get64(c->buf + SOFF_TOTAL);
	int rc = kind_counts_fit(&slice_format, c, name, err);

	if (rc)
		return rc;
	if ((ne && !(p->e = malloc((size_t)ne * sizeof(*p->e)))) ||
	    (nb && !(p->b = malloc((size_t)nb * sizeof(*p->b)))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
	p->cap = (size_t)ne;
	p->capb = (size_t)nb;
	rc = decode_entries(c, ne, name, p, err);
	if (!rc)
		rc = decode_bounds(c, nb, name, p, err);
	if (!rc && p->total != total)
		rc = dcpi_errf(err, -EINVAL, "%s: counts add to %" PRIu64 ", header total says %"
			       PRIu64, name, p->total, total);
	if (!rc && c->pos != c->size)
		rc = dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after the records", name,
			       c->size - c->pos);
	return rc;
}

/* --- a time window over an epoch's profiles ------------------------------ */

static const struct slice_profile *slices_of(const struct slice_profile *sp, size_t nsp,
					     const struct prof_image_id *id)
{
	for (size_t i = 0; i < nsp; i++)
		if (prof_image_id_equal(&sp[i].image, id))
			return &sp[i];
	return NULL;
}

/* q: p's metadata, with the counts of sp in slices [from, to). */
static int window_one(const struct prof_profile *p, const struct slice_profile *sp,
		      uint64_t from, uint64_t to, struct prof_profile *q)
{
	prof_profile_init(q);
	q->image = p->image;
	memcpy(q->event, p->event, sizeof(q->event));
	q->period = p->period;
	memcpy(q->period_unit, p->period_unit, sizeof(q->period_unit));
	q->cycles_per_unit = p->cycles_per_unit;
	for (size_t i = 0; sp && i < sp->n; i++)
		if (sp->e[i].slice >= from && sp->e[i].slice < to &&
		    prof_profile_add(q, sp->e[i].offset, sp->e[i].count))
			return -ENOMEM;
	return prof_profile_normalize(q);
}

int slice_window(const struct slice_profile *sp, size_t nsp, uint64_t from, uint64_t to,
		 const struct prof_profile *in, size_t nin, struct prof_profile **out,
		 size_t *nout, size_t *dropped, struct dcpi_err *err)
{
	struct prof_profile *v = calloc(nin ? nin : 1, sizeof(*v));
	size_t k = 0;

	*dropped = 0;
	if (!v)
		return dcpi_errf(err, -ENOMEM, "time slices: out of memory");
	for (size_t i = 0; i < nin; i++) {
		if (!nsp || strcmp(in[i].event, sp[0].event)) {
			(*dropped)++;
			continue;
		}
		if (window_one(&in[i], slices_of(sp, nsp, &in[i].image), from, to, &v[k])) {
			prof_profiles_free(v, k + 1);
			return dcpi_errf(err, -ENOMEM, "time slices: out of memory");
		}
		if (v[k].n)
			k++;
		else
			prof_profile_free(&v[k]);
	}
	*out = v;
	*nout = k;
	return 0;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

PROF_KIND_COPY(slice, slice_profile)
PROF_KIND_API(slice, slice_profile, ".slices")
