/*
 * collect/hashtab.h - the collector's first-level aggregation table: counts of
 * (pid, event, pc) samples kept per CPU, with entries it cannot hold evicted
 * into an overflow buffer that the caller drains (DCPI paper, sec. 4.2; the
 * alternatives of sec. 5.4 and of seed note 003 are here too so that
 * bench/bench_aggregate.sh can pick one on recorded sample streams).
 *
 * Module-private (collect/): the recorder owns one table per CPU and feeds it
 * from the perf ring buffers; nothing here locks.
 *
 * Usage:
 *	struct hashtab *h;
 *	if (ht_new(HT_DEFAULT_POLICY, HT_DEFAULT_LOG2_ENTRIES, HT_DEFAULT_OVERFLOW, &h, err))
 *		return err->code;
 *	for each sample:
 *		if (ht_add(h, pid, event, pc) != 0)		(1: overflow full)
 *			ht_drain(h, 0, merge, ctx);		overflow buffer only
 *	at the end of a drain period:
 *		ht_drain(h, 1, merge, ctx);			overflow, then table
 *	ht_free(h);
 */
#ifndef DCPI_COLLECT_HASHTAB_H
#define DCPI_COLLECT_HASHTAB_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

/*
 * One aggregated sample as handed to a drain callback.  (Inside the table an
 * entry is DCPI's 16 bytes, so four fill one 64-byte line: the full 64-bit pc,
 * then pid, event and a 16-bit count in one word.  A count that would pass
 * 65535 evicts the entry, which costs one overflow entry per 65535 samples of
 * a hot pc; truncating the pc or the pid instead would merge distinct keys.)
 */
struct ht_entry {
	uint64_t pc;
	uint32_t pid;
	uint16_t event;
	uint16_t pad;
	uint64_t count;
};

enum ht_policy {
	HT_RR4,		/* 4-way, round-robin eviction (DCPI 4.2) */
	HT_SWAP4,	/* 4-way, swap-to-front on hit, insert at front (DCPI 5.4) */
	HT_RR6,		/* 6-way (96-byte buckets), round-robin */
	HT_SWAP6,	/* 6-way, swap-to-front (both changes DCPI 5.4 proposes) */
	HT_SORT,	/* chains with bounded sorting of deep buckets (seed 003) */
	HT_OPEN,	/* open addressing, linear probing, grows to 16x */
	HT_NPOLICY
};

/* The policy bench/bench_aggregate.sh measured fastest; see its report. */
#define HT_DEFAULT_POLICY	HT_SWAP4
/* 16K entries (256 KB) and 8K overflow entries per CPU, as DCPI ran (sec. 5.3). */
#define HT_DEFAULT_LOG2_ENTRIES	14
#define HT_DEFAULT_OVERFLOW	8192

struct hashtab;

/*
 * A table of 2^log2_entries entries (4..24) whichever the policy: 6-way
 * tables have floor(entries / 6) buckets, chained ones a pool of that many
 * nodes.  overflow_cap (>= 16) is when ht_add starts returning 1; the buffer
 * grows past it rather than lose a count if the caller drains late.
 */
int ht_new(enum ht_policy p, unsigned log2_entries, size_t overflow_cap,
	   struct hashtab **out, struct dcpi_err *err);
void ht_free(struct hashtab *h);

/*
 * Count one sample.  Returns 1 when the overflow buffer holds overflow_cap
 * entries or more and the caller should drain it soon, else 0; -ENOMEM when
 * the buffer could not grow and a sample was dropped (counted in lost).
 */
int ht_add(struct hashtab *h, uint32_t pid, uint16_t event, uint64_t pc);

/*
 * Hand every entry of the overflow buffer, then (all != 0) of the table, to
 * fn and forget it.  A nonzero return from fn stops the drain and is
 * returned; the entry it was given and those not yet handed over stay.
 */
int ht_drain(struct hashtab *h, int all, int (*fn)(void *arg, const struct ht_entry *e),
	     void *arg);

/* Number of entries held (table + overflow buffer). */
size_t ht_count(const struct hashtab *h);

struct ht_stats {
	uint64_t samples;	/* ht_add calls */
	uint64_t hits;		/* samples that found their entry */
	uint64_t misses;	/* samples that started an entry; hits + misses = samples */
	uint64_t evictions;	/* entries moved from the table to the overflow buffer */
	uint64_t entries_out;	/* entries handed to drain callbacks */
	uint64_t lost;		/* samples dropped (overflow buffer could not grow) */
	uint64_t sorts;		/* HT_SORT: buckets reordered */
	uint64_t grows;		/* HT_OPEN: table doublings */
};

void ht_stats(const struct hashtab *h, struct ht_stats *s);

/* "rr4", "swap4", "rr6", "swap6", "sort", "open"; NULL / -EINVAL if unknown. */
const char *ht_policy_name(enum ht_policy p);
int ht_policy_by_name(const char *name);

#endif /* DCPI_COLLECT_HASHTAB_H */
