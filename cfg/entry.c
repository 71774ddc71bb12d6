/*
 * cfg/entry.c - the instructions at a procedure's entry that a 5-byte jump
 * may displace: the path runtime counts a procedure's calls by writing
 * `jmp rel32` to a trampoline over them (collect/pathrt.c; docs/paths.md,
 * "Calls counted at the entry"), and the trampoline runs them before it
 * jumps back to the first byte after them.  The plan hands them to the
 * runtime as entry=HEX (include/dcpi/values.h); this is the vetting.
 *
 * Safe to move and run elsewhere, once per call, means:
 *   - whole instructions of the entry block, at least 5 bytes, at most 15;
 *   - none a control transfer (they run at another address), a trap, a
 *     system call, or undecodable;
 *   - none reads rip (a rip-relative operand would read elsewhere) or the
 *     flags (the trampoline's increment writes them; at an entry they are
 *     dead by the ABI, which is why only entries are patched);
 *   - no edge of the procedure enters the entry block, and no branch of it
 *     targets the displaced bytes (a loop back to the
 *     entry would count its iterations as calls, and one into the displaced
 *     bytes would land in the jump); where an indirect jump is unresolved,
 *     only a prologue's instructions (push, mov between registers, sub
 *     from rsp, endbr64), which no switch case starts with.
 * Another procedure jumping into the displaced bytes cannot be seen from
 * this one; the plan also refuses an entry whose bytes hold another
 * symbol's address (report/plan.c).
 *
 * cfg_block_displaced vets a block inside a loop the same way for the
 * plan's block lines (docs/estimate.md, "Loops counted"), where no ABI
 * says the flags are dead: the block must set them again before reading
 * them, and its last instruction may be a jcc the trampoline re-issues.
 */
#include <string.h>

#include "dcpi/cfg.h"

#define ENTRY_JMP 5

/* An instruction of a prologue: it saves a register (push), copies one
 * (mov between registers), opens the frame (sub from rsp), or marks the
 * entry (endbr64).  No switch case or computed goto's label is one of
 * these at a procedure's first bytes, so an unresolved indirect jump of the
 * procedure does not land among them. */
static int prologue(const struct cfg_insn *in)
{
	const char *m = in->mnemonic;

	if (!strncmp(m, "push", 4) || !strcmp(m, "endbr64"))
		return 1;
	if (!strncmp(m, "mov", 3) && in->form == CFG_F_REG && !(in->flags & CFG_I_IMM))
		return 1;
	return !strncmp(m, "sub", 3) && (in->flags & CFG_I_IMM) &&
	       in->regs_written == (CFG_RBIT(CFG_R_RSP) | CFG_RBIT(CFG_R_FLAGS));
}

size_t cfg_entry_displaced(const struct cfg *cfg, uint8_t bytes[CFG_ENTRY_MAX])
{
	const uint32_t bad = CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET | CFG_I_INDIRECT |
			     CFG_I_TRAP | CFG_I_SYSCALL | CFG_I_INVALID;
	const uint64_t reads = CFG_RBIT(CFG_R_RIP) | CFG_RBIT(CFG_R_FLAGS);
	const struct cfg_block *eb;
	size_t len = 0;

	if (!cfg || cfg->entry >= cfg->nblocks)
		return 0;
	eb = &cfg->blocks[cfg->entry];
	if (eb->start != cfg->start || (eb->flags & CFG_B_EXIT))
		return 0;
	for (uint32_t k = 0; k < eb->npred; k++)
		if (cfg->edges[eb->pred[k]].kind != CFG_E_EXIT_ENTRY)
			return 0;
	for (uint32_t i = eb->first; i < eb->first + eb->n && len < ENTRY_JMP; i++) {
		const struct cfg_insn *in = &cfg->insns[i];

		if ((in->flags & bad) || (in->regs_read & reads) ||
		    ((in->nmem || (in->flags & CFG_I_LEA)) && in->mem.rip_relative) ||
		    in->addr != cfg->start + len || len + in->size > CFG_ENTRY_MAX ||
		    (cfg->missing_edges && !prologue(in)))
			return 0;
		memcpy(bytes + len, in->bytes, in->size);
		len += in->size;
	}
	if (len < ENTRY_JMP)
		return 0;
	for (size_t i = 0; i < cfg->ninsns; i++)	/* a jump into the displaced bytes */
		if (cfg->insns[i].target > cfg->start && cfg->insns[i].target - cfg->start < len)
			return 0;
	return len;
}

/* Is mnemonic m the operation w, with or without its size suffix? */
static int is_op(const char *m, const char *w)
{
	size_t n = strlen(w);

	return !strncmp(m, w, n) && (!m[n] || (strchr("bwlq", m[n]) && !m[n + 1]));
}

/* Does the instruction write every status flag without reading them, so
 * that what they held before is dead?  add, sub, cmp, test, and, or, xor,
 * neg set them all from their operands; mul, imul, popcnt, lzcnt and tzcnt
 * set some and leave the rest undefined, and so do shifts by an immediate
 * count that is not 0 once masked (the SDM and the AMD manual, vol. 3).
 * inc and dec keep CF, shifts by %cl may count 0 and keep them all: not
 * these. */
static int sets_flags(const struct cfg_insn *in)
{
	static const char *const w[] = { "add", "sub", "cmp", "test", "and", "or", "xor", "neg",
					 "mul", "imul", "popcnt", "lzcnt", "tzcnt" };
	static const char *const shifts[] = { "shl", "shr", "sar", "sal" };
	const char *m = in->mnemonic;

	if (!(in->regs_written & CFG_RBIT(CFG_R_FLAGS)) || (in->regs_read & CFG_RBIT(CFG_R_FLAGS)))
		return 0;
	for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++)
		if (is_op(m, w[k]))
			return 1;
	for (size_t k = 0; k < sizeof(shifts) / sizeof(shifts[0]); k++)
		if (is_op(m, shifts[k]) && (in->flags & CFG_I_IMM) &&
		    (in->imm & (m[strlen(m) - 1] == 'q' ? 0x3f : 0x1f)))
			return 1;
	return 0;
}

/* A jcc of its short or near form (not jrcxz or loop, which have no near
 * form): its length, 2 or 6; 0 otherwise. */
static size_t jcc_form(const struct cfg_insn *in)
{
	if ((in->flags & (CFG_I_BRANCH | CFG_I_COND | CFG_I_INDIRECT)) !=
	    (CFG_I_BRANCH | CFG_I_COND) || !in->target)
		return 0;
	if (in->size == 2 && (in->bytes[0] & 0xf0) == 0x70)
		return 2;
	if (in->size == 6 && in->bytes[0] == 0x0f && (in->bytes[1] & 0xf0) == 0x80)
		return 6;
	return 0;
}

size_t cfg_block_displaced(const struct cfg *cfg, uint32_t b, uint8_t bytes[CFG_ENTRY_MAX],
			   size_t *branch)
{
	const uint32_t bad = CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET | CFG_I_INDIRECT |
			     CFG_I_TRAP | CFG_I_SYSCALL | CFG_I_INVALID;
	const uint64_t fl = CFG_RBIT(CFG_R_FLAGS);
	const struct cfg_block *bl;
	size_t len = 0;
	uint32_t i;

	if (branch)
		*branch = 0;
	if (!cfg || !branch || b >= cfg->nblocks || b == cfg->entry || cfg->missing_edges)
		return 0;
	bl = &cfg->blocks[b];
	if (!bl->n || (bl->flags & CFG_B_EXIT))
		return 0;
	for (i = bl->first; i < bl->first + bl->n && len < ENTRY_JMP; i++) {
		const struct cfg_insn *in = &cfg->insns[i];
		size_t j = i + 1 == bl->first + bl->n ? jcc_form(in) : 0;

		if (j && len + j <= CFG_ENTRY_MAX && len <= CFG_BRANCH_BEFORE_MAX &&
		    in->addr == bl->start + len) {
			/* the block's last: the trampoline branches to its target */
			memcpy(bytes + len, in->bytes, in->size);
			len += in->size;
			*branch = j;
			break;
		}
		if ((in->flags & bad) || (in->regs_read & CFG_RBIT(CFG_R_RIP)) ||
		    ((in->nmem || (in->flags & CFG_I_LEA)) && in->mem.rip_relative) ||
		    in->addr != bl->start + len || len + in->size > CFG_ENTRY_MAX)
			return 0;
		memcpy(bytes + len, in->bytes, in->size);
		len += in->size;
	}
	if (len < ENTRY_JMP)
		return 0;
	/* the flags the increment clobbers: dead, that is, set again before
	 * anything of the block reads them (the first to touch them sets them),
	 * or a call comes first (no caller keeps flags across one) */
	for (i = bl->first; i < bl->first + bl->n; i++) {
		const struct cfg_insn *in = &cfg->insns[i];

		if (((in->regs_read | in->regs_written) & fl) || (in->flags & CFG_I_CALL))
			break;
	}
	if (i == bl->first + bl->n ||
	    (!(cfg->insns[i].flags & CFG_I_CALL) && !sets_flags(&cfg->insns[i])))
		return 0;
	for (size_t k = 0; k < cfg->ninsns; k++)	/* a jump into the displaced bytes */
		if (cfg->insns[k].target > bl->start && cfg->insns[k].target - bl->start < len)
			return 0;
	return len;
}
