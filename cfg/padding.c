/*
 * cfg/padding.c - bytes between and at the end of procedures that are not
 * code: nop runs (every multi-byte nop form), int3 runs and zero bytes.  The
 * CFG builder marks them as data ranges, so every byte of a procedure is in
 * exactly one block or one range (docs/architecture.md, "Contracts") and a linear
 * sweep of leftover bytes does not mistake alignment for instructions.
 */
#include <string.h>

#include "internal.h"

size_t cfg_pad_len(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr)
{
	struct cfg_insn insn;
	size_t off = 0;

	while (off < len) {
		if (bytes[off] == 0x00 || bytes[off] == 0xcc) {
			off++;
			continue;
		}
		if (cfg_dec_insn(dec, bytes + off, len - off, addr + off, &insn) < 0)
			break;
		if (!(insn.flags & CFG_I_NOP) || !strncmp(insn.mnemonic, "endbr", 5))
			break;	/* endbr64 starts code, it is not filler */
		off += insn.size;
	}
	return off;
}
