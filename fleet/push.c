/*
 * fleet/push.c - epochs of a database into the fleet's tables (docs/fleet.md,
 * "Idempotence").  An epoch's version is its sample total plus its path
 * bursts, value samples and data accesses (fleet/kinds.c): it only grows
 * while the epoch is written.  Its rows go first (samples, then the paths,
 * values and data of fleet/kinds.c), tagged (host, epoch,
 * start, version), then its row in epochs, which commits them: a reader
 * counts the rows of an epoch's newest committed version only, each key
 * once, so a push cut short and sent again, or sent twice, counts once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "internal.h"

static void day_of(uint64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%d", &tm);
}

void fleet_key_cols(struct fleet_sb *sb, const struct fleet_key *k)
{
	fleet_sb_printf(sb, "%s\t", k->day);
	fleet_sb_tsv(sb, k->host);
	fleet_sb_printf(sb, "\t");
	fleet_sb_tsv(sb, k->epoch);
	fleet_sb_printf(sb, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", k->start_ns, k->end_ns,
			k->version);
}

static void sample_rows(struct fleet_sb *sb, const struct fleet_key *k,
			const struct prof_profile *p)
{
	for (size_t i = 0; i < p->n && !sb->err; i++) {
		fleet_key_cols(sb, k);
		fleet_image_cols(sb, &p->image);
		fleet_sb_tsv(sb, p->event);
		fleet_sb_printf(sb, "\t%.17g\t%llu\t", p->period, fleet_dbits(p->period));
		fleet_sb_tsv(sb, p->period_unit);
		fleet_sb_printf(sb, "\t%.17g\t%llu\t%" PRIu64 "\t%" PRIu64 "\n", p->cycles_per_unit,
				fleet_dbits(p->cycles_per_unit), p->e[i].offset, p->e[i].count);
	}
}

static void epoch_row(struct fleet_sb *sb, const struct fleet_key *k,
		      const struct prof_epoch_meta *m, int has_meta, uint64_t rows)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fleet_key_cols(sb, k);
	fleet_sb_printf(sb, "%" PRIu64 "\t%d\t",
			(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, has_meta);
	fleet_sb_tsv(sb, m->cpu_vendor);
	fleet_sb_printf(sb, "\t%u\t%u\t%u\t", m->cpu_family, m->cpu_model, m->cpu_stepping);
	fleet_sb_tsv(sb, m->cpu_name);
	fleet_sb_printf(sb, "\t%.17g\t%llu\t%.17g\t%llu\t%d\t", m->cycles_per_ns,
			fleet_dbits(m->cycles_per_ns), m->cycles_per_sample,
			fleet_dbits(m->cycles_per_sample), m->calibrated);
	fleet_sb_tsv(sb, m->settings);
	fleet_sb_printf(sb, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
			m->lost_samples, m->samples, m->dropped_samples, m->failed_flushes, rows);
}

static void canary_row(struct fleet_sb *sb, const struct fleet_key *k,
		       const struct prof_epoch_meta *m)
{
	fleet_key_cols(sb, k);
	fleet_sb_printf(sb, "%llu\t%llu\t%llu\t%llu\t%" PRIu64 "\n", fleet_dbits(m->canary_alone),
			fleet_dbits(m->canary_cycles), fleet_dbits(m->canary_sd),
			fleet_dbits(m->canary_shared), m->canary_bursts);
}

static void exposure_row(struct fleet_sb *sb, const struct fleet_key *k,
			 const struct prof_epoch_meta *m)
{
	fleet_key_cols(sb, k);
	fleet_sb_printf(sb, "%" PRIu64 "\t%" PRIu64 "\t%llu\n", m->exposure_witness,
			m->exposure_samples, fleet_dbits(m->exposure_cycles_step));
}

static void clock_row(struct fleet_sb *sb, const struct fleet_key *k,
		      const struct prof_epoch_meta *m)
{
	fleet_key_cols(sb, k);
	fleet_sb_printf(sb, "%llu\n", fleet_dbits(m->clock_change));
}

static int insert(struct fleet_conn *c, const char *table, struct fleet_sb *sb,
		  struct dcpi_err *err)
{
	char sql[200];

	if (sb->err)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT TabSeparated", fleet_db(c), table);
	return fleet_query(c, sql, sb->p, sb->n, NULL, err);
}

/* 1 when this version of the epoch is committed on the server. */
static int is_pushed(struct fleet_conn *c, const struct fleet_key *k, struct dcpi_err *err)
{
	struct fleet_sb sb = { 0 };
	char *v = NULL;
	int rc;

	fleet_sb_printf(&sb, "SELECT count() FROM %s.epochs WHERE host = ", fleet_db(c));
	fleet_sql_str(&sb, k->host);
	fleet_sb_printf(&sb, " AND epoch = ");
	fleet_sql_str(&sb, k->epoch);
	fleet_sb_printf(&sb, " AND start_ns = %" PRIu64 " AND version = %" PRIu64, k->start_ns,
			k->version);
	rc = sb.err ? dcpi_errf(err, -ENOMEM, "out of memory") :
		      fleet_query(c, sb.p, NULL, 0, &v, err);
	if (!rc)
		rc = atoi(v) > 0;
	free(v);
	fleet_sb_free(&sb);
	return rc;
}

static int send_epoch(struct fleet_conn *c, struct fleet_key *k, struct prof_profile *v,
		      size_t n, const struct fleet_kind_set *ks, const struct prof_epoch_meta *m,
		      int has_meta, struct fleet_push_stats *st, struct dcpi_err *err)
{
	struct fleet_sb sb = { 0 };
	uint64_t rows = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		sample_rows(&sb, k, &v[i]);
		rows += v[i].n;
	}
	rc = is_pushed(c, k, err);
	if (rc > 0) {
		st->skipped++;
		rc = 0;
		goto out;
	}
	if (!rc && rows)
		rc = insert(c, "samples", &sb, err);
	sb.n = 0;
	if (!rc)
		rc = fleet_kinds_insert(c, k, ks, &st->kind_rows, err);
	if (!rc && has_meta && m->canary_bursts) {
		canary_row(&sb, k, m);
		rc = insert(c, "canaries", &sb, err);
		sb.n = 0;
	}
	if (!rc && has_meta && m->exposure_samples) {
		exposure_row(&sb, k, m);
		rc = insert(c, "exposures", &sb, err);
		sb.n = 0;
	}
	if (!rc && has_meta && m->clock_change > 0) {
		clock_row(&sb, k, m);
		rc = insert(c, "clocks", &sb, err);
		sb.n = 0;
	}
	if (!rc) {
		epoch_row(&sb, k, m, has_meta, rows);
		rc = insert(c, "epochs", &sb, err);
	}
	if (!rc) {
		st->epochs++;
		st->rows += rows;
		for (size_t i = 0; i < n; i++)
			st->samples += v[i].total;
	}
out:
	fleet_sb_free(&sb);
	return rc;
}

static int push_epoch(struct fleet_conn *c, struct prof_db *db, const char *host,
		      const char *epoch, struct fleet_push_stats *st, struct dcpi_err *err)
{
	const char *const *dmg;
	size_t n = 0, damaged = prof_db_damaged(db, &dmg);
	struct prof_profile *v = NULL;
	struct prof_epoch_meta m;
	struct fleet_key k = { .host = host, .epoch = epoch };
	struct fleet_kind_set ks = { 0 };
	int rc, has_meta = 1;

	memset(&m, 0, sizeof(m));
	rc = prof_epoch_read(db, epoch, &v, &n, err);
	if (rc < 0)
		return rc;
	/* the version: samples, and the other kinds' counts, which only grow too */
	rc = fleet_kinds_read(db, epoch, &ks, &k.version, err);
	if (rc < 0)
		goto out;
	if (prof_db_damaged(db, &dmg) != damaged) {
		rc = dcpi_errf(err, -EIO, "%s: a damaged profile is not pushed (the fleet would "
			       "lack its samples): remove or repair it", dmg[damaged]);
		goto out;
	}
	rc = prof_epoch_meta_read(db, epoch, &m, err);
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		memset(&m, 0, sizeof(m));
		has_meta = 0;
		rc = 0;
	}
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		k.version += v[i].total;
	k.start_ns = m.start_ns;
	k.end_ns = m.end_ns;
	day_of(m.start_ns, k.day, sizeof(k.day));
	rc = send_epoch(c, &k, v, n, &ks, &m, has_meta, st, err);
out:
	fleet_kinds_free(&ks);
	prof_profiles_free(v, n);
	return rc;
}

int fleet_push(struct fleet_conn *c, struct prof_db *db, const char *host, const char *epoch,
	       struct fleet_push_stats *st, struct dcpi_err *err)
{
	char **names = NULL, me[256];
	size_t n = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!host) {
		if (gethostname(me, sizeof(me)) < 0)
			return dcpi_errf(err, -errno, "gethostname: %s", strerror(errno));
		me[sizeof(me) - 1] = '\0';
		host = me;
	}
	rc = fleet_check_schema(c, err);
	if (rc < 0)
		return rc;
	if (epoch)
		return push_epoch(c, db, host, epoch, st, err);
	rc = prof_db_epochs(db, &names, &n, err);
	for (size_t i = 0; i < n && rc >= 0; i++)
		rc = push_epoch(c, db, host, names[i], st, err);
	prof_names_free(names, n);
	return rc;
}
