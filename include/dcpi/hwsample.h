/*
 * hwsample.h - samples that tag one instruction and measure it (DCPI's
 * ProfileMe way): AMD IBS op samples (import/ibs.c) and Intel PEBS memory
 * samples (import/pebs.c), decoded into one form.  The decoders read the
 * bytes a perf record carries (PERF_SAMPLE_RAW for IBS; ADDR, WEIGHT and
 * DATA_SRC for PEBS) and check them against the published layouts
 * (docs/import.md "IBS op samples" and "PEBS memory samples"); they never
 * read past n bytes and never trust a count from the data.
 */
#ifndef DCPI_HWSAMPLE_H
#define DCPI_HWSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

/* Where a load's data came from, in one scale for both vendors. */
enum hw_src {
	HW_SRC_NONE,		/* not a load that missed, or not reported */
	HW_SRC_L1,		/* PEBS: L1 hit */
	HW_SRC_LFB,		/* PEBS: line fill buffer (a miss in flight) */
	HW_SRC_L2,
	HW_SRC_L3,		/* local L3 (IBS: or another L1/L2 in the CCX) */
	HW_SRC_NEAR_CACHE,	/* another CCX's cache in the node / a sibling core */
	HW_SRC_FAR_CACHE,	/* a cache in another node or socket */
	HW_SRC_DRAM,		/* local DRAM */
	HW_SRC_REMOTE_DRAM,
	HW_SRC_PMEM,		/* long-latency DIMM */
	HW_SRC_EXT_MEM,		/* extension memory (CXL) */
	HW_SRC_PEER_MEM,	/* coherent memory of another processor type */
	HW_SRC_IO,		/* MMIO, configuration, PCI, APIC; uncached */
	HW_SRC_RESERVED,	/* an encoding the layout reserves */
	HW_SRC_N
};

/* flags of struct hw_sample */
enum {
	HW_LOAD = 1 << 0,
	HW_STORE = 1 << 1,
	HW_DC_MISS = 1 << 2,		/* missed the L1 data cache */
	HW_L2_MISS = 1 << 3,
	HW_DTLB_L1_MISS = 1 << 4,
	HW_DTLB_L2_MISS = 1 << 5,	/* (IBS) or a DTLB miss at all (PEBS) */
	HW_BRANCH = 1 << 6,		/* a retired branch */
	HW_TAKEN = 1 << 7,
	HW_MISPREDICT = 1 << 8,
	HW_RETURN = 1 << 9,
	HW_ADDR = 1 << 10,		/* addr is valid */
	HW_PHYS = 1 << 11,		/* phys_addr is valid */
	HW_LAT = 1 << 12,		/* lat is valid */
	HW_LOCKED = 1 << 13,
	HW_UNCACHEABLE = 1 << 14,
	HW_WRITE_COMBINING = 1 << 15,
	HW_SW_PREFETCH = 1 << 16,
	HW_MISALIGNED = 1 << 17,
	HW_IP = 1 << 18,		/* ip is valid (IBS: RipInvalid clear) */
	HW_BR_TARGET = 1 << 19,		/* br_target is valid */
	HW_MICROCODE = 1 << 20,
	HW_FUSED = 1 << 21,		/* a fused compare-and-branch */
	HW_TIMES = 1 << 22,		/* tag_to_ret and comp_to_ret are valid */
	HW_TLB_LAT = 1 << 23,		/* tlb_lat is valid */
};

struct hw_sample {
	uint64_t ip;
	uint64_t addr;			/* the data's linear address */
	uint64_t phys_addr;
	uint64_t br_target;
	uint32_t flags;
	uint32_t lat;			/* cycles: IBS DC miss latency, PEBS load latency */
	uint32_t tag_to_ret;		/* IBS: cycles from tag to retire */
	uint32_t comp_to_ret;		/* IBS: cycles from completion to retire */
	uint32_t tlb_lat;		/* IBS: L1 TLB refill latency */
	unsigned width;			/* access size in bytes, 0 when not said */
	enum hw_src src;
};

/* Its name ("dram", "l3", ...). */
const char *hw_src_name(enum hw_src s);

/*
 * One IBS op sample from the PERF_SAMPLE_RAW bytes of an ibs_op event:
 * u32 IBS capabilities, then IBS_OP_CTL, IBS_OP_RIP, IBS_OP_DATA,
 * IBS_OP_DATA2, IBS_OP_DATA3, IBS_DC_LIN_AD, IBS_DC_PHYS_AD, then
 * IBS_BR_TARGET when the capabilities say BrnTrgt and IBS_OP_DATA4 when
 * they say OpData4 (the kernel's arch/x86/events/amd/ibs.c).  0 and *s
 * filled; 1 when the sample is not valid (IbsOpVal clear: nothing to use);
 * -EINVAL (err says why) when n does not match what the capabilities say
 * or a reserved bit or field is set.
 */
int hw_ibs_op_decode(const uint8_t *raw, size_t n, struct hw_sample *s, struct dcpi_err *err);

/* IBS capability bits (CPUID Fn8000_001B_EAX, the raw record's first u32). */
enum {
	HW_IBS_CAPS_AVAIL = 1 << 0,
	HW_IBS_CAPS_OPSAM = 1 << 2,
	HW_IBS_CAPS_BRNTRGT = 1 << 5,
	HW_IBS_CAPS_OPCNTEXT = 1 << 6,
	HW_IBS_CAPS_RIPINVALIDCHK = 1 << 7,
	HW_IBS_CAPS_OPBRNFUSE = 1 << 8,
	HW_IBS_CAPS_OPDATA4 = 1 << 10,
	HW_IBS_CAPS_ZEN4 = 1 << 11,
};

/*
 * One PEBS memory sample (mem-loads / mem-stores): the sample's ip, ADDR,
 * WEIGHT (or WEIGHT_STRUCT: weight_struct 1, the low 32 bits are the
 * latency) and DATA_SRC (perf's union perf_mem_data_src).  0 and *s
 * filled; -EINVAL when DATA_SRC holds a reserved pattern.
 */
int hw_pebs_decode(uint64_t ip, uint64_t addr, uint64_t weight, int weight_struct,
		   uint64_t data_src, struct hw_sample *s, struct dcpi_err *err);

#endif /* DCPI_HWSAMPLE_H */
