/*
 * lbr_counts.c - block and edge counts from branch records (perf record -b:
 * Intel LBR, AMD BRS), as AutoFDO and llvm-profgen compute them
 * (docs/import.md "Branch records are counts"; the counts are import/lbr.c's).
 * An instruction ran as often as the straight-line ranges that cover it; a
 * block as often as its first instruction; a taken edge as often as its
 * (from, to) entry; a fall-through as often as the ranges that run on from
 * the block's last instruction into the next.  A range with an end outside
 * the procedure (a range that crosses a procedure) or not on an instruction
 * is not counted.  Where a procedure has branch records these counts replace
 * the estimate's, and the time samples give CPI (est_analyze).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/analysis.h"
#include "dcpi/image.h"
#include "dcpi/import.h"

/* The instruction starting at va, or SIZE_MAX. */
static size_t insn_at(const struct cfg *cfg, uint64_t va)
{
	size_t lo = dcpi_lower_bound(cfg->insns, cfg->ninsns, sizeof(*cfg->insns),
				     offsetof(struct cfg_insn, addr), va);

	return lo < cfg->ninsns && cfg->insns[lo].addr == va ? lo : SIZE_MAX;
}

/* The taken count of (from, to) in l (file offsets). */
static double branch_count(const struct import_lbr *l, uint64_t from, uint64_t to)
{
	size_t lo = 0, hi = l->nbranches;
	double c = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->branches[mid].from < from ||
		    (l->branches[mid].from == from && l->branches[mid].to < to))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < l->nbranches && l->branches[lo].from == from && l->branches[lo].to == to;
	     lo++)
		c += l->branches[lo].count;
	return c;
}

/* Ranges inside [off0, off0 + len) as per-instruction difference arrays:
 * x[] executions, cr[] crossings from instruction k to k + 1. */
static size_t add_ranges(const struct cfg *cfg, const struct import_lbr *l, uint64_t off0,
			 double *x, double *cr, size_t *dropped)
{
	uint64_t len = cfg->end - cfg->start;
	/* from the first range beginning at off0 or after */
	size_t lo = dcpi_lower_bound(l->ranges, l->nranges, sizeof(*l->ranges),
				     offsetof(struct import_lbr_range, begin), off0);
	size_t used = 0;

	for (size_t k = lo; k < l->nranges && l->ranges[k].begin - off0 < len; k++) {
		const struct import_lbr_range *g = &l->ranges[k];
		size_t i, j;

		if (g->end - off0 >= len) {
			(*dropped)++;
			continue;
		}
		i = insn_at(cfg, cfg->start + (g->begin - off0));
		j = insn_at(cfg, cfg->start + (g->end - off0));
		if (i == SIZE_MAX || j == SIZE_MAX || j < i) {
			(*dropped)++;
			continue;
		}
		x[i] += g->count;
		x[j + 1] -= g->count;
		cr[i] += g->count;
		cr[j] -= g->count;
		used++;
	}
	for (size_t i = 1; i <= cfg->ninsns; i++) {
		x[i] += x[i - 1];
		cr[i] += cr[i - 1];
	}
	return used;
}

static double edge_count(const struct cfg *cfg, const struct image *img,
			 const struct import_lbr *l, const struct cfg_edge *e, const double *x,
			 const double *cr)
{
	const struct cfg_block *b = &cfg->blocks[e->from], *c = &cfg->blocks[e->to];
	uint32_t last;
	uint64_t fo, to;

	if (e->kind == CFG_E_EXIT_ENTRY)
		return x[cfg->blocks[cfg->entry].first];
	if (!b->n)
		return 0;
	last = b->first + b->n - 1;
	switch (e->kind) {
	case CFG_E_TAKEN:
	case CFG_E_JUMP:
	case CFG_E_TABLE:
		if (!c->n || img_vaddr_to_offset(img, cfg->insns[last].addr, &fo) ||
		    img_vaddr_to_offset(img, c->start, &to))
			return 0;
		return branch_count(l, fo, to);
	case CFG_E_NOT_TAKEN:
	case CFG_E_FALLTHROUGH:
		return c->n && c->first == last + 1 ? fmax(cr[last], 0) : 0;
	default:		/* past a call, a return, a tail call: as often as it ran */
		return fmax(x[last], 0);
	}
}

int est_lbr_use(const struct cfg *cfg, const struct image *img, const struct import_lbr *l,
		struct est_result *r, size_t *dropped)
{
	double *x, *cr;
	uint64_t off0;
	size_t used;

	*dropped = 0;
	if (!l->nranges || !cfg->ninsns || img_vaddr_to_offset(img, cfg->start, &off0))
		return 0;
	x = calloc(cfg->ninsns + 1, sizeof(*x));
	cr = calloc(cfg->ninsns + 1, sizeof(*cr));
	if (!x || !cr) {
		free(x);
		free(cr);
		return -ENOMEM;
	}
	used = add_ranges(cfg, l, off0, x, cr, dropped);
	for (size_t i = 0; used && i < cfg->ninsns && i < r->ninsns; i++) {
		struct est_insn *ei = &r->insns[i];

		ei->executions = fmax(x[i], 0);
		ei->cpi = ei->executions > 0 ? ei->cycles / ei->executions : 0;
	}
	for (size_t b = 0; used && b < cfg->nblocks && b < r->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct est_block *eb = &r->blocks[b];

		eb->executions = bl->n ? fmax(x[bl->first], 0) :
			fmax(x[cfg->blocks[cfg->entry].first], 0);
		eb->actual_cpi = eb->executions > 0 && bl->n ?
				 eb->cycles / (eb->executions * bl->n) : 0;
	}
	for (size_t e = 0; used && e < cfg->nedges && e < r->nedges; e++) {
		struct est_edge *ee = &r->edges[e];
		double src = r->blocks[cfg->edges[e].from].executions;

		ee->executions = edge_count(cfg, img, l, &cfg->edges[e], x, cr);
		ee->prob = src > 0 ? fmin(ee->executions / src, 1) : 0;
	}
	if (used) {
		r->relative = !l->taken;
		r->lbr_stacks = l->stacks;
	}
	free(x);
	free(cr);
	return used ? 1 : 0;
}

/* 90% interval of a count from its occurrences (count / scale), Poisson. */
static enum est_conf lbr_interval(double x, double scale, double *lo, double *hi)
{
	double n = scale > 0 ? x / scale : x, h;

	if (!(x > 0)) {
		*lo = *hi = 0;
		return EST_CONF_NONE;
	}
	*lo = est_poisson_lower(n, 1.645) * scale;
	*hi = est_poisson_upper(n, 1.645) * scale;
	h = fmax(*hi / x, *lo > 0 ? x / *lo : 1e9);
	return h <= 1.15 ? EST_CONF_HIGH : h <= 1.5 ? EST_CONF_MEDIUM : EST_CONF_LOW;
}

void est_lbr_intervals(const struct cfg *cfg, struct est_result *r, const struct import_lbr *l)
{
	for (size_t b = 0; b < cfg->nblocks && b < r->nblocks; b++) {
		struct est_block *eb = &r->blocks[b];

		eb->conf = lbr_interval(eb->executions, l->range_scale, &eb->lo, &eb->hi);
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++)
			r->insns[cfg->blocks[b].first + j].conf = eb->conf;
	}
	for (size_t e = 0; e < cfg->nedges && e < r->nedges; e++) {
		struct est_edge *ee = &r->edges[e];

		ee->conf = lbr_interval(ee->executions, l->range_scale, &ee->lo, &ee->hi);
	}
}
