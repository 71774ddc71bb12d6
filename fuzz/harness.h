/*
 * harness.h - the libFuzzer entry shared by the targets of the profile
 * kinds' decoders (fuzz_profile.c, fuzz_paths.c, fuzz_values.c), whose
 * files all start with the header of profile/kind.c: magic, version at 8,
 * CRC-32C at 12 over the rest, size at 16.
 *
 * Each input is decoded twice by the target's decode_once(): as given,
 * which mostly exercises the header checks, and with the size and CRC-32C
 * fields rewritten to match, so the fuzzer reaches the parsers behind the
 * checksum.  A target defines decode_once() and then includes this file.
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

#endif /* DCPI_FUZZ_HARNESS_H */
