/*
 * collect/plan.c - `dcpi record --plan FILE|auto` (docs/values.md, "Marking
 * plan"): find the plan (auto: the plan.txt of the database's newest epoch
 * that has one), check that its images are still the files it was made
 * for (build-id), and hand its procedures to the runtime as pathrt.h's
 * plan file in the spool directory.  The plan itself is the analysis'
 * (report/plan.c); its format is in include/dcpi/values.h.
 */
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

/* One "proc" line into the runtime's file. */
static void proc_line(FILE *out, const char *line, const struct plan_img *im, size_t nim,
		      struct plan_info *info)
{
	unsigned long long off, size;
	char why[64];
	size_t i;

	if (sscanf(line, "proc %zu %llx %llx %63s", &i, &off, &size, why) != 4 || i >= nim) {
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
	fprintf(out, "%llx %llx %x %s\n", off, size, PRT_PLAN_HOT | args_flags(why), im[i].path);
	info->marks++;
	info->breakpoints += !!strstr(why, "args");
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
	return 0;
}
