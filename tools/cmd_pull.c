/*
 * tools/cmd_pull.c - dcpi pull: the fleet's aggregate of one image, from
 * ClickHouse into one epoch of a local database (fleet/pull.c;
 * docs/fleet.md), so every tool reads fleet data as it reads a host's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "tools.h"

static const char pull_usage[] =
	"usage: dcpi pull --from clickhouse://HOST[:PORT]/DATABASE (--build-id ID | --image NAME)\n"
	"                 [--since T] [--until T] [--hosts GLOB] -o DB\n"
	"  writes the fleet's aggregate of the image (every host's committed epochs,\n"
	"  each counted once) as one new epoch of DB. T: seconds since 1970, or\n"
	"  YYYY-MM-DD[THH:MM:SS] in UTC. GLOB: a shell pattern of host names.\n";

static int pull(const char *url, const struct fleet_query_spec *q, const char *dst)
{
	struct dcpi_err err = { 0 };
	struct fleet_pull_stats st;
	struct fleet_conn *c = NULL;
	struct prof_db *out = NULL;
	char epoch[64] = "";
	int rc = 0;

	if (prof_db_check_target(dst, &err) < 0)
		return tool_fail("%s", err.msg);
	if (fleet_connect(url, &c, &err) < 0)
		return tool_fail("%s", err.msg);
	if (prof_db_open(dst, PROF_DB_CREATE, &out, &err) < 0 ||
	    fleet_pull(c, q, out, epoch, sizeof(epoch), &st, &err) < 0)
		rc = tool_fail("%s (nothing written)", err.msg);
	else
		fprintf(stderr, "%s: %zu epoch%s of %zu host%s, %zu profile%s, %llu samples, "
			"%zu path, %zu value and %zu data profiles merged into %s/%s\n", tool_name,
			st.epochs, st.epochs == 1 ? "" : "s", st.hosts, st.hosts == 1 ? "" : "s",
			st.profiles, st.profiles == 1 ? "" : "s", (unsigned long long)st.samples,
			st.paths, st.values, st.data, dst, epoch);
	prof_db_close(out);
	fleet_close(c);
	return rc;
}

int cmd_pull(int argc, char **argv)
{
	struct fleet_query_spec q = { 0 };
	struct tool_opts o = { .usage = pull_usage, .shortopts = "o:h", .query = &q,
			       .common = TOOL_O_OUTPUT };
	const char *url, *dst;
	int ch;

	ch = tool_opt_next(&o, argc, argv);	/* pull has no options of its own */
	if (ch < 0)
		return TOOL_OPT_STATUS(ch);
	url = o.val.from;
	dst = o.val.out;
	if (!url || !dst || (!q.build_id == !q.image) || optind != argc) {
		fprintf(stderr, pull_usage);
		return tool_fail(!url ? "--from URL is required" : !dst ? "-o DB is required" :
				 optind != argc ? "unexpected argument" :
				 "name one of --build-id and --image");
	}
	return pull(url, &q, dst);
}
