/*
 * bench/bhive/loopform.c - loops timed as they run: the body, then its own
 * compare and taken branch, 100,000 iterations (or 4,096 stores over 16 KB),
 * rdtsc around each run, the least of RUNS runs, TSC ticks turned into core
 * cycles by a chain of dependent adds timed the same way.  The harness
 * (harness.c) times bodies unrolled without their branch; these are the
 * same shapes with it (docs/models.md, "The references reproduce; the
 * binding is still open").  Pin it: taskset -c 1 build/bhive/loopform.
 *
 *	cc -O2 -o build/bhive/loopform bench/bhive/loopform.c
 */
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

#define RUNS 60
#define N 100000
#define NST 4096

static char buf[NST * 4 + 64] __attribute__((aligned(4096)));

/* A counted loop: rcx from 0 to N, the body before `cmp; jne`. */
#define COUNTED(fn, body)							\
	static uint64_t fn(void)						\
	{									\
		uint64_t best = ~0ull;						\
		for (int r = 0; r < RUNS; r++) {				\
			uint64_t t0 = __rdtsc(), t;				\
			__asm__ volatile("xor %%ecx,%%ecx\n\txor %%eax,%%eax\n\t"	\
					 "xor %%edx,%%edx\n1:\n\t" body "\n\t"	\
					 "cmp $100000,%%rcx\n\tjne 1b"		\
					 ::: "rax", "rcx", "rdx", "r8", "r9",	\
					 "r10", "r11", "cc");			\
			t = __rdtsc() - t0;					\
			if (t < best)						\
				best = t;					\
		}								\
		return best;							\
	}

/* A store loop: rax walks 16 KB in 4-byte steps to rdx. */
#define STORES(fn, body)							\
	static uint64_t fn(void)						\
	{									\
		uint64_t best = ~0ull;						\
		for (int r = 0; r < RUNS; r++) {				\
			char *p = buf, *e = buf + NST * 4;			\
			uint64_t t0 = __rdtsc(), t;				\
			__asm__ volatile("1:\n\t" body "\n\tcmpq %%rax,%%rdx\n\t"	\
					 "jne 1b" : "+a"(p) : "d"(e), "c"(0)	\
					 : "memory", "cc");			\
			t = __rdtsc() - t0;					\
			if (t < best)						\
				best = t;					\
		}								\
		return best;							\
	}

COUNTED(c_add, "add $1,%%rcx")
COUNTED(c_add4, "add $1,%%rcx; add $1,%%rdx; add $1,%%r8; add $1,%%r9")
COUNTED(c_lea, "add $1,%%rcx; lea 1(%%rcx),%%edx")
COUNTED(c_lea_add, "add $1,%%rcx; lea 1(%%rcx),%%edx; add $1,%%edx")
COUNTED(c_lea_add2, "add $1,%%rcx; lea 1(%%rcx),%%edx; add $1,%%edx; add $1,%%edx")
COUNTED(c_lea_rec, "add $1,%%rcx; lea 1(%%rcx),%%edx; add $1,%%r8")
COUNTED(c_mov3, "add $1,%%rcx; mov $5,%%r9d; mov $5,%%r10d; mov $5,%%r11d")
COUNTED(c_shl, "add $1,%%rcx; mov %%rcx,%%rdx; shl $3,%%rdx; add $1,%%rdx")
COUNTED(c_lea3x, "lea (%%rax,%%rax,2),%%rax; add $1,%%rcx")
STORES(s_reg, "movl %%ecx,(%%rax); addq $4,%%rax")
STORES(s_imm32, "movl $7,(%%rax); addq $4,%%rax")
STORES(s_imm8, "movb $7,(%%rax); addq $4,%%rax")
STORES(s_imm64, "movq $7,(%%rax); addq $4,%%rax")
STORES(s_imm32_disp, "movl $7,4(%%rax); addq $4,%%rax")

/* Core cycles per TSC tick: 10,000 dependent adds, the least of 200 runs. */
static double core_per_tick(void)
{
	uint64_t best = ~0ull;

	for (int r = 0; r < 200; r++) {
		uint64_t t0 = __rdtsc(), t;
		long x = 0;

		__asm__ volatile("mov $100,%%ecx\n2:\n\t.rept 100\n\taddq $1,%0\n\t.endr\n\t"
				 "dec %%ecx\n\tjnz 2b" : "+r"(x) : : "rcx", "cc");
		t = __rdtsc() - t0;
		if (t < best)
			best = t;
	}
	return 10000.0 / (double)best;
}

int main(void)
{
	static const struct {
		const char *name, *body;
		uint64_t (*fn)(void);
		int iters;
	} t[] = {
		{ "c_add", "add $1,%rcx", c_add, N },
		{ "c_add4", "add $1,%rcx; add $1,%rdx; add $1,%r8; add $1,%r9", c_add4, N },
		{ "c_lea", "add $1,%rcx; lea 1(%rcx),%edx", c_lea, N },
		{ "c_lea_add", "add $1,%rcx; lea 1(%rcx),%edx; add $1,%edx", c_lea_add, N },
		{ "c_lea_add2", "... ; add $1,%edx; add $1,%edx", c_lea_add2, N },
		{ "c_lea_rec", "add $1,%rcx; lea 1(%rcx),%edx; add $1,%r8", c_lea_rec, N },
		{ "c_mov3", "add $1,%rcx; mov $5,%r9d; mov $5,%r10d; mov $5,%r11d", c_mov3, N },
		{ "c_shl", "add $1,%rcx; mov %rcx,%rdx; shl $3,%rdx; add $1,%rdx", c_shl, N },
		{ "c_lea3x", "lea (%rax,%rax,2),%rax; add $1,%rcx", c_lea3x, N },
		{ "s_reg", "movl %ecx,(%rax); addq $4,%rax", s_reg, NST },
		{ "s_imm32", "movl $7,(%rax); addq $4,%rax", s_imm32, NST },
		{ "s_imm8", "movb $7,(%rax); addq $4,%rax", s_imm8, NST },
		{ "s_imm64", "movq $7,(%rax); addq $4,%rax", s_imm64, NST },
		{ "s_imm32_disp", "movl $7,4(%rax); addq $4,%rax", s_imm32_disp, NST },
	};
	double cpt = core_per_tick();

	printf("# core cycles per TSC tick %.3f; cycles per iteration, least of %d runs\n",
	       cpt, RUNS);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		printf("%-14s %6.3f  %s; cmp; jne\n", t[i].name,
		       (double)t[i].fn() * cpt / t[i].iters, t[i].body);
	return 0;
}
