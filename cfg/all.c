/*
 * cfg/all.c - the CFGs of every procedure of an image at decode speed
 * (bench/bench_cfg.sh; DCPI analysed whole systems, paper sec. 6): each instruction is
 * decoded once for the image.  Building one procedure alone decodes its
 * direct callees too, for their noreturn proof (noreturn.c), and building
 * every procedure that way decodes most of the image twice.  Here a callee
 * whose proof is asked for is built right then, depth first: one decode cache
 * (decode.c) serves its proof and its own CFG, which goes to the caller's
 * function at once.  Procedures a direct call (e8 rel32) seems to land on get
 * their proof with their CFG even when reached from the top, so a later
 * caller finds it cached.  Nesting is capped at NEST_MAX (a deeper or
 * recursive callee gets the per-procedure path: decoded twice, same answer).
 *
 * Memory: one decoder and cache per nesting level under way, each as large as
 * its procedure (a level keeps at most KEEP_BYTES between procedures);
 * the peak is reported in the stats.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "internal.h"

#define NEST_MAX	48
#define KEEP_BYTES	(1u << 18)	/* a level's cache kept between procedures */

#define NR_RETURNS	1		/* calls to it may return */
#define NR_PROVED	2		/* never returns: its CFG says so */
#define NR_NAMED	3		/* never returns: its name says so */

struct cfg_all {
	const struct image *img;
	size_t nprocs;
	uint8_t *state;			/* per procedure: 0 not yet, 1 under way, 2 done */
	uint8_t *called;		/* an e8 rel32 lands on its first byte */
	uint8_t *nr;			/* per procedure: 0 not asked, else an NR_ */
	uint64_t ph;			/* the noreturn cache's hash of the path */
	struct cfg_dec *dec[NEST_MAX + 1];
	size_t busy[NEST_MAX + 1];	/* the procedure being built at each level */
	int level;
	cfg_all_fn fn;
	void *arg;
	int stop;			/* fn's nonzero return, or -ENOMEM */
	struct cfg_scratch scr[2];	/* classes and loops' working memory */
	struct cfg_all_stats st;
};

/* Mark the procedures a call instruction seems to target (bytes e8 rel32). */
static void mark_called(struct cfg_all *a)
{
	const struct img_proc *base = img_proc(a->img, 0);

	for (size_t i = 0; i < a->nprocs; i++) {
		const struct img_proc *p = img_proc(a->img, i);
		const uint8_t *b;
		size_t len = 0;

		if (p->source == IMG_SRC_PLT || !(b = cfg_proc_bytes(a->img, p, &len)))
			continue;
		for (size_t o = 0; o + 5 <= len; o++) {
			const struct img_proc *q;
			int32_t rel;
			uint64_t t;

			if (b[o] != 0xe8)
				continue;
			memcpy(&rel, b + o + 1, 4);
			t = p->addr + o + 5 + (uint64_t)(int64_t)rel;
			q = img_proc_at(a->img, t);
			if (q && q->addr == t)
				a->called[q - base] = 1;
		}
	}
}

static void visit(struct cfg_all *a, size_t i, int want_nr)
{
	const struct img_proc *p = img_proc(a->img, i);
	struct dcpi_err err = { 0 };
	struct cfg *cfg = NULL;
	struct cfg_dec *dec;
	const uint8_t *bytes;
	size_t len = 0, held = 0;
	int rc, proved = 0;

	if (!a->dec[a->level]) {
		if (cfg_dec_open(&a->dec[a->level], NULL) < 0) {
			a->stop = -ENOMEM;
			return;
		}
		/* one memo for every level: a callee's code is like its caller's */
		if (a->level > 0)	/* without one (-ENOMEM), capstone decodes all */
			(void)cfg_dec_share_memo(a->dec[a->level], a->dec[0]);
	}
	a->busy[a->level] = i;
	dec = a->dec[a->level++];
	if (a->level > a->st.max_nesting)
		a->st.max_nesting = a->level;
	a->state[i] = 1;
	bytes = cfg_proc_bytes(a->img, p, &len);
	if (bytes && cfg_dec_cache(dec, bytes, len, p->addr) < 0)
		cfg_dec_uncache(dec);	/* decoded twice, no worse */
	rc = cfg_build_with(a->img, p, 1, 1, dec, a, &proved, &cfg, &err);
	/* its own noreturn answer: from this CFG unless a proof shaped it */
	if (want_nr && rc == 0 && !proved) {
		cfg_noreturn_from(a->img, p, cfg, &a->ph);
	} else if (want_nr) {
		int named;

		(void)cfg_noreturn_proc(a->img, p, 1, dec, &a->ph, &named);
	}
	for (int l = 0; l <= NEST_MAX && a->dec[l]; l++)
		held += cfg_dec_cache_bytes(a->dec[l]);
	if (held > a->st.cache_bytes)
		a->st.cache_bytes = held;
	/* a large procedure's cache is not kept for the next one */
	if (cfg_dec_cache_bytes(dec) > KEEP_BYTES)
		cfg_dec_cache_release(dec);
	else
		cfg_dec_uncache(dec);
	a->level--;
	a->state[i] = 2;
	a->st.procs++;
	a->st.failed += rc < 0;
	if (a->stop) {
		cfg_free(cfg);
		return;
	}
	a->stop = a->fn(a->arg, p, rc < 0 ? NULL : cfg, &err);
}

struct cfg_scratch *cfg_all_scratch(struct cfg_all *a)
{
	return a->scr;
}

/* Build p now (see cfg_all_noreturn), or its proof when it is under way. */
static void visit_callee(struct cfg_all *a, const struct img_proc *p)
{
	size_t i = (size_t)(p - img_proc(a->img, 0));

	if (a->stop || a->level > NEST_MAX || p->source == IMG_SRC_PLT)
		return;
	if (a->state[i] == 0) {
		visit(a, i, 1);
		return;
	}
	/*
	 * Recursion: the callee's build is under way further up.  Its proof
	 * (at depth 0, so no further nesting) reads that build's decode
	 * cache; the calls are not charged to that build's budget.
	 */
	for (int l = 0; l < a->level && a->state[i] == 1; l++) {
		unsigned long c;

		if (a->busy[l] != i)
			continue;
		int named;

		c = cfg_dec_count(a->dec[l]);
		(void)cfg_noreturn_proc(a->img, p, 1, a->dec[l], &a->ph, &named);
		cfg_dec_count_set(a->dec[l], c);
		break;
	}
}

int cfg_all_noreturn(struct cfg_all *a, const struct img_proc *p, int *named)
{
	size_t i = (size_t)(p - img_proc(a->img, 0));
	int v;

	if (!a->nr[i]) {
		visit_callee(a, p);
		v = cfg_noreturn_proc(a->img, p, 1, NULL, &a->ph, named);
		/* not kept while p is still to be built: a later call builds it */
		if (!a->state[i] && p->source != IMG_SRC_PLT)
			return v;
		a->nr[i] = !v ? NR_RETURNS : *named ? NR_NAMED : NR_PROVED;
	}
	*named = a->nr[i] == NR_NAMED;
	return a->nr[i] != NR_RETURNS;
}

int cfg_build_all(const struct image *img, cfg_all_fn fn, void *arg,
		  struct cfg_all_stats *stats, struct dcpi_err *err)
{
	struct cfg_all a = { .img = img, .nprocs = img_nprocs(img), .fn = fn, .arg = arg };
	unsigned long d0 = cfg_dec_calls;

	a.state = calloc(a.nprocs ? a.nprocs : 1, 1);
	a.called = calloc(a.nprocs ? a.nprocs : 1, 1);
	a.nr = calloc(a.nprocs ? a.nprocs : 1, 1);
	if (!a.state || !a.called || !a.nr) {
		a.stop = -ENOMEM;
		goto out;
	}
	mark_called(&a);
	for (size_t i = 0; i < a.nprocs && !a.stop; i++)
		if (img_proc(img, i)->source != IMG_SRC_PLT && !a.state[i])
			visit(&a, i, a.called[i]);
out:
	for (int l = NEST_MAX; l >= 0; l--)	/* level 0, the memo's owner, last */
		cfg_dec_close(a.dec[l]);
	free(a.state);
	free(a.called);
	free(a.nr);
	for (int i = 0; i < 2; i++)
		cfg_scratch_trim(&a.scr[i], 0);
	a.st.decodes = cfg_dec_calls - d0;
	if (stats)
		*stats = a.st;
	if (a.stop == -ENOMEM)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory building the CFGs",
				 img_path(img));
	return a.stop;
}
