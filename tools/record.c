/*
 * tools/record.c - `dcpi record [options] -- CMD [ARGS]`: run CMD under
 * sampling and write one new epoch of the database (collect_record does the
 * work).  Picks the events (cycles when the machine has a PMU, else
 * cpu-clock), passes SIGINT/SIGTERM on to CMD, and exits with CMD's status
 * (128 + signal when it was killed), as a shell would.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dcpi/collect.h"
#include "tools.h"

static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
	pending_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dcpi record [options] [--] CMD [ARGS]\n"
		"  -e, --event LIST   comma-separated, of %s;\n"
		"                     default cycles, or cpu-clock without a PMU\n"
		"  -c, --count N      sample every N events (ns for the clocks);\n"
		"                     default %llu cycles or %llu ns\n"
		"  -F, --freq HZ      sample HZ times a second instead\n"
		"      --fixed-period do not randomize the period (DCPI sec. 4.1.1)\n"
		"      --seed N       seed of the random periods (default: random)\n"
		"      --no-calibrate skip the known-cycle calibration loops\n"
		"      --db DIR       database (default $DCPIDB, then ./dcpidb)\n"
		"  -q, --quiet        no summary line\n",
		collect_event_names(), COLLECT_CYCLES_PERIOD, COLLECT_CLOCK_PERIOD_NS);
}

static int parse_count(const char *s, uint64_t *out)
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

/* The events asked for, or cycles falling back to cpu-clock without a PMU. */
static int pick_events(const char *list, int quiet, struct collect_opts *o)
{
	struct dcpi_err err = { 0 };
	int ret;

	if (list) {
		if (collect_events_parse(list, o->events, &o->nevents, &err))
			return tool_fail("%s", err.msg);
		return 0;
	}
	ret = collect_event_default(&o->events[0], &err);
	if (ret < 0)
		return tool_fail("%s", err.msg);
	if (ret && !quiet)
		fprintf(stderr, "%s: note: cycles is not supported on this machine "
			"(no hardware PMU); sampling cpu-clock\n", tool_name);
	o->nevents = 1;
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'c' },
		{ "freq", required_argument, NULL, 'F' },
		{ "db", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "fixed-period", no_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-calibrate", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct collect_opts opts = { 0 };
	struct collect_result res;
	struct dcpi_err err = { 0 };
	const char *event = NULL, *db = NULL;
	int quiet = 0, c, ret;

	while ((c = getopt_long(argc, argv, "+e:c:F:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			event = optarg;
			break;
		case 'c':
			if (parse_count(optarg, &opts.period))
				return tool_fail("--count %s: not a positive number", optarg);
			break;
		case 'F':
			if (parse_count(optarg, &opts.freq))
				return tool_fail("--freq %s: not a positive number", optarg);
			break;
		case 'D':
			db = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'P':
			opts.fixed_period = 1;
			break;
		case 'S':
			if (parse_count(optarg, &opts.seed))
				return tool_fail("--seed %s: not a positive number", optarg);
			break;
		case 'N':
			opts.no_calibrate = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return tool_fail("no command to run");
	}
	if (opts.period && opts.freq)
		return tool_fail("--count and --freq: give one or the other");
	if (pick_events(event, quiet, &opts))
		return 1;
	opts.db_dir = tool_db_dir(db);
	opts.pending_signal = &pending_signal;
	catch_signals();
	ret = collect_record(&opts, argv + optind, &res, &err);
	if (ret && res.exec_errno) {
		tool_fail("%s", err.msg);
		return res.exec_errno == ENOENT ? 127 : 126;
	}
	if (ret)
		return tool_fail("%s", err.msg);
	if (!quiet)
		fprintf(stderr, "%s: %llu samples (%llu lost) of %s into %s/%s\n", tool_name,
			(unsigned long long)res.samples, (unsigned long long)res.lost,
			opts.events[0]->name, opts.db_dir, res.epoch);
	return exit_status(res.status);
}
