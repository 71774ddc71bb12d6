/*
 * test_man.c - the man pages (scripts/gen_man.sh, installed by make
 * install): one for dcpi and each command of its table (and its DCPI name),
 * each a valid man page (groff without warnings, where groff is installed)
 * whose synopsis is the command's own usage line, with DESCRIPTION, OUTPUT,
 * EXAMPLES, FILES and SEE ALSO (docs/man/NAME.txt); every name a command
 * has shows that name in its --help.
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
#include "tu_main.h"

/* A row of `dcpi --help`'s command table: the command's name and its DCPI
 * name ("" when it has none, or the row's second word is not one). */
struct command {
	char name[64], alias[64];
};

/* The rows of the command table of `bin --help`, at most cap; how many. */
static size_t commands_of(const char *bin, struct command *c, size_t cap)
{
	char line[512];
	size_t n = 0;
	FILE *f = tu_popen("%s --help 2>&1", bin);

	while (fgets(line, sizeof(line), f)) {
		int k;

		if (strncmp(line, "  ", 2))
			continue;	/* the command table's rows are indented */
		assert_true(n < cap);
		k = sscanf(line, "  %63[a-z-] %63s", c[n].name, c[n].alias);
		if (k < 1)
			continue;
		if (k < 2 || strncmp(c[n].alias, "dcpi", 4))
			c[n].alias[0] = '\0';
		n++;
	}
	pclose(f);
	return n;
}

static void test_pages(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *src = getenv("DCPI_SRC");
	struct command cmds[64];
	char dir[256];
	size_t commands;

	(void)state;
	tu_need_run(bin && src);
	assert_int_equal(tu_workspace(dir, sizeof(dir), "man"), 0);
	assert_int_equal(tu_sh("sh %s/scripts/gen_man.sh %s %s", src, bin, dir), 0);
	assert_int_equal(tu_sh("test -s %s/dcpi.1", dir), 0);
	assert_int_equal(tu_sh("grep -q '^\\.SH DESCRIPTION$' %s/dcpi.1 && "
			       "grep -q '^\\.SH EXAMPLES$' %s/dcpi.1", dir, dir), 0);
	commands = commands_of(bin, cmds, sizeof(cmds) / sizeof(cmds[0]));
	for (size_t i = 0; i < commands; i++) {
		const char *name = cmds[i].name, *alias = cmds[i].alias;

		/* a page, valid, whose synopsis is the usage line */
		assert_int_equal(tu_sh("test -s %s/dcpi-%s.1", dir, name), 0);
		assert_int_equal(tu_sh("u=$(%s %s --help 2>&1 | head -1 | sed 's/^usage: //' | "
				       "cut -c1-20); grep -qF \"$u\" %s/dcpi-%s.1", bin, name, dir,
				       name), 0);
		if (*alias)
			assert_int_equal(tu_sh("test -s %s/%s.1", dir, alias), 0);
		/* the prose a perf user reads, written per command (docs/man/NAME.txt) */
		for (int k = 0; k < 5; k++) {
			static const char *const sec[] = { "DESCRIPTION", "OUTPUT", "EXAMPLES",
							   "FILES", "SEE ALSO" };

			if (tu_sh("grep -q '^\\.SH %s$' %s/dcpi-%s.1", sec[k], dir, name))
				fail_msg("dcpi-%s.1 has no %s", name, sec[k]);
		}
		if (tu_sh("command -v groff > /dev/null") == 0)
			assert_int_equal(tu_sh("test -z \"$(groff -man -Tutf8 -ww -z %s/dcpi-%s.1 "
					       "2>&1)\"", dir, name), 0);
		assert_int_equal(tu_sh("grep -q 'dcpi-%s' %s/dcpi.1 || grep -q 'dcpi\\\\-%s' "
				       "%s/dcpi.1", name, dir, name, dir), 0);
	}
	assert_true(commands >= 15);
	tu_sh("rm -rf %s", dir);
}

/*
 * Every name of every command shows its own name in --help's usage line:
 * `dcpi prof --help` says "dcpi prof", `dcpiprof --help` "dcpiprof"; and
 * calibrate's two meanings of --model are two options.
 */
static void test_help_names(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	struct command cmds[64];
	char dir[256];
	size_t rows;

	(void)state;
	if (!bin) {
		print_message("DCPI_BIN unset: run through tests/run.sh\n");
		skip();
	}
	assert_int_equal(tu_workspace(dir, sizeof(dir), "helpnames"), 0);
	rows = commands_of(bin, cmds, sizeof(cmds) / sizeof(cmds[0]));
	for (size_t i = 0; i < rows; i++) {
		const char *name = cmds[i].name, *alias = cmds[i].alias;

		if (tu_sh("%s %s --help 2>&1 | head -1 | grep -q '^usage: dcpi %s '", bin, name,
			  name))
			fail_msg("dcpi %s --help does not say 'usage: dcpi %s'", name, name);
		if (!*alias)
			continue;
		assert_int_equal(tu_sh("ln -s %s %s/%s", bin, dir, alias), 0);
		if (tu_sh("%s/%s --help 2>&1 | head -1 | grep -q '^usage: %s '", dir, alias,
			  alias))
			fail_msg("%s --help does not say 'usage: %s'", alias, alias);
	}
	assert_true(rows >= 15);
	/* one option name, one meaning */
	assert_int_equal(tu_sh("%s calibrate --help | grep -q -- '--fit-model '", bin), 0);
	assert_int_equal(tu_sh("%s calibrate --help | grep -q -- '--model NAME '", bin), 0);
	assert_int_not_equal(tu_sh("%s calibrate --fit-model --no-fit-model > /dev/null 2>&1",
				   bin), 0);
	/* the old spelling, alone, is --fit-model with a note */
	assert_int_equal(tu_sh("%s calibrate --model --no-model 2>&1 | grep -q 'deprecated'",
			       bin), 0);
	tu_sh("rm -rf %s", dir);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_pages),
	cmocka_unit_test(test_help_names))
