/*
 * util.h - small things every part of dcpi shares: error values and messages.
 *
 * Library functions return 0 on success and a negative errno-style code on
 * failure, and fill a struct dcpi_err with a message that names the file and
 * the reason ("profile.dcpi: bad checksum").  Only tools print and exit.
 */
#ifndef DCPI_UTIL_H
#define DCPI_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_ERR_MAX 512

struct dcpi_err {
	int code;			/* negative errno-style code, 0 if none */
	char msg[DCPI_ERR_MAX];		/* "<file>: <reason>" */
};

/*
 * Record an error and return code (which should be negative), so callers can
 * write `return dcpi_errf(err, -EINVAL, "%s: bad magic", path);`.
 * err may be NULL.
 */
int dcpi_errf(struct dcpi_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Clear an error. */
void dcpi_err_clear(struct dcpi_err *err);

/* CRC-32C (Castagnoli) of buf, continuing from crc (start with 0). */
uint32_t dcpi_crc32c(uint32_t crc, const void *buf, size_t len);

/* Unsigned LEB128 varints.  put returns bytes written (at most 10);
 * get returns bytes read, or 0 if the input ends or overflows 64 bits. */
size_t dcpi_varint_put(uint8_t *out, uint64_t v);
size_t dcpi_varint_get(const uint8_t *in, size_t avail, uint64_t *v);
/* Signed LEB128 (DWARF's SLEB128), the same way. */
size_t dcpi_svarint_get(const uint8_t *in, size_t avail, int64_t *v);

/*
 * qsort that accepts an empty array given as NULL (qsort(NULL, 0, ...) is
 * undefined behaviour, and UBSan says so).  Use it everywhere in the library.
 */
void dcpi_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* qsort's comparison of two doubles, ascending (NaNs as equal to all). */
int dcpi_cmp_double(const void *a, const void *b);
/*
 * The n records of size bytes at base sorted by cmp (dcpi_qsort), each run
 * that cmp finds equal folded into its first record by fold(into, from, ctx),
 * in the sorted order: 0 with *n the records left, or fold's non-zero result
 * (the records then partly folded, *n as it was).
 */
int dcpi_sort_fold(void *base, size_t *n, size_t size, int (*cmp)(const void *, const void *),
		   int (*fold)(void *into, const void *from, void *ctx), void *ctx);
/*
 * Records ordered by a list of unsigned fields, most significant first: the
 * first of the n pairs a[i], b[i] that differ decides (-1, 0 or 1).  A sort
 * order is its list, e.g. dcpi_cmp_keys((uint64_t[]){ x->lo, x->hi },
 * (uint64_t[]){ y->lo, y->hi }, 2).
 */
static inline int dcpi_cmp_keys(const uint64_t *a, const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* The value of the hex digit c (either case), or -1. */
static inline int dcpi_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A new zeroed element at the end of the array *v of *n elements of size
 * bytes (capacity *cap, doubled as needed); NULL when out of memory. */
void *dcpi_append(void **v, size_t *n, size_t *cap, size_t size);
/* Room for at least need elements of size bytes in *v (capacity *cap,
 * doubled from 16 as needed; the new elements are not cleared): 0, or
 * -ENOMEM with *v and *cap as they were. */
int dcpi_grow(void **v, size_t *cap, size_t need, size_t size);
/* As dcpi_grow, the new elements (from *cap to the new *cap) cleared. */
int dcpi_grow_zero(void **v, size_t *cap, size_t need, size_t size);

/* Bytes appended to a buffer that grows (dcpi_grow) as they come; when an
 * allocation fails, oom is set and what follows is dropped, for the writer
 * to check once at the end.  Start from { 0 }; free p. */
struct dcpi_buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};
void dcpi_buf_put(struct dcpi_buf *b, const void *v, size_t n);

/*
 * Binary search in the array base of n elements of size bytes, sorted by
 * the uint64_t at byte offset off of each (offsetof(struct x, field)):
 * lower_bound is the first index whose key is >= key, upper_bound the
 * first whose key is > key; n when there is none.
 */
size_t dcpi_lower_bound(const void *base, size_t n, size_t size, size_t off, uint64_t key);
size_t dcpi_upper_bound(const void *base, size_t n, size_t size, size_t off, uint64_t key);

/* The 2, 4 or 8 bytes at p as a little-endian number (the file formats' words,
 * and perf.data's on x86-64); p need not be aligned. */
static inline uint16_t dcpi_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t dcpi_get_le32(const uint8_t *p)
{
	return (uint32_t)dcpi_get_le16(p) | (uint32_t)dcpi_get_le16(p + 2) << 16;
}

static inline uint64_t dcpi_get_le64(const uint8_t *p)
{
	return (uint64_t)dcpi_get_le32(p) | (uint64_t)dcpi_get_le32(p + 4) << 32;
}

/* MD5 (RFC 1321) of len bytes; and the low 64 bits of it read little endian,
 * which is how LLVM names a function by its name (a GUID, llvm::MD5Hash). */
void dcpi_md5(const void *data, size_t len, uint8_t out[16]);
uint64_t dcpi_md5_guid(const char *s, size_t len);

/* Monotonic and wall clocks in nanoseconds. */
uint64_t dcpi_now_ns(void);
uint64_t dcpi_wall_ns(void);

#endif /* DCPI_UTIL_H */
