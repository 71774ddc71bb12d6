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
 *
 * BOLT names a local (static) function "name/N", N counting the local
 * functions of that name in address order (what perf2bolt writes), so local
 * names are read from .symtab and numbered the same way.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

struct local {
	uint64_t addr;
	char *name;		/* "name/N" */
};

struct bolt {
	struct opt_buf b;
	size_t records;
	struct local *loc;	/* local functions, by address */
	size_t nloc;
};

static int cmp_local(const void *a, const void *b)
{
	const struct local *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void locals_free(struct bolt *bo)
{
	for (size_t i = 0; i < bo->nloc; i++)
		free(bo->loc[i].name);
	free(bo->loc);
}

static char *read_at(int fd, uint64_t off, uint64_t len)
{
	char *p = len && len < (1u << 30) ? malloc(len + 1) : NULL;

	if (p && pread(fd, p, len, (off_t)off) != (ssize_t)len) {
		free(p);
		return NULL;
	}
	if (p)
		p[len] = 0;
	return p;
}

/* Local STT_FUNC symbols of .symtab, numbered per name in address order.
 * No .symtab (stripped): none, and BOLT has no local names either. */
static int locals_load(const struct image *img, struct bolt *bo)
{
	const struct img_section *st = img_section_by_name(img, ".symtab");
	const struct img_section *ss = img_section_by_name(img, ".strtab");
	Elf64_Sym *sym;
	char *strs;
	size_t n;
	int fd;

	if (!st || !ss)
		return 0;
	fd = open(img_path(img), O_RDONLY);
	if (fd < 0)
		return 0;
	sym = (Elf64_Sym *)read_at(fd, st->offset, st->size);
	strs = read_at(fd, ss->offset, ss->size);
	close(fd);
	n = sym ? st->size / sizeof(*sym) : 0;
	bo->loc = calloc(n + 1, sizeof(*bo->loc));
	for (size_t i = 0; bo->loc && strs && i < n; i++) {
		if (ELF64_ST_BIND(sym[i].st_info) != STB_LOCAL ||
		    ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC || sym[i].st_name >= ss->size)
			continue;
		bo->loc[bo->nloc].addr = sym[i].st_value;
		bo->loc[bo->nloc++].name = strdup(strs + sym[i].st_name);
	}
	free(sym);
	free(strs);
	if (!bo->loc)
		return -ENOMEM;
	dcpi_qsort(bo->loc, bo->nloc, sizeof(*bo->loc), cmp_local);
	for (size_t i = 0; i < bo->nloc; i++) {
		char *q;
		size_t k = 1;

		if (!bo->loc[i].name)
			return -ENOMEM;
		for (size_t j = 0; j < i; j++)
			k += !strncmp(bo->loc[j].name, bo->loc[i].name, strlen(bo->loc[i].name)) &&
			     bo->loc[j].name[strlen(bo->loc[i].name)] == '/';
		if (asprintf(&q, "%s/%zu", bo->loc[i].name, k) < 0)
			return -ENOMEM;
		free(bo->loc[i].name);
		bo->loc[i].name = q;
	}
	return 0;
}

/* The name BOLT gives the function at addr whose symbol is sym. */
static const char *bolt_name(const struct bolt *bo, uint64_t addr, const char *sym)
{
	size_t lo = dcpi_lower_bound(bo->loc, bo->nloc, sizeof(*bo->loc),
				     offsetof(struct local, addr), addr);

	for (; lo < bo->nloc && bo->loc[lo].addr == addr; lo++) {
		size_t n = strlen(sym);

		if (!strncmp(bo->loc[lo].name, sym, n) && bo->loc[lo].name[n] == '/')
			return bo->loc[lo].name;
	}
	return sym;
}

static void record(struct bolt *bo, const char *from, uint64_t foff, const char *to,
		   uint64_t toff, uint64_t count)
{
	opt_buf_printf(&bo->b, "1 %s %llx 1 %s %llx 0 %llu\n", from, (unsigned long long)foff,
		       to, (unsigned long long)toff, (unsigned long long)count);
	bo->records++;
}

/* The callee of a direct call or tail jump at insn, when it starts a
 * procedure; its symbol into name. */
static int callee(const struct image *img, const struct bolt *bo, const struct cfg_insn *in,
		  char *name, size_t len)
{
	const struct img_proc *t;

	if ((in->flags & CFG_I_INDIRECT) || !in->target)
		return 0;
	t = img_proc_at(img, in->target);
	if (!t || t->addr != in->target || t->source == IMG_SRC_PLT)
		return 0;
	snprintf(name, len, "%s", bolt_name(bo, t->addr, t->raw_name));
	return 1;
}

static int add_proc(struct image *img, const struct img_proc *proc, struct est_analysis *a,
		    void *ctx, struct dcpi_err *err)
{
	const struct cfg *cfg = a->cfg;
	struct est_result *r = &a->r;
	struct bolt *bo = ctx;
	const char *me = bolt_name(bo, proc->addr, proc->raw_name);
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
			if (callee(img, bo, last, to, sizeof(to)))
				record(bo, me, last->addr - proc->addr, to, 0, c);
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; i < cfg->ninsns; i++) {
		const struct cfg_insn *in = &cfg->insns[i];
		uint64_t c = opt_count(r->insns[i].executions);

		if (c && (in->flags & CFG_I_CALL) && callee(img, bo, in, to, sizeof(to)))
			record(bo, me, in->addr - proc->addr, to, 0, c);
	}
	return bo->b.oom ? dcpi_errf(err, -ENOMEM, "BOLT profile: out of memory") : 0;
}

int opt_bolt_text(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  char **out, size_t *len, struct opt_walk *w, struct dcpi_err *err)
{
	struct bolt bo;
	int rc;

	memset(&bo, 0, sizeof(bo));
	*out = NULL;
	*len = 0;
	if (locals_load(img, &bo) < 0) {
		locals_free(&bo);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
	}
	rc = opt_each_proc(img, p, e, add_proc, &bo, w, err);
	locals_free(&bo);
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
