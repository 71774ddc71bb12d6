/*
 * test_dwarf.c - the DWARF reader (image/dwarf.c) against binutils.
 *
 * For every instruction address objdump lists in .text of the dwarftest
 * workload (gcc's DWARF 5, a -gdwarf-4 build and a clang build), the line,
 * file and discriminator must be what `addr2line` prints, and the inline
 * stack what `addr2line -i -f` prints.  Declaration lines are checked against
 * the workload's source, and files without (or with corrupt) debug
 * information must fail cleanly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../image/dwarf.h"
#include "testutil.h"
#include "tu_main.h"

#define MAX_FRAMES 8

static char wl_path[4096];
static char src_path[4096];
static char tmp_dir[256];

/* What addr2line -a -i -f says about one address. */
struct a2l {
	uint64_t addr;
	int nframes;
	char func[MAX_FRAMES][256];
	char file[MAX_FRAMES][1024];
	int line[MAX_FRAMES];		/* 0 when "?" or 0 */
	unsigned discr;			/* of the first location */
};

/* Instruction addresses of .text, from objdump. */
static size_t text_addrs(const char *file, uint64_t **out)
{
	char buf[1024];
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int in_text = 0;
	FILE *p;

	p = tu_popen("objdump -d --no-show-raw-insn '%s'", file);
	while (fgets(buf, sizeof(buf), p)) {
		unsigned long long a;
		char colon;

		if (!strncmp(buf, "Disassembly of section ", 23)) {
			in_text = !strncmp(buf + 23, ".text:", 6);
			continue;
		}
		if (!in_text || sscanf(buf, " %llx%c", &a, &colon) != 2 || colon != ':' ||
		    buf[0] != ' ')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		v[n++] = a;
	}
	assert_int_equal(pclose(p), 0);
	*out = v;
	return n;
}

/* Copy s, which must fit: a truncated name would compare wrong. */
static void copy_str(char *dst, size_t sz, const char *s)
{
	size_t n = strlen(s);

	assert_true(n < sz);
	memcpy(dst, s, n + 1);
}

/* Parse "file:line" or "file:line (discriminator N)". */
static void parse_loc(char *s, char *file, size_t fsz, int *line, unsigned *discr)
{
	char *d = strstr(s, " (discriminator ");
	char *colon;

	*discr = 0;
	if (d) {
		*discr = (unsigned)strtoul(d + 16, NULL, 10);
		*d = '\0';
	}
	colon = strrchr(s, ':');
	assert_non_null(colon);
	*colon = '\0';
	copy_str(file, fsz, s);
	*line = colon[1] == '?' ? 0 : atoi(colon + 1);
}

/* Run addr2line -a -i -f over all addresses in one process. */
static struct a2l *run_addr2line(const char *tool, const char *file, const uint64_t *addrs,
				 size_t n)
{
	char in_path[PROF_PATH_MAX], buf[2048];
	struct a2l *r = calloc(n, sizeof(*r));
	struct a2l *cur = NULL;
	FILE *f, *p;
	size_t i = 0;

	assert_non_null(r);
	snprintf(in_path, sizeof(in_path), "%s/addrs", tmp_dir);
	f = fopen(in_path, "w");
	assert_non_null(f);
	for (size_t k = 0; k < n; k++)
		fprintf(f, "0x%llx\n", (unsigned long long)addrs[k]);
	assert_int_equal(fclose(f), 0);
	p = tu_popen("'%s' -a -i -f -e '%s' < '%s'", tool, file, in_path);
	while (fgets(buf, sizeof(buf), p)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (!strncmp(buf, "0x", 2)) {
			assert_true(i < n);
			cur = &r[i++];
			cur->addr = strtoull(buf, NULL, 16);
			continue;
		}
		assert_non_null(cur);
		assert_true(cur->nframes < MAX_FRAMES);
		copy_str(cur->func[cur->nframes], sizeof(cur->func[0]), buf);
		assert_non_null(fgets(buf, sizeof(buf), p));
		buf[strcspn(buf, "\n")] = '\0';
		{
			unsigned discr;

			parse_loc(buf, cur->file[cur->nframes], sizeof(cur->file[0]),
				  &cur->line[cur->nframes], &discr);
			if (!cur->nframes)
				cur->discr = discr;
		}
		cur->nframes++;
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(i, n);
	return r;
}

struct tally {
	size_t lines, noline, inlined, nested, nosub;
};

/* Compare every .text address of file with tool (addr2line or llvm-addr2line). */
static void compare_file(const char *tool, const char *file, struct tally *t)
{
	struct img_dwarf *d = NULL;
	struct dcpi_err err = { 0 };
	uint64_t *addrs;
	struct a2l *ref;
	size_t n;

	memset(t, 0, sizeof(*t));
	n = text_addrs(file, &addrs);
	assert_true(n > 50);
	ref = run_addr2line(tool, file, addrs, n);
	assert_int_equal(img_dwarf_open(file, &d, &err), 0);
	for (size_t i = 0; i < n; i++) {
		const struct a2l *a = &ref[i];
		const struct img_inline *in;
		struct img_line l;
		size_t ni;
		int rc = img_dwarf_line_at(d, a->addr, &l);

		assert_int_equal(a->addr, addrs[i]);
		if (!a->nframes || a->line[0] == 0 || !strcmp(a->file[0], "??")) {
			if (rc != -ENOENT)
				fail_msg("%#llx: addr2line has no line, we say %s:%u",
					 (unsigned long long)a->addr, l.file, l.line);
			t->noline++;
			continue;
		}
		if (rc != 0 || strcmp(l.file, a->file[0]) || (int)l.line != a->line[0] ||
		    l.discriminator != a->discr)
			fail_msg("%#llx: addr2line %s:%d d%u, we rc %d %s:%u d%u",
				 (unsigned long long)a->addr, a->file[0], a->line[0], a->discr,
				 rc, rc ? "" : l.file, rc ? 0 : l.line,
				 rc ? 0 : l.discriminator);
		t->lines++;

		/* addr2line -i: innermost inlined function first, then callers;
		 * the k-th location after the first is the call site of frame k-1. */
		if (!strcmp(a->func[0], "??"))
			continue;
		rc = img_dwarf_inlines_at(d, a->addr, &in, &ni);
		if (rc == -ENOENT && a->nframes == 1) {
			/* Alignment padding after a subprogram's high_pc: in no
			 * DW_TAG_subprogram, addr2line names it from .symtab. */
			t->nosub++;
			continue;
		}
		if (rc)
			fail_msg("%#llx: inlines_at %d, addr2line says %s",
				 (unsigned long long)a->addr, rc, a->func[0]);
		if ((int)ni != a->nframes - 1)
			fail_msg("%#llx: addr2line shows %d inline levels, we %zu",
				 (unsigned long long)a->addr, a->nframes - 1, ni);
		for (size_t k = 0; k < ni; k++) {
			const struct img_inline *c = &in[ni - 1 - k];

			assert_string_equal(c->name, a->func[k]);
			assert_non_null(c->call_file);
			assert_string_equal(c->call_file, a->file[k + 1]);
			assert_int_equal(c->call_line, a->line[k + 1]);
			assert_true(c->lo <= a->addr && a->addr < c->hi);
		}
		t->inlined += ni > 0;
		t->nested += ni > 1;
	}
	img_dwarf_close(d);
	free(ref);
	free(addrs);
}

static void test_lines_dwarf5(void **state)
{
	struct tally t;

	compare_file("addr2line", wl_path, &t);
	print_message("dwarftest (gcc, default DWARF): %zu addresses with lines, "
		      "%zu without, %zu inlined, %zu nested, %zu in no subprogram\n",
		      t.lines, t.noline, t.inlined, t.nested, t.nosub);
	assert_true(t.lines > 50);
	assert_true(t.noline > 0);	/* crt code outside any CU */
	assert_true(t.inlined > 0);
	assert_true(t.nested > 0);
}

static void build_and_compare(const char *cc, const char *flags, const char *name,
			      const char *tool)
{
	char out[PROF_PATH_MAX], cmd_check[PROF_PATH_MAX + 256];
	struct tally t;

	snprintf(out, sizeof(out), "%s/%s", tmp_dir, name);
	assert_int_equal(tu_sh("%s -std=gnu11 -O2 -g %s -fno-omit-frame-pointer -fno-inline "
			    "-o '%s' '%s' -lm", cc, flags, out, src_path), 0);
	snprintf(cmd_check, sizeof(cmd_check), "readelf --debug-dump=info '%s' | grep -q "
		 "'Version: *%c'", out, strstr(flags, "dwarf-4") ? '4' : '5');
	assert_int_equal(system(cmd_check), 0);
	compare_file(tool, out, &t);
	print_message("%s: %zu addresses with lines, %zu without, %zu inlined, "
		      "%zu nested, %zu in no subprogram\n", name, t.lines, t.noline,
		      t.inlined, t.nested, t.nosub);
	assert_true(t.lines > 50);
	assert_true(t.inlined > 0);
}

static void test_lines_dwarf4(void **state)
{
	build_and_compare("cc", "-gdwarf-4", "dwarftest4", "addr2line");
}

/* The path of LLVM's addr2line in tool ("" when it is not installed). */
static void llvm_addr2line(char *tool, size_t len)
{
	tu_sh_line("command -v llvm-addr2line || ls /usr/lib/llvm-*/bin/llvm-addr2line", tool,
		   len);
}

/* clang's DWARF 5 (DW_FORM_addrx, rnglistx).  binutils 2.40 addr2line
 * misreads clang's rnglistx inline ranges, so the reference here is LLVM's. */
static void test_lines_clang(void **state)
{
	char tool[512] = "";

	llvm_addr2line(tool, sizeof(tool));
	if (!tool[0] || system("command -v clang >/dev/null 2>&1")) {
		print_message("clang or llvm-addr2line not installed\n");
		skip();
	}
	build_and_compare("clang", "-gdwarf-5", "dwarftest-clang", tool);
}

/* The gcc build against LLVM's reader too: a second, independent opinion. */
static void test_lines_llvm(void **state)
{
	char tool[512] = "";
	struct tally t;

	llvm_addr2line(tool, sizeof(tool));
	if (!tool[0]) {
		print_message("llvm-addr2line not installed\n");
		skip();
	}
	compare_file(tool, wl_path, &t);
	assert_true(t.lines > 50 && t.nested > 0);
}

/* Line of "... name(" at the start of a source line, not a prototype. */
static unsigned def_line(const char *name)
{
	char buf[512], pat[128];
	unsigned n = 0;
	FILE *f = fopen(src_path, "r");

	assert_non_null(f);
	snprintf(pat, sizeof(pat), " %s(", name);
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (buf[0] != ' ' && buf[0] != '\t' && buf[0] != '/' && buf[0] != '*' &&
		    strstr(buf, pat) && !strchr(buf, ';')) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("%s: no definition in %s", name, src_path);
	return 0;
}

static void test_decl_line(void **state)
{
	static const char *const funcs[] = { "main", "checksum", "fill", "count_odd" };
	struct img_dwarf *d = NULL;
	struct dcpi_err err = { 0 };
	struct img_line l;

	assert_int_equal(img_dwarf_open(wl_path, &d, &err), 0);
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t a = tu_nm_addr(wl_path, funcs[i], 1);

		/* Entry and a few bytes in: the same procedure. */
		for (uint64_t off = 0; off < 8; off += 4) {
			assert_int_equal(img_dwarf_decl_line(d, a + off, &l), 0);
			assert_int_equal(l.line, def_line(funcs[i]));
			assert_non_null(l.file);
			assert_string_equal(l.file, src_path);
		}
	}
	assert_int_equal(img_dwarf_decl_line(d, 0, &l), -ENOENT);
	img_dwarf_close(d);
}

static void test_outside(void **state)
{
	struct img_dwarf *d = NULL;
	struct dcpi_err err = { 0 };
	const struct img_inline *in;
	struct img_line l;
	size_t n = 99;

	assert_int_equal(img_dwarf_open(wl_path, &d, &err), 0);
	assert_int_equal(img_dwarf_line_at(d, 0, &l), -ENOENT);
	assert_int_equal(img_dwarf_line_at(d, 0x10, &l), -ENOENT);
	assert_int_equal(img_dwarf_line_at(d, UINT64_MAX, &l), -ENOENT);
	assert_int_equal(img_dwarf_line_at(d, tu_nm_addr(wl_path, "_start", 1), &l), -ENOENT);
	assert_int_equal(img_dwarf_inlines_at(d, UINT64_MAX, &in, &n), -ENOENT);
	assert_int_equal(n, 0);
	assert_int_equal(img_dwarf_decl_line(d, tu_nm_addr(wl_path, "_start", 1), &l), -ENOENT);
	img_dwarf_close(d);
}

static void expect_open_fails(const char *path, int code)
{
	struct img_dwarf *d = (struct img_dwarf *)&d;
	struct dcpi_err err = { 0 };
	int rc = img_dwarf_open(path, &d, &err);

	if (rc != code)
		fail_msg("%s: expected %d, got %d (%s)", path, code, rc, err.msg);
	assert_null(d);
	assert_int_equal(err.code, code);
	assert_non_null(strstr(err.msg, path));
}

static void test_no_debug(void **state)
{
	char p[PROF_PATH_MAX];

	snprintf(p, sizeof(p), "%s/stripped", tmp_dir);
	assert_int_equal(tu_sh("strip -g -o '%s' '%s'", p, wl_path), 0);
	expect_open_fails(p, -ENOENT);
	snprintf(p, sizeof(p), "%s/missing", tmp_dir);
	expect_open_fails(p, -ENOENT);
}

static void test_corrupt(void **state)
{
	char p[PROF_PATH_MAX], g[PROF_PATH_MAX];
	FILE *f;

	snprintf(g, sizeof(g), "%s/garbage", tmp_dir);
	f = fopen(g, "w");
	assert_non_null(f);
	for (int i = 0; i < 4096; i++)
		fputc((i * 7919 + 13) & 0xff, f);
	fclose(f);
	expect_open_fails(g, -EINVAL);		/* not an object file */
	snprintf(p, sizeof(p), "%s/bad_info", tmp_dir);
	assert_int_equal(tu_sh("objcopy --update-section .debug_info='%s' '%s' '%s'", g,
			    wl_path, p), 0);
	expect_open_fails(p, -EINVAL);
	snprintf(p, sizeof(p), "%s/bad_line", tmp_dir);
	assert_int_equal(tu_sh("objcopy --update-section .debug_line='%s' '%s' '%s'", g,
			    wl_path, p), 0);
	expect_open_fails(p, -EINVAL);
}

static int setup(void **state)
{
	const char *b = getenv("DCPI_BUILD"), *s = getenv("DCPI_SRC");

	if (!b || !s) {
		fprintf(stderr, "DCPI_BUILD and DCPI_SRC must be set (tests/run.sh)\n");
		return -1;
	}
	snprintf(wl_path, sizeof(wl_path), "%s/workloads/dwarftest", b);
	snprintf(src_path, sizeof(src_path), "%s/tests/workloads/dwarftest.c", s);
	if (access(wl_path, R_OK) || access(src_path, R_OK)) {
		fprintf(stderr, "missing %s or %s\n", wl_path, src_path);
		return -1;
	}
	return tu_ws_setup(state, tmp_dir, sizeof(tmp_dir), "dwarf");
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_lines_dwarf5),
	cmocka_unit_test(test_lines_dwarf4),
	cmocka_unit_test(test_lines_clang),
	cmocka_unit_test(test_lines_llvm),
	cmocka_unit_test(test_decl_line),
	cmocka_unit_test(test_outside),
	cmocka_unit_test(test_no_debug),
	cmocka_unit_test(test_corrupt))
