/*
 * bench/bhive/loopform.c - loops timed as they run, with their own compare
 * and taken branch, each placed at several offsets in a 64-byte line:
 * 100,000 iterations, rdtsc around each run, the least of RUNS runs, TSC
 * ticks turned into core cycles by a chain of dependent adds timed the same
 * way.  The harness (harness.c) times bodies unrolled without their branch;
 * here the same kinds of bodies run as loops, and where the loop's code
 * sits decides as much as what it holds: on Zen 4 a loop of a few adds runs
 * 1.00 cycles an iteration inside one line and 2.02 across two
 * (docs/models.md, "Loops across a line"; the model's loop_line_bytes).
 * Pin it: taskset -c 1 build/bhive/loopform.
 *
 *	cc -O2 -o build/bhive/loopform bench/bhive/loopform.c
 */
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

#define RUNS 40
#define N 100000

/* rcx counts to N; the body, then `cmp $N,%rcx; jne`, starting PAD bytes
 * into a 64-byte line. */
#define LOOP(fn, pad, body)							\
	static uint64_t fn(void)						\
	{									\
		uint64_t best = ~0ull;						\
		for (int r = 0; r < RUNS; r++) {				\
			uint64_t t0 = __rdtsc(), t;				\
			__asm__ volatile("xor %%ecx,%%ecx\n\txor %%eax,%%eax\n\t"	\
					 "xor %%edx,%%edx\n\tjmp 1f\n\t"	\
					 ".p2align 6\n\t.fill " #pad ",1,0x90\n"	\
					 "1:\n\t" body "\n\t"			\
					 "cmp $100000,%%rcx\n\tjne 1b"		\
					 ::: "rax", "rcx", "rdx", "r8", "r9",	\
					 "r10", "r11", "cc");			\
			t = __rdtsc() - t0;					\
			if (t < best)						\
				best = t;					\
		}								\
		return best;							\
	}

#define AT_PADS(name, body)							\
	LOOP(name##_0, 0, body) LOOP(name##_16, 16, body) LOOP(name##_32, 32, body) \
	LOOP(name##_40, 40, body) LOOP(name##_48, 48, body) LOOP(name##_56, 56, body)

#define B_ADD1 "add $1,%%rcx"
#define B_ADD2 B_ADD1 "; add $1,%%rdx"
#define B_ADD3 B_ADD2 "; add $1,%%r8"
#define B_ADD4 B_ADD3 "; add $1,%%r9"
#define B_ADD5 B_ADD4 "; add $1,%%r10"
#define B_LEA "add $1,%%rcx; lea 1(%%rcx),%%edx; add $1,%%edx"
#define B_LEA2 B_LEA "; add $1,%%edx"
#define B_SHL "add $1,%%rcx; mov %%rcx,%%rdx; shl $3,%%rdx; add $1,%%rdx"

AT_PADS(add1, B_ADD1)
AT_PADS(add2, B_ADD2)
AT_PADS(add3, B_ADD3)
AT_PADS(add4, B_ADD4)
AT_PADS(add5, B_ADD5)
AT_PADS(lea, B_LEA)
AT_PADS(lea2, B_LEA2)
AT_PADS(shl, B_SHL)

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

#define ROW(name, bytes, text)							\
	{ #name, bytes, text, { name##_0, name##_16, name##_32, name##_40,	\
				name##_48, name##_56 } }

int main(void)
{
	static const int pads[6] = { 0, 16, 32, 40, 48, 56 };
	static const struct {
		const char *name;
		int bytes;		/* body and its cmp/jne */
		const char *text;
		uint64_t (*fn[6])(void);
	} t[] = {
		ROW(add1, 13, "add $1,%rcx"),
		ROW(add2, 17, "... and add $1,%rdx"),
		ROW(add3, 21, "... and add $1,%r8"),
		ROW(add4, 25, "... and add $1,%r9"),
		ROW(add5, 29, "... and add $1,%r10"),
		ROW(lea, 19, "add $1,%rcx; lea 1(%rcx),%edx; add $1,%edx"),
		ROW(lea2, 22, "... and add $1,%edx"),
		ROW(shl, 24, "add $1,%rcx; mov %rcx,%rdx; shl $3,%rdx; add $1,%rdx"),
	};
	double cpt = core_per_tick();

	printf("# core cycles per TSC tick %.3f; cycles per iteration, least of %d runs;\n"
	       "# columns: the loop's offset in its 64-byte line [lines its code spans]\n",
	       cpt, RUNS);
	printf("%-6s %5s", "body", "bytes");
	for (int p = 0; p < 6; p++)
		printf("  %9d", pads[p]);
	printf("\n");
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		printf("%-6s %5d", t[i].name, t[i].bytes);
		for (int p = 0; p < 6; p++)
			printf("  %5.2f [%d]", (double)t[i].fn[p]() * cpt / N,
			       (pads[p] + t[i].bytes - 1) / 64 + 1);
		printf("  %s; cmp; jne\n", t[i].text);
	}
	return 0;
}
