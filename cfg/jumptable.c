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
 * The entry count comes from the guarding `cmp $N,%idx; ja default` found by
 * walking back through the jump's block and its single predecessors (the
 * path the builder hands in), following register copies of the index.
 */
#include <errno.h>
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

/* PIC form: r = r + s after a movslq and a lea.  Sets table, index, load. */
static int match_pic(const struct cfg_jt_path *path, int add, struct cfg_jt *jt, int *idx,
		     int *load)
{
	const struct cfg_insn *in = path->insn[add];
	int r = only_gpr(in->regs_written), s, d1, d2, dl, dm, db;

	if (r < 0 || strncmp(in->mnemonic, "add", 3) || in->nmem)
		return -ENOENT;
	s = only_gpr(in->regs_read & ~CFG_RBIT(r));
	if (s < 0)
		return -ENOENT;
	d1 = find_def(path, add, r);
	d2 = find_def(path, add, s);
	if (d1 < 0 || d2 < 0)
		return -ENOENT;
	if (is_load4(path->insn[d1]) && is_rip_lea(path->insn[d2])) {
		dm = d1;
		dl = d2;
	} else if (is_load4(path->insn[d2]) && is_rip_lea(path->insn[d1])) {
		dm = d2;
		dl = d1;
	} else {
		return -ENOENT;
	}
	/* the load's base must hold the same table address */
	db = find_def(path, dm, path->insn[dm]->mem.base);
	if (db < 0 || !is_rip_lea(path->insn[db]) ||
	    path->insn[db]->mem.disp != path->insn[dl]->mem.disp)
		return -ENOENT;
	jt->table = (uint64_t)path->insn[dl]->mem.disp;
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

static int is_cmp_imm(const struct cfg_insn *in, int reg)
{
	return !strncmp(in->mnemonic, "cmp", 3) && !in->nmem && in->form == CFG_F_REG &&
	       only_gpr(in->regs_read) == reg && in->size >= 3;
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

/* Walk back from the load for the compare bounding the index. */
static int find_bound(const struct cfg_jt_path *path, int load, int idx, size_t *count)
{
	const struct cfg_insn *jcc = NULL;
	uint64_t jnext = 0;

	for (size_t k = load + 1; k < path->n; k++) {
		const struct cfg_insn *in = path->insn[k];
		int s;

		if (in->flags & (CFG_I_CALL | CFG_I_INDIRECT))
			return -ENOENT;
		if (in->flags & CFG_I_COND) {
			jcc = in;
			jnext = path->next[k];
			continue;
		}
		if (jcc && is_cmp_imm(in, idx))
			return guard_count(jcc, jnext, in->imm, count);
		if (in->regs_written & CFG_RBIT(CFG_R_FLAGS))
			jcc = NULL;	/* that branch tested something else */
		if (!(in->regs_written & CFG_RBIT(idx)))
			continue;
		/* a register copy of the index (mov, movl %e,%e, movslq, movzx) */
		s = only_gpr(in->regs_read);
		if (strncmp(in->mnemonic, "mov", 3) || in->nmem || s < 0 ||
		    (in->flags & CFG_I_ZERO_IDIOM))
			return -ENOENT;
		idx = s;
	}
	return -ENOENT;
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
		if (t < lo || t >= hi)
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
