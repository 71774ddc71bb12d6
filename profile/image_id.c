/*
 * image_id.c - who an image file is: its ELF build-id when it has one, else
 * its path, size and mtime (docs/profile-format.md "Image identity").
 *
 * The build-id is read by hand from the PT_NOTE segments (or, in files
 * without program headers, the SHT_NOTE sections) so that the profile part
 * and the collector above it need no ELF library.  Every read is bounded by
 * the file size; a file that is not ELF, or is ELF without a build-id, simply
 * has none.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "dcpi/profile.h"

#define NOTE_MAX ((uint64_t)1 << 20)	/* larger note areas are not read */
#define PHDR_MAX 4096

struct elf_file {
	int fd;
	uint64_t size;
	int is64, swap;
};

static uint16_t rd16(const struct elf_file *f, const uint8_t *p)
{
	return f->swap ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t rd32(const struct elf_file *f, const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[f->swap ? 3 - i : i] << (8 * i);
	return v;
}

static uint64_t rd64(const struct elf_file *f, const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[f->swap ? 7 - i : i] << (8 * i);
	return v;
}

static int read_at(const struct elf_file *f, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	if (off > f->size || len > f->size - off)
		return -1;
	while (done < len) {
		ssize_t r = pread(f->fd, (uint8_t *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Scan one note area for NT_GNU_BUILD_ID; 1 when found. */
static int scan_notes(const struct elf_file *f, uint64_t off, uint64_t len, char *hex)
{
	uint8_t *buf;
	uint64_t pos = 0;
	int found = 0;

	if (len == 0 || len > NOTE_MAX)
		return 0;
	buf = malloc(len);
	if (!buf)
		return 0;
	if (read_at(f, off, buf, len))
		goto out;
	while (len - pos >= 12) {
		uint32_t namesz = rd32(f, buf + pos);
		uint32_t descsz = rd32(f, buf + pos + 4);
		uint32_t type = rd32(f, buf + pos + 8);
		uint64_t name = pos + 12;
		uint64_t desc = name + (((uint64_t)namesz + 3) & ~3ull);
		uint64_t next = desc + (((uint64_t)descsz + 3) & ~3ull);

		if (desc > len || descsz > len - desc)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name, "GNU", 4) &&
		    descsz > 0 && descsz <= (PROF_BUILD_ID_MAX - 1) / 2) {
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", buf[desc + i]);
			found = 1;
			break;
		}
		if (next > len)
			break;
		pos = next;
	}
out:
	free(buf);
	return found;
}

static int scan_segments(const struct elf_file *f, const uint8_t *eh, char *hex)
{
	uint64_t phoff = f->is64 ? rd64(f, eh + 32) : rd32(f, eh + 28);
	uint16_t phentsize = rd16(f, eh + (f->is64 ? 54 : 42));
	uint16_t phnum = rd16(f, eh + (f->is64 ? 56 : 44));
	uint8_t ph[64];

	if (phentsize < (f->is64 ? 56 : 32) || phentsize > sizeof(ph) || phnum > PHDR_MAX)
		return 0;
	for (unsigned i = 0; i < phnum; i++) {
		uint64_t off, sz;

		if (read_at(f, phoff + (uint64_t)i * phentsize, ph, phentsize))
			return 0;
		if (rd32(f, ph) != PT_NOTE)
			continue;
		off = f->is64 ? rd64(f, ph + 8) : rd32(f, ph + 4);
		sz = f->is64 ? rd64(f, ph + 32) : rd32(f, ph + 16);
		if (scan_notes(f, off, sz, hex))
			return 1;
	}
	return 0;
}

static int scan_sections(const struct elf_file *f, const uint8_t *eh, char *hex)
{
	uint64_t shoff = f->is64 ? rd64(f, eh + 40) : rd32(f, eh + 32);
	uint16_t shentsize = rd16(f, eh + (f->is64 ? 58 : 46));
	uint16_t shnum = rd16(f, eh + (f->is64 ? 60 : 48));
	uint8_t sh[64];

	if (shentsize < (f->is64 ? 64 : 40) || shentsize > sizeof(sh))
		return 0;
	for (unsigned i = 0; i < shnum; i++) {
		uint64_t off, sz;

		if (read_at(f, shoff + (uint64_t)i * shentsize, sh, shentsize))
			return 0;
		if (rd32(f, sh + 4) != SHT_NOTE)
			continue;
		off = f->is64 ? rd64(f, sh + 24) : rd32(f, sh + 16);
		sz = f->is64 ? rd64(f, sh + 32) : rd32(f, sh + 20);
		if (scan_notes(f, off, sz, hex))
			return 1;
	}
	return 0;
}

/* Fill hex with the build-id of an ELF file, or leave it empty. */
static void read_build_id(int fd, uint64_t size, char *hex)
{
	struct elf_file f = { .fd = fd, .size = size };
	uint8_t eh[64];

	hex[0] = '\0';
	if (read_at(&f, 0, eh, 52) || memcmp(eh, ELFMAG, SELFMAG))
		return;
	if (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64)
		return;
	f.is64 = eh[EI_CLASS] == ELFCLASS64;
	if (f.is64 && read_at(&f, 0, eh, 64))
		return;
	/* rd16/32/64 assemble bytes little-endian, or big-endian when swap. */
	f.swap = eh[EI_DATA] == ELFDATA2MSB;
	if (!scan_segments(&f, eh, hex))
		scan_sections(&f, eh, hex);
}

int prof_image_id_from_file(struct prof_image_id *id, const char *path,
			    struct dcpi_err *err)
{
	struct stat st;
	int fd;

	memset(id, 0, sizeof(*id));
	if (strlen(path) >= sizeof(id->path) || !path[0])
		return dcpi_errf(err, -ENAMETOOLONG, "%.200s...: bad image path length",
				 path);
	/* a FIFO planted at a deleted image's path must not block a collector */
	fd = dcpi_open_read(AT_FDCWD, path, 0, &st, path, err);
	if (fd < 0)
		return fd;
	strcpy(id->path, path);
	id->size = (uint64_t)st.st_size;
	id->mtime = (int64_t)st.st_mtime;
	read_build_id(fd, id->size, id->build_id);
	close(fd);
	return 0;
}

void prof_image_id_unknown(struct prof_image_id *id)
{
	memset(id, 0, sizeof(*id));
	strcpy(id->path, PROF_UNKNOWN_PATH);
}

int prof_image_id_equal(const struct prof_image_id *a, const struct prof_image_id *b)
{
	if (a->build_id[0] || b->build_id[0])
		return !strcmp(a->build_id, b->build_id);
	return !strcmp(a->path, b->path) && a->size == b->size && a->mtime == b->mtime;
}
