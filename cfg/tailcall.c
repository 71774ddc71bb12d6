/*
 * cfg/tailcall.c - is an indirect jump that is not a recognised jump table a
 * tail call through a pointer?  (DCPI paper sec. 6.1.1 asks for every edge of
 * the CFG, or a mark that some are missing; a tail call has its edge: to the
 * exit node.)
 *
 * The heuristic, after BOLT's treatment of indirect branches: the jump is a
 * tail call when the stack pointer is back where it was at the procedure's
 * entry, so that the return address is on top of the stack and whatever runs
 * next returns to our caller:
 *
 *	popq %rbx; popq %rbp; jmpq *%rax	(epilogue, then a pointer)
 *	movq (%rdi),%rax; jmpq *0x18(%rax)	(leaf: a virtual call)
 *
 * and the target is not read from a table whose first entry lands inside the
 * procedure (a switch whose bound we could not find stays unresolved).  The
 * stack-pointer offset comes from a forward pass over the blocks: push, pop,
 * add/sub $N,%rsp, lea N(%rsp),%rsp, leave and mov %rbp,%rsp after a
 * `mov %rsp,%rbp`; calls leave it unchanged; anything else, or two paths that
 * disagree, make it unknown, and an unknown offset is never a tail call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SP_UNSET	INT64_MIN		/* block not reached yet */
#define SP_UNKNOWN	(INT64_MIN + 1)

#define RSP_BIT	CFG_RBIT(CFG_R_RSP)
#define RBP_BIT	CFG_RBIT(CFG_R_RBP)

/* Stack pointer and frame pointer, as offsets from the stack pointer at entry. */
struct sp_state {
	int64_t sp, fp;
};

static int known(int64_t v)
{
	return v != SP_UNSET && v != SP_UNKNOWN;
}

static int64_t plus(int64_t v, int64_t d)
{
	return known(v) ? v + d : SP_UNKNOWN;
}

static int is_imm_arith(const struct cfg_insn *in, const char *op)
{
	return !strncmp(in->mnemonic, op, 3) && !in->nmem && (in->flags & CFG_I_IMM);
}

/* The effect of one instruction on the stack and frame pointers. */
static void sp_step(const struct cfg_insn *in, struct sp_state *st)
{
	uint64_t w = in->regs_written & ~(CFG_RBIT(CFG_R_FLAGS) | CFG_RBIT(CFG_R_RIP));
	int lea = (in->flags & CFG_I_LEA) && in->mem.index == CFG_REG_NONE &&
		  !in->mem.rip_relative;

	if (in->flags & CFG_I_CALL)
		return;			/* the callee pops what the call pushed */
	if (w & RBP_BIT) {
		if (!strncmp(in->mnemonic, "pop", 3) && !strcmp(in->mnemonic + 3, "q"))
			st->fp = SP_UNKNOWN;	/* the caller's rbp: also moves rsp below */
		else if (!strncmp(in->mnemonic, "mov", 3) && !in->nmem &&
			 (in->regs_read & ~RSP_BIT) == 0 && (in->regs_read & RSP_BIT))
			st->fp = st->sp;		/* mov %rsp,%rbp */
		else if (lea && in->mem.base == CFG_R_RSP && w == RBP_BIT)
			st->fp = plus(st->sp, in->mem.disp);
		else if (!strcmp(in->mnemonic, "leave") || !strcmp(in->mnemonic, "leaveq"))
			;			/* below */
		else
			st->fp = SP_UNKNOWN;
	}
	if (!(w & RSP_BIT))
		return;
	if (!strncmp(in->mnemonic, "push", 4))
		st->sp = plus(st->sp, !strcmp(in->mnemonic, "pushw") ? -2 : -8);
	else if (!strncmp(in->mnemonic, "pop", 3))
		st->sp = plus(st->sp, !strcmp(in->mnemonic, "popw") ? 2 : 8);
	else if (!strcmp(in->mnemonic, "leave") || !strcmp(in->mnemonic, "leaveq")) {
		st->sp = plus(st->fp, 8);
		st->fp = SP_UNKNOWN;
	} else if (w == RSP_BIT && is_imm_arith(in, "sub"))
		st->sp = plus(st->sp, -(int64_t)in->imm);
	else if (w == RSP_BIT && is_imm_arith(in, "add"))
		st->sp = plus(st->sp, (int64_t)in->imm);
	else if (w == RSP_BIT && lea && in->mem.base == CFG_R_RSP)
		st->sp = plus(st->sp, in->mem.disp);
	else if (w == RSP_BIT && lea && in->mem.base == CFG_R_RBP)
		st->sp = plus(st->fp, in->mem.disp);
	else if (w == RSP_BIT && !strncmp(in->mnemonic, "mov", 3) && !in->nmem &&
		 in->regs_read == RBP_BIT)
		st->sp = st->fp;		/* mov %rbp,%rsp */
	else
		st->sp = SP_UNKNOWN;
}

static int merge(int64_t *into, int64_t v)
{
	if (*into == v || *into == SP_UNKNOWN)
		return 0;
	*into = *into == SP_UNSET ? v : SP_UNKNOWN;
	return 1;
}

int cfg_sp_at_blocks(const struct cfg *cfg, int64_t *sp, int64_t *fp)
{
	uint32_t *work = malloc(2 * cfg->nblocks * sizeof(*work) + sizeof(*work));
	uint8_t *queued = calloc(cfg->nblocks ? cfg->nblocks : 1, 1);
	size_t nw = 0;

	if (!work || !queued) {
		free(work);
		free(queued);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->nblocks; i++)
		sp[i] = fp[i] = SP_UNSET;
	if (cfg->entry != cfg->exit) {
		sp[cfg->entry] = 0;
		fp[cfg->entry] = SP_UNKNOWN;
		work[nw++] = cfg->entry;
		queued[cfg->entry] = 1;
	}
	/* each block changes at most twice (unset, value, unknown): terminates */
	while (nw) {
		uint32_t bi = work[--nw];
		const struct cfg_block *bl = &cfg->blocks[bi];
		struct sp_state st = { sp[bi], fp[bi] };

		queued[bi] = 0;
		for (uint32_t k = 0; k < bl->n; k++)
			sp_step(&cfg->insns[bl->first + k], &st);
		for (uint32_t k = 0; k < bl->nsucc; k++) {
			uint32_t t = cfg->edges[bl->succ[k]].to;
			int ch;

			if (t == cfg->exit)
				continue;
			ch = merge(&sp[t], st.sp);
			ch |= merge(&fp[t], st.fp);
			if (ch && !queued[t]) {
				queued[t] = 1;
				work[nw++] = t;
			}
		}
	}
	free(work);
	free(queued);
	return 0;
}

int cfg_sp_before(const struct cfg *cfg, const int64_t *sp, const int64_t *fp, uint32_t si,
		  int64_t *delta)
{
	int bi = cfg_block_at(cfg, cfg->insns[si].addr);
	struct sp_state st;

	if (bi < 0 || !known(sp[bi]))
		return -ENOENT;
	st = (struct sp_state){ sp[bi], fp[bi] };
	for (uint32_t k = cfg->blocks[bi].first; k < si; k++)
		sp_step(&cfg->insns[k], &st);
	if (!known(st.sp))
		return -ENOENT;
	*delta = st.sp;
	return 0;
}
