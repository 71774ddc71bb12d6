/*
 * load.c - the profiles a report reads: one epoch, the newest, or all of
 * them merged (profiles of the same image and event add up); and the names
 * of the kernel's pseudo-image, "[kernel.kallsyms]" (offsets are kernel
 * addresses), from /proc/kallsyms (image/kallsyms.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"
#include "dcpi/kallsyms.h"
#include "dcpi/report.h"
#include "internal.h"

/* Move src's profiles into the set (out, n), merging equal (image, event). */
static int merge_into(struct prof_profile **out, size_t *n, struct prof_profile *src,
		      size_t nsrc, struct dcpi_err *err)
{
	struct prof_profile *all = realloc(*out, (*n + nsrc) * sizeof(*all));
	int rc = 0;

	if (!all)
		return dcpi_errf(err, -ENOMEM, "out of memory merging epochs");
	*out = all;
	for (size_t i = 0; i < nsrc; i++) {
		size_t k;

		for (k = 0; k < *n; k++)
			if (!strcmp(all[k].event, src[i].event) &&
			    prof_image_id_equal(&all[k].image, &src[i].image))
				break;
		if (k < *n) {
			if (rc == 0)
				rc = prof_profile_merge(&all[k], &src[i], err);
			prof_profile_free(&src[i]);
		} else {
			all[(*n)++] = src[i];
		}
	}
	free(src);
	return rc;
}

/* The newest epoch that holds profiles (prof_db_latest_epoch notes the
 * empty newer ones it skipped). */
static int load_latest(struct prof_db *db, struct prof_profile **out, size_t *n,
		       char *used, size_t usedlen, struct dcpi_err *err)
{
	char name[256];
	int rc = prof_db_latest_epoch(db, name, sizeof(name), err);

	if (rc < 0)
		return rc;
	if (used)
		snprintf(used, usedlen, "%s", name);
	return prof_epoch_read(db, name, out, n, err);
}

int rep_load_profiles(struct prof_db *db, const char *epoch, struct prof_profile **out,
		      size_t *n, char *used, size_t usedlen, struct dcpi_err *err)
{
	char **names = NULL;
	size_t nnames = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (epoch && strcmp(epoch, "all")) {
		if (used)
			snprintf(used, usedlen, "%s", epoch);
		return prof_epoch_read(db, epoch, out, n, err);
	}
	if (!epoch)
		return load_latest(db, out, n, used, usedlen, err);
	rc = prof_db_epochs(db, &names, &nnames, err);
	if (rc < 0)
		return rc;
	if (nnames == 0)
		rc = dcpi_errf(err, -ENOENT, "%s: no epochs", prof_db_path(db));
	for (size_t i = 0; i < nnames && rc == 0; i++) {
		struct prof_profile *p;
		size_t np;

		rc = prof_epoch_read(db, names[i], &p, &np, err);
		if (rc == 0)
			rc = merge_into(out, n, p, np, err);
	}
	prof_names_free(names, nnames);
	if (rc < 0) {
		prof_profiles_free(*out, *n);
		*out = NULL;
		*n = 0;
	} else if (used) {
		snprintf(used, usedlen, "all");
	}
	return rc;
}

int rep_load_table(const char *dbdir, const char *epoch, struct rep_table *t, char *used,
		   size_t usedlen, struct dcpi_err *err)
{
	struct prof_profile *p = NULL;
	struct prof_db *db = NULL;
	size_t n = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = prof_db_open(dbdir, 0, &db, err);
	if (rc >= 0)
		rc = rep_load_profiles(db, epoch, &p, &n, used, usedlen, err);
	if (rc >= 0)
		rc = rep_summarize(p, n, 0, t, err);
	prof_profiles_free(p, n);
	if (db)
		prof_db_close(db);
	return rc;
}

int rep_is_kernel_path(const char *path)
{
	return !strcmp(path, KSYMS_IMAGE);
}

/* The kernel's procedures as a symbol map of raw addresses, as a perf
 * map's (report/jitmap.c); $DCPI_KALLSYMS names another file (tests). */
int rep_kernel_syms_load(struct ksyms *m, struct dcpi_err *err)
{
	return ksyms_load(getenv("DCPI_KALLSYMS"), m, err);
}

/* name (or "[kernel.kallsyms]:name") is a kernel procedure with samples in p:
 * -ENOENT saying why no analysis reads it, else 0. */
int rep_kernel_proc_note(const struct prof_profile *p, size_t n, const char *spec,
			 struct dcpi_err *err)
{
	struct ksyms m;
	struct dcpi_err ierr = { 0 };
	char want[PROF_PATH_MAX];
	const char *name = spec;
	size_t i;
	int found = 0;

	for (i = 0; i < n && !rep_is_kernel_path(p[i].image.path); i++)
		;
	if (i == n || img_spec_split(spec, want, sizeof(want), &name) < 0 ||
	    (name != spec && !rep_is_kernel_path(want)))
		return 0;
	if (rep_kernel_syms_load(&m, &ierr) < 0)
		return 0;
	for (size_t k = 0; k < m.n && !found; k++)
		found = !strcmp(m.e[k].name, name);
	ksyms_free(&m);
	if (!found)
		return 0;
	return dcpi_errf(err, -ENOENT, "%s: a kernel procedure (%s): its samples are in "
			 "dcpiprof, but its instructions cannot be analysed without the "
			 "kernel's vmlinux (--vmlinux FILE)", name, KSYMS_IMAGE);
}
