/*
 * tools/cmd_stats.c - dcpistats: per procedure, how its samples vary across runs (the
 * DCPI paper's fig. 3).  A run is a database's newest epoch (DB...) or one
 * epoch of --db (--epoch E, given several times, or --all-epochs).  Rows
 * are ranked by evidence: the range beyond sampling error (docs/diff.md).
 * The work is report/stats.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/report.h"
#include "tools.h"

static const char stats_usage[] =
	"usage: dcpistats [DB...] [options]\n"
	"  per procedure across runs: range %% ((max - min) / sum), sum, sum %%, N,\n"
	"  mean, std-dev, min, max of its samples (the DCPI paper's fig. 3);\n"
	"  beyond %%: the range less each end's 99%% sampling error\n"
	"  DB...               one run per database: its newest epoch\n"
	"      --db DIR        runs are epochs of this database (default $DCPIDB,\n"
	"                      then ./dcpidb) when no DB is given\n"
	"      --epoch E       an epoch of --db as a run (repeat; default: all epochs)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"      --sort S        evidence (default: beyond %%), range or sum\n"
	"      --limit N       the first N procedures (default 30, 0: all)\n"
	"      --json          machine-readable output\n";

#define MAX_RUNS 256

int cmd_stats(int argc, char **argv)
{
	struct tool_opts o = { .usage = stats_usage, .shortopts = "e:h",
			       .longopts = "epoch=E "	/* repeated: a run each */
					   "sort=s limit=n",
			       .common = TOOL_O_DB | TOOL_O_EVENT | TOOL_O_JSON };
	const char *db, *event, *epochs[MAX_RUNS], *labels[MAX_RUNS];
	struct rep_table t[MAX_RUNS];
	char used[MAX_RUNS][300];
	struct rep_stats st;
	struct dcpi_err err = { 0 };
	char **names = NULL;
	size_t nepochs = 0, nruns = 0, limit = 30, nnames = 0;
	int c, order = REP_BY_EVIDENCE, rc = 0;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'E':
			if (tool_opt_keep(epochs, &nepochs, MAX_RUNS) < 0)
				return tool_fail("more than %d runs", MAX_RUNS);
			break;
		case 's':
			if (!strcmp(optarg, "evidence"))
				order = REP_BY_EVIDENCE;
			else if (!strcmp(optarg, "range"))
				order = REP_BY_RANGE;
			else if (!strcmp(optarg, "sum"))
				order = REP_BY_SUM;
			else
				return tool_fail("--sort %s: not evidence, range or sum", optarg);
			break;
		case 'n': limit = strtoul(optarg, NULL, 10); break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	db = o.val.db;
	event = o.val.event;
	if (argc - optind > MAX_RUNS)
		return tool_fail("more than %d runs", MAX_RUNS);
	if (optind < argc && (db || nepochs))
		return tool_fail("give databases, or --db with --epoch, not both");
	if (optind == argc && !nepochs) {
		/* every epoch of --db; names kept until the end */
		struct prof_db *d = NULL;

		if (prof_db_open(tool_db_dir(db), 0, &d, &err) < 0 ||
		    prof_db_epochs(d, &names, &nnames, &err) < 0) {
			prof_db_close(d);
			return tool_fail("%s", err.msg);
		}
		for (size_t i = 0; i < nnames && nepochs < MAX_RUNS; i++)
			epochs[nepochs++] = names[i];
		prof_db_close(d);
	}
	nruns = optind < argc ? (size_t)(argc - optind) : nepochs;
	if (nruns < 2) {
		rc = tool_fail("statistics need at least two runs (databases or epochs), not %zu",
			       nruns);
		nruns = 0;
		goto out;
	}
	for (size_t k = 0; k < nruns; k++) {
		const char *dir = optind < argc ? argv[optind + k] : tool_db_dir(db);
		const char *ep = optind < argc ? NULL : epochs[k];
		char e[256];

		if (rep_load_table(dir, ep, &t[k], e, sizeof(e), &err) < 0) {
			rc = tool_fail("%s", err.msg);
			nruns = k;
			goto out;
		}
		snprintf(used[k], sizeof(used[k]), "%s epoch %s", dir, e);
		labels[k] = used[k];
		if (!event)
			for (size_t i = 0; i < t[k].nevents; i++)
				if (!event || rep_event_rank(t[k].events[i].name) < rep_event_rank(event))
					event = t[k].events[i].name;
	}
	if (!event) {
		rc = tool_fail("no samples in any run");
		goto out;
	}
	if (rep_stats(t, nruns, event, &st, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	rep_stats_sort(&st, order);
	if (o.val.json)
		rep_stats_json(stdout, &st, labels, limit);
	else {
		printf("event %s\n", event);
		rep_stats_text(stdout, &st, labels, limit);
	}
	rep_stats_free(&st);
out:
	for (size_t k = 0; k < nruns; k++)
		rep_free(&t[k]);
	prof_names_free(names, nnames);
	return rc;
}
