/*
 * llvm_prof.c - LLVM's sample-profile text format from estimated counts
 * (clang -fprofile-sample-use=FILE; llvm-profdata show --sample FILE).
 *
 *   function:total:head
 *    offset[.discriminator]: count [target:count ...]
 *    offset[.discriminator]: inlinee:total
 *     ...                    (the inlinee's body, one space deeper)
 *
 * or, for an image built with -fpseudo-probe-for-profiling, keyed by probe
 * ids instead of lines (source.c, probes.c), each function ending with
 *    !CFGChecksum: N
 *
 * offset is the line minus the function's DW_AT_decl_line; discriminators
 * are LLVM's base discriminators (source.c).  Counts are executions of the
 * source line, which is what LLVM's sample loader takes a location's weight
 * to be: an instruction of an unrolled or vectorized copy counts its
 * executions times the copy's duplication factor (as AutoFDO's
 * create_llvm_prof and llvm-profgen do).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void put_loc(struct opt_buf *b, int depth, uint32_t off, uint32_t discr)
{
	opt_buf_printf(b, "%*s%u", depth, "", off);
	if (discr)
		opt_buf_printf(b, ".%u", discr);
	opt_buf_put(b, ": ", 2);
}

static void put_body(struct opt_buf *b, const struct opt_func *f, int depth)
{
	for (size_t i = 0; i < f->nlocs; i++) {
		const struct opt_loc *l = &f->locs[i];

		put_loc(b, depth, l->offset, l->discr);
		opt_buf_printf(b, "%llu", (unsigned long long)l->count);
		for (size_t k = 0; k < l->ntargets; k++)
			opt_buf_printf(b, " %s:%llu", l->targets[k].name,
				       (unsigned long long)l->targets[k].count);
		opt_buf_put(b, "\n", 1);
	}
	for (size_t i = 0; i < f->ncalls; i++) {
		const struct opt_callsite *c = &f->calls[i];

		put_loc(b, depth, c->offset, c->discr);
		opt_buf_printf(b, "%s:%llu\n", c->callee->name,
			       (unsigned long long)c->callee->total);
		put_body(b, c->callee, depth + 1);
	}
	if (f->checksum)
		opt_buf_printf(b, "%*s!CFGChecksum: %llu\n", depth, "",
			       (unsigned long long)f->checksum);
}

int opt_llvm_text(const struct opt_src *s, char **out, size_t *len, struct dcpi_err *err)
{
	struct opt_buf b = { 0 };

	*out = NULL;
	*len = 0;
	if (!s->nfuncs)
		return dcpi_errf(err, -ENODATA, "no function has estimated executions");
	for (size_t i = 0; i < s->nfuncs; i++) {
		const struct opt_func *f = s->funcs[i];

		opt_buf_printf(&b, "%s:%llu:%llu\n", f->name, (unsigned long long)f->total,
			       (unsigned long long)f->head);
		put_body(&b, f, 1);
	}
	if (b.oom) {
		free(b.s);
		return dcpi_errf(err, -ENOMEM, "LLVM profile: out of memory");
	}
	*out = b.s;
	*len = b.len;
	return 0;
}
