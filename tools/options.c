/*
 * tools/options.c - the options most commands share (--db, --epoch, --event,
 * --json, --quiet, --output, --vmlinux, --help; --from and the fleet query's
 * of dcpi pull and dcpiprof; dcpi record's and dcpid's sampling options of
 * tools/sampling.h; the analysis options of tools/analysis.h) and the option
 * loop around them (tools/tools.h: struct tool_opts), so that a command's own
 * long options (tools/optspec.c reads them) and switch hold only its own.
 */
#include <getopt.h>
#include <stdio.h>

#include "dcpi/fleet.h"
#include "analysis.h"
#include "sampling.h"
#include "tools.h"

/* getopt_long codes of the shared options without a short letter (above
 * tools/analysis.h's, below tools/sampling.h's) */
enum { O_VMLINUX = 0x300, O_FROM, O_BUILD_ID, O_IMAGE, O_HOSTS, O_SINCE, O_UNTIL };

static const struct {
	unsigned bit;
	struct option opt;
} common[] = {	/* --db first */
	{ TOOL_O_DB, { "db", required_argument, NULL, 'd' } },
	{ TOOL_O_EVENT, { "event", required_argument, NULL, 'e' } },
	{ TOOL_O_EPOCH, { "epoch", required_argument, NULL, 'E' } },
	{ TOOL_O_JSON, { "json", no_argument, NULL, 'j' } },
	{ TOOL_O_QUIET, { "quiet", no_argument, NULL, 'q' } },
	{ TOOL_O_OUTPUT, { "output", required_argument, NULL, 'o' } },
	{ TOOL_O_VMLINUX, { "vmlinux", required_argument, NULL, O_VMLINUX } },
};
static const struct option sampling[] = { TOOL_SAMPLING_LONGOPTS, { NULL, 0, NULL, 0 } };
static const struct option analysis[] = { TOOL_ANA_LONGOPTS, { NULL, 0, NULL, 0 } };
static const struct option fleet[] = {
	{ "from", required_argument, NULL, O_FROM },
	{ "build-id", required_argument, NULL, O_BUILD_ID },
	{ "image", required_argument, NULL, O_IMAGE },
	{ "hosts", required_argument, NULL, O_HOSTS },
	{ "since", required_argument, NULL, O_SINCE },
	{ "until", required_argument, NULL, O_UNTIL },
	{ NULL, 0, NULL, 0 },
};
#define NCOMMON (sizeof(common) / sizeof(common[0]))

/* Append *p to o->all at *n, counted even where it is full (opts_build says so). */
static void opts_put(struct tool_opts *o, size_t *n, const struct option *p)
{
	if (*n < TOOL_OPTS_MAX - 1)
		o->all[*n] = *p;
	(*n)++;
}

/*
 * o->all: the sampling options (with o->sampling) or the analysis options
 * (with o->ana), --db, the command's own (o->longopts), the other shared
 * options o->common names, the fleet's (with o->query), --help.  In this
 * order, getopt_long's "is ambiguous; possibilities:" and tool_getopt's "did
 * you mean" list them as the commands' own tables did.  0, or -1 after
 * printing why the table cannot be made (a command's mistake).
 */
static int opts_build(struct tool_opts *o)
{
	static const struct option help = { "help", no_argument, NULL, 'h' };
	struct option own[TOOL_OPTS_MAX];
	struct dcpi_err err = { 0 };
	size_t n = 0;

	if (tool_longopts_parse(o->longopts ? o->longopts : "", own, TOOL_OPTS_MAX, o->names,
				sizeof(o->names), &err) < 0) {
		tool_fail("internal error: %s", err.msg);
		return -1;
	}
	for (const struct option *p = sampling; o->sampling && p->name; p++)
		opts_put(o, &n, p);
	for (const struct option *p = analysis; o->ana && p->name; p++)
		opts_put(o, &n, p);
	if (o->common & TOOL_O_DB)
		opts_put(o, &n, &common[0].opt);
	for (const struct option *p = own; p->name; p++)
		opts_put(o, &n, p);
	for (size_t i = 1; i < NCOMMON; i++)
		if (o->common & common[i].bit)
			opts_put(o, &n, &common[i].opt);
	for (const struct option *p = fleet; o->query && p->name; p++)
		opts_put(o, &n, p);
	opts_put(o, &n, &help);
	if (n >= TOOL_OPTS_MAX) {
		tool_fail("internal error: %zu options, more than %d", n, TOOL_OPTS_MAX - 1);
		return -1;
	}
	o->all[n] = (struct option){ NULL, 0, NULL, 0 };
	o->built = 1;
	return 0;
}

/* --from and the fleet query's option c into o: 1, or -1 after printing
 * why its value is wrong. */
static int opts_fleet(struct tool_opts *o, int c)
{
	struct dcpi_err err = { 0 };

	switch (c) {
	case O_FROM: o->val.from = optarg; return 1;
	case O_BUILD_ID: o->query->build_id = optarg; return 1;
	case O_IMAGE: o->query->image = optarg; return 1;
	case O_HOSTS: o->query->hosts = optarg; return 1;
	}
	if (fleet_time_parse(optarg, c == O_SINCE ? &o->query->since_ns : &o->query->until_ns,
			     &err) >= 0)
		return 1;
	tool_fail("%s", err.msg);
	return -1;
}

/* Store a shared option's value: 1; 0 when c is not one o takes; -1 after
 * printing why its value is wrong. */
static int opts_common(struct tool_opts *o, int c)
{
	int rc, status;

	if (o->sampling && tool_sampling_option(c, optarg, o->sampling, &o->val.event, &status))
		return status ? -1 : 1;
	if (o->ana && (rc = tool_ana_option(o->ana, c, optarg)) >= 0)
		return rc ? -1 : 1;
	if (o->query && c >= O_FROM && c <= O_UNTIL)
		return opts_fleet(o, c);
	if (c == 'd' && (o->common & TOOL_O_DB))
		o->val.db = optarg;
	else if (c == 'E' && (o->common & TOOL_O_EPOCH))
		o->val.epoch = optarg;
	else if (c == 'e' && (o->common & TOOL_O_EVENT))
		o->val.event = optarg;
	else if (c == 'j' && (o->common & TOOL_O_JSON))
		o->val.json = 1;
	else if (c == 'q' && (o->common & TOOL_O_QUIET))
		o->val.quiet = 1;
	else if (c == 'o' && (o->common & TOOL_O_OUTPUT))
		o->val.out = optarg;
	else if (c == O_VMLINUX && (o->common & TOOL_O_VMLINUX))
		o->val.vmlinux = optarg;
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

int tool_opt_keep(const char **v, size_t *n, size_t max)
{
	if (*n >= max)
		return -1;
	v[(*n)++] = optarg;
	return 0;
}

int tool_opt_next(struct tool_opts *o, int argc, char **argv)
{
	int c, rc;

	if (!o->built) {
		if (opts_build(o) < 0)
			return TOOL_OPT_WRONG;	/* said */
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
