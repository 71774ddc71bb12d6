/*
 * culprit/model/classify.c - map a decoded instruction (struct cfg_insn) to the
 * instruction-class row of a pipeline model (DCPI paper sec. 6.1.3: the
 * model needs each instruction's latency and functional units).
 *
 * A row matches on the mnemonic (exact, exact plus one AT&T size suffix
 * b/w/l/q, or a prefix pattern ending in '*'), the operand form, the vector
 * width and traits (MODEL_T_*) computed here once per instruction.  Rows are
 * tried in table order; when none matches, the model's conservative fallback
 * row is used and the caller counts the instruction as an unknown form.
 */
#include <string.h>

#include "dcpi/model.h"

static int is_size_suffix(char c)
{
	return c == 'b' || c == 'w' || c == 'l' || c == 'q';
}

/*
 * Does mnemonic mn match pattern pat ("add", "cmov*", "*mov*", "*")?  A leading
 * '*' with more after it ("*mov*") matches anywhere in the mnemonic: before, it
 * was read as a literal prefix and such rows matched nothing, so SSE and AVX
 * loads (movdqa, vmovups) fell to the unknown-form class.
 */
static int match_mnemonic(const char *pat, const char *mn)
{
	size_t n = strlen(pat), m = strlen(mn);
	char mid[24];

	if (n > 2 && pat[0] == '*' && pat[n - 1] == '*' && n - 2 < sizeof(mid)) {
		memcpy(mid, pat + 1, n - 2);
		mid[n - 2] = 0;
		return strstr(mn, mid) != NULL;
	}
	if (n && pat[n - 1] == '*')
		return !strncmp(pat, mn, n - 1);
	if (!strcmp(pat, mn))
		return 1;
	return m == n + 1 && !strncmp(pat, mn, n) && is_size_suffix(mn[n]);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Integer operand size from the AT&T suffix ("imulq", "movzbl": l). */
static uint32_t size_traits(const struct cfg_insn *insn)
{
	size_t n = strlen(insn->mnemonic);

	if (!n || (insn->flags & (CFG_I_FP | CFG_I_VECTOR | CFG_I_BRANCH | CFG_I_CALL |
				  CFG_I_RET)))
		return 0;
	switch (insn->mnemonic[n - 1]) {
	case 'q':
		return MODEL_T_Q;
	case 'l':
		return MODEL_T_L;
	case 'w':
		return MODEL_T_W;
	case 'b':
		return MODEL_T_B;
	default:
		return 0;
	}
}

static uint32_t lea_traits(const struct cfg_insn *insn)
{
	const struct cfg_mem *a = &insn->mem;
	uint32_t t = 0;
	int base = a->base != CFG_REG_NONE, index = a->index != CFG_REG_NONE;

	if (!(insn->flags & CFG_I_LEA) || !insn->nmem)
		return 0;
	if (base && index)
		t |= MODEL_T_LEAIDX;
	if (base && index && a->disp)
		t |= MODEL_T_LEA3;
	if (index && a->scale > 1)
		t |= MODEL_T_LEASC;
	return t;
}

uint32_t model_traits(const struct cfg_insn *insn)
{
	uint32_t t = size_traits(insn) | lea_traits(insn);
	int imm = !!(insn->flags & CFG_I_IMM);

	if (imm)
		t |= MODEL_T_IMM;
	if (insn->form == CFG_F_REG && !imm && !insn->nmem)
		t |= MODEL_T_REGMOV;	/* only meaningful on mov rows */
	if (insn->flags & CFG_I_FP)
		t |= MODEL_T_FP;
	if (insn->flags & CFG_I_VECTOR) {
		t |= MODEL_T_VEC;
		if (!ends_with(insn->mnemonic, "ss") && !ends_with(insn->mnemonic, "sd"))
			t |= MODEL_T_PACKED;
	}
	if (insn->flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET))
		t |= MODEL_T_BRANCH;
	if (insn->flags & CFG_I_NOP)
		t |= MODEL_T_NOP;
	if (insn->flags & CFG_I_ZERO_IDIOM)
		t |= MODEL_T_ZERO;
	if (insn->flags & CFG_I_CL)
		t |= MODEL_T_CL;
	if (!strncmp(insn->mnemonic, "lock ", 5) ||
	    (!strncmp(insn->mnemonic, "xchg", 4) && insn->nmem))
		t |= MODEL_T_LOCK;
	if (insn->size >= 8)
		t |= MODEL_T_LONG;
	if (((!strncmp(insn->mnemonic, "mul", 3) && insn->mnemonic[3] != 'x') ||
	     !strncmp(insn->mnemonic, "imul", 4)) &&
	    (insn->regs_written & CFG_RBIT(CFG_R_RAX)) && (insn->regs_written & CFG_RBIT(CFG_R_RDX)))
		t |= MODEL_T_WIDE;
	return t;
}

static int match_row(const struct model_class *c, const struct cfg_insn *insn, uint32_t t)
{
	if (c->forms && !(c->forms & MODEL_FORM(insn->form)))
		return 0;
	if (insn->vec_bits < c->min_vec || insn->vec_bits > c->max_vec)
		return 0;
	if ((t & c->need) != c->need || (t & c->avoid))
		return 0;
	return match_mnemonic(c->pattern, insn->mnemonic);
}

const struct model_class *model_classify(const struct model *m, const struct cfg_insn *insn,
					 int *known)
{
	uint32_t t = model_traits(insn);

	for (size_t i = 0; i < m->nclasses; i++) {
		if (match_row(&m->classes[i], insn, t)) {
			if (known)
				*known = 1;
			return &m->classes[i];
		}
	}
	if (known)
		*known = 0;
	return m->fallback;
}
