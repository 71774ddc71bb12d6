/*
 * culprit/model/model_zen.h - what the AMD Zen models (model_zen3.c,
 * model_zen4.c, model_zen5.c) share.  Included after each file's enum of
 * ports, which must name ALU1, STD0-1, FP0-3, FST0-1, DIV and FDIV.
 */
#ifndef DCPI_CULPRIT_MODEL_ZEN_H
#define DCPI_CULPRIT_MODEL_ZEN_H

#define B(p)	(1u << (p))
#define MUL	B(ALU1)
#define STD	(B(STD0) | B(STD1))
/* FP pipes: FMA and multiplies on fp0-1, adds on fp2-3, shuffles on fp1-2 */
#define FMA	(B(FP0) | B(FP1))
#define FADD	(B(FP2) | B(FP3))
#define FANY	(B(FP0) | B(FP1) | B(FP2) | B(FP3))
#define FSHUF	(B(FP1) | B(FP2))

/*
 * The Zen struct model fields: retiring 8 a cycle, move elimination,
 * 4-cycle integer and 7-cycle FP loads, 4-cycle L1, 400-cycle memory, 40-cycle TLB misses, 13-cycle
 * mispredictions, and these Zen 4 measurements (docs/models.md; dcpi
 * calibrate measures them on other cores): an index scaled by 2-8 or base +
 * index + disp, and movsx/movsxd loads, one cycle more each (lat.cload,
 * lat.sxload: 5.0 per load, 6.0 for both, "Load latency"); movl $imm,mem
 * takes an ALU for its data (param.st_imm 2.12 cycles, the same from
 * registers 1.50, "Stores of an immediate"); mul and one-operand imul give
 * rax in 3 cycles, rdx in 4 (param.mul_hi, "The high half of a multiply").
 */
#define MODEL_ZEN									\
	.retire_width = 8, MODEL_PORTS(AGU, AGU, STD), .load_lat = 4, .load_lat_fp = 7,	\
	.load_lat_complex = 1, .load_lat_sext = 1, .store_imm_alu = 1, .mul_hi_extra = 1,	\
	.move_elim = 1, .l1_lat = 4, .dram_lat = 400, .tlb_miss_lat = 40,		\
	.mispredict_penalty = 13
/* The Zen units: shifts, setcc/cmov and lea on any ALU but what differs,
 * (u)comis and conversions on the FP adders, xmm->gpr on the FP stores. */
#define MODEL_ZEN_UNITS(shift, flagrd)							\
	MODEL_UNITS(shift, flagrd, ALU, FANY, FADD, FADD),				\
	[MODEL_U_VEC2GPR] = B(FST0) | B(FST1)

#endif /* DCPI_CULPRIT_MODEL_ZEN_H */
