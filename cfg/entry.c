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
 *   - no edge of the procedure enters the entry block (a loop back to the
 *     entry would count its iterations as calls, and one into the displaced
 *     bytes would land in the jump), and every indirect jump is resolved
 *     (an unresolved one might land there).
 * Another procedure jumping into the displaced bytes cannot be seen from
 * this one; the plan also refuses an entry whose bytes hold another
 * symbol's address (report/plan.c).
 */
#include <string.h>

#include "dcpi/cfg.h"

#define ENTRY_JMP 5

size_t cfg_entry_displaced(const struct cfg *cfg, uint8_t bytes[CFG_ENTRY_MAX])
{
	const uint32_t bad = CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET | CFG_I_INDIRECT |
			     CFG_I_TRAP | CFG_I_SYSCALL | CFG_I_INVALID;
	const uint64_t reads = CFG_RBIT(CFG_R_RIP) | CFG_RBIT(CFG_R_FLAGS);
	const struct cfg_block *eb;
	size_t len = 0;

	if (!cfg || cfg->missing_edges || cfg->entry >= cfg->nblocks)
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
		    in->addr != cfg->start + len || len + in->size > CFG_ENTRY_MAX)
			return 0;
		memcpy(bytes + len, in->bytes, in->size);
		len += in->size;
	}
	return len >= ENTRY_JMP ? len : 0;
}
