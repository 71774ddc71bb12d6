/*
 * fuzz_paths.c - libFuzzer target for the path profile decoder
 * (profile/paths.c, docs/profile-format.md "Path files").
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the string, edge and step parsers behind
 * the checksum. Whatever decodes must encode again, in no more bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/paths.h"

static void decode_once(const uint8_t *buf, size_t len)
{
	struct dcpi_err err = { 0 };
	struct path_profile p;
	uint8_t *again;
	size_t alen;

	if (path_decode(buf, len, "fuzz.paths", &p, &err) == 0) {
		/* Non-minimal varints decode, so compare records, not bytes. */
		if (path_encode(&p, &again, &alen, &err) != 0 || alen > len)
			abort();
		free(again);
	}
	path_profile_free(&p);
}

#include "harness.h"
