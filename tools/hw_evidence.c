/*
 * tools/hw_evidence.c - the events dcpi record and dcpid take when none is
 * given: what this machine's PMU offers (collect/pmu.c), said on stderr and
 * in the epoch's settings; and the importer that turns their branch stacks
 * and IBS samples into the epoch's counts (docs/collect.md, "Hardware
 * evidence").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/import.h"
#include "sampling.h"
#include "tools.h"

/* The events point into it: it lives as long as the command. */
static struct collect_pmu pmu;
static char pmu_line[512];

int tool_hw_import(const char *perf_data, struct prof_db *db, const char *epoch, char *note,
		   size_t len, struct dcpi_err *err)
{
	struct import_opts io = { 0 };
	struct import_stats st;
	int ret;

	memset(&st, 0, sizeof(st));
	io.into_epoch = epoch;
	ret = import_perf_opts(perf_data, &io, db, &st, err);
	if (!ret)
		snprintf(note, len, "hardware evidence: %" PRIu64 " samples imported%s%.900s",
			 st.samples, st.note[0] ? "; " : "", st.note);
	return ret;
}

int tool_pmu_events(struct collect_opts *o, int quiet)
{
	struct dcpi_err err = { 0 };
	const struct collect_event *ev[COLLECT_MAX_EVENTS];
	unsigned n;

	if (collect_pmu_detect("/", NULL, NULL, &pmu, &err))
		return tool_fail("%s", err.msg);
	if (!o->hw_import && (pmu.branches || pmu.ibs)) {
		/* nothing would turn them into counts */
		pmu.branches = pmu.ibs = 0;
		snprintf(pmu.why, sizeof(pmu.why), "branch stacks and IBS not taken: no "
			 "importer for them in this command");
	}
	collect_pmu_events(&pmu, ev, &n);
	memcpy(o->events, ev, n * sizeof(ev[0]));
	o->nevents = n;
	collect_pmu_describe(&pmu, pmu_line, sizeof(pmu_line));
	o->pmu = pmu_line;
	o->hw_vendor = pmu.vendor;
	if (quiet)
		return 0;
	if (!pmu.hardware)
		fprintf(stderr, "%s: note: cycles is not supported on this machine (no hardware "
			"PMU); sampling cpu-clock\n", tool_name);
	else
		fprintf(stderr, "%s: %s\n", tool_name, pmu_line);
	return 0;
}
