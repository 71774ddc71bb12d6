/*
 * culprit/model/model_zen3.c - AMD Zen 3 (family 19h; also used for family 17h)
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

#include "model_zen.h"

#define ALU	(B(ALU0) | B(ALU1) | B(ALU2) | B(ALU3))
#define BR	(B(ALU0) | B(ALU3))
#define AGU	(B(AGU0) | B(AGU1) | B(AGU2))

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "agu0", "agu1", "agu2", "std0", "std1",
	"fp0", "fp1", "fp2", "fp3", "fst0", "fst1", "div", "fdiv",
};

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	{ MC_DIV64, .busy = V(7) },		/* partly pipelined (AF) */
	{ MC_IDIV64, .busy = V(7) },
};

struct model model_zen3 = {
	.name = "zen3",
	.desc = "AMD Zen 3 (family 19h, models 00h-0Fh, 20h-5Fh)",
	/* complex addresses, sign-extending loads, stores of an immediate and
	 * the high half of a multiply as Zen 4 (not measured on Zen 3) */
	MODEL_ZEN,
	.dispatch_width = 6,
	.rob_size = 256,
	.sched_size = 152,
	.store_fwd_lat = 6,
	.store_fwd_fail = 17,
	.mem_rename = 0,
	.taken_per_cycle = 1,
	.loop_line_bytes = 64,	/* as Zen 4 (not measured here) */
	.l2_lat = 12,
	.l3_lat = 46,
};

MODEL_CPU(zen3, MODEL_ZEN_UNITS(ALU, ALU));
