/* two phases: A: inner loop of 2 trips after a cache-missing load;
 * B: inner loop of 20 trips, no misses.  Equal numbers of outer iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#define N (1u << 24)
static uint32_t *big;
__attribute__((noinline)) static uint64_t inner(uint64_t x, int trips)
{
	for (int i = 0; i < trips; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}
int main(int argc, char **argv)
{
	long outer = argc > 1 ? atol(argv[1]) : 2000000;
	uint64_t x = 1, idx = 12345;
	big = malloc(N * sizeof(*big));
	for (uint32_t i = 0; i < N; i++) big[i] = i * 2654435761u;
	for (int rep = 0; rep < 4; rep++) {
		for (long i = 0; i < outer; i++) {	/* phase A: misses, short loops */
			idx = (big[idx & (N - 1)] + x) & (N - 1);
			x = inner(x + idx, 2);
		}
		for (long i = 0; i < outer; i++)	/* phase B: long loops */
			x = inner(x, 20);
	}
	printf("%llu\n", (unsigned long long)x);
	return 0;
}
