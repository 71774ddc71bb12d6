/*
 * phases.c - a program with known phases, for the phase detector
 * (collect/phase.c, tests/test_phase.c): each phase runs its own procedure
 * with its own memory behaviour for a set time, in the order given.
 *
 *   phases [SPEC]      SPEC: NAME:MS,... (default A:800,B:800,A:800)
 *     A  integer mixing in registers (phase_alu)
 *     B  a dependent pointer chase over 16 MB (phase_chase)
 *     C  a floating-point recurrence over a 64 KB array (phase_fp)
 *     D  phase_branch with its test true 7 times in 8
 *     E  the same procedure with its test true 1 time in 8: one procedure
 *        whose block counts differ by phase (docs/phases.md, "Path samples
 *        in time")
 *
 * With DCPI_PHASES_OUT set, the truth goes to that file: one line per phase,
 * "NAME START_NS END_NS", CLOCK_MONOTONIC, written at the end.  With
 * DCPI_PHASES_CALLS set, the exact counts by construction: the first line
 * "BRANCH_N 20000" (iterations per call of phase_branch, a multiple of 8),
 * then one line per call of phase_branch, "NAME START_NS": a call in phase
 * D (E) runs the "then" arm BRANCH_N * 7 / 8 (1 / 8) times, the "else" arm
 * the rest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHASE_N (16u << 20) / sizeof(uint32_t)
#define FP_N 8192
#define MAX_PHASES 64
#define BRANCH_N 20000u
#define MAX_CALLS (1u << 20)

static volatile uint64_t sink;
static volatile unsigned branch_k;	/* read at each call: no clone per phase */
static uint64_t *call_ns;		/* DCPI_PHASES_CALLS: each call's start */
static char *call_name;
static unsigned ncalls;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t phase_alu(uint64_t x, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x *= 0x9E3779B97F4A7C15ULL;
	}
	return x;
}

static uint32_t phase_chase(const uint32_t *next, uint32_t at, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		at = next[at];
	return at;
}

static double phase_fp(double *v, unsigned n)
{
	double s = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned k = i % FP_N;

		v[k] = v[k] * 0.999 + v[(k + 1) % FP_N] * 0.001 + 1e-9;
		s += v[k];
	}
	return s;
}

/* (i & 7) < k: "then" (a multiply), else a division; both kept as branches
 * (a division is never if-converted). */
static __attribute__((noinline, noclone)) uint64_t phase_branch(uint64_t x, unsigned n,
								 unsigned k)
{
	for (unsigned i = 0; i < n; i++) {
		if ((i & 7) < k)
			x = x * 0x9E3779B97F4A7C15ULL + i;
		else
			x = x / (i | 3) + 0x2545F4914F6CDD1DULL;
	}
	return x;
}

/* A single cycle through all of next, in random order (Sattolo). */
static uint32_t *chase_make(void)
{
	uint32_t *v = malloc(CHASE_N * sizeof(*v));
	uint64_t r = 88172645463325252ULL;

	if (!v)
		return NULL;
	for (uint32_t i = 0; i < CHASE_N; i++)
		v[i] = i;
	for (uint32_t i = CHASE_N - 1; i > 0; i--) {
		uint32_t j, t;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		j = (uint32_t)(r % i);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	return v;
}

static uint64_t branch_call(char name, uint64_t x)
{
	branch_k = name == 'D' ? 7 : 1;
	if (call_ns && ncalls < MAX_CALLS) {
		call_name[ncalls] = name;
		call_ns[ncalls++] = now_ns();
	}
	return phase_branch(x, BRANCH_N, branch_k);
}

static void write_calls(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fprintf(f, "BRANCH_N %u\n", BRANCH_N);
	for (unsigned i = 0; i < ncalls; i++)
		fprintf(f, "%c %llu\n", call_name[i], (unsigned long long)call_ns[i]);
	fclose(f);
}

struct phase {
	char name;
	unsigned ms;
	uint64_t start, end;
};

static void run(struct phase *p, const uint32_t *next, double *fp)
{
	uint64_t end, x = 1;
	uint32_t at = 0;

	p->start = now_ns();
	end = p->start + (uint64_t)p->ms * 1000000ULL;
	while (now_ns() < end) {
		if (p->name == 'A')
			x = phase_alu(x, 20000);
		else if (p->name == 'B')
			at = phase_chase(next, at, 2000);
		else if (p->name == 'C')
			x += (uint64_t)phase_fp(fp, 20000);
		else
			x = branch_call(p->name, x);
	}
	p->end = now_ns();
	sink = x + at;
}

static int parse(const char *spec, struct phase *ph)
{
	int n = 0;

	while (*spec && n < MAX_PHASES) {
		char *end;

		if (!strchr("ABCDE", spec[0]) || spec[1] != ':')
			return -1;
		ph[n].name = spec[0];
		ph[n].ms = (unsigned)strtoul(spec + 2, &end, 10);
		n++;
		spec = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct phase ph[MAX_PHASES];
	const char *out = getenv("DCPI_PHASES_OUT"), *calls = getenv("DCPI_PHASES_CALLS");
	int n = parse(argc > 1 ? argv[1] : "A:800,B:800,A:800", ph);
	uint32_t *next = chase_make();
	double *fp = calloc(FP_N, sizeof(*fp));
	FILE *f;

	if (n <= 0 || !next || !fp) {
		fprintf(stderr, "usage: phases [A|B|C|D|E:MS,...]\n");
		return 2;
	}
	if (calls && (!(call_ns = malloc(MAX_CALLS * sizeof(*call_ns))) ||
		      !(call_name = malloc(MAX_CALLS))))
		return 2;
	for (int i = 0; i < n; i++)
		run(&ph[i], next, fp);
	if (out && (f = fopen(out, "w"))) {
		for (int i = 0; i < n; i++)
			fprintf(f, "%c %llu %llu\n", ph[i].name, (unsigned long long)ph[i].start,
				(unsigned long long)ph[i].end);
		fclose(f);
	}
	if (calls)
		write_calls(calls);
	free(call_ns);
	free(call_name);
	free(next);
	free(fp);
	return 0;
}
