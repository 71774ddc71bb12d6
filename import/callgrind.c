/*
 * import/callgrind.c - callgrind's exact counts as profiles: the
 * ground truth the estimators are tested against (DCPI sec. 6.2 used its
 * instrumenting tool dcpix the same way).
 *
 * The format (valgrind's docs/cl-format): header lines ("events: Ir ...",
 * "positions: instr line"), then context lines ob= fl= fi= fe= fn= (names
 * compressed as "(id) name" once, "(id)" after), cost lines "pos... cost...",
 * call lines (cob= cfi= cfn= calls=) whose next line is the call's inclusive
 * cost (not the caller's own), and jump lines (jfi= jfn= jump= jcnd=) whose
 * next line is the jump's source position.  Subpositions are absolute
 * ("0x1050", "23"), relative to the previous cost line ("+3", "-2") or the
 * same ("*"); a jump's target is relative to the previous line too and does
 * not move it.
 *
 * Addresses are the object's virtual addresses; any load bias is found by
 * voting: each function's lowest executed address minus its symbol's address
 * (valgrind 3.19 reports file addresses, so the vote is normally 0).  Then
 * vaddr -> file offset through the object's PT_LOAD segments.  Each event
 * becomes "callgrind-<event>" with period 1; jumps go to one text file per
 * image in the epoch (docs/import.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/collect.h"
#include "dcpi/image.h"
#include "internal.h"

#define CG_MAX_EVENTS 64
#define CG_MAX_POS 4
#define CG_MAX_ID (1u << 24)

struct cg_obj {
	char *path;
	struct image *img;	/* NULL when it cannot be read as ELF */
	int64_t bias;		/* runtime address - file vaddr */
	struct prof_image_id id;
	int mapped;		/* addresses become file offsets */
};

struct cg_fnaddr {		/* lowest address seen in one fn= block */
	uint32_t obj;
	const char *fn;
	uint64_t addr;
};

struct cg_jump {
	uint32_t obj;
	struct import_jump j;
};

struct cg {
	const char *path;
	unsigned long lineno;
	struct imp_event events[CG_MAX_EVENTS];
	size_t nevents;
	int npos, instr_pos;		/* subpositions per line; which is the address */
	int64_t last[CG_MAX_POS];
	char **fn_names;		/* by id */
	uint32_t *ob_ids;		/* id -> obj index + 1 */
	size_t fn_cap, ob_cap;
	char **pool;			/* uncompressed names */
	size_t npool, pool_cap;
	struct cg_obj *objs;
	size_t nobjs, objs_cap;
	int64_t cur_obj;		/* -1: none yet */
	const char *cur_fn;
	struct cg_fnaddr *fa;
	size_t nfa, fa_cap;
	int cur_fa;			/* fa[nfa - 1] belongs to the current block */
	struct cg_jump *jumps;
	size_t njumps, jumps_cap;
	enum { CG_NEXT_COST, CG_NEXT_CALL, CG_NEXT_JUMP } next;
	struct import_jump pending;	/* the jump whose source line comes next */
	struct agg *tab;
	char cmd[256];
	struct prof_image_id unknown;
	struct import_stats *st;
};

static int cg_bad(struct cg *c, struct dcpi_err *err, const char *why, const char *line)
{
	return dcpi_errf(err, -EINVAL, "%s: line %lu: %s: '%.60s'", c->path, c->lineno, why,
			 line);
}

static int cg_nomem(struct cg *c, struct dcpi_err *err)
{
	return dcpi_errf(err, -ENOMEM, "%s: line %lu: out of memory", c->path, c->lineno);
}

/* --- names ----------------------------------------------------------------- */

/* "(id) name", "(id)" or "name": the id plus one (0 if none) and the name
 * (or NULL).  Callgrind counts ids from 0. */
static int cg_name_parse(char *s, uint32_t *id, char **name)
{
	char *end;
	unsigned long v;

	*id = 0;
	*name = NULL;
	if (*s != '(') {
		*name = s;
		return 0;
	}
	v = strtoul(s + 1, &end, 10);
	if (end == s + 1 || *end != ')' || v >= CG_MAX_ID)
		return -EINVAL;
	*id = (uint32_t)v + 1;
	end++;
	while (*end == ' ')
		end++;
	if (*end)
		*name = end;
	return 0;
}

static const char *cg_pool_add(struct cg *c, const char *s)
{
	char *d;

	if (dcpi_grow_zero((void **)&c->pool, &c->pool_cap, c->npool + 1, sizeof(*c->pool)))
		return NULL;
	d = strdup(s);
	if (d)
		c->pool[c->npool++] = d;
	return d;
}

/* A function name line (fn= cfn= jfn=): define or look up. */
static int cg_fn(struct cg *c, char *arg, const char **out, struct dcpi_err *err)
{
	uint32_t id;
	char *name;

	if (cg_name_parse(arg, &id, &name))
		return cg_bad(c, err, "bad name", arg);
	if (!id) {
		*out = cg_pool_add(c, name);
		return *out ? 0 : cg_nomem(c, err);
	}
	if (dcpi_grow_zero((void **)&c->fn_names, &c->fn_cap, (size_t)id + 1, sizeof(char *)))
		return cg_nomem(c, err);
	if (name && !c->fn_names[id]) {
		c->fn_names[id] = strdup(name);
		if (!c->fn_names[id])
			return cg_nomem(c, err);
	}
	if (!c->fn_names[id])
		return cg_bad(c, err, "function name used before it is defined", arg);
	*out = c->fn_names[id];
	return 0;
}

static int cg_obj_intern(struct cg *c, const char *path, uint32_t *out)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		if (!strcmp(c->objs[i].path, path)) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (dcpi_grow_zero((void **)&c->objs, &c->objs_cap, c->nobjs + 1, sizeof(*c->objs)))
		return -ENOMEM;
	c->objs[c->nobjs].path = strdup(path);
	if (!c->objs[c->nobjs].path)
		return -ENOMEM;
	*out = (uint32_t)c->nobjs++;
	return 0;
}

/* An object line (ob= cob=): define or look up; *obj the object index. */
static int cg_ob(struct cg *c, char *arg, uint32_t *obj, struct dcpi_err *err)
{
	uint32_t id;
	char *name;

	if (cg_name_parse(arg, &id, &name))
		return cg_bad(c, err, "bad name", arg);
	if (id && dcpi_grow_zero((void **)&c->ob_ids, &c->ob_cap, (size_t)id + 1,
				 sizeof(uint32_t)))
		return cg_nomem(c, err);
	if (id && c->ob_ids[id] && (!name || !strcmp(name, c->objs[c->ob_ids[id] - 1].path))) {
		*obj = c->ob_ids[id] - 1;
		return 0;
	}
	if (!name)
		return cg_bad(c, err, "object used before it is defined", arg);
	if (cg_obj_intern(c, name, obj))
		return cg_nomem(c, err);
	if (id)
		c->ob_ids[id] = *obj + 1;
	return 0;
}

/* --- header ---------------------------------------------------------------- */

static int cg_events(struct cg *c, char *arg, struct dcpi_err *err)
{
	char *save = NULL;

	if (c->nevents)
		return cg_bad(c, err, "a second events: line", arg);
	for (char *t = strtok_r(arg, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		struct imp_event *ev = &c->events[c->nevents];

		if (c->nevents == CG_MAX_EVENTS)
			return cg_bad(c, err, "more than 64 events", arg);
		if ((size_t)snprintf(ev->name, sizeof(ev->name), "callgrind-%s", t) >=
		    sizeof(ev->name))
			return cg_bad(c, err, "event name too long", t);
		ev->period = 1;
		snprintf(ev->unit, sizeof(ev->unit), "events");
		c->nevents++;
	}
	if (!c->nevents)
		return cg_bad(c, err, "no events", "events:");
	return 0;
}

static int cg_positions(struct cg *c, char *arg, struct dcpi_err *err)
{
	char *save = NULL;

	c->npos = 0;
	c->instr_pos = -1;
	for (char *t = strtok_r(arg, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (c->npos == CG_MAX_POS)
			return cg_bad(c, err, "too many positions", arg);
		if (!strcmp(t, "instr"))
			c->instr_pos = c->npos;
		c->npos++;
	}
	return 0;
}

/* --- cost lines -------------------------------------------------------------- */

/* One subposition token against the previous value. */
static int cg_subpos(const char *t, int64_t last, int64_t *out)
{
	char *end;
	uint64_t v;

	if (!strcmp(t, "*")) {
		*out = last;
		return 0;
	}
	if (*t == '+' || *t == '-') {
		v = strtoull(t + 1, &end, !strncmp(t + 1, "0x", 2) ? 16 : 10);
		if (end == t + 1 || *end)
			return -EINVAL;
		*out = *t == '+' ? last + (int64_t)v : last - (int64_t)v;
		return 0;
	}
	v = strtoull(t, &end, !strncmp(t, "0x", 2) ? 16 : 10);
	if (end == t || *end)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/* Parse npos subpositions from *s into pos (relative to c->last). */
static int cg_position(struct cg *c, char **s, int64_t *pos)
{
	char *save = NULL, *t;

	for (int i = 0; i < c->npos; i++) {
		t = strtok_r(i ? NULL : *s, " \t", &save);
		if (!t || cg_subpos(t, c->last[i], &pos[i]))
			return -EINVAL;
	}
	*s = save;
	return 0;
}

static int cg_fa_note(struct cg *c, uint64_t addr)
{
	struct cg_fnaddr *f;

	if (!c->cur_fa) {
		if (dcpi_grow_zero((void **)&c->fa, &c->fa_cap, c->nfa + 1, sizeof(*c->fa)))
			return -ENOMEM;
		f = &c->fa[c->nfa++];
		f->obj = (uint32_t)c->cur_obj;
		f->fn = c->cur_fn;
		f->addr = addr;
		c->cur_fa = 1;
	}
	f = &c->fa[c->nfa - 1];
	if (addr < f->addr)
		f->addr = addr;
	return 0;
}

static int cg_jump_add(struct cg *c, uint64_t from)
{
	struct cg_jump *j;

	if (dcpi_grow_zero((void **)&c->jumps, &c->jumps_cap, c->njumps + 1, sizeof(*c->jumps)))
		return -ENOMEM;
	j = &c->jumps[c->njumps++];
	j->obj = (uint32_t)c->cur_obj;
	j->j = c->pending;
	j->j.from = from;
	return 0;
}

static int cg_cost_line(struct cg *c, char *line, struct dcpi_err *err)
{
	int64_t pos[CG_MAX_POS];
	char *rest = line, *save = NULL, *end;
	uint64_t addr;
	size_t k = 0;

	if (cg_position(c, &rest, pos))
		return cg_bad(c, err, "bad position", line);
	memcpy(c->last, pos, sizeof(pos));
	if (c->cur_obj < 0)
		return cg_bad(c, err, "cost line before any ob=", line);
	addr = (uint64_t)pos[c->instr_pos];
	if (c->next == CG_NEXT_JUMP && cg_jump_add(c, addr))
		return cg_nomem(c, err);
	if (c->next == CG_NEXT_CALL) {	/* inclusive cost of a call: not ours */
		c->next = CG_NEXT_COST;
		return 0;
	}
	c->next = CG_NEXT_COST;
	for (char *t = rest ? strtok_r(rest, " \t", &save) : NULL; t;
	     t = strtok_r(NULL, " \t", &save), k++) {
		uint64_t v = strtoull(t, &end, 10);

		if (end == t || *end || *t == '-')
			return cg_bad(c, err, "bad cost", line);
		if (k >= c->nevents)
			return cg_bad(c, err, "more costs than events", line);
		if (agg_add(c->tab, (uint32_t)c->cur_obj, (uint32_t)k, addr, v, err))
			return cg_nomem(c, err);
	}
	c->st->samples++;
	return cg_fa_note(c, addr) ? cg_nomem(c, err) : 0;
}

/* jump=count target / jcnd=taken/executed target */
static int cg_jump_line(struct cg *c, char *arg, int cond, struct dcpi_err *err)
{
	int64_t pos[CG_MAX_POS];
	char *rest, *end;
	uint64_t taken, exe;

	taken = strtoull(arg, &end, 10);
	if (end == arg)
		return cg_bad(c, err, "bad jump count", arg);
	exe = taken;
	if (cond) {
		if (*end != '/')
			return cg_bad(c, err, "bad conditional jump counts", arg);
		arg = end + 1;
		exe = strtoull(arg, &end, 10);
		if (end == arg)
			return cg_bad(c, err, "bad conditional jump counts", arg);
	}
	rest = end;
	if (cg_position(c, &rest, pos))
		return cg_bad(c, err, "bad jump target", arg);
	memset(&c->pending, 0, sizeof(c->pending));
	c->pending.to = (uint64_t)pos[c->instr_pos];
	c->pending.count = taken;
	c->pending.executed = exe;
	c->pending.conditional = cond;
	c->next = CG_NEXT_JUMP;
	return 0;
}

/* calls=count target: the target position is checked, not used. */
static int cg_calls_line(struct cg *c, char *arg, struct dcpi_err *err)
{
	int64_t pos[CG_MAX_POS];
	char *end, *rest;

	strtoull(arg, &end, 10);
	if (end == arg)
		return cg_bad(c, err, "bad call count", arg);
	rest = end;
	if (cg_position(c, &rest, pos))
		return cg_bad(c, err, "bad call target", arg);
	c->next = CG_NEXT_CALL;
	return 0;
}

/* "key=value" context lines. */
static int cg_spec_line(struct cg *c, char *line, char *eq, struct dcpi_err *err)
{
	const char *key = line, *fn;
	char *arg = eq + 1;
	uint32_t obj;
	int ret;

	*eq = '\0';
	if (!strcmp(key, "ob")) {
		ret = cg_ob(c, arg, &obj, err);
		if (!ret && c->cur_obj != (int64_t)obj) {
			c->cur_obj = obj;
			c->cur_fa = 0;
		}
		return ret;
	}
	if (!strcmp(key, "cob"))
		return cg_ob(c, arg, &obj, err);
	if (!strcmp(key, "fn")) {
		ret = cg_fn(c, arg, &fn, err);
		c->cur_fn = fn;
		c->cur_fa = 0;
		return ret;
	}
	if (!strcmp(key, "cfn") || !strcmp(key, "jfn"))
		return cg_fn(c, arg, &fn, err);
	if (!strcmp(key, "fl") || !strcmp(key, "fi") || !strcmp(key, "fe") ||
	    !strcmp(key, "cfi") || !strcmp(key, "cfl") || !strcmp(key, "jfi"))
		return 0;	/* source files: not needed for addresses */
	if (c->npos == 0 || c->instr_pos < 0)
		return dcpi_errf(err, -EINVAL, "%s: no instruction addresses (positions: "
				 "instr): run callgrind with --dump-instr=yes", c->path);
	if (!strcmp(key, "calls"))
		return cg_calls_line(c, arg, err);
	if (!strcmp(key, "jump"))
		return cg_jump_line(c, arg, 0, err);
	if (!strcmp(key, "jcnd"))
		return cg_jump_line(c, arg, 1, err);
	*eq = '=';
	return cg_bad(c, err, "unknown line", line);
}

/* "key: value" header lines. */
static int cg_header_line(struct cg *c, char *line, struct dcpi_err *err)
{
	char *colon = strchr(line, ':'), *arg;

	*colon = '\0';
	arg = colon + 1;
	while (*arg == ' ' || *arg == '\t')
		arg++;
	if (!strcmp(line, "events"))
		return cg_events(c, arg, err);
	if (!strcmp(line, "positions"))
		return cg_positions(c, arg, err);
	if (!strcmp(line, "cmd"))
		snprintf(c->cmd, sizeof(c->cmd), "%s", arg);
	else if (!strcmp(line, "version") && strtoul(arg, NULL, 10) > 1)
		return dcpi_errf(err, -EPROTONOSUPPORT, "%s: callgrind format version %s is "
				 "not supported", c->path, arg);
	return 0;	/* creator, pid, part, desc, summary, totals, thread, event */
}

static int cg_line(struct cg *c, char *line, struct dcpi_err *err)
{
	char *eq, *colon;

	if (!line[0] || line[0] == '#')
		return 0;
	if ((line[0] >= '0' && line[0] <= '9') || line[0] == '+' || line[0] == '-' ||
	    line[0] == '*') {
		if (!c->nevents)
			return cg_bad(c, err, "cost line before the events: line", line);
		if (c->npos == 0 || c->instr_pos < 0)
			return dcpi_errf(err, -EINVAL, "%s: no instruction addresses (positions: "
					 "instr): run callgrind with --dump-instr=yes", c->path);
		return cg_cost_line(c, line, err);
	}
	eq = strchr(line, '=');
	colon = strchr(line, ':');
	if (eq && (!colon || eq < colon) && strcspn(line, " \t") > (size_t)(eq - line))
		return cg_spec_line(c, line, eq, err);
	if (colon && strcspn(line, " \t") > (size_t)(colon - line))
		return cg_header_line(c, line, err);
	return cg_bad(c, err, "cannot parse", line);
}

static int cg_parse(struct cg *c, char *text, size_t len, struct dcpi_err *err)
{
	char *p = text, *end = text + len;
	int ret = 0;

	if (strlen(text) != len)
		return dcpi_errf(err, -EINVAL, "%s: NUL byte in a text file", c->path);
	while (p < end && !ret) {
		char *nl = memchr(p, '\n', (size_t)(end - p));

		if (nl)
			*nl = '\0';
		else
			nl = end;
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		c->lineno++;
		ret = cg_line(c, p, err);
		p = nl + 1;
	}
	if (!ret && !c->nevents)
		ret = dcpi_errf(err, -EINVAL, "%s: no events: line", c->path);
	if (!ret && c->next == CG_NEXT_JUMP)
		ret = dcpi_errf(err, -EINVAL, "%s: truncated: the file ends after a jump line",
				c->path);
	return ret;
}

/* --- objects ----------------------------------------------------------------- */

static int fa_cmp(const void *x, const void *y)
{
	const struct cg_fnaddr *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->obj, a->addr }, (uint64_t[]){ b->obj, b->addr }, 2);
}

/* The load bias of object i: the most common (lowest address of a function
 * minus its symbol's address), over page-aligned candidates. */
static int64_t cg_bias(struct cg *c, uint32_t i, size_t *votes)
{
	int64_t best = 0, cand[16];
	size_t n[16] = { 0 }, nc = 0, bestn = 0;

	for (size_t k = 0; k < c->nfa; k++) {
		const struct img_proc *pr;
		int64_t b;
		size_t j;

		if (c->fa[k].obj != i || !c->fa[k].fn)
			continue;
		pr = img_proc_by_name(c->objs[i].img, c->fa[k].fn);
		if (!pr)
			continue;
		b = (int64_t)(c->fa[k].addr - pr->addr);
		if (b & 0xfff)
			continue;
		for (j = 0; j < nc && cand[j] != b; j++)
			;
		if (j == nc) {
			if (nc == 16)
				continue;
			cand[nc++] = b;
		}
		n[j]++;
	}
	for (size_t j = 0; j < nc; j++) {
		if (n[j] > bestn) {
			bestn = n[j];
			best = cand[j];
		}
	}
	*votes = bestn;
	return best;
}

static void cg_open_objs(struct cg *c)
{
	dcpi_qsort(c->fa, c->nfa, sizeof(*c->fa), fa_cmp);
	for (uint32_t i = 0; i < c->nobjs; i++) {
		struct cg_obj *o = &c->objs[i];
		size_t votes;

		if (o->path[0] != '/' || img_open(o->path, IMG_NO_DWARF, &o->img, NULL) ||
		    prof_image_id_from_file(&o->id, o->path, NULL)) {
			img_close(o->img);
			o->img = NULL;
			continue;
		}
		o->bias = cg_bias(c, i, &votes);
		if (!votes && img_is_shared(o->img) && o->bias)
			o->bias = 0;
		o->mapped = 1;
	}
}

static const struct prof_image_id *cg_image_id(void *ctx, uint32_t image)
{
	struct cg *c = ctx;

	if (image < c->nobjs && c->objs[image].mapped)
		return &c->objs[image].id;
	return &c->unknown;
}

static int cg_offset(void *ctx, uint32_t image, uint64_t *offset)
{
	struct cg *c = ctx;
	struct cg_obj *o;

	if (image >= c->nobjs || !c->objs[image].mapped)
		return 0;	/* kept in the unknown image by address */
	o = &c->objs[image];
	return img_vaddr_to_offset(o->img, *offset - (uint64_t)o->bias, offset);
}

/* --- jumps ------------------------------------------------------------------ */

static int cgj_cmp(const void *x, const void *y)
{
	const struct cg_jump *a = x, *b = y;

	uint64_t ca = (uint64_t)a->j.conditional, cb = (uint64_t)b->j.conditional;

	return dcpi_cmp_keys((uint64_t[]){ a->obj, a->j.from, a->j.to, ca },
			     (uint64_t[]){ b->obj, b->j.from, b->j.to, cb }, 4);
}

/* Translate, merge and write the n jumps of one object. */
static int cg_write_jumps(struct cg *c, struct cg_jump *v, size_t n, struct prof_db *db,
			  struct dcpi_err *err)
{
	struct cg_obj *o = &c->objs[v[0].obj];
	char name[NAME_MAX + 1], *buf = NULL;
	size_t len = 0, k = 0;
	FILE *mf;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (cg_offset(c, v[i].obj, &v[i].j.from) || cg_offset(c, v[i].obj, &v[i].j.to)) {
			c->st->jumps_dropped++;
			continue;
		}
		v[k++] = v[i];
	}
	dcpi_qsort(v, k, sizeof(*v), cgj_cmp);
	mf = open_memstream(&buf, &len);
	if (!mf)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", c->path);
	fprintf(mf, "# dcpi callgrind-jumps 1\n# image %s\n# build-id %s\n"
		"# from to taken executed kind: file offsets (hex), counts, c|u\n",
		o->id.path, o->id.build_id[0] ? o->id.build_id : "-");
	for (size_t i = 0, j; i < k; i = j) {
		struct import_jump m = v[i].j;

		for (j = i + 1; j < k && !cgj_cmp(&v[i], &v[j]); j++) {
			m.count += v[j].j.count;
			m.executed += v[j].j.executed;
		}
		fprintf(mf, "%" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRIu64 " %c\n", m.from, m.to,
			m.count, m.executed, m.conditional ? 'c' : 'u');
		c->st->jumps++;
	}
	if (fclose(mf) || !buf) {
		free(buf);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", c->path);
	}
	ret = import_jumps_name(&o->id, name, sizeof(name));
	if (ret)
		ret = dcpi_errf(err, ret, "%s: jumps file name too long", o->id.path);
	else
		ret = prof_epoch_write_file(db, c->st->epoch, name, buf, len, err);
	free(buf);
	return ret;
}

static int cg_flush_jumps(struct cg *c, struct prof_db *db, struct dcpi_err *err)
{
	int ret = 0;

	dcpi_qsort(c->jumps, c->njumps, sizeof(*c->jumps), cgj_cmp);
	for (size_t i = 0, j; i < c->njumps && !ret; i = j) {
		for (j = i; j < c->njumps && c->jumps[j].obj == c->jumps[i].obj; j++)
			;
		if (!c->objs[c->jumps[i].obj].mapped) {
			c->st->jumps_dropped += j - i;
			continue;
		}
		ret = cg_write_jumps(c, &c->jumps[i], j - i, db, err);
	}
	return ret;
}

/* --- the import --------------------------------------------------------------- */

static int cg_write_meta(struct cg *c, struct prof_db *db, struct dcpi_err *err)
{
	struct prof_epoch_meta m;
	struct stat sb;
	size_t w;

	memset(&m, 0, sizeof(m));
	prof_meta_this_machine(&m);
	w = (size_t)snprintf(m.settings, sizeof(m.settings),
			     "imported from callgrind %s (exact counts): events", c->path);
	for (size_t i = 0; i < c->nevents && w < sizeof(m.settings); i++)
		w += (size_t)snprintf(m.settings + w, sizeof(m.settings) - w, " %s",
				      c->events[i].name + 10);
	if (c->cmd[0] && w < sizeof(m.settings))
		snprintf(m.settings + w, sizeof(m.settings) - w, "; cmd: %s", c->cmd);
	m.calibrated = 0;
	m.cycles_per_sample = 0;
	m.samples = c->st->samples;
	if (!stat(c->path, &sb))
		m.start_ns = m.end_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull +
					(uint64_t)sb.st_mtim.tv_nsec;
	return prof_epoch_meta_write(db, c->st->epoch, &m, err);
}

static void cg_free(struct cg *c)
{
	for (size_t i = 0; i < c->fn_cap; i++)
		free(c->fn_names[i]);
	free(c->fn_names);
	free(c->ob_ids);
	for (size_t i = 0; i < c->npool; i++)
		free(c->pool[i]);
	free(c->pool);
	for (size_t i = 0; i < c->nobjs; i++) {
		free(c->objs[i].path);
		img_close(c->objs[i].img);
	}
	free(c->objs);
	free(c->fa);
	free(c->jumps);
	agg_free(c->tab);
}

int imp_probe_callgrind(const char *head, size_t n, const char *path, struct dcpi_err *err)
{
	(void)n;
	(void)path;
	(void)err;
	return !strncmp(head, "# callgrind format", 18) || !strncmp(head, "events:", 7) ||
	       strstr(head, "\nevents:") != NULL;
}

int import_callgrind(const char *path, struct prof_db *db, struct import_stats *st,
		     struct dcpi_err *err)
{
	struct cg c;
	uint8_t *buf = NULL;
	size_t len;
	int ret;

	memset(st, 0, sizeof(*st));
	memset(&c, 0, sizeof(c));
	st->kind = IMPORT_CALLGRIND;
	c.path = path;
	c.st = st;
	c.cur_obj = -1;
	c.instr_pos = -1;
	c.npos = 1;		/* the format's default: "positions: line" */
	prof_image_id_unknown(&c.unknown);
	ret = agg_new(&c.tab, err);
	if (!ret)
		ret = imp_read_file(path, &buf, &len, err);
	if (!ret)
		ret = cg_parse(&c, (char *)buf, len, err);
	free(buf);
	if (ret)
		goto out;
	cg_open_objs(&c);
	ret = imp_epoch_begin(db, st, err);
	if (!ret)
		ret = imp_table_flush(c.tab, cg_image_id, cg_offset, &c, c.events, c.nevents,
				      db, st->epoch, st, err);
	if (!ret)
		ret = cg_flush_jumps(&c, db, err);
	if (!ret)
		ret = cg_write_meta(&c, db, err);
	ret = imp_epoch_end(db, path, st, ret, err);
	for (size_t i = 0; i < c.nobjs && !ret; i++)
		if (!c.objs[i].mapped)
			st->unknown_samples++;
	if (!ret && st->unknown_samples)
		snprintf(st->note, sizeof(st->note), "%" PRIu64 " objects could not be read "
			 "(costs kept by address in [unknown])", st->unknown_samples);
	if (!ret && st->skipped)
		snprintf(st->note + strlen(st->note), sizeof(st->note) - strlen(st->note),
			 "%s%" PRIu64 " counts at addresses outside their object were dropped",
			 st->note[0] ? "; " : "", st->skipped);
	if (!ret && st->jumps_dropped)
		snprintf(st->note + strlen(st->note), sizeof(st->note) - strlen(st->note),
			 "%s%" PRIu64 " jumps that leave their object (or in unreadable "
			 "objects) were not kept", st->note[0] ? "; " : "", st->jumps_dropped);
out:
	cg_free(&c);
	return ret;
}
