/*
 * format.c - the bytes of a profile file (docs/profile-format.md) and their
 * atomic writing, reading and merging (DCPI sec. 4.3.3).
 *
 * A file is a fixed 72-byte little-endian header (magic, version, CRC-32C,
 * total size, entry count, sum of counts, period, cycles per unit, image size
 * and mtime), four length-prefixed strings (event, period unit, build-id,
 * path) and the entries sorted by offset: each is a LEB128 varint of the
 * offset's distance from the previous one (from 0 for the first) and a
 * varint count.  Offsets of sampled instructions are a few dozen bytes apart
 * and most counts are small, so an entry takes two to three bytes.
 *
 * The decoder trusts nothing: it is fuzzed, checks every length against the
 * buffer before reading, and names the file and the reason on rejection.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/profile.h"
#include "dcpi/safefile.h"
#include "internal.h"

#define PROF_MAGIC "DCPIPROF"
#define PROF_VERSION 1
#define PROF_HDR_SIZE 72
#define OFF_N 24
#define OFF_TOTAL 32
#define OFF_PERIOD 40
#define OFF_CPU 48
#define OFF_ISIZE 56
#define OFF_MTIME 64

static const struct kind_field prof_fields[] = {
	KIND_COUNT(prof_profile, n, OFF_N, 0, NULL),
	KIND_COUNT(prof_profile, total, OFF_TOTAL, 0, NULL),
	KIND_FIELD(prof_profile, period, OFF_PERIOD),
	KIND_FIELD(prof_profile, cycles_per_unit, OFF_CPU),
};
static const struct kind_str prof_strs[] = {
	KIND_STR(prof_profile, event), KIND_STR(prof_profile, period_unit),
	KIND_STR(prof_profile, image.build_id), KIND_STR(prof_profile, image.path),
};
PROF_KIND_FORMAT(prof, prof_profile, PROF_MAGIC, "a dcpi profile",
		 "profile", PROF_HDR_SIZE, PROF_VERSION, OFF_ISIZE);

size_t prof_encoded_size(const struct prof_profile *p)
{
	size_t size = kind_head_len(&prof_format, p);
	uint64_t prev = 0;

	for (size_t i = 0; i < p->n; i++) {
		size += varint_len(p->e[i].offset - prev) + varint_len(p->e[i].count);
		prev = p->e[i].offset;
	}
	return size;
}

static int valid_double(double d)
{
	return isfinite(d) && d >= 0;
}

/* What encode requires and decode guarantees, apart from the entries. */
static const char *check_head(const void *v)
{
	const struct prof_profile *p = v;
	size_t ev = strnlen(p->event, sizeof(p->event));

	if (ev == 0 || ev >= sizeof(p->event))
		return "event name empty or too long";
	if (strnlen(p->period_unit, sizeof(p->period_unit)) >= sizeof(p->period_unit))
		return "period unit too long";
	if (!valid_double(p->period))
		return "period is negative or not finite";
	if (!valid_double(p->cycles_per_unit))
		return "cycles per unit is negative or not finite";
	return NULL;
}

int prof_encode(const struct prof_profile *p, uint8_t **buf, size_t *len,
		struct dcpi_err *err)
{
	const char *why = kind_check_head(&prof_format, p);
	uint64_t sum = 0;
	size_t size, pos;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (why)
		return dcpi_errf(err, -EINVAL, "%s: cannot encode: %s", p->image.path, why);
	for (size_t i = 0; i < p->n; i++) {
		if (i && p->e[i].offset <= p->e[i - 1].offset)
			return dcpi_errf(err, -EINVAL, "%s: %s: cannot encode: entries not "
					 "normalized at offset 0x%" PRIx64, p->image.path,
					 p->event, p->e[i].offset);
		if (!p->e[i].count || sum + p->e[i].count < sum)
			return dcpi_errf(err, -EINVAL, "%s: %s: cannot encode: zero or "
					 "overflowing count at offset 0x%" PRIx64,
					 p->image.path, p->event, p->e[i].offset);
		sum += p->e[i].count;
	}
	if (sum != p->total)
		return dcpi_errf(err, -EINVAL, "%s: %s: cannot encode: total %" PRIu64
				 " is not the sum of counts %" PRIu64, p->image.path,
				 p->event, p->total, sum);
	size = prof_encoded_size(p);
	b = malloc(size);
	if (!b)
		return dcpi_errf(err, -ENOMEM, "%s: %s: out of memory encoding %zu bytes",
				 p->image.path, p->event, size);
	kind_put_head(&prof_format, b, size, &p->image);
	pos = kind_put_fields(&prof_format, p, b);
	for (size_t i = 0; i < p->n; i++) {
		pos += dcpi_varint_put(b + pos, p->e[i].offset - (i ? p->e[i - 1].offset : 0));
		pos += dcpi_varint_put(b + pos, p->e[i].count);
	}
	return kind_sealed(b, size, buf, len);
}

static int decode_body(struct kind_cursor *cur, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct prof_profile *p = v;
	const uint8_t *buf = cur->buf;
	size_t size = cur->size, pos = cur->pos;
	uint64_t n = get64(buf + OFF_N), total = get64(buf + OFF_TOTAL);
	uint64_t off = 0, sum = 0;

	/* Each entry takes at least two bytes: bound the allocation by the body. */
	if (n > (size - pos) / 2)
		return dcpi_errf(err, -EINVAL, "%s: entry count %" PRIu64 " does not fit in "
				 "%zu bytes of body", name, n, size - pos);
	if (n) {
		p->e = malloc((size_t)n * sizeof(*p->e));
		if (!p->e)
			return dcpi_errf(err, -ENOMEM, "%s: out of memory for %" PRIu64
					 " entries", name, n);
		p->cap = (size_t)n;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t d, c;
		size_t k = dcpi_varint_get(buf + pos, size - pos, &d);

		if (k)
			pos += k;
		if (!k || !(k = dcpi_varint_get(buf + pos, size - pos, &c)))
			return dcpi_errf(err, -EINVAL, "%s: entry %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		pos += k;
		if (i && d == 0)
			return dcpi_errf(err, -EINVAL, "%s: duplicate offset 0x%" PRIx64,
					 name, off);
		if (off + d < off)
			return dcpi_errf(err, -EINVAL, "%s: entry %" PRIu64 ": offsets not "
					 "sorted (wrap past 2^64)", name, i);
		off += d;
		if (c == 0)
			return dcpi_errf(err, -EINVAL, "%s: zero count at offset 0x%" PRIx64,
					 name, off);
		if (sum + c < sum)
			return dcpi_errf(err, -EINVAL, "%s: counts overflow 64 bits", name);
		sum += c;
		p->e[i].offset = off;
		p->e[i].count = c;
		p->n = (size_t)i + 1;
	}
	if (pos != size)
		return dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after %" PRIu64
				 " entries", name, size - pos, n);
	if (sum != total)
		return dcpi_errf(err, -EINVAL, "%s: counts add to %" PRIu64 ", header total "
				 "says %" PRIu64, name, sum, total);
	p->total = total;
	return 0;
}

int prof_read_all(const char *path, uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	return dcpi_read_file_at(AT_FDCWD, path, 0, PROF_FILE_MAX, buf, len, path, err);
}

/* Split path into its directory ("." when none) and base name. */
static int split_path(const char *path, char *dir, size_t dlen, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		snprintf(dir, dlen, ".");
		*base = path;
		return 0;
	}
	if ((size_t)(slash - path) + 2 > dlen)
		return -ENAMETOOLONG;
	if (slash == path) {
		strcpy(dir, "/");
	} else {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	*base = slash + 1;
	return 0;
}

int prof_write_atomic(const char *path, const void *buf, size_t len, struct dcpi_err *err)
{
	return dcpi_write_file(path, buf, len, 0644, err);
}

/* A plain copy of src (kind_file_merge writes it where no file is). */
static int prof_copy(struct prof_profile *dst, const struct prof_profile *src)
{
	*dst = *src;
	dst->e = NULL;
	dst->cap = 0;
	if (src->n && !(dst->e = malloc(src->n * sizeof(*dst->e))))
		return -ENOMEM;
	if (src->n)
		memcpy(dst->e, src->e, src->n * sizeof(*dst->e));
	dst->cap = src->n;
	return 0;
}

PROF_KIND_DEFINE(prof, prof_profile, ".prof");
PROF_KIND_FILE_API(prof, prof_profile)

/* Serialize read-merge-write of files in one directory across processes. */
int prof_lock_dir(const char *path, struct dcpi_err *err)
{
	char dir[PATH_MAX];
	const char *base;
	int fd;

	if (split_path(path, dir, sizeof(dir), &base))
		return dcpi_errf(err, -ENAMETOOLONG, "%s: bad file name", path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int e = errno;

			close(fd);
			return dcpi_errf(err, -e, "%s: lock: %s", dir, strerror(e));
		}
	}
	return fd;
}

/* Keep [A-Za-z0-9_-]; escape every other byte as %XX so names stay distinct. */
static size_t sanitize_event(const char *ev, char *out, size_t len)
{
	size_t k = 0;

	for (const unsigned char *s = (const unsigned char *)ev; *s; s++) {
		int keep = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			   (*s >= '0' && *s <= '9') || *s == '_' || *s == '-';

		if (k + 4 > len)
			return 0;
		if (keep)
			out[k++] = (char)*s;
		else
			k += (size_t)snprintf(out + k, 4, "%%%02X", *s);
	}
	out[k] = '\0';
	return k;
}

/* FNV-1a, 64 bits: a stable key for images without a build-id. */
static uint64_t fnv1a(uint64_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int prof_image_key(const struct prof_image_id *id, char *out, size_t len)
{
	uint8_t num[16];
	uint64_t h;
	size_t w;

	if (id->build_id[0]) {
		w = (size_t)snprintf(out, len, "%s", id->build_id);
	} else {
		h = fnv1a(0xcbf29ce484222325ull, id->path, strlen(id->path) + 1);
		put64(num, id->size);
		put64(num + 8, (uint64_t)id->mtime);
		h = fnv1a(h, num, sizeof(num));
		w = (size_t)snprintf(out, len, "p%016" PRIx64, h);
	}
	return w >= len ? -ENAMETOOLONG : 0;
}

int prof_file_name(const struct prof_image_id *id, const char *event, char *out,
		   size_t len)
{
	char ev[PROF_EVENT_MAX * 3 + 1];
	char key[PROF_BUILD_ID_MAX + 8];

	if (!event[0] || !sanitize_event(event, ev, sizeof(ev)))
		return -EINVAL;
	if (prof_image_key(id, key, sizeof(key)) < 0)
		return -ENAMETOOLONG;
	if ((size_t)snprintf(out, len, "%s.%s.prof", key, ev) >= len)
		return -ENAMETOOLONG;
	return 0;
}
