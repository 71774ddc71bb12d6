/*
 * source.c - estimated executions (DCPI paper sec. 6.1) mapped to source
 * locations the way sample-profile compilers key them (AutoFDO, Chen et al.,
 * CGO 2016): a function by its linkage name, a location by
 * (line - DW_AT_decl_line, discriminator), and an inlined call by its call
 * site's location holding the inlinee's own profile.
 *
 * Each executed instruction is placed by its inline stack (outermost first,
 * image.h img_inlines_at) and its line row: the stack walks down the nested
 * functions from the procedure's, and the line lands in the innermost.  A
 * location's count is the largest count of its instructions.  Direct calls
 * that were not inlined add a call target at their location.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct opt_func *func_new(const char *name, uint32_t decl)
{
	struct opt_func *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->name = strdup(name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	f->decl_line = decl;
	return f;
}

static void func_free(struct opt_func *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nlocs; i++) {
		for (size_t k = 0; k < f->locs[i].ntargets; k++)
			free(f->locs[i].targets[k].name);
		free(f->locs[i].targets);
	}
	for (size_t i = 0; i < f->ncalls; i++)
		func_free(f->calls[i].callee);
	free(f->locs);
	free(f->calls);
	free(f->name);
	free(f);
}

void opt_src_free(struct opt_src *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfuncs; i++)
		func_free(s->funcs[i]);
	free(s->funcs);
	free(s);
}

/* Room for element n of an array whose capacity is 4, 8, 16, ...: it
 * grows when n is 0 or a power of two from 4 on. */
static int grow(void **arr, size_t n, size_t sz)
{
	void *q;

	if (n && (n < 4 || (n & (n - 1))))
		return 0;
	q = realloc(*arr, (n ? 2 * n : 4) * sz);
	if (!q)
		return -ENOMEM;
	*arr = q;
	return 0;
}

static struct opt_loc *loc_get(struct opt_func *f, uint32_t off, uint32_t discr)
{
	for (size_t i = 0; i < f->nlocs; i++)
		if (f->locs[i].offset == off && f->locs[i].discr == discr)
			return &f->locs[i];
	if (grow((void **)&f->locs, f->nlocs, sizeof(*f->locs)))
		return NULL;
	memset(&f->locs[f->nlocs], 0, sizeof(*f->locs));
	f->locs[f->nlocs].offset = off;
	f->locs[f->nlocs].discr = discr;
	return &f->locs[f->nlocs++];
}

static struct opt_func *call_get(struct opt_func *f, uint32_t off, uint32_t discr,
				 const char *name, uint32_t decl)
{
	struct opt_func *c;

	for (size_t i = 0; i < f->ncalls; i++)
		if (f->calls[i].offset == off && f->calls[i].discr == discr &&
		    !strcmp(f->calls[i].callee->name, name))
			return f->calls[i].callee;
	if (grow((void **)&f->calls, f->ncalls, sizeof(*f->calls)))
		return NULL;
	c = func_new(name, decl);
	if (!c)
		return NULL;
	f->calls[f->ncalls].offset = off;
	f->calls[f->ncalls].discr = discr;
	f->calls[f->ncalls++].callee = c;
	return c;
}

/* A call target at l: count kept as the largest seen (copies of one call
 * site by line), or added up (sum: a probe's copies are one call's parts). */
static int target_add(struct opt_loc *l, const char *name, uint64_t count, int sum)
{
	for (size_t i = 0; i < l->ntargets; i++)
		if (!strcmp(l->targets[i].name, name)) {
			if (sum)
				l->targets[i].count += count;
			else if (count > l->targets[i].count)
				l->targets[i].count = count;
			return 0;
		}
	if (grow((void **)&l->targets, l->ntargets, sizeof(*l->targets)))
		return -ENOMEM;
	l->targets[l->ntargets].name = strdup(name);
	if (!l->targets[l->ntargets].name)
		return -ENOMEM;
	l->targets[l->ntargets++].count = count;
	return 0;
}

/* LLVM's base discriminator (DILocation::getBaseDiscriminatorFromDiscriminator,
 * the prefix encoding): the duplication factor and copy id are dropped. */
uint32_t opt_llvm_base_discr(uint32_t d)
{
	if (d & 1)
		return 0;
	d >>= 1;
	return (d & 0x20) ? (((d >> 1) & 0xfe0) | (d & 0x1f)) : (d & 0x1f);
}

/* LLVM's duplication factor (DILocation::getDuplicationFactorFromDiscriminator):
 * the second component of the encoding, 1 when absent.  The unroller and the
 * vectorizer multiply it into every copy they make under
 * -fdebug-info-for-profiling: one execution of such an instruction stands for
 * that many executions of its source line, and the sample loader expects the
 * line's count in source executions (AutoFDO and llvm-profgen multiply too). */
uint32_t opt_llvm_dup_factor(uint32_t d)
{
	uint32_t f;

	d = (d & 1) ? d >> 1 : d >> ((d & 0x40) ? 14 : 7);
	if (d & 1)
		return 1;
	d >>= 1;
	f = (d & 0x20) ? (((d >> 1) & 0xfe0) | (d & 0x1f)) : (d & 0x1f);
	return f ? f : 1;
}

static uint32_t map_discr(enum opt_discr how, uint32_t d)
{
	switch (how) {
	case OPT_D_LLVM_BASE: return opt_llvm_base_discr(d);
	case OPT_D_NONE: return 0;
	default: return d;
	}
}

struct build {
	struct opt_src *s;
	enum opt_discr discr;
	int raw;		/* samples, not executions */
	const struct opt_probes *probes;	/* probe-based (LLVM), or NULL */
};

static struct opt_func *top_get(struct opt_src *s, const char *name, uint32_t decl)
{
	struct opt_func *f;

	for (size_t i = 0; i < s->nfuncs; i++)
		if (!strcmp(s->funcs[i]->name, name))
			return s->funcs[i];
	if (grow((void **)&s->funcs, s->nfuncs, sizeof(*s->funcs)))
		return NULL;
	f = func_new(name, decl);
	if (f)
		s->funcs[s->nfuncs++] = f;
	return f;
}

/* The target a direct call names, as the compiler knows it; "" if none. */
static void call_target(const struct image *img, const struct cfg_insn *in, char *out,
			size_t len)
{
	const struct img_proc *t;

	out[0] = 0;
	if (!(in->flags & CFG_I_CALL) || (in->flags & CFG_I_INDIRECT) || !in->target)
		return;
	t = img_proc_at(img, in->target);
	if (t && t->addr == in->target)
		opt_base_name(t->raw_name, out, len);
}

/* Place one executed instruction. */
static int place(struct build *b, struct image *img, struct opt_func *top,
		 const struct cfg_insn *in, uint64_t count)
{
	const struct img_inline *inl;
	struct opt_func *f = top;
	struct img_line ln;
	struct opt_loc *l;
	uint64_t line_count;
	char tgt[512];
	size_t n = 0;

	if (img_line_at(img, in->addr, &ln) < 0) {
		b->s->no_line++;
		return 0;
	}
	if (img_inlines_at(img, in->addr, &inl, &n) < 0)
		n = 0;
	for (size_t k = 0; k < n; k++) {
		if (inl[k].call_line < f->decl_line || !inl[k].decl_line) {
			b->s->no_line++;
			return 0;
		}
		f = call_get(f, inl[k].call_line - f->decl_line,
			     map_discr(b->discr, inl[k].discriminator), inl[k].name,
			     inl[k].decl_line);
		if (!f)
			return -ENOMEM;
	}
	if (ln.line < f->decl_line) {
		b->s->no_line++;
		return 0;
	}
	l = loc_get(f, ln.line - f->decl_line, map_discr(b->discr, ln.discriminator));
	if (!l)
		return -ENOMEM;
	/* the line's count is the most any of its instructions stands for; a
	 * call's own executions go to its target */
	line_count = count;
	if (b->discr == OPT_D_LLVM_BASE)
		line_count *= opt_llvm_dup_factor(ln.discriminator);
	if (line_count > l->count)
		l->count = line_count;
	call_target(img, in, tgt, sizeof(tgt));
	if (tgt[0] && target_add(l, tgt, count, 0) < 0)
		return -ENOMEM;
	return 0;
}

int opt_src_target(struct opt_src *s, struct image *img, const struct img_proc *proc,
		   const struct cfg_insn *in, uint64_t count, const char *target,
		   uint64_t value, struct dcpi_err *err)
{
	const struct img_inline *inl;
	struct opt_func *f;
	struct img_line decl, ln;
	struct opt_loc *l;
	char name[512];
	size_t n = 0;

	if (img_decl_line(img, proc->addr, &decl) < 0 || !decl.line)
		return dcpi_errf(err, -ENODATA, "%s: no DW_AT_decl_line (build with -g)",
				 proc->name);
	if (img_line_at(img, in->addr, &ln) < 0)
		return dcpi_errf(err, -ENODATA, "0x%llx: no line (build with -g)",
				 (unsigned long long)in->addr);
	opt_base_name(proc->raw_name, name, sizeof(name));
	f = top_get(s, name, decl.line);
	if (!f)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	if (img_inlines_at(img, in->addr, &inl, &n) < 0)
		n = 0;
	for (size_t k = 0; k < n; k++) {
		if (inl[k].call_line < f->decl_line || !inl[k].decl_line)
			return dcpi_errf(err, -ENODATA, "0x%llx: inlined from %s without lines",
					 (unsigned long long)in->addr, inl[k].name);
		f = call_get(f, inl[k].call_line - f->decl_line,
			     map_discr(s->discr, inl[k].discriminator), inl[k].name,
			     inl[k].decl_line);
		if (!f)
			return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	if (ln.line < f->decl_line)
		return dcpi_errf(err, -ENODATA, "0x%llx: line %u before its function's %u",
				 (unsigned long long)in->addr, ln.line, f->decl_line);
	l = loc_get(f, ln.line - f->decl_line, map_discr(s->discr, ln.discriminator));
	if (!l || target_add(l, target, value, 0) < 0)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	if (count > l->count)
		l->count = count;
	return 0;
}

/* What the writers count: executions, or samples (--raw-samples). */
static uint64_t insn_count(const struct build *b, const struct est_result *r, size_t i)
{
	return opt_count(b->raw ? r->insns[i].samples : r->insns[i].executions);
}

/* The procedure's entries: its entry block's count. */
static uint64_t head_of(const struct build *b, const struct cfg *cfg, const struct est_result *r)
{
	return opt_count(b->raw ? r->blocks[cfg->entry].samples :
			 r->blocks[cfg->entry].executions);
}

static int add_proc(struct image *img, const struct img_proc *proc, struct est_analysis *a,
		    void *ctx, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	struct est_result *r = &a->r;
	struct build *b = ctx;
	struct opt_func *top;
	struct img_line decl;
	char name[512];
	uint64_t head;

	if (img_decl_line(img, proc->addr, &decl) < 0 || !decl.line) {
		b->s->no_decl++;
		return 0;
	}
	opt_base_name(proc->raw_name, name, sizeof(name));
	top = top_get(b->s, name, decl.line);
	if (!top)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
	/* The procedure's own entry, not a split-off part's (.cold). */
	head = head_of(b, cfg, r);
	if (!strchr(proc->raw_name, '.') && head > top->head)
		top->head = head;
	for (size_t i = 0; i < cfg->ninsns; i++) {
		uint64_t c = insn_count(b, r, i);

		if (!c || (cfg->insns[i].flags & CFG_I_NOP))
			continue;
		if (place(b, img, top, &cfg->insns[i], c) < 0)
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
	}
	return 0;
}

/* ---- pseudo probes (probes.c) -------------------------------------------- */

/*
 * A probe-based profile (llvm-profgen's for one without contexts): every probe
 * in the procedure counts the executions of the instruction it marks, summed
 * over its copies (unrolled or duplicated code keeps the index), in the
 * function of its inline node, nested under the call-site probes of the
 * nodes above it; a probe whose block did not run counts 0, which tells the
 * compiler the block is cold.  Names and CFG checksums come from
 * .pseudo_probe_desc.  A direct call's probe also names the callee it
 * reaches when the call was not inlined.
 */
static int add_proc_probes(struct image *img, const struct img_proc *proc,
			   struct est_analysis *a, void *ctx, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	struct est_result *r = &a->r;
	struct build *b = ctx;
	const struct opt_probes *pp = b->probes;
	uint64_t own = dcpi_md5_guid(proc->raw_name, strlen(proc->raw_name));
	uint64_t head = head_of(b, cfg, r);
	char tgt[512];

	for (size_t i = opt_probes_first(pp, proc->addr);
	     i < pp->n && pp->v[i].addr < proc->addr + proc->size; i++) {
		const struct opt_probe *p = &pp->v[i];
		uint32_t path[257];
		size_t depth = 0;
		const struct opt_pdesc *d;
		struct opt_func *f;
		struct opt_loc *l;
		long k = cfg_insn_at(cfg, p->addr);
		uint64_t c = 0;

		for (uint32_t n = p->node; n != UINT32_MAX && depth < 257; n = pp->nodes[n].parent)
			path[depth++] = n;
		if (!depth || pp->nodes[path[depth - 1]].parent != UINT32_MAX)
			continue;
		if (k >= 0)
			c = insn_count(b, r, (size_t)k);
		d = opt_probes_desc(pp, pp->nodes[path[depth - 1]].guid);
		if (!d) {
			b->s->no_probe++;
			continue;
		}
		f = top_get(b->s, d->name, 0);
		if (!f)
			goto oom;
		f->checksum = d->hash;
		if (d->guid == own && head > f->head)
			f->head = head;
		for (size_t j = depth - 1; j-- > 0;) {
			const struct opt_pnode *n = &pp->nodes[path[j]];

			d = opt_probes_desc(pp, n->guid);
			if (!d)
				break;
			f = call_get(f, n->site, 0, d->name, 0);
			if (!f)
				goto oom;
			f->checksum = d->hash;
		}
		if (!d) {
			b->s->no_probe++;
			continue;
		}
		l = loc_get(f, p->index, 0);
		if (!l)
			goto oom;
		l->count += c;
		if (p->type != 2 || k < 0 || !c)
			continue;
		call_target(img, &cfg->insns[k], tgt, sizeof(tgt));
		if (tgt[0] && target_add(l, tgt, c, 1) < 0)
			goto oom;
	}
	return 0;
oom:
	return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
}

/* LLVM's order of a function's lines: line offset, then discriminator. */
static int cmp_line(uint32_t xoff, uint32_t xdiscr, uint32_t yoff, uint32_t ydiscr)
{
	if (xoff != yoff)
		return xoff < yoff ? -1 : 1;
	return xdiscr < ydiscr ? -1 : xdiscr > ydiscr;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct opt_loc *x = a, *y = b;

	return cmp_line(x->offset, x->discr, y->offset, y->discr);
}

static int cmp_call(const void *a, const void *b)
{
	const struct opt_callsite *x = a, *y = b;
	int c = cmp_line(x->offset, x->discr, y->offset, y->discr);

	return c ? c : strcmp(x->callee->name, y->callee->name);
}

static int cmp_target(const void *a, const void *b)
{
	const struct opt_target *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sort, and total = own locations + inlinees' totals.  Inlined instances
 * that ran nothing are dropped. */
static void finish(struct opt_func *f)
{
	size_t k = 0;

	f->total = 0;
	for (size_t i = 0; i < f->nlocs; i++) {
		f->total += f->locs[i].count;
		dcpi_qsort(f->locs[i].targets, f->locs[i].ntargets, sizeof(struct opt_target),
			   cmp_target);
	}
	dcpi_qsort(f->locs, f->nlocs, sizeof(*f->locs), cmp_loc);
	for (size_t i = 0; i < f->ncalls; i++) {
		finish(f->calls[i].callee);
		if (!f->calls[i].callee->total) {
			func_free(f->calls[i].callee);
			continue;
		}
		f->total += f->calls[i].callee->total;
		f->calls[k++] = f->calls[i];
	}
	f->ncalls = k;
	dcpi_qsort(f->calls, f->ncalls, sizeof(*f->calls), cmp_call);
}

static int cmp_func(const void *a, const void *b)
{
	const struct opt_func *x = *(struct opt_func *const *)a;
	const struct opt_func *y = *(struct opt_func *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct opt_src *opt_src_new(enum opt_discr discr)
{
	struct opt_src *s = calloc(1, sizeof(*s));

	if (s)
		s->discr = discr;
	return s;
}

int opt_src_add(struct opt_src *s, struct image *img, const struct prof_profile *p,
		const struct opt_est *e, struct dcpi_err *err)
{
	struct build b = { .s = s, .discr = s->discr, .raw = e->raw_samples };
	struct opt_walk w = { 0 };
	struct opt_probes pp;
	int rc, has = 0;

	if (s->want_probes) {
		rc = opt_probes_load(img, &pp, err);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		has = rc == 0;
		if (s->nimages && has != s->probes) {
			if (has)
				opt_probes_free(&pp);
			return dcpi_errf(err, -EINVAL, "%s: %s pseudo probes and an earlier image "
					 "%s: one profile cannot key some functions by probes and "
					 "others by lines", img_path(img), has ? "has" : "has no",
					 has ? "has none" : "has them");
		}
		s->probes = has;
		if (has)
			b.probes = &pp;
	}
	if (!has && !img_has_dwarf(img))
		return dcpi_errf(err, -ENODATA, "%s: no DWARF debug information (build with -g, "
				 "or install its debug file): source-level profiles need lines",
				 img_path(img));
	s->raw_heads |= e->raw_samples;
	rc = opt_each_proc(img, p, e, has ? add_proc_probes : add_proc, &b, &w, err);
	s->nprocs += w.nprocs;
	s->skipped += w.skipped;
	s->samples += w.samples;
	if (has) {
		s->no_probe += pp.unresolved;
		opt_probes_free(&pp);
	}
	s->nimages++;
	return rc;
}

/* Every call target of f and its inlinees, appended to *v. */
static int gather_calls(const struct opt_func *f, struct opt_target **v, size_t *n)
{
	for (size_t i = 0; i < f->nlocs; i++)
		for (size_t t = 0; t < f->locs[i].ntargets; t++) {
			if (grow((void **)v, *n, sizeof(**v)))
				return -ENOMEM;
			(*v)[(*n)++] = f->locs[i].targets[t];
		}
	for (size_t i = 0; i < f->ncalls; i++)
		if (gather_calls(f->calls[i].callee, v, n) < 0)
			return -ENOMEM;
	return 0;
}

static int cmp_target_name(const void *a, const void *b)
{
	return strcmp(((const struct opt_target *)a)->name, ((const struct opt_target *)b)->name);
}

/*
 * A function's head count: the executions of the call instructions that
 * reach it, where the profile has any, else its entry block's estimate.
 * Calls sit in their callers' (larger, hotter) blocks, while a short entry
 * block collects few samples of its own and skid from the call: on bzip2's
 * mainGtU (callgrind: 6,528,650 calls in training) the calls summed to 6.31M
 * (-3%), the entry block to 10.96M (+68%).
 */
static int heads_from_calls(struct opt_src *s)
{
	struct opt_target *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < s->nfuncs; i++)
		if (gather_calls(s->funcs[i], &v, &n) < 0) {
			free(v);
			return -ENOMEM;
		}
	dcpi_qsort(v, n, sizeof(*v), cmp_target_name);
	for (size_t i = 0; i < s->nfuncs; i++) {
		struct opt_target key = { .name = s->funcs[i]->name };
		const struct opt_target *t = n ? bsearch(&key, v, n, sizeof(*v),
							 cmp_target_name) : NULL;
		uint64_t in = 0;

		if (!t)
			continue;
		while (t > v && !strcmp(t[-1].name, key.name))
			t--;
		for (; t < v + n && !strcmp(t->name, key.name); t++)
			in += t->count;
		s->funcs[i]->head = in;
	}
	free(v);
	return 0;
}

int opt_src_finish(struct opt_src *s, struct dcpi_err *err)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nfuncs; i++) {
		finish(s->funcs[i]);
		if (s->funcs[i]->total)
			s->funcs[k++] = s->funcs[i];
		else
			func_free(s->funcs[i]);
	}
	s->nfuncs = k;
	if (!s->raw_heads && heads_from_calls(s) < 0)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	dcpi_qsort(s->funcs, s->nfuncs, sizeof(*s->funcs), cmp_func);
	if (!s->nfuncs)
		return dcpi_errf(err, -ENODATA, "no estimated executions at any source line "
				 "(%zu procedures estimated, %zu without a declaration line, "
				 "%zu executed instructions without a line)", s->nprocs,
				 s->no_decl, s->no_line);
	return 0;
}

int opt_src_build(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  enum opt_discr discr, struct opt_src **out, struct dcpi_err *err)
{
	struct opt_src *s = opt_src_new(discr);
	int rc;

	*out = NULL;
	if (!s)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
	rc = opt_src_add(s, img, p, e, err);
	if (rc >= 0)
		rc = opt_src_finish(s, err);
	if (rc < 0) {
		opt_src_free(s);
		return rc;
	}
	*out = s;
	return 0;
}
