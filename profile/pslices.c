/*
 * pslices.c - the path-slice profile kind (include/dcpi/slices.h): one
 * image's path samples counted per time slice, so that --time and --phase
 * cut the paths as profile/slices.c's files cut the PC samples.  Bytes in
 * docs/phases.md, "Path-slice files": the kind header (kind.c),
 * fixed fields, three strings, then edges sorted by (slice, from, to), steps
 * sorted by (slice, offset) and bursts sorted by slice, all as varint
 * deltas (an edge's `from` relative to the previous edge's in the same
 * slice, its `to` as the zigzag of to - from, as profile/paths.c stores
 * them).  Merging sums equal records, so it is associative and commutative.
 * The decoder checks everything and never reads outside its buffer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/slices.h"
#include "internal.h"

#define PSL_MAGIC	"DCPIPSL1"
#define PSL_VERSION	1
#define POFF_NEDGES	24
#define POFF_NSTEPS	32
#define POFF_NBURSTS	40
#define POFF_WIDTH	48
#define POFF_ISIZE	56
#define POFF_MTIME	64
#define POFF_FLAGS	72
#define PSL_HDR_SIZE	76

static const struct kind_field pslice_fields[] = {
	KIND_COUNT(pslice_profile, n, POFF_NEDGES, 4, "edges"),
	KIND_COUNT(pslice_profile, ns, POFF_NSTEPS, 3, "steps"),
	KIND_COUNT(pslice_profile, nb, POFF_NBURSTS, 2, "bursts"),
	KIND_FIELD(pslice_profile, slice_ns, POFF_WIDTH),
	KIND_FIELD(pslice_profile, flags, POFF_FLAGS),
};
static const struct kind_str pslice_strs[] = {
	KIND_STR(pslice_profile, source), KIND_STR(pslice_profile, image.build_id),
	KIND_STR(pslice_profile, image.path),
};
PROF_KIND_FORMAT(pslice, pslice_profile, PSL_MAGIC, "a dcpi path-slice profile",
		 "path slices", PSL_HDR_SIZE, PSL_VERSION, POFF_ISIZE);

void pslice_profile_init(struct pslice_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void pslice_profile_free(struct pslice_profile *p)
{
	free(p->e);
	free(p->s);
	free(p->b);
	pslice_profile_init(p);
}

int pslice_add_edge(struct pslice_profile *p, uint64_t slice, uint64_t from, uint64_t to,
		    uint64_t count)
{
	struct slice_edge *e;

	if (!count)
		return 0;
	e = dcpi_append((void **)&p->e, &p->n, &p->cap, sizeof(*p->e));
	if (!e)
		return -ENOMEM;
	*e = (struct slice_edge){ slice, from, to, count };
	return 0;
}

static int add_entry(struct slice_entry **v, size_t *n, size_t *cap, uint64_t slice,
		     uint64_t offset, uint64_t count)
{
	struct slice_entry *e;

	if (!count)
		return 0;
	e = dcpi_append((void **)v, n, cap, sizeof(**v));
	if (!e)
		return -ENOMEM;
	*e = (struct slice_entry){ slice, offset, count };
	return 0;
}

int pslice_add_step(struct pslice_profile *p, uint64_t slice, uint64_t offset, uint64_t count)
{
	return add_entry(&p->s, &p->ns, &p->caps, slice, offset, count);
}

int pslice_add_burst(struct pslice_profile *p, uint64_t slice, uint64_t count)
{
	return add_entry(&p->b, &p->nb, &p->capb, slice, 0, count);
}

static int edge_cmp(const void *x, const void *y)
{
	const struct slice_edge *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->slice, a->from, a->to },
			     (uint64_t[]){ b->slice, b->from, b->to }, 3);
}

static int entry_cmp(const void *x, const void *y)
{
	const struct slice_entry *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->slice, a->offset },
			     (uint64_t[]){ b->slice, b->offset }, 2);
}

int pslice_normalize(struct pslice_profile *p)
{
	size_t off = offsetof(struct slice_entry, count);
	int rc = kind_sort_sum(p->e, &p->n, sizeof(*p->e), edge_cmp,
			       offsetof(struct slice_edge, count));

	if (!rc)
		rc = kind_sort_sum(p->s, &p->ns, sizeof(*p->s), entry_cmp, off);
	if (!rc)
		rc = kind_sort_sum(p->b, &p->nb, sizeof(*p->b), entry_cmp, off);
	return rc;
}

static int append_all(struct pslice_profile *dst, const struct pslice_profile *src)
{
	if (dcpi_grow((void **)&dst->e, &dst->cap, dst->n + src->n, sizeof(*dst->e)) ||
	    dcpi_grow((void **)&dst->s, &dst->caps, dst->ns + src->ns, sizeof(*dst->s)) ||
	    dcpi_grow((void **)&dst->b, &dst->capb, dst->nb + src->nb, sizeof(*dst->b)))
		return -ENOMEM;
	if (src->n)
		memcpy(dst->e + dst->n, src->e, src->n * sizeof(*src->e));
	if (src->ns)
		memcpy(dst->s + dst->ns, src->s, src->ns * sizeof(*src->s));
	if (src->nb)
		memcpy(dst->b + dst->nb, src->b, src->nb * sizeof(*src->b));
	dst->n += src->n;
	dst->ns += src->ns;
	dst->nb += src->nb;
	return pslice_normalize(dst);
}

int pslice_profile_merge(struct pslice_profile *dst, const struct pslice_profile *src,
			 struct dcpi_err *err)
{
	int rc;

	if (!prof_image_id_equal(&dst->image, &src->image) || strcmp(dst->source, src->source) ||
	    dst->flags != src->flags || dst->slice_ns != src->slice_ns)
		return dcpi_errf(err, -EINVAL, "%s: path slices: cannot merge %s/%#x/%" PRIu64
				 " ns into %s/%#x/%" PRIu64 " ns (image, source, flags and "
				 "width must match)", dst->image.path, src->source, src->flags,
				 src->slice_ns, dst->source, dst->flags, dst->slice_ns);
	rc = append_all(dst, src);
	if (rc)
		return dcpi_errf(err, rc, "%s: path slices: %s", dst->image.path,
				 rc == -ENOMEM ? "out of memory" : "a count overflows 64 bits");
	return 0;
}

int pslice_window(const struct pslice_profile *p, uint64_t from, uint64_t to,
		  struct path_profile *out)
{
	int rc = 0;

	path_profile_init(out);
	out->image = p->image;
	memcpy(out->source, p->source, sizeof(out->source));
	out->flags = p->flags;
	for (size_t i = 0; !rc && i < p->n; i++)
		if (p->e[i].slice >= from && p->e[i].slice < to)
			rc = path_profile_add_edge(out, p->e[i].from, p->e[i].to, p->e[i].count);
	for (size_t i = 0; !rc && i < p->ns; i++)
		if (p->s[i].slice >= from && p->s[i].slice < to)
			rc = path_profile_add_step(out, p->s[i].offset, p->s[i].count);
	for (size_t i = 0; i < p->nb; i++)
		if (p->b[i].slice >= from && p->b[i].slice < to)
			out->bursts += p->b[i].count;
	if (!rc)
		rc = path_profile_normalize(out);
	if (rc)
		path_profile_free(out);
	return rc;
}

/* --- bytes ------------------------------------------------------------------ */

static uint64_t zigzag(uint64_t from, uint64_t to)
{
	uint64_t d = to - from;

	return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}

static uint64_t unzigzag(uint64_t from, uint64_t z)
{
	return from + ((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
}

/* A record's three or four varints: slice delta, offset (a delta within its
 * slice, else absolute), [zigzag to], count. */
static size_t edge_fields(const struct slice_edge *prev, const struct slice_edge *e,
			  uint64_t v[4])
{
	int same = prev && prev->slice == e->slice;

	v[0] = e->slice - (prev ? prev->slice : 0);
	v[1] = same ? e->from - prev->from : e->from;
	v[2] = zigzag(e->from, e->to);
	v[3] = e->count;
	return 4;
}

static size_t entry_fields(const struct slice_entry *prev, const struct slice_entry *e,
			   int with_offset, uint64_t v[3])
{
	int same = prev && prev->slice == e->slice;
	size_t k = 0;

	v[k++] = e->slice - (prev ? prev->slice : 0);
	if (with_offset)
		v[k++] = same ? e->offset - prev->offset : e->offset;
	v[k++] = e->count;
	return k;
}

/* The records' varints written at b + pos (b NULL: only their size added). */
static size_t walk_records(const struct pslice_profile *p, uint8_t *b, size_t pos)
{
	uint64_t v[4];
	size_t k;

	for (size_t i = 0; i < p->n; i++) {
		k = edge_fields(i ? &p->e[i - 1] : NULL, &p->e[i], v);
		for (size_t j = 0; j < k; j++)
			pos += b ? dcpi_varint_put(b + pos, v[j]) : varint_len(v[j]);
	}
	for (size_t i = 0; i < p->ns; i++) {
		k = entry_fields(i ? &p->s[i - 1] : NULL, &p->s[i], 1, v);
		for (size_t j = 0; j < k; j++)
			pos += b ? dcpi_varint_put(b + pos, v[j]) : varint_len(v[j]);
	}
	for (size_t i = 0; i < p->nb; i++) {
		k = entry_fields(i ? &p->b[i - 1] : NULL, &p->b[i], 0, v);
		for (size_t j = 0; j < k; j++)
			pos += b ? dcpi_varint_put(b + pos, v[j]) : varint_len(v[j]);
	}
	return pos;
}

static const char *check_head(const void *v)
{
	const struct pslice_profile *p = v;
	size_t src = strnlen(p->source, sizeof(p->source));

	if (!src || src >= sizeof(p->source))
		return "source empty or too long";
	if (p->flags & ~(uint32_t)PATH_F_TAKEN_ONLY)
		return "unknown flags";
	if (!p->slice_ns)
		return "slice width 0";
	return NULL;
}

static const char *check_records(const struct pslice_profile *p)
{
	if (kind_check_counts(p->e, p->n, sizeof(*p->e), edge_cmp,
			      offsetof(struct slice_edge, count), NULL))
		return "edges not normalized";
	if (kind_check_counts(p->s, p->ns, sizeof(*p->s), entry_cmp,
			      offsetof(struct slice_entry, count), NULL))
		return "steps not normalized";
	for (size_t i = 0; i < p->nb; i++)
		if ((i && p->b[i - 1].slice >= p->b[i].slice) || !p->b[i].count ||
		    p->b[i].offset)
			return "bursts not normalized";
	return NULL;
}

int pslice_encode(const struct pslice_profile *p, uint8_t **buf, size_t *len,
		  struct dcpi_err *err)
{
	const char *why = kind_check_head(&pslice_format, p);
	size_t size;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (!why)
		why = check_records(p);
	if (why)
		return kind_cannot(&pslice_format, &p->image, why, err);
	size = walk_records(p, NULL, kind_head_len(&pslice_format, p));
	if (kind_alloc(&pslice_format, &p->image, size, &b, err))
		return -ENOMEM;
	walk_records(p, b, kind_put_fields(&pslice_format, p, b));
	return kind_sealed(b, size, buf, len);
}

static int decode_edges(struct kind_cursor *c, uint64_t n, const char *name,
			struct pslice_profile *p, struct dcpi_err *err)
{
	uint64_t slice = 0, from = 0, ds, d, z, cnt;

	for (uint64_t i = 0; i < n; i++) {
		struct slice_edge *e = &p->e[i];

		if (!kind_next(c, &ds) || !kind_next(c, &d) || !kind_next(c, &z) ||
		    !kind_next(c, &cnt))
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		if (slice + ds < slice || (i && !ds && from + d < from))
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 ": wraps past 2^64",
					 name, i);
		from = (i && !ds) ? from + d : d;
		slice += ds;
		*e = (struct slice_edge){ slice, from, unzigzag(from, z), cnt };
		if ((i && edge_cmp(e - 1, e) >= 0) || !cnt)
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 " (slice %" PRIu64
					 "): duplicate, unsorted or zero", name, i, slice);
		p->n = (size_t)i + 1;
	}
	return 0;
}

static int decode_entries(struct kind_cursor *c, uint64_t n, int with_offset,
			  const char *what, const char *name, struct slice_entry *v,
			  size_t *nv, struct dcpi_err *err)
{
	uint64_t slice = 0, off = 0, ds, d = 0, cnt;

	for (uint64_t i = 0; i < n; i++) {
		if (!kind_next(c, &ds) || (with_offset && !kind_next(c, &d)) ||
		    !kind_next(c, &cnt))
			return dcpi_errf(err, -EINVAL, "%s: %s %" PRIu64 ": truncated or "
					 "overlong varint", name, what, i);
		if (slice + ds < slice || (i && !ds && off + d < off))
			return dcpi_errf(err, -EINVAL, "%s: %s %" PRIu64 ": wraps past 2^64",
					 name, what, i);
		off = (i && !ds) ? off + d : d;
		slice += ds;
		v[i] = (struct slice_entry){ slice, off, cnt };
		if ((i && entry_cmp(&v[i - 1], &v[i]) >= 0) || !cnt)
			return dcpi_errf(err, -EINVAL, "%s: %s %" PRIu64 " (slice %" PRIu64
					 "): duplicate, unsorted or zero", name, what, i, slice);
		*nv = (size_t)i + 1;
	}
	return 0;
}

/* Allocate what the header declares, bounded by the body (an edge takes at
 * least 4 bytes, a step 3, a burst 2). */
static int decode_body(struct kind_cursor *c, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct pslice_profile *p = v;
	uint64_t ne = get64(c->buf + POFF_NEDGES), ns = get64(c->buf + POFF_NSTEPS);
	uint64_t nb = get64(c->buf + POFF_NBURSTS);
	int rc = kind_counts_fit(&pslice_format, c, name, err);

	if (rc)
		return rc;
	if ((ne && !(p->e = malloc((size_t)ne * sizeof(*p->e)))) ||
	    (ns && !(p->s = malloc((size_t)ns * sizeof(*p->s)))) ||
	    (nb && !(p->b = malloc((size_t)nb * sizeof(*p->b)))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
	p->cap = (size_t)ne;
	p->caps = (size_t)ns;
	p->capb = (size_t)nb;
	rc = decode_edges(c, ne, name, p, err);
	if (!rc)
		rc = decode_entries(c, ns, 1, "step", name, p->s, &p->ns, err);
	if (!rc)
		rc = decode_entries(c, nb, 0, "burst", name, p->b, &p->nb, err);
	if (!rc && c->pos != c->size)
		rc = dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after the records", name,
			       c->size - c->pos);
	return rc;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

PROF_KIND_COPY(pslice, pslice_profile)
PROF_KIND_API(pslice, pslice_profile, ".pslices")

int pslice_epoch_window(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			uint64_t from, uint64_t to, struct path_profile *out,
			struct dcpi_err *err)
{
	struct pslice_profile *v = NULL;
	size_t n = 0;
	int rc = pslice_epoch_read(db, epoch, &v, &n, err);
	size_t i = 0;

	path_profile_init(out);
	while (rc >= 0 && i < n && !prof_image_id_equal(&v[i].image, id))
		i++;
	if (rc >= 0 && i < n && (rc = pslice_window(&v[i], from, to, out)))
		rc = dcpi_errf(err, rc, "%s: path slices: %s", id->path, strerror(-rc));
	pslice_profiles_free(v, n);
	if (rc < 0)
		return rc;
	return n ? 1 : 0;
}
