/*
 * collect/events.c - the events the collector samples, as data, and a probe
 * that asks the kernel whether this machine can sample one.  On a VM without
 * a PMU the hardware and cache events do not exist and cpu-clock stands in
 * for cycles (docs/architecture.md, "Units"); the database's settings say
 * which was used.
 *
 * The names are perf's, so a user can move between the two tools.  The
 * hw-cache configs are (cache id) | (op << 8) | (result << 16), as in
 * include/uapi/linux/perf_event.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "internal.h"

#define HW_CACHE_MISS(id) \
	((id) | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16))

/* Misses are rarer than cycles: a smaller prime keeps samples per second
 * in the same range without beating with power-of-two loops. */
#define COLLECT_MISS_PERIOD 10007ULL

static const struct collect_event events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "events",
	  COLLECT_CYCLES_PERIOD, 0 },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "events",
	  COLLECT_CYCLES_PERIOD, 0 },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "events",
	  COLLECT_MISS_PERIOD, 0 },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "events",
	  COLLECT_MISS_PERIOD, 0 },
	{ "L1-icache-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE_MISS(PERF_COUNT_HW_CACHE_L1I),
	  "events", COLLECT_MISS_PERIOD, 0 },
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE_MISS(PERF_COUNT_HW_CACHE_L1D),
	  "events", COLLECT_MISS_PERIOD, 0 },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE_MISS(PERF_COUNT_HW_CACHE_DTLB),
	  "events", COLLECT_MISS_PERIOD, 0 },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE_MISS(PERF_COUNT_HW_CACHE_ITLB),
	  "events", COLLECT_MISS_PERIOD, 0 },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "ns",
	  COLLECT_CLOCK_PERIOD_NS, 0 },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns",
	  COLLECT_CLOCK_PERIOD_NS, 0 },
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))

const struct collect_event *collect_event_find(const char *name)
{
	for (size_t i = 0; i < NEVENTS; i++)
		if (!strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

const char *collect_event_names(void)
{
	static char names[512];

	if (!names[0]) {
		size_t n = 0;

		for (size_t i = 0; i < NEVENTS && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
					      i ? ", " : "", events[i].name);
	}
	return names;
}

int collect_event_probe(const struct collect_event *ev, struct dcpi_err *err)
{
	struct perf_event_attr a;
	long fd;

	smp_attr_init(&a, ev, ev->default_period, 0);
	a.disabled = 1;
	a.enable_on_exec = 0;
	fd = smp_perf_open(&a, 0, -1);
	if (fd < 0)
		return smp_open_error(err, errno, ev->name);
	close((int)fd);
	return 0;
}

int collect_event_default(const struct collect_event **out, struct dcpi_err *err)
{
	const struct collect_event *ev = collect_event_find("cycles");
	int ret = collect_event_probe(ev, err);

	if (ret == -EOPNOTSUPP)
		ev = collect_event_find("cpu-clock");
	else if (ret)
		return ret;
	*out = ev;
	return ret == -EOPNOTSUPP;
}

int collect_events_parse(const char *list, const struct collect_event **out,
			 unsigned *n, struct dcpi_err *err)
{
	const char *p = list;

	*n = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		char name[PROF_EVENT_MAX];
		const struct collect_event *ev;

		if (!len || len >= sizeof(name))
			return dcpi_errf(err, -EINVAL, "%.*s: unknown event (known: %s)",
					 (int)len, p, collect_event_names());
		memcpy(name, p, len);
		name[len] = '\0';
		ev = collect_event_find(name);
		if (!ev)
			return dcpi_errf(err, -EINVAL, "%s: unknown event (known: %s)", name,
					 collect_event_names());
		for (unsigned i = 0; i < *n; i++)
			if (out[i] == ev)
				return dcpi_errf(err, -EINVAL, "%s: given twice", name);
		if (*n == COLLECT_MAX_EVENTS)
			return dcpi_errf(err, -E2BIG, "%s: more than %d events", list,
					 COLLECT_MAX_EVENTS);
		out[(*n)++] = ev;
		p += len;
		if (*p == ',' && !*++p)
			return dcpi_errf(err, -EINVAL, "%s: empty event name at the end", list);
	}
	if (!*n)
		return dcpi_errf(err, -EINVAL, "no event given");
	return 0;
}
