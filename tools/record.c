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
#include "sampling.h"
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
		TOOL_SAMPLING_LONGOPTS,
		{ "db", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct collect_opts opts = { 0 };
	struct collect_result res;
	struct dcpi_err err = { 0 };
	const char *event = NULL, *db = NULL;
	int quiet = 0, c, ret;

	while ((c = getopt_long(argc, argv, "+" TOOL_SAMPLING_SHORTOPTS "qh", longopts,
				NULL)) != -1) {
		if (tool_sampling_option(c, optarg, &opts, &event, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case 'D':
			db = optarg;
			break;
		case 'q':
			quiet = 1;
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
	if (tool_sampling_finish(&opts, event, quiet))
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
