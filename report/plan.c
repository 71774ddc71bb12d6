/*
 * report/plan.c - the marking plan (docs/values.md, "Marking plan"; the
 * format in include/dcpi/values.h): from one epoch's value and sample
 * profiles, the procedures where more value samples are worth their cost,
 * written as plan.txt into the epoch for `dcpi record --plan`:
 *   - args: an entry whose arguments were seen fewer times than the
 *     binomial needs for +-VAL_PLAN_POINTS at its top share
 *     (val_calls_needed, over the arguments the procedure takes, which
 *     the plan names for the runtime: args=MASK), or a hot one whose
 *     parameters DWARF lists and no burst saw at all (a burst sees an
 *     entry only when it starts just before the call);
 *   - load: a load's value list in the same state, in a procedure with at
 *     least REP_PLAN_HOT_LOAD of its image's samples;
 *   - hot: a procedure with at least REP_PLAN_HOT of its image's samples;
 *   - entry=HEX: calls counted at the entry (docs/paths.md, "Calls counted
 *     at the entry"), for every marked procedure and every other with at
 *     least REP_PLAN_COUNT of its image's samples whose entry a jump may
 *     displace (cfg_entry_displaced; and no other symbol starts inside
 *     the displaced bytes): the analysis' counts then have a measured
 *     scale (estimate/analyze.c);
 *   - block lines: the executions of blocks of marked procedures' loops
 *     that walk a chain (plan_loops), and of one class of each loop that
 *     holds REP_PLAN_DATA of the sampled data accesses (plan_data),
 *     counted the same way.
 * The binomial's need is taken at the adjusted share (val_share_adjusted).
 * Seed 001's focused sampling: spend the sampling budget where a question
 * is open, not where time happens to go.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/report.h"
#include "dcpi/safefile.h"
#include "dcpi/values.h"
#include "internal.h"

#define REP_PLAN_HOT 0.05
#define REP_PLAN_HOT_LOAD 0.02
#define REP_PLAN_COUNT 0.01
#define REP_PLAN_LOOP_CLASSES 4
#define REP_PLAN_DATA 0.01

enum { WHY_HOT = 1, WHY_ARGS = 2, WHY_LOAD = 4, WHY_COUNT = 8 };

struct pmark {
	size_t image;		/* index into the value profiles */
	const struct img_proc *p;
	uint64_t off, size;	/* the entry's file offset, the procedure's bytes */
	unsigned why;
	unsigned regs;		/* args: the argument registers it takes, bit r for rdi..r9 */
	size_t nentry;		/* entry=: the bytes a jump displaces, 0: not counted */
	uint8_t entry[CFG_ENTRY_MAX];
	char name[256];
};

/* A block whose executions are counted (count=): a block of a loop that
 * walks a chain (plan_loops). */
struct pcount {
	size_t image;
	uint64_t off;		/* the block's file offset */
	size_t n;
	uint8_t bytes[CFG_ENTRY_MAX];
	size_t branch;		/* a jcc ends the bytes: its length, 2 or 6 */
	char site[256];
};

/* A load whose value is an open question (its procedure is marked too). */
struct pload {
	size_t image;
	uint64_t off;
	char site[256];
};

struct pplan {
	struct pmark *m;
	size_t n, cap;
	struct pload *l;
	size_t nl, capl;
	struct pcount *k;
	size_t nk, capk;
};

/* The mark of procedure p of image i, added when new. */
static struct pmark *mark_of(struct pplan *pl, const struct rv_ctx *c, size_t i,
			     const struct img_proc *p)
{
	struct pmark *m;
	uint64_t lo, hi;

	for (size_t k = 0; k < pl->n; k++)
		if (pl->m[k].image == i && pl->m[k].p == p)
			return &pl->m[k];
	if (rv_proc_range(c, p, &lo, &hi) || !(m = dcpi_append((void **)&pl->m, &pl->n,
							      &pl->cap, sizeof(*m))))
		return NULL;
	memset(m, 0, sizeof(*m));
	m->image = i;
	m->p = p;
	m->off = lo;
	m->size = hi - lo;
	rv_place(c, lo, m->name, sizeof(m->name));
	return m;
}

static double adjusted(const struct val_hotlist *h)
{
	return val_share_adjusted(rv_top_share(h), h->seen);
}

/* Calls an entry's arguments still need: the most any argument the
 * procedure takes needs, less those seen; 0 when all are known well.
 * regs gets the registers it takes. */
static uint64_t args_open(const struct rv_ctx *c, const struct val_profile *vp, uint64_t off,
			  unsigned *regs)
{
	struct rv_args a;
	uint64_t open = 0;

	rv_args(c, off, &a);
	*regs = 0;
	for (int r = 0; r < 6; r++) {
		const struct val_hotlist *h = val_profile_find(vp, off, VAL_ARG0 + (uint32_t)r);
		uint64_t need;

		if (!rv_arg_label(&a, r, NULL, 0, NULL, 0))
			continue;
		*regs |= 1u << r;
		if (!h || !h->n)
			continue;
		need = val_calls_needed(adjusted(h), VAL_PLAN_POINTS);
		if (need > h->seen && need - h->seen > open)
			open = need - h->seen;
	}
	return open;
}

/* A hot procedure's entry at off whose parameters DWARF lists and whose
 * arguments no burst saw: 1, with the registers they take in *regs. */
static int args_unseen(const struct rv_ctx *c, const struct val_profile *vp, uint64_t off,
		       unsigned *regs)
{
	struct rv_args a;

	*regs = 0;
	for (int r = 0; r < 6; r++)
		if (val_profile_find(vp, off, VAL_ARG0 + (uint32_t)r))
			return 0;
	rv_args(c, off, &a);
	if (!a.dwarf || !a.n)
		return 0;
	for (int r = 0; r < 6; r++)
		if (rv_arg_label(&a, r, NULL, 0, NULL, 0))
			*regs |= 1u << r;
	return *regs != 0;
}

/* One image's marks. */
static int plan_image(struct rep_vals *v, size_t i, struct pplan *pl)
{
	const struct val_profile *vp = &v->vp[i];
	struct rv_ctx c;
	struct pmark *m;
	struct rv_time t;
	uint64_t lo, hi, va;

	rv_image_ctx(v, vp, &c);
	if (!c.img)
		return 0;	/* its code cannot be read: nothing to place */
	for (size_t k = 0; c.prof && c.prof->total && k < img_nprocs(c.img); k++) {
		const struct img_proc *p = img_proc(c.img, k);

		if (rv_proc_range(&c, p, &lo, &hi))
			continue;
		rv_time(&c, lo, hi, &t);
		if (t.samples >= REP_PLAN_COUNT * (double)c.prof->total) {
			unsigned regs;

			if (!(m = mark_of(pl, &c, i, p)))
				return -ENOMEM;
			m->why |= t.samples >= REP_PLAN_HOT * (double)c.prof->total ? WHY_HOT
										 : WHY_COUNT;
			if ((m->why & WHY_HOT) && args_unseen(&c, vp, lo, &regs)) {
				m->why |= WHY_ARGS;
				m->regs = regs;
			}
		}
	}
	for (size_t k = 0; k < vp->nlists; k++) {
		const struct val_hotlist *h = &vp->lists[k];
		const struct img_proc *p = rv_proc_at(&c, h->offset, &va);
		unsigned why = 0, regs = 0;

		if (!p)
			continue;
		if (h->kind == VAL_ARG0 && p->addr == va && args_open(&c, vp, h->offset, &regs))
			why = WHY_ARGS;
		if (h->kind == VAL_LOAD && h->n && c.prof && c.prof->total &&
		    h->seen < val_calls_needed(adjusted(h), VAL_PLAN_POINTS) &&
		    !rv_proc_range(&c, p, &lo, &hi)) {
			rv_time(&c, lo, hi, &t);
			if (t.samples >= REP_PLAN_HOT_LOAD * (double)c.prof->total)
				why = WHY_LOAD;
		}
		if (!why)
			continue;
		if (!(m = mark_of(pl, &c, i, p)))
			return -ENOMEM;
		m->why |= why;
		if (why == WHY_ARGS)
			m->regs = regs;
		if (why == WHY_LOAD) {
			struct pload *l = dcpi_append((void **)&pl->l, &pl->nl, &pl->capl,
						      sizeof(*l));

			if (!l)
				return -ENOMEM;
			l->image = i;
			l->off = h->offset;
			rv_place(&c, h->offset, l->site, sizeof(l->site));
		}
	}
	return 0;
}

/* The branches of an image: every address a direct branch or call of one
 * of its procedures goes to, or that starts a procedure, sorted. */
struct targets {
	uint64_t *t;
	size_t n, cap;
};

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int push_target(struct targets *tg, uint64_t x)
{
	if (!dcpi_append((void **)&tg->t, &tg->n, &tg->cap, sizeof(*tg->t)))
		return -1;
	tg->t[tg->n - 1] = x;
	return 0;
}

/* Hand-written code jumps into its neighbours (glibc's mempcpy into
 * memmove's entry + 3): an entry such a branch lands in must not be
 * displaced.  Procedures are swept past bytes the decoder does not know
 * (glibc's EVEX string functions with this capstone), which resynchronises
 * within a few instructions.  -1 when out of memory. */
static int branch_targets(const struct image *img, struct targets *tg)
{
	for (size_t q = 0; q < img_nprocs(img); q++) {
		const struct img_proc *p = img_proc(img, q);
		size_t avail = 0, ni = 0, skipped = 0;
		const uint8_t *b = img_bytes(img, p->addr, &avail);
		struct cfg_insn *in = NULL;
		struct dcpi_err e = { 0 };
		int bad = push_target(tg, p->addr);

		if (bad || !b)
			continue;
		if (cfg_decode_skip(b, avail < p->size ? avail : (size_t)p->size, p->addr, &in, &ni,
				    &skipped, &e))
			return -1;
		for (size_t k = 0; !bad && k < ni; k++)
			if (in[k].target)
				bad = push_target(tg, in[k].target);
		free(in);
		if (bad)
			return -1;
	}
	qsort(tg->t, tg->n, sizeof(*tg->t), u64_cmp);
	return 0;
}

/* Does a branch land in (lo, lo + len)? */
static int targeted(const struct targets *tg, uint64_t lo, size_t len)
{
	size_t a = 0, b = tg->n;

	while (a < b) {		/* the first target above lo */
		size_t m = a + (b - a) / 2;

		if (tg->t[m] <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a < tg->n && tg->t[a] - lo < len;
}

/* Is m in the plan: not when marked only to be counted and it cannot be. */
static int written(const struct pmark *m)
{
	return m->why != WHY_COUNT || m->nentry;
}

/* Count class cls of cfg at the first of its blocks a jump may displace
 * where no branch of the image lands: a count= line.  0 also when none
 * may be. */
static int count_class(const struct rv_ctx *c, size_t i, const struct cfg *cfg, int cls,
		       const struct targets *tg, struct pplan *pl)
{
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		struct pcount *k;
		uint8_t bytes[CFG_ENTRY_MAX];
		uint64_t off;
		size_t n, branch;

		if (cfg->blocks[b].cls != cls || !(n = cfg_block_displaced(cfg, b, bytes, &branch)) ||
		    targeted(tg, cfg->blocks[b].start, n) ||
		    img_vaddr_to_offset(c->img, cfg->blocks[b].start, &off) < 0)
			continue;
		if (!(k = dcpi_append((void **)&pl->k, &pl->nk, &pl->capk, sizeof(*k))))
			return -ENOMEM;
		k->image = i;
		k->off = off;
		k->n = n;
		k->branch = branch;
		memcpy(k->bytes, bytes, n);
		rv_place(c, off, k->site, sizeof(k->site));
		return 0;
	}
	return 0;
}

/* The samples on the instructions of block b of cfg. */
static double block_samples(const struct rv_ctx *c, const struct cfg *cfg, uint32_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	struct rv_time t = { 0 };
	uint64_t lo, hi;

	if (img_vaddr_to_offset(c->img, bl->start, &lo) < 0)
		return 0;
	hi = lo + (bl->end - bl->start);
	rv_time(c, lo, hi, &t);
	return t.samples;
}

/*
 * Data loops: a data profile weighs each sampled access by its
 * instruction's executions (report/mem_weight.c).  The steps of a burst
 * are executions, but bursts start where time goes, so a loop's accesses
 * stand for executions at a ratio of its own.  One counted class a loop
 * measures that ratio for all of its instructions: in every innermost
 * loop (and the straight code of the procedure, group nloops) whose
 * instructions took at least REP_PLAN_DATA of the image's sampled
 * accesses (accesses: VAL_ADDR values seen), and no class of which with
 * sampled accesses is counted already (done: a chain's), the class with the
 * most of them a jump may displace is counted; not a loop fast[] marks (a
 * chain kept within L1, which goes round as fast as the counter: the
 * chain loops' rule below).
 */
static int plan_data(const struct rv_ctx *c, size_t i, const struct cfg *cfg,
		     const struct targets *tg, double accesses, const uint8_t *done,
		     const uint8_t *fast, struct pplan *pl)
{
	size_t ng = cfg->nloops + 1, nc = (size_t)cfg->nclasses;
	double *acc = calloc(nc + 1, sizeof(*acc)), *grp = calloc(ng, sizeof(*grp));
	int *cls_grp = malloc((nc + 1) * sizeof(*cls_grp));
	uint8_t *has = calloc(ng, 1), *tried = calloc(nc + 1, 1);	/* a class is one group's */
	int rc = 0;

	if (!acc || !grp || !cls_grp || !has || !tried) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < nc; k++)
		cls_grp[k] = -1;
	for (uint32_t b = 0; b < cfg->nblocks; b++) {	/* a class lies in one loop */
		const struct cfg_block *bl = &cfg->blocks[b];
		size_t g = cfg_loop_group(cfg, b);

		if (bl->cls < 0 || (size_t)bl->cls >= nc)
			continue;
		cls_grp[bl->cls] = (int)g;
	}
	for (size_t k = 0; k < cfg->ninsns; k++) {
		int b = cfg_block_at(cfg, cfg->insns[k].addr);
		const struct val_hotlist *h;
		uint64_t off;

		if (b < 0 || cfg->blocks[b].cls < 0 || (size_t)cfg->blocks[b].cls >= nc ||
		    img_vaddr_to_offset(c->img, cfg->insns[k].addr, &off) ||
		    !(h = val_profile_find(c->vp, off, VAL_ADDR)))
			continue;
		acc[cfg->blocks[b].cls] += (double)h->seen;
		grp[cls_grp[cfg->blocks[b].cls]] += (double)h->seen;
	}
	for (size_t k = 0; k < nc; k++)	/* a counted class that gives the ratio */
		if (done[k] && acc[k] > 0 && cls_grp[k] >= 0)
			has[cls_grp[k]] = 1;
	for (size_t g = 0; g < ng && !rc; g++) {
		size_t before = pl->nk;

		if (has[g] || grp[g] < REP_PLAN_DATA * accesses || (g < cfg->nloops && fast[g]))
			continue;
		while (!rc && pl->nk == before) {	/* the most accessed class that can be */
			int pick = -1;

			for (size_t k = 0; k < nc; k++)
				if (cls_grp[k] == (int)g && !tried[k] && acc[k] > 0 &&
				    (int)k != cfg->blocks[cfg->entry].cls &&
				    (pick < 0 || acc[k] > acc[pick]))
					pick = (int)k;
			if (pick < 0)
				break;
			tried[pick] = 1;
			rc = count_class(c, i, cfg, pick, tg, pl);
		}
	}
out:
	free(acc);
	free(grp);
	free(cls_grp);
	free(has);
	free(tried);
	return rc;
}

/*
 * The loops of a marked procedure that walk a chain (a load fed by its own
 * result round the loop, est_replay_self_fed: i = next[i], p = p->next):
 * their classes' executions are counted, at most REP_PLAN_LOOP_CLASSES of
 * each loop, the most sampled first, each at a block a jump may displace
 * (cfg_block_displaced) and no branch of the image lands inside.  Such a
 * loop goes round no faster than a load's latency, which hides the
 * counter's own (an increment of memory, about 6 cycles a round here:
 * docs/estimate.md, "Loops counted"), while the samples cannot tell a
 * stall from executions there.  Then the data loops (plan_data).  -ENOMEM
 * when out of memory.
 */
static int plan_loops(const struct rv_ctx *c, size_t i, const struct cfg *cfg,
		      const struct targets *tg, double accesses, struct pplan *pl)
{
	uint8_t *walks = calloc(cfg->nloops + 1, 1), *fast = calloc(cfg->nloops + 1, 1);
	uint8_t *done = calloc((size_t)cfg->nclasses + 1, 1);
	int rc = 0;

	if (!walks || !done || !fast) {
		free(walks);
		free(done);
		free(fast);
		return -ENOMEM;
	}
	for (size_t k = 0; k < cfg->ninsns; k++) {
		int b = cfg_block_at(cfg, cfg->insns[k].addr);
		uint64_t off;

		if (b < 0 || cfg->blocks[b].loop < 0 || walks[cfg->blocks[b].loop] ||
		    !est_replay_self_fed(cfg, (uint32_t)k))
			continue;
		/* a chain its addresses keep within L1 goes round as fast as the
		 * counter (1.4x slower counted here): left to the samples */
		if (img_vaddr_to_offset(c->img, cfg->insns[k].addr, &off) == 0 &&
		    est_replay_in_l1(val_profile_find(c->vp, off, VAL_ADDR))) {
			fast[cfg->blocks[b].loop] = 1;
			continue;
		}
		walks[cfg->blocks[b].loop] = 1;
	}
	for (size_t L = 0; L < cfg->nloops && !rc; L++) {
		int taken[REP_PLAN_LOOP_CLASSES], ntaken = 0;

		if (!walks[L])
			continue;
		while (ntaken < REP_PLAN_LOOP_CLASSES && !rc) {
			size_t before;
			double best = 0;
			int pick = -1, cls = -1;

			for (uint32_t b = 0; b < cfg->nblocks; b++) {
				const struct cfg_block *bl = &cfg->blocks[b];
				double s;
				int seen = bl->cls == cfg->blocks[cfg->entry].cls;

				for (int d = 0; d < ntaken && !seen; d++)
					seen = taken[d] == bl->cls;
				if (bl->loop != (int)L || bl->cls < 0 || seen)
					continue;
				s = block_samples(c, cfg, b) + 1e-9 * (double)(cfg->nblocks - b);
				if (s > best) {
					best = s;
					pick = (int)b;
					cls = bl->cls;
				}
			}
			if (pick < 0)
				break;
			taken[ntaken++] = cls;
			before = pl->nk;
			rc = count_class(c, i, cfg, cls, tg, pl);
			done[cls] = pl->nk > before;
		}
	}
	for (size_t L = 0; L < cfg->nloops; L++)
		fast[L] &= !walks[L];	/* another chain of it leaves L1 */
	if (!rc)
		rc = plan_data(c, i, cfg, tg, accesses, done, fast, pl);
	free(walks);
	free(done);
	free(fast);
	return rc;
}

/* The marks of image i whose calls can be counted at the entry get its
 * bytes (cfg_entry_displaced), unless a branch of the image may land
 * inside them (targeted). */
static void plan_entries(struct rep_vals *v, size_t i, struct pplan *pl)
{
	struct targets tg = { 0 };
	double accesses = 0;
	int have = 0;
	struct rv_ctx c;

	rv_image_ctx(v, &v->vp[i], &c);
	if (!c.img)
		return;
	for (size_t k = 0; k < c.vp->nlists; k++)
		if (c.vp->lists[k].kind == VAL_ADDR)
			accesses += (double)c.vp->lists[k].seen;
	for (size_t k = 0; k < pl->n; k++) {
		struct pmark *m = &pl->m[k];
		struct dcpi_err e = { 0 };
		struct cfg *cfg = NULL;
		size_t len = 0;

		if (m->image != i || cfg_build(c.img, m->p, &cfg, &e))
			continue;
		len = cfg_entry_displaced(cfg, m->entry);
		if (!have)
			have = branch_targets(c.img, &tg) ? -1 : 1;
		if (len && (have < 0 || targeted(&tg, m->p->addr, len)))
			len = 0;
		m->nentry = len;
		if (have > 0 && plan_loops(&c, i, cfg, &tg, accesses, pl) < 0)
			have = -1;	/* out of memory: what is planned stays */
		cfg_free(cfg);
	}
	free(tg.t);
}

static void why_text(const struct pmark *m, char *buf, size_t len)
{
	static const struct {
		unsigned why;
		const char *text;
	} words[] = { { WHY_HOT, "hot" }, { WHY_ARGS, NULL }, { WHY_LOAD, "load" } };
	size_t o = 0;

	buf[0] = '\0';
	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]) && o < len; w++) {
		if (!(m->why & words[w].why))
			continue;
		if (words[w].text)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", words[w].text);
		else
			o += (size_t)snprintf(buf + o, len - o, "%sargs=%02x", o ? "," : "", m->regs);
	}
	if (m->nentry && o < len) {
		o += (size_t)snprintf(buf + o, len - o, "%sentry=", o ? "," : "");
		for (size_t b = 0; b < m->nentry && o < len; b++)
			o += (size_t)snprintf(buf + o, len - o, "%02x", m->entry[b]);
	}
}

/* The plan as text (include/dcpi/values.h); NULL when out of memory. */
static char *plan_text(const struct rep_vals *v, const struct pplan *pl, size_t *len)
{
	char *buf = NULL, why[96];
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	fprintf(f, "%s\n# epoch %s: procedures where value samples are wanted "
		"(docs/values.md, \"Marking plan\")\n", VAL_PLAN_MAGIC, v->epoch);
	for (size_t i = 0; i < v->nvp; i++) {
		const struct prof_image_id *id = &v->vp[i].image;

		fprintf(f, "image %zu %s %s\n", i, id->build_id[0] ? id->build_id : "-", id->path);
	}
	for (size_t k = 0; k < pl->n; k++) {
		if (!written(&pl->m[k]))
			continue;
		why_text(&pl->m[k], why, sizeof(why));
		fprintf(f, "proc %zu %" PRIx64 " %" PRIx64 " %s %s\n", pl->m[k].image,
			pl->m[k].off, pl->m[k].size, why, pl->m[k].name);
	}
	for (size_t k = 0; k < pl->nl; k++)
		fprintf(f, "load %zu %" PRIx64 " load %s\n", pl->l[k].image, pl->l[k].off,
			pl->l[k].site);
	for (size_t k = 0; k < pl->nk; k++) {
		fprintf(f, "block %zu %" PRIx64 " count=", pl->k[k].image, pl->k[k].off);
		for (size_t b = 0; b < pl->k[k].n; b++)
			fprintf(f, "%02x", pl->k[k].bytes[b]);
		if (pl->k[k].branch)
			fprintf(f, ",branch=%zu", pl->k[k].branch);
		fprintf(f, " %s\n", pl->k[k].site);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int rep_plan_write(const char *dbdir, const char *epoch, size_t *nmarks, struct dcpi_err *err)
{
	struct rep_vals *v = NULL;
	struct pplan pl = { 0 };
	char path[4096], *text = NULL;
	size_t len = 0;
	int rc = rep_vals_open(dbdir, epoch, &v, err);

	*nmarks = 0;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < v->nvp && !rc; i++)
		rc = plan_image(v, i, &pl);
	for (size_t i = 0; i < v->nvp && !rc; i++)
		plan_entries(v, i, &pl);
	if (!rc && !(text = plan_text(v, &pl, &len)))
		rc = -ENOMEM;
	if (rc)
		rc = dcpi_errf(err, rc, "plan: out of memory");
	else if ((size_t)snprintf(path, sizeof(path), "%s/%s/%s", prof_db_path(v->db),
				  v->epoch, VAL_PLAN_FILE) >= sizeof(path))
		rc = dcpi_errf(err, -ENAMETOOLONG, "%s: path too long", dbdir);
	else
		rc = dcpi_write_file(path, text, len, 0644, err);
	for (size_t k = 0; !rc && k < pl.n; k++)
		*nmarks += (size_t)written(&pl.m[k]);
	free(text);
	free(pl.m);
	free(pl.l);
	free(pl.k);
	rep_vals_close(v);
	return rc;
}
