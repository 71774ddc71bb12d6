/*
 * db.c - the profile database directory: epochs, the profiles of an epoch
 * and merging one epoch into another (DCPI sec. 4.3.3).
 *
 * An epoch is a subdirectory named by an 8-digit zero-padded sequence number
 * ("00000001", "00000002", ...), so names sort in creation order.  Inside it
 * each (image, event) has one file named by prof_file_name() and the epoch
 * metadata lives in "meta" (meta.c).  Files whose names start with a dot are
 * temporaries of an atomic write in progress and are never read.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/profile.h"
#include "internal.h"

#define EPOCH_DIGITS 8

struct prof_db {
	char *path;
};

static int mkdir_p(char *path)
{
	struct stat st;

	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*s = '/';
			return -errno;
		}
		*s = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	if (stat(path, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int prof_db_open(const char *dir, unsigned flags, struct prof_db **out,
		 struct dcpi_err *err)
{
	struct prof_db *db;
	struct stat st;
	int rc;

	*out = NULL;
	if (!dir[0] || strlen(dir) >= PATH_MAX - 256)
		return dcpi_errf(err, -ENAMETOOLONG, "bad profile database path");
	db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(dir))) {
		free(db);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
	}
	if (stat(dir, &st)) {
		rc = -errno;
		if (rc != -ENOENT || !(flags & PROF_DB_CREATE)) {
			dcpi_errf(err, rc, "%s: cannot open profile database: %s", dir,
				  strerror(-rc));
			goto fail;
		}
		rc = mkdir_p(db->path);
		if (rc) {
			dcpi_errf(err, rc, "%s: cannot create profile database: %s", dir,
				  strerror(-rc));
			goto fail;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		rc = dcpi_errf(err, -ENOTDIR, "%s: not a profile database (not a directory)",
			       dir);
		goto fail;
	}
	*out = db;
	return 0;
fail:
	prof_db_close(db);
	return rc;
}

void prof_db_close(struct prof_db *db)
{
	if (!db)
		return;
	free(db->path);
	free(db);
}

const char *prof_db_path(const struct prof_db *db)
{
	return db->path;
}

static int is_epoch_name(const char *s)
{
	size_t n = strlen(s);

	if (n < EPOCH_DIGITS || n > 19)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Longer names are larger numbers; equal lengths compare as strings. */
static int cmp_epoch(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

void prof_names_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int push_name(char ***names, size_t *n, size_t *cap, const char *s)
{
	char **v;

	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;

		v = realloc(*names, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		*names = v;
		*cap = c;
	}
	(*names)[*n] = strdup(s);
	if (!(*names)[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Names in dir accepted by keep(), sorted by cmp. */
static int list_dir(const char *dir, int (*keep)(const char *dir, const char *name),
		    int (*cmp)(const void *, const void *), char ***names, size_t *n,
		    struct dcpi_err *err)
{
	struct dirent *d;
	size_t cap = 0;
	DIR *dp;
	int rc = 0;

	*names = NULL;
	*n = 0;
	dp = opendir(dir);
	if (!dp)
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	errno = 0;
	while ((d = readdir(dp))) {
		if (!keep(dir, d->d_name))
			continue;
		rc = push_name(names, n, &cap, d->d_name);
		if (rc) {
			dcpi_errf(err, rc, "%s: out of memory listing", dir);
			goto fail;
		}
		errno = 0;
	}
	if (errno) {
		rc = dcpi_errf(err, -errno, "%s: readdir: %s", dir, strerror(errno));
		goto fail;
	}
	closedir(dp);
	dcpi_qsort(*names, *n, sizeof(**names), cmp);
	return 0;
fail:
	closedir(dp);
	prof_names_free(*names, *n);
	*names = NULL;
	*n = 0;
	return rc;
}

static int keep_epoch(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (!is_epoch_name(name))
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return 0;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int prof_db_epochs(struct prof_db *db, char ***names, size_t *n, struct dcpi_err *err)
{
	return list_dir(db->path, keep_epoch, cmp_epoch, names, n, err);
}

int prof_db_latest_epoch(struct prof_db *db, char *name, size_t len, struct dcpi_err *err)
{
	char **names;
	size_t n;
	int rc = prof_db_epochs(db, &names, &n, err);

	if (rc)
		return rc;
	if (!n)
		rc = dcpi_errf(err, -ENOENT, "%s: profile database has no epochs", db->path);
	else if ((size_t)snprintf(name, len, "%s", names[n - 1]) >= len)
		rc = dcpi_errf(err, -ENAMETOOLONG, "%s: epoch name too long", db->path);
	prof_names_free(names, n);
	return rc;
}

int prof_db_epoch_new(struct prof_db *db, char *name, size_t len, struct dcpi_err *err)
{
	char path[PATH_MAX], buf[32];
	unsigned long long next = 1;
	char **names;
	size_t n;
	int rc = prof_db_epochs(db, &names, &n, err);

	if (rc)
		return rc;
	if (n)
		next = strtoull(names[n - 1], NULL, 10) + 1;
	prof_names_free(names, n);
	/* Another writer may create the same number first: take the next one. */
	for (int tries = 0; tries < 1000; tries++, next++) {
		snprintf(buf, sizeof(buf), "%0*llu", EPOCH_DIGITS, next);
		snprintf(path, sizeof(path), "%s/%s", db->path, buf);
		if (!mkdir(path, 0755)) {
			if ((size_t)snprintf(name, len, "%s", buf) >= len)
				return dcpi_errf(err, -ENAMETOOLONG, "%s: epoch name buffer "
						 "too small", path);
			return 0;
		}
		if (errno != EEXIST)
			return dcpi_errf(err, -errno, "%s: cannot create epoch: %s", path,
					 strerror(errno));
	}
	return dcpi_errf(err, -EEXIST, "%s: cannot create a new epoch", db->path);
}

/* The directory of an existing epoch into path. */
int prof_epoch_dir(struct prof_db *db, const char *epoch, char *path, size_t len,
		   struct dcpi_err *err)
{
	struct stat st;

	if (!is_epoch_name(epoch))
		return dcpi_errf(err, -EINVAL, "%s: bad epoch name '%.64s'", db->path, epoch);
	if ((size_t)snprintf(path, len, "%s/%s", db->path, epoch) >= len)
		return dcpi_errf(err, -ENAMETOOLONG, "%s/%s: path too long", db->path, epoch);
	if (stat(path, &st))
		return dcpi_errf(err, -errno, "%s: no such epoch: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return dcpi_errf(err, -ENOTDIR, "%s: epoch is not a directory", path);
	return 0;
}

int prof_epoch_write(struct prof_db *db, const char *epoch, const struct prof_profile *p,
		     struct dcpi_err *err)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], path[PATH_MAX + NAME_MAX + 2];
	int rc = prof_epoch_dir(db, epoch, dir, sizeof(dir), err);

	if (rc)
		return rc;
	if (prof_file_name(&p->image, p->event, name, sizeof(name)))
		return dcpi_errf(err, -EINVAL, "%s: %s: bad event name '%s'", dir,
				 p->image.path, p->event);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return prof_file_merge(path, p, err);
}

static int keep_profile(const char *dir, const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".prof");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void prof_profiles_free(struct prof_profile *p, size_t n)
{
	if (!p)
		return;
	for (size_t i = 0; i < n; i++)
		prof_profile_free(&p[i]);
	free(p);
}

int prof_epoch_read(struct prof_db *db, const char *epoch, struct prof_profile **out,
		    size_t *n, struct dcpi_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + NAME_MAX + 2];
	struct prof_profile *v = NULL;
	char **names = NULL;
	size_t nn = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = prof_epoch_dir(db, epoch, dir, sizeof(dir), err);
	if (rc)
		return rc;
	rc = list_dir(dir, keep_profile, cmp_str, &names, &nn, err);
	if (rc)
		return rc;
	if (nn) {
		v = calloc(nn, sizeof(*v));
		if (!v) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
			goto out;
		}
	}
	for (k = 0; k < nn; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		rc = prof_file_read(path, &v[k], err);
		if (rc)
			goto out;
	}
	*out = v;
	*n = nn;
	v = NULL;
out:
	prof_profiles_free(v, k);
	prof_names_free(names, nn);
	return rc;
}

/* The same directory, whatever path names it. */
static int same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int prof_epoch_merge(struct prof_db *dst, const char *dst_epoch,
		     struct prof_db *src, const char *src_epoch, struct dcpi_err *err)
{
	char ddir[PATH_MAX], sdir[PATH_MAX];
	struct prof_epoch_meta sm, dm;
	struct prof_profile *v;
	size_t n;
	int rc;

	rc = prof_epoch_dir(dst, dst_epoch, ddir, sizeof(ddir), err);
	if (!rc)
		rc = prof_epoch_dir(src, src_epoch, sdir, sizeof(sdir), err);
	if (rc)
		return rc;
	if (same_dir(ddir, sdir))
		return dcpi_errf(err, -EINVAL, "%s: cannot merge an epoch into itself", ddir);
	rc = prof_epoch_read(src, src_epoch, &v, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		rc = prof_epoch_write(dst, dst_epoch, &v[i], err);
	prof_profiles_free(v, n);
	if (rc)
		return rc;
	rc = prof_epoch_meta_read(src, src_epoch, &sm, err);
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		return 0;
	}
	if (rc)
		return rc;
	rc = prof_epoch_meta_read(dst, dst_epoch, &dm, err);
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		memset(&dm, 0, sizeof(dm));
		rc = 0;
	}
	if (rc)
		return rc;
	prof_meta_merge(&dm, &sm);
	return prof_epoch_meta_write(dst, dst_epoch, &dm, err);
}
