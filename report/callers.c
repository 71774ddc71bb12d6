/*
 * report/callers.c - `dcpiprof --callers PROC` and `--callees PROC`
 * (include/dcpi/callgraph.h; docs/callgraph.md): the call-graph profiles
 * of an epoch, each stack's frames named by procedure, and PROC's
 * inclusive samples split by the procedure above it (its caller) or below
 * it (its callee).  A recursive PROC counts once per stack: at its
 * outermost frame, as gprof and perf's children mode do.
 *
 * Frames are symbolized through one opened image per identity (a small
 * cache; an image that does not open names its frames by offset).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"
#include "dcpi/image.h"
#include "dcpi/report.h"

/* --- loading -------------------------------------------------------------- */

/* p[0..*n) += q (ownership of q's profiles taken). */
static int merge_in(struct cg_profile **p, size_t *n, struct cg_profile *q, size_t nq,
		    struct dcpi_err *err)
{
	struct cg_profile *v;
	int rc = 0;

	for (size_t i = 0; i < nq && !rc; i++) {
		size_t k;

		for (k = 0; k < *n && !prof_image_id_equal(&(*p)[k].image, &q[i].image); k++)
			;
		if (k < *n) {
			rc = cg_profile_merge(&(*p)[k], &q[i], err);
			cg_profile_free(&q[i]);
			continue;
		}
		if (!(v = realloc(*p, (*n + 1) * sizeof(*v)))) {
			rc = dcpi_errf(err, -ENOMEM, "call graphs: out of memory");
			break;
		}
		*p = v;
		(*p)[(*n)++] = q[i];
		cg_profile_init(&q[i]);
	}
	cg_profiles_free(q, nq);
	return rc;
}

int rep_cg_load(struct prof_db *db, const char *used, struct cg_profile **out, size_t *n,
		struct dcpi_err *err)
{
	char **names = NULL;
	size_t nn = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (strcmp(used, "all"))
		return cg_epoch_read(db, used, out, n, err);
	rc = prof_db_epochs(db, &names, &nn, err);
	for (size_t i = 0; i < nn && !rc; i++) {
		struct cg_profile *q;
		size_t nq;

		rc = cg_epoch_read(db, names[i], &q, &nq, err);
		if (!rc)
			rc = merge_in(out, n, q, nq, err);
	}
	prof_names_free(names, nn);
	if (rc) {
		cg_profiles_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* --- symbols -------------------------------------------------------------- */

struct sym_img {
	const struct prof_image_id *id;
	struct image *img;		/* NULL: did not open */
	const struct img_proc *target;	/* PROC in it, or NULL */
};

struct syms {
	struct sym_img *v;
	size_t n, cap;
	const char *spec;
	int found;
};

static struct sym_img *sym_image(struct syms *s, const struct prof_image_id *id)
{
	struct sym_img *si;
	char want[PROF_PATH_MAX];
	const char *name;

	for (size_t i = 0; i < s->n; i++)
		if (prof_image_id_equal(s->v[i].id, id))
			return &s->v[i];
	if (dcpi_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return NULL;
	si = &s->v[s->n++];
	si->id = id;
	si->target = NULL;
	if (img_open(id->path, IMG_NO_DWARF, &si->img, NULL) < 0)
		si->img = NULL;
	if (si->img && (!img_spec_split(s->spec, want, sizeof(want), &name) ||
			img_spec_matches(si->img, want)) &&
	    img_proc_find(si->img, name, &si->target, NULL) < 0)
		si->target = NULL;
	s->found |= si->target != NULL;
	return si;
}

static void syms_free(struct syms *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].img)
			img_close(s->v[i].img);
	free(s->v);
}

static const struct img_proc *frame_proc(const struct sym_img *si, uint64_t off)
{
	uint64_t va;

	if (!si || !si->img || img_offset_to_vaddr(si->img, off, &va))
		return NULL;
	return img_proc_at(si->img, va);
}

/* --- the split ------------------------------------------------------------ */

static int add_row(struct cg_split *s, size_t *cap, const char *name, const char *image,
		   uint64_t count)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->rows[i].name, name) && !strcmp(s->rows[i].image, image)) {
			s->rows[i].samples += count;
			return 0;
		}
	if (dcpi_grow((void **)&s->rows, cap, s->n + 1, sizeof(*s->rows)))
		return -ENOMEM;
	snprintf(s->rows[s->n].name, sizeof(s->rows[s->n].name), "%s", name);
	snprintf(s->rows[s->n].image, sizeof(s->rows[s->n].image), "%s", image);
	s->rows[s->n++].samples = count;
	return 0;
}

/* The row of frame d of a stack of p (d out of the stack: none). */
static int add_frame(struct cg_split *s, size_t *cap, struct syms *sy,
		     const struct cg_profile *p, const struct cg_stack *st, long d, uint64_t c)
{
	const struct prof_image_id *id;
	const struct img_proc *pr;
	struct sym_img *si;
	char buf[64];

	if (d < 0 || d >= (long)st->depth)
		return add_row(s, cap, s->callees ? "[self]" : "[root]", "", c);
	id = cg_profile_image(p, p->f[st->first + d].tag);
	si = sym_image(sy, id);
	if (!si)
		return -ENOMEM;
	pr = frame_proc(si, p->f[st->first + d].offset);
	if (pr)
		return add_row(s, cap, pr->name, id->path, c);
	snprintf(buf, sizeof(buf), "+0x%" PRIx64, p->f[st->first + d].offset);
	return add_row(s, cap, buf, id->path, c);
}

/* The outermost frame of the stack in PROC, or -1. */
static long outermost(struct syms *sy, const struct cg_profile *p, const struct cg_stack *st,
		      int *oom)
{
	for (long d = (long)st->depth - 1; d >= 0; d--) {
		struct sym_img *si = sym_image(sy, cg_profile_image(p, p->f[st->first + d].tag));

		if (!si) {
			*oom = 1;
			return -1;
		}
		if (si->target && frame_proc(si, p->f[st->first + d].offset) == si->target)
			return d;
	}
	return -1;
}

static int by_samples(const void *x, const void *y)
{
	const struct cg_row *a = x, *b = y;

	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int split_profile(struct cg_split *s, size_t *cap, struct syms *sy,
			 const struct cg_profile *p)
{
	int oom = 0, ev = -1, rc = 0;

	for (size_t e = 0; e < p->nevents; e++)
		if (!strcmp(p->events[e], s->event))
			ev = (int)e;
	for (size_t i = 0; i < p->n && !rc && ev >= 0; i++) {
		const struct cg_stack *st = &p->s[i];
		long d;

		if (st->event != (uint32_t)ev)
			continue;
		s->all += st->count;
		d = outermost(sy, p, st, &oom);
		if (oom)
			return -ENOMEM;
		if (d < 0)
			continue;
		s->total += st->count;
		rc = add_frame(s, cap, sy, p, st, s->callees ? d - 1 : d + 1, st->count);
	}
	return rc;
}

static const char *first_event(const struct cg_profile *p, size_t n)
{
	const char *ev = NULL;

	for (size_t i = 0; i < n; i++)
		if (p[i].nevents && (!ev || strcmp(p[i].events[0], ev) < 0))
			ev = p[i].events[0];
	return ev;
}

int rep_cg_split(const struct cg_profile *p, size_t n, const char *proc, const char *event,
		 int callees, struct cg_split *out, struct dcpi_err *err)
{
	struct syms sy = { .spec = proc };
	size_t cap = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!event)
		event = first_event(p, n);
	if (!event)
		return dcpi_errf(err, -ENODATA, "no call graphs (record with -g)");
	snprintf(out->proc, sizeof(out->proc), "%s", proc);
	snprintf(out->event, sizeof(out->event), "%s", event);
	out->callees = callees;
	for (size_t i = 0; i < n && !rc; i++)
		rc = split_profile(out, &cap, &sy, &p[i]);
	if (rc)
		rc = dcpi_errf(err, rc, "call graphs: out of memory");
	else if (!sy.found)
		rc = dcpi_errf(err, -ENOENT, "%s: no procedure of that name in the images of the "
			       "call graphs", proc);
	syms_free(&sy);
	if (rc) {
		rep_cg_split_free(out);
		return rc;
	}
	qsort(out->rows, out->n, sizeof(*out->rows), by_samples);
	return 0;
}

void rep_cg_split_free(struct cg_split *s)
{
	free(s->rows);
	s->rows = NULL;
	s->n = 0;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void print_json(FILE *f, const struct cg_split *s)
{
	fprintf(f, "{\"procedure\":");
	rep_json_str(f, s->proc);
	fprintf(f, ",\"event\":");
	rep_json_str(f, s->event);
	fprintf(f, ",\"samples\":%" PRIu64 ",\"all_samples\":%" PRIu64 ",\"%s\":[",
		s->total, s->all, s->callees ? "callees" : "callers");
	for (size_t i = 0; i < s->n; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		rep_json_str(f, s->rows[i].name);
		fprintf(f, ",\"image\":");
		rep_json_str(f, s->rows[i].image);
		fprintf(f, ",\"samples\":%" PRIu64 ",\"share\":%.4f}", s->rows[i].samples,
			s->total ? (double)s->rows[i].samples / (double)s->total : 0);
	}
	fprintf(f, "]}\n");
}

void rep_cg_split_print(FILE *f, const struct cg_split *s, int json)
{
	if (json) {
		print_json(f, s);
		return;
	}
	fprintf(f, "%s of %s: %" PRIu64 " %s samples with it on the stack (%.1f%% of %" PRIu64
		")\n", s->callees ? "Callees" : "Callers", s->proc, s->total, s->event,
		pct(s->total, s->all), s->all);
	fprintf(f, "%10s %7s  %s\n", "samples", "share", s->callees ? "callee" : "caller");
	for (size_t i = 0; i < s->n; i++) {
		const char *img = strrchr(s->rows[i].image, '/');

		fprintf(f, "%10" PRIu64 " %6.1f%%  %s%s%s\n", s->rows[i].samples,
			pct(s->rows[i].samples, s->total), s->rows[i].name,
			s->rows[i].image[0] ? "  " : "", img ? img + 1 : s->rows[i].image);
	}
}

int rep_cg_callers(FILE *f, struct prof_db *db, const char *epoch, const char *proc,
		   const char *event, int callees, long limit, int json, struct dcpi_err *err)
{
	struct cg_profile *p;
	struct cg_split s;
	size_t n;
	int rc = rep_cg_load(db, epoch, &p, &n, err);

	if (!rc && !n)
		rc = dcpi_errf(err, -ENODATA, "%s: epoch %s holds no call graphs (record with -g)",
			       prof_db_path(db), epoch);
	if (!rc)
		rc = rep_cg_split(p, n, proc, event, callees, &s, err);
	if (!rc) {
		if (limit >= 0 && (size_t)limit < s.n)
			s.n = (size_t)limit;
		rep_cg_split_print(f, &s, json);
		rep_cg_split_free(&s);
	}
	cg_profiles_free(p, n);
	return rc;
}
