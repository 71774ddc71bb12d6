/*
 * tests/tu_sbx.h - what the tests that time code in the sandbox
 * (culprit/sandbox; test_sandbox.c, test_measured.c) share: whether it can
 * time here at all.  Header-only; include after <cmocka.h>.
 */
#ifndef DCPI_TU_SBX_H
#define DCPI_TU_SBX_H

#include <stdio.h>

#include "dcpi/sandbox.h"

/* Whether the sandbox cannot time here (under valgrind, say): then the
 * tests' what ("timing assertions") are skipped and their statuses checked,
 * which is said once, with why. */
static inline int tu_sbx_unusable(const char *what)
{
	char why[128];

	if (sbx_usable(why, sizeof(why)))
		return 0;
	printf("# %s: %s skipped, statuses checked\n", why, what);
	return 1;
}

#endif /* DCPI_TU_SBX_H */
