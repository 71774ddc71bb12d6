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
#include "tu_perf.h"

#include "dcpi/hwsample.h"
#include "tu_main.h"

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

#define MEM_PERIOD 4000		/* loads per mem-loads sample */

/* mem-loads (id 2): 40 samples of the load, each from local DRAM, with
 * ADDR, WEIGHT and DATA_SRC */
static void chase_mem_loads(struct tu_pbuf *d, const struct tu_chase *c)
{
	for (int k = 0; k < 40; k++) {
		tu_put_ip_sample(d, 2, c->loop[0], 24);
		tu_put64(d, 0x7f1200000000ull + 4096ull * (uint64_t)((k * 7919) % 1000));
		tu_put64(d, TU_CHASE_LAT);
		tu_put64(d, DS_DRAM);
	}
}

static void test_chase_summary(void **state)
{
	static const struct tu_chase_event mem_loads = {
		.attr = { .type = PERF_TYPE_RAW,
			  .config = 0x1cd,	/* MEM_TRANS_RETIRED.LOAD_LATENCY */
			  .precise_ip = 2,
			  .sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT |
					 PERF_SAMPLE_DATA_SRC,
			  .sample_period = MEM_PERIOD },
		.name = "cpu/mem-loads/P",
		.samples = chase_mem_loads,
	};

	(void)state;
	tu_chase_summary("pebs", &mem_loads,
			 "PEBS memory: 40 samples measured, 0 not valid, 0 rejected",
			 "pebs-dc-miss-latency");
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_dram_load),
	cmocka_unit_test(test_levels),
	cmocka_unit_test(test_weights),
	cmocka_unit_test(test_reserved),
	cmocka_unit_test(test_chase_summary))
