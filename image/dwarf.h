/*
 * image/dwarf.h - module-private interface between the ELF side of image/
 * (image/elf.c) and the DWARF reader (image/dwarf.c, libdwarf).
 *
 * The DWARF reader is opened on the file that holds the debug information
 * (the image itself or its separate debug file).  Addresses are the image's
 * virtual addresses (the debug file uses the same ones).
 */
#ifndef DCPI_IMAGE_DWARF_H
#define DCPI_IMAGE_DWARF_H

#include "dcpi/image.h"

struct img_dwarf;

/* -ENOENT when the file has no .debug_info / .debug_line. */
int img_dwarf_open(const char *path, struct img_dwarf **out, struct dcpi_err *err);
void img_dwarf_close(struct img_dwarf *d);
int img_dwarf_line_at(struct img_dwarf *d, uint64_t vaddr, struct img_line *out);
int img_dwarf_decl_line(struct img_dwarf *d, uint64_t vaddr, struct img_line *out);
int img_dwarf_inlines_at(struct img_dwarf *d, uint64_t vaddr,
			 const struct img_inline **out, size_t *n);
int img_dwarf_params(struct img_dwarf *d, uint64_t vaddr, const struct img_param **out,
		     size_t *n, int *variadic);

#endif /* DCPI_IMAGE_DWARF_H */
