/*
 * tools/cmd_calc.c - dcpicalc: executions, CPI and stalls of every instruction of one
 * procedure (DCPI paper sec. 3.2, fig. 2).  The analysis is est_analyze's
 * (estimate/analyze.c), opened through tools/analysis.c; this file parses
 * options and picks the rendering (report/calc.c, report/summary.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "dcpi/cfg.h"
#include "dcpi/culprit.h"
#include "dcpi/model.h"
#include "dcpi/data.h"
#include "dcpi/report.h"
#include "tools.h"

struct calc_args {
	int all, json, static_only, summary;
};

static void usage(FILE *f, int form)
{
	fprintf(f, "usage: %s PROC [options]\n"
		"  PROC                procedure name as dcpiprof prints it, or 0xADDRESS;\n"
		"                      with --summary, IMAGE:* (or *) for every sampled\n"
		"                      procedure of an image\n"
		"      --static        the model's best-case schedule only (M_i, reason,\n"
		"                      culprit), no samples needed; with --image, no database\n"
		"  -a, --all           every block, not only the hot ones\n"
		"      --summary       the procedure's stall summary only (fig. 4): dynamic\n"
		"                      stalls by cause (min - max), static stalls by reason\n"
		"      --json          machine-readable output\n"
		"%s", tool_name, tool_ana_usage);
}

static int parse_args(int argc, char **argv, struct tool_proc *t, struct calc_args *a)
{
	struct tool_opts o = { .help = usage, .shortopts = "e:m:ah",
			       .longopts = "static:s all:a summary:S", .ana = &t->a,
			       .common = TOOL_O_JSON };
	int c;

	memset(a, 0, sizeof(*a));
	tool_ana_args_init(&t->a);
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 's': a->static_only = 1; break;
		case 'S': a->summary = 1; break;
		case 'a': a->all = 1; break;
		}
	}
	if (c < 0)
		return c == TOOL_OPT_HELP ? -1 : 1;
	a->json = o.val.json;
	if (optind + 1 != argc) {
		usage(stderr, 0);
		return 1;
	}
	t->spec = argv[optind];
	return 0;
}

/* Does the profile have samples in procedure p? */
static int sampled(const struct tool_proc *t, const struct img_proc *p)
{
	uint64_t lo, hi;

	if (img_vaddr_to_offset(t->img, p->addr, &lo) < 0 ||
	    img_vaddr_to_offset(t->img, p->addr + p->size - 1, &hi) < 0)
		return 0;
	for (size_t e = 0; e < t->prof->n; e++)
		if (t->prof->e[e].offset >= lo && t->prof->e[e].offset <= hi)
			return 1;
	return 0;
}

/* dcpicalc --summary IMAGE:*: fig. 4 over every sampled procedure. */
static int summary_image(struct tool_proc *t, const struct calc_args *a)
{
	struct rep_stalls st;
	int rc = 0;

	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < img_nprocs(t->img) && !rc; i++) {
		const struct img_proc *p = img_proc(t->img, i);

		if (p->source == IMG_SRC_PLT || !sampled(t, p))
			continue;
		t->proc = p;
		rc = tool_proc_analyze(t);
		if (!rc)
			rep_stalls_add(&st, t->an.cfg, &t->an.r, &t->an.cul);
	}
	if (rc)
		return rc;
	if (a->json) {
		printf("{\"image\": ");
		tool_json_str(stdout, img_path(t->img));
		printf(", \"epoch\": ");
		tool_json_str(stdout, t->epoch);
		printf(", \"summary\": ");
		rep_stalls_json(stdout, &st);
		printf("}\n");
	} else {
		rep_stalls_text(stdout, img_path(t->img), &st);
	}
	return 0;
}

/* --static: the model's best-case schedule of PROC, from --image alone or
 * from the image the database names. */
static int print_static(struct tool_proc *t, const struct calc_args *a)
{
	struct dcpi_err err = { 0 };
	struct rep_calc v;
	int rc = 0;

	if (t->a.image && !t->img) {
		if (img_open(t->a.image, 0, &t->img, &err) < 0 ||
		    img_proc_find(t->img, t->spec, &t->proc, &err) < 0)
			return tool_fail("%s", err.msg);
	}
	if (cfg_build(t->img, t->proc, &t->an.cfg, &err) < 0)
		return tool_fail("%s", err.msg);
	tool_proc_view(t, a->all, a->json, &v);
	v.model = t->a.o.model ? t->a.o.model : model_for_this_cpu();
	if (rep_calc_static(stdout, &v, &err) < 0)
		rc = tool_fail("%s", err.msg);
	return rc;
}

int cmd_calc(int argc, char **argv)
{
	struct tool_proc t;
	struct calc_args a;
	struct rep_calc v;
	struct rep_mem_insn *objs = NULL;
	struct dcpi_err err = { 0 };
	int rc;

	memset(&t, 0, sizeof(t));
	rc = parse_args(argc, argv, &t, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.static_only && t.a.image) {
		rc = print_static(&t, &a);
		goto out;
	}
	rc = tool_proc_open(&t);
	if (rc)
		goto out;
	if (a.static_only) {
		rc = print_static(&t, &a);
	} else if (!t.proc) {
		rc = a.summary ? summary_image(&t, &a) :
		     tool_fail("%s: every procedure at once is for --summary", t.spec);
	} else if (!(rc = tool_proc_analyze(&t))) {
		tool_proc_view(&t, a.all, a.json, &v);
		if (rep_mem_insn_objects(t.db, t.epoch, &t.prof->image, &objs, &v.nobjs,
					 &err) >= 0)
			v.objs = objs;	/* else no object column: the data profiles are optional */
		if (a.json)
			rep_calc_json(stdout, &v);
		else if (a.summary)
			rep_culprit_summary_text(stdout, t.proc->name, t.an.cfg, &t.an.r,
						 &t.an.cul);
		else
			rep_calc_text(stdout, &v);
	}
out:
	free(objs);
	tool_proc_close(&t);
	return rc;
}
