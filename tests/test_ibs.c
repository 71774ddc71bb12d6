/*
 * test_ibs.c - the IBS op decoder (import/ibs.c) on raw records built
 * byte by byte from the published layouts (AMD's PPRs for families 17h
 * and 19h, as the kernel's amd-ibs.h transcribes them): a load that missed
 * to DRAM, every reserved bit of every register, bits that depend on a
 * capability, every DataSrc encoding of both forms, every OpMemWidth,
 * fields used only under their valid bits, and every truncation.
 *
 * Then an IBS epoch of a pointer chase (tests/workloads/chase.c's walk),
 * a perf.data built byte by byte: cycles samples pile up after the load
 * (skid), IBS op samples tag the load itself with DRAM misses of a
 * measured latency; `dcpicalc --summary walk` must put the stall on the
 * D-cache and say it was measured, DRAM, at that latency.
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

#define CAPS_BASE (HW_IBS_CAPS_AVAIL | HW_IBS_CAPS_OPSAM | HW_IBS_CAPS_RIPINVALIDCHK)

enum { CTL, RIP, DATA, DATA2, DATA3, LIN, PHYS, BRT, DATA4 };

struct rec {
	uint32_t caps;
	uint64_t r[9];
};

/* The bytes the kernel writes: caps, seven registers, then BR_TARGET and
 * OP_DATA4 when caps has them. */
static size_t bytes(const struct rec *x, uint8_t *out)
{
	size_t n = 4;

	memcpy(out, &x->caps, 4);
	for (int i = 0; i < 7; i++, n += 8)
		memcpy(out + n, &x->r[i], 8);
	if (x->caps & HW_IBS_CAPS_BRNTRGT) {
		memcpy(out + n, &x->r[BRT], 8);
		n += 8;
	}
	if (x->caps & HW_IBS_CAPS_OPDATA4) {
		memcpy(out + n, &x->r[DATA4], 8);
		n += 8;
	}
	return n;
}

static int decode(const struct rec *x, struct hw_sample *s)
{
	uint8_t b[4 + 9 * 8];
	struct dcpi_err err = { 0 };

	return hw_ibs_op_decode(b, bytes(x, b), s, &err);
}

/* A load of 8 bytes that missed L1 and L2 to local DRAM, 412 cycles. */
static struct rec dram_load(void)
{
	struct rec x = { .caps = CAPS_BASE };

	x.r[CTL] = 1ull << 18 | 1ull << 17 | 0x1000;
	x.r[RIP] = 0x401234;
	x.r[DATA] = 480ull << 16 | 12;		/* tag-to-retire 480, comp-to-retire 12 */
	x.r[DATA2] = 3;				/* DRAM */
	x.r[DATA3] = 1ull << 0 | 1ull << 7 | 1ull << 17 | 1ull << 20 | 4ull << 22 |
		     412ull << 32;
	x.r[LIN] = 0x7ffd12345678;
	x.r[PHYS] = 0x1234000;
	return x;
}

static void test_dram_load(void **state)
{
	struct rec x = dram_load();
	struct hw_sample s;

	(void)state;
	assert_int_equal(decode(&x, &s), 0);
	assert_int_equal(s.ip, 0x401234);
	assert_true(s.flags & HW_IP);
	assert_int_equal(s.tag_to_ret, 480);
	assert_int_equal(s.comp_to_ret, 12);
	assert_true(s.flags & HW_TIMES);
	assert_int_equal(s.flags & (HW_LOAD | HW_STORE | HW_DC_MISS | HW_L2_MISS | HW_LAT |
				    HW_ADDR),
			 HW_LOAD | HW_DC_MISS | HW_L2_MISS | HW_LAT | HW_ADDR);
	assert_int_equal(s.lat, 412);
	assert_int_equal(s.src, HW_SRC_DRAM);
	assert_string_equal(hw_src_name(s.src), "dram");
	assert_int_equal(s.addr, 0x7ffd12345678);
	assert_false(s.flags & HW_PHYS);		/* DcPhyAddrValid clear */
	assert_int_equal(s.phys_addr, 0);
	assert_int_equal(s.width, 8);
	assert_false(s.flags & (HW_BRANCH | HW_DTLB_L1_MISS | HW_TLB_LAT));
	/* remote node */
	x.r[DATA2] |= 1 << 4;
	assert_int_equal(decode(&x, &s), 0);
	assert_int_equal(s.src, HW_SRC_REMOTE_DRAM);
}

/* Every reserved bit of every register is an error; every other bit
 * alone on the good record is not. */
static void test_reserved_bits(void **state)
{
	static const struct {
		int reg;
		uint64_t res;
	} res[] = {
		{ CTL, 0x1full << 27 },
		{ DATA, 0x3ull << 32 | ~0ull << 41 },
		{ DATA2, 1ull << 3 | 0x3ull << 6 | ~0ull << 8 },	/* 6-7: Zen 4 only */
		{ DATA3, 0xfull << 9 },
		{ DATA4, ~1ull },
	};
	struct hw_sample s;
	int errors = 0, fine = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(res) / sizeof(res[0]); k++) {
		for (int b = 0; b < 64; b++) {
			struct rec x = dram_load();
			int rc;

			x.caps |= HW_IBS_CAPS_OPDATA4 | HW_IBS_CAPS_OPBRNFUSE;
			if (res[k].reg == DATA3 && b >= 22 && b <= 25)
				continue;	/* OpMemWidth: below */
			x.r[res[k].reg] ^= 1ull << b;
			rc = decode(&x, &s);
			if (res[k].res >> b & 1) {
				if (rc != -EINVAL)
					fail_msg("register %d bit %d reserved: %d", res[k].reg, b,
						 rc);
				errors++;
			} else {
				if (rc != 0 && !(res[k].reg == CTL && b == 18 && rc == 1))
					fail_msg("register %d bit %d: %d", res[k].reg, b, rc);
				fine++;
			}
		}
	}
	assert_int_equal(errors, 5 + 25 + 59 + 4 + 63);
	assert_true(fine > 100);
}

/* Bits that exist only with a capability are reserved without it. */
static void test_capability_bits(void **state)
{
	struct rec x = dram_load();
	struct hw_sample s;

	(void)state;
	x.r[DATA] |= 1ull << 38;			/* RipInvalid */
	assert_int_equal(decode(&x, &s), 0);
	assert_false(s.flags & HW_IP);
	assert_int_equal(s.ip, 0);
	x.caps &= ~HW_IBS_CAPS_RIPINVALIDCHK;
	assert_int_equal(decode(&x, &s), -EINVAL);

	x = dram_load();
	x.r[DATA] |= 1ull << 39 | 1ull << 37;		/* a fused branch */
	assert_int_equal(decode(&x, &s), -EINVAL);
	x.caps |= HW_IBS_CAPS_OPBRNFUSE;
	assert_int_equal(decode(&x, &s), 0);
	assert_true(s.flags & HW_FUSED);

	x = dram_load();
	x.r[DATA2] = 1ull << 6;				/* DataSrc high bits */
	assert_int_equal(decode(&x, &s), -EINVAL);
	x.caps |= HW_IBS_CAPS_ZEN4;
	assert_int_equal(decode(&x, &s), 0);
	assert_int_equal(s.src, HW_SRC_EXT_MEM);	/* 8 */

	x = dram_load();
	x.caps &= ~HW_IBS_CAPS_AVAIL;
	assert_int_equal(decode(&x, &s), -EINVAL);
}

static void test_not_valid(void **state)
{
	struct rec x = dram_load();
	struct hw_sample s;

	(void)state;
	x.r[CTL] &= ~(1ull << 18);
	assert_int_equal(decode(&x, &s), 1);
	assert_int_equal(s.flags, 0);
}

/* Branch fields only on retired branches; the target with BrnTrgt. */
static void test_branches(void **state)
{
	struct rec x = dram_load();
	struct hw_sample s;

	(void)state;
	x.r[DATA3] = 0;
	x.r[DATA] |= 1ull << 34 | 1ull << 35 | 1ull << 36;	/* no BrnRet */
	assert_int_equal(decode(&x, &s), 0);
	assert_false(s.flags & (HW_BRANCH | HW_TAKEN | HW_MISPREDICT | HW_RETURN));
	x.r[DATA] |= 1ull << 37;
	x.caps |= HW_IBS_CAPS_BRNTRGT;
	x.r[BRT] = 0x401000;
	assert_int_equal(decode(&x, &s), 0);
	assert_int_equal(s.flags & (HW_BRANCH | HW_TAKEN | HW_MISPREDICT | HW_RETURN |
				    HW_BR_TARGET),
			 HW_BRANCH | HW_TAKEN | HW_MISPREDICT | HW_RETURN | HW_BR_TARGET);
	assert_int_equal(s.br_target, 0x401000);
	/* BR_TARGET and OP_DATA4 both: OP_DATA4 after the target */
	x.caps |= HW_IBS_CAPS_OPDATA4;
	x.r[DATA4] = 2;
	assert_int_equal(decode(&x, &s), -EINVAL);
	x.r[DATA4] = 1;
	assert_int_equal(decode(&x, &s), 0);
	assert_int_equal(s.br_target, 0x401000);
}

/* Every DataSrc, both forms. */
static void test_data_sources(void **state)
{
	static const enum hw_src old[8] = {
		HW_SRC_NONE, HW_SRC_RESERVED, HW_SRC_L3, HW_SRC_DRAM,
		HW_SRC_FAR_CACHE, HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_IO,
	};
	static const enum hw_src zen4[32] = {
		HW_SRC_NONE, HW_SRC_L3, HW_SRC_NEAR_CACHE, HW_SRC_DRAM, HW_SRC_RESERVED,
		HW_SRC_FAR_CACHE, HW_SRC_PMEM, HW_SRC_IO, HW_SRC_EXT_MEM, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_PEER_MEM, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED, HW_SRC_RESERVED,
		HW_SRC_RESERVED, HW_SRC_RESERVED,
	};
	struct hw_sample s;

	(void)state;
	for (unsigned v = 0; v < 8; v++) {
		struct rec x = dram_load();

		x.r[DATA2] = v;
		assert_int_equal(decode(&x, &s), 0);
		assert_int_equal(s.src, old[v]);
	}
	for (unsigned v = 0; v < 32; v++) {
		struct rec x = dram_load();

		x.caps |= HW_IBS_CAPS_ZEN4;
		x.r[DATA2] = (v & 7) | (uint64_t)(v >> 3) << 6;
		assert_int_equal(decode(&x, &s), 0);
		assert_int_equal(s.src, zen4[v]);
	}
	/* not a load that missed: no source, no latency */
	for (int k = 0; k < 2; k++) {
		struct rec x = dram_load();

		x.r[DATA3] &= k ? ~(1ull << 7) : ~1ull;
		if (!k)
			x.r[DATA3] |= 1ull << 1;	/* a store that missed */
		assert_int_equal(decode(&x, &s), 0);
		assert_int_equal(s.src, HW_SRC_NONE);
		assert_false(s.flags & HW_LAT);
		assert_int_equal(s.lat, 0);
	}
}

static void test_widths_tlb(void **state)
{
	struct hw_sample s;

	(void)state;
	for (unsigned w = 0; w < 16; w++) {
		struct rec x = dram_load();

		x.r[DATA3] = (x.r[DATA3] & ~(0xfull << 22)) | (uint64_t)w << 22;
		if (w > 7) {
			assert_int_equal(decode(&x, &s), -EINVAL);
			continue;
		}
		assert_int_equal(decode(&x, &s), 0);
		assert_int_equal(s.width, w ? 1u << (w - 1) : 0);
	}
	{
		struct rec x = dram_load();

		x.r[DATA3] |= 1ull << 2 | 1ull << 3 | 77ull << 48;
		assert_int_equal(decode(&x, &s), 0);
		assert_true(s.flags & HW_DTLB_L1_MISS);
		assert_true(s.flags & HW_DTLB_L2_MISS);
		assert_true(s.flags & HW_TLB_LAT);
		assert_int_equal(s.tlb_lat, 77);
		x.r[DATA3] &= ~(1ull << 2);
		assert_int_equal(decode(&x, &s), 0);
		assert_false(s.flags & HW_TLB_LAT);
		x.r[DATA3] &= ~(1ull << 17);
		x.r[DATA3] |= 1ull << 18;
		assert_int_equal(decode(&x, &s), 0);
		assert_false(s.flags & HW_ADDR);
		assert_true(s.flags & HW_PHYS);
		assert_int_equal(s.phys_addr, 0x1234000);
	}
}

/* Every length but the one the capabilities say is an error. */
static void test_truncation(void **state)
{
	static const uint32_t extra[] = { 0, HW_IBS_CAPS_BRNTRGT, HW_IBS_CAPS_OPDATA4,
					  HW_IBS_CAPS_BRNTRGT | HW_IBS_CAPS_OPDATA4 };
	uint8_t b[4 + 9 * 8 + 16];
	struct dcpi_err err = { 0 };
	struct hw_sample s;

	(void)state;
	for (size_t k = 0; k < 4; k++) {
		struct rec x = dram_load();
		size_t n;

		x.caps |= extra[k];
		memset(b, 0, sizeof(b));
		n = bytes(&x, b);
		assert_int_equal(n, 60 + 8 * __builtin_popcount(extra[k]));
		for (size_t m = 0; m < sizeof(b); m++) {
			int rc = hw_ibs_op_decode(b, m, &s, &err);

			assert_int_equal(rc, m == n ? 0 : -EINVAL);
			if (m && m != n)
				assert_non_null(strstr(err.msg, m < 4 ? "no capabilities" :
						       m < n ? "truncated" : "too long"));
		}
	}
}


/* --- an IBS epoch of a pointer chase ---------------------------------------------- */

#define IBS_PERIOD 4000		/* ops per IBS sample */

/* An IBS op sample (attribute id 2) at ip: x's raw record. */
static void ibs_sample(struct tu_pbuf *d, uint64_t ip, const struct rec *x)
{
	uint8_t r[4 + 9 * 8];
	size_t rn = bytes(x, r);

	tu_put_ip_sample(d, 2, ip, 4 + rn);
	tu_put32(d, (uint32_t)rn);
	tu_put(d, r, rn);
}

/* IBS: 40 tagged ops each; the load missed to DRAM every time */
static void chase_ibs(struct tu_pbuf *d, const struct tu_chase *c)
{
	for (int k = 0; k < 160; k++) {
		struct rec x = { .caps = CAPS_BASE };

		x.r[CTL] = 1ull << 18 | 1ull << 17 | 0x100;
		x.r[RIP] = c->loop[k % 4];
		x.r[DATA] = (k % 4 ? 20ull : (uint64_t)TU_CHASE_LAT + 40) << 16 | 2;
		if (k % 4 == 0) {
			x.r[DATA2] = 3;
			x.r[DATA3] = 1ull | 1ull << 7 | 1ull << 17 | 1ull << 20 | 3ull << 22 |
				     (uint64_t)TU_CHASE_LAT << 32;
			x.r[LIN] = 0x7f1200000000ull + 4096ull * (uint64_t)((k * 7919) % 1000);
		}
		ibs_sample(d, c->loop[k % 4], &x);
	}
}

static void test_chase_summary(void **state)
{
	static const struct tu_chase_event ibs = {
		.attr = { .type = 11,		/* ibs_op's dynamic PMU type */
			  .sample_type = PERF_SAMPLE_RAW, .sample_period = IBS_PERIOD },
		.name = "ibs_op//",
		.samples = chase_ibs,
	};

	(void)state;
	tu_chase_summary("ibs", &ibs,
			 "IBS op: 160 samples measured, 0 not valid, 0 rejected",
			 "ibs-dc-miss-latency");
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_dram_load),
	cmocka_unit_test(test_reserved_bits),
	cmocka_unit_test(test_capability_bits),
	cmocka_unit_test(test_not_valid),
	cmocka_unit_test(test_branches),
	cmocka_unit_test(test_data_sources),
	cmocka_unit_test(test_widths_tlb),
	cmocka_unit_test(test_truncation),
	cmocka_unit_test(test_chase_summary))
