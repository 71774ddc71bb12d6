/*
 * calibrate.c - `dcpi calibrate`: measure where this machine's samples land
 * (docs/estimate.md "Calibration: where samples land"; estimate/calibrate/attribution.c
 * computes it).
 *
 * Runs its loops (`dcpi __skidloops`, tools/skidloops.c, built into this
 * binary; or --workload) under `dcpi record` and under
 * valgrind's callgrind for exact counts, imports the callgrind output into a
 * scratch database, fits the attribution per loop and stores the result
 * beside the profiles as DIR/calibration-<model>.txt, which dcpicalc reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/import.h"
#include "dcpi/model.h"
#include "dcpi/profile.h"
#include "calibrate.h"
#include "tools.h"

static const char *const loops[] = { "sk_imul", "sk_load", "sk_div", "sk_alt", "sk_branch" };
#define NLOOPS (sizeof(loops) / sizeof(loops[0]))


static const char cal_usage[] =
	"usage: dcpi calibrate [options]\n"
	"  measure this machine's instruction costs (the model file), then where\n"
	"  samples land (skid) against exact counts\n"
	"      --model         the instruction tables only: time the probes, fit the\n"
	"                      model, write the model file (about a minute)\n"
	"      --no-model      the skid calibration only\n"
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
	"  -m, --model=NAME    pipeline model (default: the model file, else CPUID's)\n"
	"  -o, --output FILE   write the calibration here instead\n"
	"      --workload F    a binary with the loops sk_imul ... (SCALE as its one\n"
	"                      argument; default: this dcpi's own __skidloops)\n"
	"      --scale N       loop scale sampled (default 400; callgrind runs 1/200)\n"
	"      --keep          keep the scratch directory\n"
	"  -q, --quiet         no summary\n";

static int parse_args(int argc, char **argv, struct cal_args *a)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "model", optional_argument, NULL, 'M' },
		{ "no-model", no_argument, NULL, 'N' },
		{ "base", required_argument, NULL, 'b' },
		{ "model-file", required_argument, NULL, 'F' },
		{ "passes", required_argument, NULL, 'P' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "measurements", required_argument, NULL, 'W' },
		{ "refit", required_argument, NULL, 'R' },
		{ "output", required_argument, NULL, 'o' },
		{ "workload", required_argument, NULL, 'w' },
		{ "scale", required_argument, NULL, 's' },
		{ "keep", no_argument, NULL, 'k' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->scale = 400;
	a->passes = 5;
	a->cpu = -2;
	optind = 1;
	while ((c = getopt_long(argc, argv, "m:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->db = optarg; break;
		case 'm': a->model = optarg; break;
		case 'M':
			if (optarg)
				a->model = optarg;
			else
				a->tables_only = 1;
			break;
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
		case 'o': a->out = optarg; break;
		case 'w': a->workload = optarg; break;
		case 's':
			a->scale = strtoul(optarg, &end, 10);
			if (*end || !a->scale || a->scale > 1000000)
				return tool_fail("--scale %s: not 1 to 1000000", optarg);
			break;
		case 'k': a->keep = 1; break;
		case 'q': a->quiet = 1; break;
		case 'h': fputs(cal_usage, stdout); return -1;
		default: fputs(cal_usage, stderr); return 1;
		}
	}
	if (optind != argc || (a->tables_only && a->no_tables)) {
		fputs(cal_usage, stderr);
		return 1;
	}
	a->cg_scale = a->scale >= 200 ? a->scale / 200 : 1;
	return 0;
}

/* Run argv with stdout and stderr to log; 0 when it exits 0. */
static int run(char *const argv[], const char *log)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return tool_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return tool_fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return tool_fail("%s failed (status %d): see %s", argv[0],
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
	return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

struct cal_ctx {
	struct cal_args a;
	char tmp[64], self[PATH_MAX], wl[PATH_MAX];
	char *wl_sub;			/* "__skidloops" when wl is this dcpi */
	const struct model *model;
	struct prof_profile *rec, *cg;
	size_t nrec, ncg;
	const struct prof_profile *rp, *cp;
	double cps;
	struct image *img;
	struct est_calibration cal;
	struct model *fitted;		/* from calibrate_tables, or NULL */
};


static int collect(struct cal_ctx *c)
{
	char recdb[128], cgout[128], log[128], scale[32], cgscale[32], outarg[160];
	/* no path samples: their single steps would be charged to the loops' cycles */
	char *rec[] = { c->self, "record", "-e", "cpu-clock", "-q", "--no-paths", "--db", recdb,
			"--",
			c->wl, c->wl_sub ? c->wl_sub : scale, c->wl_sub ? scale : NULL, NULL };
	char *vg[] = { "valgrind", "--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes",
		       outarg, c->wl, c->wl_sub ? c->wl_sub : cgscale, c->wl_sub ? cgscale : NULL,
		       NULL };

	snprintf(recdb, sizeof(recdb), "%s/rec", c->tmp);
	snprintf(cgout, sizeof(cgout), "%s/callgrind.out", c->tmp);
	snprintf(outarg, sizeof(outarg), "--callgrind-out-file=%s", cgout);
	snprintf(scale, sizeof(scale), "%lu", c->a.scale);
	snprintf(cgscale, sizeof(cgscale), "%lu", c->a.cg_scale);
	if (!c->a.quiet)
		fprintf(stderr, "%s: sampling %s %s\n", tool_name, c->wl, scale);
	snprintf(log, sizeof(log), "%s/record.log", c->tmp);
	if (run(rec, log))
		return 1;
	if (!c->a.quiet)
		fprintf(stderr, "%s: counting under callgrind (%s)\n", tool_name, cgscale);
	snprintf(log, sizeof(log), "%s/callgrind.log", c->tmp);
	return run(vg, log);
}

static const struct prof_profile *pick(const struct prof_profile *p, size_t n,
				       const char *event, const struct prof_image_id *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].event, event) && prof_image_id_equal(&p[i].image, id))
			return &p[i];
	return NULL;
}

static int load(struct cal_ctx *c)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	struct import_stats st;
	struct prof_epoch_meta meta;
	struct prof_image_id id;
	char path[128], epoch[256];
	int have_meta, rc = 1;

	snprintf(path, sizeof(path), "%s/rec", c->tmp);
	if (prof_db_open(path, 0, &db, &err) < 0 ||
	    prof_db_latest_epoch(db, epoch, sizeof(epoch), &err) < 0 ||
	    prof_epoch_read(db, epoch, &c->rec, &c->nrec, &err) < 0)
		goto out;
	have_meta = prof_epoch_meta_read(db, epoch, &meta, &err) == 0;
	prof_db_close(db);
	snprintf(path, sizeof(path), "%s/cg", c->tmp);
	db = NULL;
	if (prof_db_open(path, PROF_DB_CREATE, &db, &err) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/callgrind.out", c->tmp);
	if (import_callgrind(path, db, &st, &err) < 0 ||
	    prof_epoch_read(db, st.epoch, &c->cg, &c->ncg, &err) < 0)
		goto out;
	if (prof_image_id_from_file(&id, c->wl, &err) < 0)
		goto out;
	c->rp = pick(c->rec, c->nrec, "cpu-clock", &id);
	c->cp = pick(c->cg, c->ncg, "callgrind-Ir", &id);
	if (!c->rp || !c->cp) {
		dcpi_errf(&err, -ENOENT, "%s: no %s profile of it", c->wl,
			  c->rp ? "callgrind-Ir" : "cpu-clock");
		goto out;
	}
	c->cps = est_cycles_per_sample(c->rp, have_meta ? &meta : NULL);
	if (img_open(c->wl, 0, &c->img, &err) < 0)
		goto out;
	rc = 0;
out:
	if (db)
		prof_db_close(db);
	return rc ? tool_fail("%s", err.msg) : 0;
}

static int measure_loop(struct cal_ctx *c, const char *name)
{
	struct dcpi_err err = { 0 };
	const struct img_proc *proc = img_proc_by_name(c->img, name);
	struct cfg *cfg = NULL;
	double *s = NULL, *e = NULL, tot;
	double f = (double)c->a.scale / (double)c->a.cg_scale;
	int rc = 1;

	if (!proc)
		return tool_fail("%s: no procedure %s", c->wl, name);
	if (cfg_build(c->img, proc, &cfg, &err) < 0)
		goto out;
	s = calloc(cfg->ninsns + 1, sizeof(*s));
	e = calloc(cfg->ninsns + 1, sizeof(*e));
	if (!s || !e) {
		dcpi_errf(&err, -ENOMEM, "out of memory");
		goto out;
	}
	if (est_samples_from_profile(cfg, c->img, c->rp, s, &tot, &err) < 0 ||
	    est_samples_from_profile(cfg, c->img, c->cp, e, &tot, &err) < 0)
		goto out;
	for (size_t i = 0; i < cfg->ninsns; i++)
		e[i] *= f;
	if (est_calib_loop(cfg, c->model, e, s, c->cps, &c->cal.loops[c->cal.nloops], &err) < 0)
		goto out;
	c->cal.nloops++;
	rc = 0;
out:
	free(s);
	free(e);
	cfg_free(cfg);
	return rc ? tool_fail("%s", err.msg) : 0;
}

static void summary(const struct cal_ctx *c, const char *path)
{
	const struct est_calibration *cal = &c->cal;

	printf("calibration of model %s, event %s, 1 sample = %.0f cycles\n", cal->model,
	       cal->event, cal->cycles_per_sample);
	printf("%-10s %7s %8s %8s %6s  %-29s %6s %6s %6s %5s\n", "loop", "samples", "cyc/it",
	       "model/it", "used", "lands k later: 0    1    2    3    4", "cross", "head",
	       "headEx", "fit");
	for (size_t l = 0; l < cal->nloops; l++) {
		const struct est_calib_loop *lp = &cal->loops[l];

		printf("%-10s %7.0f %8.2f %8.2f %6s  %15s", lp->name, lp->samples, lp->cyc_iter,
		       lp->model_iter, lp->used ? "yes" : "no", "");
		for (int k = 0; k <= EST_CALIB_K; k++)
			printf("%4.0f%%", 100 * lp->attrib[k]);
		printf(" %5.1f%% %5.1f%% %5.1f%% %4.0f%%\n", 100 * lp->cross,
		       100 * lp->head_samples, 100 * lp->head_insns, 100 * (1 - lp->residual));
	}
	printf("%-10s %42s", "machine", "");
	for (int k = 0; k <= EST_CALIB_K; k++)
		printf("%4.0f%%", 100 * cal->attrib[k]);
	printf(" %5.1f%% %5.1f%% %5.1f%%\n", 100 * cal->cross, 100 * cal->head_samples,
	       100 * cal->head_insns);
	printf("block-leading instructions: %.1f%% of the executed instructions, %.1f%% of "
	       "the samples\n", 100 * cal->head_insns, 100 * cal->head_samples);
	printf("samples in another block than the model places their cycles: %.1f%%\n",
	       100 * cal->block_tv);
	printf("skid window: %d instruction%s, %.0f%% of their samples from the block before\n",
	       cal->skid, cal->skid > 1 ? "s" : "", 100 * cal->skid_share);
	printf("written to %s\n", path);
}

static int calibrate(struct cal_ctx *c)
{
	struct dcpi_err err = { 0 };
	const char *tmpdir;
	char path[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", c->self, sizeof(c->self) - 1);
	if (n <= 0)
		return tool_fail("/proc/self/exe: %s", strerror(errno));
	c->self[n] = 0;
	if (c->a.workload) {
		snprintf(c->wl, sizeof(c->wl), "%s", c->a.workload);
	} else {
		snprintf(c->wl, sizeof(c->wl), "%s", c->self);
		c->wl_sub = "__skidloops";
	}
	if (access(c->wl, X_OK) < 0)
		return tool_fail("%s: %s (--workload names the skidloops binary)", c->wl,
				 strerror(errno));
	c->model = c->a.model ? model_by_name(c->a.model) :
		   c->fitted ? c->fitted : model_for_this_cpu();
	if (!c->model)
		return tool_fail("--model %s: no such model", c->a.model);
	tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	n = snprintf(c->tmp, sizeof(c->tmp), "%s/dcpi-calibrate-XXXXXX", tmpdir);
	if (n < 0 || (size_t)n >= sizeof(c->tmp))
		return c->tmp[0] = 0, tool_fail("TMPDIR %s: name too long", tmpdir);
	if (!mkdtemp(c->tmp))
		return c->tmp[0] = 0, tool_fail("mkdtemp %s: %s", c->tmp, strerror(errno));
	if (collect(c) || load(c))
		return 1;
	snprintf(c->cal.model, sizeof(c->cal.model), "%s", model_name(c->model));
	snprintf(c->cal.event, sizeof(c->cal.event), "%s", c->rp->event);
	c->cal.cycles_per_sample = c->cps;
	for (size_t l = 0; l < NLOOPS; l++)
		if (measure_loop(c, loops[l]))
			return 1;
	est_calib_combine(&c->cal);
	if (c->a.out) {
		snprintf(path, sizeof(path), "%s", c->a.out);
	} else {
		const char *dir = tool_db_dir(c->a.db);

		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return tool_fail("%s: %s", dir, strerror(errno));
		if (est_calib_path(dir, c->cal.model, path, sizeof(path)) < 0)
			return tool_fail("%s: name too long", dir);
	}
	if ((c->a.out ? est_calib_write_output(path, &c->cal, &err) :
	     est_calib_write(path, &c->cal, &err)) < 0)
		return tool_fail("%s", err.msg);
	if (!c->a.quiet)
		summary(c, path);
	return 0;
}

int cmd_calibrate(int argc, char **argv)
{
	struct cal_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = parse_args(argc, argv, &c.a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!c.a.no_tables) {
		rc = calibrate_tables(&c.a, &c.fitted);
		if (rc || c.a.tables_only) {
			model_free(c.fitted);
			return rc;
		}
	}
	rc = calibrate(&c);
	model_free(c.fitted);
	if (c.img)
		img_close(c.img);
	prof_profiles_free(c.rec, c.nrec);
	prof_profiles_free(c.cg, c.ncg);
	if (c.tmp[0] && !c.a.keep)
		nftw(c.tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else if (c.tmp[0])
		fprintf(stderr, "%s: scratch kept in %s\n", tool_name, c.tmp);
	return rc;
}
