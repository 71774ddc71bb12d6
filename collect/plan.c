/*
 * collect/plan.c - `dcpi record --plan FILE|auto` (docs/values.md, "Marking
 * plan"): find the plan (auto: the plan.txt of the database's newest epoch
 * that has one), check that its images are still the files it was made
 * for (build-id), and hand its procedures to the runtime as pathrt.h's
 * plan file in the spool directory.  The plan itself is the analysis'
 * (report/plan.c); its format is in include/dcpi/values.h.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/collect.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "pathrt.h"
#include "paths.h"
#include "plan.h"

int collect_plan_resolve(const char *dbdir, const char *spec, char *path, size_t len,
			 struct dcpi_err *err)
{
	struct prof_db *db = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc;

	if (strcmp(spec, "auto")) {
		if (access(spec, R_OK))
			return dcpi_errf(err, -errno, "--plan %s: %s", spec, strerror(errno));
		snprintf(path, len, "%s", spec);
		return 0;
	}
	rc = prof_db_open(dbdir, 0, &db, err);
	if (!rc)
		rc = prof_db_epochs(db, &names, &n, err);
	for (size_t i = n; !rc && i-- > 0;) {
		snprintf(path, len, "%s/%s/%s", prof_db_path(db), names[i], VAL_PLAN_FILE);
		if (!access(path, R_OK))
			goto out;
	}
	if (!rc)
		rc = dcpi_errf(err, -ENOENT, "--plan auto: no epoch of %s has a plan (record "
			       "once with --values first)", dbdir);
out:
	prof_names_free(names, n);
	prof_db_close(db);
	return rc;
}

/* Image line "image N BUILD-ID PATH": 1 when the file at PATH is still the
 * one the plan was made of (same build-id, or none to compare). */
static int image_same(const char *bid, const char *path)
{
	struct image *img = NULL;
	struct dcpi_err e = { 0 };
	int same;

	if (path[0] != '/' || img_open(path, IMG_NO_DWARF, &img, &e))
		return 0;
	same = !strcmp(bid, "-") || !strcmp(bid, img_build_id(img));
	img_close(img);
	return same;
}

struct plan_img {
	char path[PATH_MAX];
	int ok;
};

/* The runtime's flags for the args of WHY: the breakpoint, and the argument
 * registers from "args=MASK" (none: all six). */
static unsigned args_flags(const char *why)
{
	const char *a = strstr(why, "args");
	unsigned long mask = 0;

	if (!a)
		return 0;
	if (a[4] == '=')
		mask = strtoul(a + 5, NULL, 16) & 63ul;
	return PRT_PLAN_BP | (unsigned)mask << PRT_PLAN_REGS_SHIFT;
}

/* The bytes of hex, two digits each, into out (at most max): how many, or
 * 0 when hex is not that. */
static size_t hex_bytes(const char *hex, size_t len, uint8_t *out, size_t max)
{
	if (len % 2 || len / 2 > max)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = hex[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (d < 0)
			return 0;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(d << 4);
		else
			out[i / 2] |= (uint8_t)d;
	}
	return len / 2;
}

/* The bytes of WHY's "entry=HEX" into hex as the runtime reads them (lower
 * case): how many (0: WHY has none), or -1 when HEX is not 5 to 15 bytes of
 * hex digits. */
static int why_entry(const char *why, char hex[2 * PRT_ENTRY_MAX + 1])
{
	uint8_t b[PRT_ENTRY_MAX];
	const char *w = why, *e;
	size_t len, n;

	for (; *w; w = *e ? e + 1 : e) {
		e = w + strcspn(w, ",");
		if ((size_t)(e - w) < 6 || strncmp(w, "entry=", 6))
			continue;
		len = (size_t)(e - w) - 6;
		n = hex_bytes(w + 6, len, b, PRT_ENTRY_MAX);
		if (n < PRT_ENTRY_MIN)
			return -1;
		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", b[i]);
		return (int)n;
	}
	return 0;
}

/* WHY has a word other than entry=: the procedure wants the bursts too. */
static int why_hot(const char *why)
{
	const char *w = why, *e;

	for (; *w; w = *e ? e + 1 : e) {
		e = w + strcspn(w, ",");
		if (e > w && strncmp(w, "entry=", 6))
			return 1;
	}
	return 0;
}

/* One "proc" line into the runtime's file. */
static void proc_line(FILE *out, const char *line, const struct plan_img *im, size_t nim,
		      struct plan_info *info)
{
	unsigned long long off, size;
	char why[256], hex[2 * PRT_ENTRY_MAX + 1];
	unsigned flags;
	size_t i;
	int n;

	if (sscanf(line, "proc %zu %llx %llx %255s", &i, &off, &size, why) != 4 || i >= nim ||
	    (n = why_entry(why, hex)) < 0) {
		info->bad++;
		return;
	}
	if (!im[i].ok) {
		info->dropped++;
		return;
	}
	if (info->marks >= PRT_PLAN_MAX) {
		info->dropped++;
		return;
	}
	flags = (why_hot(why) ? PRT_PLAN_HOT : 0) | args_flags(why) | (n ? PRT_PLAN_COUNT : 0);
	if (n)
		fprintf(out, "%llx %llx %x %s %s\n", off, size, flags, hex, im[i].path);
	else
		fprintf(out, "%llx %llx %x %s\n", off, size, flags, im[i].path);
	info->marks++;
	info->breakpoints += !!strstr(why, "args");
	info->counts += n > 0;
}

/* One "block" line (count=HEX: the block's executions counted) into the
 * runtime's file: a mark of the displaced bytes alone, PRT_PLAN_BLOCK. */
static void block_line(FILE *out, const char *line, const struct plan_img *im, size_t nim,
		       struct plan_info *info)
{
	unsigned long long off;
	char why[256], hex[2 * PRT_ENTRY_MAX + 1], *comma;
	uint8_t b[PRT_ENTRY_MAX];
	unsigned flags = PRT_PLAN_COUNT | PRT_PLAN_BLOCK;
	size_t i, n;

	if (sscanf(line, "block %zu %llx %255s", &i, &off, why) != 3 || i >= nim ||
	    strncmp(why, "count=", 6)) {
		info->bad++;
		return;
	}
	if ((comma = strchr(why, ','))) {	/* a jcc ends the bytes */
		if (!strcmp(comma, ",branch=2"))
			flags |= PRT_PLAN_JCC8;
		else if (!strcmp(comma, ",branch=6"))
			flags |= PRT_PLAN_JCC32;
		else {
			info->bad++;
			return;
		}
		*comma = '\0';
	}
	if ((n = hex_bytes(why + 6, strlen(why + 6), b, PRT_ENTRY_MAX)) < PRT_ENTRY_MIN ||
	    !prt_jcc_ok(b, n, flags)) {
		info->bad++;
		return;
	}
	if (!im[i].ok || info->marks >= PRT_PLAN_MAX) {
		info->dropped++;
		return;
	}
	for (size_t k = 0; k < n; k++)
		snprintf(hex + 2 * k, 3, "%02x", b[k]);
	fprintf(out, "%llx %zx %x %s %s\n", off, n, flags, hex, im[i].path);
	info->marks++;
	info->blocks++;
}

int plan_runtime_file(const char *plan, const char *spool_dir, char *out, size_t len,
		      struct plan_info *info, struct dcpi_err *err)
{
	struct plan_img *im = NULL;
	size_t nim = 0, cap = 0;
	char line[PATH_MAX + 512], bid[256];
	FILE *f, *o = NULL;
	int rc = 0;

	memset(info, 0, sizeof(*info));
	if (!(f = fopen(plan, "re")))
		return dcpi_errf(err, -errno, "%s: %s", plan, strerror(errno));
	if (!fgets(line, sizeof(line), f) ||
	    strncmp(line, VAL_PLAN_MAGIC "\n", sizeof(VAL_PLAN_MAGIC))) {
		fclose(f);
		return dcpi_errf(err, -EINVAL, "%s: not a marking plan (no \"%s\" line)", plan,
				 VAL_PLAN_MAGIC);
	}
	snprintf(out, len, "%s/%s", spool_dir, PRT_PLAN_NAME);
	if (!(o = fopen(out, "wxe")))
		rc = dcpi_errf(err, -errno, "%s: %s", out, strerror(errno));
	while (!rc && fgets(line, sizeof(line), f)) {
		struct plan_img *p;
		size_t i;
		int pos;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "proc ", 5)) {
			proc_line(o, line, im, nim, info);
			continue;
		}
		if (!strncmp(line, "block ", 6)) {
			block_line(o, line, im, nim, info);
			continue;
		}
		if (strncmp(line, "image ", 6))
			continue;	/* comments, loads (their procedures are marked) */
		if (sscanf(line, "image %zu %255s %n", &i, bid, &pos) != 2 || i != nim) {
			info->bad++;
			continue;
		}
		if (!(p = dcpi_append((void **)&im, &nim, &cap, sizeof(*p)))) {
			rc = dcpi_errf(err, -ENOMEM, "plan: out of memory");
			break;
		}
		snprintf(p->path, sizeof(p->path), "%s", line + pos);
		p->ok = image_same(bid, p->path);
		info->images_changed += !p->ok;
	}
	fclose(f);
	if (o && fclose(o) && !rc)
		rc = dcpi_errf(err, -EIO, "%s: %s", out, strerror(errno));
	free(im);
	return rc;
}

int plan_prepare_run(struct paths_run *pr, const char *plan, struct collect_result *res,
		     struct dcpi_err *err)
{
	struct plan_info info;
	int rc = plan_runtime_file(plan, pr->dir, pr->plan, sizeof(pr->plan), &info, err);

	if (rc) {
		pr->plan[0] = '\0';
		return rc;
	}
	res->plan_marks = info.marks;
	res->plan_breakpoints = info.breakpoints;
	res->plan_dropped = info.dropped;
	res->plan_counts = info.counts + info.blocks;
	return 0;
}

void plan_rt_free(struct plan_rt_mark *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

/* One line of the runtime's file into m (path NULL: not understood). */
static int rt_line(char *line, struct plan_rt_mark *m)
{
	unsigned long long off, size, flags;
	size_t hex;
	int pos = 0;

	memset(m, 0, sizeof(*m));
	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "%llx %llx %llx %n", &off, &size, &flags, &pos) != 3 || !pos)
		return 0;
	if (flags & PRT_PLAN_COUNT) {
		hex = strspn(line + pos, "0123456789abcdef");
		m->nentry = hex_bytes(line + pos, hex, m->entry, PRT_ENTRY_MAX);
		if (m->nentry < PRT_ENTRY_MIN || line[pos + hex] != ' ')
			return 0;
		pos += (int)hex + 1;
	}
	if (line[pos] != '/')
		return 0;
	m->off = off;
	m->size = size;
	m->flags = (uint32_t)flags;
	return (m->path = strdup(line + pos)) ? 0 : -ENOMEM;
}

int plan_rt_read(const char *dir, struct plan_rt_mark **out, size_t *n, struct dcpi_err *err)
{
	char path[PATH_MAX + 64], line[PATH_MAX + 128];
	struct plan_rt_mark *v = NULL, *m;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, PRT_PLAN_NAME);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	while (!ret && fgets(line, sizeof(line), f)) {
		if (!(m = dcpi_append((void **)&v, n, &cap, sizeof(*m))) || rt_line(line, m)) {
			if (m)
				--*n;
			ret = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
		}
	}
	fclose(f);
	if (ret) {
		plan_rt_free(v, *n);
		v = NULL;
		*n = 0;
	}
	*out = v;
	return ret;
}

/* A trampoline of the run: at lo, the increment (PRT_TRAMP_HEAD bytes),
 * the n - jl bytes at off of image, the block's jcc of jl bytes there in
 * its near form (6 bytes; jl 0: none) and the jump back (5). */
struct tramp {
	uint64_t lo, off;
	size_t n, jl;
	uint32_t image;
};

struct tramps {
	struct tramp *t;
	size_t n, cap;
};

/* The pc of a trampoline's sample as the instruction it runs a copy of:
 * the increment's as the first moved instruction's, the jump back's as
 * the instruction after them. */
static int tramp_map_pc(void *ctx, uint32_t *image, uint64_t *offset)
{
	const struct tramps *ts = ctx;

	if (*image != MAPS_UNKNOWN)
		return 0;
	for (size_t i = 0; i < ts->n; i++) {
		const struct tramp *t = &ts->t[i];
		uint64_t at = *offset - t->lo, moved = t->n - t->jl;

		if (*offset < t->lo || at >= PRT_TRAMP_HEAD + moved + (t->jl ? 6 : 0) + 5)
			continue;
		*image = t->image;
		if (at < PRT_TRAMP_HEAD)
			*offset = t->off;
		else if (at - PRT_TRAMP_HEAD < moved)
			*offset = t->off + (at - PRT_TRAMP_HEAD);
		else if (t->jl && at - PRT_TRAMP_HEAD < moved + 6)
			*offset = t->off + moved;	/* the jcc */
		else
			*offset = t->off + t->n;	/* the jump back: what follows */
		return 1;
	}
	return 0;
}

/* One *.tramp file's lines into ts (lines naming no counted mark skipped). */
static int tramp_file(const char *path, const struct plan_rt_mark *m, size_t nm,
		      struct maps *maps, struct tramps *ts, struct dcpi_err *err)
{
	unsigned long long lo, n, line, jl;
	char buf[128];
	FILE *f = fopen(path, "re");
	int rc = 0;

	if (!f)
		return 0;	/* gone: its samples stay unknown */
	while (!rc && fgets(buf, sizeof(buf), f)) {
		struct tramp *t;
		uint32_t image;

		if (sscanf(buf, "%llu %llu %llu %llu", &lo, &n, &line, &jl) != 4 || line >= nm ||
		    !m[line].path || !(m[line].flags & PRT_PLAN_COUNT) || n != m[line].nentry ||
		    jl >= n)
			continue;
		if ((rc = maps_intern(maps, m[line].path, &image, err)))
			break;
		if (!(t = dcpi_append((void **)&ts->t, &ts->n, &ts->cap, sizeof(*t)))) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
			break;
		}
		t->lo = lo;
		t->n = (size_t)n;
		t->jl = (size_t)jl;
		t->off = m[line].off;
		t->image = image;
	}
	fclose(f);
	return rc;
}

int plan_tramp_remap(const char *dir, struct maps *maps, struct agg *agg, uint64_t *moved,
		     struct dcpi_err *err)
{
	struct plan_rt_mark *m = NULL;
	struct tramps ts = { 0 };
	struct dirent *de;
	size_t nm = 0;
	DIR *d;
	int rc;

	*moved = 0;
	if ((rc = plan_rt_read(dir, &m, &nm, err)) || !nm)
		return rc;
	if (!(d = opendir(dir))) {
		plan_rt_free(m, nm);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = strlen(PRT_TRAMP_SUFFIX);
		char path[PATH_MAX + 256];

		if (l <= sl || strcmp(de->d_name + l - sl, PRT_TRAMP_SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rc = tramp_file(path, m, nm, maps, &ts, err);
	}
	closedir(d);
	if (!rc && ts.n)
		rc = agg_remap(agg, tramp_map_pc, &ts, moved, err);
	free(ts.t);
	plan_rt_free(m, nm);
	return rc;
}
