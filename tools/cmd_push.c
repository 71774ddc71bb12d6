/*
 * tools/cmd_push.c - dcpi push: a database's epochs into a fleet's
 * ClickHouse database (fleet/push.c; docs/fleet.md), or its schema (--init).
 */
#include <stdio.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "tools.h"

static const char push_usage[] =
	"usage: dcpi push --to clickhouse://HOST[:PORT]/DATABASE [--db DIR] [--epoch E|all]\n"
	"                 [--host NAME]\n"
	"       dcpi push --to URL --init [--cluster NAME]\n"
	"  sends the database's epochs (default: all) as this host's (--host: as NAME's);\n"
	"  an epoch already there is skipped, one cut short is sent again and counted\n"
	"  once. --init creates the schema (docs/fleet.md); --cluster NAME makes the\n"
	"  tables Distributed over NAME's shards (run it on every shard).\n";

static int push_init(struct fleet_conn *c, const char *url, const char *cluster)
{
	struct dcpi_err err = { 0 };

	if (fleet_init(c, cluster, &err) < 0)
		return tool_fail("%s", err.msg);
	fprintf(stderr, "%s: schema version %d in %s (ClickHouse %s)\n", tool_name,
		FLEET_SCHEMA_VERSION, url, fleet_server_version(c));
	return 0;
}

static int push_db(struct fleet_conn *c, const char *dir, const char *host, const char *epoch)
{
	struct dcpi_err err = { 0 };
	struct fleet_push_stats st;
	struct prof_db *db = NULL;
	int rc = 0;

	if (prof_db_open(dir, 0, &db, &err) < 0)
		return tool_fail("%s", err.msg);
	if (fleet_push(c, db, host, epoch, &st, &err) < 0)
		rc = tool_fail("%s (%zu epoch%s pushed before; nothing is lost: push again)",
			       err.msg, st.epochs, st.epochs == 1 ? "" : "s");
	else
		fprintf(stderr, "%s: %zu epoch%s pushed (%llu rows, %llu samples, %llu rows of "
			"paths, values and data), %zu already there\n", tool_name, st.epochs,
			st.epochs == 1 ? "" : "s", (unsigned long long)st.rows,
			(unsigned long long)st.samples, (unsigned long long)st.kind_rows,
			st.skipped);
	tool_db_notes(db);
	prof_db_close(db);
	return rc;
}

int cmd_push(int argc, char **argv)
{
	struct tool_opts o = { .usage = push_usage, .shortopts = "h",
			       .longopts = "to=t host=H init:I cluster=C",
			       .common = TOOL_O_DB | TOOL_O_EPOCH };
	const char *url = NULL, *epoch, *host = NULL, *cluster = NULL;
	struct dcpi_err err = { 0 };
	struct fleet_conn *c;
	int ch, init = 0, rc;

	while ((ch = tool_opt_next(&o, argc, argv)) > 0) {
		switch (ch) {
		case 't': url = optarg; break;
		case 'H': host = optarg; break;
		case 'I': init = 1; break;
		case 'C': cluster = optarg; break;
		}
	}
	if (ch < 0)
		return TOOL_OPT_STATUS(ch);
	epoch = o.val.epoch && strcmp(o.val.epoch, "all") ? o.val.epoch : NULL;
	if (!url || optind != argc) {
		fprintf(stderr, push_usage);
		return tool_fail(!url ? "--to URL is required" : "unexpected argument '%s'",
				 argv[optind]);
	}
	if (fleet_connect(url, &c, &err) < 0)
		return tool_fail("%s", err.msg);
	rc = init ? push_init(c, url, cluster) : push_db(c, tool_db_dir(o.val.db), host, epoch);
	fleet_close(c);
	return rc;
}
