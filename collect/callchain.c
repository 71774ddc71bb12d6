/*
 * collect/callchain.c - the collector's stack table (include/dcpi/
 * callgraph.h; docs/callgraph.md): every sample's user call chain, placed
 * in images at the time of the sample, counted per distinct (event,
 * stack), and flushed as one call-graph profile per leaf image.
 *
 * A chain from the kernel (PERF_SAMPLE_CALLCHAIN) is a list of addresses,
 * the sampled pc first, with markers >= PERF_CONTEXT_MAX saying whose the
 * following addresses are (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, ...).
 * Only user addresses are kept: the first is the leaf, the rest are return
 * addresses, stored minus one so that each falls inside its call (a call
 * that ends a procedure returns to the next one's first byte).  Frame
 * pointers give the chain: a sample in a prologue, before the frame is
 * set up, misses its procedure's caller, as perf's does.
 *
 * Stacks are hashed (open addressing over an index array) into a pool of
 * frames, so a hot stack costs a lookup, not an allocation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

#include "dcpi/callgraph.h"
#include "dcpi/collect.h"
#include "slots.h"

struct cc_frame {
	uint32_t image;		/* maps' image index */
	uint64_t offset;
};

struct cc_entry {
	uint64_t hash, count;
	uint32_t event, depth;
	size_t first;
};

struct cg_table {
	struct cc_entry *e;
	size_t n, cap;
	uint32_t *slot;		/* entry index + 1, 0 = free */
	size_t nslot;		/* a power of two, at least twice n */
	struct cc_frame *f;
	size_t nf, capf;
	uint64_t samples, no_user, cut;
};

int cg_table_new(struct cg_table **t, struct dcpi_err *err)
{
	*t = calloc(1, sizeof(**t));
	if (!*t)
		return dcpi_errf(err, -ENOMEM, "stack table: out of memory");
	return 0;
}

void cg_table_free(struct cg_table *t)
{
	if (!t)
		return;
	free(t->e);
	free(t->slot);
	free(t->f);
	free(t);
}

void cg_table_stats(const struct cg_table *t, struct cg_table_stats *st)
{
	st->samples = t->samples;
	st->stacks = t->n;
	st->no_user = t->no_user;
	st->cut = t->cut;
}

static uint64_t stack_hash(unsigned event, const struct cc_frame *f, uint32_t depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ event;

	for (uint32_t i = 0; i < depth; i++) {
		h ^= f[i].offset + ((uint64_t)f[i].image << 40);
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return h;
}

static uint64_t entry_hash(const void *t, size_t i)
{
	return ((const struct cg_table *)t)->e[i].hash;
}

static int rehash(struct cg_table *t)
{
	return slots_grow(&t->slot, &t->nslot, 1024, 0, t->n, entry_hash, t);
}

static int same(const struct cg_table *t, const struct cc_entry *e, unsigned event,
		const struct cc_frame *f, uint32_t depth)
{
	return e->event == event && e->depth == depth &&
	       !memcmp(t->f + e->first, f, depth * sizeof(*f));
}

static int count_stack(struct cg_table *t, unsigned event, const struct cc_frame *f,
		       uint32_t depth)
{
	uint64_t h = stack_hash(event, f, depth);
	size_t k;

	if (2 * (t->n + 1) > t->nslot && rehash(t))
		return -ENOMEM;
	for (k = h & (t->nslot - 1); t->slot[k]; k = (k + 1) & (t->nslot - 1)) {
		struct cc_entry *e = &t->e[t->slot[k] - 1];

		if (e->hash == h && same(t, e, event, f, depth)) {
			e->count++;
			return 0;
		}
	}
	if (t->n >= UINT32_MAX - 1 ||
	    dcpi_grow((void **)&t->e, &t->cap, t->n + 1, sizeof(*t->e)) ||
	    dcpi_grow((void **)&t->f, &t->capf, t->nf + depth, sizeof(*t->f)))
		return -ENOMEM;
	memcpy(t->f + t->nf, f, depth * sizeof(*f));
	t->e[t->n] = (struct cc_entry){ h, 1, event, depth, t->nf };
	t->nf += depth;
	t->slot[k] = (uint32_t)++t->n;
	return 0;
}

int cg_table_add(struct cg_table *t, struct maps *m, uint32_t pid, unsigned event,
		 const uint8_t *chain, uint64_t nr, struct dcpi_err *err)
{
	struct cc_frame f[CG_DEPTH_MAX];
	uint32_t depth = 0;
	int user = 0, rc;

	t->samples++;
	for (uint64_t i = 0; i < nr && depth < CG_DEPTH_MAX; i++) {
		uint64_t a = dcpi_get_le64(chain + 8 * i);

		if (a >= (uint64_t)PERF_CONTEXT_MAX) {
			user = a == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (!user || a >> 63)
			continue;
		rc = maps_resolve(m, pid, depth ? a - 1 : a, &f[depth].image, &f[depth].offset,
				  err);
		if (rc)
			return rc;
		if (f[depth].image == MAPS_UNKNOWN) {
			t->cut += depth > 0;
			break;
		}
		depth++;
	}
	if (!depth) {
		t->no_user++;
		return 0;
	}
	if (count_stack(t, event, f, depth))
		return dcpi_errf(err, -ENOMEM, "stack table: out of memory");
	return 0;
}

void cg_table_clear(struct cg_table *t)
{
	t->n = t->nf = 0;
	if (t->slot)
		memset(t->slot, 0, t->nslot * sizeof(*t->slot));
}

static int by_leaf(const void *x, const void *y, void *arg)
{
	const struct cg_table *t = arg;
	uint32_t a = t->f[t->e[*(const size_t *)x].first].image;
	uint32_t b = t->f[t->e[*(const size_t *)y].first].image;

	return a < b ? -1 : a > b;
}

/* One entry into p (the profile of its leaf's image). */
static int entry_into(const struct cg_table *t, cg_image_fn image_id, void *ctx,
		      const struct cc_entry *e, int event, struct cg_profile *p)
{
	struct cg_frame fr[CG_DEPTH_MAX];
	int tag;

	for (uint32_t d = 0; d < e->depth; d++) {
		const struct cc_frame *c = &t->f[e->first + d];

		tag = cg_profile_tag(p, image_id(ctx, c->image));
		if (tag < 0)
			return tag;
		fr[d] = (struct cg_frame){ (uint32_t)tag, c->offset };
	}
	return cg_profile_add(p, (uint32_t)event, fr, e->depth, e->count);
}

/* The entries ord[lo..hi), all of one leaf image, as one profile. */
static int flush_image(const struct cg_table *t, cg_image_fn image_id, void *ctx,
		       const size_t *ord, size_t lo, size_t hi, const char *const *events,
		       unsigned nevents, struct prof_db *db, const char *epoch,
		       struct dcpi_err *err)
{
	struct cg_profile p;
	int ev[CG_EVENTS_MAX];
	int rc = 0;

	cg_profile_init(&p);
	p.image = *image_id(ctx, t->f[t->e[ord[lo]].first].image);
	for (unsigned i = 0; i < nevents && i < CG_EVENTS_MAX && !rc; i++)
		if ((ev[i] = cg_profile_event(&p, events[i])) < 0)
			rc = ev[i];
	for (size_t i = lo; i < hi && !rc; i++) {
		if (t->e[ord[i]].event >= nevents || t->e[ord[i]].event >= CG_EVENTS_MAX)
			continue;
		rc = entry_into(t, image_id, ctx, &t->e[ord[i]], ev[t->e[ord[i]].event], &p);
	}
	if (!rc)
		rc = cg_normalize(&p);
	if (rc)
		rc = dcpi_errf(err, rc, "%s: call-graph profile: %s", p.image.path,
			       strerror(-rc));
	else if (p.n)
		rc = cg_epoch_write(db, epoch, &p, err);
	cg_profile_free(&p);
	return rc;
}

int cg_table_flush(struct cg_table *t, cg_image_fn image_id, void *ctx,
		   const char *const *events, unsigned nevents, struct prof_db *db,
		   const char *epoch, struct dcpi_err *err)
{
	size_t *ord, lo = 0;
	int rc = 0;

	if (!t->n)
		return 0;
	if (!(ord = malloc(t->n * sizeof(*ord))))
		return dcpi_errf(err, -ENOMEM, "stack table: out of memory");
	for (size_t i = 0; i < t->n; i++)
		ord[i] = i;
	qsort_r(ord, t->n, sizeof(*ord), by_leaf, t);
	while (lo < t->n && !rc) {
		size_t hi = lo + 1;

		while (hi < t->n && !by_leaf(&ord[lo], &ord[hi], t))
			hi++;
		rc = flush_image(t, image_id, ctx, ord, lo, hi, events, nevents, db, epoch, err);
		lo = hi;
	}
	free(ord);
	return rc;
}
