/*
 * collect/values_spool.h - value samples from the runtime's register files
 * (values_spool.c; docs/values.md): paths_spool.c hands each PRT_VBURST's
 * resolved pcs and registers to vals_burst, and `dcpi record --values`
 * writes what vals_finish returns into the epoch.
 */
#ifndef DCPI_COLLECT_VALUES_SPOOL_H
#define DCPI_COLLECT_VALUES_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/collect.h"
#include "dcpi/values.h"
#include "pathrt.h"

struct vals_acc;

struct vals_stats {
	uint64_t samples;	/* instructions stepped in an image with values */
	uint64_t values;	/* values offered to hotlists */
	uint64_t undecoded;	/* instructions whose bytes could not be read */
	uint64_t images;	/* value profiles made */
	uint64_t latency;	/* loads with a latency sample */
	uint64_t calls;		/* calls caught at a marked entry (PRT_ARGS) */
};

int vals_acc_new(struct vals_acc **out, struct dcpi_err *err);
void vals_acc_free(struct vals_acc *v);
/* Classify latency samples with t (without, they are left out). */
struct lat_table;
void vals_acc_latency(struct vals_acc *v, const struct lat_table *t);
/* One burst: n pcs, their (image, offset) in m's images for pid, and the n
 * register files. */
int vals_burst(struct vals_acc *v, struct maps *m, uint32_t pid, const uint64_t *pc,
	       const uint32_t *img, const uint64_t *off, const struct prt_regs *regs,
	       size_t n, struct dcpi_err *err);
/* The marking plan the runtime had (PRT_PLAN_NAME in the spool directory
 * dir; none: nothing to do): the arguments of an entry it breakpoints come
 * from its PRT_ARGS records alone, not from bursts (docs/values.md). */
int vals_acc_plan(struct vals_acc *v, const char *dir, struct dcpi_err *err);
/* One call caught at a marked entry: its arguments and call site. */
int vals_args(struct vals_acc *v, struct maps *m, uint32_t pid, const struct prt_args *a,
	      struct dcpi_err *err);
/* The value profiles, one per image that had values (free with
 * val_profiles_free). */
int vals_finish(struct vals_acc *v, struct maps *m, struct val_profile **out, size_t *n,
		struct vals_stats *st, struct dcpi_err *err);

#endif /* DCPI_COLLECT_VALUES_SPOOL_H */
