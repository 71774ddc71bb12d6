/*
 * fuzz_values.c - libFuzzer target for the value profile decoder
 * (profile/values.c, docs/profile-format.md "Value files").
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the string, image and hotlist parsers
 * behind the checksum. Whatever decodes must encode again, in no more bytes,
 * and survive a merge into itself and a lookup of every list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/values.h"

#include "harness.h"

/* The encoding decodes again, every list is found, and p merges into it. */
static void decode_again(const struct val_profile *p, const uint8_t *again, size_t alen)
{
	struct dcpi_err err = { 0 };
	struct val_profile q;

	if (val_decode(again, alen, "again", &q, &err) != 0)
		abort();
	for (size_t i = 0; i < p->nlists; i++)
		if (val_profile_find(p, p->lists[i].offset, p->lists[i].kind) != &p->lists[i])
			abort();
	if (val_profile_merge(&q, p, &err) != 0)
		abort();
	val_profile_free(&q);
}

FUZZ_KIND(val, val_profile, "fuzz.values", decode_again)
