/*
 * paths.c - the path profile kind (include/dcpi/paths.h): per image, the
 * transitions (from, to, count) and per-instruction step counts that path
 * samples observed (single steps after a time sample, or branch records),
 * in memory, as bytes (docs/profile-format.md, "Path files") and in epochs.
 *
 * Like the sample profiles (format.c) a file is a fixed little-endian
 * header with a CRC-32C, length-prefixed strings, then the records as
 * varints: edges sorted by (from, to), each the distance of `from` from the
 * previous edge's (0 = the same instruction), the zigzag of to - from
 * (modulo 2^64, so PATH_ELSEWHERE on either side encodes) and the count;
 * steps sorted by offset as in .prof files.  Merging adds counts and bursts
 * exactly (associative, commutative).  The decoder is fuzzed
 * (fuzz/fuzz_paths.c) and never reads outside its buffer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/paths.h"
#include "dcpi/safefile.h"
#include "internal.h"

#define PATH_MAGIC "DCPIPATH"
#define PATH_VERSION 1
#define PATH_HDR_SIZE 84
#define POFF_NEDGES 24
#define POFF_NSTEPS 32
#define POFF_ETOTAL 40
#define POFF_STOTAL 48
#define POFF_BURSTS 56
#define POFF_ISIZE 64
#define POFF_MTIME 72
#define POFF_FLAGS 80
#define PATH_F_KNOWN PATH_F_TAKEN_ONLY

/* --- in memory ----------------------------------------------------------- */

void path_profile_init(struct path_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void path_profile_free(struct path_profile *p)
{
	if (!p)
		return;
	free(p->edges);
	free(p->steps);
	p->edges = NULL;
	p->steps = NULL;
	p->nedges = p->cap_edges = 0;
	p->nsteps = p->cap_steps = 0;
}

int path_profile_add_edge(struct path_profile *p, uint64_t from, uint64_t to, uint64_t count)
{
	int rc = dcpi_grow((void **)&p->edges, &p->cap_edges, p->nedges + 1, sizeof(*p->edges));

	if (rc)
		return rc;
	p->edges[p->nedges].from = from;
	p->edges[p->nedges].to = to;
	p->edges[p->nedges++].count = count;
	return 0;
}

int path_profile_add_step(struct path_profile *p, uint64_t offset, uint64_t count)
{
	int rc = dcpi_grow((void **)&p->steps, &p->cap_steps, p->nsteps + 1, sizeof(*p->steps));

	if (rc)
		return rc;
	p->steps[p->nsteps].offset = offset;
	p->steps[p->nsteps++].count = count;
	return 0;
}

static int edge_cmp(const struct path_edge *x, const struct path_edge *y)
{
	return dcpi_cmp_keys((uint64_t[]){ x->from, x->to }, (uint64_t[]){ y->from, y->to }, 2);
}

static int cmp_edge(const void *a, const void *b)
{
	return edge_cmp(a, b);
}

static int cmp_step(const void *a, const void *b)
{
	const struct path_step *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Sort, sum duplicates, drop zeros. */
int path_profile_normalize(struct path_profile *p)
{
	int rc = kind_sort_sum(p->edges, &p->nedges, sizeof(*p->edges), cmp_edge,
			       offsetof(struct path_edge, count));

	if (!rc)
		rc = kind_sort_sum(p->steps, &p->nsteps, sizeof(*p->steps), cmp_step,
				   offsetof(struct path_step, count));
	if (rc)
		return rc;
	p->nedges = kind_drop_zeros(p->edges, p->nedges, sizeof(*p->edges),
				    offsetof(struct path_edge, count));
	p->nsteps = kind_drop_zeros(p->steps, p->nsteps, sizeof(*p->steps),
				    offsetof(struct path_step, count));
	return 0;
}

uint64_t path_profile_edge(const struct path_profile *p, uint64_t from, uint64_t to)
{
	struct path_edge key = { from, to, 0 };
	size_t lo = 0, hi = p->nedges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (edge_cmp(&p->edges[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nedges && !edge_cmp(&p->edges[lo], &key))
		return p->edges[lo].count;
	return 0;
}

uint64_t path_profile_step(const struct path_profile *p, uint64_t offset)
{
	size_t lo = dcpi_lower_bound(p->steps, p->nsteps, sizeof(*p->steps),
				     offsetof(struct path_step, offset), offset);

	if (lo < p->nsteps && p->steps[lo].offset == offset)
		return p->steps[lo].count;
	return 0;
}

/* Concatenate src's records into dst, then normalize: counts add. */
static int merge_records(struct path_profile *dst, const struct path_profile *src)
{
	int rc = dcpi_grow((void **)&dst->edges, &dst->cap_edges, dst->nedges + src->nedges,
			   sizeof(*dst->edges));

	if (!rc)
		rc = dcpi_grow((void **)&dst->steps, &dst->cap_steps,
			       dst->nsteps + src->nsteps, sizeof(*dst->steps));
	if (rc)
		return rc;
	if (src->nedges)
		memcpy(dst->edges + dst->nedges, src->edges, src->nedges * sizeof(*src->edges));
	dst->nedges += src->nedges;
	if (src->nsteps)
		memcpy(dst->steps + dst->nsteps, src->steps, src->nsteps * sizeof(*src->steps));
	dst->nsteps += src->nsteps;
	return path_profile_normalize(dst);
}

int path_profile_merge(struct path_profile *dst, const struct path_profile *src,
		       struct dcpi_err *err)
{
	int rc;

	if (!prof_image_id_equal(&dst->image, &src->image))
		return dcpi_errf(err, -EINVAL, "%s: cannot merge paths of different images "
				 "(%s)", dst->image.path, src->image.path);
	if (strcmp(dst->source, src->source) || dst->flags != src->flags)
		return dcpi_errf(err, -EINVAL, "%s: cannot merge paths from %s (flags %#x) "
				 "into paths from %s (flags %#x)", dst->image.path,
				 src->source, src->flags, dst->source, dst->flags);
	if (dst->bursts + src->bursts < dst->bursts)
		return dcpi_errf(err, -EOVERFLOW, "%s: burst count overflows 64 bits",
				 dst->image.path);
	rc = merge_records(dst, src);
	if (rc == -ENOMEM)
		return dcpi_errf(err, rc, "%s: out of memory merging paths", dst->image.path);
	if (rc)
		return dcpi_errf(err, rc, "%s: path count overflows 64 bits", dst->image.path);
	dst->bursts += src->bursts;
	if (prof_image_id_cmp(&src->image, &dst->image) < 0)
		dst->image = src->image;
	return 0;
}

/* --- bytes --------------------------------------------------------------- */

/* to - from modulo 2^64 as a signed distance, zigzag-coded: short jumps
 * either way take one or two bytes. */
static uint64_t zigzag(uint64_t from, uint64_t to)
{
	uint64_t d = to - from;

	return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}

static uint64_t unzigzag(uint64_t from, uint64_t z)
{
	return from + ((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
}

static const struct kind_field path_fields[] = {
	KIND_COUNT(path_profile, nedges, POFF_NEDGES, 3, "edges"),
	KIND_COUNT(path_profile, nsteps, POFF_NSTEPS, 2, "steps"),
	KIND_SUM(path_profile, bursts, POFF_BURSTS),
	KIND_FIELD(path_profile, flags, POFF_FLAGS),
};
static const struct kind_str path_strs[] = {
	KIND_STR(path_profile, source), KIND_STR(path_profile, image.build_id),
	KIND_STR(path_profile, image.path),
};
PROF_KIND_FORMAT(path, path_profile, PATH_MAGIC, "a dcpi path profile",
		 "paths", PATH_HDR_SIZE, PATH_VERSION, POFF_ISIZE);

size_t path_encoded_size(const struct path_profile *p)
{
	size_t size = kind_head_len(&path_format, p);
	uint64_t prev = 0;

	for (size_t i = 0; i < p->nedges; i++) {
		const struct path_edge *e = &p->edges[i];

		size += varint_len(e->from - prev) + varint_len(zigzag(e->from, e->to)) +
			varint_len(e->count);
		prev = e->from;
	}
	prev = 0;
	for (size_t i = 0; i < p->nsteps; i++) {
		size += varint_len(p->steps[i].offset - prev) + varint_len(p->steps[i].count);
		prev = p->steps[i].offset;
	}
	return size;
}

static const char *check_head(const void *v)
{
	const struct path_profile *p = v;
	size_t src = strnlen(p->source, sizeof(p->source));

	if (src == 0 || src >= sizeof(p->source))
		return "source empty or too long";
	if (p->flags & ~(uint32_t)PATH_F_KNOWN)
		return "unknown flags";
	return NULL;
}

/* Records sorted strictly, counts non-zero; sums into *et, *st. */
static const char *path_check_records(const struct path_profile *p, uint64_t *et,
				      uint64_t *st)
{
	int rc = kind_check_counts(p->edges, p->nedges, sizeof(*p->edges), cmp_edge,
				   offsetof(struct path_edge, count), et);

	if (rc)
		return rc == KIND_UNSORTED ? "edges not normalized" :
					     "zero or overflowing edge count";
	rc = kind_check_counts(p->steps, p->nsteps, sizeof(*p->steps), cmp_step,
			       offsetof(struct path_step, count), st);
	if (rc)
		return rc == KIND_UNSORTED ? "steps not normalized" :
					     "zero or overflowing step count";
	return NULL;
}

static size_t put_records(const struct path_profile *p, uint8_t *b, size_t pos)
{
	uint64_t prev = 0;

	for (size_t i = 0; i < p->nedges; i++) {
		const struct path_edge *e = &p->edges[i];

		pos += dcpi_varint_put(b + pos, e->from - prev);
		pos += dcpi_varint_put(b + pos, zigzag(e->from, e->to));
		pos += dcpi_varint_put(b + pos, e->count);
		prev = e->from;
	}
	prev = 0;
	for (size_t i = 0; i < p->nsteps; i++) {
		pos += dcpi_varint_put(b + pos, p->steps[i].offset - prev);
		pos += dcpi_varint_put(b + pos, p->steps[i].count);
		prev = p->steps[i].offset;
	}
	return pos;
}

int path_encode(const struct path_profile *p, uint8_t **buf, size_t *len,
		struct dcpi_err *err)
{
	const char *why = kind_check_head(&path_format, p);
	uint64_t et, st;
	size_t size;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (!why)
		why = path_check_records(p, &et, &st);
	if (why)
		return kind_cannot(&path_format, &p->image, why, err);
	size = path_encoded_size(p);
	if (kind_alloc(&path_format, &p->image, size, &b, err))
		return -ENOMEM;
	put64(b + POFF_ETOTAL, et);
	put64(b + POFF_STOTAL, st);
	put_records(p, b, kind_put_fields(&path_format, p, b));
	return kind_sealed(b, size, buf, len);
}

static int decode_edges(struct kind_cursor *c, uint64_t n, const char *name,
			struct path_profile *p, struct dcpi_err *err)
{
	uint64_t from = 0, sum = 0, total = get64(c->buf + POFF_ETOTAL);

	for (uint64_t i = 0; i < n; i++) {
		struct path_edge *e = &p->edges[i];
		uint64_t d, z, cnt;

		if (!kind_next(c, &d) || !kind_next(c, &z) || !kind_next(c, &cnt))
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		if (from + d < from)
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 ": offsets not "
					 "sorted (wrap past 2^64)", name, i);
		from += d;
		e->from = from;
		e->to = unzigzag(from, z);
		e->count = cnt;
		if (i && edge_cmp(&p->edges[i - 1], e) >= 0)
			return dcpi_errf(err, -EINVAL, "%s: edge %" PRIu64 " (0x%" PRIx64
					 " -> 0x%" PRIx64 "): duplicate or not sorted", name,
					 i, e->from, e->to);
		if (!cnt)
			return dcpi_errf(err, -EINVAL, "%s: zero count on edge 0x%" PRIx64
					 " -> 0x%" PRIx64, name, e->from, e->to);
		if (sum + cnt < sum)
			return dcpi_errf(err, -EINVAL, "%s: edge counts overflow 64 bits", name);
		sum += cnt;
		p->nedges = (size_t)i + 1;
	}
	if (sum != total)
		return dcpi_errf(err, -EINVAL, "%s: edge counts add to %" PRIu64 ", header "
				 "total says %" PRIu64, name, sum, total);
	return 0;
}

static int decode_steps(struct kind_cursor *c, uint64_t n, const char *name,
			struct path_profile *p, struct dcpi_err *err)
{
	uint64_t off = 0, sum = 0, total = get64(c->buf + POFF_STOTAL);

	for (uint64_t i = 0; i < n; i++) {
		uint64_t d, cnt;

		if (!kind_next(c, &d) || !kind_next(c, &cnt))
			return dcpi_errf(err, -EINVAL, "%s: step %" PRIu64 ": truncated or "
					 "overlong varint", name, i);
		if (i && d == 0)
			return dcpi_errf(err, -EINVAL, "%s: duplicate step offset 0x%" PRIx64,
					 name, off);
		if (off + d < off)
			return dcpi_errf(err, -EINVAL, "%s: step %" PRIu64 ": offsets not "
					 "sorted (wrap past 2^64)", name, i);
		off += d;
		if (!cnt)
			return dcpi_errf(err, -EINVAL, "%s: zero step count at offset 0x%"
					 PRIx64, name, off);
		if (sum + cnt < sum)
			return dcpi_errf(err, -EINVAL, "%s: step counts overflow 64 bits", name);
		sum += cnt;
		p->steps[i].offset = off;
		p->steps[i].count = cnt;
		p->nsteps = (size_t)i + 1;
	}
	if (sum != total)
		return dcpi_errf(err, -EINVAL, "%s: step counts add to %" PRIu64 ", header "
				 "total says %" PRIu64, name, sum, total);
	return 0;
}

/* Allocate for the counts the header declares, bounded by the body. */
static int decode_body(struct kind_cursor *c, const char *name, void *v,
		       struct dcpi_err *err)
{
	struct path_profile *p = v;
	uint64_t ne = get64(c->buf + POFF_NEDGES), ns = get64(c->buf + POFF_NSTEPS);
	int rc = kind_counts_fit(&path_format, c, name, err);

	if (rc)
		return rc;
	if (ne && !(p->edges = malloc((size_t)ne * sizeof(*p->edges))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %" PRIu64 " edges",
				 name, ne);
	p->cap_edges = (size_t)ne;
	if (ns && !(p->steps = malloc((size_t)ns * sizeof(*p->steps))))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %" PRIu64 " steps",
				 name, ns);
	p->cap_steps = (size_t)ns;
	rc = decode_edges(c, ne, name, p, err);
	if (!rc)
		rc = decode_steps(c, ns, name, p, err);
	if (!rc && c->pos != c->size)
		rc = dcpi_errf(err, -EINVAL, "%s: %zu bytes of garbage after %" PRIu64
			       " edges and %" PRIu64 " steps", name, c->size - c->pos, ne, ns);
	return rc;
}

/* --- files and epochs (kind.c) ------------------------------------------- */

PROF_KIND_COPY(path, path_profile)
PROF_KIND_API(path, path_profile, ".paths")

/* ---- transitions as text (dcpicalc --path-edges) ------------------------- */

static int text_edge(const char *line, struct path_edge *e)
{
	char a[64], b[64];
	unsigned long long n;
	uint64_t v[2];

	if (sscanf(line, "%63s %63s %llu", a, b, &n) != 3)
		return -1;
	for (int k = 0; k < 2; k++) {
		const char *t = k ? b : a;
		char *end;

		v[k] = !strcmp(t, "-") ? PATH_ELSEWHERE : strtoull(t, &end, 16);
		if (strcmp(t, "-") && (end == t || *end))
			return -1;
	}
	*e = (struct path_edge){ v[0], v[1], n };
	return 0;
}

int path_text_read(const char *path, struct path_profile *p, struct dcpi_err *err)
{
	FILE *f = dcpi_fopen_read(path, err);
	char line[256];
	unsigned lineno = 0;
	int rc = 0;

	if (!f)
		return -errno;
	snprintf(p->source, sizeof(p->source), "file");
	while (!rc && fgets(line, sizeof(line), f)) {
		struct path_edge e, *slot;

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == 0)
			continue;
		if (text_edge(line, &e) < 0)
			rc = dcpi_errf(err, -EINVAL, "%s:%u: not FROM TO COUNT (hex offsets or -, "
				       "decimal count)", path, lineno);
		else if (!(slot = dcpi_append((void **)&p->edges, &p->nedges, &p->cap_edges,
					       sizeof(*p->edges))))
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
		else
			*slot = e;
	}
	fclose(f);
	return rc;
}
