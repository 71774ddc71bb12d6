/*
 * prefetch.c - prefetch hints from the culprits of dynamic stalls.
 *
 * A load is worth a prefetch when the stall analysis (culprit/dynamic.c,
 * docs/culprits.md) charges it with a real share of the cycles as a D-cache
 * culprit, and its address steps by a constant in its loop (cul_stride):
 * then the address it will read `distance` iterations later is known (a
 * stride under 2 KB stays in a page, where the hardware prefetchers follow
 * it: no hint), and
 *
 *   distance = ceil(miss latency / best-case cycles per iteration of its loop)
 *   delta    = distance x stride (bytes)
 *
 * (latency: the model's DRAM latency, plus a TLB miss when the stride crosses
 * a page; cycles per iteration: the loop's best case, what an iteration
 * costs once the miss is hidden; the measured cycles per iteration, sampled
 * cycles over the header's executions, are reported beside it).  LLVM's
 * X86InsertPrefetch pass reads the hint as a sample profile whose call
 * target __prefetch_t0_0 at the load's
 * line.discriminator carries the delta, and inserts `prefetcht0
 * delta(address)` before the load; the discriminators are the ones
 * -mllvm -x86-discriminate-memops gives each memory operand, at both builds.
 *
 * Executions come from the estimate, or exactly from a callgrind run of the
 * same binary (the estimate folds a loop's stalls into its count where
 * every block of the loop waits; docs/culprits.md); event profiles of the
 * image (a PMU's misses, callgrind's simulated ones) bound the culprits.
 * Every load charged with enough cycles is reported, hinted or not and why.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/culprit.h"
#include "internal.h"

#define MAX_DISTANCE 64		/* iterations: past this the line may be gone */
#define PAGE 4096
#define PREFETCHED 2048		/* strides below this the hardware prefetches */

struct pf {
	struct opt_src *src;
	const struct prof_profile *p;		/* the image's samples */
	const struct model *model;
	double min_cycles;			/* charged at least this */
	struct opt_hints *h;
};

static struct opt_hint *hint_new(struct opt_hints *h)
{
	return dcpi_append((void **)&h->v, &h->n, &h->cap, sizeof(*h->v));
}

/* Cycles per iteration of the innermost loop around block b: as measured
 * (sampled cycles over the header's executions), and in the best case (the
 * blocks' best cases, each times its executions per iteration), which is
 * what an iteration costs once the prefetch has hidden the miss. */
static double iter_cycles(const struct cfg *cfg, const struct est_result *r, uint32_t b,
			  double *best)
{
	const struct cfg_loop *l;
	double cyc = 0, bc = 0, iters;

	*best = 0;
	if (cfg->blocks[b].loop < 0)
		return 0;
	l = &cfg->loops[cfg->blocks[b].loop];
	for (uint32_t k = 0; k < l->nblocks; k++) {
		cyc += r->blocks[l->blocks[k]].cycles;
		bc += r->blocks[l->blocks[k]].best * r->blocks[l->blocks[k]].executions;
	}
	iters = r->blocks[l->header].executions;
	if (!(iters > 0))
		return 0;
	*best = bc / iters;
	return cyc / iters;
}

static int block_of(const struct cfg *cfg, uint32_t insn)
{
	for (size_t b = 0; b < cfg->nblocks; b++)
		if (insn >= cfg->blocks[b].first && insn < cfg->blocks[b].first + cfg->blocks[b].n)
			return (int)b;
	return -1;
}

/* Decide on one charged load: fill h, place the hint when there is one. */
static int consider(struct pf *f, struct image *img, const struct img_proc *proc,
		    const struct cfg *cfg, const struct est_result *r, uint32_t i,
		    double stall, struct dcpi_err *err)
{
	const struct cfg_insn *in = &cfg->insns[i];
	struct opt_hint *h = hint_new(f->h);
	struct img_line ln;
	int b = block_of(cfg, i), rc;

	if (!h)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	snprintf(h->proc, sizeof(h->proc), "%s", proc->name);
	h->addr = in->addr;
	h->stall = stall;
	h->share = f->h->cycles > 0 ? stall / f->h->cycles : 0;
	h->executions = r->insns[i].executions;
	if (img_line_at(img, in->addr, &ln) == 0) {
		const char *base = strrchr(ln.file, '/');

		snprintf(h->file, sizeof(h->file), "%s", base ? base + 1 : ln.file);
		h->line = ln.line;
		h->discr = ln.discriminator;
	}
	if (b < 0 || cfg->blocks[b].loop < 0) {
		snprintf(h->why, sizeof(h->why), "not in a loop");
		return 0;
	}
	if (cul_stride(cfg, i, &h->stride) < 0)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	if (!h->stride) {
		snprintf(h->why, sizeof(h->why), "its address does not step by a constant "
			 "in its loop (a chase, an index loaded, or a step on some paths)");
		return 0;
	}
	if (llabs(h->stride) < PREFETCHED) {
		snprintf(h->why, sizeof(h->why), "a stride of %lld bytes, within a page: the "
			 "hardware prefetchers follow it", (long long)h->stride);
		return 0;
	}
	h->iter_cycles = iter_cycles(cfg, r, (uint32_t)b, &h->iter_best);
	if (!(h->iter_cycles > 0)) {
		snprintf(h->why, sizeof(h->why), "its loop has no executions");
		return 0;
	}
	h->latency = f->model->dram_lat + (llabs(h->stride) >= PAGE ? f->model->tlb_miss_lat : 0);
	h->distance = (unsigned)ceil(h->latency / (h->iter_best > 0 ? h->iter_best :
						   h->iter_cycles));
	if (h->distance < 1)
		h->distance = 1;
	if (h->distance > MAX_DISTANCE)
		h->distance = MAX_DISTANCE;
	h->delta = (int64_t)h->distance * h->stride;
	rc = opt_src_target(f->src, img, proc, in, opt_count(h->executions), "__prefetch_t0_0",
			    (uint64_t)h->delta, err);
	if (rc == -ENODATA) {
		snprintf(h->why, sizeof(h->why), "%.*s", (int)sizeof(h->why) - 1, err->msg);
		dcpi_err_clear(err);
		return 0;
	}
	return rc;
}

static int one_proc(struct image *img, const struct img_proc *proc, struct est_analysis *a,
		    void *ctx, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	struct pf *f = ctx;
	double *ch;
	int rc = 0;

	f->h->exact |= a->exact;
	if (a->ev.n > f->h->events)
		f->h->events = a->ev.n;
	ch = calloc(cfg->ninsns + 1, sizeof(*ch));
	if (!ch)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	cul_charges(&a->cul, CUL_DCACHE, ch, cfg->ninsns);
	for (uint32_t i = 0; i < cfg->ninsns && rc >= 0; i++)
		if (ch[i] > 0 && ch[i] >= f->min_cycles && (cfg->insns[i].flags & CFG_I_LOAD))
			rc = consider(f, img, proc, cfg, &a->r, i, ch[i], err);
	free(ch);
	return rc;
}

int opt_prefetch_add(struct opt_src *src, struct image *img, const struct prof_profile *p,
		     const struct opt_est *e, double min_share, struct opt_hints *h,
		     struct dcpi_err *err)
{
	struct pf f = { .src = src, .p = p, .model = e->in->model, .h = h };
	double cps = est_cycles_per_sample(p, e->in->have_meta ? &e->in->meta : NULL);
	double cyc = (double)p->total * (cps > 0 ? cps : 1);

	h->cycles += cyc;
	f.min_cycles = (min_share > 0 ? min_share : 0.01) * cyc;
	return opt_each_proc(img, p, e, one_proc, &f, NULL, err);
}
