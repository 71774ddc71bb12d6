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
#define JOURNAL_NAME ".journal"
#define JOURNAL_MAGIC "dcpi-journal 1\n"
#define LOCK_WAIT_MS 10000	/* a writer gives up on a held lock after this */
#define READ_LOCK_WAIT_MS 2000	/* a reader reads without the lock after this */

/* A file written in the open transaction, not yet renamed into place. */
struct pending {
	char tmp[NAME_MAX + 1];
	char name[NAME_MAX + 1];
};

struct prof_db {
	char *path;
	int fd;			/* the database directory */
	int txn_fd;		/* the locked epoch of the open transaction, -1 if none */
	int txn_implicit;	/* opened by a single write, committed by it */
	char txn_epoch[32];
	struct pending *pend;
	size_t npend, cappend;
	char notes[2048];	/* what was skipped or set aside, one per line */
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
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* 0755 whatever the umask; only a directory this user owns */
	if (st.st_uid == geteuid() && (st.st_mode & 07777) != 0755 && !(st.st_mode & 022))
		chmod(path, 0755);
	return 0;
}

void prof_db_note(struct prof_db *db, const char *fmt, ...)
{
	size_t n = strlen(db->notes);
	va_list ap;

	if (n + 2 >= sizeof(db->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(db->notes + n, sizeof(db->notes) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(db->notes);
	db->notes[n] = '\n';
	db->notes[n + 1] = '\0';
}

const char *prof_db_notes(const struct prof_db *db)
{
	return db->notes;
}

void prof_db_notes_clear(struct prof_db *db)
{
	db->notes[0] = '\0';
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
	free(db->pend);
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

/* Names in the directory dfd (shown as dir) accepted by keep(), sorted by cmp. */
static int list_dir(int dfd, const char *dir, int (*keep)(int dfd, const char *name),
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
		if (!keep(dfd, d->d_name))
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
static int keep_epoch(int dfd, const char *name)
{
	struct stat st;

	return is_epoch_name(name) && !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISDIR(st.st_mode);
}

int prof_db_epochs(struct prof_db *db, char ***names, size_t *n, struct dcpi_err *err)
{
	return list_dir(db->fd, db->path, keep_epoch, cmp_epoch, names, n, err);
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

/* A handle on an existing epoch directory, never through a link. */
static int epoch_open(struct prof_db *db, const char *epoch, struct dcpi_err *err)
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

static int epoch_recover(struct prof_db *db, int efd, const char *epoch,
			 struct dcpi_err *err);

/* A writer killed in the newest epoch left a journal or temporaries: finish
 * them now, unless a live writer holds it (then it is not stale). */
static void tidy_epoch(struct prof_db *db, const char *epoch)
{
	struct dcpi_err e = { 0 };
	int fd = epoch_open(db, epoch, &e);

	if (fd < 0)
		return;
	if (!flock(fd, LOCK_EX | LOCK_NB))
		epoch_recover(db, fd, epoch, &e);
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
			int fd = epoch_open(db, buf, err);

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

/* The directory of an existing epoch into path. */
int prof_epoch_dir(struct prof_db *db, const char *epoch, char *path, size_t len,
		   struct dcpi_err *err)
{
	int fd = epoch_open(db, epoch, err);

	if (fd < 0)
		return fd;
	close(fd);
	if ((size_t)snprintf(path, len, "%s/%s", db->path, epoch) >= len)
		return dcpi_errf(err, -ENAMETOOLONG, "%s/%s: path too long", db->path, epoch);
	return 0;
}

/* ---- the journal: many files of an epoch replaced as one ------------------ */

/* flock with a deadline, so a lock held by someone else cannot hang us. */
static int lock_wait(int fd, int how, int ms)
{
	for (int waited = 0;; waited += 5) {
		if (!flock(fd, how | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (waited >= ms)
			return -EWOULDBLOCK;
		usleep(5000);
	}
}

static void pending_clear(struct prof_db *db)
{
	db->npend = 0;
}

static int parse_journal(char *text, size_t len, struct pending **out, size_t *n)
{
	size_t cap = 0, ml = strlen(JOURNAL_MAGIC);
	char *line, *save = NULL;

	*out = NULL;
	*n = 0;
	if (len < ml || memcmp(text, JOURNAL_MAGIC, ml) || memchr(text, 0, len))
		return -EINVAL;
	for (line = strtok_r(text + ml, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct pending *v, pe;
		char *sp = strchr(line, ' ');

		if (!strcmp(line, "end"))
			return 0;
		if (!sp || (size_t)(sp - line) > NAME_MAX || strlen(sp + 1) > NAME_MAX ||
		    strchr(sp + 1, '/') || strchr(sp + 1, ' ') || !dcpi_is_temp_name(
			    (*sp = '\0', line)))
			goto bad;
		snprintf(pe.tmp, sizeof(pe.tmp), "%s", line);
		snprintf(pe.name, sizeof(pe.name), "%s", sp + 1);
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = realloc(*out, cap * sizeof(*v));
			if (!v)
				goto bad;
			*out = v;
		}
		(*out)[(*n)++] = pe;
	}
bad:
	free(*out);
	*out = NULL;
	*n = 0;
	return -EINVAL;
}

/* The committed-but-unfinished renames of an epoch (none: *n = 0). */
static int read_journal(int efd, const char *dir, struct pending **out, size_t *n)
{
	struct dcpi_err e = { 0 };
	uint8_t *buf;
	size_t len;
	int rc;

	*out = NULL;
	*n = 0;
	rc = dcpi_read_file_at(efd, JOURNAL_NAME, DCPI_OPEN_NOFOLLOW, 1 << 24, &buf, &len,
			       dir, &e);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rc = parse_journal((char *)buf, len, out, n);
	free(buf);
	return rc;
}

static int fsync_fd(int fd)
{
	return fsync(fd) && errno != EINVAL ? -errno : 0;
}

/*
 * Finish what a writer killed after its commit point left: do the journal's
 * remaining renames, drop the journal, and delete every other temporary (a
 * writer holds the lock for as long as its temporaries exist, so with the
 * lock held any temporary is stale).  A journal that cannot be read is set
 * aside, and the temporaries it named go with the rest.
 */
static int epoch_recover(struct prof_db *db, int efd, const char *epoch, struct dcpi_err *err)
{
	char dir[PATH_MAX], aside[64];
	struct pending *pj;
	struct dirent *d;
	size_t nj;
	DIR *dp;
	int rc, fd;

	snprintf(dir, sizeof(dir), "%s/%s", db->path, epoch);
	rc = read_journal(efd, dir, &pj, &nj);
	if (rc == -EINVAL) {
		snprintf(aside, sizeof(aside), "journal.bad-%ld", (long)time(NULL));
		renameat(efd, JOURNAL_NAME, efd, aside);
		prof_db_note(db, "%s/%s: unreadable journal, set aside as %s", dir,
			     JOURNAL_NAME, aside);
	} else if (rc) {
		return dcpi_errf(err, rc, "%s/%s: %s", dir, JOURNAL_NAME, strerror(-rc));
	}
	for (size_t i = 0; i < nj; i++)
		if (renameat(efd, pj[i].tmp, efd, pj[i].name) && errno != ENOENT) {
			rc = -errno;
			free(pj);
			return dcpi_errf(err, rc, "%s/%s: finishing an interrupted write: %s",
					 dir, pj[i].name, strerror(-rc));
		}
	free(pj);
	if (nj) {
		if ((rc = fsync_fd(efd)) || unlinkat(efd, JOURNAL_NAME, 0))
			return dcpi_errf(err, rc ? rc : -errno, "%s/%s: %s", dir, JOURNAL_NAME,
					 strerror(rc ? -rc : errno));
	}
	fd = openat(efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	}
	while ((d = readdir(dp)))
		if (dcpi_is_temp_name(d->d_name))
			unlinkat(efd, d->d_name, 0);
	closedir(dp);
	return 0;
}

int prof_epoch_begin(struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	int fd, rc;

	if (db->txn_fd >= 0)
		return dcpi_errf(err, -EBUSY, "%s: a write to epoch %s is already open",
				 db->path, db->txn_epoch);
	fd = epoch_open(db, epoch, err);
	if (fd < 0)
		return fd;
	rc = lock_wait(fd, LOCK_EX, LOCK_WAIT_MS);
	if (rc) {
		close(fd);
		return dcpi_errf(err, rc, "%s/%s: cannot lock the epoch: %s", db->path, epoch,
				 rc == -EWOULDBLOCK ? "another process holds it" : strerror(-rc));
	}
	rc = epoch_recover(db, fd, epoch, err);
	if (rc) {
		close(fd);
		return rc;
	}
	db->txn_fd = fd;
	db->txn_implicit = 0;
	snprintf(db->txn_epoch, sizeof(db->txn_epoch), "%s", epoch);
	pending_clear(db);
	return 0;
}

void prof_epoch_abort(struct prof_db *db)
{
	if (db->txn_fd < 0)
		return;
	if (db->npend > 1)	/* a journal that made it despite the error goes first */
		unlinkat(db->txn_fd, JOURNAL_NAME, 0);
	for (size_t i = 0; i < db->npend; i++)
		unlinkat(db->txn_fd, db->pend[i].tmp, 0);
	pending_clear(db);
	close(db->txn_fd);	/* drops the lock */
	db->txn_fd = -1;
}

static int journal_text(const struct prof_db *db, char **out, size_t *len)
{
	size_t cap = strlen(JOURNAL_MAGIC) + 8 + db->npend * (2 * NAME_MAX + 4), k;
	char *s = malloc(cap);

	if (!s)
		return -ENOMEM;
	k = (size_t)snprintf(s, cap, "%s", JOURNAL_MAGIC);
	for (size_t i = 0; i < db->npend; i++)
		k += (size_t)snprintf(s + k, cap - k, "%s %s\n", db->pend[i].tmp,
				      db->pend[i].name);
	k += (size_t)snprintf(s + k, cap - k, "end\n");
	*out = s;
	*len = k;
	return 0;
}

/*
 * The commit point of several files is the rename of the journal into
 * place; one file needs no journal (its rename is atomic).  After the
 * commit point a failure is finished by the next writer and, until then,
 * readers follow the journal (prof_epoch_read, prof_epoch_meta_read).
 */
int prof_epoch_commit(struct prof_db *db, struct dcpi_err *err)
{
	char dir[PATH_MAX], *text = NULL;
	size_t len;
	int rc = 0, efd = db->txn_fd;

	if (efd < 0)
		return dcpi_errf(err, -EINVAL, "%s: no write is open", db->path);
	snprintf(dir, sizeof(dir), "%s/%s", db->path, db->txn_epoch);
	if (db->npend > 1) {
		rc = journal_text(db, &text, &len);
		if (rc) {
			rc = dcpi_errf(err, rc, "%s: out of memory", dir);
			goto fail;
		}
		rc = dcpi_write_at(efd, dir, JOURNAL_NAME, text, len, 0644, err);
		free(text);
		if (rc)
			goto fail;
	}
	if (db->npend == 1) {	/* one file: its rename is the commit point */
		rc = dcpi_fail("commit");
		if (rc || renameat(efd, db->pend[0].tmp, efd, db->pend[0].name)) {
			rc = rc ? rc : -errno;
			dcpi_errf(err, rc, "%s/%s: rename from %s: %s", dir, db->pend[0].name,
				  db->pend[0].tmp, strerror(-rc));
			goto fail;
		}
	}
	/* committed: from here on a failure is finished by the next writer (and
	 * readers follow the journal meanwhile), so it is not the caller's */
	for (size_t i = 0; db->npend > 1 && i < db->npend && !rc; i++) {
		rc = dcpi_fail("commit");
		if (!rc && renameat(efd, db->pend[i].tmp, efd, db->pend[i].name))
			rc = -errno;
	}
	if (!rc)
		rc = fsync_fd(efd);
	if (!rc && db->npend > 1) {
		rc = dcpi_fail("journal");
		if (!rc && unlinkat(efd, JOURNAL_NAME, 0))
			rc = -errno;
		if (!rc)
			rc = fsync_fd(efd);
	}
	if (rc)
		prof_db_note(db, "%s: committed, but finishing it failed (%s); the next "
			     "writer finishes it", dir, strerror(-rc));
	pending_clear(db);
	close(efd);
	db->txn_fd = -1;
	return 0;
fail:
	prof_epoch_abort(db);
	return rc;
}

static struct pending *pending_find(struct prof_db *db, const char *name)
{
	for (size_t i = 0; i < db->npend; i++)
		if (!strcmp(db->pend[i].name, name))
			return &db->pend[i];
	return NULL;
}

/* Write buf to a temporary that the commit renames to name. */
static int txn_write(struct prof_db *db, const char *name, const void *buf, size_t len,
		     struct dcpi_err *err)
{
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	struct pending *pe = pending_find(db, name);
	int fd, rc;

	snprintf(dir, sizeof(dir), "%s/%s", db->path, db->txn_epoch);
	if (!name[0] || name[0] == '.' || strchr(name, '/') || strchr(name, ' ') ||
	    strlen(name) > NAME_MAX - 32)
		return dcpi_errf(err, -EINVAL, "%s: bad file name '%.64s'", dir, name);
	fd = dcpi_create_temp(db->txn_fd, name, tmp, sizeof(tmp), 0644);
	if (fd < 0) {
		rc = fd;
		return dcpi_errf(err, rc, "%s/%s: cannot create: %s", dir, tmp, strerror(-rc));
	}
	rc = fchmod(fd, 0644) ? -errno : dcpi_write_full(fd, buf, len);
	if (!rc)
		rc = dcpi_fail("fsync");
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		unlinkat(db->txn_fd, tmp, 0);
		return dcpi_errf(err, rc, "%s/%s: write: %s", dir, tmp, strerror(-rc));
	}
	if (pe) {
		unlinkat(db->txn_fd, pe->tmp, 0);
		snprintf(pe->tmp, sizeof(pe->tmp), "%s", tmp);
		return 0;
	}
	if (db->npend == db->cappend) {
		size_t cap = db->cappend ? 2 * db->cappend : 16;
		struct pending *v = realloc(db->pend, cap * sizeof(*v));

		if (!v) {
			unlinkat(db->txn_fd, tmp, 0);
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
		}
		db->pend = v;
		db->cappend = cap;
	}
	pe = &db->pend[db->npend++];
	snprintf(pe->tmp, sizeof(pe->tmp), "%s", tmp);
	snprintf(pe->name, sizeof(pe->name), "%s", name);
	return 0;
}

/* Enter epoch's transaction: the open one, or a new one for this write only. */
static int txn_enter(struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	int rc;

	if (db->txn_fd >= 0) {
		if (strcmp(db->txn_epoch, epoch))
			return dcpi_errf(err, -EBUSY, "%s: a write to epoch %s is open, not %s",
					 db->path, db->txn_epoch, epoch);
		return 0;
	}
	rc = prof_epoch_begin(db, epoch, err);
	if (!rc)
		db->txn_implicit = 1;
	return rc;
}

static int txn_leave(struct prof_db *db, int rc, struct dcpi_err *err)
{
	if (!db->txn_implicit)
		return rc;
	if (rc) {
		prof_epoch_abort(db);
		return rc;
	}
	return prof_epoch_commit(db, err);
}

int prof_epoch_write_file(struct prof_db *db, const char *epoch, const char *name,
			  const void *buf, size_t len, struct dcpi_err *err)
{
	int rc = txn_enter(db, epoch, err);

	if (rc)
		return rc;
	return txn_leave(db, txn_write(db, name, buf, len, err), err);
}

/* ---- reading an epoch as its last commit left it -------------------------- */

struct epoch_view {
	int fd;
	char dir[PATH_MAX];
	struct pending *pj;	/* a journal's renames not yet done */
	size_t nj;
	struct prof_db *db;
};

static void view_close(struct epoch_view *v)
{
	if (v->fd >= 0 && (!v->db || v->fd != v->db->txn_fd))
		close(v->fd);
	free(v->pj);
	v->fd = -1;
	v->pj = NULL;
}

static int view_open(struct prof_db *db, const char *epoch, struct epoch_view *v,
		     struct dcpi_err *err)
{
	int rc;

	memset(v, 0, sizeof(*v));
	v->db = db;
	snprintf(v->dir, sizeof(v->dir), "%s/%s", db->path, epoch);
	if (db->txn_fd >= 0 && !strcmp(db->txn_epoch, epoch)) {
		v->fd = db->txn_fd;	/* our own transaction: recovered, locked */
		return 0;
	}
	v->fd = epoch_open(db, epoch, err);
	if (v->fd < 0)
		return v->fd;
	/* a writer's commit takes milliseconds; a stuck lock only costs the wait */
	lock_wait(v->fd, LOCK_SH, READ_LOCK_WAIT_MS);
	rc = read_journal(v->fd, v->dir, &v->pj, &v->nj);
	if (rc == -EINVAL) {
		prof_db_note(db, "%s/%s: unreadable journal ignored", v->dir, JOURNAL_NAME);
		rc = 0;
	}
	if (rc) {
		view_close(v);
		return dcpi_errf(err, rc, "%s/%s: %s", v->dir, JOURNAL_NAME, strerror(-rc));
	}
	return 0;
}

/* name's bytes as committed: a pending write of ours, else the journal's
 * temporary while it exists, else the file. */
static int view_read(struct epoch_view *v, const char *name, uint8_t **buf, size_t *len,
		     char *shown, size_t shownlen, struct dcpi_err *err)
{
	struct pending *pe = v->fd == v->db->txn_fd ? pending_find(v->db, name) : NULL;
	const char *tmp = pe ? pe->tmp : NULL;
	int rc;

	for (size_t i = 0; !tmp && i < v->nj; i++)
		if (!strcmp(v->pj[i].name, name))
			tmp = v->pj[i].tmp;
	snprintf(shown, shownlen, "%s/%s", v->dir, name);
	if (tmp) {
		rc = dcpi_read_file_at(v->fd, tmp, DCPI_OPEN_NOFOLLOW, PROF_FILE_MAX, buf, len,
				       shown, err);
		if (rc != -ENOENT)
			return rc;
	}
	return dcpi_read_file_at(v->fd, name, DCPI_OPEN_NOFOLLOW, PROF_FILE_MAX, buf, len,
				 shown, err);
}

int prof_epoch_read_file(struct prof_db *db, const char *epoch, const char *name,
			 uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	struct epoch_view v;
	char shown[PATH_MAX + NAME_MAX + 2];
	int rc = view_open(db, epoch, &v, err);

	*buf = NULL;
	*len = 0;
	if (rc)
		return rc;
	rc = view_read(&v, name, buf, len, shown, sizeof(shown), err);
	view_close(&v);
	return rc;
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
	struct epoch_view v = { .fd = db->txn_fd, .db = db };
	struct dcpi_err e = { 0 };
	char shown[PATH_MAX + NAME_MAX + 2];
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	snprintf(v.dir, sizeof(v.dir), "%s/%s", db->path, db->txn_epoch);
	prof_profile_init(&old);
	rc = view_read(&v, name, &buf, &len, shown, sizeof(shown), &e);
	if (!rc)
		rc = prof_decode(buf, len, shown, &old, &e);
	free(buf);
	if (rc == -ENOENT) {
		rc = 0;
	} else if (rc && rc != -ENOMEM && rc != -EIO) {
		/* corrupt, a FIFO, a link: the live epoch goes on without it */
		if (!pending_find(db, name))
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
	rc = txn_write(db, name, buf, len, err);
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
	rc = txn_enter(db, epoch, err);
	if (rc)
		return rc;
	return txn_leave(db, merge_into_file(db, name, p, err), err);
}

static int is_profile_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".prof");
}

static int keep_profile(int dfd, const char *name)
{
	return is_profile_name(name);
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
static int view_profiles(struct epoch_view *v, char ***names, size_t *nn,
			 struct dcpi_err *err)
{
	size_t cap;
	int rc = list_dir(v->fd, v->dir, keep_profile, cmp_str, names, nn, err);

	cap = *nn;
	for (size_t i = 0; !rc && i < v->nj; i++) {
		const char *nm = v->pj[i].name;
		int have = 0;

		for (size_t k = 0; k < *nn && !have; k++)
			have = !strcmp((*names)[k], nm);
		if (!have && is_profile_name(nm) && push_name(names, nn, &cap, nm))
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory listing", v->dir);
	}
	if (!rc)
		dcpi_qsort(*names, *nn, sizeof(**names), cmp_str);
	return rc;
}

int prof_epoch_read(struct prof_db *db, const char *epoch, struct prof_profile **out,
		    size_t *n, struct dcpi_err *err)
{
	char shown[PATH_MAX + NAME_MAX + 2];
	struct prof_profile *v = NULL;
	struct epoch_view ev;
	char **names = NULL;
	size_t nn = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = view_open(db, epoch, &ev, err);
	if (rc)
		return rc;
	rc = view_profiles(&ev, &names, &nn, err);
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

		rc = view_read(&ev, names[i], &buf, &len, shown, sizeof(shown), &e);
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
	view_close(&ev);
	prof_profiles_free(v, k);
	prof_names_free(names, nn);
	return rc;
}

int prof_epoch_is_empty(struct prof_db *db, const char *epoch, struct dcpi_err *err)
{
	struct epoch_view ev;
	char **names = NULL;
	size_t nn = 0;
	int rc = view_open(db, epoch, &ev, err);

	if (rc)
		return rc;
	rc = view_profiles(&ev, &names, &nn, err);
	view_close(&ev);
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
	rc = prof_epoch_read(src, src_epoch, &v, &n, err);
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
		return txn_leave(dst, r, err);
	}
}
