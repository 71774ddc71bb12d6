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

/* Run cmd (stderr to ws/err.txt); its status, and err.txt in buf. */
static int run_err(const char *ws, char *buf, size_t len, const char *fmt, const char *a,
		   const char *b)
{
	char cmd[2048], path[512];
	int rc;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " > /dev/null 2> %s/err.txt", ws);
	rc = system(cmd);
	snprintf(path, sizeof(path), "%s/err.txt", ws);
	tu_slurp(path, buf, len);
	return rc;
}

static void test_commands_and_options(void **state)
{
	const char *bin;
	char wl[512], ws[512], out[8192];

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "twoprocs", ws, sizeof(ws),
				      "suggest"), 0);
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s clac%s", bin, ""), 0);
	assert_non_null(strstr(out, "did you mean dcpi calc?"));
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s lst%s", bin, ""), 0);
	assert_non_null(strstr(out, "did you mean dcpi list?"));
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s xyzzyplugh%s", bin, ""), 0);
	assert_null(strstr(out, "did you mean"));

	/* a DCPI name mistyped as a link to the binary */
	assert_int_equal(tu_sh("ln -s %s %s/dcpiclac", bin, ws), 0);
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s/dcpiclac%s", ws, ""), 0);
	assert_non_null(strstr(out, "did you mean dcpicalc?"));

	/* options: the command's own long options, shared ones included */
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s calc --jsn x%s", bin, ""), 0);
	assert_non_null(strstr(out, "did you mean --json?"));
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s list --epcoh=1 x%s", bin, ""), 0);
	assert_non_null(strstr(out, "did you mean --epoch?"));
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s prof --evnt cycles%s", bin, ""),
			     0);
	assert_non_null(strstr(out, "did you mean --event?"));
	assert_int_not_equal(run_err(ws, out, sizeof(out), "%s prof --zzzzzzzz%s", bin, ""), 0);
	assert_null(strstr(out, "did you mean"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distance),
		cmocka_unit_test(test_commands_and_options),
		cmocka_unit_test(test_procedures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
