/*
 * bolt_prof.c - BOLT's fdata profile (llvm-bolt -data=FILE) from estimated
 * edge counts (DCPI paper sec. 6.1.4: counts that conserve flow), where
 * perf2bolt needs hardware branch records.  One line per branch:
 *
 *   1 <function> <offset> 1 <function> <offset> <mispredicts> <count>
 *
 * offsets in hex from the function's start.  A taken edge runs from its
 * block's last instruction (the branch) to the target block; a fall-through
 * edge from the last instruction to the next block, which BOLT takes as a
 * fall-through because the source is not a taken branch to there.  Direct
 * calls and tail calls are records into the callee's entry (BOLT's call
 * graph for function ordering).  Mispredicts are not estimated: 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct bolt {
	struct opt_buf b;
	size_t records;
};

static void record(struct bolt *bo, const char *from, uint64_t foff, const char *to,
		   uint64_t toff, uint64_t count)
{
	opt_buf_printf(&bo->b, "1 %s %llx 1 %s %llx 0 %llu\n", from, (unsigned long long)foff,
		       to, (unsigned long long)toff, (unsigned long long)count);
	bo->records++;
}

/* The callee of a direct call or tail jump at insn, when it starts a
 * procedure; its symbol into name. */
static int callee(const struct image *img, const struct cfg_insn *in, char *name, size_t len)
{
	const struct img_proc *t;

	if ((in->flags & CFG_I_INDIRECT) || !in->target)
		return 0;
	t = img_proc_at(img, in->target);
	if (!t || t->addr != in->target || t->source == IMG_SRC_PLT)
		return 0;
	snprintf(name, len, "%s", t->raw_name);
	return 1;
}

static int add_proc(struct image *img, const struct img_proc *proc, const struct cfg *cfg,
		    const struct est_result *r, void *ctx, struct dcpi_err *err)
{
	struct bolt *bo = ctx;
	const char *me = proc->raw_name;
	char to[512];

	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];
		const struct cfg_block *fb = &cfg->blocks[ed->from];
		const struct cfg_insn *last;
		uint64_t c = opt_count(r->edges[e].executions);

		if (!c || !fb->n)
			continue;
		last = &cfg->insns[fb->first + fb->n - 1];
		switch (ed->kind) {
		case CFG_E_TAKEN:
		case CFG_E_JUMP:
		case CFG_E_TABLE:
		case CFG_E_FALLTHROUGH:
		case CFG_E_NOT_TAKEN:
			if (ed->to == cfg->exit)
				break;
			record(bo, me, last->addr - proc->addr, me,
			       cfg->blocks[ed->to].start - proc->addr, c);
			break;
		case CFG_E_TAILCALL:
			if (callee(img, last, to, sizeof(to)))
				record(bo, me, last->addr - proc->addr, to, 0, c);
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; i < cfg->ninsns; i++) {
		const struct cfg_insn *in = &cfg->insns[i];
		uint64_t c = opt_count(r->insns[i].executions);

		if (c && (in->flags & CFG_I_CALL) && callee(img, in, to, sizeof(to)))
			record(bo, me, in->addr - proc->addr, to, 0, c);
	}
	return bo->b.oom ? dcpi_errf(err, -ENOMEM, "BOLT profile: out of memory") : 0;
}

int opt_bolt_text(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  char **out, size_t *len, struct opt_walk *w, struct dcpi_err *err)
{
	struct bolt bo = { { 0 }, 0 };
	int rc;

	*out = NULL;
	*len = 0;
	rc = opt_each_proc(img, p, e, add_proc, &bo, w, err);
	if (rc >= 0 && !bo.records)
		rc = dcpi_errf(err, -ENODATA, "%s: no estimated branch executed", img_path(img));
	if (rc < 0) {
		free(bo.b.s);
		return rc;
	}
	*out = bo.b.s;
	*len = bo.b.len;
	return 0;
}
