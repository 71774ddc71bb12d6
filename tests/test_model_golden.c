/*
 * test_model_golden.c - the shipped model tables as data (culprit/model/model_base.c
 * and the per-CPU difference files) give every model exactly what the old
 * hand-copied tables gave: for every body of bench/bhive/measured-micro.tsv
 * and measured-loops.tsv (hand-written micro bodies and loops of real
 * binaries), and every model, the class each instruction falls in (latency,
 * dispatch slots, ports, busy cycles, kind, known) and the whole best-case
 * schedule (dispatch, issue, complete, retire, reason, culprit per
 * instruction, cycles, steady cycles) hash to the figures in
 * tests/model_golden.txt ("name hex" and per model
 * cycles:steady:class-hash:schedule-hash), generated from the tables before
 * the refactor; the file holds the bodies, so the references may change.
 *
 * DCPI_GOLDEN_WRITE=FILE writes the file from the current tables instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/model.h"
#include "tu_hex.h"
#include "tu_main.h"

static const char *const golden_models[] = { "zen5", "zen4", "zen3", "skylake", "generic" };
#define NGM (sizeof(golden_models) / sizeof(golden_models[0]))

static uint64_t fnv(uint64_t h, long v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (uint64_t)(v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Hash of the class rows and of the schedule; cycles and steady on the side. */
static int golden_line(const struct model *m, const uint8_t *bytes, size_t len,
		       char *out, size_t outlen)
{
	struct dcpi_err err = { 0 };
	struct cfg_insn *insns = NULL;
	struct sched_block b;
	uint64_t hc = 0xcbf29ce484222325ULL, hs = hc;
	size_t n;

	if (cfg_decode(bytes, len, 0x1000, &insns, &n, &err) < 0) {
		free(insns);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		int known;
		const struct model_class *c = model_classify(m, &insns[i], &known);

		hc = fnv(hc, c->lat);
		hc = fnv(hc, c->uops);
		hc = fnv(hc, c->ports);
		hc = fnv(hc, c->busy);
		hc = fnv(hc, c->kind);
		hc = fnv(hc, known);
	}
	if (model_schedule(m, insns, n, NULL, 0, &b, &err) < 0) {
		free(insns);
		return -1;
	}
	for (size_t i = 0; i < b.n; i++) {
		const struct sched_insn *s = &b.insns[i];

		hs = fnv(hs, s->dispatch);
		hs = fnv(hs, s->issue);
		hs = fnv(hs, s->complete);
		hs = fnv(hs, s->retire);
		hs = fnv(hs, s->reason);
		hs = fnv(hs, s->culprit);
		hs = fnv(hs, s->fused);
		hs = fnv(hs, (long)(s->m_loop * 1000 + 0.5));
	}
	snprintf(out, outlen, "%d:%.3f:%08x:%08x", b.cycles, b.steady_cycles,
		 (unsigned)(hc ^ hc >> 32), (unsigned)(hs ^ hs >> 32));
	sched_block_free(&b);
	free(insns);
	return 0;
}

/* The golden line of one body: "name hex zen5 zen4 zen3 skylake generic". */
static void body_line(const char *name, const uint8_t *bytes, size_t len, char *out,
		      size_t outlen)
{
	size_t o = (size_t)snprintf(out, outlen, "%s ", name);

	for (size_t i = 0; i < len; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%02x", bytes[i]);
	for (size_t i = 0; i < NGM; i++) {
		out[o++] = ' ';
		assert_int_equal(golden_line(model_by_name(golden_models[i]), bytes, len,
					     out + o, outlen - o), 0);
		o += strlen(out + o);
	}
}

/* Generate: for each body line "name<TAB>hex<TAB>..." of path, one golden line. */
static void write_bodies(const char *path, FILE *w)
{
	char line[4096], got[4096], *tab, *hex;
	FILE *f = fopen(path, "r");
	uint8_t bytes[1024];

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strncmp(line, "name\t", 5) || !(tab = strchr(line, '\t')))
			continue;
		*tab = 0;
		hex = tab + 1;
		if ((tab = strchr(hex, '\t')))
			*tab = 0;
		body_line(line, bytes, tu_parse_hex(hex, bytes, sizeof(bytes)), got, sizeof(got));
		fprintf(w, "%s\n", got);
	}
	fclose(f);
}

static size_t parse_packed_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (n < max && s[0] && s[1] && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* Check: every line of the golden file against the tables as they are now. */
static int check_bodies(FILE *r)
{
	char want[4096], got[4096], name[256], hex[2048];
	uint8_t bytes[1024];
	int n = 0;

	while (fgets(want, sizeof(want), r)) {
		want[strcspn(want, "\n")] = 0;
		if (sscanf(want, "%255s %2047s", name, hex) != 2)
			fail_msg("bad golden line: %s", want);
		body_line(name, bytes, parse_packed_hex(hex, bytes, sizeof(bytes)), got,
			  sizeof(got));
		if (strcmp(want, got))
			fail_msg("tables changed:\n want %s\n got  %s", want, got);
		n++;
	}
	return n;
}

static void test_golden(void **state)
{
	const char *src = getenv("DCPI_SRC"), *wpath = getenv("DCPI_GOLDEN_WRITE");
	char path[4096];
	FILE *f;

	(void)state;
	if (!src)
		src = ".";
	if (wpath) {
		assert_non_null(f = fopen(wpath, "w"));
		snprintf(path, sizeof(path), "%s/bench/bhive/measured-micro.tsv", src);
		write_bodies(path, f);
		snprintf(path, sizeof(path), "%s/bench/bhive/measured-loops.tsv", src);
		write_bodies(path, f);
		fclose(f);
		return;
	}
	snprintf(path, sizeof(path), "%s/tests/model_golden.txt", src);
	assert_non_null(f = fopen(path, "r"));
	assert_true(check_bodies(f) > 400);
	fclose(f);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_golden))
