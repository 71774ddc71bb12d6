/*
 * image/debugsyms.c - the function symbols a stripped image keeps
 * elsewhere, so procedures are named as perf and gdb name them:
 *
 *   - its separate debug file (img_debug_file: /usr/lib/debug/.build-id/
 *     NN/REST.debug, or .gnu_debuglink with its CRC; Debian's -dbg and
 *     -dbgsym packages), whose .symtab lists every function, locals too;
 *   - .gnu_debugdata (MiniDebugInfo, Fedora's and others' way): an
 *     xz-compressed ELF inside the image holding a .symtab of the functions
 *     .dynsym lacks.
 *
 * Either is an ELF file read here from memory: section headers, then each
 * SHT_SYMTAB's function symbols with their names.  A symbol is taken only
 * where the image itself has executable code at its address (the debug
 * file's own code sections are NOBITS), and with the same ranks as the
 * image's own symbols (symbols.c); eh_frame still covers what no symbol
 * names.  A debug file that does not parse is ignored: naming is a bonus,
 * never a reason to refuse the image.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/image.h"
#include "dcpi/safefile.h"
#include "internal.h"

#define MINIDEBUG_MAX (64u << 20)	/* decompressed MiniDebugInfo, at most */

/* Is [addr, addr + 1) executable code of img?  Returns its section's end. */
static uint64_t code_end(const struct image *img, uint64_t addr)
{
	for (size_t i = 0; i < img->nsecs; i++) {
		const Elf64_Shdr *sh = &img->shdrs[i];

		if ((sh->sh_flags & SHF_EXECINSTR) && sh->sh_type != SHT_NOBITS &&
		    addr >= sh->sh_addr && addr - sh->sh_addr < sh->sh_size)
			return sh->sh_addr + sh->sh_size;
	}
	return 0;
}

/* The function symbols of the ELF file in buf[0..len); 0 when it is not
 * one we can read (nothing added), -ENOMEM. */
static int add_from_elf(struct image *img, const uint8_t *buf, size_t len, size_t *added)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Shdr *sh;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
	    eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr))
		return 0;
	sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *st = &sh[i], *str;

		if (st->sh_type != SHT_SYMTAB || st->sh_entsize != sizeof(Elf64_Sym) ||
		    st->sh_link >= eh->e_shnum || st->sh_offset > len ||
		    st->sh_size > len - st->sh_offset)
			continue;
		str = &sh[st->sh_link];
		if (str->sh_type != SHT_STRTAB || str->sh_offset > len ||
		    str->sh_size > len - str->sh_offset || !str->sh_size)
			continue;
		for (size_t k = 1; k < st->sh_size / sizeof(Elf64_Sym); k++) {
			Elf64_Sym sym;
			const char *name;
			uint64_t end;
			size_t nl;

			memcpy(&sym, buf + st->sh_offset + k * sizeof(sym), sizeof(sym));
			if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC &&
			    ELF64_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
				continue;
			if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str->sh_size)
				continue;
			end = code_end(img, sym.st_value);
			if (!end)
				continue;
			name = (const char *)buf + str->sh_offset + sym.st_name;
			nl = strnlen(name, str->sh_size - sym.st_name);
			if (!nl || nl == str->sh_size - sym.st_name)
				continue;	/* empty, or not terminated in the table */
			if (img_cand_add(img, sym.st_value, sym.st_size, end, name, nl,
					 IMG_SRC_SYMTAB, img_sym_rank(sym.st_info)))
				return -ENOMEM;
			(*added)++;
		}
	}
	return 0;
}

static int from_debug_file(struct image *img, size_t *added)
{
	struct stat st;
	char *path;
	void *m;
	int fd, rc;

	if (img_debug_file(img, &path))
		return 0;
	fd = dcpi_open_read(AT_FDCWD, path, 0, &st, path, NULL);
	free(path);
	if (fd < 0)
		return 0;
	if (st.st_size <= 0) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	rc = add_from_elf(img, m, (size_t)st.st_size, added);
	munmap(m, (size_t)st.st_size);
	return rc;
}

static int from_minidebuginfo(struct image *img, size_t *added)
{
	uint64_t memlimit = UINT64_MAX;
	size_t len, in_pos = 0, out_pos = 0, cap = 1u << 20;
	const uint8_t *d;
	uint8_t *out = NULL;
	long idx = img_sec_index(img, ".gnu_debugdata");
	int rc = 0;

	d = idx < 0 ? NULL : img_sec_data(img, (size_t)idx, &len);
	if (!d || !len)
		return 0;
	for (;;) {
		uint8_t *o = realloc(out, cap);
		lzma_ret lr;

		if (!o) {
			free(out);
			return -ENOMEM;
		}
		out = o;
		in_pos = 0;
		out_pos = 0;
		lr = lzma_stream_buffer_decode(&memlimit, 0, NULL, d, &in_pos, len, out, &out_pos,
					       cap);
		if (lr == LZMA_OK)
			break;
		if (lr != LZMA_BUF_ERROR || cap >= MINIDEBUG_MAX) {
			free(out);
			return 0;	/* not xz, or too large: no names from it */
		}
		cap *= 2;
	}
	rc = add_from_elf(img, out, out_pos, added);
	free(out);
	return rc;
}

int img_syms_separate(struct image *img, struct dcpi_err *err)
{
	size_t added = 0;
	int rc = from_debug_file(img, &added);

	if (!rc && !added)
		rc = from_minidebuginfo(img, &added);
	if (rc)
		return dcpi_errf(err, rc, "%s: out of memory reading its symbols", img->path);
	return 0;
}
