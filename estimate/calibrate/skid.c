/*
 * estimate/calibrate/skid.c - `dcpi calibrate`'s skid measurement: where
 * this machine's samples land (docs/estimate.md "Calibration: where samples
 * land"; estimate/calibrate/attribution.c fits each loop).
 *
 * Runs the loops (`dcpi __skidloops`, tools/cmd_skidloops.c, built into the
 * binary; or a workload holding the same symbols) under `dcpi record` and
 * under valgrind's callgrind for exact counts, imports the callgrind output
 * into a scratch database, and fits the attribution per loop.  The caller
 * stores the result (est_calib_write) where dcpicalc reads it.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/calibrate.h"
#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/import.h"
#include "dcpi/profile.h"

const char *const est_calib_loops[] = { "sk_imul", "sk_load", "sk_div", "sk_alt", "sk_branch",
						"sk_miss" };
const size_t est_calib_nloops = sizeof(est_calib_loops) / sizeof(est_calib_loops[0]);

/* What the loops' runs left to read: the two profiles of the workload. */
struct skid_run {
	struct prof_profile *rec, *cg;
	size_t nrec, ncg;
	const struct prof_profile *rp, *cp;
	double cps;
	struct image *img;
};

static void note(const struct est_calib_skid *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(const struct est_calib_skid *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!s->note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->note(s->arg, msg);
}

/* Run argv with stdout and stderr to log; 0 when it exits 0. */
static int run(char *const argv[], const char *log, struct dcpi_err *err)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return dcpi_errf(err, -errno, "fork: %s", strerror(errno));
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
		return dcpi_errf(err, -errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return dcpi_errf(err, -ECHILD, "%s failed (status %d): see %s", argv[0],
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
	return 0;
}

/* The loops under `dcpi record` into scratch/rec, then under callgrind. */
static int collect(struct est_calib_skid *s, const char *wl, char *sub, struct dcpi_err *err)
{
	char recdb[300], cgout[300], log[300], scale[32], cgscale[32], outarg[330];
	/* no path samples: their single steps would be charged to the loops' cycles */
	char *rec[] = { (char *)s->self, "record", "-e", "cpu-clock", "-q", "--no-paths",
			"--db", recdb, "--",
			(char *)wl, sub ? sub : scale, sub ? scale : NULL, NULL };
	char *vg[] = { "valgrind", "--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes",
		       outarg, (char *)wl, sub ? sub : cgscale, sub ? cgscale : NULL, NULL };
	int rc;

	snprintf(recdb, sizeof(recdb), "%s/rec", s->scratch);
	snprintf(cgout, sizeof(cgout), "%s/callgrind.out", s->scratch);
	snprintf(outarg, sizeof(outarg), "--callgrind-out-file=%s", cgout);
	snprintf(scale, sizeof(scale), "%lu", s->scale);
	snprintf(cgscale, sizeof(cgscale), "%lu", s->cg_scale);
	note(s, "sampling %s %s", wl, scale);
	snprintf(log, sizeof(log), "%s/record.log", s->scratch);
	rc = run(rec, log, err);
	if (rc < 0)
		return rc;
	note(s, "counting under callgrind (%s)", cgscale);
	snprintf(log, sizeof(log), "%s/callgrind.log", s->scratch);
	return run(vg, log, err);
}

static const struct prof_profile *pick(const struct prof_profile *p, size_t n,
				       const char *event, const struct prof_image_id *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].event, event) && prof_image_id_equal(&p[i].image, id))
			return &p[i];
	return NULL;
}

/* Both runs' profiles of the workload, what a sample is worth, its image. */
static int load(const struct est_calib_skid *s, const char *wl, struct skid_run *r,
		struct dcpi_err *err)
{
	struct prof_db *db = NULL;
	struct import_stats st;
	struct prof_epoch_meta meta;
	struct prof_image_id id;
	char path[300], epoch[256];
	int have_meta, rc;

	snprintf(path, sizeof(path), "%s/rec", s->scratch);
	if ((rc = prof_db_open(path, 0, &db, err)) < 0 ||
	    (rc = prof_db_latest_epoch(db, epoch, sizeof(epoch), err)) < 0 ||
	    (rc = prof_epoch_read(db, epoch, &r->rec, &r->nrec, err)) < 0)
		goto out;
	have_meta = prof_epoch_meta_read(db, epoch, &meta, NULL) == 0;
	prof_db_close(db);
	db = NULL;
	snprintf(path, sizeof(path), "%s/cg", s->scratch);
	if ((rc = prof_db_open(path, PROF_DB_CREATE, &db, err)) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/callgrind.out", s->scratch);
	if ((rc = import_callgrind(path, db, &st, err)) < 0 ||
	    (rc = prof_epoch_read(db, st.epoch, &r->cg, &r->ncg, err)) < 0 ||
	    (rc = prof_image_id_from_file(&id, wl, err)) < 0)
		goto out;
	r->rp = pick(r->rec, r->nrec, "cpu-clock", &id);
	r->cp = pick(r->cg, r->ncg, "callgrind-Ir", &id);
	if (!r->rp || !r->cp) {
		rc = dcpi_errf(err, -ENOENT, "%s: no %s profile of it", wl,
			       r->rp ? "callgrind-Ir" : "cpu-clock");
		goto out;
	}
	r->cps = est_cycles_per_sample(r->rp, have_meta ? &meta : NULL);
	rc = img_open(wl, 0, &r->img, err);
out:
	if (db)
		prof_db_close(db);
	return rc < 0 ? rc : 0;
}

/* One loop procedure: samples against exact counts scaled to the sampled run. */
static int measure_loop(struct est_calib_skid *s, const char *wl, const struct skid_run *r,
			const char *name, struct dcpi_err *err)
{
	const struct img_proc *proc = img_proc_by_name(r->img, name);
	struct est_calibration *cal = &s->cal;
	struct cfg *cfg = NULL;
	double *smp = NULL, *e = NULL, tot;
	double f = (double)s->scale / (double)s->cg_scale;
	int rc;

	if (!proc)
		return dcpi_errf(err, -ENOENT, "%s: no procedure %s", wl, name);
	if (cal->nloops >= EST_CALIB_MAXLOOPS)
		return dcpi_errf(err, -E2BIG, "more than %d loops", EST_CALIB_MAXLOOPS);
	rc = cfg_build(r->img, proc, &cfg, err);
	if (rc < 0)
		return rc;
	smp = calloc(cfg->ninsns + 1, sizeof(*smp));
	e = calloc(cfg->ninsns + 1, sizeof(*e));
	if (!smp || !e) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = est_samples_from_profile(cfg, r->img, r->rp, smp, &tot, err)) < 0 ||
	    (rc = est_samples_from_profile(cfg, r->img, r->cp, e, &tot, err)) < 0)
		goto out;
	for (size_t i = 0; i < cfg->ninsns; i++)
		e[i] *= f;
	rc = est_calib_loop(cfg, s->model, e, smp, r->cps, &cal->loops[cal->nloops], err);
	if (rc >= 0)
		cal->nloops++;
out:
	free(smp);
	free(e);
	cfg_free(cfg);
	return rc < 0 ? rc : 0;
}

/* A scratch directory under $TMPDIR (else /tmp). */
static int make_scratch(struct est_calib_skid *s, struct dcpi_err *err)
{
	const char *tmpdir = getenv("TMPDIR");
	int n;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	n = snprintf(s->scratch, sizeof(s->scratch), "%s/dcpi-calibrate-XXXXXX", tmpdir);
	if (n < 0 || (size_t)n >= sizeof(s->scratch)) {
		s->scratch[0] = 0;
		return dcpi_errf(err, -ENAMETOOLONG, "TMPDIR %s: name too long", tmpdir);
	}
	if (!mkdtemp(s->scratch)) {
		int e = errno;

		dcpi_errf(err, -e, "mkdtemp %s: %s", s->scratch, strerror(e));
		s->scratch[0] = 0;
		return -e;
	}
	return 0;
}

int est_calib_skid(struct est_calib_skid *s, struct dcpi_err *err)
{
	struct skid_run r = { 0 };
	const char *wl = s->workload ? s->workload : s->self;
	char *sub = s->workload ? NULL : "__skidloops";
	int rc;

	memset(&s->cal, 0, sizeof(s->cal));
	s->scratch[0] = 0;
	if (!s->model || !s->self || !s->scale || !s->cg_scale)
		return dcpi_errf(err, -EINVAL, "skid calibration: no model, binary or scale");
	if (access(wl, X_OK) < 0)
		return dcpi_errf(err, -errno, "%s: %s (--workload names the skidloops binary)", wl,
				 strerror(errno));
	if ((rc = make_scratch(s, err)) < 0 || (rc = collect(s, wl, sub, err)) < 0 ||
	    (rc = load(s, wl, &r, err)) < 0)
		goto out;
	snprintf(s->cal.model, sizeof(s->cal.model), "%s", model_name(s->model));
	snprintf(s->cal.event, sizeof(s->cal.event), "%s", r.rp->event);
	s->cal.cycles_per_sample = r.cps;
	for (size_t l = 0; l < est_calib_nloops; l++)
		if ((rc = measure_loop(s, wl, &r, est_calib_loops[l], err)) < 0)
			goto out;
	est_calib_combine(&s->cal);
out:
	if (r.img)
		img_close(r.img);
	prof_profiles_free(r.rec, r.nrec);
	prof_profiles_free(r.cg, r.ncg);
	return rc;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

void est_calib_skid_clean(struct est_calib_skid *s, int keep)
{
	if (s->scratch[0] && !keep)
		nftw(s->scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	s->scratch[0] = 0;
}
