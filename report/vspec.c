/*
 * vspec.c - dcpi specialize: specialization hints from value invariance
 * (seed 000, "Reports": invariant values are what specialization acts on;
 * docs/values.md, "Specialization hints").  Over an epoch's value profiles
 * (report/values.c), four kinds of candidate, each with the time it puts at
 * stake:
 *
 *   argument  a procedure's argument register whose top value's share is at
 *             least REP_VAL_SEMI_INVARIANT: clone the procedure for it
 *             (invariant) or guard a specialized copy (semi-invariant); the
 *             procedure's time x share;
 *   load      a load whose loaded value is invariant: hoist or fold it; the
 *             instruction's time;
 *   stride    a load whose stride is invariant and not 0: a prefetch
 *             candidate; the instruction's time;
 *   target    an indirect call or jump whose top target's share is at least
 *             REP_VAL_SEMI_INVARIANT: promote it; the site's time x share.
 *
 * Only lists that saw at least min_seen values count.  Registers hold
 * whatever the caller left in them for arguments a procedure does not take,
 * and that can look invariant, so an argument register is kept only when the
 * procedure reads it: in its CFG (cfg_build), scanning instructions from the
 * entry in address order, the first one that reads or writes the register
 * reads it.  Where the code cannot be read the candidate stays, marked
 * unchecked.  Where DWARF lists the procedure's parameters (image/dwarf.c),
 * only their registers count, named after them ("vl_walk n (rsi)").
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

enum vs_kind { VS_ARG, VS_LOAD, VS_STRIDE, VS_TARGET };

static const char *const vs_kind_names[] = {
	[VS_ARG] = "argument", [VS_LOAD] = "load", [VS_STRIDE] = "stride",
	[VS_TARGET] = "target",
};

/* The System V argument registers, arg0 .. arg5 */
static const int arg_regs[6] = { CFG_R_RDI, CFG_R_RSI, CFG_R_RDX, CFG_R_RCX, CFG_R_R8,
				  CFG_R_R9 };
static const char *const arg_reg_names[6] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };

struct vs_entry {
	enum vs_kind kind;
	struct rv_ctx c;
	const struct val_hotlist *h;
	const struct val_hotlist *callsite;	/* arguments: who calls, or NULL */
	int checked;			/* arguments: the procedure's code was read */
	int stack;			/* loads: from the stack (pop, rsp-based) */
	int jump;			/* targets: an indirect jump, not a call */
	int local;			/* ... whose top target is in its procedure */
	struct rv_time t;		/* the procedure's (arguments), else the site's */
	double share, stake;		/* stake: rv_weight units */
	char proc[256];			/* the procedure, or "[image]+0xOFF" */
	char where[256];		/* the instruction: "proc+0x12" */
	char arg[192], argname[128];	/* arguments: "n (rsi)" and "n", or "arg1" */
	int named;			/* ... from DWARF */
};

struct vs_list {
	size_t n, cap;
	struct vs_entry *e;
};

static struct vs_entry *vs_add(struct vs_list *s)
{
	return dcpi_append((void **)&s->e, &s->n, &s->cap, sizeof(*s->e));
}

static int cmp_entry(const void *x, const void *y)
{
	const struct vs_entry *a = x, *b = y;
	int c;

	if (a->stake != b->stake)
		return a->stake > b->stake ? -1 : 1;
	if ((c = strcmp(a->c.vp->image.path, b->c.vp->image.path)))
		return c;
	if (a->h->offset != b->h->offset)
		return a->h->offset < b->h->offset ? -1 : 1;
	return (a->h->kind > b->h->kind) - (a->h->kind < b->h->kind);
}

/*
 * The argument registers p reads before writing them (bit a for arg a),
 * scanning from entry_va in address order; -1 when its code cannot be read.
 */
static int args_read(const struct rv_ctx *c, const struct img_proc *p, uint64_t entry_va)
{
	struct dcpi_err err = { 0 };
	struct cfg *cfg;
	int used = 0, seen = 0;

	if (!c->img || !p)
		return -1;
	if (cfg_build(c->img, p, &cfg, &err) < 0) {
		prof_db_note(c->v->db, "%s: its arguments are not checked", err.msg);
		return -1;
	}
	for (size_t i = 0; i < cfg->ninsns && seen != 0x3f; i++) {
		const struct cfg_insn *in = &cfg->insns[i];

		if (in->addr < entry_va)
			continue;
		for (int a = 0; a < 6; a++) {
			uint64_t bit = CFG_RBIT(arg_regs[a]);

			if (seen & (1 << a))
				continue;
			if (in->regs_read & bit)
				used |= 1 << a;
			if ((in->regs_read | in->regs_written) & bit)
				seen |= 1 << a;
		}
	}
	cfg_free(cfg);
	return used;
}

/* Does the instruction at off read memory?  Unknown (no code) counts as yes. */
static int is_load(const struct rv_ctx *c, uint64_t off)
{
	struct cfg_insn in;

	if (rv_decode(c, off, &in) < 0)
		return 1;
	return (in.flags & CFG_I_LOAD) != 0;
}

/* Loads from the stack: pop, or a memory operand based on rsp (a spill, a
 * saved register, a local). */
static int is_stack_load(const struct rv_ctx *c, uint64_t off)
{
	struct cfg_insn in;

	if (rv_decode(c, off, &in) < 0)
		return 0;
	return !strncmp(in.mnemonic, "pop", 3) || (in.nmem && in.mem.base == CFG_R_RSP);
}

/* Is target (tagged code) in the same procedure as the site at off? */
static int same_proc(const struct rv_ctx *c, uint64_t off, uint64_t target)
{
	const struct img_proc *a, *b;
	uint64_t va;

	if (target == VAL_CODE_NONE || target >> VAL_TAG_SHIFT)
		return 0;
	a = rv_proc_at(c, off, &va);
	b = rv_proc_at(c, target & VAL_OFFSET_MASK, &va);
	return a && a == b;
}

/* The entry being collected: its procedure, time and checked arguments. */
struct vs_proc {
	uint64_t off;
	const struct img_proc *p;
	struct rv_time t;
	int used;			/* args_read */
	struct rv_args args;		/* its parameters from DWARF */
};

static void vs_proc_at(const struct rv_ctx *c, uint64_t off, struct vs_proc *e)
{
	uint64_t va, lo, hi;

	e->off = off;
	e->p = rv_proc_at(c, off, &va);
	if (e->p && rv_proc_range(c, e->p, &lo, &hi) == 0)
		rv_time(c, lo, hi, &e->t);
	else
		rv_time(c, off, off + 1, &e->t);
	e->used = args_read(c, e->p, va);
	rv_args(c, off, &e->args);
}

/* Add list h to s when it is a candidate (e: the entry h's arguments are at). */
static int vs_consider(const struct rv_ctx *c, const struct val_hotlist *h, struct vs_proc *e,
		       struct vs_list *s)
{
	double share = rv_top_share(h);
	enum rep_val_class cls = rep_val_classify(share);
	const struct img_proc *p;
	struct vs_entry *x;
	enum vs_kind k;
	uint64_t va;

	if (h->kind >= VAL_ARG0 && h->kind <= VAL_ARG5) {
		if (cls == REP_VAL_VARIANT)
			return 0;
		if (e->off != h->offset)
			vs_proc_at(c, h->offset, e);
		if (e->used >= 0 && !(e->used & (1 << (h->kind - VAL_ARG0))))
			return 0;
		if (!rv_arg_label(&e->args, (int)(h->kind - VAL_ARG0), NULL, 0, NULL, 0))
			return 0;
		k = VS_ARG;
	} else if (h->kind == VAL_LOAD && cls == REP_VAL_INV) {
		k = VS_LOAD;
	} else if (h->kind == VAL_STRIDE && cls == REP_VAL_INV && h->t[0].value &&
		   is_load(c, h->offset)) {
		k = VS_STRIDE;
	} else if (h->kind == VAL_TARGET && cls != REP_VAL_VARIANT) {
		k = VS_TARGET;
	} else {
		return 0;
	}
	if (!(x = vs_add(s)))
		return -ENOMEM;
	x->kind = k;
	x->c = *c;
	x->h = h;
	x->share = share;
	rv_place(c, h->offset, x->where, sizeof(x->where));
	if (k == VS_ARG) {
		x->t = e->t;
		x->checked = e->used >= 0;
		x->named = e->args.dwarf;
		rv_arg_label(&e->args, (int)(h->kind - VAL_ARG0), x->arg, sizeof(x->arg),
			     x->argname, sizeof(x->argname));
		x->callsite = val_profile_find(c->vp, h->offset, VAL_CALLSITE);
	} else {
		rv_time(c, h->offset, h->offset + 1, &x->t);
	}
	if (k == VS_LOAD)
		x->stack = is_stack_load(c, h->offset);
	if (k == VS_TARGET) {
		struct cfg_insn in;

		x->jump = rv_decode(c, h->offset, &in) == 0 && !(in.flags & CFG_I_CALL);
		x->local = same_proc(c, h->offset, h->t[0].value);
	}
	x->stake = rv_weight(&x->t) * (k == VS_ARG || k == VS_TARGET ? share : 1);
	p = rv_proc_at(c, h->offset, &va);
	snprintf(x->proc, sizeof(x->proc), "%s", p ? p->name : x->where);
	return 0;
}

/* The candidates of image i (in [lo, hi) when want). */
static int vs_collect(struct rep_vals *v, size_t i, int want, uint64_t lo, uint64_t hi,
		      unsigned min_seen, struct vs_list *s)
{
	const struct val_profile *vp = &v->vp[i];
	struct vs_proc e = { .off = UINT64_MAX, .used = -1 };
	struct rv_ctx c;
	int rc = 0;

	rv_image_ctx(v, vp, &c);
	for (size_t k = 0; k < vp->nlists && rc == 0; k++) {
		const struct val_hotlist *h = &vp->lists[k];

		if (want && (h->offset < lo || h->offset >= hi))
			continue;
		if (h->n && h->seen >= min_seen)
			rc = vs_consider(&c, h, &e, s);
	}
	return rc;
}

/* A user-space address of this machine's layout (heap, mappings, stack),
 * as pointers look: not a number a compiler could fold. */
static int looks_like_address(uint64_t v)
{
	return v >= 0x10000000 && v < (UINT64_C(1) << 47);
}

static void suggestion(const struct vs_entry *x, char *buf, size_t len)
{
	char val[512];
	const char *a = x->argname;

	rv_value_text(&x->c, x->h->kind, x->h->t[0].value, val, sizeof(val));
	switch (x->kind) {
	case VS_ARG:
		if (x->share >= REP_VAL_INVARIANT && looks_like_address(x->h->t[0].value))
			snprintf(buf, len, "%s is the same address (%s) in every call of %s "
				 "sampled: an object fixed for the run, not a constant to clone "
				 "for (addresses change from run to run); hoist the loads "
				 "through it out of the caller's loop, or pass what is loaded",
				 a, val, x->proc);
		else if (x->share >= REP_VAL_INVARIANT)
			snprintf(buf, len, "clone %s for %s == %s (constant-propagate it)",
				 x->proc, a, val);
		else
			snprintf(buf, len, "guard: if (%s == %s) a specialized copy, else the "
				 "general one", a, val);
		break;
	case VS_LOAD:
		if (x->stack)
			snprintf(buf, len, "the load at %s always reads %s (%.1f%%) from the stack "
				 "(a spill, a saved register or a local): the value is what is "
				 "invariant; specialize where it is computed", x->where, val,
				 100 * x->share);
		else
			snprintf(buf, len, "the load at %s always reads %s (%.1f%%): if the "
				 "location is not written in the loop, hoist it or fold the "
				 "constant", x->where, val, 100 * x->share);
		break;
	case VS_STRIDE:
		snprintf(buf, len, "constant stride %s: a prefetch candidate (see dcpi "
			 "prefetch-hints)", val);
		break;
	case VS_TARGET:
		if (x->h->t[0].value == VAL_CODE_NONE)
			snprintf(buf, len, "the target is in no image (generated code?): promote "
				 "only if its address is fixed");
		else if (x->local)
			snprintf(buf, len, "a dispatch in %s: test for %s (%.1f%%) before the "
				 "indirect jump", x->proc, val, 100 * x->share);
		else
			snprintf(buf, len, "promote: compare the target with %s and %s %s "
				 "directly (inline it)", val, x->jump ? "jump to" : "call", val);
		break;
	}
}

static void num_json(FILE *f, const char *name, double x, int known)
{
	fprintf(f, ", \"%s\": ", name);
	if (known)
		fprintf(f, "%.17g", x);
	else
		fprintf(f, "null");
}

static void entry_json(FILE *f, const struct vs_entry *x)
{
	const struct val_hotlist *h = x->h;
	char text[1536];
	const char *path;
	uint64_t va;

	fprintf(f, "\n  {\"kind\": \"%s\", \"procedure\": ", vs_kind_names[x->kind]);
	rep_json_str(f, x->proc);
	fprintf(f, ", \"site\": ");
	rep_json_str(f, x->where);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, x->c.vp->image.path);
	fprintf(f, ", \"offset\": \"0x%" PRIx64 "\", \"address\": ", h->offset);
	if (x->c.img && img_offset_to_vaddr(x->c.img, h->offset, &va) == 0)
		fprintf(f, "\"0x%" PRIx64 "\"", va);
	else
		fprintf(f, "null");
	if (x->kind == VS_ARG) {
		int a = (int)h->kind - VAL_ARG0;

		fprintf(f, ", \"argument\": \"arg%d\", \"register\": \"%s\", "
			"\"arguments_checked\": %s", a, arg_reg_names[a],
			x->checked ? "true" : "false");
		if (x->named) {
			fprintf(f, ", \"name\": ");
			rep_json_str(f, x->argname);
		}
	}
	path = rv_value_text(&x->c, h->kind, h->t[0].value, text, sizeof(text));
	fprintf(f, ", \"value\": \"0x%" PRIx64 "\", \"value_text\": ", h->t[0].value);
	rep_json_str(f, text);
	if (x->kind == VS_LOAD)
		fprintf(f, ", \"stack\": %s", x->stack ? "true" : "false");
	if (h->kind == VAL_TARGET) {
		fprintf(f, ", \"jump\": %s", x->jump ? "true" : "false");
		fprintf(f, ", \"value_image\": ");
		rep_json_str_or_null(f, path);
	}
	fprintf(f, ", \"share\": %.6g, \"class\": \"%s\", \"seen\": %" PRIu64, x->share,
		rep_val_class_name(rep_val_classify(x->share)), h->seen);
	num_json(f, "samples", x->t.samples, 1);
	num_json(f, "cycles", x->t.cycles, x->t.have_cycles);
	num_json(f, "at_stake", x->stake, 1);
	fprintf(f, ", \"at_stake_unit\": \"%s\"", x->t.have_cycles ? "cycles" : "samples");
	if (x->kind == VS_ARG) {
		fprintf(f, ", \"call_sites\": [");
		for (uint32_t i = 0; x->callsite && i < x->callsite->n; i++) {
			rv_code_text(&x->c, x->callsite->t[i].value, text, sizeof(text));
			fprintf(f, "%s{\"site\": ", i ? ", " : "");
			rep_json_str(f, text);
			fprintf(f, ", \"share\": %.6g}", val_hotlist_share(x->callsite, i));
		}
		fprintf(f, "]");
	}
	suggestion(x, text, sizeof(text));
	fprintf(f, ", \"suggestion\": ");
	rep_json_str(f, text);
	fprintf(f, "}");
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static void entry_text(FILE *f, size_t rank, const struct vs_entry *x)
{
	const struct val_hotlist *h = x->h;
	char val[512], text[1536];
	struct cfg_insn in;

	rv_value_text(&x->c, h->kind, h->t[0].value, val, sizeof(val));
	fprintf(f, "\n%zu. %-8s  ", rank, vs_kind_names[x->kind]);
	if (x->kind == VS_ARG)
		fprintf(f, "%s %s", x->proc, x->arg);
	else
		fprintf(f, "%s", x->where);
	fprintf(f, " = %s  %.1f%% %s, %" PRIu64 " seen  [%s]\n", val, 100 * x->share,
		rep_val_class_name(rep_val_classify(x->share)), h->seen,
		base_name(x->c.vp->image.path));
	if (x->kind != VS_ARG && rv_decode(&x->c, h->offset, &in) == 0)
		fprintf(f, "   %s\n", cfg_insn_text(&in, text, sizeof(text)));
	fprintf(f, "   at stake %.4g %s: %s %.0f samples", x->stake,
		x->t.have_cycles ? "cycles" : "samples",
		x->kind == VS_ARG ? "the procedure's" : "the instruction's", x->t.samples);
	if (x->t.have_cycles)
		fprintf(f, ", %.4g cycles", x->t.cycles);
	if (x->kind == VS_ARG || x->kind == VS_TARGET)
		fprintf(f, " x %.1f%%", 100 * x->share);
	fprintf(f, "\n");
	if (x->kind == VS_ARG && !x->checked)
		fprintf(f, "   (arguments not checked: the procedure's code could not be read)\n");
	if (x->kind == VS_ARG && x->callsite) {
		fprintf(f, "   called from ");
		for (uint32_t i = 0; i < x->callsite->n && i < REP_VAL_TOP; i++) {
			rv_code_text(&x->c, x->callsite->t[i].value, text, sizeof(text));
			fprintf(f, "%s%s (%.1f%%)", i ? ", " : "", text,
				100 * val_hotlist_share(x->callsite, i));
		}
		fprintf(f, "%s\n", x->callsite->n > REP_VAL_TOP ? ", ..." : "");
	}
	suggestion(x, text, sizeof(text));
	fprintf(f, "   -> %s\n", text);
}

int rep_vspecialize(FILE *f, struct rep_vals *v, const char *proc, int json, unsigned min_seen,
		    struct dcpi_err *err)
{
	const struct img_proc *p = NULL;
	struct vs_list s = { 0 };
	uint64_t lo = 0, hi = 0;
	size_t which = 0;
	int rc;

	if (proc) {
		struct rv_ctx c;

		if ((rc = rv_find_proc_range(v, proc, &which, &p, &c, &lo, &hi, err)) < 0)
			return rc;
	}
	for (size_t i = 0; i < v->nvp; i++) {
		if (proc && i != which)
			continue;
		if (vs_collect(v, i, proc != NULL, lo, hi, min_seen, &s) < 0) {
			free(s.e);
			return dcpi_errf(err, -ENOMEM, "out of memory");
		}
	}
	dcpi_qsort(s.e, s.n, sizeof(*s.e), cmp_entry);
	if (json) {
		rv_json_head(f, v);
		fprintf(f, ", \"min_seen\": %u, \"entries\": [", min_seen);
		for (size_t i = 0; i < s.n; i++) {
			fprintf(f, i ? "," : "");
			entry_json(f, &s.e[i]);
		}
		fprintf(f, "\n]}\n");
	} else {
		fprintf(f, "dcpi specialize: epoch %s, event %s; lists seen at least %u times, "
			"by time at stake\n", v->epoch, v->event ? v->event : "(none)", min_seen);
		if (!s.n)
			fprintf(f, "(no specialization candidates%s%s)\n", proc ? " in " : "",
				proc ? proc : "");
		for (size_t i = 0; i < s.n; i++)
			entry_text(f, i + 1, &s.e[i]);
	}
	free(s.e);
	return 0;
}
