/*
 * values.c - what the value reports share (seed 000, "Reports"; docs/values.md,
 * "Invariance" and "Value reports"): an epoch's value profiles beside its
 * sample profiles, the images they name, and the invariance of each
 * (instruction, kind).  The four reports themselves are report/vreports.c.
 *
 * A value profile (dcpi/values.h) keeps per (file offset, kind) a hotlist of
 * at most VAL_N values with estimated counts.  Its invariance is the share of
 * its most frequent value (val_hotlist_share of the first tuple once sorted);
 * REP_VAL_INVARIANT and REP_VAL_SEMI_INVARIANT cut that into three classes.
 * What a specialization could save is bounded by the time the instruction
 * takes, so each list carries the instruction's samples from the epoch's
 * sample profile of the same image (the best-ranked event, rep_event_rank)
 * and those samples in cycles where the epoch says what a sample is worth
 * (est_cycles_per_sample); arguments and call sites carry their procedure's.
 *
 * Images are opened once per report and kept by path; one that cannot be
 * opened, or is no longer the profiled file, names nothing and says so in a
 * note of the database (the tools print them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "internal.h"

enum rep_val_class rep_val_classify(double top_share)
{
	if (top_share >= REP_VAL_INVARIANT)
		return REP_VAL_INV;
	if (top_share >= REP_VAL_SEMI_INVARIANT)
		return REP_VAL_SEMI;
	return REP_VAL_VARIANT;
}

const char *rep_val_class_name(enum rep_val_class c)
{
	static const char *const names[] = {
		[REP_VAL_VARIANT] = "variant",
		[REP_VAL_SEMI] = "semi-invariant",
		[REP_VAL_INV] = "invariant",
	};

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

struct prof_db *rep_vals_db(struct rep_vals *v)
{
	return v->db;
}

/* The event that weighs time: the best-ranked one of the epoch. */
static const char *pick_event(const struct prof_profile *p, size_t n)
{
	const char *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (!best || rep_event_rank(p[i].event) < rep_event_rank(best))
			best = p[i].event;
	return best;
}

/* Move src's value profiles into v, merging those of one image. */
static int merge_values(struct rep_vals *v, struct val_profile *src, size_t nsrc,
			struct dcpi_err *err)
{
	struct val_profile *all = realloc(v->vp, (v->nvp + nsrc) * sizeof(*all));
	int rc = 0;

	if (!all && v->nvp + nsrc) {
		val_profiles_free(src, nsrc);
		return dcpi_errf(err, -ENOMEM, "out of memory merging value profiles");
	}
	v->vp = all;
	for (size_t i = 0; i < nsrc; i++) {
		size_t k;

		for (k = 0; k < v->nvp; k++)
			if (prof_image_id_equal(&all[k].image, &src[i].image))
				break;
		if (k < v->nvp) {
			if (rc == 0)
				rc = val_profile_merge(&all[k], &src[i], err);
			val_profile_free(&src[i]);
		} else {
			all[v->nvp++] = src[i];
		}
	}
	free(src);
	return rc;
}

static int read_values(struct rep_vals *v, struct dcpi_err *err)
{
	char **names = NULL;
	size_t nnames = 0;
	int rc = 0;

	if (strcmp(v->epoch, "all")) {
		struct val_profile *p = NULL;
		size_t n = 0;

		rc = val_epoch_read(v->db, v->epoch, &p, &n, err);
		return rc < 0 ? rc : merge_values(v, p, n, err);
	}
	rc = prof_db_epochs(v->db, &names, &nnames, err);
	for (size_t i = 0; i < nnames && rc >= 0; i++) {
		struct val_profile *p = NULL;
		size_t n = 0;

		rc = val_epoch_read(v->db, names[i], &p, &n, err);
		if (rc >= 0)
			rc = merge_values(v, p, n, err);
	}
	prof_names_free(names, nnames);
	return rc;
}

static int any_lists(const struct rep_vals *v)
{
	for (size_t i = 0; i < v->nvp; i++)
		if (v->vp[i].nlists)
			return 1;
	return 0;
}

int rep_vals_open(const char *dbdir, const char *epoch, struct rep_vals **out,
		  struct dcpi_err *err)
{
	struct rep_vals *v = calloc(1, sizeof(*v));
	int rc;

	*out = NULL;
	if (!v)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	rc = prof_db_open(dbdir, 0, &v->db, err);
	if (rc >= 0)
		rc = rep_load_profiles(v->db, epoch, &v->p, &v->np, v->epoch, sizeof(v->epoch),
				       err);
	if (rc >= 0)
		rc = read_values(v, err);
	for (size_t i = 0; rc >= 0 && i < v->nvp; i++)
		rc = val_profile_normalize(&v->vp[i]);
	if (rc == -ENOMEM)
		dcpi_errf(err, rc, "out of memory sorting value profiles");
	if (rc >= 0 && !any_lists(v)) {
		const char *const *dmg;

		if (prof_db_damaged(v->db, &dmg))	/* skipped as damaged: say so */
			rc = dcpi_errf(err, -ENOENT, "no value samples in %s/%s but in %s, "
				       "skipped as damaged", prof_db_path(v->db), v->epoch,
				       dmg[0]);
		else
			rc = dcpi_errf(err, -ENOENT, "no value samples in %s/%s: record with "
				       "dcpi record --values", prof_db_path(v->db), v->epoch);
	}
	if (rc < 0) {
		rep_vals_close(v);
		return rc;
	}
	v->event = pick_event(v->p, v->np);
	v->have_meta = strcmp(v->epoch, "all") &&
		       prof_epoch_meta_read(v->db, v->epoch, &v->meta, NULL) == 0;
	*out = v;
	return 0;
}

void rep_vals_close(struct rep_vals *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nimgs; i++) {
		if (v->imgs[i].img)
			img_close(v->imgs[i].img);
		free(v->imgs[i].path);
	}
	free(v->imgs);
	val_profiles_free(v->vp, v->nvp);
	prof_profiles_free(v->p, v->np);
	if (v->db)
		prof_db_close(v->db);
	free(v);
}

struct image *rv_image(struct rep_vals *v, const struct prof_image_id *id)
{
	struct dcpi_err err = { 0 };
	struct rv_img *ni, *e;

	for (size_t i = 0; i < v->nimgs; i++)
		if (!strcmp(v->imgs[i].path, id->path))
			return v->imgs[i].img;
	ni = realloc(v->imgs, (v->nimgs + 1) * sizeof(*ni));
	if (!ni)
		return NULL;
	v->imgs = ni;
	e = &v->imgs[v->nimgs];
	e->img = NULL;
	e->path = strdup(id->path);
	if (!e->path)
		return NULL;
	v->nimgs++;
	if (id->path[0] == '[' || !id->path[0])
		return NULL;
	/* DWARF is read only when asked (img_params, for dcpivargs and specialize) */
	if (img_open(id->path, 0, &e->img, &err) < 0) {
		prof_db_note(v->db, "%s: its code values are not named", err.msg);
		return NULL;
	}
	if (!rep_still_profiled(id, e->img)) {
		prof_db_note(v->db, "%s: no longer the profiled image: its code values are not "
			     "named", id->path);
		img_close(e->img);
		e->img = NULL;
	}
	return e->img;
}

const struct prof_profile *rv_samples(const struct rep_vals *v, const struct prof_image_id *id)
{
	for (size_t i = 0; v->event && i < v->np; i++)
		if (!strcmp(v->p[i].event, v->event) && prof_image_id_equal(&v->p[i].image, id))
			return &v->p[i];
	return NULL;
}

void rv_image_ctx(struct rep_vals *v, const struct val_profile *vp, struct rv_ctx *c)
{
	c->v = v;
	c->vp = vp;
	c->img = rv_image(v, &vp->image);
	c->prof = rv_samples(v, &vp->image);
	c->cps = c->prof ? est_cycles_per_sample(c->prof, v->have_meta ? &v->meta : NULL) : 0;
}

/* Samples in [lo, hi) of the image's profile. */
void rv_time(const struct rv_ctx *c, uint64_t lo, uint64_t hi, struct rv_time *t)
{
	const struct prof_profile *p = c->prof;
	size_t a = 0, b = p ? p->n : 0;

	t->samples = 0;
	while (a < b) {			/* the first entry at lo or after */
		size_t m = a + (b - a) / 2;

		if (p->e[m].offset < lo)
			a = m + 1;
		else
			b = m;
	}
	for (; p && a < p->n && p->e[a].offset < hi; a++)
		t->samples += (double)p->e[a].count;
	t->cycles = t->samples * c->cps;
	t->have_cycles = c->cps > 0;
}

double rv_weight(const struct rv_time *t)
{
	return t->have_cycles ? t->cycles : t->samples;
}

/* The procedure holding file offset off, and off's virtual address. */
const struct img_proc *rv_proc_at(const struct rv_ctx *c, uint64_t off, uint64_t *vaddr)
{
	*vaddr = 0;
	if (!c->img || img_offset_to_vaddr(c->img, off, vaddr) < 0)
		return NULL;
	return img_proc_at(c->img, *vaddr);
}

/* The instruction at file offset off, decoded; -ENOENT when its bytes are
 * not in the image, -EINVAL when they do not decode. */
int rv_decode(const struct rv_ctx *c, uint64_t off, struct cfg_insn *in)
{
	const uint8_t *b;
	uint64_t va;
	size_t avail = 0;

	if (!c->img || img_offset_to_vaddr(c->img, off, &va) < 0 ||
	    !(b = img_bytes(c->img, va, &avail)) || !avail)
		return -ENOENT;
	return cfg_decode_one(b, avail < 15 ? avail : 15, va, in);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* "name+0x12" of off in img, else "image+0xOFF" (a file offset). */
static void place_text(const struct rv_ctx *c, struct image *img, const char *path,
		       uint64_t off, char *buf, size_t len)
{
	const struct img_proc *p = NULL;
	uint64_t va = 0;

	if (img && img_offset_to_vaddr(img, off, &va) == 0)
		p = img_proc_at(img, va);
	if (p && va == p->addr)
		snprintf(buf, len, "%s", p->name);
	else if (p)
		snprintf(buf, len, "%s+0x%" PRIx64, p->name, va - p->addr);
	else
		snprintf(buf, len, "[%s]+0x%" PRIx64, base_name(path), off);
	(void)c;
}

void rv_place(const struct rv_ctx *c, uint64_t off, char *buf, size_t len)
{
	place_text(c, c->img, c->vp->image.path, off, buf, len);
}

/* A tagged code value: "proc+0x12", and " (image)" when another image's. */
const char *rv_code_text(const struct rv_ctx *c, uint64_t v, char *buf, size_t len)
{
	uint64_t tag = v >> VAL_TAG_SHIFT, off = v & VAL_OFFSET_MASK;
	const struct prof_image_id *id;
	size_t k;

	if (v == VAL_CODE_NONE) {
		snprintf(buf, len, "[no image]");
		return NULL;
	}
	if (tag > c->vp->nimages) {
		snprintf(buf, len, "[bad image tag %" PRIu64 "]+0x%" PRIx64, tag, off);
		return NULL;
	}
	id = tag ? &c->vp->images[tag - 1] : &c->vp->image;
	place_text(c, tag ? rv_image(c->v, id) : c->img, id->path, off, buf, len);
	k = strlen(buf);
	if (tag && k < len)
		snprintf(buf + k, len - k, " (%s)", base_name(id->path));
	return id->path;
}

#define RV_DECIMAL_MAX 0x400000

/* How a value of this kind reads; the image path for code values. */
const char *rv_value_text(const struct rv_ctx *c, uint32_t kind, uint64_t v, char *buf,
			  size_t len)
{
	static const char *const levels[] = { "L1", "L2", "L3", "DRAM" };
	int64_t s = (int64_t)v;

	switch (kind) {
	case VAL_TARGET:
	case VAL_CALLSITE:
		return rv_code_text(c, v, buf, len);
	case VAL_BRANCH:
		snprintf(buf, len, "%s", v == 1 ? "taken" : v == 0 ? "not taken" : "?");
		break;
	case VAL_LATENCY:
		snprintf(buf, len, "%s", v < VAL_NLEVELS ? levels[v] : "?");
		break;
	case VAL_STRIDE:
		snprintf(buf, len, "%+" PRId64, s);
		break;
	case VAL_ADDR:
		snprintf(buf, len, "0x%" PRIx64, v);
		break;
	default:	/* numbers below the lowest usual mapping (a non-PIE
			 * executable's 0x400000) as numbers, the rest in hex */
		if (s > -RV_DECIMAL_MAX && s < RV_DECIMAL_MAX)
			snprintf(buf, len, "%" PRId64, s);
		else
			snprintf(buf, len, "0x%" PRIx64, v);
	}
	return NULL;
}

double rv_top_share(const struct val_hotlist *h)
{
	return h->n ? val_hotlist_share(h, 0) : 0;
}

/* {"value": "0x..", "text": .., "share": .., "count": ..} */
void rv_value_json(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, uint32_t i)
{
	char text[512];
	const char *path = rv_value_text(c, h->kind, h->t[i].value, text, sizeof(text));

	fprintf(f, "{\"value\": \"0x%" PRIx64 "\", \"text\": ", h->t[i].value);
	rep_json_str(f, text);
	if (h->kind == VAL_TARGET || h->kind == VAL_CALLSITE) {
		fprintf(f, ", \"image\": ");
		rep_json_str_or_null(f, path);
	}
	fprintf(f, ", \"share\": %.6g, \"count\": %.6g}", val_hotlist_share(h, i),
		val_hotlist_estimate(h, i));
}

/* The invariance fields of a list, then its top values. */
void rv_list_json(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, size_t top)
{
	double share = rv_top_share(h);

	fprintf(f, "\"kind\": ");
	rep_json_str(f, val_kind_name((int)h->kind) ? val_kind_name((int)h->kind) : "?");
	fprintf(f, ", \"seen\": %" PRIu64 ", \"distinct\": %" PRIu32 ", \"top_share\": %.6g, "
		"\"class\": \"%s\", \"values\": [", h->seen, h->n, share,
		rep_val_class_name(rep_val_classify(share)));
	for (uint32_t i = 0; i < h->n && i < top; i++) {
		fprintf(f, i ? ", " : "");
		rv_value_json(f, c, h, i);
	}
	fprintf(f, "]");
}

/* "5 (90.0%), 7 (5.0%)": the first top values. */
void rv_list_text(FILE *f, const struct rv_ctx *c, const struct val_hotlist *h, size_t top)
{
	for (uint32_t i = 0; i < h->n && i < top; i++) {
		char text[512];

		rv_value_text(c, h->kind, h->t[i].value, text, sizeof(text));
		fprintf(f, "%s%s (%.1f%%)", i ? ", " : "", text, 100 * val_hotlist_share(h, i));
	}
	if (h->n > top)
		fprintf(f, ", ...");
}

/* The procedure spec names, among the images with value profiles. */
int rv_find_proc(struct rep_vals *v, const char *spec, size_t *which,
		 const struct img_proc **proc, struct dcpi_err *err)
{
	char list[1024] = "";
	size_t nfound = 0, len = 0;

	*proc = NULL;
	for (size_t i = 0; i < v->nvp; i++) {
		struct image *img = rv_image(v, &v->vp[i].image);
		const struct img_proc *q = NULL;
		int rc;

		if (!img || !v->vp[i].nlists)
			continue;
		rc = img_proc_find(img, spec, &q, err);
		if (rc == -EEXIST)
			return rc;
		if (rc < 0)
			continue;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						nfound ? ", " : "", img_path(img));
		if (nfound++ == 0) {
			*which = i;
			*proc = q;
		}
	}
	if (nfound > 1)
		return dcpi_errf(err, -EEXIST, "%s: in several images (%s): name it IMAGE:%s",
				 spec, list, spec);
	if (!nfound)
		return dcpi_errf(err, -ENOENT, "%s: in none of the images with value samples "
				 "in epoch %s", spec, v->epoch);
	dcpi_err_clear(err);
	return 0;
}

/* File offsets [lo, hi) of a procedure. */
int rv_proc_range(const struct rv_ctx *c, const struct img_proc *p, uint64_t *lo,
		  uint64_t *hi)
{
	if (!c->img || img_vaddr_to_offset(c->img, p->addr, lo) < 0)
		return -ENOENT;
	*hi = *lo + p->size;
	return 0;
}

int rv_find_proc_range(struct rep_vals *v, const char *spec, size_t *which,
		       const struct img_proc **proc, struct rv_ctx *c, uint64_t *lo,
		       uint64_t *hi, struct dcpi_err *err)
{
	int rc = rv_find_proc(v, spec, which, proc, err);

	if (rc < 0)
		return rc;
	rv_image_ctx(v, &v->vp[*which], c);
	if (rv_proc_range(c, *proc, lo, hi) < 0)
		return dcpi_errf(err, -ENOENT, "%s: not in a loadable segment of %s",
				 (*proc)->name, c->vp->image.path);
	return 0;
}

/* The header every report's JSON opens with. */
void rv_json_head(FILE *f, const struct rep_vals *v)
{
	fprintf(f, "{\"epoch\": ");
	rep_json_str(f, v->epoch);
	fprintf(f, ", \"event\": ");
	rep_json_str_or_null(f, v->event);
	fprintf(f, ", \"invariant\": %g, \"semi_invariant\": %g", REP_VAL_INVARIANT,
		REP_VAL_SEMI_INVARIANT);
}
