/*
 * fuzz_elf.c - libFuzzer target for the ELF side of image/: img_open_mem on
 * arbitrary bytes (no DWARF), then every accessor a consumer would use, so a
 * header or table that lies about its size is caught by ASan, not by a user.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dcpi/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_err err;
	struct image *img;
	uint8_t buf[16];
	size_t i, avail;
	uint64_t v, o;

	if (img_open_mem(data, size, "fuzz", IMG_NO_DWARF, &img, &err))
		return 0;
	for (i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);

		if (img_proc_at(img, p->addr) != p || img_proc_at(img, p->addr + p->size - 1) != p)
			__builtin_trap();
		if (i > 0 && img_proc(img, i - 1)->addr + img_proc(img, i - 1)->size > p->addr)
			__builtin_trap();
		if (p->size == 0 || strlen(p->name) + strlen(p->raw_name) == (size_t)-1)
			__builtin_trap();
		(void)img_read(img, p->addr, buf, sizeof(buf));
	}
	for (i = 0; i < 64; i++)
		(void)img_proc_at(img, (uint64_t)i * 0x1111 + (size > 8 ? data[i % size] : 0));
	for (i = 0; i < img_nsegments(img); i++) {
		const struct img_segment *s = img_segment(img, i);

		if (s->filesz && !img_offset_to_vaddr(img, s->offset + s->filesz - 1, &v))
			(void)img_vaddr_to_offset(img, v, &o);
		if (img_bytes(img, s->vaddr, &avail) && avail > 0)
			(void)img_read(img, s->vaddr + avail - 1, buf, 1);
	}
	for (i = 0; i < img_nsections(img); i++)
		(void)strlen(img_section(img, i)->name);
	(void)img_section_by_name(img, ".text");
	(void)img_proc_by_name(img, "main");
	(void)strlen(img_build_id(img));
	(void)img_has_dwarf(img);
	img_close(img);
	return 0;
}
