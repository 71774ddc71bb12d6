/*
 * tests/tu_main.h - the main() every test binary had written out: its
 * cmocka tests, run as one group between a setup and a teardown (either
 * may be NULL).  Include after <cmocka.h>.
 */
#ifndef DCPI_TU_MAIN_H
#define DCPI_TU_MAIN_H

#include <stdlib.h>

/* TU_MAIN(setup, teardown, cmocka_unit_test(test_a), ...) defines main().
 * DCPI_TEST_FILTER=NAME (cmocka's pattern: * and ? wildcards) runs only the
 * tests it matches, to repeat one test while chasing a failure. */
#define TU_MAIN(setup, teardown, ...)						\
int main(void)									\
{										\
	const struct CMUnitTest tests[] = { __VA_ARGS__ };			\
										\
	if (getenv("DCPI_TEST_FILTER"))						\
		cmocka_set_test_filter(getenv("DCPI_TEST_FILTER"));		\
	return cmocka_run_group_tests(tests, setup, teardown);			\
}

#endif
