/*
 * kind.c - what every per-image profile kind beside the sample profiles
 * (".paths": paths.c, ".values": values.c) does the same way with its
 * files: write and read one, merge into one under a lock on its directory,
 * merge into an epoch's "<key><suffix>" inside the epoch's transaction,
 * read every one of an epoch (a FIFO or a link reported and skipped, a
 * file that does not decode an error naming it), and merge one epoch's
 * into another's; and the header every such file starts with (magic,
 * version at 8, CRC-32C at 12 over the rest, size at 16), the sample
 * profiles' (format.c) included, with the header's fields and strings each
 * kind lists in its struct kind_format (written, read, copied and checked
 * here: kind_put_fields, kind_get_fields, kind_copy_head, kind_check_head).
 * Each kind gives its encoder, decoder and merge through a struct
 * prof_kind (internal.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <inttypes.h>

#include "internal.h"

uint32_t kind_crc(const uint8_t *buf, size_t size)
{
	uint32_t crc = dcpi_crc32c(0, buf, KIND_OFF_CRC);

	return dcpi_crc32c(crc, buf + KIND_OFF_CRC + 4, size - KIND_OFF_CRC - 4);
}

void kind_put_header(uint8_t *b, const char *magic, uint32_t version, size_t size)
{
	memcpy(b, magic, 8);
	put32(b + KIND_OFF_VERSION, version);
	put64(b + KIND_OFF_SIZE, size);
}

void kind_seal(uint8_t *b, size_t size)
{
	put32(b + KIND_OFF_CRC, kind_crc(b, size));
}

void prof_file_reseal(uint8_t *buf, size_t len)
{
	put64(buf + KIND_OFF_SIZE, len);
	kind_seal(buf, len);
}

size_t kind_string_len(const char *s)
{
	size_t l = strnlen(s, PROF_PATH_MAX);

	return varint_len(l) + l;
}

size_t kind_put_string(uint8_t *b, size_t pos, const char *s)
{
	size_t l = strlen(s);

	pos += dcpi_varint_put(b + pos, l);
	memcpy(b + pos, s, l);
	return pos + l;
}

int kind_next(struct kind_cursor *c, uint64_t *v)
{
	size_t k = dcpi_varint_get(c->buf + c->pos, c->size - c->pos, v);

	c->pos += k;
	return k != 0;
}

const char *kind_get_string(struct kind_cursor *c, char *out, size_t cap)
{
	uint64_t l;

	if (!kind_next(c, &l))
		return "truncated string length";
	if (l >= cap)
		return "string too long";
	if (l > c->size - c->pos)
		return "string runs past the end of the file";
	if (memchr(c->buf + c->pos, '\0', l))
		return "NUL byte inside a string";
	memcpy(out, c->buf + c->pos, l);
	out[l] = '\0';
	c->pos += l;
	return NULL;
}

static int is_hex_id(const char *s, size_t len)
{
	if (len % 2)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

const char *kind_check_id(const struct prof_image_id *id)
{
	size_t bid = strnlen(id->build_id, sizeof(id->build_id));

	if (bid >= sizeof(id->build_id) || !is_hex_id(id->build_id, bid))
		return "build-id is not lower-case hex of at most 32 bytes";
	if (!id->path[0] || strnlen(id->path, PROF_PATH_MAX) >= PROF_PATH_MAX)
		return "image path empty or too long";
	return NULL;
}

int kind_check_header(const uint8_t *buf, size_t len, const char *name, const char *magic,
		      const char *what, size_t hdr_size, uint32_t version, struct dcpi_err *err)
{
	uint64_t size;
	uint32_t v, stored, crc;

	if (len < 8)
		return dcpi_errf(err, -EINVAL, "%s: truncated: %zu bytes, not even a magic",
				 name, len);
	if (memcmp(buf, magic, 8))
		return dcpi_errf(err, -EINVAL, "%s: bad magic (not %s)", name, what);
	if (len < hdr_size)
		return dcpi_errf(err, -EINVAL, "%s: truncated: %zu bytes, the header needs %zu",
				 name, len, hdr_size);
	v = get32(buf + KIND_OFF_VERSION);
	if (v != version)
		return dcpi_errf(err, -EINVAL, "%s: unsupported version %" PRIu32
				 " (this reader knows %" PRIu32 ")", name, v, version);
	size = get64(buf + KIND_OFF_SIZE);
	if (size > len)
		return dcpi_errf(err, -EINVAL, "%s: truncated: header says %" PRIu64
				 " bytes, have %zu", name, size, len);
	if (size < len)
		return dcpi_errf(err, -EINVAL, "%s: trailing garbage: %zu bytes after the %"
				 PRIu64 " the header declares", name, len - (size_t)size, size);
	stored = get32(buf + KIND_OFF_CRC);
	crc = kind_crc(buf, len);
	if (stored != crc)
		return dcpi_errf(err, -EINVAL, "%s: bad checksum (stored 0x%08" PRIx32
				 ", computed 0x%08" PRIx32 ")", name, stored, crc);
	return 0;
}

int kind_file_write(const struct prof_kind *k, const char *path, const void *p,
		    struct dcpi_err *err)
{
	uint8_t *buf;
	size_t len;
	int rc = k->encode(p, &buf, &len, err);

	if (rc)
		return rc;
	rc = prof_write_atomic(path, buf, len, err);
	free(buf);
	return rc;
}

int kind_file_read(const struct prof_kind *k, const char *path, void *p, struct dcpi_err *err)
{
	uint8_t *buf;
	size_t len;
	int rc;

	k->init(p);
	rc = prof_read_all(path, &buf, &len, err);
	if (rc)
		return rc;
	rc = k->decode(buf, len, path, p, err);
	free(buf);
	return rc;
}

/* old: the file's profile decoded (rc 0), or absent (-ENOENT: a copy of
 * p); then p merged into it. */
static int merged(const struct prof_kind *k, void *old, int rc, const void *p,
		  const char *shown, struct dcpi_err *err)
{
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		rc = k->copy(old, p);
		if (rc)
			rc = dcpi_errf(err, rc, "%s: %s", shown, strerror(-rc));
		return rc;
	}
	return rc ? rc : k->merge(old, p, err);
}

int kind_file_merge(const struct prof_kind *k, const char *path, const void *p,
		    struct dcpi_err *err)
{
	void *old = malloc(k->size);
	int lock, rc;

	if (!old)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	lock = prof_lock_dir(path, err);
	if (lock < 0) {
		free(old);
		return lock;
	}
	rc = merged(k, old, kind_file_read(k, path, old, err), p, path, err);
	if (!rc)
		rc = kind_file_write(k, path, old, err);
	k->free(old);
	free(old);
	close(lock);
	return rc;
}

/* Merge p into the epoch's file name inside the open transaction (txn.c). */
static int merge_into(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		      const char *name, const void *p, void *old, struct dcpi_err *err)
{
	char shown[PATH_MAX + 96];
	uint8_t *buf;
	size_t len;
	int rc;

	snprintf(shown, sizeof(shown), "%s/%s/%s", prof_db_path(db), epoch, name);
	k->init(old);
	rc = prof_epoch_read_file(db, epoch, name, &buf, &len, err);
	if (!rc) {
		rc = k->decode(buf, len, shown, old, err);
		free(buf);
	}
	rc = merged(k, old, rc, p, shown, err);
	if (!rc)
		rc = k->encode(old, &buf, &len, err);
	k->free(old);
	if (rc)
		return rc;
	rc = prof_txn_write(db, name, buf, len, err);
	free(buf);
	return rc;
}

/* Through the epoch's transaction (its own when none is open): written
 * with the profiles and meta of a flush, never through a link. */
int kind_epoch_write(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		     const void *p, struct dcpi_err *err)
{
	char key[PROF_BUILD_ID_MAX + 8], name[PROF_BUILD_ID_MAX + 16];
	void *old;
	int rc;

	if (prof_image_key(k->image(p), key, sizeof(key)))
		return dcpi_errf(err, -EINVAL, "%s/%s: %s: bad image identity",
				 prof_db_path(db), epoch, k->image(p)->path);
	snprintf(name, sizeof(name), "%s%s", key, k->suffix);
	if (!(old = malloc(k->size)))
		return dcpi_errf(err, -ENOMEM, "%s/%s: out of memory", prof_db_path(db), epoch);
	rc = prof_txn_enter(db, epoch, err);
	if (!rc)
		rc = prof_txn_leave(db, merge_into(k, db, epoch, name, p, old, err), err);
	free(old);
	return rc;
}

void kind_free_all(const struct prof_kind *k, void *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		k->free((char *)v + i * k->size);
	free(v);
}

/* strict (merging): a file that fails its checks is an error; else it is
 * skipped with a note and listed as damaged, and the rest is read. */
static int epoch_read(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		      void **out, size_t *n, int strict, struct dcpi_err *err)
{
	char shown[PATH_MAX + NAME_MAX + 2];
	char *v = NULL, **names;
	size_t nn, got = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = prof_epoch_names(db, epoch, k->suffix, &names, &nn, err);
	if (rc)
		return rc;
	if (nn && !(v = calloc(nn, k->size)))
		rc = dcpi_errf(err, -ENOMEM, "%s/%s: out of memory", prof_db_path(db), epoch);
	for (size_t i = 0; i < nn && !rc; i++) {
		struct dcpi_err e = { 0 };
		uint8_t *buf;
		size_t len;

		snprintf(shown, sizeof(shown), "%s/%s/%s", prof_db_path(db), epoch, names[i]);
		rc = prof_epoch_read_file(db, epoch, names[i], &buf, &len, &e);
		if (rc == -EINVAL || rc == -ELOOP || rc == -ENOENT) {
			if (rc != -ENOENT)	/* a FIFO, a link: reported, skipped */
				prof_db_note(db, "%s: skipped", e.msg);
			rc = 0;
			continue;
		}
		if (!rc) {
			k->init(v + got * k->size);
			rc = k->decode(buf, len, shown, v + got * k->size, &e);
			free(buf);
		}
		if (rc && rc != -ENOMEM && rc != -EIO && !strict) {
			prof_db_note(db, "%s; skipped, the rest of epoch %s is reported", e.msg,
				     epoch);
			prof_db_add_damaged(db, shown);
			k->free(v + got * k->size);
			rc = 0;
			continue;
		}
		if (rc)
			dcpi_errf(err, rc, "%s%s", e.msg, strict ? "; a damaged profile is not "
				  "merged (the output would lack its data): remove or repair it" : "");
		else
			got++;
	}
	prof_names_free(names, nn);
	if (rc) {
		kind_free_all(k, v, got);
		return rc;
	}
	*out = v;
	*n = got;
	return 0;
}

int kind_epoch_read(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		    void **out, size_t *n, struct dcpi_err *err)
{
	return epoch_read(k, db, epoch, out, n, 0, err);
}

int kind_epoch_merge(const struct prof_kind *k, struct prof_db *dst, const char *dst_epoch,
		     struct prof_db *src, const char *src_epoch, struct dcpi_err *err)
{
	char ddir[PATH_MAX], sdir[PATH_MAX];
	struct stat sd, ss;
	void *v;
	size_t n;
	int rc = prof_epoch_dir(dst, dst_epoch, ddir, sizeof(ddir), err);

	if (!rc)
		rc = prof_epoch_dir(src, src_epoch, sdir, sizeof(sdir), err);
	if (rc)
		return rc;
	if (!stat(ddir, &sd) && !stat(sdir, &ss) && sd.st_dev == ss.st_dev &&
	    sd.st_ino == ss.st_ino)
		return dcpi_errf(err, -EINVAL, "%s: cannot merge an epoch into itself", ddir);
	rc = epoch_read(k, src, src_epoch, &v, &n, 1, err);
	for (size_t i = 0; i < n && !rc; i++)
		rc = kind_epoch_write(k, dst, dst_epoch, (char *)v + i * k->size, err);
	kind_free_all(k, v, n);
	return rc;
}

int kind_image_tag(const struct prof_image_id *own, struct prof_image_id **imgs, size_t *n,
		   size_t max, const struct prof_image_id *id)
{
	struct prof_image_id *v;

	if (prof_image_id_equal(own, id))
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (prof_image_id_equal(&(*imgs)[i], id))
			return (int)i + 1;
	if (*n >= max)
		return -EOVERFLOW;
	if (!(v = realloc(*imgs, (*n + 1) * sizeof(*v))))
		return -ENOMEM;
	*imgs = v;
	v[(*n)++] = *id;
	return (int)*n;
}

const struct prof_image_id *kind_image_of(const struct prof_image_id *own,
					  const struct prof_image_id *imgs, size_t n, uint32_t tag)
{
	if (!tag)
		return own;
	return tag <= n ? &imgs[tag - 1] : NULL;
}

size_t kind_put_varint(uint8_t *b, size_t pos, uint64_t v)
{
	return pos + dcpi_varint_put(b + pos, v);
}

size_t kind_id_len(const struct prof_image_id *id)
{
	return varint_len(id->size) + varint_len((uint64_t)id->mtime) +
	       kind_string_len(id->build_id) + kind_string_len(id->path);
}

size_t kind_put_ids(uint8_t *b, size_t pos, const struct prof_image_id *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pos = kind_put_varint(b, pos, v[i].size);
		pos = kind_put_varint(b, pos, (uint64_t)v[i].mtime);
		pos = kind_put_string(b, pos, v[i].build_id);
		pos = kind_put_string(b, pos, v[i].path);
	}
	return pos;
}

const char *kind_get_id_names(struct kind_cursor *c, struct prof_image_id *id)
{
	const char *why = kind_get_string(c, id->build_id, sizeof(id->build_id));

	return why ? why : kind_get_string(c, id->path, sizeof(id->path));
}

const char *kind_get_ids(struct kind_cursor *c, struct prof_image_id *v, uint64_t n,
			 size_t *got)
{
	const char *why;
	uint64_t w[2];

	for (uint64_t i = 0; i < n; i++) {
		if (!kind_next(c, &w[0]) || !kind_next(c, &w[1]))
			return "image table truncated";
		v[i].size = w[0];
		v[i].mtime = (int64_t)w[1];
		if ((why = kind_get_id_names(c, &v[i])))
			return why;
		*got = (size_t)i + 1;
	}
	return NULL;
}

static int id_cmp_idx(const void *x, const void *y, void *arg)
{
	const struct prof_image_id *v = arg;

	return prof_image_id_cmp(&v[*(const uint32_t *)x], &v[*(const uint32_t *)y]);
}

/* map[t]: the new tag of old tag t, for t in [0, n]; v: the folded table. */
static size_t fold_images(const struct prof_image_id *own, const struct prof_image_id *imgs,
			  size_t n, const uint32_t *ord, struct prof_image_id *v, uint32_t *map)
{
	size_t k = 0;

	map[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct prof_image_id *id = &imgs[ord[i]];

		if (prof_image_id_equal(id, own)) {
			map[ord[i] + 1] = 0;
			continue;
		}
		if (!k || !prof_image_id_equal(&v[k - 1], id))
			v[k++] = *id;
		map[ord[i] + 1] = (uint32_t)k;
	}
	return k;
}

int kind_images_order(const struct prof_image_id *own, struct prof_image_id **imgs, size_t *n,
		      void (*retag)(void *p, const uint32_t *map), void *p)
{
	uint32_t *ord, *map;
	struct prof_image_id *v;
	int rc = -ENOMEM;

	if (!*n)
		return 0;
	ord = malloc(*n * sizeof(*ord));
	map = malloc((*n + 1) * sizeof(*map));
	v = malloc(*n * sizeof(*v));
	if (ord && map && v) {
		for (size_t i = 0; i < *n; i++)
			ord[i] = (uint32_t)i;
		qsort_r(ord, *n, sizeof(*ord), id_cmp_idx, *imgs);
		*n = fold_images(own, *imgs, *n, ord, v, map);
		retag(p, map);
		free(*imgs);
		*imgs = v;
		v = NULL;
		rc = 0;
	}
	free(ord);
	free(map);
	free(v);
	return rc;
}

void kind_put_head(const struct kind_format *f, uint8_t *b, size_t size,
		   const struct prof_image_id *id)
{
	kind_put_header(b, f->magic, f->version, size);
	put64(b + f->off_image, id->size);
	put64(b + f->off_image + 8, (uint64_t)id->mtime);
}

int kind_cannot(const struct kind_format *f, const struct prof_image_id *id, const char *why,
		struct dcpi_err *err)
{
	return dcpi_errf(err, -EINVAL, "%s: %s: cannot encode: %s", id->path, f->noun, why);
}

int kind_alloc(const struct kind_format *f, const struct prof_image_id *id, size_t size,
	       uint8_t **b, struct dcpi_err *err)
{
	*b = calloc(1, size);
	if (!*b)
		return dcpi_errf(err, -ENOMEM, "%s: %s: out of memory encoding %zu bytes",
				 id->path, f->noun, size);
	kind_put_head(f, *b, size, id);
	return 0;
}

int kind_sealed(uint8_t *b, size_t size, uint8_t **buf, size_t *len)
{
	kind_seal(b, size);
	*buf = b;
	*len = size;
	return 0;
}

int kind_decode_head(const struct kind_format *f, struct kind_cursor *c, const char *name,
		     struct prof_image_id *id, struct dcpi_err *err)
{
	int rc = kind_check_header(c->buf, c->size, name, f->magic, f->what, f->hdr_size,
				   f->version, err);

	if (rc)
		return rc;
	c->pos = f->hdr_size;
	id->size = get64(c->buf + f->off_image);
	id->mtime = (int64_t)get64(c->buf + f->off_image + 8);
	return 0;
}

int kind_decode(const struct kind_format *f, const uint8_t *buf, size_t len, const char *name,
		void *p, struct prof_image_id *id, struct dcpi_err *err)
{
	struct kind_cursor c = { buf, len, 0 };
	const char *why;
	int rc;

	if (!name)
		name = "(buffer)";
	rc = kind_decode_head(f, &c, name, id, err);
	if (rc)
		return rc;
	why = kind_get_id_names(&c, id);
	if (!why)
		why = kind_check_id(id);
	if (!why)
		why = f->get(&c, p);
	if (!why)
		return 0;
	rc = !strcmp(why, "out of memory") ? -ENOMEM : -EINVAL;
	return dcpi_errf(err, rc, "%s: %s", name, why);
}

int kind_decode_parts(const struct kind_format *f, const uint8_t *buf, size_t len,
		      const char *name, void *p, struct prof_image_id *id,
		      struct dcpi_err *err)
{
	struct kind_cursor c = { buf, len, 0 };
	const char *why;
	int rc;

	f->kind->init(p);
	if (!name)
		name = "(buffer)";
	rc = kind_decode_head(f, &c, name, id, err);
	if (rc)
		return rc;
	why = kind_get_fields(f, &c, p);
	if (!why)
		why = kind_check_head(f, p);
	if (why) {
		f->kind->init(p);
		return dcpi_errf(err, -EINVAL, "%s: bad header: %s", name, why);
	}
	rc = f->body(&c, name, p, err);
	if (rc) {
		f->kind->free(p);
		f->kind->init(p);
	}
	return rc;
}

size_t kind_head_len(const struct kind_format *f, const void *p)
{
	size_t size = f->hdr_size;

	for (size_t i = 0; i < f->nstrs; i++)
		size += kind_string_len((const char *)p + f->strs[i].off);
	return size;
}

/* A field's member (4 or 8 bytes) as a number, and back. */
static uint64_t member_get(const void *m, size_t width)
{
	uint32_t v32;
	uint64_t v64;

	if (width == 4) {
		memcpy(&v32, m, 4);
		return v32;
	}
	memcpy(&v64, m, 8);
	return v64;
}

static void member_set(void *m, size_t width, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;

	memcpy(m, width == 4 ? (void *)&v32 : (void *)&v, width);
}

size_t kind_put_fields(const struct kind_format *f, const void *p, uint8_t *b)
{
	size_t pos = f->hdr_size;

	for (size_t i = 0; i < f->nfields; i++) {
		const struct kind_field *d = &f->fields[i];
		uint64_t v = member_get((const char *)p + d->off, d->width);

		for (size_t k = 0; k < (d->role == KIND_NRECORDS ? 8 : d->width); k++)
			b[d->at + k] = (uint8_t)(v >> (8 * k));
	}
	for (size_t i = 0; i < f->nstrs; i++)
		pos = kind_put_string(b, pos, (const char *)p + f->strs[i].off);
	return pos;
}

const char *kind_get_fields(const struct kind_format *f, struct kind_cursor *c, void *p)
{
	const char *why = NULL;

	for (size_t i = 0; i < f->nfields; i++) {
		const struct kind_field *d = &f->fields[i];
		uint64_t v = 0;

		if (d->role == KIND_NRECORDS)
			continue;
		for (size_t k = 0; k < d->width; k++)
			v |= (uint64_t)c->buf[d->at + k] << (8 * k);
		member_set((char *)p + d->off, d->width, v);
	}
	for (size_t i = 0; i < f->nstrs && !why; i++)
		why = kind_get_string(c, (char *)p + f->strs[i].off, f->strs[i].cap);
	return why;
}

int kind_counts_fit(const struct kind_format *f, const struct kind_cursor *c, const char *name,
		    struct dcpi_err *err)
{
	size_t body = c->size - c->pos, rem = body, len = 0, k = 0, nk = 0;
	char what[256];
	int fits = 1;

	for (size_t i = 0; i < f->nfields; i++)
		nk += f->fields[i].min != 0;
	for (size_t i = 0; i < f->nfields; i++) {
		const struct kind_field *d = &f->fields[i];
		uint64_t n;

		if (!d->min)
			continue;
		n = get64(c->buf + d->at);
		if (fits && n > rem / d->min)
			fits = 0;
		else if (fits)
			rem -= (size_t)n * d->min;
		if (len < sizeof(what))
			len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%" PRIu64 " %s",
						!k ? "" : k + 1 < nk ? ", " : " and ", n,
						d->noun);
		k++;
	}
	if (fits)
		return 0;
	return dcpi_errf(err, -EINVAL, "%s: %s do not fit in %zu bytes of body", name, what,
			 body);
}

void kind_copy_head(const struct kind_format *f, void *dst, const void *src)
{
	f->kind->init(dst);
	memcpy((char *)dst + f->image_at, (const char *)src + f->image_at,
	       sizeof(struct prof_image_id));
	for (size_t i = 0; i < f->nfields; i++)
		if (f->fields[i].role == KIND_KEPT)
			memcpy((char *)dst + f->fields[i].off,
			       (const char *)src + f->fields[i].off, f->fields[i].width);
	for (size_t i = 0; i < f->nstrs; i++)
		memcpy((char *)dst + f->strs[i].off, (const char *)src + f->strs[i].off,
		       f->strs[i].cap);
}

int kind_copy(const struct kind_format *f, void *dst, const void *src)
{
	kind_copy_head(f, dst, src);
	return f->kind->merge(dst, src, NULL) ? -ENOMEM : 0;
}

const char *kind_check_head(const struct kind_format *f, const void *p)
{
	const char *why = kind_check_id((const void *)((const char *)p + f->image_at));

	return why ? why : f->head(p);
}

int kind_encode(const struct kind_format *f, const void *p, const struct prof_image_id *id,
		uint8_t **buf, size_t *len, struct dcpi_err *err)
{
	const char *why = kind_check_id(id);
	size_t size, pos;
	uint8_t *b;

	*buf = NULL;
	*len = 0;
	if (!why)
		why = f->check(p);
	if (why)
		return kind_cannot(f, id, why, err);
	size = f->size(p);
	if (kind_alloc(f, id, size, &b, err))
		return -ENOMEM;
	pos = kind_put_string(b, f->hdr_size, id->build_id);
	pos = kind_put_string(b, pos, id->path);
	pos = f->put(p, b, pos);
	if (pos != size) {
		free(b);
		return dcpi_errf(err, -EIO, "%s: %s: encoded %zu bytes of %zu", id->path, f->noun,
				 pos, size);
	}
	return kind_sealed(b, size, buf, len);
}

static int count_fold(void *into, const void *from, void *ctx)
{
	size_t off = *(const size_t *)ctx;
	uint64_t d, s;

	memcpy(&d, (char *)into + off, sizeof(d));
	memcpy(&s, (const char *)from + off, sizeof(s));
	if (d + s < s)
		return -EOVERFLOW;
	d += s;
	memcpy((char *)into + off, &d, sizeof(d));
	return 0;
}

int kind_sort_sum(void *v, size_t *n, size_t size, int (*cmp)(const void *, const void *),
		  size_t off)
{
	return dcpi_sort_fold(v, n, size, cmp, count_fold, &off);
}

size_t kind_drop_zeros(void *v, size_t n, size_t size, size_t off)
{
	char *b = v;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t c;

		memcpy(&c, b + i * size + off, sizeof(c));
		if (c && k++ != i)
			memcpy(b + (k - 1) * size, b + i * size, size);
	}
	return k;
}

int kind_check_counts(const void *v, size_t n, size_t size,
		      int (*cmp)(const void *, const void *), size_t off, uint64_t *sum)
{
	const char *b = v;
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t c;

		if (i && cmp(b + (i - 1) * size, b + i * size) >= 0)
			return KIND_UNSORTED;
		memcpy(&c, b + i * size + off, sizeof(c));
		if (!c || (sum && total + c < total))
			return KIND_BAD_COUNT;
		total += c;
	}
	if (sum)
		*sum = total;
	return 0;
}
