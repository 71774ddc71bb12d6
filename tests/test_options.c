/*
 * test_options.c - a command's own long options written as one string
 * (tools/optspec.c, the syntax in tools/tools.h): a good spec gives the
 * table the commands wrote by hand (names, has_arg, values), getopt_long
 * resolves abbreviations over it as it did over theirs, and every kind of
 * malformed spec is refused with the entry named.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Tests link libdcpi.a only; tools/ objects go into the dcpi binary, so the
 * parser (which needs nothing but libc and dcpi_errf) is built in here. */
#include "../tools/optspec.c"
#include "tu_main.h"

/* dcpi record's own options as tools/cmd_record.c's table had them (flag
 * NULL in every entry), and the spec that replaced the table */
static const struct {
	const char *name;
	int has_arg, val;
} record_want[] = {
	{ "paths", required_argument, 'T' },
	{ "no-paths", no_argument, 'U' },
	{ "values", no_argument, 'V' },
	{ "no-values", no_argument, 'W' },
	{ "latency", no_argument, 'L' },
	{ "no-kernel", no_argument, 'K' },
	{ "pid", required_argument, 'p' },
	{ "tid", required_argument, 't' },
	{ "duration", required_argument, 'R' },
	{ "plan", required_argument, 'M' },
};
#define NRECORD (sizeof(record_want) / sizeof(record_want[0]))
static const char record_spec[] = "paths=T no-paths:U values:V no-values:W latency:L "
				  "no-kernel:K pid=p tid=t duration=R plan=M";

/* record_want as getopt_long's table */
static void record_table(struct option *t)
{
	for (size_t i = 0; i < NRECORD; i++)
		t[i] = (struct option){ record_want[i].name, record_want[i].has_arg, NULL,
					record_want[i].val };
	t[NRECORD] = (struct option){ NULL, 0, NULL, 0 };
}

static void test_table(void **state)
{
	struct option opts[TOOL_OPTS_MAX];
	struct dcpi_err err = { 0 };
	char names[TOOL_LONGOPTS_LEN];

	(void)state;
	assert_int_equal(tool_longopts_parse(record_spec, opts, TOOL_OPTS_MAX, names,
					     sizeof(names), &err), (int)NRECORD);
	for (size_t i = 0; i < NRECORD; i++) {
		assert_string_equal(opts[i].name, record_want[i].name);
		assert_int_equal(opts[i].has_arg, record_want[i].has_arg);
		assert_null(opts[i].flag);
		assert_int_equal(opts[i].val, record_want[i].val);
	}
	assert_null(opts[NRECORD].name);
	/* the optional argument, a value two names share, and white space */
	assert_int_equal(tool_longopts_parse("  fit-model:T\tmodel?M no-model:N no-fit-model:N ",
					     opts, TOOL_OPTS_MAX, names, sizeof(names), &err), 4);
	assert_string_equal(opts[1].name, "model");
	assert_int_equal(opts[1].has_arg, optional_argument);
	assert_int_equal(opts[1].val, 'M');
	assert_int_equal(opts[2].val, 'N');
	assert_int_equal(opts[3].val, 'N');
	assert_string_equal(opts[3].name, "no-fit-model");
	assert_null(opts[4].name);
	/* none at all */
	assert_int_equal(tool_longopts_parse("", opts, TOOL_OPTS_MAX, names, sizeof(names), &err),
			 0);
	assert_null(opts[0].name);
}

/* getopt_long over argv (from argv[1]) and table: the values it returns,
 * '?' for a wrong one, each optarg (or "-") after it, into out. */
static void run_getopt(const struct option *table, const char **args, char *out, size_t len)
{
	char *argv[16];
	int argc = 0, c;
	size_t at = 0;

	argv[argc++] = (char *)"cmd";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	optind = 0;	/* glibc: start over */
	opterr = 0;
	out[0] = '\0';
	while ((optarg = NULL, c = getopt_long(argc, argv, "p:t:h", table, NULL)) != -1)
		at += (size_t)snprintf(out + at, len - at, "%c%s ", c, optarg ? optarg : "-");
	opterr = 1;
}

/* Abbreviations resolve over the parsed table as over the hand-written one. */
static void test_abbreviations(void **state)
{
	static const char *const lines[][6] = {
		{ "--pa", "3", "--no-p", "--val", NULL },	/* unique prefixes */
		{ "--no-", NULL },				/* ambiguous */
		{ "--no-v", "--lat", "--plan=x.plan", NULL },
		{ "--dur=5", "--pi", "42", NULL },
		{ "--p", "1", NULL },				/* paths, pid, plan */
		{ "--values=1", NULL },				/* takes no argument */
	};
	struct option opts[TOOL_OPTS_MAX], table[NRECORD + 1];
	struct dcpi_err err = { 0 };
	char names[TOOL_LONGOPTS_LEN], want[256], got[256];

	(void)state;
	record_table(table);
	assert_true(tool_longopts_parse(record_spec, opts, TOOL_OPTS_MAX, names, sizeof(names),
					&err) > 0);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		run_getopt(table, (const char **)lines[i], want, sizeof(want));
		run_getopt(opts, (const char **)lines[i], got, sizeof(got));
		assert_string_equal(got, want);
	}
	run_getopt(opts, (const char **)lines[0], got, sizeof(got));
	assert_string_equal(got, "T3 U- V- ");
	run_getopt(opts, (const char **)lines[1], got, sizeof(got));
	assert_string_equal(got, "?- ");
}

/* An exact name wins over a longer one it begins (calibrate's --model and
 * --model-file), and an optional argument is taken only after '='. */
static void test_exact_and_optional(void **state)
{
	static const char *const bare[] = { "--model", "x", NULL };
	static const char *const given[] = { "--model=zen4", "--model-f", "m.txt", NULL };
	struct option opts[TOOL_OPTS_MAX];
	struct dcpi_err err = { 0 };
	char names[TOOL_LONGOPTS_LEN], got[256];

	(void)state;
	assert_int_equal(tool_longopts_parse("model?M model-file=F", opts, TOOL_OPTS_MAX, names,
					     sizeof(names), &err), 2);
	run_getopt(opts, (const char **)bare, got, sizeof(got));
	assert_string_equal(got, "M- ");
	run_getopt(opts, (const char **)given, got, sizeof(got));
	assert_string_equal(got, "Mzen4 Fm.txt ");
}

/* Malformed specs, each refused with the part of the message that names why. */
static const struct {
	const char *spec, *why;
} wrong[] = {
	{ "paths", "\"paths\" is not NAME=V" },		/* no kind */
	{ "paths=", "\"paths=\" is not" },			/* no value */
	{ "paths=T no-paths", "\"no-paths\" is not" },
	{ "=T", "\"=T\" is not" },				/* no name */
	{ "paths=TU", "\"paths=TU\" is not" },		/* two values */
	{ "paths=T,pid=p", "\"paths=T,pid=p\" is not" },	/* not apart by a space */
	{ "Paths=T", "\"Paths=T\" is not" },			/* not a-z */
	{ "-paths=T", "\"-paths=T\" is not" },
	{ "paths#T", "\"paths#T\" is not" },			/* no such kind */
	{ "paths=?", "\"paths=?\" is not" },			/* getopt's own '?' */
	{ "paths=:", "\"paths=:\" is not" },
	{ "paths=T pid=p paths:U", "--paths twice" },
};

static void test_malformed(void **state)
{
	struct option opts[TOOL_OPTS_MAX];
	struct dcpi_err err;
	char names[TOOL_LONGOPTS_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(tool_longopts_parse(wrong[i].spec, opts, TOOL_OPTS_MAX, names,
						     sizeof(names), &err), -EINVAL);
		if (!strstr(err.msg, wrong[i].why))
			fail_msg("spec \"%s\": message \"%s\" has no \"%s\"", wrong[i].spec,
				 err.msg, wrong[i].why);
	}
	/* more entries than the table holds, a spec longer than the names' room */
	memset(&err, 0, sizeof(err));
	assert_int_equal(tool_longopts_parse("a:a b:b c:c", opts, 3, names, sizeof(names), &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "more than 2"));
	assert_int_equal(tool_longopts_parse("a:a b:b", opts, 3, names, sizeof(names), &err), 2);
	memset(&err, 0, sizeof(err));
	assert_int_equal(tool_longopts_parse(record_spec, opts, TOOL_OPTS_MAX, names, 16, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 15"));
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_table),
	cmocka_unit_test(test_abbreviations),
	cmocka_unit_test(test_exact_and_optional),
	cmocka_unit_test(test_malformed))
