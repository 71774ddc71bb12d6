/*
 * tools/cmd_daemon.c - `dcpi daemon` / dcpid: sample the whole system until
 * SIGINT or SIGTERM (collect_daemon does the work, DCPI paper sec. 4.3).
 * SIGUSR1 flushes now, SIGHUP starts a new epoch.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/collect.h"
#include "dcpi/fleet.h"
#include "sampling.h"
#include "tools.h"

static volatile sig_atomic_t stop_flag, flush_flag, epoch_flag;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		flush_flag = 1;
	else if (sig == SIGHUP)
		epoch_flag = 1;
	else
		stop_flag = 1;
}

static void print_note(const char *msg)
{
	fprintf(stderr, "%s: note: %s\n", tool_name, msg);
}

/* dcpid --push URL: the flushed epoch queued and the queue pushed
 * (fleet/queue.c); a server out of reach keeps the queue for the next flush. */
static void push_flushed(void *arg, struct prof_db *db, const char *epoch)
{
	struct dcpi_err err = { 0 };
	size_t left = 0;

	if (fleet_push_queue(arg, db, NULL, epoch, &left, &err) < 0)
		fprintf(stderr, "%s: note: push: %s; %zu epoch(s) queued for the next flush\n",
			tool_name, err.msg, left);
}

static void usage(FILE *f, int form)
{
	fprintf(f,
		"usage: %s [options]   (or %s)\n"
		"  -e, --event LIST      comma-separated, of %s;\n"
		"                        (and branches-taken, ibs_op where the PMU offers them);\n"
		"                        default cycles, instructions and those, else cpu-clock\n"
		"  -c, --count N         sample every N events (ns for the clocks)\n"
		"  -F, --freq HZ         sample HZ times a second instead\n"
		"  -g, --call-graph fp   user call chains by frame pointers\n"
		"      --db DIR          database (default $DCPIDB, then ./dcpidb)\n"
		"      --flush SECONDS   merge into the epoch this often (default 60)\n"
		"      --duration SECONDS  stop after this long (default: at SIGINT/SIGTERM)\n"
		"      --pidfile FILE    written once sampling runs\n"
		"      --push URL        after each flush, push the epoch to the fleet's\n"
		"                        clickhouse://HOST[:PORT]/DATABASE; epochs that\n"
		"                        could not be pushed are queued in the database\n"
		"      --max-held N      sample-table entries kept through failed flushes\n"
		"                        (default 1048576; more are dropped and counted)\n"
		"      --user-only       do not sample kernel code\n"
		"      --fixed-period    do not randomize the period\n"
		"      --seed N          seed of the random periods\n"
		"      --no-calibrate    skip the calibration loops\n"
		"  -q, --quiet           no summary line\n"
		"signals: SIGUSR1 flushes now, SIGHUP starts a new epoch\n",
		tool_name, strcmp(tool_name, "dcpid") ? "dcpid" : "dcpi daemon",
		collect_event_names());
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGUSR1, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int cmd_daemon(int argc, char **argv)
{
	struct collect_opts opts = { 0 };
	struct tool_opts o = { .help = usage, .shortopts = TOOL_SAMPLING_SHORTOPTS "qh",
			       .longopts = "flush=f duration=T pidfile=p max-held=M push=U "
					   "user-only:u",
			       .sampling = &opts, .common = TOOL_O_DB | TOOL_O_QUIET };
	struct collect_daemon_opts d = { 0 };
	struct collect_daemon_result res;
	struct dcpi_err err = { 0 };
	struct fleet_url url;
	int c, ret;
	uint64_t v;
	char *end;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'f':
			if (tool_parse_u64(optarg, &v) || v > 86400 * 365)
				return tool_fail("--flush %s: not a number of seconds", optarg);
			d.flush_seconds = (unsigned)v;
			break;
		case 'T':
			d.duration_seconds = strtod(optarg, &end);
			if (end == optarg || *end || !(d.duration_seconds > 0))
				return tool_fail("--duration %s: not a positive number", optarg);
			break;
		case 'p':
			d.pidfile = optarg;
			break;
		case 'M':
			if (tool_parse_u64(optarg, &v) || !v)
				return tool_fail("--max-held %s: not a positive number", optarg);
			d.max_held = v;
			break;
		case 'U':
			if (fleet_url_parse(optarg, &url, &err) < 0)
				return tool_fail("--push: %s", err.msg);
			d.flushed = push_flushed;
			d.flushed_arg = optarg;
			break;
		case 'u':
			d.user_only = 1;
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	if (optind < argc)
		return tool_fail("%s: unexpected argument", argv[optind]);
	opts.hw_import = tool_hw_import;	/* each flush's branch stacks, IBS */
	if (tool_sampling_finish(&opts, o.val.event, o.val.quiet))
		return 1;
	opts.db_dir = tool_db_dir(o.val.db);
	d.stop = &stop_flag;
	d.flush = &flush_flag;
	d.new_epoch = &epoch_flag;
	d.note = print_note;
	catch_signals();
	ret = collect_daemon(&opts, &d, &res, &err);
	if (ret)
		return tool_fail("%s", err.msg);
	if (res.failed_flushes || res.dropped)
		fprintf(stderr, "%s: %llu flush(es) failed and were retried, %llu samples "
			"dropped\n", tool_name, (unsigned long long)res.failed_flushes,
			(unsigned long long)res.dropped);
	if (!o.val.quiet)
		fprintf(stderr, "%s: %llu samples (%llu lost, %llu of its own left out) "
			"in %u epoch(s), %llu flushes, %s into %s; last epoch %s\n", tool_name,
			(unsigned long long)res.samples, (unsigned long long)res.lost,
			(unsigned long long)res.self, res.epochs,
			(unsigned long long)res.flushes,
			res.kernel ? "user and kernel" : "user only", opts.db_dir,
			res.epochs ? res.epoch : "(none: nothing sampled)");
	if (!o.val.quiet && res.hw_samples)
		fprintf(stderr, "%s: %llu branch-stack and IBS samples imported as counts\n",
			tool_name, (unsigned long long)res.hw_samples);
	return 0;
}
