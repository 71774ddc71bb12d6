/*
 * culprit/model/fit.c - fit a pipeline model to microbenchmarks timed on this
 * machine (`dcpi calibrate --fit-model`; DCPI paper sec. 6.1.3 needs the best
 * case of the machine that took the samples).
 *
 * The forward model is the scheduler itself: a candidate value is judged by
 * the steady-state cycles model_schedule predicts for the probes against the
 * cycles measured, as mean relative error.  The fit is coordinate descent over
 * discrete candidates: machine parameters (dispatch width, load-to-use,
 * store forwarding, store commit and pairing, vector store data ports, the
 * vector pipes' width, taken branches per cycle) on the probes they govern, then
 * per instruction class its latency, busy cycles, ports and dispatch slots on
 * the probes whose instructions fall in that class, repeated until nothing
 * moves.  A value moves only when it lowers the error clearly, so what the
 * probes do not determine keeps its shipped value and source.
 *
 * Before that, the unit counts the throughput probes show: if 12 independent
 * adds (or loads) run faster than the model's ALUs (load ports) allow, ALU
 * (AGU) ports are added and given to every class that could use all of them,
 * so a model started from a narrower core (zen3's 4 ALUs) can reach a wider
 * one (Zen 5's 6).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_tables.h"
#include "probes.h"

#define FIT_SWEEPS 4
#define MAX_CANDS 128
#define MIN_GAIN 0.005		/* relative error a move must save, per probe */

struct fit_probe {
	const struct model_probe *p;
	double meas;
	struct cfg_insn *insns;
	size_t n;
	uint64_t classes[2];	/* bit per enum model_cls its instructions use */
};

/* Which probes judge a class value: its own chain "lat.<class>" for the
 * latency, throughput probes and mixes using it for ports and busy cycles,
 * every probe using it for dispatch slots. */
enum { BY_ANY, BY_LAT, BY_TP };

struct fit {
	struct model *m;
	struct fit_probe *fp;
	size_t nfp;
	const char *date;
	struct model_fit_report *rep;
	struct dcpi_err *err;
	int by;			/* BY_* of the knob being fitted */
};

size_t model_probes(const struct model_probe **out)
{
	*out = probes;
	return nprobes;
}

static double predict(const struct model *m, const struct fit_probe *p)
{
	struct sched_block b;
	double c;

	if (model_schedule(m, p->insns, p->n, NULL, 0, &b, NULL) < 0)
		return 1e9;
	c = b.steady_cycles;
	sched_block_free(&b);
	return c;
}

static int uses_class(const struct fit_probe *p, int c)
{
	return c >= 0 && c < 128 && (p->classes[c / 64] >> (c % 64) & 1);
}

/* Relative error summed over the probes that use class c (all when c < 0)
 * or whose name starts with one of prefixes. */
static int judges(const struct fit_probe *p, int c, int by)
{
	if (c < 0)
		return 1;
	if (!strncmp(p->p->name, "param.", 6))
		return 0;	/* a parameter's own probe (probes.txt) */
	if (!uses_class(p, c))
		return 0;
	if (by == BY_LAT)
		return !strncmp(p->p->name, "lat.", 4) &&
		       !strcmp(p->p->name + 4, model_class_name((size_t)c));
	if (by == BY_TP)
		return !strncmp(p->p->name, "tp.", 3) || !strncmp(p->p->name, "mix.", 4);
	return 1;
}

static double loss(const struct fit *f, int c, const char *const *prefixes, int *nused)
{
	double sum = 0;
	int n = 0;

	for (size_t i = 0; i < f->nfp; i++) {
		const struct fit_probe *p = &f->fp[i];
		int take = prefixes ? 0 : judges(p, c, f->by);

		for (int k = 0; prefixes && prefixes[k]; k++)
			take |= !strncmp(p->p->name, prefixes[k], strlen(prefixes[k]));
		if (!take)
			continue;
		sum += fabs(predict(f->m, p) - p->meas) / p->meas;
		n++;
	}
	if (nused)
		*nused = n;
	return sum;
}

/* Source text of a measured value: the date and the first probes behind it. */
static void source_of(const struct fit *f, int c, const char *const *prefixes, char *buf,
		      size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "measured %s by probe", f->date);
	int k = 0;

	for (size_t i = 0; i < f->nfp && k < 3; i++) {
		const struct fit_probe *p = &f->fp[i];
		int take = prefixes ? 0 : judges(p, c, f->by);

		for (int j = 0; prefixes && prefixes[j]; j++)
			take |= !strncmp(p->p->name, prefixes[j], strlen(prefixes[j]));
		if (!take || o + strlen(p->p->name) + 3 >= len)
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", k++ ? "," : " ", p->p->name);
	}
}

static void logf_change(struct fit *f, const char *what, const char *from, const char *to)
{
	size_t o = strlen(f->rep->log);

	if (o + strlen(what) + strlen(from) + strlen(to) + 8 < sizeof(f->rep->log))
		snprintf(f->rep->log + o, sizeof(f->rep->log) - o, "%s %s -> %s\n", what, from,
			 to);
	f->rep->nchanged++;
}

/* ---- one knob ---------------------------------------------------------------- */

struct knob {
	const char *param;	/* machine parameter, or NULL */
	int cls;		/* class index when param is NULL */
	const char *field;
	const char *const *prefixes;	/* probes a parameter governs */
};

static void part_get(const struct fit *f, const struct knob *k, const char *name, char *buf,
		     size_t len)
{
	const struct model_class *r;

	if (k->param) {
		for (size_t i = 0; i < model_param_count(); i++)
			if (!strcmp(model_param_name(i), name))
				model_param_text(f->m, i, buf, len);
		return;
	}
	r = model_class_row(f->m, model_class_name((size_t)k->cls));
	if (!strcmp(name, "ports"))
		model_ports_text(f->m, r->ports, buf, len);
	else
		snprintf(buf, len, "%u", !strcmp(name, "lat") ? r->lat :
			 !strcmp(name, "uops") ? r->uops : r->busy);
}

/* A knob may be several values moved together: names and values "a|b". */
static void knob_get(const struct fit *f, const struct knob *k, char *buf, size_t len)
{
	char names[64], *save = NULL, *tok;
	size_t o = 0;

	snprintf(names, sizeof(names), "%s", k->param ? k->param : k->field);
	buf[0] = 0;
	for (tok = strtok_r(names, "|", &save); tok && o + 1 < len;
	     tok = strtok_r(NULL, "|", &save)) {
		if (o)
			buf[o++] = '|';
		part_get(f, k, tok, buf + o, len - o);
		o += strlen(buf + o);
	}
}

static int knob_set(struct fit *f, const struct knob *k, const char *v, const char *src)
{
	char names[64], vals[96], *s1 = NULL, *s2 = NULL, *n, *x;
	int rc = 0;

	snprintf(names, sizeof(names), "%s", k->param ? k->param : k->field);
	snprintf(vals, sizeof(vals), "%s", v);
	for (n = strtok_r(names, "|", &s1), x = strtok_r(vals, "|", &s2); n && x && rc >= 0;
	     n = strtok_r(NULL, "|", &s1), x = strtok_r(NULL, "|", &s2))
		rc = k->param ? model_set_param(f->m, n, x, src, f->err) :
		     model_set_class(f->m, model_class_name((size_t)k->cls), n, x, src, f->err);
	return rc;
}

static unsigned class_busy(const struct fit *f, int c)
{
	return model_class_row(f->m, model_class_name((size_t)c))->busy;
}

/*
 * Set a trial value (src NULL) or the chosen one.  A class latency carries
 * its busy cycles down with it (a unit is never busy longer than the
 * latency): alone, neither could leave a divide whose chain hides one of them.
 */
static int knob_try(struct fit *f, const struct knob *k, const char *v, unsigned busy0,
		    unsigned lat0, const char *src)
{
	char b[16];
	int rc = knob_set(f, k, v, src);

	if (rc < 0 || k->param || strcmp(k->field, "lat"))
		return rc;
	snprintf(b, sizeof(b), "%u", busy0 > 1 && busy0 >= lat0 && atoi(v) > 0 ?
		 (unsigned)atoi(v) + busy0 - lat0 : busy0);
	if ((unsigned)atoi(b) != class_busy(f, k->cls))
		rc = model_set_class(f->m, model_class_name((size_t)k->cls), "busy", b, src,
				     f->err);
	return rc;
}

/* Try every candidate; keep the best if it beats the current value clearly. */
static int knob_fit(struct fit *f, const struct knob *k, char (*cand)[96], int ncand)
{
	char cur[96], best[96], src[96], what[64];
	int c = k->param ? -1 : k->cls, n;
	unsigned busy0 = k->param ? 0 : class_busy(f, k->cls);
	unsigned lat0 = k->param ? 0 : model_class_row(f->m, model_class_name((size_t)c))->lat;
	double base, bl;

	f->by = k->param ? BY_ANY : !strcmp(k->field, "lat") ? BY_LAT :
		 !strcmp(k->field, "ports|busy") ? BY_TP : BY_ANY;
	knob_get(f, k, cur, sizeof(cur));
	base = loss(f, c, k->prefixes, &n);
	if (!n)
		return 0;
	bl = base;
	snprintf(best, sizeof(best), "%s", cur);
	for (int i = 0; i < ncand; i++) {
		double l;

		if (!strcmp(cand[i], cur) || knob_try(f, k, cand[i], busy0, lat0, NULL) < 0)
			continue;
		l = loss(f, c, k->prefixes, NULL);
		if (l < bl - 1e-9) {
			bl = l;
			snprintf(best, sizeof(best), "%s", cand[i]);
		}
	}
	knob_try(f, k, cur, busy0, lat0, NULL);
	if (!k->param && class_busy(f, k->cls) != busy0) {
		char b[16];

		snprintf(b, sizeof(b), "%u", busy0);
		model_set_class(f->m, model_class_name((size_t)c), "busy", b, NULL, f->err);
	}
	if (!strcmp(best, cur) || bl >= base - MIN_GAIN * n)
		return 0;
	source_of(f, c, k->prefixes, src, sizeof(src));
	if (knob_try(f, k, best, busy0, lat0, src) < 0)
		return 0;
	snprintf(what, sizeof(what), "%s%s%s", k->param ? k->param : model_class_name((size_t)c),
		 k->param ? "" : " ", k->param ? "" : k->field);
	logf_change(f, what, cur, best);
	return 1;
}

static int popcount(uint32_t x)
{
	return __builtin_popcount(x);
}

/* ---- candidates -------------------------------------------------------------- */

static int cands_range(char (*c)[96], int n, int lo, int hi, int step)
{
	for (int v = lo; v <= hi && n < MAX_CANDS; v += step)
		snprintf(c[n++], 96, "%d", v);
	return n;
}

static int cand_add_ports(const struct model *m, char (*c)[96], int n, uint32_t ports)
{
	char t[96];

	if (n >= MAX_CANDS)
		return n;
	model_ports_text(m, ports, t, sizeof(t));
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i], t))
			return n;
	snprintf(c[n], 96, "%s", t);
	return n + 1;
}

/* Single ports and pairs within a group (which ALUs a class uses). */
static int cand_subsets(const struct model *m, char (*c)[96], int n, uint32_t group)
{
	for (int a = 0; a < m->nports; a++) {
		if (!(group >> a & 1))
			continue;
		n = cand_add_ports(m, c, n, 1u << a);
		for (int b = a + 1; b < m->nports; b++)
			if (group >> b & 1)
				n = cand_add_ports(m, c, n, 1u << a | 1u << b);
	}
	return n;
}

/* Prefixes of a group: its first 1, 2, ... ports (how many units a class has). */
static int cand_prefixes(const struct model *m, char (*c)[96], int n, uint32_t group)
{
	uint32_t acc = 0;

	for (int a = 0; a < m->nports; a++)
		if (group >> a & 1)
			n = cand_add_ports(m, c, n, acc |= 1u << a);
	return n;
}

/* Port sets for a class now on cur: within the same group (ALUs or FP pipes);
 * none for classes on units of their own (dividers, lock, moves to gpr). */
static int cands_ports(const struct model *m, const char *cls, uint32_t cur, char (*c)[96])
{
	uint32_t group = (cur & ~m->alu_ports) == 0 ? m->alu_ports :
			 (cur & ~m->fp_ports) == 0 ? m->fp_ports : 0;
	int n = 0;

	if (!cur)
		return 0;
	if (!group && popcount(cur) == 1 && !strcmp(m->port_names[__builtin_ctz(cur)], cls)) {
		/* a unit of its own, made when the class was turned on: or is it an ALU
		 * or FP pipe after all? */
		n = cand_add_ports(m, c, n, cur);
		n = cand_prefixes(m, c, n, m->alu_ports);
		return cand_prefixes(m, c, n, m->fp_ports);
	}
	if (!group)
		return 0;
	for (size_t i = 0; i < m->nclasses; i++)
		if (m->classes[i].ports && !(m->classes[i].ports & ~group))
			n = cand_add_ports(m, c, n, m->classes[i].ports);
	n = cand_prefixes(m, c, n, group);
	return cand_subsets(m, c, n, group);
}

/* ---- the unit counts ---------------------------------------------------------- */

static const struct fit_probe *find_probe(const struct fit *f, const char *name)
{
	for (size_t i = 0; i < f->nfp; i++)
		if (!strcmp(f->fp[i].p->name, name))
			return &f->fp[i];
	return NULL;
}


/* Give every class row and port parameter holding all of old the added ports too. */
static int widen(struct fit *f, uint32_t old, uint32_t add, const char *src)
{
	char v[256];

	for (size_t c = 0; c < model_class_count(); c++) {
		const struct model_class *r = model_class_row(f->m, model_class_name(c));

		if (!r || (r->ports & old) != old)
			continue;
		model_ports_text(f->m, r->ports | add, v, sizeof(v));
		if (model_set_class(f->m, model_class_name(c), "ports", v, src, f->err) < 0)
			return -1;
	}
	static const char *const params[] = { "alu_ports", "load_ports", "store_addr_ports" };
	for (size_t i = 0; i < 3; i++) {
		uint32_t p = i == 0 ? f->m->alu_ports : i == 1 ? f->m->load_ports :
			     f->m->store_addr_ports;

		if ((p & old) != old)
			continue;
		model_ports_text(f->m, p | add, v, sizeof(v));
		if (model_set_param(f->m, params[i], v, src, f->err) < 0)
			return -1;
	}
	return 0;
}

/* Ports named prefix<N> until the group holds want of them. */
static int grow_group(struct fit *f, const char *probe, int per_iter, uint32_t group,
		      const char *prefix)
{
	const struct fit_probe *p = find_probe(f, probe);
	char name[16], src[96], what[64], from[16], to[16];
	uint32_t add = 0;
	int want, have = popcount(group), k = 0;

	if (!p || !group)
		return 0;
	want = (int)floor(per_iter / p->meas + 0.3);
	if (want <= have)
		return 0;
	if (want > have + 4)
		want = have + 4;	/* a glitch, not a core */
	while (have + popcount(add) < want) {
		int idx;

		snprintf(name, sizeof(name), "%s%d", prefix, have + k++);
		snprintf(src, sizeof(src), "measured %s by probe %s", f->date, probe);
		idx = model_add_port(f->m, name, src, f->err);
		if (idx == -EEXIST)
			continue;
		if (idx < 0)
			return -1;
		add |= 1u << idx;
		f->rep->ports_added++;
	}
	snprintf(what, sizeof(what), "%s ports", prefix);
	snprintf(from, sizeof(from), "%d", have);
	snprintf(to, sizeof(to), "%d", want);
	logf_change(f, what, from, to);
	return widen(f, group, add, src);
}

/* ---- the sweeps ------------------------------------------------------------- */

static const char *const fe_probes[] = { "fe.", NULL };
static const char *const load_probes[] = { "lat.load", "lat.loadop", NULL };
static const char *const vload_probes[] = { "lat.vload", NULL };
static const char *const cload_probes[] = { "lat.cload", NULL };
static const char *const sxload_probes[] = { "lat.sxload", NULL };
static const char *const stimm_probes[] = { "param.st_imm", NULL };
static const char *const mulhi_probes[] = { "param.mul_hi", NULL };
static const char *const reload_probes[] = { "st.reload", NULL };
static const char *const fwd_probes[] = { "st.reload", "st.fwd_moved", NULL };
static const char *const fwd_fail_probes[] = { "st.fwd_fail", NULL };
static const char *const store_probes[] = { "st.line", "st.2lines", "st.pair", NULL };
static const char *const vstore_probes[] = { "st.vec", "st.zmm", NULL };
static const char *const vpipe_probes[] = { "st.zmm", "tp.fma_zmm", NULL };
static const char *const taken_probes[] = { "br.taken", NULL };
static const char *const lport_probes[] = { "tp.load", "mix.load", NULL };
static const char *const vport_probes[] = { "tp.vload", NULL };

static int sweep_params(struct fit *f)
{
	static const struct {
		struct knob k;
		int lo, hi, step;
	} pk[] = {
		{ { "dispatch_width", 0, NULL, fe_probes }, 2, 12, 1 },
		{ { "load_lat", 0, NULL, load_probes }, 1, 10, 1 },
		{ { "load_lat_fp", 0, NULL, vload_probes }, 1, 12, 1 },
		{ { "load_lat_complex", 0, NULL, cload_probes }, 0, 4, 1 },
		{ { "load_lat_sext", 0, NULL, sxload_probes }, 0, 4, 1 },
		{ { "store_imm_alu", 0, NULL, stimm_probes }, 0, 1, 1 },
		{ { "mul_hi_extra", 0, NULL, mulhi_probes }, 0, 4, 1 },
		{ { "mem_rename", 0, NULL, reload_probes }, 0, 1, 1 },
		{ { "store_fwd_lat", 0, NULL, fwd_probes }, 0, 12, 1 },
		{ { "store_fwd_fail", 0, NULL, fwd_fail_probes }, 4, 40, 1 },
		{ { "taken_per_cycle", 0, NULL, taken_probes }, 1, 3, 1 },
	};
	static const struct knob store = { "store_queue|store_pair_bytes", 0, NULL,
					   store_probes };
	static const struct knob vstore = { "vec_store_data_ports", 0, NULL, vstore_probes };
	static const struct knob vpipe = { "vec_pipe_bits", 0, NULL, vpipe_probes };
	static const struct knob lports = { "load_ports", 0, NULL, lport_probes };
	static const struct knob vports = { "vec_load_ports", 0, NULL, vport_probes };
	static char cand[MAX_CANDS][96];
	int moved = 0, n;

	for (size_t i = 0; i < sizeof(pk) / sizeof(pk[0]); i++) {
		n = cands_range(cand, 0, pk[i].lo, pk[i].hi, pk[i].step);
		moved += knob_fit(f, &pk[i].k, cand, n);
	}
	n = 0;
	for (int q = 16; q <= 64; q += 16)
		snprintf(cand[n++], 96, "64|%d", q);
	snprintf(cand[n++], 96, "0|0");
	moved += knob_fit(f, &store, cand, n);
	/* vector store data through fewer ports than scalar data (Zen 4: one) */
	n = cand_prefixes(f->m, cand, 0, f->m->store_data_ports);
	snprintf(cand[n++], 96, "none");
	moved += knob_fit(f, &vstore, cand, n);
	/* 512-bit ops on narrower pipes hold them twice (0: as wide as any op) */
	n = 0;
	snprintf(cand[n++], 96, "0");
	snprintf(cand[n++], 96, "256");
	moved += knob_fit(f, &vpipe, cand, n);
	moved += knob_fit(f, &lports, cand, cand_prefixes(f->m, cand, 0, f->m->load_ports));
	n = cand_prefixes(f->m, cand, 0, f->m->load_ports);
	snprintf(cand[n++], 96, "none");
	moved += knob_fit(f, &vports, cand, n);
	return moved;
}

static int class_of_row(const struct model *m, const struct model_class *r);

static int class_probed(const struct fit *f, int c)
{
	for (size_t i = 0; i < f->nfp; i++)
		if (uses_class(&f->fp[i], c))
			return 1;
	return 0;
}

/* Latencies worth trying for class c: near the current one, and what each
 * probe using it gives per instruction of it. */
static int cands_lat(const struct fit *f, int c, char (*cand)[96])
{
	const struct model_class *r = model_class_row(f->m, model_class_name((size_t)c));
	int n = cands_range(cand, 0, r->lat > 3 ? r->lat - 3 : 0, r->lat + 3, 1);

	for (size_t i = 0; i < f->nfp; i++) {
		const struct fit_probe *p = &f->fp[i];
		int k = 0, v;

		if (!uses_class(p, c) || strncmp(p->p->name, "lat.", 4))
			continue;
		for (size_t j = 0; j < p->n; j++)
			k += class_of_row(f->m, model_classify(f->m, &p->insns[j], NULL)) == c;
		v = (int)(p->meas / (k ? k : 1) + 0.5);
		n = cands_range(cand, n, v > 1 ? v - 1 : 0, v + 1, 1);
	}
	return n;
}

/* Each port set with a few busy counts: "alu0,alu1|2". */
static int with_busy(int n, unsigned busy, char (*cand)[96])
{
	static const unsigned b[] = { 0, 1, 2, 3 };
	int m = 0;

	for (int i = n - 1; i >= 0; i--) {
		char ports[96];

		snprintf(ports, sizeof(ports), "%s", cand[i]);
		for (int j = 0; j < 4 && n + m < MAX_CANDS * 4; j++) {
			int at = i * 4 + j;

			if (at >= MAX_CANDS)
				continue;
			snprintf(cand[at], 96, "%.80s|%u", ports, b[j] ? b[j] : busy);
			m++;
		}
	}
	return n * 4 < MAX_CANDS ? n * 4 : MAX_CANDS;
}

static int sweep_classes(struct fit *f)
{
	static char cand[MAX_CANDS][96];
	int moved = 0;

	for (int c = 0; c < (int)model_class_count(); c++) {
		struct knob k = { NULL, c, NULL, NULL };
		int n;
		const struct model_class *r = model_class_row(f->m, model_class_name((size_t)c));

		if (!r || !class_probed(f, c))
			continue;
		k.field = "lat";
		moved += knob_fit(f, &k, cand, cands_lat(f, c, cand));
		k.field = "ports|busy";
		n = cands_ports(f->m, model_class_name((size_t)c), r->ports, cand);
		moved += knob_fit(f, &k, cand, with_busy(n, r->busy, cand));
		k.field = "busy";
		moved += knob_fit(f, &k, cand, cands_range(cand, 0, 1, r->lat > 4 ? r->lat : 4, 1));
		/* an op handled at rename (a nop, an eliminated move) may take no
		 * dispatch slot at all (Zen 4's one-byte nop) */
		k.field = "uops";
		moved += knob_fit(f, &k, cand, cands_range(cand, 0, (r->kind & MODEL_K_ELIM) ? 0 : 1,
							   4, 1));
	}
	return moved;
}

static int class_of_row(const struct model *m, const struct model_class *r)
{
	const char *name = r == m->fallback ? "unknown" : r->name;

	for (size_t c = 0; name && c < model_class_count(); c++)
		if (!strcmp(model_class_name(c), name))
			return (int)c;
	return -1;
}

static void classify_probes(struct fit *f)
{
	for (size_t i = 0; i < f->nfp; i++) {
		struct fit_probe *p = &f->fp[i];

		p->classes[0] = p->classes[1] = 0;
		for (size_t j = 0; j < p->n; j++) {
			int c = class_of_row(f->m, model_classify(f->m, &p->insns[j], NULL));

			if (c >= 0)
				p->classes[c / 64] |= 1ull << (c % 64);
		}
	}
}

/* Classes the model does not use but a probe of their own measured (zen5's
 * table has no lock class: lat.lock turns it on, at the base's values). */
static int use_probed_classes(struct fit *f)
{
	char name[64], v[16], src[96];
	int used = 0;

	for (size_t c = 0; c < model_class_count(); c++) {
		const char *cls = model_class_name(c);

		if (model_class_row(f->m, cls))
			continue;
		snprintf(name, sizeof(name), "lat.%s", cls);
		if (!find_probe(f, name)) {
			snprintf(name, sizeof(name), "tp.%s", cls);
			if (!find_probe(f, name))
				continue;
		}
		snprintf(src, sizeof(src), "base value (class used for %.40s)", name);
		snprintf(v, sizeof(v), "%u", model_base_classes[c].uops);
		if (model_set_class(f->m, cls, "uops", v, src, f->err) < 0)
			return -1;
		snprintf(v, sizeof(v), "%u", model_base_classes[c].lat);
		if (model_set_class(f->m, cls, "lat", v, src, f->err) < 0)
			return -1;
		snprintf(v, sizeof(v), "%u", model_base_classes[c].busy);
		if (model_set_class(f->m, cls, "busy", v, src, f->err) < 0)
			return -1;
		logf_change(f, cls, "unused", "used");
		used++;
	}
	if (used)
		classify_probes(f);
	return 0;
}

static int prepare(struct fit *f, const struct model_probe *pr, const double *cycles, size_t n)
{
	f->fp = calloc(n ? n : 1, sizeof(*f->fp));
	if (!f->fp)
		return dcpi_errf(f->err, -ENOMEM, "fit: out of memory");
	for (size_t i = 0; i < n; i++) {
		struct fit_probe *p = &f->fp[f->nfp];

		if (!(cycles[i] > 0) || !pr[i].len)
			continue;
		if (cfg_decode(pr[i].bytes, pr[i].len, 0, &p->insns, &p->n, NULL) < 0) {
			free(p->insns);
			p->insns = NULL;
			continue;
		}
		p->p = &pr[i];
		p->meas = cycles[i];
		f->nfp++;
	}
	classify_probes(f);
	return 0;
}

int model_fit(struct model *m, const struct model_probe *probes_in, const double *cycles,
	      size_t n, const char *date, struct model_fit_report *rep, struct dcpi_err *err)
{
	struct model_fit_report local;
	struct fit f = { .m = m, .date = date ? date : "?", .rep = rep ? rep : &local,
			 .err = err };
	int rc;

	memset(f.rep, 0, sizeof(*f.rep));
	if (!m || !m->file)
		return dcpi_errf(err, -EINVAL, "fit: the model must be a model_copy");
	rc = prepare(&f, probes_in, cycles, n);
	if (rc < 0)
		goto out;
	f.rep->nused = f.nfp;
	if (!f.nfp) {
		rc = dcpi_errf(err, -ENODATA, "fit: no measured probe");
		goto out;
	}
	f.rep->err_before = loss(&f, -1, NULL, NULL) / (double)f.nfp;
	if (grow_group(&f, "tp.alu_fuse", 12, m->alu_ports, "alu") < 0 ||
	    grow_group(&f, "tp.load", 12, m->load_ports, "agu") < 0 ||
	    use_probed_classes(&f) < 0) {
		rc = -EINVAL;
		goto out;
	}
	for (int s = 0; s < FIT_SWEEPS; s++) {
		int moved = sweep_params(&f);

		moved += sweep_classes(&f);
		if (!moved)
			break;
	}
	f.rep->err_after = loss(&f, -1, NULL, NULL) / (double)f.nfp;
out:
	for (size_t i = 0; i < f.nfp; i++)
		free(f.fp[i].insns);
	free(f.fp);
	return rc;
}
