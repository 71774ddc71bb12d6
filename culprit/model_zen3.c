/*
 * culprit/model_zen3.c - AMD Zen 3 (family 19h; also used for family 17h)
 * as data for the best-case scheduler (DCPI paper sec. 6.1.3).  Sources in
 * docs/models.md: AMD Software Optimization Guide for family 19h, Agner
 * Fog's and uops.info's tables.  Not measured here: 6-wide dispatch, 4 ALUs,
 * 3 AGUs, 3-cycle FP add, store-to-load forwarding without memory renaming.
 */
#include "model_tables.h"

enum {
	ALU0, ALU1, ALU2, ALU3, AGU0, AGU1, AGU2, STD0, STD1,
	FP0, FP1, FP2, FP3, FST0, FST1, DIV, FDIV, NPORTS
};

#define B(p)	(1u << (p))
#define ALU	(B(ALU0) | B(ALU1) | B(ALU2) | B(ALU3))
#define BR	(B(ALU0) | B(ALU3))
#define MUL	B(ALU1)
#define AGU	(B(AGU0) | B(AGU1) | B(AGU2))
#define STD	(B(STD0) | B(STD1))
#define FMA	(B(FP0) | B(FP1))
#define FADD	(B(FP2) | B(FP3))
#define FANY	(B(FP0) | B(FP1) | B(FP2) | B(FP3))
#define FSHUF	(B(FP1) | B(FP2))

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "agu0", "agu1", "agu2", "std0", "std1",
	"fp0", "fp1", "fp2", "fp3", "fst0", "fst1", "div", "fdiv",
};

#define U(x)	MODEL_U_##x

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	{ MC_DIV64, .busy = V(7) },		/* partly pipelined (AF) */
	{ MC_IDIV64, .busy = V(7) },
};

struct model model_zen3 = {
	.name = "zen3",
	.desc = "AMD Zen 3 (family 19h, models 00h-0Fh, 20h-5Fh)",
	.dispatch_width = 6,
	.retire_width = 8,
	.rob_size = 256,
	.sched_size = 152,
	.nports = NPORTS,
	.port_names = port_names,
	.alu_ports = ALU,
	.branch_ports = BR,
	.load_ports = AGU,
	.store_addr_ports = AGU,
	.store_data_ports = STD,
	.fp_ports = FANY,
	.load_lat = 4,
	.load_lat_fp = 7,
	/* complex addresses and sign-extending loads: one cycle more each, as
	 * measured on Zen 4 (not on Zen 3; dcpi calibrate measures them) */
	.load_lat_complex = 1,
	.load_lat_sext = 1,
	.store_imm_alu = 1,	/* as Zen 4 (not measured here) */
	.mul_hi_extra = 1,	/* as Zen 4 (not measured here) */
	.store_fwd_lat = 6,
	.store_fwd_fail = 17,
	.mem_rename = 0,
	.move_elim = 1,
	.taken_per_cycle = 1,
	.loop_line_bytes = 64,	/* as Zen 4 (not measured here) */
	.l1_lat = 4,
	.l2_lat = 12,
	.l3_lat = 46,
	.dram_lat = 400,
	.tlb_miss_lat = 40,
	.mispredict_penalty = 13,
};

const struct model_cpu model_cpu_zen3 = {
	.m = &model_zen3,
	.units = {
		[U(ALU)] = ALU, [U(BR)] = BR, [U(SHIFT)] = ALU, [U(FLAGRD)] = ALU,
		[U(MUL)] = MUL, [U(LEA)] = ALU, [U(DIV)] = B(DIV), [U(GPR2VEC)] = FANY,
		[U(FMA)] = FMA, [U(FADD)] = FADD, [U(FCOMI)] = FADD, [U(FCVT)] = FADD,
		[U(FANY)] = FANY, [U(FSHUF)] = FSHUF, [U(FDIV)] = B(FDIV),
		[U(VEC2GPR)] = B(FST0) | B(FST1), [U(ALUFP)] = ALU | FANY,
	},
	.delta = delta,
	.ndelta = sizeof(delta) / sizeof(delta[0]),
};
