/*
 * safefile.c - non-blocking, type-checked opens for reading, atomic writes
 * through directory handles that never follow a planted link, and the
 * failpoints the fault-injection tests select with DCPI_FAILPOINT
 * (include/dcpi/safefile.h; tests/test_harden.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	int fd = dcpi_open_read(AT_FDCWD, path, 0, NULL, path, err);
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

int dcpi_write_at(int dirfd, const char *shown, const char *name, const void *buf,
		  size_t len, unsigned mode, struct dcpi_err *err)
{
	char tmp[NAME_MAX + 1];
	int fd, rc;

	if (!name[0] || strchr(name, '/'))
		return dcpi_errf(err, -EINVAL, "%s/%s: bad file name", shown, name);
	fd = dcpi_create_temp(dirfd, name, tmp, sizeof(tmp), mode);
	if (fd < 0) {
		rc = fd;
		return dcpi_errf(err, rc, "%s/%s: cannot create: %s", shown, tmp,
				 strerror(-rc));
	}
	if (fchmod(fd, mode & 0777)) {	/* whatever the umask */
		rc = dcpi_errf(err, -errno, "%s/%s: chmod: %s", shown, tmp, strerror(errno));
		goto fail;
	}
	rc = dcpi_write_full(fd, buf, len);
	if (rc) {
		dcpi_errf(err, rc, "%s/%s: write: %s", shown, tmp, strerror(-rc));
		goto fail;
	}
	rc = dcpi_fail("fsync");
	if (rc || fsync(fd)) {
		rc = rc ? rc : -errno;
		dcpi_errf(err, rc, "%s/%s: fsync: %s", shown, tmp, strerror(-rc));
		goto fail;
	}
	if (close(fd)) {
		fd = -1;
		rc = dcpi_errf(err, -errno, "%s/%s: close: %s", shown, tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
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
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return rc;
}

int dcpi_write_file(const char *path, const void *buf, size_t len, unsigned mode,
		    struct dcpi_err *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	int dfd, rc;

	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else if ((size_t)(slash - path) < sizeof(dir)) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	} else {
		return dcpi_errf(err, -ENAMETOOLONG, "%s: path too long", path);
	}
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
