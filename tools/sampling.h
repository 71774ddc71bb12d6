/*
 * tools/sampling.h - the sampling options dcpi record and dcpid share:
 * -e/--event, -c/--count, -F/--freq, --fixed-period, --seed, --no-calibrate,
 * -g/--call-graph.
 */
#ifndef DCPI_TOOLS_SAMPLING_H
#define DCPI_TOOLS_SAMPLING_H

#include <stdint.h>

#include "dcpi/collect.h"

/* getopt_long entries for the shared options (no terminator). */
#define TOOL_SAMPLING_LONGOPTS \
	{ "event", required_argument, NULL, 'e' }, \
	{ "count", required_argument, NULL, 'c' }, \
	{ "freq", required_argument, NULL, 'F' }, \
	{ "fixed-period", no_argument, NULL, 'P' }, \
	{ "seed", required_argument, NULL, 'S' }, \
	{ "no-calibrate", no_argument, NULL, 'N' }, \
	{ "no-slices", no_argument, NULL, TOOL_NO_SLICES }, \
	{ "call-graph", required_argument, NULL, TOOL_CALL_GRAPH }
/* --no-slices: no time slices, no phases (include/dcpi/slices.h) */
#define TOOL_NO_SLICES 0x3a0
/* -g, --call-graph fp: user call chains (docs/callgraph.md) */
#define TOOL_CALL_GRAPH 0x3a1
#define TOOL_SAMPLING_SHORTOPTS "e:c:F:g"

/* A positive decimal number; -EINVAL otherwise. */
int tool_parse_u64(const char *s, uint64_t *out);

/*
 * Apply option c (with arg) if it is a shared one: returns 1 when it was
 * (and *status = 1 after printing an error when arg is bad), 0 when it is
 * not a sampling option.  *events receives -e's list.
 */
int tool_sampling_option(int c, const char *arg, struct collect_opts *o,
			 const char **events, int *status);

/* After parsing: --count and --freq exclude each other; the events are
 * resolved (default cycles, else cpu-clock with a note unless quiet).
 * Returns 0, or 1 after printing why. */
int tool_sampling_finish(struct collect_opts *o, const char *events, int quiet);

/* tools/hw_evidence.c: the default events from what the PMU offers (branch
 * stacks and IBS only when o->hw_import is set), said on stderr unless
 * quiet; the importer dcpi record and dcpid give the collector. */
int tool_pmu_events(struct collect_opts *o, int quiet);
/* -e's list into o: the named events and the PMU's (branches-taken,
 * ibs_op) where offered; 0, or 1 after printing why not. */
int tool_events_parse(struct collect_opts *o, const char *list);
int tool_hw_import(const char *perf_data, struct prof_db *db, const char *epoch, char *note,
		   size_t len, struct dcpi_err *err);

#endif /* DCPI_TOOLS_SAMPLING_H */
