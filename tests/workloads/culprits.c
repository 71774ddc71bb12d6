/*
 * culprits.c - loops whose dynamic-stall culprit is known by construction,
 * for test_culprit's recorded half (docs/culprits.md):
 *
 *   culprits chase N    a pointer chase through 64 MB (DRAM misses): the
 *                       load at cul_chase_load
 *   culprits branch N   a branch on a random bit: the jcc at cul_branch_jcc
 *   culprits fwd N      a 4-byte store, then an 8-byte load of the same
 *                       address: the store at cul_fwd_store
 *
 * Each loop has a second block in the same cycle-equivalence class (always
 * run with the stalling one) doing independent work that does not stall, so
 * the block windows can count iterations where the stall is not.  The
 * labelled instructions are global symbols: the test finds them by name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_common.h"

uint64_t cul_chase(const uint64_t *start, uint64_t n);
uint64_t cul_branch(uint64_t n, uint64_t seed);
uint64_t cul_fwd(uint64_t *slot, uint64_t n);

__asm__(".text\n"
	".globl cul_chase\n.type cul_chase,@function\n"
	"cul_chase:\n"
	"	mov %rdi, %rax\n"
	"	xor %ecx, %ecx\n"
	"	xor %edx, %edx\n"
	"	.p2align 5\n"
	"1:\n"
	".globl cul_chase_load\n"
	"cul_chase_load:\n"
	"	mov (%rax), %rax\n"
	"	add $1, %rcx\n"
	"	jmp 2f\n"
	"	.p2align 4\n"
	"2:	add $3, %rdx\n"
	"	add $5, %r8\n"
	"	add $7, %r9\n"
	"	add $9, %r10\n"
	"	cmp %rsi, %rcx\n"
	"	jne 1b\n"
	"	add %rdx, %rax\n"
	"	ret\n"
	".size cul_chase, .-cul_chase\n"

	".globl cul_branch\n.type cul_branch,@function\n"
	"cul_branch:\n"
	"	xor %eax, %eax\n"
	"	xor %ecx, %ecx\n"
	"	movabs $6364136223846793005, %r8\n"
	"	movabs $1442695040888963407, %r9\n"
	"	.p2align 5\n"
	"1:	imul %r8, %rsi\n"
	"	add %r9, %rsi\n"
	"	bt $40, %rsi\n"
	".globl cul_branch_jcc\n"
	"cul_branch_jcc:\n"
	"	jc 2f\n"
	"	add $3, %rax\n"
	"	add $1, %r10\n"
	"	jmp 3f\n"
	"2:	sub $5, %rax\n"
	"	add $1, %r11\n"
	"3:	add $1, %rcx\n"
	"	add $2, %rdx\n"
	"	cmp %rdi, %rcx\n"
	"	jne 1b\n"
	"	ret\n"
	".size cul_branch, .-cul_branch\n"

	".globl cul_fwd\n.type cul_fwd,@function\n"
	"cul_fwd:\n"
	"	xor %ecx, %ecx\n"
	"	xor %eax, %eax\n"
	"	.p2align 5\n"
	"1:\n"
	".globl cul_fwd_store\n"
	"cul_fwd_store:\n"
	"	mov %ecx, (%rdi)\n"
	".globl cul_fwd_load\n"
	"cul_fwd_load:\n"
	"	mov (%rdi), %rdx\n"
	"	add %rdx, %rax\n"
	"	jmp 2f\n"
	"	.p2align 4\n"
	"2:	add $3, %r8\n"
	"	add $5, %r9\n"
	"	add $1, %rcx\n"
	"	cmp %rsi, %rcx\n"
	"	jne 1b\n"
	"	ret\n"
	".size cul_fwd, .-cul_fwd\n");

/* n lines of 64 bytes in one random cycle (Sattolo): every step a new line */
static uint64_t *chase_ring(size_t n)
{
	uint64_t *a = malloc(n * 8 * sizeof(*a));
	size_t *perm = malloc(n * sizeof(*perm));
	uint64_t x = 88172645463325252ull;

	if (!a || !perm) {
		free(a);
		free(perm);
		return NULL;
	}
	WL_SATTOLO(perm, n, x);
	memset(a, 0, n * 8 * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[perm[i] * 8] = (uint64_t)(uintptr_t)&a[perm[(i + 1) % n] * 8];
	free(perm);
	return a;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chase";
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	uint64_t r = 0;

	if (!strcmp(mode, "chase")) {
		uint64_t *a = chase_ring((size_t)1 << 20);	/* 64 MB */

		if (!a)
			return 1;
		r = cul_chase(a, n);
		free(a);
	} else if (!strcmp(mode, "branch")) {
		r = cul_branch(n, 12345);
	} else if (!strcmp(mode, "fwd")) {
		static uint64_t slot[8];

		r = cul_fwd(slot, n);
	} else {
		fprintf(stderr, "culprits: unknown mode %s\n", mode);
		return 2;
	}
	printf("%llu\n", (unsigned long long)r);
	return 0;
}
