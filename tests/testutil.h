/*
 * tests/testutil.h - helpers the end-to-end tests share: where a symbol's
 * bytes are in its file (from nm and readelf, never from dcpi's own image
 * code), and which profile and how many samples fall there.  Header-only:
 * each test is one binary.  Include after <cmocka.h>.
 */
#ifndef DCPI_TESTUTIL_H
#define DCPI_TESTUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
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

/*
 * A new empty folder for one test program: mkdtemp of
 * "$TMPDIR/dcpi-test-<name>-XXXXXX" ("/tmp" when TMPDIR is unset or empty).
 * tests/run.sh points TMPDIR at a folder of the test's own, removed after;
 * a test removes its workspace itself all the same.  0, or -1 with errno.
 */
static inline int tu_workspace(char *out, size_t len, const char *name)
{
	const char *t = getenv("TMPDIR");
	int n;

	if (!t || !*t)
		t = "/tmp";
	n = snprintf(out, len, "%s/dcpi-test-%s-XXXXXX", t, name);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			out[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdtemp(out) ? 0 : -1;
}

/* Marsaglia's xorshift64, one fixed sequence per test program. */
static inline uint64_t tu_rng(void)
{
	static uint64_t s = 88172645463325252ULL;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
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

/* A database at dir whose one epoch holds the exact executions of proc in
 * bin, as `dcpi import` of callgrind writes them (callgrind-Ir), known by
 * construction: by_depth[d] for every block at loop depth d (0, 1, 2+). */
static inline void tu_exact_db(const char *dir, const char *bin, const char *proc,
			       const double by_depth[3])
{
	struct prof_profile p;
	struct prof_db *db;
	struct image *img;
	const struct img_proc *ip;
	struct cfg *cfg;
	struct dcpi_err err;
	char epoch[64];

	assert_int_equal(img_open(bin, 0, &img, &err), 0);
	assert_int_equal(img_proc_find(img, proc, &ip, &err), 0);
	assert_int_equal(cfg_build(img, ip, &cfg, &err), 0);
	prof_profile_init(&p);
	assert_int_equal(prof_image_id_from_file(&p.image, bin, &err), 0);
	snprintf(p.event, sizeof(p.event), "callgrind-Ir");
	p.period = 1;
	snprintf(p.period_unit, sizeof(p.period_unit), "events");
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++) {
			int d = cfg->blocks[b].loop_depth > 2 ? 2 : cfg->blocks[b].loop_depth;
			uint64_t off;

			assert_int_equal(img_vaddr_to_offset(img,
				cfg->insns[cfg->blocks[b].first + j].addr, &off), 0);
			assert_int_equal(prof_profile_add(&p, off, (uint64_t)by_depth[d]), 0);
		}
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	prof_db_close(db);
	prof_profile_free(&p);
	cfg_free(cfg);
	img_close(img);
}

#endif /* DCPI_TESTUTIL_H */
