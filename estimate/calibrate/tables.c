/*
 * estimate/calibrate/tables.c - `dcpi calibrate --fit-model`: this machine's
 * instruction costs.  Times the calibration probes (culprit/model/probes.txt)
 * in the sandbox (estimate/calibrate/probe_time.c), or reads the cycles a
 * previous run saved, fits the shipped model CPUID picks (or a named base) to
 * them (culprit/model/fit.c), times the loop-line floor
 * (estimate/calibrate/loop_lines.c) and writes the model file every tool then
 * uses on this CPU (docs/models.md "Model files").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/calibrate.h"
#include "dcpi/safefile.h"
#include "dcpi/sandbox.h"

static void note(est_calib_note_fn fn, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(est_calib_note_fn fn, void *arg, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(arg, msg);
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path, struct dcpi_err *err)
{
	char d[4096];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			return dcpi_errf(err, -errno, "%s: %s", d, strerror(errno));
		*p = '/';
	}
	return 0;
}

/* A probe's bytes as the measurements file writes them: "48 8b 00". */
static void probe_hex(const struct model_probe *p, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (size_t j = 0; j < p->len && k + 3 < len; j++)
		k += (size_t)snprintf(buf + k, len - k, "%s%02x", j ? " " : "", p->bytes[j]);
}

int est_calib_measurements_write(const char *path, const struct model_probe *p, size_t n,
				 const double *cycles, struct dcpi_err *err)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	int rc;

	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	fprintf(f, "name\thex\tcycles\n");
	for (size_t i = 0; i < n; i++) {
		char hex[4096];

		probe_hex(&p[i], hex, sizeof(hex));
		fprintf(f, "%s\t%s\t%.3f\n", p[i].name, hex, cycles[i]);
	}
	if (fclose(f))
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	/* the one rule for outputs the user names (include/dcpi/safefile.h) */
	else
		rc = dcpi_write_output(path, mem, len, 0644, err);
	free(mem);
	return rc < 0 ? rc : 0;
}

/*
 * One row "name<TAB>hex<TAB>cycles" into cycles[]: 1 when it is a probe of
 * ours newly found, 0 when left out (with a note) or already seen, negative
 * when it does not parse.
 */
static int read_row(char *line, const char *path, long lineno, const struct model_probe *p,
		    size_t n, double *cycles, est_calib_note_fn fn, void *arg,
		    struct dcpi_err *err)
{
	char *name = line, *h, *c, *end, hex[4096];
	size_t i;
	double v;
	int fresh;

	h = strchr(name, '\t');
	c = h ? strchr(h + 1, '\t') : NULL;
	if (!c)
		return dcpi_errf(err, -EINVAL, "%s:%ld: not name<TAB>hex<TAB>cycles", path,
				 lineno);
	*h++ = 0;
	*c++ = 0;
	v = strtod(c, &end);
	if (end == c || *end || !(v > 0 && v < 1e6))
		return dcpi_errf(err, -EINVAL, "%s:%ld: %s: cycles '%s' not a positive number",
				 path, lineno, name, c);
	for (i = 0; i < n && strcmp(p[i].name, name); i++)
		;
	if (i == n) {
		note(fn, arg, "note: %s:%ld: %s is not one of this dcpi's probes: left out", path,
		     lineno, name);
		return 0;
	}
	probe_hex(&p[i], hex, sizeof(hex));
	if (strcmp(hex, h)) {
		note(fn, arg, "note: %s:%ld: %s was timed as other bytes than this dcpi's "
		     "(culprit/model/probes.txt changed since): left out", path, lineno, name);
		return 0;
	}
	fresh = cycles[i] == 0;
	cycles[i] = v;
	return fresh;
}

long est_calib_measurements_read(const char *path, const struct model_probe *p, size_t n,
				 double *cycles, est_calib_note_fn fn, void *arg,
				 struct dcpi_err *err)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	long found = 0, lineno = 0;
	int rc = 0;

	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = dcpi_errf(err, -EINVAL, "%s:%ld: line too long", path, lineno);
			goto out;
		}
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#' || !strncmp(line, "name\t", 5))
			continue;
		rc = read_row(line, path, lineno, p, n, cycles, fn, arg, err);
		if (rc < 0)
			goto out;
		found += rc;
	}
	rc = 0;
	if (ferror(f))
		rc = dcpi_errf(err, -EIO, "%s: read error", path);
	else if (!found)
		rc = dcpi_errf(err, -ENOENT, "%s: no probe of this dcpi's in it", path);
out:
	fclose(f);
	return rc < 0 ? rc : found;
}

/* The probes found, packed into sub[] and subc[]. */
static size_t pack_found(struct model_probe *sub, double *subc, const struct model_probe *p,
			 const double *cycles, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (cycles[i] > 0) {
			sub[k] = p[i];
			subc[k++] = cycles[i];
		}
	return k;
}

/*
 * The front end's floor for loops (loop_line_bytes), which the probes cannot
 * show: they run unrolled in the sandbox.  One loop timed at three places
 * (estimate/calibrate/loop_lines.c); its verdict and figures become the
 * parameter's source.  Not with refit: the saved probe cycles do not hold it.
 */
static int loop_lines(struct est_calib_tables *t, const char *date, struct dcpi_err *err)
{
	const double *fig = t->loop_fig;
	char val[16], src[96];
	int rc;

	rc = model_time_loop_lines(t->cpu, t->loop_fig, err);
	if (rc < 0)
		return rc;
	t->loop_line_bytes = model_loop_line_bytes_of(fig);
	t->loop_lines = 1;
	snprintf(val, sizeof(val), "%d", t->loop_line_bytes);
	snprintf(src, sizeof(src), "measured %s by loop timing (%.2f inside, %.2f across 64, "
		 "%.2f across 32)", date, fig[0], fig[1], fig[2]);
	return model_set_param(t->fitted, "loop_line_bytes", val, src, err);
}

/* The shipped model to fit, and where its model file goes. */
static int start(const struct est_calib_tables_opts *o, struct est_calib_tables *t,
		 struct model_cpuid *id, const struct model **base, struct dcpi_err *err)
{
	char why[128];

	if (!o->refit && (o->passes < 1 || o->passes > 64))
		return dcpi_errf(err, -EINVAL, "%d timing passes: not 1 to 64", o->passes);
	if (!o->refit && !sbx_usable(why, sizeof(why)))
		return dcpi_errf(err, -ENOTSUP, "cannot time code here: %s", why);
	if (model_cpuid_this(id) < 0)
		return dcpi_errf(err, -ENOTSUP, "no CPUID on this processor");
	*base = o->base ? model_by_name(o->base) :
		model_for_cpuid(id->vendor, id->family, id->model);
	if (!*base)
		return dcpi_errf(err, -ENOENT, "--base %s: no such shipped model", o->base);
	if (o->model_file)
		snprintf(t->path, sizeof(t->path), "%s", o->model_file);
	else if (model_file_path(id, t->path, sizeof(t->path)) < 0)
		return dcpi_errf(err, -ENOENT,
				 "no place for the model file: set DCPI_MODEL_DIR or HOME");
	return 0;
}

/* The probes' cycles: timed now (cycles), or read from o->refit and packed
 * into sub/subc: *fit_probes, *cyc and *n become what to fit. */
static int probe_cycles(const struct est_calib_tables_opts *o, struct est_calib_tables *t,
			const struct model_probe **fit_probes, double **cyc, size_t *n,
			time_t *when, struct model_probe *sub, double *subc,
			struct dcpi_err *err)
{
	struct stat st;
	long rc;

	if (!o->refit)
		return model_time_probes(*fit_probes, *n, o->passes, t->cpu, *cyc, t->load,
					 o->progress, o->arg, err);
	rc = est_calib_measurements_read(o->refit, *fit_probes, *n, *cyc, o->note, o->arg, err);
	if (rc < 0)
		return (int)rc;
	if (!stat(o->refit, &st))
		*when = st.st_mtime;	/* the figures' date, for their sources */
	*n = pack_found(sub, subc, *fit_probes, *cyc, *n);
	*fit_probes = sub;
	*cyc = subc;
	return 0;
}

int est_calib_tables(const struct est_calib_tables_opts *o, struct est_calib_tables *t,
		     struct dcpi_err *err)
{
	const struct model_probe *probes;
	size_t n = model_probes(&probes);
	struct model_cpuid id;
	const struct model *base = NULL;
	double *cycles = calloc(n, sizeof(*cycles)), *cyc = cycles;
	struct model_probe *sub = calloc(n, sizeof(*sub));
	double *subc = calloc(n, sizeof(*subc));
	char date[16], name[48];
	time_t now = time(NULL);
	int rc;

	memset(t, 0, sizeof(*t));
	t->cpu = o->cpu == -2 ? (int)sysconf(_SC_NPROCESSORS_ONLN) - 1 : o->cpu;
	t->nprobes = n;
	if (!cycles || !sub || !subc) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = start(o, t, &id, &base, err)) < 0)
		goto out;
	if (!o->refit)
		note(o->note, o->arg, "timing %zu probes on cpu %d, %d passes, fitting %s", n,
		     t->cpu, o->passes, base->name);
	if ((rc = probe_cycles(o, t, &probes, &cyc, &n, &now, sub, subc, err)) < 0)
		goto out;
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	snprintf(name, sizeof(name), "%s-calibrated", base->name);
	t->fitted = model_copy(base, name, err);
	if (!t->fitted) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = model_fit(t->fitted, probes, cyc, n, date, &t->rep, err)) < 0 ||
	    (rc = make_parent(t->path, err)) < 0 ||
	    (!o->refit && (rc = loop_lines(t, date, err)) < 0) ||
	    (rc = model_file_write(t->path, t->fitted, &id, err)) < 0)
		goto out;
	if (o->measurements)
		rc = est_calib_measurements_write(o->measurements, probes, n, cyc, err);
out:
	free(cycles);
	free(sub);
	free(subc);
	return rc < 0 ? rc : 0;
}

void est_calib_tables_free(struct est_calib_tables *t)
{
	model_free(t->fitted);
	t->fitted = NULL;
}
