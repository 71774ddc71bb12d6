/*
 * fleet/kind_values.c - value profiles (include/dcpi/values.h) in the
 * fleet's table value_lists: a header row (rec 0: samples), one row per
 * image of the code values' tags (rec 1: tag_*, ord the tag less one) and
 * one per hotlist (rec 2: offset, kind, mode, sat, p with its bits, seen,
 * the tuples as two arrays, in the file's order), ord their place in the
 * file (fleet/kinds.c).  A hotlist is a sketch: merging two rounds, so the
 * pull merges the hosts' lists in the order dcpi merge would.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/values.h"
#include "internal.h"

FLEET_KIND_GLUE(val, val_profile)

enum { REC_HEAD = 0, REC_IMAGE = 1, REC_LIST = 2 };

static uint64_t weight(const void *v)
{
	return ((const struct val_profile *)v)->samples;
}

static void head(struct fleet_sb *sb, const struct fleet_key *k, const struct val_profile *p,
		 unsigned rec, size_t ord)
{
	fleet_row_start(sb, k, &p->image, rec, ord);
	fleet_sb_printf(sb, "%" PRIu64 "\t", p->samples);
}

static void list_row(struct fleet_sb *sb, const struct val_hotlist *h)
{
	fleet_sb_printf(sb, "\t\t0\t0\t%" PRIu64 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32
			"\t%.17g\t%llu\t%" PRIu64 "\t[", h->offset, h->kind, h->mode, h->sat, h->p,
			fleet_dbits(h->p), h->seen);
	for (uint32_t i = 0; i < h->n; i++)
		fleet_sb_printf(sb, "%s%" PRIu64, i ? "," : "", h->t[i].value);
	fleet_sb_printf(sb, "]\t[");
	for (uint32_t i = 0; i < h->n; i++)
		fleet_sb_printf(sb, "%s%" PRIu64, i ? "," : "", h->t[i].count);
	fleet_sb_printf(sb, "]\n");
}

static void rows(struct fleet_sb *sb, const struct fleet_key *k, const void *v)
{
	static const char none[] = "\t0\t0\t0\t0\t0\t0\t0\t[]\t[]\n";
	const struct val_profile *p = v;

	head(sb, k, p, REC_HEAD, 0);
	fleet_sb_printf(sb, "\t\t0\t0%s", none);
	for (size_t i = 0; i < p->nimages && !sb->err; i++) {
		head(sb, k, p, REC_IMAGE, i);
		fleet_image_cols(sb, &p->images[i]);
		sb->n--;	/* fleet_image_cols ends with a tab; none starts with one */
		fleet_sb_printf(sb, "%s", none);
	}
	for (size_t i = 0; i < p->nlists && !sb->err; i++) {
		head(sb, k, p, REC_LIST, i);
		list_row(sb, &p->lists[i]);
	}
}

static int add_list(struct val_profile *p, char **f, struct dcpi_err *err)
{
	uint64_t vals[VAL_N], cnts[VAL_N];
	struct val_hotlist *h;
	int nv = fleet_u64_array(f[12], vals, VAL_N), nc = fleet_u64_array(f[13], cnts, VAL_N);

	if (nv < 0 || nv != nc)
		return dcpi_errf(err, -EPROTO, "%s: a value list's tuples do not read back "
				 "(%s, %s)", p->image.path, f[12], f[13]);
	if (dcpi_grow((void **)&p->lists, &p->cap_lists, p->nlists + 1, sizeof(*p->lists)))
		return dcpi_errf(err, -ENOMEM, "out of memory");
	h = &p->lists[p->nlists++];
	memset(h, 0, sizeof(*h));
	h->offset = fleet_u64(f[5]);
	h->kind = (uint32_t)fleet_u64(f[6]);
	h->mode = (uint32_t)fleet_u64(f[7]);
	h->sat = (uint32_t)fleet_u64(f[8]);
	h->p = fleet_bitsd(fleet_u64(f[10]));
	h->seen = fleet_u64(f[11]);
	h->n = (uint32_t)nv;
	for (int i = 0; i < nv; i++)
		h->t[i] = (struct val_tuple){ vals[i], cnts[i] };
	return 0;
}

/* samples, tag_build_id, tag_path, tag_size, tag_mtime, offset, kind, mode, sat, p,
 * p_bits, seen, tuple_values, tuple_counts */
static int add_row(void *v, unsigned rec, char **f, struct dcpi_err *err)
{
	struct val_profile *p = v;

	if (rec == REC_HEAD) {
		p->samples = fleet_u64(f[0]);
		return 0;
	}
	if (rec == REC_IMAGE) {
		if (dcpi_grow((void **)&p->images, &p->cap_images, p->nimages + 1,
			      sizeof(*p->images)))
			return dcpi_errf(err, -ENOMEM, "out of memory");
		fleet_image_of(f + 1, &p->images[p->nimages++]);
		return 0;
	}
	if (rec == REC_LIST)
		return add_list(p, f, err);
	return dcpi_errf(err, -EPROTO, "%s: value_lists row of unknown record %u", p->image.path,
			 rec);
}

const struct fleet_kind fleet_kind_values = {
	.table = "value_lists",
	.cols = "samples UInt64, tag_build_id String, tag_path String, tag_size UInt64, "
		"tag_mtime Int64, offset UInt64, kind UInt32, mode UInt32, sat UInt32, "
		"p Float64, p_bits UInt64, seen UInt64, tuple_values Array(UInt64), "
		"tuple_counts Array(UInt64)",
	.fields = "samples, tag_build_id, tag_path, tag_size, tag_mtime, offset, kind, mode, "
		  "sat, p, p_bits, seen, tuple_values, tuple_counts",
	.nfields = 14,
	FLEET_KIND_OPS(val_profile),
};
