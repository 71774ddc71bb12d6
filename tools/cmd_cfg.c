/*
 * tools/cmd_cfg.c - dcpicfg: the control-flow graph of one procedure.  With
 * samples of it in the database, the annotated graph (dcpicalc's analysis,
 * report/cfgviz.c); else the plain one (report/cfgplain.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "dcpi/safefile.h"
#include "analysis.h"
#include "tools.h"

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

/* -o: the whole graph in memory first, then written by the one rule for
 * outputs (include/dcpi/safefile.h): a FIFO, a device or a full disk neither
 * hangs the open nor leaves a truncated file. */
static FILE *out_open(const char *out, char **mem, size_t *len)
{
	*mem = NULL;
	*len = 0;
	return out ? open_memstream(mem, len) : stdout;
}

/* *mem and *len are open_memstream's: set only once f is closed. */
static int out_close(FILE *f, const char *out, char **mem, size_t *len, int rc)
{
	struct dcpi_err err = { 0 };

	if (ferror(f) && !rc)
		rc = tool_fail("%s: write failed", out ? out : "stdout");
	if (f == stdout)
		return rc;
	if (fclose(f) != 0 && !rc)
		rc = tool_fail("%s: out of memory", out);
	if (!rc && dcpi_write_output(out, *mem, *len, 0644, &err) < 0)
		rc = tool_fail("%s", err.msg);
	free(*mem);
	return rc;
}

/* The plain graph into out (stdout when NULL), report/cfgplain.c's. */
static int render(const struct cfg *cfg, const char *image, const char *format,
		  const char *out)
{
	struct dcpi_err err = { 0 };
	char *mem;
	size_t len;
	FILE *f = out_open(out, &mem, &len);
	int rc = 0;

	if (!f)
		return tool_fail("%s: %s", out, strerror(errno));
	if (!strcmp(format, "json"))
		rep_cfg_json(f, cfg, image);
	else if (rep_cfg_plain(cfg, format, f, &err) < 0)
		rc = tool_fail("%s", err.msg);
	return out_close(f, out, &mem, &len, rc);
}

/* Does profile pr have samples in proc of img? */
static int in_proc(const struct image *img, const struct img_proc *proc,
		   const struct prof_profile *pr)
{
	uint64_t lo, hi;

	if (img_vaddr_to_offset(img, proc->addr, &lo) < 0 ||
	    img_vaddr_to_offset(img, proc->addr + proc->size - 1, &hi) < 0)
		return 0;
	for (size_t e = 0; e < pr->n; e++)
		if (pr->e[e].offset >= lo && pr->e[e].offset <= hi && pr->e[e].count > 0)
			return 1;
	return 0;
}

/* Does the database hold samples of PROC itself (in image, when given)? */
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
			if (img_open(image, IMG_NO_DWARF, &img, &err) == 0 &&
			    img_proc_find(img, spec, &proc, &err) == 0)
				for (size_t i = 0; i < n && !yes; i++)
					yes = !strcmp(p[i].image.path, image) &&
					      in_proc(img, proc, &p[i]);
			if (img)
				img_close(img);
		} else if (rep_find_proc(p, n, NULL, spec, IMG_NO_DWARF, &img, &proc, &k,
					 &err) == 0) {
			yes = in_proc(img, proc, &p[k]);
			img_close(img);
		}
	}
	prof_profiles_free(p, n);
	prof_db_close(db);
	return yes;
}

/* The annotated graph: est_analyze's counts (estimate/analyze.c), drawn by
 * report/cfgviz.c. */
static int annotated(struct tool_proc *t, const char *format, const char *out, double hot,
		     int all)
{
	struct rep_cfg_heat h = { .hot = all ? 1 : hot };
	struct dcpi_err err = { 0 };
	struct rep_calc v;
	char *mem;
	size_t len;
	FILE *f;
	int rc = tool_proc_open(t);

	if (!rc && !t->proc)
		rc = tool_fail("%s: one procedure, not every one", t->spec);
	if (!rc)
		rc = tool_proc_analyze(t);
	if (rc)
		return rc;
	h.r = &t->an.r;
	h.cul = &t->an.cul;
	h.edge_obs = t->an.pinfo.used ? t->an.pinfo.edge_obs : NULL;
	f = out_open(out, &mem, &len);
	if (!f)
		return tool_fail("%s: %s", out, strerror(errno));
	if (!strcmp(format, "json")) {
		tool_proc_view(t, 0, 1, &v);
		rep_calc_json(f, &v);
	} else if (rep_cfg_render(t->an.cfg, &h, format, f, &err) < 0) {
		rc = tool_fail("%s", err.msg);
	}
	return out_close(f, out, &mem, &len, rc);
}

static void usage(FILE *f, int form)
{
	fprintf(f, "usage: %s PROC [--format dot|svg|png|pdf|json] [--json] [-o FILE]\n"
		"       [--hot P | --all] [--static] [options]\n"
		"  with samples of PROC in the database: the annotated graph (blocks filled by\n"
		"  share of cycles, edges by estimated executions, CPI and culprits; only the\n"
		"  blocks holding P of the cycles, default 0.99, cold regions collapsed; --all\n"
		"  every block); --static or no samples: the CFG alone\n"
		"  PROC is a name with or without parameters (f, 'f(int)', ns::f), a mangled\n"
		"  name, an address (0x...), any of them after IMAGE: to pick the image\n"
		"  without --image, PROC is looked up in the images profiled in the\n"
		"  database (--db, default $DCPIDB, then ./dcpidb; --epoch, default newest)\n"
		"%s", tool_name, tool_ana_usage);
}

static int known_format(const char *f)
{
	return !strcmp(f, "dot") || !strcmp(f, "svg") || !strcmp(f, "png") ||
	       !strcmp(f, "pdf") || !strcmp(f, "json");
}

/* The plain graph of PROC: from --image, else the image the database names. */
static int plain(const struct tool_ana_args *a, const char *spec, const char *format,
		 const char *out)
{
	const struct img_proc *proc;
	struct dcpi_err err = { 0 };
	struct image *img = NULL;
	struct cfg *cfg = NULL;
	int rc;

	if (!a->image) {
		rc = find_in_db(tool_db_dir(a->db), a->epoch, spec, &img, &proc);
		if (rc)
			return rc;
	} else if (img_open(a->image, IMG_NO_DWARF, &img, &err) < 0) {
		return tool_fail("%s", err.msg);
	} else if (img_proc_find(img, spec, &proc, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (cfg_build(img, proc, &cfg, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	rc = render(cfg, img_path(img), format, out);
out:
	cfg_free(cfg);
	img_close(img);
	return rc;
}

int cmd_cfg(int argc, char **argv)
{
	const char *format = NULL, *out;
	int c, rc, static_only = 0, all = 0;
	struct tool_proc t;
	struct tool_opts o = { .help = usage, .shortopts = "e:m:o:ah",
			       .longopts = "format=f "
					   "json:J "	/* --format json */
					   "static:s hot=H all:a",
			       .ana = &t.a, .common = TOOL_O_OUTPUT };
	double hot = 0.99;
	char *end;

	memset(&t, 0, sizeof(t));
	tool_ana_args_init(&t.a);
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'J': format = "json"; break;
		case 's': static_only = 1; break;
		case 'H':
			hot = strtod(optarg, &end);
			if (end == optarg || *end || !(hot > 0 && hot <= 1))
				return tool_fail("--hot %s: not a share in (0, 1]", optarg);
			break;
		case 'a': all = 1; break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	out = o.val.out;
	if (optind + 1 != argc) {
		usage(stderr, 0);
		return 1;
	}
	if (!format)
		format = "dot";
	if (!known_format(format))
		return tool_fail("%s: unknown format (dot, svg, png, pdf, json)", format);
	t.spec = argv[optind];
	if (static_only || !have_samples(tool_db_dir(t.a.db), t.a.epoch, t.a.image, t.spec))
		return plain(&t.a, t.spec, format, out);
	rc = annotated(&t, format, out, hot, all);
	tool_proc_close(&t);
	return rc;
}
