/*
 * summary.c - samples per procedure or per image (dcpiprof; DCPI sec. 3.1).
 *
 * Every profile names its image by identity and its samples by file offset.
 * Each image is opened once, checked against the identity that was profiled
 * (a rebuilt binary must not lend its symbols to an old profile), and each
 * offset is mapped to a virtual address and then to the procedure containing
 * it.  Counts accumulate in one array per image, slot i for procedure i and a
 * last slot for offsets in no procedure, one column per event.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/image.h"
#include "dcpi/report.h"
#include "internal.h"

struct rep_image {
	const struct prof_image_id *id;
	struct image *img;	/* NULL when unavailable */
	struct ksyms jit;	/* a perf map's symbols (img then NULL) */
	char *why;		/* reason it is unavailable */
	size_t nslots;		/* procedures + 1 */
	uint64_t *counts;	/* nslots x nevents */
};

struct rep_state {
	struct rep_table *t;
	struct rep_image *imgs;
	size_t nimgs;
};

static int add_note(struct rep_table *t, const char *msg)
{
	char **n = realloc(t->notes, (t->nnotes + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	t->notes = n;
	n[t->nnotes] = strdup(msg);
	if (!n[t->nnotes])
		return -ENOMEM;
	t->nnotes++;
	return 0;
}

/* Does the file at id->path still hold the image that was profiled? */
static const char *image_mismatch(const struct prof_image_id *id, struct image *img)
{
	struct stat st;

	if (id->build_id[0])
		return strcmp(id->build_id, img_build_id(img)) ? "build-id differs" : NULL;
	if (stat(id->path, &st) < 0)
		return "cannot stat";
	if ((uint64_t)st.st_size != id->size || (int64_t)st.st_mtime != id->mtime)
		return "size or mtime differs";
	return NULL;
}

static int event_index_add(struct rep_table *t, const struct prof_profile *p)
{
	struct rep_event *ev;
	int i = rep_event_index(t, p->event);

	if (i >= 0) {
		ev = &t->events[i];
		ev->total += p->total;
		return i;
	}
	ev = realloc(t->events, (t->nevents + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	t->events = ev;
	ev = &t->events[t->nevents];
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "%s", p->event);
	snprintf(ev->period_unit, sizeof(ev->period_unit), "%s", p->period_unit);
	ev->period = p->period;
	ev->total = p->total;
	return (int)t->nevents++;
}

static int same_image(const struct prof_image_id *a, const struct prof_image_id *b)
{
	return !strcmp(a->path, b->path) && !strcmp(a->build_id, b->build_id);
}

static struct rep_image *image_find(struct rep_state *s, const struct prof_image_id *id,
				    struct dcpi_err *err)
{
	struct rep_image *ri;
	struct dcpi_err ierr = { 0 };
	const char *bad;
	char buf[PROF_PATH_MAX + 64];
	int rc;

	for (size_t i = 0; i < s->nimgs; i++)
		if (same_image(s->imgs[i].id, id))
			return &s->imgs[i];
	ri = realloc(s->imgs, (s->nimgs + 1) * sizeof(*ri));
	if (!ri)
		goto nomem;
	s->imgs = ri;
	ri = &s->imgs[s->nimgs++];
	memset(ri, 0, sizeof(*ri));
	ri->id = id;
	ri->nslots = 1;
	if (rep_is_jitmap_path(id->path) || rep_is_kernel_path(id->path)) {
		rc = rep_is_kernel_path(id->path) ? rep_kernel_syms_load(&ri->jit, &ierr) :
		     rep_jitmap_load(id->path, &ri->jit, &ierr);
		if (rc < 0 &&
		    (!(ri->why = strdup(ierr.msg)) || add_note(s->t, ri->why) < 0))
			goto nomem;
		ri->nslots = ri->jit.n + 1;
	/* "[unknown]", "[vdso]": no file to open */
	} else if (id->path[0] != '[') {
		rc = img_open(id->path, IMG_NO_DWARF, &ri->img, &ierr);
		if (rc < 0) {
			ri->img = NULL;
			ri->why = strdup(ierr.msg);
		} else if ((bad = image_mismatch(id, ri->img))) {
			img_close(ri->img);
			ri->img = NULL;
			snprintf(buf, sizeof(buf), "%s: not the profiled image any more (%s)",
				 id->path, bad);
			ri->why = strdup(buf);
		}
		if (!ri->img && (!ri->why || add_note(s->t, ri->why) < 0))
			goto nomem;
		if (ri->img)
			ri->nslots = img_nprocs(ri->img) + 1;
	}
	return ri;
nomem:
	dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	return NULL;
}

/* Grow every image's count array to nevents columns. */
static int widen_counts(struct rep_state *s, size_t old, size_t nev)
{
	for (size_t i = 0; i < s->nimgs; i++) {
		struct rep_image *ri = &s->imgs[i];
		uint64_t *c = calloc(ri->nslots * nev, sizeof(*c));

		if (!c)
			return -ENOMEM;
		for (size_t k = 0; ri->counts && k < ri->nslots; k++)
			memcpy(&c[k * nev], &ri->counts[k * old], old * sizeof(*c));
		free(ri->counts);
		ri->counts = c;
	}
	return 0;
}

static size_t slot_of(const struct rep_image *ri, uint64_t offset)
{
	const struct img_proc *pr;
	uint64_t va;

	if (ri->jit.n) {
		long k = ksyms_find(&ri->jit, offset);	/* offset: raw pc */

		return k < 0 ? ri->nslots - 1 : (size_t)k;
	}
	if (!ri->img || img_offset_to_vaddr(ri->img, offset, &va) < 0)
		return ri->nslots - 1;
	pr = img_proc_at(ri->img, va);
	if (!pr)
		return ri->nslots - 1;
	return (size_t)(pr - img_proc(ri->img, 0));
}

static int add_profile(struct rep_state *s, const struct prof_profile *p, struct dcpi_err *err)
{
	struct rep_table *t = s->t;
	size_t old = t->nevents;
	struct rep_image *ri;
	int ev;

	/* a counted block's executions are not a procedure's (its calls are):
	 * dcpicalc reads them, the tables do not add them up */
	if (!strcmp(p->event, PROF_EVENT_EXECS))
		return 0;
	ev = event_index_add(t, p);
	if (ev < 0)
		return dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	ri = image_find(s, &p->image, err);
	if (!ri)
		return -ENOMEM;
	if (t->nevents != old) {
		if (widen_counts(s, old, t->nevents) < 0)
			return dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	} else if (!ri->counts) {
		ri->counts = calloc(ri->nslots * t->nevents, sizeof(uint64_t));
		if (!ri->counts)
			return dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	}
	for (size_t i = 0; i < p->n; i++)
		ri->counts[slot_of(ri, p->e[i].offset) * t->nevents + ev] += p->e[i].count;
	return 0;
}

static int row_add(struct rep_table *t, const char *name, const char *image, uint64_t addr,
		   const uint64_t *samples)
{
	struct rep_row *r = realloc(t->rows, (t->nrows + 1) * sizeof(*r));

	if (!r)
		return -ENOMEM;
	t->rows = r;
	r = &t->rows[t->nrows];
	r->name = strdup(name);
	r->image = strdup(image);
	r->addr = addr;
	r->samples = malloc(t->nevents * sizeof(uint64_t));
	if (!r->name || !r->image || !r->samples) {
		free(r->name);
		free(r->image);
		free(r->samples);
		return -ENOMEM;
	}
	memcpy(r->samples, samples, t->nevents * sizeof(uint64_t));
	t->nrows++;
	return 0;
}

static int nonzero(const uint64_t *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 1;
	return 0;
}

static int rows_of_image(struct rep_table *t, const struct rep_image *ri, int by_image)
{
	size_t nev = t->nevents;
	const char *path = ri->id->path;
	uint64_t *sum;
	int rc = 0;

	if (by_image) {
		sum = calloc(nev, sizeof(*sum));
		if (!sum)
			return -ENOMEM;
		for (size_t k = 0; k < ri->nslots; k++)
			for (size_t e = 0; e < nev; e++)
				sum[e] += ri->counts[k * nev + e];
		if (nonzero(sum, nev))
			rc = row_add(t, path, path, 0, sum);
		free(sum);
		return rc;
	}
	for (size_t k = 0; k < ri->nslots && rc == 0; k++) {
		const uint64_t *c = &ri->counts[k * nev];
		const struct img_proc *pr;

		if (!nonzero(c, nev))
			continue;
		if (k + 1 < ri->nslots && ri->jit.n) {
			rc = row_add(t, ri->jit.e[k].name, path, ri->jit.e[k].start, c);
		} else if (k + 1 < ri->nslots) {
			pr = img_proc(ri->img, k);
			rc = row_add(t, pr->name, path, pr->addr, c);
		} else {
			rc = row_add(t, ri->img || ri->jit.n ? "[unknown]" : ri->why ?
				     "[image unavailable]" : path, path, 0, c);
		}
	}
	return rc;
}

/* Time first, as DCPI's cycles column: cycles, cpu-clock, task-clock, rest. */
int rep_event_rank(const char *ev)
{
	static const char *const first[] = { "cycles", "cpu-clock", "task-clock" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(ev, first[i]))
			return i;
	return 3;
}

static int profile_cmp(const void *a, const void *b)
{
	const struct prof_profile *x = *(const struct prof_profile *const *)a;
	const struct prof_profile *y = *(const struct prof_profile *const *)b;
	int rx = rep_event_rank(x->event), ry = rep_event_rank(y->event);

	return rx != ry ? rx - ry : strcmp(x->event, y->event);
}

int rep_summarize(const struct prof_profile *p, size_t n, int by_image,
		  struct rep_table *out, struct dcpi_err *err)
{
	struct rep_state s = { .t = out };
	const struct prof_profile **order;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	for (size_t i = 0; i < n; i++)
		order[i] = &p[i];
	dcpi_qsort(order, n, sizeof(*order), profile_cmp);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = add_profile(&s, order[i], err);
	free(order);
	for (size_t i = 0; i < s.nimgs && rc == 0; i++)
		if (rows_of_image(out, &s.imgs[i], by_image) < 0)
			rc = dcpi_errf(err, -ENOMEM, "out of memory summarizing profiles");
	for (size_t i = 0; i < s.nimgs; i++) {
		if (s.imgs[i].img)
			img_close(s.imgs[i].img);
		ksyms_free(&s.imgs[i].jit);
		free(s.imgs[i].why);
		free(s.imgs[i].counts);
	}
	free(s.imgs);
	if (rc == 0 && out->nevents)
		rep_sort(out, 0);
	if (rc < 0)
		rep_free(out);
	return rc;
}

static size_t sort_ev;

static int row_cmp(const void *a, const void *b)
{
	const struct rep_row *x = a, *y = b;
	int c;

	if (x->samples[sort_ev] != y->samples[sort_ev])
		return x->samples[sort_ev] > y->samples[sort_ev] ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->image, y->image);
}

void rep_sort(struct rep_table *t, size_t ev)
{
	if (ev >= t->nevents)
		return;
	sort_ev = ev;
	dcpi_qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
}

int rep_event_index(const struct rep_table *t, const char *name)
{
	for (size_t i = 0; i < t->nevents; i++)
		if (!strcmp(t->events[i].name, name))
			return (int)i;
	return -1;
}

void rep_free(struct rep_table *t)
{
	for (size_t i = 0; i < t->nrows; i++) {
		free(t->rows[i].name);
		free(t->rows[i].image);
		free(t->rows[i].samples);
	}
	for (size_t i = 0; i < t->nnotes; i++)
		free(t->notes[i]);
	free(t->rows);
	free(t->notes);
	free(t->events);
	memset(t, 0, sizeof(*t));
}
