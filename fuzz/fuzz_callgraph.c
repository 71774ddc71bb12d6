/*
 * fuzz_callgraph.c - libFuzzer target for the call-graph profile decoder
 * (profile/callgraph.c, docs/profile-format.md "Call-graph files").
 *
 * Each input is decoded as given and with its size and CRC-32C made to match
 * (harness.h), so the fuzzer reaches the event and image tables and the
 * stacks behind the checksum.  Whatever decodes must encode again, in no
 * more bytes, and merge into a copy of itself with its counts doubled.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"

#include "harness.h"

/* Merged twice into an empty copy: the same stacks, counts doubled. */
static void merge_twice(const struct cg_profile *p, const uint8_t *again, size_t alen)
{
	struct dcpi_err err = { 0 };
	struct cg_profile q;

	(void)again;
	(void)alen;
	cg_profile_init(&q);
	q.image = p->image;
	if (cg_profile_merge(&q, p, &err) != 0 || cg_profile_merge(&q, p, &err) != 0 ||
	    q.n != p->n || cg_profile_total(&q) != 2 * cg_profile_total(p))
		abort();
	cg_profile_free(&q);
}

FUZZ_KIND(cg, cg_profile, "fuzz.cg", merge_twice)
