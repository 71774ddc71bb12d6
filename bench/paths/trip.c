/* noDict_5-like: a call skips its loop 3 times in 4; otherwise 50 iterations,
 * each a cache-missing load and a store.  Per call: skip 0.75; per entered
 * loop 49 back edges and 1 exit (p(back) = 0.98). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#define N (1u << 24)
static uint32_t *big;
__attribute__((noinline)) static uint32_t upd(uint32_t h, uint32_t trips)
{
	if (!trips)
		return h + 1;
	for (uint32_t i = 0; i < trips; i++) {
		uint32_t j = (h * 2654435761u) & (N - 1);
		h = big[j] ^ i;
		big[j] = h + 1;
	}
	return h;
}
int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 400000;
	uint32_t h = 7;
	big = malloc(N * sizeof(*big));
	for (uint32_t i = 0; i < N; i++) big[i] = i * 2654435761u;
	for (long c = 0; c < calls; c++)
		h = upd(h, (c & 3) ? 0 : 50);
	printf("%u\n", h);
	return 0;
}
