/*
 * culprit/model_skylake.c - Intel Skylake (and its many family-6
 * derivatives) as data for the best-case scheduler (DCPI paper sec. 6.1.3).
 * Sources in docs/models.md: the Intel 64 and IA-32 Architectures
 * Optimization Reference Manual, Agner Fog's and uops.info's tables.  Not
 * measured here: ports 0-7, 4-wide rename and retire, 4-cycle FP add/mul/FMA,
 * slow 3-component lea, no memory renaming (store forwarding ~4-5 cycles).
 */
#include "dcpi/model.h"

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

#define ANY	0
#define REG	MODEL_FORM(CFG_F_REG)
#define LD	MODEL_FORM(CFG_F_LOAD)
#define ST	MODEL_FORM(CFG_F_STORE)
#define NOVEC	0, 0
#define VEC	64, 512
#define AV	MODEL_ANYVEC

static const char *const port_names[NPORTS] = {
	"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "div", "fdiv",
};

/* pattern, forms, vec range, need, avoid, lat, uops, ports, busy, kind */
static const struct model_class classes[] = {
	/* handled at rename: no port, no latency */
	{ "*", ANY, AV, MODEL_T_NOP, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	{ "*", REG, AV, MODEL_T_ZERO, 0, 0, 1, 0, 1, MODEL_K_ELIM },
	/* movd/movq xmm -> gpr 1 uop p0, gpr -> xmm 1 uop p5, 2 cycles (UO; INT
	 * table C-16 gives 2 for both) */
	{ "mov", REG, VEC, MODEL_T_VEC, 0, 2, 1, B(P0) | B(P5), 1, 0 },
	{ "movd", REG, VEC, MODEL_T_VEC, 0, 2, 1, B(P0) | B(P5), 1, 0 },
	{ "vmovd", REG, VEC, MODEL_T_VEC, 0, 2, 1, B(P0) | B(P5), 1, 0 },
	/* 4 uops on p0156, one a cycle (UO, AF) */
	{ "vzeroupper", ANY, AV, 0, 0, 1, 4, ALU, 1, 0 },
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
	/*
	 * Vector loads and stores, legacy SSE and VEX alike (movups, movdqu, movdqa,
	 * movaps, movsd, movss, movq, vmovups ...): one load uop on p2/p3 at the FP
	 * load-to-use latency, or store-address p2/p3/p7 plus store-data p4, no
	 * other port (INT 2.3 "Skylake" load/store, UO MOVUPS/MOVDQU (XMM, M128)
	 * 1*p23, MOVUPS (M128, XMM) 1*p237+1*p4).  Until 2026-11-22 this row's
	 * "*mov*" matched nothing (classify.c read it as a prefix) and all of
	 * these took the fallback class.
	 */
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
	{ "or", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "xor", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
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
	{ "set*", ANY, NOVEC, 0, 0, 1, 1, SHIFT, 1, 0 },
	{ "cmov*", ANY, NOVEC, 0, 0, 1, 1, SHIFT, 1, 0 },
	{ "popcnt", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "lzcnt", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "tzcnt", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "bsf", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "bsr", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "cltq", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cqto", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cltd", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "cwtl", ANY, NOVEC, 0, 0, 1, 1, ALU, 1, 0 },
	{ "xchg", REG, NOVEC, 0, 0, 1, 2, ALU, 1, 0 },
	{ "lea", ANY, NOVEC, MODEL_T_LEA3, 0, 3, 1, MUL, 1, 0 },
	{ "lea", ANY, NOVEC, MODEL_T_LEASC, 0, 1, 1, LEA, 1, 0 },
	{ "lea", ANY, NOVEC, 0, 0, 1, 1, LEA, 1, 0 },
	{ "imul", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "mul", ANY, NOVEC, 0, 0, 3, 2, MUL, 1, 0 },
	{ "mulx", ANY, NOVEC, 0, 0, 4, 2, MUL, 1, 0 },
	{ "crc32*", ANY, NOVEC, 0, 0, 3, 1, MUL, 1, 0 },
	{ "div", ANY, NOVEC, MODEL_T_Q, 0, 42, 4, B(DIV), 24, 0 },
	{ "idiv", ANY, NOVEC, MODEL_T_Q, 0, 42, 4, B(DIV), 24, 0 },
	{ "div", ANY, NOVEC, 0, 0, 26, 4, B(DIV), 6, 0 },
	{ "idiv", ANY, NOVEC, 0, 0, 26, 4, B(DIV), 6, 0 },
	/* floating point and SIMD */
	{ "vfmadd*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfmsub*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfnmadd*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "vfnmsub*", ANY, AV, 0, 0, 4, 1, FMA, 1, 0 },
	{ "muls*", ANY, AV, MODEL_T_FP, 0, 4, 1, FMA, 1, 0 },
	{ "mulp*", ANY, AV, MODEL_T_FP, 0, 4, 1, FMA, 1, 0 },
	{ "vmul*", ANY, AV, MODEL_T_FP, 0, 4, 1, FMA, 1, 0 },
	{ "adds*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "addp*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "subs*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "subp*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "vadd*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "vsub*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "min*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "max*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "vmin*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "vmax*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "cmp*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "vcmp*", ANY, AV, MODEL_T_FP, 0, 4, 1, FADD, 1, 0 },
	{ "ucomis*", ANY, AV, 0, 0, 2, 1, B(P0), 1, 0 },
	{ "vucomis*", ANY, AV, 0, 0, 2, 1, B(P0), 1, 0 },
	{ "comis*", ANY, AV, 0, 0, 2, 1, B(P0), 1, 0 },
	{ "vcomis*", ANY, AV, 0, 0, 2, 1, B(P0), 1, 0 },
	{ "divs*", ANY, AV, MODEL_T_FP, 0, 14, 1, B(FDIV), 4, 0 },
	{ "divp*", ANY, AV, MODEL_T_FP, 0, 14, 1, B(FDIV), 4, 0 },
	{ "vdiv*", ANY, AV, MODEL_T_FP, 0, 14, 1, B(FDIV), 4, 0 },
	{ "sqrt*", ANY, AV, 0, 0, 18, 1, B(FDIV), 6, 0 },
	{ "vsqrt*", ANY, AV, 0, 0, 18, 1, B(FDIV), 6, 0 },
	{ "cvt*", ANY, AV, 0, 0, 4, 2, FANY, 1, 0 },
	{ "vcvt*", ANY, AV, 0, 0, 4, 2, FANY, 1, 0 },
	{ "andp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "andnp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "orp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "xorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vandp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vandnp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	{ "vxorp*", ANY, AV, 0, 0, 1, 1, FANY, 1, 0 },
	/* 1 uop p5, 6 cycles (UO PCLMULQDQ (XMM, XMM, I8), AF) */
	{ "pclmulqdq", ANY, AV, 0, 0, 6, 1, B(P5), 1, 0 },
	{ "vpclmulqdq", ANY, AV, 0, 0, 6, 1, B(P5), 1, 0 },
	{ "pmul*", ANY, AV, 0, 0, 5, 1, FMA, 1, 0 },
	{ "vpmul*", ANY, AV, 0, 0, 5, 1, FMA, 1, 0 },
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
	{ "pmovmskb", ANY, AV, 0, 0, 3, 1, B(P0), 1, 0 },
	{ "vpmovmskb", ANY, AV, 0, 0, 3, 1, B(P0), 1, 0 },
	{ "movmskp*", ANY, AV, 0, 0, 3, 1, B(P0), 1, 0 },
	{ "p*", ANY, VEC, MODEL_T_VEC, 0, 1, 1, FANY, 1, 0 },	/* integer SIMD */
	{ "vp*", ANY, VEC, MODEL_T_VEC, 0, 1, 1, FANY, 1, 0 },
};

/* Unknown forms: a long-ish latency on any ALU or FP pipe, counted by callers. */
static const struct model_class fallback = {
	"?", ANY, AV, 0, 0, 3, 2, ALU | FANY, 1, 0
};

const struct model model_skylake = {
	.name = "skylake",
	.desc = "Intel Skylake and its family-6 derivatives",
	.dispatch_width = 4,
	.retire_width = 4,
	.rob_size = 224,
	.sched_size = 97,
	.nports = NPORTS,
	.port_names = port_names,
	.alu_ports = ALU,
	.branch_ports = BR,
	.load_ports = LDP,
	.store_addr_ports = STA,
	.store_data_ports = STD,
	.fp_ports = FANY,
	.load_lat = 5,
	.load_lat_fp = 6,
	.store_fwd_lat = 4,
	.mem_rename = 0,
	.move_elim = 1,
	.taken_per_cycle = 1,
	.l1_lat = 5,
	.l2_lat = 14,
	.l3_lat = 42,
	.dram_lat = 250,
	.tlb_miss_lat = 30,
	.mispredict_penalty = 16,
	.classes = classes,
	.nclasses = sizeof(classes) / sizeof(classes[0]),
	.fallback = &fallback,
};
