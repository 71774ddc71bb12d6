/*
 * tools/cmd_prof.c - dcpiprof: samples per procedure (or per image), DCPI fig. 1.
 * With --from URL the samples are the fleet's: the server sums them per
 * (image, event, offset) over every host's committed epochs (fleet/pull.c,
 * fleet_aggregate) and nothing is written locally (docs/fleet.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"
#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/timeline.h"
#include "tools.h"

struct prof_args {
	struct tool_values val;		/* --db, --epoch, --event, --json, --vmlinux, and
					 * --from: a fleet's URL instead of a database */
	const char *time, *split;
	struct fleet_query_spec q;
	int by_image, phases, callees;
	long limit, phase;
};

static const char prof_usage[] =
	"usage: dcpiprof [options]\n"
	"  -i, --images       one row per image instead of per procedure\n"
	"  -e, --event E      sort by event E (default: the first event)\n"
	"  -n, --limit N      print at most N rows\n"
	"      --db DIR       profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E      epoch name, or 'all' (default: the newest)\n"
	"      --json         machine-readable output\n"
	"      --phases       the epoch's phases: time ranges and top procedures\n"
	"      --time A-B     only the samples from A to B seconds into the epoch\n"
	"      --phase N      only the samples of phase N (as --phases numbers them)\n"
	"      --callers PROC PROC's samples (on the stack) by caller (record -g;\n"
	"                     docs/callgraph.md)\n"
	"      --callees PROC the same by callee\n"
	"      --vmlinux FILE kernel samples named from the kernel's vmlinux (refused\n"
	"                     unless its build-id is the recorded kernel's); without it\n"
	"                     one is looked for as perf does, else /proc/kallsyms\n"
	"      --from URL     the fleet's samples, summed in its ClickHouse server\n"
	"                     (clickhouse://HOST[:PORT]/DATABASE), every image or one:\n"
	"      --build-id ID, --image NAME, --hosts GLOB, --since T, --until T (as pull's)\n";

static int parse_args(int argc, char **argv, struct prof_args *a)
{
	struct tool_opts o = { .usage = prof_usage, .shortopts = "ie:n:h",
			       .longopts = "images:i limit=n phases:P time=T phase=N callers=C "
					   "callees=L",
			       .query = &a->q, .common = TOOL_O_DB | TOOL_O_EPOCH | TOOL_O_EVENT |
			       TOOL_O_JSON | TOOL_O_VMLINUX };
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->limit = -1;
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'i': a->by_image = 1; break;
		case 'n':
			a->limit = strtol(optarg, &end, 10);
			if (*end || a->limit < 0)
				return tool_fail("--limit: '%s' is not a count", optarg);
			break;
		case 'P': a->phases = 1; break;
		case 'T': a->time = optarg; break;
		case 'N':
			a->phase = strtol(optarg, &end, 10);
			if (*end || a->phase < 1)
				return tool_fail("--phase: '%s' is not a phase number", optarg);
			break;
		case 'C': a->split = optarg; a->callees = 0; break;
		case 'L': a->split = optarg; a->callees = 1; break;
		}
	}
	if (c < 0)
		return c == TOOL_OPT_HELP ? -1 : 1;
	a->val = o.val;
	if (optind < argc)
		return tool_fail("unexpected argument '%s'", argv[optind]);
	if (a->time && a->phase)
		return tool_fail("--time and --phase: give one");
	if (!a->val.from && (a->q.build_id || a->q.image || a->q.hosts || a->q.since_ns ||
			 a->q.until_ns))
		return tool_fail("--build-id, --image, --hosts, --since, --until need --from");
	if (a->val.from && (a->val.db || a->val.epoch))
		return tool_fail("--from reads a fleet, not a database (--db, --epoch)");
	if (a->val.from && (a->phases || a->time || a->phase))
		return tool_fail("--from sums a fleet: it keeps no time slices (--phases, --time, --phase)");
	if (a->split && (a->time || a->phase || a->phases || a->by_image || a->val.from))
		return tool_fail("--callers and --callees take the whole epoch of a database, per procedure");
	return 0;
}

int cmd_prof(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct prof_args a;
	struct tool_epoch e = { 0 };
	struct rep_table t = { 0 };
	size_t nrows;
	int rc, ev = 0;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.val.from)
		rc = fleet_load_profiles(a.val.from, &a.q, &e.p, &e.n, e.name, sizeof(e.name),
					 &err);
	else
		rc = tool_epoch_open(&e, a.val.db, a.val.epoch, &err);
	if (rc == 0 && tool_kernel_image(&e.p, &e.n, a.val.vmlinux)) {
		rc = 1;
		goto out;
	}
	if (rc == 0 && a.split) {
		if (rep_cg_callers(stdout, e.db, e.name, a.split, a.val.event, a.callees, a.limit,
				   a.val.json, &err) < 0)
			rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (rc == 0 && (a.phases || a.time || a.phase)) {
		size_t dropped = 0;
		int done = 0;

		rc = rep_prof_by_time(stdout, e.db, e.name, a.phases, a.time, a.phase, a.limit,
				      a.val.json, &e.p, &e.n, &done, &dropped, &err);
		if (rc == 0 && dropped)
			fprintf(stderr, "%s: note: %zu profiles of other events left out: time "
				"slices keep one event\n", tool_name, dropped);
		if (rc == 0 && done)
			goto out;
	}
	if (rc == 0)
		rc = rep_summarize(e.p, e.n, a.by_image, &t, &err);
	if (rc < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (t.nevents == 0) {
		rc = tool_fail("%s: epoch %s holds no samples", tool_db_dir(a.val.db), e.name);
		goto out;
	}
	if (a.val.event && (ev = rep_event_index(&t, a.val.event)) < 0) {
		rc = tool_fail("--event %s: no such event in epoch %s", a.val.event, e.name);
		goto out;
	}
	rep_sort(&t, (size_t)ev);
	nrows = a.limit >= 0 && (size_t)a.limit < t.nrows ? (size_t)a.limit : t.nrows;
	if (a.val.json)
		rep_prof_json(stdout, &t, a.by_image, e.name, nrows, e.db);
	else
		rep_prof_text(stdout, &t, a.by_image,
			      a.val.from ? a.val.from : tool_db_dir(a.val.db), e.name, nrows,
			      (size_t)ev);
	for (size_t i = 0; !a.val.json && i < t.nnotes; i++)
		fprintf(stderr, "%s: note: %s\n", tool_name, t.notes[i]);
	rc = 0;
out:
	rep_free(&t);
	tool_epoch_close(&e);
	return rc;
}
