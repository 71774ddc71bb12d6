/*
 * tools/cmd_diff.c - dcpidiff: two profiles, per procedure the share of samples
 * before and after, the change and whether it is more than sampling error
 * and run-to-run variation (docs/diff.md).  Each side is a database (its
 * newest epoch, or the epochs after a colon, or all with --epochs) or
 * epochs of --db.  The work is report/stats.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/report.h"
#include "tools.h"

static const char diff_usage[] =
	"usage: dcpidiff BEFORE AFTER [options]\n"
	"  per procedure: samples and share of each profile, the change in share,\n"
	"  z and p: the change against its sampling error and the run-to-run\n"
	"  variation (several epochs a side measure it; docs/diff.md)\n"
	"  BEFORE, AFTER       DB (its newest epoch), DB:E1,E2,.. (those epochs of\n"
	"                      DB, summed), or E1,E2,.. (epochs of --db)\n"
	"      --db DIR        database of the epochs (default $DCPIDB, then ./dcpidb)\n"
	"      --epochs        every epoch of a side given as DB alone\n"
	"      --level A       family-wise significance level (default 0.01)\n"
	"  -e, --event E       sample event (default: cycles, else cpu-clock)\n"
	"      --limit N       the first N procedures (default 30, 0: all)\n"
	"      --json          machine-readable output\n";

#define MAX_EPOCHS 64

/* One side: its database, the epochs asked for (NULL: newest), the tables. */
struct side {
	char dir[512];
	char *names[MAX_EPOCHS];	/* as given, or the database's */
	char used[MAX_EPOCHS][256];
	const char *epochs[MAX_EPOCHS];	/* what rep_diff_executions reads */
	struct rep_table t[MAX_EPOCHS];
	size_t n;
	char label[1200];
};

/* An epoch's name (digits) or "all", as --epoch takes them. */
static int is_epoch_arg(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return !strcmp(s, "all") || (n && !s[n]);
}

/* Comma-separated epoch names into sd->names; 0 if s is not such a list. */
static int split_epochs(struct side *sd, const char *s)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int ok = copy && *s;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok;
	     tok = strtok_r(NULL, ",", &save)) {
		ok = is_epoch_arg(tok) && sd->n < MAX_EPOCHS;
		if (ok)
			ok = !!(sd->names[sd->n++] = strdup(tok));
	}
	free(copy);
	return ok;
}

/* Every epoch of the side's database, oldest first. */
static int all_epochs(struct side *sd, struct prof_db *d)
{
	struct dcpi_err err = { 0 };
	char **names = NULL;
	size_t n = 0;

	if (prof_db_epochs(d, &names, &n, &err) < 0)
		return tool_fail("%s", err.msg);
	for (size_t i = 0; i < n && sd->n < MAX_EPOCHS; i++)
		sd->names[sd->n++] = strdup(names[i]);
	if (n > MAX_EPOCHS)
		fprintf(stderr, "dcpidiff: %s: the first %d of %zu epochs\n", sd->dir,
			MAX_EPOCHS, n);
	prof_names_free(names, n);
	return 0;
}

/*
 * Which database and epochs arg names.  A path that is neither a database
 * nor epochs (missing, a file, a FIFO) is an error naming it, not a
 * complaint about the default database.
 */
static int parse_side(const char *arg, const char *db, struct side *sd)
{
	const char *colon = strrchr(arg, ':');
	struct stat st;

	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(sd->dir, sizeof(sd->dir), "%s", arg);
		return 0;
	}
	if (colon && colon > arg) {
		snprintf(sd->dir, sizeof(sd->dir), "%.*s", (int)(colon - arg), arg);
		if (stat(sd->dir, &st) == 0 && S_ISDIR(st.st_mode) && split_epochs(sd, colon + 1))
			return 0;
		sd->n = 0;
	}
	snprintf(sd->dir, sizeof(sd->dir), "%s", tool_db_dir(db));
	if (split_epochs(sd, arg))
		return 0;
	if (!stat(arg, &st))
		return tool_fail("%s: not a profile database (%s) nor an epoch name", arg,
				 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISREG(st.st_mode) ?
				 "a regular file" : "not a directory");
	return tool_fail("%s: no such profile database (%s) nor an epoch name", arg,
			 strerror(errno));
}

/* Appends the database's damaged files to the JSON's list. */
static void note_damaged(struct prof_db *d, char *damaged, size_t dlen)
{
	const char *const *bad;
	size_t n = prof_db_damaged(d, &bad), w;

	for (size_t i = 0; i < n; i++) {
		w = strlen(damaged);
		if (w + 4 < dlen)
			snprintf(damaged + w, dlen - w, "%s\n", bad[i]);
	}
}

/* The side's tables, one per epoch (notes on damaged files, skipped). */
static int load_side(struct side *sd, int every, char *damaged, size_t dlen)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d = NULL;
	int rc = prof_db_open(sd->dir, 0, &d, &err);
	size_t w;

	if (rc >= 0 && every && !sd->n && all_epochs(sd, d))
		rc = -EINVAL;
	for (size_t e = 0; rc >= 0 && e < (sd->n ? sd->n : 1); e++) {
		struct prof_profile *p = NULL;
		size_t n = 0;

		rc = rep_load_profiles(d, sd->n ? sd->names[e] : NULL, &p, &n, sd->used[e],
				       sizeof(sd->used[e]), &err);
		if (rc >= 0)
			rc = rep_summarize(p, n, 0, &sd->t[e], &err);
		prof_profiles_free(p, n);
		sd->epochs[e] = sd->used[e];
	}
	if (!sd->n)
		sd->n = rc >= 0;
	if (d) {
		tool_db_notes(d);
		note_damaged(d, damaged, dlen);
		prof_db_close(d);
	}
	if (rc < 0)
		return err.msg[0] ? tool_fail("%s", err.msg) : 1;
	w = (size_t)snprintf(sd->label, sizeof(sd->label), "%s epoch%s", sd->dir,
			     sd->n > 1 ? "s" : "");
	for (size_t e = 0; e < sd->n && w < sizeof(sd->label); e++)
		w += (size_t)snprintf(sd->label + w, sizeof(sd->label) - w, "%s%s", e ? "," : " ",
				      sd->used[e]);
	return 0;
}

static void side_free(struct side *sd)
{
	for (size_t e = 0; e < MAX_EPOCHS; e++) {
		rep_free(&sd->t[e]);
		free(sd->names[e]);
	}
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
	struct tool_opts o = { .usage = diff_usage, .shortopts = "e:h",
			       .longopts = "epochs:E level=l limit=n",
			       .common = TOOL_O_DB | TOOL_O_EVENT | TOOL_O_JSON };
	const char *db, *event;
	struct side *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct rep_diff d;
	struct dcpi_err err = { 0 };
	char damaged[8192] = "", *end;
	double level = REP_DIFF_LEVEL;
	size_t limit = 30;
	int c, every = 0, rc = 0;

	if (!a || !b) {
		rc = tool_fail("out of memory");
		goto out;
	}
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'E': every = 1; break;
		case 'l':
			level = strtod(optarg, &end);
			if (*end || !(level > 0 && level < 1)) {
				rc = tool_fail("--level %s: not a number between 0 and 1", optarg);
				goto out;
			}
			break;
		case 'n': limit = strtoul(optarg, NULL, 10); break;
		}
	}
	if (c < 0) {
		rc = TOOL_OPT_STATUS(c);
		goto out;
	}
	db = o.val.db;
	event = o.val.event;
	if (argc - optind != 2) {
		tool_usage(stderr, diff_usage);
		rc = 1;
		goto out;
	}
	if (parse_side(argv[optind], db, a) || parse_side(argv[optind + 1], db, b) ||
	    load_side(a, every, damaged, sizeof(damaged)) ||
	    load_side(b, every, damaged, sizeof(damaged))) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; !event && i < a->t[0].nevents; i++)
		if (!event || rep_event_rank(a->t[0].events[i].name) < rep_event_rank(event))
			event = a->t[0].events[i].name;
	if (!event) {
		rc = tool_fail("%s: no samples", a->label);
		goto out;
	}
	if (rep_diff_epochs(a->t, a->n, b->t, b->n, event, level, &d, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (rep_diff_executions(&d, event, a->dir, a->epochs, a->n, b->dir, b->epochs, b->n,
				limit, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		rep_diff_free(&d);
		goto out;
	}
	if (o.val.json)
		print_json(&d, a->label, b->label, limit, damaged);
	else {
		printf("event %s\n", event);
		rep_diff_text(stdout, &d, a->label, b->label, limit);
	}
	rep_diff_free(&d);
out:
	if (a)
		side_free(a);
	if (b)
		side_free(b);
	free(a);
	free(b);
	return rc;
}
