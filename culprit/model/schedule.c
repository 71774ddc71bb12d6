/*
 * culprit/model/schedule.c - the best-case scheduler: run a block through a
 * pipeline model with no dynamic stalls and give each instruction its M_i,
 * the cycles it spends as the oldest unretired instruction (DCPI paper
 * sec. 6.1.3), and for static stalls the reason and culprit (sec. 6.3).
 *
 * The machine: in-order dispatch, dispatch_width macro-ops per cycle, no
 * more than rob_size in flight; out-of-order issue of each op when its
 * operands are ready and one of its ports is free (a per-cycle reservation
 * table; non-pipelined units stay busy for `busy` cycles); completion after
 * the latency; in-order retire, retire_width per cycle, never before the
 * cycle after dispatch.  Memory ops add a load uop (load ports, load-to-use
 * latency) and store-address / store-data uops.  A load from the address
 * expression of an earlier store (same base, index, scale, displacement and
 * size, no write to base or index in between) takes its value from the
 * store: at the store data's ready time on cores that rename memory (Zen 4,
 * Zen 5), store_fwd_lat later elsewhere.  A load of the same address by
 * value (the symbolic values below: a pointer moved by a constant or copied
 * since the store) takes it store_fwd_lat later on every core: renaming
 * does not see it.  Macro-fusable ALU ops and a following jcc
 * are one op on a branch port.
 *
 * M_i = retire_i - retire_{i-1}, the first measured from the retire of the
 * preceding instructions (or 0), so the block's cycles are sum M_i.  The
 * steady state runs the block back to back, carrying registers, stores,
 * ports and the reorder buffer across iterations, and averages the
 * per-iteration retire gap over the second half of the run.
 *
 * Ports are a ring of per-cycle slots, tagged with their cycle: a request is
 * never older than the current dispatch cycle, so older slots are reused.
 *
 * Store commit (models with store_queue): a store leaves the store queue in
 * program order after it retires, one per cycle, or together with the store
 * before it when both lie in one store_pair_bytes-aligned block; a store
 * crossing a 64-byte line takes two cycles; a store cannot dispatch while the
 * queue is full.  The scheduler knows addresses only symbolically: each
 * general-purpose register holds a value number plus a constant byte offset
 * (add/sub/inc/dec of a constant, lea disp(reg), reg-reg copies and push/pop
 * keep the number; any other write gives a fresh one), every value number is
 * taken as 64-byte aligned (as the harness's X is), and two stores share a
 * block only when their base and index value numbers are the same and their
 * offsets fall in the same block (docs/models.md, "Stores").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/model.h"

#define NSTORES 32		/* recent stores looked at for forwarding */
#define SIM_INSNS 200000	/* instructions simulated for the steady state */
#define SIM_ITERS 600
#define MAX_PERIOD 32		/* longest repeating pattern looked for, in iterations */
#define PERIOD_SPAN 40		/* iterations a period must hold for */
#define PERIOD_WARMUP 4		/* iterations never counted as periodic */
#define NGPR 16
#define LINE_BYTES 64

struct slot {
	int cycle;			/* -1: free */
	uint32_t busy;			/* ports taken in this cycle */
	int owner[MODEL_MAX_PORTS];	/* sequence number of the taker */
};

/* Where a store writes, as far as the scheduler knows (see the top comment). */
struct skey {
	int vb, vi, scale;		/* value numbers of base and index; vb < 0: unknown */
	int64_t off;			/* byte offset from them */
	int size;
};

struct store {
	int valid;		/* a recent store */
	int same_regs;		/* its base and index unwritten since (memory renaming) */
	uint8_t base, index, scale, size;
	int64_t disp;
	struct skey key;	/* its address by value, for a load through other
				 * registers or after a pointer moved */
	int data_ready;
	int retire;		/* when it retired (a failed forward waits for it) */
	int seq;
};

/* What bounded a time, for the reason of a stall. */
struct cause {
	int t;
	int reason;
	int seq;			/* culprit sequence number, -1 none */
};

struct sim {
	const struct model *m;
	int ready[CFG_NREGS];
	int prod[CFG_NREGS];		/* sequence number of the producer, -1 */
	struct slot *ring;
	size_t nring;			/* power of two */
	int floor;			/* no request earlier than this cycle */
	int disp_cycle, disp_used, disp_taken;
	int ret_cycle, ret_used, last_retire;
	int *rob;			/* retire cycle by seq % rob_size */
	struct store stores[NSTORES];
	unsigned nextstore;
	uint64_t store_regs;		/* registers some store address has used */
	int seq;
	int fuse_pending;		/* previous op can fuse with a jcc */
	int fuse_complete, fuse_seq;
	int nop_host;			/* the last op took a slot a nop can share */
	const struct model_class **cls;	/* per block instruction */
	const struct model_class **pcls;	/* per preceding instruction */
	/* symbolic register values, for the store commit: value number + offset */
	int vid[NGPR];
	int64_t off[NGPR];
	int next_vid;
	/* store commit */
	int *sq;			/* commit cycle by store number % store_queue */
	int nst;			/* stores so far */
	int commit_next;		/* first cycle with no commit yet */
	int commit_last, commit_n;	/* cycle of the last commit and stores in it */
	int commit_vb, commit_vi, commit_scale;	/* block of the last commit */
	int64_t commit_blk;
	uint8_t *reloaded;		/* per block instruction: a store a load reads back */
	uint32_t imm_ports;		/* where a stored immediate is made: mov $imm's
					 * ports, looked up at the first such store */
	uint8_t port_order[32];		/* ports, least sought after by the block first */
};

/*
 * Which free port an op takes: the one the block's other ops need least.
 * Each instruction of the block spreads a weight of 1 over its class's
 * ports, so an op that may run anywhere leaves imul's one ALU, or the one
 * shuffle port, to the ops that can use nothing else (docs/models.md "The
 * high half of a multiply": bc's divide-by-10 loop 5.0 -> 4.0 cycles, as
 * measured).  Ties: the lower port.
 */
static void port_order_init(struct sim *s, const struct model *m,
			    const struct model_class *const *cls, size_t n)
{
	double w[32] = { 0 };
	int np = m->nports < 32 ? m->nports : 32;

	for (size_t i = 0; i < n; i++) {
		uint32_t p = cls[i] ? cls[i]->ports : 0;
		int k = __builtin_popcount(p);

		for (int j = 0; j < np && k; j++)
			if (p & (1u << j))
				w[j] += 1.0 / k;
	}
	for (int i = 0; i < 32; i++)
		s->port_order[i] = (uint8_t)i;
	for (int i = 1; i < np; i++)
		for (int j = i; j > 0 && w[s->port_order[j]] < w[s->port_order[j - 1]]; j--) {
			uint8_t t = s->port_order[j];

			s->port_order[j] = s->port_order[j - 1];
			s->port_order[j - 1] = t;
		}
}

/* A finished instruction, before it becomes a struct sched_insn. */
struct done {
	int dispatch, issue, complete, retire;
	struct cause why;
	int fused;
};

static int sim_init(struct sim *s, const struct model *m)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	for (int r = 0; r < CFG_NREGS; r++)
		s->prod[r] = -1;
	for (int r = 0; r < NGPR; r++)
		s->vid[r] = r + 1;
	s->next_vid = NGPR + 1;
	s->commit_last = -1;
	s->nring = 1024;
	s->ring = malloc(s->nring * sizeof(*s->ring));
	s->rob = calloc((size_t)m->rob_size, sizeof(*s->rob));
	if (m->store_queue > 0)
		s->sq = calloc((size_t)m->store_queue, sizeof(*s->sq));
	if (!s->ring || !s->rob || (m->store_queue > 0 && !s->sq))
		return -ENOMEM;
	for (size_t i = 0; i < s->nring; i++)
		s->ring[i].cycle = -1;
	return 0;
}

static void sim_fini(struct sim *s)
{
	free(s->ring);
	free(s->rob);
	free(s->sq);
}

/* Make room for cycle t in the ring (t - floor < nring). */
static int ring_fit(struct sim *s, int t)
{
	struct slot *nr;
	size_t n = s->nring;

	if ((size_t)(t - s->floor) < s->nring)
		return 0;
	while ((size_t)(t - s->floor) >= n)
		n *= 2;
	nr = malloc(n * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		nr[i].cycle = -1;
	for (size_t i = 0; i < s->nring; i++) {
		struct slot *o = &s->ring[i];

		if (o->cycle >= s->floor)
			nr[(size_t)o->cycle & (n - 1)] = *o;
	}
	free(s->ring);
	s->ring = nr;
	s->nring = n;
	return 0;
}

static struct slot *slot_at(struct sim *s, int t)
{
	struct slot *sl = &s->ring[(size_t)t & (s->nring - 1)];

	if (sl->cycle != t) {
		sl->cycle = t;
		sl->busy = 0;
	}
	return sl;
}

/*
 * Issue one op on the earliest cycle >= t with a free port in mask, for
 * busy cycles.  Returns the cycle (or -ENOMEM); *why is set to the port
 * holder when the op had to wait.
 */
static int port_take(struct sim *s, uint32_t mask, int t, int busy, int seq,
		     struct cause *why)
{
	int start = t;

	if (!mask)
		return t;
	if (busy < 1)
		busy = 1;
	for (;; t++) {
		uint32_t avail = mask;
		int p;

		if (ring_fit(s, t + busy) < 0)
			return -ENOMEM;
		for (int k = 0; k < busy && avail; k++)
			avail &= ~slot_at(s, t + k)->busy;
		if (!avail)
			continue;
		for (p = 0; p < 32 && !(avail & (1u << s->port_order[p])); p++)
			;
		p = s->port_order[p];
		for (int k = 0; k < busy; k++) {
			struct slot *sl = slot_at(s, t + k);

			sl->busy |= 1u << p;
			sl->owner[p] = seq;
		}
		if (t > start && why && t > why->t) {
			struct slot *sl = slot_at(s, start);
			int q;

			/* the blocker: the first cycle from start where a port was taken
			 * (a multi-cycle op may find start free and a later cycle not) */
			for (int u = start; !(mask & sl->busy) && u + 1 < t; u++)
				sl = slot_at(s, u + 1);
			if (!(mask & sl->busy))
				return t;
			q = __builtin_ctz(mask & sl->busy);

			why->t = t;
			why->reason = busy > 1 ? MODEL_R_DIVIDER : MODEL_R_PORT;
			why->seq = sl->owner[q];
		}
		return t;
	}
}

static void bound(struct cause *c, int t, int reason, int seq)
{
	if (t > c->t) {
		c->t = t;
		c->reason = reason;
		c->seq = seq;
	}
}

/* Readiness of the registers in mask. */
static void regs_ready(const struct sim *s, uint64_t mask, struct cause *c)
{
	for (; mask; mask &= mask - 1) {
		int r = __builtin_ctzll(mask);

		if (r >= CFG_NREGS)
			break;
		bound(c, s->ready[r], r == CFG_R_FLAGS ? MODEL_R_FLAGS_DEP : MODEL_R_REG_DEP,
		      s->prod[r]);
	}
}

static uint64_t addr_regs(const struct cfg_insn *in)
{
	uint64_t m = 0;

	if (!in->nmem || (in->flags & CFG_I_LEA))
		return 0;
	if (in->mem.base != CFG_REG_NONE && in->mem.base < CFG_NREGS)
		m |= CFG_RBIT(in->mem.base);
	if (in->mem.index != CFG_REG_NONE && in->mem.index < CFG_NREGS)
		m |= CFG_RBIT(in->mem.index);
	return m;
}

static int gpr_vid(const struct sim *s, unsigned r, int64_t *off)
{
	if (r == CFG_REG_NONE)
		return 0;
	if (r >= NGPR)
		return -1;
	*off += s->off[r];
	return s->vid[r];
}

/* The address of in's memory operand by value; vb < 0 when unknown. */
static void mem_key(const struct sim *s, const struct cfg_insn *in, struct skey *k)
{
	int64_t ioff = 0;

	memset(k, 0, sizeof(*k));
	k->size = in->mem.size ? in->mem.size : 8;
	k->off = in->mem.disp;
	k->vb = in->mem.rip_relative ? 0 : gpr_vid(s, in->mem.base, &k->off);
	k->vi = gpr_vid(s, in->mem.index, &ioff);
	k->scale = in->mem.scale;
	if (k->vi < 0)
		k->vb = -1;
	k->off += ioff * (in->mem.scale ? in->mem.scale : 1);
}

static void store_key(const struct sim *s, const struct cfg_insn *in,
		      const struct model_class *cls, struct skey *k)
{
	if ((cls->kind & MODEL_K_PUSH) || !in->nmem) {	/* push, call: 8 below rsp */
		memset(k, 0, sizeof(*k));
		k->vb = s->vid[CFG_R_RSP];
		k->off = s->off[CFG_R_RSP] - 8;
		k->size = 8;
		return;
	}
	mem_key(s, in, k);
}

/*
 * The youngest recent store a load reads from, by the same registers (base,
 * index, scale, no write to them in between: *renamed set, what memory
 * renaming sees) or by value (the same value numbers and offset: a pointer
 * moved by a constant, or copied, since the store; these go through the
 * store queue).  The same address and size forwards; with *partial set, a
 * store whose bytes overlap the load's without holding all of them (a 4-byte
 * store under an 8-byte load: it cannot forward, and the load waits for the
 * store to commit).  A load inside a wider store is treated as independent
 * of it, as before.
 */
static struct store *store_find(struct sim *s, const struct cfg_insn *in, int *partial,
				int *renamed)
{
	struct store *best = NULL;
	struct skey lk;
	int part = 0, same = 0;

	mem_key(s, in, &lk);
	for (int i = 0; i < NSTORES; i++) {
		struct store *st = &s->stores[i];
		int64_t lo, hi, sd, ld;
		int syn;

		if (!st->valid || (best && st->seq < best->seq))
			continue;
		syn = st->same_regs && st->base == in->mem.base && st->index == in->mem.index &&
		      st->scale == in->mem.scale;
		if (syn) {
			sd = st->disp;
			ld = in->mem.disp;
		} else if (lk.vb >= 0 && st->key.vb >= 0 && st->key.vb == lk.vb &&
			   st->key.vi == lk.vi && (!lk.vi || st->key.scale == lk.scale)) {
			sd = st->key.off;
			ld = lk.off;
		} else {
			continue;
		}
		if (sd == ld && st->size == in->mem.size) {
			best = st;
			part = 0;
			same = syn;
			continue;
		}
		if (!st->size || !in->mem.size)
			continue;
		lo = sd > ld ? sd : ld;
		hi = sd + st->size < ld + in->mem.size ? sd + st->size : ld + in->mem.size;
		if (hi <= lo)
			continue;
		if (ld >= sd && ld + in->mem.size <= sd + st->size)
			continue;	/* inside it */
		best = st;
		part = 1;
		same = syn;
	}
	*partial = part;
	*renamed = same;
	return best;
}

static void store_add(struct sim *s, const struct cfg_insn *in, const struct skey *key,
		      int data_ready, int seq)
{
	struct store *st = &s->stores[s->nextstore++ % NSTORES];

	st->valid = 1;
	st->same_regs = 1;
	st->base = in->mem.base;
	st->index = in->mem.index;
	st->scale = in->mem.scale;
	st->size = in->mem.size;
	st->disp = in->mem.disp;
	st->key = *key;
	st->data_ready = data_ready;
	st->retire = data_ready;	/* until sim_insn knows */
	st->seq = seq;
	if (st->base != CFG_REG_NONE && st->base < CFG_NREGS)
		s->store_regs |= CFG_RBIT(st->base);
	if (st->index != CFG_REG_NONE && st->index < CFG_NREGS)
		s->store_regs |= CFG_RBIT(st->index);
}

/* A register write changes the addresses that use it: those stores are
 * found by value only from now on. */
static void stores_forget(struct sim *s, uint64_t written)
{
	for (int i = 0; i < NSTORES; i++) {
		struct store *st = &s->stores[i];

		if (!st->valid)
			continue;
		if ((st->base != CFG_REG_NONE && (written & CFG_RBIT(st->base))) ||
		    (st->index != CFG_REG_NONE && (written & CFG_RBIT(st->index)))) {
			st->same_regs = 0;
			if (st->key.vb < 0)
				st->valid = 0;
		}
	}
}

/* In-order dispatch: width, reorder buffer, taken branches. */
static int dispatch(struct sim *s, int uops, int store, struct cause *why)
{
	const struct model *m = s->m;
	int d = s->disp_cycle, rob_free, sq_free;

	if (s->disp_used + uops > m->dispatch_width && s->disp_used > 0) {
		d++;
		s->disp_used = 0;
		s->disp_taken = 0;
	}
	rob_free = s->seq >= m->rob_size ? s->rob[s->seq % m->rob_size] : 0;
	if (rob_free > d) {
		d = rob_free;
		s->disp_used = 0;
		s->disp_taken = 0;
	}
	/* a store queue entry is free the cycle after its store committed */
	sq_free = store && m->store_queue > 0 && s->nst >= m->store_queue ?
		  s->sq[s->nst % m->store_queue] + 1 : 0;
	if (sq_free > d) {
		d = sq_free;
		s->disp_used = 0;
		s->disp_taken = 0;
	}
	if (d > s->disp_cycle)
		bound(why, d, MODEL_R_DISPATCH, -1);
	s->disp_cycle = d;
	s->disp_used += uops;
	if (s->floor < d)
		s->floor = d;
	return d;
}

/* A vector op wider than the model's pipes runs through them twice. */
static int wide(const struct model *m, const struct cfg_insn *in)
{
	return m->vec_pipe_bits && in->vec_bits > m->vec_pipe_bits;
}

/* An address the AGU takes a cycle longer over (docs/models.md, "Load
 * latency"): an index scaled by 2-8, or base + index + displacement. */
static int complex_addr(const struct cfg_insn *in)
{
	const struct cfg_mem *a = &in->mem;

	return in->nmem && !a->rip_relative && a->index != CFG_REG_NONE &&
	       (a->scale > 1 || (a->base != CFG_REG_NONE && a->disp != 0));
}

/* movsbl, movsbw, movsbq, movswl, movswq, movslq (AT&T) from memory. */
static int sext_load(const struct cfg_insn *in)
{
	const char *mn = in->mnemonic;

	return !strncmp(mn, "movs", 4) && strlen(mn) == 6 && strchr("bwl", mn[4]) &&
	       strchr("wlq", mn[5]) && mn[4] != mn[5];
}

static int mem_load(struct sim *s, const struct cfg_insn *in, int d, int addr_t, int seq,
		    struct cause *why)
{
	const struct model *m = s->m;
	int partial = 0, renamed = 0;
	struct store *st = in->nmem ? store_find(s, in, &partial, &renamed) : NULL;
	struct cause c = *why;
	int vec = !!(in->flags & (CFG_I_FP | CFG_I_VECTOR));
	int lat = (vec ? m->load_lat_fp : m->load_lat) +
		  (complex_addr(in) ? m->load_lat_complex : 0) +
		  (!vec && sext_load(in) ? m->load_lat_sext : 0);
	uint32_t ports = vec && m->vec_load_ports ? m->vec_load_ports : m->load_ports;
	int t = port_take(s, ports, addr_t > d ? addr_t : d, wide(m, in) ? 2 : 1, seq, &c);

	if (t < 0)
		return t;
	if (st && partial) {
		/* no forwarding: the load reads the committed store, so it waits
		 * for the store to retire (which serializes a loop's iterations) */
		int ready = st->retire > st->data_ready ? st->retire : st->data_ready;

		t += lat;
		if (ready + m->store_fwd_fail > t)
			t = ready + m->store_fwd_fail;
		c = *why;
		c.t = t;
		c.reason = MODEL_R_MEM_DEP;
		c.seq = st->seq;
	} else if (st && renamed && m->mem_rename) {
		t = st->data_ready > d ? st->data_ready : d;
		c = *why;
		bound(&c, t, MODEL_R_MEM_DEP, st->seq);
	} else {
		c.t = t;
		if (c.reason == MODEL_R_NONE || c.reason == MODEL_R_DISPATCH) {
			c.reason = MODEL_R_LATENCY;
			c.seq = -1;
		}
		t += lat;
		if (st && st->data_ready + m->store_fwd_lat > t) {
			t = st->data_ready + m->store_fwd_lat;
			c.reason = MODEL_R_MEM_DEP;
			c.seq = st->seq;
		}
		c.t = t;
	}
	*why = c;
	return t;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* In-order commit of a store that retired at r (see the top comment); a
 * store a later load reads back (reloaded) commits alone. */
static void store_commit(struct sim *s, const struct skey *k, int r, int reloaded)
{
	const struct model *m = s->m;
	int64_t blk = floor_div(k->off, m->store_pair_bytes > 0 ? m->store_pair_bytes : 1);
	int64_t in_line = k->off - floor_div(k->off, LINE_BYTES) * LINE_BYTES;
	int cross = in_line + k->size > LINE_BYTES, c;

	if (!cross && !reloaded && s->commit_n == 1 && k->vb >= 0 && r <= s->commit_last &&
	    m->store_pair_bytes > 0 && k->vb == s->commit_vb && k->vi == s->commit_vi &&
	    k->scale == s->commit_scale && blk == s->commit_blk) {
		c = s->commit_last;
		s->commit_n = 2;
	} else {
		c = r > s->commit_next ? r : s->commit_next;
		/* a line-crossing store commits its two pieces in two cycles; the
		 * next store may join the second (st8_cross_pair4) */
		if (cross)
			blk = floor_div(k->off + k->size - 1, m->store_pair_bytes);
		s->commit_last = c + cross;
		s->commit_n = reloaded ? 2 : 1;
		s->commit_next = c + cross + 1;
		s->commit_vb = k->vb;
		s->commit_vi = k->vi;
		s->commit_scale = k->scale;
		s->commit_blk = blk;
	}
	s->sq[s->nst++ % m->store_queue] = c;
}

/* The symbolic values of the registers in writes (see the top comment). */
static void values_update(struct sim *s, const struct cfg_insn *in)
{
	uint64_t w = in->regs_written & ((1ull << NGPR) - 1);
	const char *mn = in->mnemonic;
	int imm = in->form == CFG_F_REG && (in->flags & CFG_I_IMM);
	int r, src;

	if (!w)
		return;
	if (in->flags & CFG_I_STACK) {
		w &= ~CFG_RBIT(CFG_R_RSP);
		if (!strncmp(mn, "push", 4) || !strncmp(mn, "call", 4))
			s->off[CFG_R_RSP] -= 8;
		else if (!strncmp(mn, "pop", 3) || !strncmp(mn, "ret", 3))
			s->off[CFG_R_RSP] += 8;
		else
			s->vid[CFG_R_RSP] = s->next_vid++;
		if (!w)
			return;
	}
	r = __builtin_ctzll(w);
	if (!(w & (w - 1))) {
		if (!strncmp(mn, "add", 3) && imm && mn[3] != 'c') {
			s->off[r] += (int64_t)in->imm;
			return;
		}
		if (!strncmp(mn, "sub", 3) && imm) {
			s->off[r] -= (int64_t)in->imm;
			return;
		}
		if (!strncmp(mn, "inc", 3) || !strncmp(mn, "dec", 3)) {
			s->off[r] += mn[0] == 'i' ? 1 : -1;
			return;
		}
		if ((in->flags & CFG_I_LEA) && in->mem.index == CFG_REG_NONE &&
		    in->mem.base < NGPR && !in->mem.rip_relative) {
			src = in->mem.base;
			s->vid[r] = s->vid[src];
			s->off[r] = s->off[src] + in->mem.disp;
			return;
		}
		src = __builtin_ffsll(in->regs_read & ((1ull << NGPR) - 1)) - 1;
		if (in->form == CFG_F_REG && !imm && !in->nmem && src >= 0 &&
		    !(in->regs_read & ((1ull << NGPR) - 1) & ~CFG_RBIT(src)) &&
		    (!strcmp(mn, "mov") || !strcmp(mn, "movq"))) {
			s->vid[r] = s->vid[src];
			s->off[r] = s->off[src];
			return;
		}
	}
	for (; w; w &= w - 1) {
		r = __builtin_ctzll(w);
		s->vid[r] = s->next_vid++;
		s->off[r] = 0;
	}
}

/* One instruction on its way through sim_insn's steps. */
struct step {
	const struct cfg_insn *in;
	const struct model_class *cls;
	int seq, stack, load, store, fused, fusing, slots;
	int d, t, complete, r;		/* dispatch, issue, complete, retire */
	uint64_t addr, rd;		/* address registers; the other registers read */
	uint32_t ports;
	struct cause why, src;		/* what bounds it; what bounds its address */
	struct skey skey;		/* a store's address, as values */
};

/* What the instruction reads, where it may issue, whether it loads or stores. */
static void step_init(const struct sim *s, const struct cfg_insn *in,
		      const struct model_class *cls, struct step *st)
{
	enum cfg_form form = in->form;

	memset(st, 0, sizeof(*st));
	st->in = in;
	st->cls = cls;
	st->seq = s->seq;
	st->addr = addr_regs(in);
	st->rd = in->regs_read & ~CFG_RBIT(CFG_R_RIP);
	st->stack = !!(in->flags & CFG_I_STACK);
	st->load = form == CFG_F_LOAD || form == CFG_F_RMW || (cls->kind & MODEL_K_POP);
	st->store = form == CFG_F_STORE || form == CFG_F_RMW || (cls->kind & MODEL_K_PUSH);
	st->ports = cls->ports;
	st->why = (struct cause){ 0, MODEL_R_NONE, -1 };
	st->skey.vb = -1;
	if (in->flags & CFG_I_PREFETCH)
		st->load = 0;
	/* an 8- or 16-bit write keeps the rest of its register, so it waits for
	 * the old value (mov %bl,%al; add $1,%eax: 2.0 cycles on Zen 4) */
	if (in->flags & CFG_I_PARTIAL)
		st->rd |= in->regs_written & ((CFG_RBIT(CFG_R_R15) << 1) - CFG_RBIT(CFG_R_RAX));
	if (st->stack) {
		st->rd &= ~CFG_RBIT(CFG_R_RSP);	/* the stack engine tracks rsp at rename */
		if (in->nmem && in->mem.base == CFG_R_RSP)
			st->addr &= ~CFG_RBIT(CFG_R_RSP);
	}
}

/* A jcc right after a fusible op rides on that op: no slot, no port. */
static void step_fused(struct sim *s, struct step *st)
{
	st->fused = 1;
	st->d = s->disp_cycle;
	st->complete = s->fuse_complete;
	st->why.t = st->complete;
	st->why.reason = MODEL_R_FLAGS_DEP;
	st->why.seq = s->fuse_seq;
	st->t = st->complete;
	s->nop_host = 0;
}

/* Dispatch, wait for the operands (a load's data included), take a port:
 * st->d, st->t and st->complete.  next decides macro-fusion. */
static int step_issue(struct sim *s, struct step *st, const struct cfg_insn *next)
{
	const struct model *m = s->m;
	const struct model_class *cls = st->cls;
	const struct cfg_insn *in = st->in;
	struct cause dwhy = { s->disp_cycle, MODEL_R_NONE, -1 };

	/* a 0-slot op (nop) rides in the slot of the op before it, one per slot */
	st->slots = cls->uops || !s->nop_host ? (cls->uops ? cls->uops : 1) : 0;
	s->nop_host = st->slots > 0;
	st->d = dispatch(s, st->slots, st->store, &dwhy);
	st->why.t = st->d;
	if (dwhy.reason != MODEL_R_NONE)
		st->why = dwhy;
	st->src = st->why;
	regs_ready(s, st->addr, &st->src);	/* address registers */
	if (st->load) {
		struct cause lw = st->src;
		int t = mem_load(s, in, st->d, st->src.t, st->seq, &lw);

		if (t < 0)
			return t;
		if (lw.t > st->why.t)
			st->why = lw;
	}
	regs_ready(s, st->rd & ~st->addr, &st->why);
	st->fusing = (cls->kind & MODEL_K_FUSE) && next && (next->flags & CFG_I_COND) &&
		     in->form != CFG_F_RMW && in->form != CFG_F_STORE;
	if (st->fusing && (st->ports & m->branch_ports))
		st->ports &= m->branch_ports;
	st->t = st->why.t;
	if ((cls->kind & MODEL_K_ELIM) || !st->ports) {
		st->complete = st->t + ((cls->kind & MODEL_K_ELIM) ? 0 : cls->lat);
		return 0;
	}
	st->t = port_take(s, st->ports, st->t, cls->busy * (wide(m, in) ? 2 : 1), st->seq,
			  &st->why);
	if (st->t < 0)
		return st->t;
	st->complete = st->t + cls->lat;
	if (cls->lat > 1 && st->why.t <= st->d)
		st->why.reason = MODEL_R_LATENCY, st->why.seq = -1;
	return 0;
}

/*
 * When a store's data can go: a 32- or 64-bit immediate's data comes from an
 * ALU op (param.st_imm: two movl $imm and six mov $imm,reg 2.12 cycles on Zen
 * 4, from registers 1.50); a byte or word immediate's does not (four adds and
 * movl $5,(%rsi) 1.33, with movb $5 1.00).  Returns data, later or not, or a
 * negative error.
 */
static int store_imm_data(struct sim *s, const struct step *st, int data, int vec_data)
{
	const struct model *m = s->m;
	const struct cfg_insn *in = st->in;
	int ta;

	if (!m->store_imm_alu || in->form != CFG_F_STORE || !(in->flags & CFG_I_IMM) ||
	    (in->mem.size != 0 && in->mem.size < 4) || vec_data ||
	    (st->cls->kind & MODEL_K_PUSH))
		return data;
	if (!s->imm_ports) {
		const struct model_class *mi = model_class_row(m, "mov_alu");

		s->imm_ports = mi && mi->ports ? mi->ports : m->alu_ports;
	}
	ta = port_take(s, s->imm_ports, st->d, 1, st->seq, NULL);
	if (ta < 0)
		return ta;
	return ta + 1 > data ? ta + 1 : data;
}

/* A store's address and data ops; it completes when both are done. */
static int step_store(struct sim *s, struct step *st)
{
	const struct model *m = s->m;
	const struct cfg_insn *in = st->in;
	struct cause sw = st->why;
	int sa = port_take(s, m->store_addr_ports, st->src.t, 1, st->seq, NULL);
	int data = in->form == CFG_F_RMW ? st->complete : st->why.t;
	int vec_data = !!(in->flags & (CFG_I_FP | CFG_I_VECTOR));
	int sd;

	if (sa < 0)
		return sa;
	data = store_imm_data(s, st, data, vec_data);
	if (data < 0)
		return data;
	sd = port_take(s, vec_data && m->vec_store_data_ports ?
		       m->vec_store_data_ports : m->store_data_ports, data,
		       vec_data && wide(m, in) ? 2 : 1, st->seq, &sw);
	if (sd < 0)
		return sd;
	if (sa + 1 > st->complete)
		st->complete = sa + 1;
	if (sd + 1 > st->complete) {
		st->complete = sd + 1;
		st->why = sw;
	}
	store_key(s, in, st->cls, &st->skey);	/* before this insn's own writes */
	if (in->nmem && !(st->cls->kind & MODEL_K_PUSH))
		store_add(s, in, &st->skey, data, st->seq);
	return 0;
}

/* The registers it writes are ready when it completes (rsp at dispatch). */
static void step_results(struct sim *s, const struct step *st)
{
	const struct cfg_insn *in = st->in;

	values_update(s, in);
	for (uint64_t w = in->regs_written; w; w &= w - 1) {
		int reg = __builtin_ctzll(w);

		if (reg >= CFG_NREGS)
			break;
		if (st->stack && reg == CFG_R_RSP) {
			s->ready[reg] = st->d;
		} else {
			s->ready[reg] = st->complete;
			/* mul's high half: 4 cycles on Zen 4 where rax takes 3
			 * (param.mul_hi) */
			if (reg == CFG_R_RDX && (st->cls->kind & MODEL_K_WIDE))
				s->ready[reg] += s->m->mul_hi_extra;
		}
		s->prod[reg] = st->seq;
	}
	if (in->regs_written & s->store_regs)
		stores_forget(s, in->regs_written);
}

/* In-order retire, retire width; a store commits after it.  taken and
 * reloaded as sim_insn's. */
static void step_retire(struct sim *s, struct step *st, int taken, int reloaded)
{
	const struct model *m = s->m;
	int r = st->complete > st->d + 1 ? st->complete : st->d + 1;

	if (r < s->last_retire)
		r = s->last_retire;
	if (!st->fused && st->slots) {
		if (r > s->ret_cycle) {
			s->ret_cycle = r;
			s->ret_used = 0;
		}
		if (s->ret_used >= m->retire_width) {
			r = ++s->ret_cycle;
			s->ret_used = 0;
		}
		s->ret_used++;
	}
	s->last_retire = r;
	s->rob[st->seq % m->rob_size] = r;
	if (st->store && st->in->nmem) {
		struct store *sp = &s->stores[(s->nextstore + NSTORES - 1) % NSTORES];

		if (sp->valid && sp->seq == st->seq)
			sp->retire = r;
	}
	if (st->store && m->store_queue > 0)
		store_commit(s, &st->skey, r, reloaded);
	if (taken && m->taken_per_cycle > 0 && ++s->disp_taken >= m->taken_per_cycle) {
		s->disp_cycle++;
		s->disp_used = 0;
		s->disp_taken = 0;
	}
	st->r = r;
}

/*
 * Schedule one instruction.  cls is its class row; next the instruction
 * after it (NULL if unknown); taken: it is a branch back to the loop's top;
 * reloaded: it is a store a load of the block reads back (mark_reloaded).
 */
static int sim_insn(struct sim *s, const struct cfg_insn *in, const struct model_class *cls,
		    const struct cfg_insn *next, int taken, int reloaded, struct done *out)
{
	struct step st;
	int rc;

	step_init(s, in, cls, &st);
	if ((in->flags & CFG_I_COND) && s->fuse_pending) {
		step_fused(s, &st);
		s->fuse_pending = 0;
	} else {
		rc = step_issue(s, &st, next);
		if (rc < 0)
			return rc;
		if (st.store && (rc = step_store(s, &st)) < 0)
			return rc;
		s->fuse_pending = st.fusing;
		s->fuse_complete = st.complete;
		s->fuse_seq = st.seq;
	}
	step_results(s, &st);
	step_retire(s, &st, taken, reloaded);
	s->seq++;
	out->dispatch = st.d;
	out->issue = st.t;
	out->complete = st.complete;
	out->retire = st.r;
	out->why = st.why;
	out->fused = st.fused;
	return 0;
}

const char *model_reason_name(enum model_reason r)
{
	static const char *const names[MODEL_R_COUNT] = {
		"none", "latency", "reg dep", "flags dep", "mem dep", "port", "divider",
		"dispatch", "retire width",
	};

	return (unsigned)r < MODEL_R_COUNT ? names[r] : "?";
}

/* The reason an instruction's M_i is what it is, from its finished times. */
static void explain(struct sched_insn *o, const struct done *dn, int prev_r, int npre,
		    size_t n, int base_seq)
{
	int seq = dn->why.seq;

	o->reason = MODEL_R_NONE;
	o->culprit = -1;
	if (o->m <= 0)
		return;
	if (dn->retire > dn->complete && dn->retire > dn->dispatch + 1 &&
	    dn->retire > prev_r) {
		o->reason = MODEL_R_RETIRE;
		return;
	}
	if (dn->complete >= dn->retire) {
		o->reason = dn->why.reason;
		if (o->reason == MODEL_R_NONE && dn->complete - dn->issue > 1)
			o->reason = MODEL_R_LATENCY;
	} else if (dn->why.reason == MODEL_R_DISPATCH) {
		o->reason = MODEL_R_DISPATCH;
	}
	if (o->reason == MODEL_R_LATENCY || o->reason == MODEL_R_DISPATCH ||
	    o->reason == MODEL_R_NONE || seq < npre || seq < 0)
		return;
	if (seq >= base_seq)	/* this pass (earlier passes are not culprits) */
		o->culprit = (int)((size_t)(seq - npre) % n);
}

static int fill_classes(const struct model *m, const struct cfg_insn *v, size_t n,
			const struct model_class ***out, struct sched_block *b)
{
	const struct model_class **c = malloc((n ? n : 1) * sizeof(*c));

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int known;

		c[i] = model_classify(m, &v[i], &known);
		if (b) {
			b->insns[i].class_known = known;
			b->unknown_forms += !known;
		}
	}
	*out = c;
	return 0;
}

void sched_block_free(struct sched_block *b)
{
	if (!b)
		return;
	free(b->insns);
	memset(b, 0, sizeof(*b));
}

static int is_loop_branch(const struct cfg_insn *in)
{
	return (in->flags & CFG_I_BRANCH) && !(in->flags & CFG_I_INDIRECT);
}

/*
 * The period of the retire times of the iterations' last instructions, end[0..k]
 * (and of lag[0..k], how far the store commit trails them):
 * the smallest p such that the per-iteration retire gaps of the last
 * max(PERIOD_SPAN, 3 p) iterations repeat every p iterations, or 0.  Once the
 * machine state repeats, so does everything after; a short span would take
 * the first quiet iterations before a port backlog builds up for a period.
 */
static int find_period(const int *end, const int *lag, int k)
{
	for (int p = 1; p <= MAX_PERIOD; p++) {
		int span = 3 * p > PERIOD_SPAN ? 3 * p : PERIOD_SPAN, j;

		if (span + p > k - PERIOD_WARMUP)
			return 0;
		/* a store queue still filling is not a steady state: its lag grows */
		for (j = k; j > k - span; j--)
			if (end[j] - end[j - 1] != end[j - p] - end[j - p - 1] ||
			    lag[j] != lag[j - p])
				break;
		if (j == k - span)
			return p;
	}
	return 0;
}

/* Does any instruction on the way from i forward to j (both excluded,
 * around the loop's end) write a register in regs? */
static int written_between(const struct cfg_insn *insns, size_t n, size_t i, size_t j,
			   uint64_t regs)
{
	for (size_t k = (i + 1) % n; k != j; k = (k + 1) % n)
		if (insns[k].regs_written & regs)
			return 1;
	return i == j && (insns[i].regs_written & regs);
}

/*
 * Mark the stores that a load of the block reads back, in this pass or the
 * next: the same base, index and scale registers, unchanged on the way, and
 * overlapping bytes (a struct's counter stored and loaded every pass: bzip2's
 * bit writer).  Measured on Zen 4 (docs/models.md, "Stores read back"): such a
 * store does not commit together with its neighbour in the same 32-byte
 * block; three stores at 0x74, 0x284 and 0x280 commit in 2 cycles alone, in 3
 * when each is loaded again.
 */
static void mark_reloaded(const struct cfg_insn *insns, size_t n, uint8_t *rl)
{
	for (size_t i = 0; i < n; i++) {
		const struct cfg_insn *st = &insns[i];
		uint64_t regs = 0;

		rl[i] = 0;
		if (!st->nmem || (st->form != CFG_F_STORE && st->form != CFG_F_RMW) ||
		    (st->flags & (CFG_I_STACK | CFG_I_LEA)) || !st->mem.size)
			continue;
		if (st->mem.base != CFG_REG_NONE && st->mem.base < NGPR)
			regs |= CFG_RBIT(st->mem.base);
		if (st->mem.index != CFG_REG_NONE && st->mem.index < NGPR)
			regs |= CFG_RBIT(st->mem.index);
		for (size_t j = 0; j < n && !rl[i]; j++) {
			const struct cfg_insn *ld = &insns[j];

			if (!ld->nmem || (ld->form != CFG_F_LOAD && ld->form != CFG_F_RMW) ||
			    (ld->flags & (CFG_I_STACK | CFG_I_LEA | CFG_I_PREFETCH)) ||
			    !ld->mem.size || ld->mem.base != st->mem.base ||
			    ld->mem.index != st->mem.index ||
			    ld->mem.rip_relative != st->mem.rip_relative ||
			    (st->mem.index != CFG_REG_NONE && ld->mem.scale != st->mem.scale))
				continue;
			if (ld->mem.disp >= st->mem.disp + st->mem.size ||
			    st->mem.disp >= ld->mem.disp + ld->mem.size)
				continue;
			if (!written_between(insns, n, i, j, regs))
				rl[i] = 1;
		}
	}
}

/* One pass of the block; the first pass (k == 0) fills out. */
static int run_pass(struct sim *s, const struct cfg_insn *insns, size_t n, int k, int npre,
		    double *gap, int *prev_r, struct sched_block *out)
{
	struct done dn;
	int rc;

	for (size_t i = 0; i < n; i++) {
		int taken = i == n - 1 && is_loop_branch(&insns[i]);
		struct sched_insn *o = &out->insns[i];

		rc = sim_insn(s, &insns[i], s->cls[i], &insns[(i + 1) % n], taken, s->reloaded[i],
			      &dn);
		if (rc < 0)
			return rc;
		if (gap)
			gap[i] += dn.retire - *prev_r;
		if (k == 0) {
			o->address = insns[i].addr;
			o->dispatch = dn.dispatch;
			o->issue = dn.issue;
			o->complete = dn.complete;
			o->retire = dn.retire;
			o->m = dn.retire - *prev_r;
			o->fused = dn.fused;
			out->cycles += o->m;
			explain(o, &dn, *prev_r, npre, n, npre + k * (int)n);
		}
		*prev_r = dn.retire;
	}
	return 0;
}

/*
 * Run pre, then the block until its retire times repeat with some period p
 * (then p more passes give the steady state exactly), or iters times (then
 * the steady state is the average over the second half); fill out from the
 * first pass.
 */
static int run(struct sim *s, const struct cfg_insn *insns, size_t n,
	       const struct cfg_insn *pre, size_t npre, int iters, struct sched_block *out)
{
	struct done dn;
	int prev_r = 0, k1 = iters / 2, r0, p = 0, k, rc = -ENOMEM;
	double *gap = calloc(n, sizeof(*gap));
	int *end = malloc(((size_t)iters + 1) * sizeof(*end));
	int *lag = malloc(((size_t)iters + 1) * sizeof(*lag));

	if (!gap || !end || !lag)
		goto out;
	for (size_t i = 0; i < npre; i++) {
		rc = sim_insn(s, &pre[i], s->pcls[i], i + 1 < npre ? &pre[i + 1] : &insns[0], 0, 0,
			      &dn);
		if (rc < 0)
			goto out;
		prev_r = dn.retire;
	}
	end[0] = prev_r;
	lag[0] = 0;
	r0 = prev_r;
	for (k = 0; k < iters; k++) {
		if (k == k1)
			r0 = prev_r;
		rc = run_pass(s, insns, n, k, (int)npre, k >= k1 ? gap : NULL, &prev_r, out);
		if (rc < 0)
			goto out;
		end[k + 1] = prev_r;
		lag[k + 1] = s->commit_next > prev_r ? s->commit_next - prev_r : 0;
		if (k + 1 < k1 && (p = find_period(end, lag, k + 1)) > 0)
			break;
	}
	if (p > 0) {
		r0 = prev_r;
		for (int j = 0; j < p; j++) {
			rc = run_pass(s, insns, n, k + 1 + j, (int)npre, gap, &prev_r, out);
			if (rc < 0)
				goto out;
		}
	} else {
		p = iters - k1;
	}
	out->steady_cycles = (double)(prev_r - r0) / p;
	for (size_t i = 0; i < n; i++)
		out->insns[i].m_loop = gap[i] / p;
	rc = 0;
out:
	free(gap);
	free(end);
	free(lag);
	return rc;
}

/*
 * A block that branches back to its own start is a loop, and a loop's code
 * comes from the op cache a line a cycle at best: at least a cycle per
 * loop_line_bytes line it spans (Zen 4: a few adds 1.00 cycles an iteration
 * in one 64-byte line, 2.02 across two).  The wait is the branch's.
 */
static void loop_floor(const struct model *m, const struct cfg_insn *insns, size_t n,
		       struct sched_block *out)
{
	const struct cfg_insn *last = &insns[n - 1];
	uint64_t lo = insns[0].addr, hi = last->addr + last->size;
	int lines;

	if (!is_loop_branch(last) || last->target != insns[0].addr)
		return;
	lines = model_loop_lines(m, &lo, &hi, 1);
	if (lines > out->steady_cycles + 1e-9) {
		out->insns[n - 1].m_loop += lines - out->steady_cycles;
		out->steady_cycles = lines;
		out->loop_lines = lines;
	}
}

int model_schedule(const struct model *m, const struct cfg_insn *insns, size_t n,
		   const struct cfg_insn *pre, size_t npre, struct sched_block *out,
		   struct dcpi_err *err)
{
	struct sim s;
	int rc, iters;

	memset(out, 0, sizeof(*out));
	if (!m || (!insns && n))
		return dcpi_errf(err, -EINVAL, "model: no model or no instructions");
	if (!n)
		return 0;
	if (m->nports > MODEL_MAX_PORTS)
		return dcpi_errf(err, -EINVAL, "model %s: %d ports, at most %d", m->name,
				 m->nports, MODEL_MAX_PORTS);
	out->insns = calloc(n, sizeof(*out->insns));
	rc = out->insns ? sim_init(&s, m) : -ENOMEM;
	if (rc < 0) {
		free(out->insns);
		out->insns = NULL;
		return dcpi_errf(err, -ENOMEM, "model: out of memory");
	}
	out->n = n;
	rc = fill_classes(m, insns, n, &s.cls, out);
	if (rc == 0)
		rc = fill_classes(m, pre, npre, &s.pcls, NULL);
	if (rc < 0)
		goto fail;
	port_order_init(&s, m, s.cls, n);
	s.reloaded = malloc(n);
	if (!s.reloaded) {
		rc = -ENOMEM;
		goto fail;
	}
	mark_reloaded(insns, n, s.reloaded);
	iters = n * SIM_ITERS > SIM_INSNS ? (int)(SIM_INSNS / n) : SIM_ITERS;
	if (iters < 8)
		iters = 8;
	rc = run(&s, insns, n, pre, npre, iters, out);
	if (rc < 0)
		goto fail;
	loop_floor(m, insns, n, out);
	free(s.cls);
	free(s.pcls);
	free(s.reloaded);
	sim_fini(&s);
	return 0;
fail:
	free(s.cls);
	free(s.pcls);
	free(s.reloaded);
	sim_fini(&s);
	sched_block_free(out);
	return dcpi_errf(err, rc, "model %s: out of memory", m->name);
}
