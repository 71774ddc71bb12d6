/*
 * tools/options.c - the options most commands share (--db, --epoch, --event,
 * --json, --help) and the option loop around them (tools/tools.h: struct
 * tool_opts), so that a command's own table and switch hold only its own.
 */
#include <getopt.h>
#include <stdio.h>

#include "tools.h"

static const struct {
	unsigned bit;
	struct option opt;
} common[] = {
	{ TOOL_O_DB, { "db", required_argument, NULL, 'd' } },
	{ TOOL_O_EPOCH, { "epoch", required_argument, NULL, 'E' } },
	{ TOOL_O_EVENT, { "event", required_argument, NULL, 'e' } },
	{ TOOL_O_JSON, { "json", no_argument, NULL, 'j' } },
};
#define NCOMMON (sizeof(common) / sizeof(common[0]))

/* o->all: the shared options o->common names, the command's own, --help. */
static void opts_build(struct tool_opts *o)
{
	size_t n = 0;

	for (size_t i = 0; i < NCOMMON; i++)
		if (o->common & common[i].bit)
			o->all[n++] = common[i].opt;
	for (const struct option *p = o->own; p && p->name && n < TOOL_OPTS_MAX - 2; p++)
		o->all[n++] = *p;
	o->all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	o->all[n] = (struct option){ NULL, 0, NULL, 0 };
	o->built = 1;
}

/* Store a shared option's value; 0 when c is not one o takes. */
static int opts_common(struct tool_opts *o, int c)
{
	if (c == 'd' && (o->common & TOOL_O_DB))
		o->db = optarg;
	else if (c == 'E' && (o->common & TOOL_O_EPOCH))
		o->epoch = optarg;
	else if (c == 'e' && (o->common & TOOL_O_EVENT))
		o->event = optarg;
	else if (c == 'j' && (o->common & TOOL_O_JSON))
		o->json = 1;
	else
		return 0;
	return 1;
}

static void opts_usage(const struct tool_opts *o, FILE *f)
{
	if (o->help)
		o->help(f, o->help_arg);
	else
		tool_usage(f, o->usage);
}

int tool_opt_next(struct tool_opts *o, int argc, char **argv)
{
	int c;

	if (!o->built) {
		opts_build(o);
		optind = 1;
	}
	do
		c = tool_getopt(argc, argv, o->shortopts, o->all, NULL);
	while (c != -1 && opts_common(o, c));
	switch (c) {
	case -1: return 0;
	case 'h': opts_usage(o, stdout); return TOOL_OPT_HELP;
	case '?': opts_usage(o, stderr); return TOOL_OPT_WRONG;
	default: return c;
	}
}
