/*
 * fuzz_ibs.c - libFuzzer target for the IBS op and PEBS decoders
 * (import/ibs.c, import/pebs.c; include/dcpi/hwsample.h).
 *
 * The input is an IBS op raw record as given; then, so that the fuzzer
 * reaches the field decoding behind the size check, its first bytes as a
 * capabilities word followed by exactly the registers those capabilities
 * say (zeros past the input).  What decodes must hold together: fields
 * only under their valid bits, a data source in range.  The first 32
 * bytes also feed the PEBS decoder as (ip, addr, weight, data_src).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/hwsample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct hw_sample *s, int ibs)
{
	if ((unsigned)s->src >= HW_SRC_N)
		abort();
	if (!(s->flags & HW_ADDR) && s->addr)
		abort();
	if (!(s->flags & HW_LAT) && (s->lat || (ibs && s->src != HW_SRC_NONE)))
		abort();
	if (!(s->flags & HW_BRANCH) && (s->flags & (HW_TAKEN | HW_MISPREDICT | HW_RETURN)))
		abort();
	if (s->width > 64)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_err err = { 0 };
	struct hw_sample s;
	uint8_t b[4 + 8 * 9] = { 0 };
	uint32_t caps;
	size_t want;
	uint64_t v[4] = { 0 };

	if (hw_ibs_op_decode(data, size, &s, &err) == 0)
		check(&s, 1);
	memcpy(b, data, size < sizeof(b) ? size : sizeof(b));
	memcpy(&caps, b, 4);
	want = 4 + 8 * (7 + !!(caps & HW_IBS_CAPS_BRNTRGT) + !!(caps & HW_IBS_CAPS_OPDATA4));
	if (hw_ibs_op_decode(b, want, &s, &err) == 0)
		check(&s, 1);
	memcpy(v, data, size < sizeof(v) ? size : sizeof(v));
	if (hw_pebs_decode(v[0], v[1], v[2], (int)(v[0] & 1), v[3], &s, &err) == 0)
		check(&s, 0);
	return 0;
}
