/*
 * tools/cmd_values.c - dcpivlist, dcpivargs, dcpivcg, dcpivblks: the value-sample
 * reports (seed 000, "Reports"; docs/values.md), and dcpi specialize, the
 * hints drawn from them.  One option parser for the five; the reports are
 * report/vreports.c and report/vspec.c.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/report.h"
#include "tools.h"

enum vreport { VR_LIST, VR_ARGS, VR_CG, VR_BLKS, VR_SPEC };

static const struct {
	const char *name, *what;
	int need_proc;
	int (*fn)(FILE *f, struct rep_vals *v, const char *proc, int json,
		  struct dcpi_err *err);
} vreports[] = {
	[VR_LIST] = { "dcpivlist PROC", "per instruction of PROC: its value profiles", 1,
		      rep_vlist },
	[VR_ARGS] = { "dcpivargs [PROC]", "per procedure: each argument's most frequent value "
		      "and its share, and the call sites", 0, rep_vargs },
	[VR_CG] = { "dcpivcg [PROC]", "per indirect call or jump site: its targets", 0,
		    rep_vcg },
	[VR_BLKS] = { "dcpivblks PROC", "per basic block of PROC: its value profiles", 1,
		      rep_vblks },
	/* takes --min-seen: rep_vspecialize, called below */
	[VR_SPEC] = { "dcpi specialize [PROC]", "specialization hints from value invariance, "
		      "by time at stake", 0, NULL },
};

static void usage(FILE *f, int r)
{
	fprintf(f, "usage: %s%s [options]\n  %s\n"
		"  PROC            procedure name as dcpiprof prints it, or 0xADDRESS\n"
		"      --db DIR    profile database (default $DCPIDB, then ./dcpidb)\n"
		"      --epoch E   epoch name, or 'all' (default: the newest)\n"
		"      --json      machine-readable output\n"
		"%s"
		"Values come from `dcpi record --values`; invariant: the top value's share\n"
		"is at least %g, semi-invariant: at least %g.\n",
		tool_name, strrchr(vreports[r].name, ' '), vreports[r].what,
		r == VR_SPEC ? "      --min-seen N  only lists that saw at least N values (default "
			       "20)\n" : "", REP_VAL_INVARIANT, REP_VAL_SEMI_INVARIANT);
}

static int vreport_main(int argc, char **argv, enum vreport r)
{
	struct tool_opts o = { .help = usage, .help_arg = r, .shortopts = "h",
			       .longopts = "min-seen=m",
			       .common = TOOL_O_DB | TOOL_O_EPOCH | TOOL_O_JSON };
	const char *proc = NULL;
	struct dcpi_err err = { 0 };
	struct rep_vals *v = NULL;
	unsigned min_seen = REP_VSPEC_MIN_SEEN;
	int c, rc, have_min = 0;
	char *end;
	long n;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'm':
			n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 0 || n > INT_MAX)
				return tool_fail("--min-seen: '%s' is not a count", optarg);
			min_seen = (unsigned)n;
			have_min = 1;
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	if (optind < argc)
		proc = argv[optind++];
	if (optind < argc)
		return tool_fail("unexpected argument '%s'", argv[optind]);
	if (have_min && r != VR_SPEC)
		return tool_fail("--min-seen is an option of dcpi specialize");
	if (!proc && vreports[r].need_proc) {
		usage(stderr, r);
		return 1;
	}
	rc = rep_vals_open(tool_db_dir(o.val.db), o.val.epoch, &v, &err);
	if (rc == 0 && r == VR_SPEC)
		rc = rep_vspecialize(stdout, v, proc, o.val.json, min_seen, &err);
	else if (rc == 0)
		rc = vreports[r].fn(stdout, v, proc, o.val.json, &err);
	if (v)
		tool_db_notes(rep_vals_db(v));
	rep_vals_close(v);
	return rc < 0 ? tool_fail("%s", err.msg) : 0;
}

int cmd_vlist(int argc, char **argv)
{
	return vreport_main(argc, argv, VR_LIST);
}

int cmd_vargs(int argc, char **argv)
{
	return vreport_main(argc, argv, VR_ARGS);
}

int cmd_vcg(int argc, char **argv)
{
	return vreport_main(argc, argv, VR_CG);
}

int cmd_vblks(int argc, char **argv)
{
	return vreport_main(argc, argv, VR_BLKS);
}

int cmd_specialize(int argc, char **argv)
{
	return vreport_main(argc, argv, VR_SPEC);
}
