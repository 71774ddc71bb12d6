/*
 * fleet/kind_paths.c - path profiles (include/dcpi/paths.h) in the fleet's
 * table paths: a header row (rec 0: source, flags, bursts), one row per
 * transition (rec 1: from_off, to_off, count) and one per step (rec 2:
 * from_off is the offset), ord their place in the file (fleet/kinds.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/paths.h"
#include "internal.h"

FLEET_KIND_GLUE(path, path_profile)

enum { REC_HEAD = 0, REC_EDGE = 1, REC_STEP = 2 };

static uint64_t weight(const void *v)
{
	return ((const struct path_profile *)v)->bursts;
}

static void row(struct fleet_sb *sb, const struct fleet_key *k, const struct path_profile *p,
		unsigned rec, size_t ord, uint64_t from, uint64_t to, uint64_t count)
{
	fleet_row_start(sb, k, &p->image, rec, ord);
	fleet_sb_tsv(sb, p->source);
	fleet_sb_printf(sb, "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
			p->flags, p->bursts, from, to, count);
}

static void rows(struct fleet_sb *sb, const struct fleet_key *k, const void *v)
{
	const struct path_profile *p = v;

	row(sb, k, p, REC_HEAD, 0, 0, 0, 0);
	for (size_t i = 0; i < p->nedges && !sb->err; i++)
		row(sb, k, p, REC_EDGE, i, p->edges[i].from, p->edges[i].to, p->edges[i].count);
	for (size_t i = 0; i < p->nsteps && !sb->err; i++)
		row(sb, k, p, REC_STEP, i, p->steps[i].offset, 0, p->steps[i].count);
}

/* source, flags, bursts, from_off, to_off, count */
static int add_row(void *v, unsigned rec, char **f, struct dcpi_err *err)
{
	struct path_profile *p = v;
	uint64_t a = fleet_u64(f[3]), b = fleet_u64(f[4]), n = fleet_u64(f[5]);
	int rc = 0;

	if (rec == REC_HEAD) {
		snprintf(p->source, sizeof(p->source), "%s", f[0]);
		p->flags = (uint32_t)fleet_u64(f[1]);
		p->bursts = fleet_u64(f[2]);
	} else if (rec == REC_EDGE) {
		rc = dcpi_grow((void **)&p->edges, &p->cap_edges, p->nedges + 1,
			       sizeof(*p->edges));
		if (!rc)
			p->edges[p->nedges++] = (struct path_edge){ a, b, n };
	} else if (rec == REC_STEP) {
		rc = dcpi_grow((void **)&p->steps, &p->cap_steps, p->nsteps + 1,
			       sizeof(*p->steps));
		if (!rc)
			p->steps[p->nsteps++] = (struct path_step){ a, n };
	} else {
		return dcpi_errf(err, -EPROTO, "%s: paths row of unknown record %u", p->image.path,
				 rec);
	}
	return rc ? dcpi_errf(err, rc, "out of memory") : 0;
}

const struct fleet_kind fleet_kind_paths = {
	.table = "paths",
	.cols = "source String, flags UInt32, bursts UInt64, from_off UInt64, to_off UInt64, "
		"count UInt64",
	.fields = "source, flags, bursts, from_off, to_off, count",
	.nfields = 6,
	FLEET_KIND_OPS(path_profile),
};
