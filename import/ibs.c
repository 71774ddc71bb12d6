/*
 * import/ibs.c - AMD IBS op samples (perf record -e ibs_op//) from the
 * PERF_SAMPLE_RAW bytes the kernel writes (arch/x86/events/amd/ibs.c):
 *
 *   u32 caps                 CPUID Fn8000_001B_EAX (IBS capabilities)
 *   u64 IBS_OP_CTL           MSRC001_1033
 *   u64 IBS_OP_RIP           MSRC001_1034
 *   u64 IBS_OP_DATA          MSRC001_1035
 *   u64 IBS_OP_DATA2         MSRC001_1036
 *   u64 IBS_OP_DATA3         MSRC001_1037
 *   u64 IBS_DC_LIN_AD        MSRC001_1038
 *   u64 IBS_DC_PHYS_AD       MSRC001_1039
 *   u64 IBS_BR_TARGET        MSRC001_103B, when caps has BrnTrgt (bit 5)
 *   u64 IBS_OP_DATA4         MSRC001_103D, when caps has OpData4 (bit 10)
 *
 * Field layouts as AMD's PPRs give them (Family 17h and 19h, the kernel's
 * arch/x86/include/asm/amd-ibs.h and tools/perf/util/amd-sample-raw.c):
 * IBS_OP_CTL bit 18 IbsOpVal, 27-31 reserved; IBS_OP_DATA 0-15
 * IbsCompToRetCtr, 16-31 IbsTagToRetCtr, 34 return, 35 taken, 36
 * mispredicted, 37 branch retired, 38 RipInvalid (with caps bit 7), 39
 * fused branch (with caps bit 8), 40 microcode, 32-33 and 41-63 reserved;
 * IBS_OP_DATA2 0-2 DataSrc, 4 RmtNode, 5 CacheHitSt, 6-7 DataSrc high
 * bits (with caps bit 11, Zen 4), 3 and 8-63 reserved; IBS_OP_DATA3 0 load,
 * 1 store, 2 DTLB L1 miss, 3 DTLB L2 miss, 7 DC miss, 8 misaligned, 13 WC,
 * 14 UC, 15 locked, 17 DcLinAddrValid, 18 DcPhyAddrValid, 20 L2 miss, 21
 * software prefetch, 22-25 OpMemWidth (log2 bytes + 1), 32-47 DcMissLat,
 * 48-63 TLB refill latency, 9-12 reserved; IBS_OP_DATA4 bit 0 LdResync,
 * the rest reserved.
 *
 * What is used only where the PPR says it is valid: DcMissLat and DataSrc
 * for loads that missed the data cache, the TLB refill latency after a DTLB
 * L1 miss, mispredict / taken / return for retired branches, the address
 * when DcLinAddrValid.  A reserved bit or field set is an error (the bytes
 * are not what the layout says); a reserved DataSrc encoding is reported as
 * HW_SRC_RESERVED.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/collect.h"
#include "dcpi/hwsample.h"
#include "dcpi/perf_records.h"
#include "dcpi/values.h"
#include "internal.h"

#define IBS_NREGS 7

static const char *const src_names[HW_SRC_N] = {
	[HW_SRC_NONE] = "none",		[HW_SRC_L1] = "l1",
	[HW_SRC_LFB] = "lfb",		[HW_SRC_L2] = "l2",
	[HW_SRC_L3] = "l3",		[HW_SRC_NEAR_CACHE] = "near-cache",
	[HW_SRC_FAR_CACHE] = "far-cache", [HW_SRC_DRAM] = "dram",
	[HW_SRC_REMOTE_DRAM] = "remote-dram", [HW_SRC_PMEM] = "pmem",
	[HW_SRC_EXT_MEM] = "ext-mem",	[HW_SRC_PEER_MEM] = "peer-mem",
	[HW_SRC_IO] = "io",		[HW_SRC_RESERVED] = "reserved",
};

const char *hw_src_name(enum hw_src s)
{
	return (unsigned)s < HW_SRC_N ? src_names[s] : "?";
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t bits(uint64_t v, unsigned lo, unsigned n)
{
	return (v >> lo) & ((1ull << n) - 1);
}

/* DataSrc: Zen 4's five-bit form (caps bit 11), else the three-bit one. */
static enum hw_src ibs_src(uint64_t d2, uint32_t caps)
{
	unsigned v = (unsigned)bits(d2, 0, 3), remote = (unsigned)bits(d2, 4, 1);

	if (caps & HW_IBS_CAPS_ZEN4) {
		v |= (unsigned)bits(d2, 6, 2) << 3;
		switch (v) {
		case 0: return HW_SRC_NONE;
		case 1: return HW_SRC_L3;
		case 2: return HW_SRC_NEAR_CACHE;
		case 3: return remote ? HW_SRC_REMOTE_DRAM : HW_SRC_DRAM;
		case 5: return HW_SRC_FAR_CACHE;
		case 6: return HW_SRC_PMEM;
		case 7: return HW_SRC_IO;
		case 8: return HW_SRC_EXT_MEM;
		case 12: return HW_SRC_PEER_MEM;
		default: return HW_SRC_RESERVED;
		}
	}
	switch (v) {
	case 0: return HW_SRC_NONE;
	case 2: return HW_SRC_L3;	/* local cache */
	case 3: return remote ? HW_SRC_REMOTE_DRAM : HW_SRC_DRAM;
	case 4: return HW_SRC_FAR_CACHE;	/* remote cache */
	case 7: return HW_SRC_IO;
	default: return HW_SRC_RESERVED;
	}
}

/* Reserved bits of each register, given the capabilities. */
static int ibs_reserved(const uint64_t *r, uint32_t caps, uint64_t d4, int has_d4,
			struct dcpi_err *err)
{
	uint64_t data_res = 0x3ull << 32 | ~0ull << 41;
	uint64_t d2_res = 1ull << 3 | ~0ull << 8;

	if (!(caps & HW_IBS_CAPS_RIPINVALIDCHK))
		data_res |= 1ull << 38;
	if (!(caps & HW_IBS_CAPS_OPBRNFUSE))
		data_res |= 1ull << 39;
	if (!(caps & HW_IBS_CAPS_ZEN4))
		d2_res |= 0x3ull << 6;
	if (r[0] & 0x1full << 27)
		return dcpi_errf(err, -EINVAL, "IBS_OP_CTL %#" PRIx64 ": reserved bits 27-31 set",
				 r[0]);
	if (r[2] & data_res)
		return dcpi_errf(err, -EINVAL, "IBS_OP_DATA %#" PRIx64 ": reserved bits %#" PRIx64
				 " set", r[2], r[2] & data_res);
	if (r[3] & d2_res)
		return dcpi_errf(err, -EINVAL, "IBS_OP_DATA2 %#" PRIx64 ": reserved bits %#"
				 PRIx64 " set", r[3], r[3] & d2_res);
	if (r[4] & 0xfull << 9)
		return dcpi_errf(err, -EINVAL, "IBS_OP_DATA3 %#" PRIx64 ": reserved bits 9-12 set",
				 r[4]);
	if (bits(r[4], 22, 4) > 7)
		return dcpi_errf(err, -EINVAL, "IBS_OP_DATA3 %#" PRIx64 ": OpMemWidth %u is "
				 "reserved", r[4], (unsigned)bits(r[4], 22, 4));
	if (has_d4 && (d4 & ~1ull))
		return dcpi_errf(err, -EINVAL, "IBS_OP_DATA4 %#" PRIx64 ": reserved bits set",
				 d4);
	return 0;
}

static void ibs_branch(struct hw_sample *s, uint64_t data)
{
	if (!bits(data, 37, 1))
		return;			/* the other branch bits mean nothing */
	s->flags |= HW_BRANCH;
	if (bits(data, 35, 1))
		s->flags |= HW_TAKEN;
	if (bits(data, 36, 1))
		s->flags |= HW_MISPREDICT;
	if (bits(data, 34, 1))
		s->flags |= HW_RETURN;
	if (bits(data, 39, 1))
		s->flags |= HW_FUSED;
}

static void ibs_mem(struct hw_sample *s, const uint64_t *r, uint32_t caps)
{
	uint64_t d3 = r[4];
	static const struct {
		unsigned bit;
		uint32_t flag;
	} map[] = {
		{ 0, HW_LOAD }, { 1, HW_STORE }, { 2, HW_DTLB_L1_MISS }, { 3, HW_DTLB_L2_MISS },
		{ 7, HW_DC_MISS }, { 8, HW_MISALIGNED }, { 13, HW_WRITE_COMBINING },
		{ 14, HW_UNCACHEABLE }, { 15, HW_LOCKED }, { 20, HW_L2_MISS },
		{ 21, HW_SW_PREFETCH },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (bits(d3, map[i].bit, 1))
			s->flags |= map[i].flag;
	if (bits(d3, 22, 4))
		s->width = 1u << (bits(d3, 22, 4) - 1);
	if (bits(d3, 17, 1)) {
		s->flags |= HW_ADDR;
		s->addr = r[5];
	}
	if (bits(d3, 18, 1)) {
		s->flags |= HW_PHYS;
		s->phys_addr = r[6];
	}
	if ((s->flags & (HW_LOAD | HW_DC_MISS)) == (HW_LOAD | HW_DC_MISS)) {
		s->flags |= HW_LAT;
		s->lat = (uint32_t)bits(d3, 32, 16);
		s->src = ibs_src(r[3], caps);
	}
	if (s->flags & HW_DTLB_L1_MISS) {
		s->flags |= HW_TLB_LAT;
		s->tlb_lat = (uint32_t)bits(d3, 48, 16);
	}
}

int hw_ibs_op_decode(const uint8_t *raw, size_t n, struct hw_sample *s, struct dcpi_err *err)
{
	uint64_t r[IBS_NREGS], br = 0, d4 = 0;
	uint32_t caps;
	size_t want;
	int has_br, has_d4, ret;

	memset(s, 0, sizeof(*s));
	if (n < 4)
		return dcpi_errf(err, -EINVAL, "IBS op raw data of %zu bytes: no capabilities "
				 "word", n);
	memcpy(&caps, raw, 4);
	has_br = (caps & HW_IBS_CAPS_BRNTRGT) != 0;
	has_d4 = (caps & HW_IBS_CAPS_OPDATA4) != 0;
	want = 4 + 8 * (size_t)(IBS_NREGS + has_br + has_d4);
	if (!(caps & HW_IBS_CAPS_AVAIL))
		return dcpi_errf(err, -EINVAL, "IBS capabilities %#x: IbsFfv (bit 0) clear, not "
				 "an IBS record", caps);
	if (n != want)
		return dcpi_errf(err, -EINVAL, "IBS op raw data of %zu bytes, capabilities %#x "
				 "say %zu: %s", n, caps, want,
				 n < want ? "truncated" : "too long");
	for (int i = 0; i < IBS_NREGS; i++)
		r[i] = rd64(raw + 4 + 8 * i);
	if (has_br)
		br = rd64(raw + 4 + 8 * IBS_NREGS);
	if (has_d4)
		d4 = rd64(raw + 4 + 8 * (IBS_NREGS + has_br));
	ret = ibs_reserved(r, caps, d4, has_d4, err);
	if (ret)
		return ret;
	if (!bits(r[0], 18, 1))
		return 1;		/* IbsOpVal clear: no sample */
	if (!((caps & HW_IBS_CAPS_RIPINVALIDCHK) && bits(r[2], 38, 1))) {
		s->flags |= HW_IP;
		s->ip = r[1];
	}
	s->flags |= HW_TIMES;
	s->comp_to_ret = (uint32_t)bits(r[2], 0, 16);
	s->tag_to_ret = (uint32_t)bits(r[2], 16, 16);
	if (bits(r[2], 40, 1))
		s->flags |= HW_MICROCODE;
	ibs_branch(s, r[2]);
	if (has_br && (s->flags & HW_BRANCH)) {
		s->flags |= HW_BR_TARGET;
		s->br_target = br;
	}
	ibs_mem(s, r, caps);
	return 0;
}

/* --- measured samples into the epoch (import/perf.c calls these) --------------- */

/*
 * Each decoded sample counts at its instruction (the IP the tag names, so
 * no skid: IBS tags the op itself, PEBS reports the instruction that
 * retired) under events that follow the file's own: "<p>-op" every sample,
 * "<p>-dc-miss", "<p>-l2-miss", "<p>-dram" (local or remote DRAM),
 * "<p>-mispredict", "<p>-dc-miss-latency" (the sum of the measured miss
 * latencies, cycles), "<p>-tag-to-ret" (cycles from tag to retire) and
 * "<p>-comp-to-ret" (from completion to retire: the retire wait), p "ibs"
 * or "pebs" (PEBS has no tag or completion times).  With the attribute's
 * period, est_events_for scales them to events and cycles of the run.  The
 * data address of each sample is a value sample (VAL_ADDR) of the
 * instruction, and the data source of a miss a VAL_LATENCY one.
 */
enum { HW_EV_OP, HW_EV_DC_MISS, HW_EV_L2_MISS, HW_EV_DRAM, HW_EV_MISPREDICT, HW_EV_LAT,
       HW_EV_TAG, HW_EV_COMP, HW_EV_N };

static const char *const hw_ev_names[HW_EV_N] = {
	"op", "dc-miss", "l2-miss", "dram", "mispredict", "dc-miss-latency", "tag-to-ret",
	"comp-to-ret",
};

struct imp_hw {
	uint32_t attr[2];		/* the attribute of each kind, +1 (0: none) */
	uint64_t used[2], invalid[2], bad[2], addrs;
	char why[2][160];		/* the first bad sample's reason */
	struct val_profile *vals;	/* by image */
	size_t nvals;
	struct val_rng rng;
};

int imp_hw_new(struct imp_hw **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->rng.s = 0x1b5;
	return 0;
}

void imp_hw_free(struct imp_hw *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nvals; i++)
		val_profile_free(&h->vals[i]);
	free(h->vals);
	free(h);
}

int imp_hw_kind(const char *event, uint64_t sample_type)
{
	if (!strncmp(event, "ibs_op", 6) && (sample_type & PERF_SAMPLE_RAW))
		return IMP_HW_IBS;
	if ((sample_type & PERF_SAMPLE_DATA_SRC) &&
	    (sample_type & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)))
		return IMP_HW_PEBS;
	return 0;
}

void imp_hw_events(const struct imp_hw *h, const struct imp_event *file, struct imp_event *ev)
{
	for (int k = 0; k < 2; k++)
		for (int e = 0; e < HW_EV_N; e++) {
			struct imp_event *x = &ev[k * HW_EV_N + e];

			snprintf(x->name, sizeof(x->name), "%s-%s", k ? "pebs" : "ibs",
				 hw_ev_names[e]);
			x->period = h->attr[k] ? file[h->attr[k] - 1].period : 0;
			snprintf(x->unit, sizeof(x->unit), "events");
		}
}

static struct val_profile *hw_vals(struct imp_hw *h, uint32_t image)
{
	/* a zeroed profile is an initialized one (val_profile_init) */
	if (dcpi_grow_zero((void **)&h->vals, &h->nvals, (size_t)image + 1, sizeof(*h->vals)))
		return NULL;
	return &h->vals[image];
}

static int hw_values(struct imp_hw *h, uint32_t image, uint64_t offset,
		     const struct hw_sample *s)
{
	static const int level[HW_SRC_N] = {
		[HW_SRC_L1] = VAL_L1 + 1, [HW_SRC_LFB] = VAL_L2 + 1, [HW_SRC_L2] = VAL_L2 + 1,
		[HW_SRC_L3] = VAL_L3 + 1, [HW_SRC_NEAR_CACHE] = VAL_L3 + 1,
		[HW_SRC_FAR_CACHE] = VAL_DRAM + 1, [HW_SRC_DRAM] = VAL_DRAM + 1,
		[HW_SRC_REMOTE_DRAM] = VAL_DRAM + 1, [HW_SRC_PMEM] = VAL_DRAM + 1,
		[HW_SRC_EXT_MEM] = VAL_DRAM + 1, [HW_SRC_PEER_MEM] = VAL_DRAM + 1,
	};
	struct val_profile *p = hw_vals(h, image);
	struct val_hotlist *l;

	if (!p)
		return -ENOMEM;
	p->samples++;
	if (s->flags & HW_ADDR) {
		if (!(l = val_profile_list(p, offset, VAL_ADDR)))
			return -ENOMEM;
		val_hotlist_add(l, s->addr, &h->rng);
		h->addrs++;
	}
	if (level[s->src]) {
		if (!(l = val_profile_list(p, offset, VAL_LATENCY)))
			return -ENOMEM;
		val_hotlist_add(l, (uint64_t)(level[s->src] - 1), &h->rng);
	}
	return 0;
}

int imp_hw_add(struct imp_hw *h, struct agg *t, uint32_t base, int kind, uint32_t attr,
	       uint32_t image, uint64_t offset, const struct perf_sample *ps,
	       struct dcpi_err *err)
{
	struct dcpi_err e = { 0 };
	struct hw_sample s;
	uint32_t ev = base + (kind == IMP_HW_PEBS ? HW_EV_N : 0);
	int k = kind == IMP_HW_PEBS, rc;
	const uint64_t add[HW_EV_N] = { 1 };
	uint64_t v[HW_EV_N];

	h->attr[k] = attr + 1;
	if (kind == IMP_HW_IBS)
		rc = hw_ibs_op_decode(ps->raw, ps->raw_size, &s, &e);
	else
		rc = hw_pebs_decode(ps->ip, ps->addr, ps->weight,
				    (ps->sample_type & PERF_SAMPLE_WEIGHT_STRUCT) != 0,
				    ps->data_src, &s, &e);
	if (rc || !(s.flags & HW_IP)) {
		h->invalid[k] += rc == 1 || (!rc && !(s.flags & HW_IP));
		if (rc < 0 && !h->bad[k]++)
			snprintf(h->why[k], sizeof(h->why[k]), "%.150s", e.msg);
		return 0;
	}
	h->used[k]++;
	memcpy(v, add, sizeof(v));
	v[HW_EV_DC_MISS] = (s.flags & HW_DC_MISS) != 0;
	v[HW_EV_L2_MISS] = (s.flags & HW_L2_MISS) != 0;
	v[HW_EV_DRAM] = s.src == HW_SRC_DRAM || s.src == HW_SRC_REMOTE_DRAM;
	v[HW_EV_MISPREDICT] = (s.flags & HW_MISPREDICT) != 0;
	v[HW_EV_LAT] = (s.flags & HW_LAT) && (s.flags & HW_DC_MISS) ? s.lat : 0;
	v[HW_EV_TAG] = s.tag_to_ret;
	v[HW_EV_COMP] = s.comp_to_ret;
	for (int e2 = 0; e2 < HW_EV_N; e2++)
		if (v[e2] && (rc = agg_add(t, image, ev + (uint32_t)e2, offset, v[e2], err)))
			return rc;
	rc = hw_values(h, image, offset, &s);
	return rc ? dcpi_errf(err, rc, "measured samples: out of memory") : 0;
}

int imp_hw_write(struct imp_hw *h, imp_image_fn image_id, void *ctx, struct prof_db *db,
		 const char *epoch, char *note, size_t nlen, struct dcpi_err *err)
{
	size_t w = strlen(note);

	for (size_t i = 0; i < h->nvals; i++) {
		struct val_profile *p = &h->vals[i];
		int rc;

		if (!p->nlists)
			continue;
		p->image = *image_id(ctx, (uint32_t)i);
		rc = val_profile_normalize(p);
		if (rc < 0)
			return dcpi_errf(err, rc, "measured samples: out of memory");
		rc = val_epoch_write(db, epoch, p, err);
		if (rc < 0)
			return rc;
	}
	for (int k = 0; k < 2 && w < nlen; k++) {
		if (!h->used[k] && !h->invalid[k] && !h->bad[k])
			continue;
		w += (size_t)snprintf(note + w, nlen - w, "%s%s: %" PRIu64 " samples measured, %"
				      PRIu64 " not valid, %" PRIu64 " rejected%s%s", w ? "; " : "",
				      k ? "PEBS memory" : "IBS op", h->used[k], h->invalid[k],
				      h->bad[k], h->bad[k] ? " (first: " : "",
				      h->bad[k] ? h->why[k] : "");
		if (h->bad[k] && w < nlen)
			w += (size_t)snprintf(note + w, nlen - w, ")");
	}
	return 0;
}
