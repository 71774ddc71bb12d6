/*
 * tests/cfg_digest.h - a 64-bit digest of one procedure's CFG: every decoded
 * instruction (fields and text), every block (bounds, flags, class, loop),
 * every edge (ends, kind, class), loops and data ranges.  Two builds of the
 * same bytes that agree on the digest agree on everything downstream reads.
 * tests/test_cfg_golden.c holds cfg/ to digests taken before the decoder was
 * made faster (tests/golden/); bench/cfg_all.c prints one over a whole image.
 * Header-only, FNV-1a.
 */
#ifndef DCPI_CFG_DIGEST_H
#define DCPI_CFG_DIGEST_H

#include <stdint.h>
#include <string.h>

#include "dcpi/cfg.h"

static inline uint64_t dg_mix(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		h = (h ^ (v & 0xff)) * 1099511628211ull;
	return h;
}

static inline uint64_t dg_str(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

static inline uint64_t dg_insn(uint64_t h, const struct cfg_insn *in, uint64_t base)
{
	char text[CFG_TEXT_MAX];

	h = dg_mix(h, in->addr - base);
	h = dg_mix(h, in->size | (uint64_t)in->id << 8 | (uint64_t)in->form << 24 |
		   (uint64_t)in->vec_bits << 32 | (uint64_t)in->nmem << 48);
	h = dg_mix(h, in->flags & ~(uint32_t)(CFG_I_IMM | CFG_I_CL | CFG_I_PARTIAL));	/* as before them */
	h = dg_mix(h, in->regs_read);
	h = dg_mix(h, in->regs_written);
	h = dg_mix(h, in->imm);
	h = dg_mix(h, in->target);
	if (in->nmem)
		h = dg_mix(dg_mix(h, in->mem.base | in->mem.index << 8 |
				  (uint64_t)in->mem.scale << 16 | (uint64_t)in->mem.size << 24 |
				  (uint64_t)in->mem.segment << 32 |
				  (uint64_t)in->mem.rip_relative << 40), (uint64_t)in->mem.disp);
	h = dg_str(h, in->mnemonic);
	return dg_str(h, cfg_insn_text(in, text, sizeof(text)));
}

static inline uint64_t cfg_digest(const struct cfg *cfg)
{
	uint64_t h = 1469598103934665603ull, s = cfg->start;

	h = dg_mix(h, cfg->end - s);
	h = dg_mix(h, cfg->ninsns);
	for (size_t i = 0; i < cfg->ninsns; i++)
		h = dg_insn(h, &cfg->insns[i], s);
	h = dg_mix(h, cfg->nblocks | (uint64_t)cfg->entry << 32);
	for (size_t i = 0; i < cfg->nblocks; i++) {
		const struct cfg_block *b = &cfg->blocks[i];

		h = dg_mix(h, b->start - s);
		h = dg_mix(h, b->end - s);
		h = dg_mix(h, b->first | (uint64_t)b->n << 32);
		h = dg_mix(h, b->flags | (uint64_t)(uint32_t)b->cls << 32);
		h = dg_mix(h, (uint32_t)b->loop | (uint64_t)(uint32_t)b->loop_depth << 32);
		for (uint32_t k = 0; k < b->nsucc; k++)
			h = dg_mix(h, b->succ[k]);
		for (uint32_t k = 0; k < b->npred; k++)
			h = dg_mix(h, b->pred[k]);
	}
	h = dg_mix(h, cfg->nedges);
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];

		h = dg_mix(h, ed->from | (uint64_t)ed->to << 32);
		h = dg_mix(h, ed->kind | (uint64_t)(uint32_t)ed->cls << 32);
	}
	h = dg_mix(h, cfg->nloops | (uint64_t)(uint32_t)cfg->nclasses << 32);
	for (size_t l = 0; l < cfg->nloops; l++) {
		const struct cfg_loop *lp = &cfg->loops[l];

		h = dg_mix(h, lp->header | (uint64_t)(uint32_t)lp->parent << 32);
		h = dg_mix(h, (uint32_t)lp->depth | (uint64_t)lp->nblocks << 32);
		h = dg_mix(h, (uint64_t)lp->irreducible);
		for (uint32_t k = 0; k < lp->nblocks; k++)
			h = dg_mix(h, lp->blocks[k]);
	}
	for (size_t d = 0; d < cfg->ndata; d++)
		h = dg_str(dg_mix(dg_mix(h, cfg->data[d].start - s), cfg->data[d].end - s),
			   cfg->data[d].what);
	h = dg_mix(h, (uint64_t)cfg->missing_edges | (uint64_t)cfg->indirect_jumps << 8 |
		   (uint64_t)cfg->indirect_resolved << 36);
	for (size_t c = 0; c < cfg->ncallees; c++)
		h = dg_mix(h, cfg->callees[c]);
	return h;
}

/* Folded to 32 bits: what the golden files store. */
static inline uint32_t cfg_digest32(const struct cfg *cfg)
{
	uint64_t h = cfg_digest(cfg);

	return (uint32_t)(h ^ h >> 32);
}

#endif /* DCPI_CFG_DIGEST_H */
