/*
 * collect/random.c - random sampling periods (DCPI paper sec. 4.1.1: "the
 * period is chosen randomly between 60K and 64K cycles" so that sampling
 * cannot synchronize with a loop).  Here a period P becomes a uniform draw
 * from [P - P/16, P], the paper's 60K..64K window scaled.  xoshiro256**,
 * seeded by splitmix64 from a given seed (tests) or the kernel.
 */
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

void rnd_init(struct rnd *r, uint64_t seed)
{
	uint64_t x;

	if (!seed && getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
	}
	if (!seed)
		seed = 1;
	r->seed = seed;
	x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rnd_next(struct rnd *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t rnd_period(struct rnd *r, uint64_t period)
{
	uint64_t window = period / 16;

	if (!window)
		return period;
	return period - rnd_next(r) % (window + 1);
}
