/*
 * db.c - the profile database directory: epochs, the profiles of an epoch
 * and merging one epoch into another (DCPI sec. 4.3.3).
 *
 * An epoch is a subdirectory named by an 8-digit zero-padded sequence number
 * ("00000001", "00000002", ...), so names sort in creation order.  Inside it
 * each (image, event) has one file named by prof_file_name() and the epoch
 * metadata lives in "meta" (meta.c).  Files whose names start with a dot are
 * temporaries of an atomic write in progress and are never read as such.
 *
 * Everything goes through directory handles and never follows a link below
 * the database's own path.  Writes to an epoch are transactions (begin,
 * write to temporaries, commit, abort): several files become visible at
 * once through a journal renamed into place, which readers follow and the
 * next writer finishes, so an epoch's meta and profiles agree after a kill
 * at any instruction (docs/profile-format.md, "Crash consistency").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/profile.h"
#include "dcpi/safefile.h"
#include "internal.h"

#define EPOCH_DIGITS 8

static int is_epoch_name(const char *s);

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
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* 0755 whatever the umask; only a directory this user owns */
	if (st.st_uid == geteuid() && (st.st_mode & 07777) != 0755 && !(st.st_mode & 022))
		chmod(path, 0755);
	return 0;
}

/* A note once, however often a report reads the same damaged file. */
void prof_db_note(struct prof_db *db, const char *fmt, ...)
{
	size_t n = strlen(db->notes), k;
	va_list ap;

	if (n + 2 >= sizeof(db->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(db->notes + n, sizeof(db->notes) - n - 1, fmt, ap);
	va_end(ap);
	k = strlen(db->notes + n);
	for (const char *s = db->notes; s < db->notes + n; s = strchr(s, '\n') + 1)
		if (!strncmp(s, db->notes + n, k) && s[k] == '\n') {
			db->notes[n] = '\0';
			return;
		}
	db->notes[n + k] = '\n';
	db->notes[n + k + 1] = '\0';
}

const char *prof_db_notes(const struct prof_db *db)
{
	return db->notes;
}

void prof_db_notes_clear(struct prof_db *db)
{
	db->notes[0] = '\0';
}

size_t prof_db_damaged(const struct prof_db *db, const char *const **files)
{
	*files = (const char *const *)db->damaged;
	return db->ndamaged;
}

/* Remember a damaged file once (a report may read an epoch twice). */
void prof_db_add_damaged(struct prof_db *db, const char *path)
{
	char **v, *s;

	for (size_t i = 0; i < db->ndamaged; i++)
		if (!strcmp(db->damaged[i], path))
			return;
	v = realloc(db->damaged, (db->ndamaged + 1) * sizeof(*v));
	if (v)
		db->damaged = v;
	if (v && (s = strdup(path)))
		db->damaged[db->ndamaged++] = s;
}

/*
 * StrictModes, as sshd's: a directory another user can write (or one owned
 * by another user but root) lets that user plant links where we write.
 * Ancestors too, unless sticky (/tmp) or owned by us or root and not
 * writable by others.
 */
static int check_owner(const char *path, const struct stat *st, int self,
		       struct dcpi_err *err)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0)
		return dcpi_errf(err, -EPERM, "%s: owned by uid %u, who could plant links in "
				 "the database; chown %u '%s' or run as that user", path,
				 (unsigned)st->st_uid, (unsigned)me, path);
	if ((st->st_mode & 022) && (self || !(st->st_mode & S_ISVTX)))
		return dcpi_errf(err, -EPERM, "%s: writable by %s (mode %04o), who could plant "
				 "links in the database; chmod go-w '%s'", path,
				 (st->st_mode & 002) ? "every user" : "its group",
				 (unsigned)(st->st_mode & 07777), path);
	return 0;
}

static int check_strict(struct prof_db *db, struct dcpi_err *err)
{
	char real[PATH_MAX], *slash;
	struct stat st;
	int rc;

	if (fstat(db->fd, &st))
		return dcpi_errf(err, -errno, "%s: %s", db->path, strerror(errno));
	rc = check_owner(db->path, &st, 1, err);
	if (rc || !realpath(db->path, real))
		return rc;
	while ((slash = strrchr(real, '/'))) {
		if (slash == real)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (stat(real, &st))
			break;
		rc = check_owner(real, &st, 0, err);
		if (rc || !strcmp(real, "/"))
			break;
	}
	return rc;
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
	db->fd = db->txn_fd = -1;
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
	/* the user named this path: it may be a link; nothing below it is followed */
	db->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (db->fd < 0) {
		rc = dcpi_errf(err, -errno, "%s: cannot open profile database: %s", dir,
			       strerror(errno));
		goto fail;
	}
	if ((flags & PROF_DB_STRICT) && (rc = check_strict(db, err)))
		goto fail;
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
	if (db->txn_fd >= 0)
		prof_epoch_abort(db);
	if (db->fd >= 0)
		close(db->fd);
	prof_names_free(db->damaged, db->ndamaged);
	free(db->pend);
	free(db->path);
	free(db);
}

const char *prof_db_path(const struct prof_db *db)
{
	return db->path;
}

int prof_db_is_dir(const struct prof_db *db, const char *dir)
{
	struct stat a, b;

	return !fstat(db->fd, &a) && !stat(dir, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * A directory a writer may make a database of: none yet, an empty one, or
 * one that already holds an epoch.  Anything else is someone's directory,
 * which a write would silently turn into a database.
 */
int prof_db_check_target(const char *dir, struct dcpi_err *err)
{
	struct dirent *d;
	struct stat st;
	int other = 0, epochs = 0;
	DIR *dp;

	if (!strcmp(dir, "-"))
		return dcpi_errf(err, -EINVAL, "-: a database is a directory, it cannot go "
				 "to standard output");
	if (stat(dir, &st))
		return errno == ENOENT ? 0 : dcpi_errf(err, -errno, "%s: %s", dir,
						       strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return dcpi_errf(err, -ENOTDIR, "%s: not a profile database (not a directory)",
				 dir);
	dp = opendir(dir);
	if (!dp)
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (is_epoch_name(d->d_name) && !fstatat(dirfd(dp), d->d_name, &st,
							   AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode))
			epochs++;
		else
			other++;
	}
	closedir(dp);
	if (other && !epochs)
		return dcpi_errf(err, -EEXIST, "%s: a non-empty directory that is not a profile "
				 "database (no epoch in it); name a new or empty directory", dir);
	return 0;
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
	if (dcpi_grow((void **)names, cap, *n + 1, sizeof(**names)))
		return -ENOMEM;
	(*names)[*n] = strdup(s);
	if (!(*names)[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Names in the directory dfd (shown as dir) accepted by keep(), sorted by cmp. */
static int list_dir(int dfd, const char *dir,
		    int (*keep)(int dfd, const char *name, const char *arg), const char *arg,
		    int (*cmp)(const void *, const void *), char ***names, size_t *n,
		    struct dcpi_err *err)
{
	struct dirent *d;
	size_t cap = 0;
	DIR *dp;
	int rc = 0, fd;

	*names = NULL;
	*n = 0;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return dcpi_errf(err, rc, "%s: %s", dir, strerror(-rc));
	}
	errno = 0;
	while ((d = readdir(dp))) {
		if (!keep(dfd, d->d_name, arg))
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

/* A real directory: a link planted in place of an epoch is not one. */
static int keep_epoch(int dfd, const char *name, const char *arg)
{
	struct stat st;

	return is_epoch_name(name) && !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISDIR(st.st_mode);
}

int prof_db_epochs(struct prof_db *db, char ***names, size_t *n, struct dcpi_err *err)
{
	return list_dir(db->fd, db->path, keep_epoch, NULL, cmp_epoch, names, n, err);
}

/*
 * The newest epoch that holds profiles: an epoch left empty (a collector
 * killed before its first flush, a writer that failed before removing it)
 * would otherwise hide every good one, so every reader that takes "the
 * newest" skips those here and names them in a note.  When every epoch is
 * empty, the newest.
 */
int prof_db_latest_epoch(struct prof_db *db, char *name, size_t len, struct dcpi_err *err)
{
	char **names;
	size_t n, i, skipped = 0;
	int rc = prof_db_epochs(db, &names, &n, err);

	if (rc)
		return rc;
	if (!n)
		rc = dcpi_errf(err, -ENOENT, "%s: profile database has no epochs", db->path);
	for (i = n; i-- > 0 && !rc;) {
		rc = prof_epoch_is_empty(db, names[i], err);
		if (rc == 1) {
			skipped++;
			rc = 0;
			continue;
		}
		if (!rc)
			break;
	}
	if (!rc && skipped == n) {	/* all empty: the newest */
		i = n - 1;
		skipped = 0;
	}
	if (!rc && skipped)
		prof_db_note(db, "%s: skipped %zu empty epoch%s newer than %s (%s%s); "
			     "--epoch names one", db->path, skipped, skipped > 1 ? "s" : "",
			     names[i], names[i + 1], skipped > 1 ? "..." : "");
	if (!rc && (size_t)snprintf(name, len, "%s", names[i]) >= len)
		rc = dcpi_errf(err, -ENAMETOOLONG, "%s: epoch name too long", db->path);
	prof_names_free(names, n);
	return rc;
}

/* A handle on an existing epoch directory, never through a link. */
int prof_epoch_open(struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	int fd, e;

	if (!is_epoch_name(epoch))
		return dcpi_errf(err, -EINVAL, "%s: bad epoch name '%.64s'", db->path, epoch);
	fd = openat(db->fd, epoch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	if (e == ELOOP || e == ENOTDIR)
		return dcpi_errf(err, -ENOTDIR, "%s/%s: epoch is not a directory (a link "
				 "or a file is not followed)", db->path, epoch);
	return dcpi_errf(err, -e, "%s/%s: no such epoch: %s", db->path, epoch, strerror(e));
}

/* A writer killed in the newest epoch left a journal or temporaries: finish
 * them now, unless a live writer holds it (then it is not stale). */
static void tidy_epoch(struct prof_db *db, const char *epoch)
{
	struct dcpi_err e = { 0 };
	int fd = prof_epoch_open(db, epoch, &e);

	if (fd < 0)
		return;
	if (!flock(fd, LOCK_EX | LOCK_NB))
		prof_epoch_recover(db, fd, epoch, &e);
	close(fd);
}

int prof_db_epoch_new(struct prof_db *db, char *name, size_t len, struct dcpi_err *err)
{
	char buf[32];
	unsigned long long next = 1;
	char **names;
	size_t n;
	int rc = prof_db_epochs(db, &names, &n, err);

	if (rc)
		return rc;
	if (n) {
		next = strtoull(names[n - 1], NULL, 10) + 1;
		tidy_epoch(db, names[n - 1]);
	}
	prof_names_free(names, n);
	/* Another writer may create the same number first: take the next one. */
	for (int tries = 0; tries < 1000; tries++, next++) {
		snprintf(buf, sizeof(buf), "%0*llu", EPOCH_DIGITS, next);
		rc = dcpi_fail("mkdir");
		if (!rc && !mkdirat(db->fd, buf, 0755)) {
			int fd = prof_epoch_open(db, buf, err);

			if (fd < 0)
				return fd;
			fchmod(fd, 0755);	/* whatever the umask */
			close(fd);
			if ((size_t)snprintf(name, len, "%s", buf) >= len)
				return dcpi_errf(err, -ENAMETOOLONG, "%s/%s: epoch name buffer "
						 "too small", db->path, buf);
			return 0;
		}
		rc = rc ? rc : -errno;
		if (rc != -EEXIST)
			return dcpi_errf(err, rc, "%s/%s: cannot create epoch: %s", db->path,
					 buf, strerror(-rc));
	}
	return dcpi_errf(err, -EEXIST, "%s: cannot create a new epoch", db->path);
}

/*
 * Whether a writer can make an epoch here, asked before work that would be
 * lost otherwise (dcpi record runs its command first): creating and
 * removing a directory under a name no reader takes for an epoch.
 */
int prof_db_check_writable(struct prof_db *db, struct dcpi_err *err)
{
	char probe[64];
	int rc;

	snprintf(probe, sizeof(probe), ".probe-%ld", (long)getpid());
	rc = dcpi_fail("mkdir");
	if (!rc && mkdirat(db->fd, probe, 0700))
		rc = -errno;
	if (rc)
		return dcpi_errf(err, rc, "%s: cannot create epoch: %s", db->path,
				 strerror(-rc));
	unlinkat(db->fd, probe, AT_REMOVEDIR);
	return 0;
}

void prof_db_epoch_drop_empty(struct prof_db *db, const char *epoch)
{
	if (is_epoch_name(epoch))
		unlinkat(db->fd, epoch, AT_REMOVEDIR);	/* fails unless empty */
}

/* The directory of an existing epoch into path. */
int prof_epoch_dir(struct prof_db *db, const char *epoch, char *path, size_t len,
		   struct dcpi_err *err)
{
	int fd = prof_epoch_open(db, epoch, err);

	if (fd < 0)
		return fd;
	close(fd);
	if ((size_t)snprintf(path, len, "%s/%s", db->path, epoch) >= len)
		return dcpi_errf(err, -ENAMETOOLONG, "%s/%s: path too long", db->path, epoch);
	return 0;
}

/* Put a file that cannot be merged into out of the way, under a name no
 * reader takes for a profile, so a new one can start. */
static void set_aside(struct prof_db *db, const char *name, const char *why)
{
	char aside[NAME_MAX + 1];
	int n = snprintf(aside, sizeof(aside), "%.200s.bad-%ld-%ld", name, (long)time(NULL),
			 (long)getpid());

	if (n > 0 && !renameat(db->txn_fd, name, db->txn_fd, aside))
		prof_db_note(db, "%s; set aside as %s, a new file started", why, aside);
	else
		prof_db_note(db, "%s; cannot set it aside: %s", why, strerror(errno));
}

static int merge_into_file(struct prof_db *db, const char *name, const struct prof_profile *p,
			   struct dcpi_err *err)
{
	struct prof_profile old;
	struct prof_view v = { .fd = db->txn_fd, .db = db };
	struct dcpi_err e = { 0 };
	char shown[PATH_MAX + NAME_MAX + 2];
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	snprintf(v.dir, sizeof(v.dir), "%s/%s", db->path, db->txn_epoch);
	prof_profile_init(&old);
	rc = prof_view_read(&v, name, &buf, &len, shown, sizeof(shown), &e);
	if (!rc)
		rc = prof_decode(buf, len, shown, &old, &e);
	free(buf);
	if (rc == -ENOENT) {
		rc = 0;
	} else if (rc && rc != -ENOMEM && rc != -EIO) {
		/* corrupt, a FIFO, a link: the live epoch goes on without it */
		if (!prof_txn_pending(db, name))
			set_aside(db, name, e.msg);
		prof_profile_free(&old);
		prof_profile_init(&old);
		rc = 0;
	} else if (rc) {
		return dcpi_errf(err, rc, "%s", e.msg);
	}
	if (old.n || old.total || old.event[0]) {
		rc = prof_profile_merge(&old, p, err);
		if (!rc)
			rc = prof_encode(&old, &buf, &len, err);
	} else {
		rc = prof_encode(p, &buf, &len, err);
	}
	prof_profile_free(&old);
	if (rc)
		return rc;
	rc = prof_txn_write(db, name, buf, len, err);
	free(buf);
	return rc;
}

int prof_epoch_write(struct prof_db *db, const char *epoch, const struct prof_profile *p,
		     struct dcpi_err *err)
{
	char name[NAME_MAX + 1];
	int rc;

	if (prof_file_name(&p->image, p->event, name, sizeof(name)))
		return dcpi_errf(err, -EINVAL, "%s/%s: %s: bad event name '%s'", db->path,
				 epoch, p->image.path, p->event);
	rc = prof_txn_enter(db, epoch, err);
	if (rc)
		return rc;
	return prof_txn_leave(db, merge_into_file(db, name, p, err), err);
}

/* A file of the kind suffix names (".prof", ".paths", ".values"), not a
 * temporary. */
static int is_kind_name(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return name[0] != '.' && n > k && !strcmp(name + n - k, suffix);
}

static int keep_kind(int dfd, const char *name, const char *suffix)
{
	return is_kind_name(name, suffix);
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

/* The profile names of a view: the directory's and the journal's new ones. */
static int view_names(struct prof_view *v, const char *suffix, char ***names, size_t *nn,
		      struct dcpi_err *err)
{
	int own = v->db && v->fd == v->db->txn_fd;
	size_t cap, nextra = v->nj + (own ? v->db->npend : 0);
	int rc = list_dir(v->fd, v->dir, keep_kind, suffix, cmp_str, names, nn, err);

	cap = *nn;
	for (size_t i = 0; !rc && i < nextra; i++) {	/* the journal's, our pending */
		const char *nm = i < v->nj ? v->pj[i].name : v->db->pend[i - v->nj].name;
		int have = 0;

		for (size_t k = 0; k < *nn && !have; k++)
			have = !strcmp((*names)[k], nm);
		if (!have && is_kind_name(nm, suffix) && push_name(names, nn, &cap, nm))
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory listing", v->dir);
	}
	if (!rc)
		dcpi_qsort(*names, *nn, sizeof(**names), cmp_str);
	return rc;
}

/*
 * A profile that fails its checks (truncated, bad checksum, garbage) is one
 * image's loss, not the epoch's: a reader skips it with a note naming it and
 * the reason and lists it in prof_db_damaged.  A merge (strict) refuses it
 * instead: its output would silently lack those samples.
 */
static int epoch_read(struct prof_db *db, const char *epoch, int strict,
		      struct prof_profile **out, size_t *n, struct dcpi_err *err)
{
	char shown[PATH_MAX + NAME_MAX + 2];
	struct prof_profile *v = NULL;
	struct prof_view ev;
	char **names = NULL;
	size_t nn = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = prof_view_open(db, epoch, &ev, err);
	if (rc)
		return rc;
	rc = view_names(&ev, ".prof", &names, &nn, err);
	if (rc)
		goto out;
	if (nn) {
		v = calloc(nn, sizeof(*v));
		if (!v) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", ev.dir);
			goto out;
		}
	}
	for (size_t i = 0; i < nn; i++) {
		uint8_t *buf;
		size_t len;
		struct dcpi_err e = { 0 };

		rc = prof_view_read(&ev, names[i], &buf, &len, shown, sizeof(shown), &e);
		if (rc == -EINVAL || rc == -ELOOP) {	/* a FIFO, a link, ...: not ours */
			prof_db_note(db, "%s: skipped", e.msg);
			rc = 0;
			continue;
		}
		if (rc == -ENOENT) {	/* removed since the listing */
			rc = 0;
			continue;
		}
		if (!rc)
			rc = prof_decode(buf, len, shown, &v[k], &e);
		free(buf);
		if (rc && rc != -ENOMEM && rc != -EIO && !strict) {
			prof_db_note(db, "%s; skipped, the rest of epoch %s is reported", e.msg,
				     epoch);
			prof_db_add_damaged(db, shown);
			rc = 0;
			continue;
		}
		if (rc && strict) {
			dcpi_errf(err, rc, "%s; a damaged profile is not merged (the output "
				  "would lack its samples): remove or repair it", e.msg);
			goto out;
		}
		if (rc) {
			dcpi_errf(err, rc, "%s", e.msg);
			goto out;
		}
		k++;
	}
	*out = v;
	*n = k;
	v = NULL;
out:
	prof_view_close(&ev);
	prof_profiles_free(v, k);
	prof_names_free(names, nn);
	return rc;
}

int prof_epoch_read(struct prof_db *db, const char *epoch, struct prof_profile **out,
		    size_t *n, struct dcpi_err *err)
{
	return epoch_read(db, epoch, 0, out, n, err);
}

int prof_epoch_names(struct prof_db *db, const char *epoch, const char *suffix,
		     char ***names, size_t *n, struct dcpi_err *err)
{
	struct prof_view ev;
	int rc = prof_view_open(db, epoch, &ev, err);

	*names = NULL;
	*n = 0;
	if (rc)
		return rc;
	rc = view_names(&ev, suffix, names, n, err);
	prof_view_close(&ev);
	return rc;
}

int prof_epoch_is_empty(struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	struct prof_view ev;
	char **names = NULL;
	size_t nn = 0;
	int rc = prof_view_open(db, epoch, &ev, err);

	if (rc)
		return rc;
	rc = view_names(&ev, ".prof", &names, &nn, err);
	prof_view_close(&ev);
	prof_names_free(names, nn);
	return rc ? rc : nn == 0;
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
	rc = epoch_read(src, src_epoch, 1, &v, &n, err);
	if (rc)
		return rc;
	rc = prof_epoch_meta_read(src, src_epoch, &sm, err);
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		rc = 1;		/* no metadata to merge */
	}
	if (rc < 0) {
		prof_profiles_free(v, n);
		return rc;
	}
	/* profiles and metadata replaced together */
	if (dst->txn_fd < 0 || strcmp(dst->txn_epoch, dst_epoch)) {
		int r2 = prof_epoch_begin(dst, dst_epoch, err);

		if (r2) {
			prof_profiles_free(v, n);
			return r2;
		}
		dst->txn_implicit = 1;
	}
	{
		int implicit = dst->txn_implicit, r = 0;

		dst->txn_implicit = 0;	/* one commit for all of them */
		for (size_t i = 0; i < n && !r; i++)
			r = prof_epoch_write(dst, dst_epoch, &v[i], err);
		if (!r && rc == 0) {
			r = prof_epoch_meta_read(dst, dst_epoch, &dm, err);
			if (r == -ENOENT) {
				dcpi_err_clear(err);
				memset(&dm, 0, sizeof(dm));
				r = 0;
			}
			if (!r) {
				prof_meta_merge(&dm, &sm);
				r = prof_epoch_meta_write(dst, dst_epoch, &dm, err);
			}
		}
		prof_profiles_free(v, n);
		dst->txn_implicit = implicit;
		return prof_txn_leave(dst, r, err);
	}
}
