/*
 * culprit/model/model_tables.h - how the shipped pipeline models are written as
 * data, LLVM-style (X86Schedule.td + X86ScheduleZnver*.td): one list of
 * instruction classes and the rows that match instructions to them, shared
 * by every CPU (model_base.c), and per CPU only what differs
 * (model_zen5.c, ...): the ports each functional-unit role maps to, and the
 * classes whose latency, dispatch slots, unit, busy cycles or kind are not
 * the base's.  model.c expands them into struct model's row tables once.
 * Private to culprit/.
 */
#ifndef DCPI_CULPRIT_MODEL_TABLES_H
#define DCPI_CULPRIT_MODEL_TABLES_H

#include "dcpi/model.h"

/* Functional-unit roles: each CPU maps a role to a set of its ports. */
enum model_unit {
	MODEL_U_NONE,		/* no port (renamed, or memory ports only) */
	MODEL_U_ALU,		/* any integer ALU */
	MODEL_U_BR,		/* branch units */
	MODEL_U_SHIFT,		/* shifts, rotates, bit tests */
	MODEL_U_FLAGRD,		/* setcc, cmov */
	MODEL_U_MUL,		/* integer multiplier */
	MODEL_U_LEA,		/* simple lea */
	MODEL_U_DIV,		/* integer divider */
	MODEL_U_LOCK,		/* atomics, one at a time */
	MODEL_U_GPR2VEC,	/* movd/movq between gpr and xmm */
	MODEL_U_VZU,		/* vzeroupper */
	MODEL_U_FMA,		/* FP multiply / FMA pipes */
	MODEL_U_FADD,		/* FP add pipes */
	MODEL_U_FCOMI,		/* (u)comis */
	MODEL_U_FCVT,		/* conversions */
	MODEL_U_FANY,		/* any FP/vector pipe */
	MODEL_U_FSHUF,		/* shuffles */
	MODEL_U_FDIV,		/* FP divide / sqrt */
	MODEL_U_VEC2GPR,	/* pmovmskb, movmskp */
	MODEL_U_PCLMUL,		/* carry-less multiply */
	MODEL_U_ALUFP,		/* the fallback: any ALU or FP pipe */
	MODEL_U_COUNT
};

/* Instruction classes (the model file names them as model_base.c does). */
enum model_cls {
	MC_NOP_LONG, MC_NOP, MC_CMPXCHG, MC_LOCK, MC_SBB_ZERO, MC_ZERO_IDIOM,
	MC_MOV_GPR_VEC, MC_VZEROUPPER, MC_MOV_RR, MC_VMOV_RR, MC_LOAD_STORE, MC_VSTORE,
	MC_MOV_ALU, MC_PUSH, MC_POP, MC_CALL, MC_RET, MC_BRANCH, MC_ALU_FUSE,
	MC_ALU_LOGIC, MC_ALU, MC_SHIFT, MC_SHLD, MC_BTS, MC_SETCC, MC_BITCOUNT,
	MC_XCHG, MC_LEA3, MC_LEA_SC, MC_LEA, MC_IMUL, MC_MUL, MC_MULX, MC_CRC32,
	MC_DIV64, MC_IDIV64, MC_DIV32, MC_FMA, MC_FMUL, MC_FADD, MC_FCOMI, MC_FDIV,
	MC_FSQRT, MC_FCVT, MC_FCVT_X, MC_VLOGIC, MC_PCLMUL, MC_VIMUL, MC_SHUFFLE, MC_VPERM,
	MC_VBLEND, MC_VMOVMSK, MC_VINT, MC_FDIV_S, MC_FSQRT_S, MC_UNKNOWN,
	MC_COUNT
};

struct model_base_class {
	const char *name;
	uint8_t lat, uops, unit, busy, kind;
	uint8_t optional;		/* absent unless a CPU turns it on */
	const char *what;		/* one line for `dcpi model --show` */
};

struct model_base_row {
	const char *pattern;
	uint8_t forms;
	uint16_t min_vec, max_vec;
	uint32_t need, avoid;
	uint8_t cls;			/* enum model_cls */
};

/* Rows that differ only in their mnemonic pattern, written once (model_base.c). */
#define MODEL_BASE_GROUP 12
struct model_base_group {
	const char *patterns[MODEL_BASE_GROUP];	/* tried in this order; NULL ends */
	uint8_t forms;
	uint16_t min_vec, max_vec;
	uint32_t need, avoid;
	uint8_t cls;			/* enum model_cls */
};

/*
 * One CPU's difference from the base class: each field is V(value), or 0 to
 * keep the base's.  on = 1 turns an optional class on.
 */
#define V(x) ((x) + 1)
struct model_delta {
	uint8_t cls;
	uint8_t lat, uops, unit, busy, kind, on;
};

struct model_cpu {
	struct model *m;		/* scalars; classes filled by model.c */
	uint32_t units[MODEL_U_COUNT];
	const struct model_delta *delta;
	size_t ndelta;
};

/*
 * In a CPU's file, which names its ports in an enum ending in NPORTS, their
 * names in port_names[] and its port sets in the macros B(port), ALU, BR,
 * MUL, FMA, FADD, FANY and FSHUF:
 *
 * MODEL_PORTS, the port fields of its struct model (loads, store addresses
 * and store data on the sets given);
 */
#define MODEL_PORTS(load, store_addr, store_data)					\
	.nports = NPORTS, .port_names = port_names, .alu_ports = ALU, .branch_ports = BR,	\
	.load_ports = load, .store_addr_ports = store_addr, .store_data_ports = store_data,	\
	.fp_ports = FANY

/* MODEL_UNITS, the unit roles every CPU has (the rest of its .units follow:
 * VEC2GPR and any optional ones) with its sets for shifts, setcc/cmov, lea,
 * movd/movq gpr->xmm, (u)comis and conversions; */
#define MODEL_UNITS(shift, flagrd, lea, gpr2vec, fcomi, fcvt)				\
	[MODEL_U_ALU] = ALU, [MODEL_U_BR] = BR, [MODEL_U_SHIFT] = shift,		\
	[MODEL_U_FLAGRD] = flagrd, [MODEL_U_MUL] = MUL, [MODEL_U_LEA] = lea,		\
	[MODEL_U_DIV] = B(DIV), [MODEL_U_GPR2VEC] = gpr2vec, [MODEL_U_FMA] = FMA,	\
	[MODEL_U_FADD] = FADD, [MODEL_U_FCOMI] = fcomi, [MODEL_U_FCVT] = fcvt,		\
	[MODEL_U_FANY] = FANY, [MODEL_U_FSHUF] = FSHUF, [MODEL_U_FDIV] = B(FDIV),	\
	[MODEL_U_ALUFP] = ALU | FANY

/* MODEL_DELTA, its struct model_cpu's delta[] and ndelta. */
#define MODEL_DELTA .delta = delta, .ndelta = sizeof(delta) / sizeof(delta[0])

/* MODEL_CPU(x, unit sets...), what ties a CPU's file together: model_cpu_x,
 * with the scalars of its struct model model_x, those .units (MODEL_UNITS
 * and the rest) and its delta[] (MODEL_DELTA). */
#define MODEL_CPU(x, ...)								\
	const struct model_cpu model_cpu_##x = {					\
		.m = &model_##x, .units = { __VA_ARGS__ }, MODEL_DELTA,			\
	}

/*
 * What the 4-wide models (model_generic.c, model_skylake.c) share: 4-wide
 * dispatch and retire, two load ports and one store-data port, 5-cycle loads
 * and L1, a 14-cycle L2, 15 cycles for a failed store forwarding, no memory
 * renaming and one taken branch a cycle (docs/models.md).
 */
#define MODEL_4WIDE									\
	.dispatch_width = 4, .retire_width = 4, MODEL_PORTS(LDP, STA, STD),		\
	.load_lat = 5, .store_fwd_fail = 15, .mem_rename = 0, .taken_per_cycle = 1,	\
	.l1_lat = 5, .l2_lat = 14

extern const struct model_base_class model_base_classes[MC_COUNT];
#define MODEL_BASE_MAXROWS 176
/* The base rows, in the order they are tried; *n of them. */
const struct model_base_row *model_base_rows(size_t *n);

extern const struct model_cpu model_cpu_zen5, model_cpu_zen4, model_cpu_zen3,
	model_cpu_skylake, model_cpu_generic;

/* A shipped model by name (never a model file's: the reader uses it). */
const struct model *model_shipped_by_name(const char *name);

/* The ports unit role `unit` is on the shipped model (0: it has none). */
uint32_t model_unit_ports(const struct model *shipped, int unit);

/* Base row r with the timings of its class from v (culprit/model/model.c). */
struct model_class model_row_of(const struct model_base_row *r, const struct model_class *v);

/* Expand cpu into rows[MODEL_BASE_MAXROWS] and *fallback; set cpu->m's tables. */
void model_tables_expand(const struct model_cpu *cpu, struct model_class *rows,
			 struct model_class *fallback);

#endif /* DCPI_CULPRIT_MODEL_TABLES_H */
