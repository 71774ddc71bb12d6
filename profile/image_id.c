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

/*
 * Where the note areas are listed: the program headers (PT_NOTE) and the
 * section headers (SHT_NOTE).  Each field's offset is [0] in ELFCLASS32,
 * [1] in ELFCLASS64: in the ELF header, the table's offset, entry size and
 * entry count; in an entry, its type and the area's offset and size; and
 * the smallest entry size.  max: the most entries read.
 */
struct note_table {
	uint8_t table[2], entsize[2], num[2];
	uint8_t type[2], area[2], areasz[2];
	uint8_t minent[2];
	uint32_t note;
	unsigned max;
};

static const struct note_table segments = {
	{ 28, 32 }, { 42, 54 }, { 44, 56 }, { 0, 0 }, { 4, 8 }, { 16, 32 }, { 32, 56 },
	PT_NOTE, PHDR_MAX,
};

static const struct note_table sections = {
	{ 32, 40 }, { 46, 58 }, { 48, 60 }, { 4, 4 }, { 16, 24 }, { 20, 32 }, { 40, 64 },
	SHT_NOTE, UINT16_MAX,
};

/* An address or offset: 8 bytes in ELFCLASS64, 4 in ELFCLASS32. */
static uint64_t rd_word(const struct elf_file *f, const uint8_t *p)
{
	return f->is64 ? rd64(f, p) : rd32(f, p);
}

static int scan_table(const struct elf_file *f, const uint8_t *eh, const struct note_table *t,
		      char *hex)
{
	int k = f->is64;
	uint64_t off = rd_word(f, eh + t->table[k]);
	uint16_t entsize = rd16(f, eh + t->entsize[k]);
	uint16_t num = rd16(f, eh + t->num[k]);
	uint8_t e[64];

	if (entsize < t->minent[k] || entsize > sizeof(e) || num > t->max)
		return 0;
	for (unsigned i = 0; i < num; i++) {
		if (read_at(f, off + (uint64_t)i * entsize, e, entsize))
			return 0;
		if (rd32(f, e + t->type[k]) == t->note &&
		    scan_notes(f, rd_word(f, e + t->area[k]), rd_word(f, e + t->areasz[k]), hex))
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
	if (!scan_table(&f, eh, &segments, hex))
		scan_table(&f, eh, &sections, hex);
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
