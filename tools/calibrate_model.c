/*
 * calibrate_model.c - `dcpi calibrate --model`: this machine's instruction
 * costs.  Times the calibration probes (culprit/model/probes.txt) in the sandbox,
 * fits the shipped model CPUID picks (or --base) to them (culprit/model/fit.c) and
 * writes the model file every tool then uses on this CPU (docs/models.md
 * "Model files").  Progress on stderr; the changes and the fit on stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "dcpi/sandbox.h"
#include "calibrate.h"
#include "tools.h"

static void progress(void *arg, int pass, int passes, double add12)
{
	const struct cal_args *a = arg;

	if (!a->quiet)
		fprintf(stderr, "%s: probes, pass %d of %d (12 independent adds: %.2f cycles)\n",
			tool_name, pass, passes, add12);
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path)
{
	char d[4096];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			return tool_fail("%s: %s", d, strerror(errno));
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

/* name<TAB>hex<TAB>cycles, as bench/bhive's tables (bench/model_speed -e reads it). */
static int write_measurements(const char *path, const struct model_probe *p, size_t n,
			      const double *cycles)
{
	struct dcpi_err err = { 0 };
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	int rc = 0;

	if (!f)
		return tool_fail("%s: %s", path, strerror(errno));
	fprintf(f, "name\thex\tcycles\n");
	for (size_t i = 0; i < n; i++) {
		char hex[4096];

		probe_hex(&p[i], hex, sizeof(hex));
		fprintf(f, "%s\t%s\t%.3f\n", p[i].name, hex, cycles[i]);
	}
	if (fclose(f))
		rc = tool_fail("%s: out of memory", path);
	/* the one rule for outputs the user names (include/dcpi/safefile.h) */
	else if (dcpi_write_output(path, mem, len, 0644, &err) < 0)
		rc = tool_fail("%s", err.msg);
	free(mem);
	return rc;
}

/*
 * The probes' cycles saved by --measurements, for --refit: cycles[i] of probe
 * i (0 when the file lacks it).  A row whose bytes are not this dcpi's probe
 * (culprit/model/probes.txt changed since) is left out with a note; a row that does
 * not parse is an error naming the line.  Returns the probes found, or -1.
 */
static long read_measurements(const char *path, const struct model_probe *p, size_t n,
			      double *cycles)
{
	FILE *f = fopen(path, "r");
	char line[8192], hex[4096];
	long found = 0, lineno = 0;

	if (!f) {
		tool_fail("%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *name = line, *h, *c, *end;
		size_t i;
		double v;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			tool_fail("%s:%ld: line too long", path, lineno);
			goto bad;
		}
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#' || !strncmp(line, "name\t", 5))
			continue;
		h = strchr(name, '\t');
		c = h ? strchr(h + 1, '\t') : NULL;
		if (!c) {
			tool_fail("%s:%ld: not name<TAB>hex<TAB>cycles", path, lineno);
			goto bad;
		}
		*h++ = 0;
		*c++ = 0;
		v = strtod(c, &end);
		if (end == c || *end || !(v > 0 && v < 1e6)) {
			tool_fail("%s:%ld: %s: cycles '%s' not a positive number", path, lineno,
				  name, c);
			goto bad;
		}
		for (i = 0; i < n && strcmp(p[i].name, name); i++)
			;
		if (i == n) {
			fprintf(stderr, "%s: note: %s:%ld: %s is not one of this dcpi's probes: "
				"left out\n", tool_name, path, lineno, name);
			continue;
		}
		probe_hex(&p[i], hex, sizeof(hex));
		if (strcmp(hex, h)) {
			fprintf(stderr, "%s: note: %s:%ld: %s was timed as other bytes than this "
				"dcpi's (culprit/model/probes.txt changed since): left out\n", tool_name,
				path, lineno, name);
			continue;
		}
		found += cycles[i] == 0;
		cycles[i] = v;
	}
	if (ferror(f)) {
		tool_fail("%s: read error", path);
		goto bad;
	}
	fclose(f);
	if (!found) {
		tool_fail("%s: no probe of this dcpi's in it", path);
		return -1;
	}
	return found;
bad:
	fclose(f);
	return -1;
}

/* The probes read_measurements found, packed into sub[] and subc[]. */
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

static const struct model *start_model(const struct cal_args *a, const struct model_cpuid *id)
{
	if (a->base)
		return model_by_name(a->base);
	return model_for_cpuid(id->vendor, id->family, id->model);
}

static void report(const struct cal_args *a, const struct model_fit_report *rep,
		   const char *path, const double *load, const struct model *m)
{
	double lo = 1e9, hi = 0;

	if (a->quiet)
		return;
	for (int p = 0; p < a->passes; p++) {
		lo = load[p] > 0 && load[p] < lo ? load[p] : lo;
		hi = load[p] > hi ? load[p] : hi;
	}
	printf("model %s fitted to %zu probes: mean error %.1f%% -> %.1f%%, %d values moved, "
	       "%d ports added\n", m->name, rep->nused, 100 * rep->err_before,
	       100 * rep->err_after, rep->nchanged, rep->ports_added);
	if (a->refit)
		printf("probe cycles from %s (not timed now)\n", a->refit);
	else
		printf("contention probe (12 independent adds) over the passes: %.2f .. %.2f "
		       "cycles\n", lo, hi);
	fputs(rep->log, stdout);
	printf("written to %s (dcpi model --show)\n", path);
}

/*
 * The front end's floor for loops (loop_line_bytes), which the probes cannot
 * show: they run unrolled in the sandbox.  One loop timed at three places
 * (estimate/calibrate/loop_lines.c); its verdict and figures become the parameter's
 * source.  Not with --refit: the saved probe cycles do not hold it.
 */
static int loop_lines(const struct cal_args *a, int cpu, const char *date, struct model *m)
{
	struct dcpi_err err = { 0 };
	double fig[3];
	char val[16], src[96];
	int lb;

	if (model_time_loop_lines(cpu, fig, &err) < 0)
		return tool_fail("%s", err.msg);
	lb = model_loop_line_bytes_of(fig);
	snprintf(val, sizeof(val), "%d", lb);
	snprintf(src, sizeof(src), "measured %s by loop timing (%.2f inside, %.2f across 64, "
		 "%.2f across 32)", date, fig[0], fig[1], fig[2]);
	if (model_set_param(m, "loop_line_bytes", val, src, &err) < 0)
		return tool_fail("%s", err.msg);
	if (!a->quiet)
		fprintf(stderr, "%s: a small loop %.2f cycles an iteration inside a line, %.2f "
			"across 64 bytes, %.2f across 32: loop_line_bytes %d\n", tool_name, fig[0],
			fig[1], fig[2], lb);
	return 0;
}

int calibrate_tables(const struct cal_args *a, struct model **fitted)
{
	const struct model_probe *probes;
	size_t n = model_probes(&probes);
	struct model_fit_report rep;
	struct dcpi_err err = { 0 };
	struct model_cpuid id;
	const struct model *base;
	double *cycles = calloc(n, sizeof(*cycles)), load[64] = { 0 };
	struct model_probe *sub = calloc(n, sizeof(*sub));
	double *subc = calloc(n, sizeof(*subc)), *cycles_fit = cycles;
	char why[128], path[4096], date[16], name[48];
	time_t now = time(NULL);
	int cpu = a->cpu == -2 ? (int)sysconf(_SC_NPROCESSORS_ONLN) - 1 : a->cpu, rc = 1;

	*fitted = NULL;
	if (!cycles || !sub || !subc) {
		free(cycles);
		free(sub);
		free(subc);
		return tool_fail("out of memory");
	}
	if (!a->refit && !sbx_usable(why, sizeof(why))) {
		tool_fail("cannot time code here: %s", why);
		goto out;
	}
	if (model_cpuid_this(&id) < 0) {
		tool_fail("no CPUID on this processor");
		goto out;
	}
	base = start_model(a, &id);
	if (!base) {
		tool_fail("--base %s: no such shipped model", a->base);
		goto out;
	}
	if (a->model_file)
		snprintf(path, sizeof(path), "%s", a->model_file);
	else if (model_file_path(&id, path, sizeof(path)) < 0) {
		tool_fail("no place for the model file: set DCPI_MODEL_DIR or HOME");
		goto out;
	}
	if (a->refit) {
		struct stat st;

		if (read_measurements(a->refit, probes, n, cycles) < 0)
			goto out;
		if (!stat(a->refit, &st))
			now = st.st_mtime;	/* the figures' date, for their sources */
		n = pack_found(sub, subc, probes, cycles, n);
		probes = sub;
		cycles_fit = subc;
	} else {
		if (!a->quiet)
			fprintf(stderr, "%s: timing %zu probes on cpu %d, %d passes, fitting %s\n",
				tool_name, n, cpu, a->passes, base->name);
		if (model_time_probes(probes, n, a->passes, cpu, cycles, load, progress,
				      (void *)a, &err) < 0) {
			tool_fail("%s", err.msg);
			goto out;
		}
	}
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	snprintf(name, sizeof(name), "%s-calibrated", base->name);
	*fitted = model_copy(base, name, &err);
	if (!*fitted || model_fit(*fitted, probes, cycles_fit, n, date, &rep, &err) < 0 ||
	    make_parent(path)) {
		if (err.msg[0])
			tool_fail("%s", err.msg);
		goto out;
	}
	if (!a->refit && loop_lines(a, cpu, date, *fitted) < 0)
		goto out;
	if (model_file_write(path, *fitted, &id, &err) < 0) {
		tool_fail("%s", err.msg);
		goto out;
	}
	report(a, &rep, path, load, *fitted);
	if (a->measurements && write_measurements(a->measurements, probes, n, cycles_fit))
		goto out;
	rc = 0;
out:
	if (rc) {
		model_free(*fitted);
		*fitted = NULL;
	}
	free(cycles);
	free(sub);
	free(subc);
	return rc;
}
