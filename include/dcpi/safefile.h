/*
 * safefile.h - opening files so that nothing planted at a path can hang or
 * redirect a tool (tests/test_harden.c), and failpoints for the fault-injection tests.
 *
 * Reading: every file a tool reads is opened O_NONBLOCK (a FIFO cannot block
 * the open), then fstat'd: anything but a regular file is a clear error
 * ("not a regular file (a FIFO)").  Inside the profile database names are
 * opened relative to a directory handle with O_NOFOLLOW as well.
 *
 * Writing: a file is written through a handle on its directory: a temporary
 * name created O_EXCL|O_NOFOLLOW, the mode set with fchmod (so the umask does
 * not matter), fsync, renameat within the directory, fsync of the directory.
 * A link planted at the final name is replaced, never followed.
 *
 * Failpoints: DCPI_FAILPOINT="name:N[+]:action[,...]" makes the N-th hit (or
 * every hit from the N-th on, with +) of failpoint `name` (`*` for any) fail
 * with action enospc, eio or kill (SIGKILL of the process itself).  Compiled
 * in always; when the variable is unset a failpoint costs one branch.
 */
#ifndef DCPI_SAFEFILE_H
#define DCPI_SAFEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "dcpi/util.h"

#define DCPI_OPEN_NOFOLLOW 1	/* refuse a symbolic link at the last component */

/* "a FIFO", "a directory", "a socket", ... for messages. */
const char *dcpi_file_kind(mode_t mode);

/*
 * Open name (relative to dirfd, or AT_FDCWD) for reading without blocking and
 * check it is a regular file.  Returns the descriptor (blocking mode restored)
 * or a negative errno with err naming shown (the path to print).  st may be
 * NULL.  Not a regular file: -EINVAL, "<shown>: not a regular file (a FIFO)".
 */
int dcpi_open_read(int dirfd, const char *name, unsigned flags, struct stat *st,
		   const char *shown, struct dcpi_err *err);
/* The same as a stdio stream ("r"), NULL with err filled on failure. */
FILE *dcpi_fopen_read(const char *path, struct dcpi_err *err);
/* Read a whole file (at most max bytes) into a NUL-terminated malloc'd buffer. */
int dcpi_read_file_at(int dirfd, const char *name, unsigned flags, size_t max,
		      uint8_t **buf, size_t *len, const char *shown, struct dcpi_err *err);

/*
 * Write buf as name in the directory dirfd (shown: the directory's path for
 * messages) atomically with the given mode.  Temporary names are
 * ".<name>.tmp<pid>-<n>"; a failed write leaves none behind.
 */
int dcpi_write_at(int dirfd, const char *shown, const char *name, const void *buf,
		  size_t len, unsigned mode, struct dcpi_err *err);
/* The same for a path: its directory is opened (following links the user
 * named), the last component is never followed. */
int dcpi_write_file(const char *path, const void *buf, size_t len, unsigned mode,
		    struct dcpi_err *err);
/* Create a new temporary for name in dirfd (O_EXCL, O_NOFOLLOW, taking the
 * next name while one exists); its name into tmp.  fd or negative errno. */
int dcpi_create_temp(int dirfd, const char *name, char *tmp, size_t len, unsigned mode);
/* A temporary name of dcpi_write_at's form for name into out. */
int dcpi_temp_name(const char *name, char *out, size_t len);
/* True for names of that form (".<something>.tmp<digits>-<digits>"). */
int dcpi_is_temp_name(const char *name);
/* write(2) of everything, EINTR retried, with the "write" failpoint. */
int dcpi_write_full(int fd, const void *buf, size_t len);

/* Failpoints (see above).  dcpi_fail returns 0 or a negative errno to inject. */
extern int dcpi_failpoints_on;
int dcpi_fail_hit(const char *name);
#define dcpi_fail(name) (__builtin_expect(dcpi_failpoints_on, 0) ? dcpi_fail_hit(name) : 0)
/* Re-read DCPI_FAILPOINT (tests that set it after start-up). */
void dcpi_failpoints_init(void);

#endif /* DCPI_SAFEFILE_H */
