/*
 * vslices.c - the value-slice profile kind (include/dcpi/slices.h): one
 * image's value samples as one value profile per time slice, so that
 * --time and --phase can take a window's values.  A hotlist cannot be cut
 * by time after the fact, so the collector keeps one per slice (bounded by
 * the slice's samples) beside the epoch's.  Bytes in docs/phases.md,
 * "Value-slice files": the kind header (kind.c), fixed fields, two strings,
 * then per slice, sorted, the varint distance from the previous slice, the
 * varint length of the slice's value profile and that profile as a value
 * file (profile/values.c, its own header and CRC).  Merging merges the
 * profiles of equal slices (val_profile_merge).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/slices.h"
#include "internal.h"

#define VSL_MAGIC	"DCPIVSL1"
#define VSL_VERSION	1
#define VOFF_NSLICES	24
#define VOFF_WIDTH	32
#define VOFF_ISIZE	40
#define VOFF_MTIME	48
#define VSL_HDR_SIZE	56

static const struct kind_field vslice_fields[] = {
	KIND_COUNT(vslice_profile, n, VOFF_NSLICES, 2, "slices"),
	KIND_FIELD(vslice_profile, slice_ns, VOFF_WIDTH),
};
static const struct kind_str vslice_strs[] = {
	KIND_STR(vslice_profile, image.build_id), KIND_STR(vslice_profile, image.path),
};
PROF_KIND_FORMAT(vslice, vslice_profile, VSL_MAGIC, "a dcpi value-slice profile",
		 "value slices", VSL_HDR_SIZE, VSL_VERSION, VOFF_ISIZE);

void vslice_profile_init(struct vslice_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void vslice_profile_free(struct vslice_profile *p)
{
	for (size_t i = 0; i < p->n; i++)
		val_profile_free(&p->s[i].v);
	free(p->s);
	vslice_profile_init(p);
}

/* The slice's profile, made (empty, p's image) when absent; NULL: ENOMEM. */
static struct val_profile *slice_of(struct vslice_profile *p, uint64_t slice)
{
	size_t i = 0;
	struct vslice *s;

	while (i < p->n && p->s[i].slice < slice)
		i++;
	if (i < p->n && p->s[i].slice == slice)
		return &p->s[i].v;
	if (!dcpi_append((void **)&p->s, &p->n, &p->cap, sizeof(*p->s)))
		return NULL;
	memmove(p->s + i + 1, p->s + i, (p->n - 1 - i) * sizeof(*p->s));
	s = &p->s[i];
	s->slice = slice;
	val_profile_init(&s->v);
	s->v.image = p->image;
	return &s->v;
}

int vslice_add(struct vslice_profile *p, uint64_t slice, const struct val_profile *v,
	       struct dcpi_err *err)
{
	struct val_profile *d = slice_of(p, slice);

	if (!d)
		return dcpi_errf(err, -ENOMEM, "%s: value slices: out of memory", p->image.path);
	return val_profile_merge(d, v, err);
}

int vslice_profile_merge(struct vslice_profile *dst, const struct vslice_profile *src,
			 struct dcpi_err *err)
{
	int rc = 0;

	if (!prof_image_id_equal(&dst->image, &src->image) || dst->slice_ns != src->slice_ns)
		return dcpi_errf(err, -EINVAL, "%s: value slices: cannot merge %s/%" PRIu64
				 " ns (image and width must match)", dst->image.path,
				 src->image.path, src->slice_ns);
	for (size_t i = 0; i < src->n && !rc; i++)
		rc = vslice_add(dst, src->s[i].slice, &src->s[i].v, err);
	return rc;
}

int vslice_window(const struct vslice_profile *p, uint64_t from, uint64_t to,
		  struct val_profile *out, struct dcpi_err *err)
{
	int rc = 0;

	val_profile_init(out);
	out->image = p->image;
	for (size_t i = 0; i < p->n && !rc; i++)
		if (p->s[i].slice >= from && p->s[i].slice < to)
			rc = val_profile_merge(out, &p->s[i].v, err);
	if (!rc)
		rc = val_profile_normalize(out) < 0 ?
		     dcpi_errf(err, -ENOMEM, "values: out of memory") : 0;
	if (rc)
		val_profile_free(out);
	return rc;
}

/* --- bytes ------------------------------------------------------------------ */

static const char *check_head(const void *v)
{
	const struct vslice_profile *p = v;

	if (!p->slice_ns)
		return "slice width 0";
	for (size_t i = 1; i < p->n; i++)
		if (p->s[i - 1].slice >= p->s[i].slice)
			return "slices not sorted";
	return NULL;
}

static void free_bufs(uint8_t **b, size_t n)
{
	for (size_t i = 0; b && i < n; i++)
		free(b[i]);
	free(b);
}

int vslice_encode(const struct vslice_profile *p, uint8_t **buf, size_t *len,
		  struct dcpi_err *err)
{
	const char *why = kind_check_head(&vslice_format, p);
	uint8_t **vb = NULL, *b = NULL;
	size_t *vl = NULL, size = kind_head_len(&vslice_format, p), pos, k = 0;
	int rc = 0;

	*buf = NULL;
	*len = 0;
	if (why)
		return kind_cannot(&vslice_format, &p->image, why, err);
	if (p->n && (!(vb = calloc(p->n, sizeof(*vb))) || !(vl = calloc(p->n, sizeof(*vl))))) {
		free(vb);
		return dcpi_errf(err, -ENOMEM, "%s: value slices: out of memory", p->image.path);
	}
	for (; k < p->n && !rc; k++)
		rc = val_encode(&p->s[k].v, &vb[k], &vl[k], err);
	for (size_t i = 0; !rc && i < p->n; i++)
		size += varint_len(p->s[i].slice - (i ? p->s[i - 1].slice : 0)) +
			varint_len(vl[i]) + vl[i];
	if (!rc)
		rc = kind_alloc(&vslice_format, &p->image, size, &b, err);
	if (!rc) {
		pos = kind_put_fields(&vslice_format, p, b);
		for (size_t i = 0; i < p->n; i++) {
			pos += dcpi_varint_put(b + pos,
					       p->s[i].slice - (i ? p->s[i - 1].slice : 0));
			pos += dcpi_varint_put(b + pos, vl[i]);
			memcpy(b + pos, vb[i], vl[i]);
			pos += vl[i];
		}
		kind_sealed(b, size, buf, len);
	}
	free_bufs(vb, k);
	free(vl);
	return rc;
}

static int decode_slices(struct kind_cursor *c, uint64_t n, const char *name,
			 struct vslice_profile *p, struct dcpi_err *err)
{
	uint64_t slice = 0, ds, l;
	char sub[PROF_PATH_MAX + 48];
	int rc;

	for (uint64_t i = 0; i < n; i++) {
		struct vslice *s = &p->s[i];

		if (!kind_next(c, &ds) || !kind_next(c, &l) || l > c->size - c->pos)
			return dcpi_errf(err, -EINVAL, "%s: slice %" PRIu64 ": truncated", name,
					 i);
		if ((i && !ds) || slice + ds < slice)
			return dcpi_errf(err, -EINVAL, "%s: slice %" PRIu64 ": duplicate or "
					 "unsorted", name, i);
		slice += ds;
		snprintf(sub, sizeof(sub), "%s (slice %" PRIu64 ")", name, slice);
		rc = val_decode(c->buf + c->pos, (size_t)l, sub, &s->v, err);
		if (rc)
			return rc;
		s->slice = slice;
		p->n = (size_t)i + 1;
		c->pos += (size_t)l;
		if (!prof_image_id_equal(&s->v.image, &p->image))
			return dcpi_errf(err, -EINVAL, "%s: slice %" PRIu64 " of another image "
					 "(%s)", name, slice, s->v.image.path);
	}
	return 0;
}

static int decode_body(struct kind_cursor *c, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct vslice_profile *p = v;
	uint64_t n = get64(c->buf + VOFF_NSLICES);
	int rc = kind_counts_fit(&vslice_format, c, name, err);

	if (rc)
		return rc;
	if (n && !(p->s = calloc((size_t)n, sizeof(*p->s))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
	p->cap = (size_t)n;
	rc = decode_slices(c, n, name, p, err);
	if (!rc && c->pos != c->size)
		rc = dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after the slices", name,
			       c->size - c->pos);
	return rc;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

PROF_KIND_COPY(vslice, vslice_profile)
PROF_KIND_API(vslice, vslice_profile, ".vslices")

int vslice_epoch_window(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			uint64_t from, uint64_t to, struct val_profile *out,
			struct dcpi_err *err)
{
	struct vslice_profile *v = NULL;
	size_t n = 0, i = 0;
	int rc = vslice_epoch_read(db, epoch, &v, &n, err);

	val_profile_init(out);
	while (rc >= 0 && i < n && !prof_image_id_equal(&v[i].image, id))
		i++;
	if (rc >= 0 && i < n)
		rc = vslice_window(&v[i], from, to, out, err);
	vslice_profiles_free(v, n);
	if (rc < 0)
		return rc;
	return n ? 1 : 0;
}
