/*
 * propagate.c - DCPI local propagation (paper sec. 6.1.4).
 *
 * Except at the entry and the exit, a block's count equals the sum of its
 * in-edges and the sum of its out-edges; the exit -> entry edge (virtual,
 * index nedges here) closes the circulation.  Iterating as a dataflow
 * solver: when every term of a sum but one is known, the last one is
 * determined.  Each new estimate goes at once to every member of its
 * equivalence class, and none is allowed below zero.  Known values are never
 * changed, so inconsistent inputs stay inconsistent (the global solver,
 * solver.c, settles them).  A class without samples of its own is never set
 * above its upper bound (ratios.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "dcpi/estimate.h"

struct prop {
	const struct cfg *cfg;
	struct est_class *cls;
	double *x, *y;			/* y[nedges] is the exit -> entry edge */
	uint32_t *start, *member;	/* CSR: class -> members (b, or nb + e) */
	int changed;
};

static int members_build(struct prop *p)
{
	const struct cfg *cfg = p->cfg;
	size_t nb = cfg->nblocks, nc = (size_t)cfg->nclasses;

	p->start = calloc(nc + 2, sizeof(*p->start));
	p->member = malloc((nb + cfg->nedges + 1) * sizeof(*p->member));
	if (!p->start || !p->member)
		return -ENOMEM;
	for (size_t b = 0; b < nb; b++)
		if (cfg->blocks[b].cls >= 0)
			p->start[cfg->blocks[b].cls + 2]++;
	for (size_t e = 0; e < cfg->nedges; e++)
		if (cfg->edges[e].cls >= 0)
			p->start[cfg->edges[e].cls + 2]++;
	for (size_t c = 2; c < nc + 2; c++)
		p->start[c] += p->start[c - 1];
	for (size_t b = 0; b < nb; b++)
		if (cfg->blocks[b].cls >= 0)
			p->member[p->start[cfg->blocks[b].cls + 1]++] = (uint32_t)b;
	for (size_t e = 0; e < cfg->nedges; e++)
		if (cfg->edges[e].cls >= 0)
			p->member[p->start[cfg->edges[e].cls + 1]++] = (uint32_t)(nb + e);
	return 0;
}

static void class_set(struct prop *p, int c, double v)
{
	size_t nb = p->cfg->nblocks;

	/* a skid-starved class cannot have run more than its samples allow */
	if (p->cls[c].samples <= 0 && p->cls[c].bound > 0 && v > p->cls[c].bound)
		v = p->cls[c].bound;
	p->cls[c].estimate = v;
	if (p->cls[c].source == EST_S_NONE)
		p->cls[c].source = EST_S_PROPAGATED;
	for (uint32_t k = p->start[c]; k < p->start[c + 1]; k++) {
		uint32_t id = p->member[k];

		if (id < nb)
			p->x[id] = v;
		else
			p->y[id - nb] = v;
	}
	p->changed = 1;
}

/* Set a block's or an edge's count *slot (of class c, -1: none) to v, not
 * below 0: through its class when it has one. */
static void member_set(struct prop *p, int c, double *slot, double v)
{
	if (v < 0)
		v = 0;
	if (c >= 0 && c < p->cfg->nclasses)
		class_set(p, c, v);
	else
		*slot = v, p->changed = 1;
}

static void block_set(struct prop *p, size_t b, double v)
{
	member_set(p, p->cfg->blocks[b].cls, &p->x[b], v);
}

static void edge_set(struct prop *p, size_t e, double v)
{
	member_set(p, e < p->cfg->nedges ? p->cfg->edges[e].cls : -1, &p->y[e], v);
}

/* One side of block b: edges list (plus the virtual edge when virt). */
static void side(struct prop *p, size_t b, const uint32_t *list, uint32_t n, int virt)
{
	size_t ve = p->cfg->nedges;
	double sum = 0;
	long unknown = -1;
	int nunknown = 0;

	if (!n && !virt)
		return;
	for (uint32_t k = 0; k <= n; k++) {
		size_t e;

		if (k == n && !virt)
			break;
		e = k < n ? list[k] : ve;
		if (p->y[e] < 0) {
			nunknown++;
			unknown = (long)e;
		} else {
			sum += p->y[e];
		}
	}
	if (p->x[b] < 0 && nunknown == 0)
		block_set(p, b, sum);
	else if (p->x[b] >= 0 && nunknown == 1)
		edge_set(p, (size_t)unknown, p->x[b] - sum);
}

int est_propagate(const struct cfg *cfg, struct est_class *classes, double *x, double *y,
		  struct dcpi_err *err)
{
	struct prop p = { cfg, classes, x, y, NULL, NULL, 1 };
	int rounds = 0;

	if (members_build(&p) < 0) {
		free(p.start);
		free(p.member);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	}
	for (size_t b = 0; b < cfg->nblocks; b++) {
		int c = cfg->blocks[b].cls;

		x[b] = c >= 0 && c < cfg->nclasses ? classes[c].estimate : -1;
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		int c = cfg->edges[e].cls;

		y[e] = c >= 0 && c < cfg->nclasses ? classes[c].estimate : -1;
	}
	y[cfg->nedges] = -1;
	/* Each round fixes at least one value or stops, so this ends. */
	while (p.changed && rounds++ < (int)(cfg->nblocks + cfg->nedges + 2)) {
		p.changed = 0;
		for (size_t b = 0; b < cfg->nblocks; b++) {
			const struct cfg_block *bl = &cfg->blocks[b];

			side(&p, b, bl->pred, bl->npred, b == cfg->entry);
			side(&p, b, bl->succ, bl->nsucc, b == cfg->exit);
		}
	}
	free(p.start);
	free(p.member);
	return 0;
}
