/*
 * bp_pred.c - the branch predictors bpsim simulates.
 *
 * BP_TAGE models a current core's predictor (Seznec and Michaud, "A case
 * for (partially) TAgged GEometric history length branch prediction",
 * JILP 2006; Seznec, "A 64-Kbytes ITTAGE indirect branch predictor", 2011):
 *
 *  - conditional branches: a base table of 16K 2-bit counters indexed by
 *    address, under 8 tagged tables of 2K entries (3-bit counter, 8-12 bit
 *    tag, 2-bit useful counter) indexed by the address hashed with the
 *    global history of conditional outcomes folded to the index width,
 *    over geometric lengths 5, 9, 16, 29, 52, 93, 167 and 300 branches, and
 *    16 bits of path history.  The longest matching table predicts (its
 *    alternate when the entry is new and weak and that has paid off); a
 *    misprediction allocates one entry in a longer table whose useful
 *    counter is 0, or ages those; useful counters halve every 256K
 *    branches.  About 34 KB.
 *  - indirect jumps and calls: a last-target BTB of 1K entries by address
 *    under 4 tagged tables of 256 entries (target, 10-bit tag, 2-bit
 *    confidence, useful bit) indexed by the address, the conditional
 *    history (4, 10, 24, 60 branches) and the last 1, 2, 4, 8 indirect
 *    targets (4 bits each).  About 14 KB with 48-bit targets.
 *
 * No loop predictor: 300 branches of history learn fixed trip counts up to
 * about that.  Returns are not simulated (a return stack predicts them),
 * like callgrind.
 *
 * BP_BIMODAL is callgrind's --branch-sim (valgrind 3.19,
 * cachegrind/cg_branchpred.c), reimplemented from its description: 16K
 * 2-bit counters indexed by 7 bits of global history above 7 bits of the
 * address, starting at 0 (strongly not taken), and a 512-entry table of
 * last targets indexed by the low 9 address bits.  bpsim with it counts the
 * same mispredicts as callgrind, which checks that bpsim sees the same
 * branches (docs/culprits.md, "Fig. 10").
 *
 * No libc: this file is linked into a valgrind tool as well as the tests.
 */
#include "bp_pred.h"

static const uint16_t tage_hlen[BP_NTAB] = { 5, 9, 16, 29, 52, 93, 167, 300 };
static const uint8_t tage_tagw[BP_NTAB] = { 8, 8, 9, 10, 11, 11, 12, 12 };
static const uint16_t ind_hlen[BP_NITAB] = { 4, 10, 24, 60 };
static const uint8_t ind_ntarg[BP_NITAB] = { 1, 2, 4, 8 };

#define ITAG_BITS 10
#define TARGET_BITS 48
#define U_DECAY_PERIOD (1u << 18)
#define IU_DECAY_PERIOD (1u << 16)

/* --- folded histories ------------------------------------------------------- */

static void fold_init(struct bp_fold *f, unsigned olen, unsigned clen)
{
	f->comp = 0;
	f->olen = (uint16_t)olen;
	f->clen = (uint16_t)clen;
	f->out = (uint16_t)(olen % clen);
}

/* hist[hpos] has just been pushed; hist[hpos + olen] leaves the window. */
static void fold_push(struct bp_fold *f, const uint8_t *hist, uint32_t hpos)
{
	f->comp = (f->comp << 1) | hist[hpos];
	f->comp ^= (uint32_t)hist[(hpos + f->olen) & (BP_HBUF - 1)] << f->out;
	f->comp ^= f->comp >> f->clen;
	f->comp &= (1u << f->clen) - 1;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* --- TAGE: conditional branches ---------------------------------------------- */

static void tage_init(struct bp_tage *t)
{
	for (unsigned i = 0; i < (1u << BP_BASE_LOG); i++)
		t->base[i] = 1;		/* weakly not taken */
	for (unsigned i = 0; i < BP_NTAB; i++) {
		t->hlen[i] = tage_hlen[i];
		t->tagw[i] = tage_tagw[i];
		fold_init(&t->fidx[i], t->hlen[i], BP_TAB_LOG);
		fold_init(&t->ftag1[i], t->hlen[i], t->tagw[i]);
		fold_init(&t->ftag2[i], t->hlen[i], t->tagw[i] - 1u);
	}
	for (unsigned i = 0; i < BP_NITAB; i++) {
		t->ihlen[i] = ind_hlen[i];
		t->intarg[i] = ind_ntarg[i];
		fold_init(&t->fiidx[i], t->ihlen[i], BP_ITAB_LOG);
		fold_init(&t->fitag[i], t->ihlen[i], ITAG_BITS);
	}
	t->rng = 0x9e3779b97f4a7c15ull;
}

static uint32_t path_mix(uint32_t phist, unsigned hlen, unsigned i)
{
	unsigned n = hlen < 16 ? hlen : 16;
	uint32_t ph = phist & ((1u << n) - 1);

	return (ph * (0x9e3779b1u + 2 * i)) >> (32 - BP_TAB_LOG);
}

static uint32_t tage_index(const struct bp_tage *t, uint64_t pc, unsigned i)
{
	uint32_t h = (uint32_t)(pc ^ (pc >> (BP_TAB_LOG - i)) ^ (pc >> (2 * BP_TAB_LOG)));

	return (h ^ t->fidx[i].comp ^ path_mix(t->phist, t->hlen[i], i)) &
	       ((1u << BP_TAB_LOG) - 1);
}

static uint16_t tage_tag(const struct bp_tage *t, uint64_t pc, unsigned i)
{
	uint32_t h = (uint32_t)(pc ^ (pc >> 7) ^ (pc >> 19));

	/* bit 15 marks an entry that was ever allocated */
	return (uint16_t)(((h ^ t->ftag1[i].comp ^ (t->ftag2[i].comp << 1)) &
			   ((1u << t->tagw[i]) - 1)) | 0x8000u);
}

static void ctr3_update(int8_t *c, int taken)
{
	if (taken && *c < 3)
		(*c)++;
	else if (!taken && *c > -4)
		(*c)--;
}

static void ctr2_update(uint8_t *c, int taken)
{
	if (taken && *c < 3)
		(*c)++;
	else if (!taken && *c > 0)
		(*c)--;
}

static void tage_push_history(struct bp_tage *t, uint64_t pc, int taken)
{
	t->hpos = (t->hpos - 1) & (BP_HBUF - 1);
	t->hist[t->hpos] = (uint8_t)(taken != 0);
	for (unsigned i = 0; i < BP_NTAB; i++) {
		fold_push(&t->fidx[i], t->hist, t->hpos);
		fold_push(&t->ftag1[i], t->hist, t->hpos);
		fold_push(&t->ftag2[i], t->hist, t->hpos);
	}
	for (unsigned i = 0; i < BP_NITAB; i++) {
		fold_push(&t->fiidx[i], t->hist, t->hpos);
		fold_push(&t->fitag[i], t->hist, t->hpos);
	}
	t->phist = (t->phist << 1) | (uint32_t)((pc ^ (pc >> 3)) & 1);
}

static void tage_allocate(struct bp_tage *t, int provider, const uint32_t *idx,
			  const uint16_t *tag, int taken)
{
	int start = provider + 1;

	/* skip the first candidate now and then, so that two branches fighting
	 * for one entry end up in different tables */
	if (start < BP_NTAB - 1 && (rng_next(&t->rng) & 3) == 0)
		start++;
	for (int j = start; j < BP_NTAB; j++) {
		struct bp_tentry *e = &t->tab[j][idx[j]];

		if (e->u == 0) {
			e->tag = tag[j];
			e->ctr = taken ? 0 : -1;
			return;
		}
	}
	for (int j = provider + 1; j < BP_NTAB; j++) {
		struct bp_tentry *e = &t->tab[j][idx[j]];

		if (e->u > 0)
			e->u--;
	}
}

static void tage_decay(struct bp_tage *t)
{
	for (unsigned i = 0; i < BP_NTAB; i++)
		for (unsigned k = 0; k < (1u << BP_TAB_LOG); k++)
			t->tab[i][k].u >>= 1;
}

/* Of n tagged tables, the provider (the longest history that hits) and
 * the alternate (the next longest that hits); -1 where there is none. */
static void tage_hits(const int *hit, int n, int *provider, int *alt)
{
	*provider = *alt = -1;
	for (int i = n - 1; i >= 0; i--) {
		if (!hit[i])
			continue;
		if (*provider < 0) {
			*provider = i;
		} else {
			*alt = i;
			break;
		}
	}
}

static int tage_cond(struct bp_tage *t, uint64_t pc, int taken)
{
	uint32_t idx[BP_NTAB];
	uint16_t tag[BP_NTAB];
	int hit[BP_NTAB];
	uint32_t bidx = (uint32_t)(pc & ((1u << BP_BASE_LOG) - 1));
	int provider, alt, pred, alt_pred, prov_pred = 0, weak_new = 0;
	struct bp_tentry *e = 0;

	taken = taken != 0;
	for (int i = BP_NTAB - 1; i >= 0; i--) {
		idx[i] = tage_index(t, pc, (unsigned)i);
		tag[i] = tage_tag(t, pc, (unsigned)i);
		hit[i] = t->tab[i][idx[i]].tag == tag[i];
	}
	tage_hits(hit, BP_NTAB, &provider, &alt);
	alt_pred = alt >= 0 ? t->tab[alt][idx[alt]].ctr >= 0 : t->base[bidx] >= 2;
	pred = alt_pred;
	if (provider >= 0) {
		e = &t->tab[provider][idx[provider]];
		prov_pred = e->ctr >= 0;
		weak_new = (e->ctr == 0 || e->ctr == -1) && e->u == 0;
		pred = weak_new && t->use_alt >= 0 ? alt_pred : prov_pred;
		if (weak_new && prov_pred != alt_pred) {
			if (alt_pred == taken && t->use_alt < 7)
				t->use_alt++;
			else if (alt_pred != taken && t->use_alt > -8)
				t->use_alt--;
		}
	}

	if (pred != taken && provider < BP_NTAB - 1)
		tage_allocate(t, provider, idx, tag, taken);
	if (provider >= 0) {
		ctr3_update(&e->ctr, taken);
		if (e->u == 0) {
			if (alt >= 0)
				ctr3_update(&t->tab[alt][idx[alt]].ctr, taken);
			else
				ctr2_update(&t->base[bidx], taken);
		}
		if (prov_pred != alt_pred) {
			if (prov_pred == taken && e->u < 3)
				e->u++;
			else if (prov_pred != taken && e->u > 0)
				e->u--;
		}
	} else {
		ctr2_update(&t->base[bidx], taken);
	}
	if (++t->nbranch % U_DECAY_PERIOD == 0)
		tage_decay(t);
	tage_push_history(t, pc, taken);
	return pred != taken;
}

/* --- ITTAGE-like: indirect jumps and calls ------------------------------------ */

static uint32_t thist_mix(uint64_t thist, unsigned ntarg, unsigned shift)
{
	uint64_t h = ntarg >= 16 ? thist : thist & ((1ull << (4 * ntarg)) - 1);

	return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> shift);
}

static uint32_t ind_index(const struct bp_tage *t, uint64_t pc, unsigned i)
{
	uint32_t h = (uint32_t)(pc ^ (pc >> BP_ITAB_LOG) ^ (pc >> (2 * BP_ITAB_LOG)));

	h ^= t->fiidx[i].comp ^ thist_mix(t->thist, t->intarg[i], 64 - BP_ITAB_LOG);
	return h & ((1u << BP_ITAB_LOG) - 1);
}

static uint16_t ind_tag(const struct bp_tage *t, uint64_t pc, unsigned i)
{
	uint32_t h = (uint32_t)((pc >> 3) ^ (pc << 2) ^ (pc >> 13));

	h ^= t->fitag[i].comp ^ thist_mix(t->thist, t->intarg[i], 64 - BP_ITAB_LOG - ITAG_BITS);
	return (uint16_t)(h & ((1u << ITAG_BITS) - 1));
}

static int tage_ind(struct bp_tage *t, uint64_t pc, uint64_t target)
{
	uint32_t idx[BP_NITAB];
	uint16_t tag[BP_NITAB];
	int hit[BP_NITAB];
	uint64_t *btb = &t->btb[pc & ((1u << BP_BTB_LOG) - 1)];
	uint64_t pred, alt_target;
	int provider, alt;

	for (int i = 0; i < BP_NITAB; i++) {
		idx[i] = ind_index(t, pc, (unsigned)i);
		tag[i] = ind_tag(t, pc, (unsigned)i);
		hit[i] = t->itab[i][idx[i]].tag == tag[i] && t->itab[i][idx[i]].target;
	}
	tage_hits(hit, BP_NITAB, &provider, &alt);
	alt_target = alt >= 0 ? t->itab[alt][idx[alt]].target : *btb;
	pred = alt_target;
	if (provider >= 0) {
		struct bp_ientry *e = &t->itab[provider][idx[provider]];
		int prov_ok = e->target == target;

		if (e->conf > 0 || e->target == alt_target)
			pred = e->target;
		if (prov_ok != (alt_target == target))
			e->u = (uint8_t)prov_ok;
		if (prov_ok) {
			if (e->conf < 3)
				e->conf++;
		} else if (e->conf > 0) {
			e->conf--;
		} else {
			e->target = target;
		}
	}
	if (pred != target && provider < BP_NITAB - 1) {
		int done = 0;

		for (int j = provider + 1; j < BP_NITAB && !done; j++) {
			struct bp_ientry *n = &t->itab[j][idx[j]];

			if (n->u == 0) {
				n->tag = tag[j];
				n->target = target;
				n->conf = 0;
				done = 1;
			}
		}
		for (int j = provider + 1; j < BP_NITAB && !done; j++)
			t->itab[j][idx[j]].u = 0;
	}
	*btb = target;
	if (++t->nind % IU_DECAY_PERIOD == 0)
		for (unsigned i = 0; i < BP_NITAB; i++)
			for (unsigned k = 0; k < (1u << BP_ITAB_LOG); k++)
				t->itab[i][k].u = 0;
	t->thist = (t->thist << 4) ^ ((target ^ (target >> 4) ^ (target >> 9)) & 0xf);
	return pred != target;
}

/* --- callgrind's predictor ----------------------------------------------------- */

static int cg_cond(struct bp_cg *c, uint64_t pc, int taken)
{
	const uint64_t hmask = (1u << BP_CG_HIST_BITS) - 1, amask = (1u << BP_CG_IADD_BITS) - 1;
	uint64_t idx = ((c->shift & hmask) << BP_CG_IADD_BITS) | (pc & amask);
	int pred = c->counters[idx] >= 2;

	taken = taken != 0;
	c->shift = (c->shift << 1) | (uint64_t)taken;
	ctr2_update(&c->counters[idx], taken);
	return pred != taken;
}

static int cg_ind(struct bp_cg *c, uint64_t pc, uint64_t target)
{
	uint64_t *slot = &c->btac[pc & ((1u << BP_CG_BTAC_BITS) - 1)];
	int miss = *slot != target;

	*slot = target;
	return miss;
}

/* --- the interface ------------------------------------------------------------- */

int bp_pred_init(struct bp_pred *p, enum bp_kind kind)
{
	p->kind = kind;
	switch (kind) {
	case BP_TAGE:
		tage_init(&p->u.t);
		return 0;
	case BP_BIMODAL:
		return 0;	/* zeroed counters and targets, as callgrind's statics */
	}
	return -1;
}

int bp_cond(struct bp_pred *p, uint64_t pc, int taken)
{
	return p->kind == BP_TAGE ? tage_cond(&p->u.t, pc, taken) : cg_cond(&p->u.cg, pc, taken);
}

int bp_ind(struct bp_pred *p, uint64_t pc, uint64_t target)
{
	return p->kind == BP_TAGE ? tage_ind(&p->u.t, pc, target) : cg_ind(&p->u.cg, pc, target);
}

uint64_t bp_pred_bits(const struct bp_pred *p)
{
	uint64_t bits = 0;

	if (p->kind == BP_BIMODAL)
		return (2ull << (BP_CG_HIST_BITS + BP_CG_IADD_BITS)) +
		       ((uint64_t)TARGET_BITS << BP_CG_BTAC_BITS);
	bits += 2ull << BP_BASE_LOG;
	for (unsigned i = 0; i < BP_NTAB; i++)
		bits += (uint64_t)(3 + 2 + tage_tagw[i]) << BP_TAB_LOG;
	bits += (uint64_t)TARGET_BITS << BP_BTB_LOG;
	bits += (uint64_t)BP_NITAB * ((uint64_t)(TARGET_BITS + ITAG_BITS + 2 + 1) << BP_ITAB_LOG);
	return bits;
}

const char *bp_kind_name(enum bp_kind kind)
{
	return kind == BP_TAGE ? "tage" : kind == BP_BIMODAL ? "bimodal" : "?";
}

static int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

int bp_kind_parse(const char *s)
{
	if (str_eq(s, "tage"))
		return BP_TAGE;
	if (str_eq(s, "bimodal"))
		return BP_BIMODAL;
	return -1;
}
