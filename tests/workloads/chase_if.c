/*
 * chase_if.c - a pointer chase whose next index is carried round a loop of
 * four blocks, for tests/test_trust.c and tests/test_replay.c: the load
 * j = next[i] heads the loop, an if on the step counter's low bit takes one
 * of two arms (alternating: a predictor learns it), and the block where the
 * arms meet sets i = j before the back edge.  The load's address register
 * is not its destination; only a dataflow round the loop's blocks finds the
 * chain (estimate/replay.c est_replay_self_fed).  The ring is one random
 * cycle of BYTES bytes (Sattolo's algorithm, fixed seed, as in
 * tests/workloads/chase.c); the load runs exactly STEPS times.
 *
 * usage: chase_if BYTES STEPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_common.h"

long walk_if(const unsigned *next, long steps);

/* written out so that the compiler makes neither a cmov of the if nor the
 * load's destination its address register */
__asm__(".text\n"
	".globl walk_if\n"
	".type walk_if, @function\n"
	"walk_if:\n"
	"	xorl %eax, %eax\n"
	"	xorl %ecx, %ecx\n"
	"	xorl %r8d, %r8d\n"
	"	testq %rsi, %rsi\n"
	"	jle 4f\n"
	"1:	movl (%rdi,%rax,4), %edx\n"	/* j = next[i] */
	"	testb $1, %sil\n"
	"	je 2f\n"
	"	addq %rdx, %rcx\n"		/* odd steps: sum j */
	"	jmp 3f\n"
	"2:	xorq %rdx, %r8\n"		/* even steps: xor j */
	"3:	movl %edx, %eax\n"		/* i = j */
	"	subq $1, %rsi\n"
	"	jne 1b\n"
	"4:	leaq (%rcx,%r8), %rax\n"
	"	ret\n"
	".size walk_if, .-walk_if\n");

WL_CHASE_MAIN(walk_if, 64u << 20, 3000000)
