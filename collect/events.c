/*
 * collect/events.c - the events the collector samples, as data, and a probe
 * that asks the kernel whether this machine can sample one.  On a VM without
 * a PMU, cycles does not exist and cpu-clock stands in for it (DESIGN.md).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "internal.h"

static const struct collect_event events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "events",
	  COLLECT_CYCLES_PERIOD },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "events",
	  COLLECT_CYCLES_PERIOD },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "ns",
	  COLLECT_CLOCK_PERIOD_NS },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns",
	  COLLECT_CLOCK_PERIOD_NS },
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
	return "cycles, instructions, cpu-clock, task-clock";
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
