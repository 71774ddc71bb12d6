/*
 * image/symbols.c - procedures from function symbols, and the final sorted,
 * deduplicated, non-overlapping procedure array that img_proc_at searches.
 *
 * .symtab is preferred; a stripped image keeps only .dynsym, whose exported
 * functions are still worth naming (ehframe.c covers the rest), and its
 * separate debug file's .symtab names the others (debugsyms.c).  Several
 * symbols often name one address (memcpy and __memcpy_avx, a global and its
 * local alias): the one perf would name wins (a sized one, not weak, global,
 * fewer leading underscores, the longer name), then the first name in
 * alphabetical order so the choice is deterministic.  Hand-written
 * code has zero-size symbols; those extend to the next procedure or to the
 * end of their section.  A procedure that runs into the next one is cut
 * there, so every address belongs to at most one procedure.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/image.h"
#include "internal.h"

int img_cand_add(struct image *img, uint64_t addr, uint64_t size, uint64_t limit,
		 const char *raw, size_t rawlen, enum img_proc_source src, unsigned rank)
{
	struct img_cand *c;

	if (dcpi_grow((void **)&img->cands, &img->capcands, img->ncands + 1, sizeof(*img->cands)))
		return -ENOMEM;
	c = &img->cands[img->ncands];
	c->raw = NULL;
	if (raw) {
		c->raw = img_arena_strdup(&img->arena, raw, rawlen);
		if (!c->raw)
			return -ENOMEM;
	}
	c->addr = addr;
	c->size = size;
	c->limit = limit;
	c->source = src;
	c->rank = rank;
	c->seq = (uint32_t)img->ncands;
	img->ncands++;
	return 0;
}

unsigned img_sym_rank(unsigned char info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL:
		return IMG_RANK_GLOBAL;
	case STB_WEAK:
		return IMG_RANK_WEAK;
	default:
		return IMG_RANK_LOCAL;
	}
}

/* Add the function symbols of symbol-table section idx. */
static int img_syms_table(struct image *img, size_t idx, enum img_proc_source src,
			  struct dcpi_err *err)
{
	const Elf64_Shdr *sh = &img->shdrs[idx];
	const uint8_t *d;
	size_t len, n, i;

	d = img_sec_data(img, idx, &len);
	if (!d || sh->sh_entsize != sizeof(Elf64_Sym))
		return 0;
	n = len / sizeof(Elf64_Sym);
	for (i = 1; i < n; i++) {
		Elf64_Sym sym;
		const Elf64_Shdr *tsh;
		const char *name;
		unsigned type;

		memcpy(&sym, d + i * sizeof(sym), sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= img->nsecs)
			continue;
		tsh = &img->shdrs[sym.st_shndx];
		if (!(tsh->sh_flags & SHF_EXECINSTR) || sym.st_value < tsh->sh_addr ||
		    sym.st_value - tsh->sh_addr >= tsh->sh_size)
			continue;
		name = img_sec_str(img, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (img_cand_add(img, sym.st_value, sym.st_size, tsh->sh_addr + tsh->sh_size,
				 name, strlen(name), src, img_sym_rank(sym.st_info)))
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
	}
	return 0;
}

int img_syms_load(struct image *img, struct dcpi_err *err)
{
	size_t i;
	unsigned want = img->stripped ? SHT_DYNSYM : SHT_SYMTAB;

	for (i = 0; i < img->nsecs; i++) {
		int rc;

		if (img->shdrs[i].sh_type != want)
			continue;
		rc = img_syms_table(img, i, want == SHT_SYMTAB ? IMG_SRC_SYMTAB : IMG_SRC_DYNSYM,
				    err);
		if (rc)
			return rc;
	}
	return 0;
}

static int img_cand_cmp(const void *a, const void *b)
{
	const struct img_cand *x = a, *y = b;

	int sx = x->rank <= IMG_RANK_LOCAL, sy = y->rank <= IMG_RANK_LOCAL;
	size_t ux, uy, lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (sx != sy || !sx) {
		/* symbols before PLT stubs before FDEs */
		if (x->rank != y->rank)
			return x->rank < y->rank ? -1 : 1;
	} else {
		/* aliases chosen as perf chooses them (choose_best_symbol), so a
		 * profile names its procedures as perf report does: a sized one,
		 * not weak, global, fewer leading underscores, the longer name */
		if ((x->size == 0) != (y->size == 0))
			return x->size == 0 ? 1 : -1;
		if ((x->rank == IMG_RANK_WEAK) != (y->rank == IMG_RANK_WEAK))
			return x->rank == IMG_RANK_WEAK ? 1 : -1;
		if ((x->rank == IMG_RANK_GLOBAL) != (y->rank == IMG_RANK_GLOBAL))
			return x->rank == IMG_RANK_GLOBAL ? -1 : 1;
		if (x->raw && y->raw) {
			ux = strspn(x->raw, "_");
			uy = strspn(y->raw, "_");
			if (ux != uy)
				return ux < uy ? -1 : 1;
			lx = strlen(x->raw);
			ly = strlen(y->raw);
			if (lx != ly)
				return lx > ly ? -1 : 1;
		}
		/* then perf keeps the one it read first (symbols__fixup_duplicate):
		 * pthread_create@GLIBC_2.2.5 before pthread_create@@GLIBC_2.34 */
		if (x->seq != y->seq)
			return x->seq < y->seq ? -1 : 1;
	}
	/* a sized alias says more than a zero-size one */
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	if (x->raw && y->raw)
		return strcmp(x->raw, y->raw);
	return (x->raw == NULL) - (y->raw == NULL);
}

/* Name for a range without a symbol: "<basename>+0x<vaddr>". */
static const char *img_unnamed(struct image *img, uint64_t addr)
{
	char buf[64];
	size_t blen = strlen(img->base);
	char *s;
	int n;

	n = snprintf(buf, sizeof(buf), "+0x%llx", (unsigned long long)addr);
	s = malloc(blen + n + 1);
	if (!s)
		return NULL;
	memcpy(s, img->base, blen);
	memcpy(s + blen, buf, n + 1);
	{
		const char *r = img_arena_strdup(&img->arena, s, blen + n);

		free(s);
		return r;
	}
}

int img_procs_finish(struct image *img, struct dcpi_err *err)
{
	struct img_cand *c = img->cands;
	size_t n = img->ncands, i, j, k;
	struct img_proc *out;

	/* keep what an earlier pass produced: it is already clean */
	for (i = 0; i < img->nprocs; i++) {
		const struct img_proc *p = &img->procs[i];
		unsigned rank = p->source == IMG_SRC_EH_FRAME ? IMG_RANK_FDE : IMG_RANK_GLOBAL;

		if (img_cand_add(img, p->addr, p->size, p->addr + p->size, NULL, 0,
				 p->source, rank))
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
		img->cands[img->ncands - 1].raw = p->raw_name;
	}
	c = img->cands;
	n = img->ncands;
	free(img->procs);
	img->procs = NULL;
	img->nprocs = 0;
	dcpi_qsort(c, n, sizeof(*c), img_cand_cmp);
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
	for (i = 0, k = 0; i < n; i = j) {
		uint64_t size = c[i].size, next = c[i].limit;

		/* aliases at this address: c[i] is the best; borrow a size if it has none */
		for (j = i + 1; j < n && c[j].addr == c[i].addr; j++)
			if (size == 0)
				size = c[j].size;
		if (j < n && c[j].addr < next)
			next = c[j].addr;
		/* nothing extends past its section (corrupt sizes included) */
		if (c[i].limit > c[i].addr && size > c[i].limit - c[i].addr)
			size = c[i].limit - c[i].addr;
		if (size == 0 && next > c[i].addr)
			size = next - c[i].addr;
		if (j < n && size > c[j].addr - c[i].addr)
			size = c[j].addr - c[i].addr;
		if (size == 0 || c[i].addr + size < c[i].addr)
			continue;
		out[k].addr = c[i].addr;
		out[k].size = size;
		out[k].raw_name = c[i].raw ? c[i].raw : img_unnamed(img, c[i].addr);
		if (!out[k].raw_name) {
			free(out);
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
		}
		out[k].name = out[k].raw_name;
		out[k].source = c[i].source;
		k++;
	}
	img->procs = out;
	img->nprocs = k;
	img->ncands = 0;
	return 0;
}

int img_procs_name(struct image *img, struct dcpi_err *err)
{
	size_t i;

	for (i = 0; i < img->nprocs; i++) {
		struct img_proc *p = &img->procs[i];
		char *d;

		if (p->raw_name[0] != '_' || p->raw_name[1] != 'Z')
			continue;
		d = img_demangle(p->raw_name);
		if (!d)
			continue;
		p->name = img_arena_strdup(&img->arena, d, strlen(d));
		free(d);
		if (!p->name)
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
	}
	return 0;
}

size_t img_nprocs(const struct image *img)
{
	return img->nprocs;
}

const struct img_proc *img_proc(const struct image *img, size_t i)
{
	return i < img->nprocs ? &img->procs[i] : NULL;
}

const struct img_proc *img_proc_at(const struct image *img, uint64_t vaddr)
{
	/* the last procedure starting at or before vaddr */
	size_t lo = dcpi_upper_bound(img->procs, img->nprocs, sizeof(*img->procs),
				     offsetof(struct img_proc, addr), vaddr);
	const struct img_proc *p;

	if (lo == 0)
		return NULL;
	p = &img->procs[lo - 1];
	return vaddr - p->addr < p->size ? p : NULL;
}

const struct img_proc *img_proc_lookup(const struct image *img, const char *spec)
{
	const struct img_proc *p;

	return img_proc_find(img, spec, &p, NULL) == 0 ? p : NULL;
}

const struct img_proc *img_proc_by_name(const struct image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nprocs; i++)
		if (strcmp(img->procs[i].name, name) == 0 ||
		    strcmp(img->procs[i].raw_name, name) == 0)
			return &img->procs[i];
	return NULL;
}
