/*
 * tools/cmd_record.c - `dcpi record [options] -- CMD [ARGS]`: run CMD under
 * sampling and write one new epoch of the database (collect_record does the
 * work).  Picks the events (cycles when the machine has a PMU, else
 * cpu-clock), passes SIGINT/SIGTERM on to CMD, and exits with CMD's status
 * (128 + signal when it was killed), as a shell would.  Path samples
 * (docs/paths.md) are taken by default at PATHS_DEFAULT: --paths RATE:K
 * changes the rate (bursts per second of each thread's CPU time) and the
 * steps per burst, --no-paths turns them off.  Every step is a value sample
 * too (docs/values.md: registers, addresses, at no measurable cost), which
 * the analysis uses to replay the walks of loads that miss
 * (estimate/replay.c); --no-values turns that off.  Kernel code is sampled
 * too where the kernel allows (--no-kernel: not).  -p/-t attach to running
 * processes or threads instead of running CMD (collect/attach.c): time
 * samples only, until --duration, CMD's end, SIGINT or theirs.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dcpi/analysis.h"
#include "dcpi/collect.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "sampling.h"
#include "tools.h"
#include "record.h"

/* Bursts per CPU second : steps.  The bench (bench/bench_paths.sh) holds
 * this within 2% of --no-paths on a CPU-bound program (docs/paths.md). */
#define PATHS_DEFAULT_RATE 25
#define PATHS_DEFAULT_STEPS 32

static void usage(FILE *f, int form)
{
	fprintf(f,
		"usage: dcpi record [options] [--] CMD [ARGS]\n"
		"       dcpi record [options] -p PID|-t TID [--duration S] [-- CMD [ARGS]]\n"
		"  -e, --event LIST   comma-separated, of %s;\n"
		"                     (and branches-taken, ibs_op where the PMU offers them);\n"
		"                     default cycles, instructions and those, else cpu-clock\n"
		"  -c, --count N      sample every N events (ns for the clocks);\n"
		"                     default %llu cycles or %llu ns\n"
		"  -F, --freq HZ      sample HZ times a second instead\n"
		"      --fixed-period do not randomize the period (DCPI sec. 4.1.1)\n"
		"      --seed N       seed of the random periods (default: random)\n"
		"      --no-calibrate skip the known-cycle calibration loops\n"
		"      --no-slices    keep no 100 ms time slices, detect no phases\n"
		"  -g, --call-graph fp  user call chains by frame pointers\n"
		"                     (docs/callgraph.md)\n"
		"      --paths RATE:K path samples: RATE bursts per second of each\n"
		"                     thread's CPU time, K single steps each\n"
		"                     (default %u:%u; docs/paths.md)\n"
		"      --no-paths     no path samples\n"
		"      --no-values    no value samples (by default every path step's\n"
		"                     registers go into per-instruction value hotlists,\n"
		"                     docs/values.md; --values is accepted)\n"
		"      --latency      with values, a timed re-load of each load's\n"
		"                     address before it runs (experimental: an\n"
		"                     out-of-order core has usually fetched the line\n"
		"                     already; docs/values.md)\n"
		"      --no-kernel    user code only (by default kernel code too where\n"
		"                     perf_event_paranoid allows, as [kernel.kallsyms])\n"
		"  -p, --pid PID[,PID...]  attach to running processes and their threads\n"
		"  -t, --tid TID[,TID...]  attach to these threads only\n"
		"      --duration S   with -p/-t: stop after S seconds (else when CMD,\n"
		"                     if given, exits, on SIGINT, or when they exit)\n"
		"      --plan FILE|auto  spend the value samples where the marking plan\n"
		"                     says (auto: the newest epoch's; docs/values.md)\n"
		"      --db DIR       database (default $DCPIDB, then ./dcpidb)\n"
		"  -q, --quiet        no summary line\n",
		collect_event_names(), COLLECT_CYCLES_PERIOD, COLLECT_CLOCK_PERIOD_NS,
		PATHS_DEFAULT_RATE, PATHS_DEFAULT_STEPS);
}

/* "RATE:K" */
static int parse_paths(const char *arg, struct collect_opts *o)
{
	unsigned long rate, k;
	char *end;

	errno = 0;
	rate = strtoul(arg, &end, 10);
	if (errno || end == arg || *end != ':' || !rate || rate > 100000 || arg[0] == '-')
		return tool_fail("--paths %s: want RATE:K, e.g. %u:%u", arg,
				 PATHS_DEFAULT_RATE, PATHS_DEFAULT_STEPS);
	k = strtoul(end + 1, &end, 10);
	if (errno || *end || k < 2 || k > 256)
		return tool_fail("--paths %s: K must be 2..256 steps", arg);
	o->paths_rate = (unsigned)rate;
	o->paths_steps = (unsigned)k;
	return 0;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/*
 * The walks of loads fed by their own result (estimate/replay.c), timed now,
 * while the machine is as the run left it (a busy sibling still busy), into
 * the database's cache where the analysis finds them.  A failure costs only
 * a timing at analysis: a note.  Bounded: a program with many such loads
 * (lbzip2's, up to 6.6 s after a 1 s run) would keep the user waiting past
 * the run; after REPLAY_BUDGET_NS or a quarter of the run's time, whichever
 * is longer, the loads left are timed by the analysis when it needs them.
 */
#define REPLAY_BUDGET_NS 2000000000ull
static void replay_now(const char *dir, const char *epoch, uint64_t run_ns, int quiet)
{
	struct prof_db *db = NULL;
	struct dcpi_err err = { 0 };
	uint64_t t0 = dcpi_now_ns(), bytes, budget = run_ns / 4;
	size_t n = 0, left = 0;

	if (budget < REPLAY_BUDGET_NS)
		budget = REPLAY_BUDGET_NS;
	if (prof_db_open(dir, 0, &db, &err) < 0 ||
	    est_replay_epoch(db, dir, epoch, budget, &n, &left, &bytes, &err) < 0)
		fprintf(stderr, "%s: note: loads not replayed now: %s\n", tool_name, err.msg);
	else if (n && !quiet)
		fprintf(stderr, "%s: timed the walk%s of %zu self-fed load%s (up to %.3g MB) for "
			"the analysis in %.1f s\n", tool_name, n > 1 ? "s" : "", n, n > 1 ? "s" : "",
			bytes / 1048576.0, (double)(dcpi_now_ns() - t0) / 1e9);
	if (left && !quiet)
		fprintf(stderr, "%s: the walks of %zu self-fed load%s (or of their ranges) left "
			"to time at analysis (%.1f s spent here)\n", tool_name, left, left > 1 ? "s" : "",
			(double)(dcpi_now_ns() - t0) / 1e9);
	if (db)
		prof_db_close(db);
}

int cmd_record(int argc, char **argv)
{
	struct collect_opts opts = { 0 };
	struct tool_opts o = { .help = usage, .shortopts = "+" TOOL_SAMPLING_SHORTOPTS "p:t:qh",
			       .longopts = "paths=T no-paths:U values:V no-values:W latency:L "
					   "no-kernel:K pid=p tid=t duration=R plan=M",
			       .sampling = &opts,
			       .common = TOOL_O_DB | TOOL_O_QUIET };
	struct collect_attach_opts at = { 0 };
	struct collect_result res;
	struct dcpi_err err = { 0 };
	const char *plan = NULL;
	char plan_file[4096];
	size_t nmarks;
	int quiet, values = -1, c, ret;
	uint64_t t_run;

	opts.paths_rate = PATHS_DEFAULT_RATE;
	opts.paths_steps = PATHS_DEFAULT_STEPS;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'T':
			if (parse_paths(optarg, &opts))
				return 1;
			break;
		case 'U':
			opts.paths_rate = 0;
			opts.paths_steps = 0;
			break;
		case 'V':
			values = 1;
			break;
		case 'W':
			values = 0;
			break;
		case 'L':
			opts.latency = 1;
			break;
		case 'K':
			opts.no_kernel = 1;
			break;
		case 'p':
		case 't':
		case 'R':
			if (record_attach_option(c, optarg, &at))
				return 1;
			break;
		case 'M':
			plan = optarg;
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	quiet = o.val.quiet;
	if (optind >= argc && !at.nids) {
		usage(stderr, 0);
		return tool_fail("no command to run");
	}
	opts.hw_import = tool_hw_import;	/* branch stacks, IBS: into the epoch */
	if (tool_sampling_finish(&opts, o.val.event, quiet))
		return 1;
	if ((at.nids || at.duration_seconds > 0) && plan)
		return tool_fail("--plan needs the program started by dcpi record (drop -p/-t)");
	if (at.nids || at.duration_seconds > 0)
		return record_attached(&opts, &at, argv + optind, o.val.db, quiet);
	/* values ride on path steps: on with them unless asked otherwise */
	opts.values = values < 0 ? opts.paths_rate > 0 : values;
	if (opts.latency && !opts.values)
		return tool_fail("--latency needs value samples (drop --no-values)");
	if (opts.values && !opts.paths_rate)
		return tool_fail("--values needs path samples (they carry the values): "
				 "drop --no-paths");
	opts.db_dir = tool_db_dir(o.val.db);
	if (record_check_db(opts.db_dir))
		return 1;
	if (plan && (!opts.values || collect_plan_resolve(opts.db_dir, plan, plan_file,
							   sizeof(plan_file), &err)))
		return tool_fail("%s", opts.values ? err.msg : "--plan needs value samples");
	opts.plan = plan ? plan_file : NULL;
	opts.pending_signal = &record_pending_signal;
	record_catch_signals();
	t_run = dcpi_now_ns();
	ret = collect_record(&opts, argv + optind, &res, &err);
	t_run = dcpi_now_ns() - t_run;
	if (ret && res.exec_errno) {
		tool_fail("%s", err.msg);
		return res.exec_errno == ENOENT ? 127 : 126;
	}
	if (ret)
		return tool_fail("%s", err.msg);
	if (res.paths_static)
		fprintf(stderr, "%s: note: %s is statically linked: no path samples%s (they need "
			"the preloaded runtime); time samples as usual\n", tool_name,
			argv[optind], opts.values ? " or value samples" : "");
	if (res.paths_note[0])
		fprintf(stderr, "%s: note: no path samples: %s\n", tool_name, res.paths_note);
	if (!quiet && opts.paths_rate && !res.paths_static && !res.paths_note[0])
		fprintf(stderr, "%s: %llu path bursts (%llu steps) from %llu threads of %llu "
			"processes\n", tool_name, (unsigned long long)res.paths_bursts,
			(unsigned long long)res.paths_steps,
			(unsigned long long)res.paths_threads,
			(unsigned long long)res.paths_processes);
	for (const char *l = res.paths_stopped, *e; *l; l = *e ? e + 1 : e) {
		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		fprintf(stderr, "%s: note: %.*s\n", tool_name, (int)(e - l), l);
	}
	if (!quiet && res.stepped)
		fprintf(stderr, "%s: %llu samples taken inside path bursts left out\n",
			tool_name, (unsigned long long)res.stepped);
	if (!quiet && opts.values && !res.paths_static && !res.paths_note[0])
		fprintf(stderr, "%s: %llu value samples (%llu values) in %llu images\n",
			tool_name, (unsigned long long)res.values_samples,
			(unsigned long long)res.values_values,
			(unsigned long long)res.values_images);
	if (!quiet)
		fprintf(stderr, "%s: %llu samples (%llu lost) of %s into %s/%s\n", tool_name,
			(unsigned long long)res.samples, (unsigned long long)res.lost,
			opts.events[0]->name, opts.db_dir, res.epoch);
	if (!quiet && res.hw_note[0])
		fprintf(stderr, "%s: %s\n", tool_name, res.hw_note);
	if (!quiet && plan)
		fprintf(stderr, "%s: plan %s: %llu procedures marked (%llu dropped), %llu calls "
			"caught at their entries\n", tool_name, plan_file,
			(unsigned long long)res.plan_marks, (unsigned long long)res.plan_dropped,
			(unsigned long long)res.plan_calls);
	if (!quiet && plan && res.plan_counts)
		fprintf(stderr, "%s: %llu calls counted at the entries of %llu procedures\n",
			tool_name, (unsigned long long)res.calls_counted,
			(unsigned long long)res.calls_procs);
	if (!quiet && plan && res.blocks_counted)
		fprintf(stderr, "%s: the executions of %llu blocks of loops counted\n",
			tool_name, (unsigned long long)res.blocks_counted);
	if (opts.values && res.values_samples &&
	    rep_plan_write(opts.db_dir, res.epoch, &nmarks, &err))	/* the next run's plan */
		fprintf(stderr, "%s: note: no plan written: %s\n", tool_name, err.msg);
	if (opts.values && !res.values_samples && !res.paths_static && !res.paths_note[0])
		fprintf(stderr, "%s: note: no plan written: no burst took a value sample (%llu "
			"bursts); a longer run or a higher --paths rate gives the next "
			"--plan auto one, which otherwise takes the newest epoch that has "
			"a plan\n", tool_name, (unsigned long long)res.paths_bursts);
	if (opts.values && res.values_samples && !getenv("DCPI_NO_REPLAY"))
		replay_now(opts.db_dir, res.epoch, t_run, quiet);
	return exit_status(res.status);
}
