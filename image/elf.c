/*
 * image/elf.c - open an ELF64 x86-64 image: sections, PT_LOAD segments,
 * build-id, file offset <-> virtual address, and the way to its DWARF.
 *
 * Samples are keyed by file offset (docs/architecture.md, "Data flow"), so the offset and
 * address translations go through the PT_LOAD segments exactly as the kernel
 * maps them.  The headers are parsed by hand over the file bytes rather than
 * through libelf: every offset and size is checked against the file size here,
 * once, and the caller's buffer of img_open_mem is never written (libelf may
 * convert data in place).  Fields are copied out with memcpy, so a corrupt
 * file with unaligned tables is read without undefined behaviour.
 *
 * Debug information is found the way gdb finds it: the image's own
 * .debug_info, else /usr/lib/debug/.build-id/xx/rest.debug, else the
 * .gnu_debuglink name (checked by its CRC-32) beside the image, in .debug/
 * beside it, or under /usr/lib/debug/<dir>/.  It is loaded on first use.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/safefile.h"
#include "dcpi/image.h"
#include "dwarf.h"
#include "internal.h"

#define IMG_DEBUG_ROOT "/usr/lib/debug"

/* Is [off, off+len) inside a buffer of size bytes?  Overflow-safe. */
static int img_in_file(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

char *img_arena_strdup(struct img_arena *a, const char *s, size_t len)
{
	struct img_arena_chunk *c = a->head;
	char *p;

	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	p = c->buf + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

void img_arena_free(struct img_arena *a)
{
	struct img_arena_chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

const uint8_t *img_sec_data(const struct image *img, size_t idx, size_t *len)
{
	const Elf64_Shdr *sh;

	*len = 0;
	if (idx >= img->nsecs)
		return NULL;
	sh = &img->shdrs[idx];
	if (sh->sh_type == SHT_NOBITS || sh->sh_type == SHT_NULL)
		return NULL;
	*len = sh->sh_size;
	return img->data + sh->sh_offset;
}

long img_sec_index(const struct image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nsecs; i++)
		if (strcmp(img->secs[i].name, name) == 0)
			return (long)i;
	return -1;
}

const char *img_sec_str(const struct image *img, size_t idx, uint64_t off)
{
	const uint8_t *d;
	size_t len;

	d = img_sec_data(img, idx, &len);
	if (!d || off >= len || !memchr(d + off, '\0', len - off))
		return NULL;
	return (const char *)d + off;
}

int img_addr_is_text(const struct image *img, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < img->nsegs; i++) {
		const struct img_segment *s = &img->segs[i];

		if ((s->flags & PF_X) && vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
			return 1;
	}
	return 0;
}

static int img_load_ident(struct image *img, struct dcpi_err *err)
{
	const uint8_t *d = img->data;

	if (img->size < EI_NIDENT || memcmp(d, ELFMAG, SELFMAG) != 0)
		return dcpi_errf(err, -EINVAL, "%s: not an ELF file", img->path);
	if (d[EI_CLASS] != ELFCLASS64)
		return dcpi_errf(err, -EINVAL, "%s: not a 64-bit ELF file (class %u)",
				 img->path, d[EI_CLASS]);
	if (d[EI_DATA] != ELFDATA2LSB)
		return dcpi_errf(err, -EINVAL, "%s: not a little-endian ELF file", img->path);
	if (img->size < sizeof(Elf64_Ehdr))
		return dcpi_errf(err, -EINVAL, "%s: truncated ELF (ELF header)", img->path);
	memcpy(&img->eh, d, sizeof(img->eh));
	if (img->eh.e_machine != EM_X86_64)
		return dcpi_errf(err, -EINVAL, "%s: not an x86-64 ELF file (machine %u)",
				 img->path, img->eh.e_machine);
	if (img->eh.e_type != ET_EXEC && img->eh.e_type != ET_DYN)
		return dcpi_errf(err, -EINVAL,
				 "%s: not an executable or shared object (ELF type %u)",
				 img->path, img->eh.e_type);
	img->shared = img->eh.e_type == ET_DYN;
	return 0;
}

/* Section headers, names and bounds; fills img->shdrs and img->secs. */
static int img_load_sections(struct image *img, struct dcpi_err *err)
{
	const Elf64_Ehdr *eh = &img->eh;
	Elf64_Shdr sh0;
	uint64_t shnum = eh->e_shnum, shstrndx = eh->e_shstrndx, i;

	if (eh->e_shoff == 0)
		return 0;
	if (eh->e_shentsize != sizeof(Elf64_Shdr))
		return dcpi_errf(err, -EINVAL, "%s: bad section header size %u",
				 img->path, eh->e_shentsize);
	if (!img_in_file(eh->e_shoff, sizeof(sh0), img->size))
		goto truncated;
	memcpy(&sh0, img->data + eh->e_shoff, sizeof(sh0));
	if (shnum == 0)
		shnum = sh0.sh_size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (shnum > (img->size - eh->e_shoff) / sizeof(Elf64_Shdr))
		goto truncated;
	img->shdrs = calloc(shnum ? shnum : 1, sizeof(*img->shdrs));
	img->secs = calloc(shnum ? shnum : 1, sizeof(*img->secs));
	if (!img->shdrs || !img->secs)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
	memcpy(img->shdrs, img->data + eh->e_shoff, shnum * sizeof(Elf64_Shdr));
	img->nsecs = shnum;
	for (i = 0; i < shnum; i++) {
		const Elf64_Shdr *sh = &img->shdrs[i];

		if (sh->sh_type != SHT_NOBITS && sh->sh_type != SHT_NULL &&
		    !img_in_file(sh->sh_offset, sh->sh_size, img->size))
			return dcpi_errf(err, -EINVAL,
					 "%s: truncated ELF (section %llu past end of file)",
					 img->path, (unsigned long long)i);
	}
	for (i = 0; i < shnum; i++) {
		const Elf64_Shdr *sh = &img->shdrs[i];
		struct img_section *s = &img->secs[i];
		const char *name = shstrndx < shnum ? img_sec_str(img, shstrndx, sh->sh_name)
						    : NULL;

		if (!name)
			name = "";
		s->name = img_arena_strdup(&img->arena, name, strlen(name));
		if (!s->name)
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
		s->addr = sh->sh_addr;
		s->size = sh->sh_size;
		s->offset = sh->sh_offset;
		s->type = sh->sh_type;
		s->flags = sh->sh_flags;
		if (sh->sh_type == SHT_SYMTAB)
			img->stripped = 0;
	}
	return 0;
truncated:
	return dcpi_errf(err, -EINVAL,
			 "%s: truncated ELF (section headers past end of file)", img->path);
}

static int img_load_segments(struct image *img, struct dcpi_err *err)
{
	const Elf64_Ehdr *eh = &img->eh;
	uint64_t phnum = eh->e_phnum, i;

	if (phnum == PN_XNUM && img->nsecs > 0)
		phnum = img->shdrs[0].sh_info;
	if (phnum == 0)
		return 0;
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return dcpi_errf(err, -EINVAL, "%s: bad program header size %u",
				 img->path, eh->e_phentsize);
	if (eh->e_phoff > img->size ||
	    phnum > (img->size - eh->e_phoff) / sizeof(Elf64_Phdr))
		return dcpi_errf(err, -EINVAL,
				 "%s: truncated ELF (program headers past end of file)",
				 img->path);
	img->segs = calloc(phnum, sizeof(*img->segs));
	if (!img->segs)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
	for (i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		struct img_segment *s;

		memcpy(&ph, img->data + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (!img_in_file(ph.p_offset, ph.p_filesz, img->size))
			return dcpi_errf(err, -EINVAL,
					 "%s: truncated ELF (segment %llu past end of file)",
					 img->path, (unsigned long long)i);
		if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return dcpi_errf(err, -EINVAL, "%s: bad PT_LOAD segment %llu",
					 img->path, (unsigned long long)i);
		s = &img->segs[img->nsegs++];
		s->vaddr = ph.p_vaddr;
		s->memsz = ph.p_memsz;
		s->offset = ph.p_offset;
		s->filesz = ph.p_filesz;
		s->flags = ph.p_flags;
	}
	return 0;
}

/* Look through one note area for NT_GNU_BUILD_ID; 1 when found. */
static int img_scan_notes(struct image *img, const uint8_t *p, uint64_t len, uint64_t align,
			  struct dcpi_err *err)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t off = 0;

	if (align != 8)
		align = 4;
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t name, desc, next;

		memcpy(&nh, p + off, sizeof(nh));
		name = off + sizeof(nh);
		desc = name + ((nh.n_namesz + align - 1) & ~(align - 1));
		next = desc + ((nh.n_descsz + align - 1) & ~(align - 1));
		if (desc > len || next > len || nh.n_descsz > len - desc)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + name, "GNU", 4) == 0 && nh.n_descsz > 0) {
			char *s = malloc(2 * (size_t)nh.n_descsz + 1);
			uint32_t i;

			if (!s)
				return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
			for (i = 0; i < nh.n_descsz; i++) {
				s[2 * i] = hex[p[desc + i] >> 4];
				s[2 * i + 1] = hex[p[desc + i] & 15];
			}
			img->build_id = img_arena_strdup(&img->arena, s, 2 * (size_t)nh.n_descsz);
			free(s);
			if (!img->build_id)
				return dcpi_errf(err, -ENOMEM, "%s: out of memory", img->path);
			return 1;
		}
		off = next;
	}
	return 0;
}

static int img_load_build_id(struct image *img, struct dcpi_err *err)
{
	uint64_t i;
	int rc;

	img->build_id = "";
	for (i = 0; i < img->nsecs; i++) {
		const Elf64_Shdr *sh = &img->shdrs[i];

		if (sh->sh_type != SHT_NOTE)
			continue;
		rc = img_scan_notes(img, img->data + sh->sh_offset, sh->sh_size,
				    sh->sh_addralign, err);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	for (i = 0; i < img->eh.e_phnum && img->nsecs == 0; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img->data + img->eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || !img_in_file(ph.p_offset, ph.p_filesz, img->size))
			continue;
		rc = img_scan_notes(img, img->data + ph.p_offset, ph.p_filesz, ph.p_align, err);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return 0;
}

/* Separate debug symbols (debugsyms.c) when the file has none of its own. */
static int img_load_separate(struct image *img, struct dcpi_err *err)
{
	if (!img->stripped || (img->flags & IMG_NO_DEBUG_SYMS))
		return 0;
	return img_syms_separate(img, err);
}

/* In order: procedures from the symbols, PLT stubs, then .eh_frame's FDEs
 * where the symbols left gaps (the candidates finished before and after). */
static int (*const img_load_steps[])(struct image *img, struct dcpi_err *err) = {
	img_load_ident, img_load_sections, img_load_segments, img_load_build_id,
	img_syms_load, img_load_separate, img_plt_load, img_procs_finish,
	img_ehframe_load, img_procs_finish, img_procs_name,
};

static int img_load(struct image *img, struct dcpi_err *err)
{
	int rc = 0;

	img->stripped = 1;
	for (size_t i = 0; i < sizeof(img_load_steps) / sizeof(img_load_steps[0]) && !rc; i++)
		rc = img_load_steps[i](img, err);
	free(img->cands);
	img->cands = NULL;
	img->ncands = img->capcands = 0;
	return rc;
}

static struct image *img_alloc(const char *path, unsigned flags)
{
	struct image *img = calloc(1, sizeof(*img));
	const char *slash;

	if (!img)
		return NULL;
	img->path = strdup(path);
	if (!img->path) {
		free(img);
		return NULL;
	}
	slash = strrchr(img->path, '/');
	img->base = slash ? slash + 1 : img->path;
	img->flags = flags;
	img->build_id = "";
	return img;
}

int img_open_mem(const void *buf, size_t len, const char *name, unsigned flags,
		 struct image **out, struct dcpi_err *err)
{
	struct image *img;
	int rc;

	*out = NULL;
	img = img_alloc(name ? name : "<memory>", flags);
	if (!img)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name ? name : "<memory>");
	img->data = buf;
	img->size = len;
	rc = img_load(img, err);
	if (rc) {
		img_close(img);
		return rc;
	}
	*out = img;
	return 0;
}

int img_open(const char *path, unsigned flags, struct image **out, struct dcpi_err *err)
{
	struct image *img;
	struct stat st;
	int fd, rc;

	*out = NULL;
	fd = dcpi_open_read(AT_FDCWD, path, 0, &st, path, err);
	if (fd < 0)
		return fd;
	if (st.st_size == 0) {
		rc = dcpi_errf(err, -EINVAL, "%s: not an ELF file (empty)", path);
		goto out_fd;
	}
	img = img_alloc(path, flags);
	if (!img) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
		goto out_fd;
	}
	img->map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (img->map == MAP_FAILED) {
		img->map = NULL;
		rc = dcpi_errf(err, -errno, "%s: mmap: %s", path, strerror(errno));
		img_close(img);
		goto out_fd;
	}
	img->maplen = st.st_size;
	img->data = img->map;
	img->size = st.st_size;
	rc = img_load(img, err);
	if (rc)
		img_close(img);
	else
		*out = img;
out_fd:
	close(fd);
	return rc;
}

void img_close(struct image *img)
{
	if (!img)
		return;
	if (img->dw)
		img_dwarf_close(img->dw);
	if (img->map)
		munmap(img->map, img->maplen);
	img_arena_free(&img->arena);
	free(img->debug_path);
	free(img->procs);
	free(img->cands);
	free(img->secs);
	free(img->shdrs);
	free(img->segs);
	free(img->path);
	free(img);
}

const char *img_path(const struct image *img)
{
	return img->path;
}

const char *img_build_id(const struct image *img)
{
	return img->build_id;
}

int img_is_shared(const struct image *img)
{
	return img->shared;
}

int img_is_stripped(const struct image *img)
{
	return img->stripped;
}

size_t img_nsegments(const struct image *img)
{
	return img->nsegs;
}

const struct img_segment *img_segment(const struct image *img, size_t i)
{
	return i < img->nsegs ? &img->segs[i] : NULL;
}

size_t img_nsections(const struct image *img)
{
	return img->nsecs;
}

const struct img_section *img_section(const struct image *img, size_t i)
{
	return i < img->nsecs ? &img->secs[i] : NULL;
}

const struct img_section *img_section_by_name(const struct image *img, const char *name)
{
	long i = img_sec_index(img, name);

	return i < 0 ? NULL : &img->secs[i];
}

int img_section_bytes(const struct image *img, const struct img_section *s,
		      const uint8_t **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	if (!s || s->type == SHT_NOBITS)
		return -ENOENT;
	if (s->offset > img->size || s->size > img->size - s->offset)
		return -EINVAL;
	*data = img->data + s->offset;
	*len = (size_t)s->size;
	return 0;
}

int img_offset_to_vaddr(const struct image *img, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < img->nsegs; i++) {
		const struct img_segment *s = &img->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* The segment whose file bytes back vaddr, or NULL. */
static const struct img_segment *img_seg_of(const struct image *img, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < img->nsegs; i++) {
		const struct img_segment *s = &img->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
			return s;
	}
	return NULL;
}

int img_vaddr_to_offset(const struct image *img, uint64_t vaddr, uint64_t *off)
{
	const struct img_segment *s = img_seg_of(img, vaddr);

	if (!s)
		return -ENOENT;
	*off = s->offset + (vaddr - s->vaddr);
	return 0;
}

const uint8_t *img_bytes(const struct image *img, uint64_t vaddr, size_t *avail)
{
	const struct img_segment *s = img_seg_of(img, vaddr);

	if (!s) {
		if (avail)
			*avail = 0;
		return NULL;
	}
	if (avail)
		*avail = s->filesz - (vaddr - s->vaddr);
	return img->data + s->offset + (vaddr - s->vaddr);
}

int img_read(const struct image *img, uint64_t vaddr, void *buf, size_t len)
{
	size_t avail;
	const uint8_t *p;

	if (len == 0)
		return 0;
	p = img_bytes(img, vaddr, &avail);
	if (!p || avail < len)
		return -ENOENT;
	memcpy(buf, p, len);
	return 0;
}

/* --- debug information ---------------------------------------------------- */

/* A formatted, malloc'd string, or NULL when memory runs out. */
static char *img_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *img_strf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : p;
}

static int img_file_crc(const char *path, uint32_t *crc)
{
	struct stat st;
	void *m;
	int fd;

	fd = dcpi_open_read(AT_FDCWD, path, 0, &st, path, NULL);
	if (fd < 0)
		return fd;
	*crc = crc32(0L, Z_NULL, 0);
	if (st.st_size > 0) {
		uint64_t done = 0;

		m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			close(fd);
			return -errno;
		}
		/* zlib's crc32 takes a uInt length */
		while (done < (uint64_t)st.st_size) {
			uint64_t n = st.st_size - done;

			if (n > 1u << 30)
				n = 1u << 30;
			*crc = crc32(*crc, (const Bytef *)m + done, (uInt)n);
			done += n;
		}
		munmap(m, st.st_size);
	}
	close(fd);
	return 0;
}

/* Open DWARF from path; on success remember it as the separate debug file. */
static int img_dwarf_try(struct image *img, const char *path, int separate)
{
	int rc;

	if (access(path, R_OK) != 0)
		return -ENOENT;
	rc = img_dwarf_open(path, &img->dw, NULL);
	if (rc)
		return rc;
	if (separate) {
		img->debug_path = strdup(path);
		if (!img->debug_path) {
			img_dwarf_close(img->dw);
			img->dw = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * The separate debug file of img, as gdb and perf find it: by build-id under
 * /usr/lib/debug/.build-id/, else by .gnu_debuglink (its CRC-32 checked)
 * beside the image, in .debug/ beside it, or under /usr/lib/debug/<dir>/.
 * *path is malloc'd; -ENOENT when there is none.
 */
int img_debug_file(struct image *img, char **path)
{
	char *dir = NULL, *abs = NULL, *cand[4] = { NULL, NULL, NULL, NULL };
	const char *link, *slash;
	const uint8_t *d;
	size_t len, nlen, i;
	uint32_t want, got = 0;
	long idx;
	int rc = -ENOENT;

	*path = NULL;
	if (strlen(img->build_id) >= 4) {
		cand[3] = img_strf("%s/.build-id/%.2s/%s.debug", IMG_DEBUG_ROOT, img->build_id,
				   img->build_id + 2);
		if (!cand[3])
			return -ENOMEM;
		if (access(cand[3], R_OK) == 0) {
			*path = cand[3];
			return 0;
		}
		free(cand[3]);
		cand[3] = NULL;
	}
	idx = img_sec_index(img, ".gnu_debuglink");
	d = idx < 0 ? NULL : img_sec_data(img, idx, &len);
	if (!d || !memchr(d, '\0', len))
		return -ENOENT;
	link = (const char *)d;
	nlen = strlen(link);
	/* the name, NUL, padding to 4 bytes, then the CRC-32 of the debug file */
	if (nlen == 0 || strchr(link, '/') || ((nlen + 4) & ~3ul) + 4 > len)
		return -ENOENT;
	memcpy(&want, d + ((nlen + 4) & ~3ul), 4);
	slash = strrchr(img->path, '/');
	dir = slash ? strndup(img->path, slash - img->path) : strdup(".");
	if (!dir)
		return -ENOMEM;
	abs = realpath(*dir ? dir : "/", NULL);
	cand[0] = img_strf("%s/%s", dir, link);
	cand[1] = img_strf("%s/.debug/%s", dir, link);
	if (abs)
		cand[2] = img_strf("%s%s/%s", IMG_DEBUG_ROOT, strcmp(abs, "/") ? abs : "", link);
	if (!cand[0] || !cand[1] || (abs && !cand[2])) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < 3 && rc; i++) {
		if (!cand[i] || strcmp(cand[i], img->path) == 0)
			continue;
		if (img_file_crc(cand[i], &got) == 0 && got == want) {
			*path = cand[i];
			cand[i] = NULL;
			rc = 0;
		}
	}
out:
	for (i = 0; i < 3; i++)
		free(cand[i]);
	free(abs);
	free(dir);
	return rc;
}

/* Find and open the debug information once; 0 when img->dw is usable. */
static int img_dwarf_load(struct image *img)
{
	const struct img_section *s;
	int rc = -ENOENT;

	if (img->dw_state)
		return img->dw_state > 0 ? 0 : -ENOENT;
	img->dw_state = -1;
	if (img->flags & IMG_NO_DWARF)
		return -ENOENT;
	s = img_section_by_name(img, ".debug_info");
	if (s && s->type != SHT_NOBITS && s->size > 0 && img->map)
		rc = img_dwarf_try(img, img->path, 0);
	if (rc) {
		char *p;

		rc = img_debug_file(img, &p);
		if (!rc) {
			rc = img_dwarf_try(img, p, 1);
			free(p);
		}
	}
	if (rc)
		return rc;
	img->dw_state = 1;
	return 0;
}

int img_has_dwarf(const struct image *img)
{
	/* the lookup is lazy; the image is logically const */
	return img_dwarf_load((struct image *)img) == 0;
}

const char *img_debug_path(const struct image *img)
{
	img_dwarf_load((struct image *)img);
	return img->debug_path;
}

int img_line_at(struct image *img, uint64_t vaddr, struct img_line *out)
{
	int rc = img_dwarf_load(img);

	return rc ? rc : img_dwarf_line_at(img->dw, vaddr, out);
}

int img_decl_line(struct image *img, uint64_t vaddr, struct img_line *out)
{
	int rc = img_dwarf_load(img);

	return rc ? rc : img_dwarf_decl_line(img->dw, vaddr, out);
}

int img_inlines_at(struct image *img, uint64_t vaddr, const struct img_inline **out,
		   size_t *n)
{
	int rc = img_dwarf_load(img);

	*n = 0;
	if (out)
		*out = NULL;
	return rc ? rc : img_dwarf_inlines_at(img->dw, vaddr, out, n);
}

int img_params(struct image *img, uint64_t vaddr, const struct img_param **out, size_t *n,
	       int *variadic)
{
	int rc = img_dwarf_load(img);

	*out = NULL;
	*n = 0;
	if (variadic)
		*variadic = 0;
	return rc ? rc : img_dwarf_params(img->dw, vaddr, out, n, variadic);
}
