/*
 * bench/cfg_all.c - CFGs and cycle-equivalence classes of every procedure of
 * one image (cfg_build_all), timed in CPU seconds beside a bare capstone pass
 * with detail on over the same image's .text (the decoder's floor: one
 * cs_disasm_iter per instruction, nothing else), least of --runs runs each,
 * interleaved, so the ratio holds under a shared machine's load.  Also counts
 * what a reader of the CFGs needs to trust them: jump tables resolved,
 * indirect jumps taken for tail calls through a pointer (see cfg/tailcall.c),
 * procedures with missing edges, failures; what shows the work is linear
 * (capstone decodes per instruction); peak memory (ru_maxrss) and the decode
 * caches' part of it; and a digest of all the CFGs (tests/cfg_digest.h),
 * checked against bench/cfg_all.golden when the image is the one it is of.
 *
 * usage: cfg_all [--runs N] [--per-proc] [--no-memo] [--golden FILE] IMAGE
 *   --per-proc  cfg_build per procedure in address order (the old way)
 *   --no-memo   every decode by capstone (DCPI_DECODE_MEMO=0): to compare
 *   --golden    digests to check against (default bench/cfg_all.golden)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include <capstone/capstone.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/util.h"

#include "../cfg/internal.h"
#include "../tests/cfg_digest.h"

struct tally {
	size_t nprocs, failed, missing, insns, blocks;
	unsigned ind, res, tail;
	uint64_t bytes, digest;
	double digest_s;		/* CPU time digesting: not the builder's */
};


static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int take(void *arg, const struct img_proc *p, struct cfg *cfg,
		const struct dcpi_err *err)
{
	struct tally *t = arg;
	double c0;

	(void)err;
	t->nprocs++;
	t->bytes += p->size;
	if (!cfg) {
		t->failed++;
		return 0;
	}
	c0 = cpu_s();
	t->digest += dg_mix(dg_mix(1469598103934665603ull, p->addr), cfg_digest(cfg));
	t->digest_s += cpu_s() - c0;
	t->missing += cfg->missing_edges != 0;
	for (size_t b = 0; b + 1 < cfg->nblocks; b++)
		t->tail += (cfg->blocks[b].flags & (CFG_B_INDIRECT | CFG_B_UNRESOLVED)) ==
			   CFG_B_INDIRECT && cfg->blocks[b].nsucc == 1 &&
			   cfg->edges[cfg->blocks[b].succ[0]].kind == CFG_E_TAILCALL;
	t->ind += cfg->indirect_jumps;
	t->res += cfg->indirect_resolved;
	t->insns += cfg->ninsns;
	t->blocks += cfg->nblocks - 1;
	cfg_free(cfg);
	return 0;
}

static int per_proc(const struct image *img, struct tally *t)
{
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);
		struct dcpi_err err = { 0 };
		struct cfg *cfg = NULL;

		if (p->source == IMG_SRC_PLT)
			continue;
		if (cfg_build(img, p, &cfg, &err) < 0)
			cfg = NULL;
		take(t, p, cfg, &err);
	}
	return 0;
}

/* The floor: capstone with detail on over every executable section, once. */
static size_t bare_capstone(const struct image *img)
{
	size_t n = 0;
	cs_insn *ci;
	csh cs;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_option(cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	ci = cs_malloc(cs);
	for (size_t s = 0; ci && s < img_nsections(img); s++) {
		const struct img_section *sec = img_section(img, s);
		const uint8_t *p;
		size_t left = 0;
		uint64_t a = sec->addr;

		if (strcmp(sec->name, ".text") || !(p = img_bytes(img, sec->addr, &left)))
			continue;
		if (left > sec->size)
			left = sec->size;
		while (left) {
			if (cs_disasm_iter(cs, &p, &left, &a, ci)) {
				n++;
				continue;
			}
			p++;	/* data in .text: skip a byte, as objdump does */
			left--;
			a++;
		}
	}
	cs_free(ci, 1);
	cs_close(&cs);
	return n;
}

static void check_golden(const char *file, uint64_t digest, const char *build_id)
{
	char line[256], id[128];
	unsigned long long d;
	FILE *f = fopen(file, "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %llx", id, &d) == 2 && !strcmp(id, build_id)) {
			printf("digest %016llx: %s the reference CFGs (%s)\n",
			       (unsigned long long)digest,
			       d == digest ? "SAME as" : "DIFFERS from", file);
			fclose(f);
			return;
		}
	printf("digest %016llx (no golden digest for build-id %s)\n",
	       (unsigned long long)digest, build_id);
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct cfg_all_stats st = { 0 };
	struct tally t = { 0 };
	double best_cfg = 1e30, best_cs = 1e30;
	const char *golden = "bench/cfg_all.golden";
	int runs = 3, old = 0, argi = 1;
	unsigned long dec0, memo0, memo = 0;
	struct image *img;
	struct rusage ru;
	size_t ncs = 0;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "--per-proc"))
			old = 1;
		else if (!strcmp(argv[argi], "--no-memo"))
			setenv("DCPI_DECODE_MEMO", "0", 1);
		else if (!strcmp(argv[argi], "--runs") && argi + 1 < argc)
			runs = atoi(argv[++argi]);
		else if (!strcmp(argv[argi], "--golden") && argi + 1 < argc)
			golden = argv[++argi];
		else
			break;
	}
	if (argi + 1 != argc || runs < 1) {
		fprintf(stderr, "usage: cfg_all [--runs N] [--per-proc] [--no-memo] [--golden FILE] "
			"IMAGE\n");
		return 1;
	}
	if (img_open(argv[argi], IMG_NO_DWARF | IMG_NO_DEBUG_SYMS, &img, &err) < 0) {
		fprintf(stderr, "cfg_all: %s\n", err.msg);
		return 1;
	}
	for (int r = 0; r < runs; r++) {
		double c0 = cpu_s(), c1, c2;

		ncs = bare_capstone(img);
		c1 = cpu_s();
		memset(&t, 0, sizeof(t));
		dec0 = cfg_dec_calls;
		memo0 = cfg_dec_memo_hits;
		if (old ? per_proc(img, &t) : cfg_build_all(img, take, &t, &st, &err)) {
			fprintf(stderr, "cfg_all: %s\n", err.msg);
			return 1;
		}
		c2 = cpu_s();
		if (c1 - c0 < best_cs)
			best_cs = c1 - c0;
		if (c2 - c1 - t.digest_s < best_cfg)
			best_cfg = c2 - c1 - t.digest_s;
		st.decodes = cfg_dec_calls - dec0;
		memo = cfg_dec_memo_hits - memo0;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("procedures %zu, code %.1f MB, instructions %zu, blocks %zu, failed %zu\n",
	       t.nprocs, t.bytes / 1e6, t.insns, t.blocks, t.failed);
	printf("indirect jumps %u: jump tables resolved %u (%.1f%% of the %u that are not "
	       "tail calls), tail calls through a pointer %u, unresolved %u\n", t.ind + t.tail,
	       t.res, t.ind ? 100.0 * t.res / t.ind : 100.0, t.ind, t.tail, t.ind - t.res);
	printf("procedures with missing edges %zu of %zu (%.2f%%)\n", t.missing, t.nprocs,
	       t.nprocs ? 100.0 * t.missing / t.nprocs : 0);
	printf("capstone decodes per instruction %.3f (per byte of code %.2f), from the memo "
	       "%.3f%s\n", t.insns ? (double)st.decodes / t.insns : 0.0,
	       t.bytes ? (double)st.decodes / t.bytes : 0.0,
	       t.insns ? (double)memo / t.insns : 0.0, old ? ", per procedure" : "");
	if (!old)
		printf("decode caches held %.1f MB, callees built nested %d deep at most\n",
		       st.cache_bytes / 1e6, st.max_nesting);
	check_golden(golden, t.digest, img_build_id(img));
	printf("bare capstone (detail on) over .text: %zu instructions, %.2f s CPU\n", ncs,
	       best_cs);
	printf("dcpi cfg: %.2f s CPU, %.1f MB/s, %.2fx the bare capstone pass "
	       "(least of %d runs each)\n", best_cfg, t.bytes / 1e6 / best_cfg,
	       best_cfg / best_cs, runs);
	printf("peak memory %.1f MB\n", ru.ru_maxrss / 1e3);
	img_close(img);
	return 0;
}
