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
#include "analysis.h"
#include "tools.h"

static const char fb_usage[] =
	"usage: dcpi %s [PROG...] -o FILE [options]\n"
	"  writes the %s from the estimated executions of every sampled\n"
	"  procedure of PROG (default: the most sampled image of the epoch), the\n"
	"  counts dcpicalc prints\n"
	"  -o, --output FILE   where to write it ('-': standard output)\n"
	"      --min-samples N skip procedures with fewer samples (default 1)\n"
	"      --raw-samples   counts are the samples themselves, not estimated\n"
	"                      executions (what a plain sampler has; to compare)\n"
	"      --lines         llvm-prof: key by source lines even where PROG was built\n"
	"                      with -fpseudo-probe-for-profiling (default: by probes\n"
	"                      there; build the final binary with that flag too)\n"
	"  and the analysis options of dcpicalc (--exact is not for bolt-prof):\n";

static const char *const fb_names[] = { "llvm-prof", "gcc-prof", "bolt-prof" };

static void fb_help(FILE *f, int format)
{
	fprintf(f, fb_usage, fb_names[format], opt_format_name((enum opt_format)format));
	fputs(tool_ana_usage, f);
}

static int fb_parse(int argc, char **argv, struct opt_request *rq, int format)
{
	struct tool_ana_args a;
	struct tool_opts o = { .help = fb_help, .help_arg = format, .shortopts = "o:e:m:h",
			       .longopts = "min-samples=M raw-samples:r lines:l", .ana = &a,
			       .common = TOOL_O_OUTPUT };
	int c;

	tool_ana_args_init(&a);
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'l':
			if (format != OPT_F_LLVM)
				return tool_fail("--lines: only llvm-prof has pseudo probes");
			rq->lines = 1;
			break;
		case 'r': rq->raw_samples = 1; break;
		case 'M':
			rq->min_samples = strtod(optarg, NULL);
			if (!(rq->min_samples > 0))
				return tool_fail("--min-samples %s: not a positive number", optarg);
			break;
		}
	}
	if (c < 0)
		return c == TOOL_OPT_HELP ? -1 : 1;
	rq->out = o.val.out;
	if (format == OPT_F_BOLT && a.o.exact_db)
		return tool_fail("--exact: BOLT's edge counts are estimated only");
	if (!rq->out) {
		fb_help(stderr, format);
		return tool_fail("-o FILE is required");
	}
	rq->progs = (const char *const *)argv + optind;
	rq->nprogs = (size_t)(argc - optind);
	return tool_ana_request(&a, rq);
}

int tool_feedback(int argc, char **argv, int format)
{
	struct dcpi_err err = { 0 };
	struct opt_request rq;
	struct opt_summary sum;
	int rc;

	memset(&rq, 0, sizeof(rq));
	rq.format = (enum opt_format)format;
	rc = fb_parse(argc, argv, &rq, format);
	if (rc)
		return rc < 0 ? 0 : rc;
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
	if (sum.lbr_stacks)
		fprintf(stderr, "%s: counts: branch records (%llu stacks)\n", tool_name,
			(unsigned long long)sum.lbr_stacks);
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
