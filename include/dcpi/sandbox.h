/*
 * sandbox.h - time a piece of machine code on this machine, BHive-style
 * (Chen et al., IISWC 2019; culprit/sandbox/sandbox.c, docs/models.md).
 *
 * A body (straight-line bytes: a block, a loop iteration along one path with
 * its internal branches made nops, or a microbenchmark) is copied U and 2U
 * times into a counted loop and run in a forked child with every
 * general-purpose register pointing into a mapped region; faulting pages are
 * mapped on demand, a divide fault is retried once, a timeout kills the
 * child.  cycles per iteration = (T(2U) - T(U)) / (N U), converted from TSC
 * ticks to core cycles by a 1-cycle add chain timed beside it.  The parent's
 * address space is never touched by the body.
 *
 * Bodies with syscalls, privileged or serialising instructions, or control
 * flow that leaves the body are refused (SBX_REFUSED) by sbx_check before any
 * child runs; callers leave those to the model.
 */
#ifndef DCPI_SANDBOX_H
#define DCPI_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

enum sbx_status {
	SBX_OK,
	SBX_REFUSED,		/* not timed: syscall, privileged, leaves the body */
	SBX_FAULT,		/* a fault the sandbox cannot map (detail says which) */
	SBX_TIMEOUT,		/* the child ran past opts.timeout_ms */
	SBX_UNSTABLE,		/* repetitions spread more than contention explains
				 * (the figures are filled all the same) */
	SBX_TOO_LARGE,
	SBX_ERROR,		/* fork, pipe, mmap failed in the parent */
};

/* Longest body sbx_time accepts: 2U copies must fit the code area. */
#define SBX_BODY_MAX (120u << 10)

struct sbx_opts {
	int reps;		/* repetitions per body (median kept); 0: 15 */
	int timeout_ms;		/* per body; 0: 2000 */
	int cpu;		/* pin the child to this CPU; -1: do not pin */
	unsigned iters;		/* body iterations per timed run; 0: 5000 */
	unsigned flags;		/* SBX_F_* (extension; 0 after sbx_opts_default) */
};

/* Allow direct forward branches whose target is an instruction of the body or
 * its end (branch microbenchmarks: jmp to the next instruction, jcc not taken). */
#define SBX_F_BRANCHES 1u
/* Time each body again with memory full of random bytes instead of X, and a
 * third time with each 4-byte word random below 1024, and keep the lowest
 * figure: the best case over data.  With X everywhere, a store whose address
 * comes from memory (a histogram's count[byte]++) writes one word every pass,
 * a read-modify-write chain real data does not make; with random bytes its
 * byte indices vary, with small words its 32-bit ones (random 32-bit indices
 * land gigabytes away).  A body that dereferences a loaded pointer faults on
 * the random values and keeps the X figure. */
#define SBX_F_RANDOM_MEM 2u
/* Wind stepping pointers back after every U copies (sandbox.c, sbx_emit): the
 * body's memory stays in L1 however far one pass steps (U is lowered, not
 * below 4, where 2U passes would walk more than 16 KB). */
#define SBX_F_WIND 4u
/* Start each general-purpose register at its own value (sandbox.c, sbx_regs)
 * instead of all at X: two pointers are two arrays. */
#define SBX_F_DISTINCT 8u

struct sbx_result {
	enum sbx_status status;
	double cycles;		/* core cycles per body iteration (median of reps) */
	double cycles_min;	/* from the fastest runs */
	double spread;		/* interquartile range / median */
	double cycles_per_tsc;	/* core clock / TSC as measured beside it */
	unsigned unroll;	/* U */
	char detail[96];	/* why not timed: "SIGSEGV at 0x...", "syscall at +12" */
	/* extensions (culprit/sandbox/sandbox.c) */
	double cycles_low;	/* lower quartile of the repetitions: the low,
				 * stable figure on a shared machine */
	unsigned pages;		/* pages mapped on demand beside the region */
	int rdx_zero;		/* timed with rdx = 0 after a divide fault */
	int relaid;		/* laid out again after a general protection
				 * fault: rsp as a call leaves it, copies kept
				 * aligned or started afresh (sandbox.c,
				 * sbx_realign) */
	int random_mem;		/* the figure is from a random-memory run
				 * (SBX_F_RANDOM_MEM): 1 random bytes, 2 small
				 * 4-byte words */
	/* The contention canary (8 independent adds, timed before and after each
	 * repetition): the figures come from the repetitions whose canary was
	 * within 5% of the least this batch saw (the core to itself); with fewer
	 * than three such, from all, and contended is set. */
	double canary;		/* the least canary, core cycles per 8 adds */
	int contended;
};

void sbx_opts_default(struct sbx_opts *o);

/*
 * Whether body[0..len) can be timed: every instruction decodes, none is a
 * syscall/sysenter/int, privileged, serialising beyond what a user program
 * may run (cpuid, rdtsc, rdpmc are refused), or a branch, call or return
 * (callers replace internal branches first).  0 when it can; SBX_REFUSED with
 * detail filled when it cannot.  Also refused: rep string operations (their
 * count would be the region's address), writes to segment bases and
 * protection keys, and state restores (xrstor), which would break the child.
 */
int sbx_check(const uint8_t *body, size_t len, char *detail, size_t dlen);
/* The same with SBX_F_* flags (sbx_check is flags 0). */
int sbx_check_flags(const uint8_t *body, size_t len, unsigned flags, char *detail,
		    size_t dlen);

/*
 * Time n bodies in one forked child (restarted after a body that kills it).
 * bodies[i] / lens[i]; res[i] is filled for every i.  Returns 0, or a
 * negative errno when no child could be run at all (err says why).
 * sbx_check runs first on every body; refused ones are not run.
 */
int sbx_time(const uint8_t *const *bodies, const size_t *lens, size_t n,
	     const struct sbx_opts *opts, struct sbx_result *res, struct dcpi_err *err);

const char *sbx_status_name(enum sbx_status s);

/*
 * Whether the sandbox can time code here: an x86-64 build, and not under
 * valgrind (which runs the body on its own synthetic CPU: the figures
 * would not be this machine's).  1 yes, 0 no with why filled.
 */
int sbx_usable(char *why, size_t len);

/*
 * A dependent walk through one random cycle of the elements of `elem` bytes
 * (a power of 2, 4 to 4096) of a region of `bytes` (at most 1 GB), timed
 * here in cycles per step, beside the same walk over 4 KB, which stays in
 * L1 (culprit/sandbox/replay.c): what each step of a pointer chase over
 * such a region costs on this machine.
 */
struct sbx_walk {
	size_t bytes, elem;	/* the region walked, its elements */
	double cycles;		/* per step over it */
	double l1_cycles;	/* per step over 4 KB: an L1 hit's latency */
	double spread;		/* interquartile range / median of the repetitions */
};

int sbx_replay_walk(size_t bytes, size_t elem, struct sbx_walk *out, struct dcpi_err *err);

#endif /* DCPI_SANDBOX_H */
