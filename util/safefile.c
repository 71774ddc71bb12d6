/*
 * safefile.c - non-blocking, type-checked opens for reading, atomic writes
 * through directory handles that never follow a planted link, the one rule
 * for every path a user names as output (dcpi_write_output), and the
 * failpoints the fault-injection tests select with DCPI_FAILPOINT
 * (include/dcpi/safefile.h says what each does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dcpi/safefile.h"

const char *dcpi_file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFLNK: return "a symbolic link";
	}
	return "of an unknown type";
}

int dcpi_open_read(int dirfd, const char *name, unsigned flags, struct stat *st,
		   const char *shown, struct dcpi_err *err)
{
	int of = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat sb;
	int fd, e;

	if (!st)
		st = &sb;
	if (flags & DCPI_OPEN_NOFOLLOW)
		of |= O_NOFOLLOW;
	fd = openat(dirfd, name, of);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP && (flags & DCPI_OPEN_NOFOLLOW))
			return dcpi_errf(err, -ELOOP, "%s: is a symbolic link (not followed)",
					 shown);
		return dcpi_errf(err, -e, "%s: %s", shown, strerror(e));
	}
	if (fstat(fd, st)) {
		e = errno;
		close(fd);
		return dcpi_errf(err, -e, "%s: %s", shown, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return dcpi_errf(err, -EINVAL, "%s: not a regular file (%s)", shown,
				 dcpi_file_kind(st->st_mode));
	}
	/* blocking again, so reads behave as usual (no effect on regular files) */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

FILE *dcpi_fopen_read(const char *path, struct dcpi_err *err)
{
	return dcpi_fdopen_read(dcpi_open_read(AT_FDCWD, path, 0, NULL, path, err), path, err);
}

FILE *dcpi_fdopen_read(int fd, const char *path, struct dcpi_err *err)
{
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		int e = errno;

		close(fd);
		dcpi_errf(err, -e, "%s: %s", path, strerror(e));
		errno = e;
	}
	return f;
}

int dcpi_read_file_at(int dirfd, const char *name, unsigned flags, size_t max,
		      uint8_t **buf, size_t *len, const char *shown, struct dcpi_err *err)
{
	struct stat st;
	size_t size, done = 0;
	uint8_t *b;
	int fd, e;

	*buf = NULL;
	*len = 0;
	fd = dcpi_open_read(dirfd, name, flags, &st, shown, err);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return dcpi_errf(err, -EFBIG, "%s: larger than %zu bytes", shown, max);
	}
	size = (size_t)st.st_size;
	b = malloc(size + 1);
	if (!b) {
		close(fd);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %zu bytes", shown, size);
	}
	while (done < size) {
		ssize_t r = read(fd, b + done, size - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? errno : EIO;
			free(b);
			close(fd);
			return dcpi_errf(err, -e, "%s: read: %s", shown,
					 r < 0 ? strerror(e) : "file shrank while reading");
		}
		done += (size_t)r;
	}
	close(fd);
	b[size] = '\0';
	*buf = b;
	*len = size;
	return 0;
}

int dcpi_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	int rc = dcpi_fail("write");

	if (rc)
		return rc;
	while (done < len) {
		ssize_t w = write(fd, (const uint8_t *)buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		done += (size_t)w;
	}
	return 0;
}

int dcpi_temp_name(const char *name, char *out, size_t len)
{
	static unsigned seq;
	unsigned n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
	int w = snprintf(out, len, ".%s.tmp%ld-%u", name, (long)getpid(), n);

	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int dcpi_is_temp_name(const char *name)
{
	const char *t = strstr(name, ".tmp");
	size_t k;

	if (name[0] != '.' || !t)
		return 0;
	while (strstr(t + 1, ".tmp"))
		t = strstr(t + 1, ".tmp");
	t += 4;
	k = strspn(t, "0123456789");
	if (!k || t[k] != '-')
		return 0;
	t += k + 1;
	k = strspn(t, "0123456789");
	return k && !t[k];
}

int dcpi_create_temp(int dirfd, const char *name, char *tmp, size_t len, unsigned mode)
{
	int fd = -EEXIST, rc;

	/* anything planted at a temporary name (a link, a FIFO) is left alone:
	 * O_EXCL refuses it and the next name is tried */
	for (int tries = 0; tries < 64 && fd == -EEXIST; tries++) {
		if (dcpi_temp_name(name, tmp, len))
			return -ENAMETOOLONG;
		rc = dcpi_fail("create");
		if (rc)
			return rc;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode & 0777);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

/*
 * The temporary fd filled: its mode set (whatever the umask), buf written,
 * synced and closed.  fd is closed whatever happens; errors name it what.
 */
static int fill_temp(int fd, mode_t mode, const void *buf, size_t len, const char *what,
		     struct dcpi_err *err)
{
	int rc;

	if (fchmod(fd, mode)) {
		rc = dcpi_errf(err, -errno, "%s: chmod: %s", what, strerror(errno));
		goto fail;
	}
	rc = dcpi_write_full(fd, buf, len);
	if (rc) {
		dcpi_errf(err, rc, "%s: write: %s", what, strerror(-rc));
		goto fail;
	}
	rc = dcpi_fail("fsync");
	if (rc || fsync(fd)) {
		rc = rc ? rc : -errno;
		dcpi_errf(err, rc, "%s: fsync: %s", what, strerror(-rc));
		goto fail;
	}
	if (close(fd))
		return dcpi_errf(err, -errno, "%s: close: %s", what, strerror(errno));
	return 0;
fail:
	close(fd);
	return rc;
}

int dcpi_write_at(int dirfd, const char *shown, const char *name, const void *buf,
		  size_t len, unsigned mode, struct dcpi_err *err)
{
	char tmp[NAME_MAX + 1], what[PATH_MAX + NAME_MAX + 2];
	int fd, rc;

	if (!name[0] || strchr(name, '/'))
		return dcpi_errf(err, -EINVAL, "%s/%s: bad file name", shown, name);
	fd = dcpi_create_temp(dirfd, name, tmp, sizeof(tmp), mode);
	if (fd < 0) {
		rc = fd;
		return dcpi_errf(err, rc, "%s/%s: cannot create: %s", shown, tmp,
				 strerror(-rc));
	}
	snprintf(what, sizeof(what), "%s/%s", shown, tmp);
	rc = fill_temp(fd, mode & 0777, buf, len, what, err);
	if (rc)
		goto fail;
	rc = dcpi_fail("rename");
	if (rc || renameat(dirfd, tmp, dirfd, name)) {
		rc = rc ? rc : -errno;
		dcpi_errf(err, rc, "%s/%s: rename from %s: %s", shown, name, tmp, strerror(-rc));
		goto fail;
	}
	if (fsync(dirfd) && errno != EINVAL)
		return dcpi_errf(err, -errno, "%s: fsync: %s", shown, strerror(errno));
	return 0;
fail:
	unlinkat(dirfd, tmp, 0);
	return rc;
}

/* The directory part of path into dir (".", "/" or what comes before the last
 * slash); the last component, which may be empty, is returned. */
static const char *split_path(const char *path, char dir[PATH_MAX], struct dcpi_err *err)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else if ((size_t)(slash - path) < PATH_MAX) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	} else {
		dcpi_errf(err, -ENAMETOOLONG, "%s: path too long", path);
		return NULL;
	}
	return slash ? slash + 1 : path;
}

int dcpi_write_file(const char *path, const void *buf, size_t len, unsigned mode,
		    struct dcpi_err *err)
{
	char dir[PATH_MAX];
	const char *base = split_path(path, dir, err);
	int dfd, rc;

	if (!base)
		return -ENAMETOOLONG;
	if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
		return dcpi_errf(err, -EINVAL, "%s: not a file name", path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return dcpi_errf(err, -errno, "%s: cannot write %s: %s", path, dir,
				 strerror(errno));
	rc = dcpi_write_at(dfd, dir, base, buf, len, mode, err);
	close(dfd);
	return rc;
}

/* ---- paths a user names: dcpi_write_output --------------------------------- */

#define OUT_HOPS 40		/* links followed, as the kernel's MAXSYMLINKS */
#define FIFO_WAIT_MS 2000	/* how long a FIFO may go without a reader */

/* Split path into its directory (opened) and last component. */
static int open_parent(const char *path, char *base, size_t blen, struct dcpi_err *err)
{
	char dir[PATH_MAX];
	const char *b = split_path(path, dir, err);
	int dfd;

	if (!b)
		return -ENAMETOOLONG;
	if (!b[0] || !strcmp(b, ".") || !strcmp(b, ".."))
		return dcpi_errf(err, -EISDIR, "%s: is a directory", path);
	if (strlen(b) >= blen)
		return dcpi_errf(err, -ENAMETOOLONG, "%s: name too long", path);
	strcpy(base, b);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return dcpi_errf(err, -errno, "%s: cannot open its directory %s: %s", path, dir,
				 strerror(errno));
	return dfd;
}

/* The next path a link leads to (relative targets from the link's folder). */
static int link_target(int dfd, const char *path, const char *base, char *next, size_t len,
		       struct dcpi_err *err)
{
	char t[PATH_MAX];
	ssize_t n = readlinkat(dfd, base, t, sizeof(t) - 1);
	const char *slash = strrchr(path, '/');
	int w;

	if (n < 0)
		return dcpi_errf(err, -errno, "%s: readlink: %s", path, strerror(errno));
	t[n] = '\0';
	if (t[0] == '/' || !slash)
		w = snprintf(next, len, "%s", t);
	else
		w = snprintf(next, len, "%.*s/%s", (int)(slash - path), path, t);
	if (w < 0 || (size_t)w >= len)
		return dcpi_errf(err, -ENAMETOOLONG, "%s: link target too long", path);
	return 0;
}

/* Linux's fs.protected_symlinks: in a sticky world-writable folder a link is
 * followed only when it is the caller's or the folder owner's. */
static int may_follow(int dfd, const struct stat *lnk)
{
	struct stat d;

	if (fstat(dfd, &d))
		return 0;
	if (!(d.st_mode & S_ISVTX) || !(d.st_mode & S_IWOTH))
		return 1;
	return lnk->st_uid == geteuid() || lnk->st_uid == d.st_uid;
}

/* Write everything to a descriptor opened in place (no temporary). */
static int write_fd(int fd, const char *path, const void *buf, size_t len, int regular,
		    struct dcpi_err *err)
{
	int rc;

	if (regular && len) {
		/* reserve the blocks first: a full disk fails here, contents untouched */
		rc = dcpi_fail("fallocate");
		if (!rc) {
			int e = posix_fallocate(fd, 0, (off_t)len);

			rc = e == ENOSPC || e == EDQUOT ? -e : 0;
		}
		if (rc)
			return dcpi_errf(err, rc, "%s: %s", path, strerror(-rc));
	}
	rc = dcpi_write_full(fd, buf, len);
	if (rc)
		return dcpi_errf(err, rc, "%s: write: %s", path, strerror(-rc));
	if (regular && (ftruncate(fd, (off_t)len) || fsync(fd)))
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

/* A device, FIFO or socket: opened without blocking (a FIFO nobody reads
 * is ENXIO, retried for FIFO_WAIT_MS), then written; never truncated. */
static int open_special(int dfd, const char *base, const char *path, const struct stat *st,
			int follow, struct dcpi_err *err)
{
	int of = O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
	int fd = -1;

	for (int waited = 0;; waited += 50) {
		fd = openat(dfd, base, of);
		if (fd >= 0 || errno != ENXIO || !S_ISFIFO(st->st_mode) ||
		    waited >= FIFO_WAIT_MS)
			break;
		usleep(50 * 1000);
	}
	if (fd < 0 && errno == ENXIO && S_ISFIFO(st->st_mode))
		return dcpi_errf(err, -ENXIO, "%s: a FIFO with no reader (waited %d s)", path,
				 FIFO_WAIT_MS / 1000);
	if (fd < 0)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static int write_socket(int dfd, const char *base, const char *path, const void *buf,
			size_t len, struct dcpi_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc, n;

	/* through the directory handle: no second look-up of the path's folders */
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, base);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return dcpi_errf(err, -ENAMETOOLONG, "%s: a socket name too long to connect",
				 path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return dcpi_errf(err, -errno, "%s: socket: %s", path, strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		rc = dcpi_errf(err, -errno, "%s: a socket that takes no stream connection: %s",
			       path, strerror(errno));
		close(fd);
		return rc;
	}
	rc = write_fd(fd, path, buf, len, 0, err);
	close(fd);
	return rc;
}

/* rename tmp to base if base is still st (or, st NULL, still nothing). */
static int rename_over(int dfd, const char *tmp, const char *base, const struct stat *st,
		       const char *path, struct dcpi_err *err)
{
	struct stat now;
	int rc = dcpi_fail("rename");

	if (rc)
		return dcpi_errf(err, rc, "%s: rename: %s", path, strerror(-rc));
	if (!st) {
		if (!renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE))
			return 0;
		if (errno == EINVAL) {	/* a file system without it: link(2) refuses too */
			if (!linkat(dfd, tmp, dfd, base, 0))
				return unlinkat(dfd, tmp, 0), 0;
		}
		if (errno == EEXIST)
			return -EAGAIN;
		return dcpi_errf(err, -errno, "%s: rename: %s", path, strerror(errno));
	}
	if (fstatat(dfd, base, &now, AT_SYMLINK_NOFOLLOW) || now.st_ino != st->st_ino ||
	    now.st_dev != st->st_dev)
		return -EAGAIN;
	if (renameat(dfd, tmp, dfd, base))
		return dcpi_errf(err, -errno, "%s: rename: %s", path, strerror(errno));
	return 0;
}

/* Open the regular file at base in place: its own permissions decide. */
static int write_in_place(int dfd, const char *base, const char *path, const struct stat *st,
			  const void *buf, size_t len, struct dcpi_err *err)
{
	int fd = openat(dfd, base, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	struct stat now;
	int rc;

	if (fd < 0)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &now) || now.st_ino != st->st_ino || now.st_dev != st->st_dev) {
		close(fd);
		return -EAGAIN;	/* replaced under us: look again */
	}
	rc = write_fd(fd, path, buf, len, 1, err);
	if (close(fd) && !rc)
		rc = dcpi_errf(err, -errno, "%s: close: %s", path, strerror(errno));
	return rc;
}

/*
 * Replace the regular file base (st: what it is now; NULL: none yet) by a
 * temporary of the same owner, group and mode.  -EPERM without a word when
 * the owner cannot be kept (the caller then writes in place); -EAGAIN when
 * something else took the name meanwhile.
 */
static int replace(int dfd, const char *base, const char *path, const struct stat *st,
		   unsigned mode, const void *buf, size_t len, struct dcpi_err *err)
{
	char tmp[NAME_MAX + 1];
	int fd, rc;

	fd = dcpi_create_temp(dfd, base, tmp, sizeof(tmp), 0600);
	if (fd < 0) {
		if (st && (fd == -EACCES || fd == -EPERM || fd == -EROFS))
			return -EPERM;	/* a folder we may not write: in place */
		return dcpi_errf(err, fd, "%s: cannot create a temporary beside it: %s", path,
				 strerror(-fd));
	}
	if (st && fchown(fd, st->st_uid, st->st_gid)) {
		close(fd);
		rc = -EPERM;
		goto fail;
	}
	rc = fill_temp(fd, st ? st->st_mode & 07777 : mode & 0777, buf, len, path, err);
	if (rc)
		goto fail;
	rc = rename_over(dfd, tmp, base, st, path, err);
	if (rc)
		goto fail;
	fsync(dfd);
	return 0;
fail:
	unlinkat(dfd, tmp, 0);
	return rc;
}

/* A device, FIFO or socket at base (or, follow, where the link base leads):
 * written in place. */
static int write_special(int dfd, const char *base, const char *path, const struct stat *st,
			 int follow, const void *buf, size_t len, struct dcpi_err *err)
{
	struct stat now;
	int fd, rc;

	if (S_ISDIR(st->st_mode))
		return dcpi_errf(err, -EISDIR, "%s: is a directory", path);
	if (S_ISSOCK(st->st_mode))
		return write_socket(dfd, base, path, buf, len, err);
	fd = open_special(dfd, base, path, st, follow, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &now) || (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT) ||
	    now.st_rdev != st->st_rdev) {
		close(fd);
		return -EAGAIN;
	}
	rc = write_fd(fd, path, buf, len, 0, err);
	close(fd);
	return rc;
}

/* The regular file base: replaced keeping owner, group and mode, or written
 * in place when it has other names or its owner cannot be kept. */
static int write_regular(int dfd, const char *base, const char *path, const struct stat *st,
			 unsigned mode, const void *buf, size_t len, struct dcpi_err *err)
{
	int rc;

	if (st->st_nlink > 1)
		return write_in_place(dfd, base, path, st, buf, len, err);
	/* a rename needs only the folder's permission: ask the file's */
	if (faccessat(dfd, base, W_OK, AT_EACCESS))
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	rc = replace(dfd, base, path, st, mode, buf, len, err);
	if (rc == -EPERM)
		rc = write_in_place(dfd, base, path, st, buf, len, err);
	return rc;
}

static int write_stdout(const void *buf, size_t len, struct dcpi_err *err)
{
	int rc;

	if (fflush(stdout))
		return dcpi_errf(err, -errno, "standard output: %s", strerror(errno));
	rc = dcpi_write_full(STDOUT_FILENO, buf, len);
	if (rc)
		return dcpi_errf(err, rc, "standard output: write: %s", strerror(-rc));
	return 0;
}

/* One look at cur: the rule for what is there (*next set when a link is to
 * be followed). */
static int write_one(const char *cur, char *next, size_t nlen, unsigned mode, const void *buf,
		     size_t len, struct dcpi_err *err)
{
	char base[NAME_MAX + 1];
	struct stat st;
	int dfd, rc;

	next[0] = '\0';
	dfd = open_parent(cur, base, sizeof(base), err);
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		rc = errno == ENOENT ? replace(dfd, base, cur, NULL, mode, buf, len, err) :
		     dcpi_errf(err, -errno, "%s: %s", cur, strerror(errno));
	} else if (S_ISLNK(st.st_mode) && !may_follow(dfd, &st)) {
		rc = dcpi_errf(err, -EACCES, "%s: a symbolic link of another user in a sticky "
			       "world-writable folder (not followed)", cur);
	} else if (S_ISLNK(st.st_mode)) {
		/* a device or FIFO behind it is opened through the link, which also
		 * serves /proc's links (/dev/stdout: "pipe:[1234]" is no path);
		 * a file or nothing needs the target's folder, for a temporary */
		rc = fstatat(dfd, base, &st, 0) || S_ISREG(st.st_mode) ?
		     link_target(dfd, cur, base, next, nlen, err) :
		     write_special(dfd, base, cur, &st, 1, buf, len, err);
	} else if (S_ISDIR(st.st_mode)) {
		rc = dcpi_errf(err, -EISDIR, "%s: is a directory", cur);
	} else if (S_ISREG(st.st_mode)) {
		rc = write_regular(dfd, base, cur, &st, mode, buf, len, err);
	} else {
		rc = write_special(dfd, base, cur, &st, 0, buf, len, err);
	}
	close(dfd);
	return rc;
}

int dcpi_write_output(const char *path, const void *buf, size_t len, unsigned mode,
		      struct dcpi_err *err)
{
	char cur[PATH_MAX], next[PATH_MAX];
	int hops = 0, again = 0, rc;

	if (!strcmp(path, "-"))
		return write_stdout(buf, len, err);
	if (!path[0])
		return dcpi_errf(err, -ENOENT, "an empty output name");
	if (strlen(path) >= sizeof(cur))
		return dcpi_errf(err, -ENAMETOOLONG, "%s: path too long", path);
	strcpy(cur, path);
	for (;;) {
		rc = write_one(cur, next, sizeof(next), mode, buf, len, err);
		if (rc == -EAGAIN && ++again < 8)
			continue;	/* the name changed under us: look again */
		if (rc == -EAGAIN)
			return dcpi_errf(err, rc, "%s: keeps changing while written", path);
		if (rc < 0 || !next[0])
			return rc;
		if (++hops > OUT_HOPS)
			return dcpi_errf(err, -ELOOP, "%s: too many symbolic links", path);
		strcpy(cur, next);
	}
}

/* ---- failpoints ---------------------------------------------------------- */

#define FP_MAX 8

struct failpoint {
	char name[32];
	unsigned long at, hits;
	int from_on;		/* every hit from the at-th on */
	int action;		/* -ENOSPC, -EIO, or 1 for SIGKILL */
};

int dcpi_failpoints_on;
static struct failpoint fps[FP_MAX];
static int nfps;

static int parse_one(char *s, struct failpoint *fp)
{
	char *c1 = strchr(s, ':'), *c2, *end;

	if (!c1 || !(c2 = strchr(c1 + 1, ':')))
		return -1;
	*c1 = *c2 = '\0';
	snprintf(fp->name, sizeof(fp->name), "%s", s);
	fp->at = strtoul(c1 + 1, &end, 10);
	fp->from_on = *end == '+';
	if (!fp->at)
		return -1;
	if (!strcmp(c2 + 1, "enospc"))
		fp->action = -ENOSPC;
	else if (!strcmp(c2 + 1, "eio"))
		fp->action = -EIO;
	else if (!strcmp(c2 + 1, "kill"))
		fp->action = 1;
	else
		return -1;
	fp->hits = 0;
	return 0;
}

void dcpi_failpoints_init(void)
{
	const char *env = getenv("DCPI_FAILPOINT");
	char buf[256], *save = NULL;

	nfps = 0;
	dcpi_failpoints_on = 0;
	if (!env || !*env)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *t = strtok_r(buf, ",", &save); t && nfps < FP_MAX;
	     t = strtok_r(NULL, ",", &save))
		if (!parse_one(t, &fps[nfps]))
			nfps++;
	dcpi_failpoints_on = nfps > 0;
}

__attribute__((constructor)) static void failpoints_ctor(void)
{
	dcpi_failpoints_init();
}

int dcpi_fail_hit(const char *name)
{
	for (int i = 0; i < nfps; i++) {
		struct failpoint *fp = &fps[i];

		if (strcmp(fp->name, "*") && strcmp(fp->name, name))
			continue;
		fp->hits++;
		if (fp->hits != fp->at && !(fp->from_on && fp->hits > fp->at))
			continue;
		if (fp->action == 1)
			kill(getpid(), SIGKILL);
		return fp->action;
	}
	return 0;
}
