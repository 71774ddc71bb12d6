/*
 * cfgviz.c - the annotated control-flow graph (dcpicfg with a profile):
 * blocks filled by their share of the procedure's cycles on a perceptual
 * scale (viridis, a legend beside the graph), edges as wide as their
 * estimated executions and labelled with them (solid where path samples saw
 * the transition, dashed where only the estimate has it), per block its
 * address range, executions, best-case and actual CPI and top culprit;
 * loops as clusters.  Only the hot blocks are drawn (the fewest holding
 * `hot` of the cycles, 99% by default): each connected run of cold blocks
 * becomes one summary node saying how many blocks and cycles it holds, so a
 * procedure of thousands of blocks still renders (PNG and PDF included).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/cgraph.h>

#include "dcpi/cfg.h"
#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/report.h"
#include "internal.h"

#define MAX_INSNS_SHOWN 6

/* viridis at 9 points, dark (cold) to bright (hot) reversed: the hottest is
 * the darkest, so heat reads as ink */
static const char *const viridis[] = {
	"#fde725", "#b5de2b", "#6ece58", "#35b779", "#1f9e89",
	"#26828e", "#31688e", "#3e4989", "#482878",
};
#define NVIRIDIS 9

static const char *heat_color(double frac)
{
	int k = (int)floor(frac * (NVIRIDIS - 1) + 0.5);

	if (k < 0)
		k = 0;
	if (k >= NVIRIDIS)
		k = NVIRIDIS - 1;
	return viridis[k];
}


/* A count as people read it: 3 significant digits with k, M, G or T from
 * a thousand on ("22.1", "823k", "1.01e+03T" beyond); under 0.01 (the
 * estimate's rounding dust) "<0.01". */
static const char *count_str(double x, char *buf, size_t len)
{
	static const char *const unit[] = { "", "k", "M", "G", "T" };
	int u = 0;

	if (x > 0 && x < 0.01) {
		snprintf(buf, len, "<0.01");
		return buf;
	}

	while (u < 4 && fabs(x) >= 999.5) {
		x /= 1000;
		u++;
	}
	snprintf(buf, len, "%.3g%s", x, unit[u]);
	return buf;
}

static void put(char *buf, size_t cap, size_t *n, const char *s)
{
	for (; *s && *n + 3 < cap; s++) {
		if (*s == '\\' || *s == '"' || *s == '{' || *s == '}' || *s == '<' ||
		    *s == '>' || *s == '|')
			buf[(*n)++] = '\\';
		buf[(*n)++] = *s;
	}
	buf[*n] = 0;
}

static void line(char *buf, size_t cap, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void line(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(buf, cap, n, tmp);
	if (*n + 3 < cap) {
		buf[(*n)++] = '\\';
		buf[(*n)++] = 'l';
		buf[*n] = 0;
	}
}

/* Block b's largest static stall (the model's M_i where it waited): its
 * reason and the instruction it waited on; "" when none. */
static void top_static(const struct cfg *cfg, const struct rep_cfg_heat *h, uint32_t b,
		       char *out, size_t len)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	const struct est_insn *best = NULL;

	out[0] = 0;
	for (uint32_t i = bl->first; i < bl->first + bl->n && i < h->r->ninsns; i++) {
		const struct est_insn *x = &h->r->insns[i];

		if (x->reason != MODEL_R_NONE && x->reason < MODEL_R_COUNT && x->m >= 1.5 &&
		    (!best || x->m > best->m))
			best = x;
	}
	if (!best)
		return;
	if (best->culprit >= 0 && (size_t)best->culprit < cfg->ninsns)
		snprintf(out, len, "static: %s on 0x%llx (%.3g cy each)",
			 model_reason_name((enum model_reason)best->reason),
			 (unsigned long long)cfg->insns[best->culprit].addr, best->m);
	else
		snprintf(out, len, "static: %s (%.3g cy each)",
			 model_reason_name((enum model_reason)best->reason), best->m);
}

/* Block b's largest dynamic stall and its likeliest culprit; "" when none
 * or when it holds under 2% of the block's cycles. */
static void top_dynamic(const struct cfg *cfg, const struct rep_cfg_heat *h, uint32_t b,
			char *out, size_t len)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	const struct cul_stall *best = NULL;
	char cy[32];

	out[0] = 0;
	for (uint32_t i = bl->first; h->cul && i < bl->first + bl->n; i++) {
		const struct cul_stall *s = cul_stall_of(h->cul, i);

		if (s && s->nsuspects && (!best || s->cycles > best->cycles))
			best = s;
	}
	if (!best || !(best->cycles >= 0.02 * h->r->blocks[b].cycles))
		return;
	count_str(best->cycles, cy, sizeof(cy));
	if (best->sus[0].insn >= 0)
		snprintf(out, len, "dynamic: %s at 0x%llx (%s cy, %.0f%%)",
			 cul_cause_name(best->sus[0].cause),
			 (unsigned long long)cfg->insns[best->sus[0].insn].addr, cy,
			 100 * best->cycles / h->r->blocks[b].cycles);
	else
		snprintf(out, len, "dynamic: %s (%s cy, %.0f%%)",
			 cul_cause_name(best->sus[0].cause), cy,
			 100 * best->cycles / h->r->blocks[b].cycles);
}

static char *block_label(const struct cfg *cfg, const struct rep_cfg_heat *h, uint32_t b,
			 double share)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	size_t cap = 1024 + (size_t)MAX_INSNS_SHOWN * (CFG_TEXT_MAX * 2 + 24), n = 0;
	char *buf = malloc(cap), cul[160];

	if (!buf)
		return NULL;
	buf[0] = 0;
	if (bl->flags & CFG_B_EXIT) {
		line(buf, cap, &n, "exit");
		return buf;
	}
	line(buf, cap, &n, "0x%llx-0x%llx  (%u insns)", (unsigned long long)bl->start,
	     (unsigned long long)bl->end, bl->n);
	if (h && h->r) {
		const struct est_block *eb = &h->r->blocks[b];

		char x[32];

		line(buf, cap, &n, "%.1f%% of cycles, %s executions", 100 * share,
		     count_str(eb->executions, x, sizeof(x)));
		line(buf, cap, &n, "CPI %.2f best, %.2f actual", eb->best_cpi, eb->actual_cpi);
		top_static(cfg, h, b, cul, sizeof(cul));
		if (cul[0])
			line(buf, cap, &n, "%s", cul);
		top_dynamic(cfg, h, b, cul, sizeof(cul));
		if (cul[0])
			line(buf, cap, &n, "%s", cul);
	}
	for (uint32_t i = 0; i < bl->n && i < MAX_INSNS_SHOWN; i++) {
		char text[CFG_TEXT_MAX];
		const struct cfg_insn *in = &cfg->insns[bl->first + i];

		line(buf, cap, &n, "%llx: %s", (unsigned long long)in->addr,
		     cfg_insn_text(in, text, sizeof(text)));
	}
	if (bl->n > MAX_INSNS_SHOWN)
		line(buf, cap, &n, "... %u more", bl->n - MAX_INSNS_SHOWN);
	return buf;
}

/* Mark the hot blocks: the fewest, hottest first, holding share `hot` of
 * the cycles; the rest are grouped into connected cold regions. */
static int pick_hot(const struct cfg *cfg, const struct est_result *r, double hot,
		    char *shown, int *region, size_t *nregions)
{
	size_t n = cfg->nblocks, *order = malloc((n ? n : 1) * sizeof(*order));
	double total = 0, acc = 0;

	if (!order)
		return -ENOMEM;
	for (size_t b = 0; b < n; b++) {
		order[b] = b;
		total += r->blocks[b].cycles;
		shown[b] = 0;
		region[b] = -1;
	}
	for (size_t i = 1; i < n; i++)	/* insertion sort by cycles, descending */
		for (size_t j = i; j > 0 && r->blocks[order[j]].cycles >
					    r->blocks[order[j - 1]].cycles; j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		size_t b = order[i];

		if (hot >= 1 || acc < hot * total || i == 0)
			shown[b] = 1;
		acc += r->blocks[b].cycles;
	}
	shown[cfg->exit] = 1;
	shown[cfg->entry] = 1;
	free(order);
	/* cold regions: connected components of hidden blocks */
	*nregions = 0;
	for (size_t b = 0; b < n; b++) {
		size_t *stack, sp = 0;

		if (shown[b] || region[b] >= 0)
			continue;
		stack = malloc(n * sizeof(*stack));
		if (!stack)
			return -ENOMEM;
		region[b] = (int)*nregions;
		stack[sp++] = b;
		while (sp) {
			size_t x = stack[--sp];
			const struct cfg_block *bl = &cfg->blocks[x];

			for (int dir = 0; dir < 2; dir++) {
				uint32_t ne = dir ? bl->npred : bl->nsucc;

				for (uint32_t k = 0; k < ne; k++) {
					const struct cfg_edge *e = &cfg->edges[dir ? bl->pred[k] :
									     bl->succ[k]];
					size_t y = dir ? e->from : e->to;

					if (!shown[y] && region[y] < 0) {
						region[y] = (int)*nregions;
						stack[sp++] = y;
					}
				}
			}
		}
		free(stack);
		(*nregions)++;
	}
	return 0;
}

static void legend(Agraph_t *g, double maxshare, int have_paths)
{
	char html[3072];
	size_t n = 0;

	n += (size_t)snprintf(html + n, sizeof(html) - n,
			      "<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" "
			      "CELLPADDING=\"2\"><TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">"
			      "<B>fill: share of the procedure's cycles</B></TD></TR><TR>",
			      NVIRIDIS);
	for (int k = 0; k < NVIRIDIS; k++)
		n += (size_t)snprintf(html + n, sizeof(html) - n,
				      "<TD BGCOLOR=\"%s\" WIDTH=\"38\" HEIGHT=\"18\" "
				      "FIXEDSIZE=\"TRUE\"><FONT COLOR=\"%s\" POINT-SIZE=\"9\">"
				      "%.3g%%</FONT></TD>", viridis[k],
				      k >= NVIRIDIS / 2 ? "white" : "black",
				      100 * maxshare * k / (NVIRIDIS - 1));
	snprintf(html + n, sizeof(html) - n, "</TR>"
		 "<TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">(the hottest block holds %.1f%%)</TD></TR>"
		 "<TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">edges: width and label = estimated "
		 "executions</TD></TR>"
		 "<TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">%s</TD></TR>"
		 "<TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">3-D box: connected cold blocks, "
		 "collapsed</TD></TR></TABLE>", NVIRIDIS, 100 * maxshare, NVIRIDIS, NVIRIDIS,
		 have_paths ? "solid: seen in path samples, dashed: never seen" :
		 "no path samples: every edge solid", NVIRIDIS);
	{
		Agnode_t *l = agnode(g, "legend", 1);

		agsafeset(l, "shape", "plaintext", "");
		agsafeset(l, "style", "", "");
		agsafeset(l, "fontname", "sans", "");
		agsafeset(l, "fontsize", "11", "");
		agsafeset(l, "label", agstrdup_html(g, html), "");
	}
}

/* The numbers behind a block's node, unrounded, for tools that read the DOT:
 * its start address, cycles, share of the procedure's, executions and CPIs. */
static void exact_block(Agnode_t *nd, const struct cfg *cfg, const struct est_result *r,
			size_t b, double share)
{
	const struct est_block *eb = &r->blocks[b];
	char v[64];

	if (cfg->blocks[b].flags & CFG_B_EXIT)
		return;
	snprintf(v, sizeof(v), "0x%llx", (unsigned long long)cfg->blocks[b].start);
	agsafeset(nd, "dcpi_start", v, "");
	snprintf(v, sizeof(v), "%.17g", eb->cycles);
	agsafeset(nd, "dcpi_cycles", v, "");
	snprintf(v, sizeof(v), "%.17g", share);
	agsafeset(nd, "dcpi_share", v, "");
	snprintf(v, sizeof(v), "%.17g", eb->executions);
	agsafeset(nd, "dcpi_executions", v, "");
	snprintf(v, sizeof(v), "%.17g", eb->best_cpi);
	agsafeset(nd, "dcpi_best_cpi", v, "");
	snprintf(v, sizeof(v), "%.17g", eb->actual_cpi);
	agsafeset(nd, "dcpi_actual_cpi", v, "");
}

/* Is loop inner l inside loop outer (or outer itself; -1: the procedure)? */
static int loop_within(const struct cfg *cfg, int l, int outer)
{
	while (l >= 0 && l != outer)
		l = cfg->loops[l].parent;
	return l == outer;
}

/* The innermost loop holding both loops a and b (-1: none). */
static int loop_common(const struct cfg *cfg, int a, int b)
{
	while (a >= 0 && !loop_within(cfg, b, a))
		a = cfg->loops[a].parent;
	return a;
}

static Agraph_t *make_graph(const struct cfg *cfg, const struct rep_cfg_heat *h)
{
	size_t n = cfg->nblocks, nreg = 0;
	Agraph_t *g = agopen("cfg", Agdirected, NULL);
	Agnode_t **nodes = calloc(n ? n : 1, sizeof(*nodes)), **rnodes = NULL;
	Agraph_t **sub = calloc(cfg->nloops ? cfg->nloops : 1, sizeof(*sub));
	char *shown = malloc(n ? n : 1), name[64], label[256];
	int *region = malloc((n ? n : 1) * sizeof(*region));
	double total = 0, maxshare = 0, maxexec = 0, *rcyc = NULL;
	size_t *rcount = NULL;
	uint64_t *rfirst = NULL;
	int *rloop = NULL;

	if (!g || !nodes || !sub || !shown || !region)
		goto fail;
	for (size_t b = 0; h && h->r && b < n; b++)
		total += h->r->blocks[b].cycles;
	if (h && h->r) {
		if (pick_hot(cfg, h->r, h->hot, shown, region, &nreg) < 0)
			goto fail;
	} else {
		memset(shown, 1, n);
	}
	for (size_t b = 0; h && h->r && b < n; b++)
		if (total > 0)
			maxshare = fmax(maxshare, h->r->blocks[b].cycles / total);
	for (size_t e = 0; h && h->r && e < cfg->nedges; e++)
		maxexec = fmax(maxexec, h->r->edges[e].executions);
	agsafeset(g, "label", cfg->name, "");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "fontname", "monospace");
	agattr(g, AGNODE, "style", "filled");
	agattr(g, AGNODE, "fontcolor", "black");
	agattr(g, AGRAPH, "fontname", "sans");
	agattr(g, AGEDGE, "fontname", "sans");
	agattr(g, AGEDGE, "fontsize", "11");
	for (size_t b = 0; b < n; b++) {
		double share = total > 0 ? h->r->blocks[b].cycles / total : 0;
		char *lab;

		if (!shown[b])
			continue;
		lab = block_label(cfg, h && h->r ? h : NULL, (uint32_t)b, share);
		if (!lab)
			goto fail;
		snprintf(name, sizeof(name), "b%zu", b);
		nodes[b] = agnode(rep_loop_graph(g, sub, cfg, cfg->blocks[b].loop), name, 1);
		agsafeset(nodes[b], "label", lab, "");
		if (cfg->blocks[b].flags & CFG_B_EXIT) {
			agsafeset(nodes[b], "fillcolor", "#ffffff", "");
		} else if (h && h->r) {
			double frac = maxshare > 0 ? share / maxshare : 0;

			agsafeset(nodes[b], "fillcolor", (char *)heat_color(frac), "");
			if (frac >= 0.5)
				agsafeset(nodes[b], "fontcolor", "white", "");
		} else {
			agsafeset(nodes[b], "fillcolor", "#f0f0f0", "");
		}
		if (cfg->blocks[b].flags & (CFG_B_ENTRY | CFG_B_EXIT))
			agsafeset(nodes[b], "peripheries", "2", "");
		free(lab);
		if (h && h->r)
			exact_block(nodes[b], cfg, h->r, b, share);
	}
	if (nreg) {
		rnodes = calloc(nreg, sizeof(*rnodes));
		rcyc = calloc(nreg, sizeof(*rcyc));
		rcount = calloc(nreg, sizeof(*rcount));
		rfirst = calloc(nreg, sizeof(*rfirst));
		rloop = calloc(nreg, sizeof(*rloop));
		if (!rnodes || !rcyc || !rcount || !rfirst || !rloop)
			goto fail;
		for (size_t b = 0; b < n; b++)
			if (region[b] >= 0) {
				int k = region[b];

				rcyc[k] += h->r->blocks[b].cycles;
				rloop[k] = rcount[k] ?
					   loop_common(cfg, rloop[k], cfg->blocks[b].loop) :
					   cfg->blocks[b].loop;
				if (!rcount[k]++ || cfg->blocks[b].start < rfirst[k])
					rfirst[k] = cfg->blocks[b].start;
			}
		for (size_t k = 0; k < nreg; k++) {
			snprintf(name, sizeof(name), "cold%zu", k);
			/* in the innermost loop holding all its blocks */
			rnodes[k] = agnode(rep_loop_graph(g, sub, cfg, rloop[k]), name, 1);
			snprintf(label, sizeof(label),
				 "%zu cold block%s from 0x%llx\\n%.2f%% of cycles", rcount[k],
				 rcount[k] == 1 ? "" : "s", (unsigned long long)rfirst[k],
				 total > 0 ? 100 * rcyc[k] / total : 0);
			agsafeset(rnodes[k], "label", label, "");
			agsafeset(rnodes[k], "shape", "box3d", "");
			agsafeset(rnodes[k], "fillcolor", "#f5f5f5", "");
			agsafeset(rnodes[k], "fontname", "sans", "");
			snprintf(label, sizeof(label), "%zu", rcount[k]);
			agsafeset(rnodes[k], "dcpi_blocks", label, "");
			snprintf(label, sizeof(label), "%.17g", rcyc[k]);
			agsafeset(rnodes[k], "dcpi_cycles", label, "");
			snprintf(label, sizeof(label), "%.17g", total > 0 ? rcyc[k] / total : 0);
			agsafeset(rnodes[k], "dcpi_share", label, "");
			snprintf(label, sizeof(label), "0x%llx", (unsigned long long)rfirst[k]);
			agsafeset(rnodes[k], "dcpi_first", label, "");
		}
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];
		Agnode_t *a = shown[ed->from] ? nodes[ed->from] : rnodes[region[ed->from]];
		Agnode_t *z = shown[ed->to] ? nodes[ed->to] : rnodes[region[ed->to]];
		double x = h && h->r ? h->r->edges[e].executions : 0;
		double obs = h && h->edge_obs ? h->edge_obs[e] : 0;
		Agedge_t *ag = NULL;
		char w[32];

		if (!a || !z || (a == z && !shown[ed->from]))
			continue;	/* inside one cold region */
		/* the edges between a cold region and one node are drawn as one,
		 * their executions (and observations) summed */
		if (!shown[ed->from] || !shown[ed->to])
			ag = agedge(g, a, z, NULL, 0);
		if (ag) {
			x += strtod(agget(ag, "dcpi_executions"), NULL);
			if (h->edge_obs)
				obs += strtod(agget(ag, "dcpi_observed"), NULL);
		} else {
			snprintf(name, sizeof(name), "e%zu", e);
			ag = agedge(g, a, z, name, 1);
		}
		if (h && h->r) {
			count_str(x, label, sizeof(label));
			snprintf(w, sizeof(w), "%.1f",
				 1 + 5 * (maxexec > 0 ? fmin(1, x / maxexec) : 0));
			agsafeset(ag, "label", label, "");
			agsafeset(ag, "penwidth", w, "");
			snprintf(label, sizeof(label), "%.17g", x);
			agsafeset(ag, "dcpi_executions", label, "");
			if (h->edge_obs) {
				snprintf(label, sizeof(label), "%.17g", obs);
				agsafeset(ag, "dcpi_observed", label, "");
				agsafeset(ag, "style", obs > 0 ? "solid" : "dashed", "");
			}
		} else {
			agsafeset(ag, "label", (char *)cfg_edge_kind_name(ed->kind), "");
		}
	}
	if (h && h->r)
		legend(g, maxshare, h->edge_obs != NULL);
	goto done;
fail:
	if (g)
		agclose(g);
	g = NULL;
done:
	free(nodes);
	free(rnodes);
	free(rcyc);
	free(rcount);
	free(rfirst);
	free(rloop);
	free(sub);
	free(shown);
	free(region);
	return g;
}

int rep_cfg_render(const struct cfg *cfg, const struct rep_cfg_heat *h, const char *format,
		   FILE *f, struct dcpi_err *err)
{
	Agraph_t *g;

	if (h && !(h->hot > 0 && h->hot <= 1))
		return dcpi_errf(err, -EINVAL, "hot share %g is not in (0, 1]", h->hot);
	g = make_graph(cfg, h);
	if (!g)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	return rep_graph_write(g, cfg->name, format, f, err);
}
