/*
 * collect/pathrt.h - what the path-sample runtime (pathrt.c, preloaded into
 * the recorded command as libdcpi-paths.so) and dcpi record (paths_spool.c)
 * agree on: the environment that carries the settings and the records of
 * the per-process spool files (docs/paths.md).
 *
 * A spool file "<pid>-<n>.spool" is a sequence of records, each written
 * with one write(2) on an O_APPEND descriptor: a prt_rec header, then
 *   PRT_MAPS   text, one line per executable mapping of the process:
 *              "<start hex> <end hex> <file offset hex> <path>\n"
 *              (replaces every earlier mapping of this file's stream);
 *   PRT_BURST  the pcs of one burst, uint64_t each, in execution order
 *              (the first is the interrupted pc; consecutive repeats of a
 *              rep-prefixed instruction are collapsed);
 *   PRT_VBURST with value samples on (DCPI_VALUES=1, docs/values.md): the
 *              n pcs as in PRT_BURST, then n register files (struct
 *              prt_regs), the i-th as it was when pc i was about to execute
 *              (so also just after pc i - 1 executed); n = body / (8 + 136).
 *   PRT_CANARY after each burst, when its start timed one (struct
 *              prt_canary): the contention canary measured in the timer's
 *              handler on the program's own core just before the burst, so
 *              the analysis knows how hard the core was shared while the
 *              program ran (docs/estimate.md, "A shared core").
 *   PRT_CALLS  with a plan that counts calls (PRT_PLAN_COUNT): the
 *              writing thread's calls of the counted entries since its
 *              counting started (the image's start, the thread's, a fork's
 *              child's), one struct prt_calls per entry it called, none for
 *              the others; time_ns is when that counting started, so pid,
 *              tid and time_ns name the thread (an exec keeps pid and tid).
 *              Written at most every PRT_CALLS_NS at the thread's timer
 *              ticks, at its exit and at the process's exit, each holding
 *              the counts so far: a reader keeps each thread's largest and
 *              sums the threads (docs/paths.md, "Calls counted at the
 *              entry").
 * With value samples on, the runtime also appends to "<pid>.heap" one
 * record per allocation of at least DCPI_HEAP_MIN bytes (default
 * DATA_HEAP_MIN, include/dcpi/data.h): PRT_ALLOC with a struct prt_alloc
 * (the caller's return address), and PRT_FREE (addr only) when it goes;
 * and PRT_KIO for each transfer by the kernel into or out of a buffer not
 * on the stack (collect/pathrt_io.c); collect/datarec.c reads them.
 * Integers are in the machine's byte order: the file never leaves it.
 */
#ifndef DCPI_COLLECT_PATHRT_H
#define DCPI_COLLECT_PATHRT_H

#include <stdint.h>

#define PRT_ENV_DIR	"DCPI_PATHS_DIR"	/* spool directory (mode 0700) */
#define PRT_ENV_RATE	"DCPI_PATHS"		/* "RATE:K": bursts per CPU second, steps */
#define PRT_ENV_SIGNAL	"DCPI_PATHS_SIGNAL"	/* timer signal, default SIGRTMAX - 3 */
#define PRT_ENV_VALUES	"DCPI_VALUES"		/* "1": register files with the pcs,
						 * "2": and latency probes */
#define PRT_ENV_HEAP	"DCPI_HEAP_MIN"		/* smallest block recorded, bytes */
#define PRT_ENV_PLAN	"DCPI_PLAN"		/* the marking plan, as below */
#define PRT_LIB_NAME	"libdcpi-paths.so"
#define PRT_TMP_PREFIX	"dcpi-paths-"	/* dcpi record's directory for the spool and
					 * its copy of the runtime (paths_run.c) */

#define PRT_MAGIC	0x48544150u		/* "PATH" */
#define PRT_MAPS	1u
#define PRT_BURST	2u
#define PRT_VBURST	3u
#define PRT_ALLOC	4u			/* in "<pid>.heap": struct prt_alloc */
#define PRT_FREE	5u			/* the same, size and caller 0 */
#define PRT_ARGS	6u			/* struct prt_args: a marked entry's call */
#define PRT_KIO		7u			/* in "<pid>.heap": struct prt_alloc, the
						 * kernel moved size bytes at addr; caller
						 * PRT_KIO_IN or PRT_KIO_OUT
						 * (collect/pathrt_io.c) */
#define PRT_CANARY	8u			/* struct prt_canary */
#define PRT_CALLS	9u			/* struct prt_calls, one per entry */
#define PRT_KIO_IN	0u			/* it wrote them (read) */
#define PRT_KIO_OUT	1u			/* it read them (write) */
#define PRT_KMAX	256			/* most steps in a burst */
#define PRT_REC_MAX	(1u << 20)		/* a reader refuses larger records */

/*
 * The marking plan (docs/values.md, "Marking plan"), as dcpi record hands it
 * to the runtime: a text file (PRT_PLAN_NAME in the spool directory, named
 * by DCPI_PLAN), one marked procedure a line,
 *   "<file offset hex> <size hex> <flags hex> <image path>\n",
 * or with PRT_PLAN_COUNT in flags
 *   "<file offset hex> <size hex> <flags hex> <entry bytes hex> <image path>\n",
 * (with PRT_PLAN_BLOCK too: a block's bytes, its executions counted; with
 * PRT_PLAN_JCC8 or PRT_PLAN_JCC32 a jcc ends them, prt_jcc_len),
 * at most PRT_PLAN_MAX lines; flags PRT_PLAN_HOT, PRT_PLAN_BP, PRT_PLAN_COUNT
 * and, from bit PRT_PLAN_REGS_SHIFT, the argument registers the entry takes
 * (bit r for rdi, rsi, rdx, rcx, r8, r9; none: all six).  The entry bytes
 * (PRT_ENTRY_MIN to PRT_ENTRY_MAX, two hex digits each: the plan's
 * entry=HEX, include/dcpi/values.h) are the whole instructions at the entry
 * that a 5-byte jump displaces; where the entry holds exactly them, the
 * runtime puts a jump to a counting trampoline there (docs/paths.md, "Calls
 * counted at the entry"), and its PRT_CALLS records name the entry by its
 * line's index in this file (0: the first; every line counts, understood
 * or not).  With a plan the timer ticks PRT_PLAN_TICKS times a burst
 * period, and two accounts are earned from the thread's CPU time:
 *   - bursts: K / PRT_PLAN_TICKS steps a tick, as without a plan; a tick in
 *     a procedure marked PRT_PLAN_HOT starts a burst whenever the account
 *     allows, elsewhere with probability 1 / PRT_PLAN_TICKS;
 *   - captures: 1 / PRT_PLAN_SHARE of the CPU time, a capture (int3, the
 *     handler, the record's write, one step) charged PRT_PLAN_CAPTURE_NS.
 * At every tick with the breakpoint idle it is armed at the entry of a
 * procedure marked PRT_PLAN_BP (the one the tick is in, else the next in
 * turn; an entry whose armings caught nothing PRT_PLAN_MISSES times in a
 * row only at a tick in it, PRT_PLAN_GIVEUP times: never) for its next
 * calls, as many as the account pays (PRT_PLAN_CHAIN_MIN to
 * PRT_PLAN_CHAIN), each written as a PRT_ARGS record, and re-armed so until
 * the entry's question is closed: each argument register's most frequent
 * value (among the first PRT_PLAN_VALS distinct) known to
 * +-3 points at z = 3, n >= PRT_PLAN_NEED_K p (1 - p) at the adjusted
 * share p = (x + 2) / (n + 4), and at least PRT_PLAN_MIN_CALLS calls.
 */
#define PRT_PLAN_NAME	"plan.rt"
#define PRT_PLAN_MAX	256
#define PRT_PLAN_HOT	1u	/* bursts preferred */
#define PRT_PLAN_BP	2u	/* and a breakpoint at the entry (arguments) */
#define PRT_PLAN_COUNT	4u	/* calls counted at the entry (entry bytes) */
#define PRT_TRAMP_SUFFIX ".tramp"	/* <dir>/<pid>.tramp: the trampolines (pathrt.c) */
#define PRT_TRAMP_HEAD	9	/* a trampoline's incq %fs:disp32, before the moved bytes */
#define PRT_PLAN_BLOCK	8u	/* ... at a block inside: its executions (plan's block line) */
#define PRT_PLAN_JCC8	16u	/* ... whose bytes end in a short jcc (2 bytes) */
#define PRT_PLAN_JCC32	32u	/* ... or a near one (6): the trampoline branches */
#define PRT_TRAMP_SLOT_BYTES 32	/* a trampoline: increment, bytes, near jcc, jmp back */

/* The length of the jcc that ends a block mark's n bytes (flags
 * PRT_PLAN_JCC8 or PRT_PLAN_JCC32), 0 for none; -1 when the bytes do not
 * end in that form or a trampoline's slot could not hold them with the
 * jcc in its near form. */
static inline int prt_jcc_len(const uint8_t *b, size_t n, unsigned flags)
{
	size_t j = flags & PRT_PLAN_JCC8 ? 2 : flags & PRT_PLAN_JCC32 ? 6 : 0;

	if (!j)
		return 0;
	if ((flags & PRT_PLAN_JCC8) && (flags & PRT_PLAN_JCC32))
		return -1;
	if (n < j || PRT_TRAMP_HEAD + (n - j) + 6 + 5 > PRT_TRAMP_SLOT_BYTES)
		return -1;
	if (j == 2 && (b[n - 2] & 0xf0) != 0x70)
		return -1;
	if (j == 6 && (b[n - 6] != 0x0f || (b[n - 5] & 0xf0) != 0x80))
		return -1;
	return (int)j;
}

static inline int prt_jcc_ok(const uint8_t *b, size_t n, unsigned flags)
{
	return prt_jcc_len(b, n, flags) >= 0;
}
#define PRT_PLAN_REGS_SHIFT 8	/* the argument registers it takes, 6 bits */
#define PRT_PLAN_TICKS	4	/* CPU-time timers fire at most once a kernel tick */
#define PRT_PLAN_SHARE	8	/* captures spend at most 1/8 of the CPU time */
#define PRT_PLAN_CAPTURE_NS 20000	/* what one costs here (docs/values.md) */
#define PRT_PLAN_CHAIN	256	/* most captures one arming buys */
#define PRT_PLAN_CHAIN_MIN 4
#define PRT_PLAN_ARM_NS	5000000ULL	/* armed longer: taken out at the next tick */
#define PRT_PLAN_MISSES	2
#define PRT_PLAN_GIVEUP	8
#define PRT_PLAN_VALS	8	/* values counted per argument register */
#define PRT_PLAN_NEED_K	10000	/* z^2 / points^2: z = 3, +-0.03 */
#define PRT_PLAN_MIN_CALLS 64
#define PRT_ENTRY_MIN	5	/* entry bytes: the jump's length */
#define PRT_ENTRY_MAX	15	/* ... at most (the plan's limit) */
#define PRT_CALLS_NS	200000000ULL	/* a thread's counts written at most this often */

/* Flags of a burst record. */
#define PRT_F_CUT	1u	/* ended early: a syscall or the trap budget */
#define PRT_F_LOST	2u	/* stepping stopped without us (popf, longjmp) */

/* The integer registers in the instruction set's numbering (rax, rcx, rdx,
 * rbx, rsp, rbp, rsi, rdi, r8 ... r15), and for a load the runtime could
 * decode, the TSC ticks of a timed re-load of its address just before it
 * ran (seed 000's latency sample; 0: none). */
#define PRT_NREGS	16
struct prt_regs {
	uint64_t r[PRT_NREGS];
	uint64_t lat;
};

struct prt_rec {
	uint32_t magic;
	uint32_t type;
	uint32_t len;		/* bytes of the record including this header */
	uint32_t pid, tid;
	uint32_t flags;
	uint64_t time_ns;	/* CLOCK_MONOTONIC: a burst's start, a MAPS record's write,
				 * PRT_CALLS: when the thread's counting started */
};

/* A call of a marked procedure, caught at its entry's breakpoint: the
 * entry's address, the return address (the word at rsp) and the registers
 * before the entry's first instruction ran. */
struct prt_args {
	uint64_t pc, ret;
	struct prt_regs regs;
};

/*
 * TSC ticks of PRT_CANARY_N dependent `add $1` (one core cycle each: the
 * clock) and of PRT_CANARY_N groups of 8 independent adds (bound by the
 * ALUs' throughput, which a busy sibling thread of the core takes a share
 * of), each the least of three runs.  adds / chain is core cycles per group:
 * the sandbox's canary (culprit/sandbox/sandbox.c) timed where the program
 * runs.
 */
#define PRT_CANARY_N	256
#define PRT_CANARY_REPT	"256"	/* the same, for the assembler */
struct prt_canary {
	uint32_t chain, adds;
};

/* The calls of one counted entry (PRT_CALLS): its line in the plan file. */
struct prt_calls {
	uint32_t line;
	uint32_t zero;
	uint64_t calls;
};

struct prt_alloc {
	uint64_t addr, size;
	uint64_t caller;	/* the allocation's return address */
};

#endif /* DCPI_COLLECT_PATHRT_H */
