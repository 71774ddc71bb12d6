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
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "tools.h"

struct calc_args {
	const char *proc, *db, *epoch, *image, *model, *event, *calib;
	struct est_opts opts;
	int all, json, static_only, skid_given, no_calib;
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
	"      --static        the model's best-case schedule only (M_i, reason,\n"
	"                      culprit), no samples needed; with --image, no database\n"
	"  -a, --all           every block, not only the hot ones\n"
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
		{ "static", no_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	est_opts_default(&a->opts);
	optind = 1;
	while ((c = getopt_long(argc, argv, "e:m:ah", opts, NULL)) != -1) {
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
	if (img_open(c->a.image, 0, &c->img, &err) < 0)
		return tool_fail("%s", err.msg);
	if (img_proc_find(c->img, c->a.proc, &c->proc, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

static int find_target(struct calc_ctx *c)
{
	const char *ev = pick_event(c);
	struct dcpi_err err = { 0 };
	size_t k;

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

	if (prof_db_open(tool_db_dir(c->a.db), 0, &c->db, &err) < 0 ||
	    rep_load_profiles(c->db, c->a.epoch, &c->p, &c->np, c->epoch, sizeof(c->epoch),
			      &err) < 0)
		return tool_fail("%s", err.msg);
	me = c->epoch;
	if (!strcmp(c->epoch, "all") &&
	    prof_db_latest_epoch(c->db, latest, sizeof(latest), &err) == 0)
		me = latest;	/* the newest calibration stands for all */
	c->have_meta = prof_epoch_meta_read(c->db, me, &c->meta, &err) == 0;
	if (pick_model(c) || load_calibration(c))
		return 1;
	return find_target(c);
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
	if (est_procedure(c->cfg, c->model, c->s, c->cps, &c->a.opts, &c->r, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

/* ---- output ---------------------------------------------------------- */

static int block_hot(const struct calc_ctx *c, size_t b)
{
	const struct est_block *eb = &c->r.blocks[b];
	double xmax = 0;

	if (c->a.all)
		return c->cfg->blocks[b].n > 0;
	if (!c->cfg->blocks[b].n)
		return 0;
	for (size_t k = 0; k < c->r.nblocks; k++)
		xmax = fmax(xmax, c->r.blocks[k].executions);
	return eb->samples >= 0.01 * c->total && eb->samples > 0 ? 1 :
	       xmax > 0 && eb->executions >= 0.01 * xmax;
}

static void json_block_edges(const struct calc_ctx *c)
{
	const struct cfg *cfg = c->cfg;

	printf("\n], \"blocks\": [");
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		const struct est_block *eb = &c->r.blocks[b];
		int cls = bl->cls;

		if (!bl->n)
			continue;
		printf("%s\n  {\"start\": \"0x%llx\", \"end\": \"0x%llx\", \"executions\": %.17g, "
		       "\"best_cpi\": %.6g, \"actual_cpi\": %.6g, \"samples\": %.17g, "
		       "\"best_cycles\": %.6g, \"class\": %d, \"loop_depth\": %d, "
		       "\"source\": \"%s\", \"confidence\": \"%s\"}",
		       b ? "," : "", (unsigned long long)bl->start, (unsigned long long)bl->end,
		       eb->executions, eb->best_cpi, eb->actual_cpi, eb->samples, eb->best, cls,
		       bl->loop_depth, cls >= 0 ? est_source_name(c->r.classes[cls].source) : "none",
		       est_conf_name(eb->conf));
	}
	printf("\n], \"edges\": [");
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];

		printf("%s\n  {\"from\": \"0x%llx\", \"to\": ", e ? "," : "",
		       (unsigned long long)cfg->blocks[ed->from].start);
		if (ed->to == cfg->exit)
			printf("\"exit\"");
		else
			printf("\"0x%llx\"", (unsigned long long)cfg->blocks[ed->to].start);
		printf(", \"kind\": \"%s\", \"executions\": %.17g, \"probability\": %.6g, "
		       "\"confidence\": \"%s\"}", cfg_edge_kind_name(ed->kind),
		       c->r.edges[e].executions, c->r.edges[e].prob,
		       est_conf_name(c->r.edges[e].conf));
	}
	printf("\n]}\n");
}

static void print_json(const struct calc_ctx *c)
{
	const struct cfg *cfg = c->cfg;
	int first = 1;

	printf("{\"procedure\": ");
	tool_json_str(stdout, c->proc->name);
	printf(", \"image\": ");
	tool_json_str(stdout, img_path(c->img));
	printf(", \"epoch\": ");
	tool_json_str(stdout, c->epoch);
	printf(", \"event\": ");
	tool_json_str(stdout, c->prof->event);
	printf(", \"calibration\": ");
	if (c->have_cal)
		tool_json_str(stdout, c->cal_path);
	else
		printf("null");
	printf(", \"model\": \"%s\", \"method\": \"%s\", \"window\": \"%s\", "
	       "\"cycles_per_sample\": %.17g, \"calibrated\": %s, \"relative\": %s, "
	       "\"samples\": %.17g, \"flow_residual\": %.3g, \"missing_edges\": %s,\n"
	       "\"instructions\": [", model_name(c->model), est_method_name(c->r.method),
	       est_window_name(c->r.window), c->r.cycles_per_sample,
	       c->have_meta && c->meta.calibrated ? "true" : "false",
	       c->r.relative ? "true" : "false", c->total, c->r.flow_residual,
	       cfg->missing_edges ? "true" : "false");
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			const struct cfg_insn *in = &cfg->insns[i];
			const struct est_insn *ei = &c->r.insns[i];
			uint64_t off = 0;

			img_vaddr_to_offset(c->img, in->addr, &off);
			printf("%s\n  {\"address\": \"0x%llx\", \"offset\": %llu, \"samples\": %.17g, "
			       "\"executions\": %.17g, \"cpi\": %.6g, \"m\": %.4g, "
			       "\"confidence\": \"%s\", \"text\": ", first ? "" : ",",
			       (unsigned long long)in->addr, (unsigned long long)off, ei->samples,
			       ei->executions, ei->cpi, ei->m, est_conf_name(ei->conf));
			tool_json_str(stdout, in->text);
			printf("}");
			first = 0;
		}
	}
	json_block_edges(c);
}

static void print_source(struct calc_ctx *c, uint64_t addr, char *last, size_t len)
{
	struct img_line ln;
	char buf[PROF_PATH_MAX + 32];
	const char *base;

	if (img_line_at(c->img, addr, &ln) < 0)
		return;
	base = strrchr(ln.file, '/');
	snprintf(buf, sizeof(buf), "%s:%u", base ? base + 1 : ln.file, ln.line);
	if (!strcmp(buf, last))
		return;
	snprintf(last, len, "%s", buf);
	printf("          %s\n", buf);
}

/* Bubbles above instruction i: static (s) with the model's reason, and
 * dynamic (d): the cycles beyond the best case, culprit not yet known. */
static void print_bubbles(const struct calc_ctx *c, uint32_t i)
{
	const struct est_insn *ei = &c->r.insns[i];
	double dyn = ei->cpi - ei->m;

	if (ei->m >= 1.5 && ei->reason != MODEL_R_NONE) {
		printf("   s  %s", model_reason_name((enum model_reason)ei->reason));
		if (ei->culprit >= 0)
			printf(" on 0x%llx", (unsigned long long)c->cfg->insns[ei->culprit].addr);
		printf("\n");
		if (ei->m >= 2.5)
			printf("   s  ... %.1fcy\n", ei->m);
	}
	if (ei->executions > 0 && dyn >= 1.0 && ei->conf != EST_CONF_NONE) {
		printf("   d  dynamic stall\n");
		if (dyn >= 2.0)
			printf("   d  ... %.1fcy (culprit unknown)\n", dyn);
	}
}

static void print_block(struct calc_ctx *c, size_t b, char *last, size_t len)
{
	const struct cfg_block *bl = &c->cfg->blocks[b];
	const struct est_block *eb = &c->r.blocks[b];
	double actual = eb->executions > 0 ? eb->cycles / eb->executions : 0;

	printf("\n*** Best-case %.1f/%u = %.2fCPI\n", eb->best, bl->n, eb->best_cpi);
	if (eb->executions > 0)
		printf("*** Actual %.1f/%u = %.2fCPI\n", actual, bl->n, eb->actual_cpi);
	else
		printf("*** Actual -/%u (not executed)\n", bl->n);
	printf("*** Executions %.4g (%s confidence)\n", eb->executions, est_conf_name(eb->conf));
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		const struct cfg_insn *in = &c->cfg->insns[i];
		const struct est_insn *ei = &c->r.insns[i];

		print_source(c, in->addr, last, len);
		print_bubbles(c, i);
		printf("%8llx  %-40s %8.0f", (unsigned long long)in->addr, in->text, ei->samples);
		if (ei->executions > 0)
			printf(" %7.1fcy", ei->cpi);
		else
			printf(" %9s", "-");
		if (ei->culprit >= 0 && ei->reason != MODEL_R_NONE)
			printf(" %llx", (unsigned long long)c->cfg->insns[ei->culprit].addr);
		printf("\n");
	}
}

static void print_text(struct calc_ctx *c)
{
	char last[PROF_PATH_MAX + 32] = "";
	size_t shown = 0;

	printf("dcpicalc %s in %s\n", c->proc->name, img_path(c->img));
	printf("epoch %s, event %s, %.0f samples, model %s, method %s, window %s\n", c->epoch,
	       c->prof->event, c->total, model_name(c->model), est_method_name(c->r.method),
	       est_window_name(c->r.window));
	if (c->r.relative)
		printf("uncalibrated: counts are relative (1 sample = 1 cycle)\n");
	else
		printf("1 sample = %.0f cycles%s\n", c->r.cycles_per_sample,
		       c->have_meta && c->meta.calibrated ? " (calibrated)" :
		       " (period x clock, uncalibrated)");
	if (c->have_cal)
		printf("calibration %s: skid %d instruction%s, %.0f%% handed back%s\n",
		       c->cal_path, c->a.opts.skid, c->a.opts.skid > 1 ? "s" : "",
		       100 * c->a.opts.skid_share, c->a.skid_given ? " (--skid given)" : "");
	if (c->cfg->missing_edges)
		printf("note: the CFG is missing edges (unresolved indirect jump): every block "
		       "is its own class\n");
	printf("Addr      Instruction                               Samples     CPI Culprit\n");
	for (size_t b = 0; b < c->cfg->nblocks; b++) {
		if (!block_hot(c, b))
			continue;
		print_block(c, b, last, sizeof(last));
		shown++;
	}
	if (!c->a.all && shown < c->cfg->nblocks - 1)
		printf("\n(%zu of %zu blocks shown; --all for every block)\n", shown,
		       c->cfg->nblocks - 1);
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

static int print_static(struct calc_ctx *c)
{
	struct dcpi_err err = { 0 };
	const struct cfg *cfg;
	double *m = NULL;
	int *reason = NULL, *culprit = NULL, rc = 1;

	if (!c->cfg && cfg_build(c->img, c->proc, &c->cfg, &err) < 0)
		return tool_fail("%s", err.msg);
	cfg = c->cfg;
	m = calloc(cfg->ninsns + 1, sizeof(*m));
	reason = calloc(cfg->ninsns + 1, sizeof(*reason));
	culprit = calloc(cfg->ninsns + 1, sizeof(*culprit));
	if (!m || !reason || !culprit) {
		tool_fail("out of memory");
		goto out;
	}
	if (est_model_m(cfg, c->model, c->a.opts.steady, m, reason, culprit, &err) < 0) {
		tool_fail("%s", err.msg);
		goto out;
	}
	if (c->a.json) {
		printf("{\"procedure\": ");
		tool_json_str(stdout, c->proc->name);
		printf(", \"image\": ");
		tool_json_str(stdout, img_path(c->img));
		printf(", \"model\": \"%s\", \"static\": true,\n\"instructions\": [",
		       model_name(c->model));
	} else {
		printf("dcpicalc --static %s in %s, model %s (best case: every load hits L1, "
		       "every branch predicted)\n", c->proc->name, img_path(c->img),
		       model_name(c->model));
		printf("Addr      Instruction                                   M_i  Reason      "
		       "Culprit\n");
	}
	for (size_t b = 0, first = 1; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double best = 0;

		if (!bl->n)
			continue;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			best += m[i];
		if (!c->a.json)
			printf("\n*** Best-case %.1f/%u = %.2fCPI%s\n", best, bl->n, best / bl->n,
			       bl->loop_depth ? "  (in a loop)" : "");
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++, first = 0) {
			const struct cfg_insn *in = &cfg->insns[i];
			const char *why = reason[i] != MODEL_R_NONE ?
					  model_reason_name((enum model_reason)reason[i]) : "";

			if (c->a.json) {
				printf("%s\n  {\"address\": \"0x%llx\", \"m\": %.4g, \"reason\": "
				       "\"%s\", \"culprit\": ", first ? "" : ",",
				       (unsigned long long)in->addr, m[i],
				       model_reason_name((enum model_reason)reason[i]));
				if (culprit[i] >= 0)
					printf("\"0x%llx\"", (unsigned long long)
					       cfg->insns[culprit[i]].addr);
				else
					printf("null");
				printf(", \"text\": ");
				tool_json_str(stdout, in->text);
				printf("}");
				continue;
			}
			printf("%8llx  %-44s %5.2f  %-11s", (unsigned long long)in->addr, in->text,
			       m[i], why);
			if (culprit[i] >= 0 && reason[i] != MODEL_R_NONE)
				printf(" %llx", (unsigned long long)cfg->insns[culprit[i]].addr);
			printf("\n");
		}
	}
	if (c->a.json)
		printf("\n]}\n");
	rc = 0;
out:
	free(m);
	free(reason);
	free(culprit);
	return rc;
}

int cmd_calc(int argc, char **argv)
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
	if (rc == 0)
		rc = analyse(&c);
	if (rc == 0) {
		if (c.a.json)
			print_json(&c);
		else
			print_text(&c);
	}
out:
	est_result_free(&c.r);
	free(c.s);
	cfg_free(c.cfg);
	if (c.img)
		img_close(c.img);
	prof_profiles_free(c.p, c.np);
	if (c.db)
		prof_db_close(c.db);
	return rc;
}
