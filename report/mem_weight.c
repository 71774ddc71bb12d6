/*
 * report/mem_weight.c - how many executions each sampled access of the
 * data profiles stands for (docs/data.md, "Weighting"), from the one
 * analysis (estimate/analyze.c, include/dcpi/analysis.h).
 *
 * The steps of a burst start where the timer landed (time-weighted), so
 * how often an instruction appears in them is not how often it ran
 * (docs/paths.md).  The analysis estimates each instruction's executions
 * E_i; the data profile says which objects its A_i sampled accesses
 * touched.  So each sampled access of instruction i weighs E_i / A_i: its
 * objects share E_i in proportion to its accesses to each.  A string
 * instruction's accesses are elements, iterations stepped like
 * instructions (collect/datarec.c), not executions: they weigh the
 * procedure's ratio sum(E) / sum(A) over its other accessing instructions,
 * and an instruction with no estimate (no samples of its procedure, a
 * procedure that cannot be decoded) weighs the profile's ratio, else the
 * epoch's.  Weighted accesses are executions, the unit the kernel's
 * counted transfers (collect/pathrt_io.c) can be added to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/analysis.h"
#include "dcpi/cfg.h"
#include "dcpi/data.h"
#include "dcpi/image.h"
#include "dcpi/report.h"
#include "mem_weight.h"

static int mw_cmp(const void *x, const void *y)
{
	const struct mem_wt *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->prof, a->insn }, (uint64_t[]){ b->prof, b->insn }, 2);
}

static int is_string(const struct cfg_insn *in)
{
	const char *m = in->mnemonic;

	return !strncmp(m, "rep", 3) || !strncmp(m, "movs", 4) || !strncmp(m, "stos", 4) ||
	       !strncmp(m, "lods", 4) || !strncmp(m, "cmps", 4) || !strncmp(m, "scas", 4);
}

/* The (image, cpu-clock or first) samples profile of p's image. */
static const struct prof_profile *samples_of(const struct prof_profile *pp, size_t n,
					     const struct data_profile *p)
{
	const struct prof_profile *any = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!prof_image_id_equal(&pp[i].image, &p->image))
			continue;
		if (!strcmp(pp[i].event, "cpu-clock") || !strcmp(pp[i].event, "cycles"))
			return &pp[i];
		if (!any)
			any = &pp[i];
	}
	return any;
}

/*
 * Where a plan counted a class of the loop (report/plan.c plan_data), the
 * loop's accesses stand for executions at the ratio measured there: the
 * steps of a burst are executions, and bursts start where time goes, so
 * the ratio is the loop's own (docs/data.md, "Weighting").  Each other
 * accessing instruction of the innermost loop (or of the straight code)
 * gets ratio x its accesses; of a loop with no counted access, the nearest
 * enclosing loop's ratio, else the straight code's, else the procedure's
 * over all its counted accesses: measured nearby, where the analysis'
 * estimate is the samples' time (docs/data.md gives the figures).
 */
static void counted_ratios(const struct est_analysis *a, struct image *img, struct mem_wt *w,
			   size_t n)
{
	const struct cfg *cfg = a->cfg;
	size_t ng = cfg->nloops + 1;	/* the loops, the straight code; [ng] all */
	double *e = calloc(2 * (ng + 1), sizeof(*e)), *acc;
	int *grp = calloc(n + 1, sizeof(*grp));

	if (!e || !grp) {	/* out of memory: the estimates stay */
		free(e);
		free(grp);
		return;
	}
	acc = e + ng + 1;
	for (size_t k = 0; k < n; k++) {
		uint64_t va;
		size_t g;
		int b;

		grp[k] = -1;
		if (w[k].execs < 0 || img_offset_to_vaddr(img, w[k].insn, &va) ||
		    (b = cfg_block_at(cfg, va)) < 0 || cfg_insn_at(cfg, va) < 0)
			continue;
		g = cfg_loop_group(cfg, (uint32_t)b);
		grp[k] = (int)g;
		if (!a->r.counted[b] || !(w[k].accesses > 0))
			continue;
		grp[k] = -1;	/* exact: kept */
		w[k].measured = 1;
		e[g] += w[k].execs;
		acc[g] += w[k].accesses;
		e[ng] += w[k].execs;
		acc[ng] += w[k].accesses;
	}
	for (size_t k = 0; k < n; k++) {
		int g = grp[k];

		if (g < 0)
			continue;
		while (g < (int)cfg->nloops && !(acc[g] > 0))	/* out to the straight code */
			g = cfg->loops[g].parent >= 0 ? cfg->loops[g].parent : (int)cfg->nloops;
		w[k].measured = g == grp[k] && acc[g] > 0;	/* its own loop's */
		if (acc[g] > 0)
			w[k].execs = e[g] / acc[g] * w[k].accesses;
		else if (acc[ng] > 0)
			w[k].execs = e[ng] / acc[ng] * w[k].accesses;
	}
	free(e);
	free(grp);
}

/* Executions of the accessing instructions of proc (entries [i, j) of p
 * sorted by insn in ord) into w; string instructions get -2 (their
 * procedure's ratio later), unestimated ones -1. */
static int relative;		/* an analysis had no calibration: counts are relative */

static void weigh_proc(struct est_input *in, struct image *img, const struct prof_profile *pr,
		       const struct img_proc *proc, struct mem_wt *w, size_t n)
{
	struct est_analysis a;
	struct dcpi_err err = { 0 };

	memset(&a, 0, sizeof(a));
	if (!pr || est_analyze(in, img, pr, proc, &a, &err) < 0) {
		est_analysis_free(&a);
		return;
	}
	relative |= a.r.relative;
	for (size_t k = 0; k < n; k++) {
		uint64_t va;
		int ix;

		if (img_offset_to_vaddr(img, w[k].insn, &va) ||
		    (ix = cfg_insn_at(a.cfg, va)) < 0)
			continue;
		if (is_string(&a.cfg->insns[ix]))
			w[k].execs = -2;
		else
			w[k].execs = a.r.insns[ix].executions;
	}
	if (a.r.counted)
		counted_ratios(&a, img, w, n);
	est_analysis_free(&a);
}

/* Each distinct instruction of p (index pi) with its sampled accesses. */
static int collect(const struct data_profile *p, size_t pi, struct mem_wt **w, size_t *n,
		   size_t *cap)
{
	for (size_t i = 0; i < p->n; i++) {
		if (*n && (*w)[*n - 1].prof == pi && (*w)[*n - 1].insn == p->e[i].insn) {
			(*w)[*n - 1].accesses += p->e[i].accesses;
			continue;
		}
		if (dcpi_grow((void **)w, cap, *n + 1, sizeof(**w)))
			return -ENOMEM;
		(*w)[(*n)++] = (struct mem_wt){ pi, p->e[i].insn, (double)p->e[i].accesses,
						-1, 0, 0 };
	}
	return 0;
}

/* Entries of one instruction (under several keys) summed; the count left. */
static size_t merge_same(struct mem_wt *w, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && !mw_cmp(&w[k - 1], &w[i]))
			w[k - 1].accesses += w[i].accesses;
		else
			w[k++] = w[i];
	}
	return k;
}

/* The instructions [lo, hi) of one profile, sorted by insn: analysed by
 * procedure, then the ratios filled in. */
static void weigh_image(struct est_input *in, const struct prof_profile *pr, struct image *img,
			struct mem_wt *w, size_t n, double *sum_e, double *sum_a)
{
	size_t i = 0;

	while (i < n) {
		const struct img_proc *proc = NULL;
		size_t j = i + 1;
		uint64_t va;
		double e = 0, acc = 0;

		if (!img_offset_to_vaddr(img, w[i].insn, &va))
			proc = img_proc_at(img, va);
		while (proc && j < n && !img_offset_to_vaddr(img, w[j].insn, &va) &&
		       img_proc_at(img, va) == proc)
			j++;
		if (proc)
			weigh_proc(in, img, pr, proc, &w[i], j - i);
		for (size_t k = i; k < j; k++)
			if (w[k].execs >= 0) {
				e += w[k].execs;
				acc += w[k].accesses;
			}
		for (size_t k = i; k < j; k++)	/* string instructions: the procedure's */
			if (w[k].execs == -2 && acc > 0)
				w[k].weight = e / acc;
			else if (w[k].execs >= 0 && w[k].accesses > 0)
				w[k].weight = w[k].execs / w[k].accesses;
		*sum_e += e;
		*sum_a += acc;
		i = j;
	}
}

int mem_weights(const char *dbdir, const char *epoch, const struct data_profile *p, size_t np,
		struct mem_wt **out, size_t *nout, int *rel, struct dcpi_err *err)
{
	struct est_analysis_opts o;
	struct est_input in;
	struct prof_db *db = NULL;
	struct prof_profile *pp = NULL;
	struct mem_wt *w = NULL;
	size_t npp = 0, n = 0, cap = 0, lo = 0;
	double all_e = 0, all_a = 0;
	char used[256];
	int rc = prof_db_open(dbdir, 0, &db, err), open = 0;

	*out = NULL;
	*nout = 0;
	relative = 0;
	if (rc >= 0)
		rc = rep_load_profiles(db, epoch, &pp, &npp, used, sizeof(used), err);
	est_analysis_opts_default(&o);
	if (rc >= 0 && !(rc = est_input_open(&in, db, dbdir, used, pp, npp, &o, err)))
		open = 1;
	for (size_t i = 0; i < np && rc >= 0; i++)
		if (collect(&p[i], i, &w, &n, &cap))
			rc = dcpi_errf(err, -ENOMEM, "out of memory");
	if (rc >= 0 && n)
		qsort(w, n, sizeof(*w), mw_cmp);
	if (rc >= 0)
		n = merge_same(w, n);
	while (rc >= 0 && lo < n) {
		size_t hi = lo, pi = w[lo].prof;
		double e = 0, a = 0;
		struct image *img = NULL;
		struct dcpi_err ierr = { 0 };

		while (hi < n && w[hi].prof == pi)
			hi++;
		if (img_open(p[pi].image.path, IMG_NO_DWARF, &img, &ierr) >= 0)
			weigh_image(&in, samples_of(in.p, in.np, &p[pi]), img, &w[lo], hi - lo,
				    &e, &a);
		img_close(img);
		for (size_t k = lo; k < hi; k++)	/* no estimate: the profile's ratio */
			if (!w[k].weight && a > 0)
				w[k].weight = e / a;
		all_e += e;
		all_a += a;
		lo = hi;
	}
	for (size_t k = 0; k < n; k++)		/* nor in the profile: the epoch's */
		if (!w[k].weight)
			w[k].weight = all_a > 0 ? all_e / all_a : 0;
	if (open)
		est_input_close(&in);
	prof_profiles_free(pp, npp);
	prof_db_close(db);
	if (rc < 0) {
		free(w);
		return rc;
	}
	*out = w;
	*nout = n;
	*rel = relative;
	return 0;
}

double mem_weight_of(const struct mem_wt *w, size_t n, size_t prof, uint64_t insn)
{
	struct mem_wt key = { .prof = prof, .insn = insn };
	const struct mem_wt *f = bsearch(&key, w, n, sizeof(*w), mw_cmp);

	return f ? f->weight : 0;
}

double mem_weight_measured(const struct mem_wt *w, size_t n)
{
	double all = 0, measured = 0;

	for (size_t k = 0; k < n; k++) {
		all += w[k].weight * w[k].accesses;
		if (w[k].measured)
			measured += w[k].weight * w[k].accesses;
	}
	return all > 0 ? measured / all : 0;
}
