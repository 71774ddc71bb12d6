/*
 * tools/cmd_list.c - dcpilist: one procedure by source line, like perf annotate with
 * counts (report/list.c renders it).  The counts are est_analyze's
 * (estimate/analyze.c), the same dcpicalc prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "dcpi/report.h"
#include "tools.h"

static void usage(FILE *f, int form)
{
	fprintf(f, "usage: %s PROC [options]\n"
		"  PROC by source line (DWARF lines, inlined subroutines named): per line and\n"
		"  per instruction the samples, estimated executions, CPI and first culprit\n"
		"  PROC                procedure name as dcpiprof prints it, or 0xADDRESS\n"
		"      --source-dir DIR  look for source files under DIR too (repeat): the\n"
		"                      path DWARF names, then it less its leading folders\n"
		"      --json          machine-readable output\n"
		"%s", tool_name, tool_ana_usage);
}

int cmd_list(int argc, char **argv)
{
	enum { MAX_DIRS = 16 };
	struct tool_proc t;
	struct tool_opts o = { .help = usage, .shortopts = "e:m:h", .longopts = "source-dir=S",
			       .ana = &t.a, .common = TOOL_O_JSON };
	struct rep_calc v;
	const char *dirs[MAX_DIRS];
	size_t ndirs = 0;
	int c, rc;

	memset(&t, 0, sizeof(t));
	tool_ana_args_init(&t.a);
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'S':
			if (tool_opt_keep(dirs, &ndirs, MAX_DIRS) < 0)
				return tool_fail("--source-dir: at most %d", MAX_DIRS);
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	if (optind + 1 != argc) {
		usage(stderr, 0);
		return 1;
	}
	t.spec = argv[optind];
	rc = tool_proc_open(&t);
	if (!rc && !t.proc)
		rc = tool_fail("%s: one procedure, not every one", t.spec);
	if (!rc)
		rc = tool_proc_analyze(&t);
	if (!rc) {
		tool_proc_view(&t, 0, o.val.json, &v);
		v.source_dirs = dirs;
		v.nsource_dirs = ndirs;
		rep_calc_list(stdout, &v, o.val.json);
	}
	tool_proc_close(&t);
	return rc;
}
