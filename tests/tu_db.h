/*
 * tu_db.h - what the tests of the profile kinds share (test_profile.c,
 * test_paths.c, test_values.c): a seeded generator, image identities, the
 * checks every kind's decoder must pass on a damaged file (profile/kind.c's
 * header), and a temporary directory of databases.
 * Include after cmocka.h.
 */
#ifndef DCPI_TU_DB_H
#define DCPI_TU_DB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"
#include "testutil.h"

/* xorshift64*: deterministic across runs and machines. */
static uint64_t rng_state;

static inline void rng_seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static inline uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* Image 0 has a build-id; image n > 0 only a path, size and mtime. */
static inline void make_id(struct prof_image_id *id, int which)
{
	memset(id, 0, sizeof(*id));
	if (which == 0) {
		strcpy(id->build_id, "0123456789abcdef0123456789abcdef01234567");
		strcpy(id->path, "/usr/bin/bc");
		id->size = 90112;
		id->mtime = 1700000000;
	} else {
		snprintf(id->path, sizeof(id->path), "/opt/lib%d.so", which);
		id->size = 4096u * (unsigned)which;
		id->mtime = 1600000000 + which;
	}
}

/* Whether the kind's decoder rejects len bytes at buf naming the file and,
 * unless reason is NULL, giving reason. */
typedef int (*tu_decode_fails)(const uint8_t *buf, size_t len, const char *reason);

/* A sample file of the kind, encoded into *buf (malloc'd), *len bytes. */
typedef void (*tu_encode_sample)(uint8_t **buf, size_t *len);

/* Whether err's message starts with "file: " and, unless reason is NULL,
 * holds reason; what is wrong with it goes to cmocka's error output. */
static inline int tu_err_says(const struct dcpi_err *err, const char *file, const char *reason)
{
	size_t lf = strlen(file);

	if (strncmp(err->msg, file, lf) || strncmp(err->msg + lf, ": ", 2)) {
		print_error("message does not start with the file: '%s'\n", err->msg);
		return 0;
	}
	if (reason && !strstr(err->msg, reason)) {
		print_error("expected '%s' in '%s'\n", reason, err->msg);
		return 0;
	}
	return 1;
}

/* Flip bits of every byte of the sample file (every step-th bit of each):
 * each field of the header is detected with its reason, the rest by the CRC. */
static inline void tu_flip_every_byte(tu_encode_sample encode, unsigned step,
				      tu_decode_fails fails)
{
	uint8_t *buf;
	size_t len;

	encode(&buf, &len);
	for (size_t i = 0; i < len; i++) {
		const char *reason = "bad checksum";

		if (i < 8)
			reason = "bad magic";
		else if (i < 12)
			reason = "unsupported version";
		else if (i >= 16 && i < 24)
			reason = NULL;	/* size: truncated or trailing garbage */
		for (unsigned bit = 0; bit < 8; bit += step) {
			buf[i] ^= (uint8_t)(1u << bit);
			assert_true(fails(buf, len, reason));
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	free(buf);
}

/* Every prefix of the sample file is truncated, 1 to 16 bytes more are
 * garbage. */
static inline void tu_truncate_and_append(tu_encode_sample encode, tu_decode_fails fails)
{
	uint8_t *buf, *big;
	size_t len;

	encode(&buf, &len);
	for (size_t l = 0; l < len; l++)
		assert_true(fails(buf, l, "truncated"));
	big = malloc(len + 16);
	assert_non_null(big);
	memcpy(big, buf, len);
	memset(big + len, 0, 16);
	for (size_t extra = 1; extra <= 16; extra++)
		assert_true(fails(big, len + extra, "trailing garbage"));
	free(big);
	free(buf);
}

/* A directory for the test's databases, removed by teardown_tmp. */
static char tmp_root[256];

/* tmp_root: the test's workspace (testutil.h's tu_workspace). */
static inline int tu_tmp_make(const char *name)
{
	return tu_workspace(tmp_root, sizeof(tmp_root), name);
}

static inline int teardown_tmp(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	return system(cmd) ? -1 : 0;
}

/* The database tmp_root/name, created if absent. */
static inline struct prof_db *open_db(const char *name)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/%s", tmp_root, name);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	return db;
}

#endif /* DCPI_TU_DB_H */
