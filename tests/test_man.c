/*
 * test_man.c - the man pages (scripts/gen_man.sh, installed by make
 * install): one for dcpi and each command of its table (and its DCPI name),
 * each a valid man page (groff without warnings, where groff is installed)
 * whose synopsis is the command's own usage line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static void test_pages(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *src = getenv("DCPI_SRC");
	char dir[256], line[512];
	size_t commands = 0;
	FILE *f;

	(void)state;
	tu_need_run(bin && src);
	assert_int_equal(tu_workspace(dir, sizeof(dir), "man"), 0);
	assert_int_equal(tu_sh("sh %s/scripts/gen_man.sh %s %s", src, bin, dir), 0);
	assert_int_equal(tu_sh("test -s %s/dcpi.1", dir), 0);
	snprintf(line, sizeof(line), "%s --help 2>&1", bin);
	f = popen(line, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64], alias[64];
		int n = sscanf(line, "  %63[a-z-] %63s", name, alias);

		if (strncmp(line, "  ", 2) || n < 1)
			continue;	/* the command table's rows are indented */
		commands++;
		/* a page, valid, whose synopsis is the usage line */
		assert_int_equal(tu_sh("test -s %s/dcpi-%s.1", dir, name), 0);
		assert_int_equal(tu_sh("u=$(%s %s --help 2>&1 | head -1 | sed 's/^usage: //' | "
				       "cut -c1-20); grep -qF \"$u\" %s/dcpi-%s.1", bin, name, dir,
				       name), 0);
		if (n == 2 && !strncmp(alias, "dcpi", 4))
			assert_int_equal(tu_sh("test -s %s/%s.1", dir, alias), 0);
		if (tu_sh("command -v groff > /dev/null") == 0)
			assert_int_equal(tu_sh("test -z \"$(groff -man -Tutf8 -ww -z %s/dcpi-%s.1 "
					       "2>&1)\"", dir, name), 0);
		assert_int_equal(tu_sh("grep -q 'dcpi-%s' %s/dcpi.1 || grep -q 'dcpi\\\\-%s' "
				       "%s/dcpi.1", name, dir, name, dir), 0);
	}
	pclose(f);
	assert_true(commands >= 15);
	tu_sh("rm -rf %s", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
