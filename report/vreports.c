/*
 * vreports.c - the four value reports of seed 000 ("Reports"; docs/values.md,
 * "Value reports"), text and JSON, over report/values.c's shared pieces:
 *
 *   dcpivlist PROC   per instruction with values: time, text, kind, distinct
 *                    values kept, the top REP_VAL_TOP with shares, class;
 *   dcpivargs [PROC] per procedure: each argument's top value and share, and
 *                    the call sites (the callsite kind) with theirs; where
 *                    DWARF lists the parameters (image/dwarf.c), only their
 *                    registers, named ("k (rdi)"), else all six;
 *   dcpivcg [PROC]   per indirect call or jump: its targets, named;
 *   dcpivblks PROC   per basic block: lists, invariant ones, the most
 *                    invariant values.
 *
 * The hotlists of one instruction are independent (one per kind), so the
 * argument values of one call site cannot be told apart from another's:
 * vargs gives a procedure's arguments and, beside them, who calls it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "internal.h"

static int is_entry_kind(uint32_t k)
{
	return (k >= VAL_ARG0 && k <= VAL_ARG5) || k == VAL_CALLSITE;
}

/* The instruction at file offset off, decoded; "" when its bytes are not
 * in the image. */
static void insn_text(const struct rv_ctx *c, uint64_t off, char *buf, size_t len)
{
	struct cfg_insn in;

	buf[0] = 0;
	if (rv_decode(c, off, &in) == 0)
		cfg_insn_text(&in, buf, len);
}

static void time_json(FILE *f, const struct rv_time *t)
{
	fprintf(f, "\"samples\": %.17g, \"cycles\": ", t->samples);
	if (t->have_cycles)
		fprintf(f, "%.17g", t->cycles);
	else
		fprintf(f, "null");
}

static void time_text(FILE *f, const struct rv_time *t)
{
	fprintf(f, "%.0f samples", t->samples);
	if (t->have_cycles)
		fprintf(f, ", %.4g cycles", t->cycles);
}

/* The lists of [lo, hi): vp->lists[*a .. *b). */
static void lists_in(const struct val_profile *vp, uint64_t lo, uint64_t hi, size_t *a,
		     size_t *b)
{
	size_t r = dcpi_lower_bound(vp->lists, vp->nlists, sizeof(*vp->lists),
				    offsetof(struct val_hotlist, offset), lo);

	*a = r;
	while (r < vp->nlists && vp->lists[r].offset < hi)
		r++;
	*b = r;
}

/* ---- dcpivlist ------------------------------------------------------------ */

/* The JSON head of a report on one procedure: rv_json_head, its name, its image. */
static void proc_json_head(FILE *f, const struct rv_ctx *c, const struct img_proc *p)
{
	rv_json_head(f, c->v);
	fprintf(f, ", \"procedure\": ");
	rep_json_str(f, p->name);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, c->vp->image.path);
}

static void vlist_json(FILE *f, const struct rv_ctx *c, const struct img_proc *p, size_t a,
		       size_t b, const struct rv_time *pt)
{
	proc_json_head(f, c, p);
	fprintf(f, ", \"address\": \"0x%" PRIx64 "\", ", p->addr);
	time_json(f, pt);
	fprintf(f, ", \"instructions\": [");
	for (size_t i = a, first = 1; i < b; first = 0) {
		uint64_t off = c->vp->lists[i].offset, va;
		struct rv_time t;
		char text[CFG_TEXT_MAX];

		rv_proc_at(c, off, &va);
		rv_time(c, off, off + 1, &t);
		insn_text(c, off, text, sizeof(text));
		fprintf(f, "%s\n  {\"address\": \"0x%" PRIx64 "\", \"offset\": \"0x%" PRIx64
			"\", ", first ? "" : ",", va, off);
		time_json(f, &t);
		fprintf(f, ", \"text\": ");
		rep_json_str(f, text);
		fprintf(f, ", \"lists\": [");
		for (size_t k = i; i < b && c->vp->lists[i].offset == off; i++) {
			fprintf(f, "%s{", i > k ? ", " : "");
			rv_list_json(f, c, &c->vp->lists[i], REP_VAL_TOP);
			fprintf(f, "}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
}

static void vlist_text(FILE *f, const struct rv_ctx *c, const struct img_proc *p, size_t a,
		       size_t b, const struct rv_time *pt)
{
	fprintf(f, "dcpivlist %s in %s\nepoch %s, event %s: ", p->name, c->vp->image.path,
		c->v->epoch, c->v->event ? c->v->event : "(none)");
	time_text(f, pt);
	fprintf(f, "\n%8s %10s %8s  %-32s %-8s %6s %3s  %-14s %s\n", "samples", "cycles",
		"address", "instruction", "kind", "seen", "n", "class", "top values");
	for (size_t i = a; i < b;) {
		uint64_t off = c->vp->lists[i].offset, va;
		struct rv_time t;
		char text[CFG_TEXT_MAX], cyc[32];

		rv_proc_at(c, off, &va);
		rv_time(c, off, off + 1, &t);
		insn_text(c, off, text, sizeof(text));
		if (t.have_cycles)
			snprintf(cyc, sizeof(cyc), "%.4g", t.cycles);
		else
			snprintf(cyc, sizeof(cyc), "-");
		for (size_t k = i; i < b && c->vp->lists[i].offset == off; i++) {
			const struct val_hotlist *h = &c->vp->lists[i];
			const char *kn = val_kind_name((int)h->kind);

			if (i == k)
				fprintf(f, "%8.0f %10s %8" PRIx64 "  %-32.32s ", t.samples, cyc,
					va, text);
			else
				fprintf(f, "%8s %10s %8s  %-32s ", "", "", "", "");
			fprintf(f, "%-8s %6" PRIu64 " %3" PRIu32 "  %-14s ", kn ? kn : "?",
				h->seen, h->n,
				rep_val_class_name(rep_val_classify(rv_top_share(h))));
			rv_list_text(f, c, h, REP_VAL_TOP);
			fprintf(f, "\n");
		}
	}
}

int rep_vlist(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err)
{
	const struct img_proc *p;
	struct rv_time pt;
	struct rv_ctx c;
	uint64_t lo, hi;
	size_t which, a, b;
	int rc = rv_find_proc_range(v, proc, &which, &p, &c, &lo, &hi, err);

	if (rc < 0)
		return rc;
	rv_time(&c, lo, hi, &pt);
	lists_in(c.vp, lo, hi, &a, &b);
	if (json)
		vlist_json(f, &c, p, a, b, &pt);
	else
		vlist_text(f, &c, p, a, b, &pt);
	return 0;
}

/* ---- argument registers named from DWARF ---------------------------------- */

void rv_args(const struct rv_ctx *c, uint64_t off, struct rv_args *a)
{
	const struct img_param *p;
	uint64_t va;
	size_t n;

	memset(a, 0, sizeof(*a));
	if (!c->img || img_offset_to_vaddr(c->img, off, &va) < 0 ||
	    img_params(c->img, va, &p, &n, &a->variadic) < 0)
		return;
	a->dwarf = 1;
	a->nall = n;
	a->n = n < RV_MAXPARAMS ? n : RV_MAXPARAMS;
	if (a->n)
		memcpy(a->p, p, a->n * sizeof(*p));
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < p[i].nregs; b++)
			if (p[i].reg[b] < 6 && p[i].reg[b] + 1 > a->ngpr)
				a->ngpr = p[i].reg[b] + 1;
}

/* Parameter i's name: DWARF's, else "paramI". */
static void param_name(const struct rv_args *a, size_t i, char *buf, size_t len)
{
	if (a->p[i].name[0])
		snprintf(buf, len, "%s", a->p[i].name);
	else
		snprintf(buf, len, "param%zu", i);
}

int rv_arg_label(const struct rv_args *a, int r, char *buf, size_t len, char *name,
		 size_t nlen)
{
	char nm[128], part[48] = "";

	if (!a->dwarf || (a->variadic && r >= a->ngpr)) {
		if (a->dwarf)
			snprintf(nm, sizeof(nm), "...");
		else
			snprintf(nm, sizeof(nm), "arg%d", r);
		goto found;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct img_param *p = &a->p[i];

		for (int b = 0; b < p->nregs; b++) {
			if (p->reg[b] != r)
				continue;
			param_name(a, i, nm, sizeof(nm));
			if (p->nregs > 1)
				snprintf(part, sizeof(part), "[%d:%" PRIu64 "]", 8 * b,
					 p->size < 8 * (uint64_t)b + 8 ? p->size : 8 * (uint64_t)b + 8);
			goto found;
		}
	}
	return 0;
found:
	snprintf(buf, len, "%s%s (%s)", nm, part, img_param_reg_name(r));
	if (name)
		snprintf(name, nlen, "%s", nm);
	return 1;
}

/* ---- dcpivargs ------------------------------------------------------------ */

struct vproc {
	struct rv_ctx c;
	const struct img_proc *p;	/* NULL: entry at no known procedure */
	uint64_t off;			/* the entry's file offset */
	char name[256];
	const struct val_hotlist *arg[6], *callsite;
	struct rv_args args;		/* what DWARF says arg[] hold */
	struct rv_time t;
	double w;
};

struct vprocs {
	size_t n, cap;
	struct vproc *e;
};

static struct vproc *vprocs_add(struct vprocs *s)
{
	return dcpi_append((void **)&s->e, &s->n, &s->cap, sizeof(*s->e));
}

static int cmp_vproc(const void *x, const void *y)
{
	const struct vproc *a = x, *b = y;

	if (a->w != b->w)
		return a->w > b->w ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The entry lists of one image's procedures (only want's when not NULL). */
/* Entry e at off of procedure p (NULL: none known): its time, name and
 * parameters. */
static void vproc_fill(struct vproc *e, const struct rv_ctx *c, const struct img_proc *p,
		       uint64_t off)
{
	uint64_t lo, hi;

	e->c = *c;
	e->p = p;
	e->off = off;
	if (p && rv_proc_range(c, p, &lo, &hi) == 0)
		rv_time(c, lo, hi, &e->t);
	else
		rv_time(c, off, off + 1, &e->t);
	e->w = rv_weight(&e->t);
	rv_place(c, off, e->name, sizeof(e->name));
	rv_args(c, off, &e->args);
}

static int vargs_collect(struct rep_vals *v, size_t i, const struct img_proc *want,
			 struct vprocs *s)
{
	const struct val_profile *vp = &v->vp[i];
	struct vproc *cur = NULL;
	struct rv_ctx c;

	rv_image_ctx(v, vp, &c);
	for (size_t k = 0; k < vp->nlists; k++) {
		const struct val_hotlist *h = &vp->lists[k];
		const struct img_proc *p;
		uint64_t va;

		if (!is_entry_kind(h->kind))
			continue;
		p = rv_proc_at(&c, h->offset, &va);
		if (want && p != want)
			continue;
		if (!cur || cur->off != h->offset) {
			if (!(cur = vprocs_add(s)))
				return -ENOMEM;
			vproc_fill(cur, &c, p, h->offset);
		}
		if (h->kind == VAL_CALLSITE)
			cur->callsite = h;
		else
			cur->arg[h->kind - VAL_ARG0] = h;
	}
	return 0;
}

/* The procedure asked for, whose entry no burst saw: its parameters (DWARF)
 * and "0 calls seen", where it has any. */
static int vargs_unseen(struct rep_vals *v, size_t i, const struct img_proc *p,
			struct vprocs *s)
{
	struct vproc *e;
	struct rv_ctx c;
	uint64_t lo, hi;
	struct rv_args a;

	rv_image_ctx(v, &v->vp[i], &c);
	if (rv_proc_range(&c, p, &lo, &hi))
		return 0;
	rv_args(&c, lo, &a);
	if (!a.dwarf || !a.n)
		return 0;
	if (!(e = vprocs_add(s)))
		return -ENOMEM;
	vproc_fill(e, &c, p, lo);
	return 0;
}

/* Calls seen at the entry: the most values any of its lists was offered. */
static uint64_t vproc_calls(const struct vproc *e)
{
	uint64_t n = e->callsite ? e->callsite->seen : 0;

	for (int a = 0; a < 6; a++)
		if (e->arg[a] && e->arg[a]->seen > n)
			n = e->arg[a]->seen;
	return n;
}

/* The parameters DWARF lists: name, type, size, registers ([] in memory). */
static void params_json(FILE *f, const struct rv_args *a)
{
	fprintf(f, ", \"dwarf\": %s", a->dwarf ? "true" : "false");
	if (!a->dwarf)
		return;
	fprintf(f, ", \"variadic\": %s, \"parameters\": [", a->variadic ? "true" : "false");
	for (size_t i = 0; i < a->n; i++) {
		char nm[128];

		param_name(a, i, nm, sizeof(nm));
		fprintf(f, "%s{\"name\": ", i ? ", " : "");
		rep_json_str(f, nm);
		fprintf(f, ", \"type\": ");
		rep_json_str(f, a->p[i].type);
		fprintf(f, ", \"size\": %" PRIu64 ", \"registers\": [", a->p[i].size);
		for (int b = 0; b < a->p[i].nregs; b++)
			fprintf(f, "%s\"%s\"", b ? ", " : "", img_param_reg_name(a->p[i].reg[b]));
		fprintf(f, "]}");
	}
	fprintf(f, "]");
}

static uint64_t vproc_needed(const struct vproc *e, double *share);

static void vargs_json_one(FILE *f, const struct vproc *e)
{
	double share = 0;

	fprintf(f, "\n  {\"name\": ");
	rep_json_str(f, e->name);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, e->c.vp->image.path);
	fprintf(f, ", \"offset\": \"0x%" PRIx64 "\", ", e->off);
	time_json(f, &e->t);
	params_json(f, &e->args);
	fprintf(f, ", \"calls\": %" PRIu64 ", \"calls_needed\": %" PRIu64 ", \"args\": [",
		vproc_calls(e), vproc_needed(e, &share));
	for (int a = 0, first = 1; a < 6; a++) {
		const struct val_hotlist *h = e->arg[a];
		char label[192], nm[128];

		if (!h || !rv_arg_label(&e->args, a, label, sizeof(label), nm, sizeof(nm)))
			continue;
		fprintf(f, "%s{\"arg\": %d, \"register\": \"%s\", ", first ? "" : ", ", a,
			img_param_reg_name(a));
		if (e->args.dwarf) {
			fprintf(f, "\"name\": ");
			rep_json_str(f, nm);
			fprintf(f, ", ");
		}
		rv_list_json(f, &e->c, h, 1);
		fprintf(f, "}");
		first = 0;
	}
	fprintf(f, "], \"callsites\": [");
	for (uint32_t i = 0; e->callsite && i < e->callsite->n; i++) {
		fprintf(f, i ? ", " : "");
		rv_value_json(f, &e->c, e->callsite, i);
	}
	fprintf(f, "]}");
}

static void vargs_text_arg(FILE *f, const struct vproc *e, int a)
{
	const struct val_hotlist *h = e->arg[a];
	char text[512] = "-", label[192];
	double share;

	if (!h || !rv_arg_label(&e->args, a, label, sizeof(label), NULL, 0))
		return;
	if (h->n)
		rv_value_text(&e->c, h->kind, h->t[0].value, text, sizeof(text));
	share = rv_top_share(h);
	fprintf(f, "  %-16s %-24s %6.1f%%  %-14s (%" PRIu32 " values kept)\n", label, text,
		100 * share, rep_val_class_name(rep_val_classify(share)), h->n);
}

/* Parameter i, whose values are not sampled: in xmm registers or memory. */
static void vargs_text_unsampled(FILE *f, const struct rv_args *a, size_t i, int reg)
{
	const struct img_param *p = &a->p[i];
	char nm[128], label[192];

	param_name(a, i, nm, sizeof(nm));
	snprintf(label, sizeof(label), "%s (%s)", nm, reg < 0 ? "memory" :
		 img_param_reg_name(reg));
	if (reg < 0)
		fprintf(f, "  %-16s %s, %" PRIu64 " bytes: passed in memory, not sampled\n",
			label, p->type, p->size);
	else
		fprintf(f, "  %-16s %s: xmm registers are not sampled\n", label, p->type);
}

/* The calls the entry's most invariant argument (of those it takes) needs
 * for its top share within +-VAL_PLAN_POINTS (include/dcpi/values.h), and
 * that share; 0 without arguments. */
static uint64_t vproc_needed(const struct vproc *e, double *share)
{
	const struct val_hotlist *best = NULL;

	for (int a = 0; a < 6; a++) {
		const struct val_hotlist *h = e->arg[a];

		if (h && h->n && rv_arg_label(&e->args, a, NULL, 0, NULL, 0) &&
		    (!best || rv_top_share(h) > rv_top_share(best)))
			best = h;
	}
	if (!best) {	/* none seen: the least certain share, 50% */
		*share = val_share_adjusted(0, 0);
		return e->args.dwarf && e->args.n ? val_calls_needed(*share, VAL_PLAN_POINTS) : 0;
	}
	*share = rv_top_share(best);
	return val_calls_needed(val_share_adjusted(*share, best->seen), VAL_PLAN_POINTS);
}

static void vargs_text_one(FILE *f, const struct vproc *e)
{
	const struct rv_args *args = &e->args;
	uint64_t need, calls = vproc_calls(e);
	double share = 0;

	fprintf(f, "%s (%s): ", e->name, e->c.vp->image.path);
	time_text(f, &e->t);
	fprintf(f, ", %" PRIu64 " calls sampled\n", calls);
	if ((need = vproc_needed(e, &share)) > calls) {	/* docs/values.md, "Marking plan" */
		fprintf(f, "  %" PRIu64 " calls seen; for +-%.0f points at %.0f%% about %" PRIu64
			" calls are needed", calls, 100 * VAL_PLAN_POINTS, 100 * share, need);
		/* calls seen grow with the bursts: the rate that would see them */
		if (!strstr(e->c.v->meta.settings, " plan=") && calls)
			fprintf(f, " (dcpi record --values --plan auto spends the samples there; "
				"without a plan, about %" PRIu64 "x this run's burst rate, --paths)",
				(need + calls - 1) / calls);
		else if (!strstr(e->c.v->meta.settings, " plan="))
			fprintf(f, " (no burst saw its entry: dcpi record --values --plan auto "
				"captures its next calls at a breakpoint)");
		fputc('\n', f);
	}
	if (!args->dwarf)
		fprintf(f, "  (no DWARF: all six argument registers)\n");
	for (size_t i = 0; args->dwarf && i < args->n; i++) {
		const struct img_param *p = &args->p[i];

		if (!p->nregs)
			vargs_text_unsampled(f, args, i, -1);
		for (int b = 0; b < p->nregs; b++) {
			if (p->reg[b] >= IMG_REG_XMM0)
				vargs_text_unsampled(f, args, i, p->reg[b]);
			else
				vargs_text_arg(f, e, p->reg[b]);
		}
	}
	if (args->dwarf && !args->n && !args->variadic)
		fprintf(f, "  (no parameters)\n");
	for (int a = args->dwarf ? args->ngpr : 0; a < 6; a++)
		vargs_text_arg(f, e, a);
	for (uint32_t i = 0; e->callsite && i < e->callsite->n; i++) {
		char text[512];

		rv_code_text(&e->c, e->callsite->t[i].value, text, sizeof(text));
		fprintf(f, "  from  %-24s %6.1f%%\n", text,
			100 * val_hotlist_share(e->callsite, i));
	}
}

int rep_vargs(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err)
{
	const struct img_proc *want = NULL;
	struct vprocs s = { 0 };
	size_t which = 0;
	int rc = 0;

	if (proc && (rc = rv_find_proc(v, proc, &which, &want, err)) < 0)
		return rc;
	for (size_t i = 0; i < v->nvp && rc == 0; i++)
		if (!want || i == which)
			rc = vargs_collect(v, i, want, &s);
	if (rc == 0 && want && !s.n)
		rc = vargs_unseen(v, which, want, &s);
	if (rc < 0) {
		free(s.e);
		return dcpi_errf(err, rc, "out of memory");
	}
	dcpi_qsort(s.e, s.n, sizeof(*s.e), cmp_vproc);
	if (json) {
		rv_json_head(f, v);
		fprintf(f, ", \"procedures\": [");
		for (size_t i = 0; i < s.n; i++) {
			fprintf(f, i ? "," : "");
			vargs_json_one(f, &s.e[i]);
		}
		fprintf(f, "\n]}\n");
	} else {
		fprintf(f, "dcpivargs: epoch %s, event %s; procedures by time\n", v->epoch,
			v->event ? v->event : "(none)");
		if (!s.n)
			fprintf(f, "(no argument values%s%s)\n", proc ? " for " : "",
				proc ? proc : "");
		for (size_t i = 0; i < s.n; i++) {
			fprintf(f, "\n");
			vargs_text_one(f, &s.e[i]);
		}
	}
	free(s.e);
	return 0;
}

/* ---- dcpivcg --------------------------------------------------------------- */

struct vsite {
	struct rv_ctx c;
	const struct val_hotlist *h;
	struct rv_time t;
	double w;
};

static int cmp_vsite(const void *x, const void *y)
{
	const struct vsite *a = x, *b = y;
	int c;

	if (a->w != b->w)
		return a->w > b->w ? -1 : 1;
	c = strcmp(a->c.vp->image.path, b->c.vp->image.path);
	if (c)
		return c;
	return (a->h->offset > b->h->offset) - (a->h->offset < b->h->offset);
}

/* Every target list (in [lo, hi) of image which, when want). */
static int vcg_collect(struct rep_vals *v, int want, size_t which, uint64_t lo, uint64_t hi,
		       struct vsite **out, size_t *n)
{
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < v->nvp; i++) {
		struct rv_ctx c;

		if (want && i != which)
			continue;
		rv_image_ctx(v, &v->vp[i], &c);
		for (size_t k = 0; k < v->vp[i].nlists; k++) {
			const struct val_hotlist *h = &v->vp[i].lists[k];

			struct vsite *s;

			if (h->kind != VAL_TARGET || (want && (h->offset < lo || h->offset >= hi)))
				continue;
			if (!(s = dcpi_append((void **)out, n, &cap, sizeof(**out))))
				return -ENOMEM;
			s->c = c;
			s->h = h;
			rv_time(&c, h->offset, h->offset + 1, &s->t);
			s->w = rv_weight(&s->t);
		}
	}
	return 0;
}

/* What a call site is named by in both forms: its place, address and text. */
struct vsite_name {
	char place[256], text[CFG_TEXT_MAX];
	uint64_t va;
};

static void vsite_name(const struct vsite *s, struct vsite_name *n)
{
	rv_proc_at(&s->c, s->h->offset, &n->va);
	rv_place(&s->c, s->h->offset, n->place, sizeof(n->place));
	insn_text(&s->c, s->h->offset, n->text, sizeof(n->text));
}

static void vcg_json_one(FILE *f, const struct vsite *s)
{
	struct vsite_name n;

	vsite_name(s, &n);
	fprintf(f, "\n  {\"site\": ");
	rep_json_str(f, n.place);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, s->c.vp->image.path);
	fprintf(f, ", \"address\": \"0x%" PRIx64 "\", \"offset\": \"0x%" PRIx64 "\", \"text\": ",
		n.va, s->h->offset);
	rep_json_str(f, n.text);
	fprintf(f, ", ");
	time_json(f, &s->t);
	fprintf(f, ", ");
	rv_list_json(f, &s->c, s->h, VAL_N);
	fprintf(f, "}");
}

static void vcg_text_one(FILE *f, const struct vsite *s)
{
	struct vsite_name n;

	vsite_name(s, &n);
	fprintf(f, "\n%s (0x%" PRIx64 " in %s)  %s\n  ", n.place, n.va, s->c.vp->image.path,
		n.text);
	time_text(f, &s->t);
	fprintf(f, ", %" PRIu64 " targets sampled, %s\n", s->h->seen,
		rep_val_class_name(rep_val_classify(rv_top_share(s->h))));
	for (uint32_t i = 0; i < s->h->n; i++) {
		char name[512];

		rv_code_text(&s->c, s->h->t[i].value, name, sizeof(name));
		fprintf(f, "  %6.1f%%  %s\n", 100 * val_hotlist_share(s->h, i), name);
	}
}

int rep_vcg(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err)
{
	const struct img_proc *p = NULL;
	struct vsite *s = NULL;
	uint64_t lo = 0, hi = 0;
	size_t which = 0, n = 0;
	int rc;

	if (proc) {
		struct rv_ctx c;

		if ((rc = rv_find_proc_range(v, proc, &which, &p, &c, &lo, &hi, err)) < 0)
			return rc;
	}
	if (vcg_collect(v, proc != NULL, which, lo, hi, &s, &n) < 0) {
		free(s);
		return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	dcpi_qsort(s, n, sizeof(*s), cmp_vsite);
	if (json) {
		rv_json_head(f, v);
		fprintf(f, ", \"sites\": [");
		for (size_t i = 0; i < n; i++) {
			fprintf(f, i ? "," : "");
			vcg_json_one(f, &s[i]);
		}
		fprintf(f, "\n]}\n");
	} else {
		fprintf(f, "dcpivcg: epoch %s, event %s; indirect call and jump sites by time\n",
			v->epoch, v->event ? v->event : "(none)");
		if (!n)
			fprintf(f, "(no indirect targets sampled%s%s)\n", proc ? " in " : "",
				proc ? proc : "");
		for (size_t i = 0; i < n; i++)
			vcg_text_one(f, &s[i]);
	}
	free(s);
	return 0;
}

/* ---- dcpivblks ------------------------------------------------------------- */

#define VBLK_TOP 3		/* most invariant lists shown per block */

struct vblk {
	struct rv_time t;
	size_t with_values, lists, inv, semi;
	const struct val_hotlist *top[VBLK_TOP];	/* by top share, then seen */
	size_t ntop;
};

static int more_invariant(const struct val_hotlist *a, const struct val_hotlist *b)
{
	double sa = rv_top_share(a), sb = rv_top_share(b);

	return sa != sb ? sa > sb : a->seen > b->seen;
}

static void vblk_offer(struct vblk *s, const struct val_hotlist *h)
{
	size_t k;

	if (!h->n)
		return;
	if (s->ntop < VBLK_TOP)
		s->ntop++;
	else if (!more_invariant(h, s->top[VBLK_TOP - 1]))
		return;
	for (k = s->ntop - 1; k > 0 && more_invariant(h, s->top[k - 1]); k--)
		s->top[k] = s->top[k - 1];
	s->top[k] = h;
}

static void vblk_sum(const struct rv_ctx *c, const struct cfg *cfg, const struct cfg_block *bl,
		     struct vblk *s)
{
	memset(s, 0, sizeof(*s));
	s->t.have_cycles = c->cps > 0;
	for (uint32_t j = 0; j < bl->n; j++) {
		const struct cfg_insn *in = &cfg->insns[bl->first + j];
		struct rv_time t;
		uint64_t off;
		int any = 0;

		if (img_vaddr_to_offset(c->img, in->addr, &off) < 0)
			continue;
		rv_time(c, off, off + in->size, &t);
		s->t.samples += t.samples;
		s->t.cycles += t.cycles;
		for (uint32_t k = 1; k <= VAL_KIND_MAX; k++) {
			const struct val_hotlist *h = val_profile_find(c->vp, off, k);
			enum rep_val_class cls;

			if (!h)
				continue;
			any = 1;
			s->lists++;
			cls = rep_val_classify(rv_top_share(h));
			s->inv += cls == REP_VAL_INV;
			s->semi += cls == REP_VAL_SEMI;
			vblk_offer(s, h);
		}
		s->with_values += any;
	}
}

static void vblk_top_json(FILE *f, const struct rv_ctx *c, const struct vblk *s)
{
	for (size_t i = 0; i < s->ntop; i++) {
		uint64_t va;

		rv_proc_at(c, s->top[i]->offset, &va);
		fprintf(f, "%s{\"address\": \"0x%" PRIx64 "\", ", i ? ", " : "", va);
		rv_list_json(f, c, s->top[i], 1);
		fprintf(f, "}");
	}
}

static void vblks_print(FILE *f, const struct rv_ctx *c, const struct img_proc *p,
			const struct cfg *cfg, int json)
{
	if (json) {
		proc_json_head(f, c, p);
		fprintf(f, ", \"blocks\": [");
	} else {
		fprintf(f, "dcpivblks %s in %s\nepoch %s, event %s\n", p->name,
			c->vp->image.path, c->v->epoch, c->v->event ? c->v->event : "(none)");
	}
	for (size_t b = 0, first = 1; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		struct vblk s;

		if (bl->flags & CFG_B_EXIT)
			continue;
		vblk_sum(c, cfg, bl, &s);
		if (json) {
			fprintf(f, "%s\n  {\"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64
				"\", \"instructions\": %" PRIu32 ", ", first ? "" : ",", bl->start,
				bl->end, bl->n);
			time_json(f, &s.t);
			fprintf(f, ", \"with_values\": %zu, \"lists\": %zu, \"invariant\": %zu, "
				"\"semi_invariant\": %zu, \"top\": [", s.with_values, s.lists,
				s.inv, s.semi);
			vblk_top_json(f, c, &s);
			fprintf(f, "]}");
			first = 0;
			continue;
		}
		fprintf(f, "\nblock 0x%" PRIx64 "-0x%" PRIx64 "  %" PRIu32 " insn%s, ", bl->start,
			bl->end, bl->n, bl->n == 1 ? "" : "s");
		time_text(f, &s.t);
		fprintf(f, "; %zu with values (%zu lists: %zu invariant, %zu semi-invariant)\n",
			s.with_values, s.lists, s.inv, s.semi);
		for (size_t i = 0; i < s.ntop; i++) {
			const char *kn = val_kind_name((int)s.top[i]->kind);
			uint64_t va;

			rv_proc_at(c, s.top[i]->offset, &va);
			fprintf(f, "  %8" PRIx64 " %-8s ", va, kn ? kn : "?");
			rv_list_text(f, c, s.top[i], 1);
			fprintf(f, "  %s\n", rep_val_class_name(rep_val_classify(
				rv_top_share(s.top[i]))));
		}
	}
	if (json)
		fprintf(f, "\n]}\n");
}

int rep_vblks(FILE *f, struct rep_vals *v, const char *proc, int json, struct dcpi_err *err)
{
	const struct img_proc *p;
	struct cfg *cfg = NULL;
	struct rv_ctx c;
	size_t which;
	int rc = rv_find_proc(v, proc, &which, &p, err);

	if (rc < 0)
		return rc;
	rv_image_ctx(v, &v->vp[which], &c);
	if ((rc = cfg_build(c.img, p, &cfg, err)) < 0)
		return rc;
	vblks_print(f, &c, p, cfg, json);
	cfg_free(cfg);
	return 0;
}
