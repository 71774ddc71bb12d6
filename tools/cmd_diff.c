/*
 * tools/cmd_diff.c - dcpidiff: two profiles, per procedure the share of samples
 * before and after, the change and its significance given the sampling
 * error.  Each side is a database (its newest epoch) or an epoch of --db.
 * The work is report/stats.c.
 */
#include <errno.h>
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

/* An epoch's name (digits) or "all", as --epoch takes them. */
static int is_epoch_arg(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return !strcmp(s, "all") || (n && !s[n]);
}

/*
 * A side: a directory holding a database, else an epoch of --db.  A path
 * that is neither (missing, a file, a FIFO) is an error naming it, not a
 * complaint about the default database.  Its damaged files (skipped, with
 * notes) are appended to the JSON's list.
 */
static int load_side(const char *arg, const char *db, struct rep_table *t, char *label,
		     size_t len, char *dir, char *epoch, char *damaged, size_t dlen)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *p = NULL;
	struct prof_db *d = NULL;
	const char *const *bad;
	struct stat st;
	size_t n = 0, w;
	int isdb = stat(arg, &st) == 0 && S_ISDIR(st.st_mode), rc;

	if (!isdb && !is_epoch_arg(arg)) {
		if (!stat(arg, &st))
			return tool_fail("%s: not a profile database (%s) nor an epoch name", arg,
					 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISREG(st.st_mode) ?
					 "a regular file" : "not a directory");
		return tool_fail("%s: no such profile database (%s) nor an epoch name", arg,
				 strerror(errno));
	}
	snprintf(dir, 512, "%s", isdb ? arg : tool_db_dir(db));
	rc = prof_db_open(dir, 0, &d, &err);
	if (rc >= 0)
		rc = rep_load_profiles(d, isdb ? NULL : arg, &p, &n, epoch, 256, &err);
	if (rc >= 0)
		rc = rep_summarize(p, n, 0, t, &err);
	prof_profiles_free(p, n);
	if (d) {
		tool_db_notes(d);
		n = prof_db_damaged(d, &bad);
		for (size_t i = 0; i < n; i++) {
			w = strlen(damaged);
			if (w + 4 < dlen)
				snprintf(damaged + w, dlen - w, "%s\n", bad[i]);
		}
		prof_db_close(d);
	}
	if (rc < 0)
		return tool_fail("%s", err.msg);
	snprintf(label, len, "%s epoch %s", dir, epoch);
	return 0;
}

/* rep_diff_json's object with "damaged": [...] first (docs/profile-format.md). */
static void print_json(const struct rep_diff *d, const char *la, const char *lb, size_t limit,
		       const char *damaged)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m) {
		rep_diff_json(stdout, d, la, lb, limit);
		return;
	}
	rep_diff_json(m, d, la, lb, limit);
	fclose(m);
	printf("{\"damaged\": [");
	for (const char *s = damaged; *s; s += strcspn(s, "\n") + 1) {
		char one[4200];

		snprintf(one, sizeof(one), "%.*s", (int)strcspn(s, "\n"), s);
		printf(s == damaged ? "" : ", ");
		tool_json_str(stdout, one);
	}
	printf("], %s", buf && buf[0] == '{' ? buf + 1 : "");
	free(buf);
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
	char la[600], lb[600], da[512], db2[512], ea[256], eb[256], damaged[8192] = "";
	size_t limit = 30;
	int c, json = 0, rc = 0;

	optind = 1;
	while ((c = tool_getopt(argc, argv, "e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'e': event = optarg; break;
		case 'n': limit = strtoul(optarg, NULL, 10); break;
		case 'j': json = 1; break;
		case 'h': tool_usage(stdout, diff_usage); return 0;
		default: tool_usage(stderr, diff_usage); return 1;
		}
	}
	if (argc - optind != 2) {
		tool_usage(stderr, diff_usage);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (load_side(argv[optind], db, &a, la, sizeof(la), da, ea, damaged, sizeof(damaged)) ||
	    load_side(argv[optind + 1], db, &b, lb, sizeof(lb), db2, eb, damaged,
		      sizeof(damaged))) {
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
		print_json(&d, la, lb, limit, damaged);
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
