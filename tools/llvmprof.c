/*
 * llvmprof.c - dcpi llvm-prof: LLVM sample profile (clang
 * -fprofile-sample-use) from estimated counts; and the option parsing the
 * three feedback commands share (gcc-prof, bolt-prof call tool_feedback).
 * The work is optimize/ (opt_feedback).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/optimize.h"
#include "tools.h"

static const char fb_usage[] =
	"usage: dcpi %s [PROG...] -o FILE [options]\n"
	"  writes the %s from the estimated executions of every sampled\n"
	"  procedure of PROG (default: the most sampled image of the epoch)\n"
	"  -o, --output FILE   where to write it ('-': standard output)\n"
	"      --db DIR        profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E       epoch (default: the newest)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"  -m, --model NAME    pipeline model (default: from CPUID)\n"
	"      --method M      dcpi or global (default)\n"
	"      --window W      insn, block (default) or skid\n"
	"      --no-calibration  ignore DB/calibration-<model>.txt\n"
	"      --min-samples N skip procedures with fewer samples (default 1)\n"
	"      --raw-samples   counts are the samples themselves, not estimated\n"
	"                      executions (what a plain sampler has; to compare)\n"
	"      --exact DB      executions from callgrind-Ir in DB's newest epoch (a\n"
	"                      callgrind run imported with dcpi import), not estimated:\n"
	"                      the best the samples could give; not for bolt-prof\n"
	"      --lines         llvm-prof: key by source lines even where PROG was built\n"
	"                      with -fpseudo-probe-for-profiling (default: by probes\n"
	"                      there; build the final binary with that flag too)\n";

static const char *const fb_names[] = { "llvm-prof", "gcc-prof", "bolt-prof" };

static int fb_parse(int argc, char **argv, struct opt_request *rq, int format)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'd' },
		{ "epoch", required_argument, NULL, 'E' },
		{ "event", required_argument, NULL, 'e' },
		{ "model", required_argument, NULL, 'm' },
		{ "method", required_argument, NULL, 'M' },
		{ "window", required_argument, NULL, 'W' },
		{ "no-calibration", no_argument, NULL, 'N' },
		{ "min-samples", required_argument, NULL, 'n' },
		{ "raw-samples", no_argument, NULL, 'R' },
		{ "exact", required_argument, NULL, 'x' },
		{ "lines", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *fmt = opt_format_name((enum opt_format)format);
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:e:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': rq->out = optarg; break;
		case 'd': rq->db = optarg; break;
		case 'E': rq->epoch = optarg; break;
		case 'e': rq->event = optarg; break;
		case 'm':
			rq->model = model_by_name(optarg);
			if (!rq->model)
				return tool_fail("--model %s: no such model", optarg);
			break;
		case 'M':
			if (est_method_parse(optarg, &rq->opts.method) < 0)
				return tool_fail("--method %s: not dcpi or global", optarg);
			break;
		case 'W':
			if (est_window_parse(optarg, &rq->opts.window) < 0)
				return tool_fail("--window %s: not insn, block or skid", optarg);
			break;
		case 'N': rq->no_calib = 1; break;
		case 'L':
			if (format != OPT_F_LLVM)
				return tool_fail("--lines: only llvm-prof has pseudo probes");
			rq->lines = 1;
			break;
		case 'R': rq->raw_samples = 1; break;
		case 'x':
			if (format == OPT_F_BOLT)
				return tool_fail("--exact: BOLT's edge counts are estimated only");
			rq->exact_db = optarg;
			break;
		case 'n':
			rq->min_samples = strtod(optarg, NULL);
			if (!(rq->min_samples > 0))
				return tool_fail("--min-samples %s: not a positive number", optarg);
			break;
		case 'h': printf(fb_usage, fb_names[format], fmt); return -1;
		default: fprintf(stderr, fb_usage, fb_names[format], fmt); return 1;
		}
	}
	if (!rq->out) {
		fprintf(stderr, fb_usage, fb_names[format], fmt);
		return tool_fail("-o FILE is required");
	}
	rq->progs = (const char *const *)argv + optind;
	rq->nprogs = (size_t)(argc - optind);
	return 0;
}

int tool_feedback(int argc, char **argv, int format)
{
	struct dcpi_err err = { 0 };
	struct opt_request rq;
	struct opt_summary sum;
	int rc;

	memset(&rq, 0, sizeof(rq));
	rq.format = (enum opt_format)format;
	est_opts_default(&rq.opts);
	rc = fb_parse(argc, argv, &rq, format);
	if (rc)
		return rc < 0 ? 0 : rc;
	rq.db = tool_db_dir(rq.db);
	if (opt_feedback(&rq, &sum, &err) < 0)
		return tool_fail("%s", err.msg);
	if (sum.notes[0])
		fprintf(stderr, "%s: %s\n", tool_name, sum.notes);
	if (strcmp(rq.out, "-"))
		fprintf(stderr, "%s: %s: %s, %zu bytes: epoch %s, event %s, %zu image%s, "
			"%zu procedures estimated%s%s\n", tool_name, rq.out,
			opt_format_name(rq.format), sum.bytes, sum.epoch, sum.event, sum.nimages,
			sum.nimages == 1 ? "" : "s", sum.nprocs,
			sum.probes ? ", keyed by pseudo probes" : "",
			sum.relative ? " (uncalibrated: relative counts)" : "");
	if (sum.no_probe)
		fprintf(stderr, "%s: %zu pseudo probes not placed: their function has no "
			"symbol or description in the binary\n", tool_name, sum.no_probe);
	if (sum.skipped)
		fprintf(stderr, "%s: %zu sampled procedure%s skipped: code not decodable\n",
			tool_name, sum.skipped, sum.skipped == 1 ? "" : "s");
	return 0;
}

int cmd_llvm_prof(int argc, char **argv)
{
	return tool_feedback(argc, argv, OPT_F_LLVM);
}
