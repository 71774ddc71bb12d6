/*
 * chain.c - a hash table with chaining for tests/test_entry_count.c: NODES
 * nodes (24 bytes each, linked in a random order over the heap, so a chain
 * walk misses) in NODES / 4 buckets, then LOOKUPS lookups of pseudo-random
 * keys, about three in four of them present; lookup()'s loop walks a
 * chain (p = p->next), its latch a compare and a branch.  Prints the sum of
 * the values found.  Deterministic: a fixed seed.
 *
 * usage: chain NODES LOOKUPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_common.h"

struct node {
	struct node *next;
	long key, val;
};

__attribute__((noinline)) long lookup(struct node **tab, unsigned long mask, long key)
{
	struct node *p = tab[key & mask];

	while (p && p->key != key)
		p = p->next;
	return p ? p->val : -1;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1ul << 18;
	long lookups = argc > 2 ? strtol(argv[2], NULL, 0) : 2000000, sum = 0;
	unsigned long mask = 1, *order;
	struct node *nodes, **tab;
	uint64_t x = 88172645463325252ull;

	while (mask * 4 < n)
		mask <<= 1;
	mask -= 1;
	nodes = calloc(n, sizeof(*nodes));
	order = malloc(n * sizeof(*order));
	tab = calloc(mask + 1, sizeof(*tab));
	if (!nodes || !order || !tab || n < 2)
		return 1;
	WL_SATTOLO(order, n, x);	/* nodes linked in this order */
	for (unsigned long i = 0; i < n; i++) {
		struct node *q = &nodes[order[i]];

		q->key = (long)(WL_XORSHIFT(x) % (4 * n / 3));
		q->val = (long)(i & 1023);
		q->next = tab[q->key & mask];
		tab[q->key & mask] = q;
	}
	for (long i = 0; i < lookups; i++)
		sum += lookup(tab, mask, (long)(WL_XORSHIFT(x) % (4 * n / 3)));
	printf("%ld\n", sum);
	free(nodes);
	free(order);
	free(tab);
	return 0;
}
