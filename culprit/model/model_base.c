/*
 * culprit/model/model_base.c - the instruction classes every shipped pipeline
 * model shares, and the rows that put an instruction in a class (DCPI paper
 * sec. 6.1.3: the model needs each instruction's latency and units).  The
 * values here are the common case (mostly AMD Zen's); each CPU's file
 * (model_zen5.c, ...) says where it differs and which ports each unit role
 * is.  Rows are tried in this order and the first match wins (classify.c),
 * so a specific row comes before the general one it refines.  The class
 * names are what model files (docs/models.md "Model files") and
 * `dcpi model --show` call them.
 */
#include <assert.h>
#include <pthread.h>

#include "model_tables.h"

#define U(x)	MODEL_U_##x
#define ELIM	MODEL_K_ELIM
#define FUSE	MODEL_K_FUSE
#define PUSH	MODEL_K_PUSH
#define POP	MODEL_K_POP

/* name, lat, uops, unit, busy, kind, optional, what */
const struct model_base_class model_base_classes[MC_COUNT] = {
	[MC_NOP_LONG] = { "nop_long", 0, 1, U(NONE), 1, ELIM, 1, "nop of 8 bytes or more" },
	[MC_NOP] = { "nop", 0, 1, U(NONE), 1, ELIM, 0, "nop" },
	[MC_CMPXCHG] = { "cmpxchg", 8, 2, U(LOCK), 9, 0, 1, "cmpxchg, locked or not" },
	[MC_LOCK] = { "lock", 7, 1, U(LOCK), 7, 0, 1, "lock-prefixed op, xchg with memory" },
	[MC_SBB_ZERO] = { "sbb_zero", 1, 1, U(ALU), 1, 0, 1, "sbb r,r (waits for CF)" },
	[MC_ZERO_IDIOM] = { "zero_idiom", 0, 1, U(NONE), 1, ELIM, 0, "xor r,r and friends" },
	[MC_MOV_GPR_VEC] = { "mov_gpr_vec", 3, 1, U(GPR2VEC), 1, 0, 0, "movd/movq gpr<->xmm" },
	[MC_VZEROUPPER] = { "vzeroupper", 1, 1, U(VZU), 1, 0, 1, "vzeroupper" },
	[MC_MOV_RR] = { "mov_rr", 0, 1, U(NONE), 1, ELIM, 0, "mov reg,reg" },
	[MC_VMOV_RR] = { "vmov_rr", 0, 1, U(NONE), 1, ELIM, 0, "vector reg,reg moves" },
	[MC_LOAD_STORE] = { "load_store", 0, 1, U(NONE), 1, 0, 0,
			    "plain loads and stores (memory ports only)" },
	[MC_VSTORE] = { "vstore", 0, 1, U(NONE), 1, 0, 1, "vector stores (store ports only)" },
	[MC_MOV_ALU] = { "mov_alu", 1, 1, U(ALU), 1, 0, 0, "mov $imm, movzx/movsx reg" },
	[MC_PUSH] = { "push", 0, 1, U(NONE), 1, PUSH, 0, "push" },
	[MC_POP] = { "pop", 0, 1, U(NONE), 1, POP, 0, "pop" },
	[MC_CALL] = { "call", 1, 1, U(BR), 1, PUSH, 0, "call" },
	[MC_RET] = { "ret", 1, 1, U(BR), 1, POP, 0, "ret" },
	[MC_BRANCH] = { "branch", 1, 1, U(BR), 1, 0, 0, "jumps" },
	[MC_ALU_FUSE] = { "alu_fuse", 1, 1, U(ALU), 1, FUSE, 0,
			  "add sub and cmp test inc dec (fuse with jcc)" },
	[MC_ALU_LOGIC] = { "alu_logic", 1, 1, U(ALU), 1, FUSE, 0, "or xor" },
	[MC_ALU] = { "alu", 1, 1, U(ALU), 1, 0, 0, "adc sbb neg not andn bswap cltq ..." },
	[MC_SHIFT] = { "shift", 1, 1, U(SHIFT), 1, 0, 0, "shifts, rotates, bt" },
	[MC_SHLD] = { "shld", 2, 2, U(SHIFT), 1, 0, 0, "shld shrd" },
	[MC_BTS] = { "bts", 1, 1, U(SHIFT), 1, 0, 0, "bts btr btc" },
	[MC_SETCC] = { "setcc", 1, 1, U(FLAGRD), 1, 0, 0, "setcc cmov" },
	[MC_BITCOUNT] = { "bitcount", 1, 1, U(ALU), 1, 0, 0, "popcnt lzcnt tzcnt bsf bsr" },
	[MC_XCHG] = { "xchg", 1, 2, U(ALU), 1, 0, 0, "xchg reg,reg" },
	[MC_LEA3] = { "lea3", 2, 1, U(ALU), 1, 0, 0, "lea base+index+disp" },
	[MC_LEA_SC] = { "lea_sc", 2, 1, U(ALU), 1, 0, 0, "lea with a scaled index" },
	[MC_LEA] = { "lea", 1, 1, U(LEA), 1, 0, 0, "other lea" },
	[MC_IMUL] = { "imul", 3, 1, U(MUL), 1, 0, 0, "imul" },
	[MC_MUL] = { "mul", 3, 2, U(MUL), 1, MODEL_K_WIDE, 0, "mul, imul with one operand (rdx:rax)" },
	[MC_MULX] = { "mulx", 4, 2, U(MUL), 1, 0, 0, "mulx" },
	[MC_CRC32] = { "crc32", 3, 1, U(MUL), 1, 0, 0, "crc32" },
	[MC_DIV64] = { "div64", 14, 2, U(DIV), 14, 0, 0, "div r64" },
	[MC_IDIV64] = { "idiv64", 14, 2, U(DIV), 14, 0, 0, "idiv r64" },
	[MC_DIV32] = { "div32", 10, 2, U(DIV), 10, 0, 0, "div/idiv r32 and narrower" },
	[MC_FMA] = { "fma", 4, 1, U(FMA), 1, 0, 0, "FMA" },
	[MC_FMUL] = { "fmul", 3, 1, U(FMA), 1, 0, 0, "FP multiply" },
	[MC_FADD] = { "fadd", 3, 1, U(FADD), 1, 0, 0, "FP add sub min max compare" },
	[MC_FCOMI] = { "fcomi", 3, 1, U(FCOMI), 1, 0, 0, "(u)comiss/sd" },
	[MC_FDIV] = { "fdiv", 13, 1, U(FDIV), 5, 0, 0, "FP divide" },
	[MC_FSQRT] = { "fsqrt", 15, 1, U(FDIV), 6, 0, 0, "FP square root" },
	[MC_FDIV_S] = { "fdiv_s", 13, 1, U(FDIV), 5, 0, 0, "FP divide, single precision" },
	[MC_FSQRT_S] = { "fsqrt_s", 15, 1, U(FDIV), 6, 0, 0, "FP square root, single precision" },
	[MC_FCVT] = { "fcvt", 3, 1, U(FCVT), 1, 0, 0, "conversions" },
	/* a round trip (cvttsd2si; cvtsi2sd) measured 11.8 on Zen 4: only the sum
	 * is measurable, so each way is half of it (docs/models.md) */
	[MC_FCVT_X] = { "fcvt_x", 6, 1, U(FCVT), 1, 0, 0,
			"conversions between gpr and xmm (cvtsi2sd, cvt(t)sd2si)" },
	[MC_VLOGIC] = { "vlogic", 1, 1, U(FANY), 1, 0, 0, "andps orps xorps ..." },
	[MC_PCLMUL] = { "pclmul", 4, 1, U(PCLMUL), 4, 0, 1, "pclmulqdq" },
	[MC_VIMUL] = { "vimul", 3, 1, U(FMA), 1, 0, 0, "SIMD integer multiply" },
	[MC_SHUFFLE] = { "shuffle", 1, 1, U(FSHUF), 1, 0, 0, "shuffles, unpacks, inserts" },
	[MC_VPERM] = { "vperm", 3, 1, U(FSHUF), 1, 0, 0, "vperm*" },
	[MC_VBLEND] = { "vblend", 1, 1, U(FANY), 1, 0, 0, "blends" },
	[MC_VMOVMSK] = { "vmovmsk", 3, 1, U(VEC2GPR), 1, 0, 0, "pmovmskb movmskp*" },
	[MC_VINT] = { "vint", 1, 1, U(FANY), 1, 0, 0, "other SIMD integer" },
	[MC_UNKNOWN] = { "unknown", 3, 2, U(ALUFP), 1, 0, 0,
			 "forms no row matches (counted as unknown)" },
};

#define ANY	0
#define REG	MODEL_FORM(CFG_F_REG)
#define LD	MODEL_FORM(CFG_F_LOAD)
#define ST	MODEL_FORM(CFG_F_STORE)
#define NOVEC	0, 0
#define VEC	64, 512
#define AV	MODEL_ANYVEC

/*
 * patterns, forms, vec range, need, avoid, class: each group stands for one
 * row per pattern, in the order listed (model_base_rows() expands them).
 */
static const struct model_base_group model_base_groups[] = {
	{ { "*" }, ANY, AV, MODEL_T_NOP | MODEL_T_LONG, 0, MC_NOP_LONG },
	{ { "*" }, ANY, AV, MODEL_T_NOP, 0, MC_NOP },
	{ { "cmpxchg*", "lock cmpxchg*" }, ANY, NOVEC, 0, 0, MC_CMPXCHG },
	{ { "*" }, ANY, AV, MODEL_T_LOCK, 0, MC_LOCK },
	{ { "sbb" }, REG, NOVEC, MODEL_T_ZERO, 0, MC_SBB_ZERO },
	{ { "*" }, REG, AV, MODEL_T_ZERO, 0, MC_ZERO_IDIOM },
	{ { "mov", "movd", "vmovd" }, REG, VEC, MODEL_T_VEC, 0, MC_MOV_GPR_VEC },
	{ { "vzeroupper" }, ANY, AV, 0, 0, MC_VZEROUPPER },
	{ { "mov" }, REG, NOVEC, MODEL_T_REGMOV, MODEL_T_B | MODEL_T_W, MC_MOV_RR },
	{ { "movap*", "vmovap*", "movup*", "vmovup*", "movdq*", "vmovdq*" },
	  REG, AV, MODEL_T_REGMOV, 0, MC_VMOV_RR },
	{ { "mov" }, LD | ST, NOVEC, 0, 0, MC_LOAD_STORE },
	{ { "movz*", "movs*" }, LD, AV, 0, 0, MC_LOAD_STORE },
	{ { "*mov*" }, LD | ST, VEC, 0, 0, MC_LOAD_STORE },
	{ { "vmov*", "mov*" }, ST, VEC, 0, 0, MC_VSTORE },
	{ { "vbroadcast*" }, LD, AV, 0, 0, MC_LOAD_STORE },
	{ { "mov", "movabs", "movz*" }, REG, NOVEC, 0, 0, MC_MOV_ALU },
	{ { "movs*" }, REG, NOVEC, 0, MODEL_T_FP, MC_MOV_ALU },
	{ { "push" }, ANY, AV, 0, 0, MC_PUSH },
	{ { "pop" }, ANY, AV, 0, 0, MC_POP },
	{ { "call*" }, ANY, AV, 0, 0, MC_CALL },
	{ { "ret*" }, ANY, AV, 0, 0, MC_RET },
	{ { "*" }, ANY, AV, MODEL_T_BRANCH, 0, MC_BRANCH },
	{ { "add", "sub", "and" }, ANY, NOVEC, 0, 0, MC_ALU_FUSE },
	{ { "or", "xor" }, ANY, NOVEC, 0, 0, MC_ALU_LOGIC },
	{ { "cmp", "test", "inc", "dec" }, ANY, NOVEC, 0, 0, MC_ALU_FUSE },
	{ { "adc", "sbb", "neg", "not" }, ANY, NOVEC, 0, 0, MC_ALU },
	{ { "shl", "sal", "shr", "sar", "rol", "ror", "shlx", "shrx", "sarx", "rorx" },
	  ANY, NOVEC, 0, 0, MC_SHIFT },
	{ { "shld", "shrd" }, ANY, NOVEC, 0, 0, MC_SHLD },
	{ { "bt" }, ANY, NOVEC, 0, 0, MC_SHIFT },
	{ { "bts", "btr", "btc" }, ANY, NOVEC, 0, 0, MC_BTS },
	{ { "andn" }, ANY, NOVEC, 0, 0, MC_ALU },
	/* BMI1/2 bit ops: 1 cycle, four a cycle on Zen 4 (2026-11-26) */
	{ { "blsr", "blsi", "blsmsk", "bzhi", "bswap" }, ANY, NOVEC, 0, 0, MC_ALU },
	{ { "set*", "cmov*" }, ANY, NOVEC, 0, 0, MC_SETCC },
	{ { "popcnt", "lzcnt", "tzcnt", "bsf", "bsr" }, ANY, NOVEC, 0, 0, MC_BITCOUNT },
	{ { "cltq", "cqto", "cltd", "cwtl" }, ANY, NOVEC, 0, 0, MC_ALU },
	{ { "xchg" }, REG, NOVEC, 0, 0, MC_XCHG },
	{ { "lea" }, ANY, NOVEC, MODEL_T_LEA3, 0, MC_LEA3 },
	{ { "lea" }, ANY, NOVEC, MODEL_T_LEASC, 0, MC_LEA_SC },
	{ { "lea" }, ANY, NOVEC, 0, 0, MC_LEA },
	{ { "imul" }, ANY, NOVEC, MODEL_T_WIDE, 0, MC_MUL },
	{ { "imul" }, ANY, NOVEC, 0, 0, MC_IMUL },
	{ { "mul" }, ANY, NOVEC, 0, 0, MC_MUL },
	{ { "mulx" }, ANY, NOVEC, 0, 0, MC_MULX },
	{ { "crc32*" }, ANY, NOVEC, 0, 0, MC_CRC32 },
	{ { "div" }, ANY, NOVEC, MODEL_T_Q, 0, MC_DIV64 },
	{ { "idiv" }, ANY, NOVEC, MODEL_T_Q, 0, MC_IDIV64 },
	{ { "div", "idiv" }, ANY, NOVEC, 0, 0, MC_DIV32 },
	{ { "vfmadd*", "vfmsub*", "vfnmadd*", "vfnmsub*" }, ANY, AV, 0, 0, MC_FMA },
	{ { "muls*", "mulp*", "vmul*" }, ANY, AV, MODEL_T_FP, 0, MC_FMUL },
	{ { "adds*", "addp*", "subs*", "subp*", "vadd*", "vsub*", "min*", "max*", "vmin*",
	    "vmax*", "cmp*", "vcmp*" },
	  ANY, AV, MODEL_T_FP, 0, MC_FADD },
	{ { "ucomis*", "vucomis*", "comis*", "vcomis*" }, ANY, AV, 0, 0, MC_FCOMI },
	{ { "divss", "divps", "vdivss", "vdivps" }, ANY, AV, MODEL_T_FP, 0, MC_FDIV_S },
	{ { "divs*", "divp*", "vdiv*" }, ANY, AV, MODEL_T_FP, 0, MC_FDIV },
	{ { "sqrtss", "sqrtps", "vsqrtss", "vsqrtps" }, ANY, AV, 0, 0, MC_FSQRT_S },
	{ { "sqrt*", "vsqrt*" }, ANY, AV, 0, 0, MC_FSQRT },
	{ { "*si2s*", "*2si*", "*2usi*" }, ANY, AV, 0, 0, MC_FCVT_X },
	{ { "cvt*", "vcvt*" }, ANY, AV, 0, 0, MC_FCVT },
	{ { "andp*", "andnp*", "orp*", "xorp*", "vandp*", "vandnp*", "vorp*", "vxorp*" },
	  ANY, AV, 0, 0, MC_VLOGIC },
	{ { "pclmulqdq", "vpclmulqdq" }, ANY, AV, 0, 0, MC_PCLMUL },
	/* multiply-adds and sums of differences use the multiplier: 3 cycles,
	 * two a cycle on Zen 4 (pmaddwd, vpmaddubsw, vpsadbw, 2026-11-26) */
	{ { "pmadd*", "vpmadd*", "psadbw", "vpsadbw", "pmul*", "vpmul*" },
	  ANY, AV, 0, 0, MC_VIMUL },
	{ { "pshuf*", "vpshuf*", "shufp*", "vshufp*", "unpck*", "vunpck*", "punpck*",
	    "vpunpck*" },
	  ANY, AV, 0, 0, MC_SHUFFLE },
	{ { "vperm*" }, ANY, AV, 0, 0, MC_VPERM },
	{ { "vinsert*", "vextract*", "vbroadcast*", "vpbroadcast*", "palignr", "vpalignr" },
	  ANY, AV, 0, 0, MC_SHUFFLE },
	{ { "blend*", "vblend*", "vpblend*" }, ANY, AV, 0, 0, MC_VBLEND },
	{ { "pmovmskb", "vpmovmskb", "movmskp*" }, ANY, AV, 0, 0, MC_VMOVMSK },
	{ { "p*", "vp*" }, ANY, VEC, MODEL_T_VEC, 0, MC_VINT },
};

static struct model_base_row rows[MODEL_BASE_MAXROWS];
static size_t nrows;
static pthread_once_t expanded = PTHREAD_ONCE_INIT;

/* One row for each mnemonic pattern of each group, in table order. */
static void expand_groups(void)
{
	for (size_t g = 0; g < sizeof(model_base_groups) / sizeof(model_base_groups[0]); g++) {
		const struct model_base_group *grp = &model_base_groups[g];

		for (size_t k = 0; k < MODEL_BASE_GROUP && grp->patterns[k]; k++) {
			assert(nrows < MODEL_BASE_MAXROWS);
			rows[nrows++] = (struct model_base_row){
				grp->patterns[k], grp->forms, grp->min_vec, grp->max_vec,
				grp->need, grp->avoid, grp->cls,
			};
		}
	}
}

const struct model_base_row *model_base_rows(size_t *n)
{
	pthread_once(&expanded, expand_groups);
	*n = nrows;
	return rows;
}
