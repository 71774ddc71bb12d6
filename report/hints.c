/*
 * hints.c - the prefetch-hints report (dcpi prefetch-hints): every load the
 * stall analysis charged with D-cache cycles, its stride, loop and distance,
 * and the hint written or why none was (optimize/prefetch.c).
 */
#include <stdio.h>
#include <string.h>

#include "dcpi/optimize.h"
#include "dcpi/report.h"

void rep_hints_text(FILE *f, const struct opt_hints *h)
{
	size_t hinted = 0;

	for (size_t k = 0; k < h->n; k++)
		hinted += !h->v[k].why[0];
	fprintf(f, "%zu load%s charged with D-cache stall cycles, %zu hinted (executions %s%s)\n",
		h->n, h->n == 1 ? "" : "s", hinted, h->exact ? "exact, from callgrind" :
		"estimated", h->events ? "; culprits bounded by event counts" : "");
	if (!h->n)
		return;
	fprintf(f, "%-24s %10s %-20s %6s %7s %8s %6s %4s %9s  %s\n", "procedure", "load",
		"source", "share", "stride", "cyc/iter", "(best)", "dist", "delta", "hint");
	for (size_t k = 0; k < h->n; k++) {
		const struct opt_hint *x = &h->v[k];
		char src[64];

		if (x->line)
			snprintf(src, sizeof(src), "%.40s:%u%s", x->file, x->line,
				 x->discr ? "." : "");
		else
			snprintf(src, sizeof(src), "-");
		if (x->line && x->discr)
			snprintf(src + strlen(src), sizeof(src) - strlen(src), "%u", x->discr);
		fprintf(f, "%-24.24s %#10llx %-20.20s %5.1f%% %7lld %8.1f %6.1f", x->proc,
			(unsigned long long)x->addr, src, 100 * x->share, (long long)x->stride,
			x->iter_cycles, x->iter_best);
		if (x->why[0])
			fprintf(f, " %4s %9s  none: %s\n", "-", "-", x->why);
		else
			fprintf(f, " %4u %9lld  prefetcht0 %lld bytes ahead\n", x->distance,
				(long long)x->delta, (long long)x->delta);
	}
}

void rep_hints_json(FILE *f, const struct opt_hints *h)
{
	fprintf(f, "{\"exact\": %s, \"events\": %zu, \"cycles\": %.6g, \"loads\": [",
		h->exact ? "true" : "false", h->events, h->cycles);
	for (size_t k = 0; k < h->n; k++) {
		const struct opt_hint *x = &h->v[k];

		fprintf(f, "%s\n  {\"procedure\": ", k ? "," : "");
		rep_json_str(f, x->proc);
		fprintf(f, ", \"address\": \"0x%llx\", \"file\": ", (unsigned long long)x->addr);
		rep_json_str(f, x->file);
		fprintf(f, ", \"line\": %u, \"discriminator\": %u, \"executions\": %.6g, "
			"\"stall_cycles\": %.6g, \"share\": %.6g, \"stride\": %lld, "
			"\"cycles_per_iteration\": %.6g, \"best_cycles_per_iteration\": %.6g, "
			"\"latency\": %.6g, \"distance\": %u, "
			"\"delta\": %lld, \"hinted\": %s, \"why_not\": ", x->line, x->discr,
			x->executions, x->stall, x->share, (long long)x->stride, x->iter_cycles,
			x->iter_best, x->latency, x->distance, (long long)x->delta, x->why[0] ? "false" : "true");
		if (x->why[0])
			rep_json_str(f, x->why);
		else
			fprintf(f, "null");
		fprintf(f, "}");
	}
	fprintf(f, "\n]}\n");
}
