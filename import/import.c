/*
 * import/import.c - what the perf.data and callgrind importers share: the
 * table of formats (a probe and a reader each) that says which importer a file
 * needs, the table of counts per (image, event, file offset) flushed as
 * one profile per (image, event) (the live collector's table, collect/
 * aggregate.c, that the importers fill with agg_add), and the jump-edge
 * files that keep callgrind's --collect-jumps counts (docs/import.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/collect.h"
#include "dcpi/safefile.h"
#include "internal.h"

/* --- detection: one row per format --------------------------------------- */

/* The callgrind reader has no options (import_file_opts never gave it any). */
static int read_callgrind(const char *path, const struct import_opts *o, struct prof_db *db,
			  struct import_stats *st, struct dcpi_err *err)
{
	(void)o;
	return import_callgrind(path, db, st, err);
}

/*
 * The formats: a probe looks at the file's first bytes (1: mine, 0: not,
 * < 0: mine but not one I read, err says why), the reader imports it.  A
 * new format is a file with its probe and reader, and a row here.
 */
static const struct importer {
	enum import_kind kind;
	const char *what;
	int (*probe)(const char *head, size_t n, const char *path, struct dcpi_err *err);
	int (*read)(const char *path, const struct import_opts *o, struct prof_db *db,
		    struct import_stats *st, struct dcpi_err *err);
} importers[] = {
	{ IMPORT_PERF, "perf.data (PERFILE2 magic)", imp_probe_perf, import_perf_opts },
	{ IMPORT_CALLGRIND, "callgrind output ('# callgrind format' or 'events:' header)",
	  imp_probe_callgrind, read_callgrind },
	{ IMPORT_PERFSCRIPT, "perf script branch stacks ('0xFROM/0xTO/...' entries)",
	  imp_probe_perfscript, import_perfscript_opts },
};
#define NIMPORTERS (sizeof(importers) / sizeof(importers[0]))

static int detect(const char *path, const struct importer **which, struct dcpi_err *err)
{
	char head[4096], what[512] = "";
	ssize_t n;
	int fd = dcpi_open_read(AT_FDCWD, path, 0, NULL, path, err);

	*which = NULL;
	if (fd < 0)
		return fd;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 0)
		return dcpi_errf(err, -EIO, "%s: %s", path, strerror(errno));
	head[n] = '\0';
	for (size_t k = 0; k < NIMPORTERS; k++) {
		int rc = importers[k].probe(head, (size_t)n, path, err);

		if (rc < 0)
			return rc;
		if (rc > 0) {
			*which = &importers[k];
			return 0;
		}
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", k ? " nor " : "",
			 importers[k].what);
	}
	return dcpi_errf(err, -EINVAL, "%s: neither %s", path, what);
}

int import_detect(const char *path, enum import_kind *kind, struct dcpi_err *err)
{
	const struct importer *which;
	int rc = detect(path, &which, err);

	*kind = which ? which->kind : IMPORT_UNKNOWN;
	return rc;
}

int import_file(const char *path, struct prof_db *db, struct import_stats *st,
		struct dcpi_err *err)
{
	return import_file_opts(path, NULL, db, st, err);
}

int import_file_opts(const char *path, const struct import_opts *o, struct prof_db *db,
		     struct import_stats *st, struct dcpi_err *err)
{
	const struct importer *which;
	int rc = detect(path, &which, err);

	return rc ? rc : which->read(path, o, db, st, err);
}

/* --- files ------------------------------------------------------------------ */

int imp_read_file(const char *path, uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	struct stat sb;
	uint8_t *b = NULL;
	size_t got = 0;
	int ret = 0, fd = dcpi_open_read(AT_FDCWD, path, 0, NULL, path, err);

	if (fd < 0)
		return fd;
	if (fstat(fd, &sb)) {
		ret = dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size >= IMP_FILE_MAX) {
		ret = dcpi_errf(err, -EINVAL, "%s: not a regular file under 4 GiB", path);
		goto out;
	}
	b = malloc((size_t)sb.st_size + 1);
	if (!b) {
		ret = dcpi_errf(err, -ENOMEM, "%s: out of memory for %lld bytes", path,
				(long long)sb.st_size);
		goto out;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, b + got, (size_t)sb.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = dcpi_errf(err, -EIO, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	close(fd);
	return ret;
}

int imp_epoch_begin(struct prof_db *db, struct import_stats *st, struct dcpi_err *err)
{
	int rc = prof_db_epoch_new(db, st->epoch, sizeof(st->epoch), err);

	if (!rc)
		rc = prof_epoch_begin(db, st->epoch, err);
	if (rc && st->epoch[0]) {
		prof_db_epoch_drop_empty(db, st->epoch);
		st->epoch[0] = '\0';
	}
	return rc;
}

int imp_epoch_end(struct prof_db *db, const char *path, struct import_stats *st, int ret,
		  struct dcpi_err *err)
{
	if (!st->epoch[0])
		return ret;
	if (!ret && !st->profiles)
		ret = dcpi_errf(err, -ENODATA, "%s: no samples in any image (%" PRIu64 " lost): "
				"nothing imported", path, st->lost);
	if (!ret)
		ret = prof_epoch_commit(db, err);	/* aborts on failure */
	else
		prof_epoch_abort(db);
	if (ret) {
		prof_db_epoch_drop_empty(db, st->epoch);
		st->epoch[0] = '\0';
	}
	return ret;
}

/* --- the count table: collect/aggregate.c's ----------------------------------- */

int imp_table_flush(struct agg *t, imp_image_fn image_id, imp_offset_fn xlate,
		    void *ctx,
		    const struct imp_event *events, size_t nevents, struct prof_db *db,
		    const char *epoch, struct import_stats *st, struct dcpi_err *err)
{
	struct agg_event *ev = calloc(nevents ? nevents : 1, sizeof(*ev));
	struct agg_sink k = { ev, nevents, image_id, xlate, ctx };
	struct agg_flushed out;
	int ret;

	if (!ev)
		return dcpi_errf(err, -ENOMEM, "import: %zu events: out of memory", nevents);
	for (size_t i = 0; i < nevents; i++) {
		ev[i].name = events[i].name;
		ev[i].unit = events[i].unit;
		ev[i].period = events[i].period;
	}
	ret = agg_flush(t, &k, db, epoch, &out, err);
	st->images += out.images;
	st->profiles += out.profiles;
	st->skipped += out.skipped;
	free(ev);
	return ret;
}

/* --- jump edges ---------------------------------------------------------------- */

/* Named by the same key as the image's profile files. */
int imp_epoch_name(const struct prof_image_id *id, const char *suffix, char *out, size_t len)
{
	char key[PROF_BUILD_ID_MAX + 8];

	if (prof_image_key(id, key, sizeof(key)) < 0)
		return -ENAMETOOLONG;
	return (size_t)snprintf(out, len, "%s%s", key, suffix) >= len ? -ENAMETOOLONG : 0;
}

int import_jumps_name(const struct prof_image_id *id, char *out, size_t len)
{
	return imp_epoch_name(id, ".callgrind-jumps", out, len);
}

static int jump_cmp(const void *x, const void *y)
{
	const struct import_jump *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->from, a->to }, (uint64_t[]){ b->from, b->to }, 2);
}

/* Parse the text of a jumps file (docs/import.md) into a sorted array. */
static int jumps_parse(char *text, const char *path, struct import_jump **out, size_t *n,
		       struct dcpi_err *err)
{
	struct import_jump *v = NULL;
	size_t k = 0, cap = 0;
	unsigned long line = 0;
	char *save = NULL;

	if (strncmp(text, "# dcpi callgrind-jumps 1\n", 25))
		return dcpi_errf(err, -EINVAL, "%s: bad magic (not a dcpi jumps file "
				 "of version 1)", path);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct import_jump j;
		char kind;
		int used = 0;

		line++;
		if (l[0] == '#')
			continue;
		if (sscanf(l, "%" SCNx64 " %" SCNx64 " %" SCNu64 " %" SCNu64 " %c%n", &j.from,
			   &j.to, &j.count, &j.executed, &kind, &used) != 5 || l[used] ||
		    (kind != 'c' && kind != 'u')) {
			free(v);
			return dcpi_errf(err, -EINVAL, "%s: line %lu: bad jump record", path,
					 line);
		}
		j.conditional = kind == 'c';
		if (dcpi_grow((void **)&v, &cap, k + 1, sizeof(*v))) {
			free(v);
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
		}
		v[k++] = j;
	}
	dcpi_qsort(v, k, sizeof(*v), jump_cmp);
	*out = v;
	*n = k;
	return 0;
}

int imp_read_epoch_text(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			const char *suffix, char **text, char *path, size_t plen,
			struct dcpi_err *err)
{
	char name[NAME_MAX + 1];
	uint8_t *buf;
	size_t len;
	int ret;

	*text = NULL;
	if (imp_epoch_name(id, suffix, name, sizeof(name)))
		return dcpi_errf(err, -ENAMETOOLONG, "%s: %s file name too long", id->path,
				 suffix + 1);
	if (!epoch[0] || strchr(epoch, '/') ||
	    (size_t)snprintf(path, plen, "%s/%s/%s", prof_db_path(db), epoch, name) >= plen)
		return dcpi_errf(err, -EINVAL, "%s: bad epoch name '%.64s'", prof_db_path(db),
				 epoch);
	if (access(path, F_OK) && errno == ENOENT)
		return 1;
	ret = imp_read_file(path, &buf, &len, err);
	if (ret)
		return ret;
	if (strlen((char *)buf) != len) {
		free(buf);
		return dcpi_errf(err, -EINVAL, "%s: NUL byte in a text file", path);
	}
	*text = (char *)buf;
	return 0;
}

int import_read_jumps(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
		      struct import_jump **out, size_t *n, struct dcpi_err *err)
{
	char path[PATH_MAX], *text;
	int ret;

	*out = NULL;
	*n = 0;
	ret = imp_read_epoch_text(db, epoch, id, ".callgrind-jumps", &text, path, sizeof(path),
				  err);
	if (ret)
		return ret > 0 ? 0 : ret;
	ret = jumps_parse(text, path, out, n, err);
	free(text);
	return ret;
}
