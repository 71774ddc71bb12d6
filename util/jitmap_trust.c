/*
 * util/jitmap_trust.c - the trust rule for /tmp/perf-PID.map, the symbol
 * file JITs (V8, the JVM's perf-map-agent, LuaJIT, ...) write for perf
 * (include/dcpi/jitmap.h).  /tmp is everyone's, so a map planted there must
 * not name another user's code: the file must be a regular file, written
 * only by its owner, and that owner root, the user asking, or the
 * process's.  collect/maps.c and report/jitmap.c both ask here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/jitmap.h"
#include "dcpi/safefile.h"

int jitmap_check(const struct stat *st, long proc_uid, const char *path,
		 struct dcpi_err *err)
{
	if (!S_ISREG(st->st_mode))
		return dcpi_errf(err, -EPERM, "%s: %s, not a regular file: not trusted (perf's "
				 "rule), JIT code left unnamed", path, dcpi_file_kind(st->st_mode));
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return dcpi_errf(err, -EPERM, "%s: writable by %s (mode %04o): not trusted "
				 "(perf's rule), JIT code left unnamed", path,
				 (st->st_mode & S_IWOTH) ? "others" : "its group",
				 (unsigned)(st->st_mode & 07777));
	if (st->st_uid != 0 && st->st_uid != geteuid() && (long)st->st_uid != proc_uid)
		return dcpi_errf(err, -EPERM, "%s: owned by uid %u, not by root, you or the "
				 "process: not trusted (perf's rule), JIT code left unnamed", path,
				 (unsigned)st->st_uid);
	return 0;
}

long jitmap_proc_uid(const char *path)
{
	char proc[64], tail[8];
	unsigned long pid;
	struct stat st;

	if (sscanf(path, "/tmp/perf-%lu%7s", &pid, tail) != 2 || strcmp(tail, ".map"))
		return -1;
	snprintf(proc, sizeof(proc), "/proc/%lu", pid);
	return stat(proc, &st) ? -1 : (long)st.st_uid;
}

int jitmap_trusted(const char *path, struct dcpi_err *err)
{
	struct stat st;

	if (lstat(path, &st))
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	return jitmap_check(&st, jitmap_proc_uid(path), path, err);
}
