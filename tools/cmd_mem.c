/*
 * tools/cmd_mem.c - dcpi mem (dcpimem): hot data objects, pages and shared
 * cache lines from the data profiles (report/mem.c; docs/data.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/data.h"
#include "tools.h"

static const char mem_usage[] =
	"usage: dcpi mem [options]\n"
	"  hot data objects (globals by symbol, heap blocks by allocation site, stack\n"
	"  frames by procedure), hot pages and shared cache lines (true or false sharing)\n"
	"      --db DIR    profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E   epoch name, or 'all' (default: the newest)\n"
	"      --top N     objects and pages listed (default 20)\n"
	"      --insns N   busiest instructions listed per object (default 4)\n"
	"      --json      machine-readable output\n"
	"      --weighted  objects by bytes, each sampled access weighing its\n"
	"                  instruction's estimated executions (the one analysis)\n"
	"      --with-syscalls  weighted, plus the bytes read(2) and write(2) moved\n"
	"                  into and out of each heap block, counted exactly\n"
	"Data samples come with the value samples of `dcpi record` (docs/data.md).\n";

int cmd_mem(int argc, char **argv)
{
	struct tool_opts to = { .usage = mem_usage, .shortopts = "h",
				.longopts = "top=t insns=i weighted:w with-syscalls:S",
				.common = TOOL_O_DB | TOOL_O_EPOCH | TOOL_O_JSON };
	struct rep_mem_opts o = { 0 };
	struct dcpi_err err = { 0 };
	char *end;
	int c;

	while ((c = tool_opt_next(&to, argc, argv)) > 0) {
		switch (c) {
		case 'w': o.weighted = 1; break;
		case 'S': o.with_syscalls = 1; break;
		case 't':
			o.top = (unsigned)strtoul(optarg, &end, 10);
			if (*end || end == optarg || !o.top)
				return tool_fail("--top: '%s' is not a positive count", optarg);
			break;
		case 'i':
			o.insns = (unsigned)strtoul(optarg, &end, 10);
			if (*end || end == optarg || !o.insns)
				return tool_fail("--insns: '%s' is not a positive count", optarg);
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	o.epoch = to.val.epoch;
	o.json = to.val.json;
	if (optind < argc)
		return tool_fail("unexpected argument '%s'", argv[optind]);
	if (rep_mem(stdout, tool_db_dir(to.val.db), &o, &err) < 0)
		return tool_fail("%s", err.msg);
	return 0;
}
