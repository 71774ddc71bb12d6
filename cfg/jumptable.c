/*
 * cfg/jumptable.c - indirect jumps through compiler-generated jump tables
 * (DCPI paper sec. 6.1.1: the CFG must hold every edge, or be marked as
 * missing some).  Recognised, for GCC and Clang at -O2/-O3:
 *
 *   non-PIC   jmp *tbl(,%idx,8)                 8-byte absolute entries
 *             mov tbl(,%idx,8),%r; jmp *%r
 *   PIC       lea tbl(%rip),%b; movslq (%b,%idx,4),%r; add %b,%r; jmp *%r
 *             (either add order, notrack jmp too): 4-byte entries
 *             relative to the table
 *
 * The PIC base may be loaded before a loop: the one `lea` that reaches the
 * jump on every path back from it (a call on the way keeps only the
 * registers a callee saves), else the one value every write of the register
 * in the procedure gives it.
 *
 * The entry count comes from the guarding `cmp $N,%idx; ja default` found by
 * walking back through the jump's block and its single predecessors (the
 * path the builder hands in), following register copies of the index
 * (mov, movl %e,%e, movslq, movzbl after a `cmpb $N,%al`), or, when the index
 * was loaded from memory, a `cmp $N,mem` of the same operand with no store
 * in between (`cmpl $17,0x28(%r12); ja; movl 0x28(%r12),%eax`), the operand
 * followed back through a `lea d(%r),%x` of its base or index register
 * (`cmpl $4,0x30(%rax,%rdx,4); lea 0xc(%rdx),%rcx; ja; mov (%rax,%rcx,4),%ecx`).
 *
 * Entries may leave the procedure: GCC moves unlikely cases to a separate
 * .cold fragment with its own FDE.  Such entries are kept when they land in
 * some procedure of the image; the builder turns them into tail-call edges,
 * as it does the `ja` to the cold default.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define JT_MAX_ENTRIES 65536
#define GPR_MASK 0xffffull

static int only_gpr(uint64_t mask)
{
	mask &= GPR_MASK & ~CFG_RBIT(CFG_R_RSP);
	if (!mask || (mask & (mask - 1)))
		return -1;
	return __builtin_ctzll(mask);
}

/* Index in path of the newest instruction older than from that writes reg. */
static int find_def(const struct cfg_jt_path *path, size_t from, int reg)
{
	for (size_t k = from + 1; k < path->n; k++) {
		const struct cfg_insn *in = path->insn[k];

		if (in->flags & (CFG_I_CALL | CFG_I_INDIRECT))
			return -1;
		if (in->regs_written & CFG_RBIT(reg))
			return (int)k;
	}
	return -1;
}

static int is_table_load8(const struct cfg_insn *in)
{
	return in->nmem && in->mem.base == CFG_REG_NONE && in->mem.index != CFG_REG_NONE &&
	       in->mem.scale == 8 && !in->mem.rip_relative && in->mem.disp > 0;
}

static int is_rip_lea(const struct cfg_insn *in)
{
	return (in->flags & CFG_I_LEA) && in->mem.rip_relative && in->mem.index == CFG_REG_NONE;
}

static int is_load4(const struct cfg_insn *in)
{
	return (in->flags & CFG_I_LOAD) && !strncmp(in->mnemonic, "movs", 4) &&
	       in->mem.base != CFG_REG_NONE && in->mem.index != CFG_REG_NONE &&
	       in->mem.scale == 4 && in->mem.disp == 0;
}

/*
 * Scan cfg's instructions [lo, hi] newest first for a write of reg: 1 when
 * it is a `lea T(%rip),%reg` (T into *val, or equal to it when *found), -1
 * when another write (or a call, for a register the callee may change)
 * comes first, 0 when none.
 */
static int scan_def(const struct cfg *cfg, int64_t lo, int64_t hi, int reg, uint64_t *val,
		    int *found)
{
	for (int64_t i = hi; i >= lo; i--) {
		const struct cfg_insn *in = &cfg->insns[i];

		if (in->flags & CFG_I_CALL) {
			if (!(CFG_KEPT_BY_CALL & CFG_RBIT(reg)))
				return -1;
			continue;
		}
		if (!(in->regs_written & CFG_RBIT(reg)))
			continue;
		if (!is_rip_lea(in) || (*found && *val != (uint64_t)in->mem.disp))
			return -1;
		*val = (uint64_t)in->mem.disp;
		*found = 1;
		return 1;
	}
	return 0;
}

/*
 * The one `lea T(%rip),%reg` that reaches cfg's instruction at index at on
 * every path into it: the definitions of reg met walking back through the
 * predecessors (a loop's hoisted table base, in a register the procedure
 * also uses for other things elsewhere: wc's word loop keeps its switch's
 * table in r15).  -ENOENT when some path brings another value, or none
 * from the procedure's entry.
 */
static int reach_const(const struct cfg *cfg, uint32_t at, int reg, uint64_t *val)
{
	int b0 = cfg_block_at(cfg, cfg->insns[at].addr), found = 0, rc = -ENOENT;
	uint32_t *stack, n = 0;
	uint8_t *seen;

	if (b0 < 0 || !cfg->nblocks)
		return -ENOENT;
	stack = malloc((cfg->nblocks + 1) * sizeof(*stack));	/* each once, b0 twice */
	seen = calloc(cfg->nblocks, 1);
	if (!stack || !seen)
		goto out;	/* not resolved: the CFG says it misses edges */
	switch (scan_def(cfg, cfg->blocks[b0].first, (int64_t)at - 1, reg, val, &found)) {
	case 1:
		rc = 0;
		goto out;
	case -1:
		goto out;
	}
	stack[n++] = (uint32_t)b0;	/* its predecessors next; itself again whole */
	while (n) {
		const struct cfg_block *bl = &cfg->blocks[stack[--n]];

		for (uint32_t k = 0; k < bl->npred; k++) {
			const struct cfg_edge *e = &cfg->edges[bl->pred[k]];
			const struct cfg_block *pb;

			if (e->from == cfg->exit)
				goto out;	/* the caller's value */
			if (seen[e->from])
				continue;
			seen[e->from] = 1;
			pb = &cfg->blocks[e->from];
			if (!pb->n)
				goto out;
			switch (scan_def(cfg, pb->first, (int64_t)pb->first + pb->n - 1, reg, val,
					 &found)) {
			case -1:
				goto out;
			case 0:
				stack[n++] = e->from;
			}
		}
		if (bl - cfg->blocks == (ptrdiff_t)cfg->entry)
			goto out;	/* reg came in from the caller */
	}
	rc = found ? 0 : -ENOENT;
out:
	free(stack);
	free(seen);
	return rc;
}

/*
 * The constant address reg holds before path->insn[from]: a `lea T(%rip),%reg`
 * on the path, or, when the path does not reach its definition (the lea was
 * hoisted out of a loop), the one that reaches it on every path
 * (reach_const), or the one value every write of reg in the procedure
 * gives it.  A pop does not count: it restores the caller's value on the way
 * out, which compiled code saves but never uses as an address.
 */
static int reg_const(const struct cfg_jt_path *path, size_t from, int reg, uint64_t *val)
{
	int d = find_def(path, from, reg), found = 0;

	if (d >= 0) {
		if (!is_rip_lea(path->insn[d]))
			return -ENOENT;
		*val = (uint64_t)path->insn[d]->mem.disp;
		return 0;
	}
	if (!path->cfg)
		return -ENOENT;
	if (path->insn[from] >= path->cfg->insns &&
	    path->insn[from] < path->cfg->insns + path->cfg->ninsns &&
	    reach_const(path->cfg, (uint32_t)(path->insn[from] - path->cfg->insns), reg, val) == 0)
		return 0;
	for (size_t i = 0; i < path->cfg->ninsns; i++) {
		const struct cfg_insn *in = &path->cfg->insns[i];

		if (!(in->regs_written & CFG_RBIT(reg)) || !strncmp(in->mnemonic, "pop", 3))
			continue;
		if (!is_rip_lea(in) || (found && *val != (uint64_t)in->mem.disp))
			return -ENOENT;
		*val = (uint64_t)in->mem.disp;
		found = 1;
	}
	return found ? 0 : -ENOENT;
}

/* PIC form: r = r + s after a movslq and a lea.  Sets table, index, load. */
static int match_pic(const struct cfg_jt_path *path, int add, struct cfg_jt *jt, int *idx,
		     int *load)
{
	const struct cfg_insn *in = path->insn[add];
	int r = only_gpr(in->regs_written), s, dm, other;
	uint64_t t1, t2;

	if (r < 0 || strncmp(in->mnemonic, "add", 3) || in->nmem)
		return -ENOENT;
	s = only_gpr(in->regs_read & ~CFG_RBIT(r));
	if (s < 0)
		return -ENOENT;
	/* one addend is the loaded entry, the other the table it was loaded from */
	dm = find_def(path, add, r);
	other = s;
	if (dm < 0 || !is_load4(path->insn[dm]) || path->insn[dm]->mem.base != s) {
		dm = find_def(path, add, s);
		other = r;
	}
	if (dm < 0 || !is_load4(path->insn[dm]) || path->insn[dm]->mem.base != other)
		return -ENOENT;
	if (reg_const(path, add, other, &t1) < 0 || reg_const(path, dm, other, &t2) < 0 ||
	    t1 != t2)
		return -ENOENT;
	jt->table = t1;
	jt->entry_size = 4;
	*idx = path->insn[dm]->mem.index;
	*load = dm;
	return 0;
}

/* The table load: which instruction reads the table, with which index. */
static int match_load(const struct cfg_jt_path *path, struct cfg_jt *jt, int *idx, int *load)
{
	const struct cfg_insn *jmp = path->insn[0], *in;
	int r, d;

	if (jmp->nmem) {
		if (!is_table_load8(jmp))
			return -ENOENT;
		jt->table = (uint64_t)jmp->mem.disp;
		jt->entry_size = 8;
		*idx = jmp->mem.index;
		*load = 0;
		return 0;
	}
	r = only_gpr(jmp->regs_read);
	if (r < 0)
		return -ENOENT;
	d = find_def(path, 0, r);
	if (d < 0)
		return -ENOENT;
	in = path->insn[d];
	if (is_table_load8(in) && !strncmp(in->mnemonic, "mov", 3)) {
		jt->table = (uint64_t)in->mem.disp;
		jt->entry_size = 8;
		*idx = in->mem.index;
		*load = d;
		return 0;
	}
	return match_pic(path, d, jt, idx, load);
}

/* cmp $N,%reg (any width: cmpb $9,%al bounds a later movzbl %al,%eax). */
static int is_cmp_imm(const struct cfg_insn *in, int reg)
{
	return !strncmp(in->mnemonic, "cmp", 3) && !in->nmem && in->form == CFG_F_REG &&
	       only_gpr(in->regs_read) == reg && (in->flags & CFG_I_IMM);
}

static int same_mem(const struct cfg_mem *a, const struct cfg_mem *b)
{
	return a->base == b->base && a->index == b->index && a->scale == b->scale &&
	       a->segment == b->segment && a->rip_relative == b->rip_relative &&
	       a->disp == b->disp && a->size == b->size;
}

static uint64_t mem_regs(const struct cfg_mem *m)
{
	uint64_t r = 0;

	if (m->base != CFG_REG_NONE && m->base < CFG_NREGS && m->base != CFG_R_RIP)
		r |= CFG_RBIT(m->base);
	if (m->index != CFG_REG_NONE && m->index < CFG_NREGS)
		r |= CFG_RBIT(m->index);
	return r;
}

/* in is `lea d(%r),%x` and x a register of m (not both): m as it reads
 * before in, with r for x.  0 when in is not such. */
static int lea_back(const struct cfg_insn *in, struct cfg_mem *m)
{
	int x = only_gpr(in->regs_written);

	if (!(in->flags & CFG_I_LEA) || in->mem.rip_relative || in->mem.index != CFG_REG_NONE ||
	    in->mem.base == CFG_REG_NONE || in->mem.base >= CFG_NREGS || x < 0 ||
	    (m->base == x) == (m->index == x))
		return 0;
	if (m->index == x) {
		m->index = in->mem.base;
		m->disp += in->mem.disp * (int64_t)m->scale;
	} else {
		m->base = in->mem.base;
		m->disp += in->mem.disp;
	}
	return 1;
}

/* cmp $N,mem of the operand the index was loaded from. */
static int is_cmp_mem_imm(const struct cfg_insn *in, const struct cfg_mem *m)
{
	return !strncmp(in->mnemonic, "cmp", 3) && in->nmem == 1 && in->form == CFG_F_LOAD &&
	       same_mem(&in->mem, m) && (in->flags & CFG_I_IMM);
}

/* mov/movzx/movsx mem,%idx: the index comes from memory. */
static int is_index_load(const struct cfg_insn *in, int idx)
{
	return !strncmp(in->mnemonic, "mov", 3) && in->nmem == 1 && in->form == CFG_F_LOAD &&
	       only_gpr(in->regs_written) == idx;
}

/*
 * `cmp $N,%x` read while looking for the index's bound, with x not the index:
 * is the index a copy of x made after the compare (`movzbl %bpl,%r12d;
 * cmpb $12,%bpl; ja; jmp *T(,%r12,8)`)?  k is the compare's place in path.
 */
static int copied_after(const struct cfg_jt_path *path, size_t k, int x, int idx)
{
	for (size_t j = k + 1; j < path->n; j++) {
		const struct cfg_insn *in = path->insn[j];

		if (in->flags & (CFG_I_CALL | CFG_I_INDIRECT))
			return 0;
		if (in->regs_written & CFG_RBIT(idx))
			return !strncmp(in->mnemonic, "mov", 3) && !in->nmem &&
			       only_gpr(in->regs_read) == x && !(in->flags & CFG_I_ZERO_IDIOM);
		if (in->regs_written & CFG_RBIT(x))
			return 0;
	}
	return 0;
}

/* Entries the guard admits, from `cmp $N,%idx` and the branch that reads it. */
static int guard_count(const struct cfg_insn *jcc, uint64_t next, uint64_t n, size_t *count)
{
	int taken = jcc->target == next;
	const char *m = jcc->mnemonic;

	if ((!strcmp(m, "ja") || !strcmp(m, "jnbe")) && !taken)
		*count = n + 1;
	else if ((!strcmp(m, "jae") || !strcmp(m, "jnb")) && !taken)
		*count = n;
	else if ((!strcmp(m, "jbe") || !strcmp(m, "jna")) && taken)
		*count = n + 1;
	else if ((!strcmp(m, "jb") || !strcmp(m, "jnae")) && taken)
		*count = n;
	else
		return -ENOENT;
	return 0;
}

/*
 * Walk back from the load for the compare bounding the index.  No compare,
 * but the index zero-extended from a byte: a 256-entry table (a switch on a
 * char covering every value needs no bound check).
 */
static int find_bound(const struct cfg_jt_path *path, int load, int idx, size_t *count)
{
	const struct cfg_insn *jcc = NULL;
	struct cfg_mem mem;
	const struct cfg_mem *src = NULL;	/* the index's memory, once loaded */
	uint64_t jnext = 0;
	int byte = 0;
	size_t k;

	for (k = load + 1; k < path->n; k++) {
		const struct cfg_insn *in = path->insn[k];
		int s;

		if (in->flags & (CFG_I_CALL | CFG_I_INDIRECT))
			break;
		if (in->flags & CFG_I_COND) {
			jcc = in;
			jnext = path->next[k];
			continue;
		}
		if (jcc && (src ? is_cmp_mem_imm(in, src) : is_cmp_imm(in, idx)))
			return guard_count(jcc, jnext, in->imm, count);
		if (jcc && !src && !in->nmem && in->form == CFG_F_REG &&
		    !strncmp(in->mnemonic, "cmp", 3) && (in->flags & CFG_I_IMM) &&
		    (s = only_gpr(in->regs_read)) >= 0 && copied_after(path, k, s, idx))
			return guard_count(jcc, jnext, in->imm, count);
		if (in->regs_written & CFG_RBIT(CFG_R_FLAGS))
			jcc = NULL;	/* that branch tested something else */
		if (src) {
			/*
			 * The address may have changed.  Other stores are let
			 * through: the compiler reloaded the value it had just
			 * bounded, so it knew they do not alias it.
			 */
			if (in->regs_written & mem_regs(src)) {
				if (lea_back(in, &mem))
					continue;
				break;
			}
			if ((in->flags & CFG_I_STORE) && same_mem(&in->mem, src))
				break;
			continue;
		}
		if (!(in->regs_written & CFG_RBIT(idx)))
			continue;
		if (is_index_load(in, idx)) {
			byte |= !strcmp(in->mnemonic, "movzbl") || !strcmp(in->mnemonic, "movzbq");
			mem = in->mem;
			src = &mem;
			continue;
		}
		/* a register copy of the index (mov, movl %e,%e, movslq, movzx) */
		s = only_gpr(in->regs_read);
		if (strncmp(in->mnemonic, "mov", 3) || in->nmem || s < 0 ||
		    (in->flags & CFG_I_ZERO_IDIOM))
			break;
		if (!byte && (!strcmp(in->mnemonic, "movzbl") || !strcmp(in->mnemonic, "movzbq")))
			byte = 1;
		idx = s;
	}
	if (!byte)
		return -ENOENT;
	*count = 256;
	return 0;
}

int cfg_jt_is_table(const struct image *img, const struct cfg_jt_path *path, uint64_t lo,
		    uint64_t hi)
{
	struct cfg_jt jt = { 0 };
	int idx, load;
	uint64_t t;
	int32_t rel;

	if (!img || !path->n || match_load(path, &jt, &idx, &load) < 0)
		return 0;
	if (jt.entry_size == 8) {
		if (img_read(img, jt.table, &t, 8) < 0)
			return 0;
	} else {
		if (img_read(img, jt.table, &rel, 4) < 0)
			return 0;
		t = jt.table + (int64_t)rel;
	}
	return t >= lo && t < hi;
}

int cfg_jt_resolve(const struct image *img, const struct cfg_jt_path *path, uint64_t lo,
		   uint64_t hi, struct cfg_jt *jt)
{
	int idx, load, rc;
	size_t count;

	memset(jt, 0, sizeof(*jt));
	if (!img || !path->n)
		return -ENOENT;
	rc = match_load(path, jt, &idx, &load);
	if (rc < 0)
		return rc;
	rc = find_bound(path, load, idx, &count);
	if (rc < 0)
		return rc;
	if (!count || count > JT_MAX_ENTRIES)
		return -ENOENT;
	jt->targets = malloc(count * sizeof(*jt->targets));
	if (!jt->targets)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		uint64_t t;

		if (jt->entry_size == 8) {
			if (img_read(img, jt->table + 8 * i, &t, 8) < 0)
				goto bad;
		} else {
			int32_t rel;

			if (img_read(img, jt->table + 4 * i, &rel, 4) < 0)
				goto bad;
			t = jt->table + (int64_t)rel;
		}
		if ((t < lo || t >= hi) && !img_proc_at(img, t))
			goto bad;
		jt->targets[i] = t;
	}
	jt->count = count;
	return 0;
bad:
	free(jt->targets);
	jt->targets = NULL;
	return -ENOENT;
}
