/*
 * bench/image_load.c - time img_open on one file (no DWARF) and print
 * "procs N seconds S", the median of several loads; bench_image.sh sets it
 * beside readelf and objdump on the same file.  With -l, list the procedures
 * ("addr size source name") instead, for eyeballing against nm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"
#include "dcpi/util.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int list_procs(const char *path)
{
	static const char *src[] = { "symtab", "dynsym", "eh_frame", "plt" };
	struct dcpi_err err = { 0 };
	struct image *img;
	size_t i;

	if (img_open(path, IMG_NO_DWARF, &img, &err)) {
		fprintf(stderr, "image_load: %s\n", err.msg);
		return 1;
	}
	for (i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);

		printf("%llx %llx %s %s\n", (unsigned long long)p->addr,
		       (unsigned long long)p->size, src[p->source], p->name);
	}
	img_close(img);
	return 0;
}

int main(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	uint64_t t[15];
	size_t nprocs = 0;
	int i, runs = 7;

	if (argc == 3 && strcmp(argv[1], "-l") == 0)
		return list_procs(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: image_load [-l] FILE\n");
		return 2;
	}
	for (i = 0; i < runs; i++) {
		struct image *img;
		uint64_t t0 = dcpi_now_ns();

		if (img_open(argv[1], IMG_NO_DWARF, &img, &err)) {
			fprintf(stderr, "image_load: %s\n", err.msg);
			return 1;
		}
		nprocs = img_nprocs(img);
		img_close(img);
		t[i] = dcpi_now_ns() - t0;
	}
	qsort(t, runs, sizeof(t[0]), cmp_u64);
	printf("procs %zu seconds %.4f\n", nprocs, t[runs / 2] / 1e9);
	return 0;
}
