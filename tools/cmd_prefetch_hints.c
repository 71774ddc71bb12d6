/*
 * tools/cmd_prefetch_hints.c - dcpi prefetch-hints: LLVM prefetch hints for the loads the
 * dynamic-stall culprits charge with D-cache cycles in constant-stride
 * loops, and the report of every load considered (optimize/prefetch.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/optimize.h"
#include "dcpi/report.h"
#include "analysis.h"
#include "tools.h"

static const char pf_usage[] =
	"usage: dcpi prefetch-hints [PROG...] -o FILE [options]\n"
	"  writes LLVM's prefetch hints (clang -mllvm -prefetch-hints-file=FILE, with\n"
	"  -mllvm -x86-discriminate-memops at both builds) for the loads of PROG that\n"
	"  the stall analysis charges with D-cache cycles, in loops where their address\n"
	"  steps by a constant; prints every load considered and why it got no hint\n"
	"  -o, --output FILE   where to write the hints ('-': standard output)\n"
	"      --min-share F   loads charged with at least this share of the cycles\n"
	"                      (default 0.01)\n"
	"      --json          the report as JSON\n"
	"  and the analysis options of dcpicalc:\n";

static void pf_help(FILE *f, int form)
{
	fputs(pf_usage, f);
	fputs(tool_ana_usage, f);
}

int cmd_prefetch_hints(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct tool_ana_args a;
	struct tool_opts o = { .help = pf_help, .shortopts = "o:e:m:h", .longopts = "min-share=M",
			       .ana = &a,
			       .common = TOOL_O_JSON | TOOL_O_OUTPUT };
	struct opt_request rq;
	struct opt_summary sum;
	int c, rc, json;
	char *end;

	memset(&rq, 0, sizeof(rq));
	rq.format = OPT_F_PREFETCH;
	tool_ana_args_init(&a);
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'M':
			rq.min_share = strtod(optarg, &end);
			if (end == optarg || *end || !(rq.min_share > 0 && rq.min_share < 1))
				return tool_fail("--min-share %s: not a share in (0, 1)", optarg);
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	rq.out = o.val.out;
	json = o.val.json;
	if (!rq.out) {
		fputs(pf_usage, stderr);
		return tool_fail("-o FILE is required");
	}
	rq.progs = (const char *const *)argv + optind;
	rq.nprogs = (size_t)(argc - optind);
	rc = tool_ana_request(&a, &rq);
	if (rc)
		return rc;
	if (opt_feedback(&rq, &sum, &err) < 0) {
		opt_summary_free(&sum);
		return tool_fail("%s", err.msg);
	}
	if (sum.notes[0])
		fprintf(stderr, "%s: %s\n", tool_name, sum.notes);
	if (json)
		rep_hints_json(strcmp(rq.out, "-") ? stdout : stderr, &sum.hints);
	else
		rep_hints_text(strcmp(rq.out, "-") ? stdout : stderr, &sum.hints);
	if (!sum.bytes)
		fprintf(stderr, "%s: no prefetch hint: %s not written (the report says why for "
			"each load)\n", tool_name, rq.out);
	else if (strcmp(rq.out, "-"))
		fprintf(stderr, "%s: %s: %s, %zu bytes: epoch %s, event %s%s\n", tool_name,
			rq.out, opt_format_name(rq.format), sum.bytes, sum.epoch, sum.event,
			sum.relative ? " (uncalibrated: relative counts)" : "");
	opt_summary_free(&sum);
	return 0;
}
