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
#include <stdlib.h>
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

/* One of the PMU's events by name (-e branches-taken, -e ibs_op), when
 * this machine offers it and the command can use it; NULL after printing. */
static const struct collect_event *pmu_event(const struct collect_opts *o, const char *name)
{
	struct dcpi_err err = { 0 };
	int ibs = !strcmp(name, "ibs_op");

	if (!pmu.hardware && !pmu.why[0] && collect_pmu_detect("/", NULL, NULL, &pmu, &err)) {
		tool_fail("%s", err.msg);
		return NULL;
	}
	if (ibs ? !pmu.ibs : !pmu.branches) {
		tool_fail("%s: not offered on this machine (%s)", name,
			  pmu.why[0] ? pmu.why : "no such PMU feature");
		return NULL;
	}
	if (!o->hw_import) {
		tool_fail("%s: nothing here would turn its samples into counts", name);
		return NULL;
	}
	return ibs ? &pmu.ibs_ev : &pmu.branch_ev;
}

int tool_events_parse(struct collect_opts *o, const char *list)
{
	struct dcpi_err err = { 0 };
	const struct collect_event *extra[2];
	char named[512] = "", *copy = strdup(list), *save = NULL, *name;
	unsigned nextra = 0;
	int ret = 0;

	if (!copy)
		return tool_fail("out of memory");
	for (name = strtok_r(copy, ",", &save); name && !ret; name = strtok_r(NULL, ",", &save)) {
		if (strcmp(name, "branches-taken") && strcmp(name, "ibs_op")) {
			snprintf(named + strlen(named), sizeof(named) - strlen(named), "%s%s",
				 named[0] ? "," : "", name);
			continue;
		}
		extra[nextra] = pmu_event(o, name);
		if (!extra[nextra])
			ret = 1;
		else if (nextra && extra[0] == extra[nextra])
			ret = tool_fail("%s: given twice", name);
		else
			nextra++;
	}
	free(copy);
	o->nevents = 0;
	if (!ret && (named[0] || !nextra) &&
	    collect_events_parse(named, o->events, &o->nevents, &err))
		ret = tool_fail("%s (and, where the PMU offers them: branches-taken, ibs_op)",
				err.msg);
	for (unsigned i = 0; !ret && i < nextra; i++) {
		if (o->nevents == COLLECT_MAX_EVENTS)
			return tool_fail("%s: more than %d events", list, COLLECT_MAX_EVENTS);
		o->events[o->nevents++] = extra[i];
	}
	if (!ret && nextra) {
		collect_pmu_describe(&pmu, pmu_line, sizeof(pmu_line));
		o->pmu = pmu_line;
		o->hw_vendor = pmu.vendor;
	}
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
