/*
 * fuzz_data.c - libFuzzer target for the data profile decoder
 * (profile/data.c, docs/profile-format.md "Data files").
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the image table, entry and sharing
 * parsers behind the checksum.  Whatever decodes must encode again, in no
 * more bytes, and merge into a copy of itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/data.h"

#include "harness.h"

/* Merged into an empty copy of the same image and window. */
static void merge_once(const struct data_profile *p, const uint8_t *again, size_t alen)
{
	struct dcpi_err err = { 0 };
	struct data_profile q;

	(void)again;
	(void)alen;
	data_profile_init(&q);
	q.image = p->image;
	q.window_ns = p->window_ns;
	if (data_profile_merge(&q, p, &err) != 0)
		abort();
	data_profile_free(&q);
}

FUZZ_KIND(data, data_profile, "fuzz.data", merge_once)
