/*
 * culprit/model_zen3.c - AMD Zen 3 (family 19h; also used for family 17h)
 * as data for the best-case scheduler (DCPI paper sec. 6.1.3).  Sources in
 * docs/models.md: AMD Software Optimization Guide for family 19h, Agner
 * Fog's and uops.info's tables.  Not measured here: 6-wide dispatch, 4 ALUs,
 * 3 AGUs, 3-cycle FP add, store-to-load forwarding without memory renaming.
 */
#include "dcpi/model.h"

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

#define ANY	0
#define REG	MODEL_FORM(CFG_F_REG)
#define LD	MODEL_FORM(CFG_F_LOAD)
#define ST	MODEL_FORM(CFG_F_STORE)
#define NOVEC	0, 0
#define VEC	64, 512
#define AV	MODEL_ANYVEC

static const char *const port_names[NPORTS] = {
	"alu0", "alu1", "alu2", "alu3", "agu0", "agu1", "agu2", "std0", "std1",
	"fp0", "fp1", "fp2", "fp3", "fst0", "fst1", "div", "fdiv",
};

/* pattern, forms, vec range, need, avoid, lat, uops, ports, busy, kind */
static const struct model_class classes[] = {
	/* handled at rename: no port, no latency */
	{ "*", ANY, AV, MODEL_T_NOP, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "*", REG, AV, MODEL_T_ZERO, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "mov", REG, VEC, MODEL_T_VEC, 0, 3, 1, FANY, 1, 0 },	/* movq/movd gpr<->xmm */
	{ "movd", REG, VEC, MODEL_T_VEC, 0, 3, 1, FANY, 1, 0 },
	{ "vmovd", REG, VEC, MODEL_T_VEC, 0, 3, 1, FANY, 1, 0 },
	{ "mov", REG, NOVEC, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "movap*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "vmovap*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "movup*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "vmovup*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "movdq*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "vmovdq*", REG, AV, MODEL_T_REGMOV, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	/* plain loads and stores: the scheduler adds the load/store ports */
	{ "mov", LD | ST, NOVEC, 0, 0, 0, 1, 0, 1, 0 },
	{ "movz*", LD, AV, 0, 0, 0, 1, 0, 1, 0 },
	{ "movs*", LD, AV, 0, 0, 0, 1, 0, 1, 0 },
	{ "*mov*", LD | ST, VEC, 0, 0, 0, 1, 0, 1, 0 },
	{ "vbroadcast*", LD, AV, 0, 0, 0, 1, 0, 1, 0 },
	{ "mov", REG, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },		/* mov $imm */
	{ "movabs", REG, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "movz*", REG, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "movs*", REG, NOVEC, 0, MODEL_T_FP, 1, 1, ALU, 1, 0 },
	{ "push", ANY, AV, 0, 0, 0, 1, 0, 1, MODEL_K_PUSH },
	{ "pop", ANY, AV, 0, 0, 0, 1, 0, 1, MODEL_K_POP },
	/* control transfers */
	{ "call*", ANY, AV, 0, 0, 1, 1, BR, 1, MODEL_K_PUSH },
	{ "ret*", ANY, AV, 0, 0, 1, 1, BR, 1, MODEL_K_POP },
	{ "*", ANY, AV, MODEL_T_BRANCH, 0, 1, 1, BR, 1, 0 },
	/* integer ALU */
	{ "add", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "sub", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "and", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "or", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "xor", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "cmp", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "test", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "inc", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "dec", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, MODEL_K_FUSE },
	{ "adc", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "sbb", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "neg", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "not", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "shl", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "sal", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "shr", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "sar", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "rol", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "ror", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "shlx", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "shrx", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "sarx", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "rorx", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "shld", ANY, NOVEC, 0, 0, 2, 2, ALU, 1, 0 },
	{ "shrd", ANY, NOVEC, 0, 0, 2, 2, ALU, 1, 0 },
	{ "bt", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "bts", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "btr", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "btc", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "andn", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "bswap", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "set*", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cmov*", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "popcnt", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "lzcnt", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "tzcnt", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "bsf", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "bsr", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cltq", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cqto", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cltd", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cwtl", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "xchg", REG, NOVEC, 0, 0, 1, 2, ALU, 1, 0 },
	{ "lea", ANY, NOVEC, MODEL_T_LEA3, 0, 2, 1, ALU, 1, 0 },
	{ "lea", ANY, NOVEC, MODEL_T_LEASC, 0, 2, 1, ALU, 1, 0 },
	{ "lea", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "imul", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "mul", ANY, NOVEC, 0, 0, 3, 2, MUL, 1, 0 },
	{ "mulx", ANY, NOVEC, 0, 0, 4, 2, MUL, 1, 0 },
	{ "crc32*", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "div", ANY, NOVEC, MODEL_T_Q, 0, 14, 2, B(DIV), 7, 0 },
	{ "idiv", ANY, NOVEC, MODEL_T_Q, 0, 14, 2, B(DIV), 7, 0 },
	{ "div", ANY, NOVEC, 0, 0, 10, 2, B(DIV), 10, 0 },
	{ "idiv", ANY, NOVEC, 0, 0, 10, 2, B(DIV), 10, 0 },
	/* floating point and SIMD */
	{ "vfmadd*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfmsub*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfnmadd*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfnmsub*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "muls*", ANY, AV, MODEL_T_FP, 0, 3, 1, FMA, 1, 0 },
	{ "mulp*", ANY, AV, MODEL_T_FP, 0, 3, 1, FMA, 1, 0 },
	{ "vmul*", ANY, AV, MODEL_T_FP, 0, 3, 1, FMA, 1, 0 },
	{ "adds*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "addp*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "subs*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "subp*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "vadd*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "vsub*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "min*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "max*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "vmin*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "vmax*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "cmp*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "vcmp*", ANY, AV, MODEL_T_FP, 0, 3, 1, FADD, 1, 0 },
	{ "ucomis*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "vucomis*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "comis*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "vcomis*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "divs*", ANY, AV, MODEL_T_FP, 0, 13, 1, B(FDIV), 5, 0 },
	{ "divp*", ANY, AV, MODEL_T_FP, 0, 13, 1, B(FDIV), 5, 0 },
	{ "vdiv*", ANY, AV, MODEL_T_FP, 0, 13, 1, B(FDIV), 5, 0 },
	{ "sqrt*", ANY, AV, 0, 0, 15, 1, B(FDIV), 6, 0 },
	{ "vsqrt*", ANY, AV, 0, 0, 15, 1, B(FDIV), 6, 0 },
	{ "cvt*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "vcvt*", ANY, AV, 0, 0, 3, 1, FADD, 1, 0 },
	{ "andp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "andnp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "orp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "xorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vandp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vandnp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vxorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "pmul*", ANY, AV, 0, 0, 3, 1, FMA, 1, 0 },
	{ "vpmul*", ANY, AV, 0, 0, 3, 1, FMA, 1, 0 },
	{ "pshuf*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vpshuf*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "shufp*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vshufp*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "unpck*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vunpck*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "punpck*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vpunpck*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vperm*", ANY, AV, 0, 0, 3, 1, FSHUF, 1, 0 },
	{ "vinsert*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vextract*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vbroadcast*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vpbroadcast*", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "palignr", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "vpalignr", ANY, AV, 0, 0, 1, 1, FSHUF, 1, 0 },
	{ "blend*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vblend*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vpblend*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "pmovmskb", ANY, AV, 0, 0, 3, 1, B(FST0) | B(FST1), 1, 0 },
	{ "vpmovmskb", ANY, AV, 0, 0, 3, 1, B(FST0) | B(FST1), 1, 0 },
	{ "movmskp*", ANY, AV, 0, 0, 3, 1, B(FST0) | B(FST1), 1, 0 },
	{ "p*", ANY, VEC, MODEL_T_VEC, 0, 1, 1, FANY, 1, 0 },	/* integer SIMD */
	{ "vp*", ANY, VEC, MODEL_T_VEC, 0, 1, 1, FANY, 1, 0 },
};

/* Unknown forms: a long-ish latency on any ALU or FP pipe, counted by callers. */
static const struct model_class fallback = {
	"?", ANY, AV, 0, 0, 3, 2, ALU | FANY, 1, 0
};

const struct model model_zen3 = {
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
	.store_fwd_lat = 6,
	.mem_rename = 0,
	.move_elim = 1,
	.taken_per_cycle = 1,
	.l1_lat = 4,
	.l2_lat = 12,
	.l3_lat = 46,
	.dram_lat = 400,
	.tlb_miss_lat = 40,
	.mispredict_penalty = 13,
	.classes = classes,
	.nclasses = sizeof(classes) / sizeof(classes[0]),
	.fallback = &fallback,
};
