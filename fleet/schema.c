/*
 * fleet/schema.c - the tables a fleet pushes into (docs/fleet.md, "Schema"):
 * samples, one row per (host, epoch, version, image, event, offset); epochs,
 * one row per pushed epoch version, written last, so that its row commits
 * the push; paths, value_lists and data_lines, the records of the other
 * kinds of profile (fleet/kinds.c); schema, the version of this layout.
 * canaries, an epoch's contention canaries (docs/estimate.md, "A shared
 * core").  MergeTree family, partitioned by day, samples ordered by build-id
 * and offset.  Version 2 added the three kinds' tables, version 3 the
 * canaries: --init on an older database adds what it lacks and raises its
 * version.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "internal.h"

static const char samples_cols[] =
	"(day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, build_id String, path String, size UInt64, mtime Int64, "
	"event String, period Float64, period_bits UInt64, period_unit String, "
	"cycles_per_unit Float64, cpu_bits UInt64, offset UInt64, count UInt64)";
static const char samples_engine[] =
	"ReplacingMergeTree PARTITION BY day ORDER BY (build_id, event, offset, host, "
	"epoch, start_ns, version, path, size, mtime)";
static const char epochs_cols[] =
	"(day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, pushed_ns UInt64, has_meta UInt8, cpu_vendor String, "
	"cpu_family UInt32, cpu_model UInt32, cpu_stepping UInt32, cpu_name String, "
	"cycles_per_ns Float64, cpns_bits UInt64, cycles_per_sample Float64, "
	"cps_bits UInt64, calibrated UInt8, settings String, lost_samples UInt64, "
	"samples UInt64, dropped_samples UInt64, failed_flushes UInt64, rows UInt64)";
static const char epochs_engine[] =
	"ReplacingMergeTree(pushed_ns) PARTITION BY day ORDER BY (host, epoch, start_ns, "
	"version)";
/* an epoch's contention canaries (prof_epoch_meta.canary_*), the doubles as
 * their bits so that they come back exact; a row only where bursts > 0 */
static const char canary_cols[] =
	"(day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, alone_bits UInt64, mean_bits UInt64, sd_bits UInt64, "
	"shared_bits UInt64, bursts UInt64)";
static const char canary_engine[] =
	"ReplacingMergeTree PARTITION BY day ORDER BY (host, epoch, start_ns, version)";
/* an epoch's exposure chase (prof_epoch_meta.exposure_*), cycles a step as
 * its bits; a row only where it had samples; the canaries' engine */
static const char exposure_cols[] =
	"(day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, witness UInt64, chase_samples UInt64, step_bits UInt64)";
/* an epoch's clock change over its run (prof_epoch_meta.clock_change) as its
 * bits; a row only where it was measured; the canaries' engine */
static const char clock_cols[] =
	"(day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, change_bits UInt64)";

static const char kind_engine[] =
	"ReplacingMergeTree PARTITION BY day ORDER BY (build_id, host, epoch, start_ns, "
	"version, path, size, mtime, rec, ord)";

static int run(struct fleet_conn *c, struct fleet_sb *sb, struct dcpi_err *err)
{
	int rc;

	if (sb->err)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	rc = fleet_query(c, sb->p, NULL, 0, NULL, err);
	sb->n = 0;
	if (sb->p)
		sb->p[0] = '\0';
	return rc;
}

/* name (and name_local, sharded by host, when there is a cluster). */
static int make_table(struct fleet_conn *c, const char *cluster, const char *name,
		      const char *cols, const char *engine, struct dcpi_err *err)
{
	const char *db = fleet_db(c);
	struct fleet_sb sb = { 0 };
	int rc;

	fleet_sb_printf(&sb, "CREATE TABLE IF NOT EXISTS %s.%s%s %s ENGINE = %s", db, name,
			cluster ? "_local" : "", cols, engine);
	rc = run(c, &sb, err);
	if (!rc && cluster) {
		fleet_sb_printf(&sb, "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = "
				"Distributed(%s, %s, %s_local, cityHash64(host))", db, name, db,
				name, cluster, db, name);
		rc = run(c, &sb, err);
	}
	fleet_sb_free(&sb);
	return rc;
}

static int cluster_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

int fleet_init(struct fleet_conn *c, const char *cluster, struct dcpi_err *err)
{
	struct fleet_sb sb = { 0 };
	char *v = NULL;
	int rc;

	if (cluster && (!*cluster || !cluster_ok(cluster)))
		return dcpi_errf(err, -EINVAL, "%s: bad cluster name (letters, digits, _)",
				 cluster);
	fleet_sb_printf(&sb, "CREATE DATABASE IF NOT EXISTS %s", fleet_db(c));
	rc = run(c, &sb, err);
	if (!rc)
		rc = make_table(c, cluster, "samples", samples_cols, samples_engine, err);
	if (!rc)
		rc = make_table(c, cluster, "epochs", epochs_cols, epochs_engine, err);
	if (!rc)
		rc = make_table(c, cluster, "canaries", canary_cols, canary_engine, err);
	if (!rc)
		rc = make_table(c, cluster, "exposures", exposure_cols, canary_engine, err);
	if (!rc)
		rc = make_table(c, cluster, "clocks", clock_cols, canary_engine, err);
	for (int i = 0; i < 3 && !rc; i++) {
		const char *name = fleet_kinds[i]->table;

		fleet_kind_cols(&sb, fleet_kinds[i]);
		rc = sb.err ? dcpi_errf(err, -ENOMEM, "out of memory") :
			      make_table(c, cluster, name, sb.p, kind_engine, err);
		sb.n = 0;
	}
	if (!rc) {
		fleet_sb_printf(&sb, "CREATE TABLE IF NOT EXISTS %s.schema (version UInt32) "
				"ENGINE = TinyLog", fleet_db(c));
		rc = run(c, &sb, err);
	}
	if (!rc) {
		fleet_sb_printf(&sb, "SELECT max(version) FROM %s.schema", fleet_db(c));
		rc = fleet_query(c, sb.p, NULL, 0, &v, err);
		sb.n = 0;
	}
	/* none yet, or an older one whose tables are all there now */
	if (!rc && atoi(v) < FLEET_SCHEMA_VERSION) {
		fleet_sb_printf(&sb, "INSERT INTO %s.schema VALUES (%d)", fleet_db(c),
				FLEET_SCHEMA_VERSION);
		rc = run(c, &sb, err);
	}
	free(v);
	fleet_sb_free(&sb);
	return rc ? rc : fleet_check_schema(c, err);
}

int fleet_check_schema(struct fleet_conn *c, struct dcpi_err *err)
{
	char sql[256], *v = NULL;
	int rc, have;

	snprintf(sql, sizeof(sql), "SELECT max(version), count() FROM %s.schema", fleet_db(c));
	rc = fleet_query(c, sql, NULL, 0, &v, err);
	if (rc < 0) {
		if (strstr(err->msg, "Code: 81") || strstr(err->msg, "Code: 60"))
			return dcpi_errf(err, -ENOENT, "%s: no dcpi schema in database %s: "
					 "run 'dcpi push --init' first", fleet_db(c), fleet_db(c));
		return rc;
	}
	have = atoi(v);
	free(v);
	if (have != FLEET_SCHEMA_VERSION)
		return dcpi_errf(err, -EPROTO, "database %s holds dcpi schema version %d; this "
				 "dcpi reads and writes version %d%s", fleet_db(c), have,
				 FLEET_SCHEMA_VERSION, have < FLEET_SCHEMA_VERSION ?
				 " ('dcpi push --init' upgrades it: it adds the tables of path, "
				 "value and data profiles, of contention canaries, of exposure "
				 "chases and of clock changes)" : "");
	return 0;
}
