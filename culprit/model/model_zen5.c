/*
 * culprit/model/model_zen5.c - AMD Zen 5 (family 1Ah) as data: widths, ports,
 * latencies and instruction classes for the best-case scheduler (DCPI paper
 * sec. 6.1.3).  Sources per number in docs/models.md: the AMD Software
 * Optimization Guide for the 1Ah family (57238) and public instruction tables
 * (Agner Fog, uops.info).  Not measured: the project's machines turned out to
 * be Zen 4, so the figures once cited here as "timed on Zen 5" (add 1, imul 3,
 * FP mul 3, FMA 4, div ~14, loads at 4 cycles, store-reload renamed) are Zen 4
 * figures that AMD documents the same for Zen 5; 2-cycle FP add, 4 loads and
 * 6 ALUs a cycle and full-width 512-bit pipes are Zen 5's from 57238 only.
 */
#include "model_tables.h"

enum {
	ALU0, ALU1, ALU2, ALU3, ALU4, ALU5, AGU0, AGU1, AGU2, AGU3, STD0, STD1,
	FP0, FP1, FP2, FP3, FST0, FST1, DIV, FDIV, NPORTS
};

#include "model_zen.h"

#define ALU	(B(ALU0) | B(ALU1) | B(ALU2) | B(ALU3) | B(ALU4) | B(ALU5))
#define BR	(B(ALU0) | B(ALU1))
#define AGU	(B(AGU0) | B(AGU1) | B(AGU2) | B(AGU3))

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "alu4", "alu5", "agu0", "agu1", "agu2", "agu3",
	"std0", "std1", "fp0", "fp1", "fp2", "fp3", "fst0", "fst1", "div", "fdiv",
};

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	{ MC_FADD, .lat = V(2) },		/* AMD 57238 */
};

struct model model_zen5 = {
	.name = "zen5",
	.desc = "AMD Zen 5 (family 1Ah)",
	/* complex addresses, sign-extending loads, stores of an immediate and
	 * the high half of a multiply as Zen 4 (not measured on Zen 5) */
	MODEL_ZEN,
	.dispatch_width = 8,
	.rob_size = 448,
	.sched_size = 184,
	/* through the store queue when renaming cannot see it: as measured on
	 * Zen 4 (not on Zen 5; dcpi calibrate measures it) */
	.store_fwd_lat = 7,
	.store_fwd_fail = 18,
	.mem_rename = 1,
	.taken_per_cycle = 2,
	.l2_lat = 14,
	.l3_lat = 50,
};

MODEL_CPU(zen5, MODEL_ZEN_UNITS(ALU, ALU));
