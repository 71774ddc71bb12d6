/*
 * culprit/model/model_zen4.c - AMD Zen 4 (family 19h) as data for the best-case
 * scheduler (DCPI paper sec. 6.1.3).  The project's machines are Zen 4 (Genoa):
 * the numbers come from loop bodies timed on them (bench/bhive/measured-micro.tsv,
 * names cited beside the rows), else from AMD's Software Optimization Guide for
 * family 19h and Agner Fog's and uops.info's tables; docs/models.md has each
 * source.  6-wide dispatch, 4 ALUs, 3 loads (2 of them vector) per cycle,
 * 3-cycle FP add, 512-bit ops through the 256-bit pipes twice.
 */
#include "model_tables.h"

enum {
	ALU0, ALU1, ALU2, ALU3, AGU0, AGU1, AGU2, STD0, STD1,
	FP0, FP1, FP2, FP3, FST0, FST1, DIV, FDIV, LOCK, NPORTS
};

#include "model_zen.h"

#define ALU	(B(ALU0) | B(ALU1) | B(ALU2) | B(ALU3))
#define BR	(B(ALU0) | B(ALU3))
#define AGU	(B(AGU0) | B(AGU1) | B(AGU2))
#define VLD	(B(AGU0) | B(AGU1))	/* two 256-bit load paths to the FP unit */
/* shifts, rotates, bt 2/cycle on the multiplier's ALU and one more (shl_indep8 4.0,
 * bt_shl4 2.0, imul_shl_indep 3.8 where a free ALU1 gives 3.0); setcc and cmov 2/cycle
 * on two others (setcc_indep4 2.0, cmov_indep8 4.0, cmov_setcc4 2.1, cmov_shl4 1.05) */
#define SHIFT	(B(ALU1) | B(ALU2))
#define FLAGRD	(B(ALU0) | B(ALU3))

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "agu0", "agu1", "agu2", "std0", "std1",
	"fp0", "fp1", "fp2", "fp3", "fst0", "fst1", "div", "fdiv", "lock",
};

#define U(x)	MODEL_U_##x

/* What differs from model_base.c, and why */
static const struct model_delta delta[] = {
	/* nop12: 12 nops in 1.05 cycles, above the 6-wide dispatch: no slot at all */
	{ MC_NOP, .uops = V(0) },
	/* nop8_12, nop10_12 2.0: nops of 8 bytes or more take a slot each */
	{ MC_NOP_LONG, .on = V(1) },
	/* cmpxchg_mem 9.0, lock_cmpxchg 9.0, microcoded (measured only as a chain
	 * through memory) */
	{ MC_CMPXCHG, .on = V(1) },
	/* atomics serialize each other, whatever the address: lock_add 7.1,
	 * lock_add4 (four lines) 31.5, xchg_mem 7.7, lock_add_add4 6.3 */
	{ MC_LOCK, .on = V(1) },
	/* sbb r,r is a zero idiom for r only: sbb_self4 4.0, a chain through CF */
	{ MC_SBB_ZERO, .on = V(1) },
	/* vzu_only 1.0: one a cycle (which pipe: *est.*) */
	{ MC_VZEROUPPER, .on = V(1) },
	/* st16_1line4: vector stores use the store ports only */
	{ MC_VSTORE, .on = V(1) },
	/* shld_chain 2.0, shld_indep4 6.0: three cycles of a shift ALU each */
	{ MC_SHLD, .busy = V(3) },
	/* bts_chain 2.0, bts_indep4 4.0 */
	{ MC_BTS, .lat = V(2), .busy = V(2) },
	/* xchg1 0.33, xchg_indep4 1.33: renamed, two slots */
	{ MC_XCHG, .lat = V(0), .unit = V(U(NONE)), .kind = V(MODEL_K_ELIM) },
	/* base + index + displacement: 2 cycles holding any ALU both (lea_complex,
	 * _indep4 2.0, lea3_indep6 3.0, lea3_shl6 2.0, lea3_setcc4 1.5, rol_lea3_4 1.5);
	 * a scaled index alone is 1 cycle, as other lea (lea_index, lea 8(,%rax,4) chain) */
	{ MC_LEA3, .busy = V(2) },
	{ MC_LEA_SC, .on = V(0) },
	/* the divider's latency grows with the quotient: div r64 13.7 (128-bit
	 * dividends), cqo; idiv r64 9.0 (a 64-bit dividend, small quotients, which is
	 * what compilers emit), div r32 11.7 */
	{ MC_IDIV64, .lat = V(8), .busy = V(8) },
	{ MC_DIV32, .lat = V(12), .busy = V(12) },
	/* pclmul_chain 4.0, pclmul_indep4 8.0 (which pipes: *est.*) */
	{ MC_PCLMUL, .on = V(1) },
	/* divides and square roots, chains and 4 independent (2026-11-26,
	 * docs/models.md "Single and double precision"): divss/divps/vdivps ymm
	 * 11.0 a link, 12.0 for 4; divsd/vdivpd 13.0, 18.0 for 4 (the fdiv row);
	 * sqrtss/vsqrtps 15.0, 20.0 for 4; sqrtsd/vsqrtpd 21.1, 36 for 4 */
	{ MC_FDIV_S, .lat = V(11), .busy = V(3) },
	{ MC_FSQRT_S, .lat = V(15), .busy = V(5) },
	{ MC_FSQRT, .lat = V(21), .busy = V(8) },
};

struct model model_zen4 = {
	.name = "zen4",
	.desc = "AMD Zen 4 (family 19h, models 10h-1Fh, 60h-7Fh, A0h-AFh)",
	/* complex addresses, sign-extending loads, stores of an immediate and
	 * the high half of a multiply: measured here (2026-11-26), model_tables.h */
	MODEL_ZEN,
	.dispatch_width = 6,
	.rob_size = 320,
	.sched_size = 160,
	/* through the store queue, when renaming cannot see it (the pointer moved
	 * or was copied since the store): st.fwd_moved 8.0 = 7 + the add */
	.store_fwd_lat = 7,
	.store_fwd_fail = 18,
	.mem_rename = 1,
	.taken_per_cycle = 1,
	/* a loop of a few adds runs 1.00 cycles an iteration inside one 64-byte
	 * line and 2.02 across two, whatever the ALUs allow below that (nine loop
	 * sizes at seven alignments; docs/models.md "Loops across a line") */
	.loop_line_bytes = 64,
	.l2_lat = 14,
	.l3_lat = 50,
	.vec_load_ports = VLD,
	.vec_pipe_bits = 256,
	/* st16_1line4 4.0, vst8_1line8 8.0: vector stores 1/cycle; st64_8lines8 16.0 */
	.vec_store_data_ports = B(FST0),
	/* st8_1line8 4.0, st8_2lines8 8.0, st_pair_8_16 2.0, st_pair_24_32 4.0,
	 * st8_cross8 16.0: docs/models.md "Stores" */
	.store_queue = 64,
	.store_pair_bytes = 32,
};

MODEL_CPU(zen4, MODEL_ZEN_UNITS(SHIFT, FLAGRD),
	  [U(LOCK)] = B(LOCK), [U(VZU)] = B(FP0), [U(PCLMUL)] = FMA);
