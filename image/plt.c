/*
 * image/plt.c - name PLT stubs "name@plt", as objdump does.
 *
 * Calls into shared libraries go through small stubs that jump through a GOT
 * slot; samples in them belong to "puts@plt", not to whatever symbol precedes
 * the PLT.  The stubs are not assumed to be in relocation order: each one is
 * decoded (its `jmp *disp(%rip)`, optionally after endbr64 and/or a bnd
 * prefix) to find the GOT slot it jumps through, and the slot is named by the
 * R_X86_64_JUMP_SLOT (lazy .plt, IBT .plt.sec) or R_X86_64_GLOB_DAT (.plt.got)
 * relocation that fills it, or "*ABS*+0xADDEND" for an R_X86_64_IRELATIVE one
 * (an ifunc's stub, named by its resolver as objdump names it).  perf names
 * stubs in .rela.plt order instead, which misnames libc's (its IRELATIVE
 * entries come last, their stubs do not).  This covers the classic lazy layout, -z now, and
 * the -z ibtplt / CET layout where the lazy .plt only pushes and the real
 * stubs sit in .plt.sec (binutils 2.40).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"
#include "internal.h"

struct img_got_name {
	uint64_t got;
	const char *name;	/* in .dynstr */
};

struct img_got_map {
	struct img_got_name *v;
	size_t n, cap;
};

static int img_got_cmp(const void *a, const void *b)
{
	const struct img_got_name *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The symbol name of entry symi in symbol-table section symidx, or NULL. */
static const char *img_sym_name(const struct image *img, size_t symidx, uint64_t symi)
{
	const uint8_t *d;
	size_t len;
	Elf64_Sym sym;

	d = img_sec_data(img, symidx, &len);
	if (!d || img->shdrs[symidx].sh_entsize != sizeof(sym) ||
	    symi >= len / sizeof(sym))
		return NULL;
	memcpy(&sym, d + symi * sizeof(sym), sizeof(sym));
	return img_sec_str(img, img->shdrs[symidx].sh_link, sym.st_name);
}

static int img_got_collect(struct image *img, size_t idx, struct img_got_map *m)
{
	const Elf64_Shdr *sh = &img->shdrs[idx];
	const uint8_t *d;
	size_t len, n, i;

	d = img_sec_data(img, idx, &len);
	if (!d || sh->sh_entsize != sizeof(Elf64_Rela) || sh->sh_link >= img->nsecs)
		return 0;
	n = len / sizeof(Elf64_Rela);
	for (i = 0; i < n; i++) {
		Elf64_Rela r;
		unsigned type;
		const char *name;

		memcpy(&r, d + i * sizeof(r), sizeof(r));
		type = ELF64_R_TYPE(r.r_info);
		if (type == R_X86_64_IRELATIVE) {
			/* an ifunc's stub: named by its resolver, as objdump does */
			char buf[48];
			int nb = snprintf(buf, sizeof(buf), "*ABS*+0x%llx",
					  (unsigned long long)r.r_addend);

			name = img_arena_strdup(&img->arena, buf, (size_t)nb);
			if (!name)
				return -ENOMEM;
		} else if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) {
			name = img_sym_name(img, sh->sh_link, ELF64_R_SYM(r.r_info));
		} else {
			continue;
		}
		if (!name || !*name)
			continue;
		if (dcpi_grow((void **)&m->v, &m->cap, m->n + 1, sizeof(*m->v)))
			return -ENOMEM;
		m->v[m->n].got = r.r_offset;
		m->v[m->n].name = name;
		m->n++;
	}
	return 0;
}

static const char *img_got_find(const struct img_got_map *m, uint64_t got)
{
	struct img_got_name key = { .got = got };
	const struct img_got_name *hit;

	hit = bsearch(&key, m->v, m->n, sizeof(key), img_got_cmp);
	return hit ? hit->name : NULL;
}

/* The GOT slot a stub of len bytes at p (address addr) jumps through; 0 if none. */
static uint64_t img_stub_got(const uint8_t *p, size_t len, uint64_t addr)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned at[] = { 0, 1, 4, 5 };
	size_t i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		unsigned pos = at[i];
		int32_t disp;

		if (pos + 6 > len || p[pos] != 0xff || p[pos + 1] != 0x25)
			continue;
		if (pos >= 4 && memcmp(p, endbr64, 4) != 0)
			continue;
		if ((pos & 1) && p[pos - 1] != 0xf2)	/* bnd jmp */
			continue;
		memcpy(&disp, p + pos + 2, 4);
		return addr + pos + 6 + (int64_t)disp;
	}
	return 0;
}

static int img_plt_section(struct image *img, size_t idx, const struct img_got_map *m)
{
	const Elf64_Shdr *sh = &img->shdrs[idx];
	const uint8_t *d;
	size_t len, ent, off;
	char buf[512];

	d = img_sec_data(img, idx, &len);
	if (!d || !(sh->sh_flags & SHF_EXECINSTR))
		return 0;
	ent = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;
	for (off = 0; off + ent <= len; off += ent) {
		uint64_t got = img_stub_got(d + off, ent, sh->sh_addr + off);
		const char *name = got ? img_got_find(m, got) : NULL;
		size_t nlen;

		if (!name)
			continue;
		nlen = strlen(name);
		if (nlen > sizeof(buf) - 5)
			nlen = sizeof(buf) - 5;
		memcpy(buf, name, nlen);
		memcpy(buf + nlen, "@plt", 5);
		if (img_cand_add(img, sh->sh_addr + off, ent, sh->sh_addr + off + ent,
				 buf, nlen + 4, IMG_SRC_PLT, IMG_RANK_PLT))
			return -ENOMEM;
	}
	return 0;
}

int img_plt_load(struct image *img, struct dcpi_err *err)
{
	struct img_got_map m = { 0 };
	size_t i;
	int rc = 0;

	for (i = 0; i < img->nsecs && !rc; i++)
		if (img->shdrs[i].sh_type == SHT_RELA)
			rc = img_got_collect(img, i, &m);
	if (rc)
		goto out;
	if (m.n == 0)
		goto out;
	dcpi_qsort(m.v, m.n, sizeof(*m.v), img_got_cmp);
	for (i = 0; i < img->nsecs && !rc; i++) {
		const char *name = img->secs[i].name;

		if (strcmp(name, ".plt") == 0 || strcmp(name, ".plt.sec") == 0 ||
		    strcmp(name, ".plt.got") == 0)
			rc = img_plt_section(img, i, &m);
	}
out:
	free(m.v);
	if (rc)
		return dcpi_errf(err, rc, "%s: out of memory", img->path);
	return 0;
}
