/*
 * sampling.c - options dcpi record and dcpid share, parsed one way.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling.h"
#include "tools.h"

int tool_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || !v || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Option opt's positive number arg in *out, else a message and *status. */
static int positive_option(const char *opt, const char *arg, uint64_t *out, int *status)
{
	if (tool_parse_u64(arg, out))
		*status = tool_fail("%s %s: not a positive number", opt, arg);
	return 1;
}

int tool_sampling_option(int c, const char *arg, struct collect_opts *o,
			 const char **events, int *status)
{
	*status = 0;
	switch (c) {
	case 'e':
		*events = arg;
		return 1;
	case 'c':
		return positive_option("--count", arg, &o->period, status);
	case 'F':
		return positive_option("--freq", arg, &o->freq, status);
	case 'P':
		o->fixed_period = 1;
		return 1;
	case 'S':
		return positive_option("--seed", arg, &o->seed, status);
	case 'N':
		o->no_calibrate = 1;
		return 1;
	case TOOL_NO_SLICES:
		o->no_slices = 1;
		return 1;
	case 'g':
		o->callchain = 1;
		return 1;
	case TOOL_CALL_GRAPH:
		o->callchain = 1;
		if (strcmp(arg, "fp"))
			*status = tool_fail("--call-graph %s: only fp (frame pointers) is "
					    "supported; dwarf unwinding is not yet", arg);
		return 1;
	}
	return 0;
}

int tool_sampling_finish(struct collect_opts *o, const char *events, int quiet)
{

	if (o->period && o->freq)
		return tool_fail("--count and --freq: give one or the other");
	if (events)
		return tool_events_parse(o, events);
	return tool_pmu_events(o, quiet);
}
