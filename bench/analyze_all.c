/*
 * bench/analyze_all.c - the graph analysis of every procedure of one image
 * alone: cycle-equivalence classes (cfg_cycle_equiv_with) and loops
 * (cfg_find_loops_with), as cfg/build.c's analyze() runs them, timed in CPU
 * seconds over the CFGs of the whole image, least of --runs runs (bench/README.md).
 *
 * cfg_build_all runs once; its callback keeps each CFG's graph and what the
 * library computed for it (classes, loops, depths).  The timed pass runs the
 * two algorithms again over every kept graph, one scratch reused throughout
 * as in cfg_build_all, skipping classes where analyze() does (missing edges,
 * entry == exit); then, untimed, every result is compared with the kept one.
 * --save writes the kept results to a file and --ref compares them with such
 * a file, so that a faster library can be held to a slower one's results
 * byte for byte.
 *
 * --only classes (or loops) times that algorithm alone, to see where the time
 * goes; results of the other are then not checked.
 *
 * usage: analyze_all [--runs N] [--only classes|loops] [--save FILE] [--ref FILE] IMAGE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/util.h"

#include "../cfg/graph.h"

/* One procedure's graph and results. */
struct rec {
	uint64_t addr;
	uint32_t nb, ne, entry, exit;
	int missing, nclasses;
	uint32_t *from, *to;
	int *ncls, *nloop, *ndepth, *ecls;
	struct cfg_loop *loops;
	size_t nloops;
};

struct recs {
	struct rec *r;
	size_t n, cap, failed, blocks, edges;
};

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "analyze_all: out of memory\n");
		exit(1);
	}
	return p;
}

/* The arrays of r, one allocation each, for nb nodes and ne edges. */
static void rec_alloc(struct rec *r)
{
	r->from = xmalloc(r->ne * sizeof(*r->from));
	r->to = xmalloc(r->ne * sizeof(*r->to));
	r->ecls = xmalloc(r->ne * sizeof(*r->ecls));
	r->ncls = xmalloc(r->nb * sizeof(*r->ncls));
	r->nloop = xmalloc(r->nb * sizeof(*r->nloop));
	r->ndepth = xmalloc(r->nb * sizeof(*r->ndepth));
}

static void rec_free(struct rec *r)
{
	free(r->from);
	free(r->to);
	free(r->ecls);
	free(r->ncls);
	free(r->nloop);
	free(r->ndepth);
	cfg_loops_free(r->loops, r->nloops);
}

static int take(void *arg, const struct img_proc *p, struct cfg *cfg,
		const struct dcpi_err *err)
{
	struct recs *rs = arg;
	struct rec *r;

	(void)err;
	if (!cfg) {
		rs->failed++;
		return 0;
	}
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 1024;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		if (!rs->r)
			return -ENOMEM;
	}
	r = &rs->r[rs->n++];
	*r = (struct rec){ .addr = p->addr, .nb = (uint32_t)cfg->nblocks,
			   .ne = (uint32_t)cfg->nedges, .entry = cfg->entry, .exit = cfg->exit,
			   .missing = cfg->missing_edges, .nclasses = cfg->nclasses };
	rec_alloc(r);
	for (uint32_t e = 0; e < r->ne; e++) {
		r->from[e] = cfg->edges[e].from;
		r->to[e] = cfg->edges[e].to;
		r->ecls[e] = cfg->edges[e].cls;
	}
	for (uint32_t b = 0; b < r->nb; b++) {
		r->ncls[b] = cfg->blocks[b].cls;
		r->nloop[b] = cfg->blocks[b].loop;
		r->ndepth[b] = cfg->blocks[b].loop_depth;
	}
	/* the CFG's loops are ours: taken, not copied */
	r->loops = cfg->loops;
	r->nloops = cfg->nloops;
	cfg->loops = NULL;
	cfg->nloops = 0;
	rs->blocks += r->nb;
	rs->edges += r->ne;
	cfg_free(cfg);
	return 0;
}

static int loops_differ(const struct cfg_loop *a, size_t na, const struct cfg_loop *b, size_t nb)
{
	if (na != nb)
		return 1;
	for (size_t l = 0; l < na; l++) {
		if (a[l].header != b[l].header || a[l].parent != b[l].parent ||
		    a[l].depth != b[l].depth || a[l].nblocks != b[l].nblocks ||
		    a[l].irreducible != b[l].irreducible ||
		    memcmp(a[l].blocks, b[l].blocks, a[l].nblocks * sizeof(*a[l].blocks)))
			return 1;
	}
	return 0;
}

enum { CMP_GRAPH = 1, CMP_CLASSES = 2, CMP_LOOPS = 4 };

/* Do a and b differ in what the mask says (their graphs, classes, loops)? */
static int rec_differ(const struct rec *a, const struct rec *b, int mask)
{
	if ((mask & CMP_GRAPH) &&
	    (a->addr != b->addr || a->nb != b->nb || a->ne != b->ne || a->entry != b->entry ||
	     a->exit != b->exit || a->missing != b->missing ||
	     memcmp(a->from, b->from, a->ne * sizeof(*a->from)) ||
	     memcmp(a->to, b->to, a->ne * sizeof(*a->to))))
		return 1;
	if ((mask & CMP_CLASSES) &&
	    (a->nclasses != b->nclasses || memcmp(a->ncls, b->ncls, a->nb * sizeof(*a->ncls)) ||
	     memcmp(a->ecls, b->ecls, a->ne * sizeof(*a->ecls))))
		return 1;
	return (mask & CMP_LOOPS) &&
	       (memcmp(a->nloop, b->nloop, a->nb * sizeof(*a->nloop)) ||
		memcmp(a->ndepth, b->ndepth, a->nb * sizeof(*a->ndepth)) ||
		loops_differ(a->loops, a->nloops, b->loops, b->nloops));
}

static int rec_cmp_addr(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Does cycle equivalence run on r, as in build.c's analyze()? */
static int rec_classes(const struct rec *r)
{
	return !r->missing && r->entry != r->exit;
}

/*
 * The timed pass: both algorithms (only: 1 classes, 2 loops) over every graph
 * into out (shaped like rs), one scratch throughout, trimmed after each graph
 * as cfg_build_all does.  Returns the CPU seconds; out's loops are the
 * caller's to free.
 */
static double pass(const struct recs *rs, struct rec *out, int only)
{
	struct cfg_scratch scr = { NULL, 0 };
	struct dcpi_err err = { 0 };
	double c0 = cpu_s(), c1;

	for (size_t i = 0; i < rs->n; i++) {
		const struct rec *r = &rs->r[i];
		struct rec *o = &out[i];
		struct cfg_graph g = { r->nb, r->ne, r->from, r->to, r->entry, r->exit };

		if (only != 2 && rec_classes(r) &&
		    cfg_cycle_equiv_with(&g, o->ncls, o->ecls, &o->nclasses, &scr, &err) < 0)
			goto fail;
		if (only != 1 && cfg_find_loops_with(&g, &o->loops, &o->nloops, o->nloop, o->ndepth,
						     &scr, &err) < 0)
			goto fail;
		cfg_scratch_trim(&scr, CFG_SCRATCH_KEEP);
	}
	c1 = cpu_s();
	free(scr.mem);
	return c1 - c0;
fail:
	fprintf(stderr, "analyze_all: %s\n", err.msg);
	exit(1);
}

static void put(FILE *f, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, f) != n) {
		fprintf(stderr, "analyze_all: write failed\n");
		exit(1);
	}
}

static int get(FILE *f, void *p, size_t n)
{
	return !n || fread(p, 1, n, f) == n;
}

static void save(const struct recs *rs, const char *file)
{
	FILE *f = fopen(file, "wb");

	if (!f) {
		perror(file);
		exit(1);
	}
	put(f, &rs->n, sizeof(rs->n));
	for (size_t i = 0; i < rs->n; i++) {
		const struct rec *r = &rs->r[i];

		put(f, r, sizeof(*r));
		put(f, r->from, r->ne * sizeof(*r->from));
		put(f, r->to, r->ne * sizeof(*r->to));
		put(f, r->ecls, r->ne * sizeof(*r->ecls));
		put(f, r->ncls, r->nb * sizeof(*r->ncls));
		put(f, r->nloop, r->nb * sizeof(*r->nloop));
		put(f, r->ndepth, r->nb * sizeof(*r->ndepth));
		for (size_t l = 0; l < r->nloops; l++) {
			put(f, &r->loops[l], sizeof(r->loops[l]));
			put(f, r->loops[l].blocks, r->loops[l].nblocks * sizeof(uint32_t));
		}
	}
	if (fclose(f)) {
		perror(file);
		exit(1);
	}
}

/* Read one record written by save(); 0 if the file ends or is short. */
static int load_rec(FILE *f, struct rec *r)
{
	int ok;

	if (!get(f, r, sizeof(*r)))
		return 0;
	rec_alloc(r);
	ok = get(f, r->from, r->ne * sizeof(*r->from)) && get(f, r->to, r->ne * sizeof(*r->to)) &&
	     get(f, r->ecls, r->ne * sizeof(*r->ecls)) &&
	     get(f, r->ncls, r->nb * sizeof(*r->ncls)) &&
	     get(f, r->nloop, r->nb * sizeof(*r->nloop)) &&
	     get(f, r->ndepth, r->nb * sizeof(*r->ndepth));
	r->loops = calloc(r->nloops ? r->nloops : 1, sizeof(*r->loops));
	if (!r->loops) {
		fprintf(stderr, "analyze_all: out of memory\n");
		exit(1);
	}
	for (size_t l = 0; ok && l < r->nloops; l++) {
		struct cfg_loop *lp = &r->loops[l];

		ok = get(f, lp, sizeof(*lp));
		lp->blocks = ok ? xmalloc(lp->nblocks * sizeof(uint32_t)) : NULL;
		ok = ok && get(f, lp->blocks, lp->nblocks * sizeof(uint32_t));
	}
	if (!ok)
		rec_free(r);
	return ok;
}

/* Compare rs with the file saved by a run of another build; -1 if unreadable. */
static long check_ref(const struct recs *rs, const char *file)
{
	FILE *f = fopen(file, "rb");
	size_t n;
	long bad = 0;

	if (!f || !get(f, &n, sizeof(n)) || n != rs->n) {
		if (f)
			fclose(f);
		return -1;
	}
	for (size_t i = 0; i < n && bad >= 0; i++) {
		struct rec r;

		if (!load_rec(f, &r)) {
			bad = -1;
			break;
		}
		bad += rec_differ(&rs->r[i], &r, CMP_GRAPH | CMP_CLASSES | CMP_LOOPS);
		rec_free(&r);
	}
	fclose(f);
	return bad;
}

int main(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct recs rs = { 0 };
	struct rec *out;
	const char *save_to = NULL, *ref = NULL;
	double best = 1e30;
	int runs = 5, argi = 1, only = 0;
	long bad = 0;
	size_t nceq = 0;
	struct image *img;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "--runs") && argi + 1 < argc)
			runs = atoi(argv[++argi]);
		else if (!strcmp(argv[argi], "--only") && argi + 1 < argc)
			only = !strcmp(argv[++argi], "classes") ? 1 :
			       !strcmp(argv[argi], "loops") ? 2 : -1;
		else if (!strcmp(argv[argi], "--save") && argi + 1 < argc)
			save_to = argv[++argi];
		else if (!strcmp(argv[argi], "--ref") && argi + 1 < argc)
			ref = argv[++argi];
		else
			break;
	}
	if (argi + 1 != argc || runs < 1 || only < 0) {
		fprintf(stderr, "usage: analyze_all [--runs N] [--only classes|loops] "
			"[--save FILE] [--ref FILE] IMAGE\n");
		return 1;
	}
	if (img_open(argv[argi], IMG_NO_DWARF | IMG_NO_DEBUG_SYMS, &img, &err) < 0 ||
	    cfg_build_all(img, take, &rs, NULL, &err)) {
		fprintf(stderr, "analyze_all: %s\n", err.msg);
		return 1;
	}
	img_close(img);
	/* procedures come in no fixed order: address order, for --save and --ref */
	dcpi_qsort(rs.r, rs.n, sizeof(*rs.r), rec_cmp_addr);
	out = xmalloc((rs.n ? rs.n : 1) * sizeof(*out));
	for (size_t i = 0; i < rs.n; i++) {
		out[i] = (struct rec){ .nb = rs.r[i].nb, .ne = rs.r[i].ne };
		rec_alloc(&out[i]);
		nceq += rec_classes(&rs.r[i]);
	}
	for (int run = 0; run < runs; run++) {
		double t = pass(&rs, out, only);

		if (t < best)
			best = t;
		for (size_t i = 0; i < rs.n; i++) {
			int mask = (only != 2 && rec_classes(&rs.r[i]) ? CMP_CLASSES : 0) |
				   (only != 1 ? CMP_LOOPS : 0);

			if (run == 0)
				bad += rec_differ(&out[i], &rs.r[i], mask);
			cfg_loops_free(out[i].loops, out[i].nloops);
			out[i].loops = NULL;
			out[i].nloops = 0;
		}
	}
	printf("procedures %zu (failed %zu), blocks %zu, edges %zu, cycle equivalence on %zu\n",
	       rs.n, rs.failed, rs.blocks, rs.edges, nceq);
	printf("analysis (%s): %.4f s CPU, least of %d runs\n",
	       only == 1 ? "cycle equivalence only" : only == 2 ? "loops only" :
	       "cycle equivalence + loops", best, runs);
	printf("mismatches with the CFGs' own results: %ld\n", bad);
	if (save_to)
		save(&rs, save_to);
	if (ref) {
		long d = check_ref(&rs, ref);

		if (d < 0)
			printf("reference %s: unreadable or of another image\n", ref);
		else
			printf("mismatches with reference %s: %ld\n", ref, d);
		bad += d != 0;
	}
	for (size_t i = 0; i < rs.n; i++) {
		rec_free(&rs.r[i]);
		rec_free(&out[i]);
	}
	free(rs.r);
	free(out);
	return bad != 0;
}
