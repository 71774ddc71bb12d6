/*
 * fleet/pull.c - the fleet's aggregate of some images into one new epoch of
 * a local database (docs/fleet.md, "Pull").  The server sums the counts per
 * (image, event, offset); the small per-epoch headers (period, cycles per
 * unit, metadata) come back in (host, epoch) order and are combined here by
 * the same merge dcpi merge runs (prof_profile_merge, prof_meta_merge), so
 * the pulled epoch's files equal those of `dcpi merge` of the hosts'
 * databases given in host-name order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "internal.h"

#define MAXF 28

struct pull {
	struct fleet_conn *c;
	struct prof_profile *p;
	size_t n, cap;
	struct fleet_pull_stats *st;
};

/* LIKE pattern of a shell glob: * and ? become % and _, the rest literal. */
static void glob_like(struct fleet_sb *sb, const char *g)
{
	struct fleet_sb t = { 0 };

	for (; *g; g++) {
		if (*g == '*')
			fleet_sb_printf(&t, "%%");
		else if (*g == '?')
			fleet_sb_printf(&t, "_");
		else if (*g == '%' || *g == '_' || *g == '\\')
			fleet_sb_printf(&t, "\\%c", *g);
		else
			fleet_sb_printf(&t, "%c", *g);
	}
	fleet_sql_str(sb, t.p ? t.p : "");
	if (t.err)
		sb->err = 1;
	fleet_sb_free(&t);
}

void fleet_where(struct fleet_sb *sb, const char *db, const struct fleet_query_spec *q)
{
	fleet_sb_printf(sb, " WHERE (host, epoch, start_ns, version) GLOBAL IN (SELECT host, epoch, "
			"start_ns, max(version) FROM %s.epochs GROUP BY host, epoch, start_ns)",
			db);
	if (q->build_id) {
		fleet_sb_printf(sb, " AND build_id = ");
		fleet_sql_str(sb, q->build_id);
	}
	if (q->image) {
		struct fleet_sb t = { 0 };

		fleet_sb_printf(&t, "*/%s", q->image);
		fleet_sb_printf(sb, " AND (path = ");
		fleet_sql_str(sb, q->image);
		fleet_sb_printf(sb, " OR path LIKE ");
		glob_like(sb, t.p ? t.p : "");
		fleet_sb_printf(sb, ")");
		fleet_sb_free(&t);
	}
	if (q->hosts) {
		fleet_sb_printf(sb, " AND host LIKE ");
		glob_like(sb, q->hosts);
	}
	if (q->since_ns)
		fleet_sb_printf(sb, " AND end_ns >= %" PRIu64, q->since_ns);
	if (q->until_ns)
		fleet_sb_printf(sb, " AND start_ns <= %" PRIu64, q->until_ns);
}

/* The selected rows, each once (a push sent again repeats them exactly). */
static void rows_from(struct fleet_sb *sb, const char *db, const struct fleet_query_spec *q)
{
	fleet_sb_printf(sb, " FROM (SELECT DISTINCT host, epoch, start_ns, version, build_id, "
			"path, size, mtime, event, period_bits, period_unit, cpu_bits, offset, "
			"count FROM %s.samples", db);
	fleet_where(sb, db, q);
	fleet_sb_printf(sb, ")");
}

static int ask(struct pull *pl, struct fleet_sb *sb, char **out, struct dcpi_err *err)
{
	if (sb->err)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	return fleet_query(pl->c, sb->p, NULL, 0, out, err);
}

static struct prof_profile *find(struct pull *pl, const struct prof_image_id *id,
				 const char *event)
{
	for (size_t i = 0; i < pl->n; i++)
		if (prof_image_id_equal(&pl->p[i].image, id) && !strcmp(pl->p[i].event, event))
			return &pl->p[i];
	return NULL;
}

/* One (host, epoch, image, event) header: merged as a one-entry profile of
 * its total, so periods combine with the weights dcpi merge gives them. */
static int add_header(struct pull *pl, char **f, struct dcpi_err *err)
{
	struct prof_profile sh, *d;
	int rc;

	prof_profile_init(&sh);
	fleet_image_of(f + 3, &sh.image);
	snprintf(sh.event, sizeof(sh.event), "%s", f[7]);
	sh.period = fleet_bitsd(strtoull(f[8], NULL, 10));
	snprintf(sh.period_unit, sizeof(sh.period_unit), "%s", f[9]);
	sh.cycles_per_unit = fleet_bitsd(strtoull(f[10], NULL, 10));
	rc = prof_profile_add(&sh, 0, strtoull(f[11], NULL, 10));
	if (rc < 0)
		goto out;
	d = find(pl, &sh.image, sh.event);
	if (!d) {
		d = dcpi_append((void **)&pl->p, &pl->n, &pl->cap, sizeof(*pl->p));
		if (!d) {
			rc = -ENOMEM;
			goto out;
		}
		*d = sh;
		d->e = NULL;
		d->n = d->cap = 0;
		d->total = 0;
	}
	rc = prof_profile_merge(d, &sh, err);
out:
	prof_profile_free(&sh);
	return rc == -ENOMEM ? dcpi_errf(err, rc, "out of memory") : rc;
}

static int headers(struct pull *pl, const struct fleet_query_spec *q, struct dcpi_err *err)
{
	const char *db = fleet_db(pl->c);
	struct fleet_sb sb = { 0 };
	char *ans = NULL, *s, *f[MAXF];
	int rc;

	fleet_sb_printf(&sb, "SELECT host, epoch, start_ns, build_id, path, size, mtime, event, "
			"any(period_bits), any(period_unit), any(cpu_bits), sum(count)");
	rows_from(&sb, db, q);
	fleet_sb_printf(&sb, " GROUP BY host, epoch, start_ns, build_id, path, size, mtime, "
			"event ORDER BY host, epoch, start_ns, build_id, path, size, mtime, event");
	rc = ask(pl, &sb, &ans, err);
	s = ans;
	while (!rc && s && fleet_next_row(&s, f, MAXF) == 12)
		rc = add_header(pl, f, err);
	for (size_t i = 0; i < pl->n; i++) {
		free(pl->p[i].e);
		pl->p[i].e = NULL;
		pl->p[i].n = pl->p[i].cap = 0;
		pl->p[i].total = 0;
	}
	free(ans);
	fleet_sb_free(&sb);
	return rc;
}

static int entries(struct pull *pl, const struct fleet_query_spec *q, struct dcpi_err *err)
{
	const char *db = fleet_db(pl->c);
	struct fleet_sb sb = { 0 };
	struct prof_profile *d = NULL;
	struct prof_image_id id;
	char *ans = NULL, *s, *f[MAXF];
	int rc;

	fleet_sb_printf(&sb, "SELECT build_id, if(build_id = '', path, '') AS p, "
			"if(build_id = '', size, 0) AS sz, if(build_id = '', mtime, 0) AS mt, "
			"event, offset, sum(count)");
	rows_from(&sb, db, q);
	fleet_sb_printf(&sb, " GROUP BY build_id, p, sz, mt, event, offset");
	rc = ask(pl, &sb, &ans, err);
	s = ans;
	while (!rc && s && fleet_next_row(&s, f, MAXF) == 7) {
		fleet_image_of(f, &id);
		if (!d || !prof_image_id_equal(&d->image, &id) || strcmp(d->event, f[4]))
			d = find(pl, &id, f[4]);
		if (!d) {
			rc = dcpi_errf(err, -EPROTO, "%s: %s: samples without a header (the fleet "
				       "changed during the pull?)", id.path, f[4]);
			break;
		}
		rc = prof_profile_add(d, strtoull(f[5], NULL, 10), strtoull(f[6], NULL, 10));
		if (rc < 0)
			rc = dcpi_errf(err, rc, "out of memory");
	}
	for (size_t i = 0; !rc && i < pl->n; i++) {
		rc = prof_profile_normalize(&pl->p[i]);
		pl->st->samples += pl->p[i].total;
	}
	free(ans);
	fleet_sb_free(&sb);
	return rc;
}

static void meta_of(char **f, struct prof_epoch_meta *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->cpu_vendor, sizeof(m->cpu_vendor), "%s", f[4]);
	m->cpu_family = (unsigned)strtoul(f[5], NULL, 10);
	m->cpu_model = (unsigned)strtoul(f[6], NULL, 10);
	m->cpu_stepping = (unsigned)strtoul(f[7], NULL, 10);
	snprintf(m->cpu_name, sizeof(m->cpu_name), "%s", f[8]);
	m->cycles_per_ns = fleet_bitsd(strtoull(f[9], NULL, 10));
	m->cycles_per_sample = fleet_bitsd(strtoull(f[10], NULL, 10));
	m->calibrated = atoi(f[11]);
	snprintf(m->settings, sizeof(m->settings), "%s", f[12]);
	m->lost_samples = strtoull(f[13], NULL, 10);
	m->samples = strtoull(f[14], NULL, 10);
	m->dropped_samples = strtoull(f[15], NULL, 10);
	m->failed_flushes = strtoull(f[16], NULL, 10);
	m->start_ns = strtoull(f[2], NULL, 10);
	m->end_ns = strtoull(f[17], NULL, 10);
	/* the canaries' row, zeros where the epoch had none */
	m->canary_alone = fleet_bitsd(strtoull(f[18], NULL, 10));
	m->canary_cycles = fleet_bitsd(strtoull(f[19], NULL, 10));
	m->canary_sd = fleet_bitsd(strtoull(f[20], NULL, 10));
	m->canary_shared = fleet_bitsd(strtoull(f[21], NULL, 10));
	m->canary_bursts = strtoull(f[22], NULL, 10);
	/* the exposure chase's row, zeros where the epoch had none */
	m->exposure_witness = strtoull(f[23], NULL, 10);
	m->exposure_samples = strtoull(f[24], NULL, 10);
	m->exposure_cycles_step = fleet_bitsd(strtoull(f[25], NULL, 10));
	/* the clock's row, zero where the epoch had none */
	m->clock_change = fleet_bitsd(strtoull(f[26], NULL, 10));
}

/* The columns metas() reads, in meta_of's order: an epoch's key, its own
 * metadata, its canaries', its exposure chase's (then its clock's). */
#define KEY_COLS "host, epoch, start_ns, version"
#define META_COLS "has_meta, cpu_vendor, cpu_family, cpu_model, cpu_stepping, cpu_name, " \
	"cpns_bits, cps_bits, calibrated, settings, lost_samples, samples, dropped_samples, " \
	"failed_flushes, end_ns"
#define CANARY_COLS "alone_bits, mean_bits, sd_bits, shared_bits, bursts"
#define EXPOSURE_COLS "witness, chase_samples, step_bits"

/* The epochs' metadata merged in (host, epoch) order; 1 when there was any. */
static int metas(struct pull *pl, const struct fleet_query_spec *q, struct prof_epoch_meta *dm,
		 struct dcpi_err *err)
{
	const char *db = fleet_db(pl->c);
	struct fleet_sb sb = { 0 };
	struct prof_epoch_meta m;
	char *ans = NULL, *s, *f[MAXF], last[600] = "";
	int rc, any = 0;

	memset(dm, 0, sizeof(*dm));
	/* epochs, then their canaries', exposures' and clocks' rows (one JOIN
	 * a SELECT, as ClickHouse 18 wants) */
	fleet_sb_printf(&sb, "SELECT host, epoch, start_ns, " META_COLS ", " CANARY_COLS ", "
			EXPOSURE_COLS ", change_bits "
			"FROM (SELECT " KEY_COLS ", " META_COLS ", " CANARY_COLS ", " EXPOSURE_COLS
			" FROM (SELECT " KEY_COLS ", " META_COLS ", " CANARY_COLS
			" FROM %s.epochs GLOBAL ANY LEFT JOIN (SELECT " KEY_COLS ", " CANARY_COLS
			" FROM %s.canaries) USING (" KEY_COLS ")) "
			"GLOBAL ANY LEFT JOIN (SELECT " KEY_COLS ", " EXPOSURE_COLS
			" FROM %s.exposures) USING (" KEY_COLS ")) "
			"GLOBAL ANY LEFT JOIN (SELECT " KEY_COLS ", change_bits FROM %s.clocks) "
			"USING (" KEY_COLS ") "
			"WHERE (" KEY_COLS ") GLOBAL IN (SELECT DISTINCT " KEY_COLS
			" FROM %s.samples", db, db, db, db, db);
	fleet_where(&sb, db, q);
	fleet_sb_printf(&sb, ") ORDER BY host, epoch, start_ns");
	rc = ask(pl, &sb, &ans, err);
	s = ans;
	while (!rc && s && fleet_next_row(&s, f, MAXF) == 27) {
		char key[600];

		/* a commit row sent twice (its answer lost) is one epoch */
		snprintf(key, sizeof(key), "%s\t%s\t%s", f[0], f[1], f[2]);
		if (!strcmp(key, last))
			continue;
		snprintf(last, sizeof(last), "%s", key);
		pl->st->epochs++;
		if (!atoi(f[3]))
			continue;
		meta_of(f, &m);
		prof_meta_merge(dm, &m);
		any = 1;
	}
	free(ans);
	fleet_sb_free(&sb);
	return rc < 0 ? rc : any;
}

static int count_hosts(struct pull *pl, const struct fleet_query_spec *q, struct dcpi_err *err)
{
	struct fleet_sb sb = { 0 };
	char *ans = NULL;
	int rc;

	fleet_sb_printf(&sb, "SELECT uniqExact(host)");
	rows_from(&sb, fleet_db(pl->c), q);
	rc = ask(pl, &sb, &ans, err);
	if (!rc)
		pl->st->hosts = strtoull(ans, NULL, 10);
	free(ans);
	fleet_sb_free(&sb);
	return rc;
}

static int write_epoch(struct pull *pl, const struct fleet_query_spec *q, struct prof_db *out,
		       const struct prof_epoch_meta *m, int has_meta, char *epoch, size_t len,
		       struct dcpi_err *err)
{
	size_t nk[3] = { 0 };
	int rc = prof_db_epoch_new(out, epoch, len, err);

	if (rc < 0)
		return rc;
	rc = prof_epoch_begin(out, epoch, err);
	for (size_t i = 0; !rc && i < pl->n; i++)
		rc = prof_epoch_write(out, epoch, &pl->p[i], err);
	if (!rc && has_meta)
		rc = prof_epoch_meta_write(out, epoch, m, err);
	if (!rc)
		rc = fleet_kinds_pull(pl->c, q, out, epoch, nk, err);
	if (!rc)
		rc = prof_epoch_commit(out, err);
	pl->st->paths = nk[0];
	pl->st->values = nk[1];
	pl->st->data = nk[2];
	if (rc) {
		prof_epoch_abort(out);
		prof_db_epoch_drop_empty(out, epoch);
	}
	return rc;
}

/* Profiles in the order an epoch's files list them ("<image key>.<event>.prof",
 * profile/db.c), so readers that take the first of something (a report's
 * event period, report/summary.c) see what they see in a database. */
static int by_file_name(const void *a, const void *b)
{
	const struct prof_profile *x = a, *y = b;
	char kx[PROF_BUILD_ID_MAX + 8], ky[PROF_BUILD_ID_MAX + 8];
	char fx[PROF_BUILD_ID_MAX + 80], fy[PROF_BUILD_ID_MAX + 80];

	prof_image_key(&x->image, kx, sizeof(kx));
	prof_image_key(&y->image, ky, sizeof(ky));
	snprintf(fx, sizeof(fx), "%s.%s.prof", kx, x->event);
	snprintf(fy, sizeof(fy), "%s.%s.prof", ky, y->event);
	return strcmp(fx, fy);
}

int fleet_aggregate(struct fleet_conn *c, const struct fleet_query_spec *q,
		    struct prof_profile **out, size_t *n, struct prof_epoch_meta *m,
		    int *has_meta, struct fleet_pull_stats *st, struct dcpi_err *err)
{
	struct pull pl = { .c = c, .st = st };
	const char *what = q->build_id ? q->build_id : q->image;
	int rc;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	*n = 0;
	*has_meta = 0;
	rc = fleet_check_schema(c, err);
	if (!rc)
		rc = headers(&pl, q, err);
	if (!rc)
		rc = entries(&pl, q, err);
	if (!rc)
		rc = *has_meta = metas(&pl, q, m, err);
	if (rc >= 0)
		rc = count_hosts(&pl, q, err);
	if (!rc && !pl.n)
		rc = dcpi_errf(err, -ENOENT, "no samples of %s%s in the fleet's %s%s%s",
			       q->build_id ? "build-id " : "", what ? what : "any image",
			       fleet_db(c), q->hosts ? " for hosts " : "", q->hosts ? q->hosts : "");
	if (rc) {
		prof_profiles_free(pl.p, pl.n);
		return rc;
	}
	qsort(pl.p, pl.n, sizeof(*pl.p), by_file_name);
	*out = pl.p;
	*n = pl.n;
	st->profiles = pl.n;
	return 0;
}

int fleet_pull(struct fleet_conn *c, const struct fleet_query_spec *q, struct prof_db *out,
	       char *epoch, size_t len, struct fleet_pull_stats *st, struct dcpi_err *err)
{
	struct pull pl = { .c = c, .st = st };
	struct prof_epoch_meta m;
	int rc, has_meta = 0;

	if (!q->build_id && !q->image) {
		memset(st, 0, sizeof(*st));
		return dcpi_errf(err, -EINVAL, "a pull names a build-id or an image");
	}
	rc = fleet_aggregate(c, q, &pl.p, &pl.n, &m, &has_meta, st, err);
	if (!rc)
		rc = write_epoch(&pl, q, out, &m, has_meta, epoch, len, err);
	if (rc)
		st->profiles = 0;
	prof_profiles_free(pl.p, pl.n);
	return rc;
}

int fleet_load_profiles(const char *url, const struct fleet_query_spec *q,
			struct prof_profile **p, size_t *n, char *what, size_t len,
			struct dcpi_err *err)
{
	struct fleet_pull_stats st;
	struct prof_epoch_meta m;
	struct fleet_conn *c = NULL;
	int rc, has_meta;

	rc = fleet_connect(url, &c, err);
	if (!rc)
		rc = fleet_aggregate(c, q, p, n, &m, &has_meta, &st, err);
	if (!rc)
		snprintf(what, len, "fleet (%zu epochs of %zu hosts)", st.epochs, st.hosts);
	fleet_close(c);
	return rc;
}
