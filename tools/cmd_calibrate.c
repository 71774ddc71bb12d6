/*
 * tools/cmd_calibrate.c - `dcpi calibrate`: this machine's instruction costs
 * (the model file; estimate/calibrate/tables.c) and then where its samples
 * land (estimate/calibrate/skid.c, docs/estimate.md "Calibration: where
 * samples land"), stored beside the profiles as DIR/calibration-<model>.txt,
 * which dcpicalc reads.  Parses options, calls the library and prints:
 * progress on stderr, the changes and the fit on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/calibrate.h"
#include "dcpi/report.h"
#include "tools.h"

struct cal_args {
	const char *db, *model, *out, *workload;
	unsigned long scale, cg_scale;
	int keep, quiet;
	/* the instruction tables */
	const char *base, *model_file, *measurements;
	const char *refit;		/* fit to these saved probe cycles, no timing */
	int tables_only, no_tables, passes, cpu;	/* cpu -2: the last */
};

static const char cal_usage[] =
	"usage: dcpi calibrate [options]\n"
	"  measure this machine's instruction costs (the model file), then where\n"
	"  samples land (skid) against exact counts\n"
	"      --fit-model     the instruction tables only: time the probes, fit the\n"
	"                      model, write the model file (about a minute); the old\n"
	"                      spelling --model with no NAME still works, deprecated\n"
	"      --no-fit-model  the skid calibration only (also --no-model)\n"
	"      --base NAME     fit starting from this shipped model (default: CPUID's)\n"
	"      --model-file F  write the model file here (default: this machine's,\n"
	"                      $DCPI_MODEL_DIR or ~/.local/share/dcpi/models)\n"
	"      --passes N      timing passes over the probes (default 5)\n"
	"      --measurements F  also write the probes' cycles to F (name, hex, cycles)\n"
	"      --refit F       fit to the probes' cycles saved in F (--measurements)\n"
	"                      instead of timing them: the same figures from --base\n"
	"                      tables, or a quiet run's figures again\n"
	"      --cpu N         pin the timing to CPU N (default: the last)\n"
	"      --db DIR        database the calibration is stored with (default $DCPIDB,\n"
	"                      then ./dcpidb): DIR/calibration-<model>.txt\n"
	"  -m, --model NAME    pipeline model (default: the model file, else CPUID's)\n"
	"  -o, --output FILE   write the calibration here instead\n"
	"      --workload F    a binary with the loops sk_imul ... (SCALE as its one\n"
	"                      argument; default: this dcpi's own __skidloops)\n"
	"      --scale N       loop scale sampled (default 400; callgrind runs 1/200)\n"
	"      --keep          keep the scratch directory\n"
	"  -q, --quiet         no summary\n";

/*
 * --model NAME picks a model as in every command; --model alone once meant
 * --fit-model and still does (with a note) where no NAME can follow it.
 */
static void model_option(int argc, char **argv, struct cal_args *a)
{
	if (optarg)
		a->model = optarg;
	else if (optind < argc && argv[optind][0] != '-')
		a->model = argv[optind++];
	else {
		a->tables_only = 1;
		fprintf(stderr, "%s: note: --model without NAME is deprecated: it is "
			"--fit-model (--model NAME picks a model)\n", tool_name);
	}
}

static int parse_args(int argc, char **argv, struct cal_args *a)
{
	struct tool_opts o = { .usage = cal_usage, .shortopts = "m:o:qh",
			       .longopts = "fit-model:T no-fit-model:N "
					   "model?M "	/* -m; bare: --fit-model */
					   "no-model:N base=b model-file=F passes=P cpu=C "
					   "measurements=W refit=R workload=w scale=s keep:k",
			       .common = TOOL_O_DB | TOOL_O_QUIET | TOOL_O_OUTPUT };
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->scale = 400;
	a->passes = 5;
	a->cpu = -2;
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'm': a->model = optarg; break;
		case 'M': model_option(argc, argv, a); break;
		case 'T': a->tables_only = 1; break;
		case 'N': a->no_tables = 1; break;
		case 'b': a->base = optarg; break;
		case 'W': a->measurements = optarg; break;
		case 'R': a->refit = optarg; a->tables_only = 1; break;
		case 'F': a->model_file = optarg; break;
		case 'P':
			a->passes = (int)strtol(optarg, &end, 10);
			if (*end || a->passes < 1 || a->passes > 64)
				return tool_fail("--passes %s: not 1 to 64", optarg);
			break;
		case 'C':
			a->cpu = (int)strtol(optarg, &end, 10);
			if (*end || a->cpu < -1)
				return tool_fail("--cpu %s: not a CPU number", optarg);
			break;
		case 'w': a->workload = optarg; break;
		case 's':
			a->scale = strtoul(optarg, &end, 10);
			if (*end || !a->scale || a->scale > 1000000)
				return tool_fail("--scale %s: not 1 to 1000000", optarg);
			break;
		case 'k': a->keep = 1; break;
		}
	}
	if (c < 0)
		return c == TOOL_OPT_HELP ? -1 : 1;
	a->db = o.val.db;
	a->quiet = o.val.quiet;
	a->out = o.val.out;
	if (optind != argc || (a->tables_only && a->no_tables)) {
		tool_usage(stderr, cal_usage);
		return 1;
	}
	a->cg_scale = a->scale >= 200 ? a->scale / 200 : 1;
	return 0;
}

/* Progress lines on stderr, unless --quiet. */
static void note(void *arg, const char *msg)
{
	const struct cal_args *a = arg;

	if (!a->quiet || !strncmp(msg, "note: ", 6))
		fprintf(stderr, "%s: %s\n", tool_name, msg);
}

static void progress(void *arg, int pass, int passes, double add12)
{
	const struct cal_args *a = arg;

	if (!a->quiet)
		fprintf(stderr, "%s: probes, pass %d of %d (12 independent adds: %.2f cycles)\n",
			tool_name, pass, passes, add12);
}

static void tables_report(const struct cal_args *a, const struct est_calib_tables *t)
{
	const struct model_fit_report *rep = &t->rep;
	double lo = 1e9, hi = 0;

	if (a->quiet)
		return;
	if (t->loop_lines)
		fprintf(stderr, "%s: a small loop %.2f cycles an iteration inside a line, %.2f "
			"across 64 bytes, %.2f across 32: loop_line_bytes %d\n", tool_name,
			t->loop_fig[0], t->loop_fig[1], t->loop_fig[2], t->loop_line_bytes);
	for (int p = 0; p < a->passes; p++) {
		lo = t->load[p] > 0 && t->load[p] < lo ? t->load[p] : lo;
		hi = t->load[p] > hi ? t->load[p] : hi;
	}
	printf("model %s fitted to %zu probes: mean error %.1f%% -> %.1f%%, %d values moved, "
	       "%d ports added\n", t->fitted->name, rep->nused, 100 * rep->err_before,
	       100 * rep->err_after, rep->nchanged, rep->ports_added);
	if (a->refit)
		printf("probe cycles from %s (not timed now)\n", a->refit);
	else
		printf("contention probe (12 independent adds) over the passes: %.2f .. %.2f "
		       "cycles\n", lo, hi);
	fputs(rep->log, stdout);
	printf("written to %s (dcpi model --show)\n", t->path);
}

/* The instruction tables: time the probes, fit, write the model file. */
static int tables(struct cal_args *a, struct est_calib_tables *t)
{
	struct est_calib_tables_opts o = {
		.base = a->base, .model_file = a->model_file, .measurements = a->measurements,
		.refit = a->refit, .passes = a->passes, .cpu = a->cpu,
		.note = note, .progress = progress, .arg = a,
	};
	struct dcpi_err err = { 0 };

	if (est_calib_tables(&o, t, &err) < 0)
		return tool_fail("%s", err.msg);
	tables_report(a, t);
	return 0;
}

/* Where the calibration goes: -o, else the database's file. */
static int store(const struct cal_args *a, const struct est_calibration *cal, char *path,
		 size_t len)
{
	struct dcpi_err err = { 0 };
	const char *dir = tool_db_dir(a->db);

	if (a->out) {
		snprintf(path, len, "%s", a->out);
		if (est_calib_write_output(path, cal, &err) < 0)
			return tool_fail("%s", err.msg);
		return 0;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return tool_fail("%s: %s", dir, strerror(errno));
	if (est_calib_path(dir, cal->model, path, len) < 0)
		return tool_fail("%s: name too long", dir);
	if (est_calib_write(path, cal, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}

/* Where samples land, with the model just fitted (or -m's, or this CPU's). */
static int skid(struct cal_args *a, const struct model *fitted)
{
	struct est_calib_skid s = {
		.workload = a->workload, .scale = a->scale, .cg_scale = a->cg_scale,
		.note = note, .arg = a,
	};
	struct dcpi_err err = { 0 };
	char self[PATH_MAX], path[PATH_MAX];
	ssize_t n;
	int rc = 1;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return tool_fail("/proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	s.self = self;
	s.model = a->model ? model_by_name(a->model) : fitted ? fitted : model_for_this_cpu();
	if (!s.model)
		return tool_fail("--model %s: no such model", a->model);
	if (est_calib_skid(&s, &err) < 0)
		tool_fail("%s", err.msg);
	else if (!store(a, &s.cal, path, sizeof(path)))
		rc = 0;
	if (!rc && !a->quiet)
		rep_calibration_text(stdout, &s.cal, path);
	if (s.scratch[0] && a->keep)
		fprintf(stderr, "%s: scratch kept in %s\n", tool_name, s.scratch);
	est_calib_skid_clean(&s, a->keep);
	return rc;
}

int cmd_calibrate(int argc, char **argv)
{
	struct est_calib_tables t = { 0 };
	struct cal_args a;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.no_tables) {
		rc = tables(&a, &t);
		if (rc || a.tables_only)
			goto out;
	}
	rc = skid(&a, t.fitted);
out:
	est_calib_tables_free(&t);
	return rc;
}
