/*
 * tools/options.c - the options most commands share (--db, --epoch, --event,
 * --json, --quiet, --help; dcpi record's and dcpid's sampling options of
 * tools/sampling.h; the analysis options of tools/analysis.h) and the option
 * loop around them (tools/tools.h: struct tool_opts), so that a command's own
 * table and switch hold only its own.
 */
#include <getopt.h>
#include <stdio.h>

#include "analysis.h"
#include "sampling.h"
#include "tools.h"

static const struct {
	unsigned bit;
	struct option opt;
} common[] = {
	{ TOOL_O_DB, { "db", required_argument, NULL, 'd' } },
	{ TOOL_O_EPOCH, { "epoch", required_argument, NULL, 'E' } },
	{ TOOL_O_EVENT, { "event", required_argument, NULL, 'e' } },
	{ TOOL_O_JSON, { "json", no_argument, NULL, 'j' } },
	{ TOOL_O_QUIET, { "quiet", no_argument, NULL, 'q' } },
};
static const struct option sampling[] = { TOOL_SAMPLING_LONGOPTS, { NULL, 0, NULL, 0 } };
static const struct option analysis[] = { TOOL_ANA_LONGOPTS, { NULL, 0, NULL, 0 } };
#define NCOMMON (sizeof(common) / sizeof(common[0]))

/* o->all: the sampling options (with o->sampling) or the analysis options
 * (with o->ana), the shared options o->common names, the command's own, --help. */
static void opts_build(struct tool_opts *o)
{
	size_t n = 0;

	for (const struct option *p = sampling; o->sampling && p->name; p++)
		o->all[n++] = *p;
	for (const struct option *p = analysis; o->ana && p->name; p++)
		o->all[n++] = *p;
	for (size_t i = 0; i < NCOMMON; i++)
		if (o->common & common[i].bit)
			o->all[n++] = common[i].opt;
	for (const struct option *p = o->own; p && p->name && n < TOOL_OPTS_MAX - 2; p++)
		o->all[n++] = *p;
	o->all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	o->all[n] = (struct option){ NULL, 0, NULL, 0 };
	o->built = 1;
}

/* Store a shared option's value: 1; 0 when c is not one o takes; -1 after
 * printing why its value is wrong. */
static int opts_common(struct tool_opts *o, int c)
{
	int rc, status;

	if (o->sampling && tool_sampling_option(c, optarg, o->sampling, &o->event, &status))
		return status ? -1 : 1;
	if (o->ana && (rc = tool_ana_option(o->ana, c, optarg)) >= 0)
		return rc ? -1 : 1;
	if (c == 'd' && (o->common & TOOL_O_DB))
		o->db = optarg;
	else if (c == 'E' && (o->common & TOOL_O_EPOCH))
		o->epoch = optarg;
	else if (c == 'e' && (o->common & TOOL_O_EVENT))
		o->event = optarg;
	else if (c == 'j' && (o->common & TOOL_O_JSON))
		o->json = 1;
	else if (c == 'q' && (o->common & TOOL_O_QUIET))
		o->quiet = 1;
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
	int c, rc;

	if (!o->built) {
		opts_build(o);
		optind = 1;
	}
	do
		c = tool_getopt(argc, argv, o->shortopts, o->all, NULL);
	while (c != -1 && (rc = opts_common(o, c)) > 0);
	if (c != -1 && rc < 0)
		return TOOL_OPT_WRONG;	/* said */
	switch (c) {
	case -1:
		if (!o->ana || !o->ana->time || !o->ana->phase)
			return 0;
		tool_fail("--time and --phase: give one");
		return TOOL_OPT_WRONG;
	case 'h': opts_usage(o, stdout); return TOOL_OPT_HELP;
	case '?': opts_usage(o, stderr); return TOOL_OPT_WRONG;
	default: return c;
	}
}
