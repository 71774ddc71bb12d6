/*
 * test_cfg_golden.c - the CFGs of every procedure of real system binaries
 * (bash and libc, present on every Debian machine) against digests taken with
 * the code as it was before the decoder was made faster (bench/README.md):
 * instructions, blocks, edges, classes, loops and data ranges must all be
 * unchanged.  tests/golden/NAME.digest holds the image's build-id and one
 * "address digest" line per procedure (32 bits); a machine with another build of the
 * binary skips (the digests are of those exact bytes).
 *
 * One change was made on purpose since: capstone 4 leaves the access of an
 * AVX-512 write-mask operand ({%k1}) uninitialised, so whether the mask was
 * read (and written) came from the previous instruction's memory; it is now
 * read, always.  The 13 libc procedures with such instructions were checked to
 * differ in nothing else and their lines were taken again.  And jump tables
 * whose base register is loaded before a loop and used for other things
 * elsewhere in the procedure are resolved (cfg/jumptable.c reach_const):
 * 16 bash and 9 libc procedures gained their table's edges, with the same
 * blocks (one bash procedure one more: a table entry splits a block; the
 * entries' code had been swept as gap code before), and their lines were
 * taken again.
 *
 * DCPI_GOLDEN_WRITE=1 rewrites the files from the current code: only do that
 * with the code the digests are meant to pin.  Under valgrind (TEST_WRAPPER
 * set) every 16th procedure is checked, to stay within seconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cfg_digest.h"
#include "dcpi/cfg.h"
#include "dcpi/image.h"

#include "../cfg/internal.h"		/* cfg_dec_calls */
#include "tu_main.h"

static const struct {
	const char *name, *path;
} goldens[] = {
	{ "bash", "/usr/bin/bash" },
	{ "libc", "/lib/x86_64-linux-gnu/libc.so.6" },
};

static const char *golden_path(const char *name, char *buf, size_t len)
{
	const char *src = getenv("DCPI_SRC");

	snprintf(buf, len, "%s/tests/golden/%s.digest", src ? src : ".", name);
	return buf;
}

static int write_golden(struct image *img, const char *file)
{
	FILE *f = fopen(file, "w");
	struct dcpi_err err = { 0 };

	if (!f)
		return -errno;
	fprintf(f, "build-id %s\n", img_build_id(img));
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);
		struct cfg *cfg;

		if (p->source == IMG_SRC_PLT)
			continue;
		if (cfg_build(img, p, &cfg, &err) < 0) {
			fprintf(f, "%" PRIx64 " fail\n", p->addr);
			continue;
		}
		fprintf(f, "%" PRIx64 " %08" PRIx32 "\n", p->addr, cfg_digest32(cfg));
		cfg_free(cfg);
	}
	return fclose(f) ? -errno : 0;
}

/* Compare; returns the procedures that differ (first ones printed). */
static size_t check_golden(struct image *img, FILE *f, size_t stride, size_t *checked)
{
	struct dcpi_err err = { 0 };
	size_t bad = 0, k = 0;
	char line[128];

	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char got_s[24] = "fail", want_s[24];
		const struct img_proc *p;
		struct cfg *cfg;

		if (sscanf(line, "%llx %23s", &addr, want_s) != 2 || k++ % stride)
			continue;
		p = img_proc_at(img, addr);
		assert_non_null(p);
		if (cfg_build(img, p, &cfg, &err) == 0) {
			snprintf(got_s, sizeof(got_s), "%08" PRIx32, cfg_digest32(cfg));
			cfg_free(cfg);
		}
		(*checked)++;
		if (strcmp(got_s, want_s) && bad++ < 10)
			print_error("%s (0x%llx): digest %s, golden %s\n", p->name, addr, got_s,
				    want_s);
	}
	return bad;
}

static void test_golden_digests(void **state)
{
	int tested = 0;

	(void)state;
	for (size_t g = 0; g < sizeof(goldens) / sizeof(goldens[0]); g++) {
		char file[4096], line[128], id[96] = "";
		struct dcpi_err err = { 0 };
		size_t checked = 0, bad;
		struct image *img;
		FILE *f;

		if (img_open(goldens[g].path, IMG_NO_DWARF | IMG_NO_DEBUG_SYMS, &img, &err) < 0) {
			print_message("%s: %s, skipped\n", goldens[g].path, err.msg);
			continue;
		}
		golden_path(goldens[g].name, file, sizeof(file));
		if (getenv("DCPI_GOLDEN_WRITE")) {
			assert_int_equal(write_golden(img, file), 0);
			print_message("%s: written\n", file);
		}
		f = fopen(file, "r");
		assert_non_null(f);
		if (!fgets(line, sizeof(line), f) || sscanf(line, "build-id %95s", id) != 1)
			fail_msg("%s: no build-id line", file);
		if (strcmp(id, img_build_id(img))) {
			print_message("%s: build-id %s, golden is of %s: skipped\n",
				      goldens[g].path, img_build_id(img), id);
			fclose(f);
			img_close(img);
			continue;
		}
		bad = check_golden(img, f, getenv("TEST_WRAPPER") ? 16 : 1, &checked);
		fclose(f);
		img_close(img);
		print_message("%s: %zu procedures checked, %zu differ\n", goldens[g].path,
			      checked, bad);
		assert_true(checked > 100);
		assert_int_equal(bad, 0);
		tested++;
	}
	if (!tested)
		skip();
}

struct all_rec {
	size_t n, nfailed, ninsns;
	uint64_t addr[8192];
	uint32_t digest[8192];
};

static int take(void *arg, const struct img_proc *p, struct cfg *cfg,
		const struct dcpi_err *err)
{
	struct all_rec *r = arg;

	(void)err;
	assert_true(r->n < 8192);
	r->addr[r->n] = p->addr;
	r->digest[r->n++] = cfg ? cfg_digest32(cfg) : 0;
	r->nfailed += !cfg;
	r->ninsns += cfg ? cfg->ninsns : 0;
	cfg_free(cfg);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* bash through cfg_build_all against its golden file (all procedures). */
static void build_all_golden(struct all_rec *r)
{
	char file[4096], line[128], id[96] = "";
	struct dcpi_err err = { 0 };
	struct cfg_all_stats st;
	size_t matched = 0, bad = 0;
	struct image *img;
	FILE *f;

	if (img_open(goldens[0].path, IMG_NO_DWARF, &img, &err) < 0)
		return;
	f = fopen(golden_path(goldens[0].name, file, sizeof(file)), "r");
	assert_non_null(f);
	if (!fgets(line, sizeof(line), f) || sscanf(line, "build-id %95s", id) != 1 ||
	    strcmp(id, img_build_id(img))) {
		fclose(f);
		img_close(img);
		return;
	}
	memset(r, 0, sizeof(*r));
	assert_int_equal(cfg_build_all(img, take, r, &st, &err), 0);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		unsigned want;

		if (sscanf(line, "%llx %x", &addr, &want) != 2)
			continue;
		for (size_t k = 0; k < r->n; k++) {
			if (r->addr[k] != addr)
				continue;
			matched++;
			if (r->digest[k] != want && bad++ < 10)
				print_error("bash 0x%llx: %08x, golden %08x\n", addr,
					    r->digest[k], want);
		}
	}
	fclose(f);
	qsort(r->addr, r->n, sizeof(r->addr[0]), cmp_u64);
	for (size_t k = 1; k < r->n; k++)
		assert_true(r->addr[k - 1] != r->addr[k]);
	print_message("bash: %zu procedures through cfg_build_all, %zu differ from the golden "
		      "digests; %.3f decodes per instruction\n", matched, bad,
		      (double)st.decodes / r->ninsns);
	assert_int_equal(matched, r->n);
	assert_int_equal(bad, 0);
	assert_true(st.decodes < 1.15 * r->ninsns);
	img_close(img);
}

/*
 * cfg_build_all: every procedure once, each CFG the same as cfg_build's, with
 * about one capstone decode per instruction where building each procedure on
 * its own decodes its callees again (about two).  dash (small, Essential in
 * Debian) against cfg_build on the same machine; bash against its golden file.
 */
static void test_build_all(void **state)
{
	static struct all_rec r;
	struct cfg_all_stats st;
	struct dcpi_err err = { 0 };
	unsigned long d0, per_proc;
	struct image *img;
	size_t nplt = 0;

	(void)state;
	if (img_open("/usr/bin/dash", IMG_NO_DWARF, &img, &err) < 0)
		skip();
	memset(&r, 0, sizeof(r));
	assert_int_equal(cfg_build_all(img, take, &r, &st, &err), 0);
	assert_int_equal(st.procs, r.n);
	assert_int_equal(r.nfailed, 0);
	for (size_t i = 0; i < img_nprocs(img); i++)
		nplt += img_proc(img, i)->source == IMG_SRC_PLT;
	assert_int_equal(r.n + nplt, img_nprocs(img));
	d0 = cfg_dec_calls;
	for (size_t k = 0; k < r.n; k++) {
		const struct img_proc *p = img_proc_at(img, r.addr[k]);
		struct cfg *cfg;

		assert_non_null(p);
		assert_int_equal(p->addr, r.addr[k]);
		assert_int_equal(cfg_build(img, p, &cfg, &err), 0);
		assert_int_equal(cfg_digest32(cfg), r.digest[k]);
		cfg_free(cfg);
		for (size_t j = 0; j < k; j++)	/* each procedure once */
			assert_true(r.addr[j] != r.addr[k]);
	}
	per_proc = cfg_dec_calls - d0;
	print_message("dash: %zu procedures, %zu instructions: %lu decodes (cfg_build_all), "
		      "%lu (cfg_build each)\n", r.n, r.ninsns, st.decodes, per_proc);
	assert_true(st.decodes < 1.15 * r.ninsns);
	img_close(img);
	if (!getenv("TEST_WRAPPER"))
		build_all_golden(&r);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_golden_digests),
	cmocka_unit_test(test_build_all))
