/*
 * test_cfg.c - cfg/ against independent truth: known instruction encodings,
 * objdump's instruction boundaries, and the jumps callgrind saw executed
 * (every one must be an edge of our CFG).  The switch-heavy workload is
 * compiled here by GCC and Clang at -O2, PIC and not, so all four jump-table
 * forms are exercised.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"

#include "../cfg/internal.h"		/* cfg_dec_calls, cfg_build_rounds */
#include "tu_main.h"

#define R(r) CFG_RBIT(CFG_R_##r)

static char tmpdir[256];
static const char *const variants[] = { "gcc-nopic", "gcc-pic", "clang-nopic", "clang-pic" };
#define NVARIANTS 4
static const char *const switch_procs[] = { "op6", "op12", "op40" };
static const char *const all_procs[] = { "op6", "op12", "classify", "op40", "main", "fatal" };
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *src_dir(void)
{
	const char *s = getenv("DCPI_SRC");

	return s ? s : ".";
}

static void bin_path(char *buf, size_t n, int v)
{
	snprintf(buf, n, "%s/switchy-%s", tmpdir, variants[v]);
}

static int setup_all(void **state)
{
	char out[512];

	if (tu_workspace(tmpdir, sizeof(tmpdir), "cfg"))
		return -1;
	for (int v = 0; v < NVARIANTS; v++) {
		const char *cc = !strncmp(variants[v], "gcc", 3) ? "gcc" : "clang";
		const char *pic = strstr(variants[v], "nopic") ? "-fno-pic" : "-fPIC";

		bin_path(out, sizeof(out), v);
		if (tu_sh("%s -O2 -g %s -no-pie -o %s %s/tests/workloads/switchy.c", cc, pic, out,
			src_dir()) != 0)
			return -1;
	}
	if (tu_sh("gcc -nostdlib -static -no-pie -o %s/jumptables %s/tests/workloads/jumptables.s",
		tmpdir, src_dir()) != 0)
		return -1;
	return 0;
}

static int teardown_all(void **state)
{
	tu_sh("rm -rf %s", tmpdir);
	return 0;
}

/* --- decoding of known encodings ------------------------------------------- */

static void test_decode_add(void **state)
{
	const uint8_t b[] = { 0x48, 0x01, 0xd8 };	/* add %rbx,%rax */
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(b, sizeof(b), 0x1000, &in), 0);
	assert_int_equal(in.size, 3);
	assert_string_equal(in.mnemonic, "addq");
	assert_true((in.regs_read & (R(RAX) | R(RBX))) == (R(RAX) | R(RBX)));
	assert_false(in.regs_read & R(FLAGS));
	assert_true(in.regs_written & R(RAX));
	assert_true(in.regs_written & R(FLAGS));
	assert_false(in.regs_written & R(RBX));
	assert_int_equal(in.form, CFG_F_REG);
	assert_int_equal(in.nmem, 0);
}

/* Text made on demand from the bytes; names shared; the flags the model's
 * classes once read from the text. */
static void test_decode_text(void **state)
{
	const uint8_t shl[] = { 0x48, 0xd3, 0xe0 };			/* shl %cl,%rax */
	const uint8_t movb[] = { 0x88, 0x08 };				/* mov %cl,(%rax) */
	const uint8_t addi[] = { 0x48, 0x83, 0xc0, 0x07 };		/* add $7,%rax */
	const uint8_t lock[] = { 0xf0, 0x48, 0x0f, 0xb1, 0x0a };	/* lock cmpxchg */
	const uint8_t bad[] = { 0x06 };				/* push %es: not in 64-bit mode */
	struct cfg_insn a, b;
	char t[CFG_TEXT_MAX], small[6];

	(void)state;
	assert_int_equal(cfg_decode_one(addi, sizeof(addi), 0x1000, &a), 0);
	assert_string_equal(cfg_insn_text(&a, t, sizeof(t)), "addq $7, %rax");
	assert_true(a.flags & CFG_I_IMM);
	assert_false(a.flags & CFG_I_CL);
	assert_int_equal(a.imm, 7);
	/* cut to the buffer, NUL-terminated */
	assert_string_equal(cfg_insn_text(&a, small, sizeof(small)), "addq ");
	assert_int_equal(cfg_decode_one(addi, sizeof(addi), 0x2000, &b), 0);
	assert_ptr_equal(a.mnemonic, b.mnemonic);		/* one copy of "addq" */
	assert_int_equal(cfg_decode_one(shl, sizeof(shl), 0x1000, &a), 0);
	assert_string_equal(cfg_insn_text(&a, t, sizeof(t)), "shlq %cl, %rax");
	assert_true(a.flags & CFG_I_CL);
	assert_false(a.flags & CFG_I_IMM);
	assert_int_equal(cfg_decode_one(movb, sizeof(movb), 0x1000, &a), 0);
	assert_true(a.flags & CFG_I_CL);	/* %cl before the last operand */
	assert_int_equal(cfg_decode_one(lock, sizeof(lock), 0x1000, &a), 0);
	assert_string_equal(a.mnemonic, "lock cmpxchgq");
	assert_string_equal(cfg_insn_text(&a, t, sizeof(t)), "lock cmpxchgq %rcx, (%rdx)");
	assert_true(a.flags & CFG_I_LOCK);
	assert_int_equal(cfg_decode_one(bad, sizeof(bad), 0x1000, &a), -EINVAL);
	assert_string_equal(a.mnemonic, ".byte");
	assert_string_equal(cfg_insn_text(&a, t, sizeof(t)), ".byte 0x06");
	/* the slimmer struct: text is not kept */
	assert_true(sizeof(struct cfg_insn) <= 96);
}

/* The code of procedure i of img, cut to its size; NULL for a PLT entry or
 * bytes not in the file. */
static const uint8_t *proc_code(const struct image *img, size_t i, size_t *len)
{
	const struct img_proc *p = img_proc(img, i);
	const uint8_t *b;

	*len = 0;
	if (p->source == IMG_SRC_PLT || !(b = img_bytes(img, p->addr, len)))
		return NULL;
	if (*len > p->size)
		*len = p->size;
	return b;
}

/* Called at each instruction start of a procedure p whose code is b (avail
 * bytes), off into it; returns how many bytes on the next one starts. */
typedef size_t (*libc_each)(void *ctx, const struct img_proc *p, const uint8_t *b,
			    size_t avail, size_t off);

/* each at every instruction of libc's procedures, of every step-th one; 0,
 * or -1 (said) when libc does not open here. */
static int libc_walk(size_t step, libc_each each, void *ctx)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct dcpi_err err = { 0 };
	struct image *img;

	if (img_open(path, IMG_NO_DWARF, &img, &err)) {
		print_message("%s: %s (skipped)\n", path, err.msg);
		return -1;
	}
	for (size_t i = 0; i < img_nprocs(img); i += step) {
		const struct img_proc *p = img_proc(img, i);
		size_t avail = 0, off = 0;
		const uint8_t *b = proc_code(img, i, &avail);

		while (b && off < avail)
			off += each(ctx, p, b, avail, off);
	}
	img_close(img);
	return 0;
}

/* Instructions decoded, those with an immediate, those with %cl first. */
struct flag_counts {
	size_t n, imm, cl;
};

static size_t check_text_flags(void *ctx, const struct img_proc *p, const uint8_t *b,
			       size_t avail, size_t off)
{
	struct flag_counts *k = ctx;
	struct cfg_insn in;
	char t[CFG_TEXT_MAX];
	size_t len = avail - off < 15 ? avail - off : 15;

	if (cfg_decode_one(b + off, len, p->addr + off, &in) < 0)
		return 1;
	cfg_insn_text(&in, t, sizeof(t));
	if (!!(in.flags & CFG_I_IMM) != !!strchr(t, '$') ||
	    !!(in.flags & CFG_I_CL) != !!strstr(t, "%cl,"))
		fail_msg("%s+0x%zx %s: flags %#x", p->name, off, t, in.flags);
	k->imm += !!(in.flags & CFG_I_IMM);
	k->cl += !!(in.flags & CFG_I_CL);
	k->n++;
	return in.size;
}

/*
 * CFG_I_IMM and CFG_I_CL come from capstone's operands, standing for what the
 * model's classes once read in the text ("$", "%cl,"): held against the text
 * for every instruction of libc's procedures (every 8th under valgrind).
 */
static void test_decode_text_flags(void **state)
{
	size_t step = getenv("TEST_WRAPPER") && *getenv("TEST_WRAPPER") ? 8 : 1;
	struct flag_counts k = { 0 };

	(void)state;
	if (libc_walk(step, check_text_flags, &k))
		return;
	print_message("%zu instructions: %zu with an immediate, %zu with %%cl first\n", k.n,
		      k.imm, k.cl);
	assert_true(k.n > 20000 / step);
	assert_true(k.imm > 1000 / step && k.cl > 10 / step);
}

/* Every field of two decodes, the same? */
static int same_insn(const struct cfg_insn *a, const struct cfg_insn *b)
{
	return a->addr == b->addr && a->mnemonic == b->mnemonic &&
	       a->regs_read == b->regs_read && a->regs_written == b->regs_written &&
	       a->imm == b->imm && a->target == b->target && a->flags == b->flags &&
	       a->form == b->form && a->id == b->id && a->vec_bits == b->vec_bits &&
	       a->size == b->size && a->nmem == b->nmem &&
	       !memcmp(a->bytes, b->bytes, sizeof(a->bytes)) &&
	       (!a->nmem || (a->mem.base == b->mem.base && a->mem.index == b->mem.index &&
			     a->mem.scale == b->mem.scale && a->mem.size == b->mem.size &&
			     a->mem.segment == b->mem.segment &&
			     a->mem.rip_relative == b->mem.rip_relative &&
			     a->mem.disp == b->mem.disp));
}

/* The memo's handle, and how many decodes went through it. */
struct memo_walk {
	struct cfg_dec *dec;
	size_t n;
};

static size_t check_memo(void *ctx, const struct img_proc *p, const uint8_t *bytes,
			 size_t avail, size_t off)
{
	struct memo_walk *w = ctx;
	struct cfg_insn a, b;
	int ra = cfg_dec_insn(w->dec, bytes + off, avail - off, p->addr + off, &a);
	int rb = cfg_decode_one(bytes + off, avail - off, p->addr + off, &b);

	assert_int_equal(ra, rb);
	if (!same_insn(&a, &b)) {
		char t[CFG_TEXT_MAX];

		fail_msg("%s+0x%zx %s: the memo's decode differs", p->name, off,
			 cfg_insn_text(&b, t, sizeof(t)));
	}
	w->n++;
	return ra < 0 ? 1 : a.size;
}

/*
 * The decoder's memo (decode.c) gives what capstone would: every instruction
 * of libc's procedures through one handle (memo on after its first
 * decodes) against a fresh handle's decode; and nothing that depends on the
 * address is taken from it.
 */
static void test_decode_memo(void **state)
{
	const uint8_t rip[] = { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 };	/* mov 0x10(%rip) */
	const uint8_t jmp[] = { 0xeb, 0x10 };
	const uint8_t mov[] = { 0x48, 0x89, 0xe5 };
	size_t step = getenv("TEST_WRAPPER") && *getenv("TEST_WRAPPER") ? 8 : 1;
	unsigned long h0 = cfg_dec_memo_hits, c0 = cfg_dec_calls;
	struct dcpi_err err = { 0 };
	struct cfg_insn a, b;
	struct cfg_dec *dec;
	struct memo_walk w = { 0 };

	(void)state;
	assert_int_equal(cfg_dec_open(&dec, &err), 0);
	/* warm the memo with the same bytes at other addresses first */
	for (uint64_t k = 0; k < 5000; k++) {
		assert_int_equal(cfg_dec_insn(dec, rip, sizeof(rip), 0x1000 + 16 * k, &a), 0);
		assert_int_equal(cfg_dec_insn(dec, jmp, sizeof(jmp), 0x1000 + 16 * k, &b), 0);
		assert_int_equal((int64_t)a.mem.disp, 0x1000 + 16 * k + 7 + 0x10);
		assert_int_equal(b.target, 0x1000 + 16 * k + 2 + 0x10);
		assert_int_equal(cfg_dec_insn(dec, mov, sizeof(mov), 0x2000 + k, &a), 0);
		assert_int_equal(a.addr, 0x2000 + k);
	}
	assert_true(cfg_dec_memo_hits - h0 > 0);	/* the mov, not the other two */
	assert_true(cfg_dec_calls - c0 >= 2 * 5000);
	h0 = cfg_dec_memo_hits;
	w.dec = dec;
	if (libc_walk(step, check_memo, &w)) {
		cfg_dec_close(dec);
		return;
	}
	print_message("%zu decodes, %lu from the memo\n", w.n, cfg_dec_memo_hits - h0);
	assert_true(cfg_dec_memo_hits - h0 > w.n / 5);
	cfg_dec_close(dec);
	/* DCPI_DECODE_MEMO=0: every decode by capstone */
	setenv("DCPI_DECODE_MEMO", "0", 1);
	assert_int_equal(cfg_dec_open(&dec, &err), 0);
	h0 = cfg_dec_memo_hits;
	for (uint64_t k = 0; k < 5000; k++)
		assert_int_equal(cfg_dec_insn(dec, mov, sizeof(mov), 0x2000 + k, &a), 0);
	assert_int_equal(cfg_dec_memo_hits - h0, 0);
	cfg_dec_close(dec);
	unsetenv("DCPI_DECODE_MEMO");
}

static void test_decode_load(void **state)
{
	const uint8_t b[] = { 0x48, 0x8b, 0x44, 0x8b, 0x10 };	/* mov 0x10(%rbx,%rcx,4),%rax */
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(b, sizeof(b), 0x1000, &in), 0);
	assert_int_equal(in.nmem, 1);
	assert_int_equal(in.mem.base, CFG_R_RBX);
	assert_int_equal(in.mem.index, CFG_R_RCX);
	assert_int_equal(in.mem.scale, 4);
	assert_int_equal(in.mem.disp, 0x10);
	assert_int_equal(in.mem.size, 8);
	assert_int_equal(in.form, CFG_F_LOAD);
	assert_true(in.flags & CFG_I_LOAD);
	assert_false(in.flags & CFG_I_STORE);
	assert_true((in.regs_read & (R(RBX) | R(RCX))) == (R(RBX) | R(RCX)));
	assert_true(in.regs_written == R(RAX));
}

static void test_decode_store_rip(void **state)
{
	/* mov %eax,0x10(%rip) at 0x2000: rip-relative, 6 bytes, target 0x2016 */
	const uint8_t b[] = { 0x89, 0x05, 0x10, 0x00, 0x00, 0x00 };
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(b, sizeof(b), 0x2000, &in), 0);
	assert_int_equal(in.form, CFG_F_STORE);
	assert_true(in.flags & CFG_I_STORE);
	assert_true(in.mem.rip_relative);
	assert_int_equal(in.mem.disp, 0x2016);
}

/* Vector stores are stores (capstone 4 marks their memory operand read). */
static void test_decode_vector_store(void **state)
{
	static const struct { uint8_t b[4]; int store; } cases[] = {
		{ { 0xc5, 0xfc, 0x29, 0x07 }, 1 },	/* vmovaps %ymm0,(%rdi) */
		{ { 0xc5, 0xf9, 0xd6, 0x00 }, 1 },	/* vmovq %xmm0,(%rax) */
		{ { 0xc5, 0xfc, 0x28, 0x07 }, 0 },	/* vmovaps (%rdi),%ymm0 */
		{ { 0xc5, 0xf4, 0x58, 0x07 }, 0 },	/* vaddps (%rdi),%ymm1,%ymm0 */
	};
	struct cfg_insn in;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(cfg_decode_one(cases[i].b, 4, 0x1000, &in), 0);
		assert_int_equal(in.nmem, 1);
		assert_int_equal(in.form, cases[i].store ? CFG_F_STORE : CFG_F_LOAD);
		assert_int_equal(!!(in.flags & CFG_I_STORE), cases[i].store);
		assert_int_equal(!!(in.flags & CFG_I_LOAD), !cases[i].store);
	}
}

/* Capstone 4 access errata the decoder corrects (Intel SDM semantics). */
static void test_decode_errata(void **state)
{
	const uint8_t cmpxchg[] = { 0xf0, 0x48, 0x0f, 0xb1, 0x0f };	/* lock cmpxchg %rcx,(%rdi) */
	const uint8_t shld_cl[] = { 0x48, 0x0f, 0xa5, 0xc3 };		/* shld %cl,%rax,%rbx */
	const uint8_t shld_m[] = { 0x48, 0x0f, 0xa5, 0x07 };		/* shld %cl,%rax,(%rdi) */
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(cmpxchg, sizeof(cmpxchg), 0, &in), 0);
	assert_int_equal(in.form, CFG_F_RMW);
	assert_true(in.flags & CFG_I_STORE);
	assert_true(in.regs_written & R(RAX));
	assert_int_equal(cfg_decode_one(shld_cl, sizeof(shld_cl), 0, &in), 0);
	assert_true(in.regs_written & R(RBX));
	assert_false(in.regs_written & R(RAX));
	assert_true(in.regs_read & R(RBX));
	assert_int_equal(cfg_decode_one(shld_m, sizeof(shld_m), 0, &in), 0);
	assert_int_equal(in.form, CFG_F_RMW);
}

/*
 * An AVX-512 write-mask ({%k2}) is read, not written, whatever capstone 4
 * left in its uninitialised access field: decoded after instructions that
 * leave different bytes there, and on its own handle, the same registers.
 */
static void test_decode_write_mask(void **state)
{
	const uint8_t code[] = {
		0x62, 0xf3, 0x75, 0x0a, 0x3f, 0xc8, 0x00,	/* vpcmpeqb %xmm0,%xmm1,%k1{%k2} */
		0xf0, 0x48, 0x0f, 0xb1, 0x0f,			/* lock cmpxchg %rcx,(%rdi) */
		0x62, 0xf3, 0x75, 0x0a, 0x3f, 0xc8, 0x00,
		0x48, 0x0f, 0xa5, 0xc3,				/* shld %cl,%rax,%rbx */
		0x62, 0xf3, 0x75, 0x0a, 0x3f, 0xc8, 0x00,
	};
	const uint64_t k1 = CFG_RBIT(CFG_R_K0 + 1), k2 = CFG_RBIT(CFG_R_K0 + 2);
	struct dcpi_err err = { 0 };
	struct cfg_insn one, *v;
	size_t n;

	(void)state;
	assert_int_equal(cfg_decode_one(code, 7, 0, &one), 0);
	assert_true(one.regs_read & k2);
	assert_false(one.regs_written & k2);
	assert_true(one.regs_written & k1);
	assert_int_equal(cfg_decode(code, sizeof(code), 0, &v, &n, &err), 0);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i += 2) {
		assert_int_equal(v[i].regs_read, one.regs_read);
		assert_int_equal(v[i].regs_written, one.regs_written);
	}
	free(v);
}

static void test_decode_call(void **state)
{
	const uint8_t b[] = { 0xe8, 0x10, 0x00, 0x00, 0x00 };	/* call .+0x15 */
	const uint8_t ind[] = { 0xff, 0xd0 };			/* call *%rax */
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(b, sizeof(b), 0x1000, &in), 0);
	assert_true(in.flags & CFG_I_CALL);
	assert_true(in.flags & CFG_I_STACK);
	assert_false(in.flags & CFG_I_BRANCH);
	assert_int_equal(in.target, 0x1015);
	assert_true(in.regs_written & R(RSP));
	assert_int_equal(cfg_decode_one(ind, sizeof(ind), 0x1000, &in), 0);
	assert_true(in.flags & CFG_I_INDIRECT);
	assert_int_equal(in.target, 0);
	assert_true(in.regs_read & R(RAX));
}

static void test_decode_branches(void **state)
{
	const uint8_t jne[] = { 0x75, 0xf9 };			/* jne .-5 */
	const uint8_t cmov[] = { 0x48, 0x0f, 0x44, 0xc1 };	/* cmove %rcx,%rax */
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(jne, sizeof(jne), 0x1000, &in), 0);
	assert_true((in.flags & (CFG_I_BRANCH | CFG_I_COND)) == (CFG_I_BRANCH | CFG_I_COND));
	assert_int_equal(in.target, 0x1000 + 2 - 7);
	assert_true(in.regs_read & R(FLAGS));
	assert_int_equal(cfg_decode_one(cmov, sizeof(cmov), 0x1000, &in), 0);
	assert_true(in.flags & CFG_I_CMOV);
	assert_true(in.regs_read & R(FLAGS));
	assert_true(in.regs_read & R(RCX));
	assert_true(in.regs_written & R(RAX));
}

static void test_decode_idioms(void **state)
{
	const uint8_t xor[] = { 0x31, 0xc0 };			/* xor %eax,%eax */
	const uint8_t pxor[] = { 0x66, 0x0f, 0xef, 0xc9 };	/* pxor %xmm1,%xmm1 */
	const uint8_t xor2[] = { 0x31, 0xd8 };			/* xor %ebx,%eax */
	const uint8_t bad[] = { 0x06 };				/* push %es: not in 64-bit */
	const uint8_t ud2[] = { 0x0f, 0x0b };
	struct cfg_insn in;

	assert_int_equal(cfg_decode_one(xor, sizeof(xor), 0, &in), 0);
	assert_true(in.flags & CFG_I_ZERO_IDIOM);
	assert_false(in.regs_read & R(RAX));
	assert_true(in.regs_written & (R(RAX) | R(FLAGS)));
	assert_int_equal(cfg_decode_one(pxor, sizeof(pxor), 0, &in), 0);
	assert_true(in.flags & CFG_I_ZERO_IDIOM);
	assert_true(in.flags & CFG_I_VECTOR);
	assert_int_equal(in.vec_bits, 128);
	assert_true(in.regs_written & CFG_RBIT(CFG_R_VEC0 + 1));
	assert_int_equal(cfg_decode_one(xor2, sizeof(xor2), 0, &in), 0);
	assert_false(in.flags & CFG_I_ZERO_IDIOM);
	assert_true(in.regs_read & R(RAX));
	assert_int_equal(cfg_decode_one(bad, sizeof(bad), 0, &in), -EINVAL);
	assert_true(in.flags & CFG_I_INVALID);
	assert_int_equal(in.size, 1);
	assert_int_equal(cfg_decode_one(ud2, sizeof(ud2), 0, &in), 0);
	assert_true(in.flags & CFG_I_TRAP);
}

/* A linear sweep past bytes that do not decode (0x06, push %es, is invalid
 * in 64-bit mode): nop; (bad); jmp +0; ret. */
static void test_decode_skip(void **state)
{
	const uint8_t b[] = { 0x90, 0x06, 0xeb, 0x00, 0xc3 };
	struct dcpi_err err = { 0 };
	struct cfg_insn *in = NULL;
	size_t n = 0, skipped = 0;

	(void)state;
	assert_int_equal(cfg_decode(b, sizeof(b), 0x1000, &in, &n, &err), -EINVAL);
	assert_int_equal(n, 1);
	free(in);
	assert_int_equal(cfg_decode_skip(b, sizeof(b), 0x1000, &in, &n, &skipped, &err), 0);
	assert_int_equal(skipped, 1);
	assert_int_equal(n, 3);
	assert_int_equal(in[1].addr, 0x1002);
	assert_int_equal(in[1].target, 0x1004);
	free(in);
}

/* The bytes a jump to a counting trampoline may displace (cfg/entry.c). */
static size_t displaced(const uint8_t *b, size_t n, uint8_t out[CFG_ENTRY_MAX])
{
	struct dcpi_err err = { 0 };
	struct cfg *cfg;
	size_t len;

	assert_int_equal(cfg_build_bytes(b, n, 0x1000, "entry", &cfg, &err), 0);
	len = cfg_entry_displaced(cfg, out);
	cfg_free(cfg);
	return len;
}

static void test_entry_displaced(void **state)
{
	/* push %r15; push %r14; push %r13; pop x3; ret: three whole pushes */
	const uint8_t pushes[] = { 0x41, 0x57, 0x41, 0x56, 0x41, 0x55, 0x41, 0x5d, 0x41, 0x5e,
				   0x41, 0x5f, 0xc3 };
	/* push %rbp; mov %rsp,%rbp; sub $16,%rsp; leave; ret: 1 + 3 < 5, so 8 */
	const uint8_t frame[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3 };
	/* mov $1,%eax; ret: exactly 5 */
	const uint8_t five[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };
	/* L: dec %edi; jne L; ret: the loop enters the entry block */
	const uint8_t loop[] = { 0xff, 0xcf, 0x75, 0xfc, 0xc3 };
	/* mov 0x10(%rip),%rax; ret: rip-relative */
	const uint8_t rip[] = { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0xc3 };
	/* lea 0x10(%rip),%rax; ret: rip-relative address */
	const uint8_t lea[] = { 0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, 0xc3 };
	/* test %edi,%edi; je +1; ret; ret: a branch inside the first 5 bytes */
	const uint8_t branch[] = { 0x85, 0xff, 0x74, 0x01, 0xc3, 0xc3 };
	/* adc $0,%eax (reads the flags); mov $1,%ecx; ret */
	const uint8_t flags[] = { 0x83, 0xd0, 0x00, 0xb9, 0x01, 0x00, 0x00, 0x00, 0xc3 };
	/* jmp to a call: a control transfer first */
	const uint8_t jmp[] = { 0xe9, 0x00, 0x00, 0x00, 0x00, 0xc3 };
	/* push %rbx; mov %rdi,%rbx; sub $8,%rsp; L: mov $imm,%eax; jmp L+1; ret:
	 * an edge is missing (a jump into an instruction), the entry a prologue */
	const uint8_t table[] = { 0x53, 0x48, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x08, 0xb8, 0x78,
				  0x56, 0x34, 0x12, 0xeb, 0xfa, 0xc3 };
	/* mov (%rdi),%eax; add $1,%eax; L: mov $imm,%eax; jmp L+1; ret: not one */
	const uint8_t body[] = { 0x8b, 0x07, 0x83, 0xc0, 0x01, 0xb8, 0x78, 0x56, 0x34, 0x12,
				 0xeb, 0xfa, 0xc3 };
	/* push %rbx; mov %rdi,%rbx; sub $8,%rsp; test %edi,%edi; jne entry+2; ret:
	 * a branch into the displaced bytes */
	const uint8_t into[] = { 0x53, 0x48, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x08, 0x85, 0xff,
				 0x75, 0xf6, 0xc3 };
	uint8_t out[CFG_ENTRY_MAX];

	(void)state;
	{
		struct dcpi_err err = { 0 };
		struct cfg *cfg;

		assert_int_equal(cfg_build_bytes(table, sizeof(table), 0x1000, "t", &cfg, &err), 0);
		assert_true(cfg->missing_edges);
		cfg_free(cfg);
	}
	assert_int_equal(displaced(table, sizeof(table), out), 8);
	assert_int_equal(displaced(body, sizeof(body), out), 0);
	assert_int_equal(displaced(into, sizeof(into), out), 0);
	assert_int_equal(displaced(pushes, sizeof(pushes), out), 6);
	assert_memory_equal(out, pushes, 6);
	assert_int_equal(displaced(frame, sizeof(frame), out), 8);
	assert_memory_equal(out, frame, 8);
	assert_int_equal(displaced(five, sizeof(five), out), 5);
	assert_int_equal(displaced(loop, sizeof(loop), out), 0);
	assert_int_equal(displaced(rip, sizeof(rip), out), 0);
	assert_int_equal(displaced(lea, sizeof(lea), out), 0);
	assert_int_equal(displaced(branch, sizeof(branch), out), 0);
	assert_int_equal(displaced(flags, sizeof(flags), out), 0);
	assert_int_equal(displaced(jmp, sizeof(jmp), out), 0);
	assert_int_equal(cfg_entry_displaced(NULL, out), 0);
}

/* cfg_block_displaced on the block at addr of code loaded at 0x1000. */
static size_t block_displaced(const uint8_t *code, size_t len, uint64_t addr,
			      uint8_t out[CFG_ENTRY_MAX], size_t *branch)
{
	struct dcpi_err err = { 0 };
	struct cfg *cfg;
	size_t n;
	int b;

	assert_int_equal(cfg_build_bytes(code, len, 0x1000, "b", &cfg, &err), 0);
	b = cfg_block_at(cfg, addr);
	assert_true(b >= 0);
	n = cfg_block_displaced(cfg, (uint32_t)b, out, branch);
	cfg_free(cfg);
	return n;
}

static void test_block_displaced(void **state)
{
	/* xor %ecx,%ecx; L: mov (%rdi,%rdx,4),%edx; add %rdx,%rcx; sub $1,%rax;
	 * jae L; ret: the chase, its add sets every flag before the jae */
	const uint8_t chase[] = { 0x31, 0xc9, 0x8b, 0x14, 0x97, 0x48, 0x01, 0xd1, 0x48, 0x83,
				  0xe8, 0x01, 0x73, 0xf4, 0xc3 };
	/* test %edi,%edi; L: mov (%rdx),%rdx; lea 1(%rax),%rax; jne L; ret: the
	 * jne reads the test's flags, live at L */
	const uint8_t live[] = { 0x85, 0xff, 0x48, 0x8b, 0x12, 0x48, 0x8d, 0x40, 0x01, 0x75,
				 0xf7, 0xc3 };
	/* xor %eax,%eax; L: mov (%rdx),%rdx; inc %ecx; mov %ecx,%eax; jne L; ret:
	 * inc keeps CF, so it does not make the flags dead */
	const uint8_t inc[] = { 0x31, 0xc0, 0x48, 0x8b, 0x12, 0xff, 0xc1, 0x89, 0xc8, 0x75,
				0xf7, 0xc3 };
	/* xor %eax,%eax; L: mov 0x10(%rip),%rax; sub $1,%ecx; jne L; ret */
	const uint8_t rip[] = { 0x31, 0xc0, 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0x83,
				0xe9, 0x01, 0x75, 0xf4, 0xc3 };
	/* test %edi,%edi; jne L+3; L: mov (%rdx),%rdx; add %rdx,%rax; sub $1,%ecx;
	 * jne L; ret: a branch lands inside what a jump at L would displace */
	const uint8_t into[] = { 0x85, 0xff, 0x75, 0x03, 0x48, 0x8b, 0x12, 0x48, 0x01, 0xd0,
				 0x83, 0xe9, 0x01, 0x75, 0xf5, 0xc3 };
	/* xor %eax,%eax; L: cmp %r14d,0x18(%r15); jne L; ret: the jcc must go
	 * along (4 bytes before it), the trampoline branching itself */
	const uint8_t latch[] = { 0x31, 0xc0, 0x45, 0x39, 0x77, 0x18, 0x75, 0xfa, 0xc3 };
	/* xor %eax,%eax; L: cmpl $7,(%rdi); je near L; ret: the near form */
	const uint8_t nearj[] = { 0x31, 0xc0, 0x83, 0x3f, 0x07, 0x0f, 0x84, 0xf7, 0xff, 0xff,
				  0xff, 0xc3 };
	/* xor %eax,%eax; L: mov 0x10(%r15),%rax; mov %r13,%rsi; call f; test
	 * %eax,%eax; jne L; f: ret: the call comes before any flag is read */
	const uint8_t call[] = { 0x31, 0xc0, 0x49, 0x8b, 0x47, 0x10, 0x4c, 0x89, 0xee, 0xe8,
				 0x04, 0x00, 0x00, 0x00, 0x85, 0xc0, 0x75, 0xf0, 0xc3 };
	/* xor %eax,%eax; L: mov (%rdx),%rdx; shr $0xb,%ecx; jne L; ret: a shift by
	 * an immediate writes every flag (AF, and OF past 1, undefined) */
	const uint8_t shr[] = { 0x31, 0xc0, 0x48, 0x8b, 0x12, 0xc1, 0xe9, 0x0b, 0x75, 0xf8, 0xc3 };
	/* the same by $0x20, which a 32-bit shift masks to 0: the flags kept */
	const uint8_t shr0[] = { 0x31, 0xc0, 0x48, 0x8b, 0x12, 0xc1, 0xe9, 0x20, 0x75, 0xf8,
				 0xc3 };
	/* the same by %cl (it may be 0): the flags kept */
	const uint8_t shrcl[] = { 0x31, 0xc0, 0x48, 0x8b, 0x12, 0xd3, 0xe9, 0x75, 0xf9, 0xc3 };
	/* xor %eax,%eax; L: mov (%rdx),%rdx; imul %ecx,%eax; jne L; ret */
	const uint8_t imul[] = { 0x31, 0xc0, 0x48, 0x8b, 0x12, 0x0f, 0xaf, 0xc1, 0x75, 0xf8,
				 0xc3 };
	uint8_t out[CFG_ENTRY_MAX];
	size_t br = 9;

	(void)state;
	assert_int_equal(block_displaced(shr, sizeof(shr), 0x1002, out, &br), 6);
	assert_int_equal(block_displaced(shr0, sizeof(shr0), 0x1002, out, &br), 0);
	assert_int_equal(block_displaced(shrcl, sizeof(shrcl), 0x1002, out, &br), 0);
	assert_int_equal(block_displaced(imul, sizeof(imul), 0x1002, out, &br), 6);
	assert_int_equal(block_displaced(chase, sizeof(chase), 0x1002, out, &br), 6);
	assert_memory_equal(out, chase + 2, 6);
	assert_int_equal(br, 0);
	assert_int_equal(block_displaced(chase, sizeof(chase), 0x1000, out, &br), 0);	/* the entry */
	assert_int_equal(block_displaced(live, sizeof(live), 0x1002, out, &br), 0);
	assert_int_equal(block_displaced(inc, sizeof(inc), 0x1002, out, &br), 0);
	assert_int_equal(block_displaced(rip, sizeof(rip), 0x1002, out, &br), 0);
	assert_int_equal(block_displaced(into, sizeof(into), 0x1004, out, &br), 0);
	assert_int_equal(block_displaced(latch, sizeof(latch), 0x1002, out, &br), 6);
	assert_memory_equal(out, latch + 2, 6);
	assert_int_equal(br, 2);
	assert_int_equal(block_displaced(nearj, sizeof(nearj), 0x1002, out, &br), 9);
	assert_int_equal(br, 6);
	assert_int_equal(block_displaced(call, sizeof(call), 0x1002, out, &br), 7);
	assert_int_equal(br, 0);
	assert_int_equal(cfg_block_displaced(NULL, 0, out, &br), 0);
}

/* xor; L: inc; cmp $10; jne L; ret; int3 int3 (padding) */
static void test_build_bytes_loop(void **state)
{
	const uint8_t b[] = { 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3,
			      0xcc, 0xcc };
	struct dcpi_err err = { 0 };
	struct cfg *cfg;

	assert_int_equal(cfg_build_bytes(b, sizeof(b), 0x1000, "loop", &cfg, &err), 0);
	assert_int_equal(cfg->ninsns, 5);
	assert_int_equal(cfg->nblocks, 4);		/* entry, loop body, ret, exit */
	assert_int_equal(cfg->exit, 3);
	assert_true(cfg->blocks[3].flags & CFG_B_EXIT);
	assert_int_equal(cfg->blocks[1].start, 0x1002);
	assert_int_equal(cfg->blocks[1].end, 0x1009);
	assert_int_equal(cfg_block_at(cfg, 0x1007), 1);
	assert_int_equal(cfg_insn_at(cfg, 0x1004), 2);
	assert_int_equal(cfg_insn_at(cfg, 0x1005), -1);
	assert_int_equal(cfg->blocks[1].nsucc, 2);
	assert_int_equal(cfg->ndata, 1);
	assert_int_equal(cfg->data[0].start, 0x100a);
	assert_int_equal(cfg->data[0].end, 0x100c);
	/* the entry and the return block run once per call: one class */
	assert_int_equal(cfg->blocks[0].cls, cfg->blocks[2].cls);
	assert_true(cfg->blocks[0].cls != cfg->blocks[1].cls);
	assert_false(cfg->missing_edges);
	cfg_free(cfg);
}

/* --- the workload --------------------------------------------------------- */

static struct image *open_variant(int v)
{
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	char path[512];

	bin_path(path, sizeof(path), v);
	if (img_open(path, IMG_NO_DWARF, &img, &err) < 0)
		fail_msg("%s", err.msg);
	return img;
}

static struct cfg *build_proc(struct image *img, const char *name)
{
	const struct img_proc *p = img_proc_by_name(img, name);
	struct dcpi_err err = { 0 };
	struct cfg *cfg = NULL;

	if (!p)
		fail_msg("%s: %s not found", img_path(img), name);
	if (cfg_build(img, p, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	return cfg;
}

static void test_jump_tables(void **state)
{
	for (int v = 0; v < NVARIANTS; v++) {
		struct image *img = open_variant(v);

		for (size_t i = 0; i < NELEM(switch_procs); i++) {
			struct cfg *cfg = build_proc(img, switch_procs[i]);
			size_t table_edges = 0;

			if (cfg->indirect_jumps == 0 || cfg->indirect_resolved != cfg->indirect_jumps)
				fail_msg("%s %s: %u of %u indirect jumps resolved", variants[v],
					 switch_procs[i], cfg->indirect_resolved,
					 cfg->indirect_jumps);
			assert_false(cfg->missing_edges);
			for (size_t e = 0; e < cfg->nedges; e++)
				table_edges += cfg->edges[e].kind == CFG_E_TABLE;
			assert_true(table_edges >= 5);
			cfg_free(cfg);
		}
		img_close(img);
	}
}

static void check_structure(const struct cfg *cfg, const char *what)
{
	uint64_t at = cfg->start;
	size_t d = 0, covered = 0;

	/* every edge lands on a block start */
	for (size_t e = 0; e < cfg->nedges; e++) {
		uint32_t to = cfg->edges[e].to;

		assert_true(to < cfg->nblocks && cfg->edges[e].from < cfg->nblocks);
		assert_true(cfg->edges[e].from != cfg->exit);
		if (to != cfg->exit)
			assert_int_equal(cfg_block_at(cfg, cfg->blocks[to].start), to);
	}
	/* blocks and data ranges tile the procedure, in order */
	for (size_t b = 0; b + 1 < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		while (d < cfg->ndata && cfg->data[d].start == at)
			at = cfg->data[d++].end;
		if (bl->start != at)
			fail_msg("%s: block at 0x%" PRIx64 ", expected 0x%" PRIx64, what,
				 bl->start, at);
		/* its instructions are contiguous and end where it ends */
		for (uint32_t k = 0; k < bl->n; k++) {
			assert_int_equal(cfg->insns[bl->first + k].addr, at);
			at += cfg->insns[bl->first + k].size;
		}
		assert_int_equal(at, bl->end);
		assert_int_equal(bl->first, covered);
		covered += bl->n;
	}
	while (d < cfg->ndata && cfg->data[d].start == at)
		at = cfg->data[d++].end;
	assert_int_equal(d, cfg->ndata);
	assert_int_equal(at, cfg->end);
	assert_int_equal(covered, cfg->ninsns);		/* each insn in exactly one block */
	assert_true(cfg->blocks[cfg->exit].flags & CFG_B_EXIT);
	assert_int_equal(cfg->exit, cfg->nblocks - 1);
}

/*
 * Bounded work on bytes no compiler emits.  jmp +2 over "b8 00", then ret:
 * the sweep of the gap decodes movl $0xc300,%eax at 0x1002, which overlaps
 * the ret.  The builder once left that byte undecided and swept the same
 * gap again forever.
 */
static void test_build_overlapping_gap(void **state)
{
	const uint8_t b[] = { 0xeb, 0x02, 0xb8, 0x00, 0xc3, 0x00, 0x00, 0x00 };
	struct dcpi_err err = { 0 };
	unsigned long d0 = cfg_dec_calls;
	struct cfg *cfg;

	(void)state;
	assert_int_equal(cfg_build_bytes(b, sizeof(b), 0x1000, "overlap", &cfg, &err), 0);
	check_structure(cfg, "overlap");
	assert_true(cfg_dec_calls - d0 <= 3 * sizeof(b));
	assert_int_equal(cfg->ninsns, 2);		/* the jmp and the ret */
	assert_int_equal(cfg_insn_at(cfg, 0x1004), 1);
	assert_int_equal(cfg->data[0].start, 0x1002);
	assert_string_equal(cfg->data[0].what, "undecodable");
	assert_true(cfg->missing_edges);		/* the sweep saw non-padding */
	cfg_free(cfg);
}

/*
 * One sweep, not a round per block: jmp over 4000 rets to a ret.  Each ret
 * of the gap is code no edge reaches; found one per round (each round
 * assembling the whole CFG again), that was quadratic.
 */
static void test_build_sweep_linear(void **state)
{
	enum { NRET = 4000 };
	uint8_t *b = malloc(NRET + 6);
	struct dcpi_err err = { 0 };
	unsigned long d0 = cfg_dec_calls, r0 = cfg_build_rounds;
	struct cfg *cfg;

	(void)state;
	assert_non_null(b);
	b[0] = 0xe9;					/* jmp rel32 */
	b[1] = NRET & 0xff;
	b[2] = NRET >> 8;
	b[3] = b[4] = 0;
	memset(b + 5, 0xc3, NRET + 1);
	assert_int_equal(cfg_build_bytes(b, NRET + 6, 0x1000, "rets", &cfg, &err), 0);
	check_structure(cfg, "rets");
	assert_int_equal(cfg->ninsns, NRET + 2);
	assert_int_equal(cfg->nblocks, NRET + 3);	/* and the exit */
	assert_true(cfg->missing_edges);
	assert_true(cfg_build_rounds - r0 <= 3);
	assert_true(cfg_dec_calls - d0 <= 3 * (NRET + 6));
	cfg_free(cfg);
	free(b);
}

/* Random bytes (a fixed LCG): any procedure, however bad, is tiled and
 * finished after a few decodes per byte and a few rounds. */
static void test_build_random_bytes(void **state)
{
	enum { LEN = 1 << 16 };
	uint8_t *b = malloc(LEN);
	uint32_t x = 12345;
	struct dcpi_err err = { 0 };
	struct cfg *cfg;

	(void)state;
	assert_non_null(b);
	for (int seed = 0; seed < 4; seed++) {
		unsigned long d0 = cfg_dec_calls, r0 = cfg_build_rounds;

		for (size_t i = 0; i < LEN; i++) {
			x = x * 1103515245u + 12345u + (uint32_t)seed;
			b[i] = (uint8_t)(x >> 16);
		}
		assert_int_equal(cfg_build_bytes(b, LEN, 0x400000, "random", &cfg, &err), 0);
		check_structure(cfg, "random");
		assert_true(cfg->ninsns > 0);
		assert_true(cfg_dec_calls - d0 <= 4 * (unsigned long)LEN);
		assert_true(cfg_build_rounds - r0 <= 4);
		cfg_free(cfg);
	}
	free(b);
}

/* objdump -d's instruction starts inside the procedure. */
static size_t objdump_starts(const char *bin, const struct cfg *cfg, uint64_t *out, size_t max)
{
	char line[512];
	size_t n = 0;
	FILE *f;

	f = tu_popen("objdump -d --no-show-raw-insn --start-address=0x%" PRIx64
		     " --stop-address=0x%" PRIx64 " %s", cfg->start, cfg->end, bin);
	while (fgets(line, sizeof(line), f)) {
		char *end;
		uint64_t a = strtoull(line, &end, 16);

		if (end != line && *end == ':' && line[0] == ' ' && n < max)
			out[n++] = a;
	}
	pclose(f);
	return n;
}

static void test_structure_and_boundaries(void **state)
{
	uint64_t *starts = malloc(65536 * sizeof(*starts));

	assert_non_null(starts);
	for (int v = 0; v < NVARIANTS; v++) {
		struct image *img = open_variant(v);
		char bin[512], what[128];

		bin_path(bin, sizeof(bin), v);
		for (size_t i = 0; i < NELEM(all_procs); i++) {
			struct cfg *cfg = build_proc(img, all_procs[i]);
			size_t n = objdump_starts(bin, cfg, starts, 65536), inblocks = 0;

			snprintf(what, sizeof(what), "%s %s", variants[v], all_procs[i]);
			check_structure(cfg, what);
			assert_true(n > 0);
			/* ours are objdump's, and objdump's inside blocks are ours */
			for (size_t k = 0; k < n; k++) {
				if (cfg_block_at(cfg, starts[k]) < 0)
					continue;
				inblocks++;
				if (cfg_insn_at(cfg, starts[k]) < 0)
					fail_msg("%s: objdump has 0x%" PRIx64 ", we do not",
						 what, starts[k]);
			}
			assert_int_equal(inblocks, cfg->ninsns);
			cfg_free(cfg);
		}
		img_close(img);
	}
	free(starts);
}

static int has_edge(const struct cfg *cfg, int from, int to)
{
	const struct cfg_block *b = &cfg->blocks[from];

	for (uint32_t k = 0; k < b->nsucc; k++)
		if ((int)cfg->edges[b->succ[k]].to == to)
			return 1;
	return 0;
}

/* Every jump callgrind saw inside a procedure is an edge of its CFG. */
static size_t check_callgrind(const char *cgout, struct cfg **cfgs, size_t ncfgs,
			      const char *variant)
{
	char line[512];
	uint64_t target = 0;
	int pending = 0;
	size_t checked = 0;
	FILE *f = fopen(cgout, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t src;

		if (!strncmp(line, "jump=", 5) || !strncmp(line, "jcnd=", 5)) {
			char *p = strchr(line, ' ');

			pending = p != NULL;
			target = p ? strtoull(p + 1, NULL, 16) : 0;
			continue;
		}
		if (!pending || strncmp(line, "0x", 2))
			continue;
		pending = 0;
		src = strtoull(line, NULL, 16);
		for (size_t c = 0; c < ncfgs; c++) {
			const struct cfg *cfg = cfgs[c];
			int sb = cfg_block_at(cfg, src), tb = cfg_block_at(cfg, target);
			int si = cfg_insn_at(cfg, src);

			if (sb < 0 || target < cfg->start || target >= cfg->end)
				continue;
			checked++;
			if (tb < 0 || cfg->blocks[tb].start != target)
				fail_msg("%s %s: jump 0x%" PRIx64 " -> 0x%" PRIx64
					 ": target is no block start", variant, cfg->name, src,
					 target);
			/* valgrind may split a block of ours: a plain step inside it */
			if (tb == sb && si >= 0 && target == src + cfg->insns[si].size)
				continue;
			if (!has_edge(cfg, sb, tb))
				fail_msg("%s %s: no edge for jump 0x%" PRIx64 " -> 0x%" PRIx64,
					 variant, cfg->name, src, target);
		}
	}
	fclose(f);
	return checked;
}

static void test_callgrind_jumps(void **state)
{
	if (tu_sh("valgrind --version >/dev/null 2>&1") != 0)
		skip();
	for (int v = 0; v < NVARIANTS; v++) {
		struct image *img = open_variant(v);
		struct cfg *cfgs[NELEM(all_procs)];
		char bin[512], cgout[600];
		size_t checked;

		bin_path(bin, sizeof(bin), v);
		snprintf(cgout, sizeof(cgout), "%s.cg", bin);
		assert_int_equal(tu_sh("valgrind --tool=callgrind --callgrind-out-file=%s "
				     "--dump-instr=yes --collect-jumps=yes --compress-pos=no "
				     "--compress-strings=no %s 90 >/dev/null 2>&1", cgout, bin), 0);
		for (size_t i = 0; i < NELEM(all_procs); i++)
			cfgs[i] = build_proc(img, all_procs[i]);
		checked = check_callgrind(cgout, cfgs, NELEM(all_procs), variants[v]);
		assert_true(checked >= 20);
		for (size_t i = 0; i < NELEM(all_procs); i++)
			cfg_free(cfgs[i]);
		img_close(img);
	}
}

static void test_noreturn(void **state)
{
	assert_true(cfg_noreturn_name("exit"));
	assert_true(cfg_noreturn_name("abort@plt"));
	assert_true(cfg_noreturn_name("__stack_chk_fail"));
	assert_false(cfg_noreturn_name("printf"));
	assert_false(cfg_noreturn_name("exit_group_x"));
	for (int v = 0; v < NVARIANTS; v++) {
		struct image *img = open_variant(v);
		const struct img_proc *fatal = img_proc_by_name(img, "fatal");
		struct cfg *cfg = build_proc(img, "main");
		size_t calls = 0;

		assert_non_null(fatal);
		for (size_t b = 0; b + 1 < cfg->nblocks; b++) {
			const struct cfg_block *bl = &cfg->blocks[b];
			const struct cfg_insn *last = &cfg->insns[bl->first + bl->n - 1];

			if (!(last->flags & CFG_I_CALL) || last->target != fatal->addr)
				continue;
			calls++;
			assert_true(bl->flags & CFG_B_NORETURN);
			for (uint32_t k = 0; k < bl->nsucc; k++) {
				enum cfg_edge_kind kind = cfg->edges[bl->succ[k]].kind;

				assert_true(kind != CFG_E_FALLTHROUGH && kind != CFG_E_CALL_RETURN);
				assert_int_equal(cfg->edges[bl->succ[k]].to, cfg->exit);
			}
		}
		if (!calls)
			fail_msg("%s: main has no call to fatal", variants[v]);
		cfg_free(cfg);
		img_close(img);
	}
}

/* One case of jumptables.s: what the CFG of proc must say. */
struct jt_case {
	const char *proc;
	unsigned indirect, resolved;
	int missing;
	size_t table_edges, tail_edges;
};

static void test_jump_table_forms(void **state)
{
	static const struct jt_case cases[] = {
		{ "t_cmpb", 1, 1, 0, 2, 1 },	/* third entry: in t_cmpb.cold */
		{ "t_mem", 1, 1, 0, 3, 0 },
		{ "t_lea", 1, 1, 0, 3, 0 },	/* the bound under another address */
		{ "t_copy", 1, 1, 0, 3, 0 },
		{ "t_pic", 1, 1, 0, 3, 0 },
		{ "t_reach", 1, 1, 0, 3, 0 },	/* the base's lea reaches it on every path */
		{ "t_reach_call", 1, 0, 1, 0, 1 },	/* a call between: rcx unknown */
		{ "t_byte", 1, 1, 0, 2, 0 },
		{ "t_tail", 0, 0, 0, 0, 1 },	/* pops, then jmp *%rax: a tail call */
		{ "t_virtual", 0, 0, 0, 0, 1 },
		{ "t_frame", 1, 0, 1, 0, 1 },	/* rbx still pushed: not a tail call */
		{ "t_unbounded", 1, 0, 1, 0, 1 },
	};
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	uint64_t *starts = malloc(4096 * sizeof(*starts));
	char bin[512];

	assert_non_null(starts);
	snprintf(bin, sizeof(bin), "%s/jumptables", tmpdir);
	if (img_open(bin, IMG_NO_DWARF, &img, &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < NELEM(cases); i++) {
		const struct jt_case *c = &cases[i];
		struct cfg *cfg = build_proc(img, c->proc);
		size_t tables = 0, tails = 0, n;

		check_structure(cfg, c->proc);
		/* instruction boundaries are objdump's */
		n = objdump_starts(bin, cfg, starts, 4096);
		for (size_t k = 0; k < n; k++)
			if (cfg_block_at(cfg, starts[k]) >= 0 && cfg_insn_at(cfg, starts[k]) < 0)
				fail_msg("%s: objdump has 0x%" PRIx64 ", we do not", c->proc,
					 starts[k]);
		for (size_t e = 0; e < cfg->nedges; e++) {
			const struct cfg_block *f = &cfg->blocks[cfg->edges[e].from];

			tables += cfg->edges[e].kind == CFG_E_TABLE;
			tails += cfg->edges[e].kind == CFG_E_TAILCALL &&
				 (f->flags & CFG_B_INDIRECT);
		}
		if (cfg->indirect_jumps != c->indirect || cfg->indirect_resolved != c->resolved ||
		    !!cfg->missing_edges != c->missing || tables != c->table_edges ||
		    tails != c->tail_edges)
			fail_msg("%s: indirect %u resolved %u missing %d table edges %zu "
				 "tail calls %zu", c->proc, cfg->indirect_jumps,
				 cfg->indirect_resolved, cfg->missing_edges, tables, tails);
		cfg_free(cfg);
	}
	img_close(img);
	free(starts);
}

/* A database whose newest epoch profiled the given images, one sample each. */
static void make_db(const char *dir, const char *const *images, size_t n)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	char epoch[64];

	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, sizeof(epoch), &err), 0);
	for (size_t i = 0; i < n; i++) {
		struct prof_profile p;

		tu_profile_of(&p, images[i], "cycles", 1, "events");
		assert_int_equal(prof_profile_add(&p, 0x1000, 1), 0);
		assert_int_equal(prof_profile_normalize(&p), 0);
		assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
		prof_profile_free(&p);
	}
	prof_db_close(db);
}

/* dcpicfg without --image: the procedure is looked up in the database's images. */
static void test_tool_db_lookup(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char sw[512], sw2[512], jt[512], db1[600], db2[600], out[700];
	const char *one[2], *two[3];

	if (!dcpi)
		skip();
	bin_path(sw, sizeof(sw), 1);
	bin_path(sw2, sizeof(sw2), 3);
	snprintf(jt, sizeof(jt), "%s/jumptables", tmpdir);
	snprintf(db1, sizeof(db1), "%s/db1", tmpdir);
	snprintf(db2, sizeof(db2), "%s/db2", tmpdir);
	one[0] = sw;
	one[1] = jt;
	make_db(db1, one, 2);
	two[0] = sw;
	two[1] = sw2;
	two[2] = jt;
	make_db(db2, two, 3);
	snprintf(out, sizeof(out), "%s/db.json", tmpdir);
	assert_int_equal(tu_sh("%s cfg op40 --db %s --json -o %s", dcpi, db1, out), 0);
	assert_int_equal(tu_sh("grep -q '\"procedure\": \"op40\"' %s", out), 0);
	assert_int_equal(tu_sh("grep -q '\"image\": \"%s\"' %s", sw, out), 0);
	assert_int_equal(tu_sh("DCPIDB=%s %s cfg t_mem --json -o %s", db1, dcpi, out), 0);
	assert_int_equal(tu_sh("grep -q '\"image\": \"%s\"' %s", jt, out), 0);
	/* op40 is in both switchy builds: ambiguous, the error names both */
	assert_int_not_equal(tu_sh("%s cfg op40 --db %s --json >/dev/null 2>%s", dcpi, db2, out), 0);
	assert_int_equal(tu_sh("grep -q 'switchy-gcc-pic' %s && grep -q 'switchy-clang-pic' %s && "
			     "grep -q -- --image %s", out, out, out), 0);
	assert_int_equal(tu_sh("%s cfg t_mem --db %s --json >/dev/null", dcpi, db2), 0);
	assert_int_not_equal(tu_sh("%s cfg no_such_proc --db %s 2>/dev/null", dcpi, db1), 0);
	assert_int_not_equal(tu_sh("%s cfg op40 --db %s/none 2>/dev/null", dcpi, tmpdir), 0);
}

static void test_tool_json_svg(void **state)
{
	const char *dcpi = getenv("DCPI_BIN");
	char bin[512], out[600];

	if (!dcpi)
		skip();
	bin_path(bin, sizeof(bin), 1);
	snprintf(out, sizeof(out), "%s/op40.json", tmpdir);
	assert_int_equal(tu_sh("%s cfg --image %s --json -o %s op40", dcpi, bin, out), 0);
	if (tu_sh("python3 -c pass 2>/dev/null") == 0)
		assert_int_equal(tu_sh("python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));"
				     " assert d[\"procedure\"]==\"op40\", d[\"procedure\"];"
				     " assert d[\"indirect_resolved\"]==d[\"indirect_jumps\"]>0;"
				     " assert not d[\"missing_edges\"];"
				     " s={b[\"start\"] for b in d[\"blocks\"]};"
				     " assert all(e[\"to\"] in s or e[\"to\"]==\"exit\""
				     " for e in d[\"edges\"])' %s", out), 0);
	else
		assert_int_equal(tu_sh("grep -q '\"procedure\": \"op40\"' %s", out), 0);
	snprintf(out, sizeof(out), "%s/main.svg", tmpdir);
	/* graphviz 2.42's layout leaks inside fontconfig: not ours to report */
	assert_int_equal(tu_sh("ASAN_OPTIONS=detect_leaks=0 %s cfg --image %s --format svg -o %s main",
			     dcpi, bin, out), 0);
	assert_int_equal(tu_sh("grep -q '<svg' %s", out), 0);
	/* an unknown procedure is an error with a message, not a crash */
	assert_int_not_equal(tu_sh("%s cfg --image %s no_such_proc 2>/dev/null", dcpi, bin), 0);
}

TU_MAIN(setup_all, teardown_all,
	cmocka_unit_test(test_decode_add),
	cmocka_unit_test(test_decode_text),
	cmocka_unit_test(test_decode_text_flags),
	cmocka_unit_test(test_decode_memo),
	cmocka_unit_test(test_decode_load),
	cmocka_unit_test(test_decode_store_rip),
	cmocka_unit_test(test_decode_vector_store),
	cmocka_unit_test(test_decode_errata),
	cmocka_unit_test(test_decode_write_mask),
	cmocka_unit_test(test_decode_call),
	cmocka_unit_test(test_decode_branches),
	cmocka_unit_test(test_decode_idioms),
	cmocka_unit_test(test_build_bytes_loop),
	cmocka_unit_test(test_build_overlapping_gap),
	cmocka_unit_test(test_build_sweep_linear),
	cmocka_unit_test(test_build_random_bytes),
	cmocka_unit_test(test_jump_tables),
	cmocka_unit_test(test_structure_and_boundaries),
	cmocka_unit_test(test_callgrind_jumps),
	cmocka_unit_test(test_noreturn),
	cmocka_unit_test(test_tool_json_svg),
	cmocka_unit_test(test_jump_table_forms),
	cmocka_unit_test(test_tool_db_lookup),
	cmocka_unit_test(test_entry_displaced),
	cmocka_unit_test(test_block_displaced),
	cmocka_unit_test(test_decode_skip))
