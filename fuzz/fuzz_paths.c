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

#include "harness.h"

FUZZ_KIND(path, path_profile, "fuzz.paths", fuzz_nothing_more)
