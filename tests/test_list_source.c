/*
 * test_list_source.c - dcpilist shows each line's source text, as perf
 * annotate does (report/list.c): from the file DWARF names, else under
 * --source-dir DIR (the path less its leading folders), and says when the
 * file is nowhere.  And a bare address, which is in nearly every image,
 * picks the profiled image with samples in the procedure there, or names
 * the candidates (report/find.c).
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

static const char hot_c[] =
	"#include <stdlib.h>\n"
	"\n"
	"__attribute__((noinline)) unsigned long hot(unsigned long n)\n"
	"{\n"
	"\tunsigned long x = 1;\n"
	"\n"
	"\tfor (unsigned long i = 0; i < n; i++)\n"
	"\t\tx = x * 2862933555777941757UL + i; /* the_hot_line */\n"
	"\treturn x;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\treturn (int)hot(argc > 1 ? strtoul(argv[1], NULL, 0) : 1000);\n"
	"}\n";

/* ws/src/hot.c compiled (DWARF 4, so any valgrind reads it too) into ws/prog. */
static void build_prog(const char *ws)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/src", ws);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/src/hot.c", ws);
	tu_write_text(path, hot_c);
	assert_int_equal(tu_sh("cd %s/src && cc -g -gdwarf-4 -O1 -o ../prog hot.c", ws), 0);
}

static void test_source_lines(void **state)
{
	const char *bin;
	char wl[512], ws[512], prog[600], db[600], cmd[4096], out[65536], path[700];
	struct prof_db *d;
	char epoch[64];
	uint64_t size, off;
	struct tu_at at[4];

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "twoprocs", ws, sizeof(ws),
				      "listsrc"), 0);
	build_prog(ws);
	snprintf(prog, sizeof(prog), "%s/prog", ws);
	snprintf(db, sizeof(db), "%s/db", ws);
	off = tu_sym_off(prog, "hot", &size);
	for (int i = 0; i < 4; i++)
		at[i] = (struct tu_at){ off + (uint64_t)i * size / 4, 100 };
	tu_cycles_db(db, prog, at, 4, &d, epoch, sizeof(epoch));
	prof_db_close(d);

	/* where DWARF says */
	snprintf(cmd, sizeof(cmd), "%s list --db %s --no-measure hot > %s/out.txt 2>&1", bin, db,
		 ws);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/out.txt", ws);
	tu_slurp(path, out, sizeof(out));
	assert_non_null(strstr(out, "hot.c:8  x = x * 2862933555777941757UL + i; "
				    "/* the_hot_line */"));
	assert_non_null(strstr(out, "for (unsigned long i = 0; i < n; i++)"));

	/* moved away: said once, found again with --source-dir */
	assert_int_equal(tu_sh("mkdir %s/elsewhere && mv %s/src %s/elsewhere/", ws, ws, ws), 0);
	assert_int_equal(system(cmd), 0);
	tu_slurp(path, out, sizeof(out));
	assert_null(strstr(out, "the_hot_line"));
	assert_non_null(strstr(out, "src/hot.c not found; --source-dir"));
	assert_null(strstr(strstr(out, "not found") + 1, "not found"));
	snprintf(cmd, sizeof(cmd), "%s list --db %s --no-measure --source-dir %s/nothing "
		 "--source-dir %s/elsewhere hot > %s/out.txt 2>&1", bin, db, ws, ws, ws);
	assert_int_equal(system(cmd), 0);
	tu_slurp(path, out, sizeof(out));
	assert_non_null(strstr(out, "hot.c:8  x = x * 2862933555777941757UL + i;"));
	assert_null(strstr(out, "not found"));

	/* --json carries the text */
	snprintf(cmd, sizeof(cmd), "%s list --db %s --no-measure --source-dir %s/elsewhere hot "
		 "--json > %s/out.txt 2>&1", bin, db, ws, ws);
	assert_int_equal(system(cmd), 0);
	tu_slurp(path, out, sizeof(out));
	assert_non_null(strstr(out, "\"text\": \"\\u0009\\u0009x = x * "
				    "2862933555777941757UL + i;"));
	tu_rm_tree(ws);
}

/* A cycles profile of image, count samples at offset off. */
static void profile_at(struct prof_profile *p, const char *image, uint64_t off, uint64_t count)
{
	struct dcpi_err err = { 0 };

	prof_profile_init(p);
	assert_int_equal(prof_image_id_from_file(&p->image, image, &err), 0);
	snprintf(p->event, sizeof(p->event), "cycles");
	p->period = 1000;
	assert_int_equal(prof_profile_add(p, off, count), 0);
	assert_int_equal(prof_profile_normalize(p), 0);
}

/* The dynamic loader twoprocs runs under, from its PT_INTERP. */
static int interp_of(const char *prog, char *out, size_t len)
{
	char cmd[700];
	FILE *f;
	int ok;

	snprintf(cmd, sizeof(cmd), "readelf -p .interp '%s' 2>/dev/null | "
		 "sed -n 's/^ *\\[ *[0-9]*\\] *//p'", prog);
	f = popen(cmd, "r");
	assert_non_null(f);
	ok = fgets(out, (int)len, f) != NULL;
	pclose(f);
	out[strcspn(out, "\n")] = '\0';
	return ok && out[0] == '/' ? 0 : -1;
}

static void test_bare_address(void **state)
{
	const char *bin;
	char wl[512], ws[512], ldso[512], spec[64];
	struct dcpi_err err = { 0 };
	const struct img_proc *proc, *other;
	struct prof_profile p[2];
	struct image *img, *ld;
	uint64_t a, size, off;
	size_t which;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "twoprocs", ws, sizeof(ws),
				      "listaddr"), 0);
	if (interp_of(wl, ldso, sizeof(ldso)) < 0 || img_open(ldso, 0, &ld, &err) < 0) {
		tu_rm_tree(ws);
		skip();
	}
	a = tu_nm_addr(wl, "proc_a", 0);
	other = img_proc_at(ld, a);
	if (!other) {		/* the loader has no procedure there: nothing to choose */
		img_close(ld);
		tu_rm_tree(ws);
		skip();
	}
	snprintf(spec, sizeof(spec), "0x%llx", (unsigned long long)a);
	off = tu_sym_off(wl, "proc_a", &size);

	/* the loader first, sampled elsewhere; the program sampled at the address */
	assert_int_equal(img_vaddr_to_offset(ld, img_proc(ld, img_nprocs(ld) - 1)->addr, &size),
			 0);
	profile_at(&p[0], ldso, size, 5);
	profile_at(&p[1], wl, off, 50);
	assert_int_equal(rep_find_proc(p, 2, "cycles", spec, 0, &img, &proc, &which, &err), 0);
	assert_int_equal(which, 1);
	assert_string_equal(proc->name, "proc_a");
	img_close(img);
	prof_profile_free(&p[0]);

	/* both sampled there: the candidates are named with their samples */
	assert_int_equal(img_vaddr_to_offset(ld, other->addr, &size), 0);
	profile_at(&p[0], ldso, size, 7);
	assert_int_equal(rep_find_proc(p, 2, "cycles", spec, 0, &img, &proc, &which, &err),
			 -EEXIST);
	assert_null(img);
	assert_non_null(strstr(err.msg, ldso));
	assert_non_null(strstr(err.msg, "proc_a, 50 samples"));
	assert_non_null(strstr(err.msg, "7 samples"));
	prof_profile_free(&p[0]);
	prof_profile_free(&p[1]);
	img_close(ld);
	tu_rm_tree(ws);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_source_lines),
	cmocka_unit_test(test_bare_address))
