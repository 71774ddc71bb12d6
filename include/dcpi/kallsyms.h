/*
 * kallsyms.h - the running kernel's procedures, from /proc/kallsyms
 * (image/kallsyms.c), for the pseudo-image "[kernel.kallsyms]" the collector
 * keeps kernel samples in, keyed by address (include/dcpi/collect.h).
 *
 * /proc/kallsyms lists symbols by address; a procedure here is a text
 * symbol (t, T, w, W) and runs up to the next text symbol's address.
 * Module symbols keep their module: "name [module]".  The addresses are
 * this boot's (KASLR moves them at each boot), so a profile recorded
 * before a reboot is named wrongly; reports read the file when they run.
 */
#ifndef DCPI_KALLSYMS_H
#define DCPI_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

#define KSYMS_PATH "/proc/kallsyms"
/* The pseudo-image of kernel samples (perf's name; MAPS_KERNEL_PATH too). */
#define KSYMS_IMAGE "[kernel.kallsyms]"

struct ksym {
	uint64_t start, size;
	char *name;
};

struct ksyms {
	size_t n;
	struct ksym *e;		/* sorted by start; from ksyms_load one per address */
};

/*
 * Read the text symbols of path (NULL: /proc/kallsyms).  -EPERM when every
 * address reads as 0 (kernel.kptr_restrict, or not root), -ENOENT when the
 * file is missing; err says which.
 */
int ksyms_load(const char *path, struct ksyms *out, struct dcpi_err *err);
/* Index of the procedure holding addr, or -1. */
long ksyms_find(const struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);
/* The address of _text in path (NULL: /proc/kallsyms): where the kernel's
 * text runs this boot, KASLR's slide included (image/vmlinux.c).  -ENOENT
 * when it is absent or reads as 0. */
int ksyms_text(const char *path, uint64_t *addr, struct dcpi_err *err);

#endif /* DCPI_KALLSYMS_H */
