/*
 * import/lbr.c - branch-record counts (perf record -b) kept per image in the
 * epoch (docs/import.md, "Branch records are counts"): a table of
 * (image, kind, a, b) -> occurrences filled by import/perf.c, one text file
 * per image written from it, and the reader est_analyze uses
 * (estimate/lbr_counts.c).
 *
 *   # dcpi lbr-counts 1
 *   # image PATH
 *   # build-id HEX or -
 *   stacks N entries E slots S period P taken 0|1 event NAME
 *   r BEGIN END COUNT          a straight-line range (hex file offsets)
 *   b FROM TO COUNT            a taken branch ('-': outside the image)
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/collect.h"
#include "internal.h"

struct lbr_slot {
	uint64_t a, b, count;
	uint32_t image;
	uint8_t kind;		/* 0 empty, 'r' range, 'b' branch */
};

struct imp_lbr {
	struct lbr_slot *v;
	size_t n, cap;		/* used, size (a power of two) */
};

int imp_lbr_new(struct imp_lbr **out)
{
	struct imp_lbr *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->cap = 1024;
	t->v = calloc(t->cap, sizeof(*t->v));
	if (!t->v) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void imp_lbr_free(struct imp_lbr *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

static size_t lbr_hash(uint32_t image, int kind, uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= ((uint64_t)image << 8 | (uint64_t)kind) * 0xff51afd7ed558ccdull;
	h ^= h >> 29;
	return (size_t)h;
}

static struct lbr_slot *lbr_find(struct lbr_slot *v, size_t cap, uint32_t image, int kind,
				 uint64_t a, uint64_t b)
{
	size_t i = lbr_hash(image, kind, a, b) & (cap - 1);

	while (v[i].kind && !(v[i].kind == kind && v[i].image == image && v[i].a == a &&
			      v[i].b == b))
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int lbr_live(const void *rec)
{
	return ((const struct lbr_slot *)rec)->kind != 0;
}

static uint64_t lbr_home(const void *rec)
{
	const struct lbr_slot *s = rec;

	return lbr_hash(s->image, s->kind, s->a, s->b);
}

int imp_lbr_add(struct imp_lbr *t, uint32_t image, int kind, uint64_t a, uint64_t b)
{
	struct lbr_slot *s;

	if (2 * (t->n + 1) > t->cap &&
	    recs_rehash((void **)&t->v, &t->cap, 2 * t->cap, sizeof(*t->v), lbr_live, lbr_home,
			NULL))
		return -ENOMEM;
	s = lbr_find(t->v, t->cap, image, kind, a, b);
	if (!s->kind) {
		s->kind = (uint8_t)kind;
		s->image = image;
		s->a = a;
		s->b = b;
		t->n++;
	}
	s->count++;
	return 0;
}

static int slot_cmp(const void *x, const void *y)
{
	const struct lbr_slot *p = x, *q = y;

	return dcpi_cmp_keys((uint64_t[]){ p->image, p->kind, p->a, p->b },
			     (uint64_t[]){ q->image, q->kind, q->a, q->b }, 4);
}

int import_lbr_name(const struct prof_image_id *id, char *out, size_t len)
{
	return imp_epoch_name(id, ".lbr-counts", out, len);
}

static void put_off(FILE *mf, uint64_t v)
{
	if (v == IMPORT_LBR_OUTSIDE)
		fputs(" -", mf);
	else
		fprintf(mf, " %" PRIx64, v);
}

static int write_one(const struct imp_lbr_info *in, const struct prof_image_id *id,
		     const struct lbr_slot *v, size_t n, struct prof_db *db, const char *epoch,
		     struct dcpi_err *err)
{
	char name[NAME_MAX + 1], *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	int ret;

	if (!mf)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", id->path);
	fprintf(mf, "# dcpi lbr-counts 1\n# image %s\n# build-id %s\n"
		"stacks %" PRIu64 " entries %" PRIu64 " slots %" PRIu64 " period %.17g taken %d "
		"event %s\n", id->path, id->build_id[0] ? id->build_id : "-", in->stacks,
		in->entries, in->slots, in->period, in->taken, in->event[0] ? in->event : "-");
	for (size_t i = 0; i < n; i++) {
		fputc(v[i].kind, mf);
		put_off(mf, v[i].a);
		put_off(mf, v[i].b);
		fprintf(mf, " %" PRIu64 "\n", v[i].count);
	}
	if (fclose(mf) || !buf) {
		free(buf);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", id->path);
	}
	ret = import_lbr_name(id, name, sizeof(name));
	if (ret)
		ret = dcpi_errf(err, ret, "%s: branch counts file name too long", id->path);
	else
		ret = prof_epoch_write_file(db, epoch, name, buf, len, err);
	free(buf);
	return ret;
}

int imp_lbr_write(struct imp_lbr *t, imp_image_fn image_id, void *ctx,
		  const struct imp_lbr_info *in, struct prof_db *db, const char *epoch,
		  size_t *nimages, struct dcpi_err *err)
{
	size_t k = 0;
	int ret = 0;

	*nimages = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].kind)
			t->v[k++] = t->v[i];
	t->n = k;
	dcpi_qsort(t->v, k, sizeof(*t->v), slot_cmp);
	for (size_t i = 0, j; i < k && !ret; i = j) {
		for (j = i; j < k && t->v[j].image == t->v[i].image; j++)
			;
		ret = write_one(in, image_id(ctx, t->v[i].image), &t->v[i], j - i, db, epoch,
				err);
		*nimages += !ret;
	}
	/* the table is a list now: no more adds */
	memset(t->v + k, 0, (t->cap - k) * sizeof(*t->v));
	return ret;
}

/* --- reading ----------------------------------------------------------------- */

void import_lbr_free(struct import_lbr *l)
{
	free(l->ranges);
	free(l->branches);
	memset(l, 0, sizeof(*l));
}

static int get_off(const char *s, uint64_t *v)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = IMPORT_LBR_OUTSIDE;
		return 0;
	}
	*v = strtoull(s, &end, 16);
	return !*s || *end;
}

static int lbr_line(struct import_lbr *l, char *line, double rs, double bs)
{
	char a[32], b[32], kind;
	uint64_t x, y, c;
	int used = 0;

	if (sscanf(line, "%c %31s %31s %" SCNu64 "%n", &kind, a, b, &c, &used) != 4 ||
	    line[used] || get_off(a, &x) || get_off(b, &y))
		return -EINVAL;
	if (kind == 'r') {
		struct import_lbr_range *v = l->ranges;

		if (x == IMPORT_LBR_OUTSIDE || y == IMPORT_LBR_OUTSIDE || y < x)
			return -EINVAL;
		if (!(l->nranges & (l->nranges + 1))) {	/* 0, 1, 3, 7, ...: double */
			v = realloc(v, (2 * l->nranges + 2) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			l->ranges = v;
		}
		v[l->nranges++] = (struct import_lbr_range){ x, y, (double)c * rs };
	} else if (kind == 'b') {
		struct import_lbr_branch *v = l->branches;

		if (!(l->nbranches & (l->nbranches + 1))) {
			v = realloc(v, (2 * l->nbranches + 2) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			l->branches = v;
		}
		v[l->nbranches++] = (struct import_lbr_branch){ x, y, (double)c * bs };
	} else {
		return -EINVAL;
	}
	return 0;
}

static int range_cmp(const void *x, const void *y)
{
	const struct import_lbr_range *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->begin, a->end }, (uint64_t[]){ b->begin, b->end },
			     2);
}

static int branch_cmp(const void *x, const void *y)
{
	const struct import_lbr_branch *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->from, a->to }, (uint64_t[]){ b->from, b->to }, 2);
}

static int lbr_parse(char *text, const char *path, struct import_lbr *l,
		     struct dcpi_err *err)
{
	uint64_t stacks, entries, slots;
	double period, rs, bs;
	char event[64], *save = NULL, *line;
	unsigned long n = 0;
	int taken, rc;

	if (strncmp(text, "# dcpi lbr-counts 1\n", 20))
		return dcpi_errf(err, -EINVAL, "%s: bad magic (not a dcpi lbr-counts file of "
				 "version 1)", path);
	for (line = strtok_r(text, "\n", &save); line && line[0] == '#';
	     line = strtok_r(NULL, "\n", &save))
		n++;
	if (!line || sscanf(line, "stacks %" SCNu64 " entries %" SCNu64 " slots %" SCNu64
			    " period %lf taken %d event %63s", &stacks, &entries, &slots,
			    &period, &taken, event) != 6 || !(period >= 0) || slots > entries)
		return dcpi_errf(err, -EINVAL, "%s: line %lu: bad counts header", path, n + 1);
	n++;
	taken = taken && period > 0 && slots > 0;
	rs = taken ? period * (double)stacks / (double)slots : 1;
	bs = taken ? period * (double)stacks / (double)(entries ? entries : 1) :
		     entries ? (double)slots / (double)entries : 1;
	if (l->stacks && (l->taken != taken))
		taken = 0;	/* absolute with relative: relative */
	l->stacks += stacks;
	l->entries += entries;
	l->slots += slots;
	l->period = period;
	l->taken = taken;
	l->range_scale = rs;
	l->branch_scale = bs;
	snprintf(l->event, sizeof(l->event), "%s", event);
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		n++;
		if (line[0] == '#')
			continue;
		rc = lbr_line(l, line, rs, bs);
		if (rc == -ENOMEM)
			return dcpi_errf(err, rc, "%s: out of memory", path);
		if (rc)
			return dcpi_errf(err, rc, "%s: line %lu: bad record", path, n);
	}
	dcpi_qsort(l->ranges, l->nranges, sizeof(*l->ranges), range_cmp);
	dcpi_qsort(l->branches, l->nbranches, sizeof(*l->branches), branch_cmp);
	return 0;
}

int import_read_lbr(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
		    struct import_lbr *out, struct dcpi_err *err)
{
	char path[PATH_MAX], *text;
	int ret;

	ret = imp_read_epoch_text(db, epoch, id, ".lbr-counts", &text, path, sizeof(path), err);
	if (ret)
		return ret > 0 ? 0 : ret;
	ret = lbr_parse(text, path, out, err);
	free(text);
	return ret;
}
