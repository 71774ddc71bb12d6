/*
 * feedback.c - one request, one feedback file: the profiles of an epoch,
 * the images asked for (or the most sampled one), the estimation settings of
 * the database (cycles per sample from the epoch's calibration, where
 * samples land from DB/calibration-<model>.txt), and the writer of the
 * format.  The tools (llvm-prof, gcc-prof, bolt-prof) parse options and call
 * opt_feedback; nothing here prints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

const char *opt_format_name(enum opt_format f)
{
	switch (f) {
	case OPT_F_LLVM: return "LLVM sample profile";
	case OPT_F_GCC: return "GCC AutoFDO profile";
	case OPT_F_BOLT: return "BOLT fdata";
	case OPT_F_PREFETCH: return "LLVM prefetch hints";
	}
	return "?";
}

static int event_rank(const char *ev)
{
	static const char *const order[] = { "cycles", "cpu-clock", "task-clock" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(ev, order[i]))
			return i;
	return 3;
}

struct fb {
	const struct opt_request *rq;
	struct opt_summary *sum;
	struct prof_db *db;
	struct prof_profile *p;
	size_t np;
	const char *event;
	struct est_input in;		/* the analysis of every procedure */
	int in_open;
	struct opt_est est;
};

void opt_summary_free(struct opt_summary *sum)
{
	free(sum->hints.v);
	memset(&sum->hints, 0, sizeof(sum->hints));
}

static int load(struct fb *f, struct dcpi_err *err)
{
	const struct opt_request *rq = f->rq;
	const char *notes;
	char epoch[256];
	int rc;

	rc = prof_db_open(rq->db, 0, &f->db, err);
	if (rc < 0)
		return rc;
	if (rq->epoch)
		snprintf(epoch, sizeof(epoch), "%s", rq->epoch);
	else if ((rc = prof_db_latest_epoch(f->db, epoch, sizeof(epoch), err)) < 0)
		return rc == -ENOENT ? dcpi_errf(err, -ENODATA, "%s: no epochs", rq->db) : rc;
	snprintf(f->sum->epoch, sizeof(f->sum->epoch), "%s", epoch);
	rc = prof_epoch_read(f->db, epoch, &f->p, &f->np, err);
	if (rc < 0)
		return rc;
	/* empty epochs skipped, damaged files: said as every report says them */
	notes = prof_db_notes(f->db);
	snprintf(f->sum->notes, sizeof(f->sum->notes), "%.*s",
		 notes[0] ? (int)strlen(notes) - 1 : 0, notes);
	f->event = rq->event;
	for (size_t i = 0; !rq->event && i < f->np; i++)
		if (!f->event || event_rank(f->p[i].event) < event_rank(f->event))
			f->event = f->p[i].event;
	if (!f->event)
		return dcpi_errf(err, -ENODATA, "%s: epoch %s holds no samples", rq->db, epoch);
	snprintf(f->sum->event, sizeof(f->sum->event), "%s", f->event);
	f->in_open = 1;		/* closed whatever open did */
	rc = est_input_open(&f->in, f->db, rq->db, epoch, f->p, f->np, &rq->ana, err);
	if (rc < 0)
		return rc;
	opt_est_default(&f->est, &f->in);
	f->est.raw_samples = rq->raw_samples;
	if (rq->min_samples > 0)
		f->est.min_samples = rq->min_samples;
	if (rq->ana.exact_db && rq->raw_samples)
		return dcpi_errf(err, -EINVAL, "--exact and --raw-samples: one or the other");
	return 0;
}

static int pseudo(const struct prof_profile *p)
{
	return p->image.path[0] == '[' || !strcmp(p->image.path, PROF_UNKNOWN_PATH);
}

/* The profile of event for the image at path (same identity, or path). */
static const struct prof_profile *profile_for(struct fb *f, const char *path,
					      struct dcpi_err *err)
{
	struct prof_image_id id;
	int have = prof_image_id_from_file(&id, path, err) == 0;

	dcpi_err_clear(err);
	/* f->in.p: what the analysis sees (cut to a time window, if any) */
	for (size_t i = 0; i < f->in.np; i++)
		if (!strcmp(f->in.p[i].event, f->event) &&
		    ((have && prof_image_id_equal(&id, &f->in.p[i].image)) ||
		     !strcmp(f->in.p[i].image.path, path)))
			return &f->in.p[i];
	return NULL;
}

static const struct prof_profile *most_sampled(struct fb *f)
{
	const struct prof_profile *best = NULL;

	for (size_t i = 0; i < f->in.np; i++)
		if (!strcmp(f->in.p[i].event, f->event) && !pseudo(&f->in.p[i]) &&
		    (!best || f->in.p[i].total > best->total))
			best = &f->in.p[i];
	return best;
}

static void note(struct opt_summary *s, const char *msg)
{
	size_t n = strlen(s->notes);

	snprintf(s->notes + n, sizeof(s->notes) - n, "%s%s", n ? "\n" : "", msg);
}

/* Write one image's part of the output: source-level formats gather into
 * src, BOLT writes text at once (one image only). */
static int one_image(struct fb *f, const char *path, const struct prof_profile *p,
		     struct opt_src *src, char **bolt, size_t *blen, struct dcpi_err *err)
{
	struct image *img = NULL;
	int rc;

	f->sum->relative = est_cycles_per_sample(p, f->in.have_meta ? &f->in.meta : NULL) <= 0;
	rc = img_open(path, 0, &img, err);
	if (rc < 0)
		return rc;
	if (f->rq->format == OPT_F_PREFETCH) {
		rc = opt_prefetch_add(src, img, p, &f->est, f->rq->min_share, &f->sum->hints,
				      err);
	} else if (f->rq->format == OPT_F_BOLT) {
		struct opt_walk w = { 0 };

		rc = opt_bolt_text(img, p, &f->est, bolt, blen, &w, err);
		f->sum->nprocs = w.nprocs;
		f->sum->skipped = w.skipped;
		f->sum->samples = w.samples;
	}
	else
		rc = opt_src_add(src, img, p, &f->est, err);
	img_close(img);
	if (rc >= 0 && f->in.lbr_loaded && f->in.lbr.nranges) {
		f->sum->relative = !f->in.lbr.taken;	/* the counts are branch records' */
		f->sum->lbr_stacks = f->in.lbr.stacks;
	}
	if (rc >= 0)
		f->sum->nimages++;
	return rc;
}

static int images(struct fb *f, struct opt_src *src, char **bolt, size_t *blen,
		  struct dcpi_err *err)
{
	const struct opt_request *rq = f->rq;
	const struct prof_profile *p;
	int rc;

	if (rq->format == OPT_F_BOLT && rq->nprogs > 1)
		return dcpi_errf(err, -EINVAL, "BOLT profiles one binary: give one PROG, not %zu",
				 rq->nprogs);
	if (!rq->nprogs) {
		p = most_sampled(f);
		if (!p)
			return dcpi_errf(err, -ENODATA, "%s: epoch %s has no %s samples in any "
					 "image", rq->db, f->sum->epoch, f->event);
		return one_image(f, p->image.path, p, src, bolt, blen, err);
	}
	for (size_t i = 0; i < rq->nprogs; i++) {
		p = profile_for(f, rq->progs[i], err);
		if (!p) {
			if (rq->nprogs == 1)
				return dcpi_errf(err, -ENODATA, "%s: no %s samples in epoch %s",
						 rq->progs[i], f->event, f->sum->epoch);
			char m[DCPI_ERR_MAX + 64];

			snprintf(m, sizeof(m), "%s: no %s samples: skipped", rq->progs[i],
				 f->event);
			note(f->sum, m);
			continue;
		}
		rc = one_image(f, rq->progs[i], p, src, bolt, blen, err);
		if (rc == -ENODATA && rq->nprogs > 1) {
			note(f->sum, err->msg);
			dcpi_err_clear(err);
			continue;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int opt_feedback(const struct opt_request *rq, struct opt_summary *sum, struct dcpi_err *err)
{
	struct fb f = { .rq = rq, .sum = sum };
	struct opt_src *src = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	memset(sum, 0, sizeof(*sum));
	rc = load(&f, err);
	if (rc < 0)
		goto out;
	if (rq->format != OPT_F_BOLT) {
		src = opt_src_new(rq->format == OPT_F_GCC ? OPT_D_NONE : OPT_D_LLVM_BASE);
		if (src && rq->format == OPT_F_LLVM && !rq->lines)
			src->want_probes = 1;
		if (!src) {
			rc = dcpi_errf(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = images(&f, src, &buf, &len, err);
	if (rc < 0)
		goto out;
	if (src && rq->format == OPT_F_PREFETCH && !src->nfuncs) {
		/* nothing to hint: the report says why, and no file is written
		 * (an empty sample profile is not one LLVM reads) */
		rc = 0;
		goto out;
	}
	if (src) {
		rc = opt_src_finish(src, err);
		if (rc < 0)
			goto out;
		sum->nprocs = src->nprocs;
		sum->nfuncs = src->nfuncs;
		sum->samples = src->samples;
		sum->no_line = src->no_line;
		sum->skipped = src->skipped;
		sum->probes = src->probes;
		sum->no_probe = src->no_probe;
		rc = rq->format != OPT_F_GCC ? opt_llvm_text(src, &buf, &len, err) :
		     opt_gcc_bytes(src, (uint8_t **)&buf, &len, err);
		if (rc < 0)
			goto out;
	}
	rc = opt_write_file(rq->out, buf, len, err);
	sum->bytes = len;
out:
	free(buf);
	opt_src_free(src);
	if (f.in_open)
		est_input_close(&f.in);
	prof_profiles_free(f.p, f.np);
	if (f.db)
		prof_db_close(f.db);
	return rc;
}
