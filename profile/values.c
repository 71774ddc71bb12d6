/*
 * values.c - value samples' hotlists and the value profile kind
 * (include/dcpi/values.h; seed 000, "Hotlists (Gibbons-Matias)";
 * docs/profile-format.md, "Value files").
 *
 * A hotlist holds at most N (value, count) tuples and a probability p.  Two
 * ways of keeping it, after Gibbons and Matias (SIGMOD 1998), switched by a
 * saturating counter SatCount in [0, 50] as seed 000's Figs. 11A/11B:
 *
 *   concise samples   every value is taken with probability p; a taken value
 *                     counts 1 more for its tuple, or adds (V, 1).  At N + 1
 *                     tuples p /= f and each tuple loses Binomial(C, 1 - 1/f)
 *                     (each counted event evicted with probability 1 - 1/f),
 *                     repeated until at most N remain.  Estimate C / p.
 *   counting samples  a value already in the list always counts; a new one
 *                     enters with probability p.  At N + 1 tuples p /= f and
 *                     each tuple loses, with probability 1 - 1/f, one count,
 *                     and then one more on each further coin of probability
 *                     1 - p (the new p) until a coin fails.  Estimate
 *                     C + 1/p - 1.
 *
 * SatCount goes up on a hit (value in the list) and down on a miss; in
 * concise mode only values taken by the p coin are looked up, so only they
 * move it (the patent: the list is not touched for the others).  At 50 the
 * list turns concise, at 0 it turns counting.  The counts of the two modes
 * mean different things (a concise C is about p times the occurrences, a
 * counting C the occurrences since the value entered), so a switch converts
 * them keeping p and each tuple's estimate: to concise, C becomes 1 plus
 * Binomial(C - 1, p) (the first counted event was admitted with probability
 * p, the later ones would each be taken with probability p); to counting, C
 * becomes 1 + round((C - 1) / p), which has the same estimate C / p.
 *
 * A profile is a hotlist per (offset, kind), found through a private
 * open-addressing index so that the collector's lookup per value is O(1),
 * and a table of the other images that tagged code values name.  Files are
 * a fixed little-endian header with a CRC-32C, strings and varints, as the
 * path files (paths.c).  The decoder is fuzzed (fuzz/fuzz_values.c) and
 * never reads outside its buffer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/values.h"
#include "internal.h"

#define VAL_MAGIC "DCPIVALS"
#define VAL_VERSION 1
#define VAL_HDR_SIZE 64
#define VOFF_NLISTS 24
#define VOFF_NIMAGES 32
#define VOFF_SAMPLES 40
#define VOFF_ISIZE 48
#define VOFF_MTIME 56
/* Tags are 16 bits (VAL_CODE_NONE has tag 0xffff); a process maps far
 * fewer images, and the bound keeps the decoder's duplicate check cheap. */
#define VAL_MAX_IMAGES 4096
/* A list record takes at least: offset, kind, mode, sat, p, seen, n. */
#define VAL_LIST_MIN 14
/* An image record: two string lengths, size, mtime. */
#define VAL_IMAGE_MIN 4

/* --- the generator ------------------------------------------------------- */

uint64_t val_rng_next(struct val_rng *r)
{
	uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

double val_rng_unit(struct val_rng *r)
{
	return (double)(val_rng_next(r) >> 11) * 0x1.0p-53;
}

/* A coin that comes up true with probability q. */
static int flip(struct val_rng *r, double q)
{
	return val_rng_unit(r) < q;
}

/*
 * Successes among n coins of probability q, 0 < q < 1: the same distribution
 * as flipping each (seed 000 does), but jumping over the failures with
 * geometric gaps, so the work is the number of successes, not n.
 */
static uint64_t binomial(struct val_rng *r, uint64_t n, double q)
{
	double lq = log1p(-q);
	uint64_t k = 0, pos = 0;

	for (;;) {
		double gap = floor(log1p(-val_rng_unit(r)) / lq);

		if (!(gap < (double)(n - pos)))
			return k;
		pos += (uint64_t)gap + 1;
		k++;
		if (pos >= n)
			return k;
	}
}

/* Further true coins of probability 1 - p before the first false one, at
 * most cap (geometric, drawn at once). */
static uint64_t run_length(struct val_rng *r, double p, uint64_t cap)
{
	double g = floor(log1p(-val_rng_unit(r)) / log1p(-p));

	return !(g < (double)cap) ? cap : (uint64_t)g;
}

/* --- kinds --------------------------------------------------------------- */

const char *val_kind_name(int kind)
{
	static const char *const names[VAL_KIND_MAX + 1] = {
		[VAL_RESULT] = "result", [VAL_ADDR] = "addr", [VAL_LOAD] = "load",
		[VAL_STORE] = "store", [VAL_STRIDE] = "stride", [VAL_BRANCH] = "branch",
		[VAL_TARGET] = "target", [VAL_ARG0] = "arg0", [VAL_ARG0 + 1] = "arg1",
		[VAL_ARG0 + 2] = "arg2", [VAL_ARG0 + 3] = "arg3", [VAL_ARG0 + 4] = "arg4",
		[VAL_ARG5] = "arg5", [VAL_CALLSITE] = "callsite", [VAL_LATENCY] = "latency",
	};

	if (kind < 1 || kind > VAL_KIND_MAX)
		return NULL;
	return names[kind];
}

static int is_code_kind(uint32_t kind)
{
	return kind == VAL_TARGET || kind == VAL_CALLSITE;
}

/* --- one hotlist ----------------------------------------------------------- */

void val_hotlist_init(struct val_hotlist *h, uint64_t offset, uint32_t kind)
{
	memset(h, 0, sizeof(*h));
	h->offset = offset;
	h->kind = kind;
	h->mode = VAL_COUNTING;
	h->sat = VAL_SAT_MIN;
	h->p = 1;
}

static int find_value(const struct val_hotlist *h, uint64_t value)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].value == value)
			return (int)i;
	return -1;
}

static void drop_zeros(struct val_hotlist *h)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].count)
			h->t[out++] = h->t[i];
	h->n = out;
}

/* Steps 226-230 (Fig. 11B): lower p until at most nmax tuples remain. */
static void concise_shrink(struct val_hotlist *h, struct val_rng *r, uint32_t nmax, double f)
{
	while (h->n > nmax) {
		h->p /= f;
		for (uint32_t i = 0; i < h->n; i++)
			h->t[i].count -= binomial(r, h->t[i].count, 1 - 1 / f);
		drop_zeros(h);
	}
}

/* Steps 238-240 (Fig. 11A).  Read as Gibbons-Matias's counting samples: the
 * first coin (1 - 1/f) evicts the tuple's first counted event; the coins of
 * probability 1 - p that follow use the p just lowered, each true one
 * evicting the next event, down to no count at all. */
static void counting_shrink(struct val_hotlist *h, struct val_rng *r, uint32_t nmax,
			    double f)
{
	while (h->n > nmax) {
		h->p /= f;
		for (uint32_t i = 0; i < h->n; i++) {
			struct val_tuple *t = &h->t[i];

			if (!flip(r, 1 - 1 / f))
				continue;
			t->count--;
			t->count -= run_length(r, h->p, t->count);
		}
		drop_zeros(h);
	}
}

static void to_concise(struct val_hotlist *h, struct val_rng *r)
{
	h->mode = VAL_CONCISE;
	if (h->p >= 1)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		h->t[i].count = 1 + binomial(r, h->t[i].count - 1, h->p);
}

static void to_counting(struct val_hotlist *h)
{
	h->mode = VAL_COUNTING;
	if (h->p >= 1)
		return;
	for (uint32_t i = 0; i < h->n; i++) {
		double c = nearbyint((double)(h->t[i].count - 1) / h->p);

		h->t[i].count = 1 + (c >= 0x1p62 ? (UINT64_C(1) << 62) : (uint64_t)c);
	}
}

static void saturate(struct val_hotlist *h, int hit, struct val_rng *r)
{
	if (hit && h->sat < VAL_SAT_MAX)
		h->sat++;
	else if (!hit && h->sat > VAL_SAT_MIN)
		h->sat--;
	if (h->mode == VAL_COUNTING && h->sat == VAL_SAT_MAX)
		to_concise(h, r);
	else if (h->mode == VAL_CONCISE && h->sat == VAL_SAT_MIN)
		to_counting(h);
}

void val_hotlist_add_nf(struct val_hotlist *h, uint64_t value, struct val_rng *r,
			uint32_t nmax, double f)
{
	int i;

	if (nmax < 1 || nmax > VAL_N)
		nmax = VAL_N;
	if (!(f > 1))
		f = (double)VAL_F_NUM / VAL_F_DEN;
	h->seen++;
	if (h->mode == VAL_CONCISE && h->p < 1 && !flip(r, h->p))
		return;
	i = find_value(h, value);
	if (i >= 0) {
		h->t[i].count++;
	} else if (h->mode == VAL_CONCISE || h->p >= 1 || flip(r, h->p)) {
		h->t[h->n].value = value;
		h->t[h->n++].count = 1;
		if (h->mode == VAL_CONCISE)
			concise_shrink(h, r, nmax, f);
		else
			counting_shrink(h, r, nmax, f);
	}
	saturate(h, i >= 0, r);
}

void val_hotlist_add(struct val_hotlist *h, uint64_t value, struct val_rng *r)
{
	if (h->mode == VAL_SPACESAVING)
		val_hotlist_add_ss(h, value);
	else
		val_hotlist_add_nf(h, value, r, VAL_GM_N, (double)VAL_F_NUM / VAL_F_DEN);
}

/* Metwally et al.: a hit counts; a miss joins a list with room, else takes
 * over the smallest counter (the first of equal ones), which it inherits
 * plus one: no value's count is less than its occurrences, and none more
 * than seen / VAL_N above them. */
void val_hotlist_add_ss(struct val_hotlist *h, uint64_t value)
{
	int i = find_value(h, value);
	uint32_t min = 0;

	h->seen++;
	if (i >= 0) {
		h->t[i].count++;
		return;
	}
	if (h->n < VAL_N) {
		h->t[h->n].value = value;
		h->t[h->n++].count = 1;
		return;
	}
	for (uint32_t k = 1; k < h->n; k++)
		if (h->t[k].count < h->t[min].count)
			min = k;
	h->t[min].value = value;
	h->t[min].count++;
}

static double estimate_of(const struct val_hotlist *h, uint64_t c)
{
	if (h->p >= 1)
		return (double)c;
	if (h->mode == VAL_CONCISE)
		return (double)c / h->p;
	return (double)c + 1 / h->p - 1;
}

double val_hotlist_estimate(const struct val_hotlist *h, uint32_t i)
{
	return i < h->n ? estimate_of(h, h->t[i].count) : 0;
}

double val_hotlist_share(const struct val_hotlist *h, uint32_t i)
{
	double s;

	if (!h->seen || i >= h->n)
		return 0;
	s = val_hotlist_estimate(h, i) / (double)h->seen;
	return s > 1 ? 1 : s;
}

/* Descending estimate, then ascending value.  Within one list the estimate
 * is increasing in the count, so counts decide. */
static int tuple_cmp(const struct val_tuple *x, const struct val_tuple *y)
{
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return (x->value > y->value) - (x->value < y->value);
}

static int cmp_tuple(const void *a, const void *b)
{
	return tuple_cmp(a, b);
}

void val_hotlist_sort(struct val_hotlist *h)
{
	dcpi_qsort(h->t, h->n, sizeof(h->t[0]), cmp_tuple);
}

struct merge_item {
	uint64_t value;
	double est;
};

static int cmp_item_value(const void *a, const void *b)
{
	const struct merge_item *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

/* Estimates of one value add (a + b == b + a). */
static int item_sum(void *into, const void *from, void *ctx)
{
	((struct merge_item *)into)->est += ((const struct merge_item *)from)->est;
	return 0;
}

static int cmp_item_est(const void *a, const void *b)
{
	const struct merge_item *x = a, *y = b;

	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	return cmp_item_value(a, b);
}

/*
 * docs/profile-format.md, "Value files": estimates of equal values add, the
 * VAL_N largest (ties: smaller value) are kept as concise samples at the
 * smaller p, count max(1, round(estimate * p)), SatCount at MaxEnd.  An
 * empty operand (nothing seen) leaves the other as it is.  Commutative
 * exactly.
 */
void val_hotlist_merge(struct val_hotlist *dst, const struct val_hotlist *src)
{
	struct merge_item it[2 * VAL_N + 2];
	size_t n = 0;
	uint32_t k;
	double p;

	if (!src->seen && !src->n)
		return;
	if (!dst->seen && !dst->n) {
		uint64_t off = dst->offset;
		uint32_t kind = dst->kind;

		*dst = *src;
		dst->offset = off;
		dst->kind = kind;
		return;
	}
	for (uint32_t i = 0; i < dst->n && i <= VAL_N; i++)
		it[n++] = (struct merge_item){ dst->t[i].value, val_hotlist_estimate(dst, i) };
	for (uint32_t i = 0; i < src->n && i <= VAL_N; i++)
		it[n++] = (struct merge_item){ src->t[i].value, val_hotlist_estimate(src, i) };
	dcpi_sort_fold(it, &n, sizeof(it[0]), cmp_item_value, item_sum, NULL);
	k = (uint32_t)n;
	qsort(it, k, sizeof(it[0]), cmp_item_est);
	if (k > VAL_N)
		k = VAL_N;
	p = dst->p < src->p ? dst->p : src->p;
	dst->seen = dst->seen + src->seen < dst->seen ? UINT64_MAX : dst->seen + src->seen;
	if (dst->mode == VAL_SPACESAVING && src->mode == VAL_SPACESAVING) {
		/* counts add; the VAL_N largest stay (bounds add too) */
		dst->sat = VAL_SAT_MIN;
	} else {
		dst->mode = VAL_CONCISE;
		dst->sat = VAL_SAT_MAX;
	}
	dst->p = p;
	dst->n = k;
	for (uint32_t i = 0; i < k; i++) {
		double c = nearbyint(it[i].est * p);

		dst->t[i].value = it[i].value;
		dst->t[i].count = c < 1 ? 1 : c >= 0x1p63 ? (UINT64_C(1) << 63) : (uint64_t)c;
	}
	val_hotlist_sort(dst);
}

/* --- profiles -------------------------------------------------------------- */

/* The index: open addressing over (offset, kind), slots hold list + 1. */
struct val_index {
	size_t cap;		/* a power of two, at least twice nlists */
	size_t *slot;
};

void val_profile_init(struct val_profile *p)
{
	memset(p, 0, sizeof(*p));
}

static void index_free(struct val_profile *p)
{
	struct val_index *ix = p->index;

	if (ix)
		free(ix->slot);
	free(ix);
	p->index = NULL;
}

void val_profile_free(struct val_profile *p)
{
	if (!p)
		return;
	index_free(p);
	free(p->images);
	free(p->lists);
	val_profile_init(p);
}

static size_t key_hash(uint64_t offset, uint32_t kind)
{
	uint64_t h = (offset ^ ((uint64_t)kind << 56)) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h ^ (h >> 29));
}

/* The slot of (offset, kind): its list's, or the empty one to fill. */
static size_t *index_slot(const struct val_profile *p, uint64_t offset, uint32_t kind)
{
	const struct val_index *ix = p->index;
	size_t i = key_hash(offset, kind) & (ix->cap - 1);

	for (;; i = (i + 1) & (ix->cap - 1)) {
		size_t s = ix->slot[i];

		if (!s || (p->lists[s - 1].offset == offset && p->lists[s - 1].kind == kind))
			return &ix->slot[i];
	}
}

static int index_build(struct val_profile *p, size_t want)
{
	struct val_index *ix = p->index;
	size_t cap = 64;

	while (cap < 2 * want) {
		if (cap > SIZE_MAX / 4 / sizeof(size_t))
			return -ENOMEM;
		cap *= 2;
	}
	if (!ix && !(ix = p->index = calloc(1, sizeof(*ix))))
		return -ENOMEM;
	if (ix->cap != cap) {
		size_t *s = calloc(cap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		free(ix->slot);
		ix->slot = s;
		ix->cap = cap;
	} else {
		memset(ix->slot, 0, cap * sizeof(*ix->slot));
	}
	for (size_t i = 0; i < p->nlists; i++)
		*index_slot(p, p->lists[i].offset, p->lists[i].kind) = i + 1;
	return 0;
}

static int list_cmp(const struct val_hotlist *x, const struct val_hotlist *y)
{
	return dcpi_cmp_keys((uint64_t[]){ x->offset, x->kind },
			     (uint64_t[]){ y->offset, y->kind }, 2);
}

static int cmp_list(const void *a, const void *b)
{
	return list_cmp(a, b);
}

struct val_hotlist *val_profile_list(struct val_profile *p, uint64_t offset, uint32_t kind)
{
	struct val_index *ix = p->index;
	size_t *slot;

	if ((!ix || ix->cap < 2 * (p->nlists + 1)) && index_build(p, p->nlists + 1))
		return NULL;
	slot = index_slot(p, offset, kind);
	if (*slot)
		return &p->lists[*slot - 1];
	if (dcpi_grow((void **)&p->lists, &p->cap_lists, p->nlists + 1, sizeof(*p->lists)))
		return NULL;
	val_hotlist_init(&p->lists[p->nlists], offset, kind);
	if (p->new_mode == VAL_SPACESAVING)
		p->lists[p->nlists].mode = VAL_SPACESAVING;
	*slot = ++p->nlists;
	return &p->lists[p->nlists - 1];
}

const struct val_hotlist *val_profile_find(const struct val_profile *p, uint64_t offset,
					   uint32_t kind)
{
	struct val_hotlist key;
	size_t lo = 0, hi = p->nlists;

	if (p->index) {
		size_t s = *index_slot(p, offset, kind);

		return s ? &p->lists[s - 1] : NULL;
	}
	key.offset = offset;
	key.kind = kind;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (list_cmp(&p->lists[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nlists && !list_cmp(&p->lists[lo], &key))
		return &p->lists[lo];
	return NULL;
}

int val_profile_image_tag(struct val_profile *p, const struct prof_image_id *id)
{
	if (prof_image_id_equal(id, &p->image))
		return 0;
	for (size_t i = 0; i < p->nimages; i++)
		if (prof_image_id_equal(id, &p->images[i]))
			return (int)i + 1;
	if (p->nimages >= VAL_MAX_IMAGES)
		return -ENOSPC;
	if (dcpi_grow((void **)&p->images, &p->cap_images, p->nimages + 1, sizeof(*p->images)))
		return -ENOMEM;
	p->images[p->nimages++] = *id;
	return (int)p->nimages;
}

int val_profile_normalize(struct val_profile *p)
{
	dcpi_qsort(p->lists, p->nlists, sizeof(*p->lists), cmp_list);
	for (size_t i = 0; i < p->nlists; i++)
		val_hotlist_sort(&p->lists[i]);
	return p->index ? index_build(p, p->nlists) : 0;
}

/* src's image tags as dst's, into map[0..src->nimages]. */
static int tag_map(struct val_profile *dst, const struct val_profile *src, uint16_t *map)
{
	map[0] = 0;
	for (size_t i = 0; i < src->nimages; i++) {
		int t = val_profile_image_tag(dst, &src->images[i]);

		if (t < 0)
			return t;
		map[i + 1] = (uint16_t)t;
	}
	return 0;
}

static int remap(struct val_hotlist *h, const uint16_t *map, size_t nimages)
{
	if (!is_code_kind(h->kind))
		return 0;
	for (uint32_t i = 0; i < h->n; i++) {
		uint64_t v = h->t[i].value, tag = v >> VAL_TAG_SHIFT;

		if (v == VAL_CODE_NONE)
			continue;
		if (tag > nimages)
			return -EINVAL;
		h->t[i].value = VAL_CODE(map[tag], v);
	}
	return 0;
}

int val_profile_merge(struct val_profile *dst, const struct val_profile *src,
		      struct dcpi_err *err)
{
	uint16_t *map;
	int rc = 0;

	if (!prof_image_id_equal(&dst->image, &src->image))
		return dcpi_errf(err, -EINVAL, "%s: cannot merge values of different images "
				 "(%s)", dst->image.path, src->image.path);
	map = malloc((src->nimages + 1) * sizeof(*map));
	if (!map)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory merging values",
				 dst->image.path);
	rc = tag_map(dst, src, map);
	for (size_t i = 0; i < src->nlists && !rc; i++) {
		struct val_hotlist h = src->lists[i], *d;

		if (remap(&h, map, src->nimages)) {
			rc = dcpi_errf(err, -EINVAL, "%s: values at 0x%" PRIx64 " (%s) name an "
				       "image tag beyond the %zu of the table",
				       src->image.path, h.offset, val_kind_name((int)h.kind),
				       src->nimages);
			break;
		}
		d = val_profile_list(dst, h.offset, h.kind);
		if (!d)
			rc = -ENOMEM;
		else
			val_hotlist_merge(d, &h);
	}
	free(map);
	if (rc == -ENOMEM || rc == -ENOSPC)
		return dcpi_errf(err, rc, "%s: %s merging values", dst->image.path,
				 rc == -ENOMEM ? "out of memory" : "too many images");
	if (rc)
		return rc;
	dst->samples = dst->samples + src->samples < dst->samples ? UINT64_MAX
								  : dst->samples + src->samples;
	if (prof_image_id_cmp(&src->image, &dst->image) < 0)
		dst->image = src->image;
	rc = val_profile_normalize(dst);
	if (rc)
		return dcpi_errf(err, rc, "%s: out of memory merging values", dst->image.path);
	return 0;
}

/* --- bytes --------------------------------------------------------------- */

static uint64_t zigzag64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag64(uint64_t z)
{
	return (int64_t)((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
}

/* Image i of the table: valid, not the profile's own, not an earlier one. */
static const char *check_image(const struct val_profile *p, size_t i)
{
	const char *why = kind_check_id(&p->images[i]);

	if (why)
		return why;
	if (prof_image_id_equal(&p->images[i], &p->image))
		return "the profile's own image (tag 0)";
	for (size_t j = 0; j < i; j++)
		if (prof_image_id_equal(&p->images[i], &p->images[j]))
			return "the same image as an earlier one";
	return NULL;
}

/* One hotlist's fields, why it is invalid (into why[]) or NULL. */
static const char *check_list(const struct val_profile *p, const struct val_hotlist *h,
			      char *why, size_t len)
{
	if (h->kind < 1 || h->kind > VAL_KIND_MAX)
		snprintf(why, len, "kind %" PRIu32 " unknown (1..%d)", h->kind, VAL_KIND_MAX);
	else if (h->mode > VAL_SPACESAVING)
		snprintf(why, len, "mode %" PRIu32 " unknown (0 counting, 1 concise, "
			 "2 space-saving)", h->mode);
	else if (h->sat > VAL_SAT_MAX)
		snprintf(why, len, "SatCount %" PRIu32 " (at most %d)", h->sat, VAL_SAT_MAX);
	else if (h->n > VAL_N)
		snprintf(why, len, "%" PRIu32 " tuples (at most %d)", h->n, VAL_N);
	else if (!(h->p > 0 && h->p <= 1))
		snprintf(why, len, "probability %g outside (0, 1]", h->p);
	else
		why[0] = '\0';
	for (uint32_t i = 0; !why[0] && i < h->n; i++) {
		const struct val_tuple *t = &h->t[i];
		uint64_t tag = t->value >> VAL_TAG_SHIFT;

		if (!t->count)
			snprintf(why, len, "tuple %" PRIu32 ": zero count", i);
		else if (i && tuple_cmp(&h->t[i - 1], t) >= 0)
			snprintf(why, len, "tuple %" PRIu32 ": not sorted by count", i);
		for (uint32_t j = 0; !why[0] && j < i; j++)
			if (h->t[j].value == t->value)
				snprintf(why, len, "tuple %" PRIu32 ": value 0x%" PRIx64
					 " twice", i, t->value);
		if (!why[0] && is_code_kind(h->kind) && t->value != VAL_CODE_NONE &&
		    tag > p->nimages)
			snprintf(why, len, "tuple %" PRIu32 ": image tag %" PRIu64 " beyond the "
				 "%zu of the table", i, tag, p->nimages);
	}
	return why[0] ? why : NULL;
}

static const struct kind_field val_fields[] = {
	KIND_COUNT(val_profile, nimages, VOFF_NIMAGES, VAL_IMAGE_MIN, "images"),
	KIND_COUNT(val_profile, nlists, VOFF_NLISTS, VAL_LIST_MIN, "hotlists"),
	KIND_FIELD(val_profile, samples, VOFF_SAMPLES),
};
static const struct kind_str val_strs[] = {
	KIND_STR(val_profile, image.build_id), KIND_STR(val_profile, image.path),
};
PROF_KIND_FORMAT(val, val_profile, VAL_MAGIC, "a dcpi value profile",
		 "values", VAL_HDR_SIZE, VAL_VERSION, VOFF_ISIZE);

static size_t val_encoded_size(const struct val_profile *p)
{
	size_t size = kind_head_len(&val_format, p);
	uint64_t prev = 0;

	for (size_t i = 0; i < p->nimages; i++) {
		const struct prof_image_id *id = &p->images[i];

		size += kind_string_len(id->build_id) + kind_string_len(id->path) +
			varint_len(id->size) + varint_len(zigzag64(id->mtime));
	}
	for (size_t i = 0; i < p->nlists; i++) {
		const struct val_hotlist *h = &p->lists[i];

		size += varint_len(h->offset - prev) + 4 + 8 + varint_len(h->seen);
		for (uint32_t j = 0; j < h->n; j++)
			size += varint_len(h->t[j].value) + varint_len(h->t[j].count);
		prev = h->offset;
	}
	return size;
}

static void put_body(const struct val_profile *p, uint8_t *b, size_t pos)
{
	uint64_t prev = 0;

	for (size_t i = 0; i < p->nimages; i++) {
		const struct prof_image_id *id = &p->images[i];

		pos = kind_put_string(b, pos, id->build_id);
		pos = kind_put_string(b, pos, id->path);
		pos += dcpi_varint_put(b + pos, id->size);
		pos += dcpi_varint_put(b + pos, zigzag64(id->mtime));
	}
	for (size_t i = 0; i < p->nlists; i++) {
		const struct val_hotlist *h = &p->lists[i];

		pos += dcpi_varint_put(b + pos, h->offset - prev);
		b[pos++] = (uint8_t)h->kind;
		b[pos++] = (uint8_t)h->mode;
		b[pos++] = (uint8_t)h->sat;
		b[pos++] = (uint8_t)h->n;
		put64(b + pos, dbl_bits(h->p));
		pos += 8;
		pos += dcpi_varint_put(b + pos, h->seen);
		for (uint32_t j = 0; j < h->n; j++) {
			pos += dcpi_varint_put(b + pos, h->t[j].value);
			pos += dcpi_varint_put(b + pos, h->t[j].count);
		}
		prev = h->offset;
	}
}

/* Why p cannot be written (into why[]), or NULL. */
static const char *check_profile(const struct val_profile *p, char *why, size_t len)
{
	char w[160];
	const char *s = kind_check_id(&p->image);

	if (s)
		return s;
	if (p->nimages > VAL_MAX_IMAGES) {
		snprintf(why, len, "%zu images (at most %d)", p->nimages, VAL_MAX_IMAGES);
		return why;
	}
	for (size_t i = 0; i < p->nimages; i++)
		if ((s = check_image(p, i))) {
			snprintf(why, len, "image %zu (%.100s): %s", i + 1, p->images[i].path,
				 s);
			return why;
		}
	for (size_t i = 0; i < p->nlists; i++) {
		if (i && list_cmp(&p->lists[i - 1], &p->lists[i]) >= 0)
			s = "duplicate or not sorted (normalize first)";
		else
			s = check_list(p, &p->lists[i], w, sizeof(w));
		if (s) {
			snprintf(why, len, "hotlist %zu: %s", i, s);
			return why;
		}
	}
	return NULL;
}

int val_encode(const struct val_profile *p, uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	char w[256];
	const char *why = check_profile(p, w, sizeof(w));
	size_t size;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (why)
		return kind_cannot(&val_format, &p->image, why, err);
	size = val_encoded_size(p);
	if (kind_alloc(&val_format, &p->image, size, &b, err))
		return -ENOMEM;
	put_body(p, b, kind_put_fields(&val_format, p, b));
	return kind_sealed(b, size, buf, len);
}

static int decode_images(struct kind_cursor *c, uint64_t n, const char *name,
			 struct val_profile *p, struct dcpi_err *err)
{
	for (uint64_t i = 0; i < n; i++) {
		struct prof_image_id *id = &p->images[i];
		const char *why;
		uint64_t size, mt;

		memset(id, 0, sizeof(*id));
		if (!(why = kind_get_string(c, id->build_id, sizeof(id->build_id))) &&
		    !(why = kind_get_string(c, id->path, sizeof(id->path))) &&
		    (!kind_next(c, &size) || !kind_next(c, &mt)))
			why = "truncated or overlong varint";
		if (!why) {
			id->size = size;
			id->mtime = unzigzag64(mt);
			p->nimages = (size_t)i + 1;
			why = check_image(p, (size_t)i);
		}
		if (why)
			return dcpi_errf(err, -EINVAL, "%s: image %" PRIu64 ": %s", name, i + 1,
					 why);
	}
	return 0;
}

/* One hotlist's record into h; "" or what is wrong into why[]. */
static void decode_list(struct kind_cursor *c, uint64_t *off, struct val_hotlist *h,
			char *why, size_t len)
{
	uint64_t d, seen, v, cnt;

	memset(h, 0, sizeof(*h));
	why[0] = '\0';
	if (!kind_next(c, &d) || c->size - c->pos < 12) {
		snprintf(why, len, "truncated");
		return;
	}
	if (*off + d < *off) {
		snprintf(why, len, "offsets not sorted (wrap past 2^64)");
		return;
	}
	*off += d;
	h->offset = *off;
	h->kind = c->buf[c->pos];
	h->mode = c->buf[c->pos + 1];
	h->sat = c->buf[c->pos + 2];
	h->n = c->buf[c->pos + 3];
	h->p = bits_dbl(get64(c->buf + c->pos + 4));
	c->pos += 12;
	if (h->n > VAL_N) {	/* before reading tuples into t[] */
		snprintf(why, len, "%" PRIu32 " tuples (at most %d)", h->n, VAL_N);
		return;
	}
	if (!kind_next(c, &seen)) {
		snprintf(why, len, "truncated or overlong varint");
		return;
	}
	h->seen = seen;
	for (uint32_t i = 0; i < h->n; i++) {
		if (!kind_next(c, &v) || !kind_next(c, &cnt)) {
			snprintf(why, len, "tuple %" PRIu32 ": truncated or overlong varint", i);
			return;
		}
		h->t[i].value = v;
		h->t[i].count = cnt;
	}
}

static int decode_lists(struct kind_cursor *c, uint64_t n, const char *name,
			struct val_profile *p, struct dcpi_err *err)
{
	uint64_t off = 0;
	char why[200];

	for (uint64_t i = 0; i < n; i++) {
		struct val_hotlist *h = &p->lists[i];

		decode_list(c, &off, h, why, sizeof(why));
		if (!why[0] && i && list_cmp(&p->lists[i - 1], h) >= 0)
			snprintf(why, sizeof(why), "(0x%" PRIx64 ", kind %" PRIu32 ") duplicate "
				 "or not sorted", h->offset, h->kind);
		if (!why[0])
			check_list(p, h, why, sizeof(why));
		if (why[0])
			return dcpi_errf(err, -EINVAL, "%s: hotlist %" PRIu64 ": %s", name, i,
					 why);
		p->nlists = (size_t)i + 1;
	}
	if (c->pos != c->size)
		return dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after %" PRIu64
				 " hotlists", name, c->size - c->pos, n);
	return 0;
}

/* Allocate for the counts the header declares, bounded by the body. */
static int decode_body(struct kind_cursor *c, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct val_profile *p = v;
	uint64_t ni = get64(c->buf + VOFF_NIMAGES), nl = get64(c->buf + VOFF_NLISTS);
	int rc;

	if (ni > VAL_MAX_IMAGES)
		return dcpi_errf(err, -EINVAL, "%s: %" PRIu64 " images (at most %d)", name,
				 ni, VAL_MAX_IMAGES);
	rc = kind_counts_fit(&val_format, c, name, err);
	if (rc)
		return rc;
	if (ni && !(p->images = calloc((size_t)ni, sizeof(*p->images))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %" PRIu64 " images",
				 name, ni);
	p->cap_images = (size_t)ni;
	if (nl && !(p->lists = malloc((size_t)nl * sizeof(*p->lists))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %" PRIu64 " hotlists",
				 name, nl);
	p->cap_lists = (size_t)nl;
	rc = decode_images(c, ni, name, p, err);
	if (!rc)
		rc = decode_lists(c, nl, name, p, err);
	return rc;
}

/* The header holds nothing to check beyond the image (kind.c checks it);
 * decode_body checks the rest. */
static const char *check_head(const void *v)
{
	return NULL;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

/* A normalized copy of src (lists and images as they are). */
static int val_copy(struct val_profile *dst, const struct val_profile *src)
{
	kind_copy_head(&val_format, dst, src);
	if (src->nimages && !(dst->images = malloc(src->nimages * sizeof(*dst->images))))
		return -ENOMEM;
	dst->nimages = dst->cap_images = src->nimages;
	if (src->nimages)
		memcpy(dst->images, src->images, src->nimages * sizeof(*dst->images));
	if (src->nlists && !(dst->lists = malloc(src->nlists * sizeof(*dst->lists)))) {
		val_profile_free(dst);
		return -ENOMEM;
	}
	dst->nlists = dst->cap_lists = src->nlists;
	if (src->nlists)
		memcpy(dst->lists, src->lists, src->nlists * sizeof(*dst->lists));
	return val_profile_normalize(dst);
}

PROF_KIND_API(val, val_profile, ".values")
