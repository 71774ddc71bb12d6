/*
 * cfg/decode.c - one x86-64 instruction from capstone into struct cfg_insn:
 * AT&T text, class flags, operand form, the memory operand, direct targets,
 * and the registers read and written (implicit ones and flags included, via
 * cs_regs_access) folded onto enum cfg_reg.  The pipeline model and the
 * estimator see only this, never capstone (DCPI paper sec. 6.1.1, 6.1.3).
 *
 * Capstone is most of the cost of building CFGs (about 1,000 cycles an
 * instruction here, its operand text included), and most instructions of a
 * binary are byte for byte like one decoded before (push %rbp, mov %rsp,%rbp,
 * a spill): a handle that has decoded a few thousand keeps a memo of the
 * decodes that do not depend on their address, and hands them back by their
 * bytes.  On gcc's cc1 it serves 58% of the decodes.  DCPI_DECODE_MEMO=0 in the
 * environment leaves it out (to compare).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "internal.h"

/*
 * The memo: decodes by their bytes.  x86 code is prefix-free, so an entry
 * whose len bytes begin the bytes to decode IS their decode, whatever
 * follows; only where the decode depends on the address (relative branches,
 * rip-relative operands) is nothing kept.  Which entry to try comes from the
 * bytes' first three, through the length last decoded after them (hint[]).
 */
#define MEMO_BITS	13
#define HINT_BITS	16
#define MEMO_AFTER	4096		/* capstone decodes on a handle before it has one */

struct memo_ent {
	uint8_t len;			/* 0: empty */
	uint8_t bytes[15];
	struct cfg_insn insn;		/* addr 0 */
};

struct cfg_dec {
	csh cs;
	cs_insn *ci;
	unsigned long calls;		/* cfg_dec_insn calls on this handle */
	unsigned long decodes;		/* capstone decodes on this handle */
	struct memo_ent *memo;		/* 1 << MEMO_BITS of them, once MEMO_AFTER */
	uint8_t *hint;			/* 1 << HINT_BITS lengths */
	int memo_failed;
	int memo_shared;		/* another handle's memo (cfg_dec_share_memo) */
	/* the decode cache of one procedure (cfg_dec_cache), idx 0 = not cached */
	const uint8_t *cbytes;
	uint64_t cstart;
	size_t clen;
	uint32_t *cidx;			/* per byte: 1 + index in cv */
	struct cfg_insn *cv;
	size_t cn, ccap, cidx_cap;
};

/* Sub-registers of the legacy GPRs, each mapped to its full register. */
static const struct {
	x86_reg reg;
	enum cfg_reg to;
} gpr_map[] = {
	{ X86_REG_AH, CFG_R_RAX }, { X86_REG_AL, CFG_R_RAX }, { X86_REG_AX, CFG_R_RAX },
	{ X86_REG_EAX, CFG_R_RAX }, { X86_REG_RAX, CFG_R_RAX },
	{ X86_REG_CH, CFG_R_RCX }, { X86_REG_CL, CFG_R_RCX }, { X86_REG_CX, CFG_R_RCX },
	{ X86_REG_ECX, CFG_R_RCX }, { X86_REG_RCX, CFG_R_RCX },
	{ X86_REG_DH, CFG_R_RDX }, { X86_REG_DL, CFG_R_RDX }, { X86_REG_DX, CFG_R_RDX },
	{ X86_REG_EDX, CFG_R_RDX }, { X86_REG_RDX, CFG_R_RDX },
	{ X86_REG_BH, CFG_R_RBX }, { X86_REG_BL, CFG_R_RBX }, { X86_REG_BX, CFG_R_RBX },
	{ X86_REG_EBX, CFG_R_RBX }, { X86_REG_RBX, CFG_R_RBX },
	{ X86_REG_SPL, CFG_R_RSP }, { X86_REG_SP, CFG_R_RSP }, { X86_REG_ESP, CFG_R_RSP },
	{ X86_REG_RSP, CFG_R_RSP },
	{ X86_REG_BPL, CFG_R_RBP }, { X86_REG_BP, CFG_R_RBP }, { X86_REG_EBP, CFG_R_RBP },
	{ X86_REG_RBP, CFG_R_RBP },
	{ X86_REG_SIL, CFG_R_RSI }, { X86_REG_SI, CFG_R_RSI }, { X86_REG_ESI, CFG_R_RSI },
	{ X86_REG_RSI, CFG_R_RSI },
	{ X86_REG_DIL, CFG_R_RDI }, { X86_REG_DI, CFG_R_RDI }, { X86_REG_EDI, CFG_R_RDI },
	{ X86_REG_RDI, CFG_R_RDI },
	{ X86_REG_EFLAGS, CFG_R_FLAGS },
	{ X86_REG_RIP, CFG_R_RIP }, { X86_REG_EIP, CFG_R_RIP }, { X86_REG_IP, CFG_R_RIP },
	{ X86_REG_FS, CFG_R_SEG }, { X86_REG_GS, CFG_R_SEG },
	{ X86_REG_FPSW, CFG_R_X87 },
};

/* Runs of capstone registers numbered in order: first..last fold onto to
 * plus the distance from first (x87 and MMX, when step is 0, onto to alone). */
static const struct {
	x86_reg first, last;
	enum cfg_reg to;
	int step;
} reg_runs[] = {
	{ X86_REG_R8, X86_REG_R15, CFG_R_R8, 1 },
	{ X86_REG_R8B, X86_REG_R15B, CFG_R_R8, 1 },
	{ X86_REG_R8D, X86_REG_R15D, CFG_R_R8, 1 },
	{ X86_REG_R8W, X86_REG_R15W, CFG_R_R8, 1 },
	{ X86_REG_XMM0, X86_REG_XMM31, CFG_R_VEC0, 1 },
	{ X86_REG_YMM0, X86_REG_YMM31, CFG_R_VEC0, 1 },
	{ X86_REG_ZMM0, X86_REG_ZMM31, CFG_R_VEC0, 1 },
	{ X86_REG_K0, X86_REG_K7, CFG_R_K0, 1 },
	{ X86_REG_ST0, X86_REG_ST7, CFG_R_X87, 0 },
	{ X86_REG_MM0, X86_REG_MM7, CFG_R_X87, 0 },
	{ X86_REG_FP0, X86_REG_FP7, CFG_R_X87, 0 },
};

/* Fold a capstone register onto enum cfg_reg; -1 for none (riz, eiz). */
static int fold_reg_slow(unsigned r)
{
	if (r == X86_REG_INVALID || r == X86_REG_RIZ || r == X86_REG_EIZ)
		return -1;
	for (size_t i = 0; i < sizeof(reg_runs) / sizeof(reg_runs[0]); i++)
		if (r >= reg_runs[i].first && r <= reg_runs[i].last)
			return (int)reg_runs[i].to + reg_runs[i].step * (int)(r - reg_runs[i].first);
	for (size_t i = 0; i < sizeof(gpr_map) / sizeof(gpr_map[0]); i++)
		if (gpr_map[i].reg == r)
			return gpr_map[i].to;
	return CFG_R_OTHER;
}

/* fold_reg_slow of every capstone register, made once (the hot path). */
static int8_t fold_tab[X86_REG_ENDING];
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

static void group_init(void);

static void fold_init(void)
{
	group_init();
	for (unsigned r = 0; r < X86_REG_ENDING; r++)
		fold_tab[r] = (int8_t)fold_reg_slow(r);
}

static inline int fold_reg(unsigned r)
{
	return r < X86_REG_ENDING ? fold_tab[r] : fold_reg_slow(r);
}

static unsigned reg_bits(unsigned r)
{
	if (r >= X86_REG_MM0 && r <= X86_REG_MM7)
		return 64;
	if (r >= X86_REG_XMM0 && r <= X86_REG_XMM31)
		return 128;
	if (r >= X86_REG_YMM0 && r <= X86_REG_YMM31)
		return 256;
	if (r >= X86_REG_ZMM0 && r <= X86_REG_ZMM31)
		return 512;
	return 0;
}

/*
 * Mnemonics, one shared copy of each (struct cfg_insn points at it): a list
 * per capstone id, most ids have one or two names (addl, addq), with what
 * the decoder asks of the name worked out once (MN_*).  Readers take no
 * lock; a name is added under mn_lock and published last.
 */
enum {
	MN_FP = 1u << 0,	/* is_fp_mnemonic */
	MN_CVT = 1u << 1,	/* is_cvt */
	MN_DIV = 1u << 2,	/* has_div */
	MN_CMOV = 1u << 3,	/* cmov..., fcmov... */
	MN_ZERO = 1u << 4,	/* a zero idiom's name (check_zero_idiom) */
};

struct mn_name {
	struct mn_name *next;
	uint8_t n, traits;
	char s[CFG_MNEMONIC_MAX];
};
static struct mn_name *_Atomic mn_tab[X86_INS_ENDING + 1];
static pthread_mutex_t mn_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned mn_traits(const char *m, size_t n);

/* a and b equal in their first n bytes; both readable for 24 */
static inline int mn_eq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x, y, mask = n - i >= 8 ? ~0ull : (1ull << (8 * (n - i))) - 1;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if ((x ^ y) & mask)
			return 0;
	}
	return 1;
}

/* m is readable for CFG_MNEMONIC_MAX bytes (capstone's are 32) */
static const struct mn_name *mn_find(const struct mn_name *e, const char *m, size_t n)
{
	for (; e; e = e->next)
		if (e->n == n && mn_eq(e->s, m, n))
			return e;
	return NULL;
}

/* The shared copy of m (n bytes, cut to CFG_MNEMONIC_MAX - 1) for id. */
static const struct mn_name *mn_intern(unsigned id, const char *m, size_t n)
{
	static const struct mn_name unknown = { NULL, 1, 0, "?" };
	struct mn_name *_Atomic *slot = &mn_tab[id < X86_INS_ENDING ? id : X86_INS_ENDING];
	const struct mn_name *r;
	struct mn_name *e;

	if (n > CFG_MNEMONIC_MAX - 1)
		n = CFG_MNEMONIC_MAX - 1;
	if ((r = mn_find(atomic_load_explicit(slot, memory_order_acquire), m, n)))
		return r;
	pthread_mutex_lock(&mn_lock);
	if (!(r = mn_find(atomic_load_explicit(slot, memory_order_relaxed), m, n)) &&
	    (e = calloc(1, sizeof(*e)))) {
		memcpy(e->s, m, n);
		e->n = (uint8_t)n;
		e->traits = (uint8_t)mn_traits(e->s, n);
		e->next = atomic_load_explicit(slot, memory_order_relaxed);
		atomic_store_explicit(slot, e, memory_order_release);
		r = e;
	}
	pthread_mutex_unlock(&mn_lock);
	return r ? r : &unknown;
}

/* The decoder cfg_insn_text formats with, opened when first asked. */
static csh text_cs;
static int text_cs_open;
static pthread_mutex_t text_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((destructor)) static void dec_fini(void)
{
	for (size_t i = 0; i <= X86_INS_ENDING; i++)
		for (struct mn_name *e = mn_tab[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	if (text_cs_open)
		cs_close(&text_cs);
}

/* How many of an operand string's n bytes the text cut to CFG_TEXT_MAX - 1
 * holds, after a mnemonic of nm bytes and a space. */
static size_t text_cut(size_t nm, size_t n)
{
	size_t cut = CFG_TEXT_MAX - 1;

	if (nm + 1 >= cut)
		return 0;
	return n < cut - nm - 1 ? n : cut - nm - 1;
}

/*
 * "mnemonic operands" into dst, cut to its size (capstone's can be longer);
 * the length of what was written.  a is n bytes long.
 */
static size_t join_text(char *dst, size_t size, const char *a, size_t n, const char *b)
{
	size_t m = b && *b ? strlen(b) : 0;

	if (!size)
		return 0;
	if (n >= size)
		n = size - 1;
	memcpy(dst, a, n);
	if (m && n + 1 < size) {
		dst[n++] = ' ';
		if (m > size - 1 - n)
			m = size - 1 - n;
		memcpy(dst + n, b, m);
		n += m;
	}
	dst[n] = 0;
	return n;
}

const char *cfg_insn_text(const struct cfg_insn *insn, char *buf, size_t size)
{
	cs_insn *ci = NULL;
	size_t n = 0;

	if (!size)
		return buf;
	buf[0] = 0;
	if (!(insn->flags & CFG_I_INVALID) && insn->size) {
		pthread_mutex_lock(&text_lock);
		if (!text_cs_open && cs_open(CS_ARCH_X86, CS_MODE_64, &text_cs) == CS_ERR_OK) {
			cs_option(text_cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
			text_cs_open = 1;
		}
		if (text_cs_open)
			n = cs_disasm(text_cs, insn->bytes, insn->size, insn->addr, 1, &ci);
		if (n)
			join_text(buf, size < CFG_TEXT_MAX ? size : CFG_TEXT_MAX, ci->mnemonic,
				  strlen(ci->mnemonic), ci->op_str);
		if (ci)
			cs_free(ci, n);
		pthread_mutex_unlock(&text_lock);
	}
	if (!n)
		snprintf(buf, size, ".byte 0x%02x", insn->size ? insn->bytes[0] : 0);
	return buf;
}

int cfg_dec_open(struct cfg_dec **out, struct dcpi_err *err)
{
	struct cfg_dec *dec = calloc(1, sizeof(*dec));
	const char *memo = getenv("DCPI_DECODE_MEMO");

	if (!dec)
		return dcpi_errf(err, -ENOMEM, "capstone: out of memory");
	dec->memo_failed = memo && !strcmp(memo, "0");	/* no memo: to compare */
	pthread_once(&fold_once, fold_init);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &dec->cs) != CS_ERR_OK)
		goto fail;
	if (cs_option(dec->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    cs_option(dec->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK)
		goto fail_close;
	dec->ci = cs_malloc(dec->cs);
	if (!dec->ci)
		goto fail_close;
	*out = dec;
	return 0;
fail_close:
	cs_close(&dec->cs);
fail:
	free(dec);
	return dcpi_errf(err, -ENOMEM, "capstone: cannot open an x86-64 decoder");
}

void cfg_dec_close(struct cfg_dec *dec)
{
	if (!dec)
		return;
	free(dec->cidx);
	free(dec->cv);
	if (!dec->memo_shared) {
		free(dec->memo);
		free(dec->hint);
	}
	cs_free(dec->ci, 1);
	cs_close(&dec->cs);
	free(dec);
}

/* The groups fill_class and fill_regs ask about, as bits: one pass over them. */
enum {
	G_CALL = 1u << 0, G_RET = 1u << 1, G_IRET = 1u << 2, G_JUMP = 1u << 3,
	G_FPU = 1u << 4, G_SSE1 = 1u << 5, G_SSE2 = 1u << 6, G_AVX = 1u << 7,
};

/* group_mask's bit for each capstone group id (X86_GRP_* fit a byte) */
static uint8_t group_tab[256];

static void group_init(void)
{
	group_tab[X86_GRP_CALL] = G_CALL;
	group_tab[X86_GRP_RET] = G_RET;
	group_tab[X86_GRP_IRET] = G_IRET;
	group_tab[X86_GRP_JUMP] = G_JUMP;
	group_tab[X86_GRP_FPU] = G_FPU;
	group_tab[X86_GRP_SSE1] = G_SSE1;
	group_tab[X86_GRP_SSE2] = G_SSE2;
	group_tab[X86_GRP_AVX] = G_AVX;
}

static unsigned group_mask(const cs_detail *d)
{
	unsigned m = 0;

	for (unsigned i = 0; i < d->groups_count; i++)
		m |= group_tab[d->groups[i]];
	return m;
}

/* "cvt..." or "vcvt..." */
static inline int is_cvt(const char *m)
{
	return (m[0] == 'c' && m[1] == 'v' && m[2] == 't') ||
	       (m[0] == 'v' && m[1] == 'c' && m[2] == 'v' && m[3] == 't');
}

/*
 * Scalar or packed floating point by mnemonic (SSE/AVX name their type):
 * x87 (f...), conversions, or a name ending in ss, sd, ps, pd, or ssl, sdl,
 * ssq, sdq.  n is strlen(m).
 */
static int is_fp_mnemonic(const char *m, size_t n)
{
	char a, b;

	if (m[0] == 'f' || is_cvt(m))
		return 1;
	if (n >= 3 && (m[n - 1] == 'l' || m[n - 1] == 'q') && m[n - 3] == 's' &&
	    (m[n - 2] == 's' || m[n - 2] == 'd'))
		return 1;
	if (n < 2)
		return 0;
	a = m[n - 2];
	b = m[n - 1];
	return (a == 's' || a == 'p') && (b == 's' || b == 'd');
}

/* Does m contain "div" or "sqrt"? */
static int has_div(const char *m)
{
	for (; *m; m++)
		if ((m[0] == 'd' && m[1] == 'i' && m[2] == 'v') ||
		    (m[0] == 's' && m[1] == 'q' && m[2] == 'r' && m[3] == 't'))
			return 1;
	return 0;
}

/* Is m (n bytes) the name of a zero idiom's operation (xorl, vpxor, psubq)? */
static int is_zero_name(const char *m, size_t n)
{
	static const char *const ops[] = { "xor", "sub", "pxor", "xorps", "xorpd", "psubb",
					    "psubw", "psubd", "psubq", "pcmpgtb", "pcmpgtw",
					    "pcmpgtd", "pcmpgtq", "sbb" };
	char base[CFG_MNEMONIC_MAX];

	if (m[0] == 'v') {
		m++;
		n--;
	}
	if (n >= sizeof(base))
		n = sizeof(base) - 1;
	memcpy(base, m, n);
	base[n] = 0;
	/* AT&T size suffix on the integer forms: xorl, subq */
	if (n == 4 && strchr("bwlq", base[3]) && (!strncmp(base, "xor", 3) ||
						  !strncmp(base, "sub", 3) ||
						  !strncmp(base, "sbb", 3)))
		base[3] = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(base, ops[i]))
			return 1;
	return 0;
}

/* What the decoder asks of a mnemonic (n bytes), once per name (mn_intern). */
static unsigned mn_traits(const char *m, size_t n)
{
	unsigned t = 0;

	if (is_fp_mnemonic(m, n))
		t |= MN_FP;
	if (is_cvt(m))
		t |= MN_CVT;
	if (has_div(m))
		t |= MN_DIV;
	if ((m[0] == 'c' && m[1] == 'm' && m[2] == 'o' && m[3] == 'v') ||
	    (m[0] == 'f' && m[1] == 'c' && m[2] == 'm' && m[3] == 'o' && m[4] == 'v'))
		t |= MN_CMOV;
	if (is_zero_name(m, n))
		t |= MN_ZERO;
	return t;
}

static void fill_mem(struct cfg_insn *insn, const cs_x86_op *op)
{
	int b = fold_reg(op->mem.base), x = fold_reg(op->mem.index);

	insn->mem.base = b < 0 ? CFG_REG_NONE : b;
	insn->mem.index = x < 0 ? CFG_REG_NONE : x;
	insn->mem.scale = op->mem.scale > 0 ? op->mem.scale : 1;
	insn->mem.size = op->size;
	insn->mem.segment = op->mem.segment == X86_REG_FS ? 1 :
			    op->mem.segment == X86_REG_GS ? 2 :
			    op->mem.segment == X86_REG_INVALID ? 0 : 3;
	insn->mem.disp = op->mem.disp;
	if (op->mem.base == X86_REG_RIP) {
		insn->mem.rip_relative = 1;
		insn->mem.base = CFG_REG_NONE;
		insn->mem.disp = (int64_t)(insn->addr + insn->size) + op->mem.disp;
	}
}

/* Operands: memory operand, form, vector width, immediate, direct target. */
static void fill_operands(struct cfg_insn *insn, const cs_insn *ci)
{
	const cs_x86 *x = &ci->detail->x86;
	int rd = 0, wr = 0, regs = 0;

	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		unsigned bits;

		switch (op->type) {
		case X86_OP_REG:
			regs = 1;
			bits = reg_bits(op->reg);
			if (bits > insn->vec_bits)
				insn->vec_bits = bits;
			/* "%cl," in the text: %cl before the last operand */
			if (op->reg == X86_REG_CL && i + 1 < x->op_count)
				insn->flags |= CFG_I_CL;
			break;
		case X86_OP_IMM:
			regs = 1;
			insn->imm = (uint64_t)op->imm;
			insn->flags |= CFG_I_IMM;	/* but see dec_insn */
			break;
		case X86_OP_MEM:
			if (!insn->nmem++)
				fill_mem(insn, op);
			rd |= !!(op->access & CS_AC_READ);
			wr |= !!(op->access & CS_AC_WRITE);
			break;
		default:
			break;
		}
	}
	if (ci->id == X86_INS_LEA) {
		insn->flags |= CFG_I_LEA;
		rd = wr = 0;
	}
	/* nop with a memory operand does not touch memory */
	if (ci->id == X86_INS_NOP)
		rd = wr = 0;
	if (rd)
		insn->flags |= CFG_I_LOAD;
	if (wr)
		insn->flags |= CFG_I_STORE;
	if (rd && wr)
		insn->form = CFG_F_RMW;
	else if (rd)
		insn->form = CFG_F_LOAD;
	else if (wr)
		insn->form = CFG_F_STORE;
	else
		insn->form = regs || insn->nmem ? CFG_F_REG : CFG_F_NONE;
	if (insn->vec_bits)
		insn->flags |= CFG_I_VECTOR;
}

static void fill_regs(struct cfg_insn *insn, const cs_insn *ci, unsigned groups)
{
	const cs_detail *d = ci->detail;
	const cs_x86 *x = &d->x86;
	uint64_t rd = 0, wr = 0;
	int r;

	/*
	 * What cs_regs_access gives (capstone 4, X86_reg_access), folded
	 * straight into masks: the implicit registers, the explicit register
	 * operands by their access, and the segment, base and index of memory
	 * operands as read.
	 */
	for (unsigned i = 0; i < d->regs_read_count; i++)
		if ((r = fold_reg(d->regs_read[i])) >= 0)
			rd |= CFG_RBIT(r);
	for (unsigned i = 0; i < d->regs_write_count; i++)
		if ((r = fold_reg(d->regs_write[i])) >= 0)
			wr |= CFG_RBIT(r);
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type == X86_OP_REG) {
			if ((r = fold_reg(op->reg)) < 0)
				continue;
			/*
			 * An AVX-512 write-mask ({%k2}, capstone 4's last
			 * operand) is read; its access is uninitialised
			 * memory in capstone 4, so it is not looked at.
			 */
			if (r >= CFG_R_K0 && r < CFG_R_K0 + 8 && i + 1 == x->op_count &&
			    strstr(ci->op_str, "{%k")) {
				rd |= CFG_RBIT(r);
				continue;
			}
			if (op->access & CS_AC_READ)
				rd |= CFG_RBIT(r);
			if (op->access & CS_AC_WRITE) {
				wr |= CFG_RBIT(r);
				if (op->size < 4 && r <= CFG_R_R15)
					insn->flags |= CFG_I_PARTIAL;
			}
		} else if (op->type == X86_OP_MEM) {
			if (op->mem.segment != X86_REG_INVALID &&
			    (r = fold_reg(op->mem.segment)) >= 0)
				rd |= CFG_RBIT(r);
			if (op->mem.base != X86_REG_INVALID && (r = fold_reg(op->mem.base)) >= 0)
				rd |= CFG_RBIT(r);
			if (op->mem.index != X86_REG_INVALID && (r = fold_reg(op->mem.index)) >= 0)
				rd |= CFG_RBIT(r);
		}
	}
	insn->regs_read |= rd;
	insn->regs_written |= wr;
	/* x87 instructions keep fpu_flags in the eflags slot: not arithmetic flags */
	if (!(groups & G_FPU)) {
		uint64_t f = d->x86.eflags;
		uint64_t test = X86_EFLAGS_TEST_OF | X86_EFLAGS_TEST_SF | X86_EFLAGS_TEST_ZF |
				X86_EFLAGS_TEST_PF | X86_EFLAGS_TEST_CF | X86_EFLAGS_TEST_DF |
				X86_EFLAGS_TEST_AF;

		if (f & test)
			insn->regs_read |= CFG_RBIT(CFG_R_FLAGS);
		if (f & ~test)
			insn->regs_written |= CFG_RBIT(CFG_R_FLAGS);
	}
	for (unsigned i = 0; i < d->regs_write_count; i++)
		if (d->regs_write[i] == X86_REG_RSP)
			insn->flags |= CFG_I_STACK;
	if (ci->id == X86_INS_PUSH || ci->id == X86_INS_POP)
		insn->flags |= CFG_I_STACK;
	/* rip is implied by every instruction; keep it only where it is an input */
	insn->regs_written &= ~CFG_RBIT(CFG_R_RIP);
	if (!(insn->mem.rip_relative && insn->nmem))
		insn->regs_read &= ~CFG_RBIT(CFG_R_RIP);
}

/* Instructions with a target relative to their address that capstone does
 * not put in the jump group (CFG_I_BRANCH): loop, jrcxz, xbegin. */
static int rel_target_id(unsigned id)
{
	return id == X86_INS_LOOP || id == X86_INS_LOOPE || id == X86_INS_LOOPNE ||
	       id == X86_INS_JRCXZ || id == X86_INS_JECXZ || id == X86_INS_XBEGIN;
}

/*
 * CFG_I_IMM and CFG_I_CL say what "$" and "%cl," in the AT&T text would (the
 * model's classes were written against the text): a direct branch's target
 * prints without "$" (a far one's selector and offset with it), and a shift
 * of memory by %cl has %cl as an implicit operand that the text shows first.
 */
static void fix_text_flags(struct cfg_insn *insn, const cs_insn *ci)
{
	const cs_detail *d = ci->detail;

	if (((insn->flags & (CFG_I_BRANCH | CFG_I_CALL)) && !(insn->flags & CFG_I_INDIRECT) &&
	     ci->id != X86_INS_LJMP && ci->id != X86_INS_LCALL) || rel_target_id(ci->id))
		insn->flags &= ~(uint32_t)CFG_I_IMM;
	if (d->x86.op_count == 1 && d->x86.operands[0].type == X86_OP_MEM)
		for (unsigned i = 0; i < d->regs_read_count; i++)
			if (d->regs_read[i] == X86_REG_CL)
				insn->flags |= CFG_I_CL;
}

/* xor r,r; sub r,r; pxor x,x ...: the result is 0 whatever r held. */
static void check_zero_idiom(struct cfg_insn *insn, const cs_insn *ci, unsigned traits)
{
	const cs_x86 *x = &ci->detail->x86;
	unsigned r0;

	if (!(traits & MN_ZERO) || x->op_count < 2 || x->op_count > 3)
		return;
	for (unsigned i = 0; i < x->op_count; i++)
		if (x->operands[i].type != X86_OP_REG)
			return;
	r0 = x->operands[0].reg;
	for (unsigned i = 1; i < x->op_count; i++)
		if (x->operands[i].reg != r0 && !(x->op_count == 3 && i == 2))
			return;
	if (x->op_count == 3 && x->operands[1].reg != r0)
		return;
	/* sbb r,r is all-ones or zero from CF: independent of r, not of flags */
	insn->flags |= CFG_I_ZERO_IDIOM;
	insn->regs_read &= ~CFG_RBIT(fold_reg(r0));
}

/*
 * Capstone 4 marks the memory operand of SSE/AVX stores (vmovaps %ymm0,(%rdi),
 * vmovq %xmm0,(%rax), vpextrd $1,%xmm0,(%rdi)) as read.  A vector instruction
 * whose one memory operand is its AT&T destination and which writes no
 * register only writes memory: a store.
 */
static void fix_vector_store(struct cfg_insn *insn, const cs_insn *ci)
{
	const uint64_t regs = ((1ull << CFG_R_FLAGS) - 1) | (0xffffffffull << CFG_R_VEC0);
	size_t n;

	if (insn->form != CFG_F_LOAD || !insn->vec_bits || insn->nmem != 1 ||
	    (insn->regs_written & regs))
		return;
	/* the text's last character (as cut to CFG_TEXT_MAX - 1) */
	n = strlen(ci->op_str);
	if (!n || text_cut(strlen(ci->mnemonic), n) != n || ci->op_str[n - 1] != ')')
		return;
	insn->form = CFG_F_STORE;
	insn->flags = (insn->flags & ~(uint32_t)CFG_I_LOAD) | CFG_I_STORE;
}

/*
 * Other capstone 4 access errata, checked against the instruction set
 * manual: cmpxchg with memory reads and writes it and writes the accumulator
 * (rdx:rax for cmpxchg8b/16b); shld/shrd by %cl write their destination
 * register (the imm8 forms are right).
 */
static void fix_capstone_errata(struct cfg_insn *insn, const cs_insn *ci)
{
	const cs_x86 *x = &ci->detail->x86;
	int r;

	switch (ci->id) {
	case X86_INS_CMPXCHG16B:
	case X86_INS_CMPXCHG8B:
		insn->regs_written |= CFG_RBIT(CFG_R_RDX);
		/* fall through */
	case X86_INS_CMPXCHG:
		insn->regs_written |= CFG_RBIT(CFG_R_RAX) | CFG_RBIT(CFG_R_FLAGS);
		if (insn->nmem) {
			insn->form = CFG_F_RMW;
			insn->flags |= CFG_I_LOAD | CFG_I_STORE;
		}
		break;
	case X86_INS_SHLD:
	case X86_INS_SHRD:
		/* AT&T operand order (as capstone gives it here): the destination
		 * is the last operand, read and written */
		if (!x->op_count)
			break;
		if (x->operands[x->op_count - 1].type == X86_OP_MEM) {
			insn->form = CFG_F_RMW;
			insn->flags |= CFG_I_LOAD | CFG_I_STORE;
		} else if ((r = fold_reg(x->operands[x->op_count - 1].reg)) >= 0) {
			insn->regs_written |= CFG_RBIT(r);
		}
		break;
	default:
		break;
	}
}

/* traits the mnemonic's MN_*, groups group_mask's. */
static void fill_class(struct cfg_insn *insn, const cs_insn *ci, unsigned traits,
		       unsigned groups)
{
	const cs_x86 *x = &ci->detail->x86;
	int indirect = x->op_count > 0 && x->operands[0].type != X86_OP_IMM;
	int fpname = !!(traits & MN_FP);

	if (groups & G_CALL) {
		insn->flags |= CFG_I_CALL | CFG_I_STACK;
	} else if (groups & (G_RET | G_IRET)) {
		insn->flags |= CFG_I_RET | CFG_I_STACK;
		indirect = 0;
	} else if (groups & G_JUMP) {
		insn->flags |= CFG_I_BRANCH;
		if (ci->id != X86_INS_JMP && ci->id != X86_INS_LJMP)
			insn->flags |= CFG_I_COND;
	} else {
		indirect = 0;
	}
	if (insn->flags & (CFG_I_CALL | CFG_I_BRANCH)) {
		if (indirect)
			insn->flags |= CFG_I_INDIRECT;
		else if (x->op_count > 0)
			insn->target = (uint64_t)x->operands[0].imm;
	}
	switch (ci->id) {
	case X86_INS_NOP: case X86_INS_FNOP: case X86_INS_ENDBR64: case X86_INS_ENDBR32:
		insn->flags |= CFG_I_NOP;
		break;
	case X86_INS_UD2: case X86_INS_UD2B: case X86_INS_HLT: case X86_INS_INT3:
		insn->flags |= CFG_I_TRAP;
		break;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT:
		insn->flags |= CFG_I_SYSCALL;
		break;
	case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW:
		insn->flags |= CFG_I_PREFETCH;
		insn->flags &= ~CFG_I_LOAD;
		break;
	case X86_INS_DIV: case X86_INS_IDIV:
		insn->flags |= CFG_I_DIV;
		break;
	case X86_INS_XCHG:
		if (insn->nmem)
			insn->flags |= CFG_I_LOCK;
		/* xchg %ax,%ax (66 90) is the two-byte nop */
		else if (x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
			 x->operands[0].reg == x->operands[1].reg)
			insn->flags |= CFG_I_NOP;
		break;
	default:
		break;
	}
	if (x->prefix[0] == X86_PREFIX_LOCK)
		insn->flags |= CFG_I_LOCK;
	if (traits & MN_CMOV)
		insn->flags |= CFG_I_CMOV;
	if (traits & MN_DIV)
		insn->flags |= CFG_I_DIV;
	if ((groups & G_FPU) || ((insn->flags & CFG_I_VECTOR) && fpname) || (traits & MN_CVT))
		insn->flags |= CFG_I_FP;
	if (!(insn->flags & CFG_I_VECTOR) && fpname && insn->mnemonic[0] != 'f' &&
	    insn->vec_bits == 0 && (groups & (G_SSE1 | G_SSE2 | G_AVX)))
		insn->flags |= CFG_I_FP;
}

_Thread_local unsigned long cfg_dec_calls;

unsigned long cfg_dec_count(const struct cfg_dec *dec)
{
	return dec->calls;
}

void cfg_dec_count_set(struct cfg_dec *dec, unsigned long calls)
{
	dec->calls = calls;
}

int cfg_dec_cache(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t start)
{
	dec->cbytes = NULL;
	dec->cn = 0;
	if (len > dec->cidx_cap) {
		uint32_t *v = realloc(dec->cidx, len * sizeof(*v));

		if (!v)
			return -ENOMEM;
		dec->cidx = v;
		dec->cidx_cap = len;
	}
	memset(dec->cidx, 0, len * sizeof(*dec->cidx));
	/* about one instruction per 4 bytes: room for them at once, not by doubling */
	if (len / 4 + 16 > dec->ccap) {
		struct cfg_insn *v = realloc(dec->cv, (len / 4 + 16) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		dec->cv = v;
		dec->ccap = len / 4 + 16;
	}
	dec->cbytes = bytes;
	dec->clen = len;
	dec->cstart = start;
	return 0;
}

void cfg_dec_uncache(struct cfg_dec *dec)
{
	dec->cbytes = NULL;
	dec->cn = 0;
}

void cfg_dec_cache_release(struct cfg_dec *dec)
{
	cfg_dec_uncache(dec);
	free(dec->cidx);
	free(dec->cv);
	dec->cidx = NULL;
	dec->cv = NULL;
	dec->cidx_cap = dec->ccap = 0;
}

size_t cfg_dec_cache_bytes(const struct cfg_dec *dec)
{
	return dec->cidx_cap * sizeof(*dec->cidx) + dec->ccap * sizeof(*dec->cv);
}

/*
 * The cached decode at off, if it is what decoding len bytes there would give:
 * the same bytes and address, and the whole instruction within len (an
 * undecodable one stays undecodable with fewer bytes).
 */
static const struct cfg_insn *cache_get(const struct cfg_dec *dec, const uint8_t *bytes,
					size_t len, uint64_t addr)
{
	const struct cfg_insn *c;
	size_t off = (size_t)(addr - dec->cstart);
	uint32_t k;

	if (!dec->cbytes || addr < dec->cstart || off >= dec->clen ||
	    bytes != dec->cbytes + off || !(k = dec->cidx[off]))
		return NULL;
	c = &dec->cv[k - 1];
	return c->size <= len || (c->flags & CFG_I_INVALID) ? c : NULL;
}

/* Keep a decode made with all the procedure's bytes after it (nothing less). */
static void cache_put(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		      const struct cfg_insn *insn)
{
	size_t off = (size_t)(addr - dec->cstart);

	if (!dec->cbytes || addr < dec->cstart || off >= dec->clen ||
	    bytes != dec->cbytes + off || len != dec->clen - off)
		return;
	if (dcpi_grow((void **)&dec->cv, &dec->ccap, dec->cn + 1, sizeof(*dec->cv)))
		return;		/* no cache: decoded again when asked */
	dec->cv[dec->cn++] = *insn;
	dec->cidx[off] = (uint32_t)dec->cn;
}

static int dec_insn(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		    struct cfg_insn *insn);

/* Is [bytes, bytes + len) at addr inside the cached procedure? */
static int in_cache(const struct cfg_dec *dec, const uint8_t *bytes, size_t len,
		    uint64_t addr)
{
	size_t off = (size_t)(addr - dec->cstart);

	return dec->cbytes && addr >= dec->cstart && off < dec->clen &&
	       bytes == dec->cbytes + off && len <= dec->clen - off;
}

int cfg_dec_insn(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		 struct cfg_insn *insn)
{
	const struct cfg_insn *c;
	int rc;

	dec->calls++;
	c = cache_get(dec, bytes, len, addr);
	if (c) {
		*insn = *c;
		return (c->flags & CFG_I_INVALID) ? -EINVAL : 0;
	}
	/*
	 * A shorter run (the padding test of a gap) is decoded with all the
	 * procedure's bytes after it, and kept, so the traversal that follows
	 * finds it: the same instruction when it fits in len.
	 */
	if (len && in_cache(dec, bytes, len, addr) && len < dec->clen - (addr - dec->cstart)) {
		size_t full = dec->clen - (size_t)(addr - dec->cstart);

		rc = dec_insn(dec, bytes, full, addr, insn);
		cache_put(dec, bytes, full, addr, insn);
		if (insn->size <= len || rc < 0)
			return rc;
	}
	rc = dec_insn(dec, bytes, len, addr, insn);
	cache_put(dec, bytes, len, addr, insn);
	return rc;
}

_Thread_local unsigned long cfg_dec_memo_hits;

static inline uint64_t load_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, p, n < 8 ? n : 8);
	return v;
}

/* Slot of the instruction bytes[0, n) in the memo. */
static inline size_t memo_slot(const uint8_t *bytes, size_t n)
{
	uint64_t h = load_le(bytes, n) * 0x9e3779b97f4a7c15ull;

	if (n > 8)
		h ^= load_le(bytes + 8, n - 8) * 0xc2b2ae3d27d4eb4full;
	h ^= n;
	return (size_t)((h * 0x9e3779b97f4a7c15ull) >> (64 - MEMO_BITS));
}

static inline size_t hint_slot(const uint8_t *bytes, size_t len)
{
	uint64_t k = load_le(bytes, len < 3 ? len : 3) | (uint64_t)(len < 3 ? len : 3) << 24;

	return (size_t)((k * 0x9e3779b97f4a7c15ull) >> (64 - HINT_BITS));
}

/* The memo's decode of bytes (len of them) at addr, or NULL. */
static const struct memo_ent *memo_get(const struct cfg_dec *dec, const uint8_t *bytes,
				       size_t len)
{
	const struct memo_ent *e;
	size_t n;

	if (!dec->memo || !len)
		return NULL;
	n = dec->hint[hint_slot(bytes, len)];
	if (!n || n > len)
		return NULL;
	e = &dec->memo[memo_slot(bytes, n)];
	if (e->len != n || memcmp(e->bytes, bytes, n))
		return NULL;
	return e;
}

static int memo_alloc(struct cfg_dec *dec)
{
	if (dec->memo)
		return 0;
	if (dec->memo_failed)
		return -ENOMEM;
	dec->memo = calloc((size_t)1 << MEMO_BITS, sizeof(*dec->memo));
	dec->hint = calloc((size_t)1 << HINT_BITS, 1);
	if (!dec->memo || !dec->hint) {
		free(dec->memo);
		free(dec->hint);
		dec->memo = NULL;
		dec->hint = NULL;
		dec->memo_failed = 1;	/* decoded by capstone, no worse */
		return -ENOMEM;
	}
	return 0;
}

int cfg_dec_share_memo(struct cfg_dec *dec, struct cfg_dec *from)
{
	if (dec->memo || memo_alloc(from) < 0)
		return dec->memo ? 0 : -ENOMEM;
	dec->memo = from->memo;
	dec->hint = from->hint;
	dec->memo_shared = 1;
	return 0;
}

/* Keep a decode whose fields do not depend on its address. */
static void memo_put(struct cfg_dec *dec, const uint8_t *bytes, size_t len,
		     const struct cfg_insn *insn)
{
	struct memo_ent *e;

	if (!dec->memo && (dec->decodes < MEMO_AFTER || memo_alloc(dec) < 0))
		return;
	if ((insn->flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_INVALID)) ||
	    (insn->nmem && insn->mem.rip_relative) || insn->target || rel_target_id(insn->id))
		return;
	dec->hint[hint_slot(bytes, len)] = insn->size;
	e = &dec->memo[memo_slot(bytes, insn->size)];
	e->len = insn->size;
	memcpy(e->bytes, bytes, insn->size);
	e->insn = *insn;
	e->insn.addr = 0;
}

static int dec_insn(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		    struct cfg_insn *insn)
{
	const uint8_t *p = bytes;
	size_t left = len, nm;
	uint64_t a = addr;
	cs_insn *ci = dec->ci;
	static const struct cfg_insn zero;
	const struct memo_ent *m;
	const struct mn_name *mn;
	unsigned groups;

	if ((m = memo_get(dec, bytes, len))) {
		*insn = m->insn;
		insn->addr = addr;
		cfg_dec_memo_hits++;
		return 0;
	}
	cfg_dec_calls++;
	dec->decodes++;
	*insn = zero;		/* not memset: that is a slow rep stos here */
	insn->addr = addr;
	if (!len || !cs_disasm_iter(dec->cs, &p, &left, &a, ci)) {
		insn->size = 1;
		insn->bytes[0] = len ? bytes[0] : 0;
		insn->flags = CFG_I_INVALID;
		insn->mnemonic = ".byte";
		return -EINVAL;
	}
	insn->size = ci->size;
	memcpy(insn->bytes, ci->bytes, ci->size);
	insn->id = ci->id;
	nm = strlen(ci->mnemonic);
	mn = mn_intern(ci->id, ci->mnemonic, nm);
	insn->mnemonic = mn->s;
	groups = group_mask(ci->detail);
	fill_operands(insn, ci);
	fill_regs(insn, ci, groups);
	fix_vector_store(insn, ci);
	fix_capstone_errata(insn, ci);
	fill_class(insn, ci, mn->traits, groups);
	fix_text_flags(insn, ci);
	check_zero_idiom(insn, ci, mn->traits);
	memo_put(dec, bytes, len, insn);
	return 0;
}

int cfg_decode_one(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn *insn)
{
	struct cfg_dec *dec;
	int rc;

	if (cfg_dec_open(&dec, NULL) < 0) {
		memset(insn, 0, sizeof(*insn));
		insn->addr = addr;
		insn->size = 1;
		insn->flags = CFG_I_INVALID;
		return -ENOMEM;
	}
	rc = cfg_dec_insn(dec, bytes, len, addr, insn);
	cfg_dec_close(dec);
	return rc;
}

/* cfg_decode and cfg_decode_skip: skipped NULL stops at the first
 * undecodable instruction (-EINVAL), else counts and steps past it. */
static int decode_run(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn **out,
		      size_t *n, size_t *skipped, struct dcpi_err *err)
{
	struct cfg_insn *v = NULL;
	size_t cnt = 0, cap = 0, off = 0;
	struct cfg_dec *dec;
	int rc;

	*out = NULL;
	*n = 0;
	if (skipped)
		*skipped = 0;
	rc = cfg_dec_open(&dec, err);
	if (rc < 0)
		return rc;
	while (off < len) {
		if (dcpi_grow((void **)&v, &cap, cnt + 1, sizeof(*v))) {
			free(v);
			cfg_dec_close(dec);
			return dcpi_errf(err, -ENOMEM, "decode: out of memory");
		}
		if (cfg_dec_insn(dec, bytes + off, len - off, addr + off, &v[cnt]) < 0) {
			if (!skipped) {
				rc = dcpi_errf(err, -EINVAL, "0x%llx: undecodable instruction",
					       (unsigned long long)(addr + off));
				break;
			}
			(*skipped)++;
			off++;
			continue;
		}
		off += v[cnt++].size;
	}
	cfg_dec_close(dec);
	*out = v;
	*n = cnt;
	return rc;
}

int cfg_decode_skip(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn **out,
		    size_t *n, size_t *skipped, struct dcpi_err *err)
{
	return decode_run(bytes, len, addr, out, n, skipped, err);
}

int cfg_decode(const uint8_t *bytes, size_t len, uint64_t addr, struct cfg_insn **out,
	       size_t *n, struct dcpi_err *err)
{
	return decode_run(bytes, len, addr, out, n, NULL, err);
}
