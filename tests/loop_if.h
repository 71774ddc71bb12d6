/*
 * loop_if.h - the hand-assembled loop with an if that test_estimate.c and
 * test_calibrate.c both estimate, with its exact block counts (at 0x1000):
 *
 * A: 1000   xor %eax,%eax; xor %ecx,%ecx
 * B: 1e6    test $3,%cl; jne D
 * C: 2.5e5  add %rcx,%rax; jmp E
 * D: 7.5e5  xor %rcx,%rax
 * E: 1e6    lea (%rax,%rax,2),%rax; add $1,%rcx; cmp $1000,%rcx; jne B
 * F: 1000   ret
 *
 * Include after <cmocka.h> (loop_if_cfg asserts).
 */
#ifndef DCPI_TESTS_LOOP_IF_H
#define DCPI_TESTS_LOOP_IF_H

#include <stdint.h>

#include "dcpi/cfg.h"

static const uint8_t loop_if[] = {
	0x31, 0xc0, 0x31, 0xc9,
	0xf6, 0xc1, 0x03, 0x75, 0x05,
	0x48, 0x01, 0xc8, 0xeb, 0x03,
	0x48, 0x31, 0xc8,
	0x48, 0x8d, 0x04, 0x40, 0x48, 0x83, 0xc1, 0x01,
	0x48, 0x81, 0xf9, 0xe8, 0x03, 0x00, 0x00, 0x75, 0xe2,
	0xc3,
};
static const uint64_t block_start[] = { 0x1000, 0x1004, 0x1009, 0x100e, 0x1011, 0x1022 };
static const double block_count[] = { 1000, 1e6, 2.5e5, 7.5e5, 1e6, 1000 };

/* loop_if's CFG, its first byte at address at (0x1000 for the counts above). */
static inline struct cfg *loop_if_cfg(uint64_t at)
{
	struct dcpi_err err = { 0 };
	struct cfg *cfg = NULL;

	assert_int_equal(cfg_build_bytes(loop_if, sizeof(loop_if), at, "loop_if", &cfg, &err), 0);
	return cfg;
}

#endif
