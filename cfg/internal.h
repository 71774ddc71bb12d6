/*
 * cfg/internal.h - what the files of cfg/ share and nobody else sees: the
 * capstone decoder behind a handle (decode.c), padding recognition
 * (padding.c), jump-table recovery (jumptable.c) and the noreturn analysis
 * (noreturn.c), all used by the CFG builder (build.c).
 */
#ifndef DCPI_CFG_INTERNAL_H
#define DCPI_CFG_INTERNAL_H

#include "dcpi/cfg.h"

/* A capstone handle and its scratch instruction, one per build. */
struct cfg_dec;

int cfg_dec_open(struct cfg_dec **out, struct dcpi_err *err);
void cfg_dec_close(struct cfg_dec *dec);
/* Decode one instruction; -EINVAL (and CFG_I_INVALID, size 1) if it does not. */
int cfg_dec_insn(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		 struct cfg_insn *insn);

/*
 * A decode cache on the handle for the procedure at [start, start+len):
 * every decode made there with all the bytes to the procedure's end is kept
 * and given back (unchanged: the same struct cfg_insn) to later calls, so the
 * noreturn proof of a procedure and its own CFG (cfg_build_all) decode each
 * instruction once.  cfg_dec_cache replaces the previous cache; -ENOMEM.
 */
int cfg_dec_cache(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t start);
void cfg_dec_uncache(struct cfg_dec *dec);
/* ... and give its memory back. */
void cfg_dec_cache_release(struct cfg_dec *dec);
/* Bytes the handle's cache holds allocated. */
size_t cfg_dec_cache_bytes(const struct cfg_dec *dec);

/*
 * Capstone decodes on this thread (cache hits not counted), a debug counter: the CFG builder
 * decodes each byte of a procedure a small constant number of times at most,
 * and tests/test_cfg.c holds it to that.
 */
extern _Thread_local unsigned long cfg_dec_calls;
/*
 * Decodes the memo gave instead of capstone (see decode.c).  A handle gets a
 * memo of its own after its first MEMO_AFTER decodes; cfg_dec_share_memo
 * makes dec use from's (made now if need be) until both are closed, from
 * last: handles used one at a time (cfg_build_all's levels).  -ENOMEM.
 */
int cfg_dec_share_memo(struct cfg_dec *dec, struct cfg_dec *from);
extern _Thread_local unsigned long cfg_dec_memo_hits;
/* cfg_dec_insn calls on one handle, cache hits included: what the builder's
 * decode budget counts. */
unsigned long cfg_dec_count(const struct cfg_dec *dec);
void cfg_dec_count_set(struct cfg_dec *dec, unsigned long calls);
/* CFGs assembled by the builder on this thread: one per round of discovery
 * (jump tables resolved, gaps swept), one more when tail calls are found. */
extern _Thread_local unsigned long cfg_build_rounds;

/* Bytes of padding (nop forms, int3, zero bytes) at the start of bytes. */
size_t cfg_pad_len(struct cfg_dec *dec, const uint8_t *bytes, size_t len, uint64_t addr);

/*
 * The instructions executed before an indirect jump, newest first: the jump's
 * own block and then its single predecessors.  next[i] is the address that
 * executed right after path[i] (for a conditional branch: which way it went).
 */
struct cfg_jt_path {
	const struct cfg_insn **insn;
	uint64_t *next;
	size_t n;
	const struct cfg *cfg;		/* the whole procedure, for hoisted table bases */
};

/* A recovered jump table. */
struct cfg_jt {
	uint64_t table;			/* address of the first entry */
	unsigned entry_size;		/* 4 (relative to table) or 8 (absolute) */
	size_t count;
	uint64_t *targets;		/* count entries, malloc'd, in table order */
};

/*
 * Recover the table the jump at path->insn[0] goes through, bounded by the
 * guarding compare; entries must land in [lo, hi), the procedure, or in another
 * procedure of img (a .cold fragment: a tail call).  -ENOENT when the pattern
 * is not recognised (the caller marks the block unresolved), -ENOMEM.
 */
int cfg_jt_resolve(const struct image *img, const struct cfg_jt_path *path, uint64_t lo,
		   uint64_t hi, struct cfg_jt *jt);

/*
 * Does the jump at path->insn[0] read a table (the patterns above) whose first
 * entry lands in [lo, hi)?  Then it is a switch even if its bound was not
 * found, and not a tail call through a pointer.
 */
int cfg_jt_is_table(const struct image *img, const struct cfg_jt_path *path, uint64_t lo,
		    uint64_t hi);

/*
 * Stack-pointer offsets from the procedure entry (tailcall.c): sp and fp get
 * per block the offset of rsp (and of rbp, once set from rsp) at the block's
 * start; cfg_sp_before then gives the offset just before instruction si,
 * -ENOENT when unknown.  An indirect jump at offset 0 is a tail call.
 */
int cfg_sp_at_blocks(const struct cfg *cfg, int64_t *sp, int64_t *fp);
int cfg_sp_before(const struct cfg *cfg, const int64_t *sp, const int64_t *fp, uint32_t si,
		  int64_t *delta);

/*
 * Does the call target never return?  By name (cfg_noreturn_name on the
 * procedure at target, @plt stripped) or, when depth allows, by building the
 * callee's CFG and finding no reachable return or tail call.  Cached per
 * image and address.
 */
int cfg_noreturn_at(const struct image *img, uint64_t target, int depth);

/* The same, building with dec (and its cache) when not NULL. */
int cfg_noreturn_with(const struct image *img, uint64_t target, int depth,
		      struct cfg_dec *dec);
/*
 * The same for the procedure p at the target, looked up by the caller; *ph
 * holds the hash of img's path the cache is keyed by (0: not computed yet;
 * set then, so a caller asking many times hashes it once), and *named is set
 * when the answer is by name (what cfg_noreturn_at at depth 0 would say).
 */
int cfg_noreturn_proc(const struct image *img, const struct img_proc *p, int depth,
		      struct cfg_dec *dec, uint64_t *ph, int *named);
/*
 * Cache the answer cfg_noreturn_at(img, p->addr, 1) would compute, from cfg,
 * p's CFG built at depth 1 in which no call was ended by a noreturn proof
 * (then it is the same as at depth 0, which that answer is computed from).
 */
void cfg_noreturn_from(const struct image *img, const struct img_proc *p,
		       const struct cfg *cfg, uint64_t *ph);

/*
 * Whole-image mode (all.c): does a call to p, a procedure of the image,
 * never return (cfg_noreturn_proc at depth 1; *named likewise)?  First p is
 * built (its noreturn proof, then its CFG, handed to the caller's function)
 * unless done, under way, or too deep, so the answer comes from its cache;
 * then the answer is kept per procedure, for the image's other calls to p.
 */
struct cfg_all;
int cfg_all_noreturn(struct cfg_all *all, const struct img_proc *p, int *named);
/* The two scratch blocks (graph.h) the image's CFGs analyses share: one
 * analysis runs at a time, after the nested builds of its procedure. */
struct cfg_scratch *cfg_all_scratch(struct cfg_all *all);

/* The bytes cfg_build reads for proc (*len of them), NULL if not in the file. */
const uint8_t *cfg_proc_bytes(const struct image *img, const struct img_proc *proc,
			      size_t *len);

/*
 * cfg_build_depth with a decoder (NULL: its own) and a whole-image context.
 * *nr_proved (when not NULL) is set when a call ended a block because its
 * callee was proved never to return (not by name): only then can the CFG at
 * depth 0 differ from this one.
 */
int cfg_build_with(const struct image *img, const struct img_proc *proc, int depth,
		   int graph, struct cfg_dec *dec, struct cfg_all *all, int *nr_proved,
		   struct cfg **out, struct dcpi_err *err);

/* Internal form of cfg_build: depth limits the noreturn analysis of callees;
 * graph = 0 skips classes and loops (the noreturn analysis needs neither). */
int cfg_build_depth(const struct image *img, const struct img_proc *proc, int depth,
		    int graph, struct cfg **out, struct dcpi_err *err);

#endif /* DCPI_CFG_INTERNAL_H */
