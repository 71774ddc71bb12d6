/*
 * txn.c - writing several files of an epoch as one, and reading an epoch as
 * its last commit left it (docs/profile-format.md, "Crash consistency").
 *
 * A transaction locks the epoch directory, writes every file to a
 * temporary, and commits by renaming a journal into place that lists the
 * renames still to do; then it does them and drops the journal.  A writer
 * killed after the commit point is finished by the next one (recover), and
 * until then readers follow the journal to the temporaries.  Killed before
 * it, only invisible temporaries remain, which the next writer deletes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#define JOURNAL_NAME ".journal"
#define JOURNAL_MAGIC "dcpi-journal 1\n"
#define LOCK_WAIT_MS 10000	/* a writer gives up on a held lock after this */
#define READ_LOCK_WAIT_MS 2000	/* a reader reads without the lock after this */

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
		struct pending pe;
		char *sp = strchr(line, ' ');

		if (!strcmp(line, "end"))
			return 0;
		if (!sp || (size_t)(sp - line) > NAME_MAX || strlen(sp + 1) > NAME_MAX ||
		    strchr(sp + 1, '/') || strchr(sp + 1, ' ') || !dcpi_is_temp_name(
			    (*sp = '\0', line)))
			goto bad;
		snprintf(pe.tmp, sizeof(pe.tmp), "%s", line);
		snprintf(pe.name, sizeof(pe.name), "%s", sp + 1);
		if (dcpi_grow((void **)out, &cap, *n + 1, sizeof(**out)))
			goto bad;
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
int prof_epoch_recover(struct prof_db *db, int efd, const char *epoch, struct dcpi_err *err)
{
	char dir[PATH_MAX], aside[64];
	struct pending *pj;
	struct dirent *d;
	size_t nj;
	DIR *dp;
	int rc, fd;

	snprintf(dir, sizeof(dir), "%s/%s", db->path, epoch);
	rc = read_journal(efd, dir, &pj, &nj);
	if (rc && rc != -ENOMEM && rc != -EIO) {	/* garbled, a FIFO, a link */
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
	fd = prof_epoch_open(db, epoch, err);
	if (fd < 0)
		return fd;
	rc = lock_wait(fd, LOCK_EX, LOCK_WAIT_MS);
	if (rc) {
		close(fd);
		return dcpi_errf(err, rc, "%s/%s: cannot lock the epoch: %s", db->path, epoch,
				 rc == -EWOULDBLOCK ? "another process holds it" : strerror(-rc));
	}
	rc = prof_epoch_recover(db, fd, epoch, err);
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

struct pending *prof_txn_pending(struct prof_db *db, const char *name)
{
	for (size_t i = 0; i < db->npend; i++)
		if (!strcmp(db->pend[i].name, name))
			return &db->pend[i];
	return NULL;
}

/* Write buf to a temporary that the commit renames to name. */
int prof_txn_write(struct prof_db *db, const char *name, const void *buf, size_t len,
		     struct dcpi_err *err)
{
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	struct pending *pe = prof_txn_pending(db, name);
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
	if (dcpi_grow((void **)&db->pend, &db->cappend, db->npend + 1, sizeof(*db->pend))) {
		unlinkat(db->txn_fd, tmp, 0);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
	}
	pe = &db->pend[db->npend++];
	snprintf(pe->tmp, sizeof(pe->tmp), "%s", tmp);
	snprintf(pe->name, sizeof(pe->name), "%s", name);
	return 0;
}

/* Enter epoch's transaction: the open one, or a new one for this write only. */
int prof_txn_enter(struct prof_db *db, const char *epoch, struct dcpi_err *err)
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

int prof_txn_leave(struct prof_db *db, int rc, struct dcpi_err *err)
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
	int rc = prof_txn_enter(db, epoch, err);

	if (rc)
		return rc;
	return prof_txn_leave(db, prof_txn_write(db, name, buf, len, err), err);
}

/* ---- reading an epoch as its last commit left it -------------------------- */


void prof_view_close(struct prof_view *v)
{
	if (v->fd >= 0 && (!v->db || v->fd != v->db->txn_fd))
		close(v->fd);
	free(v->pj);
	v->fd = -1;
	v->pj = NULL;
}

int prof_view_open(struct prof_db *db, const char *epoch, struct prof_view *v,
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
	v->fd = prof_epoch_open(db, epoch, err);
	if (v->fd < 0)
		return v->fd;
	/* a writer's commit takes milliseconds; a stuck lock only costs the wait */
	lock_wait(v->fd, LOCK_SH, READ_LOCK_WAIT_MS);
	rc = read_journal(v->fd, v->dir, &v->pj, &v->nj);
	if (rc && rc != -ENOMEM && rc != -EIO) {	/* garbled, a FIFO, a link */
		prof_db_note(db, "%s/%s: unreadable journal ignored", v->dir, JOURNAL_NAME);
		rc = 0;
	}
	if (rc) {
		prof_view_close(v);
		return dcpi_errf(err, rc, "%s/%s: %s", v->dir, JOURNAL_NAME, strerror(-rc));
	}
	return 0;
}

/* name's bytes as committed: a pending write of ours, else the journal's
 * temporary while it exists, else the file. */
int prof_view_read(struct prof_view *v, const char *name, uint8_t **buf, size_t *len,
		     char *shown, size_t shownlen, struct dcpi_err *err)
{
	struct pending *pe = v->fd == v->db->txn_fd ? prof_txn_pending(v->db, name) : NULL;
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
	struct prof_view v;
	char shown[PATH_MAX + NAME_MAX + 2];
	int rc = prof_view_open(db, epoch, &v, err);

	*buf = NULL;
	*len = 0;
	if (rc)
		return rc;
	rc = prof_view_read(&v, name, buf, len, shown, sizeof(shown), err);
	prof_view_close(&v);
	return rc;
}
