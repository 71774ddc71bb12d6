/*
 * calc.c - dcpicalc: executions, CPI and stalls of every instruction of one
 * procedure (DCPI paper sec. 3.2, fig. 2; the estimation is estimate/).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/safefile.h"
#include "dcpi/sandbox.h"
#include "tools.h"

struct calc_args {
	const char *proc, *db, *epoch, *image, *model, *event, *calib;
	struct est_opts opts;
	int all, json, static_only, skid_given, no_calib, no_measure;
	const char *path_file;		/* --path-edges */
	int no_paths;
	struct est_path_opts popts;
	int summary, no_events;		/* --summary, --no-events */
	const char *format, *output;	/* dcpicfg: --format, -o */
	double hot;			/* dcpicfg: --hot */
	const char *exact_db;		/* --exact DB: callgrind-Ir executions */
};

struct calc_ctx {
	struct calc_args a;
	struct prof_db *db;
	struct prof_profile *p;
	size_t np;
	char epoch[256];
	const struct prof_profile *prof;	/* the chosen (image, event) */
	struct prof_epoch_meta meta;
	int have_meta;
	struct image *img;
	const struct img_proc *proc;
	struct cfg *cfg;
	const struct model *model;
	double *s, total, cps;
	struct est_result r;
	struct est_calibration cal;
	char cal_path[4200];
	int have_cal;
	struct est_measurements meas;	/* measured best cases (estimate/measured.c) */
	int have_meas;
	char meas_why[128];		/* why not measured */
	struct path_profile file_pp;	/* --path-edges */
	const struct path_profile *pp;	/* the image's paths, NULL: none */
	struct est_path_obs obs;
	struct est_path_info pinfo;
	struct est_events ev;		/* event counts and exact executions */
	struct cul_result cul;		/* culprits of the dynamic stalls */
	int have_cul;
};

static const char calc_usage[] =
	"usage: dcpicalc PROC [options]\n"
	"  PROC                procedure name as dcpiprof prints it, or 0xADDRESS\n"
	"      --db DIR        profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E       epoch name, or 'all' (default: the newest)\n"
	"      --image FILE    the image holding PROC (default: found in the profiles)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"  -m, --model NAME    pipeline model (default: $DCPI_MODEL, else from CPUID)\n"
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
	"                      sandbox, cached in DB/measured-costs.txt; also\n"
	"                      $DCPI_MEASURE=0)\n"
	"      --static        the model's best-case schedule only (M_i, reason,\n"
	"                      culprit), no samples needed; with --image, no database\n"
	"      --no-paths      ignore the epoch's path samples (window ratios only)\n"
	"      --path-edges F  path transitions from a text file instead (lines FROM TO\n"
	"                      COUNT: hex file offsets of the image, - for elsewhere)\n"
	"      --scale R       scale rule with paths: quantile[:Q] (default, Q 0.25),\n"
	"                      sum, loops, minloop, windows\n"
	"      --prior W       pseudo-observations of the static branch prior (2)\n"
	"      --regions       each hot outermost loop its own scale\n"
	"  -a, --all           every block, not only the hot ones\n"
	"      --summary       the procedure's stall summary only (fig. 4): dynamic\n"
	"                      stalls by cause (min - max), static stalls by reason\n"
	"      --exact DB      executions from callgrind-Ir in DB's newest epoch (a\n"
	"                      `dcpi import` of callgrind of the same run), not\n"
	"                      estimated; its simulated misses bound the culprits\n"
	"      --no-events     culprits from the code alone: ignore event counts\n"
	"      --json          machine-readable output\n";

static int parse_args(int argc, char **argv, struct calc_args *a)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "epoch", required_argument, NULL, 'E' },
		{ "image", required_argument, NULL, 'i' },
		{ "event", required_argument, NULL, 'e' },
		{ "model", required_argument, NULL, 'm' },
		{ "method", required_argument, NULL, 'M' },
		{ "window", required_argument, NULL, 'W' },
		{ "skid", required_argument, NULL, 'k' },
		{ "steady", required_argument, NULL, 'S' },
		{ "calibration", required_argument, NULL, 'C' },
		{ "no-calibration", no_argument, NULL, 'N' },
		{ "no-measure", no_argument, NULL, 'X' },
		{ "static", no_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-paths", no_argument, NULL, 'P' },
		{ "path-edges", required_argument, NULL, 'F' },
		{ "scale", required_argument, NULL, 'R' },
		{ "prior", required_argument, NULL, 'w' },
		{ "regions", no_argument, NULL, 'G' },
		{ "summary", no_argument, NULL, 'Y' },
		{ "exact", required_argument, NULL, 'x' },
		{ "no-events", no_argument, NULL, 'V' },
		{ "format", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "hot", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	est_opts_default(&a->opts);
	est_path_opts_default(&a->popts);
	optind = 1;
	a->hot = 0.99;
	while ((c = getopt_long(argc, argv, "e:m:aho:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->db = optarg; break;
		case 'E': a->epoch = optarg; break;
		case 'i': a->image = optarg; break;
		case 'e': a->event = optarg; break;
		case 'm': a->model = optarg; break;
		case 'M':
			if (est_method_parse(optarg, &a->opts.method) < 0)
				return tool_fail("--method %s: not dcpi or global", optarg);
			break;
		case 'W':
			if (est_window_parse(optarg, &a->opts.window) < 0)
				return tool_fail("--window %s: not insn, block or skid", optarg);
			break;
		case 'C': a->calib = optarg; break;
		case 'N': a->no_calib = 1; break;
		case 'X': a->no_measure = 1; break;
		case 's': a->static_only = 1; break;
		case 'k':
			a->skid_given = 1;
			a->opts.skid = (int)strtol(optarg, &end, 10);
			if (*end == ':')
				a->opts.skid_share = strtod(end + 1, &end);
			if (*end || a->opts.skid < 1 || a->opts.skid > 8 ||
			    !(a->opts.skid_share > 0 && a->opts.skid_share <= 1))
				return tool_fail("--skid %s: not N (1 to 8) or N:F (0 < F <= 1)",
						 optarg);
			break;
		case 'S':
			if (!strcmp(optarg, "none"))
				a->opts.steady = EST_STEADY_NONE;
			else if (!strcmp(optarg, "self"))
				a->opts.steady = EST_STEADY_SELF;
			else if (!strcmp(optarg, "loops"))
				a->opts.steady = EST_STEADY_LOOPS;
			else if (!strcmp(optarg, "context"))
				a->opts.steady = EST_STEADY_CONTEXT;
			else
				return tool_fail("--steady %s: not none, self, loops or context",
						 optarg);
			break;
		case 'P': a->no_paths = 1; break;
		case 'F': a->path_file = optarg; break;
		case 'R':
			if (!strncmp(optarg, "quantile:", 9)) {
				a->popts.quantile = strtod(optarg + 9, &end);
				if (*end || !(a->popts.quantile > 0 && a->popts.quantile <= 1))
					return tool_fail("--scale %s: quantile:Q wants 0 < Q <= 1",
							 optarg);
				a->popts.rule = EST_SCALE_QUANTILE;
			} else if (est_scale_rule_parse(optarg, &a->popts.rule) < 0)
				return tool_fail("--scale %s: not quantile[:Q], sum, loops, "
						 "minloop, windows", optarg);
			break;
		case 'w':
			a->popts.prior_weight = strtod(optarg, &end);
			if (*end || !(a->popts.prior_weight >= 0))
				return tool_fail("--prior %s: not a number >= 0", optarg);
			break;
		case 'G': a->popts.regions = 1; break;
		case 'Y': a->summary = 1; break;
		case 'x': a->exact_db = optarg; break;
		case 'V': a->no_events = 1; break;
		case 'T': a->format = optarg; break;
		case 'o': a->output = optarg; break;
		case 'H':
			a->hot = strtod(optarg, &end);
			if (*end || !(a->hot > 0 && a->hot <= 1))
				return tool_fail("--hot %s: not a share in (0, 1]", optarg);
			break;
		case 'a': a->all = 1; break;
		case 'j': a->json = 1; break;
		case 'h': fputs(calc_usage, stdout); return -1;
		default: fputs(calc_usage, stderr); return 1;
		}
	}
	if (optind + 1 != argc) {
		fputs(calc_usage, stderr);
		return 1;
	}
	a->proc = argv[optind];
	return 0;
}

/* The event to use: --event, else the best-ranked one present. */
static const char *pick_event(const struct calc_ctx *c)
{
	const char *best = NULL;

	if (c->a.event)
		return c->a.event;
	for (size_t i = 0; i < c->np; i++)
		if (!best || rep_event_rank(c->p[i].event) < rep_event_rank(best))
			best = c->p[i].event;
	return best;
}

/* --image FILE: its profile of event ev, and the procedure in it. */
static int find_in_image(struct calc_ctx *c, const char *ev)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id id;

	if (prof_image_id_from_file(&id, c->a.image, &err) < 0)
		return tool_fail("%s", err.msg);
	for (size_t i = 0; i < c->np && !c->prof; i++)
		if (!strcmp(c->p[i].event, ev) && (prof_image_id_equal(&id, &c->p[i].image) ||
						    !strcmp(c->p[i].image.path, c->a.image)))
			c->prof = &c->p[i];
	if (!c->prof)
		return tool_fail("%s: no %s samples in epoch %s", c->a.image, ev, c->epoch);
	if (img_proc_find(c->img, c->a.proc, &c->proc, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

/* PROC "*" or "IMAGE:*": every procedure of an image (the most sampled one,
 * or the one whose path ends in IMAGE), for the image-wide summary. */
static int whole_image(const char *spec)
{
	size_t n = strlen(spec);

	return n && spec[n - 1] == '*' && (n == 1 || spec[n - 2] == ':');
}

static int find_image(struct calc_ctx *c, const char *ev)
{
	struct dcpi_err err = { 0 };
	size_t n = strlen(c->a.proc) - 1;	/* "IMAGE:" or "" */

	for (size_t i = 0; i < c->np; i++) {
		const char *path = c->p[i].image.path;
		size_t lp = strlen(path), li = n ? n - 1 : 0;

		if (strcmp(c->p[i].event, ev) || path[0] == '[')
			continue;
		if (n && !(lp >= li && !strncmp(path + lp - li, c->a.proc, li) &&
			   (lp == li || path[lp - li - 1] == '/')))
			continue;
		if (!c->prof || c->p[i].total > c->prof->total)
			c->prof = &c->p[i];
	}
	if (!c->prof)
		return tool_fail("%s: no image with %s samples in epoch %s", c->a.proc, ev,
				 c->epoch);
	if (img_open(c->prof->image.path, 0, &c->img, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

static int find_target(struct calc_ctx *c)
{
	const char *ev = pick_event(c);
	struct dcpi_err err = { 0 };
	size_t k;

	if (ev && whole_image(c->a.proc) && !c->a.image)
		return find_image(c, ev);

	/* a file that is not an image says so first, whatever the samples */
	if (c->a.image && img_open(c->a.image, 0, &c->img, &err) < 0)
		return tool_fail("%s", err.msg);
	if (!ev)
		return tool_fail("%s: epoch %s holds no samples", tool_db_dir(c->a.db), c->epoch);
	if (c->a.image)
		return find_in_image(c, ev);
	if (rep_find_proc(c->p, c->np, ev, c->a.proc, 0, &c->img, &c->proc, &k, &err) < 0)
		return tool_fail("%s (epoch %s, event %s)", err.msg, c->epoch, ev);
	c->prof = &c->p[k];
	return 0;
}

static int pick_model(struct calc_ctx *c)
{
	if (c->a.model) {
		c->model = model_by_name(c->a.model);
		if (!c->model)
			return tool_fail("--model %s: no such model", c->a.model);
	} else {
		c->model = model_for_this_cpu();
	}
	return 0;
}

/* The calibration of this model: --calibration, else the database's. */
static int load_calibration(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };

	if (c->a.no_calib)
		return 0;
	if (c->a.calib)
		snprintf(c->cal_path, sizeof(c->cal_path), "%s", c->a.calib);
	else if (est_calib_path(tool_db_dir(c->a.db), model_name(c->model), c->cal_path,
				sizeof(c->cal_path)) < 0 || access(c->cal_path, R_OK) < 0)
		return 0;
	if (est_calib_read(c->cal_path, &c->cal, &err) < 0)
		return tool_fail("%s", err.msg);
	if (strcmp(c->cal.model, model_name(c->model)))
		return tool_fail("%s: calibrated for model %s, not %s", c->cal_path,
				 c->cal.model, model_name(c->model));
	c->have_cal = 1;
	if (!c->a.skid_given)
		est_opts_calibrated(&c->a.opts, &c->cal);
	return 0;
}

static int load(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };
	char latest[256];
	const char *me;
	int rc;

	if (prof_db_open(tool_db_dir(c->a.db), 0, &c->db, &err) < 0 ||
	    rep_load_profiles(c->db, c->a.epoch, &c->p, &c->np, c->epoch, sizeof(c->epoch),
			      &err) < 0)
		return tool_fail("%s", err.msg);
	me = c->epoch;
	if (!strcmp(c->epoch, "all") &&
	    prof_db_latest_epoch(c->db, latest, sizeof(latest), &err) == 0)
		me = latest;	/* the newest calibration stands for all */
	tool_db_notes(c->db);
	rc = prof_epoch_meta_read(c->db, me, &c->meta, &err);
	if (rc < 0 && rc != -ENOENT)	/* garbled: the calibration would go silently */
		return tool_fail("%s", err.msg);
	c->have_meta = rc == 0;
	if (pick_model(c) || load_calibration(c))
		return 1;
	return find_target(c);
}

/* --path-edges FILE: "FROM TO COUNT" per line, hex offsets, - elsewhere. */
static int read_path_edges(struct calc_ctx *c)
{
	struct path_profile *pp = &c->file_pp;
	FILE *f = fopen(c->a.path_file, "r");
	char line[256];
	unsigned lineno = 0;

	if (!f)
		return tool_fail("%s: %s", c->a.path_file, strerror(errno));
	snprintf(pp->source, sizeof(pp->source), "file");
	while (fgets(line, sizeof(line), f)) {
		char a[64], b[64];
		unsigned long long n;
		uint64_t v[2];

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == 0)
			continue;
		if (sscanf(line, "%63s %63s %llu", a, b, &n) != 3)
			goto bad;
		for (int k = 0; k < 2; k++) {
			const char *t = k ? b : a;
			char *end;

			v[k] = !strcmp(t, "-") ? PATH_ELSEWHERE : strtoull(t, &end, 16);
			if (strcmp(t, "-") && *end)
				goto bad;
		}
		if (pp->nedges == pp->cap_edges) {
			size_t cap = pp->cap_edges ? 2 * pp->cap_edges : 256;
			struct path_edge *ne = realloc(pp->edges, cap * sizeof(*ne));

			if (!ne) {
				fclose(f);
				return tool_fail("out of memory");
			}
			pp->edges = ne, pp->cap_edges = cap;
		}
		pp->edges[pp->nedges++] = (struct path_edge){ v[0], v[1], n };
	}
	fclose(f);
	c->pp = pp;
	return 0;
bad:
	fclose(f);
	return tool_fail("%s:%u: not FROM TO COUNT (hex offsets or -, decimal count)",
			 c->a.path_file, lineno);
}

/* The image's path samples: --path-edges, else the epoch's path profile
 * of the image (every epoch's, merged, for --epoch all). */
static int load_paths(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };
	char **names = NULL;
	size_t nn = 0;
	int rc = 0;

	if (c->a.no_paths)
		return 0;
	if (c->a.path_file)
		return read_path_edges(c);
	if (!strcmp(c->epoch, "all")) {
		if (prof_db_epochs(c->db, &names, &nn, &err) < 0)
			return tool_fail("%s", err.msg);
	}
	for (size_t k = 0; k < (names ? nn : 1) && rc == 0; k++) {
		struct path_profile *pp = NULL;
		size_t n = 0;

		if (path_epoch_read(c->db, names ? names[k] : c->epoch, &pp, &n, &err) < 0) {
			rc = tool_fail("%s", err.msg);
			break;
		}
		for (size_t i = 0; i < n && rc == 0; i++) {
			if (!prof_image_id_equal(&pp[i].image, &c->prof->image))
				continue;
			if (!c->pp) {
				c->file_pp = pp[i];
				path_profile_init(&pp[i]);
				c->pp = &c->file_pp;
			} else if (path_profile_merge(&c->file_pp, &pp[i], &err) < 0) {
				rc = tool_fail("%s", err.msg);
			}
		}
		path_profiles_free(pp, n);
	}
	if (names)
		prof_names_free(names, nn);
	return rc;
}

/* Time the hot blocks and loops on this machine (estimate/measured.c). */
static int measure(struct calc_ctx *c)
{
	struct est_measure_opts mo;
	struct dcpi_err err = { 0 };
	const char *env = getenv("DCPI_MEASURE");

	if (c->a.no_measure) {
		snprintf(c->meas_why, sizeof(c->meas_why), "--no-measure");
		return 0;
	}
	if (env && !strcmp(env, "0")) {
		snprintf(c->meas_why, sizeof(c->meas_why), "DCPI_MEASURE=0");
		return 0;
	}
	if (!sbx_usable(c->meas_why, sizeof(c->meas_why)))
		return 0;
	est_measure_opts_default(&mo);
	mo.cache_dir = tool_db_dir(c->a.db);
	mo.img = c->img;
	mo.model = c->model;
	mo.steady = c->a.opts.steady;
	mo.paths = c->pp;
	if (est_measure(c->cfg, c->s, &mo, &c->meas, &err) < 0)
		return tool_fail("%s", err.msg);
	c->have_meas = 1;
	c->a.opts.measured = &c->meas;
	if (c->meas.note[0])
		fprintf(stderr, "dcpicalc: %s\n", c->meas.note);
	return 0;
}

/* Event counts (this epoch's, and --exact's database), then the culprits. */
static int find_culprits(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	struct prof_profile *p = NULL;
	size_t np = 0;
	char used[256];
	int rc = 0;

	if (est_events_for(c->p, c->np, &c->prof->image, c->cfg, c->img, &c->ev, &err) < 0)
		return tool_fail("%s", err.msg);
	if (c->a.exact_db) {
		if (prof_db_open(c->a.exact_db, 0, &db, &err) < 0 ||
		    rep_load_profiles(db, NULL, &p, &np, used, sizeof(used), &err) < 0 ||
		    est_events_for(p, np, &c->prof->image, c->cfg, c->img, &c->ev, &err) < 0)
			rc = tool_fail("%s", err.msg);
		else if (!c->ev.exact)
			rc = tool_fail("%s: no callgrind-Ir counts of %s in epoch %s (dcpi import "
				       "a callgrind run of the same binary)", c->a.exact_db,
				       img_path(c->img), used);
		prof_profiles_free(p, np);
		if (db)
			prof_db_close(db);
		if (rc)
			return rc;
		est_use_exact(c->cfg, &c->r, c->ev.exact);
	}
	if (est_culprits(c->cfg, &c->r, c->ev.list, c->a.no_events ? 0 : c->ev.n,
			 c->have_cal ? c->cal.skid : 2, &c->cul, &err) < 0)
		return tool_fail("%s", err.msg);
	c->have_cul = 1;
	return 0;
}

static int analyse(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };

	if (cfg_build(c->img, c->proc, &c->cfg, &err) < 0)
		return tool_fail("%s", err.msg);
	c->s = calloc(c->cfg->ninsns + 1, sizeof(*c->s));
	if (!c->s)
		return tool_fail("out of memory");
	if (est_samples_from_profile(c->cfg, c->img, c->prof, c->s, &c->total, &err) < 0)
		return tool_fail("%s", err.msg);
	c->cps = est_cycles_per_sample(c->prof, c->have_meta ? &c->meta : NULL);
	if (load_paths(c) || measure(c))
		return 1;
	if (est_path_obs_from_profile(c->cfg, c->img, c->pp, &c->obs, &err) < 0)
		return tool_fail("%s", err.msg);
	if (est_procedure_paths(c->cfg, c->model, c->s, c->cps, &c->a.opts, &c->a.popts,
				&c->obs, &c->r, &c->pinfo, &err) < 0)
		return tool_fail("%s", err.msg);
	return find_culprits(c);
}

/* ---- output ---------------------------------------------------------- */

/* What analyse() made for one procedure, freed for the next. */
static void free_proc(struct calc_ctx *c)
{
	est_result_free(&c->r);
	est_measurements_free(&c->meas);
	est_path_info_free(&c->pinfo);
	est_path_obs_free(&c->obs);
	est_events_free(&c->ev);
	cul_result_free(&c->cul);
	free(c->s);
	c->s = NULL;
	cfg_free(c->cfg);
	c->cfg = NULL;
	c->have_meas = 0;
	c->a.opts.measured = NULL;
}

/* Does the profile have samples in procedure p? */
static int sampled(const struct calc_ctx *c, const struct img_proc *p)
{
	uint64_t lo, hi;

	if (img_vaddr_to_offset(c->img, p->addr, &lo) < 0 ||
	    img_vaddr_to_offset(c->img, p->addr + p->size - 1, &hi) < 0)
		return 0;
	for (size_t e = 0; e < c->prof->n; e++)
		if (c->prof->e[e].offset >= lo && c->prof->e[e].offset <= hi)
			return 1;
	return 0;
}

/* dcpicalc --summary IMAGE:*: fig. 4 over every sampled procedure. */
static int summary_image(struct calc_ctx *c)
{
	struct rep_stalls t;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < img_nprocs(c->img) && !rc; i++) {
		const struct img_proc *p = img_proc(c->img, i);

		if (p->source == IMG_SRC_PLT || !sampled(c, p))
			continue;
		c->proc = p;
		rc = analyse(c);
		if (!rc)
			rep_stalls_add(&t, c->cfg, &c->r, &c->cul);
		free_proc(c);
	}
	if (rc)
		return rc;
	if (c->a.json) {
		printf("{\"image\": ");
		tool_json_str(stdout, img_path(c->img));
		printf(", \"epoch\": ");
		tool_json_str(stdout, c->epoch);
		printf(", \"summary\": ");
		rep_stalls_json(stdout, &t);
		printf("}\n");
	} else {
		rep_stalls_text(stdout, img_path(c->img), &t);
	}
	return 0;
}

/* The analysis as report/calc.c renders it (shallow copies). */
static void view(const struct calc_ctx *c, struct rep_calc *v)
{
	memset(v, 0, sizeof(*v));
	v->a.all = c->a.all;
	v->a.json = c->a.json;
	v->a.skid_given = c->a.skid_given;
	v->a.opts = c->a.opts;
	v->a.popts = c->a.popts;
	v->epoch = c->epoch;
	v->prof = c->prof;
	v->meta = c->meta;
	v->have_meta = c->have_meta;
	v->img = c->img;
	v->proc = c->proc;
	v->cfg = c->cfg;
	v->model = c->model;
	v->total = c->total;
	v->r = c->r;
	v->cal_path = c->cal_path;
	v->have_cal = c->have_cal;
	v->meas = c->meas;
	v->have_meas = c->have_meas;
	v->meas_why = c->meas_why;
	v->pp = c->pp;
	v->pinfo = c->pinfo;
	v->ev = c->ev;
	v->cul = c->cul;
}

static void print_json(const struct calc_ctx *c, FILE *f)
{
	struct rep_calc v;

	view(c, &v);
	rep_calc_json(f, &v);
}

static void print_text(const struct calc_ctx *c)
{
	struct rep_calc v;

	view(c, &v);
	rep_calc_text(stdout, &v);
}

static int print_static(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };
	struct rep_calc v;

	if (!c->cfg && cfg_build(c->img, c->proc, &c->cfg, &err) < 0)
		return tool_fail("%s", err.msg);
	view(c, &v);
	if (rep_calc_static(stdout, &v, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

/* ---- --static: the model's best case, no samples ------------------------ */

static int load_static(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };

	if (pick_model(c))
		return 1;
	if (img_open(c->a.image, 0, &c->img, &err) < 0)
		return tool_fail("%s", err.msg);
	if (img_proc_find(c->img, c->a.proc, &c->proc, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

/* dcpilist: the same analysis, listed by source line (report/list.c). */
static void print_list(struct calc_ctx *c)
{
	struct rep_calc v;

	view(c, &v);
	rep_calc_list(stdout, &v, c->a.json);
}

/* dcpicfg with a profile: the annotated graph (report/cfgviz.c). */
static int print_cfg(struct calc_ctx *c)
{
	struct rep_cfg_heat h = {
		.r = &c->r, .cul = &c->cul, .hot = c->a.all ? 1 : c->a.hot,
		.edge_obs = c->pinfo.used ? c->pinfo.edge_obs : NULL,
	};
	const char *fmt = c->a.format ? c->a.format : c->a.json ? "json" : "dot";
	struct dcpi_err err = { 0 };
	FILE *f = stdout;
	char *mem = NULL;
	size_t len = 0;
	int rc = 0;

	if (strcmp(fmt, "dot") && strcmp(fmt, "svg") && strcmp(fmt, "png") && strcmp(fmt, "pdf") &&
	    strcmp(fmt, "json"))
		return tool_fail("%s: unknown format (dot, svg, png, pdf, json)", fmt);
	/* -o: the whole graph in memory first, then written by the one rule for
	 * outputs (include/dcpi/safefile.h): a FIFO, a device or a full disk
	 * neither hangs the open nor leaves a truncated file */
	if (c->a.output && !(f = open_memstream(&mem, &len)))
		return tool_fail("%s: %s", c->a.output, strerror(errno));
	if (!strcmp(fmt, "json")) {
		print_json(c, f);
	} else if (rep_cfg_render(c->cfg, &h, fmt, f, &err) < 0) {
		rc = tool_fail("%s", err.msg);
	}
	if (f == stdout)
		return rc;
	if (fclose(f) != 0 && !rc)
		rc = tool_fail("%s: out of memory", c->a.output);
	if (!rc && dcpi_write_output(c->a.output, mem, len, 0644, &err) < 0)
		rc = tool_fail("%s", err.msg);
	free(mem);
	return rc;
}

static int calc_main(int argc, char **argv, int list)
{
	struct calc_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = parse_args(argc, argv, &c.a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (c.a.static_only && c.a.image) {
		rc = load_static(&c);
		if (rc == 0)
			rc = print_static(&c);
		goto out;
	}
	rc = load(&c);
	if (rc == 0 && c.a.static_only) {
		rc = print_static(&c);
		goto out;
	}
	if (rc == 0 && whole_image(c.a.proc) && !c.a.image) {
		if (!c.a.summary || list) {
			rc = tool_fail("%s: every procedure at once is for --summary", c.a.proc);
			goto out;
		}
		rc = summary_image(&c);
		goto out;
	}
	if (rc == 0)
		rc = analyse(&c);
	if (rc == 0) {
		if (list == 2)
			rc = print_cfg(&c);
		else if (list)
			print_list(&c);
		else if (c.a.json)
			print_json(&c, stdout);
		else if (c.a.summary)
			rep_culprit_summary_text(stdout, c.proc->name, c.cfg, &c.r, &c.cul);
		else
			print_text(&c);
	}
out:
	est_result_free(&c.r);
	est_measurements_free(&c.meas);
	est_path_info_free(&c.pinfo);
	est_path_obs_free(&c.obs);
	est_events_free(&c.ev);
	cul_result_free(&c.cul);
	path_profile_free(&c.file_pp);
	free(c.s);
	cfg_free(c.cfg);
	if (c.img)
		img_close(c.img);
	prof_profiles_free(c.p, c.np);
	if (c.db)
		prof_db_close(c.db);
	return rc;
}

int cmd_calc(int argc, char **argv)
{
	return calc_main(argc, argv, 0);
}

int cmd_list(int argc, char **argv)
{
	return calc_main(argc, argv, 1);
}

/* dcpicfg PROC when the database has samples of it (tools/cfg.c). */
int calc_cfg(int argc, char **argv)
{
	return calc_main(argc, argv, 2);
}
