/*
 * test_culprit.c - dynamic-stall culprits (culprit/dynamic.c) on code whose
 * culprit is known by construction: a pointer chase, a data-dependent
 * branch, a store-forwarding conflict, a divide chain, a fetch across a
 * cache line; events clearing and bounding causes; the fig. 4 summary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "testutil.h"
#include "tu_main.h"

#define BASE 0x1000

/* loop: mov (%rax),%rax; add $1,%rcx; cmp %rdx,%rcx; jne loop */
static const uint8_t chase[] = {
	0x31, 0xc9, 0x48, 0x8b, 0x00, 0x48, 0x83, 0xc1, 0x01, 0x48, 0x39, 0xd1,
	0x75, 0xf4, 0xc3,
};

/* loop: imul %r8,%rsi; test $1,%sil; je D; add $3,%rax; jmp E;
 * D: sub $5,%rax; E: add $1,%rcx; cmp %rdx,%rcx; jne loop */
static const uint8_t branch[] = {
	0x31, 0xc9, 0x49, 0x0f, 0xaf, 0xf0, 0x40, 0xf6, 0xc6, 0x01, 0x74, 0x06,
	0x48, 0x83, 0xc0, 0x03, 0xeb, 0x04, 0x48, 0x83, 0xe8, 0x05, 0x48, 0x83,
	0xc1, 0x01, 0x48, 0x39, 0xd1, 0x75, 0xe3, 0xc3,
};

/* loop: mov %ecx,(%rdi); mov (%rdi),%rax; add %rax,%rsi; ...: a 4-byte
 * store, then an 8-byte load of the same address */
static const uint8_t fwd[] = {
	0x31, 0xc9, 0x89, 0x0f, 0x48, 0x8b, 0x07, 0x48, 0x01, 0xc6, 0x48, 0x83,
	0xc1, 0x01, 0x48, 0x39, 0xd1, 0x75, 0xef, 0xc3,
};

/* loop: xor %edx,%edx; div %rcx; add $3,%rax; sub $1,%rsi; jne loop */
static const uint8_t divc[] = {
	0xb9, 0x07, 0x00, 0x00, 0x00, 0x31, 0xd2, 0x48, 0xf7, 0xf1, 0x48, 0x83,
	0xc0, 0x03, 0x48, 0x83, 0xee, 0x01, 0x75, 0xf1, 0xc3,
};

struct fx {
	struct cfg *cfg;
	double *dyn, *exec, *eexec, *eprob, *ev;
	struct cul_input in;
	struct cul_result r;
};

static void fx_build(struct fx *f, const uint8_t *code, size_t len)
{
	struct dcpi_err err;

	memset(f, 0, sizeof(*f));
	assert_int_equal(cfg_build_bytes(code, len, BASE, "t", &f->cfg, &err), 0);
	f->dyn = calloc(f->cfg->ninsns, sizeof(double));
	f->exec = calloc(f->cfg->ninsns, sizeof(double));
	f->ev = calloc(f->cfg->ninsns, sizeof(double));
	f->eexec = calloc(f->cfg->nedges, sizeof(double));
	f->eprob = calloc(f->cfg->nedges, sizeof(double));
	assert_non_null(f->dyn);
	for (size_t i = 0; i < f->cfg->ninsns; i++)
		f->exec[i] = 1000;
	for (size_t e = 0; e < f->cfg->nedges; e++) {
		const struct cfg_block *b = &f->cfg->blocks[f->cfg->edges[e].from];

		f->eprob[e] = b->nsucc ? 1.0 / b->nsucc : 1;
		f->eexec[e] = 1000 * f->eprob[e];
	}
	cul_input_default(&f->in);
	f->in.cfg = f->cfg;
	f->in.dyn = f->dyn;
	f->in.exec = f->exec;
	f->in.edge_exec = f->eexec;
	f->in.edge_prob = f->eprob;
}

static void fx_free(struct fx *f)
{
	cul_result_free(&f->r);
	cfg_free(f->cfg);
	free(f->dyn);
	free(f->exec);
	free(f->ev);
	free(f->eexec);
	free(f->eprob);
}

/* Loops go round: a backward branch is taken 999 times in 1000. */
static void loop_probs(struct fx *f)
{
	for (size_t e = 0; e < f->cfg->nedges; e++) {
		const struct cfg_edge *ed = &f->cfg->edges[e];
		const struct cfg_block *from = &f->cfg->blocks[ed->from];

		if (ed->kind == CFG_E_TAKEN)
			f->eprob[e] = f->cfg->blocks[ed->to].start <= from->start ? 0.999 : 0.5;
		else if (ed->kind == CFG_E_NOT_TAKEN)
			f->eprob[e] = 1 - 0.999;
		f->eexec[e] = 1000 * f->eprob[e];
	}
}

static int at(const struct fx *f, uint64_t off)
{
	int i = cfg_insn_at(f->cfg, BASE + off);

	assert_true(i >= 0);
	return i;
}

static const struct cul_stall *run(struct fx *f, uint64_t stalled)
{
	struct dcpi_err err;
	const struct cul_stall *s;

	cul_result_free(&f->r);
	assert_int_equal(cul_analyze(&f->in, &f->r, &err), 0);
	s = cul_stall_of(&f->r, (uint32_t)at(f, stalled));
	assert_non_null(s);
	return s;
}

/* The stall at off of f, its dynamic cycles there set to cycles first. */
static const struct cul_stall *stall_at(struct fx *f, uint64_t off, double cycles)
{
	f->dyn[at(f, off)] = cycles;
	return run(f, off);
}

/* The first suspect of s: cause c at the instruction at off of f. */
static void top_is(const struct fx *f, const struct cul_stall *s, enum cul_cause c,
		   uint64_t off)
{
	assert_true(s->nsuspects > 0);
	assert_int_equal(s->sus[0].cause, c);
	assert_int_equal(s->sus[0].insn, at(f, off));
}

static int has(const struct cul_stall *s, enum cul_cause c, int insn)
{
	for (size_t k = 0; k < s->nsuspects; k++)
		if (s->sus[k].cause == c && (insn < 0 || s->sus[k].insn == insn))
			return 1;
	return 0;
}

/* The chase's cycles land on the add after the load (skid 1): the load. */
static void test_pointer_chase(void **state)
{
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	fx_build(&f, chase, sizeof(chase));
	loop_probs(&f);
	s = stall_at(&f, 0x5, 150000);
	assert_true(s->nsuspects >= 1);
	top_is(&f, s, CUL_DCACHE, 0x2);
	assert_false(has(s, CUL_MISPREDICT, -1));	/* the loop branch is predictable */
	assert_false(has(s, CUL_LONG_LAT, -1));
	/* two instructions later (skid 2, the cmp) it is still the load */
	f.dyn[at(&f, 0x5)] = 0;
	s = stall_at(&f, 0x9, 150000);
	top_is(&f, s, CUL_DCACHE, 0x2);
	/* with skid 0 the cmp does not read the load's result: not the load */
	f.in.skid = 0;
	s = run(&f, 0x9);
	assert_false(has(s, CUL_DCACHE, -1));
	fx_free(&f);
}

/* A 50% branch: the stall at the start of either arm is the je's. */
static void test_unpredictable_branch(void **state)
{
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	fx_build(&f, branch, sizeof(branch));
	f.dyn[at(&f, 0x12)] = 20000;	/* sub $5: first of the taken arm */
	f.dyn[at(&f, 0xc)] = 20000;	/* add $3: first of the other */
	s = run(&f, 0x12);
	top_is(&f, s, CUL_MISPREDICT, 0xa);
	s = run(&f, 0xc);
	top_is(&f, s, CUL_MISPREDICT, 0xa);

	/* in the flush's shadow: the join block's first instructions, two
	 * blocks after the branch, still wait for the refetch */
	s = stall_at(&f, 0x16, 9000);	/* add $1,%rcx after the join */
	assert_true(has(s, CUL_MISPREDICT, at(&f, 0xa)));

	/* a branch that nearly always goes one way is proven innocent */
	for (size_t e = 0; e < f.cfg->nedges; e++) {
		const struct cfg_edge *ed = &f.cfg->edges[e];

		if (ed->kind == CFG_E_TAKEN && ed->from == (uint32_t)cfg_block_at(f.cfg,
									 BASE + 0x2))
			f.eprob[e] = 0.999;
		else if (ed->kind == CFG_E_NOT_TAKEN &&
			 ed->from == (uint32_t)cfg_block_at(f.cfg, BASE + 0x2))
			f.eprob[e] = 0.001;
	}
	s = run(&f, 0x12);
	assert_false(has(s, CUL_MISPREDICT, at(&f, 0xa)));
	fx_free(&f);
}

/* A 4-byte store, then an 8-byte load of it: the store is named. */
static void test_store_forwarding(void **state)
{
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	fx_build(&f, fwd, sizeof(fwd));
	s = stall_at(&f, 0x7, 12000);	/* add %rax,%rsi after the load */
	top_is(&f, s, CUL_STORE_FWD, 0x2);
	assert_true(has(s, CUL_DCACHE, at(&f, 0x4)));	/* still a suspect */
	fx_free(&f);

	/* the same store width as the load forwards: no conflict */
	{
		uint8_t same[sizeof(fwd)];

		memcpy(same, fwd, sizeof(fwd));
		same[2] = 0x90;		/* nop; then mov %rcx,(%rdi) would need a
					 * REX: use the load's own width */
		same[3] = 0x90;
		fx_build(&f, same, sizeof(same));
		s = stall_at(&f, 0x7, 12000);
		assert_false(has(s, CUL_STORE_FWD, -1));
		assert_int_equal(s->sus[0].cause, CUL_DCACHE);
		fx_free(&f);
	}
}

/* A divide chain: the div, two instructions before the stall. */
static void test_divide_chain(void **state)
{
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	fx_build(&f, divc, sizeof(divc));
	s = stall_at(&f, 0xa, 30000);	/* add $3,%rax reads the quotient */
	top_is(&f, s, CUL_LONG_LAT, 0x7);
	assert_false(has(s, CUL_DCACHE, -1));
	fx_free(&f);
}

/* 64 nops, then an add that starts the next cache line: fetch. */
static void test_icache_line(void **state)
{
	uint8_t code[64 + 5];
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	memset(code, 0x90, 64);
	memcpy(code + 64, (const uint8_t[]){ 0x48, 0x83, 0xc0, 0x01, 0xc3 }, 5);
	fx_build(&f, code, sizeof(code));
	f.dyn[at(&f, 64)] = 5000;
	f.dyn[at(&f, 30)] = 5000;	/* mid-line: nothing to blame */
	s = run(&f, 64);
	top_is(&f, s, CUL_ICACHE, 64);
	assert_false(has(s, CUL_ITLB, -1));
	s = run(&f, 30);
	assert_int_equal(s->nsuspects, 0);	/* unexplained */
	assert_true(f.r.sum.min[CUL_UNEXPLAINED] >= 5000 - 1e-9);
	fx_free(&f);
}

/* Simulated misses: none at the load clears the D-cache; some bound it. */
static void test_events_clear_and_bound(void **state)
{
	const struct cul_stall *s;
	struct fx f;

	(void)state;
	fx_build(&f, chase, sizeof(chase));
	loop_probs(&f);
	f.dyn[at(&f, 0x5)] = 150000;
	f.in.events[CUL_EV_DMISS] = f.ev;
	s = run(&f, 0x5);
	assert_false(has(s, CUL_DCACHE, -1));
	assert_int_equal(s->nsuspects, 0);
	assert_true(f.r.sum.min[CUL_UNEXPLAINED] > 149999);

	f.ev[at(&f, 0x2)] = 100;	/* 100 misses x 1000 cycles = 100000 */
	s = run(&f, 0x5);
	assert_int_equal(s->sus[0].cause, CUL_DCACHE);
	assert_true(s->sus[0].bound > 99999 && s->sus[0].bound < 100001);
	/* fig. 4: the D-cache explains at most its bound, the rest is
	 * unexplained */
	assert_true(f.r.sum.max[CUL_DCACHE] > 99999 && f.r.sum.max[CUL_DCACHE] < 100001);
	assert_true(f.r.sum.min[CUL_UNEXPLAINED] > 49999 && f.r.sum.min[CUL_UNEXPLAINED] < 50001);
	fx_free(&f);
}

/* The summary's ranges: min <= max, shares add up over single causes. */
static void test_summary_ranges(void **state)
{
	struct dcpi_err err;
	struct fx f;
	double one = 0;

	(void)state;
	fx_build(&f, fwd, sizeof(fwd));
	f.dyn[at(&f, 0x7)] = 12000;	/* store forwarding and D-cache */
	f.dyn[at(&f, 0x11)] = 3000;	/* jne: its cmp, no load feeds it */
	assert_int_equal(cul_analyze(&f.in, &f.r, &err), 0);
	assert_true(f.r.sum.dynamic > 14999 && f.r.sum.dynamic < 15001);
	for (int c = 0; c <= CUL_UNEXPLAINED; c++) {
		assert_true(f.r.sum.min[c] <= f.r.sum.max[c] + 1e-9);
		one += f.r.sum.min[c];
	}
	assert_true(one <= f.r.sum.dynamic + 1e-9);
	assert_true(f.r.sum.max[CUL_STORE_FWD] >= 12000 - 1e-9);
	assert_true(f.r.sum.max[CUL_DCACHE] >= 12000 - 1e-9);
	assert_int_equal(f.r.stalls[0].insn, (uint32_t)at(&f, 0x7));	/* largest first */
	fx_free(&f);
}

/* From an estimate: S x cps - F x M, and a PMU's miss samples that landed
 * on the instruction after the load are charged back to it. */
static void test_from_estimate(void **state)
{
	struct est_insn ins[8];
	struct est_edge edg[8];
	struct est_result r;
	struct cul_result out;
	struct dcpi_err err;
	double ev[8] = { 0 };
	struct est_event_counts evc = { "L1-dcache-load-misses", ev };
	struct fx f;
	int load, add;

	(void)state;
	fx_build(&f, chase, sizeof(chase));
	assert_true(f.cfg->ninsns <= 8 && f.cfg->nedges <= 8);
	load = at(&f, 0x2);
	add = at(&f, 0x5);
	memset(&r, 0, sizeof(r));
	memset(ins, 0, sizeof(ins));
	memset(edg, 0, sizeof(edg));
	r.ninsns = f.cfg->ninsns;
	r.nedges = f.cfg->nedges;
	r.insns = ins;
	r.edges = edg;
	for (size_t i = 0; i < f.cfg->ninsns; i++) {
		ins[i].executions = 1000;
		ins[i].m = 1;
		ins[i].cycles = 1000;
		ins[i].conf = EST_CONF_MEDIUM;
	}
	ins[add].cycles = 151000;
	for (size_t e = 0; e < f.cfg->nedges; e++) {
		edg[e].prob = f.cfg->edges[e].kind == CFG_E_TAKEN ? 0.999 :
			      f.cfg->edges[e].kind == CFG_E_NOT_TAKEN ? 0.001 : 1;
		edg[e].executions = 1000 * edg[e].prob;
	}
	/* sampled misses at the add: charged to the load; none: innocent */
	ev[add] = 200;
	assert_int_equal(est_culprits(f.cfg, &r, &evc, 1, 1, &out, &err), 0);
	assert_int_equal(out.nstalls, 1);
	assert_int_equal(out.stalls[0].insn, (uint32_t)add);
	assert_true(out.stalls[0].cycles > 149999 && out.stalls[0].cycles < 150001);
	assert_int_equal(out.stalls[0].sus[0].cause, CUL_DCACHE);
	assert_int_equal(out.stalls[0].sus[0].insn, load);
	assert_true(out.stalls[0].sus[0].bound > 199999);	/* 200 x 1000 */
	cul_result_free(&out);
	ev[add] = 0;
	assert_int_equal(est_culprits(f.cfg, &r, &evc, 1, 1, &out, &err), 0);
	assert_int_equal(out.stalls[0].nsuspects, 0);
	cul_result_free(&out);
	/* skid undone: the load's best case, sampled on the add, is no stall */
	ins[load].cycles = 0;
	ins[load].m = 4;
	ins[add].cycles = 5000;
	assert_int_equal(est_culprits(f.cfg, &r, &evc, 1, 1, &out, &err), 0);
	assert_int_equal(out.nstalls, 0);
	cul_result_free(&out);
	ins[add].cycles = 9000;		/* 4000 beyond it */
	assert_int_equal(est_culprits(f.cfg, &r, &evc, 1, 1, &out, &err), 0);
	assert_int_equal(out.nstalls, 1);
	assert_true(fabs(out.stalls[0].cycles - 4000) < 1e-6);
	cul_result_free(&out);
	/* with skid 0 nothing is carried: the add's 8000 beyond its own M,
	 * capped at the block's 4000 beyond its best case */
	assert_int_equal(est_culprits(f.cfg, &r, &evc, 1, 0, &out, &err), 0);
	assert_true(fabs(out.stalls[0].cycles - 4000) < 1e-6);
	cul_result_free(&out);
	assert_int_equal(est_culprit_event("callgrind-Bcm", NULL), CUL_EV_MISPREDICT);
	assert_int_equal(est_culprit_event("cpu-clock", NULL), -1);
	fx_free(&f);
}

/* ---- recorded: tests/workloads/culprits under dcpi record ---------------- */

struct top {
	double dyn;
	char cause[32], addr[32];
};

/* dcpicalc --json: the instruction with the most dynamic stall cycles and
 * its first culprit; and, for `want`, its static reason and culprit. */
static void calc_json(const char *cmd, struct top *t, const char *want, char *reason,
		      char *stat)
{
	char line[8192];
	FILE *f = popen(cmd, "r");

	assert_non_null(f);
	memset(t, 0, sizeof(*t));
	while (fgets(line, sizeof(line), f)) {
		const char *d = strstr(line, "\"dynamic_cycles\": "), *c;
		double v;

		if (strncmp(line, "  {\"address\": ", 14) || !d)
			continue;
		if (want && !strncmp(line + 15, want, strlen(want)) &&
		    line[15 + strlen(want)] == '"') {
			const char *r = strstr(line, "\"reason\": \""), *s =
				strstr(line, "\"static_culprit\": ");

			assert_non_null(r);
			assert_non_null(s);
			sscanf(r + 11, "%31[^\"]", reason);
			sscanf(s + 18, "%31[^,]", stat);
		}
		v = strtod(d + 18, NULL);
		c = strstr(line, "\"culprits\": [{\"cause\": \"");
		if (v > t->dyn && c) {
			const char *a = strstr(c, "\"address\": \"");

			t->dyn = v;
			sscanf(c + 24, "%31[^\"]", t->cause);
			if (a)
				sscanf(a + 12, "%31[^\"]", t->addr);
		}
	}
	assert_int_equal(pclose(f), 0);
}

static void sym_addr(const char *bin, const char *sym, char *out, size_t len)
{
	snprintf(out, len, "0x%llx", (unsigned long long)tu_nm_addr(bin, sym, 0));
}

/* Record MODE, give dcpicalc the exact counts, read its culprits. */
static void recorded(const char *mode, double n, struct top *t, const char *want,
		     char *reason, char *stat)
{
	const char *bin = getenv("DCPI_BIN"), *build = getenv("DCPI_BUILD");
	char dir[256], wl[1024], cmd[4096], proc[64];

	assert_int_equal(tu_workspace(dir, sizeof(dir), "culprit"), 0);
	snprintf(wl, sizeof(wl), "%s/workloads/culprits", build);
	snprintf(proc, sizeof(proc), "cul_%s", mode);
	assert_int_equal(tu_sh("%s record --no-paths --db %s/rec -- %s %s %.0f > /dev/null "
			       "2> %s/record.log", bin, dir, wl, mode, n, dir), 0);
	snprintf(cmd, sizeof(cmd), "%s/exact", dir);
	tu_exact_db(cmd, wl, proc, (const double[]){ 1, n, n });
	snprintf(cmd, sizeof(cmd), "%s calc %s --db %s/rec --exact %s/exact --no-events "
		 "--no-measure --json", bin, proc, dir, dir);
	calc_json(cmd, t, want, reason, stat);
	tu_sh("rm -rf %s", dir);
}

static const char *workload(void)
{
	static char wl[1024];

	snprintf(wl, sizeof(wl), "%s/workloads/culprits", getenv("DCPI_BUILD"));
	return wl;
}

static int have_tools(void)
{
	if (!getenv("DCPI_BIN") || !getenv("DCPI_BUILD")) {
		print_message("DCPI_BIN/DCPI_BUILD unset: run through tests/run.sh\n");
		return 0;
	}
	return 1;
}

/* Record mode n times: the top stall's first culprit is cause, on the
 * workload's symbol sym. */
static void recorded_top(const char *mode, double n, const char *sym, const char *cause)
{
	char want[32];
	struct top t;

	if (!have_tools())
		skip();
	recorded(mode, n, &t, NULL, NULL, NULL);
	sym_addr(workload(), sym, want, sizeof(want));
	print_message("%s: top stall %.3g cycles, %s on %s (%s at %s)\n", mode, t.dyn, t.cause,
		      t.addr, sym, want);
	assert_true(t.dyn > 0);
	assert_string_equal(t.cause, cause);
	assert_string_equal(t.addr, want);
}

/* A pointer chase through 64 MB: the load is named first. */
static void test_recorded_chase(void **state)
{
	(void)state;
	recorded_top("chase", 2000000, "cul_chase_load", "D-cache");
}

/* A branch on a random bit: the jcc is named first. */
static void test_recorded_branch(void **state)
{
	(void)state;
	recorded_top("branch", 20000000, "cul_branch_jcc", "branch mispredict");
}

/* A 4-byte store under an 8-byte load: the model's static stall names the
 * store (the measured best case would hold it too: --no-measure). */
static void test_recorded_fwd(void **state)
{
	char load[32], store[32], reason[32] = "", stat[32] = "";
	struct top t;

	(void)state;
	if (!have_tools())
		skip();
	sym_addr(workload(), "cul_fwd_load", load, sizeof(load));
	sym_addr(workload(), "cul_fwd_store", store, sizeof(store));
	recorded("fwd", 20000000, &t, load, reason, stat);
	print_message("fwd: load %s: %s on %s (store at %s)\n", load, reason, stat, store);
	assert_string_equal(reason, "mem dep");
	assert_true(strlen(stat) > 2);
	assert_int_equal(strncmp(stat + 1, store, strlen(store)), 0);	/* "0x..." quoted */
}

/* Strides: a pointer stepped by 4160, an index stepped by 1 (x 8), and a
 * step on one arm only (not once per iteration: no constant stride). */
static void test_stride(void **state)
{
	static const uint8_t s1[] = {
		0x48, 0x8b, 0x07, 0x48, 0x81, 0xc7, 0x40, 0x10, 0x00, 0x00, 0x48, 0x01, 0xc2,
		0x48, 0xff, 0xc9, 0x75, 0xee, 0xc3,
	};
	static const uint8_t s2[] = {
		0x48, 0x8b, 0x04, 0xf7, 0x48, 0x83, 0xc6, 0x01, 0x48, 0x01, 0xc2, 0x48, 0x39,
		0xce, 0x75, 0xf0, 0xc3,
	};
	static const uint8_t s3[] = {
		0x48, 0x8b, 0x07, 0xa8, 0x01, 0x74, 0x04, 0x48, 0x83, 0xc7, 0x40, 0x48, 0xff,
		0xc9, 0x75, 0xf0, 0xc3,
	};
	static const struct {
		const uint8_t *code;
		size_t len;
		uint64_t off;
		int64_t stride;
	} cases[] = {
		{ s1, sizeof(s1), 0, 4160 },
		{ s1, sizeof(s1), 0xa, 0 },		/* no memory operand */
		{ s2, sizeof(s2), 0, 8 },
		{ s3, sizeof(s3), 0, 0 },
		{ chase, sizeof(chase), 2, 0 },		/* the chase loads its own address */
	};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct fx f;
		int64_t st;

		fx_build(&f, cases[k].code, cases[k].len);
		assert_int_equal(cul_stride(f.cfg, (uint32_t)at(&f, cases[k].off), &st), 0);
		assert_int_equal(st, cases[k].stride);
		fx_free(&f);
	}
}

static void test_bad_input(void **state)
{
	struct cul_input in;
	struct cul_result r;
	struct dcpi_err err;
	struct fx f;

	(void)state;
	cul_input_default(&in);
	assert_true(cul_analyze(&in, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "culprits"));
	fx_build(&f, chase, sizeof(chase));
	f.in.skid = 9;
	assert_true(cul_analyze(&f.in, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "skid"));
	/* no stalls at all: nothing to explain, nothing unexplained */
	f.in.skid = 2;
	assert_int_equal(cul_analyze(&f.in, &f.r, &err), 0);
	assert_int_equal(f.r.nstalls, 0);
	assert_true(f.r.sum.dynamic == 0);
	fx_free(&f);
	assert_string_equal(cul_cause_name(CUL_DCACHE), "D-cache");
	assert_string_equal(cul_cause_name(CUL_UNEXPLAINED), "unexplained");
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_pointer_chase),
	cmocka_unit_test(test_unpredictable_branch),
	cmocka_unit_test(test_store_forwarding),
	cmocka_unit_test(test_divide_chain),
	cmocka_unit_test(test_icache_line),
	cmocka_unit_test(test_events_clear_and_bound),
	cmocka_unit_test(test_summary_ranges),
	cmocka_unit_test(test_from_estimate),
	cmocka_unit_test(test_stride),
	cmocka_unit_test(test_bad_input),
	cmocka_unit_test(test_recorded_chase),
	cmocka_unit_test(test_recorded_branch),
	cmocka_unit_test(test_recorded_fwd))
