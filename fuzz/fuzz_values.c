/*
 * fuzz_values.c - libFuzzer target for the value profile decoder
 * (profile/values.c, docs/profile-format.md "Value files").
 *
 * Each input is decoded twice: as given, which mostly exercises the header
 * checks, and with the size and CRC-32C fields rewritten to match, so the
 * fuzzer reaches the string, image and hotlist parsers behind the checksum.
 * Whatever decodes must encode again, in no more bytes, and survive a merge
 * into itself and a lookup of every list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/values.h"

static void decode_once(const uint8_t *buf, size_t len)
{
	struct dcpi_err err = { 0 };
	struct val_profile p, q;
	uint8_t *again;
	size_t alen;

	if (val_decode(buf, len, "fuzz.values", &p, &err) == 0) {
		/* Non-minimal varints decode, so compare records, not bytes. */
		if (val_encode(&p, &again, &alen, &err) != 0 || alen > len)
			abort();
		if (val_decode(again, alen, "again", &q, &err) != 0)
			abort();
		free(again);
		for (size_t i = 0; i < p.nlists; i++)
			if (val_profile_find(&p, p.lists[i].offset, p.lists[i].kind) !=
			    &p.lists[i])
				abort();
		if (val_profile_merge(&q, &p, &err) != 0)
			abort();
		val_profile_free(&q);
	}
	val_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;
	uint32_t crc;

	decode_once(data, size);
	if (size < 24)
		return 0;
	b = malloc(size);
	if (!b)
		return 0;
	memcpy(b, data, size);
	for (int i = 0; i < 8; i++)
		b[16 + i] = (uint8_t)((uint64_t)size >> (8 * i));
	crc = dcpi_crc32c(0, b, 12);
	crc = dcpi_crc32c(crc, b + 16, size - 16);
	for (int i = 0; i < 4; i++)
		b[12 + i] = (uint8_t)(crc >> (8 * i));
	decode_once(b, size);
	free(b);
	return 0;
}
