/*
 * tools/optspec.c - a command's own long options written as one string
 * (tool_opts.longopts; the syntax is in tools/tools.h), as getopt's short
 * options are, turned into getopt_long's struct option entries.  Apart from
 * tools/options.c so that tests/test_options.c can build it alone.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "tools.h"

#define SPEC_NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

/* has_arg of the character after a name, or -1. */
static int spec_kind(char k)
{
	switch (k) {
	case '=': return required_argument;
	case '?': return optional_argument;
	case ':': return no_argument;
	}
	return -1;
}

/* The length of a name's entry in spec (NAME, kind, value): 3 or more, or 0
 * when the entry at spec is not one. */
static size_t spec_entry(const char *spec)
{
	size_t k = strspn(spec, SPEC_NAME_CHARS);
	unsigned char val;

	if (!k || spec[0] == '-' || spec_kind(spec[k]) < 0)
		return 0;
	val = (unsigned char)spec[k + 1];
	if (!isgraph(val) || val == '?' || val == ':')
		return 0;
	if (spec[k + 2] && !isspace((unsigned char)spec[k + 2]))
		return 0;
	return k + 2;
}

static int spec_wrong(struct dcpi_err *err, const char *spec, size_t at)
{
	int len = (int)strcspn(spec + at, " \t\n");

	return dcpi_errf(err, -EINVAL, "long options \"%s\": \"%.*s\" is not NAME=V, NAME?V "
			 "or NAME:V (NAME of a-z, 0-9 and -, V one character)", spec, len,
			 spec + at);
}

int tool_longopts_parse(const char *spec, struct option *opts, size_t max, char *buf,
			size_t len, struct dcpi_err *err)
{
	size_t n = 0, at = 0, k;

	if (!max || strlen(spec) >= len)
		return dcpi_errf(err, -EINVAL, "long options \"%s\": longer than %zu characters",
				 spec, len ? len - 1 : 0);
	strcpy(buf, spec);
	while (spec[at += strspn(spec + at, " \t\n")]) {
		k = spec_entry(spec + at);
		if (!k)
			return spec_wrong(err, spec, at);
		if (n + 1 >= max)
			return dcpi_errf(err, -EINVAL, "long options \"%s\": more than %zu", spec,
					 max - 1);
		buf[at + k - 2] = '\0';
		opts[n] = (struct option){ buf + at, spec_kind(spec[at + k - 2]), NULL,
					   (unsigned char)spec[at + k - 1] };
		for (size_t i = 0; i < n; i++)
			if (!strcmp(opts[i].name, opts[n].name))
				return dcpi_errf(err, -EINVAL, "long options \"%s\": --%s twice",
						 spec, opts[n].name);
		n++;
		at += k;
	}
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	return (int)n;
}
