/*
 * harness.h - the libFuzzer driver shared by the targets of the profile
 * kinds' decoders (fuzz_profile.c, fuzz_paths.c, fuzz_values.c,
 * fuzz_callgraph.c, fuzz_data.c, fuzz_slices.c), whose files all start with
 * the header of profile/kind.c: magic, version at 8, CRC-32C at 12 over the
 * rest, size at 16.
 *
 * Each input is decoded twice: as given, which mostly exercises the header
 * checks, and with the size and CRC-32C fields rewritten to match, so the
 * fuzzer reaches the parsers behind the checksum.  Whatever decodes must
 * encode again, in no more bytes (non-minimal varints decode, so sizes are
 * compared, not bytes), and pass the target's own checks.
 *
 * A target names its kind's prefix, profile type and file name in
 * FUZZ_KIND(pfx, type, name, more): pfx_decode, pfx_encode and
 * pfx_profile_free are called, and more(&p, again, alen) with the decoded
 * profile and its encoding (fuzz_nothing_more when there is nothing else
 * to check).
 */
#ifndef DCPI_FUZZ_HARNESS_H
#define DCPI_FUZZ_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"

static void decode_once(const uint8_t *buf, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;

	decode_once(data, size);
	if (size < 24)
		return 0;
	b = malloc(size);
	if (!b)
		return 0;
	memcpy(b, data, size);
	prof_file_reseal(b, size);
	decode_once(b, size);
	free(b);
	return 0;
}

static inline void fuzz_nothing_more(const void *p, const uint8_t *again, size_t alen)
{
	(void)p;
	(void)again;
	(void)alen;
}

/* An encoder's answer on what decoded from len bytes: it must succeed, in
 * no more bytes. */
static inline void fuzz_encoded(int rc, size_t alen, size_t len)
{
	if (rc != 0 || alen > len)
		abort();
}

#define FUZZ_KIND(pfx, type, name, more)						\
static void decode_once(const uint8_t *buf, size_t len)				\
{											\
	struct dcpi_err err = { 0 };							\
	struct type p;									\
	uint8_t *again;									\
	size_t alen;									\
											\
	if (pfx##_decode(buf, len, name, &p, &err) == 0) {				\
		fuzz_encoded(pfx##_encode(&p, &again, &alen, &err), alen, len);	\
		more(&p, again, alen);							\
		free(again);								\
	}										\
	pfx##_profile_free(&p);								\
}

#endif /* DCPI_FUZZ_HARNESS_H */
