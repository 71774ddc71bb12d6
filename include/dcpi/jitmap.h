/*
 * jitmap.h - whether a JIT's symbol map, /tmp/perf-PID.map, may be trusted
 * (util/jitmap_trust.c): the one rule the collector (collect/maps.c, which
 * keeps a process's anonymous-code samples under the map) and the reports
 * (report/jitmap.c, which names them from it) both apply.  In include/dcpi
 * and util/ because both sides of the data flow (docs/architecture.md) use it.
 */
#ifndef DCPI_JITMAP_H
#define DCPI_JITMAP_H

#include <sys/stat.h>

#include "dcpi/util.h"

/*
 * perf's rule for a file anyone can create in /tmp: a regular file (not a
 * symbolic link, not a FIFO or device), not writable by its group or by
 * others, owned by root, by the user asking (geteuid), or by proc_uid, the
 * user the process runs as (-1 when unknown).  st is the file's lstat (or
 * the fstat of a descriptor opened O_NOFOLLOW).  0 when trusted, else
 * -EPERM with err saying why, naming path.
 */
int jitmap_check(const struct stat *st, long proc_uid, const char *path,
		 struct dcpi_err *err);
/* The uid running the process of "/tmp/perf-PID.map" (-1: exited, or not
 * such a name). */
long jitmap_proc_uid(const char *path);
/* lstat(path), then jitmap_check with the process's uid. */
int jitmap_trusted(const char *path, struct dcpi_err *err);

#endif /* DCPI_JITMAP_H */
