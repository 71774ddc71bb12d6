/*
 * test_cfg_golden.c - the CFGs of every procedure of real system binaries
 * (bash and libc, present on every Debian machine) against digests taken with
 * the code as it was before the decoder was made faster (issue 17):
 * instructions, blocks, edges, classes, loops and data ranges must all be
 * unchanged.  tests/golden/NAME.digest holds the image's build-id and one
 * "address digest" line per procedure (32 bits); a machine with another build of the
 * binary skips (the digests are of those exact bytes).
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

		if (img_open(goldens[g].path, IMG_NO_DWARF, &img, &err) < 0) {
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_digests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
