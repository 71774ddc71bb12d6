/*
 * fuzz_slices.c - libFuzzer target for the time-slice profile decoder
 * (profile/slices.c, docs/profile-format.md "Time-slice files").
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the string, entry and boundary parsers
 * behind the checksum. Whatever decodes must encode again, in no more bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/slices.h"

static void decode_once(const uint8_t *buf, size_t len)
{
	struct dcpi_err err = { 0 };
	struct slice_profile p;
	uint8_t *again;
	size_t alen;

	if (slice_decode(buf, len, "fuzz.slices", &p, &err) == 0) {
		/* Non-minimal varints decode, so compare sizes, not bytes. */
		if (slice_encode(&p, &again, &alen, &err) != 0 || alen > len)
			abort();
		free(again);
	}
	slice_profile_free(&p);
}

#include "harness.h"
