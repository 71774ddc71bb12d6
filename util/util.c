/*
 * util.c - error values, CRC-32C, varints and clocks shared by every part.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/util.h"

int dcpi_errf(struct dcpi_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void dcpi_err_clear(struct dcpi_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

/* Table-driven CRC-32C, reflected polynomial 0x82F63B78. */
static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = 1;
}

uint32_t dcpi_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

size_t dcpi_varint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

size_t dcpi_varint_get(const uint8_t *in, size_t avail, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	for (size_t i = 0; i < avail && i < 10; i++) {
		uint64_t b = in[i] & 0x7f;

		if (shift == 63 && b > 1)
			return 0;
		r |= b << shift;
		if (!(in[i] & 0x80)) {
			*v = r;
			return i + 1;
		}
		shift += 7;
	}
	return 0;
}

size_t dcpi_svarint_get(const uint8_t *in, size_t avail, int64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	for (size_t i = 0; i < avail && i < 10; i++) {
		r |= (uint64_t)(in[i] & 0x7f) << shift;
		shift += 7;
		if (!(in[i] & 0x80)) {
			if (shift < 64 && (in[i] & 0x40))
				r |= ~(uint64_t)0 << shift;
			*v = (int64_t)r;
			return i + 1;
		}
	}
	return 0;
}

void dcpi_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

int dcpi_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int dcpi_sort_fold(void *base, size_t *n, size_t size, int (*cmp)(const void *, const void *),
		   int (*fold)(void *into, const void *from, void *ctx), void *ctx)
{
	char *v = base;
	size_t k = 0;

	dcpi_qsort(base, *n, size, cmp);
	for (size_t i = 0; i < *n; i++) {
		char *e = v + i * size;
		int rc;

		if (k && !cmp(v + (k - 1) * size, e)) {
			rc = fold(v + (k - 1) * size, e, ctx);
			if (rc)
				return rc;
		} else if (k++ != i) {
			memcpy(v + (k - 1) * size, e, size);
		}
	}
	*n = k;
	return 0;
}

uint64_t dcpi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dcpi_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void *dcpi_append(void **v, size_t *n, size_t *cap, size_t size)
{
	char *e;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		void *nv;

		if (c > SIZE_MAX / size || !(nv = realloc(*v, c * size)))
			return NULL;
		*v = nv;
		*cap = c;
	}
	e = (char *)*v + (*n)++ * size;
	memset(e, 0, size);
	return e;
}

int dcpi_grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *nv;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -ENOMEM;
		c *= 2;
	}
	nv = realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

int dcpi_grow_zero(void **v, size_t *cap, size_t need, size_t size)
{
	size_t old = *cap;

	if (dcpi_grow(v, cap, need, size))
		return -ENOMEM;
	memset((char *)*v + old * size, 0, (*cap - old) * size);
	return 0;
}

void dcpi_buf_put(struct dcpi_buf *b, const void *v, size_t n)
{
	if (b->oom || !n)
		return;
	if (dcpi_grow((void **)&b->p, &b->cap, b->n + n, 1)) {
		b->oom = 1;
		return;
	}
	memcpy(b->p + b->n, v, n);
	b->n += n;
}

/* The first index whose key is above key (upper) or not below it. */
static size_t bound(const void *base, size_t n, size_t size, size_t off, uint64_t key,
		    int upper)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + mid * size + off, sizeof(k));
		if (k < key || (upper && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t dcpi_lower_bound(const void *base, size_t n, size_t size, size_t off, uint64_t key)
{
	return bound(base, n, size, off, key, 0);
}

size_t dcpi_upper_bound(const void *base, size_t n, size_t size, size_t off, uint64_t key)
{
	return bound(base, n, size, off, key, 1);
}
