/*
 * tools/analysis.c - the analysis options every command that estimates
 * counts takes, and the way from a database and PROC to est_analyze
 * (include/dcpi/analysis.h): dcpicalc, dcpilist and dcpicfg open a
 * procedure here; the feedback writers pass the same options to optimize/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "dcpi/optimize.h"
#include "dcpi/timeline.h"
#include "tools.h"

const char tool_ana_usage[] =
	"      --db DIR        profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E       epoch name, or 'all' (default: the newest)\n"
	"      --image FILE    the image holding PROC (default: found in the profiles)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"  -m, --model NAME    pipeline model (default: $DCPI_MODEL, else this CPU's\n"
	"                      model file, measured on first use: dcpi calibrate\n"
	"                      --fit-model)\n"
	"      --no-calibrate  never measure the model now (also $DCPI_NO_CALIBRATE=1):\n"
	"                      the shipped table where no model file exists\n"
	"      --method M      dcpi (class ratios + local propagation) or global\n"
	"                      (then a flow-conserving least-squares fit; default)\n"
	"      --window W      ratio windows: insn (the paper), block (default), skid\n"
	"      --skid N[:F]    --window skid hands back F (default 0.6) of the samples\n"
	"                      of each block's first N instructions (default 1)\n"
	"      --steady S      M_i: none, self (steady state of self loops; default), loops,\n"
	"                      context (self, others after their likeliest predecessor)\n"
	"      --calibration F where samples land (dcpi calibrate; default\n"
	"                      DB/calibration-<model>.txt when present): sets --skid\n"
	"      --no-calibration  ignore it\n"
	"      --no-measure    the model's best cases only: do not time the hot blocks\n"
	"                      and loops on this machine (default: timed in the\n"
	"                      sandbox for procedures with 0.5% of their image's\n"
	"                      samples, cached in DB/measured-costs.txt; also\n"
	"                      $DCPI_MEASURE=0)\n"
	"      --remeasure     time again the cached figures taken on a shared core,\n"
	"                      and the bodies that faulted (every report uses the\n"
	"                      cached figure otherwise)\n"
	"      --no-replay     do not replay the walks of loads fed by their own\n"
	"                      result over the region their value samples span\n"
	"      --no-calls      counts from the samples alone, not from the calls\n"
	"                      counted at the entry (dcpi record --plan)\n"
	"      --no-paths      ignore the epoch's path samples (window ratios only)\n"
	"      --path-edges F  path transitions from a text file instead (lines FROM TO\n"
	"                      COUNT: hex file offsets of the image, - for elsewhere)\n"
	"      --scale R       scale rule with paths: quantile[:Q] (default, Q 0.25),\n"
	"                      sum, loops, minloop, windows\n"
	"      --prior W       pseudo-observations of the static branch prior (2)\n"
	"      --regions       each hot outermost loop its own scale (--no-regions:\n"
	"                      one for the whole procedure, the default)\n"
	"      --exact DB      executions from callgrind-Ir in DB's newest epoch (a\n"
	"                      `dcpi import` of callgrind of the same run), not\n"
	"                      estimated; its simulated misses bound the culprits\n"
	"      --no-events     culprits from the code alone: ignore event counts\n"
	"      --time A-B      only the samples from A to B seconds into the epoch\n"
	"                      (its time slices; path and value samples stay whole)\n"
	"      --phase N       only the samples of phase N (as dcpiprof --phases\n"
	"                      numbers them)\n"
	"      --vmlinux FILE  the kernel's vmlinux (of the recorded build-id); else\n"
	"                      found as perf finds it, else /proc/kallsyms names\n";

/* What the analysis is doing that takes time (measuring the model). */
static void say(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "%s: %s\n", tool_name, msg);
}

void tool_ana_args_init(struct tool_ana_args *a)
{
	memset(a, 0, sizeof(*a));
	est_analysis_opts_default(&a->o);
	a->o.note = say;
}

int tool_ana_option(struct tool_ana_args *a, int c, const char *arg)
{
	struct est_analysis_opts *o = &a->o;
	char *end;

	switch (c) {
	case TA_DB: a->db = arg; return 0;
	case TA_EPOCH: a->epoch = arg; return 0;
	case TA_VMLINUX: a->vmlinux = arg; return 0;
	case TA_IMAGE: a->image = arg; return 0;
	case 'e': case TA_EVENT: a->event = arg; return 0;
	case 'm': case TA_MODEL:
		o->model = model_by_name(arg);
		return o->model ? 0 : tool_fail("--model %s: no such model", arg);
	case TA_METHOD:
		if (est_method_parse(arg, &o->opts.method) < 0)
			return tool_fail("--method %s: not dcpi or global", arg);
		return 0;
	case TA_WINDOW:
		if (est_window_parse(arg, &o->opts.window) < 0)
			return tool_fail("--window %s: not insn, block or skid", arg);
		return 0;
	case TA_SKID:
		o->skid_given = 1;
		if (est_skid_parse(arg, &o->opts.skid, &o->opts.skid_share) < 0)
			return tool_fail("--skid %s: not N (1 to 8) or N:F (0 < F <= 1)", arg);
		return 0;
	case TA_STEADY:
		if (est_steady_parse(arg, &o->opts.steady) < 0)
			return tool_fail("--steady %s: not none, self, loops or context", arg);
		return 0;
	case TA_CALIB: o->calib_path = arg; return 0;
	case TA_NO_CALIB: o->no_calib = 1; return 0;
	case TA_NO_MEASURE: o->no_measure = 1; return 0;
	case TA_REMEASURE: o->remeasure = 1; return 0;
	case TA_NO_REPLAY: o->no_replay = 1; return 0;
	case TA_NO_CALLS: o->no_calls = 1; return 0;
	case TA_NO_CALIBRATE: o->no_calibrate = 1; return 0;
	case TA_NO_PATHS: o->no_paths = 1; return 0;
	case TA_PATH_EDGES: a->path_file = arg; return 0;
	case TA_SCALE:
		if (est_scale_parse(arg, &o->popts) < 0)
			return tool_fail("--scale %s: not quantile[:Q] (0 < Q <= 1), sum, loops, "
					 "minloop, windows", arg);
		return 0;
	case TA_PRIOR:
		o->popts.prior_weight = strtod(arg, &end);
		if (end == arg || *end || !(o->popts.prior_weight >= 0))
			return tool_fail("--prior %s: not a number >= 0", arg);
		return 0;
	case TA_REGIONS: o->popts.regions = 1; return 0;
	case TA_NO_REGIONS: o->popts.regions = 0; return 0;
	case TA_EXACT: o->exact_db = arg; return 0;
	case TA_NO_EVENTS: o->no_events = 1; return 0;
	case TA_TIME: a->time = arg; return 0;
	case TA_PHASE:
		a->phase = strtol(arg, &end, 10);
		if (end == arg || *end || a->phase < 1)
			return tool_fail("--phase %s: not a phase number (1, 2, ...)", arg);
		return 0;
	}
	return -1;
}

/*
 * --time or --phase: the slices of epoch (one epoch, not "all") that the
 * analysis keeps (report/phases.c resolves them as dcpiprof does; the
 * analysis input cuts the profiles, estimate/analyze.c).
 */
static int ana_window(struct tool_ana_args *a, struct prof_db *db, const char *epoch)
{
	struct dcpi_err err = { 0 };
	struct rep_slices s;
	int rc;

	if (!a->time && !a->phase)
		return 0;
	if (!strcmp(epoch, "all"))
		return tool_fail("--%s: name one epoch (--epoch), not all", a->time ? "time" :
				 "phase");
	rc = rep_slices_load(db, epoch, &s, &err);
	if (!rc)
		rc = rep_time_range(&s, a->time, a->phase, &a->o.slice_from, &a->o.slice_to,
				    &err);
	if (!rc)
		a->o.windowed = 1;
	rep_slices_free(&s);
	return rc ? tool_fail("%s", err.msg) : 0;
}

/* The window's epoch pinned (the newest when none named): the request
 * outlives the caller's arguments. */
static int request_window(struct tool_ana_args *a, struct opt_request *rq)
{
	static char epoch[256];
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	int rc;

	if (!a->time && !a->phase)
		return 0;
	if (prof_db_open(rq->db, 0, &db, &err) < 0)
		return tool_fail("%s", err.msg);
	if (a->epoch) {
		snprintf(epoch, sizeof(epoch), "%s", a->epoch);
	} else if (prof_db_latest_epoch(db, epoch, sizeof(epoch), &err) < 0) {
		prof_db_close(db);
		return tool_fail("%s: no epochs", rq->db);
	}
	rc = ana_window(a, db, epoch);
	prof_db_close(db);
	rq->epoch = epoch;
	return rc;
}

int tool_ana_request(struct tool_ana_args *a, struct opt_request *rq)
{
	int rc;

	if (a->image)
		return tool_fail("--image: name the images as PROG arguments");
	if (a->path_file)
		return tool_fail("--path-edges: for one procedure's image (dcpicalc)");
	rq->db = tool_db_dir(a->db);
	rq->epoch = a->epoch;
	rq->event = a->event;
	rc = request_window(a, rq);
	rq->ana = a->o;
	return rc;
}

/* ---- opening the procedure ------------------------------------------------ */

int tool_proc_open(struct tool_proc *t)
{
	const char *dir = tool_db_dir(t->a.db);
	struct dcpi_err err = { 0 };

	path_profile_init(&t->file_pp);
	if (t->a.path_file) {
		if (path_text_read(t->a.path_file, &t->file_pp, &err) < 0)
			return tool_fail("%s", err.msg);
		t->a.o.paths = &t->file_pp;
	}
	if (prof_db_open(dir, 0, &t->db, &err) < 0 ||
	    rep_load_profiles(t->db, t->a.epoch, &t->p, &t->np, t->epoch, sizeof(t->epoch),
			      &err) < 0)
		return tool_fail("%s", err.msg);
	tool_db_notes(t->db);
	if (tool_kernel_image(&t->p, &t->np, t->a.vmlinux))
		return 1;
	if (ana_window(&t->a, t->db, t->epoch))
		return 1;
	t->in_open = 1;		/* closed whatever open did */
	if (est_input_open(&t->in, t->db, dir, t->epoch, t->p, t->np, &t->a.o, &err) < 0)
		return tool_fail("%s", err.msg);
	if (t->in.model_note[0])
		fprintf(stderr, "%s: model %s: %s\n", tool_name, model_name(t->in.model),
			t->in.model_note);
	/* in.p: the profiles the analysis sees (cut to --time / --phase) */
	if (rep_find_target(t->in.p, t->in.np, t->a.event, t->spec, t->a.image, &t->img,
			    &t->proc, &t->prof, &err) < 0)
		return tool_fail("%s (epoch %s of %s)", err.msg, t->epoch, dir);
	return 0;
}

int tool_proc_analyze(struct tool_proc *t)
{
	struct dcpi_err err = { 0 };
	int rc;

	est_analysis_free(&t->an);
	rc = est_analyze(&t->in, t->img, t->prof, t->proc, &t->an, &err);
	tool_db_notes(t->db);	/* path or value files found damaged on the way */
	if (t->in.note[0]) {
		fprintf(stderr, "%s: %s\n", tool_name, t->in.note);
		t->in.note[0] = '\0';
	}
	return rc < 0 ? tool_fail("%s", err.msg) : 0;
}

void tool_proc_view(const struct tool_proc *t, int all, int json, struct rep_calc *v)
{
	rep_calc_of(v, &t->in, &t->an);
	v->a.all = all;
	v->a.json = json;
	v->a.skid_given = t->a.o.skid_given;
	v->epoch = t->epoch;
	v->db = t->db;
	v->prof = t->prof;
	v->img = t->img;
	v->proc = t->proc;
}

void tool_proc_close(struct tool_proc *t)
{
	est_analysis_free(&t->an);
	if (t->in_open)
		est_input_close(&t->in);
	path_profile_free(&t->file_pp);
	if (t->img)
		img_close(t->img);
	prof_profiles_free(t->p, t->np);
	if (t->db)
		prof_db_close(t->db);
	memset(t, 0, sizeof(*t));
}
