/*
 * fuzz_profile.c - libFuzzer target for the profile decoder
 * (profile/format.c).
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the string and entry parsers behind the
 * checksum. Both must return cleanly and leak nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"

static void decode_once(const uint8_t *buf, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	uint8_t *again;
	size_t alen;

	if (prof_decode(buf, len, "fuzz.prof", &p, &err) == 0) {
		/* Whatever decodes must encode back to the same bytes count. */
		if (prof_encode(&p, &again, &alen, &err) == 0)
			free(again);
		else
			abort();
	}
	prof_profile_free(&p);
}

#include "harness.h"
