/*
 * tests/test_phase.c - phases in time: the detector of collect/phase.c on
 * synthetic interval counts, the time-slice profile kind of profile/
 * slices.c (bytes, merge, damage), and `dcpi record` on tests/workloads/
 * phases.c (A-B-A, the workload's own timestamps as truth, ten runs, half
 * of them beside a busy second vCPU), read back by dcpiprof --phases; the
 * path-slice kind (profile/pslices.c) and dcpicalc --phase N on one
 * procedure whose branch goes one way in one phase and the other way in
 * another (D-B-E), against its exact counts by construction.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "dcpi/phase.h"
#include "dcpi/slices.h"
#include "dcpi/timeline.h"
#include "tu_run.h"
#include "tu_slices.h"
#include "tu_main.h"

/* --- the detector ------------------------------------------------------------ */

/* n samples drawn from weights w[0..k) (keys base + i) into d. */
static void draw(struct phase_det *d, uint64_t base, const double *w, size_t k, unsigned n)
{
	double sum = 0;

	for (size_t i = 0; i < k; i++)
		sum += w[i];
	for (unsigned s = 0; s < n; s++) {
		double u = (double)(tu_rng() >> 11) / 9007199254740992.0 * sum;
		size_t i = 0;

		while (i + 1 < k && u >= w[i])
			u -= w[i++];
		assert_int_equal(phase_add(d, base + i, 1), 0);
	}
}

static const double wa[] = { 40, 25, 15, 10, 5, 3, 2 };
static const double wb[] = { 55, 30, 10, 5 };

/* A for 10 intervals, B for 10, A for 10, 300 samples each: both rules
 * fire at 10 and 20 and nowhere else. */
static void test_detect_aba(void **state)
{
	struct phase_det *d;
	struct dcpi_err err = { 0 };

	(void)state;
	assert_int_equal(phase_new(NULL, &d, &err), 0);
	for (int k = 0; k < 30; k++) {
		struct phase_verdict v;
		int b = k >= 10 && k < 20;

		draw(d, b ? 100 : 0, b ? wb : wa, b ? 4 : 7, 300);
		assert_int_equal(phase_end(d, &v), 0);
		if (k == 10 || k == 20)
			assert_int_equal(v.rules, SLICE_RULE_INVERSION | SLICE_RULE_DISTANCE);
		else
			assert_int_equal(v.rules, 0);
	}
	phase_free(d);
}

/* A change at 70% of interval 10: the mixed interval or the next one
 * declares it, once. */
static void test_detect_mixed(void **state)
{
	struct phase_det *d;
	struct dcpi_err err = { 0 };
	int fired = 0, at = -1;

	(void)state;
	assert_int_equal(phase_new(NULL, &d, &err), 0);
	for (int k = 0; k < 20; k++) {
		struct phase_verdict v;

		if (k <= 10)
			draw(d, 0, wa, 7, k == 10 ? 210 : 300);
		if (k >= 10)
			draw(d, 100, wb, 4, k == 10 ? 90 : 300);
		assert_int_equal(phase_end(d, &v), 0);
		if (v.rules & SLICE_RULE_INVERSION) {
			fired++;
			at = k;
		}
	}
	assert_int_equal(fired, 1);
	assert_true(at == 10 || at == 11);
	phase_free(d);
}

/* 500 intervals of one distribution, with Poisson noise: over 30 keys at
 * 100 samples an interval (with no min_hot, 9 inversions fired here), and
 * the skewed one of test_detect_aba at 400 (a 100 ms slice at 4 kHz): the
 * seed's rule never fires; intervals under min_samples are not judged. */
static void steady(const double *w, size_t k, unsigned n)
{
	struct phase_det *d;
	struct dcpi_err err = { 0 };
	unsigned inv = 0;

	assert_int_equal(phase_new(NULL, &d, &err), 0);
	for (int i = 0; i < 500; i++) {
		struct phase_verdict v;

		draw(d, 0, w, k, i % 50 == 7 ? 5 : n);
		assert_int_equal(phase_end(d, &v), 0);
		inv += !!(v.rules & SLICE_RULE_INVERSION);
		if (i % 50 == 7)
			assert_int_equal(v.rules, 0);
	}
	assert_int_equal(inv, 0);
	phase_free(d);
}

static void test_detect_steady(void **state)
{
	double w[30];

	(void)state;
	for (int i = 0; i < 30; i++)
		w[i] = 30 - i;
	steady(w, 30, 100);
	steady(wa, 7, 400);
}

/* --- the profile kind -------------------------------------------------------- */

static void fill(struct slice_profile *p, uint64_t seed)
{
	slice_profile_init(p);
	snprintf(p->image.path, sizeof(p->image.path), "/bin/phases");
	snprintf(p->image.build_id, sizeof(p->image.build_id), "abcdef01");
	snprintf(p->event, sizeof(p->event), "cpu-clock");
	p->slice_ns = SLICE_DEFAULT_NS;
	for (int i = 0; i < 200; i++) {
		uint64_t r = tu_rng() ^ seed;

		assert_int_equal(slice_profile_add(p, 1000 + r % 40, (r >> 8) % 4096, 1 + r % 7),
				 0);
	}
	assert_int_equal(slice_profile_bound(p, 1000 + seed % 40, SLICE_RULE_INVERSION), 0);
	assert_int_equal(slice_normalize(p), 0);
}

static void assert_same(const struct slice_profile *a, const struct slice_profile *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->nb, b->nb);
	assert_int_equal(a->total, b->total);
	assert_memory_equal(a->e, b->e, a->n * sizeof(*a->e));
	for (size_t i = 0; i < a->nb; i++) {
		assert_int_equal(a->b[i].slice, b->b[i].slice);
		assert_int_equal(a->b[i].rules, b->b[i].rules);
	}
}

static void test_slices_bytes(void **state)
{
	struct slice_profile p, q;
	struct dcpi_err err = { 0 };
	uint8_t *buf;
	size_t len;

	(void)state;
	fill(&p, 1);
	assert_int_equal(slice_encode(&p, &buf, &len, &err), 0);
	/* compact: fewer than 5 bytes an entry */
	assert_true(len < 72 + 32 + 5 * p.n);
	assert_int_equal(slice_decode(buf, len, "x", &q, &err), 0);
	assert_same(&p, &q);
	slice_profile_free(&q);
	for (size_t cut = 0; cut < len; cut += 7)	/* truncated */
		assert_int_not_equal(slice_decode(buf, cut, "x", &q, &err), 0);
	for (size_t at = 24; at < len; at++) {	/* damaged behind a valid checksum */
		uint8_t save = buf[at];

		buf[at] ^= 0x5a;
		prof_file_reseal(buf, len);
		if (!slice_decode(buf, len, "x", &q, &err)) {
			assert_true(q.total > 0);	/* whatever decodes is consistent */
			slice_profile_free(&q);
		}
		buf[at] = save;
	}
	prof_file_reseal(buf, len);
	buf[len - 1] ^= 1;		/* the checksum catches it */
	assert_int_equal(slice_decode(buf, len, "x", &q, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "checksum"));
	free(buf);
	slice_profile_free(&p);
}

static void merged(struct slice_profile *out, const struct slice_profile *a,
		   const struct slice_profile *b)
{
	struct dcpi_err err = { 0 };

	slice_profile_init(out);
	out->image = a->image;
	memcpy(out->event, a->event, sizeof(out->event));
	out->slice_ns = a->slice_ns;
	assert_int_equal(slice_profile_merge(out, a, &err), 0);
	assert_int_equal(slice_profile_merge(out, b, &err), 0);
}

static void test_slices_merge(void **state)
{
	struct slice_profile a, b, c, ab, ba, ab_c, bc, a_bc;
	struct dcpi_err err = { 0 };

	(void)state;
	fill(&a, 1);
	fill(&b, 2);
	fill(&c, 3);
	merged(&ab, &a, &b);
	merged(&ba, &b, &a);
	assert_same(&ab, &ba);
	assert_int_equal(ab.total, a.total + b.total);
	merged(&ab_c, &ab, &c);
	merged(&bc, &b, &c);
	merged(&a_bc, &a, &bc);
	assert_same(&ab_c, &a_bc);
	c.slice_ns = 2 * SLICE_DEFAULT_NS;	/* widths differ: refused */
	assert_int_equal(slice_profile_merge(&ab, &c, &err), -EINVAL);
	slice_profile_free(&a);
	slice_profile_free(&b);
	slice_profile_free(&c);
	slice_profile_free(&ab);
	slice_profile_free(&ba);
	slice_profile_free(&ab_c);
	slice_profile_free(&bc);
	slice_profile_free(&a_bc);
}

/* --- dcpi record on the workload --------------------------------------------- */

struct truth {
	char name[8];
	uint64_t start, end;
};

static int read_truth(const char *path, struct truth *t, int max)
{
	FILE *f = fopen(path, "r");
	unsigned long long s, e;
	char name[8];
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fscanf(f, "%7s %llu %llu", name, &s, &e) == 3) {
		snprintf(t[n].name, sizeof(t[n].name), "%s", name);
		t[n].start = s;
		t[n].end = e;
		n++;
	}
	fclose(f);
	return n;
}

/* dcpi record, with options opts and environment env, of the phases
 * workload wl running spec, into ws/db; its three phases' truth in t. */
static void record_phases(const char *bin, const char *wl, const char *ws, const char *env,
			  const char *opts, const char *spec, struct truth t[8])
{
	char tpath[PATH_MAX + 8];

	snprintf(tpath, sizeof(tpath), "%s/truth", ws);
	assert_int_equal(tu_sh("DCPI_PHASES_OUT=%s %s %s record %s --db %s/db -- %s %s "
			       ">/dev/null 2>&1", tpath, env, bin, opts, ws, wl, spec), 0);
	assert_int_equal(read_truth(tpath, t, 8), 3);
}

/* A process that spins on another CPU until killed. */
static pid_t spinner(void)
{
	pid_t p = fork();

	if (p == 0) {
		volatile uint64_t x = 0;

		for (;;)
			x++;
	}
	return p;
}

/*
 * One recorded run of A-B-A: each truth boundary (a phase's start, seen by
 * the workload on CLOCK_MONOTONIC, the clock perf's sample times follow on
 * these machines) within one slice of a declared one, and no other boundary
 * after the first phase's first whole slice.
 */
static void one_run(const char *bin, const char *wl, const char *ws, int run, int busy,
		    unsigned *found, unsigned *missed, unsigned *false_b)
{
	char db[PATH_MAX + 32], tpath[PATH_MAX + 32];
	struct truth t[8];
	struct rep_slices s;
	struct prof_db *pdb;
	struct dcpi_err err = { 0 };
	pid_t sp = busy ? spinner() : 0;
	int n, rc;

	snprintf(db, sizeof(db), "%s/db%d", ws, run);
	snprintf(tpath, sizeof(tpath), "%s/truth%d", ws, run);
	rc = tu_sh("DCPI_PHASES_OUT=%s %s record --no-calibrate --db %s -- %s A:600,B:600,A:600 "
		   ">/dev/null 2>%s/err%d", tpath, bin, db, wl, ws, run);
	if (sp > 0) {
		kill(sp, SIGKILL);
		waitpid(sp, NULL, 0);
	}
	assert_int_equal(rc, 0);
	n = read_truth(tpath, t, 8);
	assert_int_equal(n, 3);
	assert_int_equal(prof_db_open(db, 0, &pdb, &err), 0);
	assert_int_equal(rep_slices_load(pdb, "00000001", &s, &err), 0);
	/* the clocks agree: the first phase starts after the start-up slices */
	assert_true(t[0].start / s.slice_ns >= s.first && t[0].start / s.slice_ns <= s.first + 10);
	for (int i = 1; i < n; i++) {
		uint64_t k = t[i].start / s.slice_ns;
		int ok = 0;

		for (size_t j = 0; j < s.nb; j++)
			if ((s.b[j].rules & SLICE_RULE_INVERSION) && s.b[j].slice + 1 >= k &&
			    s.b[j].slice <= k + 1)
				ok = 1;
		*found += ok;
		*missed += !ok;
	}
	for (size_t j = 0; j < s.nb; j++) {
		int near = 0;

		if (!(s.b[j].rules & SLICE_RULE_INVERSION) ||
		    s.b[j].slice <= t[0].start / s.slice_ns + 1)
			continue;	/* start-up (building the chase) is a phase of its own */
		for (int i = 1; i < n; i++)
			near |= s.b[j].slice + 1 >= t[i].start / s.slice_ns &&
				s.b[j].slice <= t[i].start / s.slice_ns + 1;
		*false_b += !near;
	}
	rep_slices_free(&s);
	prof_db_close(pdb);
}

static void test_record_aba(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX];
	const char *bin;
	unsigned found = 0, missed = 0, false_b = 0;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "phase"),
			 0);
	for (int run = 0; run < 10; run++)
		one_run(bin, wl, ws, run, run >= 5, &found, &missed, &false_b);
	printf("# A-B-A, 10 runs (5 beside a busy vCPU): %u of %u boundaries within one slice, "
	       "%u false\n", found, found + missed, false_b);
	assert_int_equal(missed, 0);
	assert_int_equal(false_b, 0);
	tu_rm_tree(ws);
}

/* dcpiprof --phases --json: each truth phase is one listed phase, its
 * time range within a slice of the truth's, its top procedure the one the
 * workload runs in it; --time and --phase cut the report to it. */
static void test_prof_phases(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX], args[PATH_MAX * 2], py[2048];
	const char *bin;
	struct truth t[8];
	double a[3], b[3], t0;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "phasep"),
			 0);
	record_phases(bin, wl, ws, "", "--no-calibrate", "A:600,B:600,A:600", t);
	snprintf(args, sizeof(args), "%s/db", ws);
	t0 = tu_first_slice(args);
	for (int i = 0; i < 3; i++) {
		a[i] = (double)t[i].start / 1e9 - t0;
		b[i] = (double)t[i].end / 1e9 - t0;
	}
	snprintf(args, sizeof(args), "prof --db %s/db --phases", ws);
	snprintf(py, sizeof(py),
		 "tr = [(%.3f, %.3f, 'phase_alu'), (%.3f, %.3f, 'phase_chase'), "
		 "(%.3f, %.3f, 'phase_alu')]\n"
		 "ph = [p for p in d['phases'] if p['top'][0]['name'] != 'chase_make']\n"
		 "assert len(ph) == 3, d\n"
		 "for p, (a, b, name) in zip(ph, tr):\n"
		 "    assert abs(p['start'] - a) <= 0.1 or p is ph[0], (p, a)\n"
		 "    assert abs(p['end'] - b) <= 0.1 or p is ph[-1], (p, b)\n"
		 "    assert p['top'][0]['name'].startswith(name), (p, name)\n",
		 a[0], b[0], a[1], b[1], a[2], b[2]);
	tu_check_json(bin, ws, args, py);
	/* the window 0.1 s inside the chase phase: its slices are the chase's;
	 * a few samples of the phase beside may come with the one slice that
	 * straddles a boundary on a busy host (53 of 2,010 under ASan in CI,
	 * where the whole epoch is 2/3 phase_alu) */
	snprintf(args, sizeof(args), "prof --db %s/db --time %.2f-%.2f", ws, a[1] + 0.1,
		 b[1] - 0.1);
	tu_check_json(bin, ws, args, "p = d['procedures']\n"
		      "assert p[0]['name'].startswith('phase_chase'), p[:3]\n"
		      "n = lambda r: sum(r['samples'].values())\n"
		      "alu = sum(n(r) for r in p if r['name'].startswith('phase_alu'))\n"
		      "assert alu <= 0.05 * sum(n(r) for r in p), (alu, p[:3])\n");
	snprintf(args, sizeof(args), "prof --db %s/db --phase 99", ws);
	assert_int_not_equal(tu_sh("%s %s >/dev/null 2>&1", bin, args), 0);
	/* dcpi merge carries the slices: the same phases from the copy */
	assert_int_equal(tu_sh("%s merge %s/db -o %s/m >/dev/null 2>&1", bin, ws, ws), 0);
	snprintf(args, sizeof(args), "prof --db %s/m --phases", ws);
	tu_check_json(bin, ws, args, "assert len(d['phases']) >= 3, d\n");
	tu_rm_tree(ws);
}

/* The phase holding the middle of truth b: its number (1-based), its
 * slices [*first, *end) and, where lo is not NULL, the seconds [*lo, *hi)
 * of its slices but the first and the last. */
static long phase_slices(const char *db, const struct truth *b, uint64_t *first, uint64_t *end,
			 uint64_t *slice_ns, double *lo, double *hi)
{
	uint64_t mid = (b->start + b->end) / 2;
	struct rep_slices s;
	struct rep_phase *ph;
	struct prof_db *pdb;
	struct dcpi_err err = { 0 };
	size_t n;
	long k = 0;

	assert_int_equal(prof_db_open(db, 0, &pdb, &err), 0);
	assert_int_equal(rep_slices_load(pdb, "00000001", &s, &err), 0);
	assert_int_equal(rep_phases(&s, SLICE_RULE_INVERSION, &ph, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (mid / s.slice_ns >= ph[i].first && mid / s.slice_ns < ph[i].end) {
			k = (long)i + 1;
			*first = ph[i].first;
			*end = ph[i].end;
			if (lo) {
				*lo = rep_slice_seconds(&s, ph[i].first + 1);
				*hi = rep_slice_seconds(&s, ph[i].end - 1);
			}
		}
	*slice_ns = s.slice_ns;
	free(ph);
	rep_slices_free(&s);
	prof_db_close(pdb);
	return k;
}

/* The number (1-based) of the phase holding the middle of truth b, and
 * the seconds [*lo, *hi) of its slices but the first and the last. */
static long phase_of(const char *db, const struct truth *b, double *lo, double *hi)
{
	uint64_t first, end, slice_ns;
	long k = phase_slices(db, b, &first, &end, &slice_ns, lo, hi);

	assert_true(k > 0 && *hi > *lo);
	return k;
}

/*
 * dcpicalc and llvm-prof --phase N, N the B phase of A-B-A: the analysis
 * sees only that phase's slices (tools/analysis.c resolves the phase,
 * estimate/analyze.c cuts the profiles): phase_chase and phase_alu hold the
 * samples dcpiprof --phase N gives them, phase_alu mostly in the slices at
 * the phase's edges (a change inside a slice leaves it mixed) and little
 * of its epoch's, and the LLVM profile names the phase's procedures only
 * (phase_chase, phase_alu only when an edge slice held some of it; never
 * chase_make, the start-up's), the epoch's names phase_alu too (chase_make
 * only when the start-up met enough samples: a CI run's had none).
 */
static void test_analysis_phase(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX], args[PATH_MAX * 2], py[PATH_MAX + 1024];
	const char *bin;
	struct truth t[8];
	double lo = 0, hi = 0;
	long ph;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "phasea"),
			 0);
	record_phases(bin, wl, ws, "", "--no-calibrate", "A:600,B:600,A:600", t);
	snprintf(args, sizeof(args), "%s/db", ws);
	ph = phase_of(args, &t[1], &lo, &hi);
	assert_int_equal(tu_sh("%s prof --db %s/db --phase %ld --json >%s/prof.json && "
			       "%s prof --db %s/db --time %.3f-%.3f --json >%s/inner.json && "
			       "%s prof --db %s/db --json >%s/whole.json && "
			       "%s llvm-prof --no-calibrate --no-measure --db %s/db --phase %ld "
			       "-o %s/b.prof 2>/dev/null && %s llvm-prof --no-calibrate "
			       "--no-measure --db %s/db -o %s/all.prof 2>/dev/null", bin, ws, ph,
			       ws, bin, ws, lo + 0.001, hi - 0.001, ws, bin, ws, ws, bin, ws, ph,
			       ws, bin, ws, ws), 0);
	/* what dcpiprof says of the phase, and of its slices but the edges */
	snprintf(py, sizeof(py), "import json, sys\n"
		 "def of(f, name):\n"
		 "    return sum(list(p['samples'].values())[0] for p in json.load(open(f))\n"
		 "               ['procedures'] if p['name'].split('.')[0] == name)\n"
		 "w = '%s/'\n"
		 /* the phase's slices but its edges: the chase's, but for the few
		  * samples of a slice a busy host's timing mixes (30 under
		  * valgrind in CI) */
		 "inner = sum(list(p['samples'].values())[0] for p in\n"
		 "            json.load(open(w + 'inner.json'))['procedures'])\n"
		 "assert of(w + 'inner.json', 'phase_alu') <= 0.05 * inner\n"
		 "assert of(w + 'prof.json', 'phase_chase') > 0\n"
		 "open(w + 'want', 'w').write('%%d %%d' %% (of(w + 'prof.json', 'phase_chase'),\n"
		 "                                       of(w + 'prof.json', 'phase_alu')))\n"
		 "f = lambda p: {l.split(':')[0]: int(l.split(':')[1]) for l in open(w + p)\n"
		 "               if l[:1] != ' '}\n"
		 "b, a = f('b.prof'), f('all.prof')\n"
		 "assert 'phase_alu' in a, a\n"
		 "assert 'phase_chase' in b and set(b) <= {'phase_chase', 'phase_alu'}, b\n"
		 /* LLVM's counts are whole numbers: the few edge-slice samples of
		  * phase_alu in the phase may round to no execution at any line,
		  * and a function without one is not written.  The whole epoch's
		  * counts per sample say what the phase's samples should give. */
		 "alu = of(w + 'prof.json', 'phase_alu')\n"
		 "expect = alu * a['phase_alu'] / of(w + 'whole.json', 'phase_alu')\n"
		 "assert alu or 'phase_alu' not in b, b\n"
		 "assert expect < 20 or b.get('phase_alu', 0) > expect / 3, (b, expect)\n", ws);
	assert_int_equal(tu_sh("python3 -c \"$(cat <<'EOF'\n%s\nEOF\n)\"", py), 0);
	snprintf(args, sizeof(args), "calc --no-calibrate --no-measure --db %s/db --phase %ld "
		 "phase_chase", ws, ph);
	snprintf(py, sizeof(py), "c, a = map(int, open('%s/want').read().split())\n"
		 "assert d['samples'] == c, (d['samples'], c)\n", ws);
	tu_check_json(bin, ws, args, py);
	snprintf(args, sizeof(args), "calc --no-calibrate --no-measure --db %s/db --phase %ld "
		 "phase_alu", ws, ph);
	snprintf(py, sizeof(py), "c, a = map(int, open('%s/want').read().split())\n"
		 "assert d['samples'] == a and a < c / 10, (d['samples'], a, c)\n", ws);
	tu_check_json(bin, ws, args, py);
	snprintf(args, sizeof(args), "calc --no-calibrate --no-measure --db %s/db phase_alu", ws);
	tu_check_json(bin, ws, args, "assert d['samples'] > 500, d['samples']\n");
	tu_rm_tree(ws);
}

/* --- paths by time slice (profile/pslices.c) -------------------------------- */

static void pslice_fill(struct pslice_profile *p, uint64_t seed)
{
	pslice_profile_init(p);
	snprintf(p->image.path, sizeof(p->image.path), "/bin/x");
	snprintf(p->image.build_id, sizeof(p->image.build_id), "00ff");
	snprintf(p->source, sizeof(p->source), "tf-step");
	p->slice_ns = SLICE_DEFAULT_NS;
	for (unsigned i = 0; i < 200; i++) {
		uint64_t r = tu_rng() ^ seed, k = 1000 + r % 7, f = 0x400 + (r >> 8) % 64;

		assert_int_equal(pslice_add_edge(p, k, f, r % 5 ? f + 4 : PATH_ELSEWHERE, 1), 0);
		assert_int_equal(pslice_add_edge(p, k, PATH_ELSEWHERE, f, 1), 0);
		assert_int_equal(pslice_add_step(p, k, f, 2), 0);
		assert_int_equal(pslice_add_burst(p, k, 1), 0);
	}
	assert_int_equal(pslice_normalize(p), 0);
}

/* Bytes round-trip; a window is the sum of its slices (all of them: the
 * epoch's paths); merging adds; a flipped byte or a cut file is refused. */
static void test_pslices_bytes(void **state)
{
	struct pslice_profile p, q, m;
	struct path_profile w, w1, w2;
	struct dcpi_err err = { 0 };
	uint8_t *buf, *buf2;
	size_t len, len2;

	(void)state;
	pslice_fill(&p, 1);
	assert_int_equal(pslice_encode(&p, &buf, &len, &err), 0);
	assert_int_equal(pslice_decode(buf, len, "x", &q, &err), 0);
	assert_int_equal(q.n, p.n);
	assert_int_equal(q.ns, p.ns);
	assert_int_equal(q.nb, p.nb);
	assert_memory_equal(q.e, p.e, p.n * sizeof(*p.e));
	assert_memory_equal(q.s, p.s, p.ns * sizeof(*p.s));
	assert_memory_equal(q.b, p.b, p.nb * sizeof(*p.b));
	/* slices [1000, 1003) and [1003, 1007) add up to the whole */
	assert_int_equal(pslice_window(&p, 1000, 1003, &w1), 0);
	assert_int_equal(pslice_window(&p, 1003, 1007, &w2), 0);
	assert_int_equal(pslice_window(&p, 0, UINT64_MAX, &w), 0);
	assert_int_equal(w.bursts, 200);
	assert_int_equal(w1.bursts + w2.bursts, 200);
	assert_true(w1.bursts > 0 && w2.bursts > 0);
	assert_int_equal(path_profile_merge(&w1, &w2, &err), 0);
	assert_int_equal(w1.nedges, w.nedges);
	assert_memory_equal(w1.edges, w.edges, w.nedges * sizeof(*w.edges));
	assert_memory_equal(w1.steps, w.steps, w.nsteps * sizeof(*w.steps));
	/* merge: p + p doubles every count */
	pslice_profile_init(&m);
	m.image = p.image;
	memcpy(m.source, p.source, sizeof(m.source));
	m.slice_ns = p.slice_ns;
	assert_int_equal(pslice_profile_merge(&m, &q, &err), 0);
	assert_int_equal(pslice_profile_merge(&m, &p, &err), 0);
	assert_int_equal(m.n, p.n);
	for (size_t i = 0; i < m.n; i++)
		assert_int_equal(m.e[i].count, 2 * p.e[i].count);
	m.slice_ns = 1;
	assert_int_equal(pslice_profile_merge(&m, &q, &err), -EINVAL);
	/* damage */
	pslice_profile_free(&q);
	buf[len - 3] ^= 0x40;
	assert_true(pslice_decode(buf, len, "x", &q, &err) < 0);
	assert_int_equal(pslice_encode(&p, &buf2, &len2, &err), 0);
	for (size_t cut = 0; cut < len2; cut += 7)
		assert_true(pslice_decode(buf2, cut, "x", &q, &err) < 0);
	free(buf);
	free(buf2);
	path_profile_free(&w);
	path_profile_free(&w1);
	path_profile_free(&w2);
	pslice_profile_free(&p);
	pslice_profile_free(&q);
	pslice_profile_free(&m);
}

/* phase_branch's exact counts in slices [first, end): "then" arm, "else"
 * arm (tests/workloads/phases.c, DCPI_PHASES_CALLS). */
static void branch_truth(const char *path, uint64_t first, uint64_t end, uint64_t slice_ns,
			 double *then_n, double *else_n)
{
	FILE *f = fopen(path, "r");
	unsigned long long t, per;
	char name[8];

	assert_non_null(f);
	assert_int_equal(fscanf(f, "BRANCH_N %llu", &per), 1);
	*then_n = *else_n = 0;
	while (fscanf(f, "%7s %llu", name, &t) == 2) {
		unsigned k = name[0] == 'D' ? 7 : 1;

		if (t / slice_ns < first || t / slice_ns >= end)
			continue;
		*then_n += (double)(per * k / 8);
		*else_n += (double)(per * (8 - k) / 8);
	}
	fclose(f);
}

/* The two counts the check of test_phase_paths wrote. */
static void read_got(const char *ws, double got[2])
{
	char path[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/got", ws);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lf %lf", &got[0], &got[1]), 2);
	fclose(f);
}

/*
 * dcpicalc --phase N phase_branch, N the E phase of D-B-E: phase_branch's
 * test is true 7 times in 8 in D and 1 in 8 in E.  With the phase's own
 * paths the arms' split is E's; with the whole epoch's (the database
 * without its .pslices files, as an older one) it is D's and E's mixed.
 * Prints both errors against the exact counts of the phase's slices.
 */
static void test_phase_paths(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX], args[PATH_MAX * 2], py[PATH_MAX + 1024];
	char cpath[PATH_MAX + 8], env[PATH_MAX + 32];
	const char *bin;
	struct truth t[8];
	uint64_t first = 0, end = 0, slice_ns = 0;
	double th, el, got[2][2];
	long ph;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "phasep"),
			 0);
	snprintf(cpath, sizeof(cpath), "%s/calls", ws);
	snprintf(env, sizeof(env), "DCPI_PHASES_CALLS=%s", cpath);
	/* calibrated (counts, not cycles); as many bursts as the timer gives */
	record_phases(bin, wl, ws, env, "--paths 1000:32 --no-values", "D:1000,B:600,E:1000", t);
	snprintf(args, sizeof(args), "%s/db", ws);
	ph = phase_slices(args, &t[2], &first, &end, &slice_ns, NULL, NULL);
	assert_true(ph > 0);
	branch_truth(cpath, first, end, slice_ns, &th, &el);
	assert_true(th > 0 && el > 6 * th);
	/* the old way: a copy of the database without its path slices */
	assert_int_equal(tu_sh("cp -r %s/db %s/old && rm %s/old/00000001/*.pslices", ws, ws, ws),
			 0);
	for (int k = 0; k < 2; k++) {
		snprintf(args, sizeof(args), "calc --no-calibrate --no-measure --db %s/%s "
			 "--phase %ld phase_branch", ws, k ? "old" : "db", ph);
		snprintf(py, sizeof(py),
			 "b = {int(x['start'], 16) & 0xfff: x['executions']\n"
			 "     for x in d['blocks']}\n"
			 "i = {int(x['address'], 16) & 0xfff: x['text']\n"
			 "     for x in d['instructions']}\n"
			 "th = [b[a] for a in b if i.get(a, '').startswith('imul')]\n"
			 "el = [b[a] for a in b if any(i.get(a + o, '').startswith('div')\n"
			 "                              for o in range(0, 16))]\n"
			 "open('%s/got', 'w').write('%%r %%r' %% (th[0], el[0]))\n", ws);
		tu_check_json(bin, ws, args, py);
		read_got(ws, got[k]);
	}
	printf("# D-B-E, --phase %ld (slices %" PRIu64 "-%" PRIu64 "), phase_branch's arms: exact "
	       "%.0f / %.0f; with the phase's paths %.0f / %.0f (%+.1f%% / %+.1f%%); with the "
	       "epoch's %.0f / %.0f (%+.1f%% / %+.1f%%)\n", ph, first, end, th, el, got[0][0],
	       got[0][1], 100 * (got[0][0] / th - 1), 100 * (got[0][1] / el - 1), got[1][0],
	       got[1][1], 100 * (got[1][0] / th - 1), 100 * (got[1][1] / el - 1));
	/* the arms' split is the phase's: "then" one in eight */
	assert_true(fabs(got[0][0] / (got[0][0] + got[0][1]) - th / (th + el)) < 0.05);
	assert_true(fabs(got[0][0] / th - 1) < fabs(got[1][0] / th - 1));
	/* dcpi merge carries the path slices */
	assert_int_equal(tu_sh("%s merge %s/db -o %s/m >/dev/null 2>&1 && ls %s/m/*/*.pslices "
			       ">/dev/null", bin, ws, ws, ws), 0);
	tu_rm_tree(ws);
}

/* The program's own profile of each kind in epoch 00000001 of db. */
static void own_slices(const char *db, struct pslice_profile *ps, struct vslice_profile *vs,
		       struct val_profile *whole)
{
	struct pslice_profile *p = NULL;
	struct vslice_profile *v = NULL;
	struct val_profile *w = NULL;
	struct prof_db *pdb;
	struct dcpi_err err = { 0 };
	size_t np = 0, nv = 0, nw = 0, i;

	assert_int_equal(prof_db_open(db, 0, &pdb, &err), 0);
	assert_int_equal(pslice_epoch_read(pdb, "00000001", &p, &np, &err), 0);
	assert_int_equal(vslice_epoch_read(pdb, "00000001", &v, &nv, &err), 0);
	assert_int_equal(val_epoch_read(pdb, "00000001", &w, &nw, &err), 0);
	for (i = 0; i < np && !strstr(p[i].image.path, "workloads/phases"); i++)
		;
	assert_true(i < np);
	*ps = p[i];
	pslice_profile_init(&p[i]);
	for (i = 0; i < nv && !prof_image_id_equal(&v[i].image, &ps->image); i++)
		;
	assert_true(i < nv);
	*vs = v[i];
	vslice_profile_init(&v[i]);
	for (i = 0; i < nw && !prof_image_id_equal(&w[i].image, &ps->image); i++)
		;
	assert_true(i < nw);
	*whole = w[i];
	val_profile_init(&w[i]);
	pslice_profiles_free(p, np);
	vslice_profiles_free(v, nv);
	val_profiles_free(w, nw);
	prof_db_close(pdb);
}

/* The epoch's path profile of ps's image equals ps summed over every slice. */
static void check_paths_sum(const char *db, const struct pslice_profile *ps)
{
	struct path_profile *p = NULL, all;
	struct prof_db *pdb;
	struct dcpi_err err = { 0 };
	size_t n = 0, i;

	assert_int_equal(prof_db_open(db, 0, &pdb, &err), 0);
	assert_int_equal(path_epoch_read(pdb, "00000001", &p, &n, &err), 0);
	for (i = 0; i < n && !prof_image_id_equal(&p[i].image, &ps->image); i++)
		;
	assert_true(i < n);
	assert_int_equal(pslice_window(ps, 0, UINT64_MAX, &all), 0);
	assert_int_equal(all.bursts, p[i].bursts);
	assert_int_equal(all.nedges, p[i].nedges);
	assert_int_equal(all.nsteps, p[i].nsteps);
	assert_memory_equal(all.edges, p[i].edges, all.nedges * sizeof(*all.edges));
	assert_memory_equal(all.steps, p[i].steps, all.nsteps * sizeof(*all.steps));
	path_profile_free(&all);
	path_profiles_free(p, n);
	prof_db_close(pdb);
}

/* Each list of vals at an instruction some step of paths executed. */
static unsigned lists_outside(const struct val_profile *vals, const struct path_profile *paths)
{
	unsigned out = 0;

	for (size_t i = 0; i < vals->nlists; i++)
		out += !path_profile_step(paths, vals->lists[i].offset);
	return out;
}

/*
 * Value samples by slice (profile/vslices.c): D-B-E recorded with values;
 * the path slices add up to the epoch's paths and the value slices'
 * samples to the epoch's values' samples; the B phase's window
 * holds values at instructions its own bursts stepped only (its paths'
 * steps), and fewer lists than the epoch (D and E's phase_branch is cut
 * out); a value-slice file survives its bytes.
 */
static void test_value_slices(void **state)
{
	char wl[PATH_MAX], ws[PATH_MAX], db[PATH_MAX + 8];
	const char *bin;
	struct truth t[8];
	struct pslice_profile ps;
	struct vslice_profile vs, back;
	struct val_profile whole, vw;
	struct path_profile pw;
	struct dcpi_err err = { 0 };
	uint64_t first = 0, end = 0, slice_ns = 0, sum = 0;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "phasev"),
			 0);
	snprintf(db, sizeof(db), "%s/db", ws);
	record_phases(bin, wl, ws, "", "--no-calibrate --paths 1000:32", "D:800,B:800,E:800", t);
	assert_true(phase_slices(db, &t[1], &first, &end, &slice_ns, NULL, NULL) > 0);
	own_slices(db, &ps, &vs, &whole);
	check_paths_sum(db, &ps);
	for (size_t i = 0; i < vs.n; i++)
		sum += vs.s[i].v.samples;
	assert_int_equal(sum, whole.samples);
	assert_int_equal(vslice_window(&vs, first, end, &vw, &err), 0);
	assert_int_equal(pslice_window(&ps, first, end, &pw), 0);
	printf("# B phase (slices %" PRIu64 "-%" PRIu64 "): %zu value lists of the epoch's %zu, "
	       "%" PRIu64 " samples of %" PRIu64 "\n", first, end, vw.nlists, whole.nlists,
	       vw.samples, whole.samples);
	assert_true(vw.nlists > 0 && vw.nlists < whole.nlists);
	assert_int_equal(lists_outside(&vw, &pw), 0);
	assert_true(vw.samples > 0 && vw.samples < whole.samples);
	/* bytes */
	assert_int_equal(vslice_encode(&vs, &buf, &len, &err), 0);
	assert_int_equal(vslice_decode(buf, len, "x", &back, &err), 0);
	assert_int_equal(back.n, vs.n);
	for (size_t i = 0; i < vs.n; i++)
		assert_int_equal(back.s[i].v.nlists, vs.s[i].v.nlists);
	vslice_profile_free(&back);
	buf[len / 2] ^= 1;
	assert_true(vslice_decode(buf, len, "x", &back, &err) < 0);
	for (size_t cut = 0; cut < len; cut += len / 64 + 1)
		assert_true(vslice_decode(buf, cut, "x", &back, &err) < 0);
	free(buf);
	path_profile_free(&pw);
	val_profile_free(&vw);
	val_profile_free(&whole);
	vslice_profile_free(&vs);
	pslice_profile_free(&ps);
	tu_rm_tree(ws);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_detect_aba),
	cmocka_unit_test(test_detect_mixed),
	cmocka_unit_test(test_detect_steady),
	cmocka_unit_test(test_slices_bytes),
	cmocka_unit_test(test_slices_merge),
	cmocka_unit_test(test_record_aba),
	cmocka_unit_test(test_prof_phases),
	cmocka_unit_test(test_analysis_phase),
	cmocka_unit_test(test_pslices_bytes),
	cmocka_unit_test(test_phase_paths),
	cmocka_unit_test(test_value_slices))
