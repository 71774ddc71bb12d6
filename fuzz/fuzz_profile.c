/*
 * fuzz_profile.c - libFuzzer target for the profile decoder
 * (profile/format.c).
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the string and entry parsers behind the
 * checksum. Whatever decodes must encode again, in no more bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"

#include "harness.h"

FUZZ_KIND(prof, prof_profile, "fuzz.prof", fuzz_nothing_more)
