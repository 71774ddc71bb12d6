/*
 * bench/cfg_all.c - CFGs and cycle-equivalence classes of every procedure of
 * one image, timed: the throughput figure bench_cfg.sh prints beside objdump.
 * Also counts what a reader of the CFGs needs to trust them: jump tables
 * resolved, indirect jumps taken for tail calls through a pointer (see
 * cfg/tailcall.c), procedures with missing edges, failures.  And what shows
 * the work is near-linear: instructions decoded per byte of code (the debug
 * counter of cfg/internal.h; callees decoded for the noreturn analysis
 * included) and the slowest procedure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/util.h"

#include "../cfg/internal.h"

int main(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct image *img;
	uint64_t bytes = 0, t0, t1, worst = 0, worst_addr = 0, worst_size = 0;
	const char *worst_name = "-";
	unsigned long dec0;
	size_t nprocs = 0, failed = 0, missing = 0, insns = 0, blocks = 0;
	unsigned ind = 0, res = 0, tail = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: cfg_all IMAGE\n");
		return 1;
	}
	if (img_open(argv[1], IMG_NO_DWARF, &img, &err) < 0) {
		fprintf(stderr, "cfg_all: %s\n", err.msg);
		return 1;
	}
	dec0 = cfg_dec_calls;
	t0 = dcpi_now_ns();
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);
		struct cfg *cfg;
		uint64_t s;
		int rc;

		if (p->source == IMG_SRC_PLT)
			continue;
		nprocs++;
		bytes += p->size;
		s = dcpi_now_ns();
		rc = cfg_build(img, p, &cfg, &err);
		s = dcpi_now_ns() - s;
		if (s > worst) {
			worst = s;
			worst_name = p->name;
			worst_addr = p->addr;
			worst_size = p->size;
		}
		if (rc < 0) {
			failed++;
			continue;
		}
		missing += cfg->missing_edges != 0;
		for (size_t b = 0; b + 1 < cfg->nblocks; b++)
			tail += (cfg->blocks[b].flags & (CFG_B_INDIRECT | CFG_B_UNRESOLVED)) ==
				CFG_B_INDIRECT && cfg->blocks[b].nsucc == 1 &&
				cfg->edges[cfg->blocks[b].succ[0]].kind == CFG_E_TAILCALL;
		ind += cfg->indirect_jumps;
		res += cfg->indirect_resolved;
		insns += cfg->ninsns;
		blocks += cfg->nblocks - 1;
		cfg_free(cfg);
	}
	t1 = dcpi_now_ns();
	printf("procedures %zu, code %.1f MB, instructions %zu, blocks %zu, failed %zu\n",
	       nprocs, bytes / 1e6, insns, blocks, failed);
	printf("indirect jumps %u: jump tables resolved %u (%.1f%% of the %u that are not "
	       "tail calls), tail calls through a pointer %u, unresolved %u\n", ind + tail,
	       res, ind ? 100.0 * res / ind : 100.0, ind, tail, ind - res);
	printf("procedures with missing edges %zu of %zu (%.2f%%)\n", missing, nprocs,
	       nprocs ? 100.0 * missing / nprocs : 0);
	printf("decodes per byte of code %.2f; slowest procedure %.60s (0x%llx, %llu bytes) "
	       "%.1f ms\n", bytes ? (double)(cfg_dec_calls - dec0) / bytes : 0.0, worst_name,
	       (unsigned long long)worst_addr, (unsigned long long)worst_size, worst / 1e6);
	printf("dcpi cfg: %.2f s, %.1f MB/s\n", (t1 - t0) / 1e9,
	       bytes / 1e6 / ((t1 - t0) / 1e9));
	img_close(img);
	return 0;
}
