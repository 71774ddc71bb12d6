/*
 * bp_pred.h - the branch predictors simulated by bpsim (bp_main.c), kept
 * free of libc and of valgrind so that tests/test_bpsim.c can drive them
 * natively.  The caller provides the memory: sizeof(struct bp_pred) bytes,
 * zeroed, then bp_pred_init().  See bp_pred.c for what each one models.
 */
#ifndef BP_PRED_H
#define BP_PRED_H

#include <stdint.h>

enum bp_kind {
	BP_TAGE,	/* TAGE conditional + ITTAGE-like indirect (a modern core) */
	BP_BIMODAL,	/* callgrind's and cachegrind's --branch-sim, bit for bit */
};

/* --- TAGE geometry: 8 tagged tables over a bimodal base ---------------------- */
#define BP_BASE_LOG 14		/* 16K 2-bit counters */
#define BP_NTAB 8
#define BP_TAB_LOG 11		/* 2K entries per tagged table */
#define BP_HIST_MAX 300		/* longest global history (conditional outcomes) */
#define BP_HBUF 1024		/* circular history buffer, a power of 2 > BP_HIST_MAX */

/* --- indirect: a last-target BTB under 4 target-history tagged tables -------- */
#define BP_BTB_LOG 10
#define BP_NITAB 4
#define BP_ITAB_LOG 8

/* --- callgrind's predictor (valgrind cachegrind/cg_branchpred.c) ------------- */
#define BP_CG_HIST_BITS 7	/* counter index: 7 global-history bits : 7 address bits */
#define BP_CG_IADD_BITS 7
#define BP_CG_BTAC_BITS 9	/* last target by the low 9 address bits */

struct bp_fold {		/* a history of olen bits xor-folded to clen bits */
	uint32_t comp;
	uint16_t olen, clen, out;
};

struct bp_tentry {
	uint16_t tag;
	int8_t ctr;		/* 3-bit signed: -4..3, >= 0 predicts taken */
	uint8_t u;		/* 2-bit useful */
};

struct bp_ientry {
	uint64_t target;
	uint16_t tag;
	uint8_t conf;		/* 0..3 */
	uint8_t u;		/* 0..1 */
};

struct bp_tage {
	uint8_t base[1 << BP_BASE_LOG];			/* 0..3, >= 2 predicts taken */
	struct bp_tentry tab[BP_NTAB][1 << BP_TAB_LOG];
	struct bp_fold fidx[BP_NTAB], ftag1[BP_NTAB], ftag2[BP_NTAB];
	uint16_t hlen[BP_NTAB];
	uint8_t tagw[BP_NTAB];
	uint8_t hist[BP_HBUF];				/* hist[hpos] is the newest outcome */
	uint32_t hpos;
	uint32_t phist;					/* path: one address bit per branch */
	int8_t use_alt;					/* use the alternate on a new entry */
	uint64_t nbranch;				/* for the periodic useful-bit decay */
	uint64_t rng;

	uint64_t btb[1 << BP_BTB_LOG];
	struct bp_ientry itab[BP_NITAB][1 << BP_ITAB_LOG];
	struct bp_fold fiidx[BP_NITAB], fitag[BP_NITAB];
	uint16_t ihlen[BP_NITAB];
	uint8_t intarg[BP_NITAB];			/* how many past targets each sees */
	uint64_t thist;					/* 4 bits per indirect target */
	uint64_t nind;
};

struct bp_cg {
	uint8_t counters[1 << (BP_CG_HIST_BITS + BP_CG_IADD_BITS)];
	uint64_t shift;
	uint64_t btac[1 << BP_CG_BTAC_BITS];
};

struct bp_pred {
	enum bp_kind kind;
	union {
		struct bp_tage t;
		struct bp_cg cg;
	} u;
};

/* p zeroed by the caller; kind one of enum bp_kind.  Returns 0, or -1 for an unknown kind. */
int bp_pred_init(struct bp_pred *p, enum bp_kind kind);

/* Predict the conditional branch at pc, learn its outcome; 1 if it was mispredicted. */
int bp_cond(struct bp_pred *p, uint64_t pc, int taken);

/* Predict the target of the indirect jump or call at pc, learn it; 1 if mispredicted. */
int bp_ind(struct bp_pred *p, uint64_t pc, uint64_t target);

/* The state a hardware predictor of this kind would hold, in bits (targets as 48 bits). */
uint64_t bp_pred_bits(const struct bp_pred *p);

/* The kind's name ("tage", "bimodal"); bp_kind_parse: -1 when s names none. */
const char *bp_kind_name(enum bp_kind kind);
int bp_kind_parse(const char *s);

#endif
