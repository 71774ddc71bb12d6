/*
 * test_vmlinux.c - kernel samples of a perf.data named from a vmlinux
 * (image/vmlinux.c, import/perf.c): a small "vmlinux" built here (-Ttext at
 * the kernel's link address, --build-id, DWARF) and a perf.data written byte
 * by byte with the kernel's MMAP record (_text moved by a KASLR slide), a
 * BUILD_ID feature naming the kernel, and kernel samples at its procedures.
 * `dcpi import --vmlinux` names them, dcpicalc disassembles and dcpilist
 * shows their lines; another kernel's vmlinux is refused naming both
 * build-ids; the build-id cache is searched; without one, the samples stay in
 * [kernel.kallsyms] by address.  The live path (dcpi record with a vmlinux
 * found for the running kernel) needs a real vmlinux and is not tested here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tu_perf.h"
#include "tu_main.h"

#define LINK_TEXT 0xffffffff81000000ull
#define SLIDE 0x2a00000ull		/* the KASLR slide the perf.data records */
#define MODULE_IP 0xffffffffc0001000ull
#define NOT_ITS_BID "0123456789abcdef0123456789abcdef01234567"

static const char kernel_c[] =
	"volatile unsigned long kv = 3;\n"
	"\n"
	"__attribute__((noinline)) unsigned long kern_sum(unsigned long n)\n"
	"{\n"
	"\tunsigned long s = 0;\n"
	"\n"
	"\tfor (unsigned long i = 0; i < n; i++)\n"
	"\t\ts += i * kv;\t/* kern_hot_line */\n"
	"\treturn s;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) void kern_idle(void)\n"
	"{\n"
	"\tfor (;;)\n"
	"\t\t__asm__ volatile(\"hlt\");\n"
	"}\n"
	"\n"
	"void _start(void)\n"
	"{\n"
	"\tkv = kern_sum(100);\n"
	"\tkern_idle();\n"
	"}\n";

struct kern {
	char ws[256], vmlinux[400], bid[64];
	uint64_t sum_loop[4];	/* kern_sum's loop: four of its instructions */
	uint64_t idle;
};

static struct kern K;

/* An address from nm (not from dcpi's own image code). */
static uint64_t nm_addr(const char *bin, const char *sym)
{
	char cmd[600], line[128];

	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"%s\" { print $1 }'", bin, sym);
	tu_sh_line(cmd, line, sizeof(line));
	return strtoull(line, NULL, 16);
}

static void build_kernel(const char *dir, const char *name, const char *extra, char *out,
			 size_t len, char *bid, size_t blen)
{
	char src[400], cmd[1200];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.c", dir, name);
	f = fopen(src, "w");
	assert_non_null(f);
	fprintf(f, "%s%s", kernel_c, extra);
	assert_int_equal(fclose(f), 0);
	snprintf(out, len, "%s/%s", dir, name);
	assert_int_equal(tu_sh("cc -g -O2 -ffreestanding -fno-pie -no-pie -mcmodel=kernel "
			       "-nostdlib -static -Wl,-Ttext=0x%llx -Wl,--defsym=_text=0x%llx "
			       "-Wl,--build-id -o '%s' '%s'", (unsigned long long)LINK_TEXT,
			       (unsigned long long)LINK_TEXT, out, src), 0);
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | awk '/Build ID/ { print $3 }'", out);
	tu_sh_line(cmd, bid, blen);
	assert_int_equal(strlen(bid), 40);
}

static int group_setup(void **state)
{
	char cmd[600], line[128];

	if (!getenv("DCPI_BIN") || tu_ws_setup(state, K.ws, sizeof(K.ws), "vmlinux"))
		return -1;
	build_kernel(K.ws, "vmlinux", "", K.vmlinux, sizeof(K.vmlinux), K.bid, sizeof(K.bid));
	K.sum_loop[0] = nm_addr(K.vmlinux, "kern_sum");
	K.idle = nm_addr(K.vmlinux, "kern_idle");
	/* the loop: the instructions from the load of kv on */
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s' | "
		 "awk '/<kern_sum>:/ { on = 1; next } on && /kv>/ { print $1; exit }'",
		 K.vmlinux);
	tu_sh_line(cmd, line, sizeof(line));
	K.sum_loop[0] = strtoull(line, NULL, 16);
	assert_true(K.sum_loop[0] > LINK_TEXT);
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%llx '%s' "
		 "| awk '/^ *ffff/ { sub(\":\", \"\", $1); print $1 }' | sed -n 2,4p",
		 (unsigned long long)K.sum_loop[0], K.vmlinux);
	{
		FILE *p = tu_popen("%s", cmd);

		for (int i = 1; i < 4; i++) {
			assert_non_null(fgets(line, sizeof(line), p));
			K.sum_loop[i] = strtoull(line, NULL, 16);
		}
		pclose(p);
	}
	return 0;
}

/* A kernel sample (PERF_SAMPLE_IDENTIFIER | IP | TID) at runtime address ip. */
static void put_ksample(struct tu_pbuf *d, uint64_t ip)
{
	tu_put_hdr(d, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL, 8 + 8 + 8 + 8);
	tu_put64(d, 1);
	tu_put64(d, ip);
	tu_put32(d, 7), tu_put32(d, 7);
}

/* perf's kernel MMAP: pid -1, "[kernel.kallsyms]_text", pgoff the runtime _text. */
static void put_kmmap(struct tu_pbuf *d, uint64_t text)
{
	char name[24] = "[kernel.kallsyms]_text";

	tu_put_hdr(d, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, 8 + 32 + sizeof(name));
	tu_put32(d, UINT32_MAX), tu_put32(d, 0);
	tu_put64(d, text), tu_put64(d, 0x1000000), tu_put64(d, text);
	tu_put(d, name, sizeof(name));
}

/* The BUILD_ID feature (bit 2, the only one): one record for the kernel. */
static void put_kernel_bid(struct tu_pbuf *p, const char *hex)
{
	char name[20] = "[kernel.kallsyms]";
	uint8_t id[24] = { 0 };
	size_t n = strlen(hex) / 2;

	for (size_t i = 0; i < n && i < 20; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	tu_put64(p, p->n + 16);
	tu_put64(p, 36 + sizeof(name));
	tu_put_hdr(p, 0, PERF_RECORD_MISC_KERNEL, 36 + sizeof(name));
	tu_put32(p, UINT32_MAX);
	tu_put(p, id, sizeof(id));
	tu_put(p, name, sizeof(name));
}

/* ws/name: 300 samples in kern_sum's loop, 100 in kern_idle, all slid by
 * SLIDE, and 10 in a module; the kernel's build-id bid. */
static void write_perf(const char *name, const char *bid, char *out, size_t len)
{
	static const uint64_t ids[1] = { 1 };
	static struct tu_pbuf d, p;
	struct perf_event_attr a;
	FILE *f;

	tu_sw_attr(&a, PERF_COUNT_SW_CPU_CLOCK, 50000,
		   PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID);
	d.n = p.n = 0;
	put_kmmap(&d, LINK_TEXT + SLIDE);
	for (int k = 0; k < 300; k++)
		put_ksample(&d, K.sum_loop[k % 4] + SLIDE);
	for (int k = 0; k < 100; k++)
		put_ksample(&d, K.idle + SLIDE);
	for (int k = 0; k < 10; k++)	/* a module's code, in no vmlinux */
		put_ksample(&d, MODULE_IP);
	tu_put_perf_head(&p, &a, ids, 1, d.n, 1ull << 2);
	tu_put(&p, d.b, d.n);
	put_kernel_bid(&p, bid);
	snprintf(out, len, "%s/%s", K.ws, name);
	f = fopen(out, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p.b, 1, p.n, f), p.n);
	assert_int_equal(fclose(f), 0);
}

/* Import data into a fresh database ws/db (no build-id cache of the user's
 * is searched: HOME and the cache are the workspace's). */
static int import(const char *db, const char *data, const char *opts, const char *out)
{
	tu_sh("rm -rf '%s'", db);
	return tu_sh("HOME='%s' '%s' import --no-calibrate --buildid-dir '%s/cache' --db '%s' "
		     "%s '%s' >'%s' 2>&1", K.ws, getenv("DCPI_BIN"), K.ws, db, opts, data, out);
}

static int grep(const char *pat, const char *file)
{
	return tu_sh("grep -q -e '%s' '%s'", pat, file);
}

/* With --vmlinux: dcpiprof names the kernel's procedures from its .symtab,
 * dcpicalc disassembles kern_sum from it, dcpilist shows its source line. */
static void test_vmlinux_names(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char data[400], db[400], out[400], opt[600];

	(void)state;
	write_perf("k.data", K.bid, data, sizeof(data));
	snprintf(db, sizeof(db), "%s/db", K.ws);
	snprintf(out, sizeof(out), "%s/out.txt", K.ws);
	snprintf(opt, sizeof(opt), "--vmlinux '%s'", K.vmlinux);
	assert_int_equal(import(db, data, opt, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("kernel: 400 of 410 samples named from vmlinux", out), 0);
	assert_int_equal(grep("the rest (modules) by address in", out), 0);
	assert_int_equal(grep("_text ran at 0xffffffff83a00000, linked at 0xffffffff81000000",
			      out), 0);
	assert_int_equal(tu_sh("'%s' prof --db '%s' >'%s' 2>&1", dcpi, db, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(tu_sh("grep 'kern_sum' '%s' | grep -q '^ *300 .*/vmlinux$'", out), 0);
	assert_int_equal(tu_sh("grep 'kern_idle' '%s' | grep -q '^ *100 .*/vmlinux$'", out), 0);
	assert_int_equal(tu_sh("grep -q '^ *10 .*kernel.kallsyms' '%s'", out), 0);
	assert_int_equal(tu_sh("'%s' calc --db '%s' kern_sum >'%s' 2>&1", dcpi, db, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("imul", out), 0);
	assert_int_not_equal(grep("cannot be analysed", out), 0);
	assert_int_equal(tu_sh("'%s' list --db '%s' kern_sum >'%s' 2>&1", dcpi, db, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("kern_hot_line", out), 0);
}

/* Another kernel's vmlinux is refused, the message naming both build-ids. */
static void test_vmlinux_mismatch(void **state)
{
	char data[400], db[400], out[400], opt[600];

	(void)state;
	write_perf("other.data", NOT_ITS_BID, data, sizeof(data));
	snprintf(db, sizeof(db), "%s/db", K.ws);
	snprintf(out, sizeof(out), "%s/out.txt", K.ws);
	snprintf(opt, sizeof(opt), "--vmlinux '%s'", K.vmlinux);
	assert_int_not_equal(import(db, data, opt, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep(K.bid, out), 0);
	assert_int_equal(grep(NOT_ITS_BID, out), 0);
	assert_int_equal(grep("refused", out), 0);
}

/* Without --vmlinux: one in perf's build-id cache with the kernel's
 * build-id is found; none there, and the samples stay in [kernel.kallsyms]. */
static void test_vmlinux_search(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char data[400], db[400], out[400];

	(void)state;
	write_perf("k.data", K.bid, data, sizeof(data));
	snprintf(db, sizeof(db), "%s/db", K.ws);
	snprintf(out, sizeof(out), "%s/out.txt", K.ws);
	assert_int_equal(import(db, data, "", out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("kernel: 410 samples by address in \\[kernel.kallsyms\\]", out), 0);
	assert_int_equal(grep(K.bid, out), 0);
	assert_int_equal(tu_sh("'%s' prof --db '%s' >'%s' 2>&1", dcpi, db, out), 0);
	assert_int_equal(grep("kernel.kallsyms", out), 0);
	assert_int_not_equal(grep("kern_sum", out), 0);

	assert_int_equal(tu_sh("mkdir -p '%s/cache/.build-id/%.2s/%s' && cp '%s' "
			       "'%s/cache/.build-id/%.2s/%s/vmlinux'", K.ws, K.bid, K.bid + 2,
			       K.vmlinux, K.ws, K.bid, K.bid + 2), 0);
	assert_int_equal(import(db, data, "", out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("named from vmlinux .*/cache/.build-id/.*(by build-id;", out), 0);
	assert_int_equal(tu_sh("'%s' prof --db '%s' >'%s' 2>&1", dcpi, db, out), 0);
	assert_int_equal(grep("kern_sum", out), 0);
	assert_int_equal(tu_sh("rm -rf '%s/cache'", K.ws), 0);
}

/* A report tool run on ws/db under HOME=ws and DCPI_KALLSYMS=ws/kallsyms. */
static int report(const char *cmd, const char *args, const char *out)
{
	return tu_sh("HOME='%s' DCPI_KALLSYMS='%s/kallsyms' '%s' %s --db '%s/db' %s >'%s' 2>&1",
		     K.ws, K.ws, getenv("DCPI_BIN"), cmd, K.ws, args, out);
}

/* An epoch recorded with its kernel samples by address (as dcpi record keeps
 * them): the reports' --vmlinux names them from it, the slide from _text in
 * kallsyms; without one, kallsyms names them and dcpicalc cannot read them;
 * another kernel's vmlinux is refused. */
static void test_vmlinux_reports(void **state)
{
	char data[400], db[400], out[400], ks[400], other[400], obid[64], arg[600];
	FILE *f;

	(void)state;
	write_perf("k.data", K.bid, data, sizeof(data));
	snprintf(db, sizeof(db), "%s/db", K.ws);
	snprintf(out, sizeof(out), "%s/out.txt", K.ws);
	assert_int_equal(import(db, data, "", out), 0);
	snprintf(ks, sizeof(ks), "%s/kallsyms", K.ws);
	f = fopen(ks, "w");
	assert_non_null(f);
	/* _text local here, so that kallsyms names kern_sum at its address */
	fprintf(f, "%llx t _text\n%llx T kern_sum\n%llx T kern_idle\n%llx t mod_fn [mod]\n",
		(unsigned long long)(LINK_TEXT + SLIDE),
		(unsigned long long)(nm_addr(K.vmlinux, "kern_sum") + SLIDE),
		(unsigned long long)(K.idle + SLIDE), (unsigned long long)MODULE_IP);
	assert_int_equal(fclose(f), 0);

	assert_int_equal(report("prof", "", out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("note: kernel: samples named from /proc/kallsyms (no vmlinux", out),
			 0);
	assert_int_equal(tu_sh("grep -q '^ *300 .*kern_sum *\\[kernel.kallsyms\\]' '%s'", out), 0);
	assert_int_not_equal(report("calc", "kern_sum", out), 0);
	assert_int_equal(grep("cannot be analysed", out), 0);

	snprintf(arg, sizeof(arg), "--vmlinux '%s'", K.vmlinux);
	assert_int_equal(report("prof", arg, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("note: kernel: 400 of 410 samples named from vmlinux", out), 0);
	assert_int_equal(grep("_text at 0xffffffff83a00000 this boot, linked at "
			      "0xffffffff81000000", out), 0);
	assert_int_equal(tu_sh("grep -q '^ *300 .*kern_sum .*/vmlinux$' '%s'", out), 0);
	assert_int_equal(tu_sh("grep -q '^ *10 .*mod_fn \\[mod\\] *\\[kernel.kallsyms\\]' '%s'",
			       out), 0);
	snprintf(arg, sizeof(arg), "--vmlinux '%s' kern_sum", K.vmlinux);
	assert_int_equal(report("calc", arg, out), 0);
	assert_int_equal(grep("imul", out), 0);
	assert_int_equal(report("list", arg, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep("kern_hot_line", out), 0);

	build_kernel(K.ws, "other", "void other_fn(void) { }\n", other, sizeof(other), obid,
		     sizeof(obid));
	snprintf(arg, sizeof(arg), "--vmlinux '%s'", other);
	assert_int_not_equal(report("prof", arg, out), 0);
	tu_sh("cat '%s'", out);
	assert_int_equal(grep(obid, out), 0);
	assert_int_equal(grep(K.bid, out), 0);
	assert_int_equal(grep("refused", out), 0);
}

/* The GNU build-id note among others (the Xen and Linux notes a kernel
 * has), as /sys/kernel/notes holds them; none: -ENOENT. */
static void test_kernel_notes(void **state)
{
	static const uint8_t notes[] = {
		6, 0, 0, 0, 4, 0, 0, 0, 1, 1, 0, 0, 'L', 'i', 'n', 'u', 'x', 0, 0, 0,
		1, 2, 3, 4,
		4, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03,
	};
	char path[400], bid[80];
	struct dcpi_err err = { 0 };
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/notes", K.ws);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(notes, 1, sizeof(notes), f), sizeof(notes));
	assert_int_equal(fclose(f), 0);
	assert_int_equal(img_kernel_build_id(path, bid, sizeof(bid), &err), 0);
	assert_string_equal(bid, "deadbeef00010203");
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(notes, 1, 24, f), 24);	/* the Linux note only */
	assert_int_equal(fclose(f), 0);
	assert_int_equal(img_kernel_build_id(path, bid, sizeof(bid), &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no GNU build-id note"));
}

/* dcpi record keeps the running kernel's build-id with [kernel.kallsyms]:
 * what a report matches a vmlinux against. */
static void test_record_kernel_bid(void **state)
{
	char bid[80], db[400], epoch[64];
	struct prof_profile *p = NULL;
	struct prof_db *d = NULL;
	struct dcpi_err err = { 0 };
	size_t n = 0;
	int found = 0;

	(void)state;
	if (img_kernel_build_id(NULL, bid, sizeof(bid), &err) < 0 || !getenv("DCPI_BUILD")) {
		print_message("no running kernel build-id here (%s): skipping\n", err.msg);
		skip();
	}
	snprintf(db, sizeof(db), "%s/recdb", K.ws);
	if (tu_sh("'%s' record -q --no-paths --db '%s' -- '%s/workloads/sysloop' 1 "
		  ">/dev/null 2>&1", getenv("DCPI_BIN"), db, getenv("DCPI_BUILD"))) {
		print_message("dcpi record cannot sample here: skipping\n");
		skip();
	}
	assert_int_equal(prof_db_open(db, 0, &d, &err), 0);
	assert_int_equal(prof_db_latest_epoch(d, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(prof_epoch_read(d, epoch, &p, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].image.path, "[kernel.kallsyms]")) {
			assert_string_equal(p[i].image.build_id, bid);
			found = 1;
		}
	prof_profiles_free(p, n);
	prof_db_close(d);
	if (!found) {
		print_message("no kernel samples (user-only here): nothing to check\n");
		skip();
	}
}

TU_MAIN(group_setup, tu_ws_teardown,
	cmocka_unit_test(test_vmlinux_names),
	cmocka_unit_test(test_vmlinux_mismatch),
	cmocka_unit_test(test_vmlinux_search),
	cmocka_unit_test(test_vmlinux_reports),
	cmocka_unit_test(test_kernel_notes),
	cmocka_unit_test(test_record_kernel_bid))
