/*
 * tests/tu_hex.h - bytes from their hex text ("48 0f af c0" or "480fafc0"),
 * as test_model_golden.c reads bodies from the model tables' golden file and
 * bench/model_speed.c from its TSV files.  Header-only; needs no cmocka.
 */
#ifndef DCPI_TU_HEX_H
#define DCPI_TU_HEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The bytes of the hex pairs in s (white space between them allowed) into
 * out, at most max; how many, up to the first that is not hex. */
static inline size_t tu_parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;
	int k;

	while (n < max && sscanf(s, " %2x%n", &v, &k) == 1) {
		out[n++] = (uint8_t)v;
		s += k;
	}
	return n;
}

#endif /* DCPI_TU_HEX_H */
