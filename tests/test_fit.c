/*
 * test_fit.c - the model fit (culprit/model/fit.c) on synthetic measurements: a
 * known shipped table times the calibration probes (the scheduler's steady
 * cycles stand in for the machine), the fit starts from another CPU's table
 * and must recover the known one's values and predictions; with noise it
 * must still get there; values no probe determines keep their source; and
 * culprit/model/probes_data.c is culprit/model/probes.txt assembled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/model.h"
#include "dcpi/sandbox.h"
#include "tu_main.h"

static double steady(const struct model *m, const struct model_probe *p)
{
	struct cfg_insn *insns;
	struct sched_block b;
	size_t n;
	double c;

	assert_int_equal(cfg_decode(p->bytes, p->len, 0, &insns, &n, NULL), 0);
	assert_int_equal(model_schedule(m, insns, n, NULL, 0, &b, NULL), 0);
	c = b.steady_cycles;
	sched_block_free(&b);
	free(insns);
	return c;
}

/* The probes whose name starts with one of sel (all when sel is NULL). */
static size_t pick(const char *const *sel, struct model_probe *out)
{
	const struct model_probe *p;
	size_t n = model_probes(&p), k = 0;

	for (size_t i = 0; i < n; i++) {
		int take = !sel;

		for (int j = 0; sel && sel[j]; j++)
			take |= !strcmp(p[i].name, sel[j]);
		if (take)
			out[k++] = p[i];
	}
	return k;
}

/* Fake timings from truth, times (1 + noise * r), r in [-1, 1] from a fixed seed. */
static void fake(const struct model *truth, const struct model_probe *p, size_t n,
		 double noise, double *c)
{
	unsigned s = 12345;

	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		c[i] = steady(truth, &p[i]) * (1 + noise * ((double)(s >> 8 & 0xffff) / 32768.0 - 1));
	}
}

static void assert_class(const struct model *m, const char *cls, unsigned lat, unsigned busy)
{
	const struct model_class *r = model_class_row(m, cls);

	assert_non_null(r);
	if (r->lat != lat || r->busy != busy)
		fail_msg("%s: lat %u busy %u, want %u %u", cls, r->lat, r->busy, lat, busy);
}

/* The value of model m's parameter name, as the model file writes it. */
static const char *param(const struct model *m, const char *name)
{
	static char v[32];

	v[0] = '\0';
	for (size_t j = 0; j < model_param_count(); j++)
		if (!strcmp(model_param_name(j), name))
			model_param_text(m, j, v, sizeof(v));
	return v;
}

/* A fit and what it was given: the probes, their figures, and its report. */
struct fit {
	struct model_probe p[256];
	double c[256];
	size_t n;
	struct model_fit_report rep;
};

/*
 * The table of model from (a copy), its parameters named in zero set to 0
 * (zero NULL-terminated, or NULL), fitted on date to the figures of model
 * to (fake's, with noise) for the probes of sel: the fitted model.
 */
static struct model *fit(struct fit *f, const char *from, const char *to,
			 const char *const *sel, double noise, const char *const *zero,
			 const char *date)
{
	struct dcpi_err err = { 0 };
	struct model *m = model_copy(model_by_name(from), "fit", &err);

	assert_non_null(m);
	f->n = pick(sel, f->p);
	fake(model_by_name(to), f->p, f->n, noise, f->c);
	for (int i = 0; zero && zero[i]; i++) {
		assert_int_equal(model_set_param(m, zero[i], "0", NULL, &err), 0);
		assert_string_equal(param(m, zero[i]), "0");
	}
	assert_int_equal(model_fit(m, f->p, f->c, f->n, date, &f->rep, &err), 0);
	return m;
}

/* A small suite, so that the test stays quick under valgrind. */
static const char *const small[] = {
	"fe.zero12", "fe.movrr12", "lat.alu_fuse", "tp.alu_fuse", "tp.load", "lat.load",
	"lat.fadd", "tp.fadd", "lat.idiv64", "lat.div32", "st.reload", "mix.fadd_fmul",
	"tp.shift", "mix.add_shift", "lat.imul", "tp.imul", NULL
};

/* zen3's table, fitted to Zen 5 timings: more ALUs and load ports, 8-wide,
 * memory renaming, 2-cycle FP add. */
static void test_zen3_to_zen5(void **state)
{
	static struct fit f;
	struct model *m = fit(&f, "zen3", "zen5", small, 0, NULL, "2026-11-23");
	const struct model_fit_report *rep = &f.rep;
	char v[256];

	(void)state;
	assert_int_equal(f.n, 16);
	assert_int_equal(rep->nused, f.n);
	assert_true(rep->err_before > 0.05);
	if (rep->err_after > 0.005)
		fail_msg("error after %.4f:\n%s", rep->err_after, rep->log);
	assert_int_equal(__builtin_popcount(m->alu_ports), 6);
	assert_int_equal(__builtin_popcount(m->load_ports), 4);
	assert_int_equal(m->dispatch_width, 8);
	assert_int_equal(m->mem_rename, 1);
	assert_class(m, "fadd", 2, 1);
	assert_class(m, "imul", 3, 1);
	for (size_t i = 0; i < f.n; i++)
		assert_true(steady(m, &f.p[i]) > f.c[i] * 0.995 &&
			    steady(m, &f.p[i]) < f.c[i] * 1.005);
	/* sources: measured values name their probe, the rest stay shipped */
	assert_non_null(strstr(model_class_source(m, "fadd", "lat"),
			       "measured 2026-11-23 by probe lat.fadd"));
	assert_string_equal(model_class_source(m, "fdiv", "lat"), "shipped");
	assert_non_null(strstr(model_param_source(m, "dispatch_width"), "fe.zero12"));
	model_ports_text(m, m->alu_ports, v, sizeof(v));
	assert_string_equal(v, "alu0,alu1,alu2,alu3,alu4,alu5");
	assert_non_null(strstr(rep->log, "fadd lat 3 -> 2"));
	model_free(m);
}

/* zen5's table fitted to Zen 4 timings with 3% noise: 6-wide, 4 ALUs,
 * 3-cycle FP add, the Zen 4 divider. */
static void test_zen5_to_zen4_noisy(void **state)
{
	static struct fit f;
	struct model *m = fit(&f, "zen5", "zen4", small, 0.03, NULL, "d");
	const struct model_fit_report *rep = &f.rep;

	(void)state;
	if (rep->err_after > 0.03)
		fail_msg("error after %.4f:\n%s", rep->err_after, rep->log);
	assert_int_equal(m->dispatch_width, 6);
	assert_int_equal(__builtin_popcount(model_class_row(m, "alu_fuse")->ports), 4);
	assert_class(m, "fadd", 3, 1);
	if (model_class_row(m, "idiv64")->lat != 8)
		fail_msg("%s", rep->log);
	assert_class(m, "idiv64", 8, 8);
	assert_class(m, "div32", 12, 12);
	model_free(m);
}

/*
 * Machine parameters of Zen 4's table set to 0 (back's names) and refitted
 * from the probes of sel (nsel of them): each comes back to its value, its
 * source naming the probe src, with the fit's error under 0.005; keep: a
 * parameter the fit leaves as it is; mul_lat: mul's latency, when not 0.
 */
static const struct {
	const char *what;
	const char *sel[7];
	size_t nsel;
	struct {
		const char *name, *value, *src;
	} back[2];
	const char *keep, *keep_value;
	int mul_lat;
} refits[] = {
	/* the load-latency extras (complex address, sign extension) come back
	 * to Zen 4's 1 and 1 from the chains that show them */
	{ "load extras",
	  { "lat.load", "lat.loadop", "lat.cload", "lat.cload_bid", "lat.sxload", "lat.sxload_b" },
	  6, { { "load_lat_complex", "1", "lat.cload" }, { "load_lat_sext", "1", "lat.sxload" } },
	  "load_lat", "4", 0 },
	/* a store of an immediate taking an ALU, from param.st_imm (two such
	 * stores among six mov $imm,reg: 2.0 cycles, 1.5 without) */
	{ "store immediate", { "param.st_imm", "tp.alu_fuse" },
	  2, { { "store_imm_alu", "1", "param.st_imm" } }, NULL, NULL, 0 },
	/* a multiply's late high half, from param.mul_hi (mul, then its rdx
	 * moved to rax, four times: 16 cycles, 12 without), beside lat.mul,
	 * whose chain through rax stays at 3 a link */
	{ "mul high half", { "param.mul_hi", "lat.mul" },
	  2, { { "mul_hi_extra", "1", "param.mul_hi" } }, NULL, NULL, 3 },
	/* the store queue's forwarding time, which memory renaming hides from
	 * st.reload, from st.fwd_moved */
	{ "forwarding latency", { "st.reload", "st.fwd_moved", "st.fwd_fail" },
	  3, { { "store_fwd_lat", "7", "st.fwd_moved" } }, "mem_rename", "1", 0 },
};

static void test_refit_zen4(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refits) / sizeof(refits[0]); i++) {
		const char *zero[3] = { 0 };
		static struct fit f;
		struct model_fit_report *rep = &f.rep;
		struct model *m;

		for (int k = 0; k < 2 && refits[i].back[k].name; k++)
			zero[k] = refits[i].back[k].name;
		/* Zen 4's own table: the machine parameters the probes govern
		 * must come back */
		m = fit(&f, "zen4", "zen4", refits[i].sel, 0, zero, "2026-11-26");
		assert_int_equal(f.n, refits[i].nsel);
		if (rep->err_after > 0.005)
			fail_msg("%s: error %.4f:\n%s", refits[i].what, rep->err_after, rep->log);
		for (int k = 0; k < 2 && zero[k]; k++) {
			if (strcmp(param(m, zero[k]), refits[i].back[k].value))
				fail_msg("%s: %s %s:\n%s", refits[i].what, zero[k],
					 param(m, zero[k]), rep->log);
			assert_non_null(strstr(model_param_source(m, zero[k]),
					       refits[i].back[k].src));
		}
		if (refits[i].keep)
			assert_string_equal(param(m, refits[i].keep), refits[i].keep_value);
		if (refits[i].mul_lat)
			assert_int_equal(model_class_row(m, "mul")->lat, refits[i].mul_lat);
		model_free(m);
	}
}

/* The whole suite, both ways (skipped under valgrind: seconds natively). */
static void test_full_suite(void **state)
{
	const struct model_probe *all;
	static struct fit f;
	char why[128];

	(void)state;
	if (!sbx_usable(why, sizeof(why))) {
		skip();
		return;
	}
	for (int dir = 0; dir < 2; dir++) {
		struct model *m = fit(&f, dir ? "zen5" : "zen3", dir ? "zen4" : "zen5", NULL, 0,
				      NULL, "d");

		assert_int_equal(f.n, model_probes(&all));
		assert_true(f.n > 80 && f.n <= 256);
		/* classes zen5's table lacks (Zen 4's pclmul, lock ...) are turned on */
		if (f.rep.err_after > (dir ? 0.001 : 0.02))
			fail_msg("%d: error after %.4f:\n%s", dir, f.rep.err_after, f.rep.log);
		if (dir) {
			/* Zen 4's store commit, vector store data port, 256-bit pipes
			 * and free one-byte nops, none of them in zen5's table: the
			 * st.pair*, st.vec8, st.zmm4, tp.fma_zmm and fe.nop16 probes */
			assert_int_equal(m->store_queue, 64);
			assert_int_equal(m->store_pair_bytes, 32);
			assert_int_equal(__builtin_popcount(m->vec_store_data_ports), 1);
			assert_int_equal(m->vec_pipe_bits, 256);
			assert_int_equal(model_class_row(m, "nop")->uops, 0);
		}
		model_free(m);
	}
}

static void test_bad_input(void **state)
{
	struct model_probe p[sizeof(small) / sizeof(small[0])];	/* pick fills one per name */
	struct dcpi_err err = { 0 };
	struct model *m = model_copy(model_by_name("zen5"), "fit", &err);
	double c[4] = { 0, -1, 0, 0 };
	size_t n = pick(small, p);

	(void)state;
	assert_true(n >= 4);
	assert_true(model_fit(m, p, c, 4, "d", NULL, &err) < 0);	/* nothing measured */
	assert_non_null(strstr(err.msg, "no measured probe"));
	assert_true(model_fit((struct model *)model_by_name("zen5"), p, c, 4, "d", NULL, &err) <
		    0);
	model_free(m);
}

/* culprit/model/probes_data.c is culprit/model/probes.txt assembled (when as is here). */
static void test_probes_data(void **state)
{
	const char *src = getenv("DCPI_SRC");
	const struct model_probe *p;
	size_t n = model_probes(&p);
	char cmd[1024];

	(void)state;
	for (size_t i = 0; i < n; i++) {
		struct cfg_insn *insns;
		size_t k;
		char why[96];

		assert_int_equal(cfg_decode(p[i].bytes, p[i].len, 0, &insns, &k, NULL), 0);
		free(insns);
		if (sbx_check_flags(p[i].bytes, p[i].len, SBX_F_BRANCHES, why, sizeof(why)))
			fail_msg("%s: the sandbox refuses it: %s", p[i].name, why);
	}
	if (!src || system("command -v as >/dev/null 2>&1 && command -v objcopy >/dev/null")) {
		skip();
		return;
	}
	snprintf(cmd, sizeof(cmd), "cd '%s' && d=$(mktemp -d) && cp -r culprit scripts $d/ && "
		 "cd $d && sh scripts/gen_probes.sh >/dev/null && "
		 "cmp -s culprit/model/probes_data.c '%s/culprit/model/probes_data.c'; "
		 "r=$?; rm -rf $d; "
		 "exit $r", src, src);
	assert_int_equal(system(cmd), 0);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_zen3_to_zen5),
	cmocka_unit_test(test_zen5_to_zen4_noisy),
	cmocka_unit_test(test_refit_zen4),
	cmocka_unit_test(test_full_suite),
	cmocka_unit_test(test_bad_input),
	cmocka_unit_test(test_probes_data))
