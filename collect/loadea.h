/*
 * collect/loadea.h - the one piece of x86 decoding the path runtime does
 * (collect/pathrt.c, for latency samples; docs/values.md): the effective
 * address of the common integer loads, and the timed load of it.  A header
 * so that tests/test_loadea.c can hold the decoder against capstone on every
 * instruction of real binaries, and so that dcpi record's latency table
 * (collect/latency.c) is measured with the very probe the runtime uses.
 * Registers r[] in the instruction set's numbering (rax, rcx, ..., r15).
 */
#ifndef DCPI_COLLECT_LOADEA_H
#define DCPI_COLLECT_LOADEA_H

#include <stdint.h>

/*
 * The effective address of the instruction at p, when it is an integer load
 * of the forms compilers emit most (mov, movzx, movsx, movsxd, the ALU
 * operations, test, imul and cmov with a register destination and a memory
 * source): each always reads its operand, so a probe of that address cannot
 * fault where the instruction itself would not.  0 when not one of them (and
 * for fs/gs-relative, 32-bit-address and locked forms).
 */
static inline int load_ea(const uint8_t *p, const uint64_t *r, uint64_t pc, uint64_t *ea)
{
	const uint8_t *q = p;
	unsigned rex = 0, mod, rm, base, index, scale;
	int64_t disp = 0;
	uint64_t a = 0;
	int ok = 0;

	for (;; q++) {			/* legacy prefixes */
		if (*q == 0x66 || *q == 0xf2 || *q == 0xf3 || *q == 0x2e || *q == 0x3e ||
		    *q == 0x26 || *q == 0x36)
			continue;
		if (*q == 0x64 || *q == 0x65 || *q == 0x67 || *q == 0xf0)
			return 0;
		break;
	}
	if ((*q & 0xf0) == 0x40)
		rex = *q++;
	if (*q == 0x0f) {
		q++;
		ok = *q == 0xb6 || *q == 0xb7 || *q == 0xbe || *q == 0xbf || *q == 0xaf ||
		     (*q & 0xf0) == 0x40;
	} else {
		ok = *q == 0x8b || *q == 0x8a || *q == 0x03 || *q == 0x0b || *q == 0x13 ||
		     *q == 0x1b || *q == 0x23 || *q == 0x2b || *q == 0x33 || *q == 0x3b ||
		     *q == 0x85 || *q == 0x84 || *q == 0x63 || *q == 0x02 || *q == 0x0a ||
		     *q == 0x22 || *q == 0x2a || *q == 0x32 || *q == 0x3a;
	}
	if (!ok)
		return 0;
	q++;
	mod = *q >> 6;
	rm = *q & 7;
	q++;
	if (mod == 3)
		return 0;
	if (rm == 4) {			/* SIB */
		scale = 1u << (*q >> 6);
		index = ((*q >> 3) & 7) | ((rex & 2) << 2);
		base = (*q & 7) | ((rex & 1) << 3);
		q++;
		if ((base & 7) == 5 && mod == 0) {
			disp = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 |
					 (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24);
			q += 4;
		} else {
			a = r[base];
		}
		if (index != 4)
			a += r[index] * scale;
	} else if (rm == 5 && mod == 0) {	/* rip + disp32 */
		disp = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
				 (uint32_t)q[3] << 24);
		q += 4;
		a = pc + (uint64_t)(q - p);	/* none of these forms has an immediate */
	} else {
		a = r[rm | ((rex & 1) << 3)];
	}
	if (mod == 1)
		disp = (int8_t)*q;
	else if (mod == 2)
		disp = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
				 (uint32_t)q[3] << 24);
	*ea = a + (uint64_t)disp;
	return 1;
}

/* TSC ticks of one load of a made dependent on the first rdtscp, so it
 * cannot start early; the second rdtscp waits for it. */
static inline uint64_t lat_timed_load(uint64_t a)
{
	uint64_t dt;

	__asm__ volatile("rdtscp\n\t"
			 "shl $32, %%rdx\n\t"
			 "or %%rdx, %%rax\n\t"
			 "mov %%rax, %%r8\n\t"
			 "and $0, %%rax\n\t"
			 "movzbl (%[a], %%rax), %%eax\n\t"
			 "rdtscp\n\t"
			 "shl $32, %%rdx\n\t"
			 "or %%rdx, %%rax\n\t"
			 "sub %%r8, %%rax\n\t"
			 : "=&a"(dt)
			 : [a] "r"(a)
			 : "rdx", "rcx", "r8", "memory");
	return dt;
}

#endif /* DCPI_COLLECT_LOADEA_H */
