/*
 * image/ehframe.c - procedure bounds from .eh_frame FDEs.
 *
 * Stripped binaries are the common case on real systems (docs/architecture.md,
 * "Contracts"),
 * but the unwinder needs .eh_frame, so nearly every function still has an FDE
 * saying where it starts and how long it is.  This file parses the CIEs and
 * FDEs by hand (LSB 5.0 "Exception Frames", DWARF 4 sec. 6.4.1): length
 * (32-bit or 64-bit), CIE pointer, augmentation string "z..." with its 'L',
 * 'P', 'R', 'S' parts, and the DW_EH_PE_* pointer encodings (absptr, uleb,
 * udata2/4/8, sleb, sdata2/4/8; pcrel, textrel, datarel, aligned).  The table
 * is found through the .eh_frame section, or, when section headers are gone,
 * through PT_GNU_EH_FRAME and .eh_frame_hdr's eh_frame_ptr.
 *
 * Each FDE range, or the part of it no symbol or PLT stub covers, becomes an
 * unnamed procedure "<basename>+0x<vaddr>" (symbols.c names it).  Everything
 * read is bounded by the table's end; a bad entry ends the walk, it never
 * fails the image.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"
#include "internal.h"

#define DW_EH_PE_absptr		0x00
#define DW_EH_PE_uleb128	0x01
#define DW_EH_PE_udata2		0x02
#define DW_EH_PE_udata4		0x03
#define DW_EH_PE_udata8		0x04
#define DW_EH_PE_sleb128	0x09
#define DW_EH_PE_sdata2		0x0a
#define DW_EH_PE_sdata4		0x0b
#define DW_EH_PE_sdata8		0x0c
#define DW_EH_PE_pcrel		0x10
#define DW_EH_PE_textrel	0x20
#define DW_EH_PE_datarel	0x30
#define DW_EH_PE_funcrel	0x40
#define DW_EH_PE_aligned	0x50
#define DW_EH_PE_indirect	0x80
#define DW_EH_PE_omit		0xff

/* The table being read: bytes, their virtual address, and relocation bases. */
struct img_ehf {
	const uint8_t *start, *end;
	uint64_t addr;			/* vaddr of start */
	uint64_t text, data;		/* bases for textrel and datarel */
};

struct img_range {
	uint64_t lo, hi;
};

struct img_ranges {
	struct img_range *v;
	size_t n, cap;
};

/* A cursor; every read checks it against end. */
struct img_cur {
	const uint8_t *p, *end;
};

static int img_rd_bytes(struct img_cur *c, void *out, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return -1;
	memcpy(out, c->p, n);
	c->p += n;
	return 0;
}

static int img_rd_u8(struct img_cur *c, uint8_t *v)
{
	return img_rd_bytes(c, v, 1);
}

static int img_rd_uleb(struct img_cur *c, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static int img_rd_sleb(struct img_cur *c, int64_t *v)
{
	size_t n = dcpi_svarint_get(c->p, (size_t)(c->end - c->p), v);

	if (!n)
		return -1;
	c->p += n;
	return 0;
}

/* A little-endian field of 2, 4 or 8 bytes as a number, sign-extended when
 * sign. */
static int img_rd_word(struct img_cur *c, size_t n, int sign, uint64_t *v)
{
	uint8_t b[8];
	uint64_t u = 0;

	if (img_rd_bytes(c, b, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		u |= (uint64_t)b[i] << (8 * i);
	if (sign && n == 2)
		u = (uint64_t)(int64_t)(int16_t)u;
	else if (sign && n == 4)
		u = (uint64_t)(int64_t)(int32_t)u;
	*v = u;
	return 0;
}

/* The value of a pointer's format (the low nibble of its encoding; absptr
 * is 8 bytes, as on x86-64). */
static int img_rd_value(struct img_cur *c, uint8_t format, uint64_t *v)
{
	int64_t s;

	switch (format) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return img_rd_word(c, 8, 0, v);
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return img_rd_word(c, 2, format == DW_EH_PE_sdata2, v);
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return img_rd_word(c, 4, format == DW_EH_PE_sdata4, v);
	case DW_EH_PE_uleb128:
		return img_rd_uleb(c, v);
	case DW_EH_PE_sleb128:
		if (img_rd_sleb(c, &s))
			return -1;
		*v = (uint64_t)s;
		return 0;
	default:
		return -1;
	}
}

/* Read a pointer in encoding enc. */
static int img_rd_ptr(const struct img_ehf *t, struct img_cur *c, uint8_t enc, uint64_t *v)
{
	uint64_t here, val = 0;

	if (enc == DW_EH_PE_omit)
		return -1;
	if ((enc & 0x70) == DW_EH_PE_aligned) {
		size_t off = (size_t)(c->p - t->start);
		size_t pad = ((t->addr + off + 7) & ~(uint64_t)7) - (t->addr + off);

		if ((size_t)(c->end - c->p) < pad)
			return -1;
		c->p += pad;
	}
	here = t->addr + (uint64_t)(c->p - t->start);
	if (img_rd_value(c, enc & 0x0f, &val))
		return -1;
	switch (enc & 0x70) {
	case 0:
	case DW_EH_PE_aligned:
		break;
	case DW_EH_PE_pcrel:
		val += here;
		break;
	case DW_EH_PE_textrel:
		val += t->text;
		break;
	case DW_EH_PE_datarel:
		val += t->data;
		break;
	default:	/* funcrel has no meaning for a function's own start */
		return -1;
	}
	*v = val;
	return 0;
}

/* Entry header at c: length and the cursor limited to the entry's body. */
static int img_rd_entry(struct img_cur *c, struct img_cur *body, int *last)
{
	uint32_t len32;
	uint64_t len;

	*last = 0;
	if (img_rd_bytes(c, &len32, 4))
		return -1;
	len = len32;
	if (len32 == 0) {		/* terminator */
		*last = 1;
		return 0;
	}
	if (len32 == 0xffffffffu && img_rd_bytes(c, &len, 8))
		return -1;
	if (len > (uint64_t)(c->end - c->p))
		return -1;
	body->p = c->p;
	body->end = c->p + len;
	c->p += len;
	return 0;
}

/* Parse the CIE at p and return its FDE pointer encoding. */
static int img_cie_fde_enc(const struct img_ehf *t, const uint8_t *p, uint8_t *fde_enc)
{
	struct img_cur c = { p, t->end }, b;
	const char *aug;
	const uint8_t *nul;
	uint32_t id;
	uint8_t ver, b8;
	uint64_t u, auglen, junk;
	int64_t s;
	int last;

	if (img_rd_entry(&c, &b, &last) || last)
		return -1;
	if (img_rd_bytes(&b, &id, 4) || id != 0 || img_rd_u8(&b, &ver))
		return -1;
	if (ver != 1 && ver != 3 && ver != 4)
		return -1;
	nul = memchr(b.p, '\0', (size_t)(b.end - b.p));
	if (!nul)
		return -1;
	aug = (const char *)b.p;
	b.p = nul + 1;
	*fde_enc = DW_EH_PE_absptr;
	if (aug[0] == '\0')
		return 0;
	if (aug[0] != 'z')
		return -1;	/* "eh" and other old forms: FDEs unreadable */
	if (ver == 4) {		/* address size, segment size */
		if (img_rd_u8(&b, &b8) || img_rd_u8(&b, &b8))
			return -1;
	}
	if (img_rd_uleb(&b, &u) || img_rd_sleb(&b, &s))
		return -1;
	if (ver == 1 ? img_rd_u8(&b, &b8) : img_rd_uleb(&b, &u))
		return -1;
	if (img_rd_uleb(&b, &auglen) || auglen > (uint64_t)(b.end - b.p))
		return -1;
	b.end = b.p + auglen;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			if (img_rd_u8(&b, fde_enc))
				return -1;
			return 0;
		case 'L':
			if (img_rd_u8(&b, &b8))
				return -1;
			break;
		case 'P':
			if (img_rd_u8(&b, &b8) || img_rd_ptr(t, &b, b8 & 0x7f, &junk))
				return -1;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return 0;	/* the rest is skipped by its length */
		}
	}
	return 0;
}

static int img_ranges_add(struct img_ranges *r, uint64_t lo, uint64_t hi)
{
	if (dcpi_grow((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n].lo = lo;
	r->v[r->n].hi = hi;
	r->n++;
	return 0;
}

/* A tiny cache of CIE offset -> FDE encoding; a few CIEs serve every FDE. */
#define IMG_CIE_CACHE 16

struct img_cie_cache {
	const uint8_t *at[IMG_CIE_CACHE];
	uint8_t enc[IMG_CIE_CACHE];
	int ok[IMG_CIE_CACHE];
};

static int img_cie_lookup(const struct img_ehf *t, struct img_cie_cache *cc,
			  const uint8_t *cie, uint8_t *enc)
{
	size_t h = ((uintptr_t)cie >> 2) % IMG_CIE_CACHE;

	if (cc->at[h] != cie) {
		cc->at[h] = cie;
		cc->ok[h] = img_cie_fde_enc(t, cie, &cc->enc[h]) == 0;
	}
	*enc = cc->enc[h];
	return cc->ok[h] ? 0 : -1;
}

/* Walk every entry of the table and collect FDE ranges in text. */
static int img_ehf_walk(const struct image *img, const struct img_ehf *t, struct img_ranges *r)
{
	struct img_cur c = { t->start, t->end };
	struct img_cie_cache cc;

	memset(&cc, 0, sizeof(cc));
	while (c.p < c.end) {
		struct img_cur b;
		const uint8_t *idp = NULL;
		uint32_t id;
		uint8_t enc;
		uint64_t lo, len;
		int last;

		if (img_rd_entry(&c, &b, &last) || last)
			break;
		idp = b.p;
		if (img_rd_bytes(&b, &id, 4))
			break;
		if (id == 0)
			continue;	/* a CIE */
		if (id > (uint64_t)(idp - t->start))
			continue;
		if (img_cie_lookup(t, &cc, idp - id, &enc))
			continue;
		if (img_rd_ptr(t, &b, enc, &lo) || img_rd_ptr(t, &b, enc & 0x0f, &len))
			continue;
		if (len == 0 || lo + len < lo || lo == 0 || !img_addr_is_text(img, lo))
			continue;
		if (img_ranges_add(r, lo, lo + len))
			return -ENOMEM;
	}
	return 0;
}

/* The base for datarel pointers: the GOT, as the x86-64 psABI defines it. */
static uint64_t img_got_base(const struct image *img)
{
	const struct img_section *s = img_section_by_name(img, ".got.plt");

	if (!s)
		s = img_section_by_name(img, ".got");
	return s ? s->addr : 0;
}

/* Find .eh_frame through PT_GNU_EH_FRAME when there are no section headers. */
static int img_ehf_from_hdr(const struct image *img, struct img_ehf *t)
{
	uint64_t i;

	if (img->eh.e_phentsize != sizeof(Elf64_Phdr) || img->eh.e_phoff > img->size ||
	    img->eh.e_phnum > (img->size - img->eh.e_phoff) / sizeof(Elf64_Phdr))
		return -1;
	for (i = 0; i < img->eh.e_phnum; i++) {
		Elf64_Phdr ph;
		struct img_ehf h;
		struct img_cur c;
		uint8_t hdr[4];
		uint64_t ehf;
		size_t avail;

		memcpy(&ph, img->data + img->eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_GNU_EH_FRAME)
			continue;
		h.start = img_bytes(img, ph.p_vaddr, &avail);
		if (!h.start)
			return -1;
		h.end = h.start + avail;
		h.addr = ph.p_vaddr;
		h.text = 0;
		h.data = ph.p_vaddr;	/* datarel in the header is from its start */
		c.p = h.start;
		c.end = h.end;
		if (img_rd_bytes(&c, hdr, 4) || hdr[0] != 1 || img_rd_ptr(&h, &c, hdr[1], &ehf))
			return -1;
		t->start = img_bytes(img, ehf, &avail);
		if (!t->start)
			return -1;
		t->end = t->start + avail;
		t->addr = ehf;
		return 0;
	}
	return -1;
}

static int img_range_cmp(const void *a, const void *b)
{
	const struct img_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Add the parts of [lo, hi) that no procedure covers. */
static int img_add_gaps(struct image *img, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = img->nprocs;
	uint64_t cur = lo;

	/* first procedure ending after lo */
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		const struct img_proc *p = &img->procs[mid];

		if (p->addr + p->size <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (; a < img->nprocs && img->procs[a].addr < hi; a++) {
		const struct img_proc *p = &img->procs[a];

		if (p->addr > cur &&
		    img_cand_add(img, cur, p->addr - cur, p->addr, NULL, 0, IMG_SRC_EH_FRAME,
				 IMG_RANK_FDE))
			return -ENOMEM;
		if (p->addr + p->size > cur)
			cur = p->addr + p->size;
	}
	if (cur < hi && img_cand_add(img, cur, hi - cur, hi, NULL, 0, IMG_SRC_EH_FRAME,
				     IMG_RANK_FDE))
		return -ENOMEM;
	return 0;
}

int img_ehframe_load(struct image *img, struct dcpi_err *err)
{
	struct img_ranges r = { 0 };
	struct img_ehf t;
	const struct img_section *text;
	long idx;
	size_t i, len;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	idx = img_sec_index(img, ".eh_frame");
	if (idx >= 0 && (t.start = img_sec_data(img, idx, &len)) != NULL) {
		t.end = t.start + len;
		t.addr = img->secs[idx].addr;
	} else if (img_ehf_from_hdr(img, &t)) {
		return 0;
	}
	text = img_section_by_name(img, ".text");
	t.text = text ? text->addr : 0;
	t.data = img_got_base(img);
	rc = img_ehf_walk(img, &t, &r);
	if (rc)
		goto out;
	dcpi_qsort(r.v, r.n, sizeof(*r.v), img_range_cmp);
	for (i = 0; i < r.n && !rc; i++)
		rc = img_add_gaps(img, r.v[i].lo, r.v[i].hi);
out:
	free(r.v);
	if (rc)
		return dcpi_errf(err, rc, "%s: out of memory", img->path);
	return 0;
}
