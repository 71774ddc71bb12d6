/*
 * fleet/kind_data.c - data profiles (include/dcpi/data.h) in the fleet's
 * table data_lines: a header row (rec 0: window_ns), one row per image of
 * the tags (rec 1: tag_*, ord the tag less one), one per (line,
 * instruction) entry (rec 2: space, tag, base, line, insn, accesses, loads,
 * stores, mask, block_size) and one per shared line (rec 3: the key, seen,
 * true_w, false_w, true_mask, mask_a, mask_b), ord their place in the file
 * (fleet/kinds.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/data.h"
#include "internal.h"

FLEET_KIND_GLUE(data, data_profile)

enum { REC_HEAD = 0, REC_IMAGE = 1, REC_ENTRY = 2, REC_SHARE = 3 };

/* The columns after the key, insn .. block_size then seen .. mask_b: an
 * entry's six first, a share's six last, 0 in the other's. */
enum { NCOLS = 12, COL_SHARE = 6, F_COLS = 9 };

static uint64_t weight(const void *v)
{
	const struct data_profile *p = v;
	uint64_t w = 0;

	for (size_t i = 0; i < p->n; i++)
		w += p->e[i].accesses;
	return w;
}

static void head(struct fleet_sb *sb, const struct fleet_key *k, const struct data_profile *p,
		 unsigned rec, size_t ord)
{
	fleet_row_start(sb, k, &p->image, rec, ord);
	fleet_sb_printf(sb, "%" PRIu64 "\t", p->window_ns);
}

static void key(struct fleet_sb *sb, const struct data_key *k)
{
	fleet_sb_printf(sb, "%" PRIu32 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t", k->space,
			k->tag, k->base, k->line);
}

/* The NCOLS columns, the row's last. */
static void cols(struct fleet_sb *sb, const uint64_t *c)
{
	for (int i = 0; i < NCOLS; i++)
		fleet_sb_printf(sb, "%" PRIu64 "%c", c[i], i + 1 < NCOLS ? '\t' : '\n');
}

static void rows(struct fleet_sb *sb, const struct fleet_key *k, const void *v)
{
	static const char no_image[] = "\t\t0\t0\t", no_key[] = "0\t0\t0\t0\t";
	static const uint64_t none[NCOLS];
	const struct data_profile *p = v;

	head(sb, k, p, REC_HEAD, 0);
	fleet_sb_printf(sb, "%s%s", no_image, no_key);
	cols(sb, none);
	for (size_t i = 0; i < p->nimgs && !sb->err; i++) {
		head(sb, k, p, REC_IMAGE, i);
		fleet_image_cols(sb, &p->imgs[i]);
		fleet_sb_printf(sb, "%s", no_key);
		cols(sb, none);
	}
	for (size_t i = 0; i < p->n && !sb->err; i++) {
		const struct data_entry *e = &p->e[i];
		uint64_t c[NCOLS] = { e->insn, e->accesses, e->loads, e->stores, e->mask,
				      e->size };

		head(sb, k, p, REC_ENTRY, i);
		fleet_sb_printf(sb, "%s", no_image);
		key(sb, &e->k);
		cols(sb, c);
	}
	for (size_t i = 0; i < p->ns && !sb->err; i++) {
		const struct data_share *s = &p->s[i];
		uint64_t c[NCOLS] = { [COL_SHARE] = s->seen, s->true_w, s->false_w, s->true_mask,
				      s->mask_a, s->mask_b };

		head(sb, k, p, REC_SHARE, i);
		fleet_sb_printf(sb, "%s", no_image);
		key(sb, &s->k);
		cols(sb, c);
	}
}

static void key_of(char **f, struct data_key *k)
{
	k->space = (uint32_t)fleet_u64(f[0]);
	k->tag = (uint32_t)fleet_u64(f[1]);
	k->base = fleet_u64(f[2]);
	k->line = fleet_u64(f[3]);
}

/* window_ns, tag_build_id, tag_path, tag_size, tag_mtime, space, tag, base, line,
 * insn, accesses, loads, stores, mask, block_size, seen, true_w, false_w,
 * true_mask, mask_a, mask_b */
static int add_row(void *v, unsigned rec, char **f, struct dcpi_err *err)
{
	struct data_profile *p = v;
	struct prof_image_id id;
	struct data_entry e;
	struct data_share s;
	uint64_t c[NCOLS];
	const uint64_t *sh = c + COL_SHARE;
	int rc = 0;

	for (int i = 0; i < NCOLS; i++)
		c[i] = fleet_u64(f[F_COLS + i]);

	switch (rec) {
	case REC_HEAD:
		p->window_ns = fleet_u64(f[0]);
		return 0;
	case REC_IMAGE:
		fleet_image_of(f + 1, &id);
		rc = data_profile_tag(p, &id);
		if (rc >= 0 && (size_t)rc != p->nimgs)
			return dcpi_errf(err, -EPROTO, "%s: data image %s listed twice",
					 p->image.path, id.path);
		break;
	case REC_ENTRY:
		e = (struct data_entry){ .insn = c[0], .accesses = c[1], .loads = c[2],
					 .stores = c[3], .mask = c[4], .size = c[5] };
		key_of(f + 5, &e.k);
		rc = data_profile_add(p, &e);
		break;
	case REC_SHARE:
		s = (struct data_share){ .seen = sh[0], .true_w = sh[1], .false_w = sh[2],
					 .true_mask = sh[3], .mask_a = sh[4], .mask_b = sh[5] };
		key_of(f + 5, &s.k);
		rc = data_profile_share(p, &s);
		break;
	default:
		return dcpi_errf(err, -EPROTO, "%s: data_lines row of unknown record %u",
				 p->image.path, rec);
	}
	return rc < 0 ? dcpi_errf(err, rc, "out of memory") : 0;
}

const struct fleet_kind fleet_kind_data = {
	.table = "data_lines",
	.cols = "window_ns UInt64, tag_build_id String, tag_path String, tag_size UInt64, "
		"tag_mtime Int64, space UInt32, tag UInt32, base UInt64, line UInt64, "
		"insn UInt64, accesses UInt64, loads UInt64, stores UInt64, mask UInt64, "
		"block_size UInt64, seen UInt64, true_w UInt64, false_w UInt64, "
		"true_mask UInt64, mask_a UInt64, mask_b UInt64",
	.fields = "window_ns, tag_build_id, tag_path, tag_size, tag_mtime, space, tag, base, "
		  "line, insn, accesses, loads, stores, mask, block_size, seen, true_w, "
		  "false_w, true_mask, mask_a, mask_b",
	.nfields = 21,
	FLEET_KIND_OPS(data_profile),
};
