/*
 * internal.h - helpers shared by the files of profile/ and nothing else:
 * atomic file replacement, whole-file reads, the image-identity file key and
 * the order-independent combination of weighted means used by every merge.
 */
#ifndef DCPI_PROFILE_INTERNAL_H
#define DCPI_PROFILE_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dcpi/profile.h"

#include <limits.h>

/* A file written in the open transaction, not yet renamed into place. */
struct pending {
	char tmp[NAME_MAX + 1];
	char name[NAME_MAX + 1];
};

struct prof_db {
	char *path;
	int fd;			/* the database directory */
	int txn_fd;		/* the locked epoch of the open transaction, -1 if none */
	int txn_implicit;	/* opened by a single write, committed by it */
	char txn_epoch[32];
	struct pending *pend;
	size_t npend, cappend;
	char notes[2048];	/* what was skipped or set aside, one per line */
	char **damaged;		/* profiles a reader skipped as damaged (paths) */
	size_t ndamaged;
};

struct prof_view {
	int fd;
	char dir[PATH_MAX];
	struct pending *pj;	/* a journal's renames not yet done */
	size_t nj;
	struct prof_db *db;
};

/* A handle on an existing epoch directory, never through a link (db.c). */
int prof_epoch_open(struct prof_db *db, const char *epoch, struct dcpi_err *err);

/* txn.c: finish or clean what a killed writer left (the epoch locked). */
int prof_epoch_recover(struct prof_db *db, int efd, const char *epoch, struct dcpi_err *err);
/* Enter epoch's transaction (the open one, or one for this write only),
 * write a file into it, leave it (committing one opened by enter). */
int prof_txn_enter(struct prof_db *db, const char *epoch, struct dcpi_err *err);
int prof_txn_write(struct prof_db *db, const char *name, const void *buf, size_t len,
		   struct dcpi_err *err);
int prof_txn_leave(struct prof_db *db, int rc, struct dcpi_err *err);
/* The open transaction's pending write of name, or NULL. */
struct pending *prof_txn_pending(struct prof_db *db, const char *name);
/* An epoch as last committed: open, read one file (shown: its path), close. */
int prof_view_open(struct prof_db *db, const char *epoch, struct prof_view *v,
		   struct dcpi_err *err);
int prof_view_read(struct prof_view *v, const char *name, uint8_t **buf, size_t *len,
		   char *shown, size_t shownlen, struct dcpi_err *err);
void prof_view_close(struct prof_view *v);

/* Largest profile or meta file a reader accepts (guards huge allocations). */
#define PROF_FILE_MAX ((size_t)1 << 30)

/* Write buf to path atomically: temp file in the same dir, fsync, rename,
 * fsync the directory. */
int prof_write_atomic(const char *path, const void *buf, size_t len, struct dcpi_err *err);
/* Read a whole file into a malloc'd buffer (NUL-terminated for text use). */
int prof_read_all(const char *path, uint8_t **buf, size_t *len, struct dcpi_err *err);

/*
 * Merge two weighted means (value va with weight wa, vb with wb) so the
 * result does not depend on the order of the operands: equal values stay
 * exact, a zero weight carries no information, two zero weights keep the
 * larger value.
 */
double prof_mean_combine(double va, double wa, double vb, double wb);

/* "<build-id or hash of path|size|mtime>.<sanitized event>.prof" */
int prof_file_name(const struct prof_image_id *id, const char *event, char *out,
		   size_t len);

/* The directory of an existing epoch of db (name checked) into path. */
int prof_epoch_dir(struct prof_db *db, const char *epoch, char *path, size_t len,
		   struct dcpi_err *err);

/* dst += src for epoch metadata: counts add, time span widens, the rest
 * combines order-independently (meta.c). */
void prof_meta_merge(struct prof_epoch_meta *dst, const struct prof_epoch_meta *src);

/* Little-endian fixed-width fields and varint sizes of the file formats. */
static inline void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static inline uint64_t get64(const uint8_t *p)
{
	return dcpi_get_le64(p);
}

static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * A per-image profile kind kept in its own files (".paths", ".values"):
 * what kind.c needs of it to write, read and merge them.  size is that of
 * one profile in memory; decode starts from an initialized profile and
 * leaves it freed on error; copy makes a normalized copy (-ENOMEM).
 */
struct prof_kind {
	const char *suffix;
	size_t size;
	void (*init)(void *p);
	void (*free)(void *p);
	int (*copy)(void *dst, const void *src);
	int (*merge)(void *dst, const void *src, struct dcpi_err *err);
	int (*encode)(const void *p, uint8_t **buf, size_t *len, struct dcpi_err *err);
	int (*decode)(const uint8_t *buf, size_t len, const char *name, void *p,
		      struct dcpi_err *err);
	const struct prof_image_id *(*image)(const void *p);
};

/* Doubles as their bits in the files, and back. */
static inline uint64_t dbl_bits(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

static inline double bits_dbl(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* The n records of size bytes at v sorted by cmp, the uint64_t counts at
 * byte off of the records cmp finds equal summed into the first (util.h's
 * dcpi_sort_fold): 0, or -EOVERFLOW where a sum would wrap. */
int kind_sort_sum(void *v, size_t *n, size_t size, int (*cmp)(const void *, const void *),
		  size_t off);
/* Are the n records of size bytes at v sorted strictly by cmp, each with a
 * non-zero uint64_t count at byte off (sum non-NULL: their sum, into *sum,
 * within 64 bits)?  0 yes, else which check the first bad record fails. */
enum { KIND_UNSORTED = 1, KIND_BAD_COUNT };
int kind_check_counts(const void *v, size_t n, size_t size,
		      int (*cmp)(const void *, const void *), size_t off, uint64_t *sum);

/* Of the n records of size bytes at v, those whose uint64_t count at byte
 * off is 0 removed, the others kept in order: how many are left. */
size_t kind_drop_zeros(void *v, size_t n, size_t size, size_t off);

/* The fixed head of a kind's file: magic (8 bytes), then these. */
#define KIND_OFF_VERSION 8
#define KIND_OFF_CRC 12
#define KIND_OFF_SIZE 16
/* CRC-32C of bytes [0, 12) and [16, size) */
uint32_t kind_crc(const uint8_t *buf, size_t size);
/* Magic, header size, version, size and checksum, each error naming the
 * file; what: "a dcpi path profile". */
int kind_check_header(const uint8_t *buf, size_t len, const char *name, const char *magic,
		      const char *what, size_t hdr_size, uint32_t version, struct dcpi_err *err);
/* The header's magic, version and size into b (the CRC: kind_seal). */
void kind_put_header(uint8_t *b, const char *magic, uint32_t version, size_t size);
/* The CRC-32C of the size bytes at b into its header. */
void kind_seal(uint8_t *b, size_t size);

/* Strings in the files: a varint length, then the bytes (no NUL); the
 * bytes one takes (a string checked to be under PROF_PATH_MAX). */
size_t kind_string_len(const char *s);
size_t kind_put_string(uint8_t *b, size_t pos, const char *s);
/* A reader's place in a file's bytes. */
struct kind_cursor {
	const uint8_t *buf;
	size_t size, pos;
};
/* The next varint into *v: 1, or 0 when truncated or overlong. */
int kind_next(struct kind_cursor *c, uint64_t *v);
/* The next string into out (cap bytes with the NUL): NULL, or why not. */
const char *kind_get_string(struct kind_cursor *c, char *out, size_t cap);
/* What every file requires of an image identity: NULL, or why not. */
const char *kind_check_id(const struct prof_image_id *id);
/* A profile's table of the images its records name (call graphs' frames,
 * data profiles' objects): the tag of id, 0 for the profile's own image,
 * 1.. for imgs[0..n), added when absent; -EOVERFLOW past max, -ENOMEM.
 * kind_image_of: the image of a tag, NULL when none. */
int kind_image_tag(const struct prof_image_id *own, struct prof_image_id **imgs, size_t *n,
		   size_t max, const struct prof_image_id *id);
const struct prof_image_id *kind_image_of(const struct prof_image_id *own,
					  const struct prof_image_id *imgs, size_t n, uint32_t tag);
/* A varint at pos of b: the position after it. */
size_t kind_put_varint(uint8_t *b, size_t pos, uint64_t v);
/* Image tables in the files: each identity as its size, mtime, build-id and
 * path.  kind_id_len: the bytes one takes; kind_get_ids: n of them into v
 * (*got: how many), NULL or why not; kind_get_id_names: the build-id and
 * the path alone, as a file's own image follows its header. */
size_t kind_id_len(const struct prof_image_id *id);
size_t kind_put_ids(uint8_t *b, size_t pos, const struct prof_image_id *v, size_t n);
const char *kind_get_ids(struct kind_cursor *c, struct prof_image_id *v, uint64_t n,
			 size_t *got);
const char *kind_get_id_names(struct kind_cursor *c, struct prof_image_id *id);
/* The image table imgs[0..n) in prof_image_id_cmp order, duplicates and
 * own folded, so that merges in any order give the same bytes; retag(p,
 * map) renumbers p's tags (old tag t becomes map[t], t in [0, n]).  Nothing
 * when n is 0; -ENOMEM. */
int kind_images_order(const struct prof_image_id *own, struct prof_image_id **imgs, size_t *n,
		      void (*retag)(void *p, const uint32_t *map), void *p);

/*
 * The layout of a kind's file around its own fields: the header (magic,
 * version, CRC, size), the image's size and mtime at off_image and
 * off_image + 8, the header hdr_size bytes long.  what names the file in a
 * bad-magic error ("a dcpi data profile"), noun the profile in the
 * others ("data profile").  Kinds whose body follows the image's build-id
 * and path (call graphs, data profiles) give their callbacks on void
 * pointers to kind_encode and kind_decode: check (NULL, or why p cannot be
 * written), size (the bytes of its file), put (its own header fields and
 * its body from pos: the position after them) and get (its own header
 * fields from c->buf and the body at c: NULL, or why not; "out of memory"
 * gives -ENOMEM).  Kinds with their own strings give kind_decode_parts
 * their kind (its init and free), the profile's fields kept as they are
 * in the header (fields: nfields of them) and its strings in the order
 * they follow the header (strs: nstrs of them), all of which kind.c
 * writes (kind_put_fields), reads (kind_get_fields) and copies
 * (kind_copy_head); head (NULL, or why the header so read is bad, its
 * image checked first by kind.c) and body (the records at c: 0 or a
 * negative errno, errors naming name).  Every kind's own image is checked
 * by kind.c (kind_check_id) before check, get and head.
 */
struct kind_field {
	size_t at;		/* in the file */
	size_t off, width;	/* in the profile: a member of 4 or 8 bytes */
	int role;		/* KIND_KEPT, ... */
	size_t min;		/* a count's: bytes a record takes at least (0: not
				 * bounded by kind_counts_fit) */
	const char *noun;	/* a count's records, plural ("edges") */
};
/* A field written, read and copied as it is; a count of records (or their
 * sum), written only (decode_body reads it, allocating first; a copy adds
 * the records); a sum, written and read, not copied (the kind's merge adds
 * it). */
enum { KIND_KEPT, KIND_NRECORDS, KIND_SUMMED };
#define KIND_MEMBER(type, member, at_, role_, min_, noun_)				\
	{ at_, offsetof(struct type, member), sizeof(((struct type *)0)->member), role_,	\
	  min_, noun_ }
#define KIND_FIELD(type, member, at_) KIND_MEMBER(type, member, at_, KIND_KEPT, 0, NULL)
#define KIND_COUNT(type, member, at_, min_, noun_)					\
	KIND_MEMBER(type, member, at_, KIND_NRECORDS, min_, noun_)
#define KIND_SUM(type, member, at_) KIND_MEMBER(type, member, at_, KIND_SUMMED, 0, NULL)
struct kind_str {
	size_t off, cap;	/* a char array of the profile */
};
#define KIND_STR(type, member)								\
	{ offsetof(struct type, member), sizeof(((struct type *)0)->member) }
struct kind_format {
	const char *magic;
	const char *what;
	const char *noun;
	size_t hdr_size;
	uint32_t version;
	size_t off_image;
	const char *(*check)(const void *p);
	size_t (*size)(const void *p);
	size_t (*put)(const void *p, uint8_t *b, size_t pos);
	const char *(*get)(struct kind_cursor *c, void *p);
	const struct prof_kind *kind;
	const struct kind_field *fields;
	size_t nfields;
	const struct kind_str *strs;
	size_t nstrs;
	size_t image_at;	/* of the struct prof_image_id in the profile */
	const char *(*head)(const void *p);
	int (*body)(struct kind_cursor *c, const char *name, void *p, struct dcpi_err *err);
};
/* The header with the image's size and mtime into the size bytes at b
 * (the kind's own fields, the CRC: the caller's). */
void kind_put_head(const struct kind_format *f, uint8_t *b, size_t size,
		   const struct prof_image_id *id);
/* The encoder's errors, naming id's path and f's noun: why p cannot be
 * encoded (-EINVAL); kind_alloc: b, size zeroed bytes with the head
 * (kind_put_head) written, or -ENOMEM. */
int kind_cannot(const struct kind_format *f, const struct prof_image_id *id, const char *why,
		struct dcpi_err *err);
int kind_alloc(const struct kind_format *f, const struct prof_image_id *id, size_t size,
	       uint8_t **b, struct dcpi_err *err);
/* The encoder's end: b sealed (kind_seal) and handed over as *buf, *len; 0. */
int kind_sealed(uint8_t *b, size_t size, uint8_t **buf, size_t *len);
/* The header of c's bytes checked (errors naming name), the image's size
 * and mtime into id, c at the end of the header: 0 or -EINVAL. */
int kind_decode_head(const struct kind_format *f, struct kind_cursor *c, const char *name,
		     struct prof_image_id *id, struct dcpi_err *err);
/* buf into p (initialized by the caller, who frees it on error), its image
 * into id; name NULL: "(buffer)". */
int kind_decode(const struct kind_format *f, const uint8_t *buf, size_t len, const char *name,
		void *p, struct prof_image_id *id, struct dcpi_err *err);
/*
 * The struct kind_format PFX_format of a kind decoded by kind_decode_parts:
 * its struct prof_kind PFX_kind (PROF_KIND_DEFINE, later in the file), its
 * static arrays PFX_fields and PFX_strs (earlier in the file), its static
 * check_head and decode_body (the callbacks head and body above); and its
 * PFX_decode (include/dcpi/profile.h) through them.
 */
#define PROF_KIND_FORMAT(pfx, type, magic_, what_, noun_, hdr, ver, off)		\
static const struct prof_kind pfx##_kind;						\
static const char *check_head(const void *v);						\
static int decode_body(struct kind_cursor *c, const char *name, void *v,		\
		       struct dcpi_err *err);						\
static const struct kind_format pfx##_format = {					\
	.magic = magic_, .what = what_, .noun = noun_, .hdr_size = hdr, .version = ver,	\
	.off_image = off, .kind = &pfx##_kind, .head = check_head, .body = decode_body,	\
	.fields = pfx##_fields, .nfields = sizeof(pfx##_fields) / sizeof(pfx##_fields[0]),	\
	.strs = pfx##_strs, .nstrs = sizeof(pfx##_strs) / sizeof(pfx##_strs[0]),	\
	.image_at = offsetof(struct type, image),					\
};											\
int pfx##_decode(const uint8_t *buf, size_t len, const char *name, struct type *p,	\
		 struct dcpi_err *err)							\
{											\
	return kind_decode_parts(&pfx##_format, buf, len, name, p, &p->image, err);	\
}
/* buf into p through f's fields, strings, head and body, its image into
 * id; p initialized first, and again (freed) on error; name NULL:
 * "(buffer)". */
int kind_decode_parts(const struct kind_format *f, const uint8_t *buf, size_t len,
		      const char *name, void *p, struct prof_image_id *id,
		      struct dcpi_err *err);
/* f's fields and strings of p: the bytes the header and the strings take;
 * written into b (the position after the strings); read from c (NULL, or
 * why not); copied from src into dst, initialized first, with its image. */
size_t kind_head_len(const struct kind_format *f, const void *p);
size_t kind_put_fields(const struct kind_format *f, const void *p, uint8_t *b);
const char *kind_get_fields(const struct kind_format *f, struct kind_cursor *c, void *p);
void kind_copy_head(const struct kind_format *f, void *dst, const void *src);
/* Do the counts of f's header (those with a min, in the table's order) fit
 * in the body at c, each record taking its min bytes at least?  0, or
 * -EINVAL naming name, the counts and the body's size. */
int kind_counts_fit(const struct kind_format *f, const struct kind_cursor *c, const char *name,
		    struct dcpi_err *err);
/* dst, a copy of src through f: its header (kind_copy_head), then src
 * merged into it (f's kind's merge): 0 or -ENOMEM. */
int kind_copy(const struct kind_format *f, void *dst, const void *src);
/* Why p's header cannot be written or was read wrong (its image, then
 * f's head), or NULL. */
const char *kind_check_head(const struct kind_format *f, const void *p);
/* p, whose image is id, into a malloc'd *buf of *len bytes. */
int kind_encode(const struct kind_format *f, const void *p, const struct prof_image_id *id,
		uint8_t **buf, size_t *len, struct dcpi_err *err);
/* Order identities by (path, size, mtime), so that keeping the smaller on
 * a merge is commutative and associative (profile.c). */
int prof_image_id_cmp(const struct prof_image_id *a, const struct prof_image_id *b);

/* An exclusive flock on the directory holding path (format.c), serializing
 * read-merge-write of its files across processes: the descriptor to close. */
int prof_lock_dir(const char *path, struct dcpi_err *err);
int kind_file_write(const struct prof_kind *k, const char *path, const void *p,
		    struct dcpi_err *err);
int kind_file_read(const struct prof_kind *k, const char *path, void *p,
		   struct dcpi_err *err);
int kind_file_merge(const struct prof_kind *k, const char *path, const void *p,
		    struct dcpi_err *err);
int kind_epoch_write(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		     const void *p, struct dcpi_err *err);
int kind_epoch_read(const struct prof_kind *k, struct prof_db *db, const char *epoch,
		    void **out, size_t *n, struct dcpi_err *err);
void kind_free_all(const struct prof_kind *k, void *v, size_t n);
int kind_epoch_merge(const struct prof_kind *k, struct prof_db *dst, const char *dst_epoch,
		     struct prof_db *src, const char *src_epoch, struct dcpi_err *err);

/*
 * The struct prof_kind PFX_kind of a kind whose profile is struct TYPE
 * (image in .image) and whose functions are PFX_profile_init,
 * PFX_profile_free, PFX_copy, PFX_profile_merge, PFX_encode and PFX_decode:
 * the callbacks on void pointers kind.c calls, each calling its typed one.
 */
#define PROF_KIND_DEFINE(pfx, type, sfx)						\
static void pfx##_k_init(void *p) { pfx##_profile_init(p); }				\
static void pfx##_k_free(void *p) { pfx##_profile_free(p); }				\
static int pfx##_k_copy(void *dst, const void *src) { return pfx##_copy(dst, src); }	\
static int pfx##_k_merge(void *dst, const void *src, struct dcpi_err *err)		\
{											\
	return pfx##_profile_merge(dst, src, err);					\
}											\
static int pfx##_k_encode(const void *p, uint8_t **buf, size_t *len, struct dcpi_err *err) \
{											\
	return pfx##_encode(p, buf, len, err);						\
}											\
static int pfx##_k_decode(const uint8_t *buf, size_t len, const char *name, void *p,	\
			  struct dcpi_err *err)						\
{											\
	return pfx##_decode(buf, len, name, p, err);					\
}											\
static const struct prof_image_id *pfx##_k_image(const void *p)			\
{											\
	return &((const struct type *)p)->image;					\
}											\
static const struct prof_kind pfx##_kind = {						\
	sfx, sizeof(struct type), pfx##_k_init, pfx##_k_free, pfx##_k_copy,		\
	pfx##_k_merge, pfx##_k_encode, pfx##_k_decode, pfx##_k_image,			\
}

/* PFX_file_write, PFX_file_read and PFX_file_merge (include/dcpi/profile.h,
 * paths.h, values.h) through kind.c, for a kind of PROF_KIND_DEFINE. */
#define PROF_KIND_FILE_API(pfx, type)							\
int pfx##_file_write(const char *path, const struct type *p, struct dcpi_err *err)	\
{											\
	return kind_file_write(&pfx##_kind, path, p, err);				\
}											\
int pfx##_file_read(const char *path, struct type *p, struct dcpi_err *err)		\
{											\
	return kind_file_read(&pfx##_kind, path, p, err);				\
}											\
int pfx##_file_merge(const char *path, const struct type *p, struct dcpi_err *err)	\
{											\
	return kind_file_merge(&pfx##_kind, path, p, err);				\
}

/* PFX_epoch_write, PFX_profiles_free, PFX_epoch_read and PFX_epoch_merge
 * (include/dcpi/paths.h, values.h) through kind.c. */
/* Remember a damaged file of the database once (prof_db_damaged lists them). */
void prof_db_add_damaged(struct prof_db *db, const char *path);

/* PFX_copy through kind_copy, for a kind of PROF_KIND_FORMAT. */
#define PROF_KIND_COPY(pfx, type)							\
static int pfx##_copy(struct type *dst, const struct type *src)			\
{											\
	return kind_copy(&pfx##_format, dst, src);					\
}

#define PROF_KIND_EPOCH_API(pfx, type)							\
int pfx##_epoch_write(struct prof_db *db, const char *epoch, const struct type *p,	\
		      struct dcpi_err *err)						\
{											\
	return kind_epoch_write(&pfx##_kind, db, epoch, p, err);			\
}											\
void pfx##_profiles_free(struct type *p, size_t n)					\
{											\
	kind_free_all(&pfx##_kind, p, n);						\
}											\
int pfx##_epoch_read(struct prof_db *db, const char *epoch, struct type **out, size_t *n, \
		     struct dcpi_err *err)						\
{											\
	void *v;									\
	int rc = kind_epoch_read(&pfx##_kind, db, epoch, &v, n, err);			\
											\
	*out = v;									\
	return rc;									\
}											\
int pfx##_epoch_merge(struct prof_db *dst, const char *dst_epoch, struct prof_db *src,	\
		      const char *src_epoch, struct dcpi_err *err)			\
{											\
	return kind_epoch_merge(&pfx##_kind, dst, dst_epoch, src, src_epoch, err);	\
}

/* PROF_KIND_DEFINE, PROF_KIND_FILE_API and PROF_KIND_EPOCH_API together:
 * the whole of a kind's files and epochs through kind.c. */
#define PROF_KIND_API(pfx, type, sfx)							\
PROF_KIND_DEFINE(pfx, type, sfx);							\
PROF_KIND_FILE_API(pfx, type)								\
PROF_KIND_EPOCH_API(pfx, type)

#endif /* DCPI_PROFILE_INTERNAL_H */
