/*
 * tools/cfg.c - dcpicfg: the control-flow graph of one procedure, as DOT (via
 * Graphviz cgraph), rendered by gvc (svg, png, pdf), or as JSON.  Blocks show
 * their address range and instructions, edges their kind, and both their
 * cycle-equivalence class as a label and a color (DCPI paper sec. 6.1.2);
 * loops are nested clusters.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "tools.h"

static const char *const palette[] = {
	"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
	"#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

static const char *class_color(int cls)
{
	return cls < 0 ? "#ffffff" : palette[cls % NPALETTE];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [--image FILE | --db DIR [--epoch E]] "
		"[--format dot|svg|png|pdf|json] [--json] [-o FILE] [--hot P | --all] [--static] PROC\n"
		"  with samples of PROC in the database: the annotated graph (blocks filled by\n"
		"  share of cycles, edges by estimated executions, CPI and culprits; only the\n"
		"  blocks holding P of the cycles, default 0.99, cold regions collapsed; --all\n"
		"  every block; dcpicalc's options apply); --static or no samples: the CFG alone\n"
		"  PROC is a name with or without parameters (f, 'f(int)', ns::f), a mangled\n"
		"  name, an address (0x...), any of them after IMAGE: to pick the image\n"
		"  without --image, PROC is looked up in the images profiled in the\n"
		"  database (--db, default $DCPIDB, then ./dcpidb; --epoch, default newest)\n",
		tool_name);
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
		const struct cfg_insn *in = &cfg->insns[b->first + i];

		snprintf(line, sizeof(line), "%" PRIx64 ": ", in->addr);
		n = put_escaped(buf, cap, n, line);
		n = put_escaped(buf, cap, n, in->text);
		if (n + 3 < cap) {
			buf[n++] = '\\';
			buf[n++] = 'l';
			buf[n] = 0;
		}
	}
	return buf;
}

/* The cluster a block is drawn in: its innermost loop's, nested. */
static Agraph_t *loop_graph(Agraph_t *root, Agraph_t **sub, const struct cfg *cfg, int l)
{
	char name[64];
	Agraph_t *parent;

	if (l < 0)
		return root;
	if (sub[l])
		return sub[l];
	parent = loop_graph(root, sub, cfg, cfg->loops[l].parent);
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
		nodes[i] = agnode(loop_graph(g, sub, cfg, b->loop), name, 1);
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

static int write_graph(const struct cfg *cfg, const char *format, const char *out)
{
	GVC_t *gvc = NULL;
	Agraph_t *g = make_graph(cfg);
	FILE *f = stdout;
	int rc = 1;

	if (!g)
		return tool_fail("%s: out of memory", cfg->name);
	if (out && !(f = fopen(out, "w"))) {
		rc = tool_fail("%s: %s", out, strerror(errno));
		goto out;
	}
	if (!strcmp(format, "dot")) {
		if (agwrite(g, f) == EOF) {
			rc = tool_fail("%s: write failed", out ? out : "stdout");
			goto out;
		}
		rc = 0;
		goto out;
	}
	gvc = gvContext();
	if (!gvc || gvLayout(gvc, g, "dot") != 0) {
		rc = tool_fail("%s: graphviz layout failed", cfg->name);
		goto out;
	}
	if (gvRender(gvc, g, format, f) != 0)
		rc = tool_fail("%s: graphviz cannot render %s", cfg->name, format);
	else
		rc = 0;
	gvFreeLayout(gvc, g);
out:
	if (f && f != stdout && fclose(f) != 0 && rc == 0)
		rc = tool_fail("%s: %s", out, strerror(errno));
	agclose(g);
	if (gvc)
		gvFreeContext(gvc);
	return rc;
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
		const struct cfg_insn *in = &cfg->insns[b->first + i];

		fprintf(f, "%s{\"addr\": \"0x%" PRIx64 "\", \"text\": ", i ? ", " : "", in->addr);
		tool_json_str(f, in->text);
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

static void write_json_to(FILE *f, const struct cfg *cfg, const char *image)
{
	fprintf(f, "{\"procedure\": ");
	tool_json_str(f, cfg->name);
	fprintf(f, ", \"image\": ");
	tool_json_str(f, image);
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

static int write_json(const struct cfg *cfg, const char *image, const char *out)
{
	FILE *f = out ? fopen(out, "w") : stdout;

	if (!f)
		return tool_fail("%s: %s", out, strerror(errno));
	write_json_to(f, cfg, image);
	if (ferror(f) || (out && fclose(f) != 0))
		return tool_fail("%s: write failed", out ? out : "stdout");
	return 0;
}

/*
 * PROC among the images profiled in the database (--db, --epoch): the image
 * that holds it is opened into *img.  A name in several images is
 * ambiguous; an address takes the first image.
 */
static int find_in_db(const char *dbdir, const char *epoch, const char *spec,
		      struct image **img, const struct img_proc **proc)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *p = NULL;
	struct prof_db *db = NULL;
	char used[128] = "";
	size_t n = 0, k;
	int rc;

	if (prof_db_open(dbdir, 0, &db, &err) < 0)
		return tool_fail("%s (give --image FILE, or --db DIR)", err.msg);
	rc = rep_load_profiles(db, epoch, &p, &n, used, sizeof(used), &err);
	if (rc == 0)
		rc = rep_find_proc(p, n, NULL, spec, IMG_NO_DWARF, img, proc, &k, &err);
	if (rc < 0)
		rc = tool_fail("%s (epoch %s of %s)", err.msg, used[0] ? used : "?", dbdir);
	prof_profiles_free(p, n);
	prof_db_close(db);
	return rc;
}

int calc_cfg(int argc, char **argv);

/* Does the database hold samples of PROC (in image, when given)? */
static int have_samples(const char *dbdir, const char *epoch, const char *image,
			const char *spec)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *p = NULL;
	struct prof_db *db = NULL;
	const struct img_proc *proc;
	struct image *img = NULL;
	char used[128];
	size_t n = 0, k;
	int yes = 0;

	if (access(dbdir, R_OK) || prof_db_open(dbdir, 0, &db, &err) < 0)
		return 0;
	if (rep_load_profiles(db, epoch, &p, &n, used, sizeof(used), &err) == 0) {
		if (image) {
			for (size_t i = 0; i < n && !yes; i++)
				yes = p[i].total > 0 && !strcmp(p[i].image.path, image);
		} else if (rep_find_proc(p, n, NULL, spec, IMG_NO_DWARF, &img, &proc, &k,
					 &err) == 0) {
			yes = p[k].total > 0;
			img_close(img);
		}
	}
	prof_profiles_free(p, n);
	prof_db_close(db);
	return yes;
}

int cmd_cfg(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'd' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "static", no_argument, NULL, 's' },
		{ "hot", required_argument, NULL, 'H' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *image = NULL, *format = "dot", *out = NULL, *db = NULL, *epoch = NULL;
	const struct img_proc *proc;
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	struct cfg *cfg = NULL;
	int c, rc, plain = 0, other = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "i:f:jo:d:e:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'i': image = optarg; break;
		case 'f': format = optarg; break;
		case 'j': format = "json"; break;
		case 'o': out = optarg; break;
		case 'd': db = optarg; break;
		case 'e': epoch = optarg; break;
		case 's': plain = 1; break;
		case 'H': case 'a': break;	/* the annotated graph's */
		case 'h': usage(stdout); return 0;
		default: other = 1; break;	/* dcpicalc's options, for the annotated graph */
		}
	}
	opterr = 1;
	/* with samples of PROC in the database: the annotated graph, through
	 * dcpicalc's analysis (its options apply) */
	if (!plain && optind + 1 == argc &&
	    have_samples(tool_db_dir(db), epoch, image, argv[optind]))
		return calc_cfg(argc, argv);
	if (other) {
		usage(stderr);
		return 1;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 1;
	}
	if (strcmp(format, "dot") && strcmp(format, "svg") && strcmp(format, "png") &&
	    strcmp(format, "pdf") && strcmp(format, "json"))
		return tool_fail("%s: unknown format (dot, svg, png, pdf, json)", format);
	if (!image) {
		rc = find_in_db(tool_db_dir(db), epoch, argv[optind], &img, &proc);
		if (rc)
			return rc;
		image = img_path(img);
	} else {
		if (img_open(image, IMG_NO_DWARF, &img, &err) < 0)
			return tool_fail("%s", err.msg);
		if (img_proc_find(img, argv[optind], &proc, &err) < 0) {
			rc = tool_fail("%s", err.msg);
			goto out;
		}
	}
	if (cfg_build(img, proc, &cfg, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (!strcmp(format, "json"))
		rc = write_json(cfg, img_path(img), out);
	else
		rc = write_graph(cfg, format, out);
out:
	cfg_free(cfg);
	img_close(img);
	return rc;
}
