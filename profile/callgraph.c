/*
 * profile/callgraph.c - call-graph profiles (include/dcpi/callgraph.h;
 * docs/callgraph.md; the bytes in docs/profile-format.md, "Call-graph
 * files"): a table of distinct (event, stack) with a count each, its merge
 * (a sum over equal entries) and its codec, through kind.c as the other
 * per-image kinds (profile/data.c is the model: an image table of tags).
 *
 * In memory, stacks point into one pool of frames; cg_normalize sorts the
 * images, the events and the stacks and rebuilds the pool in stack order,
 * so that the bytes of a profile do not depend on the order of its merges.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"
#include "internal.h"

#define CG_MAGIC "DCPICGR\x01"
#define CG_VERSION 1u
#define COFF_N 24
#define COFF_NF 32
#define COFF_NIMGS 40
#define COFF_NEV 48
#define COFF_ISIZE 56
#define COFF_MTIME 64
#define CG_HDR_SIZE 72

void cg_profile_init(struct cg_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void cg_profile_free(struct cg_profile *p)
{
	free(p->imgs);
	free(p->events);
	free(p->s);
	free(p->f);
	cg_profile_init(p);
}

int cg_profile_tag(struct cg_profile *p, const struct prof_image_id *id)
{
	return kind_image_tag(&p->image, &p->imgs, &p->nimgs, CG_IMGS_MAX, id);
}

const struct prof_image_id *cg_profile_image(const struct cg_profile *p, uint32_t tag)
{
	return kind_image_of(&p->image, p->imgs, p->nimgs, tag);
}

int cg_profile_event(struct cg_profile *p, const char *name)
{
	char (*v)[CG_EVENT_MAX];

	for (size_t i = 0; i < p->nevents; i++)
		if (!strcmp(p->events[i], name))
			return (int)i;
	if (!name[0] || strlen(name) >= CG_EVENT_MAX)
		return -EINVAL;
	if (p->nevents >= CG_EVENTS_MAX)
		return -EOVERFLOW;
	if (!(v = realloc(p->events, (p->nevents + 1) * sizeof(*v))))
		return -ENOMEM;
	p->events = v;
	strcpy(p->events[p->nevents], name);
	return (int)p->nevents++;
}

int cg_profile_add(struct cg_profile *p, uint32_t event, const struct cg_frame *fr,
		   uint32_t depth, uint64_t count)
{
	if (!depth || depth > CG_DEPTH_MAX || fr[0].tag || event >= p->nevents)
		return -EINVAL;
	if (dcpi_grow((void **)&p->s, &p->cap, p->n + 1, sizeof(*p->s)) ||
	    dcpi_grow((void **)&p->f, &p->capf, p->nf + depth, sizeof(*p->f)))
		return -ENOMEM;
	memcpy(p->f + p->nf, fr, depth * sizeof(*fr));
	p->s[p->n++] = (struct cg_stack){ event, depth, p->nf, count };
	p->nf += depth;
	return 0;
}

uint64_t cg_profile_total(const struct cg_profile *p)
{
	uint64_t t = 0;

	for (size_t i = 0; i < p->n; i++)
		t += p->s[i].count;
	return t;
}

static int stack_cmp(const void *x, const void *y, void *arg)
{
	const struct cg_stack *a = x, *b = y;
	const struct cg_frame *f = arg;

	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	for (uint32_t i = 0; i < a->depth && i < b->depth; i++) {
		const struct cg_frame *u = &f[a->first + i], *v = &f[b->first + i];

		if (u->tag != v->tag)
			return u->tag < v->tag ? -1 : 1;
		if (u->offset != v->offset)
			return u->offset < v->offset ? -1 : 1;
	}
	return a->depth < b->depth ? -1 : a->depth > b->depth;
}

static int ev_cmp_idx(const void *x, const void *y, void *arg)
{
	const char (*v)[CG_EVENT_MAX] = arg;

	return strcmp(v[*(const uint32_t *)x], v[*(const uint32_t *)y]);
}

/* ord: 0..n-1 sorted by cmp over v; NULL when out of memory. */
static uint32_t *sorted_order(size_t n, int (*cmp)(const void *, const void *, void *),
			      void *v)
{
	uint32_t *ord = malloc((n ? n : 1) * sizeof(*ord));

	if (!ord)
		return NULL;
	for (size_t i = 0; i < n; i++)
		ord[i] = (uint32_t)i;
	qsort_r(ord, n, sizeof(*ord), cmp, v);
	return ord;
}

static void retag_frames(void *v, const uint32_t *map)
{
	struct cg_profile *p = v;

	for (size_t i = 0; i < p->nf; i++)
		p->f[i].tag = map[p->f[i].tag];
}

/* Events by name (add keeps them distinct), the stacks' indexes renumbered. */
static int order_events(struct cg_profile *p)
{
	uint32_t *ord = sorted_order(p->nevents, ev_cmp_idx, p->events);
	uint32_t map[CG_EVENTS_MAX];
	char (*v)[CG_EVENT_MAX] = malloc((p->nevents ? p->nevents : 1) * sizeof(*v));

	if (!ord || !v) {
		free(ord);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nevents; i++) {
		memcpy(v[i], p->events[ord[i]], sizeof(v[i]));
		map[ord[i]] = (uint32_t)i;
	}
	for (size_t i = 0; i < p->n; i++)
		p->s[i].event = map[p->s[i].event];
	free(p->events);
	free(ord);
	p->events = v;
	return 0;
}

/* Stacks sorted, equal ones summed, the frame pool rebuilt in their order. */
static int order_stacks(struct cg_profile *p)
{
	struct cg_frame *f = malloc((p->nf ? p->nf : 1) * sizeof(*f));
	size_t k = 0, nf = 0;

	if (!f)
		return -ENOMEM;
	qsort_r(p->s, p->n, sizeof(*p->s), stack_cmp, p->f);
	for (size_t i = 0; i < p->n; i++) {
		if (k && !stack_cmp(&p->s[k - 1], &p->s[i], p->f)) {
			p->s[k - 1].count += p->s[i].count;
			continue;
		}
		p->s[k++] = p->s[i];
	}
	for (size_t i = 0; i < k; i++) {
		memcpy(f + nf, p->f + p->s[i].first, p->s[i].depth * sizeof(*f));
		p->s[i].first = nf;
		nf += p->s[i].depth;
	}
	free(p->f);
	p->f = f;
	p->nf = nf;
	p->capf = nf ? nf : 1;
	p->n = k;
	return 0;
}

int cg_normalize(struct cg_profile *p)
{
	int rc = kind_images_order(&p->image, &p->imgs, &p->nimgs, retag_frames, p);

	if (!rc)
		rc = order_events(p);
	if (!rc)
		rc = order_stacks(p);
	return rc;
}

static int merge_stacks(struct cg_profile *dst, const struct cg_profile *src)
{
	struct cg_frame fr[CG_DEPTH_MAX];
	int ev, t;
	int rc = 0;

	for (size_t i = 0; i < src->n && !rc; i++) {
		const struct cg_stack *s = &src->s[i];

		if (s->event >= src->nevents || !s->depth || s->depth > CG_DEPTH_MAX)
			return -EINVAL;
		if ((ev = cg_profile_event(dst, src->events[s->event])) < 0)
			return ev;
		for (uint32_t d = 0; d < s->depth; d++) {
			const struct prof_image_id *id = cg_profile_image(src,
									  src->f[s->first + d].tag);

			if (!id)
				return -EINVAL;
			if ((t = cg_profile_tag(dst, id)) < 0)
				return t;
			fr[d] = (struct cg_frame){ (uint32_t)t, src->f[s->first + d].offset };
		}
		rc = cg_profile_add(dst, (uint32_t)ev, fr, s->depth, s->count);
	}
	return rc;
}

int cg_profile_merge(struct cg_profile *dst, const struct cg_profile *src,
		     struct dcpi_err *err)
{
	int rc;

	if (!prof_image_id_equal(&dst->image, &src->image))
		return dcpi_errf(err, -EINVAL, "%s: call-graph profiles of another image",
				 src->image.path);
	rc = merge_stacks(dst, src);
	if (!rc)
		rc = cg_normalize(dst);
	if (rc)
		return dcpi_errf(err, rc, "%s: call-graph profile: %s", src->image.path,
				 strerror(-rc));
	return 0;
}

/* --- codec ---------------------------------------------------------------- */

/*
 * Frame i > 0 of a stack is stored as its tag and its offset as a zigzag
 * delta from frame i - 1 when the tags are equal (callers in the same
 * image are near: a byte or two), else the offset itself.
 */
static uint64_t zig(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t zag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint64_t frame_word(const struct cg_frame *f, size_t i)
{
	if (i && f[i].tag == f[i - 1].tag)
		return zig((int64_t)(f[i].offset - f[i - 1].offset));
	return f[i].offset;
}

static size_t encoded_size(const void *v)
{
	const struct cg_profile *p = v;
	size_t size = CG_HDR_SIZE + kind_string_len(p->image.build_id) +
		      kind_string_len(p->image.path);

	for (size_t i = 0; i < p->nevents; i++)
		size += kind_string_len(p->events[i]);
	for (size_t i = 0; i < p->nimgs; i++)
		size += kind_id_len(&p->imgs[i]);
	for (size_t i = 0; i < p->n; i++) {
		const struct cg_stack *s = &p->s[i];
		const struct cg_frame *f = p->f + s->first;

		size += varint_len(s->event) + varint_len(s->count) + varint_len(s->depth);
		for (uint32_t d = 0; d < s->depth; d++)
			size += varint_len(f[d].tag) + varint_len(frame_word(f, d));
	}
	return size;
}

static const char *stack_why(const struct cg_profile *p, size_t i)
{
	const struct cg_stack *s = &p->s[i];

	if (s->event >= p->nevents)
		return "stack of an event not in the table";
	if (!s->depth || s->depth > CG_DEPTH_MAX || s->first + s->depth > p->nf)
		return "stack depth 0, too deep or past the frames";
	if (!s->count)
		return "stack with no samples";
	if (p->f[s->first].tag)
		return "leaf frame outside the profile's image";
	for (uint32_t d = 0; d < s->depth; d++)
		if (p->f[s->first + d].tag > p->nimgs)
			return "frame of an image not in the table";
	if (i && stack_cmp(&p->s[i - 1], s, p->f) >= 0)
		return "stacks not sorted or duplicated";
	return NULL;
}

static const char *check(const void *v)
{
	const struct cg_profile *p = v;
	const char *why;

	for (size_t i = 0; i < p->nimgs; i++) {
		if ((why = kind_check_id(&p->imgs[i])))
			return why;
		if (prof_image_id_equal(&p->imgs[i], &p->image) ||
		    (i && prof_image_id_cmp(&p->imgs[i - 1], &p->imgs[i]) >= 0))
			return "image table not sorted, duplicated or naming its own image";
	}
	for (size_t i = 0; i < p->nevents; i++)
		if (!p->events[i][0] || (i && strcmp(p->events[i - 1], p->events[i]) >= 0))
			return "event table empty names, not sorted or duplicated";
	for (size_t i = 0; i < p->n; i++)
		if ((why = stack_why(p, i)))
			return why;
	return NULL;
}

static size_t put_body(const void *v, uint8_t *b, size_t pos)
{
	const struct cg_profile *p = v;

	put64(b + COFF_N, p->n);
	put64(b + COFF_NF, p->nf);
	put64(b + COFF_NIMGS, p->nimgs);
	put64(b + COFF_NEV, p->nevents);
	for (size_t i = 0; i < p->nevents; i++)
		pos = kind_put_string(b, pos, p->events[i]);
	pos = kind_put_ids(b, pos, p->imgs, p->nimgs);
	for (size_t i = 0; i < p->n; i++) {
		const struct cg_stack *s = &p->s[i];
		const struct cg_frame *f = p->f + s->first;

		pos = kind_put_varint(b, pos, s->event);
		pos = kind_put_varint(b, pos, s->count);
		pos = kind_put_varint(b, pos, s->depth);
		for (uint32_t d = 0; d < s->depth; d++) {
			pos = kind_put_varint(b, pos, f[d].tag);
			pos = kind_put_varint(b, pos, frame_word(f, d));
		}
	}
	return pos;
}

static const char *get_frames(struct kind_cursor *c, struct cg_profile *p, struct cg_stack *s)
{
	struct cg_frame *f = p->f + s->first;
	uint64_t tag, w;

	for (uint32_t d = 0; d < s->depth; d++) {
		if (!kind_next(c, &tag) || !kind_next(c, &w))
			return "frame truncated or overlong varint";
		if (tag > p->nimgs)
			return "frame of an image not in the table";
		f[d].tag = (uint32_t)tag;
		f[d].offset = d && f[d - 1].tag == tag ? f[d - 1].offset + (uint64_t)zag(w) : w;
	}
	return NULL;
}

static const char *get_stacks(struct kind_cursor *c, struct cg_profile *p, uint64_t n,
			      uint64_t nf)
{
	const char *why;
	uint64_t v[3];

	for (uint64_t i = 0; i < n; i++) {
		struct cg_stack *s = &p->s[i];

		if (!kind_next(c, &v[0]) || !kind_next(c, &v[1]) || !kind_next(c, &v[2]))
			return "stack truncated or overlong varint";
		if (v[0] >= p->nevents || !v[2] || v[2] > CG_DEPTH_MAX || v[2] > nf - p->nf)
			return "stack of an unknown event, or of a bad depth";
		*s = (struct cg_stack){ (uint32_t)v[0], (uint32_t)v[2], p->nf, v[1] };
		if ((why = get_frames(c, p, s)))
			return why;
		p->nf += s->depth;
		p->n = (size_t)i + 1;
	}
	return p->nf == nf ? NULL : "frame count in the header does not match the stacks";
}

/* Counts from the header, bounded by the body: an image takes at least 4
 * bytes, an event 2, a stack 3, a frame 2. */
static const char *decode_body(struct kind_cursor *c, void *v)
{
	struct cg_profile *p = v;
	uint64_t n = get64(c->buf + COFF_N), nf = get64(c->buf + COFF_NF);
	uint64_t ni = get64(c->buf + COFF_NIMGS), ne = get64(c->buf + COFF_NEV);
	size_t body = c->size - c->pos;
	const char *why;

	if (ni > CG_IMGS_MAX || ne > CG_EVENTS_MAX || n > body / 3 || nf > body / 2 ||
	    ni * 4 + ne * 2 + n * 3 + nf * 2 > body)
		return "counts in the header do not fit in the file";
	if ((ni && !(p->imgs = calloc((size_t)ni, sizeof(*p->imgs)))) ||
	    (ne && !(p->events = calloc((size_t)ne, sizeof(*p->events)))) ||
	    (n && !(p->s = calloc((size_t)n, sizeof(*p->s)))) ||
	    (nf && !(p->f = calloc((size_t)nf, sizeof(*p->f)))))
		return "out of memory";
	p->cap = (size_t)n;
	p->capf = (size_t)nf;
	for (uint64_t i = 0; i < ne; i++) {
		if ((why = kind_get_string(c, p->events[i], CG_EVENT_MAX)))
			return why;
		p->nevents = (size_t)i + 1;
	}
	if ((why = kind_get_ids(c, p->imgs, ni, &p->nimgs)) ||
	    (why = get_stacks(c, p, n, nf)))
		return why;
	if (c->pos != c->size)
		return "garbage after the stacks";
	return check(p);
}

static const struct kind_format cg_format = {
	.magic = CG_MAGIC, .what = "a dcpi call-graph profile", .noun = "call-graph profile",
	.hdr_size = CG_HDR_SIZE, .version = CG_VERSION, .off_image = COFF_ISIZE,
	.check = check, .size = encoded_size, .put = put_body, .get = decode_body,
};

int cg_encode(const struct cg_profile *p, uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	return kind_encode(&cg_format, p, &p->image, buf, len, err);
}

int cg_decode(const uint8_t *buf, size_t len, const char *name, struct cg_profile *p,
	      struct dcpi_err *err)
{
	int rc;

	cg_profile_init(p);
	rc = kind_decode(&cg_format, buf, len, name, p, &p->image, err);
	if (rc)
		cg_profile_free(p);
	return rc;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

static int cg_copy(struct cg_profile *dst, const struct cg_profile *src)
{
	cg_profile_init(dst);
	dst->image = src->image;
	return cg_profile_merge(dst, src, NULL) ? -ENOMEM : 0;
}

PROF_KIND_API(cg, cg_profile, ".cg")
