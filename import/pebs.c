/*
 * import/pebs.c - Intel PEBS memory samples (perf record -e mem-loads,
 * mem-stores; perf mem) from a sample's ADDR, WEIGHT (or WEIGHT_STRUCT)
 * and DATA_SRC, decoded into the form IBS op samples take
 * (include/dcpi/hwsample.h).
 *
 * DATA_SRC is perf's union perf_mem_data_src (include/uapi/linux/
 * perf_event.h), little-endian: mem_op 0-4, mem_lvl 5-18, mem_snoop
 * 19-23, mem_lock 24-25, mem_dtlb 26-32, mem_lvl_num 33-36, mem_remote 37,
 * mem_snoopx 38-39, mem_blk 40-42, mem_hops 43-45, reserved 46-63.  A
 * field's NA bit with any other of its bits, HIT with MISS, a reserved
 * level number (5-7) or hop count (5-7), or a reserved bit set is an
 * error.  The level number (newer kernels) wins over the level bits; the
 * weight's low 32 bits (WEIGHT_STRUCT's var1_dw) are the load latency in
 * core cycles.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "dcpi/hwsample.h"

static unsigned fld(uint64_t v, unsigned lo, unsigned n)
{
	return (unsigned)((v >> lo) & ((1ull << n) - 1));
}

/* A field whose bit 0 is NA: NA alone, or no NA. */
static int na_ok(unsigned f)
{
	return !(f & 1) || f == 1;
}

static int pebs_check(uint64_t d, struct dcpi_err *err)
{
	unsigned lvl = fld(d, 5, 14), dtlb = fld(d, 26, 7);
	const char *why = NULL;

	if (d >> 46)
		why = "reserved bits 46-63 set";
	else if (!na_ok(fld(d, 0, 5)) || !na_ok(lvl) || !na_ok(fld(d, 19, 5)) ||
		 !na_ok(fld(d, 24, 2)) || !na_ok(dtlb) || !na_ok(fld(d, 40, 3)))
		why = "a field's NA bit with others";
	else if ((lvl & 0x6) == 0x6 || (dtlb & 0x6) == 0x6)
		why = "HIT and MISS both";
	else if (fld(d, 33, 4) >= 5 && fld(d, 33, 4) <= 7)
		why = "reserved mem_lvl_num";
	else if (fld(d, 43, 3) >= 5)
		why = "reserved mem_hops";
	if (why)
		return dcpi_errf(err, -EINVAL, "PERF_SAMPLE_DATA_SRC %#" PRIx64 ": %s", d, why);
	return 0;
}

static enum hw_src pebs_lvl_num(unsigned n, int remote)
{
	switch (n) {
	case 1: return HW_SRC_L1;
	case 2: return HW_SRC_L2;
	case 3: case 4: return remote ? HW_SRC_FAR_CACHE : HW_SRC_L3;
	case 8: case 10: return HW_SRC_IO;
	case 9: return HW_SRC_EXT_MEM;
	case 11: return remote ? HW_SRC_FAR_CACHE : HW_SRC_NEAR_CACHE;
	case 12: return HW_SRC_LFB;
	case 13: return remote ? HW_SRC_REMOTE_DRAM : HW_SRC_DRAM;
	case 14: return HW_SRC_PMEM;
	default: return HW_SRC_NONE;	/* 0, 15 (NA) */
	}
}

static enum hw_src pebs_lvl(unsigned lvl)
{
	static const struct {
		unsigned bit;
		enum hw_src src;
	} order[] = {	/* the farthest level named wins */
		{ 0x1000, HW_SRC_IO }, { 0x2000, HW_SRC_IO },
		{ 0x400, HW_SRC_FAR_CACHE }, { 0x800, HW_SRC_FAR_CACHE },
		{ 0x100, HW_SRC_REMOTE_DRAM }, { 0x200, HW_SRC_REMOTE_DRAM },
		{ 0x80, HW_SRC_DRAM }, { 0x40, HW_SRC_L3 }, { 0x20, HW_SRC_L2 },
		{ 0x10, HW_SRC_LFB }, { 0x8, HW_SRC_L1 },
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (lvl & order[i].bit)
			return order[i].src;
	return HW_SRC_NONE;
}

int hw_pebs_decode(uint64_t ip, uint64_t addr, uint64_t weight, int weight_struct,
		   uint64_t data_src, struct hw_sample *s, struct dcpi_err *err)
{
	unsigned op, dtlb;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = pebs_check(data_src, err);
	if (ret)
		return ret;
	s->ip = ip;
	s->flags = HW_IP;
	op = fld(data_src, 0, 5);
	if (op & 0x2)
		s->flags |= HW_LOAD;
	if (op & 0x4)
		s->flags |= HW_STORE;
	if (op & 0x8)
		s->flags |= HW_SW_PREFETCH;
	s->src = pebs_lvl_num(fld(data_src, 33, 4), fld(data_src, 37, 1));
	if (s->src == HW_SRC_NONE)
		s->src = pebs_lvl(fld(data_src, 5, 14));
	if (s->src != HW_SRC_NONE && s->src != HW_SRC_L1)
		s->flags |= HW_DC_MISS;
	if (s->src != HW_SRC_NONE && s->src != HW_SRC_L1 && s->src != HW_SRC_LFB &&
	    s->src != HW_SRC_L2)
		s->flags |= HW_L2_MISS;
	dtlb = fld(data_src, 26, 7);
	if (dtlb & 0x4)
		s->flags |= HW_DTLB_L1_MISS | HW_DTLB_L2_MISS;
	else if ((dtlb & 0x2) && (dtlb & 0x10))
		s->flags |= HW_DTLB_L1_MISS;	/* hit in the second-level TLB */
	if (fld(data_src, 24, 2) & 0x2)
		s->flags |= HW_LOCKED;
	if (addr) {
		s->flags |= HW_ADDR;
		s->addr = addr;
	}
	s->lat = weight_struct || weight <= UINT32_MAX ? (uint32_t)weight : UINT32_MAX;
	if (s->lat)
		s->flags |= HW_LAT;
	return 0;
}
