/*
 * probes.c - LLVM's pseudo probes (clang -fpseudo-probe-for-profiling): the
 * block ids a probe-based sample profile is keyed by, read from the binary.
 *
 * .pseudo_probe_desc holds one record per function:
 *	GUID (8 bytes LE), CFG hash (8), name length (ULEB128), name
 * and .pseudo_probe an inline forest, one tree per top-level function (or
 * split part of one), each node
 *	[call-site probe index (ULEB128), for an inlinee only]
 *	GUID (8), probe count (ULEB128), inlinee count (ULEB128),
 *	probes, then the inlinees (nodes again)
 * and each probe
 *	index (ULEB128), one byte: type (bits 0-3), attributes (4-6: 1 reserved,
 *	2 sentinel, 4 has a discriminator), 0x80 when an address delta follows
 *	(SLEB128, from the previous probe) instead of 8 bytes, and the
 *	discriminator (ULEB128) when flagged.
 * A tree's first delta counts from the start of the function whose symbol
 * name hashes to its GUID; a split part (foo.cold) starts with a sentinel
 * probe whose 8 bytes are the GUID of the part's symbol.  A function's GUID is
 * MD5 of its name (dcpi_md5_guid), so symbols are found by hashing them.
 * (The format as LLVM 19's MCPseudoProbe writes and reads it.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PP_SENTINEL	0x2
#define PP_HAS_DISCR	0x4
#define PP_NONE		UINT32_MAX

struct rd {
	const uint8_t *p, *end;
	int bad;
};

/* The input ends or is malformed: stop reading, return 0. */
static uint64_t rd_fail(struct rd *r)
{
	r->bad = 1;
	r->p = r->end;
	return 0;
}

static uint64_t rd_u64(struct rd *r)
{
	uint64_t v;

	if (r->end - r->p < 8)
		return rd_fail(r);
	v = dcpi_get_le64(r->p);
	r->p += 8;
	return v;
}

static uint8_t rd_u8(struct rd *r)
{
	return r->p < r->end ? *r->p++ : (uint8_t)rd_fail(r);
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v;
	size_t n = dcpi_varint_get(r->p, (size_t)(r->end - r->p), &v);

	if (!n)
		return rd_fail(r);
	r->p += n;
	return v;
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v;
	size_t n = dcpi_svarint_get(r->p, (size_t)(r->end - r->p), &v);

	if (!n)
		return (int64_t)rd_fail(r);
	r->p += n;
	return v;
}

struct sym_guid {
	uint64_t guid, addr;
};

static int cmp_sym_guid(const void *a, const void *b)
{
	const struct sym_guid *x = a, *y = b;

	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

static int cmp_desc(const void *a, const void *b)
{
	const struct opt_pdesc *x = a, *y = b;

	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

static int cmp_probe(const void *a, const void *b)
{
	const struct opt_probe *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node ? 1 :
	       (x->index > y->index) - (x->index < y->index);
}

struct dec {
	struct opt_probes *pp;
	struct rd r;
	const struct sym_guid *syms;
	size_t nsyms;
	size_t capv, capn;
};

static int sym_addr(const struct dec *d, uint64_t guid, uint64_t *addr)
{
	struct sym_guid key = { .guid = guid };
	const struct sym_guid *s = d->nsyms ? bsearch(&key, d->syms, d->nsyms, sizeof(key),
						     cmp_sym_guid) : NULL;

	if (!s)
		return -ENOENT;
	*addr = s->addr;
	return 0;
}

/* One node and its inlinees; *last is the previous probe's address, or
 * unknown (*known 0) when the tree's function has no symbol here. */
static int node(struct dec *d, int top, uint32_t parent, uint64_t *last, int *known, int depth)
{
	struct rd *r = &d->r;
	struct opt_probes *pp = d->pp;
	struct opt_pnode *n;
	uint32_t site = top ? 0 : (uint32_t)rd_uleb(r), id;
	uint64_t guid = rd_u64(r), nprobes, nkids;

	if (depth > 256)
		return -EINVAL;
	n = dcpi_append((void **)&pp->nodes, &pp->nn, &d->capn, sizeof(*n));
	if (!n)
		return -ENOMEM;
	id = (uint32_t)(pp->nn - 1);
	n->guid = guid;
	n->parent = parent;
	n->site = site;
	if (top)
		*known = sym_addr(d, guid, last) == 0;
	nprobes = rd_uleb(r);
	nkids = rd_uleb(r);
	for (uint64_t i = 0; i < nprobes && !r->bad; i++) {
		uint32_t index = (uint32_t)rd_uleb(r);
		uint8_t v = rd_u8(r);
		uint8_t attr = (v >> 4) & 7;
		uint64_t addr = 0;
		struct opt_probe *p;

		if (v & 0x80) {
			addr = *last + (uint64_t)rd_sleb(r);
		} else {
			uint64_t x = rd_u64(r);

			if (attr & PP_SENTINEL)
				*known = sym_addr(d, x, &addr) == 0;
			else {
				addr = x;	/* the older absolute encoding */
				*known = 1;
			}
		}
		if (attr & PP_HAS_DISCR)
			(void)rd_uleb(r);
		*last = addr;
		if (attr & PP_SENTINEL)
			continue;
		if (!*known) {
			pp->unresolved++;
			continue;
		}
		p = dcpi_append((void **)&pp->v, &pp->n, &d->capv, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->addr = addr;
		p->index = index;
		p->type = v & 0xf;
		p->node = id;
	}
	for (uint64_t i = 0; i < nkids && !r->bad; i++) {
		int rc = node(d, 0, id, last, known, depth + 1);

		if (rc < 0)
			return rc;
	}
	return r->bad ? -EINVAL : 0;
}

static int read_desc(struct opt_probes *pp, const uint8_t *p, size_t len)
{
	struct rd r = { p, p + len, 0 };
	size_t cap = 0;

	while (r.p < r.end) {
		struct opt_pdesc *d;
		uint64_t guid = rd_u64(&r), hash = rd_u64(&r), nlen = rd_uleb(&r);

		if (r.bad || nlen > (uint64_t)(r.end - r.p))
			return -EINVAL;
		d = dcpi_append((void **)&pp->desc, &pp->nd, &cap, sizeof(*d));
		if (!d)
			return -ENOMEM;
		d->guid = guid;
		d->hash = hash;
		d->name = strndup((const char *)r.p, (size_t)nlen);
		if (!d->name)
			return -ENOMEM;
		r.p += nlen;
	}
	dcpi_qsort(pp->desc, pp->nd, sizeof(*pp->desc), cmp_desc);
	return 0;
}

void opt_probes_free(struct opt_probes *pp)
{
	for (size_t i = 0; i < pp->nd; i++)
		free(pp->desc[i].name);
	free(pp->desc);
	free(pp->v);
	free(pp->nodes);
	memset(pp, 0, sizeof(*pp));
}

int opt_probes_load(struct image *img, struct opt_probes *pp, struct dcpi_err *err)
{
	const struct img_section *ds = img_section_by_name(img, ".pseudo_probe_desc");
	const struct img_section *ps = img_section_by_name(img, ".pseudo_probe");
	const uint8_t *dp, *p;
	size_t dlen, len, nsyms = 0;
	struct sym_guid *syms = NULL;
	struct dec d = { .pp = pp };
	int rc;

	memset(pp, 0, sizeof(*pp));
	if (!ps || !ds)
		return -ENOENT;
	if (img_section_bytes(img, ds, &dp, &dlen) < 0 || img_section_bytes(img, ps, &p, &len) < 0)
		return dcpi_errf(err, -EINVAL, "%s: pseudo-probe sections outside the file",
				 img_path(img));
	rc = read_desc(pp, dp, dlen);
	if (rc < 0)
		goto bad;
	syms = calloc(img_nprocs(img) ? img_nprocs(img) : 1, sizeof(*syms));
	if (!syms) {
		rc = -ENOMEM;
		goto bad;
	}
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *pr = img_proc(img, i);

		if (!pr->raw_name || !pr->raw_name[0])
			continue;
		syms[nsyms].guid = dcpi_md5_guid(pr->raw_name, strlen(pr->raw_name));
		syms[nsyms++].addr = pr->addr;
	}
	dcpi_qsort(syms, nsyms, sizeof(*syms), cmp_sym_guid);
	d.syms = syms;
	d.nsyms = nsyms;
	d.r = (struct rd){ p, p + len, 0 };
	while (d.r.p < d.r.end) {
		uint64_t last = 0;
		int known = 0;

		rc = node(&d, 1, PP_NONE, &last, &known, 0);
		if (rc < 0)
			goto bad;
	}
	free(syms);
	dcpi_qsort(pp->v, pp->n, sizeof(*pp->v), cmp_probe);
	return 0;
bad:
	free(syms);
	opt_probes_free(pp);
	if (rc == -ENOMEM)
		return dcpi_errf(err, rc, "%s: out of memory", img_path(img));
	return dcpi_errf(err, -EINVAL, "%s: malformed .pseudo_probe or .pseudo_probe_desc "
			 "section", img_path(img));
}

const struct opt_pdesc *opt_probes_desc(const struct opt_probes *pp, uint64_t guid)
{
	struct opt_pdesc key = { .guid = guid };

	return pp->nd ? bsearch(&key, pp->desc, pp->nd, sizeof(key), cmp_desc) : NULL;
}

size_t opt_probes_first(const struct opt_probes *pp, uint64_t addr)
{
	return dcpi_lower_bound(pp->v, pp->n, sizeof(*pp->v), offsetof(struct opt_probe, addr),
				addr);
}
