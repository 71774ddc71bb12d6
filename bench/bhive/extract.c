/*
 * extract.c - innermost single-block loops of real binaries, for the BHive-style
 * harness (bench/bhive/harness.c): through libdcpi's CFG (cfg_build), every loop of
 * every procedure whose body is one basic block that branches back to its own start,
 * with no call, return, syscall, trap, indirect branch, lock, rep-prefixed string
 * instruction, x87 instruction or undecodable byte, and at most 40 instructions
 * besides the branch.
 *
 * Prints "image:proc+0xoff<TAB>hex" per loop, the body without its backward branch
 * (the harness adds its own loop).  Bodies already printed (same bytes) are skipped.
 * The summary goes to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"

#define EX_MAX_INSNS 40
#define EX_SEEN_MAX 65536

static char *seen[EX_SEEN_MAX];
static size_t nseen;

static int ex_seen(const char *hex)
{
	for (size_t i = 0; i < nseen; i++)
		if (!strcmp(seen[i], hex))
			return 1;
	if (nseen < EX_SEEN_MAX)
		seen[nseen++] = strdup(hex);
	return 0;
}

static const uint32_t ex_reject = CFG_I_CALL | CFG_I_RET | CFG_I_SYSCALL | CFG_I_TRAP |
				  CFG_I_INDIRECT | CFG_I_LOCK | CFG_I_INVALID;

/* Is insn acceptable inside a body timed by the harness? */
static int ex_insn_ok(const struct cfg_insn *in)
{
	if (in->flags & ex_reject)
		return 0;
	if (in->flags & CFG_I_BRANCH)
		return 0;
	/* rep movs/stos/cmps/scas: time depends on rcx, which the harness sets to 1 GB */
	if (!strncmp(in->mnemonic, "rep", 3))
		return 0;
	/* x87: the harness's memory (8-byte pointers) reads as denormal long doubles,
	 * whose microcode assists (DAZ does not cover x87) would be all one measures */
	if ((in->regs_read | in->regs_written) & CFG_RBIT(CFG_R_X87))
		return 0;
	/* serializing or privileged-looking ones that say nothing about the pipeline */
	if (!strcmp(in->mnemonic, "pause") || !strncmp(in->mnemonic, "rdtsc", 5) ||
	    !strcmp(in->mnemonic, "cpuid") || !strncmp(in->mnemonic, "xgetbv", 6))
		return 0;
	return 1;
}

/* A loop of one block ending in a branch back to the block's start. */
static int ex_loop(const struct cfg *cfg, const struct cfg_loop *lp, const char *image,
		   const char *proc, unsigned *nloops)
{
	const struct cfg_block *b;
	const struct cfg_insn *last;
	char hex[EX_MAX_INSNS * 15 * 3 + 1], *p = hex;

	if (lp->nblocks != 1 || lp->irreducible)
		return 0;
	b = &cfg->blocks[lp->header];
	if (b->n < 2 || b->n - 1 > EX_MAX_INSNS)
		return 0;
	last = &cfg->insns[b->first + b->n - 1];
	if (!(last->flags & CFG_I_BRANCH) || (last->flags & CFG_I_INDIRECT) ||
	    last->target != b->start)
		return 0;
	for (uint32_t i = 0; i + 1 < b->n; i++) {
		const struct cfg_insn *in = &cfg->insns[b->first + i];

		if (!ex_insn_ok(in))
			return 0;
		for (unsigned k = 0; k < in->size; k++)
			p += sprintf(p, "%s%02x", p == hex ? "" : " ", in->bytes[k]);
	}
	if (ex_seen(hex))
		return 0;
	printf("%s:%s+0x%llx\t%s\n", image, proc, (unsigned long long)(b->start - cfg->start),
	       hex);
	(*nloops)++;
	return 1;
}

static int ex_image(const char *path, unsigned *total)
{
	struct dcpi_err err = { 0 };
	struct image *img;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	unsigned nloops = 0, nprocs = 0, nfail = 0;

	if (img_open(path, IMG_NO_DWARF, &img, &err)) {
		fprintf(stderr, "extract: %s\n", err.msg);
		return -1;
	}
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *pr = img_proc(img, i);
		struct cfg *cfg;

		if (cfg_build(img, pr, &cfg, &err)) {
			nfail++;
			continue;
		}
		nprocs++;
		for (size_t l = 0; l < cfg->nloops; l++)
			ex_loop(cfg, &cfg->loops[l], base, pr->name, &nloops);
		cfg_free(cfg);
	}
	fprintf(stderr, "extract: %s: %u procedures (%u failed), %u loops\n", path, nprocs,
		nfail, nloops);
	*total += nloops;
	img_close(img);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: extract image...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		ex_image(argv[i], &total);
	fprintf(stderr, "extract: %u loops in all\n", total);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	return total ? 0 : 1;
}
