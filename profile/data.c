/*
 * profile/data.c - data profiles (include/dcpi/data.h; docs/data.md; the
 * bytes in docs/profile-format.md, "Data files"): counts per (line,
 * instruction) and sharing per line, their merge (sums and ORs) and their
 * codec, through kind.c as the other per-image kinds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/data.h"
#include "internal.h"

#define DATA_MAGIC "DCPIDATA"
#define DATA_VERSION 1u		/* written when no kernel transfers are held */
#define DATA_VERSION_KIO 2u	/* with them: their count at DOFF_NK */
#define DOFF_N 24
#define DOFF_NS 32
#define DOFF_NIMGS 40
#define DOFF_WINDOW 48
#define DOFF_ISIZE 56
#define DOFF_MTIME 64
#define DATA_HDR_SIZE 72
#define DOFF_NK 72
#define DATA_HDR_SIZE_KIO 80
#define DATA_IMGS_MAX 4096

void data_profile_init(struct data_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->window_ns = DATA_WINDOW_NS;
}

void data_profile_free(struct data_profile *p)
{
	free(p->imgs);
	free(p->e);
	free(p->s);
	free(p->kio);
	data_profile_init(p);
}

int data_key_cmp(const struct data_key *a, const struct data_key *b)
{
	return dcpi_cmp_keys((uint64_t[]){ a->space, a->tag, a->base, a->line },
			     (uint64_t[]){ b->space, b->tag, b->base, b->line }, 4);
}

static int entry_cmp(const void *x, const void *y)
{
	const struct data_entry *a = x, *b = y;
	int c = data_key_cmp(&a->k, &b->k);

	if (c)
		return c;
	return a->insn < b->insn ? -1 : a->insn > b->insn;
}

static int share_cmp(const void *x, const void *y)
{
	return data_key_cmp(&((const struct data_share *)x)->k,
			    &((const struct data_share *)y)->k);
}

static int kio_cmp(const void *x, const void *y)
{
	return data_key_cmp(&((const struct data_kio *)x)->k, &((const struct data_kio *)y)->k);
}

int data_profile_tag(struct data_profile *p, const struct prof_image_id *id)
{
	return kind_image_tag(&p->image, &p->imgs, &p->nimgs, DATA_IMGS_MAX, id);
}

const struct prof_image_id *data_profile_image(const struct data_profile *p, uint32_t tag)
{
	return kind_image_of(&p->image, p->imgs, p->nimgs, tag);
}

int data_profile_add(struct data_profile *p, const struct data_entry *e)
{
	if (dcpi_grow((void **)&p->e, &p->cap, p->n + 1, sizeof(*p->e)))
		return -ENOMEM;
	p->e[p->n++] = *e;
	return 0;
}

int data_profile_share(struct data_profile *p, const struct data_share *s)
{
	if (dcpi_grow((void **)&p->s, &p->caps, p->ns + 1, sizeof(*p->s)))
		return -ENOMEM;
	p->s[p->ns++] = *s;
	return 0;
}

int data_profile_kio(struct data_profile *p, const struct data_kio *x)
{
	if (dcpi_grow((void **)&p->kio, &p->capk, p->nk + 1, sizeof(*p->kio)))
		return -ENOMEM;
	p->kio[p->nk++] = *x;
	return 0;
}

static int entry_sum(void *into, const void *from, void *ctx)
{
	struct data_entry *d = into;
	const struct data_entry *s = from;

	d->accesses += s->accesses;
	d->loads += s->loads;
	d->stores += s->stores;
	d->mask |= s->mask;
	if (s->size > d->size)
		d->size = s->size;
	return 0;
}

static int share_sum(void *into, const void *from, void *ctx)
{
	struct data_share *d = into;
	const struct data_share *s = from;

	d->seen += s->seen;
	d->true_w += s->true_w;
	d->false_w += s->false_w;
	d->true_mask |= s->true_mask;
	d->mask_a |= s->mask_a;
	d->mask_b |= s->mask_b;
	return 0;
}

static int kio_sum(void *into, const void *from, void *ctx)
{
	struct data_kio *d = into;
	const struct data_kio *s = from;

	d->calls += s->calls;
	d->in += s->in;
	d->out += s->out;
	return 0;
}

static void retag_keys(void *v, const uint32_t *map)
{
	struct data_profile *p = v;

	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].k.space == DATA_IMAGE || p->e[i].k.space == DATA_HEAP)
			p->e[i].k.tag = map[p->e[i].k.tag];
	for (size_t i = 0; i < p->ns; i++)
		if (p->s[i].k.space == DATA_IMAGE || p->s[i].k.space == DATA_HEAP)
			p->s[i].k.tag = map[p->s[i].k.tag];
	for (size_t i = 0; i < p->nk; i++)
		p->kio[i].k.tag = map[p->kio[i].k.tag];
}

int data_normalize(struct data_profile *p)
{
	int rc = kind_images_order(&p->image, &p->imgs, &p->nimgs, retag_keys, p);

	if (rc)
		return rc;
	dcpi_sort_fold(p->e, &p->n, sizeof(*p->e), entry_cmp, entry_sum, NULL);
	dcpi_sort_fold(p->s, &p->ns, sizeof(*p->s), share_cmp, share_sum, NULL);
	dcpi_sort_fold(p->kio, &p->nk, sizeof(*p->kio), kio_cmp, kio_sum, NULL);
	return 0;
}

static int retag(struct data_profile *dst, const struct data_profile *src, struct data_key *k)
{
	int t;

	if (k->space != DATA_IMAGE && k->space != DATA_HEAP)
		return 0;
	t = data_profile_tag(dst, data_profile_image(src, k->tag));
	if (t < 0)
		return t;
	k->tag = (uint32_t)t;
	return 0;
}

int data_profile_merge(struct data_profile *dst, const struct data_profile *src,
		       struct dcpi_err *err)
{
	int rc = 0;

	if (!prof_image_id_equal(&dst->image, &src->image) || dst->window_ns != src->window_ns)
		return dcpi_errf(err, -EINVAL, "%s: data profiles of another image or window",
				 src->image.path);
	for (size_t i = 0; i < src->n && !rc; i++) {
		struct data_entry e = src->e[i];

		rc = retag(dst, src, &e.k);
		if (!rc)
			rc = data_profile_add(dst, &e);
	}
	for (size_t i = 0; i < src->ns && !rc; i++) {
		struct data_share s = src->s[i];

		rc = retag(dst, src, &s.k);
		if (!rc)
			rc = data_profile_share(dst, &s);
	}
	for (size_t i = 0; i < src->nk && !rc; i++) {
		struct data_kio x = src->kio[i];

		rc = retag(dst, src, &x.k);
		if (!rc)
			rc = data_profile_kio(dst, &x);
	}
	if (!rc)
		rc = data_normalize(dst);
	if (rc)
		return dcpi_errf(err, rc, "%s: data profile: %s", src->image.path, strerror(-rc));
	return 0;
}

/* --- codec ---------------------------------------------------------------- */

static size_t key_len(const struct data_key *k)
{
	return varint_len(k->space) + varint_len(k->tag) + varint_len(k->base) +
	       varint_len(k->line);
}

static size_t encoded_size(const void *v)
{
	const struct data_profile *p = v;
	size_t size = (p->nk ? DATA_HDR_SIZE_KIO : DATA_HDR_SIZE) +
		      kind_string_len(p->image.build_id) + kind_string_len(p->image.path);

	for (size_t i = 0; i < p->nimgs; i++)
		size += kind_id_len(&p->imgs[i]);
	for (size_t i = 0; i < p->n; i++) {
		const struct data_entry *e = &p->e[i];

		size += key_len(&e->k) + varint_len(e->insn) + varint_len(e->accesses) +
			varint_len(e->loads) + varint_len(e->stores) + varint_len(e->mask) +
			varint_len(e->size);
	}
	for (size_t i = 0; i < p->ns; i++) {
		const struct data_share *s = &p->s[i];

		size += key_len(&s->k) + varint_len(s->seen) + varint_len(s->true_w) +
			varint_len(s->false_w) + varint_len(s->true_mask) +
			varint_len(s->mask_a) + varint_len(s->mask_b);
	}
	for (size_t i = 0; i < p->nk; i++)
		size += key_len(&p->kio[i].k) + varint_len(p->kio[i].calls) +
			varint_len(p->kio[i].in) + varint_len(p->kio[i].out);
	return size;
}

static int key_ok(const struct data_profile *p, const struct data_key *k)
{
	if (k->space >= DATA_NSPACES || k->line % DATA_LINE)
		return 0;
	if (k->space == DATA_IMAGE || k->space == DATA_HEAP)
		return k->tag <= p->nimgs && (k->space == DATA_HEAP || !k->base);
	return !k->tag && !k->base;
}

static const char *entry_why(const struct data_profile *p, size_t i)
{
	const struct data_entry *e = &p->e[i];

	if (!key_ok(p, &e->k))
		return "bad key (space, tag, base or unaligned line)";
	if (i && entry_cmp(&p->e[i - 1], e) >= 0)
		return "entries not sorted or duplicated";
	if (!e->accesses || e->loads > e->accesses || e->stores > e->accesses ||
	    e->loads + e->stores < e->accesses || !e->mask)
		return "inconsistent counts";
	if (e->k.space != DATA_HEAP && e->size)
		return "a size outside the heap";
	return NULL;
}

static const char *share_why(const struct data_profile *p, size_t i)
{
	const struct data_share *s = &p->s[i];

	if (!key_ok(p, &s->k))
		return "bad key (space, tag, base or unaligned line)";
	if (i && share_cmp(&p->s[i - 1], s) >= 0)
		return "sharing not sorted or duplicated";
	if (!s->seen || s->true_w > s->seen || s->false_w > s->seen - s->true_w)
		return "inconsistent window counts";
	return NULL;
}

static const char *kio_why(const struct data_profile *p, size_t i)
{
	const struct data_kio *x = &p->kio[i];

	if (!key_ok(p, &x->k) || x->k.space != DATA_HEAP || x->k.line)
		return "bad kernel transfer key (not a heap site, or a line)";
	if (i && kio_cmp(&p->kio[i - 1], x) >= 0)
		return "kernel transfers not sorted or duplicated";
	if (!x->calls || (!x->in && !x->out))
		return "kernel transfer of nothing";
	return NULL;
}

static const char *check(const void *v)
{
	const struct data_profile *p = v;
	const char *why;

	if (!p->window_ns)
		return "window of 0 ns";
	for (size_t i = 0; i < p->nimgs; i++)
		if ((why = kind_check_id(&p->imgs[i])))
			return why;
	for (size_t i = 0; i < p->n; i++)
		if ((why = entry_why(p, i)))
			return why;
	for (size_t i = 0; i < p->ns; i++)
		if ((why = share_why(p, i)))
			return why;
	for (size_t i = 0; i < p->nk; i++)
		if ((why = kio_why(p, i)))
			return why;
	return NULL;
}

static size_t put_key(uint8_t *b, size_t pos, const struct data_key *k)
{
	pos = kind_put_varint(b, pos, k->space);
	pos = kind_put_varint(b, pos, k->tag);
	pos = kind_put_varint(b, pos, k->base);
	return kind_put_varint(b, pos, k->line);
}

static size_t put_body(const void *v, uint8_t *b, size_t pos)
{
	const struct data_profile *p = v;

	put64(b + DOFF_N, p->n);
	put64(b + DOFF_NS, p->ns);
	put64(b + DOFF_NIMGS, p->nimgs);
	put64(b + DOFF_WINDOW, p->window_ns);
	pos = kind_put_ids(b, pos, p->imgs, p->nimgs);
	for (size_t i = 0; i < p->n; i++) {
		const struct data_entry *e = &p->e[i];

		pos = put_key(b, pos, &e->k);
		pos = kind_put_varint(b, pos, e->insn);
		pos = kind_put_varint(b, pos, e->accesses);
		pos = kind_put_varint(b, pos, e->loads);
		pos = kind_put_varint(b, pos, e->stores);
		pos = kind_put_varint(b, pos, e->mask);
		pos = kind_put_varint(b, pos, e->size);
	}
	for (size_t i = 0; i < p->ns; i++) {
		const struct data_share *s = &p->s[i];

		pos = put_key(b, pos, &s->k);
		pos = kind_put_varint(b, pos, s->seen);
		pos = kind_put_varint(b, pos, s->true_w);
		pos = kind_put_varint(b, pos, s->false_w);
		pos = kind_put_varint(b, pos, s->true_mask);
		pos = kind_put_varint(b, pos, s->mask_a);
		pos = kind_put_varint(b, pos, s->mask_b);
	}
	if (p->nk)
		put64(b + DOFF_NK, p->nk);
	for (size_t i = 0; i < p->nk; i++) {
		const struct data_kio *x = &p->kio[i];

		pos = put_key(b, pos, &x->k);
		pos = kind_put_varint(b, pos, x->calls);
		pos = kind_put_varint(b, pos, x->in);
		pos = kind_put_varint(b, pos, x->out);
	}
	return pos;
}

static int next_n(struct kind_cursor *c, uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!kind_next(c, &v[i]))
			return 0;
	return 1;
}

static int get_key(struct kind_cursor *c, struct data_key *k)
{
	uint64_t v[4];

	if (!next_n(c, v, 4) || v[0] > UINT32_MAX || v[1] > UINT32_MAX)
		return 0;
	*k = (struct data_key){ (uint32_t)v[0], (uint32_t)v[1], v[2], v[3] };
	return 1;
}

static const char *get_records(struct kind_cursor *c, struct data_profile *p, uint64_t n,
			       uint64_t ns)
{
	uint64_t v[6];

	for (uint64_t i = 0; i < n; i++) {
		struct data_entry *e = &p->e[i];

		if (!get_key(c, &e->k) || !next_n(c, v, 6))
			return "entry truncated or overlong varint";
		e->insn = v[0];
		e->accesses = v[1];
		e->loads = v[2];
		e->stores = v[3];
		e->mask = v[4];
		e->size = v[5];
		p->n = (size_t)i + 1;
	}
	for (uint64_t i = 0; i < ns; i++) {
		struct data_share *s = &p->s[i];

		if (!get_key(c, &s->k) || !next_n(c, v, 6))
			return "sharing record truncated or overlong varint";
		*s = (struct data_share){ s->k, v[0], v[1], v[2], v[3], v[4], v[5] };
		p->ns = (size_t)i + 1;
	}
	for (size_t i = 0; i < p->capk; i++) {
		struct data_kio *x = &p->kio[i];

		if (!get_key(c, &x->k) || !next_n(c, v, 3))
			return "kernel transfer truncated or overlong varint";
		x->calls = v[0];
		x->in = v[1];
		x->out = v[2];
		p->nk = i + 1;
	}
	return NULL;
}

/* Counts from the header, bounded by the body: an image takes at least 4
 * bytes, an entry 10, a sharing record 10, a kernel transfer 7.  Version 2
 * has the kernel transfers' count at DOFF_NK (at least one). */
static const char *decode_counts(struct kind_cursor *c, struct data_profile *p, int v2)
{
	uint64_t n = get64(c->buf + DOFF_N), ns = get64(c->buf + DOFF_NS);
	uint64_t ni = get64(c->buf + DOFF_NIMGS), nk = v2 ? get64(c->buf + DOFF_NK) : 0;
	size_t body = c->size - c->pos;

	p->window_ns = get64(c->buf + DOFF_WINDOW);
	if (ni > DATA_IMGS_MAX || ni > body / 4 || n > body / 10 || ns > body / 10 ||
	    nk > body / 7 || ni * 4 + n * 10 + ns * 10 + nk * 7 > body)
		return "counts in the header do not fit in the file";
	if (v2 && !nk)
		return "version 2 without kernel transfers";
	if ((ni && !(p->imgs = calloc((size_t)ni, sizeof(*p->imgs)))) ||
	    (n && !(p->e = calloc((size_t)n, sizeof(*p->e)))) ||
	    (ns && !(p->s = calloc((size_t)ns, sizeof(*p->s)))) ||
	    (nk && !(p->kio = calloc((size_t)nk, sizeof(*p->kio)))))
		return "out of memory";
	p->cap = (size_t)n;
	p->caps = (size_t)ns;
	p->capk = (size_t)nk;
	p->nimgs = (size_t)ni;	/* kind_get_ids sets it again */
	return NULL;
}

static const char *decode_rest(struct kind_cursor *c, struct data_profile *p)
{
	uint64_t n = p->cap, ns = p->caps, ni = p->nimgs;
	const char *why;

	p->nimgs = 0;
	if ((why = kind_get_ids(c, p->imgs, ni, &p->nimgs)) ||
	    (why = get_records(c, p, n, ns)))
		return why;
	if (c->pos != c->size)
		return "garbage after the records";
	return check(p);
}

static const char *decode_body(struct kind_cursor *c, void *v)
{
	const char *why = decode_counts(c, v, 0);

	return why ? why : decode_rest(c, v);
}

static const char *decode_body_kio(struct kind_cursor *c, void *v)
{
	const char *why = decode_counts(c, v, 1);

	return why ? why : decode_rest(c, v);
}

static const struct kind_format data_format = {
	.magic = DATA_MAGIC, .what = "a dcpi data profile", .noun = "data profile",
	.hdr_size = DATA_HDR_SIZE, .version = DATA_VERSION, .off_image = DOFF_ISIZE,
	.check = check, .size = encoded_size, .put = put_body, .get = decode_body,
};

/* The same with kernel transfers: version 2, a longer header. */
static const struct kind_format data_format_kio = {
	.magic = DATA_MAGIC, .what = "a dcpi data profile", .noun = "data profile",
	.hdr_size = DATA_HDR_SIZE_KIO, .version = DATA_VERSION_KIO, .off_image = DOFF_ISIZE,
	.check = check, .size = encoded_size, .put = put_body, .get = decode_body_kio,
};

/* The format of the file in buf: version 2 has kernel transfers. */
static const struct kind_format *format_of(const uint8_t *buf, size_t len)
{
	return len >= 12 && get32(buf + 8) == DATA_VERSION_KIO ? &data_format_kio : &data_format;
}

int data_encode(const struct data_profile *p, uint8_t **buf, size_t *len,
		struct dcpi_err *err)
{
	return kind_encode(p->nk ? &data_format_kio : &data_format, p, &p->image, buf, len,
			   err);
}

int data_decode(const uint8_t *buf, size_t len, const char *name, struct data_profile *p,
		struct dcpi_err *err)
{
	int rc;

	data_profile_init(p);
	rc = kind_decode(format_of(buf, len), buf, len, name, p, &p->image, err);
	if (rc)
		data_profile_free(p);
	return rc;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

static int data_copy(struct data_profile *dst, const struct data_profile *src)
{
	data_profile_init(dst);
	dst->image = src->image;
	dst->window_ns = src->window_ns;
	return data_profile_merge(dst, src, NULL) ? -ENOMEM : 0;
}

PROF_KIND_API(data, data_profile, ".data")
