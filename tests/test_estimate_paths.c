/*
 * test_estimate_paths.c - estimation with path samples (estimate/paths.c,
 * estimate/scale.c; docs/estimate.md "Path samples"): bursts of single steps
 * taken from a simulated run of the hand-assembled loop with an if (loop_if.h,
 * exact counts known), branch ratios and block counts recovered within
 * statistical bounds; no path data gives exactly the windows' result;
 * degenerate inputs (a loop nothing leaves, no samples, transitions that match
 * no edge) stay finite; dcpicalc's text and --json on a real recording with
 * path samples.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/model.h"
#include "dcpi/paths.h"
#include "loop_if.h"
#include "tu_main.h"

#define CPS 1000.0
#define MAXE 64

/* loop_if's instructions: address and what follows it. */
static const uint64_t li_addr[] = { 0x1000, 0x1002, 0x1004, 0x1007, 0x1009, 0x100c, 0x100e,
				    0x1011, 0x1015, 0x1019, 0x1020, 0x1022 };

struct sim {
	struct path_edge e[MAXE];
	size_t n;
	uint64_t bursts;
	uint32_t rng;
};

static void sim_add(struct sim *s, uint64_t from, uint64_t to)
{
	for (size_t k = 0; k < s->n; k++)
		if (s->e[k].from == from && s->e[k].to == to) {
			s->e[k].count++;
			return;
		}
	assert_true(s->n < MAXE);
	s->e[s->n].from = from, s->e[s->n].to = to, s->e[s->n].count = 1;
	s->n++;
}

static uint32_t rnd(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 17;
	s->rng ^= s->rng << 5;
	return s->rng;
}

/*
 * Run loop_if `calls` times (each a call from outside: PATH_ELSEWHERE ->
 * 0x1000, the ret back out), starting a burst of k steps at each
 * instruction with probability 1/every: the transitions the collector
 * would record.
 */
static void simulate(struct sim *s, int calls, int iters, uint32_t every, int k)
{
	int left = 0;
	uint64_t prev = PATH_ELSEWHERE;

	for (int c = 0; c < calls; c++) {
		uint64_t pc = 0x1000, cx = 0;

		for (;;) {
			uint64_t next;

			if (left > 0) {
				sim_add(s, prev, pc);
				left--;
			} else if (rnd(s) % every == 0) {
				left = k;
				s->bursts++;
			}
			prev = pc;
			switch (pc) {
			case 0x1007: next = (cx & 3) ? 0x100e : 0x1009; break;
			case 0x100c: next = 0x1011; break;
			case 0x1015: cx++; next = 0x1019; break;
			case 0x1020: next = (int)cx != iters ? 0x1004 : 0x1022; break;
			case 0x1022: next = PATH_ELSEWHERE; break;
			default:
				next = 0;
				for (size_t i = 0; i + 1 < sizeof(li_addr) / sizeof(*li_addr); i++)
					if (li_addr[i] == pc)
						next = li_addr[i + 1];
				assert_true(next != 0);
			}
			if (next == PATH_ELSEWHERE) {
				if (left > 0) {
					sim_add(s, pc, PATH_ELSEWHERE);
					left--;
				}
				prev = PATH_ELSEWHERE;
				break;
			}
			pc = next;
		}
	}
}

static void profile_of(struct sim *s, struct path_profile *pp)
{
	memset(pp, 0, sizeof(*pp));
	snprintf(pp->source, sizeof(pp->source), "tf-step");
	pp->bursts = s->bursts;
	pp->edges = s->e;
	pp->nedges = s->n;
}

/* Samples exactly count x M / cps per instruction (no stalls, no skid). */
static void perfect_samples(const struct cfg *cfg, const struct model *model, double *smp)
{
	double *m = calloc(cfg->ninsns, sizeof(double));
	struct dcpi_err err = { 0 };

	assert_non_null(m);
	assert_int_equal(est_model_m(cfg, model, EST_STEADY_SELF, m, NULL, NULL, &err), 0);
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		for (int k = 0; k < 6; k++)
			if (bl->n && bl->start == block_start[k])
				for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
					smp[i] = block_count[k] * m[i] / CPS;
	}
	free(m);
}

static int block_of(const struct cfg *cfg, uint64_t start)
{
	for (size_t b = 0; b < cfg->nblocks; b++)
		if (cfg->blocks[b].n && cfg->blocks[b].start == start)
			return (int)b;
	return -1;
}

static long edge_of(const struct cfg *cfg, uint64_t from, uint64_t to)
{
	int a = block_of(cfg, from), b = block_of(cfg, to);

	for (size_t e = 0; e < cfg->nedges; e++)
		if ((int)cfg->edges[e].from == a && (int)cfg->edges[e].to == b)
			return (long)e;
	return -1;
}

/* The tests' fixture: loop_if built, the zen4 model, perfect samples, and
 * the path samples of a simulated run (sim, pp, obs) once lif_paths ran. */
struct lif {
	struct sim s;
	struct path_profile pp;
	struct est_path_obs obs;
	const struct model *model;
	struct cfg *cfg;
	double *smp;
};

static struct lif *lif_new(void)
{
	struct lif *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->cfg = loop_if_cfg(0x1000);
	f->model = model_by_name("zen4");
	assert_non_null(f->model);
	f->smp = calloc(f->cfg->ninsns, sizeof(double));
	assert_non_null(f->smp);
	perfect_samples(f->cfg, f->model, f->smp);
	return f;
}

/* The transitions of f's simulated run so far, observed on f's CFG. */
static void lif_obs(struct lif *f)
{
	struct dcpi_err err = { 0 };

	profile_of(&f->s, &f->pp);
	assert_int_equal(est_path_obs_at(f->cfg, 0x1000, &f->pp, &f->obs, &err), 0);
}

/* Path samples of a run simulated from seed rng (simulate's arguments). */
static void lif_paths(struct lif *f, uint32_t rng, int calls, int iters, uint32_t every, int k)
{
	f->s.rng = rng;
	simulate(&f->s, calls, iters, every, k);
	lif_obs(f);
}

static void lif_free(struct lif *f)
{
	free(f->smp);
	cfg_free(f->cfg);
	free(f);
}

/* Edge probabilities, block counts and edge counts of cfg for
 * est_path_shape, zeroed. */
struct flow {
	double *prob, *x, *y;
};

static void flow_new(struct flow *w, const struct cfg *cfg)
{
	w->prob = calloc(cfg->nedges + 1, sizeof(double));
	w->x = calloc(cfg->nblocks, sizeof(double));
	w->y = calloc(cfg->nedges + 1, sizeof(double));
	assert_true(w->prob && w->x && w->y);
}

static void flow_free(struct flow *w)
{
	free(w->prob);
	free(w->x);
	free(w->y);
}

/* The transitions land on the right edges; the branch ratios come back. */
static void test_obs_and_probs(void **state)
{
	struct lif *f = lif_new();
	struct cfg *cfg = f->cfg;
	const struct est_path_obs *obs = &f->obs;
	double *prob;
	long bd, bc, eb, ef;
	double n;

	(void)state;
	lif_paths(f, 12345, 60, 1000, 2000, 32);
	assert_true(obs->transitions > 1000);
	assert_true(obs->unmatched == 0);
	bd = edge_of(cfg, 0x1004, 0x100e), bc = edge_of(cfg, 0x1004, 0x1009);
	eb = edge_of(cfg, 0x1011, 0x1004), ef = edge_of(cfg, 0x1011, 0x1022);
	assert_true(bd >= 0 && bc >= 0 && eb >= 0 && ef >= 0);
	n = obs->edge[bd] + obs->edge[bc];
	assert_true(n > 500);
	prob = calloc(cfg->nedges + 1, sizeof(double));
	assert_non_null(prob);
	est_path_probs(cfg, obs, 2, prob);
	/* binomial: 0.75 within 4 standard deviations */
	assert_true(fabs(prob[bd] - 0.75) < 4 * sqrt(0.75 * 0.25 / n) + 2 / n);
	assert_true(fabs(prob[bd] + prob[bc] - 1) < 1e-12);
	assert_true(prob[eb] > 0.99 && prob[ef] > 0 && prob[ef] < 0.01);
	/* the prior: the back edge likely, the exit not */
	est_path_prior(cfg, prob);
	assert_true(prob[eb] > 0.85 && prob[eb] < 0.9);
	assert_true(fabs(prob[bd] - 0.5) < 1e-12);
	free(prob);
	est_path_obs_free(&f->obs);
	lif_free(f);
}

/* The shape solves the flow equations: exact probabilities give the exact
 * relative counts, loop included. */
static void test_shape_exact(void **state)
{
	struct dcpi_err err = { 0 };
	struct lif *f = lif_new();
	struct cfg *cfg = f->cfg;
	struct flow w;
	double *prob, *x, *y;

	(void)state;
	flow_new(&w, cfg);
	prob = w.prob, x = w.x, y = w.y;
	est_path_prior(cfg, prob);
	prob[edge_of(cfg, 0x1004, 0x100e)] = 0.75;
	prob[edge_of(cfg, 0x1004, 0x1009)] = 0.25;
	prob[edge_of(cfg, 0x1011, 0x1004)] = 0.999;
	prob[edge_of(cfg, 0x1011, 0x1022)] = 0.001;
	assert_int_equal(est_path_shape(cfg, prob, x, y, &err), 0);
	for (int k = 0; k < 6; k++)
		assert_true(fabs(x[block_of(cfg, block_start[k])] - block_count[k] / 1000) <
			    1e-6 * block_count[k]);
	assert_true(fabs(y[edge_of(cfg, 0x1004, 0x1009)] - 250) < 1e-3);
	flow_free(&w);
	lif_free(f);
}

/* End to end: simulated bursts + perfect samples: every block of the loop
 * within 5% (the if's rarer arm 10%), edges too. */
static void test_counts_recovered(void **state)
{
	struct lif *f = lif_new();
	struct est_path_info info;
	struct est_path_opts po;
	struct est_opts o;
	struct est_result r;
	struct dcpi_err err = { 0 };
	const struct model *model = f->model;
	struct cfg *cfg = f->cfg;

	(void)state;
	lif_paths(f, 777, 50, 1000, 1000, 32);
	est_opts_default(&o);
	est_path_opts_default(&po);
	for (int rule = 0; rule < EST_SCALE_NRULES; rule++) {
		po.rule = (enum est_scale_rule)rule;
		assert_int_equal(est_procedure_paths(cfg, model, f->smp, CPS, &o, &po, &f->obs, &r,
						     &info, &err), 0);
		assert_true(info.used);
		for (int k = 1; k < 5; k++) {
			double got = r.blocks[block_of(cfg, block_start[k])].executions;
			double tol = k == 2 ? 0.10 : 0.05;

			if (rule == EST_SCALE_QUANTILE)
				tol += 0.05;	/* one block's ratio, not the sum */
			assert_true(fabs(got - block_count[k]) <= tol * block_count[k]);
		}
		assert_true(fabs(r.edges[edge_of(cfg, 0x1004, 0x100e)].executions - 7.5e5) <
			    0.08 * 7.5e5);
		assert_int_equal(info.source[block_of(cfg, 0x1004)], EST_BS_BOTH);
		assert_true(info.block_obs[block_of(cfg, 0x1004)] > 100);
		assert_int_equal(r.blocks[block_of(cfg, 0x1004)].conf, EST_CONF_HIGH);
		est_result_free(&r);
		est_path_info_free(&info);
	}
	est_path_obs_free(&f->obs);
	lif_free(f);
}

/* Without path data (none, or too few transitions) nothing changes. */
static void test_absent_is_old(void **state)
{
	struct lif *f = lif_new();
	struct est_path_info info;
	struct est_opts o;
	struct est_result a, b;
	struct dcpi_err err = { 0 };
	const struct model *model = f->model;
	struct cfg *cfg = f->cfg;
	double *smp = f->smp;

	(void)state;
	for (size_t i = 0; i < cfg->ninsns; i++)
		smp[i] *= 1 + 0.3 * (double)(i % 3);	/* stalls: windows err */
	est_opts_default(&o);
	assert_int_equal(est_procedure(cfg, model, smp, CPS, &o, &a, &err), 0);
	for (int variant = 0; variant < 3; variant++) {
		const struct est_path_obs *po = NULL;

		if (variant > 0) {
			f->s.rng = 99, f->s.n = 0;
			if (variant == 2)
				simulate(&f->s, 1, 1000, 100000, 4);	/* a handful */
			lif_obs(f);
			po = &f->obs;
		}
		assert_int_equal(est_procedure_paths(cfg, model, smp, CPS, &o, NULL, po, &b, &info,
						     &err), 0);
		assert_false(info.used);
		for (size_t k = 0; k < cfg->nblocks; k++) {
			assert_memory_equal(&a.blocks[k], &b.blocks[k], sizeof(a.blocks[k]));
			assert_int_equal(info.source[k], EST_BS_WINDOWS);
		}
		assert_memory_equal(a.insns, b.insns, cfg->ninsns * sizeof(*a.insns));
		assert_memory_equal(a.edges, b.edges, cfg->nedges * sizeof(*a.edges));
		est_result_free(&b);
		est_path_info_free(&info);
		if (po)
			est_path_obs_free(&f->obs);
	}
	est_result_free(&a);
	lif_free(f);
}

/* A loop nothing leaves (jmp to itself after a body), a loop whose exit was
 * never seen with no prior weight, no samples, transitions matching no
 * edge: all finite, non-negative, and without samples the windows stand. */
static void test_degenerate(void **state)
{
	/* A: xor %eax,%eax; B: add $1,%eax; jmp B */
	static const uint8_t spin[] = { 0x31, 0xc0, 0x83, 0xc0, 0x01, 0xeb, 0xfb };
	struct path_edge ed[3] = {
		{ 0x1005, 0x1002, 500 },		/* the back edge */
		{ PATH_ELSEWHERE, 0x1000, 1 },
		{ 0x1005, 0x1003, 7 },		/* into no instruction */
	};
	struct path_profile pp;
	struct est_path_obs obs;
	struct est_path_info info;
	struct est_path_opts po;
	struct est_opts o;
	struct est_result r;
	struct dcpi_err err = { 0 };
	const struct model *model = model_by_name("zen4");
	struct cfg *cfg;
	double smp[3] = { 0, 40, 60 };
	struct flow w;

	(void)state;
	assert_int_equal(cfg_build_bytes(spin, sizeof(spin), 0x1000, "spin", &cfg, &err), 0);
	memset(&pp, 0, sizeof(pp));
	pp.edges = ed, pp.nedges = 3, pp.bursts = 20;
	assert_int_equal(est_path_obs_at(cfg, 0x1000, &pp, &obs, &err), 0);
	assert_true(obs.transitions == 500 && obs.unmatched == 7 && obs.entries == 1);
	flow_new(&w, cfg);
	for (int weight = 0; weight < 2; weight++) {
		est_path_probs(cfg, &obs, weight ? 2 : 0, w.prob);
		assert_int_equal(est_path_shape(cfg, w.prob, w.x, w.y, &err), 0);
		for (size_t b = 0; b < cfg->nblocks; b++)
			assert_true(isfinite(w.x[b]) && w.x[b] >= 0);
		assert_true(w.x[block_of(cfg, 0x1002)] > 1000);
	}
	assert_int_equal(cfg->ninsns, 3);
	est_opts_default(&o);
	est_path_opts_default(&po);
	assert_int_equal(est_procedure_paths(cfg, model, smp, CPS, &o, &po, &obs, &r, &info,
					     &err), 0);
	assert_true(info.used);
	for (size_t b = 0; b < cfg->nblocks; b++)
		assert_true(isfinite(r.blocks[b].executions) && r.blocks[b].executions >= 0);
	est_result_free(&r);
	est_path_info_free(&info);
	/* no samples: no scale, the windows' (zero) answer stands */
	memset(smp, 0, sizeof(smp));
	assert_int_equal(est_procedure_paths(cfg, model, smp, CPS, &o, &po, &obs, &r, &info,
					     &err), 0);
	assert_false(info.used);
	est_result_free(&r);
	est_path_info_free(&info);
	est_path_obs_free(&obs);
	flow_free(&w);
	cfg_free(cfg);
}

/* Read all of path into buf (NUL-terminated); bytes read. */
static size_t slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

/*
 * End to end: estloops under `dcpi record` with path samples, then dcpicalc:
 * the text says how many transitions it used, --json has "paths" used, a
 * block whose count is the path shape with its own samples ("both"), an
 * edge with transitions seen, and --no-paths is the windows' answer
 * ("paths": null, every block "windows").
 */
static void test_dcpicalc_json(void **state)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	static char out[1 << 20];
	char tmp[256];

	(void)state;
	if (!bin || !build || access(bin, X_OK)) {
		skip();
		return;
	}
	assert_int_equal(tu_workspace(tmp, sizeof(tmp), "estpaths"), 0);
	if (tu_sh("%s record -e cpu-clock --paths 200:32 --db %s/db -- %s/workloads/estloops "
		  "20000 > %s/rec.log 2>&1", bin, tmp, build, tmp)) {
		print_message("dcpi record with paths failed here: skipping\n");
		tu_sh("cat %s/rec.log; rm -rf %s", tmp, tmp);
		skip();
		return;
	}
	assert_int_equal(tu_sh("DCPI_MEASURE=0 %s calc loop_simple --db %s/db > %s/t.txt", bin, tmp,
			       tmp), 0);
	slurp(strcat(strcpy((char[200]){ 0 }, tmp), "/t.txt"), out, sizeof(out));
	assert_non_null(strstr(out, "transitions in this procedure"));
	assert_int_equal(tu_sh("DCPI_MEASURE=0 %s calc loop_simple --db %s/db --json > %s/j.json",
			       bin, tmp, tmp), 0);
	slurp(strcat(strcpy((char[200]){ 0 }, tmp), "/j.json"), out, sizeof(out));
	assert_non_null(strstr(out, "\"paths\": {\"source\": \"tf-step\", \"used\": true"));
	assert_non_null(strstr(out, "\"source\": \"both\""));
	assert_non_null(strstr(out, "\"kind\": \"taken\""));
	assert_null(strstr(out, "\"kind\": \"taken\", \"executions\": 0,"));
	{
		/* the loop's back edge (taken) was seen */
		const char *t = strstr(out, "\"kind\": \"taken\"");
		const char *o = t ? strstr(t, "\"observed\": ") : NULL;

		assert_non_null(o);
		assert_true(strtod(o + 12, NULL) > 0);
	}
	assert_int_equal(tu_sh("DCPI_MEASURE=0 %s calc loop_simple --db %s/db --json --no-paths "
			       "> %s/n.json", bin, tmp, tmp), 0);
	slurp(strcat(strcpy((char[200]){ 0 }, tmp), "/n.json"), out, sizeof(out));
	assert_non_null(strstr(out, "\"paths\": null"));
	assert_null(strstr(out, "\"source\": \"both\""));
	assert_non_null(strstr(out, "\"source\": \"windows\""));
	tu_sh("rm -rf %s", tmp);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_obs_and_probs),
	cmocka_unit_test(test_shape_exact),
	cmocka_unit_test(test_counts_recovered),
	cmocka_unit_test(test_absent_is_old),
	cmocka_unit_test(test_degenerate),
	cmocka_unit_test(test_dcpicalc_json))
