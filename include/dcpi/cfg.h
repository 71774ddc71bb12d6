/*
 * cfg.h - control-flow graphs from unmodified binaries (DCPI paper 6.1.1,
 * 6.1.2): decoded instructions, basic blocks, edges, jump tables, loops, and
 * cycle-equivalence classes (Johnson, Pearson, Pingali, PLDI 1994).
 *
 * Only cfg/ calls capstone.  Everything downstream (the pipeline model,
 * estimation, tools) sees the project's own struct cfg_insn.
 */
#ifndef DCPI_CFG_H
#define DCPI_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/image.h"
#include "dcpi/util.h"

/* Instruction class flags. */
enum {
	CFG_I_BRANCH	= 1u << 0,	/* any control transfer except call/ret */
	CFG_I_COND	= 1u << 1,	/* conditional (jcc, jrcxz, loop) */
	CFG_I_CALL	= 1u << 2,
	CFG_I_RET	= 1u << 3,
	CFG_I_INDIRECT	= 1u << 4,	/* target from a register or memory */
	CFG_I_LOAD	= 1u << 5,	/* reads memory (explicit operand or implicit) */
	CFG_I_STORE	= 1u << 6,	/* writes memory */
	CFG_I_NOP	= 1u << 7,	/* nop, endbr64, and padding forms */
	CFG_I_TRAP	= 1u << 8,	/* ud2, hlt, int3: no fall-through */
	CFG_I_SYSCALL	= 1u << 9,
	CFG_I_PREFETCH	= 1u << 10,
	CFG_I_FP	= 1u << 11,	/* x87, or SSE/AVX scalar/packed floating point */
	CFG_I_VECTOR	= 1u << 12,	/* SIMD register operands */
	CFG_I_LOCK	= 1u << 13,	/* lock prefix or xchg with memory */
	CFG_I_CMOV	= 1u << 14,
	CFG_I_DIV	= 1u << 15,
	CFG_I_LEA	= 1u << 16,	/* address arithmetic, no memory access */
	CFG_I_ZERO_IDIOM = 1u << 17,	/* xor r,r / sub r,r / pxor x,x: no input dependence */
	CFG_I_STACK	= 1u << 18,	/* push, pop, call, ret: implicit rsp update */
	CFG_I_IMM	= 1u << 19,	/* an immediate operand ($...) */
	CFG_I_CL	= 1u << 20,	/* %cl an operand before the last (a shift count) */
	CFG_I_PARTIAL	= 1u << 21,	/* writes an 8- or 16-bit general register: the
					 * bits it keeps are the old value's */
	CFG_I_INVALID	= 1u << 31,	/* bytes capstone cannot decode */
};

/*
 * Registers as bits of a 64-bit mask, sub-registers folded onto their full
 * register (eax, ax, al, ah -> rax; xmm3, ymm3, zmm3 -> vec 3).
 */
enum cfg_reg {
	CFG_R_RAX, CFG_R_RCX, CFG_R_RDX, CFG_R_RBX,
	CFG_R_RSP, CFG_R_RBP, CFG_R_RSI, CFG_R_RDI,
	CFG_R_R8, CFG_R_R9, CFG_R_R10, CFG_R_R11,
	CFG_R_R12, CFG_R_R13, CFG_R_R14, CFG_R_R15,
	CFG_R_FLAGS = 16,		/* rflags, all arithmetic flags together */
	CFG_R_VEC0 = 17,		/* vec0 .. vec31: bits 17..48 */
	CFG_R_K0 = 49,			/* k0 .. k7: bits 49..56 */
	CFG_R_X87 = 57,			/* x87 stack and MMX, one resource */
	CFG_R_RIP = 58,
	CFG_R_SEG = 59,			/* fs/gs base */
	CFG_R_OTHER = 60,		/* anything else (mxcsr, ...) */
	CFG_NREGS = 61,
};
#define CFG_RBIT(r) (1ull << (r))
/* Registers a call leaves as they were (the System V ABI's callee-saved). */
#define CFG_KEPT_BY_CALL (CFG_RBIT(CFG_R_RBX) | CFG_RBIT(CFG_R_RSP) | CFG_RBIT(CFG_R_RBP) | \
			  CFG_RBIT(CFG_R_R12) | CFG_RBIT(CFG_R_R13) | CFG_RBIT(CFG_R_R14) | \
			  CFG_RBIT(CFG_R_R15))

/* Operand form, for the pipeline model's instruction classes. */
enum cfg_form {
	CFG_F_NONE,		/* no explicit operands (ret, nop, cdq) */
	CFG_F_REG,		/* register operands only (incl. reg, imm) */
	CFG_F_LOAD,		/* reads a memory operand (reg <- mem, cmp mem, imm) */
	CFG_F_STORE,		/* writes memory only (mem <- reg/imm) */
	CFG_F_RMW,		/* reads and writes the same memory (add mem, reg) */
};

struct cfg_mem {
	uint8_t base, index;	/* enum cfg_reg, or 0xff for none */
	uint8_t scale;		/* 1, 2, 4, 8 */
	uint8_t size;		/* access size in bytes, 0 if unknown */
	uint8_t segment;	/* 0 none, 1 fs, 2 gs, 3 other */
	uint8_t rip_relative;	/* disp is then the absolute target address */
	int64_t disp;
};
#define CFG_REG_NONE 0xff

#define CFG_TEXT_MAX 96		/* cfg_insn_text's longest, NUL included */
#define CFG_MNEMONIC_MAX 24	/* a mnemonic's longest, NUL included */

/*
 * One decoded instruction.  Its text is not kept (formatting it was most of
 * the decoder's own cost, and it doubled the struct): cfg_insn_text makes it
 * from the bytes when something prints it.
 */
struct cfg_insn {
	uint64_t addr;
	const char *mnemonic;		/* as capstone prints it, AT&T: "addq", "lock
					 * cmpxchgq"; one shared copy of each name,
					 * never freed, ".byte" if undecodable */
	uint64_t regs_read;		/* CFG_RBIT mask, implicit reads and flags included */
	uint64_t regs_written;		/* likewise */
	uint64_t imm;			/* the immediate operand, if any (CFG_I_IMM) */
	uint64_t target;		/* direct branch/call target, 0 if none */
	struct cfg_mem mem;		/* the (first) memory operand, if nmem */
	uint32_t flags;			/* CFG_I_* */
	enum cfg_form form;
	uint16_t id;			/* capstone x86_insn id: opaque, for equality only */
	uint16_t vec_bits;		/* widest vector operand: 0, 64, 128, 256, 512 */
	uint8_t size;
	uint8_t nmem;			/* memory operands (0, 1; 2 for movs/cmps) */
	uint8_t bytes[15];
};

/*
 * The instruction's AT&T text ("addq $1, %rax"; ".byte 0x0f" if undecodable),
 * cut to size - 1 characters, into buf; returns buf.  Decodes the bytes again:
 * for printing, not for analysis.  Thread-safe.
 */
const char *cfg_insn_text(const struct cfg_insn *insn, char *buf, size_t size);

/* Decode one instruction (AT&T text).  -EINVAL when the bytes do not decode
 * (insn->flags then has CFG_I_INVALID and size 1). */
int cfg_decode_one(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn *insn);
/* Decode a run of instructions; *out malloc'd.  Stops at the first invalid
 * instruction with -EINVAL and the ones before it in *out. */
int cfg_decode(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn **out,
	       size_t *n, struct dcpi_err *err);
/* The same, past every undecodable byte (skipped, counted in *skipped): a
 * linear sweep that resynchronises, for scans over whole images. */
int cfg_decode_skip(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn **out,
		    size_t *n, size_t *skipped, struct dcpi_err *err);

enum cfg_edge_kind {
	CFG_E_FALLTHROUGH,	/* into the next block, no branch */
	CFG_E_TAKEN,		/* conditional branch taken */
	CFG_E_NOT_TAKEN,	/* conditional branch not taken */
	CFG_E_JUMP,		/* unconditional direct jump */
	CFG_E_TABLE,		/* indirect jump through a recovered jump table */
	CFG_E_CALL_RETURN,	/* past a call, to the instruction after it */
	CFG_E_RETURN,		/* return: to the exit node */
	CFG_E_TAILCALL,		/* jump out of the procedure: to the exit node */
	CFG_E_EXIT_ENTRY,	/* the added exit -> entry edge (strongly connected) */
};

enum {
	CFG_B_ENTRY	= 1u << 0,
	CFG_B_EXIT	= 1u << 1,	/* the virtual exit node: no instructions */
	CFG_B_NORETURN	= 1u << 2,	/* ends in a call that never returns, or a trap */
	CFG_B_INDIRECT	= 1u << 3,	/* ends in an indirect jump */
	CFG_B_UNRESOLVED = 1u << 4,	/* ... that was not resolved */
	CFG_B_DEAD	= 1u << 5,	/* cannot reach the exit (infinite loop) */
	CFG_B_LOOP_HEAD	= 1u << 6,
	CFG_B_IRREDUCIBLE = 1u << 7,	/* in an irreducible region */
};

struct cfg_block {
	uint64_t start, end;		/* [start, end), virtual addresses */
	uint32_t first, n;		/* instructions insns[first .. first+n) */
	uint32_t flags;			/* CFG_B_* */
	int cls;			/* cycle-equivalence class */
	int loop;			/* innermost loop index, -1 if none */
	int loop_depth;			/* 0 outside loops */
	uint32_t *succ, nsucc;		/* edge indices */
	uint32_t *pred, npred;
};

struct cfg_edge {
	uint32_t from, to;		/* block indices */
	enum cfg_edge_kind kind;
	int cls;			/* cycle-equivalence class (shared space with blocks) */
};

struct cfg_loop {
	uint32_t header;		/* block index */
	int parent;			/* enclosing loop, -1 if outermost */
	int depth;			/* 1 for outermost */
	uint32_t nblocks;		/* blocks in the loop, nested loops included */
	uint32_t *blocks;
	int irreducible;		/* several entries: header is one of them */
};

/* A data range inside a procedure (jump table, padding): not code. */
struct cfg_range {
	uint64_t start, end;
	const char *what;		/* "padding", "jump table", "undecodable" */
};

struct cfg {
	char *name;
	uint64_t start, end;		/* the procedure's bytes */
	struct cfg_insn *insns;
	size_t ninsns;
	struct cfg_block *blocks;	/* sorted by start; the exit node is last */
	size_t nblocks;
	uint32_t entry, exit;		/* block indices */
	struct cfg_edge *edges;
	size_t nedges;
	struct cfg_loop *loops;
	size_t nloops;
	struct cfg_range *data;
	size_t ndata;
	int nclasses;
	int missing_edges;		/* an indirect jump was not resolved */
	unsigned indirect_jumps, indirect_resolved;
	uint64_t *callees;		/* direct call targets, sorted, unique */
	size_t ncallees;
};

/*
 * Build the CFG of the procedure at proc in img: decode, blocks, edges (jump
 * tables resolved where the pattern is recognised), loops, classes.  Lazy:
 * decodes only this procedure.  Procedures the analysis proves never return
 * are found through the image (calls to them end a block).
 */
int cfg_build(const struct image *img, const struct img_proc *proc, struct cfg **out,
	      struct dcpi_err *err);
/* The same over raw bytes at addr (no image: no jump tables, no callee names). */
int cfg_build_bytes(const uint8_t *bytes, size_t len, uint64_t addr, const char *name,
		    struct cfg **out, struct dcpi_err *err);
void cfg_free(struct cfg *cfg);

/*
 * The CFG of every procedure of img (PLT stubs excluded), each exactly what
 * cfg_build gives, built so that each instruction is decoded once: a callee
 * whose noreturn proof a caller needs is built right then (proof and CFG from
 * one decode cache), not decoded again later.  fn gets each procedure once,
 * not in address order, with its CFG (fn owns it: cfg_free) or, when its
 * build failed, cfg NULL and the error.  A nonzero return from fn stops the
 * walk and is returned; -ENOMEM otherwise.  stats may be NULL.
 */
struct cfg_all_stats {
	size_t procs, failed;
	unsigned long decodes;		/* capstone decodes (cache hits not counted) */
	size_t cache_bytes;		/* decode caches held at once, at most */
	int max_nesting;		/* callees built inside their callers' builds */
};
typedef int (*cfg_all_fn)(void *arg, const struct img_proc *proc, struct cfg *cfg,
			  const struct dcpi_err *err);
int cfg_build_all(const struct image *img, cfg_all_fn fn, void *arg,
		  struct cfg_all_stats *stats, struct dcpi_err *err);

/*
 * The bytes at the procedure's entry a 5-byte jump to a counting trampoline
 * may displace (cfg/entry.c says what makes them safe): their length, 5 to
 * CFG_ENTRY_MAX, with the bytes in bytes; 0 when the entry cannot be moved.
 */
#define CFG_ENTRY_MAX 15
#define CFG_BRANCH_BEFORE_MAX 12
size_t cfg_entry_displaced(const struct cfg *cfg, uint8_t bytes[CFG_ENTRY_MAX]);
/*
 * The same for block b, not the entry, whose executions the runtime counts
 * so: whole instructions from its start, none a control transfer, trap,
 * system call or rip-relative, but for the block's last, a jcc (short or
 * near), when the jump needs its bytes (*branch gets its length, 2 or 6:
 * the trampoline branches to its target itself; at most
 * CFG_BRANCH_BEFORE_MAX bytes before it, so that a trampoline's slot holds
 * the near form), the flags set again by the first of the block's
 * instructions that touches them before any reads them (or a call comes
 * first), no branch
 * of the procedure into the displaced bytes, and no unresolved indirect
 * jump in the procedure (cfg/entry.c).  Edges into the block's start are
 * fine: they land on the jump.
 */
size_t cfg_block_displaced(const struct cfg *cfg, uint32_t b, uint8_t bytes[CFG_ENTRY_MAX],
			   size_t *branch);

/* Block containing addr, -1 if none.  Binary search. */
int cfg_block_at(const struct cfg *cfg, uint64_t addr);
/* Instruction index at exactly addr, -1 if none. */
int cfg_insn_at(const struct cfg *cfg, uint64_t addr);
/* Does block b branch back to its own start (an edge to itself)? */
int cfg_self_loop(const struct cfg *cfg, size_t b);
/* Is loop l innermost (no loop nested in it)? */
int cfg_loop_innermost(const struct cfg *cfg, size_t l);
/* Block b's loop group: its innermost loop, or cfg->nloops for the code
 * outside every loop (report/plan.c and report/mem_weight.c group a
 * procedure's data accesses so). */
static inline size_t cfg_loop_group(const struct cfg *cfg, uint32_t b)
{
	return cfg->blocks[b].loop < 0 ? cfg->nloops : (size_t)cfg->blocks[b].loop;
}
const char *cfg_edge_kind_name(enum cfg_edge_kind kind);

/* Is a function of this name known never to return (exit, abort, ...)? */
int cfg_noreturn_name(const char *name);

/*
 * Graph algorithms over a plain graph of nnodes nodes and nedges directed
 * edges (from[i] -> to[i]).  They are used by cfg_build and tested alone.
 */
struct cfg_graph {
	uint32_t nnodes, nedges;
	const uint32_t *from, *to;
	uint32_t entry, exit;
};

/*
 * Cycle equivalence (Johnson, Pearson, Pingali 1994) in O(N + E) on the graph
 * made strongly connected by an exit -> entry edge (added internally; do not
 * include it).  DCPI's extension: nodes that cannot reach the exit (infinite
 * loops) are linked to it by internal edges so the graph stays strongly
 * connected; those edges get no class.  node_class[v] is the class of the
 * node (of the edge joining its two halves in the node-expanded graph);
 * edge_class[e] the class of edge e; classes are numbered 0..*nclasses-1 in
 * one space for nodes and edges.  Two nodes are in one class iff they always
 * execute equally often.
 */
int cfg_cycle_equiv(const struct cfg_graph *g, int *node_class, int *edge_class,
		    int *nclasses, struct dcpi_err *err);

/* Immediate dominators from entry (Cooper-Harvey-Kennedy); idom[entry] =
 * entry, unreachable nodes get UINT32_MAX. */
int cfg_dominators(const struct cfg_graph *g, uint32_t *idom, struct dcpi_err *err);

/*
 * Natural loops with nesting; irreducible regions (strongly connected
 * regions with more than one entry) reported as loops with irreducible = 1.
 * Fills *loops (malloc'd, each with malloc'd blocks) and per node the
 * innermost loop index and depth.
 */
int cfg_find_loops(const struct cfg_graph *g, struct cfg_loop **loops, size_t *nloops,
		   int *node_loop, int *node_depth, struct dcpi_err *err);
void cfg_loops_free(struct cfg_loop *loops, size_t nloops);

/* A load from a slot of the stack frame (rsp and a displacement: a spill or
 * a local, written lately): it hits L1, so it witnesses no miss
 * (estimate/destall.c) and is not taken for one (estimate/interval.c). */
static inline int cfg_insn_stack_slot(const struct cfg_insn *in)
{
	return in->nmem == 1 && in->mem.base == CFG_R_RSP && in->mem.index == CFG_REG_NONE;
}

#endif /* DCPI_CFG_H */
