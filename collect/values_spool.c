/*
 * collect/values_spool.c - value samples out of the runtime's register files
 * (PRT_VBURST records, collect/pathrt.h) into per-image value profiles
 * (include/dcpi/values.h; docs/values.md).
 *
 * A burst of n pcs with n register files gives, for each of its
 * instructions, the registers just before it (file i) and, for all but the
 * last, just after it (file i + 1): the trap flag's exact one-instruction
 * bounce-back (seed 000).  The instruction is decoded once per (image,
 * offset) from the image file and its values derived:
 *   result   the one integer register it writes, after, at its width
 *            (for a load, kept as load only);
 *   addr     the effective address of its memory operand (base + index x
 *            scale + displacement from the registers before; rip-relative
 *            from the pc; fs/gs-relative operands are left out: the runtime
 *            does not read segment bases);
 *   load     mov-family loads and pop into an integer register: the value
 *            loaded (the register after);
 *   store    mov-family stores and push of a register: the value stored
 *            (the register before);
 *   stride   addr minus the address the same instruction used the previous
 *            time it ran in the same burst;
 *   branch   conditional branches: taken or not (the next pc);
 *   target   indirect calls and jumps: where they went (tagged code);
 *   arg0-5, callsite  at a procedure's first instruction: rdi, rsi, rdx, rcx,
 *            r8, r9 before it, and when the step before was a call, its
 *            return address (tagged code).
 * Each goes into the (image, offset, kind) hotlist (Space-Saving with 64
 * counters, values.h says why not seed 000's Gibbons-Matias lists), so
 * memory is bounded per instruction however long the run.  The
 * burst's first instruction, where the timer sample landed, is left out:
 * which execution it is depends on how long executions take (a load that
 * misses is more likely to be there), while the steps after it follow the
 * program's execution order.
 *
 * With a marking plan (docs/values.md, "Marking plan") the runtime also
 * catches calls at the entries it marks with a breakpoint (PRT_ARGS): those
 * give the entries' arguments and call sites, one per call, and the bursts'
 * steps through the same entries are left out, as their calls are weighted
 * by the time the bursts start in.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/values.h"
#include "internal.h"
#include "latency.h"
#include "pathrt.h"
#include "plan.h"
#include "values_spool.h"
#include "insn_cache.h"

enum {
	VI_RESULT = 1u << 0,
	VI_ADDR = 1u << 1,
	VI_LOAD = 1u << 2,
	VI_STORE = 1u << 3,
	VI_COND = 1u << 4,
	VI_TARGET = 1u << 5,
	VI_ENTRY = 1u << 6,
	VI_CALL = 1u << 7,
	VI_PLANNED = 1u << 9,	/* an entry the plan breakpoints: no burst args */
};

/* An entry the runtime's plan breakpoints (pathrt.h, PRT_PLAN_BP). */
struct vmark {
	uint64_t off;
	char *path;
};

/* What the values of one instruction need of its decoding. */
struct vinsn {
	uint64_t off;		/* file offset; the key with img */
	uint32_t img;
	uint32_t flags;		/* VI_* */
	uint64_t vaddr;		/* where it was decoded */
	uint8_t size;
	uint8_t dst, src;	/* integer registers (CFG_R_*), 0xff none */
	uint8_t dbytes, sbytes;	/* their widths: 1, 2, 4, 8 */
	struct cfg_mem mem;
};

struct vimage {
	struct image *img;	/* NULL: could not be opened (or not tried) */
	int tried;
};

struct vals_acc {
	struct val_profile *prof;	/* by image index of the maps */
	size_t nprof;
	struct vimage *im;
	size_t nim;
	struct insn_cache ins;		/* of struct vinsn */
	struct val_rng rng;
	uint64_t samples, values, undecoded, latency;
	struct lat_table lat;		/* ok 0: latency samples left out */
	struct vmark *marks;
	size_t nmarks, capmarks;
	uint64_t calls;			/* PRT_ARGS records taken */
};

int vals_acc_new(struct vals_acc **out, struct dcpi_err *err)
{
	struct vals_acc *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v)
		return dcpi_errf(err, -ENOMEM, "value samples: out of memory");
	v->ins.size = sizeof(struct vinsn);
	v->rng.s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	*out = v;
	return 0;
}

void vals_acc_latency(struct vals_acc *v, const struct lat_table *t)
{
	v->lat = *t;
}

void vals_acc_free(struct vals_acc *v)
{
	if (!v)
		return;
	val_profiles_free(v->prof, v->nprof);
	for (size_t i = 0; i < v->nim; i++)
		img_close(v->im[i].img);
	free(v->im);
	insn_cache_free(&v->ins);
	for (size_t i = 0; i < v->nmarks; i++)
		free(v->marks[i].path);
	free(v->marks);
	free(v);
}

/* Room for image in both per-image arrays (each grown on its own, so a
 * failure leaves neither shorter than its count). */
static int grow_images(struct vals_acc *v, uint32_t image)
{
	size_t n = (size_t)image + 16;

	if (image >= v->nprof) {
		struct val_profile *p = realloc(v->prof, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->prof = p;
		for (size_t i = v->nprof; i < n; i++) {
			val_profile_init(&v->prof[i]);
			v->prof[i].new_mode = VAL_SPACESAVING;	/* shares within 1/64 */
		}
		v->nprof = n;
	}
	if (image >= v->nim) {
		struct vimage *im = realloc(v->im, n * sizeof(*im));

		if (!im)
			return -ENOMEM;
		v->im = im;
		memset(v->im + v->nim, 0, (n - v->nim) * sizeof(*im));
		v->nim = n;
	}
	return 0;
}

/* Width in bytes of an AT&T register name ("%eax", "%r8w", "%sil"); 0 when
 * it is not an integer register. */
static int reg_bytes(const char *r)
{
	size_t n = strlen(r);

	if (!n)
		return 0;
	if (r[0] == 'r')
		return r[n - 1] == 'd' ? 4 : r[n - 1] == 'w' ? 2 : r[n - 1] == 'b' ? 1 : 8;
	if (r[0] == 'e')
		return 4;
	if (n == 2 && (r[1] == 'l' || r[1] == 'h'))
		return 1;
	if (n == 3 && r[2] == 'l')	/* sil dil bpl spl */
		return 1;
	if (n == 2)			/* ax bx cx dx si di bp sp */
		return 2;
	return 0;
}

/* The register name of the AT&T operand that starts at s (after spaces):
 * "%rax" -> "rax"; "" when the operand is not a register. */
static void operand_reg(const char *s, char *out, size_t len)
{
	size_t n = 0;

	while (*s == ' ')
		s++;
	out[0] = '\0';
	if (*s != '%')
		return;
	s++;
	while (*s && *s != ',' && *s != ' ' && n + 1 < len)
		out[n++] = *s++;
	out[n] = '\0';
}

/* The one integer register of mask (CFG_RBIT), or 0xff. */
static uint8_t one_gpr(uint64_t mask)
{
	int r = -1;

	for (int k = 0; k < 16; k++)
		if (mask & CFG_RBIT(k)) {
			if (r >= 0)
				return 0xff;
			r = k;
		}
	return r < 0 ? 0xff : (uint8_t)r;
}

static void classify(struct vinsn *vi, const struct cfg_insn *in, int entry)
{
	char text[CFG_TEXT_MAX], first[16] = "", dst[16] = "";
	const char *ops, *last;
	uint64_t wr = in->regs_written;
	int mov = !strncmp(in->mnemonic, "mov", 3) && in->nmem == 1;

	vi->size = in->size;
	vi->dst = vi->src = 0xff;
	vi->flags = entry ? VI_ENTRY : 0;
	if (in->flags & (CFG_I_INVALID | CFG_I_NOP))
		return;
	ops = strchr(cfg_insn_text(in, text, sizeof(text)), ' ');
	if (ops) {
		operand_reg(ops, first, sizeof(first));
		last = strrchr(ops, ',');
		operand_reg(last ? last + 1 : ops, dst, sizeof(dst));
	}
	if (in->flags & CFG_I_STACK)
		wr &= ~CFG_RBIT(CFG_R_RSP);
	if (!(in->flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET)) && reg_bytes(dst) &&
	    (vi->dst = one_gpr(wr)) != 0xff) {
		vi->flags |= VI_RESULT;
		vi->dbytes = (uint8_t)reg_bytes(dst);
		if (vi->dbytes == 4)
			vi->dbytes = 8;		/* 32-bit writes zero the upper half */
		if ((mov && in->form == CFG_F_LOAD) || !strncmp(in->mnemonic, "pop", 3))
			vi->flags |= VI_LOAD;
	}
	if (in->form == CFG_F_STORE && (mov || !strncmp(in->mnemonic, "push", 4)) &&
	    reg_bytes(first)) {
		uint64_t rd = in->regs_read & 0xffff;

		if (!mov)
			rd &= ~CFG_RBIT(CFG_R_RSP);
		else if (in->mem.base != CFG_REG_NONE)
			rd &= ~CFG_RBIT(in->mem.base);
		if (in->mem.index != CFG_REG_NONE && mov)
			rd &= ~CFG_RBIT(in->mem.index);
		if ((vi->src = one_gpr(rd)) != 0xff) {
			vi->flags |= VI_STORE;
			vi->sbytes = (uint8_t)reg_bytes(first);
		}
	}
	if (in->nmem >= 1 && !(in->flags & CFG_I_LEA) && !in->mem.segment) {
		vi->flags |= VI_ADDR;
		vi->mem = in->mem;
	}
	if (in->flags & CFG_I_COND)
		vi->flags |= VI_COND;
	if ((in->flags & CFG_I_INDIRECT) && !(in->flags & CFG_I_RET) &&
	    (in->flags & (CFG_I_BRANCH | CFG_I_CALL)))
		vi->flags |= VI_TARGET;
	if (in->flags & CFG_I_CALL)
		vi->flags |= VI_CALL;
}

static struct image *image_of(struct vals_acc *v, struct maps *m, uint32_t image)
{
	struct vimage *im = &v->im[image];
	const struct prof_image_id *id;
	struct dcpi_err e;

	if (!im->tried) {
		im->tried = 1;
		id = maps_image(m, image);
		if (id && id->path[0] == '/')
			img_open(id->path, IMG_NO_DWARF, &im->img, &e);
	}
	return im->img;
}

static int marked(const struct vals_acc *v, const char *path, uint64_t off)
{
	for (size_t i = 0; i < v->nmarks; i++)
		if (v->marks[i].off == off && !strcmp(v->marks[i].path, path))
			return 1;
	return 0;
}

int vals_acc_plan(struct vals_acc *v, const char *dir, struct dcpi_err *err)
{
	struct plan_rt_mark *pm;
	size_t n;
	int ret = plan_rt_read(dir, &pm, &n, err);

	for (size_t i = 0; i < n && !ret; i++) {
		struct vmark *mk;

		if (!pm[i].path || !(pm[i].flags & PRT_PLAN_BP))
			continue;
		if (!(mk = dcpi_append((void **)&v->marks, &v->nmarks, &v->capmarks,
				       sizeof(*mk))) || !(mk->path = strdup(pm[i].path))) {
			if (mk)
				v->nmarks--;
			ret = dcpi_errf(err, -ENOMEM, "value samples: out of memory");
		}
		if (!ret)
			mk->off = pm[i].off;
	}
	plan_rt_free(pm, n);
	return ret;
}

/* The decoding of (image, off); NULL when it cannot be decoded. */
static const struct vinsn *insn_at(struct vals_acc *v, struct maps *m, uint32_t image,
				   uint64_t off)
{
	struct cfg_insn in;
	struct image *img;
	const struct img_proc *proc;
	const uint8_t *bytes;
	size_t avail = 0;
	uint64_t vaddr;
	int fresh;
	struct vinsn *vi = insn_cache_get(&v->ins, image, off, &fresh);

	if (!vi || !fresh)
		return vi && vi->size ? vi : NULL;
	vi->img = image;
	vi->off = off;
	vi->size = 0;		/* cannot be decoded, until shown otherwise */
	img = image_of(v, m, image);
	if (!img || img_offset_to_vaddr(img, off, &vaddr) ||
	    !(bytes = img_bytes(img, vaddr, &avail)) || !avail ||
	    cfg_decode_one(bytes, avail < 15 ? avail : 15, vaddr, &in)) {
		v->undecoded++;
		return NULL;
	}
	proc = img_proc_at(img, vaddr);
	vi->vaddr = vaddr;
	classify(vi, &in, proc && proc->addr == vaddr);
	if ((vi->flags & VI_ENTRY) && marked(v, maps_image(m, image)->path, off))
		vi->flags |= VI_PLANNED;
	return vi;
}

/* The System V argument registers, in CFG_R_* (= struct prt_regs) order. */
static const int argreg[6] = { CFG_R_RDI, CFG_R_RSI, CFG_R_RDX, CFG_R_RCX, CFG_R_R8, CFG_R_R9 };

static uint64_t width(uint64_t x, unsigned bytes)
{
	return bytes >= 8 ? x : x & ((UINT64_C(1) << (8 * bytes)) - 1);
}

static int add(struct vals_acc *v, uint32_t image, uint64_t off, uint32_t kind, uint64_t value)
{
	struct val_hotlist *h = val_profile_list(&v->prof[image], off, kind);

	if (!h)
		return -ENOMEM;
	val_hotlist_add(h, value, &v->rng);
	v->values++;
	return 0;
}

/* A code address as a tagged value of image's profile. */
static int code_value(struct vals_acc *v, struct maps *m, uint32_t pid, uint32_t image,
		      uint64_t pc, uint64_t *out, struct dcpi_err *err)
{
	uint32_t ti;
	uint64_t toff;
	int tag, ret = maps_resolve(m, pid, pc, &ti, &toff, err);

	if (ret)
		return ret;
	if (ti == MAPS_UNKNOWN) {
		*out = VAL_CODE_NONE;
		return 0;
	}
	tag = ti == image ? 0 : val_profile_image_tag(&v->prof[image], maps_image(m, ti));
	if (tag < 0)
		return tag;
	*out = VAL_CODE((uint32_t)tag, toff);
	return 0;
}

int vals_burst(struct vals_acc *v, struct maps *m, uint32_t pid, const uint64_t *pc,
	       const uint32_t *img, const uint64_t *off, const struct prt_regs *regs,
	       size_t n, struct dcpi_err *err)
{
	/* copies: a later lookup may grow (move) the table */
	struct vinsn ins[PRT_KMAX];
	uint64_t ea[PRT_KMAX];
	int ret = 0;

	if (n > PRT_KMAX)
		n = PRT_KMAX;
	for (size_t i = 0; i < n; i++) {
		const struct vinsn *d;

		ins[i].size = 0;
		if (img[i] == MAPS_UNKNOWN)
			continue;
		if (grow_images(v, img[i]))
			return dcpi_errf(err, -ENOMEM, "value samples: out of memory");
		if ((d = insn_at(v, m, img[i], off[i])))
			ins[i] = *d;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		const struct vinsn *vi = ins[i].size ? &ins[i] : NULL;
		const uint64_t *b = regs[i].r, *a = i + 1 < n ? regs[i + 1].r : NULL;
		uint32_t im = img[i];
		uint64_t o = off[i], x;

		/* pc[0] is where a timer sample landed: time-weighted, so a slow
		 * execution (a load that missed) would count more than a fast one.
		 * The steps after it follow execution: only they are values. */
		if (!vi || i == 0)
			continue;
		v->samples++;
		v->prof[im].samples++;
		if ((vi->flags & (VI_ENTRY | VI_PLANNED)) == VI_ENTRY) {
			for (int k = 0; k < 6 && !ret; k++)
				ret = add(v, im, o, VAL_ARG0 + (uint32_t)k, b[argreg[k]]);
			if (!ret && ins[i - 1].size && (ins[i - 1].flags & VI_CALL)) {
				ret = code_value(v, m, pid, im, pc[i - 1] + ins[i - 1].size, &x,
						 err);
				if (!ret)
					ret = add(v, im, o, VAL_CALLSITE, x);
			}
		}
		if (!ret && (vi->flags & VI_ADDR)) {
			const struct cfg_mem *mm = &vi->mem;

			x = mm->rip_relative ? (uint64_t)mm->disp + (pc[i] - vi->vaddr)
					     : (uint64_t)mm->disp;
			if (!mm->rip_relative && mm->base != CFG_REG_NONE && mm->base < 16)
				x += b[mm->base];
			if (mm->index != CFG_REG_NONE && mm->index < 16)
				x += b[mm->index] * mm->scale;
			ea[i] = x;
			ret = add(v, im, o, VAL_ADDR, x);
			/* steps from 1: the first's address was never computed */
			for (size_t j = i; j-- > 1 && !ret;)
				if (pc[j] == pc[i] && ins[j].size && (ins[j].flags & VI_ADDR)) {
					ret = add(v, im, o, VAL_STRIDE, x - ea[j]);
					break;
				}
		}
		/* the runtime's timed re-load of this load's address, just before
		 * it ran (it decodes the common integer loads: collect/loadea.h) */
		if (!ret && regs[i].lat && v->lat.ok && (vi->flags & VI_ADDR)) {
			ret = add(v, im, o, VAL_LATENCY,
				  (uint64_t)lat_level(&v->lat, regs[i].lat - 1));
			v->latency++;
		}
		if (!ret && (vi->flags & VI_STORE))
			ret = add(v, im, o, VAL_STORE, width(b[vi->src], vi->sbytes));
		if (!a || ret)
			continue;
		if (vi->flags & VI_RESULT)	/* a load's result is its value */
			ret = add(v, im, o, vi->flags & VI_LOAD ? VAL_LOAD : VAL_RESULT,
				  width(a[vi->dst], vi->dbytes));
		if (!ret && (vi->flags & VI_COND))
			ret = add(v, im, o, VAL_BRANCH, pc[i + 1] != pc[i] + vi->size);
		if (!ret && (vi->flags & VI_TARGET)) {
			ret = code_value(v, m, pid, im, pc[i + 1], &x, err);
			if (!ret)
				ret = add(v, im, o, VAL_TARGET, x);
		}
	}
	if (ret == -ENOMEM)
		return dcpi_errf(err, ret, "value samples: out of memory");
	return ret;
}

int vals_args(struct vals_acc *v, struct maps *m, uint32_t pid, const struct prt_args *a,
	      struct dcpi_err *err)
{
	uint32_t im;
	uint64_t off, x;
	int ret = maps_resolve(m, pid, a->pc, &im, &off, err);

	if (ret || im == MAPS_UNKNOWN)
		return ret;
	if (grow_images(v, im))
		return dcpi_errf(err, -ENOMEM, "value samples: out of memory");
	v->calls++;
	for (int k = 0; k < 6 && !ret; k++)
		ret = add(v, im, off, VAL_ARG0 + (uint32_t)k, a->regs.r[argreg[k]]);
	if (!ret)
		ret = code_value(v, m, pid, im, a->ret, &x, err);
	if (!ret)
		ret = add(v, im, off, VAL_CALLSITE, x);
	if (ret == -ENOMEM)
		return dcpi_errf(err, ret, "value samples: out of memory");
	return ret;
}

int vals_finish(struct vals_acc *v, struct maps *m, struct val_profile **out, size_t *n,
		struct vals_stats *st, struct dcpi_err *err)
{
	size_t k = 0;

	*out = NULL;
	*n = 0;
	st->samples = v->samples;
	st->values = v->values;
	st->undecoded = v->undecoded;
	st->latency = v->latency;
	st->calls = v->calls;
	for (size_t i = 0; i < v->nprof; i++) {
		struct val_profile *p = &v->prof[i];

		if (!p->nlists) {
			val_profile_free(p);
			continue;
		}
		p->image = *maps_image(m, (uint32_t)i);
		if (val_profile_normalize(p))
			return dcpi_errf(err, -ENOMEM, "value samples: out of memory");
		if (k != i) {
			v->prof[k] = *p;
			val_profile_init(p);
		}
		k++;
	}
	st->images = k;
	*out = k ? v->prof : NULL;
	if (!k)
		free(v->prof);
	*n = k;
	v->prof = NULL;
	v->nprof = 0;
	return 0;
}
