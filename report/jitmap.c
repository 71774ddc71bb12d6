/*
 * jitmap.c - names for JIT-compiled code from /tmp/perf-PID.map, the file
 * JITs (V8, the JVM's perf-map-agent, LuaJIT, ...) write for perf: one line
 * per function, "START SIZE name" with START and SIZE in hex.  The collector
 * keeps samples in anonymous code of such a process under an image whose
 * path is the map file and whose offsets are raw addresses.
 *
 * /tmp is everyone's: the file is trusted only under perf's rule, the one
 * the collector applies too (util/jitmap_trust.c: a regular file, not a
 * link, writable only by its owner, owned by root, the user reading it or
 * the user running the process PID); anything else is refused with a
 * note, and the samples keep their raw addresses.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/jitmap.h"
#include "dcpi/safefile.h"
#include "internal.h"

int rep_is_jitmap_path(const char *path)
{
	size_t n = strlen(path);

	return !strncmp(path, "/tmp/perf-", 10) && n > 14 && !strcmp(path + n - 4, ".map");
}

/* Opened without following a link and without blocking on a FIFO, then
 * held to perf's rule (util/jitmap_trust.c), the collector's rule too. */
static FILE *jitmap_open(const char *path, struct dcpi_err *err)
{
	struct stat st;
	int fd = dcpi_open_read(AT_FDCWD, path, DCPI_OPEN_NOFOLLOW, &st, path, err);

	if (fd >= 0 && jitmap_check(&st, jitmap_proc_uid(path), path, err)) {
		close(fd);
		errno = EPERM;
		return NULL;
	}
	return dcpi_fdopen_read(fd, path, err);
}

static int jit_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int jit_add(struct ksyms *m, size_t *cap, uint64_t start, uint64_t size,
		   const char *name)
{
	struct ksym *v;

	if (dcpi_grow((void **)&m->e, cap, m->n + 1, sizeof(*m->e)))
		return -ENOMEM;
	v = &m->e[m->n];
	v->start = start;
	v->size = size;
	v->name = strdup(name);
	if (!v->name)
		return -ENOMEM;
	m->n++;
	return 0;
}

/* The symbols sorted by start; stale entries a JIT left overlapping newer
 * ones stay, and ksyms_find's latest start at or below an address wins. */
int rep_jitmap_load(const char *path, struct ksyms *m, struct dcpi_err *err)
{
	char line[4096];
	unsigned long lineno = 0;
	size_t cap = 0;
	FILE *f;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	f = jitmap_open(path, err);
	if (!f)
		return -errno;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		uint64_t start, size;
		int used = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &start, &size, &used) < 2 || !used) {
			rc = dcpi_errf(err, -EINVAL, "%s:%lu: not \"START SIZE name\"", path, lineno);
			break;
		}
		if (jit_add(m, &cap, start, size, line + used) < 0)
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	}
	fclose(f);
	if (rc < 0) {
		ksyms_free(m);
		return rc;
	}
	dcpi_qsort(m->e, m->n, sizeof(*m->e), jit_cmp);
	return 0;
}
