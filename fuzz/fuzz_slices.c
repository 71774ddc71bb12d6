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

#include "harness.h"

FUZZ_KIND(slice, slice_profile, "fuzz.slices", fuzz_nothing_more)
