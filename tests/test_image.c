/*
 * test_image.c - the ELF side of image/ against binutils: procedures equal
 * readelf's function symbols, .eh_frame bounds of a stripped copy equal the
 * symbol bounds and objdump's FDE ranges, PT_LOAD translation agrees with
 * readelf -l, PLT stubs sit where objdump -d puts <name@plt>, the build-id is
 * readelf -n's, C++ names demangle as nm -C prints them, debug files are
 * found by .gnu_debuglink (and its CRC checked), and bad files fail with a
 * message naming the file and the reason.
 *
 * The binaries are compiled here from tests/workloads/imgtest.c into a
 * temporary directory: PIE, non-PIE, stripped, -z ibtplt, shared object.
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

#include "testutil.h"

#include "dcpi/image.h"
#include "dcpi/util.h"
#include "tu_main.h"

static char tmp[256];
static char src[1024];
static int have_cxx;

#define CFLAGS_WL "cc -std=gnu11 -O2 -g -fno-omit-frame-pointer -fno-inline"

/* Output of a command, malloc'd. */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *f;
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf = realloc(buf, len + n + 1);
		assert_non_null(buf);
		memcpy(buf + len, chunk, n);
		len += n;
	}
	pclose(f);
	if (!buf)
		buf = calloc(1, 1);
	assert_non_null(buf);
	buf[len] = '\0';
	return buf;
}

static const char *tpath(const char *name)
{
	return tu_in(tmp, name);
}

static int setup(void **state)
{
	const char *s = getenv("DCPI_SRC");

	snprintf(src, sizeof(src), "%s/tests/workloads/imgtest.c", s ? s : ".");
	if (access(src, R_OK) != 0)
		return -1;
	if (tu_ws_setup(state, tmp, sizeof(tmp), "image"))
		return -1;
	if (tu_sh(CFLAGS_WL " -fPIE -pie -o %s %s", tpath("pie"), src) ||
	    tu_sh(CFLAGS_WL " -fno-pie -no-pie -o %s %s", tpath("nopie"), src) ||
	    tu_sh("strip -o %s %s", tpath("stripped"), tpath("pie")) ||
	    tu_sh(CFLAGS_WL " -fPIE -pie -Wl,-z,ibtplt,-z,now -o %s %s", tpath("ibt"), src) ||
	    tu_sh(CFLAGS_WL " -DIMGTEST_LIB -shared -fPIC -o %s %s", tpath("libimg.so"), src) ||
	    tu_sh(CFLAGS_WL " -Wl,--build-id=none -o %s %s", tpath("noid"), src))
		return -1;
	have_cxx = tu_sh("command -v g++ >/dev/null 2>&1") == 0 &&
		   tu_sh("printf '%%s\\n' 'namespace ns { __attribute__((noinline)) int twice(int x)"
		      " { return 2 * x; } struct S { __attribute__((noinline)) long f(long y)"
		      " const { return y + 1; } }; }' 'int main(int c, char **) { ns::S s;"
		      " return ns::twice(c) + (int)s.f(c); }' |"
		      " g++ -O2 -x c++ -o %s -", tpath("cxx")) == 0;
	return 0;
}

static struct image *open_ok(const char *path, unsigned flags)
{
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	int rc = img_open(path, flags, &img, &err);

	if (rc)
		print_error("img_open %s: %s\n", path, err.msg);
	assert_int_equal(rc, 0);
	assert_non_null(img);
	return img;
}

/* Function symbols of .symtab as readelf prints them. */
struct fsym {
	uint64_t addr, size;
	char name[256];
};

static size_t readelf_funcs(const char *path, struct fsym *out, size_t max)
{
	char *text = capture("readelf -sW '%s'", path), *line, *save = NULL;
	int in_symtab = 0;
	size_t n = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char num[32], size[32], type[32], bind[32], vis[32], ndx[32], name[256];
		unsigned long long addr;

		if (strstr(line, "Symbol table")) {
			in_symtab = strstr(line, "'.symtab'") != NULL;
			continue;
		}
		if (!in_symtab || sscanf(line, "%31s %llx %31s %31s %31s %31s %31s %255s", num,
					 &addr, size, type, bind, vis, ndx, name) != 8)
			continue;
		if (strcmp(type, "FUNC") != 0 || strcmp(ndx, "UND") == 0 || n == max)
			continue;
		out[n].addr = addr;
		out[n].size = strtoull(size, NULL, 0);
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		n++;
	}
	free(text);
	return n;
}

static void check_symbols(const char *path)
{
	struct fsym syms[512];
	struct image *img = open_ok(path, IMG_NO_DWARF);
	size_t n = readelf_funcs(path, syms, 512), i, nsym = 0;

	assert_true(n > 5);
	assert_false(img_is_stripped(img));
	for (i = 0; i < n; i++) {
		const struct img_proc *p = img_proc_at(img, syms[i].addr);

		assert_non_null(p);
		assert_int_equal(p->addr, syms[i].addr);
		if (syms[i].size)
			assert_int_equal(p->size, syms[i].size);
		assert_int_equal(p->source, IMG_SRC_SYMTAB);
	}
	/* every symtab procedure is one of readelf's function symbols */
	for (i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);
		size_t j;

		if (i > 0)
			assert_true(img_proc(img, i - 1)->addr + img_proc(img, i - 1)->size <=
				    p->addr);
		assert_true(p->size > 0);
		if (p->source != IMG_SRC_SYMTAB)
			continue;
		nsym++;
		for (j = 0; j < n; j++)
			if (syms[j].addr == p->addr && strcmp(syms[j].name, p->raw_name) == 0)
				break;
		assert_true(j < n);
	}
	assert_true(nsym > 5);
	img_close(img);
}

static void test_symbols_pie(void **state)
{
	struct image *img;
	const struct img_proc *p;

	check_symbols(tpath("pie"));
	img = open_ok(tpath("pie"), IMG_NO_DWARF);
	/* global beats its local alias at the same address; weak ones are kept */
	p = img_proc_by_name(img, "imgtest_twice");
	assert_non_null(p);
	assert_null(img_proc_by_name(img, "imgtest_twice_alias"));
	assert_non_null(img_proc_by_name(img, "imgtest_weak"));
	assert_non_null(img_proc_by_name(img, "imgtest_square"));
	assert_true(img_is_shared(img));
	img_close(img);
}

static void test_symbols_nopie_and_so(void **state)
{
	struct image *img;

	check_symbols(tpath("nopie"));
	check_symbols(tpath("libimg.so"));
	img = open_ok(tpath("nopie"), IMG_NO_DWARF);
	assert_false(img_is_shared(img));
	img_close(img);
	img = open_ok(tpath("libimg.so"), IMG_NO_DWARF);
	assert_true(img_is_shared(img));
	assert_null(img_proc_by_name(img, "main"));
	assert_non_null(img_proc_by_name(img, "imgtest_sum"));
	img_close(img);
}

/* Stripped: bounds come from .dynsym and .eh_frame and equal the symbols. */
static void test_stripped_eh_frame(void **state)
{
	struct fsym syms[512];
	struct image *img = open_ok(tpath("stripped"), IMG_NO_DWARF);
	size_t n = readelf_funcs(tpath("pie"), syms, 512), i, matched = 0;
	char *text, *line, *save = NULL;
	size_t nfde = 0;

	assert_true(img_is_stripped(img));
	for (i = 0; i < n; i++) {
		const struct img_proc *p = img_proc_at(img, syms[i].addr);

		if (!p || syms[i].size == 0 || p->source == IMG_SRC_PLT)
			continue;
		assert_int_equal(p->addr, syms[i].addr);
		assert_int_equal(p->size, syms[i].size);
		assert_int_equal(p->source, IMG_SRC_EH_FRAME);
		matched++;
	}
	/* main and the workload functions all have FDEs */
	assert_true(matched >= 6);
	/* an unnamed procedure is "<basename>+0x<vaddr>" */
	for (i = 0; i < n; i++)
		if (strcmp(syms[i].name, "main") == 0) {
			char want[64];

			snprintf(want, sizeof(want), "stripped+0x%llx",
				 (unsigned long long)syms[i].addr);
			assert_string_equal(img_proc_at(img, syms[i].addr)->name, want);
		}
	/* every FDE objdump sees starts a procedure of our list */
	text = capture("objdump --dwarf=frames '%s'", tpath("stripped"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		const char *pc = strstr(line, " FDE ");
		const struct img_proc *p;

		if (!pc || !(pc = strstr(line, "pc=")) ||
		    sscanf(pc, "pc=%llx..%llx", &lo, &hi) != 2)
			continue;
		p = img_proc_at(img, lo);
		assert_non_null(p);
		assert_int_equal(p->addr, lo);
		assert_true(p->addr + p->size <= hi);
		/* the whole FDE range, unless PLT stubs take part of it (.plt's FDE) */
		if (p->size != hi - lo)
			assert_int_equal(img_proc_at(img, lo + p->size)->source, IMG_SRC_PLT);
		nfde++;
	}
	free(text);
	assert_true(nfde >= 6);
	img_close(img);
}

/* PT_LOAD segments and offset <-> vaddr against readelf -l. */
static void check_segments(const char *path)
{
	char *text = capture("readelf -lW '%s'", path), *line, *save = NULL;
	struct image *img = open_ok(path, IMG_NO_DWARF);
	size_t k = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long off, va, pa, fsz, msz;
		const struct img_segment *s;
		uint64_t v, o;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fsz,
			   &msz) != 5)
			continue;
		s = img_segment(img, k++);
		assert_non_null(s);
		assert_int_equal(s->offset, off);
		assert_int_equal(s->vaddr, va);
		assert_int_equal(s->filesz, fsz);
		assert_int_equal(s->memsz, msz);
		if (fsz == 0)
			continue;
		assert_int_equal(img_offset_to_vaddr(img, off, &v), 0);
		assert_int_equal(v, va);
		assert_int_equal(img_offset_to_vaddr(img, off + fsz - 1, &v), 0);
		assert_int_equal(v, va + fsz - 1);
		assert_int_equal(img_vaddr_to_offset(img, va + fsz / 2, &o), 0);
		assert_int_equal(o, off + fsz / 2);
		if (msz > fsz)	/* .bss has no file bytes */
			assert_int_equal(img_vaddr_to_offset(img, va + fsz, &o), -ENOENT);
	}
	assert_true(k >= 2);
	assert_int_equal(img_nsegments(img), k);
	free(text);
	img_close(img);
}

static void test_segments(void **state)
{
	check_segments(tpath("pie"));
	check_segments(tpath("nopie"));
	check_segments(tpath("libimg.so"));
}

/* The bytes of .text read through img_read are the file's. */
static void test_read_bytes(void **state)
{
	struct image *img = open_ok(tpath("nopie"), IMG_NO_DWARF);
	const struct img_section *text = img_section_by_name(img, ".text");
	const struct img_proc *p = img_proc_by_name(img, "main");
	uint8_t a[32], b[32];
	const uint8_t *q;
	size_t avail;
	FILE *f;

	assert_non_null(text);
	assert_non_null(p);
	assert_int_equal(img_read(img, p->addr, a, sizeof(a)), 0);
	f = fopen(tpath("nopie"), "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)(text->offset + (p->addr - text->addr)), SEEK_SET), 0);
	assert_int_equal(fread(b, 1, sizeof(b), f), sizeof(b));
	fclose(f);
	assert_memory_equal(a, b, sizeof(a));
	q = img_bytes(img, p->addr, &avail);
	assert_non_null(q);
	assert_true(avail >= p->size);
	assert_memory_equal(q, b, sizeof(b));
	assert_int_equal(img_read(img, 0x10, a, 4), -ENOENT);	/* below the image */
	img_close(img);
}

/* name@plt where objdump -d shows <name@plt>. */
static void check_plt(const char *path, int want)
{
	char *text = capture("objdump -d '%s'", path), *line, *save = NULL;
	struct image *img = open_ok(path, IMG_NO_DWARF);
	int found = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long addr;
		char name[256];
		const struct img_proc *p;

		if (sscanf(line, "%llx <%255[^>]>:", &addr, name) != 2 ||
		    strlen(name) < 4 || strcmp(name + strlen(name) - 4, "@plt") != 0)
			continue;
		p = img_proc_at(img, addr);
		assert_non_null(p);
		assert_int_equal(p->addr, addr);
		assert_string_equal(p->name, name);
		assert_int_equal(p->source, IMG_SRC_PLT);
		found++;
	}
	assert_true(found >= want);
	assert_non_null(img_proc_by_name(img, "strtol@plt"));
	free(text);
	img_close(img);
}

static void test_plt(void **state)
{
	check_plt(tpath("pie"), 3);
	check_plt(tpath("nopie"), 3);
	check_plt(tpath("ibt"), 3);	/* .plt.sec, -z now */
	check_plt(tpath("libimg.so"), 1);
	check_plt(tpath("stripped"), 3);
}

static void test_build_id(void **state)
{
	char *text = capture("readelf -n '%s'", tpath("pie"));
	const char *id = strstr(text, "Build ID: ");
	char want[256];
	struct image *img;

	assert_non_null(id);
	assert_int_equal(sscanf(id, "Build ID: %255s", want), 1);
	img = open_ok(tpath("pie"), IMG_NO_DWARF);
	assert_string_equal(img_build_id(img), want);
	img_close(img);
	img = open_ok(tpath("stripped"), IMG_NO_DWARF);
	assert_string_equal(img_build_id(img), want);
	img_close(img);
	img = open_ok(tpath("noid"), IMG_NO_DWARF);
	assert_string_equal(img_build_id(img), "");
	img_close(img);
	free(text);
}

static void test_demangle(void **state)
{
	char *d = img_demangle("_ZN2ns5twiceEi");
	char *text, *line, *save = NULL;
	struct image *img;
	int checked = 0;

	assert_non_null(d);
	assert_string_equal(d, "ns::twice(int)");
	free(d);
	d = img_demangle("_ZNK2ns1S1fEl.cold");
	assert_non_null(d);
	assert_string_equal(d, "ns::S::f(long) const [clone .cold]");
	free(d);
	assert_null(img_demangle("main"));
	assert_null(img_demangle("_Zgarbage"));
	if (!have_cxx)
		return;
	/* every C++ procedure's name is what nm -C prints at its address */
	img = open_ok(tpath("cxx"), IMG_NO_DWARF);
	text = capture("nm -C '%s'", tpath("cxx"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long addr;
		char type;
		int off = 0;
		const struct img_proc *p;

		if (sscanf(line, "%llx %c %n", &addr, &type, &off) != 2 || !off ||
		    !strstr(line, "ns::"))
			continue;
		p = img_proc_at(img, addr);
		assert_non_null(p);
		assert_string_equal(p->name, line + off);
		assert_memory_equal(p->raw_name, "_ZN", 3);
		checked++;
	}
	assert_true(checked >= 2);
	assert_non_null(img_proc_by_name(img, "ns::twice(int)"));
	free(text);
	img_close(img);
}

static void expect_error(const char *path, int code, const char *why)
{
	struct dcpi_err err = { 0 };
	struct image *img = (struct image *)&err;
	int rc = img_open(path, 0, &img, &err);

	assert_int_equal(rc, code);
	assert_int_equal(err.code, code);
	assert_null(img);
	if (!strstr(err.msg, path) || !strstr(err.msg, why))
		print_error("message \"%s\" lacks \"%s\"\n", err.msg, why);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, why));
}

/* Copy the first len bytes of from (all if 0), then patch byte at off. */
static void copy_patch(const char *from, const char *to, long len, long off, int byte)
{
	if (len)
		assert_int_equal(tu_sh("head -c %ld '%s' > '%s'", len, from, to), 0);
	else
		assert_int_equal(tu_sh("cp '%s' '%s'", from, to), 0);
	if (off >= 0)
		assert_int_equal(tu_sh("printf '\\%03o' | dd of='%s' bs=1 seek=%ld conv=notrunc"
				    " 2>/dev/null", byte, to, off), 0);
}

static void test_errors(void **state)
{
	const char *txt = tpath("notelf.txt");
	FILE *f = fopen(txt, "w");
	long size;

	assert_non_null(f);
	fputs("just some text, long enough to be more than an ELF header ....\n"
	      "..............................................................\n", f);
	fclose(f);
	expect_error(tpath("does-not-exist"), -ENOENT, "No such file");
	expect_error(txt, -EINVAL, "not an ELF file");
	f = fopen(tpath("pie"), "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	copy_patch(tpath("pie"), tpath("trunc"), size / 2, -1, 0);
	expect_error(tpath("trunc"), -EINVAL, "truncated");
	copy_patch(tpath("pie"), tpath("trunc40"), 40, -1, 0);
	expect_error(tpath("trunc40"), -EINVAL, "truncated ELF (ELF header)");
	copy_patch(tpath("pie"), tpath("elf32"), 0, 4, 1);	/* EI_CLASS = ELFCLASS32 */
	expect_error(tpath("elf32"), -EINVAL, "not a 64-bit ELF");
	copy_patch(tpath("pie"), tpath("arm"), 0, 18, 183);	/* e_machine = EM_AARCH64 */
	expect_error(tpath("arm"), -EINVAL, "not an x86-64");
	expect_error(tmp, -EINVAL, "not a regular file");
}

static void test_proc_at(void **state)
{
	struct image *img = open_ok(tpath("pie"), IMG_NO_DWARF);
	const struct img_proc *m = img_proc_by_name(img, "main");
	const struct img_proc *first = img_proc(img, 0);
	const struct img_proc *last = img_proc(img, img_nprocs(img) - 1);
	const struct img_proc *p;

	assert_non_null(m);
	assert_ptr_equal(img_proc_at(img, m->addr), m);
	assert_ptr_equal(img_proc_at(img, m->addr + m->size - 1), m);
	p = img_proc_at(img, m->addr + m->size);
	assert_true(p != m);
	assert_null(img_proc_at(img, first->addr - 1));
	assert_null(img_proc_at(img, 0));
	assert_null(img_proc_at(img, last->addr + last->size));
	assert_null(img_proc_at(img, UINT64_MAX));
	assert_null(img_proc(img, img_nprocs(img)));
	img_close(img);
}

/* img_open_mem sees what img_open sees. */
static void test_open_mem(void **state)
{
	struct dcpi_err err = { 0 };
	struct image *a = open_ok(tpath("pie"), IMG_NO_DWARF), *b = NULL;
	FILE *f = fopen(tpath("pie"), "rb");
	char *buf;
	long size;
	size_t i;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, size, f), (size_t)size);
	fclose(f);
	assert_int_equal(img_open_mem(buf, size, "pie", IMG_NO_DWARF, &b, &err), 0);
	assert_int_equal(img_nprocs(a), img_nprocs(b));
	for (i = 0; i < img_nprocs(a); i++) {
		assert_int_equal(img_proc(a, i)->addr, img_proc(b, i)->addr);
		assert_string_equal(img_proc(a, i)->name, img_proc(b, i)->name);
	}
	assert_string_equal(img_build_id(a), img_build_id(b));
	assert_int_equal(img_nsections(a), img_nsections(b));
	img_close(b);
	assert_int_equal(img_open_mem(buf, 10, "short", 0, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "short: not an ELF file"));
	img_close(a);
	free(buf);
}

/* A separate debug file through .gnu_debuglink, with its CRC checked. */
/*
 * A stripped image names its local functions from its separate debug file
 * (found by .gnu_debuglink) and from MiniDebugInfo (.gnu_debugdata, an xz'd
 * ELF with the .symtab .dynsym lacks), as perf and gdb do; IMG_NO_DEBUG_SYMS
 * turns both off.
 */
static void test_debug_symbols(void **state)
{
	const struct img_proc *p;
	struct dcpi_err err = { 0 };
	struct image *img;

	(void)state;
	/* stripped, with a debuglink to its debug file */
	assert_int_equal(tu_sh("cd '%s' && objcopy --only-keep-debug pie pie2.debug &&"
			    " strip --strip-all -o pie.sl pie &&"
			    " objcopy --add-gnu-debuglink=pie2.debug pie.sl", tmp), 0);
	img = open_ok(tpath("pie.sl"), IMG_NO_DWARF);
	assert_int_equal(img_proc_find(img, "imgtest_square", &p, &err), 0);	/* local */
	img_close(img);
	img = open_ok(tpath("pie.sl"), IMG_NO_DWARF | IMG_NO_DEBUG_SYMS);
	assert_true(img_proc_find(img, "imgtest_square", &p, &err) < 0);
	img_close(img);
	/* MiniDebugInfo, made the way Fedora's find-debuginfo does */
	if (tu_sh("command -v xz >/dev/null 2>&1")) {
		print_message("no xz: MiniDebugInfo not tried\n");
		return;
	}
	assert_int_equal(tu_sh("cd '%s' && nm -D pie --format=posix --defined-only |"
			    " awk '{print $1}' | sort > dyn && nm pie --format=posix --defined-only |"
			    " awk '$2 == \"T\" || $2 == \"t\" {print $1}' | sort > funcs &&"
			    " comm -13 dyn funcs > keep && objcopy --only-keep-debug pie mini &&"
			    " objcopy -S --remove-section .comment --keep-symbols=keep mini mini2 &&"
			    " xz -f mini2 && strip --strip-all -o pie.mdi pie &&"
			    " objcopy --add-section .gnu_debugdata=mini2.xz pie.mdi", tmp), 0);
	img = open_ok(tpath("pie.mdi"), IMG_NO_DWARF);
	assert_non_null(img_section_by_name(img, ".gnu_debugdata"));
	assert_int_equal(img_proc_find(img, "imgtest_square", &p, &err), 0);
	img_close(img);
	img = open_ok(tpath("pie.mdi"), IMG_NO_DWARF | IMG_NO_DEBUG_SYMS);
	assert_true(img_proc_find(img, "imgtest_square", &p, &err) < 0);
	img_close(img);
	/* garbage in .gnu_debugdata: no names from it, the image still opens */
	assert_int_equal(tu_sh("cd '%s' && head -c 100 /dev/urandom > junk && strip --strip-all"
			    " -o pie.junk pie && objcopy --add-section .gnu_debugdata=junk pie.junk",
			    tmp), 0);
	img = open_ok(tpath("pie.junk"), IMG_NO_DWARF);
	assert_true(img_proc_find(img, "imgtest_square", &p, &err) < 0);
	img_close(img);
}

static void test_debuglink(void **state)
{
	struct image *img;
	const char *dbg;

	assert_int_equal(tu_sh("cd '%s' && objcopy --only-keep-debug pie pie.debug &&"
			    " objcopy --strip-debug --add-gnu-debuglink=pie.debug pie pie.dl &&"
			    " cp pie.dl pie.badcrc && mkdir -p bad && cp pie.debug bad/pie.debug",
			    tmp), 0);
	img = open_ok(tpath("pie"), 0);
	assert_true(img_has_dwarf(img));
	assert_null(img_debug_path(img));	/* its own */
	img_close(img);
	img = open_ok(tpath("pie"), IMG_NO_DWARF);
	assert_false(img_has_dwarf(img));
	img_close(img);
	img = open_ok(tpath("pie.dl"), 0);
	assert_null(img_section_by_name(img, ".debug_info"));
	assert_true(img_has_dwarf(img));
	dbg = img_debug_path(img);
	assert_non_null(dbg);
	assert_string_equal(dbg, tpath("pie.debug"));
	img_close(img);
	/* a debug file whose CRC does not match is not used */
	assert_int_equal(tu_sh("cd '%s' && echo x >> pie.debug && mkdir -p sub &&"
			    " cp pie.dl sub/pie.dl && cp pie.debug sub/pie.debug", tmp), 0);
	img = open_ok(tpath("sub/pie.dl"), 0);
	assert_false(img_has_dwarf(img));
	assert_null(img_debug_path(img));
	img_close(img);
	/* ... and one in .debug/ beside the image is found */
	assert_int_equal(tu_sh("cd '%s' && mkdir -p sub/.debug && cp bad/pie.debug sub/.debug/",
			    tmp), 0);
	img = open_ok(tpath("sub/pie.dl"), 0);
	assert_true(img_has_dwarf(img));
	assert_string_equal(img_debug_path(img), tpath("sub/.debug/pie.debug"));
	img_close(img);
}

/*
 * Aliases that tie on every rule of perf's choose_best_symbol (sized, global,
 * as many leading underscores, names of one length) are settled as perf
 * settles them: the one read first from the symbol table.  libc's debug
 * file has such pairs (pthread_create@GLIBC_2.2.5 before
 * pthread_create@@GLIBC_2.34): every one found must be named by its first.
 */
static void test_alias_order(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct dcpi_err err = { 0 };
	struct image *img;
	char line[1024], prev_name[512] = "";
	unsigned long long prev_addr = 0, prev_size = 0;
	int checked = 0;
	FILE *f;

	(void)state;
	if (img_open(libc, 0, &img, &err) || !img_debug_path(img)) {
		print_message("no libc debug file (libc6-dbg): skipped\n");
		if (!err.code)
			img_close(img);
		skip();
	}
	/* GLOBAL sized FUNC symbols sorted by address, ties kept in table order */
	f = tu_popen("readelf -sW '%s' | awk '$4 == \"FUNC\" && $5 == \"GLOBAL\" "
		     "&& $3 > 0 {print $2, $3, $8}' | sort -s -k1,1", img_debug_path(img));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr, size;
		char name[512];

		if (sscanf(line, "%llx %llu %511s", &addr, &size, name) != 3)
			continue;
		if (addr == prev_addr && size == prev_size && strlen(name) == strlen(prev_name) &&
		    strspn(name, "_") == strspn(prev_name, "_")) {
			const struct img_proc *p = img_proc_at(img, addr);

			assert_non_null(p);
			/* the first of the tie, unless a longer alias beats both */
			if (strlen(p->raw_name) == strlen(prev_name)) {
				if (strcmp(p->raw_name, prev_name))
					fail_msg("0x%llx: %s, perf's choice %s", addr, p->raw_name,
						 prev_name);
				checked++;
			}
			continue;	/* prev stays the first of the tie */
		}
		prev_addr = addr;
		prev_size = size;
		snprintf(prev_name, sizeof(prev_name), "%s", name);
	}
	pclose(f);
	print_message("%d ties of equal-length aliases in libc, each named as perf does\n",
		      checked);
	assert_true(checked >= 1);
	img_close(img);
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_symbols_pie),
	cmocka_unit_test(test_symbols_nopie_and_so),
	cmocka_unit_test(test_stripped_eh_frame),
	cmocka_unit_test(test_segments),
	cmocka_unit_test(test_read_bytes),
	cmocka_unit_test(test_plt),
	cmocka_unit_test(test_build_id),
	cmocka_unit_test(test_demangle),
	cmocka_unit_test(test_errors),
	cmocka_unit_test(test_proc_at),
	cmocka_unit_test(test_open_mem),
	cmocka_unit_test(test_debuglink),
	cmocka_unit_test(test_debug_symbols),
	cmocka_unit_test(test_alias_order))
