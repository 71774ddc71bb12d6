/*
 * test_suggest.c - "did you mean" (tools/suggest.c, report/find.c): the
 * edit distance counts a swap of two letters as one edit, a mistyped
 * command (`dcpi clac`, a link named dcpiclac), a mistyped long option
 * (`dcpicalc --jsn`) and a mistyped procedure name each get the nearest
 * name, and a word near nothing gets no suggestion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/report.h"
#include "tu_run.h"
#include "tu_main.h"

static void test_distance(void **state)
{
	(void)state;
	assert_int_equal(rep_edit_distance("calc", "calc"), 0);
	assert_int_equal(rep_edit_distance("clac", "calc"), 1);	/* a swap */
	assert_int_equal(rep_edit_distance("lst", "list"), 1);
	assert_int_equal(rep_edit_distance("jsno", "json"), 1);
	assert_int_equal(rep_edit_distance("", "abc"), 3);
	assert_int_equal(rep_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(rep_edit_distance("ca", "abc"), 3);	/* no edit of a swapped pair */
}

/* Run prog with args (stderr to ws/err.txt); its status, and err.txt in buf. */
static int run_err(const char *ws, char *buf, size_t len, const char *prog, const char *args)
{
	char cmd[2048], path[600];
	int rc;

	snprintf(cmd, sizeof(cmd), "%s %s > /dev/null 2> %s/err.txt", prog, args, ws);
	rc = system(cmd);
	snprintf(path, sizeof(path), "%s/err.txt", ws);
	tu_slurp(path, buf, len);
	return rc;
}

/* Mistyped command lines, each failing with the suggestion it must print
 * (NULL: none); link: run as ws/dcpiclac, a DCPI name mistyped as a link
 * to the binary. */
static const struct {
	int link;
	const char *args, *want;
} typos[] = {
	{ 0, "clac", "did you mean dcpi calc?" },
	{ 0, "lst", "did you mean dcpi list?" },
	{ 0, "xyzzyplugh", NULL },
	{ 1, "", "did you mean dcpicalc?" },
	/* options: the command's own long options, shared ones included */
	{ 0, "calc --jsn x", "did you mean --json?" },
	{ 0, "list --epcoh=1 x", "did you mean --epoch?" },
	{ 0, "prof --evnt cycles", "did you mean --event?" },
	{ 0, "prof --zzzzzzzz", NULL },
};

static void test_commands_and_options(void **state)
{
	const char *bin;
	char wl[512], ws[512], link[600], out[8192];

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "twoprocs", ws, sizeof(ws),
				      "suggest"), 0);
	snprintf(link, sizeof(link), "%s/dcpiclac", ws);
	assert_int_equal(tu_sh("ln -s %s %s", bin, link), 0);
	for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
		const char *want = typos[i].want;

		if (!run_err(ws, out, sizeof(out), typos[i].link ? link : bin, typos[i].args))
			fail_msg("%s: status 0", typos[i].args);
		if (want ? !strstr(out, want) : !!strstr(out, "did you mean"))
			fail_msg("%s: wanted %s in \"%s\"", typos[i].args,
				 want ? want : "no suggestion", out);
	}
	tu_rm_tree(ws);
}

/* A cycles profile of image with samples in its procedure sym. */
static void profile_of(struct prof_profile *p, const char *image, const char *sym)
{
	struct dcpi_err err = { 0 };

	prof_profile_init(p);
	assert_int_equal(prof_image_id_from_file(&p->image, image, &err), 0);
	snprintf(p->event, sizeof(p->event), "cycles");
	p->period = 1000;
	assert_int_equal(prof_profile_add(p, tu_sym_off(image, sym, NULL), 10), 0);
	assert_int_equal(prof_profile_normalize(p), 0);
}

static void test_procedures(void **state)
{
	const char *bin;
	char wl[512], ws[512];
	struct dcpi_err err = { 0 };
	const struct img_proc *proc;
	struct prof_profile p;
	struct image *img;
	size_t which;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "twoprocs", ws, sizeof(ws),
				      "suggest"), 0);
	profile_of(&p, wl, "proc_a");
	assert_int_equal(rep_find_proc(&p, 1, "cycles", "prco_a", 0, &img, &proc, &which, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "did you mean 'proc_a'?"));
	assert_int_equal(rep_find_proc(&p, 1, "cycles", "mian", 0, &img, &proc, &which, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "did you mean 'main'?"));
	assert_int_equal(rep_find_proc(&p, 1, "cycles", "no_such_thing_at_all", 0, &img, &proc,
				       &which, &err), -ENOENT);
	assert_null(strstr(err.msg, "did you mean"));
	assert_int_equal(rep_find_proc(&p, 1, "cycles", "proc_b", 0, &img, &proc, &which, &err),
			 0);
	assert_string_equal(proc->name, "proc_b");
	img_close(img);

	/* --image FILE (rep_find_target) says it too */
	assert_int_equal(rep_find_target(&p, 1, "cycles", "porc_b", wl, &img, &proc,
					 &(const struct prof_profile *){ NULL }, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "did you mean 'proc_b'?"));
	img_close(img);
	prof_profile_free(&p);
	tu_rm_tree(ws);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_distance),
	cmocka_unit_test(test_commands_and_options),
	cmocka_unit_test(test_procedures))
