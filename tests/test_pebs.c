/*
 * test_pebs.c - the PEBS memory-sample decoder (import/pebs.c) on
 * DATA_SRC words built bit by bit from perf's union perf_mem_data_src
 * (include/uapi/linux/perf_event.h): loads from each level, the level
 * number winning over the level bits, remote and TLB fields, WEIGHT and
 * WEIGHT_STRUCT, and every reserved or contradictory pattern.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "dcpi/hwsample.h"

#define OP(x) ((uint64_t)(x))
#define LVL(x) ((uint64_t)(x) << 5)
#define SNOOP(x) ((uint64_t)(x) << 19)
#define LOCK(x) ((uint64_t)(x) << 24)
#define DTLB(x) ((uint64_t)(x) << 26)
#define LVLNUM(x) ((uint64_t)(x) << 33)
#define REMOTE ((uint64_t)1 << 37)
#define BLK(x) ((uint64_t)(x) << 40)
#define HOPS(x) ((uint64_t)(x) << 43)

enum { LD = 2, ST = 4, HIT = 2, MISS = 4 };

#define DS_DRAM (OP(LD) | LVL(HIT | 0x80) | SNOOP(2) | LOCK(1) | DTLB(HIT | 8) | LVLNUM(13))

static int dec(uint64_t ds, uint64_t w, int ws, struct hw_sample *s)
{
	struct dcpi_err err = { 0 };

	return hw_pebs_decode(0x401000, 0x7ffd0000, w, ws, ds, s, &err);
}

/* perf's DRAM load on Skylake: LVL(HIT|LOC_RAM), snoop NONE, TLB L1|L2 hit */
static void test_dram_load(void **state)
{
	struct hw_sample s;

	(void)state;
	assert_int_equal(dec(OP(LD) | LVL(HIT | 0x80) | SNOOP(2) | LOCK(1) | DTLB(HIT | 8 | 0x10),
			     310, 0, &s), 0);
	assert_int_equal(s.src, HW_SRC_DRAM);
	assert_int_equal(s.flags & (HW_LOAD | HW_DC_MISS | HW_L2_MISS | HW_LAT | HW_ADDR | HW_IP),
			 HW_LOAD | HW_DC_MISS | HW_L2_MISS | HW_LAT | HW_ADDR | HW_IP);
	assert_true(s.flags & HW_DTLB_L1_MISS);		/* the STLB hit */
	assert_false(s.flags & HW_DTLB_L2_MISS);
	assert_int_equal(s.lat, 310);
	assert_int_equal(s.addr, 0x7ffd0000);
	/* the level number wins, remote */
	assert_int_equal(dec(OP(LD) | LVL(HIT | 0x8) | LVLNUM(13) | REMOTE, 0, 0, &s), 0);
	assert_int_equal(s.src, HW_SRC_REMOTE_DRAM);
	assert_false(s.flags & HW_LAT);
}

static void test_levels(void **state)
{
	static const struct {
		uint64_t ds;
		enum hw_src src;
		int miss, l2miss;
	} t[] = {
		{ LVL(HIT | 0x8), HW_SRC_L1, 0, 0 },
		{ LVL(HIT | 0x10), HW_SRC_LFB, 1, 0 },
		{ LVL(HIT | 0x20), HW_SRC_L2, 1, 0 },
		{ LVL(HIT | 0x40), HW_SRC_L3, 1, 1 },
		{ LVL(HIT | 0x100), HW_SRC_REMOTE_DRAM, 1, 1 },
		{ LVL(HIT | 0x400), HW_SRC_FAR_CACHE, 1, 1 },
		{ LVL(HIT | 0x1000), HW_SRC_IO, 1, 1 },
		{ LVL(HIT | 0x2000), HW_SRC_IO, 1, 1 },
		{ LVLNUM(1), HW_SRC_L1, 0, 0 },
		{ LVLNUM(2), HW_SRC_L2, 1, 0 },
		{ LVLNUM(3), HW_SRC_L3, 1, 1 },
		{ LVLNUM(3) | REMOTE, HW_SRC_FAR_CACHE, 1, 1 },
		{ LVLNUM(9), HW_SRC_EXT_MEM, 1, 1 },
		{ LVLNUM(11), HW_SRC_NEAR_CACHE, 1, 1 },
		{ LVLNUM(12), HW_SRC_LFB, 1, 0 },
		{ LVLNUM(14), HW_SRC_PMEM, 1, 1 },
		{ LVLNUM(15) | LVL(HIT | 0x40), HW_SRC_L3, 1, 1 },
		{ LVL(1), HW_SRC_NONE, 0, 0 },
	};
	struct hw_sample s;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(dec(OP(LD) | t[i].ds, 5, 0, &s), 0);
		if (s.src != t[i].src || !!(s.flags & HW_DC_MISS) != t[i].miss ||
		    !!(s.flags & HW_L2_MISS) != t[i].l2miss)
			fail_msg("row %zu: src %s flags %#x", i, hw_src_name(s.src), s.flags);
	}
	assert_int_equal(dec(OP(ST) | LVL(HIT | 0x8) | LOCK(2) | DTLB(MISS | 0x10), 0, 0, &s), 0);
	assert_int_equal(s.flags & (HW_STORE | HW_LOAD | HW_LOCKED | HW_DTLB_L2_MISS),
			 HW_STORE | HW_LOCKED | HW_DTLB_L2_MISS);
}

static void test_weights(void **state)
{
	struct hw_sample s;

	(void)state;
	/* WEIGHT_STRUCT: var1_dw the latency, var2_w (bits 32-47) not */
	assert_int_equal(dec(OP(LD) | LVLNUM(13), 0x0123000000c8ull, 1, &s), 0);
	assert_int_equal(s.lat, 200);
	assert_int_equal(dec(OP(LD) | LVLNUM(13), 1ull << 40, 0, &s), 0);
	assert_int_equal(s.lat, UINT32_MAX);
}

/* Reserved bits, NA with others, HIT with MISS, reserved numbers. */
static void test_reserved(void **state)
{
	static const uint64_t bad[] = {
		OP(1 | LD), LVL(1 | HIT), SNOOP(1 | 2), LOCK(3), DTLB(1 | HIT), BLK(1 | 2),
		LVL(HIT | MISS | 0x8), DTLB(HIT | MISS), LVLNUM(5), LVLNUM(6), LVLNUM(7),
		HOPS(5), HOPS(6), HOPS(7),
	};
	struct hw_sample s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (dec(OP(0) | bad[i], 1, 0, &s) != -EINVAL)
			fail_msg("pattern %zu (%#llx) accepted", i, (unsigned long long)bad[i]);
	for (int b = 46; b < 64; b++)
		assert_int_equal(dec(OP(LD) | 1ull << b, 1, 0, &s), -EINVAL);
	for (int b = 0; b < 46; b++) {
		uint64_t ds = 1ull << b;
		int rc = dec(ds, 1, 0, &s);

		/* a single bit is a valid pattern unless it is a reserved number */
		if (rc && !(b >= 33 && b <= 36) && !(b >= 43 && b <= 45))
			fail_msg("bit %d alone rejected", b);
	}
	assert_int_equal(dec(LVLNUM(4) | HOPS(4), 1, 0, &s), 0);
}

/* --- a PEBS epoch of a pointer chase --------------------------------------------- */

#define CHASE_LAT 300		/* cycles each measured miss took */
#define MEM_PERIOD 4000		/* loads per mem-loads sample */
#define CYC_PERIOD 100000	/* cycles per cycles sample */

struct buf {
	uint8_t b[1 << 16];
	size_t n;
};

static void put(struct buf *b, const void *v, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, v, n);
	b->n += n;
}

static void p64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void p32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void hdr(struct buf *b, uint32_t type, uint16_t misc, uint16_t size)
{
	p32(b, type);
	put(b, &misc, 2);
	put(b, &size, 2);
}

/* A cycles sample (id 1) at ip, or a mem-loads one (id 2) with ADDR,
 * WEIGHT and DATA_SRC. */
static void sample(struct buf *d, uint64_t id, uint64_t ip, uint64_t addr, uint64_t w,
		   uint64_t ds)
{
	hdr(d, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
	    (uint16_t)(8 + 8 + 8 + 8 + (id == 2 ? 24 : 0)));
	p64(d, id);
	p64(d, ip);
	p32(d, 7), p32(d, 7);
	if (id == 2) {
		p64(d, addr);
		p64(d, w);
		p64(d, ds);
	}
}

/* walk's instructions from objdump: *load the chase's load, loop[4] the
 * load and the three after it. */
static void walk_insns(const char *bin, uint64_t *loop)
{
	char cmd[800], l[512];
	int in = 0, k = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s'", bin);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(l, sizeof(l), f)) {
		unsigned long long a;

		if (strstr(l, "<walk>:"))
			in = 1;
		else if (in && l[0] == '\n')
			in = 0;
		else if (in && sscanf(l, " %llx:", &a) == 1 && k < 3 &&
			 (k >= 0 || (strstr(l, "mov") && strstr(l, "(%rdi,"))))
			loop[++k] = a;
	}
	pclose(f);
	assert_int_equal(k, 3);
}

static size_t chase_perf(const char *bin, uint8_t *out, size_t cap)
{
	static struct buf d, b;
	struct perf_event_attr a[2];
	uint64_t loop[4], text_va = 0, text_off = 0, text_sz = 0;
	const size_t asz = sizeof(a[0]) + 16;
	size_t aoff = 104, ioff = aoff + 2 * asz, doff = ioff + 16, feat;
	char cmd[800], l[512], name[600];
	static const char *const names[2] = { "cycles", "cpu/mem-loads/P" };
	FILE *f;

	walk_insns(bin, loop);
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", bin);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(l, sizeof(l), f)) {
		unsigned long long off, va, pa, fs, ms;

		if (sscanf(l, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fs,
			   &ms) == 5 && strstr(l, " E "))
			text_off = off, text_va = va, text_sz = ms;
	}
	pclose(f);
	assert_true(text_sz > 0);
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].size = sizeof(a[i]);
		a[i].sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				   (i ? PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT |
					PERF_SAMPLE_DATA_SRC : 0);
		a[i].sample_period = i ? MEM_PERIOD : CYC_PERIOD;
	}
	a[0].type = PERF_TYPE_HARDWARE;
	a[0].config = PERF_COUNT_HW_CPU_CYCLES;
	a[1].type = PERF_TYPE_RAW;
	a[1].config = 0x1cd;			/* MEM_TRANS_RETIRED.LOAD_LATENCY */
	a[1].precise_ip = 2;
	d.n = 0;
	memset(name, 0, sizeof(name));
	snprintf(name, sizeof(name), "%s", bin);
	hdr(&d, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER,
	    (uint16_t)(8 + 64 + ((strlen(name) + 8) & ~7ul)));
	p32(&d, 7), p32(&d, 7);
	p64(&d, text_va & ~0xfffull), p64(&d, text_sz + (text_va & 0xfff)),
	p64(&d, text_off & ~0xfffull);
	p64(&d, 0), p64(&d, 0), p64(&d, 0);
	p32(&d, 5), p32(&d, 2);
	put(&d, name, (strlen(name) + 8) & ~7ul);
	/* cycles: the load's wait lands on the add after it */
	for (int k = 0; k < 400; k++)
		sample(&d, 1, loop[1], 0, 0, 0);
	for (int k = 0; k < 20; k++)
		sample(&d, 1, loop[k % 3 == 0 ? 0 : k % 3 + 1], 0, 0, 0);
	/* mem-loads: 40 samples of the load, each from local DRAM */
	for (int k = 0; k < 40; k++)
		sample(&d, 2, loop[0], 0x7f1200000000ull + 4096ull * (uint64_t)((k * 7919) % 1000),
		       CHASE_LAT, DS_DRAM);
	/* the header, the attributes and their ids, the data, EVENT_DESC */
	feat = doff + d.n;
	b.n = 0;
	put(&b, "PERFILE2", 8);
	p64(&b, 104), p64(&b, asz), p64(&b, aoff), p64(&b, 2 * asz), p64(&b, doff), p64(&b, d.n);
	p64(&b, 0), p64(&b, 0);
	p64(&b, 1ull << 12), p64(&b, 0), p64(&b, 0), p64(&b, 0);
	for (int i = 0; i < 2; i++) {
		put(&b, &a[i], sizeof(a[i]));
		p64(&b, ioff + 8 * (size_t)i), p64(&b, 8);
	}
	p64(&b, 1), p64(&b, 2);
	put(&b, d.b, d.n);
	p64(&b, feat + 16);
	p64(&b, 8 + 2 * (sizeof(a[0]) + 4 + 4 + 16 + 8));
	p32(&b, 2), p32(&b, sizeof(a[0]));
	for (int i = 0; i < 2; i++) {
		char nm[16] = { 0 };

		put(&b, &a[i], sizeof(a[i]));
		p32(&b, 1);
		p32(&b, 16);
		snprintf(nm, sizeof(nm), "%s", names[i]);
		put(&b, nm, 16);
		p64(&b, (uint64_t)i + 1);
	}
	assert_true(b.n <= cap);
	memcpy(out, b.b, b.n);
	return b.n;
}

static void test_chase_summary(void **state)
{
	const char *src = getenv("DCPI_SRC"), *dcpi = getenv("DCPI_BIN");
	static uint8_t pd[1 << 16];
	char dir[256], bin[400], data[400], out[400];
	size_t n;
	FILE *f;

	(void)state;
	if (!dcpi)
		skip();
	assert_int_equal(tu_workspace(dir, sizeof(dir), "pebs"), 0);
	snprintf(bin, sizeof(bin), "%s/chase", dir);
	assert_int_equal(tu_sh("cc -std=gnu11 -O2 -g -no-pie -o '%s' '%s/tests/workloads/chase.c'",
			       bin, src ? src : "."), 0);
	n = chase_perf(bin, pd, sizeof(pd));
	snprintf(data, sizeof(data), "%s/pebs.data", dir);
	f = fopen(data, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(pd, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	assert_int_equal(tu_sh("'%s' import --db '%s/db' '%s' >'%s' 2>&1", dcpi, dir, data, out),
			 0);
	assert_int_equal(tu_sh("grep -q 'PEBS memory: 40 samples measured, 0 not valid, "
			       "0 rejected' "
			       "'%s'", out), 0);
	assert_int_equal(tu_sh("ls '%s'/db/*/*.pebs-dc-miss-latency.prof '%s'/db/*/*.values "
			       ">/dev/null", dir, dir), 0);
	assert_int_equal(tu_sh("'%s' calc --db '%s/db' --summary walk >'%s' 2>&1", dcpi, dir, out),
			 0);
	tu_sh("cat '%s'", out);
	/* the measured line, and the D-cache with the largest likeliest share */
	assert_int_equal(tu_sh("grep -q 'D-cache misses measured (IBS op / PEBS samples): "
			       "1.6e+05, %d cycles each (mean measured latency), 100%% from DRAM' "
			       "'%s'", CHASE_LAT, out), 0);
	assert_int_equal(tu_sh("awk '/by cause/ { on = 1; next } /^\\*\\*\\*/ { on = 0 } "
			       "on { s = $NF + 0; if (s > best) { best = s; who = $1 } } "
			       "END { exit who != \"D-cache\" }' '%s'", out), 0);
	assert_int_equal(tu_sh("rm -rf '%s'", dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dram_load),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_chase_summary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
