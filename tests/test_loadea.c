/*
 * test_loadea.c - the path runtime's own decoder (collect/loadea.h: the
 * effective address of the common integer loads, for latency samples)
 * against capstone (cfg_decode_one) on every instruction of real binaries:
 * libc and the dcpi binary.  Whenever load_ea accepts an instruction,
 * capstone must see a load with one memory operand, not lea, not fs/gs, and
 * the address both compute from the same random registers must agree.  And
 * load_ea must accept most of the mov-family integer loads (it is for
 * them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "../collect/loadea.h"
#include "tu_main.h"

struct tally {
	size_t insns, accepted, movloads, movaccepted;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Under valgrind (its preload in the environment) every 16th procedure. */
static size_t stride(void)
{
	const char *pre = getenv("LD_PRELOAD");

	return pre && strstr(pre, "vgpreload") ? 16 : 1;
}

static void check_image(const char *path, struct tally *t)
{
	struct dcpi_err err = { 0 };
	struct image *img;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	if (img_open(path, IMG_NO_DWARF, &img, &err)) {
		print_message("%s: %s (skipped)\n", path, err.msg);
		return;
	}
	for (size_t i = 0; i < img_nprocs(img); i += stride()) {
		const struct img_proc *p = img_proc(img, i);
		size_t avail = 0;
		const uint8_t *b = img_bytes(img, p->addr, &avail);
		uint64_t off = 0;

		if (!b)
			continue;
		if (avail > p->size)
			avail = p->size;
		while (off + 1 <= avail) {
			struct cfg_insn in;
			char text[CFG_TEXT_MAX];
			uint8_t buf[32] = { 0 };
			uint64_t r[16], ea = 0, want;
			size_t n = avail - off < 15 ? avail - off : 15;
			int acc, movload;

			if (cfg_decode_one(b + off, n, p->addr + off, &in) || !in.size) {
				off++;
				continue;
			}
			memcpy(buf, b + off, in.size);
			for (int k = 0; k < 16; k++)
				r[k] = rnd(&seed) >> (rnd(&seed) & 31);
			t->insns++;
			acc = load_ea(buf, r, p->addr + off, &ea);
			movload = !strncmp(in.mnemonic, "mov", 3) && in.form == CFG_F_LOAD &&
				  in.nmem == 1 && !in.mem.segment && !(in.flags & CFG_I_VECTOR) &&
				  (in.regs_written & 0xffff) && !(in.flags & CFG_I_FP);
			t->movloads += movload;
			if (!acc)
				goto next;
			t->accepted++;
			t->movaccepted += movload;
			/* segment 3: ds, es, cs, ss overrides, no-ops in 64-bit mode */
			if (in.nmem != 1 || !(in.flags & CFG_I_LOAD) || (in.flags & CFG_I_LEA) ||
			    in.mem.segment == 1 || in.mem.segment == 2)
				fail_msg("%s+0x%llx %s: accepted, capstone says no load", p->name,
					 (unsigned long long)off,
					 cfg_insn_text(&in, text, sizeof(text)));
			if (in.mem.rip_relative) {
				want = (uint64_t)in.mem.disp;
			} else {
				want = (uint64_t)in.mem.disp;
				if (in.mem.base != CFG_REG_NONE)
					want += r[in.mem.base];
			}
			if (in.mem.index != CFG_REG_NONE)
				want += r[in.mem.index] * in.mem.scale;
			if (ea != want)
				fail_msg("%s+0x%llx %s: address 0x%llx, capstone's 0x%llx", p->name,
					 (unsigned long long)off, cfg_insn_text(&in, text, sizeof(text)),
					 (unsigned long long)ea,
					 (unsigned long long)want);
next:
			off += in.size;
		}
	}
	img_close(img);
}

static void test_against_capstone(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	struct tally t = { 0 };

	(void)state;
	check_image("/lib/x86_64-linux-gnu/libc.so.6", &t);
	if (bin)
		check_image(bin, &t);
	print_message("%zu instructions, %zu accepted as loads (all agree with capstone); "
		      "%zu of %zu mov-family integer loads\n", t.insns, t.accepted,
		      t.movaccepted, t.movloads);
	assert_true(t.insns > 100000 / stride());
	assert_true(t.accepted > 10000 / stride());
	assert_true(t.movaccepted * 10 >= t.movloads * 9);	/* >= 90% */
}

/* Forms it must refuse: stores, lea, fs-relative, vector, prefetch. */
static void test_refusals(void **state)
{
	static const struct {
		const char *what;
		uint8_t b[15];
	} no[] = {
		{ "mov %rax,(%rbx)", { 0x48, 0x89, 0x03 } },
		{ "lea 8(%rbx),%rax", { 0x48, 0x8d, 0x43, 0x08 } },
		{ "mov %fs:0x28,%rax", { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0 } },
		{ "movdqu (%rax),%xmm0", { 0xf3, 0x0f, 0x6f, 0x00 } },
		{ "vmovdqu (%rax),%ymm0", { 0xc5, 0xfe, 0x6f, 0x00 } },
		{ "prefetcht0 (%rax)", { 0x0f, 0x18, 0x08 } },
		{ "mov %rbx,%rax", { 0x48, 0x8b, 0xc3 } },
		{ "lock xadd", { 0xf0, 0x0f, 0xc1, 0x03 } },
		{ "addr32 mov (%eax),%eax", { 0x67, 0x8b, 0x00 } },
	};
	uint64_t r[16] = { 0 }, ea;

	(void)state;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (load_ea(no[i].b, r, 0x1000, &ea))
			fail_msg("accepted %s", no[i].what);
	/* and one of each addressing form it takes, by hand */
	{
		static const uint8_t ripmov[] = { 0x48, 0x8b, 0x05, 0x10, 0, 0, 0 };	/* 7 bytes */
		static const uint8_t sib[] = { 0x42, 0x0f, 0xb6, 0x44, 0x0b, 0xf0 };
		static const uint8_t nobase[] = { 0x8b, 0x04, 0x8d, 0x00, 0x10, 0, 0 };

		for (int k = 0; k < 16; k++)
			r[k] = 0x1000 * (k + 1);
		assert_true(load_ea(ripmov, r, 0x400000, &ea));
		assert_int_equal(ea, 0x400000 + 7 + 0x10);
		/* movzbl -0x10(%rbx,%r9,1),%eax: rbx = r[3], r9 = r[9] */
		assert_true(load_ea(sib, r, 0, &ea));
		assert_int_equal(ea, r[3] + r[9] - 0x10);
		/* mov 0x1000(,%rcx,4),%eax */
		assert_true(load_ea(nobase, r, 0, &ea));
		assert_int_equal(ea, 0x1000 + 4 * r[1]);
	}
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_against_capstone),
	cmocka_unit_test(test_refusals))
