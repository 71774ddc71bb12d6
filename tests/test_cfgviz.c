/*
 * test_cfgviz.c - the annotated CFG (dcpicfg with samples, report/cfgviz.c)
 * on a recording of tests/workloads/estloops: the DOT is read back with
 * cgraph and checked against dcpicfg's JSON (the estimate's numbers, as
 * dcpicalc --json gives them): one node per shown block, the hottest blocks
 * shown, each cold region one node holding exactly its hidden blocks' share,
 * edge labels from the estimate's edge executions, fill colours
 * monotone in cycle share, --all shows every block; bad --hot values fail.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <graphviz/cgraph.h>

#include "testutil.h"
#include "tu_main.h"

static char dir[256];
static const char *bin;
static int have_db;

#define MAXB 256
#define MAXE 512

/* The estimate as dcpicfg --format json gives it (flattened by python). */
struct est {
	size_t nb, ne;
	struct { char start[32]; double samples, exec, best, actual; } b[MAXB];
	struct { char from[32], to[32]; double exec, obs; } e[MAXE];
	double total;		/* samples over the blocks */
	int paths_used;
};

/* What the DOT shows. */
struct shown {
	size_t nb, ncold, nexit;
	struct {
		char start[32], fill[16], label[1024], name[32];
		double share, exec, best, actual;
	} b[MAXB];
	struct { double share; size_t n; char label[256], name[32], first[32]; } cold[MAXB];
	char palette[16][16];	/* the legend's colours, coldest first */
	char exit[32];		/* the exit's node */
	size_t npal;
};

static int setup(void **state)
{
	const char *build = getenv("DCPI_BUILD");

	(void)state;
	bin = getenv("DCPI_BIN");
	if (tu_workspace(dir, sizeof(dir), "cfgviz"))
		return -1;
	if (bin && build)
		have_db = tu_sh("%s record --db %s/db -- %s/workloads/estloops 20000 > /dev/null "
				"2> %s/rec.log", bin, dir, build, dir) == 0 &&
			  tu_sh("%s record --db %s/demo -- %s/workloads/demo_work 4 > /dev/null "
				"2> %s/rec2.log", bin, dir, build, dir) == 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rm_unless_kept(dir);
	return 0;
}

static void need_db(void)
{
	tu_need_run(bin != NULL);
	assert_true(have_db);
}

static void load_est(const char *db, const char *proc, struct est *x)
{
	char path[PROF_PATH_MAX], kind;
	FILE *f;

	memset(x, 0, sizeof(*x));
	assert_int_equal(tu_sh("%s cfg --db %s/%s %s --no-measure --format json > %s/est.json && "
			       "python3 -c 'import json,sys\n"
			       "d = json.load(open(sys.argv[1]))\n"
			       "p = d.get(\"paths\")\n"
			       "print(\"P\", 1 if p and p.get(\"used\") else 0)\n"
			       "for b in d[\"blocks\"]:\n"
			       "    print(\"B\", b[\"start\"], repr(b[\"samples\"]), "
			       "repr(b[\"executions\"]), repr(b[\"best_cpi\"]), "
			       "repr(b[\"actual_cpi\"]))\n"
			       "for e in d[\"edges\"]:\n"
			       "    print(\"E\", e[\"from\"], e[\"to\"], repr(e[\"executions\"]), "
			       "repr(e[\"observed\"]))' %s/est.json > %s/est.txt",
			       bin, dir, db, proc, dir, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/est.txt", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fscanf(f, " %c", &kind) == 1) {
		if (kind == 'P') {
			assert_int_equal(fscanf(f, "%d", &x->paths_used), 1);
		} else if (kind == 'B') {
			assert_true(x->nb < MAXB);
			assert_int_equal(fscanf(f, "%31s %lf %lf %lf %lf", x->b[x->nb].start,
						&x->b[x->nb].samples, &x->b[x->nb].exec,
						&x->b[x->nb].best, &x->b[x->nb].actual), 5);
			x->total += x->b[x->nb++].samples;
		} else {
			assert_int_equal(kind, 'E');
			assert_true(x->ne < MAXE);
			assert_int_equal(fscanf(f, "%31s %31s %lf %lf", x->e[x->ne].from,
						x->e[x->ne].to, &x->e[x->ne].exec,
						&x->e[x->ne].obs), 4);
			x->ne++;
		}
	}
	fclose(f);
	assert_true(x->nb >= 1 && x->ne >= 1 && x->total > 0);
}

static double attr_num(void *obj, const char *name)
{
	char *v = agget(obj, (char *)name), *end;
	double d;

	assert_non_null(v);
	d = strtod(v, &end);
	assert_true(end != v && !*end);
	return d;
}

static const char *attr(void *obj, const char *name)
{
	char *v = agget(obj, (char *)name);

	return v ? v : "";
}

/* A label as graphviz shows it: the escapes of <, >, {, }, |, " and \\
 * undone (\\l, \\n kept). */
static void unescape(char *out, size_t len, const char *in)
{
	size_t n = 0;

	for (; *in && n + 1 < len; in++) {
		if (*in == '\\' && in[1] && strchr("<>{}|\"\\", in[1]))
			in++;
		out[n++] = *in;
	}
	out[n] = 0;
}

/* dcpicfg PROC args as DOT, read back with cgraph; the graph stays open for
 * the edges (agclose it). */
static Agraph_t *load_dot(const char *db, const char *proc, const char *args,
			  struct shown *s)
{
	char path[PROF_PATH_MAX];
	const char *p;
	Agraph_t *g;
	Agnode_t *n;
	FILE *f;

	memset(s, 0, sizeof(*s));
	assert_int_equal(tu_sh("%s cfg --db %s/%s %s --no-measure %s > %s/g.dot", bin, dir, db,
			       proc, args, dir), 0);
	snprintf(path, sizeof(path), "%s/g.dot", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	g = agread(f, NULL);
	fclose(f);
	assert_non_null(g);
	for (n = agfstnode(g); n; n = agnxtnode(g, n)) {
		const char *name = agnameof(n);

		if (!strcmp(name, "legend")) {
			/* the legend's cells, coldest first: BGCOLOR="#......" */
			for (p = strstr(attr(n, "label"), "BGCOLOR=\""); p;
			     p = strstr(p + 1, "BGCOLOR=\"")) {
				assert_true(s->npal < 16);
				snprintf(s->palette[s->npal++], 16, "%.7s", p + 9);
			}
		} else if (!strncmp(name, "cold", 4)) {
			assert_true(s->ncold < MAXB);
			s->cold[s->ncold].share = attr_num(n, "dcpi_share");
			s->cold[s->ncold].n = (size_t)attr_num(n, "dcpi_blocks");
			snprintf(s->cold[s->ncold].label, 256, "%s", attr(n, "label"));
			snprintf(s->cold[s->ncold].name, 32, "%s", name);
			snprintf(s->cold[s->ncold].first, 32, "%s", attr(n, "dcpi_first"));
			s->ncold++;
		} else if (!*attr(n, "dcpi_start")) {
			assert_string_equal(attr(n, "label"), "exit\\l");
			snprintf(s->exit, 32, "%s", name);
			s->nexit++;
		} else {
			assert_true(name[0] == 'b' && s->nb < MAXB);
			snprintf(s->b[s->nb].start, 32, "%s", attr(n, "dcpi_start"));
			snprintf(s->b[s->nb].name, 32, "%s", name);
			snprintf(s->b[s->nb].fill, 16, "%s", attr(n, "fillcolor"));
			unescape(s->b[s->nb].label, 1024, attr(n, "label"));
			s->b[s->nb].share = attr_num(n, "dcpi_share");
			s->b[s->nb].exec = attr_num(n, "dcpi_executions");
			s->b[s->nb].best = attr_num(n, "dcpi_best_cpi");
			s->b[s->nb].actual = attr_num(n, "dcpi_actual_cpi");
			s->nb++;
		}
	}
	assert_int_equal(s->nexit, 1);
	assert_int_equal(s->npal, 9);
	return g;
}

/*
 * text is count x as people read it (the label's contract, report/cfgviz.c):
 * "<0.01" for dust; else at most 3 significant digits and the unit k, M, G
 * or T (powers of 1000) that keeps them under 1000 (T beyond), reading back
 * within the rounding of the third digit.
 */
static void check_count_text(const char *text, double x)
{
	static const char units[] = "kMGT";
	const char *unit, *c;
	double m, scale = 1;
	int u = 0, digits = 0, lead = 1;

	if (x > 0 && x < 0.01) {
		assert_string_equal(text, "<0.01");
		return;
	}
	m = strtod(text, (char **)&unit);
	assert_true(unit != text);
	if (*unit) {
		assert_non_null(strchr(units, *unit));
		assert_int_equal(unit[1], '\0');
		u = (int)(strchr(units, *unit) - units) + 1;
	}
	for (int i = 0; i < u; i++)
		scale *= 1000;
	for (c = text; c < unit && *c != 'e'; c++) {
		lead = lead && (*c == '0' || *c == '.' || *c == '-');
		digits += !lead && *c >= '0' && *c <= '9';
	}
	if (digits > 3 || fabs(m * scale - x) > 0.005 * fabs(x) ||
	    (u < 4 && fabs(m) >= 1000) || (u > 0 && fabs(m) < 0.9995))
		fail_msg("%.17g printed as \"%s\"", x, text);
}

static int shown_index(const struct shown *s, const char *start)
{
	for (size_t i = 0; i < s->nb; i++)
		if (!strcmp(s->b[i].start, start))
			return (int)i;
	return -1;
}

static int est_index(const struct est *x, const char *start)
{
	for (size_t i = 0; i < x->nb; i++)
		if (!strcmp(x->b[i].start, start))
			return (int)i;
	return -1;
}

static void close_to(double a, double b)
{
	if (fabs(a - b) > 1e-9 * fmax(1, fmax(fabs(a), fabs(b))))
		fail_msg("%.17g != %.17g", a, b);
}

/* The lowest start address of hidden region c. */
static const char *first_of(const struct est *x, const int *comp, int c)
{
	const char *best = NULL;

	for (size_t k = 0; k < x->nb; k++)
		if (comp[k] == c && (!best || strtoull(x->b[k].start, NULL, 16) <
					     strtoull(best, NULL, 16)))
			best = x->b[k].start;
	return best ? best : "";
}

static int pal_index(const struct shown *s, const char *fill)
{
	for (size_t k = 0; k < s->npal; k++)
		if (!strcmp(s->palette[k], fill))
			return (int)k;
	fail_msg("fill %s is not on the legend's scale", fill);
	return -1;
}

/*
 * Every check on one rendering at share hot (1: --all): returns how many
 * blocks were hidden.
 */
static size_t check(const char *db, const char *proc, const char *args, double hot,
		    int *paths_used)
{
	static struct est x;
	static struct shown s;
	static char hidden[MAXB];
	static int comp[MAXB];
	static char comp_node[MAXB][32];
	double hidden_share = 0, shown_share = 0, min_shown = 1, max_hidden = 0;
	size_t nhidden = 0, ncomp = 0, nedges = 0;
	char want[256], cnt[32];
	const char *at;
	Agraph_t *g;
	Agnode_t *n;
	Agedge_t *ed;

	load_est(db, proc, &x);
	g = load_dot(db, proc, args, &s);
	if (paths_used)
		*paths_used = x.paths_used;
	/* one node per shown block, each a block of the estimate */
	for (size_t i = 0; i < s.nb; i++) {
		int k = est_index(&x, s.b[i].start);

		assert_true(k >= 0);
		assert_int_equal(shown_index(&s, s.b[i].start), (int)i);	/* once */
		/* the JSON's numbers, unrounded in the attributes and as the label
		 * prints them */
		close_to(s.b[i].share, x.b[k].samples / x.total);
		close_to(s.b[i].exec, x.b[k].exec);
		/* the JSON prints CPIs to 6 digits */
		assert_true(fabs(s.b[i].best - x.b[k].best) <= 1e-5 * fmax(1e-3, x.b[k].best));
		assert_true(fabs(s.b[i].actual - x.b[k].actual) <=
			    1e-5 * fmax(1e-3, x.b[k].actual));
		/* printed from the unrounded share the attribute carries (checked
		 * against the JSON's just above): recomputed here, a share at an
		 * exact half of 0.1% may round the other way */
		snprintf(want, sizeof(want), "%.1f%% of cycles, ", 100 * s.b[i].share);
		at = strstr(s.b[i].label, want);
		if (at)
			at += strlen(want);
		if (!at || strcspn(at, " ") >= sizeof(cnt) ||
		    strncmp(at + strcspn(at, " "), " executions", 11))
			fail_msg("%s: label lacks \"%s<count> executions\": %s", s.b[i].start,
				 want, s.b[i].label);
		snprintf(cnt, sizeof(cnt), "%.*s", (int)strcspn(at, " "), at);
		check_count_text(cnt, x.b[k].exec);
		snprintf(want, sizeof(want), "CPI %.2f best, %.2f actual", s.b[i].best,
			 s.b[i].actual);
		assert_non_null(strstr(s.b[i].label, want));
		snprintf(want, sizeof(want), "%s-", s.b[i].start);
		assert_ptr_equal(strstr(s.b[i].label, want), s.b[i].label);	/* its range */
		shown_share += s.b[i].share;
		/* the entry is always shown; shares compared as the JSON gives
		 * them (the DOT's are rounded, and two blocks may tie) */
		if (strcmp(s.b[i].start, x.b[0].start))
			min_shown = fmin(min_shown, x.b[k].samples / x.total);
	}
	/* fill: monotone in share on the legend's scale, hotter never lighter */
	for (size_t i = 0; i < s.nb; i++)
		for (size_t j = 0; j < s.nb; j++)
			if (s.b[i].share < s.b[j].share)
				assert_true(pal_index(&s, s.b[i].fill) <=
					    pal_index(&s, s.b[j].fill));
	for (size_t k = 0; k < x.nb; k++) {
		hidden[k] = shown_index(&s, x.b[k].start) < 0;
		if (hidden[k]) {
			nhidden++;
			hidden_share += x.b[k].samples / x.total;
			max_hidden = fmax(max_hidden, x.b[k].samples / x.total);
		}
		comp[k] = -1;
	}
	assert_int_equal(s.nb + nhidden, x.nb);
	/* the shown blocks hold the share asked for, and are the hottest */
	assert_true(shown_share >= hot - 1e-9);
	if (nhidden)
		assert_true(max_hidden <= min_shown);
	/* cold regions: connected hidden blocks, one node each holding exactly
	 * their count and share */
	for (size_t k = 0; k < x.nb; k++) {
		int changed = 1;

		if (!hidden[k] || comp[k] >= 0)
			continue;
		comp[k] = (int)ncomp++;
		while (changed) {
			changed = 0;
			for (size_t e = 0; e < x.ne; e++) {
				int a = est_index(&x, x.e[e].from), b = est_index(&x, x.e[e].to);

				if (a < 0 || b < 0 || !hidden[a] || !hidden[b])
					continue;
				if ((comp[a] == (int)ncomp - 1) != (comp[b] == (int)ncomp - 1)) {
					comp[a] = comp[b] = (int)ncomp - 1;
					changed = 1;
				}
			}
		}
	}
	assert_int_equal(s.ncold, ncomp);
	{
		double cold_share = 0;
		char used[MAXB] = { 0 };

		for (size_t c = 0; c < ncomp; c++) {
			double sh = 0;
			size_t nblk = 0, m;

			for (size_t k = 0; k < x.nb; k++)
				if (comp[k] == (int)c) {
					sh += x.b[k].samples / x.total;
					nblk++;
				}
			for (m = 0; m < s.ncold; m++)
				if (!used[m] && s.cold[m].n == nblk &&
				    fabs(s.cold[m].share - sh) <= 1e-9 &&
				    !strcmp(s.cold[m].first, first_of(&x, comp, (int)c)))
					break;
			if (m == s.ncold)
				fail_msg("no cold node for %zu blocks, share %.17g", nblk, sh);
			used[m] = 1;
			snprintf(comp_node[c], 32, "%s", s.cold[m].name);
			snprintf(want, sizeof(want), "%zu cold block%s from %s\\n%.2f%% of cycles",
				 nblk, nblk == 1 ? "" : "s", s.cold[m].first, 100 * sh);
			assert_string_equal(s.cold[m].label, want);
		}
		for (size_t m = 0; m < s.ncold; m++)
			cold_share += s.cold[m].share;
		close_to(cold_share, hidden_share);
	}
	/* edges: each of the estimate's between the nodes its ends are drawn as
	 * (a hidden block as its region's node), those between a region and one
	 * node drawn as one with their executions summed; labelled with the
	 * executions, dashed exactly where the path samples never saw them */
	{
		static struct { const char *a, *z; double exec, obs; int n, seen; } want_e[MAXE];
		size_t nwant = 0, got = 0;

		for (size_t e = 0; e < x.ne; e++) {
			int ka = est_index(&x, x.e[e].from), kz = est_index(&x, x.e[e].to);
			const char *a, *z;
			size_t w;

			assert_true(ka >= 0);
			a = hidden[ka] ? comp_node[comp[ka]] :
			    s.b[shown_index(&s, x.e[e].from)].name;
			z = kz < 0 ? s.exit : hidden[kz] ? comp_node[comp[kz]] :
			    s.b[shown_index(&s, x.e[e].to)].name;
			if (ka >= 0 && kz >= 0 && hidden[ka] && hidden[kz])
				continue;	/* inside one region */
			for (w = 0; w < nwant; w++)
				if ((hidden[ka] || (kz >= 0 && hidden[kz])) &&
				    !strcmp(want_e[w].a, a) && !strcmp(want_e[w].z, z))
					break;
			if (w == nwant) {
				want_e[nwant].a = a;
				want_e[nwant].z = z;
				want_e[nwant].exec = want_e[nwant].obs = 0;
				want_e[nwant].n = want_e[nwant].seen = 0;
				nwant++;
			}
			want_e[w].exec += x.e[e].exec;
			want_e[w].obs += x.e[e].obs;
			want_e[w].n++;
		}
		for (n = agfstnode(g); n; n = agnxtnode(g, n))
			for (ed = agfstout(g, n); ed; ed = agnxtout(g, ed)) {
				const char *a = agnameof(agtail(ed)), *z = agnameof(aghead(ed));
				double xe = attr_num(ed, "dcpi_executions");
				size_t w;

				got++;
				for (w = 0; w < nwant; w++)
					if (!want_e[w].seen && !strcmp(want_e[w].a, a) &&
					    !strcmp(want_e[w].z, z) &&
					    fabs(want_e[w].exec - xe) <= 1e-9 * fmax(1, xe))
						break;
				if (w == nwant)
					fail_msg("edge %s -> %s (%.17g) is not the estimate's",
						 a, z, xe);
				want_e[w].seen = 1;
				check_count_text(attr(ed, "label"), want_e[w].exec);
				if (x.paths_used) {
					close_to(attr_num(ed, "dcpi_observed"), want_e[w].obs);
					assert_int_equal(!strcmp(attr(ed, "style"), "dashed"),
							 !(want_e[w].obs > 0));
				} else {
					assert_string_equal(attr(ed, "dcpi_observed"), "");
					assert_string_not_equal(attr(ed, "style"), "dashed");
				}
			}
		assert_int_equal(got, nwant);
		nedges = got;
	}
	assert_true(nedges > 0);
	agclose(g);
	return nhidden;
}

/* --all: every block of the estimate, no cold region. */
static void test_all(void **state)
{
	(void)state;
	need_db();
	assert_int_equal(check("db", "loop_mixed", "--all", 1, NULL), 0);
	assert_int_equal(check("db", "loop_simple", "--all", 1, NULL), 0);
	assert_int_equal(check("demo", "main", "--all", 1, NULL), 0);
}

/* The default share (0.99) and smaller ones hide blocks, and the fewer the
 * share the more they hide. */
static void test_hot(void **state)
{
	size_t h99, h50;

	(void)state;
	need_db();
	h99 = check("db", "loop_mixed", "", 0.99, NULL);
	check("db", "loop_mixed", "--hot 0.9", 0.9, NULL);
	h50 = check("db", "loop_mixed", "--hot 0.5", 0.5, NULL);
	assert_true(h50 > 0);
	assert_true(h50 >= h99);
	check("db", "loop_simple", "--hot 0.5", 0.5, NULL);
	/* main of the demo: setup loops and checks around its calls, cold */
	assert_true(check("demo", "main", "", 0.99, NULL) > 0);
	assert_true(check("demo", "main", "--hot 0.7", 0.7, NULL) > 0);
}

/* Path samples: edges they saw solid, the others dashed (when the estimate
 * used them; a short run may leave too few). */
static void test_paths(void **state)
{
	int used = 0, any = 0;

	(void)state;
	need_db();
	check("demo", "mix_chain", "--all", 1, &used);
	any |= used;
	check("demo", "chase.constprop.0", "", 0.99, &used);
	any |= used;
	if (!any)
		print_message("no path samples used in this recording: dashes not checked\n");
}

/* PNG through graphviz's library; --static gives the plain graph. */
static void test_render(void **state)
{
	unsigned char magic[8];
	char path[PROF_PATH_MAX];
	FILE *f;

	(void)state;
	need_db();
	/* graphviz's cairo and fontconfig keep memory to the end */
	assert_int_equal(tu_sh("ASAN_OPTIONS=detect_leaks=0 %s cfg --db %s/db loop_mixed "
			       "--no-measure --format png -o %s/g.png", bin, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/g.png", dir);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 8, f), 8);
	fclose(f);
	assert_memory_equal(magic, "\x89PNG\r\n\x1a\n", 8);
	assert_int_equal(tu_sh("%s cfg --db %s/db loop_mixed --static > %s/s.dot && "
			       "grep -q 'b0' %s/s.dot && ! grep -q 'dcpi_share' %s/s.dot && "
			       "! grep -q 'of cycles' %s/s.dot", bin, dir, dir, dir, dir, dir), 0);
}

/* A bad --hot is an error naming the value, with samples or without. */
static void test_bad_hot(void **state)
{
	static const char *const bad[] = { "0", "1.5", "-0.2", "abc", "0.5x", "''", "nan" };

	(void)state;
	need_db();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_not_equal(tu_sh("%s cfg --db %s/db loop_mixed --no-measure --hot %s "
					   "> %s/o 2> %s/e", bin, dir, bad[i], dir, dir), 0);
		assert_int_equal(tu_sh("grep -q -- '--hot .*not a share in (0, 1]' %s/e && "
				       "! test -s %s/o", dir, dir), 0);
		assert_int_not_equal(tu_sh("%s cfg --db %s/db loop_mixed --static --hot %s "
					   "> %s/o 2> %s/e", bin, dir, bad[i], dir, dir), 0);
		assert_int_equal(tu_sh("grep -q -- '--hot .*not a share in (0, 1]' %s/e", dir), 0);
	}
	assert_int_equal(tu_sh("%s cfg --db %s/db loop_mixed --no-measure --hot 1 > /dev/null",
			       bin, dir), 0);
}

TU_MAIN(setup, teardown,
	cmocka_unit_test(test_all),
	cmocka_unit_test(test_hot),
	cmocka_unit_test(test_paths),
	cmocka_unit_test(test_render),
	cmocka_unit_test(test_bad_hot))
