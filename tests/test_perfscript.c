/*
 * test_perfscript.c - perf script's branch-stack text (import/perfscript.c,
 * docs/import.md "perf script text") into the same branch-record counts as
 * a perf.data's (import/lbr.c).  A three-instruction loop is assembled here,
 * and perf script lines naming its addresses are written byte by byte, so
 * the counts are known: two stacks of four `jnz` entries give six ranges
 * (top, jnz) and eight taken branches (jnz, top); with no period in the
 * text the counts are relative (period 0).
 *
 * With DCPI_PEER_DATA=DIR holding google/autofdo's testdata
 * propeller_sample_1.perfdata1 and propeller_sample_1.bin (a real LBR
 * recording; docs/import.md says where they come from), the perf script
 * text of that file and the file itself give the same counts, and
 * llvm-profgen-19's ranges (--skip-symbolization) are the same.
 * Without them that test is skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "dcpi/import.h"
#include "tu_main.h"

static char tmpdir[256], bin[600], dcpi[600];
static uint64_t va_top, va_br, off_top, off_br;

static const char loop_s[] =
	"\t.text\n"
	"\t.globl main, ps_top, ps_br\n"
	"\t.type main, @function\n"
	"main:\n"
	"\tmov $3, %ecx\n"
	"ps_top:\n"
	"\tdec %ecx\n"
	"ps_br:\n"
	"\tjnz ps_top\n"
	"\txor %eax, %eax\n"
	"\tret\n"
	"\t.size main, .-main\n"
	"\t.section .note.GNU-stack,\"\",@progbits\n";

static int setup(void **state)
{
	const char *d = getenv("DCPI_BIN");
	char src[700];
	FILE *f;

	(void)state;
	if (tu_workspace(tmpdir, sizeof(tmpdir), "perfscript"))
		return -1;
	snprintf(src, sizeof(src), "%s/loop.s", tmpdir);
	f = fopen(src, "w");
	if (!f || fputs(loop_s, f) < 0 || fclose(f))
		return -1;
	snprintf(bin, sizeof(bin), "%s/psloop", tmpdir);
	if (tu_sh("cc -no-pie -o '%s' '%s'", bin, src))
		return -1;
	snprintf(dcpi, sizeof(dcpi), "%s", d ? d : "build/dcpi");
	return access(dcpi, X_OK) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return tu_sh("rm -rf '%s'", tmpdir) ? -1 : 0;
}

static void addresses(void)
{
	va_top = tu_nm_addr(bin, "ps_top", 0);
	va_br = tu_nm_addr(bin, "ps_br", 0);
	off_top = tu_sym_off(bin, "ps_top", NULL);
	off_br = tu_sym_off(bin, "ps_br", NULL);
	assert_int_equal(va_br - va_top, 2);
}

/* One brstack line of four jnz entries at base (the third mispredicted). */
static int stack_line(char *out, size_t len, const char *lead, uint64_t br, uint64_t top)
{
	return snprintf(out, len, "%s 0x%" PRIx64 "/0x%" PRIx64 "/P/-/-/3/  0x%" PRIx64 "/0x%"
			PRIx64 "/P/-/-/3/  0x%" PRIx64 "/0x%" PRIx64 "/M/-/-/3/  0x%" PRIx64
			"/0x%" PRIx64 "/P/-/-/3/\n", lead, br, top, br, top, br, top, br, top);
}

/* The counts file of the one epoch of db has exactly these r and b lines. */
static void check_counts(const char *db)
{
	assert_int_equal(tu_sh("test $(grep -c '^[rb] ' '%s'/*/*.lbr-counts) -eq 2", db), 0);
	assert_int_equal(tu_sh("grep -q '^r %" PRIx64 " %" PRIx64 " 6$' '%s'/*/*.lbr-counts",
			       off_top, off_br, db), 0);
	assert_int_equal(tu_sh("grep -q '^b %" PRIx64 " %" PRIx64 " 8$' '%s'/*/*.lbr-counts",
			       off_br, off_top, db), 0);
	assert_int_equal(tu_sh("grep -q '^stacks 2 entries 8 slots 6 period 0 taken 0 ' "
			       "'%s'/*/*.lbr-counts", db), 0);
}

/*
 * Mapped where a PIE would be (an MMAP2 line), the lines perf script and
 * llvm-profgen's inputs hold: an event name, a leading ip, an address
 * alone (a sample with no stack), a callchain before a stack with no ip,
 * a comment and a record type not used.
 */
static void test_mmap_lines(void **state)
{
	char text[4096], line[1024], path[700], db[700], out[700];
	uint64_t base = 0x7f0000000000ull, pg, br, top;
	size_t n = 0;

	(void)state;
	addresses();
	pg = off_top & ~0xfffull;
	br = base + off_br - pg;
	top = base + off_top - pg;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "# perf script -F ip,brstack\n"
			      "PERF_RECORD_COMM exec: psloop:77/77\n"
			      "PERF_RECORD_MMAP2 77/77: [0x%" PRIx64 "(0x1000) @ 0x%" PRIx64
			      " fd:01 123 0]: r-xp %s\n", base, pg, bin);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "     %" PRIx64 "\n", top);
	snprintf(path, sizeof(path), "  br_inst_retired.near_taken:upp:  %" PRIx64, top);
	stack_line(line, sizeof(line), path, br, top);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", line);
	assert_true(n < sizeof(text));
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\t%" PRIx64 "\n\t%" PRIx64 "\n", top,
			      br + 2);
	stack_line(line, sizeof(line), " ", br, top);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\n", line);
	assert_true(n < sizeof(text));
	snprintf(path, sizeof(path), "%s/a.perfscript", tmpdir);
	tu_write_text(path, text);
	snprintf(db, sizeof(db), "%s/dba", tmpdir);
	snprintf(out, sizeof(out), "%s/a.out", tmpdir);
	assert_int_equal(tu_sh("'%s' import --db '%s' '%s' >'%s' 2>&1", dcpi, db, path, out), 0);
	assert_int_equal(tu_sh("grep -q '3 samples (0 in no image' '%s'", out), 0);
	assert_int_equal(tu_sh("grep -q '2 branch stacks: .* 6 of 6 straight-line ranges "
			       "decoded' '%s'", out), 0);
	assert_int_equal(tu_sh("grep -q '(br_inst_retired.near_taken every 0; not taken "
			       "branches: counts relative)' '%s'", out), 0);
	check_counts(db);
}

/* No mappings: --binary where it was linked; the same counts. */
static void test_binary_linked(void **state)
{
	char text[4096], path[700], db[700];

	(void)state;
	addresses();
	assert_true(stack_line(text, sizeof(text) / 2, " ", va_br, va_top) > 0);
	stack_line(text + strlen(text), sizeof(text) / 2, " ", va_br, va_top);
	snprintf(path, sizeof(path), "%s/b.perfscript", tmpdir);
	tu_write_text(path, text);
	snprintf(db, sizeof(db), "%s/dbb", tmpdir);
	assert_int_equal(tu_sh("'%s' import -q --db '%s' --binary '%s' '%s'", dcpi, db, bin,
			       path), 0);
	check_counts(db);
	/* and without the binary: samples in no image, nothing decoded */
	snprintf(db, sizeof(db), "%s/dbb0", tmpdir);
	assert_int_equal(tu_sh("'%s' import --db '%s' '%s' 2>&1 | grep -q '2 samples (2 in no "
			       "image'", dcpi, db, path), 0);
}

/* A line that is not perf script's: an error naming the file and line,
 * and no epoch. */
static void test_bad_line(void **state)
{
	char path[700], db[700], out[700];

	(void)state;
	snprintf(path, sizeof(path), "%s/c.perfscript", tmpdir);
	tu_write_text(path, " 401000 0x401002/0x401000/P/-/-/1/\n"
		      " 401000 0x401002/0x401000/P/-/-/1/ garbage\n");
	snprintf(db, sizeof(db), "%s/dbc", tmpdir);
	snprintf(out, sizeof(out), "%s/c.out", tmpdir);
	assert_int_not_equal(tu_sh("'%s' import --db '%s' '%s' >'%s' 2>&1", dcpi, db, path,
				   out), 0);
	assert_int_equal(tu_sh("grep -q 'c.perfscript:2: neither an address nor a FROM/TO' "
			       "'%s'", out), 0);
	assert_int_equal(tu_sh("! ls -d '%s'/0* >/dev/null 2>&1", db), 0);
	/* a mapping line cut short */
	tu_write_text(path, "PERF_RECORD_MMAP2 1/1: [0x400000(0x1000) @ 0 fd:01 1 0]\n");
	assert_int_not_equal(tu_sh("'%s' import --db '%s' '%s' >'%s' 2>&1", dcpi, db, path,
				   out), 0);
	assert_int_equal(tu_sh("grep -q 'c.perfscript:1: not a PERF_RECORD_MMAP line' '%s'", out),
			 0);
}

/* google/autofdo's propeller_sample_1 (docs/import.md): text and perf.data
 * agree exactly, and so do llvm-profgen's ranges. */
static void test_peer_recording(void **state)
{
	const char *dir = getenv("DCPI_PEER_DATA");
	char w[700];

	(void)state;
	if (!dir || !*dir || tu_sh("test -s '%s/propeller_sample_1.perfdata1' && "
				   "test -s '%s/propeller_sample_1.bin'", dir, dir) ||
	    tu_sh("command -v perf >/dev/null"))
		skip();
	snprintf(w, sizeof(w), "%s/peer", tmpdir);
	assert_int_equal(tu_sh("mkdir '%s' && cp '%s/propeller_sample_1.bin' "
			       "'%s/propeller_sample_1.bin.gen' && cd '%s' && perf script -i "
			       "'%s/propeller_sample_1.perfdata1' -F ip,brstack "
			       "--show-mmap-events "
			       ">ps.perfscript 2>/dev/null", w, dir, w, w, dir), 0);
	assert_int_equal(tu_sh("cd '%s' && '%s' import -q --db t ps.perfscript --binary "
			       "propeller_sample_1.bin.gen && '%s' import -q --db d "
			       "'%s/propeller_sample_1.perfdata1' "
			       "--binary propeller_sample_1.bin.gen",
			       w, dcpi, dcpi, dir), 0);
	assert_int_equal(tu_sh("cd '%s' && grep '^[rb] ' t/*/*.lbr-counts >t.txt && "
			       "grep '^[rb] ' d/*/*.lbr-counts >d.txt && cmp -s t.txt d.txt && "
			       "test $(grep -c '^r ' t.txt) -ge 10", w), 0);
	if (tu_sh("command -v llvm-profgen-19 >/dev/null"))
		return;
	assert_int_equal(tu_sh("cd '%s' && llvm-profgen-19 --perfscript ps.perfscript --binary "
			       "propeller_sample_1.bin.gen --skip-symbolization --output peer.raw "
			       ">/dev/null 2>&1", w), 0);
	/* peer.raw: a count of ranges, then "b-e:count" lines; every range
	 * of ours with a count over 100 equal to the peer's */
	assert_int_equal(tu_sh("cd '%s' && awk 'NR == FNR { if (sub(/^r /, \"\")) "
			       "ours[$1 \"-\" $2] = $3; next } FNR == 1 { n = $1; next } "
			       "FNR <= n + 1 { split($0, a, \":\"); peer[a[1]] = a[2] } "
			       "END { for (k in ours) if (ours[k] > 100) { m++; "
			       "if (ours[k] != peer[k]) "
			       "bad++ } exit !(m >= 10 && !bad) }' t.txt peer.raw", w), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_mmap_lines),
	cmocka_unit_test(test_binary_linked),
	cmocka_unit_test(test_bad_line),
	cmocka_unit_test(test_peer_recording))
