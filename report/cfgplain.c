/*
 * cfgplain.c - the control-flow graph of one procedure without a profile
 * (dcpicfg --static, or no samples), as DOT (Graphviz cgraph), rendered by
 * gvc (svg, png, pdf), or as JSON.  Blocks show their address range and
 * instructions, edges their kind, and both their cycle-equivalence class as
 * a label and a color (DCPI paper sec. 6.1.2); loops are nested clusters.
 * The annotated graph is cfgviz.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "dcpi/cfg.h"
#include "dcpi/report.h"
#include "internal.h"

static const char *const palette[] = {
	"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
	"#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

static const char *class_color(int cls)
{
	return cls < 0 ? "#ffffff" : palette[cls % NPALETTE];
}

/* Append s to buf, escaped for a DOT label whose lines end in \l. */
static size_t put_escaped(char *buf, size_t cap, size_t n, const char *s)
{
	for (; *s && n + 3 < cap; s++) {
		if (*s == '\\' || *s == '"' || *s == '{' || *s == '}' || *s == '<' ||
		    *s == '>' || *s == '|')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = 0;
	return n;
}

static char *block_label(const struct cfg *cfg, const struct cfg_block *b)
{
	size_t cap = 128 + (size_t)b->n * (CFG_TEXT_MAX * 2 + 24), n;
	char *buf = malloc(cap), line[64];

	if (!buf)
		return NULL;
	if (b->flags & CFG_B_EXIT) {
		snprintf(buf, cap, "exit  c%d", b->cls);
		return buf;
	}
	n = (size_t)snprintf(buf, cap, "0x%" PRIx64 "-0x%" PRIx64 "  c%d\\l", b->start,
			     b->end, b->cls);
	if (b->loop_depth)
		n += (size_t)snprintf(buf + n, cap - n, "loop depth %d%s\\l", b->loop_depth,
				      (b->flags & CFG_B_LOOP_HEAD) ? ", header" : "");
	for (uint32_t i = 0; i < b->n; i++) {
		char text[CFG_TEXT_MAX];
		const struct cfg_insn *in = &cfg->insns[b->first + i];

		snprintf(line, sizeof(line), "%" PRIx64 ": ", in->addr);
		n = put_escaped(buf, cap, n, line);
		n = put_escaped(buf, cap, n, cfg_insn_text(in, text, sizeof(text)));
		if (n + 3 < cap) {
			buf[n++] = '\\';
			buf[n++] = 'l';
			buf[n] = 0;
		}
	}
	return buf;
}

/* The cluster a block is drawn in: its innermost loop's, nested. */
Agraph_t *rep_loop_graph(Agraph_t *root, Agraph_t **sub, const struct cfg *cfg, int l)
{
	char name[64];
	Agraph_t *parent;

	if (l < 0)
		return root;
	if (sub[l])
		return sub[l];
	parent = rep_loop_graph(root, sub, cfg, cfg->loops[l].parent);
	snprintf(name, sizeof(name), "cluster_loop%d", l);
	sub[l] = agsubg(parent, name, 1);
	snprintf(name, sizeof(name), "loop %d, depth %d%s", l, cfg->loops[l].depth,
		 cfg->loops[l].irreducible ? " (irreducible)" : "");
	agsafeset(sub[l], "label", name, "");
	agsafeset(sub[l], "style", cfg->loops[l].irreducible ? "dashed" : "rounded", "");
	return sub[l];
}

static Agraph_t *make_graph(const struct cfg *cfg)
{
	Agraph_t *g = agopen("cfg", Agdirected, NULL);
	Agnode_t **nodes = calloc(cfg->nblocks, sizeof(*nodes));
	Agraph_t **sub = calloc(cfg->nloops ? cfg->nloops : 1, sizeof(*sub));
	char name[64];

	if (!g || !nodes || !sub)
		goto fail;
	agsafeset(g, "label", cfg->name, "");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "fontname", "monospace");
	agattr(g, AGNODE, "style", "filled");
	for (size_t i = 0; i < cfg->nblocks; i++) {
		const struct cfg_block *b = &cfg->blocks[i];
		char *label = block_label(cfg, b);

		if (!label)
			goto fail;
		snprintf(name, sizeof(name), "b%zu", i);
		nodes[i] = agnode(rep_loop_graph(g, sub, cfg, b->loop), name, 1);
		agsafeset(nodes[i], "label", label, "");
		agsafeset(nodes[i], "fillcolor", (char *)class_color(b->cls), "");
		if (b->flags & (CFG_B_ENTRY | CFG_B_EXIT))
			agsafeset(nodes[i], "peripheries", "2", "");
		if (b->flags & CFG_B_LOOP_HEAD)
			agsafeset(nodes[i], "penwidth", "3", "");
		free(label);
	}
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];
		Agedge_t *x;

		snprintf(name, sizeof(name), "e%zu", e);
		x = agedge(g, nodes[ed->from], nodes[ed->to], name, 1);
		snprintf(name, sizeof(name), "%s c%d", cfg_edge_kind_name(ed->kind), ed->cls);
		agsafeset(x, "label", name, "");
		agsafeset(x, "color", (char *)class_color(ed->cls), "");
		agsafeset(x, "penwidth", "2", "");
		if (ed->kind == CFG_E_RETURN || ed->kind == CFG_E_TAILCALL)
			agsafeset(x, "style", "dashed", "");
	}
	free(nodes);
	free(sub);
	return g;
fail:
	free(nodes);
	free(sub);
	if (g)
		agclose(g);
	return NULL;
}

int rep_graph_write(Agraph_t *g, const char *name, const char *format, FILE *f,
		    struct dcpi_err *err)
{
	GVC_t *gvc = NULL;
	int rc = 0;

	if (!strcmp(format, "dot")) {
		if (agwrite(g, f) == EOF)
			rc = dcpi_errf(err, -EIO, "%s: write failed", name);
		goto out;
	}
	gvc = gvContext();
	if (!gvc || gvLayout(gvc, g, "dot") != 0) {
		rc = dcpi_errf(err, -EINVAL, "%s: graphviz layout failed", name);
		goto out;
	}
	if (gvRender(gvc, g, format, f) != 0)
		rc = dcpi_errf(err, -EINVAL, "%s: graphviz cannot render %s", name, format);
	gvFreeLayout(gvc, g);
out:
	agclose(g);
	if (gvc)
		gvFreeContext(gvc);
	return rc;
}

int rep_cfg_plain(const struct cfg *cfg, const char *format, FILE *f, struct dcpi_err *err)
{
	Agraph_t *g = make_graph(cfg);

	if (!g)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
	return rep_graph_write(g, cfg->name, format, f, err);
}

static void json_block(FILE *f, const struct cfg *cfg, const struct cfg_block *b)
{
	fprintf(f, "{\"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", \"class\": %d, "
		"\"loop_depth\": %d, \"loop\": %d, \"ninsns\": %u, \"flags\": [", b->start, b->end,
		b->cls, b->loop_depth, b->loop, b->n);
	static const char *const names[] = { "entry", "exit", "noreturn", "indirect",
					     "unresolved", "dead", "loop_head", "irreducible" };
	int first = 1;

	for (unsigned k = 0; k < 8; k++) {
		if (b->flags & (1u << k)) {
			fprintf(f, "%s\"%s\"", first ? "" : ", ", names[k]);
			first = 0;
		}
	}
	fprintf(f, "], \"insns\": [");
	for (uint32_t i = 0; i < b->n; i++) {
		char text[CFG_TEXT_MAX];
		const struct cfg_insn *in = &cfg->insns[b->first + i];

		fprintf(f, "%s{\"addr\": \"0x%" PRIx64 "\", \"text\": ", i ? ", " : "", in->addr);
		rep_json_str(f, cfg_insn_text(in, text, sizeof(text)));
		fputc('}', f);
	}
	fprintf(f, "]}");
}

static void json_addr(FILE *f, const struct cfg *cfg, uint32_t b)
{
	if (b == cfg->exit)
		fprintf(f, "\"exit\"");
	else
		fprintf(f, "\"0x%" PRIx64 "\"", cfg->blocks[b].start);
}

void rep_cfg_json(FILE *f, const struct cfg *cfg, const char *image)
{
	fprintf(f, "{\"procedure\": ");
	rep_json_str(f, cfg->name);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, image);
	fprintf(f, ", \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", "
		"\"missing_edges\": %s, \"indirect_jumps\": %u, \"indirect_resolved\": %u, "
		"\"nclasses\": %d,\n \"blocks\": [", cfg->start, cfg->end,
		cfg->missing_edges ? "true" : "false", cfg->indirect_jumps,
		cfg->indirect_resolved, cfg->nclasses);
	for (size_t i = 0; i + 1 < cfg->nblocks; i++) {
		fprintf(f, "%s\n  ", i ? "," : "");
		json_block(f, cfg, &cfg->blocks[i]);
	}
	fprintf(f, "],\n \"exit_class\": %d,\n \"edges\": [", cfg->blocks[cfg->exit].cls);
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];

		fprintf(f, "%s\n  {\"from\": ", e ? "," : "");
		json_addr(f, cfg, ed->from);
		fprintf(f, ", \"to\": ");
		json_addr(f, cfg, ed->to);
		fprintf(f, ", \"kind\": \"%s\", \"class\": %d}", cfg_edge_kind_name(ed->kind),
			ed->cls);
	}
	fprintf(f, "],\n \"loops\": [");
	for (size_t l = 0; l < cfg->nloops; l++) {
		const struct cfg_loop *lp = &cfg->loops[l];

		fprintf(f, "%s\n  {\"header\": ", l ? "," : "");
		json_addr(f, cfg, lp->header);
		fprintf(f, ", \"parent\": %d, \"depth\": %d, \"irreducible\": %s, \"blocks\": [",
			lp->parent, lp->depth, lp->irreducible ? "true" : "false");
		for (uint32_t k = 0; k < lp->nblocks; k++) {
			fprintf(f, "%s", k ? ", " : "");
			json_addr(f, cfg, lp->blocks[k]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "],\n \"data\": [");
	for (size_t i = 0; i < cfg->ndata; i++)
		fprintf(f, "%s{\"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", "
			"\"what\": \"%s\"}", i ? ", " : "", cfg->data[i].start, cfg->data[i].end,
			cfg->data[i].what);
	fprintf(f, "]}\n");
}

