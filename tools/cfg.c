/*
 * tools/cfg.c - dcpicfg: the control-flow graph of one procedure.  With
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
#include "tools.h"

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

/* The plain graph into out (stdout when NULL), report/cfgplain.c's. */
static int render(const struct cfg *cfg, const char *image, const char *format,
		  const char *out)
{
	struct dcpi_err err = { 0 };
	char *mem = NULL;
	size_t len = 0;
	/* -o: built in memory, then written by include/dcpi/safefile.h's rule */
	FILE *f = out ? open_memstream(&mem, &len) : stdout;
	int rc = 0;

	if (!f)
		return tool_fail("%s: %s", out, strerror(errno));
	if (!strcmp(format, "json"))
		rep_cfg_json(f, cfg, image);
	else if (rep_cfg_plain(cfg, format, f, &err) < 0)
		rc = tool_fail("%s", err.msg);
	if (ferror(f) && !rc)
		rc = tool_fail("%s: write failed", out ? out : "stdout");
	if (f == stdout)
		return rc;
	if (fclose(f) != 0 && !rc)
		rc = tool_fail("%s: out of memory", out);
	if (!rc && dcpi_write_output(out, mem, len, 0644, &err) < 0)
		rc = tool_fail("%s", err.msg);
	free(mem);
	return rc;
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
	double hot;
	char *end;

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
		case 'H':	/* the annotated graph's: checked here too, so a bad
				 * share is an error with or without samples */
			hot = strtod(optarg, &end);
			if (end == optarg || *end || !(hot > 0 && hot <= 1))
				return tool_fail("--hot %s: not a share in (0, 1]", optarg);
			break;
		case 'a': break;	/* the annotated graph's */
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
	rc = render(cfg, img_path(img), format, out);
out:
	cfg_free(cfg);
	img_close(img);
	return rc;
}
