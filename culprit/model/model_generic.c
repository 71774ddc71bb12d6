/*
 * culprit/model/model_generic.c - a cautious 4-wide out-of-order x86-64 core, for
 * processors no other model describes (DCPI paper sec. 6.1.3).  Numbers are
 * deliberately middle-of-the-road (docs/models.md): 4 ALUs, 2 loads and 1
 * store per cycle, 5-cycle loads, 4-cycle FP, no move elimination.
 */
#include "model_tables.h"

enum {
	ALU0, ALU1, ALU2, ALU3, LD0, LD1, STA0, STD0, FP0, FP1, DIV, FDIV, NPORTS
};

#define B(p)	(1u << (p))
#define ALU	(B(ALU0) | B(ALU1) | B(ALU2) | B(ALU3))
#define BR	(B(ALU0) | B(ALU3))
#define MUL	B(ALU1)
#define LDP	(B(LD0) | B(LD1))
#define STA	B(STA0)
#define STD	B(STD0)
#define FMA	(B(FP0) | B(FP1))
#define FADD	(B(FP0) | B(FP1))
#define FANY	(B(FP0) | B(FP1))
#define FSHUF	B(FP1)

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "ld0", "ld1", "sta", "std", "fp0", "fp1", "div", "fdiv",
};

#define U(x)	MODEL_U_##x

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	/* no move elimination */
	{ MC_MOV_RR, .lat = V(1), .unit = V(U(ALU)), .kind = V(0) },
	{ MC_VMOV_RR, .lat = V(1), .unit = V(U(FANY)), .kind = V(0) },
	{ MC_LEA3, .lat = V(3) },
	{ MC_DIV64, .lat = V(40), .busy = V(20) },
	{ MC_IDIV64, .lat = V(40), .busy = V(20) },
	{ MC_DIV32, .lat = V(26) },
	{ MC_FMA, .lat = V(5) },
	{ MC_FMUL, .lat = V(4) },
	{ MC_FADD, .lat = V(4) },
};

struct model model_generic = {
	.name = "generic",
	.desc = "a cautious 4-wide out-of-order x86-64 core",
	MODEL_4WIDE,
	.rob_size = 192,
	.sched_size = 64,
	.load_lat_fp = 7,
	.store_fwd_lat = 5,
	.move_elim = 0,
	.l3_lat = 45,
	.dram_lat = 300,
	.tlb_miss_lat = 35,
	.mispredict_penalty = 15,
};

MODEL_CPU(generic, MODEL_UNITS(ALU, ALU, ALU, FANY, FADD, FADD), [U(VEC2GPR)] = B(FP0));
