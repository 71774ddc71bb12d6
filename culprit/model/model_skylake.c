/*
 * culprit/model/model_skylake.c - Intel Skylake (and its many family-6
 * derivatives) as data for the best-case scheduler (DCPI paper sec. 6.1.3).
 * Sources in docs/models.md: the Intel 64 and IA-32 Architectures
 * Optimization Reference Manual, Agner Fog's and uops.info's tables.  Not
 * measured here: ports 0-7, 4-wide rename and retire, 4-cycle FP add/mul/FMA,
 * slow 3-component lea, no memory renaming (store forwarding ~4-5 cycles).
 */
#include "model_tables.h"

enum {
	P0, P1, P2, P3, P4, P5, P6, P7, DIV, FDIV, NPORTS
};

#define B(p)	(1u << (p))
#define ALU	(B(P0) | B(P1) | B(P5) | B(P6))
#define BR	(B(P0) | B(P6))
#define SHIFT	(B(P0) | B(P6))
#define MUL	B(P1)
#define LEA	(B(P1) | B(P5))
#define LDP	(B(P2) | B(P3))
#define STA	(B(P2) | B(P3) | B(P7))
#define STD	B(P4)
#define FMA	(B(P0) | B(P1))
#define FADD	(B(P0) | B(P1))
#define FANY	(B(P0) | B(P1) | B(P5))
#define FSHUF	B(P5)

static const char *const port_names[NPORTS] = {
	"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "div", "fdiv",
};

#define U(x)	MODEL_U_##x

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	/* movd/movq xmm -> gpr 1 uop p0, gpr -> xmm 1 uop p5, 2 cycles (UO; INT
	 * table C-16 gives 2 for both) */
	{ MC_MOV_GPR_VEC, .lat = V(2) },
	/* 4 uops on p0156, one a cycle (UO, AF) */
	{ MC_VZEROUPPER, .on = V(1), .uops = V(4) },
	/* macro-fusion without or/xor */
	{ MC_ALU_LOGIC, .kind = V(0) },
	{ MC_BITCOUNT, .lat = V(3), .unit = V(U(MUL)) },
	/* 3-component lea 3 cycles on p1 */
	{ MC_LEA3, .lat = V(3), .unit = V(U(MUL)) },
	{ MC_LEA_SC, .lat = V(1), .unit = V(U(LEA)) },
	{ MC_DIV64, .lat = V(42), .uops = V(4), .busy = V(24) },
	{ MC_IDIV64, .lat = V(42), .uops = V(4), .busy = V(24) },
	{ MC_DIV32, .lat = V(26), .uops = V(4), .busy = V(6) },
	{ MC_FMUL, .lat = V(4) },
	{ MC_FADD, .lat = V(4) },
	{ MC_FCOMI, .lat = V(2) },
	{ MC_FDIV, .lat = V(14), .busy = V(4) },
	{ MC_FSQRT, .lat = V(18) },
	/* single precision as double (not measured) */
	{ MC_FDIV_S, .lat = V(14), .busy = V(4) },
	{ MC_FSQRT_S, .lat = V(18) },
	{ MC_FCVT, .lat = V(4), .uops = V(2) },
	/* 1 uop p5, 6 cycles (UO PCLMULQDQ (XMM, XMM, I8), AF) */
	{ MC_PCLMUL, .on = V(1), .lat = V(6), .busy = V(1) },
	{ MC_VIMUL, .lat = V(5) },
};

struct model model_skylake = {
	.name = "skylake",
	.desc = "Intel Skylake and its family-6 derivatives",
	MODEL_4WIDE,
	.rob_size = 224,
	.sched_size = 97,
	.load_lat_fp = 6,
	.store_fwd_lat = 4,
	.move_elim = 1,
	.l3_lat = 42,
	.dram_lat = 250,
	.tlb_miss_lat = 30,
	.mispredict_penalty = 16,
};

MODEL_CPU(skylake, MODEL_UNITS(ALU, SHIFT, LEA, B(P0) | B(P5), B(P0), FANY),
	  [U(VZU)] = ALU, [U(VEC2GPR)] = B(P0), [U(PCLMUL)] = B(P5));
