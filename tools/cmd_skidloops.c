/*
 * tools/cmd_skidloops.c - `dcpi __skidloops SCALE` (hidden): loops with known
 * instruction mixes for `dcpi calibrate` (tools/cmd_calibrate.c, docs/estimate.md
 * "Calibration: where samples land"): where does this machine's sampling interrupt report the
 * cycles of a waiting instruction?  Built into dcpi, so calibration needs
 * nothing beside the installed binary; calibrate records and counts this very
 * binary running them, and finds the loops by their symbols.
 *
 * Each loop is written in assembly so its blocks are exactly what the model
 * schedules: the expensive instruction comes first and is followed by cheap
 * independent ones, so samples that skid land on instructions that spend no
 * cycles.  Every count is scale x 65536 x (a constant per loop), so exact
 * counts measured under callgrind at a small scale multiply up.
 *
 *   sk_imul     one block: a chain of two dependent imuls, four cheap ops
 *   sk_load     one block: a pointer chase through 4 KiB (L1-resident)
 *   sk_div      one block: a chain of 64-bit divides
 *   sk_alt      three blocks: an imul chain split by a branch taken every
 *               other iteration (perfectly predicted)
 *   sk_branch   four blocks: a data-dependent branch taken one time in four
 *               (about 25% mispredicted: its cost is a dynamic stall)
 *   sk_miss     one block: a pointer chase through 16 MiB, each step a miss,
 *               the loaded index added by the next instruction (its waiter)
 *               and a cheap one after it (the witness): what the timer shows
 *               of a waiter's cycles (estimate/destall.c)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools.h"

#define TABLE 65536u
#define CHASE 512u
#define MISS_WORDS (2u << 20)	/* 16 MiB: past the L2, and an L3 shared with others */

static uint8_t table[TABLE];
static uint64_t ring[CHASE];
static volatile uint64_t sink;

/* The end of every loop: count n down, back to label 1. */
#define SK_LOOP_END	"sub $1, %[n]\n\t" "jnz 1b\n\t"
/* Three cheap independent ops after the expensive one (where samples that skid
 * land), then the loop's end. */
#define SK_CHEAP_TAIL	"add $1, %[a]\n\t" "add $3, %[b]\n\t" "xor %[a], %[b]\n\t" SK_LOOP_END

__attribute__((noinline, noclone)) static uint64_t sk_imul(uint64_t n, uint64_t x)
{
	uint64_t a = 0, b = 0, k = 0x9e3779b97f4a7c15ull;

	__asm__ volatile("1:\n\t"
			 "imul %[k], %[x]\n\t"
			 "imul %[k], %[x]\n\t"
			 SK_CHEAP_TAIL
			 : [x] "+r"(x), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n)
			 : [k] "r"(k)
			 : "cc");
	return x + a + b;
}

__attribute__((noinline, noclone)) static uint64_t sk_load(uint64_t n, const uint64_t *r)
{
	uint64_t p = 0, a = 0, b = 0;

	__asm__ volatile("1:\n\t"
			 "mov (%[r],%[p],8), %[p]\n\t"
			 SK_CHEAP_TAIL
			 : [p] "+r"(p), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n)
			 : [r] "r"(r)
			 : "cc", "memory");
	return p + a + b;
}

__attribute__((noinline, noclone)) static uint64_t sk_div(uint64_t n, uint64_t x)
{
	uint64_t a = 0, b = 0, d = 7;

	__asm__ volatile("1:\n\t"
			 "xor %%edx, %%edx\n\t"
			 "div %[d]\n\t"
			 "add %[big], %%rax\n\t"
			 SK_CHEAP_TAIL
			 : "+a"(x), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n)
			 : [d] "r"(d), [big] "r"(0x7000000000000000ull)
			 : "cc", "rdx");
	return x + a + b;
}

__attribute__((noinline, noclone)) static uint64_t sk_alt(uint64_t n, uint64_t x)
{
	uint64_t a = 0, b = 0, k = 0x9e3779b97f4a7c15ull;

	__asm__ volatile("1:\n\t"
			 "imul %[k], %[x]\n\t"
			 "add $1, %[a]\n\t"
			 "test $1, %[n]\n\t"
			 "jz 2f\n\t"
			 "imul %[k], %[x]\n\t"
			 "add $3, %[b]\n\t"
			 "xor %[a], %[b]\n\t"
			 "2:\n\t"
			 "add $5, %[b]\n\t"
			 SK_LOOP_END
			 : [x] "+r"(x), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n)
			 : [k] "r"(k)
			 : "cc");
	return x + a + b;
}

__attribute__((noinline, noclone)) static uint64_t sk_branch(uint64_t n, const uint8_t *t)
{
	uint64_t i = 0, a = 0, b = 0, c;

	__asm__ volatile("1:\n\t"
			 "movzbl (%[t],%[i]), %k[c]\n\t"
			 "test $3, %k[c]\n\t"
			 "jnz 2f\n\t"
			 "add $1, %[a]\n\t"
			 "add %[a], %[b]\n\t"
			 "jmp 3f\n\t"
			 "2:\n\t"
			 "add $7, %[b]\n\t"
			 "xor %[b], %[a]\n\t"
			 "3:\n\t"
			 "add $1, %[i]\n\t"
			 "and $0xffff, %[i]\n\t"
			 SK_LOOP_END
			 : [i] "+r"(i), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n), [c] "=&r"(c)
			 : [t] "r"(t)
			 : "cc", "memory");
	return a + b;
}

__attribute__((noinline, noclone)) static uint64_t sk_miss(uint64_t n, const uint64_t *r)
{
	uint64_t p = 0, a = 0, b = 0;

	__asm__ volatile("1:\n\t"
			 "mov (%[r],%[p],8), %[p]\n\t"
			 "add %[p], %[a]\n\t"
			 "add $3, %[b]\n\t"
			 SK_LOOP_END
			 : [p] "+r"(p), [a] "+r"(a), [b] "+r"(b), [n] "+r"(n)
			 : [r] "r"(r)
			 : "cc", "memory");
	return p + a + b;
}

/* r[0..n) as one random cycle of 0..n-1 (Sattolo), from the generator state *x. */
static void random_cycle(uint64_t *r, size_t n, uint64_t *x)
{
	for (size_t i = 0; i < n; i++)
		r[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j;
		uint64_t t;

		*x = *x * 6364136223846793005ull + 1442695040888963407ull;
		j = (size_t)((*x >> 33) % i);
		t = r[i], r[i] = r[j], r[j] = t;
	}
}

/* One random cycle through n words, for sk_miss; NULL without memory. */
static uint64_t *miss_ring(size_t n, uint64_t x)
{
	uint64_t *r = malloc(n * sizeof(*r));

	if (r)
		random_cycle(r, n, &x);
	return r;
}

int cmd_skidloops(int argc, char **argv)
{
	uint64_t scale = argc > 1 ? strtoull(argv[1], NULL, 10) : 1, n, x = 1;
	uint64_t perm[CHASE];
	uint64_t *big;

	if (!scale)
		return 1;
	/* a fixed pseudo-random byte table and one random cycle through the ring */
	for (uint32_t i = 0; i < TABLE; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		table[i] = (uint8_t)(x >> 56);
	}
	random_cycle(perm, CHASE, &x);
	for (uint32_t i = 0; i < CHASE; i++)
		ring[perm[i]] = perm[(i + 1) % CHASE];
	n = scale * TABLE;
	x = sk_imul(8 * n, x);
	x += sk_load(8 * n, ring);
	x += sk_div(2 * n, x);
	x += sk_alt(8 * n, x);
	x += sk_branch(8 * n, table);
	big = miss_ring(MISS_WORDS, x);
	if (!big)
		return 1;
	x += sk_miss(n, big);
	free(big);
	sink = x;
	printf("%llu\n", (unsigned long long)x);
	return 0;
}
