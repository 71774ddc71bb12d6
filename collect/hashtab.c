/*
 * collect/hashtab.c - the first-level aggregation table of samples (DCPI
 * paper, sec. 4.2) and the alternatives measured against it.
 *
 * An entry is 16 bytes: the pc, then one word holding pid (bits 0-31), event
 * (32-47) and count (48-63); a slot whose count is 0 is empty.  A sample that
 * finds its entry increments the count; one that does not takes a slot, and
 * the entry that slot held goes to the overflow buffer, which the caller
 * drains.  The policies differ only in where entries live and which one goes:
 *
 *   rr4, rr6      buckets of 4 (one 64-byte line) or 6 entries; the victim is
 *                 chosen by a per-table mod-N counter bumped on each eviction,
 *                 exactly as sec. 4.2 describes.
 *   swap4, swap6  a hit swaps the entry with the bucket's first; a miss evicts
 *                 the last entry, shifts the others down and inserts at the
 *                 front (sec. 5.4: "would reduce the overall cost by 10-20%").
 *   sort          chained buckets over a fixed pool of nodes, a quarter as
 *                 many heads as nodes; new entries go in front, a full pool
 *                 evicts the chain's tail.  Every SORT_PERIOD samples, chains
 *                 deeper than SORT_DEPTH get their entries with count >=
 *                 SORT_HOT moved to the front in descending count order, the
 *                 others keep their order behind them (seed note 003).
 *   open          open addressing with linear probing at load <= 3/4; doubles
 *                 OPEN_GROWTH times (to 16x its first size), then evicts the
 *                 occupant of the key's home slot.
 *
 * Nothing here allocates on the hit path; the overflow buffer grows past its
 * nominal size (and ht_add says so) rather than drop a count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

#define KEY_MASK	((UINT64_C(1) << 48) - 1)
#define CNT_ONE		(UINT64_C(1) << 48)
#define CNT_MAX		UINT64_C(0xffff)
#define NIL		UINT32_MAX

#define SORT_PERIOD	4096	/* samples between sorting passes (P) */
#define SORT_DEPTH	4	/* only chains deeper than this are sorted (D) */
#define SORT_HOT	8	/* entries counted at least this often move (F) */
#define SORT_MAX_HOT	32	/* at most this many hot entries are ordered */
#define OPEN_GROWTH	4	/* an open table doubles at most this many times */

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

struct ht_slot {
	uint64_t pc;
	uint64_t w;		/* pid | event << 32 | count << 48 */
};

struct ht_node {
	uint64_t pc;
	uint64_t w;
	uint32_t next;
	uint32_t pad;
};

struct hashtab {
	enum ht_policy policy;
	unsigned ways;		/* n-way policies */
	unsigned rr;		/* round-robin victim */
	uint32_t nbuckets;	/* n-way buckets or sort chain heads */
	struct ht_slot *slots;	/* n-way: nbuckets * ways; open: 1 << log2 */
	size_t nslots;

	/* sort */
	struct ht_node *nodes;
	uint32_t *heads;
	uint64_t *deep;		/* bitmap of chains deeper than SORT_DEPTH */
	uint32_t nnodes, free_list, clock, since_sort;

	/* open */
	unsigned log2, max_log2;
	size_t used;

	struct ht_entry *ovf;
	size_t ovf_n, ovf_cap, ovf_alloc;

	struct ht_stats st;
};

static const char *const policy_names[HT_NPOLICY] = {
	[HT_RR4] = "rr4", [HT_SWAP4] = "swap4", [HT_RR6] = "rr6",
	[HT_SWAP6] = "swap6", [HT_SORT] = "sort", [HT_OPEN] = "open",
};

const char *ht_policy_name(enum ht_policy p)
{
	return (unsigned)p < HT_NPOLICY ? policy_names[p] : NULL;
}

int ht_policy_by_name(const char *name)
{
	for (int i = 0; i < HT_NPOLICY; i++)
		if (name && strcmp(name, policy_names[i]) == 0)
			return i;
	return -EINVAL;
}

static inline uint64_t ht_tag(uint32_t pid, uint16_t event)
{
	return pid | (uint64_t)event << 32;
}

/* Multiplicative (Fibonacci) hash: its high bits mix every key bit. */
static inline uint64_t ht_hash(uint64_t pc, uint64_t tag)
{
	return (pc ^ (tag << 29 | tag >> 35)) * UINT64_C(0x9E3779B97F4A7C15);
}

/* A bucket in [0, n) from the hash's top 32 bits, without a division. */
static inline uint32_t ht_reduce(uint64_t hash, uint32_t n)
{
	return (uint32_t)(((hash >> 32) * n) >> 32);
}

/* The entry a slot or node holds: its pc and its word (struct ht_slot). */
static inline struct ht_entry ht_entry_of(uint64_t pc, uint64_t w)
{
	return (struct ht_entry){ .pc = pc, .pid = (uint32_t)w, .event = (uint16_t)(w >> 32),
				  .count = w >> 48 };
}

/* Move one entry to the overflow buffer; -ENOMEM if it has no room. */
static inline int ovf_push(struct hashtab *h, uint64_t pc, uint64_t w)
{
	if (unlikely(h->ovf_n == h->ovf_alloc) &&
	    dcpi_grow((void **)&h->ovf, &h->ovf_alloc, h->ovf_n + 1, sizeof(*h->ovf)))
		return -ENOMEM;
	h->ovf[h->ovf_n++] = ht_entry_of(pc, w);
	h->st.evictions++;
	return 0;
}

static inline int ht_status(const struct hashtab *h)
{
	return h->ovf_n >= h->ovf_cap;
}

static int ht_lose(struct hashtab *h)
{
	h->st.lost++;
	return -ENOMEM;
}

/*
 * Count a hit on an entry's count word; a count about to pass CNT_MAX is
 * evicted first and the entry restarts at 1.
 */
static inline int count_hit(struct hashtab *h, uint64_t pc, uint64_t *w)
{
	h->st.hits++;
	if (unlikely((*w >> 48) == CNT_MAX)) {
		if (ovf_push(h, pc, *w))
			return ht_lose(h);
		*w = (*w & KEY_MASK) | CNT_ONE;
		return ht_status(h);
	}
	*w += CNT_ONE;
	return ht_status(h);
}

/* --- n-way set-associative buckets ----------------------------------------- */

static inline __attribute__((always_inline)) int
nway_add(struct hashtab *h, uint64_t pc, uint64_t tag, unsigned ways, int swap)
{
	struct ht_slot *b = h->slots + (size_t)ht_reduce(ht_hash(pc, tag), h->nbuckets) * ways;
	unsigned i, victim = ways;

	for (i = 0; i < ways; i++) {
		if (b[i].pc == pc && (b[i].w & KEY_MASK) == tag) {
			int r = count_hit(h, pc, &b[i].w);

			if (swap && i > 0) {
				struct ht_slot t = b[i];

				b[i] = b[0];
				b[0] = t;
			}
			return r;
		}
		if (!swap && victim == ways && (b[i].w >> 48) == 0)
			victim = i;
	}
	h->st.misses++;
	if (swap) {
		if ((b[ways - 1].w >> 48) != 0 &&
		    ovf_push(h, b[ways - 1].pc, b[ways - 1].w))
			return ht_lose(h);
		memmove(b + 1, b, (ways - 1) * sizeof(*b));
		victim = 0;
	} else if (victim == ways) {
		victim = h->rr;
		if (ovf_push(h, b[victim].pc, b[victim].w))
			return ht_lose(h);
		h->rr = victim + 1 == ways ? 0 : victim + 1;
	}
	b[victim].pc = pc;
	b[victim].w = tag | CNT_ONE;
	return ht_status(h);
}

/* Hand a full slot's entry to fn and empty the slot; fn's nonzero stops it. */
static int slot_drain(struct hashtab *h, struct ht_slot *s,
		      int (*fn)(void *, const struct ht_entry *), void *arg)
{
	struct ht_entry e = ht_entry_of(s->pc, s->w);
	int r = fn(arg, &e);

	if (r)
		return r;
	h->st.entries_out++;
	s->pc = 0;
	s->w = 0;
	return 0;
}

/* Empty each bucket from its last way, so a stopped drain leaves prefixes. */
static int nway_drain(struct hashtab *h, int (*fn)(void *, const struct ht_entry *), void *arg)
{
	for (size_t b = 0; b < h->nbuckets; b++) {
		for (unsigned i = h->ways; i-- > 0;) {
			struct ht_slot *s = &h->slots[b * h->ways + i];
			int r;

			if ((s->w >> 48) == 0)
				continue;
			r = slot_drain(h, s, fn, arg);
			if (r)
				return r;
		}
	}
	return 0;
}

/* --- chained buckets with bounded sorting (seed 003) ----------------------- */

static void sort_reset(struct hashtab *h)
{
	for (uint32_t i = 0; i < h->nbuckets; i++)
		h->heads[i] = NIL;
	for (uint32_t i = 0; i < h->nnodes; i++) {
		h->nodes[i].next = i + 1 < h->nnodes ? i + 1 : NIL;
		h->nodes[i].w = 0;
	}
	h->free_list = 0;
	memset(h->deep, 0, ((h->nbuckets + 63) / 64) * sizeof(*h->deep));
}

/*
 * Reorder one chain: entries counted SORT_HOT times or more (the first
 * SORT_MAX_HOT of them) to the front, most counted first; the rest keep their
 * order.  O(n) partition plus an insertion sort of at most SORT_MAX_HOT.
 */
static void sort_chain(struct hashtab *h, uint32_t b)
{
	uint32_t hot[SORT_MAX_HOT], nhot = 0, depth = 0;
	uint32_t cold = NIL, *cold_tail = &cold;

	for (uint32_t n = h->heads[b], next; n != NIL; n = next) {
		next = h->nodes[n].next;
		depth++;
		if (nhot < SORT_MAX_HOT && (h->nodes[n].w >> 48) >= SORT_HOT) {
			uint32_t j = nhot++;
			uint64_t c = h->nodes[n].w >> 48;

			while (j > 0 && (h->nodes[hot[j - 1]].w >> 48) < c) {
				hot[j] = hot[j - 1];
				j--;
			}
			hot[j] = n;
		} else {
			*cold_tail = n;
			cold_tail = &h->nodes[n].next;
		}
	}
	*cold_tail = NIL;
	for (uint32_t j = nhot; j-- > 0;) {
		h->nodes[hot[j]].next = cold;
		cold = hot[j];
	}
	h->heads[b] = cold;
	if (depth <= SORT_DEPTH)
		h->deep[b / 64] &= ~(UINT64_C(1) << (b % 64));
	h->st.sorts++;
}

static void sort_pass(struct hashtab *h)
{
	for (uint32_t w = 0; w < (h->nbuckets + 63) / 64; w++) {
		uint64_t bits = h->deep[w];

		while (bits) {
			sort_chain(h, w * 64 + (uint32_t)__builtin_ctzll(bits));
			bits &= bits - 1;
		}
	}
}

/* Take a node from some other chain when the pool is full: a clock hand. */
static int sort_steal(struct hashtab *h, uint32_t *out)
{
	uint32_t n = h->clock;
	struct ht_node *v = &h->nodes[n];
	uint32_t *p = &h->heads[ht_reduce(ht_hash(v->pc, v->w & KEY_MASK), h->nbuckets)];

	h->clock = n + 1 == h->nnodes ? 0 : n + 1;
	if (ovf_push(h, v->pc, v->w))
		return -ENOMEM;
	while (*p != n)
		p = &h->nodes[*p].next;
	*p = v->next;
	*out = n;
	return 0;
}

static int sort_add(struct hashtab *h, uint64_t pc, uint64_t tag)
{
	uint32_t b = ht_reduce(ht_hash(pc, tag), h->nbuckets);
	uint32_t *p = &h->heads[b], *tail_link = NULL, depth = 0, n;

	if (unlikely(++h->since_sort >= SORT_PERIOD)) {
		h->since_sort = 0;
		sort_pass(h);
	}
	for (n = *p; n != NIL; n = h->nodes[n].next) {
		if (h->nodes[n].pc == pc && (h->nodes[n].w & KEY_MASK) == tag)
			return count_hit(h, pc, &h->nodes[n].w);
		tail_link = p;
		p = &h->nodes[n].next;
		depth++;
	}
	h->st.misses++;
	if (h->free_list != NIL) {
		n = h->free_list;
		h->free_list = h->nodes[n].next;
	} else if (tail_link) {
		n = *tail_link;
		if (ovf_push(h, h->nodes[n].pc, h->nodes[n].w))
			return ht_lose(h);
		*tail_link = NIL;
		depth--;
	} else if (sort_steal(h, &n)) {
		return ht_lose(h);
	}
	h->nodes[n].pc = pc;
	h->nodes[n].w = tag | CNT_ONE;
	h->nodes[n].next = h->heads[b];
	h->heads[b] = n;
	if (depth + 1 > SORT_DEPTH)
		h->deep[b / 64] |= UINT64_C(1) << (b % 64);
	return ht_status(h);
}

static int sort_drain(struct hashtab *h, int (*fn)(void *, const struct ht_entry *), void *arg)
{
	for (uint32_t b = 0; b < h->nbuckets; b++) {
		uint32_t n;

		while ((n = h->heads[b]) != NIL) {
			struct ht_node *v = &h->nodes[n];
			struct ht_entry e = ht_entry_of(v->pc, v->w);
			int r = fn(arg, &e);

			if (r)
				return r;
			h->st.entries_out++;
			h->heads[b] = v->next;
			v->w = 0;
			v->next = h->free_list;
			h->free_list = n;
		}
		h->deep[b / 64] &= ~(UINT64_C(1) << (b % 64));
	}
	return 0;
}

/* --- open addressing -------------------------------------------------------- */

static size_t open_find(const struct ht_slot *t, unsigned log2, uint64_t pc, uint64_t tag)
{
	size_t mask = ((size_t)1 << log2) - 1;
	size_t i = ht_hash(pc, tag) >> (64 - log2);

	while ((t[i].w >> 48) != 0 && !(t[i].pc == pc && (t[i].w & KEY_MASK) == tag))
		i = (i + 1) & mask;
	return i;
}

/* Move every entry into a new array of 1 << log2 slots. */
static int open_rehash(struct hashtab *h, unsigned log2)
{
	struct ht_slot *t = calloc((size_t)1 << log2, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->nslots; i++) {
		const struct ht_slot *s = &h->slots[i];

		if ((s->w >> 48) != 0)
			t[open_find(t, log2, s->pc, s->w & KEY_MASK)] = *s;
	}
	free(h->slots);
	h->slots = t;
	h->log2 = log2;
	h->nslots = (size_t)1 << log2;
	return 0;
}

static size_t open_home(const struct hashtab *h, const struct ht_slot *s)
{
	return ht_hash(s->pc, s->w & KEY_MASK) >> (64 - h->log2);
}

/* Empty slot j and close the gap behind it (Knuth's algorithm R). */
static void open_delete(struct hashtab *h, size_t j)
{
	size_t mask = h->nslots - 1, i = j, k;

	for (;;) {
		i = (i + 1) & mask;
		if ((h->slots[i].w >> 48) == 0)
			break;
		k = open_home(h, &h->slots[i]);
		if (i > j ? (k > j && k <= i) : (k > j || k <= i))
			continue;
		h->slots[j] = h->slots[i];
		j = i;
	}
	h->slots[j].pc = 0;
	h->slots[j].w = 0;
	h->used--;
}

/* At full size: evict the key's home slot occupant (or the next one). */
static int open_evict(struct hashtab *h, uint64_t pc, uint64_t tag)
{
	size_t mask = h->nslots - 1, j = ht_hash(pc, tag) >> (64 - h->log2);
	struct ht_slot *s;

	while ((h->slots[j].w >> 48) == 0)
		j = (j + 1) & mask;
	s = &h->slots[j];
	if (ovf_push(h, s->pc, s->w))
		return -ENOMEM;
	open_delete(h, j);
	return 0;
}

static int open_add(struct hashtab *h, uint64_t pc, uint64_t tag)
{
	struct ht_slot *s = &h->slots[open_find(h->slots, h->log2, pc, tag)];

	if ((s->w >> 48) != 0)
		return count_hit(h, pc, &s->w);
	h->st.misses++;
	if (unlikely((h->used + 1) * 4 > h->nslots * 3)) {
		if (h->log2 < h->max_log2 && open_rehash(h, h->log2 + 1) == 0)
			h->st.grows++;
		else if (open_evict(h, pc, tag))
			return ht_lose(h);
		s = &h->slots[open_find(h->slots, h->log2, pc, tag)];
	}
	s->pc = pc;
	s->w = tag | CNT_ONE;
	h->used++;
	return ht_status(h);
}

static int open_drain(struct hashtab *h, int (*fn)(void *, const struct ht_entry *), void *arg)
{
	for (size_t i = 0; i < h->nslots; i++) {
		struct ht_slot *s = &h->slots[i];
		int r;

		if ((s->w >> 48) == 0)
			continue;
		r = slot_drain(h, s, fn, arg);
		if (r) {
			/* Holes break probe chains: rebuild what is left (or keep it,
			 * which could only split a key into two entries, not lose it). */
			open_rehash(h, h->log2);
			return r;
		}
		h->used--;
	}
	return 0;
}

/* --- the interface ---------------------------------------------------------- */

int ht_add(struct hashtab *h, uint32_t pid, uint16_t event, uint64_t pc)
{
	uint64_t tag = ht_tag(pid, event);

	h->st.samples++;
	switch (h->policy) {
	case HT_RR4:
		return nway_add(h, pc, tag, 4, 0);
	case HT_SWAP4:
		return nway_add(h, pc, tag, 4, 1);
	case HT_RR6:
		return nway_add(h, pc, tag, 6, 0);
	case HT_SWAP6:
		return nway_add(h, pc, tag, 6, 1);
	case HT_SORT:
		return sort_add(h, pc, tag);
	default:
		return open_add(h, pc, tag);
	}
}

int ht_drain(struct hashtab *h, int all, int (*fn)(void *arg, const struct ht_entry *e),
	     void *arg)
{
	size_t i;
	int r = 0;

	for (i = 0; i < h->ovf_n; i++) {
		r = fn(arg, &h->ovf[i]);
		if (r)
			break;
		h->st.entries_out++;
	}
	memmove(h->ovf, h->ovf + i, (h->ovf_n - i) * sizeof(*h->ovf));
	h->ovf_n -= i;
	if (r || !all)
		return r;
	switch (h->policy) {
	case HT_SORT:
		return sort_drain(h, fn, arg);
	case HT_OPEN:
		return open_drain(h, fn, arg);
	default:
		return nway_drain(h, fn, arg);
	}
}

size_t ht_count(const struct hashtab *h)
{
	size_t n = h->ovf_n;

	if (h->policy == HT_SORT) {
		for (uint32_t i = 0; i < h->nnodes; i++)
			n += (h->nodes[i].w >> 48) != 0;
		return n;
	}
	for (size_t i = 0; i < h->nslots; i++)
		n += (h->slots[i].w >> 48) != 0;
	return n;
}

void ht_stats(const struct hashtab *h, struct ht_stats *s)
{
	*s = h->st;
}

void ht_free(struct hashtab *h)
{
	if (!h)
		return;
	free(h->slots);
	free(h->nodes);
	free(h->heads);
	free(h->deep);
	free(h->ovf);
	free(h);
}

static int ht_alloc_tables(struct hashtab *h, unsigned log2)
{
	size_t entries = (size_t)1 << log2;

	switch (h->policy) {
	case HT_SORT:
		h->nnodes = (uint32_t)entries;
		h->nbuckets = (uint32_t)(entries / 4);
		h->nodes = malloc(entries * sizeof(*h->nodes));
		h->heads = malloc(h->nbuckets * sizeof(*h->heads));
		h->deep = calloc((h->nbuckets + 63) / 64, sizeof(*h->deep));
		if (!h->nodes || !h->heads || !h->deep)
			return -ENOMEM;
		sort_reset(h);
		return 0;
	case HT_OPEN:
		h->log2 = log2;
		h->max_log2 = log2 + OPEN_GROWTH;
		h->nslots = entries;
		h->slots = calloc(entries, sizeof(*h->slots));
		return h->slots ? 0 : -ENOMEM;
	default:
		h->ways = h->policy == HT_RR6 || h->policy == HT_SWAP6 ? 6 : 4;
		h->nbuckets = (uint32_t)(entries / h->ways);
		h->nslots = (size_t)h->nbuckets * h->ways;
		/* 64-byte aligned so a 4-way bucket is exactly one cache line */
		h->slots = aligned_alloc(64, (h->nslots * sizeof(*h->slots) + 63) & ~(size_t)63);
		if (!h->slots)
			return -ENOMEM;
		memset(h->slots, 0, h->nslots * sizeof(*h->slots));
		return 0;
	}
}

int ht_new(enum ht_policy p, unsigned log2_entries, size_t overflow_cap,
	   struct hashtab **out, struct dcpi_err *err)
{
	struct hashtab *h;

	*out = NULL;
	if ((unsigned)p >= HT_NPOLICY)
		return dcpi_errf(err, -EINVAL, "hashtab: unknown policy %d", (int)p);
	if (log2_entries < 4 || log2_entries > 24)
		return dcpi_errf(err, -EINVAL, "hashtab: 2^%u entries: want 2^4 to 2^24",
				 log2_entries);
	if (overflow_cap < 16 || overflow_cap > ((size_t)1 << 28))
		return dcpi_errf(err, -EINVAL, "hashtab: overflow buffer of %zu entries: "
				 "want 16 to 2^28", overflow_cap);
	h = calloc(1, sizeof(*h));
	if (!h)
		return dcpi_errf(err, -ENOMEM, "hashtab: out of memory");
	h->policy = p;
	h->ovf_cap = overflow_cap;
	h->ovf_alloc = overflow_cap + 16;
	h->ovf = malloc(h->ovf_alloc * sizeof(*h->ovf));
	if (!h->ovf || ht_alloc_tables(h, log2_entries)) {
		ht_free(h);
		return dcpi_errf(err, -ENOMEM, "hashtab: %s table of 2^%u entries: out of memory",
				 policy_names[p], log2_entries);
	}
	*out = h;
	return 0;
}
