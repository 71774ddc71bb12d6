/*
 * aggregate.c - replay recorded sample streams through every policy of the
 * collector's aggregation table (collect/hashtab.h; DCPI sec. 4.2 and 5.4,
 * seed note 003) and print, side by side, the cost per sample, the hit rate
 * and the data reduction (samples / entries handed to the daemon).
 *
 *   aggregate [-m ms] [-k rounds] [-s log2,...] STREAM.txt...
 *
 * A stream is `perf script -F pid,ip` text: one "pid ip-in-hex" per line.
 * One replay is one drain period: every sample is added and the overflow
 * buffer (8K entries, as DCPI) drained whenever ht_add asks - that is timed -
 * then the whole table is drained, untimed: DCPI emptied it every 5 minutes
 * (~1.5M samples), so its cost per sample is noise there but would dominate
 * our streams of 10K-120K samples.  A measurement repeats
 * the replay for about -m ms (same repetition count for every policy of a
 * stream and size); each of -k rounds measures every policy in turn, and the
 * median round is reported, so background noise hits all policies alike.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/util.h"
#include "../collect/hashtab.h"

#define MAX_SIZES 4
#define MAX_ROUNDS 15

struct sample {
	uint64_t pc;
	uint32_t pid;
};

struct stream {
	const char *name;
	struct sample *s;
	size_t n, distinct;
};

static volatile uint64_t sink;	/* keeps the drains from being optimised out */

static int drain_sink(void *arg, const struct ht_entry *e)
{
	sink += e->count ^ e->pc;
	return 0;
}

static int read_stream(const char *path, struct stream *st)
{
	FILE *f = fopen(path, "r");
	char line[256];
	size_t cap = 0;

	if (!f)
		return -errno;
	st->name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	while (fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long pid = strtoul(line, &end, 10);
		uint64_t pc;

		if (end == line)
			continue;
		pc = strtoull(end, &end, 16);
		if (st->n == cap) {
			struct sample *s;

			cap = cap ? cap * 2 : 65536;
			s = realloc(st->s, cap * sizeof(*s));
			if (!s) {
				fclose(f);
				return -ENOMEM;
			}
			st->s = s;
		}
		st->s[st->n++] = (struct sample){ .pc = pc, .pid = (uint32_t)pid };
	}
	fclose(f);
	return st->n ? 0 : -ENODATA;
}

static int key_cmp(const void *x, const void *y)
{
	const struct sample *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->pc < b->pc ? -1 : a->pc > b->pc;
}

static size_t count_distinct(const struct stream *st)
{
	struct sample *c = malloc(st->n * sizeof(*c));
	size_t d = 1;

	if (!c)
		return 0;
	memcpy(c, st->s, st->n * sizeof(*c));
	qsort(c, st->n, sizeof(*c), key_cmp);
	for (size_t i = 1; i < st->n; i++)
		d += key_cmp(&c[i - 1], &c[i]) != 0;
	free(c);
	return d;
}

/* Add every sample, draining the overflow buffer when asked; ns taken. */
static uint64_t replay(struct hashtab *h, const struct stream *st)
{
	uint64_t t0 = dcpi_now_ns(), t1;

	for (size_t i = 0; i < st->n; i++)
		if (ht_add(h, st->s[i].pid, 0, st->s[i].pc) != 0)
			ht_drain(h, 0, drain_sink, NULL);
	t1 = dcpi_now_ns();
	ht_drain(h, 1, drain_sink, NULL);
	return t1 - t0;
}

/* ns per sample of reps replays into a fresh table. */
static double measure(enum ht_policy p, unsigned log2, const struct stream *st, unsigned reps)
{
	struct hashtab *h;
	struct dcpi_err err;
	uint64_t ns = 0;

	if (ht_new(p, log2, HT_DEFAULT_OVERFLOW, &h, &err)) {
		fprintf(stderr, "aggregate: %s\n", err.msg);
		exit(1);
	}
	replay(h, st);		/* touch the memory once, untimed */
	for (unsigned r = 0; r < reps; r++)
		ns += replay(h, st);
	ht_free(h);
	return (double)ns / ((double)reps * (double)st->n);
}

/* Statistics of one replay, from an empty table. */
static void one_replay(enum ht_policy p, unsigned log2, const struct stream *st,
		       struct ht_stats *s)
{
	struct hashtab *h;

	if (ht_new(p, log2, HT_DEFAULT_OVERFLOW, &h, NULL))
		exit(1);
	replay(h, st);
	ht_stats(h, s);
	ht_free(h);
}

static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

struct result {
	double ns, hit, red;
};

static void usage(void)
{
	fprintf(stderr, "usage: aggregate [-m ms] [-k rounds] [-s log2,...] STREAM.txt...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned sizes[MAX_SIZES] = { 12, 14 }, nsizes = 2, rounds = 5;
	double ms = 200;
	struct stream *st;
	int nst, c;

	while ((c = getopt(argc, argv, "m:k:s:")) != -1) {
		char *p;

		switch (c) {
		case 'm':
			ms = atof(optarg);
			break;
		case 'k':
			rounds = (unsigned)atoi(optarg);
			break;
		case 's':
			nsizes = 0;
			for (p = strtok(optarg, ","); p && nsizes < MAX_SIZES; p = strtok(NULL, ","))
				sizes[nsizes++] = (unsigned)atoi(p);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc || rounds < 1 || rounds > MAX_ROUNDS || nsizes == 0 || ms <= 0)
		usage();
	nst = argc - optind;
	st = calloc((size_t)nst, sizeof(*st));
	if (!st)
		return 1;
	for (int i = 0; i < nst; i++) {
		int r = read_stream(argv[optind + i], &st[i]);

		if (r) {
			fprintf(stderr, "aggregate: %s: %s\n", argv[optind + i], strerror(-r));
			return 1;
		}
		st[i].distinct = count_distinct(&st[i]);
	}

	/* geometric means over streams, per size and policy */
	double lg_rel[MAX_SIZES][HT_NPOLICY] = { { 0 } }, lg_red[MAX_SIZES][HT_NPOLICY] = { { 0 } };

	printf("%-16s %8s %8s %8s %7s %-6s %9s %7s %7s %9s\n", "stream", "samples", "keys",
	       "ideal_x", "entries", "policy", "ns/sample", "vs_rr4", "hit%", "reduction");
	for (int i = 0; i < nst; i++) {
		for (unsigned z = 0; z < nsizes; z++) {
			double ns[HT_NPOLICY][MAX_ROUNDS];
			struct result res[HT_NPOLICY];
			double one = measure(HT_RR4, sizes[z], &st[i], 1);
			unsigned reps = (unsigned)(ms * 1e6 / (one * (double)st[i].n)) + 1;

			for (unsigned r = 0; r < rounds; r++)
				for (int p = 0; p < HT_NPOLICY; p++)
					ns[p][r] = measure(p, sizes[z], &st[i], reps);
			for (int p = 0; p < HT_NPOLICY; p++) {
				struct ht_stats s;

				qsort(ns[p], rounds, sizeof(double), dbl_cmp);
				one_replay(p, sizes[z], &st[i], &s);
				res[p].ns = ns[p][rounds / 2];
				res[p].hit = 100.0 * (double)s.hits / (double)s.samples;
				res[p].red = (double)s.samples / (double)s.entries_out;
			}
			for (int p = 0; p < HT_NPOLICY; p++) {
				double rel = res[p].ns / res[HT_RR4].ns;

				lg_rel[z][p] += log(rel) / nst;
				lg_red[z][p] += log(res[p].red) / nst;
				printf("%-16.16s %8zu %8zu %8.1f %7u %-6s %9.2f %7.3f %7.2f %9.1f\n",
				       st[i].name, st[i].n, st[i].distinct,
				       (double)st[i].n / (double)st[i].distinct, 1u << sizes[z],
				       ht_policy_name(p), res[p].ns, rel, res[p].hit, res[p].red);
			}
		}
	}

	printf("\ngeometric mean over %d streams (median of %u rounds, ~%.0f ms each)\n",
	       nst, rounds, ms);
	printf("%7s %-6s %7s %9s\n", "entries", "policy", "vs_rr4", "reduction");
	for (unsigned z = 0; z < nsizes; z++) {
		int best = 0;

		for (int p = 0; p < HT_NPOLICY; p++) {
			printf("%7u %-6s %7.3f %9.1f\n", 1u << sizes[z], ht_policy_name(p),
			       exp(lg_rel[z][p]), exp(lg_red[z][p]));
			if (lg_rel[z][p] < lg_rel[z][best])
				best = p;
		}
		printf("winner at %u entries: %s (%.1f%% faster than rr4, reduction %.1fx)\n",
		       1u << sizes[z], ht_policy_name(best), 100.0 * (1 - exp(lg_rel[z][best])),
		       exp(lg_red[z][best]));
	}
	printf("default (HT_DEFAULT_POLICY): %s\n", ht_policy_name(HT_DEFAULT_POLICY));
	for (int i = 0; i < nst; i++)
		free(st[i].s);
	free(st);
	return 0;
}
