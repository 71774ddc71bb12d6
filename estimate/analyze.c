/*
 * analyze.c - the analysis of one procedure, assembled in one place
 * (include/dcpi/analysis.h): CFG, samples, path samples, measured best cases,
 * calibration, estimate (DCPI paper sec. 6.1), event counts, exact
 * executions, culprits (sec. 6.3).  Every tool that prints or writes a count
 * calls est_analyze with est_analysis_opts_default's settings, so they agree.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/analysis.h"
#include "dcpi/sandbox.h"
#include "dcpi/slices.h"

/* Culprits with no calibration: samples land two instructions late
 * (docs/estimate.md "Calibration: where samples land"). */
#define DEFAULT_SKID 2

void est_analysis_opts_default(struct est_analysis_opts *o)
{
	memset(o, 0, sizeof(*o));
	est_opts_default(&o->opts);
	est_path_opts_default(&o->popts);
	o->measure_share = 0.005;
}

static void note(struct est_input *in, const char *msg)
{
	size_t n = strlen(in->note);

	snprintf(in->note + n, sizeof(in->note) - n, "%s%s", n ? "\n" : "", msg);
}

static int calibration_off(const struct est_analysis_opts *o)
{
	const char *env = getenv("DCPI_NO_CALIBRATE");

	return o->no_calibrate || (env && *env && strcmp(env, "0")) || getenv("DCPI_MODEL");
}

/*
 * No model given and none measured on this CPU yet: measure it now, as
 * `dcpi calibrate --fit-model` does (a few seconds), write this machine's model
 * file for every later run, and use the fitted model in this one (the
 * process may have read the file's absence already).  A failure leaves the
 * shipped table, with a note.
 */
static void auto_model(struct est_input *in)
{
	struct est_calib_tables_opts to = { .passes = 3, .cpu = -2 };
	struct dcpi_err err = { 0 };
	struct model_cpuid id;
	char path[4096];

	if (in->o.model || calibration_off(&in->o) || model_cpuid_this(&id) < 0 ||
	    model_file_path(&id, path, sizeof(path)) < 0 || !access(path, F_OK))
		return;
	if (in->o.note)
		in->o.note(in->o.note_arg, "no model file for this CPU yet: measuring its "
			   "instruction costs now, a few seconds (dcpi calibrate --fit-model; "
			   "--no-calibrate or DCPI_NO_CALIBRATE=1 skip it)");
	to.note = in->o.note;
	to.arg = in->o.note_arg;
	if (est_calib_tables(&to, &in->auto_cal, &err) < 0 || !in->auto_cal.fitted) {
		snprintf(in->model_note, sizeof(in->model_note), "measuring the model failed "
			 "(%.200s): the shipped table is used", err.msg);
		est_calib_tables_free(&in->auto_cal);
		return;
	}
	in->have_auto = 1;
	in->model = in->auto_cal.fitted;
	snprintf(in->model_note, sizeof(in->model_note), "measured now on this CPU, written "
		 "to %.250s", in->auto_cal.path);
}

/* The calibration of the model: o->calib_path, else the database's file
 * when there is one.  A file for another model is an error (it would
 * silently set the wrong skid). */
static int load_calibration(struct est_input *in, struct dcpi_err *err)
{
	const char *name = model_name(in->model);
	int rc;

	if (in->o.no_calib)
		return 0;
	if (in->o.calib_path)
		snprintf(in->cal_path, sizeof(in->cal_path), "%s", in->o.calib_path);
	else if (est_calib_path(in->dbdir, name, in->cal_path, sizeof(in->cal_path)) < 0 ||
		 access(in->cal_path, R_OK) < 0) {
		in->cal_path[0] = '\0';
		return 0;
	}
	rc = est_calib_read(in->cal_path, &in->cal, err);
	if (rc < 0)
		return rc;
	if (strcmp(in->cal.model, name))
		return dcpi_errf(err, -EINVAL, "%s: calibrated for model %s, not %s",
				 in->cal_path, in->cal.model, name);
	in->have_cal = 1;
	in->skid = in->cal.skid;
	if (!in->o.skid_given)
		est_opts_calibrated(&in->o.opts, &in->cal);
	return 0;
}

/* destall.c's f from the recording's own measurement (est_exposure_recorded)
 * unless a calibration file or the user set it; in->exposure_note says
 * which. */
static void recorded_exposure(struct est_input *in)
{
	struct est_opts *o = &in->o.opts;
	const struct prof_epoch_meta *m = &in->meta;
	char *note = in->exposure_note;
	size_t len = sizeof(in->exposure_note);
	unsigned long long w = m->exposure_witness, n = m->exposure_samples;
	double up, f;

	if (o->stall_exposure < 0) {
		snprintf(note, len, "stalled blocks not counted from the instruction after a "
			 "load's waiter (destalling off)");
		return;
	}
	if (o->stall_exposure > 0) {
		snprintf(note, len, "the timer shows %.2f of a load waiter's cycles (the "
			 "calibration's)", o->stall_exposure);
		return;
	}
	if (!in->have_meta || !n) {
		snprintf(note, len, "the timer shows %.2f of a load waiter's cycles (the default: "
			 "not measured at record)", EST_STALL_EXPOSURE);
		return;
	}
	f = est_exposure_recorded(w, n, m->exposure_cycles_step, &up);
	if (f > 0) {
		o->stall_exposure = f;
		snprintf(note, len, "the timer shows %.2f of a load waiter's cycles (%llu of %llu "
			 "samples on the witness of the recording's chase)", f, w, n);
	} else if (f < 0) {
		o->stall_exposure = -1;
		snprintf(note, len, "the timer shows below %.2f of a load waiter's cycles (%llu of "
			 "%llu samples on the witness of the recording's chase): stalled blocks are "
			 "not counted from the instruction after it", up, w, n);
	} else {
		snprintf(note, len, "the timer shows %.2f of a load waiter's cycles (the default: "
			 "%llu of %llu samples on the witness of the recording's chase are too few "
			 "to say)", EST_STALL_EXPOSURE, w, n);
	}
}

/* --exact DB: the newest epoch's profiles, which must hold callgrind-Ir. */
static int load_exact(struct est_input *in, struct dcpi_err *err)
{
	const char *dir = in->o.exact_db;
	int rc = prof_db_open(dir, 0, &in->xdb, err);

	if (rc >= 0)
		rc = prof_db_latest_epoch(in->xdb, in->xepoch, sizeof(in->xepoch), err);
	if (rc == -ENOENT)
		return dcpi_errf(err, -ENODATA, "%s: no epochs", dir);
	if (rc >= 0)
		rc = prof_epoch_read(in->xdb, in->xepoch, &in->xp, &in->nxp, err);
	for (size_t i = 0; rc >= 0 && i < in->nxp; i++)
		if (!strcmp(in->xp[i].event, "callgrind-Ir"))
			return 0;
	if (rc >= 0)
		rc = dcpi_errf(err, -ENODATA, "%s: epoch %s has no callgrind-Ir counts (dcpi "
			       "import a callgrind run of the same binary)", dir, in->xepoch);
	return rc;
}

/* o.windowed: the profiles cut to the epoch's slices [slice_from, slice_to). */
static int load_window(struct est_input *in, struct dcpi_err *err)
{
	struct slice_profile *sp = NULL;
	size_t nsp = 0, dropped = 0;
	char m[160];
	int rc;

	if (!in->db || !strcmp(in->epoch, "all"))
		return dcpi_errf(err, -EINVAL, "a time window is of one epoch, not %s",
				 in->db ? "all" : "no database");
	rc = slice_epoch_read(in->db, in->epoch, &sp, &nsp, err);
	if (rc >= 0 && !nsp)
		rc = dcpi_errf(err, -ENOENT, "%s/%s: no time slices (recorded with --no-slices, "
			       "or imported)", in->dbdir, in->epoch);
	if (rc >= 0)
		rc = slice_window(sp, nsp, in->o.slice_from, in->o.slice_to, in->p, in->np,
				  &in->win, &in->nwin, &dropped, err);
	if (rc >= 0) {
		in->p = in->win;
		in->np = in->nwin;
	}
	if (rc >= 0 && dropped) {
		snprintf(m, sizeof(m), "%zu profile%s of events other than %s left out: time "
			 "slices keep one event", dropped, dropped == 1 ? "" : "s", sp[0].event);
		note(in, m);
	}
	slice_profiles_free(sp, nsp);
	return rc;
}

int est_input_open(struct est_input *in, struct prof_db *db, const char *dbdir,
		   const char *epoch, const struct prof_profile *p, size_t np,
		   const struct est_analysis_opts *o, struct dcpi_err *err)
{
	char latest[256];
	const char *me = epoch;
	int rc;

	memset(in, 0, sizeof(*in));
	path_profile_init(&in->pp);
	in->db = db;
	in->p = p;
	in->np = np;
	in->o = *o;
	in->skid = DEFAULT_SKID;
	auto_model(in);
	if (!in->model)
		in->model = o->model ? o->model : model_for_this_cpu();
	if (!in->model_note[0] && model_file_status()[0])
		snprintf(in->model_note, sizeof(in->model_note), "%s", model_file_status());
	snprintf(in->dbdir, sizeof(in->dbdir), "%s", dbdir);
	snprintf(in->epoch, sizeof(in->epoch), "%s", epoch);
	if (!in->model)
		return dcpi_errf(err, -EINVAL, "no pipeline model for this CPU");
	/* the newest epoch's calibration stands for all */
	if (db && !strcmp(epoch, "all") &&
	    prof_db_latest_epoch(db, latest, sizeof(latest), err) == 0)
		me = latest;
	dcpi_err_clear(err);
	if (db) {
		rc = prof_epoch_meta_read(db, me, &in->meta, err);
		if (rc < 0 && rc != -ENOENT)	/* garbled: the calibration would go */
			return rc;
		in->have_meta = rc == 0;
		dcpi_err_clear(err);
	}
	rc = load_calibration(in, err);
	if (rc >= 0)
		recorded_exposure(in);
	if (rc >= 0 && o->windowed)
		rc = load_window(in, err);
	if (rc >= 0 && o->exact_db)
		rc = load_exact(in, err);
	return rc < 0 ? rc : 0;
}

const char *est_model_source(const struct est_input *in)
{
	return in->have_auto ? in->auto_cal.path : model_origin(in->model);
}

void est_input_close(struct est_input *in)
{
	if (in->have_auto)
		est_calib_tables_free(&in->auto_cal);
	path_profile_free(&in->pp);
	val_profile_free(&in->vp);
	import_lbr_free(&in->lbr);
	prof_profiles_free(in->xp, in->nxp);
	prof_profiles_free(in->win, in->nwin);
	if (in->xdb)
		prof_db_close(in->xdb);
	memset(in, 0, sizeof(*in));
}

typedef int (*epoch_fn)(struct est_input *in, const char *epoch,
			const struct prof_image_id *id, struct dcpi_err *err);

/* fn over the input's epoch, or over every epoch of the database for "all". */
static int each_epoch(struct est_input *in, const struct prof_image_id *id, epoch_fn fn,
		      struct dcpi_err *err)
{
	char **names = NULL;
	size_t nn = 0;
	int rc;

	if (strcmp(in->epoch, "all"))
		return fn(in, in->epoch, id, err);
	rc = prof_db_epochs(in->db, &names, &nn, err);
	for (size_t k = 0; rc >= 0 && k < nn; k++)
		rc = fn(in, names[k], id, err);
	prof_names_free(names, nn);
	return rc;
}

/*
 * pfx##_reset, in->f emptied for another image; and pfx##_of_epoch, the
 * epoch_fn that adds the pfx profiles (struct type) of
 * image id in one epoch to in->f (in->have: one is there), the same way for
 * the path and the value samples: a window's own profile from its slices
 * (win##_epoch_window, include/dcpi/slices.h; in->have when its member nz is
 * not 0), else the epoch's whole profile (then the note nowin, unless "",
 * said once), its image's taken or merged in.
 */
#define OF_EPOCH(pfx, type, win, f, have, nz, nowin)					\
static void pfx##_reset(struct est_input *in)						\
{											\
	type##_free(&in->f);								\
	type##_init(&in->f);								\
	in->have = 0;									\
}											\
static int pfx##_of_epoch(struct est_input *in, const char *epoch,			\
			  const struct prof_image_id *id, struct dcpi_err *err)		\
{											\
	struct type *v = NULL, w;							\
	size_t n = 0;									\
	int rc = in->o.windowed ? win##_epoch_window(in->db, epoch, id, in->o.slice_from, \
						     in->o.slice_to, &w, err) : 0;	\
											\
	if (rc > 0) {									\
		in->f = w;								\
		in->have = w.nz > 0;							\
		return 0;								\
	}										\
	if (rc == 0 && in->o.windowed && *(nowin) && !strstr(in->note, (nowin)))	\
		note(in, (nowin));							\
	if (rc == 0)									\
		rc = pfx##_epoch_read(in->db, epoch, &v, &n, err);			\
	for (size_t i = 0; rc >= 0 && i < n; i++) {					\
		if (!prof_image_id_equal(&v[i].image, id))				\
			continue;							\
		if (!in->have) {							\
			type##_free(&in->f);						\
			in->f = v[i];							\
			type##_init(&v[i]);						\
			in->have = 1;							\
		} else {								\
			rc = type##_merge(&in->f, &v[i], err);				\
		}									\
	}										\
	pfx##_profiles_free(v, n);							\
	return rc;									\
}

OF_EPOCH(path, path_profile, pslice, pp, have_pp, nedges,
	 "paths: the whole epoch's (it keeps no path slices)")
OF_EPOCH(val, val_profile, vslice, vp, have_vp, nlists, "")

/* What fn reads for image id over the epochs (each_epoch), unless *cur is
 * id's already (and *loaded): then 0; else, after reset, 1 when read, an
 * error (and *loaded cleared, for the next call to try again) when not. */
static int read_once(struct est_input *in, const struct prof_image_id *id, int *loaded,
		     struct prof_image_id *cur, void (*reset)(struct est_input *in),
		     epoch_fn fn, struct dcpi_err *err)
{
	int rc;

	if (*loaded && prof_image_id_equal(cur, id))
		return 0;
	*cur = *id;
	*loaded = 1;
	reset(in);
	rc = each_epoch(in, id, fn, err);
	if (rc < 0)
		*loaded = 0;
	return rc < 0 ? rc : 1;
}

/* The image's path samples: the epoch's (every epoch's, merged, for "all"),
 * read once per image. */
static int image_paths(struct est_input *in, const struct prof_image_id *id,
		       const struct path_profile **out, struct dcpi_err *err)
{
	int rc;

	*out = NULL;
	if (in->o.no_paths)
		return 0;
	if (in->o.paths) {
		*out = in->o.paths;
		return 0;
	}
	if (!in->db)
		return 0;
	rc = read_once(in, id, &in->pp_loaded, &in->pp_image, path_reset, path_of_epoch, err);
	if (rc < 0)
		return rc;
	*out = in->have_pp ? &in->pp : NULL;
	return 0;
}

/* The image's value samples (every epoch's for "all"), read once per image:
 * the addresses replayed loads walk (estimate/replay.c). */
static int image_values(struct est_input *in, const struct prof_image_id *id,
			const struct val_profile **out, struct dcpi_err *err)
{
	int rc;

	*out = NULL;
	if (in->o.no_replay || !in->db)
		return 0;
	rc = read_once(in, id, &in->vp_loaded, &in->vp_image, val_reset, val_of_epoch, err);
	/* sorted for val_profile_find */
	if (rc > 0 && in->have_vp && val_profile_normalize(&in->vp) < 0) {
		in->vp_loaded = 0;
		rc = dcpi_errf(err, -ENOMEM, "values: out of memory");
	}
	if (rc < 0)
		return rc;
	*out = in->have_vp ? &in->vp : NULL;
	return 0;
}

/* The image's branch-record counts (every epoch's for "all"), read once
 * per image; used for the counts where a procedure has them. */
static int lbr_of_epoch(struct est_input *in, const char *epoch, const struct prof_image_id *id,
			struct dcpi_err *err)
{
	return import_read_lbr(in->db, epoch, id, &in->lbr, err);
}

static void lbr_reset(struct est_input *in)
{
	import_lbr_free(&in->lbr);
}

static int lbr_counts(struct est_input *in, const struct image *img, struct est_analysis *a,
		      struct dcpi_err *err)
{
	const struct prof_image_id *id = &a->prof->image;
	int rc = 0;

	if (in->o.no_paths || in->o.paths || !in->db)
		return 0;
	rc = read_once(in, id, &in->lbr_loaded, &in->lbr_image, lbr_reset, lbr_of_epoch, err);
	if (rc < 0)
		return rc;
	rc = est_lbr_use(a->cfg, img, &in->lbr, &a->r, &a->lbr_dropped);
	if (rc < 0)
		return dcpi_errf(err, rc, "%s: out of memory", a->proc->name);
	a->lbr = rc > 0;
	a->lbr_stacks = a->lbr ? in->lbr.stacks : 0;
	return 0;
}

/* Time the hot blocks and loops on this machine (estimate/measured.c), for
 * a procedure that holds enough of its image's samples. */
static int measure(struct est_input *in, const struct image *img, struct est_analysis *a,
		   struct dcpi_err *err)
{
	const char *env = getenv("DCPI_MEASURE");
	struct est_measure_opts mo;
	double share = a->prof->total ? a->total / (double)a->prof->total : 0;
	int rc;

	if (in->o.no_measure) {
		snprintf(a->meas_why, sizeof(a->meas_why), "--no-measure");
		return 0;
	}
	if (env && !strcmp(env, "0")) {
		snprintf(a->meas_why, sizeof(a->meas_why), "DCPI_MEASURE=0");
		return 0;
	}
	if (share < in->o.measure_share) {
		snprintf(a->meas_why, sizeof(a->meas_why),
			 "%.2f%% of the image's samples (timed from %.1f%%)", 100 * share,
			 100 * in->o.measure_share);
		return 0;
	}
	if (!sbx_usable(a->meas_why, sizeof(a->meas_why)))
		return 0;
	est_measure_opts_default(&mo);
	mo.cache_dir = in->o.cache_dir ? in->o.cache_dir : in->dbdir[0] ? in->dbdir : NULL;
	mo.img = img;
	mo.model = in->model;
	mo.steady = in->o.opts.steady;
	mo.paths = a->pp;
	mo.remeasure = in->o.remeasure;
	rc = est_measure(a->cfg, a->s, &mo, &a->meas, err);
	if (rc < 0)
		return rc;
	a->have_meas = 1;
	if (a->meas.note[0] && !strstr(in->note, a->meas.note))
		note(in, a->meas.note);
	return 0;
}

/* The samples of p's event over every image of the epoch (or the window):
 * the run's, which p's blocks' samples are a share of. */
static double run_samples(const struct est_input *in, const struct prof_profile *p)
{
	double n = 0;

	for (size_t k = 0; k < in->np; k++)
		if (!strcmp(in->p[k].event, p->event))
			n += (double)in->p[k].total;
	return n;
}

/* Event counts (the epoch's, and --exact's), exact executions, culprits. */
static int culprits(struct est_input *in, const struct image *img, struct est_analysis *a,
		    struct dcpi_err *err)
{
	const struct prof_image_id *id = &a->prof->image;
	int rc = est_events_for(in->p, in->np, id, a->cfg, img, &a->ev, err);

	if (rc >= 0 && in->xp) {
		rc = est_events_for(in->xp, in->nxp, id, a->cfg, img, &a->ev, err);
		if (rc >= 0 && !a->ev.exact)
			rc = dcpi_errf(err, -ENODATA, "%s: no callgrind-Ir counts of it in %s, "
				       "epoch %s (dcpi import a callgrind run of the same "
				       "binary)", img_path(img), in->o.exact_db, in->xepoch);
		if (rc >= 0) {
			est_use_exact(a->cfg, &a->r, a->ev.exact);
			a->exact = 1;
			a->lbr = 0;
			a->r.lbr_stacks = 0;
		}
	}
	if (rc < 0)
		return rc;
	a->r.shared_core = in->have_meta && !a->lbr ? in->meta.canary_shared : 0;
	a->r.clock_h = in->have_meta && !a->lbr ? est_clock_h(&in->meta) : 0;
	a->r.run_samples = run_samples(in, a->prof);
	est_intervals(a->cfg, &a->r, &a->pinfo, a->have_meas ? &a->meas : NULL, in->model,
		      a->exact);
	if (a->lbr)
		est_lbr_intervals(a->cfg, &a->r, &in->lbr);
	rc = est_culprits(a->cfg, &a->r, a->ev.list, in->o.no_events ? 0 : a->ev.n, in->skid,
			  &a->cul, err);
	if (rc >= 0)
		a->have_cul = 1;
	return rc;
}

/* The replayed walks' spread (their timing's and their regions') on every
 * block that expects their cycles: the load's, and the blocks of a round
 * that share its step (estimate/replay.c), for their intervals.  Several
 * replays in one procedure: each such block takes the widest.  The loads
 * replayed are marked: their misses are measured, not of any length. */
static void replay_spreads(struct est_analysis *a)
{
	double sp = 0, far = 1;

	for (size_t k = 0; k < a->nreplays; k++) {
		sp = fmax(sp, a->replays[k].spread);
		far = fmax(far, a->replays[k].far);
		if (a->replays[k].insn < a->r.ninsns)
			a->r.insns[a->replays[k].insn].replayed = 1;
	}
	for (uint32_t b = 0; b < a->cfg->nblocks && b < a->r.nblocks; b++)
		if (a->r.blocks[b].replay > 0) {
			a->r.blocks[b].replay_spread = sp;
			a->r.blocks[b].replay_far = far;
		}
}

/* Calls counted at the entry and executions counted at blocks
 * (estimate/calls.c) give the counts their scale: of one epoch's whole run only (a time window's samples are not
 * the run's calls, and "all" may hold epochs recorded without counting),
 * and not over branch records' counts, which are measured already. */
static void counted_calls(struct est_input *in, const struct image *img, struct est_analysis *a)
{
	struct dcpi_err e = { 0 };
	double calls, *counts;
	size_t nb;

	if (in->o.no_calls || in->o.windowed || !strcmp(in->epoch, "all") || a->lbr)
		return;
	counts = calloc(a->cfg->nblocks + 1, sizeof(*counts));
	calls = est_calls_counted(in->p, in->np, &a->prof->image, img, a->proc->addr);
	nb = counts ? est_blocks_counted(in->p, in->np, &a->prof->image, img, a->cfg, counts) : 0;
	if ((calls > 0 || nb) && est_use_counts(a->cfg, &a->r, calls, nb ? counts : NULL, &e) < 0)
		note(in, e.msg);
	free(counts);
}

int est_analyze(struct est_input *in, struct image *img, const struct prof_profile *prof,
		const struct img_proc *proc, struct est_analysis *a, struct dcpi_err *err)
{
	struct est_opts opts = in->o.opts;
	const struct val_profile *vp = NULL;
	int rc;

	memset(a, 0, sizeof(*a));
	a->prof = prof;
	a->proc = proc;
	rc = cfg_build(img, proc, &a->cfg, err);
	if (rc < 0)
		return rc;
	a->s = calloc(a->cfg->ninsns + 1, sizeof(*a->s));
	if (!a->s)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", proc->name);
	rc = est_samples_from_profile(a->cfg, img, prof, a->s, &a->total, err);
	if (rc < 0)
		return rc;
	a->cps = est_cycles_per_sample(prof, in->have_meta ? &in->meta : NULL);
	rc = image_paths(in, &prof->image, &a->pp, err);
	if (rc >= 0)
		rc = measure(in, img, a, err);
	if (rc >= 0)
		rc = est_path_obs_from_profile(a->cfg, img, a->pp, &a->obs, err);
	if (rc >= 0)
		rc = image_values(in, &prof->image, &vp, err);
	if (rc >= 0)
		rc = est_replay_loads(in, img, vp, a, err);
	if (rc >= 0)
		rc = est_replay_stream_loads(img, vp, a, err);
	if (rc < 0)
		return rc;
	if (a->have_meas)
		opts.measured = &a->meas;
	opts.expect_extra = a->extra;
	opts.streams = a->streams;
	rc = est_procedure_paths(a->cfg, in->model, a->s, a->cps, &opts, &in->o.popts, &a->obs,
				 &a->r, &a->pinfo, err);
	if (rc >= 0)
		rc = lbr_counts(in, img, a, err);
	if (rc < 0)
		return rc;
	counted_calls(in, img, a);
	replay_spreads(a);
	est_replay_regions(img, vp, a);
	return culprits(in, img, a, err);
}

void est_analysis_free(struct est_analysis *a)
{
	est_result_free(&a->r);
	est_measurements_free(&a->meas);
	est_path_info_free(&a->pinfo);
	est_path_obs_free(&a->obs);
	est_events_free(&a->ev);
	cul_result_free(&a->cul);
	free(a->s);
	free(a->extra);
	free(a->streams);
	cfg_free(a->cfg);
	memset(a, 0, sizeof(*a));
}
