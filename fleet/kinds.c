/*
 * fleet/kinds.c - the path, value and data profiles of pushed epochs, each
 * kind in its own table (docs/fleet.md, "Paths, values and data"; the kinds
 * are fleet/kind_paths.c, kind_values.c, kind_data.c).  A push sends every
 * record of an epoch's profiles as a row; a pull selects the rows of the
 * committed versions (each once, as for the samples), rebuilds each
 * (host, epoch, image)'s profile as the host's file held it, and merges them
 * in (host, epoch) order through the kind's own epoch write: the fold that
 * `dcpi merge` of the hosts' databases in host-name order runs
 * (tools/cmd_merge.c), so the files come out the same, byte for byte, for
 * value hotlists too, whose merge rounds and so depends on the order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "internal.h"

const struct fleet_kind *const fleet_kinds[3] = {
	&fleet_kind_paths, &fleet_kind_values, &fleet_kind_data,
};

static const char key_cols[] =
	"day Date, host String, epoch String, start_ns UInt64, end_ns UInt64, "
	"version UInt64, build_id String, path String, size UInt64, mtime Int64, "
	"rec UInt8, ord UInt64";

void fleet_kind_cols(struct fleet_sb *sb, const struct fleet_kind *k)
{
	fleet_sb_printf(sb, "(%s, %s)", key_cols, k->cols);
}

int fleet_next_row(char **s, char **f, int max)
{
	int k = 0, eol = 0;

	if (!**s)
		return 0;
	while (!eol && k < max)
		*s = fleet_tsv_field(*s, &f[k++], &eol);
	return k;
}

void fleet_image_cols(struct fleet_sb *sb, const struct prof_image_id *id)
{
	fleet_sb_tsv(sb, id->build_id);
	fleet_sb_printf(sb, "\t");
	fleet_sb_tsv(sb, id->path);
	fleet_sb_printf(sb, "\t%" PRIu64 "\t%" PRId64 "\t", id->size, id->mtime);
}

void fleet_row_start(struct fleet_sb *sb, const struct fleet_key *k,
		     const struct prof_image_id *id, unsigned rec, size_t ord)
{
	fleet_key_cols(sb, k);
	fleet_image_cols(sb, id);
	fleet_sb_printf(sb, "%u\t%zu\t", rec, ord);
}

void fleet_image_of(char **f, struct prof_image_id *id)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->build_id, sizeof(id->build_id), "%s", f[0]);
	snprintf(id->path, sizeof(id->path), "%s", f[1]);
	id->size = strtoull(f[2], NULL, 10);
	id->mtime = strtoll(f[3], NULL, 10);
}

int fleet_u64_array(const char *s, uint64_t *v, int max)
{
	int n = 0;
	char *end;

	if (*s++ != '[')
		return -1;
	if (*s == ']')
		return s[1] ? -1 : 0;
	for (;;) {
		if (n == max)
			return -1;
		v[n++] = strtoull(s, &end, 10);
		if (end == s)
			return -1;
		if (*end == ']')
			return end[1] ? -1 : n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

int fleet_kinds_read(struct prof_db *db, const char *epoch, struct fleet_kind_set *ks,
		     uint64_t *version, struct dcpi_err *err)
{
	int rc = 0;

	memset(ks, 0, sizeof(*ks));
	for (int i = 0; i < 3 && !rc; i++) {
		const struct fleet_kind *k = fleet_kinds[i];

		rc = k->read(db, epoch, &ks->v[i], &ks->n[i], err);
		for (size_t j = 0; !rc && j < ks->n[i]; j++)
			*version += k->weight((char *)ks->v[i] + j * k->size);
	}
	if (rc)
		fleet_kinds_free(ks);
	return rc;
}

void fleet_kinds_free(struct fleet_kind_set *ks)
{
	for (int i = 0; i < 3; i++)
		if (ks->v[i])
			fleet_kinds[i]->free_all(ks->v[i], ks->n[i]);
	memset(ks, 0, sizeof(*ks));
}

int fleet_kinds_insert(struct fleet_conn *c, const struct fleet_key *key,
		       const struct fleet_kind_set *ks, uint64_t *rows, struct dcpi_err *err)
{
	int rc = 0;

	for (int i = 0; i < 3 && !rc; i++) {
		const struct fleet_kind *k = fleet_kinds[i];
		struct fleet_sb sb = { 0 };
		char sql[200];

		if (!ks->n[i])
			continue;
		for (size_t j = 0; j < ks->n[i]; j++)
			k->rows(&sb, key, (char *)ks->v[i] + j * k->size);
		for (size_t j = 0; j < sb.n; j++)
			*rows += sb.p[j] == '\n';
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT TabSeparated", fleet_db(c),
			 k->table);
		rc = sb.err ? dcpi_errf(err, -ENOMEM, "out of memory") :
			      fleet_query(c, sql, sb.p, sb.n, NULL, err);
		fleet_sb_free(&sb);
	}
	return rc;
}

/* Rows of k that q selects, each once, in (host, epoch, image, rec, ord)
 * order: host, epoch, start_ns, the image's 4, rec, ord, the kind's. */
static int select_rows(struct fleet_conn *c, const struct fleet_query_spec *q,
		       const struct fleet_kind *k, char **ans, struct dcpi_err *err)
{
	const char *db = fleet_db(c);
	struct fleet_sb sb = { 0 };
	int rc;

	fleet_sb_printf(&sb, "SELECT host, epoch, start_ns, build_id, path, size, mtime, rec, "
			"ord, %s FROM (SELECT DISTINCT host, epoch, start_ns, end_ns, version, "
			"build_id, path, size, mtime, rec, ord, %s FROM %s.%s", k->fields,
			k->fields, db, k->table);
	fleet_where(&sb, db, q);
	fleet_sb_printf(&sb, ") ORDER BY host, epoch, start_ns, build_id, path, size, mtime, "
			"rec, ord");
	rc = sb.err ? dcpi_errf(err, -ENOMEM, "out of memory") :
		      fleet_query(c, sb.p, NULL, 0, ans, err);
	fleet_sb_free(&sb);
	return rc;
}

#define KIND_MAXF 40

/* One kind's rows, profile by profile, into epoch of out. */
static int pull_kind(struct fleet_conn *c, const struct fleet_query_spec *q,
		     const struct fleet_kind *k, struct prof_db *out, const char *epoch,
		     size_t *written, struct dcpi_err *err)
{
	char *ans = NULL, *s, *f[KIND_MAXF], last[PROF_PATH_MAX + 700] = "", cur[sizeof(last)];
	void *p = calloc(1, k->size);
	int rc, open = 0;

	if (!p)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	rc = select_rows(c, q, k, &ans, err);
	s = ans;
	while (!rc && s && *s) {
		struct prof_image_id id;

		if (fleet_next_row(&s, f, KIND_MAXF) != 9 + k->nfields) {
			rc = dcpi_errf(err, -EPROTO, "%s: a row of %s does not have the %d fields "
				       "this dcpi reads", fleet_db(c), k->table, 9 + k->nfields);
			break;
		}
		snprintf(cur, sizeof(cur), "%s\t%s\t%s\t%s\t%s\t%s\t%s", f[0], f[1], f[2], f[3],
			 f[4], f[5], f[6]);
		if (!open || strcmp(cur, last)) {
			if (open) {
				rc = k->write(out, epoch, p, err);
				k->free(p);
				open = 0;
				*written += !rc;
				if (rc)
					break;
			}
			fleet_image_of(f + 3, &id);
			k->init(p, &id);
			open = 1;
			memcpy(last, cur, sizeof(last));
		}
		rc = k->row(p, (unsigned)atoi(f[7]), f + 9, err);
	}
	if (!rc && open) {
		rc = k->write(out, epoch, p, err);
		*written += !rc;
	}
	if (open)
		k->free(p);
	free(p);
	free(ans);
	return rc;
}

int fleet_kinds_pull(struct fleet_conn *c, const struct fleet_query_spec *q,
		     struct prof_db *out, const char *epoch, size_t *n, struct dcpi_err *err)
{
	int rc = 0;

	for (int i = 0; i < 3 && !rc; i++) {
		n[i] = 0;
		rc = pull_kind(c, q, fleet_kinds[i], out, epoch, &n[i], err);
	}
	return rc;
}
