/*
 * report/mem.c - `dcpi mem` (dcpimem): the data profiles of an epoch
 * (include/dcpi/data.h; docs/data.md; seed 001) as hot objects, hot pages
 * and shared cache lines.
 *
 * Every (line, instruction) entry is given an object: image data by the
 * ELF object symbol (.symtab, else .dynsym) holding its link-time address,
 * else by its section; a heap line by its block's allocation site (the
 * procedure and offset of the call); a stack line by the procedure of the
 * accessing instruction; anything else is "anonymous memory".  Objects and
 * pages are ranked by accesses.  A shared line is named by its object and
 * the byte ranges each side touched (offsets in the object); true sharing
 * (common bytes written) when some window had it, else false sharing, with
 * the padding that would separate the two sides.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/data.h"
#include "dcpi/image.h"
#include "dcpi/report.h"
#include "mem_weight.h"

#define NAME_MAX_LEN 256
#define INSNS_SHOWN 4		/* per object, unless --insns */

struct msym {
	uint64_t addr, size;
	char *name;
};

struct mimg {			/* an image opened to name things */
	char *path;
	struct image *img;	/* NULL: gone */
	struct msym *syms;	/* object symbols by address */
	size_t nsyms;
};

struct minsn {
	char site[NAME_MAX_LEN];
	uint64_t accesses, bytes;
};

struct mobj {
	char name[NAME_MAX_LEN];
	char image[NAME_MAX_LEN];	/* where it lives (or the allocating image) */
	const char *kind;
	uint64_t start;			/* link vaddr of the symbol, or 0 */
	uint64_t accesses, loads, stores, size;
	uint64_t bytes;			/* accesses x their operand's size */
	uint64_t kin, kout;		/* bytes the kernel moved in and out, counted */
	double wacc, wbytes;		/* weighted: executions, their bytes (+ kernel's) */
	struct minsn *ins;
	size_t nins;
};

struct mpage {
	size_t obj;
	uint64_t page;			/* vaddr, block offset or rsp offset, 4 KB aligned */
	uint64_t accesses;
};

struct mem {
	struct mimg *im;
	size_t nim;
	struct mobj *obj;
	size_t nobj;
	struct mpage *pg;
	size_t npg;
	uint64_t accesses, loads, stores;
	uint64_t kbytes;		/* kernel transfers, all objects */
	int weighted, with_sys;
	double measured;		/* the weighted accesses' share whose executions
					 * were counted (mem_weight_measured) */
	double wbytes;			/* weighted bytes, all objects */
	unsigned insns;			/* instructions listed per object */
	char epoch[256];
};

static int sym_cmp(const void *x, const void *y)
{
	const struct msym *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The object symbols of path (.symtab, else .dynsym), sorted. */
static void load_syms(struct mimg *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL, *use = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t cap = 0;

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return;
	}
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB ||
		    (sh.sh_type == SHT_DYNSYM && !use)))
			use = scn;
	if (use && gelf_getshdr(use, &sh) && (d = elf_getdata(use, NULL)) && sh.sh_entsize) {
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			struct msym *v;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT ||
			    !s.st_value || !(n = elf_strptr(e, sh.sh_link, s.st_name)) || !*n)
				continue;
			if (m->nsyms == cap) {
				cap = cap ? 2 * cap : 64;
				if (!(v = realloc(m->syms, cap * sizeof(*v))))
					break;
				m->syms = v;
			}
			if (!(m->syms[m->nsyms].name = strdup(n)))
				break;
			m->syms[m->nsyms].addr = s.st_value;
			m->syms[m->nsyms++].size = s.st_size ? s.st_size : 1;
		}
	}
	elf_end(e);
	close(fd);
	if (m->nsyms)
		qsort(m->syms, m->nsyms, sizeof(*m->syms), sym_cmp);
}

static struct mimg *image_named(struct mem *m, const char *path)
{
	struct mimg *v;
	struct dcpi_err e;

	for (size_t i = 0; i < m->nim; i++)
		if (!strcmp(m->im[i].path, path))
			return &m->im[i];
	if (!(v = realloc(m->im, (m->nim + 1) * sizeof(*v))))
		return NULL;
	m->im = v;
	v = &m->im[m->nim];
	memset(v, 0, sizeof(*v));
	if (!(v->path = strdup(path)))
		return NULL;
	m->nim++;
	if (path[0] == '/' && !img_open(path, IMG_NO_DWARF, &v->img, &e))
		load_syms(v);
	return v;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* "proc+0xOFF" of file offset off in path. */
static void site_name(struct mem *m, const char *path, uint64_t off, char *out, size_t len)
{
	struct mimg *im = image_named(m, path);
	const struct img_proc *pr;
	uint64_t va;

	if (!im || !im->img || img_offset_to_vaddr(im->img, off, &va) ||
	    !(pr = img_proc_at(im->img, va))) {
		snprintf(out, len, "[%s]+0x%" PRIx64, base_name(path), off);
		return;
	}
	snprintf(out, len, "%s+0x%" PRIx64, pr->name, va - pr->addr);
}

/* The object symbol holding vaddr, else NULL. */
static const struct msym *sym_at(const struct mimg *im, uint64_t va)
{
	size_t lo = 0, hi = im->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (im->syms[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && va - im->syms[lo - 1].addr < im->syms[lo - 1].size)
		return &im->syms[lo - 1];
	return NULL;
}

static void section_name(const struct mimg *im, uint64_t va, char *out, size_t len)
{
	for (size_t i = 0; im->img && i < img_nsections(im->img); i++) {
		const struct img_section *s = img_section(im->img, i);

		if (s->addr && va >= s->addr && va - s->addr < s->size) {
			snprintf(out, len, "%s+0x%" PRIx64, s->name, va - s->addr);
			return;
		}
	}
	snprintf(out, len, "data+0x%" PRIx64, va);
}

/* Bytes one execution of the instruction at file offset off of path reads
 * or writes (its memory operand's size; 1 when unknown). */
static unsigned access_size(struct mem *m, const char *path, uint64_t off)
{
	struct mimg *im = image_named(m, path);
	const uint8_t *bytes;
	struct cfg_insn in;
	size_t avail = 0;
	uint64_t va;

	if (!im || !im->img || img_offset_to_vaddr(im->img, off, &va) ||
	    !(bytes = img_bytes(im->img, va, &avail)) || !avail ||
	    cfg_decode_one(bytes, avail < 15 ? avail : 15, va, &in) || !in.nmem ||
	    !in.mem.size)
		return 1;
	return in.mem.size;
}

/* Name, kind, image and start of the object of key k (of profile p,
 * accessed by the instruction at insn). */
static void object_of(struct mem *m, const struct data_profile *p, const struct data_key *k,
		      uint64_t insn, struct mobj *o)
{
	const struct prof_image_id *id = data_profile_image(p, k->tag);
	const char *path = id ? id->path : p->image.path;
	char site[NAME_MAX_LEN];

	memset(o, 0, sizeof(*o));
	snprintf(o->image, sizeof(o->image), "%.200s", base_name(path));
	switch (k->space) {
	case DATA_IMAGE: {
		struct mimg *im = image_named(m, path);
		const struct msym *s = im ? sym_at(im, k->line) : NULL;

		o->kind = "global";
		if (s) {
			snprintf(o->name, sizeof(o->name), "%s", s->name);
			o->start = s->addr;
			o->size = s->size;
		} else if (im) {
			section_name(im, k->line, o->name, sizeof(o->name));
			o->kind = "section";
		}
		break;
	}
	case DATA_HEAP:
		site_name(m, path, k->base, site, sizeof(site));
		snprintf(o->name, sizeof(o->name), "heap block allocated at %.200s", site);
		o->kind = "heap";
		break;
	case DATA_STACK:
		site_name(m, p->image.path, insn, site, sizeof(site));
		*strchr(site, '+') = '\0';
		snprintf(o->name, sizeof(o->name), "stack of %.200s", site);
		snprintf(o->image, sizeof(o->image), "%.200s", base_name(p->image.path));
		o->kind = "stack";
		break;
	default:
		snprintf(o->name, sizeof(o->name), "anonymous memory");
		o->image[0] = '\0';
		o->kind = "anon";
	}
}

static struct mobj *object_find(struct mem *m, const struct mobj *o, size_t *idx)
{
	struct mobj *v;

	for (size_t i = 0; i < m->nobj; i++)
		if (!strcmp(m->obj[i].name, o->name) && !strcmp(m->obj[i].image, o->image)) {
			*idx = i;
			return &m->obj[i];
		}
	if (!(v = realloc(m->obj, (m->nobj + 1) * sizeof(*v))))
		return NULL;
	m->obj = v;
	m->obj[m->nobj] = *o;
	*idx = m->nobj;
	return &m->obj[m->nobj++];
}

static int add_insn(struct mobj *o, const char *site, uint64_t n, uint64_t bytes)
{
	struct minsn *v;

	for (size_t i = 0; i < o->nins; i++)
		if (!strcmp(o->ins[i].site, site)) {
			o->ins[i].accesses += n;
			o->ins[i].bytes += bytes;
			return 0;
		}
	if (!(v = realloc(o->ins, (o->nins + 1) * sizeof(*v))))
		return -ENOMEM;
	o->ins = v;
	snprintf(o->ins[o->nins].site, sizeof(o->ins[0].site), "%s", site);
	o->ins[o->nins].bytes = bytes;
	o->ins[o->nins++].accesses = n;
	return 0;
}

static int add_page(struct mem *m, size_t obj, uint64_t page, uint64_t n)
{
	struct mpage *v;

	for (size_t i = m->npg; i-- > 0;)
		if (m->pg[i].obj == obj && m->pg[i].page == page) {
			m->pg[i].accesses += n;
			return 0;
		}
	if (!(v = realloc(m->pg, (m->npg + 1) * sizeof(*v))))
		return -ENOMEM;
	m->pg = v;
	m->pg[m->npg++] = (struct mpage){ obj, page, n };
	return 0;
}

/* The bytes an entry's accesses moved: a read-modify-write (`add $1, (m)`)
 * reads its operand and writes it back, two transfers of its size, as
 * valgrind's DHAT counts it; a load or a store one. */
static uint64_t entry_bytes(const struct data_entry *e, unsigned size)
{
	uint64_t moves = e->loads + e->stores;

	return (moves > e->accesses ? moves : e->accesses) * size;
}

static int add_entry(struct mem *m, const struct data_profile *p, const struct data_entry *e,
		     double weight)
{
	uint64_t bytes = entry_bytes(e, access_size(m, p->image.path, e->insn));
	struct mobj o, *t;
	char site[NAME_MAX_LEN];
	size_t idx;

	object_of(m, p, &e->k, e->insn, &o);
	if (!(t = object_find(m, &o, &idx)))
		return -ENOMEM;
	t->accesses += e->accesses;
	t->bytes += bytes;
	t->wacc += weight * (double)e->accesses;
	t->wbytes += weight * (double)bytes;
	m->wbytes += weight * (double)bytes;
	t->loads += e->loads;
	t->stores += e->stores;
	if (e->size > t->size)
		t->size = e->size;
	m->accesses += e->accesses;
	m->loads += e->loads;
	m->stores += e->stores;
	site_name(m, p->image.path, e->insn, site, sizeof(site));
	if (add_insn(t, site, e->accesses, bytes))
		return -ENOMEM;
	return add_page(m, idx, e->k.line & ~4095ULL, e->accesses);
}

/* A site's kernel transfers, counted (collect/pathrt_io.c): beside the
 * samples, never mixed into their shares. */
static int add_kio(struct mem *m, const struct data_profile *p, const struct data_kio *x)
{
	struct mobj o, *t;
	size_t idx;

	object_of(m, p, &x->k, 0, &o);
	if (!(t = object_find(m, &o, &idx)))
		return -ENOMEM;
	t->kin += x->in;
	t->kout += x->out;
	m->kbytes += x->in + x->out;
	if (m->with_sys) {
		t->wbytes += (double)(x->in + x->out);
		m->wbytes += (double)(x->in + x->out);
	}
	return 0;
}

static int obj_cmp(const void *x, const void *y)
{
	const struct mobj *a = x, *b = y;

	if (a->wbytes != b->wbytes)	/* 0 unless weighted */
		return a->wbytes > b->wbytes ? -1 : 1;
	if (a->accesses != b->accesses)
		return a->accesses > b->accesses ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int ins_cmp(const void *x, const void *y)
{
	const struct minsn *a = x, *b = y;

	if (a->accesses != b->accesses)
		return a->accesses > b->accesses ? -1 : 1;
	return strcmp(a->site, b->site);
}

static int pg_cmp(const void *x, const void *y)
{
	const struct mpage *a = x, *b = y;

	if (a->accesses != b->accesses)
		return a->accesses > b->accesses ? -1 : 1;
	return a->page < b->page ? -1 : a->page > b->page;
}

/* "+0x8..+0xf, +0x20..+0x27": the runs of mask, as offsets from start. */
static void ranges(uint64_t mask, int64_t start, char *out, size_t len)
{
	size_t l = 0;

	out[0] = '\0';
	for (int b = 0; b < 64 && l < len; b++) {
		int e = b;

		if (!(mask >> b & 1))
			continue;
		while (e + 1 < 64 && (mask >> (e + 1) & 1))
			e++;
		l += (size_t)snprintf(out + l, len - l, "%s+0x%" PRIx64 "..+0x%" PRIx64,
				      l ? ", " : "", (uint64_t)(start + b), (uint64_t)(start + e));
		b = e;
	}
}

static void json_str(FILE *f, const char *s)
{
	rep_json_str(f, s);
}

static int free_mem(struct mem *m, int rc)
{
	for (size_t i = 0; i < m->nim; i++) {
		img_close(m->im[i].img);
		for (size_t j = 0; j < m->im[i].nsyms; j++)
			free(m->im[i].syms[j].name);
		free(m->im[i].syms);
		free(m->im[i].path);
	}
	for (size_t i = 0; i < m->nobj; i++)
		free(m->obj[i].ins);
	free(m->im);
	free(m->obj);
	free(m->pg);
	return rc;
}

/* One shared line: its object, the bytes of each side, the class. */
struct mshare {
	struct mobj o;
	const struct data_share *s;
	const struct data_profile *p;
	int64_t off;		/* the line's first byte as an offset in the object */
};

static void share_of(struct mem *m, const struct data_profile *p, const struct data_share *s,
		     struct mshare *out)
{
	out->p = p;
	out->s = s;
	object_of(m, p, &s->k, 0, &out->o);
	out->off = out->o.start ? (int64_t)(s->k.line - out->o.start) : 0;
	if (s->k.space == DATA_HEAP || (s->k.space == DATA_IMAGE && !out->o.start))
		out->off = (int64_t)s->k.line;
}

static const char *share_class(const struct data_share *s)
{
	return s->true_w ? "true" : "false";
}

static void share_advice(const struct mshare *x, char *out, size_t len)
{
	char a[160], b[160];

	if (x->s->true_w) {
		ranges(x->s->true_mask, x->off, a, sizeof(a));
		snprintf(out, len, "threads write the same bytes (%s %s): padding cannot help; "
			 "give each thread its own copy and combine them at the end, or update "
			 "less often", x->o.name, a);
		return;
	}
	ranges(x->s->mask_a, x->off, a, sizeof(a));
	ranges(x->s->mask_b, x->off, b, sizeof(b));
	snprintf(out, len, "pad: %s %s (one thread) and %s (another) share a "
		 "64-byte line; align each to 64 bytes (_Alignas(64)) or put padding between "
		 "them so they fall on separate lines", x->o.name, a, b);
}

/* The instructions of profile p that touched line k. */
static void share_insns(struct mem *m, const struct mshare *x, FILE *f, int json)
{
	const struct data_profile *p = x->p;
	char site[NAME_MAX_LEN];
	int n = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (data_key_cmp(&p->e[i].k, &x->s->k))
			continue;
		site_name(m, p->image.path, p->e[i].insn, site, sizeof(site));
		if (json) {
			fprintf(f, "%s{\"site\": ", n ? ", " : "");
			json_str(f, site);
			fprintf(f, ", \"loads\": %" PRIu64 ", \"stores\": %" PRIu64 "}",
				p->e[i].loads, p->e[i].stores);
		} else {
			fprintf(f, "      %s: %" PRIu64 " loads, %" PRIu64 " stores\n", site,
				p->e[i].loads, p->e[i].stores);
		}
		n++;
	}
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static void print_text(FILE *f, struct mem *m, const size_t *ord, const struct mshare *sh,
		       size_t nsh, unsigned top)
{
	const char *sys = m->with_sys ? "; bytes%+k adds the kernel's counted bytes" : "";
	char adv[768], r[160];

	if (m->weighted && m->measured > 0)
		fprintf(f, "Weighted: each sampled access stands for its instruction's executions, "
			"measured for %.0f%% of the weighted accesses (counted in their loops), "
			"estimated for the rest%s (docs/data.md, \"Weighting\").\n",
			100 * m->measured, sys);
	else if (m->weighted)
		fprintf(f, "Weighted: each sampled access stands for its instruction's estimated "
			"executions, none counted here: `dcpi record --plan auto` counts the loops "
			"that hold the accesses%s (docs/data.md, \"Weighting\").\n", sys);
	fprintf(f, "Data profile of epoch %s: %" PRIu64 " accesses sampled (%" PRIu64 " loads, %"
		PRIu64 " stores)\n\nObjects by accesses (kernel: bytes read(2) and write(2) "
		"moved, counted%s):\n  share  accesses   loads  stores      kernel  %s"
		"object [image]\n", m->epoch, m->accesses, m->loads, m->stores,
		m->with_sys ? "" : ", not in the share",
		m->weighted ? (m->with_sys ? "bytes%+k  " : "  bytes%  ") : "");
	for (size_t i = 0; i < m->nobj && i < top; i++) {
		struct mobj *o = &m->obj[ord[i]];

		fprintf(f, " %5.1f%% %9" PRIu64 " %7" PRIu64 " %7" PRIu64 " %11" PRIu64 "  ",
			ratio(o->accesses, m->accesses) * 100, o->accesses, o->loads, o->stores,
			o->kin + o->kout);
		if (m->weighted)
			fprintf(f, "%7.1f%%  ", m->wbytes > 0 ? 100 * o->wbytes / m->wbytes : 0.0);
		fprintf(f, "%s (%s) [%s]\n", o->name, o->kind, o->image);
		for (size_t j = 0; j < o->nins && j < m->insns; j++)
			fprintf(f, "        %s: %" PRIu64 "\n", o->ins[j].site, o->ins[j].accesses);
	}
	fprintf(f, "\nPages by accesses:\n  share  accesses  page  object\n");
	for (size_t i = 0; i < m->npg && i < top; i++)
		fprintf(f, " %5.1f%% %9" PRIu64 "  0x%" PRIx64 "  %s\n",
			ratio(m->pg[i].accesses, m->accesses) * 100, m->pg[i].accesses,
			m->pg[i].page, m->obj[m->pg[i].obj].name);
	fprintf(f, "\nShared cache lines (a thread wrote, another touched it, in one %.0f ms "
		"window):\n", DATA_WINDOW_NS / 1e6);
	if (!nsh)
		fprintf(f, "  none\n");
	for (size_t i = 0; i < nsh; i++) {
		const struct data_share *s = sh[i].s;

		ranges(~0ULL, sh[i].off, r, sizeof(r));
		fprintf(f, "  %s sharing: %s %s [%s]: %" PRIu64 " true and %" PRIu64 " false of %"
			PRIu64 " windows\n", share_class(s), sh[i].o.name, r, sh[i].o.image,
			s->true_w, s->false_w, s->seen);
		share_insns(m, &sh[i], f, 0);
		share_advice(&sh[i], adv, sizeof(adv));
		fprintf(f, "    -> %s\n", adv);
	}
}

static void print_json(FILE *f, struct mem *m, const size_t *ord, const struct mshare *sh,
		       size_t nsh, unsigned top)
{
	char adv[768], r[160];

	fprintf(f, "{\"epoch\": ");
	json_str(f, m->epoch);
	fprintf(f, ", \"accesses\": %" PRIu64 ", \"loads\": %" PRIu64 ", \"stores\": %" PRIu64
		", \"window_ns\": %llu, \"kernel_bytes\": %" PRIu64 ", \"weighting\": \"%s\", ",
		m->accesses, m->loads, m->stores, DATA_WINDOW_NS, m->kbytes,
		m->with_sys ? "executions+kernel" : m->weighted ? "executions" : "appearances");
	if (m->weighted)
		fprintf(f, "\"weighted_measured\": %.4f, ", m->measured);
	fprintf(f, "\"objects\": [");
	for (size_t i = 0; i < m->nobj && i < top; i++) {
		struct mobj *o = &m->obj[ord[i]];

		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		json_str(f, o->name);
		fprintf(f, ", \"kind\": \"%s\", \"image\": ", o->kind);
		json_str(f, o->image);
		fprintf(f, ", \"accesses\": %" PRIu64 ", \"loads\": %" PRIu64 ", \"stores\": %"
			PRIu64 ", \"share\": %.4f, \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"kernel_in\": %" PRIu64 ", \"kernel_out\": %" PRIu64,
			o->accesses, o->loads, o->stores, ratio(o->accesses, m->accesses), o->size,
			o->bytes, o->kin, o->kout);
		if (m->weighted)
			fprintf(f, ", \"weighted_accesses\": %.6g, \"weighted_bytes\": %.6g, "
				"\"weighted_share\": %.4f", o->wacc, o->wbytes,
				m->wbytes > 0 ? o->wbytes / m->wbytes : 0.0);
		fprintf(f, ", \"instructions\": [");
		for (size_t j = 0; j < o->nins && j < m->insns; j++) {
			fprintf(f, "%s{\"site\": ", j ? ", " : "");
			json_str(f, o->ins[j].site);
			fprintf(f, ", \"accesses\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
				o->ins[j].accesses, o->ins[j].bytes);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "],\n\"pages\": [");
	for (size_t i = 0; i < m->npg && i < top; i++) {
		fprintf(f, "%s\n  {\"object\": ", i ? "," : "");
		json_str(f, m->obj[m->pg[i].obj].name);
		fprintf(f, ", \"page\": \"0x%" PRIx64 "\", \"accesses\": %" PRIu64 "}",
			m->pg[i].page, m->pg[i].accesses);
	}
	fprintf(f, "],\n\"sharing\": [");
	for (size_t i = 0; i < nsh; i++) {
		const struct data_share *s = sh[i].s;

		fprintf(f, "%s\n  {\"object\": ", i ? "," : "");
		json_str(f, sh[i].o.name);
		fprintf(f, ", \"image\": ");
		json_str(f, sh[i].o.image);
		ranges(~0ULL, sh[i].off, r, sizeof(r));
		fprintf(f, ", \"line\": \"%s\", \"class\": \"%s\", \"windows\": %" PRIu64
			", \"true_windows\": %" PRIu64 ", \"false_windows\": %" PRIu64,
			r, share_class(s), s->seen, s->true_w, s->false_w);
		ranges(s->true_w ? s->true_mask : s->mask_a, sh[i].off, r, sizeof(r));
		fprintf(f, ", \"bytes_a\": \"%s\"", r);
		ranges(s->true_w ? s->true_mask : s->mask_b, sh[i].off, r, sizeof(r));
		fprintf(f, ", \"bytes_b\": \"%s\", \"instructions\": [", r);
		share_insns(m, &sh[i], f, 1);
		share_advice(&sh[i], adv, sizeof(adv));
		fprintf(f, "], \"suggestion\": ");
		json_str(f, adv);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
}

/* p's profiles merged into *all by image (n_all of them). */
static int merge_into(struct data_profile **all, size_t *nall, struct data_profile *p,
		      size_t n, struct dcpi_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		size_t j = 0;
		struct data_profile *v;

		while (j < *nall && !prof_image_id_equal(&(*all)[j].image, &p[i].image))
			j++;
		if (j < *nall) {
			rc = data_profile_merge(&(*all)[j], &p[i], err);
			continue;
		}
		if (!(v = realloc(*all, (*nall + 1) * sizeof(*v))))
			return dcpi_errf(err, -ENOMEM, "out of memory");
		*all = v;
		v[(*nall)++] = p[i];
		data_profile_init(&p[i]);
	}
	return rc;
}

static int read_epochs(struct prof_db *db, const char *epoch, struct data_profile **out,
		       size_t *n, struct dcpi_err *err)
{
	char **names = NULL;
	size_t nn = 0;
	int rc = 0;

	if (strcmp(epoch, "all"))
		return data_epoch_read(db, epoch, out, n, err);
	rc = prof_db_epochs(db, &names, &nn, err);
	for (size_t i = 0; i < nn && rc >= 0; i++) {
		struct data_profile *p = NULL;
		size_t np = 0;

		rc = data_epoch_read(db, names[i], &p, &np, err);
		if (rc >= 0)
			rc = merge_into(out, n, p, np, err);
		data_profiles_free(p, np);
	}
	prof_names_free(names, nn);
	return rc;
}

static const struct mem *sort_ctx;

static int ord_cmp(const void *x, const void *y)
{
	return obj_cmp(&sort_ctx->obj[*(const size_t *)x], &sort_ctx->obj[*(const size_t *)y]);
}

static int report(FILE *f, struct mem *m, struct data_profile *p, size_t n,
		  const struct rep_mem_opts *o, const char *dbdir, struct dcpi_err *err)
{
	struct mshare *sh = NULL;
	struct mem_wt *w = NULL;
	size_t *ord = NULL, nsh = 0, k = 0, nw = 0;
	int rc = 0, rel = 0;

	m->with_sys = o->with_syscalls;
	m->weighted = o->weighted || o->with_syscalls;
	if (m->weighted && (rc = mem_weights(dbdir, m->epoch, p, n, &w, &nw, &rel, err)) < 0)
		return rc;
	m->measured = m->weighted ? mem_weight_measured(w, nw) : 0;
	if (rel && m->with_sys) {
		free(w);
		return dcpi_errf(err, -EINVAL, "epoch %s: executions are relative (recorded with "
				 "--no-calibrate): the kernel's bytes cannot be added to them; "
				 "--weighted alone compares objects", m->epoch);
	}
	for (size_t i = 0; i < n && !rc; i++)
		for (size_t j = 0; j < p[i].n && !rc; j++)
			rc = add_entry(m, &p[i], &p[i].e[j],
				       m->weighted ? mem_weight_of(w, nw, i, p[i].e[j].insn) : 0);
	free(w);
	for (size_t i = 0; i < n && !rc; i++)
		for (size_t j = 0; j < p[i].nk && !rc; j++)
			rc = add_kio(m, &p[i], &p[i].kio[j]);
	for (size_t i = 0; i < n; i++)
		nsh += p[i].ns;
	if (rc || (m->nobj && !(ord = malloc(m->nobj * sizeof(*ord)))) ||
	    (nsh && !(sh = calloc(nsh, sizeof(*sh)))))
		return dcpi_errf(err, -ENOMEM, "out of memory");
	if (!m->accesses && !m->kbytes) {
		free(ord);
		free(sh);
		return dcpi_errf(err, -ENOENT, "no data samples in epoch %s: record with dcpi "
				 "record (value samples on)", m->epoch);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p[i].ns; j++)
			share_of(m, &p[i], &p[i].s[j], &sh[k++]);
	for (size_t i = 0; i < m->nobj; i++) {
		ord[i] = i;
		if (m->obj[i].nins)
			qsort(m->obj[i].ins, m->obj[i].nins, sizeof(*m->obj[i].ins), ins_cmp);
	}
	sort_ctx = m;
	m->insns = o->insns ? o->insns : INSNS_SHOWN;
	qsort(ord, m->nobj, sizeof(*ord), ord_cmp);
	if (m->npg)
		qsort(m->pg, m->npg, sizeof(*m->pg), pg_cmp);
	if (o->json)
		print_json(f, m, ord, sh, nsh, o->top ? o->top : 20);
	else
		print_text(f, m, ord, sh, nsh, o->top ? o->top : 20);
	free(ord);
	free(sh);
	return 0;
}

int rep_mem(FILE *f, const char *dbdir, const struct rep_mem_opts *o, struct dcpi_err *err)
{
	struct mem m = { 0 };
	struct prof_db *db = NULL;
	struct prof_profile *pp = NULL;
	struct data_profile *p = NULL;
	size_t npp = 0, n = 0;
	int rc = prof_db_open(dbdir, 0, &db, err);

	if (rc >= 0 && o->epoch && !strcmp(o->epoch, "all"))
		snprintf(m.epoch, sizeof(m.epoch), "all");
	else if (rc >= 0)
		rc = rep_load_profiles(db, o->epoch, &pp, &npp, m.epoch, sizeof(m.epoch), err);
	prof_profiles_free(pp, npp);
	if (rc >= 0)
		rc = read_epochs(db, m.epoch, &p, &n, err);
	if (rc >= 0)
		rc = report(f, &m, p, n, o, dbdir, err);
	data_profiles_free(p, n);
	prof_db_close(db);
	return free_mem(&m, rc < 0 ? rc : 0);
}

/* --- the object of each instruction, for dcpicalc ------------------------ */

struct iobj {
	uint64_t insn, accesses;
	const char *kind;
	char name[NAME_MAX_LEN];
};

static int iobj_cmp(const void *x, const void *y)
{
	const struct iobj *a = x, *b = y;

	if (a->insn != b->insn)
		return a->insn < b->insn ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* v[0..n) sorted by (insn, name): per insn, the name with most accesses. */
static int insn_best(const struct iobj *v, size_t n, struct rep_mem_insn **out, size_t *nout,
		     struct dcpi_err *err)
{
	struct rep_mem_insn *r = calloc(n ? n : 1, sizeof(*r)), *cur = NULL;

	if (!r)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t run = 0;

		if (!cur || cur->insn != v[i].insn) {
			cur = &r[(*nout)++];
			cur->insn = v[i].insn;
		}
		for (; j < n && v[j].insn == v[i].insn && !strcmp(v[j].name, v[i].name); j++)
			run += v[j].accesses;
		cur->accesses += run;
		if (run > cur->in_object) {
			cur->in_object = run;
			cur->kind = v[i].kind;
			snprintf(cur->object, sizeof(cur->object), "%s", v[i].name);
		}
		i = j;
	}
	*out = r;
	return 0;
}

int rep_mem_insn_objects(struct prof_db *db, const char *epoch, const struct prof_image_id *id,
			 struct rep_mem_insn **out, size_t *n, struct dcpi_err *err)
{
	struct mem m = { 0 };
	struct data_profile *p = NULL, *mine = NULL;
	struct iobj *v = NULL;
	size_t np = 0;
	int rc = read_epochs(db, epoch, &p, &np, err);

	*out = NULL;
	*n = 0;
	for (size_t i = 0; rc >= 0 && i < np; i++)
		if (prof_image_id_equal(&p[i].image, id))
			mine = &p[i];
	if (rc < 0 || !mine)
		goto out;
	if (!(v = calloc(mine->n ? mine->n : 1, sizeof(*v)))) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t j = 0; j < mine->n; j++) {
		struct mobj o;

		object_of(&m, mine, &mine->e[j].k, mine->e[j].insn, &o);
		v[j] = (struct iobj){ mine->e[j].insn, mine->e[j].accesses, o.kind, "" };
		snprintf(v[j].name, sizeof(v[j].name), "%s", o.name);
	}
	qsort(v, mine->n, sizeof(*v), iobj_cmp);
	rc = insn_best(v, mine->n, out, n, err);
out:
	free(v);
	data_profiles_free(p, np);
	return free_mem(&m, rc < 0 ? rc : 0);
}

const struct rep_mem_insn *rep_mem_insn_find(const struct rep_mem_insn *v, size_t n,
					     uint64_t insn)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].insn < insn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].insn == insn ? &v[lo] : NULL;
}
