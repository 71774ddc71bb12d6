/*
 * collect/datarec.c - data profiles (include/dcpi/data.h; docs/data.md;
 * seed 001) from the value samples' register files and the runtime's heap
 * records (collect/pathrt.h).
 *
 * The spool files are replayed a second time, after paths_spool.c's pass,
 * so that the path and value code stays as it is: each PRT_MAPS record
 * gives a snapshot of the executable mappings (a pseudo-pid per snapshot,
 * as paths_spool.c does), each PRT_VBURST the pcs and the registers before
 * each step.  Steps 1..n-1 (step 0 is where the timer landed: time-weighted)
 * with an explicit memory operand (not lea, not fs/gs-relative) give an
 * access: address from the registers, size from the decoding, read and/or
 * written from its form.  The address is placed, in this order:
 *   stack  within [rsp - 128, rsp + 1 MB): line relative to rsp;
 *   image  in a PT_LOAD segment of an image whose load bias is known (the
 *          bias is learnt from the pcs stepped in it: pc - link vaddr);
 *   heap   in a block the runtime recorded (allocations of DATA_HEAP_MIN
 *          bytes or more, "<pid>.heap"), live at the burst's time: keyed by
 *          the allocation's call site (image, file offset);
 *   anon   anything else, by address.
 * A heap block's record may carry a weight (pathrt.c: one small block of a
 * busy site standing for several): its accesses count that many times.
 * The kernel's transfers (PRT_KIO, collect/pathrt_io.c) are added to the
 * block live at their address and time, per allocation site, exactly.
 * A string instruction (movs, stos, lods; cmps and scas once) is one
 * access per element it moved while stepped: a rep-prefixed one traps
 * after every iteration (pathrt.c records its pc once), so its iterations
 * are units stepped like instructions: rcx before it less rcx at the next
 * step, or, when the trap budget (K + 64 traps, K the longest burst not
 * cut) ended the burst in it, what was left of the budget; the iterations
 * after the timer landed in one count too.  Counting every element of a
 * long copy instead made one rare 128 KB memcpy outweigh the rest of a
 * profile (and capping a burst at K - 1 units skewed memobj's sites, whose
 * loop is longer than that).  The direction flag is taken as clear.
 * Sharing: every non-stack access also goes into a list (process, line
 * address, window, thread, bytes read, bytes written); sorted, each
 * (line, window) with a thread that wrote and another that touched the
 * line is shared, truly when a written byte was touched by the other,
 * falsely otherwise (seed 001's rule per area of a line).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/collect.h"
#include "dcpi/image.h"
#include "datarec.h"
#include "insn_cache.h"
#include "pathrt.h"
#include "spool_maps.h"

#define STACK_BELOW 128			/* the red zone */
#define STACK_ABOVE (1ULL << 20)
#define HEAP_SCAN 64			/* blocks looked at below an address */
#define NORM_EVERY 65536
#define TRAP_SLACK 64			/* traps beyond K in a burst (pathrt.c) */

enum { DI_LOAD = 1, DI_STORE = 2 };
/* String instructions: which index registers they read and write through. */
enum { STR_SRC_LOAD = 1, STR_DST_LOAD = 2, STR_DST_STORE = 4, STR_REP_COUNT = 8 };

struct dinsn {			/* what an access needs of its instruction */
	uint32_t img, flags;
	uint64_t off, vaddr;
	struct cfg_mem mem;
	uint8_t ok;
	uint8_t str, elem;	/* STR_* of a string instruction, element bytes */
};

struct dimg {
	struct image *img;
	int tried;
};

struct dbias {
	uint32_t spid, image;
	uint64_t bias;
};

struct dblock {
	uint32_t pid, cimg;
	uint64_t lo, hi, t0, t1, caller, coff;
	uint32_t spid;		/* snapshot the caller was resolved in, 0: not yet */
	uint32_t weight;	/* blocks of its site it stands for (pathrt.c) */
};

struct dkio {			/* a PRT_KIO record (collect/pathrt_io.c) */
	uint32_t pid, out;
	uint64_t addr, size, t;
};

struct dacc {
	uint32_t pid, img;
	uint64_t line, win, tid, rmask, wmask;
	struct data_key k;
};

struct drec {
	struct maps *maps;
	uint32_t spid, next_spid;
	struct dimg *im;
	struct data_profile *prof;
	size_t nim;
	struct insn_cache ins;		/* of struct dinsn */
	struct dbias *bias;
	size_t nbias, capbias;
	struct dblock *blk;
	size_t nblk, capblk;
	struct dacc *acc;
	size_t nacc, capacc;
	struct dkio *kio;
	size_t nkio, capkio;
	struct data_rec_stats *st;
	size_t k;		/* steps of the longest burst not cut: K */
};

static int room_images(struct drec *d, uint32_t image)
{
	size_t n = (size_t)image + 16;
	struct dimg *im;
	struct data_profile *p;

	if (image < d->nim)
		return 0;
	if (!(im = realloc(d->im, n * sizeof(*im))))
		return -ENOMEM;
	d->im = im;
	if (!(p = realloc(d->prof, n * sizeof(*p))))
		return -ENOMEM;
	d->prof = p;
	for (size_t i = d->nim; i < n; i++) {
		d->im[i] = (struct dimg){ NULL, 0 };
		data_profile_init(&d->prof[i]);
	}
	d->nim = n;
	return 0;
}

static struct image *image_of(struct drec *d, uint32_t image)
{
	struct dimg *im = &d->im[image];
	const struct prof_image_id *id;
	struct dcpi_err e;

	if (!im->tried) {
		im->tried = 1;
		id = maps_image(d->maps, image);
		if (id && id->path[0] == '/')
			img_open(id->path, IMG_NO_DWARF, &im->img, &e);
	}
	return im->img;
}

/* movs, stos, lods, cmps, scas (prefixes 66, REX, rep; no segment or
 * address size): di->str and di->elem; 0 for anything else. */
static int string_op(const struct cfg_insn *in, struct dinsn *di)
{
	static const uint8_t how[6] = {
		STR_SRC_LOAD | STR_DST_STORE | STR_REP_COUNT,	/* a4 movs */
		STR_SRC_LOAD | STR_DST_LOAD,			/* a6 cmps */
		0,						/* a8 test */
		STR_DST_STORE | STR_REP_COUNT,			/* aa stos */
		STR_SRC_LOAD | STR_REP_COUNT,			/* ac lods */
		STR_DST_LOAD,					/* ae scas */
	};
	unsigned rep = 0, o16 = 0, w = 0;

	for (size_t i = 0; i < in->size; i++) {
		uint8_t b = in->bytes[i];

		if (b == 0xf2 || b == 0xf3)
			rep = 1;
		else if (b == 0x66)
			o16 = 1;
		else if (b >= 0x40 && b <= 0x4f)
			w = b & 8;
		else if (b < 0xa4 || b > 0xaf || !how[(b - 0xa4) / 2])
			return 0;
		else {
			di->str = how[(b - 0xa4) / 2];
			if (!rep)
				di->str &= (uint8_t)~STR_REP_COUNT;
			di->elem = b & 1 ? (w ? 8 : o16 ? 2 : 4) : 1;
			di->ok = 1;
			return 1;
		}
	}
	return 0;
}

static void decode(struct drec *d, struct dinsn *di)
{
	struct image *img = image_of(d, di->img);
	const uint8_t *bytes;
	struct cfg_insn in;
	size_t avail = 0;

	if (!img || img_offset_to_vaddr(img, di->off, &di->vaddr) ||
	    !(bytes = img_bytes(img, di->vaddr, &avail)) || !avail ||
	    cfg_decode_one(bytes, avail < 15 ? avail : 15, di->vaddr, &in) ||
	    string_op(&in, di))
		return;
	if (in.nmem != 1 || (in.flags & (CFG_I_LEA | CFG_I_NOP)) || in.mem.segment)
		return;
	if (in.form == CFG_F_LOAD || in.form == CFG_F_RMW)
		di->flags |= DI_LOAD;
	if (in.form == CFG_F_STORE || in.form == CFG_F_RMW)
		di->flags |= DI_STORE;
	di->mem = in.mem;
	di->ok = !!(di->flags & (DI_LOAD | DI_STORE));
}

/* The decoding of (img, off); NULL on memory exhaustion. */
static const struct dinsn *insn_at(struct drec *d, uint32_t img, uint64_t off)
{
	int fresh;
	struct dinsn *di = insn_cache_get(&d->ins, img, off, &fresh);

	if (di && fresh) {
		*di = (struct dinsn){ .img = img, .off = off };
		decode(d, di);
	}
	return di;
}

/* pc - link vaddr of image in the current snapshot, learnt once. */
static int learn_bias(struct drec *d, uint32_t image, uint64_t pc, const struct dinsn *di)
{
	for (size_t i = d->nbias; i-- > 0 && d->bias[i].spid == d->spid;)
		if (d->bias[i].image == image)
			return 0;
	if (!di->vaddr ||
	    dcpi_grow((void **)&d->bias, &d->capbias, d->nbias + 1, sizeof(*d->bias)))
		return di->vaddr ? -ENOMEM : 0;
	d->bias[d->nbias++] = (struct dbias){ d->spid, image, pc - di->vaddr };
	return 0;
}

/* An image of the snapshot whose segments hold a: its index, vaddr. */
static int in_image(struct drec *d, uint64_t a, uint32_t *image, uint64_t *vaddr)
{
	for (size_t i = d->nbias; i-- > 0 && d->bias[i].spid == d->spid;) {
		struct image *img = d->im[d->bias[i].image].img;
		uint64_t v = a - d->bias[i].bias;

		for (size_t s = 0; img && s < img_nsegments(img); s++) {
			const struct img_segment *g = img_segment(img, s);

			if (v >= g->vaddr && v - g->vaddr < g->memsz) {
				*image = d->bias[i].image;
				*vaddr = v;
				return 1;
			}
		}
	}
	return 0;
}

static int blk_cmp(const void *x, const void *y)
{
	const struct dblock *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->pid, a->lo, a->t0 },
			     (uint64_t[]){ b->pid, b->lo, b->t0 }, 3);
}

/* The block of process pid holding a at time t. */
static struct dblock *in_heap(struct drec *d, uint32_t pid, uint64_t a, uint64_t t)
{
	size_t lo = 0, hi = d->nblk, n = 0;

	while (lo < hi) {	/* first block after (pid, a) */
		size_t mid = (lo + hi) / 2;
		const struct dblock *b = &d->blk[mid];

		if (b->pid < pid || (b->pid == pid && b->lo <= a))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0 && n++ < HEAP_SCAN && d->blk[lo].pid == pid) {
		struct dblock *b = &d->blk[lo];

		if (a < b->hi && b->t0 <= t && t <= b->t1)
			return b;
	}
	return NULL;
}

static int heap_key(struct drec *d, uint32_t prof, struct dblock *b, uint64_t a,
		    struct data_key *k)
{
	struct dcpi_err e;
	int tag;

	if (!b->spid) {
		b->spid = d->spid;
		if (maps_resolve(d->maps, d->spid, b->caller, &b->cimg, &b->coff, &e))
			b->cimg = MAPS_UNKNOWN;
	}
	if (b->cimg == MAPS_UNKNOWN)
		return 1;	/* a site in no image: anonymous */
	tag = data_profile_tag(&d->prof[prof], maps_image(d->maps, b->cimg));
	if (tag < 0)
		return tag;
	*k = (struct data_key){ DATA_HEAP, (uint32_t)tag, b->coff, (a - b->lo) & ~63ULL };
	return 0;
}

/* Where address a of step regs, by the accessing instruction in profile
 * prof, lies; *size of a heap block, *w the blocks it stands for. */
static int place(struct drec *d, uint32_t prof, uint32_t pid, uint64_t t, uint64_t a,
		 uint64_t rsp, struct data_key *k, uint64_t *size, uint32_t *w)
{
	struct dblock *b;
	uint32_t image;
	uint64_t v;
	int tag;

	*size = 0;
	*w = 1;
	if (a + STACK_BELOW >= rsp && a < rsp + STACK_ABOVE) {
		int64_t rel = (int64_t)(a - rsp);

		rel = rel >= 0 ? rel / DATA_LINE : -((-rel + DATA_LINE - 1) / DATA_LINE);
		*k = (struct data_key){ DATA_STACK, 0, 0, (uint64_t)(rel * DATA_LINE) };
		return 0;
	}
	if (in_image(d, a, &image, &v)) {
		tag = data_profile_tag(&d->prof[prof], maps_image(d->maps, image));
		if (tag < 0)
			return tag;
		*k = (struct data_key){ DATA_IMAGE, (uint32_t)tag, 0, v & ~63ULL };
		return 0;
	}
	if ((b = in_heap(d, pid, a, t))) {
		int rc = heap_key(d, prof, b, a, k);

		if (rc <= 0) {
			*size = b->hi - b->lo;
			*w = b->weight;
			return rc;
		}
	}
	*k = (struct data_key){ DATA_ANON, 0, 0, a & ~63ULL };
	return 0;
}

static uint64_t byte_mask(uint64_t a, unsigned size)
{
	unsigned o = (unsigned)(a & 63), n = size ? size : 1;

	if (o + n >= 64)
		return ~0ULL << o;
	return ((1ULL << n) - 1) << o;
}

/* n accesses of the instruction di (a load, a store or both) to the bytes
 * [a, a + len) of one line. */
static int line_access(struct drec *d, const struct prt_rec *h, uint32_t image,
		       const struct dinsn *di, uint64_t a, unsigned len, uint64_t n, int flags,
		       uint64_t rsp)
{
	struct data_entry e = { .insn = di->off };
	struct data_profile *p = &d->prof[image];
	uint32_t w;
	int rc = place(d, image, h->pid, h->time_ns, a, rsp, &e.k, &e.size, &w);

	if (rc)
		return rc;
	n *= w;		/* a sampled block of a busy site stands for w of them */
	e.accesses = n;
	e.loads = flags & DI_LOAD ? n : 0;
	e.stores = flags & DI_STORE ? n : 0;
	e.mask = byte_mask(a, len);
	d->st->accesses += n;
	d->st->space[e.k.space] += n;
	if (data_profile_add(p, &e))
		return -ENOMEM;
	if (p->n >= NORM_EVERY && !(p->n % NORM_EVERY) && data_normalize(p))
		return -ENOMEM;
	if (e.k.space == DATA_STACK)
		return 0;
	if (dcpi_grow((void **)&d->acc, &d->capacc, d->nacc + 1, sizeof(*d->acc)))
		return -ENOMEM;
	d->acc[d->nacc++] = (struct dacc){ h->pid, image, a & ~63ULL, h->time_ns / DATA_WINDOW_NS,
					   (uint64_t)h->pid << 32 | h->tid,
					   e.loads ? e.mask : 0, e.stores ? e.mask : 0, e.k };
	return 0;
}

/* A string instruction's side at a: count elements, line by line. */
static int string_side(struct drec *d, const struct prt_rec *h, uint32_t image,
		       const struct dinsn *di, uint64_t a, uint64_t count, int flags,
		       uint64_t rsp)
{
	uint64_t end = a + count * di->elem;
	int rc = 0;

	while (a < end && !rc) {
		uint64_t next = (a | 63) + 1, stop = next < end ? next : end;
		uint64_t n = (stop - a + di->elem - 1) / di->elem;

		rc = line_access(d, h, image, di, a, (unsigned)(stop - a), n, flags, rsp);
		a = stop;
	}
	return rc;
}

static int string_access(struct drec *d, const struct prt_rec *h, uint32_t image,
			 const struct dinsn *di, const uint64_t *r, uint64_t count)
{
	int rc = 0;

	if (!count)
		return 0;
	if (di->str & STR_SRC_LOAD)
		rc = string_side(d, h, image, di, r[CFG_R_RSI], count, DI_LOAD, r[CFG_R_RSP]);
	if (!rc && (di->str & (STR_DST_LOAD | STR_DST_STORE)))
		rc = string_side(d, h, image, di, r[CFG_R_RDI], count,
				 di->str & STR_DST_STORE ? DI_STORE : DI_LOAD, r[CFG_R_RSP]);
	return rc;
}

static int data_access(struct drec *d, const struct prt_rec *h, uint32_t image,
		  const struct dinsn *di, uint64_t pc, const uint64_t *r, uint64_t count)
{
	const struct cfg_mem *m = &di->mem;
	uint64_t a = m->rip_relative ? (uint64_t)m->disp + (pc - di->vaddr) : (uint64_t)m->disp;

	if (di->str)
		return string_access(d, h, image, di, r, count);
	if (!m->rip_relative && m->base != CFG_REG_NONE && m->base < 16)
		a += r[m->base];
	if (m->index != CFG_REG_NONE && m->index < 16)
		a += r[m->index] * m->scale;
	return line_access(d, h, image, di, a, m->size, 1, (int)di->flags, r[CFG_R_RSP]);
}

/* Iterations step i's rep string instruction ran stepped, traps the
 * traps taken up to the one that recorded it (none for step 0). */
static uint64_t rep_iterations(const struct drec *d, const struct prt_rec *h,
			       const struct prt_regs *regs, size_t i, size_t n, uint64_t traps)
{
	uint64_t budget = (d->k > n ? d->k : n) + TRAP_SLACK, rcx = regs[i].r[CFG_R_RCX];

	if (i + 1 < n) {
		uint64_t next = regs[i + 1].r[CFG_R_RCX];

		return next < rcx && rcx - next <= budget ? rcx - next : 1;
	}
	if (!(h->flags & PRT_F_CUT) || traps >= budget)
		return 1;
	return budget - traps < rcx ? budget - traps : rcx;
}

static int burst(struct drec *d, const struct prt_rec *h, const uint64_t *pc,
		 const struct prt_regs *regs, size_t n, struct dcpi_err *err)
{
	uint64_t traps = 0;	/* taken up to the one recording step i */
	int rc = 0;

	if (!h->flags && n > d->k)
		d->k = n;
	for (size_t i = 0; i < n && !rc; i++, traps++) {
		const struct dinsn *di;
		uint32_t image;
		uint64_t off, iters = 1;

		rc = maps_resolve(d->maps, d->spid, pc[i], &image, &off, err);
		if (rc || image == MAPS_UNKNOWN)
			continue;
		if (room_images(d, image) || !(di = insn_at(d, image, off)))
			return -ENOMEM;
		rc = learn_bias(d, image, pc[i], di);
		if (di->str & STR_REP_COUNT)
			iters = rep_iterations(d, h, regs, i, n, traps);
		traps += iters - 1;	/* the repeats */
		if (!i)			/* the timer landed in it: not its own */
			iters--;
		if (!rc && iters && di->ok)
			rc = data_access(d, h, image, di, pc[i], regs[i].r, iters);
	}
	return rc;
}

/* The kernel's transfers of process pid into the blocks live there then,
 * counted in the profile of the block's call site's image (the mappings
 * of the process's last snapshot name it when no sample did). */
static int kio_place(struct drec *d, uint32_t pid)
{
	for (size_t i = 0; i < d->nkio; i++) {
		struct dkio *x = &d->kio[i];
		struct data_kio e = { .calls = 1 };
		struct dcpi_err err;
		struct dblock *b;
		uint64_t n;
		int tag;

		if (x->pid != pid || !x->size || !(b = in_heap(d, pid, x->addr, x->t)))
			continue;
		n = b->hi - x->addr < x->size ? b->hi - x->addr : x->size;
		x->size = 0;	/* placed once, whichever spool file of pid comes first */
		if (!b->spid) {
			b->spid = d->spid;
			if (maps_resolve(d->maps, d->spid, b->caller, &b->cimg, &b->coff, &err))
				b->cimg = MAPS_UNKNOWN;
		}
		if (b->cimg == MAPS_UNKNOWN)
			continue;
		if (room_images(d, b->cimg))
			return -ENOMEM;
		tag = data_profile_tag(&d->prof[b->cimg], maps_image(d->maps, b->cimg));
		if (tag < 0)
			return tag;
		e.k = (struct data_key){ DATA_HEAP, (uint32_t)tag, b->coff, 0 };
		*(x->out ? &e.out : &e.in) = n * b->weight;
		if (data_profile_kio(&d->prof[b->cimg], &e))
			return -ENOMEM;
		d->st->kio_bytes += n;
	}
	return 0;
}

/* One spool file; a bad record ends it, as in paths_spool.c. */
static int replay_file(struct drec *d, const char *path, struct dcpi_err *err)
{
	size_t vrec = 8 + sizeof(struct prt_regs);
	uint8_t *buf = NULL, *nb;
	struct prt_rec h;
	uint32_t pid = 0;
	int rc = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	d->spid = 0;
	while (!rc && fread(&h, sizeof(h), 1, f) == 1) {
		size_t body = h.len - sizeof(h);

		if (h.magic != PRT_MAGIC || h.len < sizeof(h) || h.len > PRT_REC_MAX ||
		    !(nb = realloc(buf, body + 1)))
			break;
		buf = nb;
		if (body && fread(buf, body, 1, f) != 1)
			break;
		if (h.type == PRT_MAPS) {
			d->spid = ++d->next_spid;	/* its mappings from now on */
			rc = maps_replay_text(d->maps, d->spid, (char *)buf, body, err);
			pid = h.pid;
		}
		else if (h.type == PRT_VBURST && d->spid && !(body % vrec) &&
			 body / vrec <= PRT_KMAX)
			rc = burst(d, &h, (const uint64_t *)buf,
				   (const struct prt_regs *)(buf + 8 * (body / vrec)), body / vrec,
				   err);
	}
	free(buf);
	fclose(f);
	if (!rc && d->spid)
		rc = kio_place(d, pid);
	if (rc == -ENOMEM)
		return dcpi_errf(err, rc, "data profiles: out of memory");
	return rc;
}

/* One "<pid>.heap": blocks with their lifetimes. */
static int read_heap(struct drec *d, const char *path)
{
	struct {
		struct prt_rec h;
		struct prt_alloc a;
	} r;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fread(&r, sizeof(r), 1, f) == 1 && r.h.magic == PRT_MAGIC &&
	       r.h.len == sizeof(r)) {
		if (r.h.type == PRT_FREE) {
			for (size_t i = d->nblk; i-- > 0;)
				if (d->blk[i].pid == r.h.pid && d->blk[i].lo == r.a.addr &&
				    d->blk[i].t1 == UINT64_MAX) {
					d->blk[i].t1 = r.h.time_ns;
					break;
				}
			continue;
		}
		if (r.h.type == PRT_KIO && r.a.size) {
			if (dcpi_grow((void **)&d->kio, &d->capkio, d->nkio + 1,
				      sizeof(*d->kio))) {
				fclose(f);
				return -ENOMEM;
			}
			d->kio[d->nkio++] = (struct dkio){ r.h.pid, r.a.caller == PRT_KIO_OUT,
							   r.a.addr, r.a.size, r.h.time_ns };
			continue;
		}
		if (r.h.type != PRT_ALLOC || !r.a.size || r.a.addr + r.a.size < r.a.addr)
			continue;
		if (dcpi_grow((void **)&d->blk, &d->capblk, d->nblk + 1, sizeof(*d->blk))) {
			fclose(f);
			return -ENOMEM;
		}
		d->blk[d->nblk++] = (struct dblock){ .pid = r.h.pid, .lo = r.a.addr,
						     .hi = r.a.addr + r.a.size,
						     .t0 = r.h.time_ns, .t1 = UINT64_MAX,
						     .caller = r.a.caller,
						     .weight = r.h.flags ? r.h.flags : 1 };
	}
	fclose(f);
	return 0;
}

static int has_suffix(const char *name, const char *sfx)
{
	size_t n = strlen(name), l = strlen(sfx);

	return name[0] != '.' && n > l && !strcmp(name + n - l, sfx);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Every file of dir ending in sfx, in name order, through fn. */
static int each_file(struct drec *d, const char *dir, const char *sfx,
		     int (*fn)(struct drec *, const char *, struct dcpi_err *),
		     struct dcpi_err *err)
{
	char path[PATH_MAX + 256], **names = NULL, **nn;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *dp = opendir(dir);
	int rc = 0;

	if (!dp)
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	while (!rc && (e = readdir(dp))) {
		if (!has_suffix(e->d_name, sfx))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;

			if (!(nn = realloc(names, c * sizeof(*nn)))) {
				rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
				break;
			}
			names = nn;
			cap = c;
		}
		if (!(names[n] = strdup(e->d_name))) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
			break;
		}
		n++;
	}
	closedir(dp);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc = fn(d, path, err);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static int heap_file(struct drec *d, const char *path, struct dcpi_err *err)
{
	int rc = read_heap(d, path);

	return rc ? dcpi_errf(err, rc, "%s: out of memory", path) : 0;
}

/* --- sharing ------------------------------------------------------------- */

static int acc_cmp(const void *x, const void *y)
{
	const struct dacc *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->pid, a->line, a->win, a->tid },
			     (uint64_t[]){ b->pid, b->line, b->win, b->tid }, 4);
}

/* One window of one line, accesses [i, j) sorted by thread: seed 001's
 * rule between every writer and every other thread. */
static void classify(const struct dacc *v, size_t i, size_t j, struct data_share *s)
{
	int any_true = 0, any_false = 0;
	uint64_t tm = 0, ma = 0, mb = 0;

	for (size_t a = i; a < j; a++) {
		uint64_t wa = 0;
		size_t a2 = a;

		while (a2 < j && v[a2].tid == v[a].tid)
			wa |= v[a2++].wmask;
		for (size_t b = i; b < j && wa; b++) {
			uint64_t tb = v[b].rmask | v[b].wmask;

			if (v[b].tid == v[a].tid)
				continue;
			if (wa & tb) {
				any_true = 1;
				tm |= wa & tb;
			} else {	/* sides by thread order, stable across windows */
				uint64_t ta = 0;

				for (size_t x = a; x < a2; x++)
					ta |= v[x].rmask | v[x].wmask;
				any_false = 1;
				ma |= v[a].tid < v[b].tid ? ta : tb;
				mb |= v[a].tid < v[b].tid ? tb : ta;
			}
		}
		a = a2 - 1;
	}
	s->seen++;
	if (any_true) {
		s->true_w++;
		s->true_mask |= tm;
	} else if (any_false) {
		s->false_w++;
		s->mask_a |= ma;
		s->mask_b |= mb;
	}
}

/* Lines touched by more than one thread in some window, into the profile
 * of the image of their first access. */
static int share(struct drec *d)
{
	size_t i = 0;

	if (d->nacc)
		qsort(d->acc, d->nacc, sizeof(*d->acc), acc_cmp);
	while (i < d->nacc) {
		struct data_share s = { .k = d->acc[i].k };
		size_t j = i;

		while (j < d->nacc && d->acc[j].pid == d->acc[i].pid &&
		       d->acc[j].line == d->acc[i].line) {
			size_t w = j;

			while (w < d->nacc && d->acc[w].pid == d->acc[j].pid &&
			       d->acc[w].line == d->acc[j].line && d->acc[w].win == d->acc[j].win)
				w++;
			classify(d->acc, j, w, &s);
			j = w;
		}
		if (s.true_w || s.false_w) {
			d->st->shared++;
			if (data_profile_share(&d->prof[d->acc[i].img], &s))
				return -ENOMEM;
		}
		i = j;
	}
	return 0;
}

static void drec_free(struct drec *d)
{
	for (size_t i = 0; i < d->nim; i++) {
		img_close(d->im[i].img);
		data_profile_free(&d->prof[i]);
	}
	free(d->im);
	free(d->prof);
	insn_cache_free(&d->ins);
	free(d->bias);
	free(d->blk);
	free(d->acc);
	free(d->kio);
	maps_free(d->maps);
}

/* The profiles that hold something, normalized, moved to *out. */
static int finish(struct drec *d, struct data_profile **out, size_t *n, struct dcpi_err *err)
{
	size_t k = 0;
	int rc = share(d);

	for (size_t i = 0; i < d->nim && !rc; i++) {
		struct data_profile *p = &d->prof[i];

		if (!p->n && !p->ns && !p->nk)
			continue;
		p->image = *maps_image(d->maps, (uint32_t)i);
		rc = data_normalize(p);
		if (!rc && k != i) {
			d->prof[k] = *p;
			data_profile_init(p);
		}
		k++;
	}
	if (rc)
		return dcpi_errf(err, rc, "data profiles: out of memory");
	*out = k ? d->prof : NULL;
	*n = k;
	if (k) {
		for (size_t i = 0; i < d->nim; i++)	/* what stays is freed by drec_free */
			if (i >= k)
				data_profile_free(&d->prof[i]);
		d->prof = NULL;
		for (size_t i = 0; i < d->nim; i++)
			img_close(d->im[i].img);
		free(d->im);
		d->im = NULL;
		d->nim = 0;
	}
	return 0;
}

int data_spool_read(const char *dir, struct data_profile **out, size_t *n,
		    struct data_rec_stats *st, struct dcpi_err *err)
{
	struct drec d = { .st = st, .ins = { .size = sizeof(struct dinsn) } };
	int rc;

	*out = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	rc = maps_new(&d.maps, err);
	if (!rc) {
		maps_set_offline(d.maps, 1);
		rc = each_file(&d, dir, ".heap", heap_file, err);
	}
	if (!rc) {
		st->blocks = d.nblk;
		if (d.nblk)
			qsort(d.blk, d.nblk, sizeof(*d.blk), blk_cmp);
		rc = each_file(&d, dir, ".spool", replay_file, err);
	}
	if (!rc)
		rc = finish(&d, out, n, err);
	drec_free(&d);
	st->profiles = *n;
	return rc;
}

int data_spool_collect(const char *dir, struct prof_db *db, const char *epoch,
		       struct data_rec_stats *st, struct dcpi_err *err)
{
	struct data_profile *v;
	size_t n;
	int rc = data_spool_read(dir, &v, &n, st, err);

	for (size_t i = 0; i < n && !rc; i++)
		rc = data_epoch_write(db, epoch, &v[i], err);
	data_profiles_free(v, n);
	return rc;
}
