/*
 * pprof.c - an epoch as a pprof profile (gzip'd profile.proto), so
 * profiles from many machines can go into the continuous-profiling back
 * ends that read it (`go tool pprof`, Pyroscope, Parca, Cloud Profiler).
 *
 * One sample type per event (its name, unit "samples"), one value per type
 * in every sample; one location per sampled (image, file offset), its
 * address the virtual address in the image, its lines the procedure and,
 * where DWARF has them, the source line and the inlined subroutines
 * (innermost first, as pprof wants them); one function per (name, file);
 * one mapping per image with its build-id.  With call graphs (record -g,
 * include/dcpi/callgraph.h) each stack is a sample whose location_ids are
 * its frames, leaf first, so flame graphs and `go tool pprof -top -cum`
 * see the calls; a location's samples not on any stack (kernel samples,
 * chains without a user frame) stay a one-frame sample, so totals hold.
 * The protobuf is written by hand
 * (varints and length-delimited fields: profile.proto's field numbers) and
 * compressed with zlib's gzip wrapper.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/callgraph.h"
#include "dcpi/image.h"
#include "dcpi/kallsyms.h"
#include "dcpi/report.h"

/* A varint (protobuf's base-128, util.c's) into b. */
static void varint(struct dcpi_buf *b, uint64_t v)
{
	uint8_t t[10];

	dcpi_buf_put(b, t, dcpi_varint_put(t, v));
}

static void field_int(struct dcpi_buf *b, unsigned f, uint64_t v)
{
	varint(b, (uint64_t)f << 3);
	varint(b, v);
}

static void field_bytes(struct dcpi_buf *b, unsigned f, const void *d, size_t len)
{
	varint(b, (uint64_t)f << 3 | 2);
	varint(b, len);
	dcpi_buf_put(b, d, len);
}

/* A message in its own buffer, then into b as field f. */
static void field_msg(struct dcpi_buf *b, unsigned f, struct dcpi_buf *m)
{
	if (m->oom)
		b->oom = 1;
	field_bytes(b, f, m->p, m->n);
	m->n = 0;
}

struct strs {
	char **v;
	size_t n, cap;
};

/* The string table index of s, added if new (a linear search would do for
 * small profiles; the table is hashed by nothing but it stays in the
 * thousands for an epoch's procedures). */
static int64_t str_id(struct strs *t, const char *s)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i], s))
			return (int64_t)i;
	if (dcpi_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -1;
	t->v[t->n] = strdup(s);
	if (!t->v[t->n])
		return -1;
	return (int64_t)t->n++;
}

struct func {
	char *name, *file;
	uint64_t id;
};

struct funcs {
	struct func *v;
	size_t n, cap;
};

static uint64_t func_id(struct funcs *fs, struct strs *st, struct dcpi_buf *out,
			struct dcpi_buf *tmp, const char *name, const char *file,
			unsigned start_line)
{
	struct func *f;

	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->v[i].name, name) && !strcmp(fs->v[i].file, file))
			return fs->v[i].id;
	if (dcpi_grow((void **)&fs->v, &fs->cap, fs->n + 1, sizeof(*fs->v)))
		return 0;
	f = &fs->v[fs->n];
	f->name = strdup(name);
	f->file = strdup(file);
	if (!f->name || !f->file) {
		free(f->name);
		free(f->file);
		return 0;
	}
	f->id = ++fs->n;
	/* Function: id 1, name 2, system_name 3, filename 4, start_line 5 */
	field_int(tmp, 1, f->id);
	field_int(tmp, 2, (uint64_t)str_id(st, name));
	field_int(tmp, 3, (uint64_t)str_id(st, name));
	field_int(tmp, 4, (uint64_t)str_id(st, file));
	field_int(tmp, 5, start_line);
	field_msg(out, 5, tmp);
	return f->id;
}

static int same_image(const struct prof_profile *a, const struct prof_profile *b)
{
	return prof_image_id_equal(&a->image, &b->image);
}

struct img_order {
	size_t first;		/* its first profile */
	uint64_t total;		/* its samples, all events */
};

static int by_total(const void *a, const void *b)
{
	const struct img_order *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int image_order(const struct prof_profile *p, size_t np, struct img_order **out,
		       size_t *n)
{
	struct img_order *o = calloc(np ? np : 1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	*n = 0;
	for (size_t i = 0; i < np; i++) {
		size_t k;

		for (k = 0; k < *n; k++)
			if (prof_image_id_equal(&p[o[k].first].image, &p[i].image))
				break;
		if (k == *n)
			o[(*n)++].first = i;
		o[k].total += p[i].total;
	}
	qsort(o, *n, sizeof(*o), by_total);
	*out = o;
	return 0;
}

struct triple {
	uint64_t off, count;
	size_t ev;
};

/* The index of event name in evs[0..nev), nev when it is not there. */
static size_t event_index(char **evs, size_t nev, const char *name)
{
	size_t k;

	for (k = 0; k < nev && strcmp(evs[k], name); k++)
		;
	return k;
}

static int by_off(const void *a, const void *b)
{
	const struct triple *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The (offset, event, count) of every profile of p[i]'s image, by offset. */
static int gather(const struct prof_profile *p, size_t np, size_t i, char **evs, size_t nev,
		  struct triple **tr, size_t *n)
{
	size_t cnt = 0;
	struct triple *t;

	for (size_t j = i; j < np; j++)
		if (same_image(&p[j], &p[i]))
			cnt += p[j].n;
	t = realloc(*tr, (cnt ? cnt : 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	*tr = t;
	*n = 0;
	for (size_t j = i; j < np; j++) {
		size_t k;

		if (!same_image(&p[j], &p[i]))
			continue;
		k = event_index(evs, nev, p[j].event);
		for (size_t e = 0; e < p[j].n && k < nev; e++)
			t[(*n)++] = (struct triple){ p[j].e[e].offset, p[j].e[e].count, k };
	}
	return 0;
}

/* Appended to tr: every frame of the stacks in image id (count 0, event
 * 2 * nev: a location only), and every leaf count (event nev + k: on a
 * stack, so not a one-frame sample). */
static int gather_cg(const struct cg_profile *cg, size_t ncg, const struct prof_image_id *id,
		     char **evs, size_t nev, struct triple **tr, size_t *n)
{
	size_t nf = 0;
	struct triple *t;

	for (size_t i = 0; i < ncg; i++)
		nf += cg[i].nf;
	if (!nf)
		return 0;
	if (!(t = realloc(*tr, (*n + nf) * sizeof(*t))))
		return -ENOMEM;
	*tr = t;
	for (size_t i = 0; i < ncg; i++) {
		const struct cg_profile *c = &cg[i];

		for (size_t j = 0; j < c->n; j++) {
			const struct cg_stack *st = &c->s[j];
			size_t k = event_index(evs, nev, c->events[st->event]);

			for (uint32_t d = 0; d < st->depth; d++) {
				const struct cg_frame *f = &c->f[st->first + d];

				if (!prof_image_id_equal(cg_profile_image(c, f->tag), id))
					continue;
				(*tr)[(*n)++] = (struct triple){ f->offset, d || k == nev ? 0 :
								 st->count, d || k == nev ?
								 2 * nev : nev + k };
			}
		}
	}
	return 0;
}

/* (image, offset) -> location id, filled image by image in offset order. */
struct loc {
	size_t img;
	uint64_t off, id;
};

struct locs {
	struct loc *v;
	size_t n, cap;
};

static uint64_t loc_find(const struct locs *l, size_t img, uint64_t off)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct loc *m = &l->v[mid];

		if (m->img < img || (m->img == img && m->off < off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->v[lo].img == img && l->v[lo].off == off ? l->v[lo].id : 0;
}

/* p's profiles (shallow copies) and an empty one for each image only the
 * stacks name, so that every frame has a mapping. */
static int with_cg_images(const struct prof_profile *p, size_t np, const struct cg_profile *cg,
			  size_t ncg, struct prof_profile **out, size_t *n)
{
	struct prof_profile *v = malloc((np ? np : 1) * sizeof(*v));
	size_t cap = np ? np : 1;

	if (!v)
		return -ENOMEM;
	memcpy(v, p, np * sizeof(*v));
	*n = np;
	for (size_t i = 0; i < ncg; i++)
		for (uint32_t t = 0; t <= cg[i].nimgs; t++) {
			const struct prof_image_id *id = cg_profile_image(&cg[i], t);
			size_t k;

			for (k = 0; k < *n && !prof_image_id_equal(&v[k].image, id); k++)
				;
			if (k < *n)
				continue;
			if (dcpi_grow((void **)&v, &cap, *n + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			memset(&v[*n], 0, sizeof(*v));
			v[(*n)++].image = *id;
		}
	*out = v;
	return 0;
}

/* Each stack as a sample: its frames' locations, leaf first. */
static void put_stacks(struct dcpi_buf *pb, struct dcpi_buf *m, struct dcpi_buf *tmp,
		       const struct cg_profile *cg, size_t ncg, const struct prof_profile *p2,
		       const struct img_order *order, size_t nimg, const struct locs *locs,
		       char **evs, size_t nev)
{
	for (size_t i = 0; i < ncg; i++) {
		const struct cg_profile *c = &cg[i];

		for (size_t j = 0; j < c->n; j++) {
			const struct cg_stack *st = &c->s[j];
			size_t k = event_index(evs, nev, c->events[st->event]);

			if (k == nev)
				continue;
			for (uint32_t d = 0; d < st->depth; d++) {
				const struct cg_frame *f = &c->f[st->first + d];
				const struct prof_image_id *id = cg_profile_image(c, f->tag);
				size_t oi;

				for (oi = 0; oi < nimg &&
				     !prof_image_id_equal(&p2[order[oi].first].image, id); oi++)
					;
				varint(tmp, loc_find(locs, oi, f->offset));
			}
			field_msg(m, 1, tmp);
			for (size_t e = 0; e < nev; e++)
				varint(tmp, e == k ? st->count : 0);
			field_msg(m, 2, tmp);
			field_msg(pb, 2, m);
		}
	}
}

int rep_pprof(const struct prof_profile *p, size_t np, const struct prof_epoch_meta *meta,
	      uint8_t **out, size_t *outlen, struct dcpi_err *err)
{
	return rep_pprof_cg(p, np, NULL, 0, meta, out, outlen, err);
}

int rep_pprof_cg(const struct prof_profile *p, size_t np, const struct cg_profile *cg,
		 size_t ncg, const struct prof_epoch_meta *meta, uint8_t **out, size_t *outlen,
		 struct dcpi_err *err)
{
	struct prof_profile *p2 = NULL;
	struct locs locs = { 0 };
	size_t np2 = 0;
	struct dcpi_buf pb = { 0 }, m = { 0 }, line = { 0 }, fn = { 0 };
	struct strs st = { 0 };
	struct funcs fs = { 0 };
	char *evs[64];
	size_t nev = 0, nloc = 0, nmap = 0;
	uint64_t *vals = NULL;
	struct triple *tr = NULL;
	struct img_order *order = NULL;
	size_t ntr = 0, nimg = 0;
	int rc = 0;

	*out = NULL;
	*outlen = 0;
	for (size_t i = 0; i < np; i++)
		if (event_index(evs, nev, p[i].event) == nev && nev < 64)
			evs[nev++] = (char *)p[i].event;
	if (!nev)
		return dcpi_errf(err, -ENODATA, "no samples to export");
	str_id(&st, "");	/* string_table[0] is "" */
	vals = calloc(2 * nev, sizeof(*vals));
	if (!vals || with_cg_images(p, np, cg, ncg, &p2, &np2) < 0) {
		free(vals);
		return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	/* sample_type 1: ValueType{type 1, unit 2} */
	for (size_t k = 0; k < nev; k++) {
		field_int(&m, 1, (uint64_t)str_id(&st, evs[k]));
		field_int(&m, 2, (uint64_t)str_id(&st, "samples"));
		field_msg(&pb, 1, &m);
	}
	/* images, the most sampled first (pprof takes the first mapping for the
	 * main binary): the first profile of each identity stands for it */
	if (image_order(p2, np2, &order, &nimg) < 0) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t oi = 0; oi < nimg; oi++) {
		size_t i = order[oi].first;
		struct image *img = NULL;
		struct ksyms ks = { 0 };
		int dwarf;
		size_t mapping;
		long ki;

		mapping = ++nmap;
		if (img_open(p2[i].image.path, 0, &img, NULL) < 0)
			img = NULL;
		/* kernel samples: named from /proc/kallsyms, as dcpiprof names them */
		if (!strcmp(p2[i].image.path, KSYMS_IMAGE) &&
		    ksyms_load(getenv("DCPI_KALLSYMS"), &ks, NULL) < 0)
			memset(&ks, 0, sizeof(ks));
		dwarf = img && img_has_dwarf(img);
		/* Mapping: id 1, start 2, limit 3, offset 4, filename 5, build_id 6,
		 * has_functions 7, has_filenames 8, has_line_numbers 9,
		 * has_inline_frames 10 */
		field_int(&m, 1, mapping);
		field_int(&m, 3, UINT64_MAX >> 1);
		field_int(&m, 5, (uint64_t)str_id(&st, p2[i].image.path));
		field_int(&m, 6, (uint64_t)str_id(&st, p2[i].image.build_id));
		field_int(&m, 7, img != NULL);
		field_int(&m, 8, dwarf);
		field_int(&m, 9, dwarf);
		field_int(&m, 10, dwarf);
		field_msg(&pb, 3, &m);
		/* every offset of every profile of this image, with a count per
		 * event: gathered, sorted by offset, one location each */
		if (gather(p2, np2, i, evs, nev, &tr, &ntr) < 0 ||
		    gather_cg(cg, ncg, &p2[i].image, evs, nev, &tr, &ntr) < 0) {
			if (img)
				img_close(img);
			rc = dcpi_errf(err, -ENOMEM, "out of memory");
			goto out;
		}
		qsort(tr, ntr, sizeof(*tr), by_off);
		for (size_t t = 0; t < ntr;) {
			uint64_t off = tr[t].off, va = off;
			const struct img_proc *pr = NULL;
			const struct img_inline *inl = NULL;
			struct img_line ln = { 0 };
			const char *file;
			size_t ninl = 0;

			int flat = 0;

			memset(vals, 0, 2 * nev * sizeof(*vals));
			for (; t < ntr && tr[t].off == off; t++)
				if (tr[t].ev < 2 * nev)
					vals[tr[t].ev] += tr[t].count;
			if (img && img_offset_to_vaddr(img, off, &va) == 0)
				pr = img_proc_at(img, va);
			if (!(dwarf && img_line_at(img, va, &ln) == 0))
				memset(&ln, 0, sizeof(ln));
			if (ln.file && img_inlines_at(img, va, &inl, &ninl) < 0)
				ninl = 0;
			file = ln.file ? ln.file : "";
			/* Location: id 1, mapping_id 2, address 3, line 4 (innermost
			 * first); Line: function_id 1, line 2 */
			field_int(&m, 1, ++nloc);
			field_int(&m, 2, mapping);
			field_int(&m, 3, va);
			for (size_t k = ninl; k > 0; k--) {
				field_int(&line, 1, func_id(&fs, &st, &pb, &fn, inl[k - 1].name, file,
							     inl[k - 1].decl_line));
				field_int(&line, 2, k == ninl ? ln.line : inl[k].call_line);
				field_msg(&m, 4, &line);
			}
			ki = pr ? -1 : ksyms_find(&ks, off);
			field_int(&line, 1, func_id(&fs, &st, &pb, &fn, pr ? pr->name : ki >= 0 ?
						     ks.e[ki].name : p2[i].image.path, file, 0));
			field_int(&line, 2, ninl ? inl[0].call_line : ln.line);
			field_msg(&m, 4, &line);
			field_msg(&pb, 4, &m);
			if (dcpi_grow((void **)&locs.v, &locs.cap, locs.n + 1, sizeof(*locs.v)))
				pb.oom = 1;
			else
				locs.v[locs.n++] = (struct loc){ oi, off, nloc };
			/* what no stack holds: a one-frame sample */
			for (size_t k = 0; k < nev; k++) {
				vals[k] -= vals[nev + k] < vals[k] ? vals[nev + k] : vals[k];
				flat |= vals[k] != 0;
			}
			if (!flat)
				continue;
			/* Sample: location_id 1, value 2 (packed) */
			field_int(&m, 1, nloc);
			for (size_t k = 0; k < nev; k++)
				varint(&line, vals[k]);
			field_msg(&m, 2, &line);
			field_msg(&pb, 2, &m);
		}
		if (img)
			img_close(img);
		ksyms_free(&ks);
	}
	put_stacks(&pb, &m, &line, cg, ncg, p2, order, nimg, &locs, evs, nev);
	if (meta) {
		field_int(&pb, 9, meta->start_ns);
		field_int(&pb, 10, meta->end_ns > meta->start_ns ? meta->end_ns - meta->start_ns : 0);
	}
	/* period_type 11, period 12: the first event's */
	field_int(&m, 1, (uint64_t)str_id(&st, evs[0]));
	field_int(&m, 2, (uint64_t)str_id(&st, p[0].period_unit[0] ? p[0].period_unit : "events"));
	field_msg(&pb, 11, &m);
	field_int(&pb, 12, (uint64_t)p[0].period);
	/* string_table 6, last: every string is in it by now */
	for (size_t i = 0; i < st.n; i++)
		field_bytes(&pb, 6, st.v[i], strlen(st.v[i]));
	if (pb.oom || m.oom || line.oom || fn.oom) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	{
		/* gzip (zlib's wrapper: windowBits 15 + 16) */
		z_stream z = { 0 };
		uLong cap = compressBound(pb.n) + 64;
		uint8_t *gz = malloc(cap);

		if (!gz || deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
			free(gz);
			rc = dcpi_errf(err, -ENOMEM, "out of memory compressing");
			goto out;
		}
		z.next_in = pb.p;
		z.avail_in = (uInt)pb.n;
		z.next_out = gz;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
			deflateEnd(&z);
			free(gz);
			rc = dcpi_errf(err, -EIO, "gzip failed");
			goto out;
		}
		*outlen = z.total_out;
		*out = gz;
		deflateEnd(&z);
	}
out:
	for (size_t i = 0; i < st.n; i++)
		free(st.v[i]);
	free(st.v);
	for (size_t i = 0; i < fs.n; i++) {
		free(fs.v[i].name);
		free(fs.v[i].file);
	}
	free(fs.v);
	free(pb.p);
	free(m.p);
	free(line.p);
	free(fn.p);
	free(vals);
	free(tr);
	free(order);
	free(p2);
	free(locs.v);
	return rc;
}
