/*
 * tests/tu_image.h - the group fixture of the tests that run a workload
 * under dcpi and look its procedures up in its image (test_plan.c,
 * test_valrec.c): dcpi and the build folder from tests/run.sh, a new
 * workspace, the workload's path and its image.  Header-only; include
 * after <cmocka.h>.
 */
#ifndef DCPI_TU_IMAGE_H
#define DCPI_TU_IMAGE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/image.h"
#include "testutil.h"

struct tu_image {
	const char *bin, *build;	/* DCPI_BIN, DCPI_BUILD */
	char dir[256], prog[512];	/* the workspace, the workload */
	struct image *img;		/* prog's, without DWARF */
};

/* t with the workload (a path in the build folder) and a new workspace
 * named after name; 0, or -1 (not under tests/run.sh, or no workspace), or
 * img_open's negative errno. */
static inline int tu_image_setup(struct tu_image *t, const char *name, const char *workload)
{
	struct dcpi_err err = { 0 };

	t->bin = getenv("DCPI_BIN");
	t->build = getenv("DCPI_BUILD");
	if (!t->bin || !t->build || tu_workspace(t->dir, sizeof(t->dir), name))
		return -1;
	snprintf(t->prog, sizeof(t->prog), "%s/%s", t->build, workload);
	return img_open(t->prog, IMG_NO_DWARF, &t->img, &err);
}

/* The image closed and the workspace removed, with all in it. */
static inline int tu_image_teardown(struct tu_image *t)
{
	img_close(t->img);
	tu_sh("rm -rf %s", t->dir);
	return 0;
}

/* The static group setup and teardown (named setup and teardown) of a test
 * file whose fixture is t, its workspace named after name. */
#define TU_IMAGE_GROUP(t, name, workload)				\
static int setup(void **state)						\
{									\
	(void)state;							\
	return tu_image_setup(&(t), name, workload);			\
}									\
									\
static int teardown(void **state)					\
{									\
	(void)state;							\
	return tu_image_teardown(&(t));					\
}

/* File offset of procedure name's first instruction in t's image, plus
 * delta bytes. */
static inline uint64_t tu_image_off(const struct tu_image *t, const char *name, uint64_t delta)
{
	const struct img_proc *p = img_proc_by_name(t->img, name);
	uint64_t off;

	assert_non_null(p);
	assert_int_equal(img_vaddr_to_offset(t->img, p->addr + delta, &off), 0);
	return off;
}

#endif /* DCPI_TU_IMAGE_H */
