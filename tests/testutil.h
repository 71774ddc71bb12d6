/*
 * tests/testutil.h - helpers the end-to-end tests share: where a symbol's
 * bytes are in its file (from nm and readelf, never from dcpi's own image
 * code), and which profile and how many samples fall there.  Header-only:
 * each test is one binary.  Include after <cmocka.h>.
 */
#ifndef DCPI_TESTUTIL_H
#define DCPI_TESTUTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"

/* Run a shell command built printf-style; system()'s status. */
static inline int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int tu_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static inline const struct prof_profile *find_image(const struct prof_profile *p, size_t n,
						    const char *suffix)
{
	size_t ls = strlen(suffix);

	for (size_t i = 0; i < n; i++) {
		size_t lp = strlen(p[i].image.path);

		if (lp >= ls && !strcmp(p[i].image.path + lp - ls, suffix))
			return &p[i];
	}
	return NULL;
}

/* File offsets [lo, hi) of symbol sym of file, from nm -S and readelf -l. */
static inline void sym_range(const char *file, const char *sym, uint64_t *lo, uint64_t *hi)
{
	char cmd[PROF_PATH_MAX + 64], line[512];
	unsigned long long va = 0, size = 0, off, vaddr, pa, filesz;
	int found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", file);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		char name[256], type;

		found = sscanf(line, "%llx %llx %c %255s", &va, &size, &type, name) == 4 &&
			!strcmp(name, sym);
	}
	pclose(f);
	assert_true(found && size > 0);
	found = 0;
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", file);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &vaddr, &pa,
			   &filesz) == 4 && va >= vaddr && va + size <= vaddr + filesz) {
			*lo = va - vaddr + off;
			*hi = *lo + size;
			found = 1;
		}
	}
	pclose(f);
	assert_true(found);
}

static inline uint64_t count_in(const struct prof_profile *p, uint64_t lo, uint64_t hi)
{
	uint64_t c = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].offset >= lo && p->e[i].offset < hi)
			c += p->e[i].count;
	return c;
}

#endif /* DCPI_TESTUTIL_H */
