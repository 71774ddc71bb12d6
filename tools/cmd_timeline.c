/*
 * tools/cmd_timeline.c - dcpi timeline: an epoch's samples over time as a
 * picture (report/timeline.c draws it; docs/phases.md, "The picture").
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/safefile.h"
#include "dcpi/timeline.h"
#include "tools.h"

struct tl_args {
	const char *db, *epoch, *out;
	int html;		/* -1: from -o's suffix */
	long top;
};

static const char tl_usage[] =
	"usage: dcpi timeline -o FILE [options]\n"
	"  an epoch's samples per time slice, its phases marked (as dcpiprof\n"
	"  --phases cuts them) with their top procedures, and FlameScope's\n"
	"  sub-second heat map: an SVG, or an HTML page with the SVG inline\n"
	"  -o, --output FILE   where to write it ('-': standard output)\n"
	"      --format F      svg or html (default: html when FILE ends in .html)\n"
	"  -n, --top N         procedures named per phase (default 3)\n"
	"      --db DIR        profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --epoch E       epoch name (default: the newest)\n";

static int html_name(const char *out)
{
	size_t n = strlen(out);

	return (n > 5 && !strcmp(out + n - 5, ".html")) || (n > 4 && !strcmp(out + n - 4, ".htm"));
}

static int parse_args(int argc, char **argv, struct tl_args *a)
{
	struct tool_opts o = { .usage = tl_usage, .shortopts = "o:n:h",
			       .longopts = "format=F top=n",
			       .common = TOOL_O_DB | TOOL_O_EPOCH | TOOL_O_OUTPUT };
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->html = -1;
	a->top = 3;
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'F':
			if (strcmp(optarg, "svg") && strcmp(optarg, "html"))
				return tool_fail("--format %s: not svg or html", optarg);
			a->html = !strcmp(optarg, "html");
			break;
		case 'n':
			a->top = strtol(optarg, &end, 10);
			if (end == optarg || *end || a->top < 0 || a->top > 20)
				return tool_fail("--top %s: not a count from 0 to 20", optarg);
			break;
		}
	}
	if (c < 0)
		return c == TOOL_OPT_HELP ? -1 : 1;
	a->db = o.val.db;
	a->epoch = o.val.epoch;
	a->out = o.val.out;
	if (optind < argc)
		return tool_fail("unexpected argument '%s'", argv[optind]);
	if (!a->out) {
		fputs(tl_usage, stderr);
		return tool_fail("-o FILE is required");
	}
	if (a->html < 0)
		a->html = html_name(a->out);
	return 0;
}

/* The picture in memory, then written by the one rule for outputs
 * (include/dcpi/safefile.h: a FIFO or a device is never replaced). */
static int write_picture(const struct tl_args *a, const struct rep_slices *s,
			 const struct prof_profile *p, size_t n, struct dcpi_err *err)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	int rc;

	if (!f)
		return dcpi_errf(err, -ENOMEM, "timeline: out of memory");
	rc = rep_timeline_svg(f, s, p, n, (size_t)a->top, a->html, err);
	if (fclose(f) && !rc)
		rc = dcpi_errf(err, -ENOMEM, "timeline: out of memory");
	if (!rc)
		rc = dcpi_write_output(a->out, mem, len, 0644, err);
	free(mem);
	return rc;
}

int cmd_timeline(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct tl_args a;
	struct tool_epoch e = { 0 };
	struct rep_slices s = { 0 };
	int rc, have_s = 0;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.epoch && !strcmp(a.epoch, "all"))
		return tool_fail("--epoch all: a timeline is of one epoch");
	rc = tool_epoch_open(&e, a.db, a.epoch, &err);
	if (rc == 0)
		rc = rep_slices_load(e.db, e.name, &s, &err);
	have_s = rc == 0;
	if (rc == 0)
		rc = write_picture(&a, &s, e.p, e.n, &err);
	if (rc < 0)
		rc = tool_fail("%s", err.msg);
	if (have_s)
		rep_slices_free(&s);
	tool_epoch_close(&e);
	return rc;
}
