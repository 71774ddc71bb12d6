/*
 * safefile.h - opening files so that nothing planted at a path can hang or
 * redirect a tool, the one rule for every path a command writes, and
 * failpoints for the fault-injection tests.
 *
 * Reading: every file a tool reads is opened O_NONBLOCK (a FIFO cannot block
 * the open), then fstat'd: anything but a regular file is a clear error
 * ("not a regular file (a FIFO)").  Inside the profile database names are
 * opened relative to a directory handle with O_NOFOLLOW as well.
 *
 * Writing inside the database (dcpi_write_at, dcpi_write_file): the tool owns
 * the folder, so a file is written through a handle on its directory: a
 * temporary name created O_EXCL|O_NOFOLLOW, the mode set with fchmod (so the
 * umask does not matter), fsync, renameat within the directory, fsync of the
 * directory.  A link planted at the final name is replaced, never followed.
 *
 * Writing a path the user named (-o FILE, --model-file, the calibration;
 * dcpi_write_output), as perf, gcc and clang treat -o, whatever is there:
 *   - "-" is standard output.
 *   - nothing: a new regular file of the given mode (0644 for every command),
 *     made as a temporary in the same folder, fsync'd, renamed in place.
 *   - a regular file: replaced the same way, the temporary given the old
 *     file's owner, group and mode first (a private 0600 profile of another
 *     user stays that user's and 0600).  The caller must be allowed to write
 *     the file itself, not only its folder.  When the owner cannot be kept
 *     (not root) or the folder is not writable, the file is written in place.
 *   - a regular file with other names (st_nlink > 1): written in place, never
 *     split: the blocks are reserved first (posix_fallocate), then written,
 *     truncated to the new length and fsync'd; every name sees the output.
 *   - a character or block device or a FIFO: opened O_WRONLY|O_NONBLOCK and
 *     written in place, never replaced, never truncated.  A FIFO nobody reads
 *     is retried for 2 s, then "<path>: a FIFO with no reader" (-ENXIO).
 *   - a socket: connected to (AF_UNIX, stream) and written, or an error
 *     saying it takes no stream connection.
 *   - a symbolic link: followed, and its target gets the same rule, except
 *     where Linux's fs.protected_symlinks would refuse it: in a sticky
 *     world-writable folder (/tmp) a link owned neither by the caller nor by
 *     the folder's owner is an error naming the link (-EACCES).
 *   - a directory: "<path>: is a directory" (-EISDIR).
 * A failed write (a full disk) leaves the old contents and no temporary.
 *
 * Failpoints: DCPI_FAILPOINT="name:N[+]:action[,...]" makes the N-th hit (or
 * every hit from the N-th on, with +) of failpoint `name` (`*` for any) fail
 * with action enospc, eio or kill (SIGKILL of the process itself).  Compiled
 * in always; when the variable is unset a failpoint costs one branch.  The
 * writers here hit create, write, fsync, rename and fallocate.
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
/* fd, as dcpi_open_read returned it (a negative errno: err is filled), as a
 * stdio stream ("r"); NULL with errno set and fd closed on failure. */
FILE *dcpi_fdopen_read(int fd, const char *path, struct dcpi_err *err);
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
/* A path the user named, by the rule above: buf written to it (mode for a
 * new file).  0, or a negative errno with err naming the path. */
int dcpi_write_output(const char *path, const void *buf, size_t len, unsigned mode,
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
