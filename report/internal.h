/*
 * report/internal.h - module-private pieces of report/.
 */
#ifndef DCPI_REPORT_INTERNAL_H
#define DCPI_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

struct rep_jit_sym {
	uint64_t start, size;
	char *name;
};

struct rep_jitmap {
	size_t n, cap;
	struct rep_jit_sym *e;		/* sorted by start */
};

/* Is path a perf map file (/tmp/perf-PID.map)? */
int rep_is_jitmap_path(const char *path);
int rep_jitmap_load(const char *path, struct rep_jitmap *m, struct dcpi_err *err);
long rep_jitmap_find(const struct rep_jitmap *m, uint64_t pc);
void rep_jitmap_free(struct rep_jitmap *m);

#include <stdio.h>

struct rep_calc;
/* The JSON fields a procedure's report opens with (report/calc.c). */
void rep_calc_json_head(FILE *f, const struct rep_calc *c);
struct cfg;
typedef struct Agraph_s Agraph_t;
/* The cluster of loop l (nested in its parents' clusters), made on first
 * use: report/cfgplain.c, for both CFG renderers. */
Agraph_t *rep_loop_graph(Agraph_t *root, Agraph_t **sub, const struct cfg *cfg, int l);

#endif /* DCPI_REPORT_INTERNAL_H */
