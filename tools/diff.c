/*
 * diff.c - dcpidiff: two profiles, per procedure the share of samples
 * before and after, the change and its significance given the sampling
 * error.  Each side is a database (its newest epoch) or an epoch of --db.
 * The work is report/stats.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/report.h"
#include "tools.h"

static const char diff_usage[] =
	"usage: dcpidiff BEFORE AFTER [options]\n"
	"  per procedure: samples and share of each profile, the change in share and\n"
	"  z = change / its sampling error (|z| >= 3: more than noise)\n"
	"  BEFORE, AFTER       a database directory (its newest epoch), or an epoch\n"
	"                      name of --db\n"
	"      --db DIR        database of the epochs (default $DCPIDB, then ./dcpidb)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"      --limit N       the first N procedures (default 30, 0: all)\n"
	"      --json          machine-readable output\n";

/* A side: a directory holding a database, else an epoch of --db. */
static int load_side(const char *arg, const char *db, struct rep_table *t, char *label,
		     size_t len, char *dir, char *epoch)
{
	struct dcpi_err err = { 0 };
	struct stat st;
	char e[256];
	int isdb = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);

	if (rep_load_table(isdb ? arg : tool_db_dir(db), isdb ? NULL : arg, t, e, sizeof(e),
			   &err) < 0)
		return tool_fail("%s", err.msg);
	snprintf(label, len, "%s epoch %s", isdb ? arg : tool_db_dir(db), e);
	snprintf(dir, 512, "%s", isdb ? arg : tool_db_dir(db));
	snprintf(epoch, 256, "%s", e);
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "event", required_argument, NULL, 'e' },
		{ "limit", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *event = NULL;
	struct rep_table a, b;
	struct rep_diff d;
	struct dcpi_err err = { 0 };
	char la[600], lb[600], da[512], db2[512], ea[256], eb[256];
	size_t limit = 30;
	int c, json = 0, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'e': event = optarg; break;
		case 'n': limit = strtoul(optarg, NULL, 10); break;
		case 'j': json = 1; break;
		case 'h': printf(diff_usage); return 0;
		default: fprintf(stderr, diff_usage); return 1;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, diff_usage);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (load_side(argv[optind], db, &a, la, sizeof(la), da, ea) ||
	    load_side(argv[optind + 1], db, &b, lb, sizeof(lb), db2, eb)) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; !event && i < a.nevents; i++)
		if (!event || rep_event_rank(a.events[i].name) < rep_event_rank(event))
			event = a.events[i].name;
	if (!event) {
		rc = tool_fail("%s: no samples", la);
		goto out;
	}
	if (rep_diff(&a, &b, event, &d, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (rep_diff_executions(&d, event, da, ea, db2, eb, limit, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		rep_diff_free(&d);
		goto out;
	}
	if (json)
		rep_diff_json(stdout, &d, la, lb, limit);
	else {
		printf("event %s\n", event);
		rep_diff_text(stdout, &d, la, lb, limit);
	}
	rep_diff_free(&d);
out:
	rep_free(&a);
	rep_free(&b);
	return rc;
}
