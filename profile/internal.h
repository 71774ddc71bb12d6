/*
 * internal.h - helpers shared by the files of profile/ and nothing else:
 * atomic file replacement, whole-file reads, the image-identity file key and
 * the order-independent combination of weighted means used by every merge.
 */
#ifndef DCPI_PROFILE_INTERNAL_H
#define DCPI_PROFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"

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

#endif /* DCPI_PROFILE_INTERNAL_H */
