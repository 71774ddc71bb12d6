/*
 * harness.c - time loop bodies on this machine, BHive-style: a thin main over the
 * library's sandbox (culprit/sandbox/sandbox.c, include/dcpi/sandbox.h), which holds the method
 * (bench/bhive/README.md).
 *
 * Input, one body per line: "name<TAB>hex bytes" (spaces inside the hex are allowed;
 * lines starting with '#' are skipped).  Output, one line per body:
 * "name<TAB>hex<TAB>cycles/iter<TAB>status<TAB>detail", cycles "-" when skipped.
 * All bodies are timed in one batch (one forked child, restarted after a body that
 * kills it).  Forward branches inside a body are allowed (SBX_F_BRANCHES).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/sandbox.h"

struct body {
	char *name, *hex;
	uint8_t *bytes;
	size_t len;
	int bad;
};

/* Bytes of s into out (at most max); -1 on bad hex. */
static ssize_t parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (*s) {
		int hi, lo;

		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
			s++;
			continue;
		}
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
			s += 2;
		hi = dcpi_hexval(s[0]);
		lo = hi < 0 ? -1 : dcpi_hexval(s[1]);
		if (lo < 0 || n == max)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return (ssize_t)n;
}

static void usage(void)
{
	fprintf(stderr, "usage: harness [-c cpu] [-r reps] [-n body-iterations] [-t timeout-ms]"
		" [-R] [-W] [-D] [file]\n  input lines: name<TAB>hex; output: name<TAB>hex<TAB>cycles<TAB>"
		"status<TAB>detail\n  -R: also with random bytes and small words in memory, the "
		"lowest kept (SBX_F_RANDOM_MEM)\n  -W: wind stepping pointers back every U copies "
		"(SBX_F_WIND)\n  -D: a value of its own per register (SBX_F_DISTINCT)\n");
}

/* Read the bodies; *n receives how many. */
static struct body *read_bodies(FILE *in, size_t *n)
{
	struct body *b = NULL;
	size_t cap = 0, lcap = 0;
	char *line = NULL;

	*n = 0;
	while (getline(&line, &lcap, in) > 0) {
		char *tab;
		ssize_t len;
		struct body *x;

		line[strcspn(line, "\n")] = 0;
		if (!*line || *line == '#' || !(tab = strchr(line, '\t')))
			continue;
		*tab = 0;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			x = realloc(b, cap * sizeof(*b));
			if (!x)
				break;
			b = x;
		}
		x = &b[(*n)++];
		memset(x, 0, sizeof(*x));
		x->name = strdup(line);
		x->hex = strdup(tab + 1);
		x->bytes = malloc(SBX_BODY_MAX);
		if (!x->name || !x->hex || !x->bytes) {
			(*n)--;
			break;
		}
		len = parse_hex(tab + 1, x->bytes, SBX_BODY_MAX);
		x->bad = len <= 0;
		x->len = len > 0 ? (size_t)len : 0;
	}
	free(line);
	return b;
}

int main(int argc, char **argv)
{
	struct sbx_opts o;
	struct sbx_result *r;
	struct dcpi_err err = { 0 };
	struct body *b;
	const uint8_t **bytes;
	size_t *lens, n;
	FILE *in = stdin;
	double cpt_lo = 1e9, cpt_hi = 0;
	unsigned nok = 0, nskip = 0;
	int opt;

	sbx_opts_default(&o);
	o.reps = 31;
	o.timeout_ms = 10000;
	o.flags = SBX_F_BRANCHES;	/* the branch microbenchmarks of micro.txt */
	while ((opt = getopt(argc, argv, "c:r:n:t:RWDh")) != -1) {
		switch (opt) {
		case 'c': o.cpu = atoi(optarg); break;
		case 'r': o.reps = atoi(optarg); break;
		case 'n': o.iters = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': o.timeout_ms = atoi(optarg); break;
		case 'R': o.flags |= SBX_F_RANDOM_MEM; break;
		case 'W': o.flags |= SBX_F_WIND; break;
		case 'D': o.flags |= SBX_F_DISTINCT; break;
		default: usage(); return opt == 'h' ? 0 : 2;
		}
	}
	if (o.reps < 1 || o.reps > 256)
		o.reps = 31;
	if (optind < argc && !(in = fopen(argv[optind], "r"))) {
		perror(argv[optind]);
		return 1;
	}
	b = read_bodies(in, &n);
	bytes = calloc(n + 1, sizeof(*bytes));
	lens = calloc(n + 1, sizeof(*lens));
	r = calloc(n + 1, sizeof(*r));
	if (!bytes || !lens || !r) {
		fprintf(stderr, "harness: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		bytes[i] = b[i].bytes;
		lens[i] = b[i].len;
	}
	printf("# reps %d  body_iters %u  cpu %d\n", o.reps, o.iters, o.cpu);
	fflush(stdout);
	if (sbx_time(bytes, lens, n, &o, r, &err) < 0) {
		fprintf(stderr, "harness: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (b[i].bad || (r[i].status != SBX_OK && r[i].status != SBX_UNSTABLE)) {
			printf("%s\t%s\t-\tskipped\t%s\n", b[i].name, b[i].hex,
			       b[i].bad ? "bad hex" : r[i].detail);
			nskip++;
			continue;
		}
		printf("%s\t%s\t%.3f\tok\tmin %.3f low %.3f iqr %.1f%% cpt %.3f U %u%s pages %u%s%s\n",
		       b[i].name, b[i].hex, r[i].cycles, r[i].cycles_min, r[i].cycles_low,
		       100 * r[i].spread, r[i].cycles_per_tsc, r[i].unroll,
		       r[i].rdx_zero ? " rdx=0" : "", r[i].pages,
		       r[i].random_mem == 2 ? " small-mem" : r[i].random_mem ? " random-mem" : "",
		       r[i].contended ? " contended" : "");
		cpt_lo = r[i].cycles_per_tsc < cpt_lo ? r[i].cycles_per_tsc : cpt_lo;
		cpt_hi = r[i].cycles_per_tsc > cpt_hi ? r[i].cycles_per_tsc : cpt_hi;
		nok++;
	}
	printf("# core cycles per TSC tick (add chain): %.4f .. %.4f over the bodies; "
	       "%u measured, %u skipped\n", cpt_lo, cpt_hi, nok, nskip);
	for (size_t i = 0; i < n; i++) {
		free(b[i].name);
		free(b[i].hex);
		free(b[i].bytes);
	}
	free(b);
	free(bytes);
	free(lens);
	free(r);
	return 0;
}
