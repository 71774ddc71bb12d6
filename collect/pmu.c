/*
 * collect/pmu.c - what this machine's PMU offers, found as perf finds it and
 * confirmed by opening it (docs/collect.md, "Hardware evidence").
 *
 * A VM without a PMU has no "cpu" event source in sysfs and cpu-clock stands
 * in for cycles.  Where a PMU exists, a recording takes, beside cycles and
 * instructions:
 *   - branch stacks on the retired taken branches (Intel LBR on
 *     BR_INST_RETIRED.NEAR_TAKEN, raw 0x20c4; AMD on Retired Taken Branch
 *     Instructions, raw 0xc4, the one event Zen 3's BRS accepts, and what
 *     LbrExtV2 samples as well): one stack stands for a period of taken
 *     branches, so block and edge counts come out in executions, as
 *     AutoFDO's `perf record -e br_inst_retired.near_taken -b` gives them;
 *     caps/branches says the stack's depth;
 *   - IBS op samples on AMD (the ibs_op event source): the retired op's
 *     latency, cache level and data address, ProfileMe's heir.  Kernels
 *     that take IBS only per CPU get it per CPU (COLLECT_EV_CPU_WIDE).
 * Each is opened once through the caller's opener before it is used: a
 * kernel or a hypervisor that lists a PMU but refuses the event leaves it
 * out, and why says so.  Tests pass a constructed root and an opener that
 * plays the kernel (tests/test_pmu.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "internal.h"

#define BRANCH_PERIOD	200003ULL	/* taken branches per stack, a prime */
#define IBS_PERIOD	200000ULL	/* cycles per IBS op sample (x16 units) */
#define INTEL_NEAR_TAKEN 0x20c4ULL
#define AMD_TAKEN	0xc4ULL

/* The first line of root/rel, trimmed, into out; -errno when unreadable. */
static int read_line(const char *root, const char *rel, char *out, size_t len)
{
	char path[512];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(out, (int)len, f))
		ret = -ENODATA;
	else
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
	return ret;
}

static int read_int(const char *root, const char *rel, long *v)
{
	char line[64], *end;

	if (read_line(root, rel, line, sizeof(line)))
		return -ENOENT;
	*v = strtol(line, &end, 0);
	return end == line ? -EINVAL : 0;
}

/* vendor_id and whether flags holds word, from root/proc/cpuinfo. */
static void cpuinfo(const char *root, char *vendor, size_t len, const char *word, int *has)
{
	char path[512], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
	*has = 0;
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		v += 1 + (v[1] == ' ');
		v[strcspn(v, "\n")] = '\0';
		if (!strncmp(line, "vendor_id", 9) && !vendor[0])
			snprintf(vendor, len, "%s", strstr(v, "AMD") ? "AMD" :
				 strstr(v, "Intel") ? "Intel" : v);
		if (!strncmp(line, "flags", 5)) {
			for (char *t = strtok(v, " "); t; t = strtok(NULL, " "))
				*has |= !strcmp(t, word);
			break;
		}
	}
	fclose(f);
}

static long sys_open(struct perf_event_attr *a, int pid, int cpu, void *arg)
{
	(void)arg;
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Open ev once (this process, any CPU; or CPU 0 system-wide) and close it:
 * 0 or the negative errno. */
static int try_open(collect_open_fn open, void *arg, const struct collect_event *ev,
		    int cpu_wide)
{
	struct perf_event_attr a;
	long fd;

	collect_event_attr(&a, ev, ev->default_period, 0, 0);
	a.disabled = 1;
	a.enable_on_exec = 0;
	a.inherit = 0;
	fd = cpu_wide ? open(&a, -1, 0, arg) : open(&a, 0, -1, arg);
	if (fd < 0)
		return errno ? -errno : -EINVAL;
	if (open == sys_open)
		close((int)fd);
	return 0;
}

static void find_branches(const char *root, collect_open_fn open, void *arg,
			  struct collect_pmu *p)
{
	struct collect_event *ev = &p->branch_ev;
	int amd = !strcmp(p->vendor, "AMD"), lbrv2 = 0, brs = 0, ret;
	long depth = 0;
	char dummy[16] = "";

	if (read_int(root, "sys/bus/event_source/devices/cpu/caps/branches", &depth) &&
	    read_int(root, "sys/bus/event_source/devices/cpu_core/caps/branches", &depth))
		depth = 0;
	p->branch_depth = depth > 0 ? (unsigned)depth : 0;
	if (amd) {
		cpuinfo(root, dummy, sizeof(dummy), "amd_lbr_v2", &lbrv2);
		cpuinfo(root, dummy, sizeof(dummy), "brs", &brs);
	}
	snprintf(p->branch_kind, sizeof(p->branch_kind), "%s",
		 !amd ? "lbr" : lbrv2 ? "lbrv2" : brs ? "brs" : "");
	if (!p->branch_depth && !(amd && (lbrv2 || brs))) {
		col_appendf(p->why, sizeof(p->why), "%sno branch stacks (no caps/branches)",
		       p->why[0] ? "; " : "");
		return;
	}
	ev->name = "branches-taken";
	ev->type = PERF_TYPE_RAW;
	ev->config = amd ? AMD_TAKEN : INTEL_NEAR_TAKEN;
	ev->unit = "events";
	ev->default_period = BRANCH_PERIOD;
	ev->flags = COLLECT_EV_BRANCHES;
	ret = try_open(open, arg, ev, 0);
	if (!ret) {
		p->branches = 1;
		return;
	}
	col_appendf(p->why, sizeof(p->why), "%sbranch stacks listed but refused: %s",
	       p->why[0] ? "; " : "", strerror(-ret));
}

static void find_ibs(const char *root, collect_open_fn open, void *arg, struct collect_pmu *p)
{
	struct collect_event *ev = &p->ibs_ev;
	long type;
	int ret;

	p->ibs_op_type = -1;
	if (strcmp(p->vendor, "AMD") ||
	    read_int(root, "sys/bus/event_source/devices/ibs_op/type", &type) || type < 0)
		return;
	p->ibs_op_type = (int)type;
	ev->name = "ibs_op";
	ev->type = (uint32_t)type;
	ev->config = 0;		/* count cycles, not dispatched ops */
	ev->unit = "events";
	ev->default_period = IBS_PERIOD;
	ev->flags = COLLECT_EV_RAW;
	ret = try_open(open, arg, ev, 0);
	if (ret) {
		/* older kernels take IBS per CPU only */
		ev->flags |= COLLECT_EV_CPU_WIDE;
		if (!try_open(open, arg, ev, 1)) {
			p->ibs = p->ibs_cpu_wide = 1;
			return;
		}
		col_appendf(p->why, sizeof(p->why), "%sibs_op listed but refused: %s",
		       p->why[0] ? "; " : "", strerror(-ret));
		return;
	}
	p->ibs = 1;
}

int collect_pmu_detect(const char *root, collect_open_fn open, void *arg,
		       struct collect_pmu *p, struct dcpi_err *err)
{
	const struct collect_event *cyc = collect_event_find("cycles");
	long type;
	int has, ret;

	memset(p, 0, sizeof(*p));
	p->ibs_op_type = -1;
	if (!root || !*root)
		root = "/";
	if (!open)
		open = sys_open;
	cpuinfo(root, p->vendor, sizeof(p->vendor), "", &has);
	if (read_int(root, "sys/bus/event_source/devices/cpu/type", &type) &&
	    read_int(root, "sys/bus/event_source/devices/cpu_core/type", &type)) {
		snprintf(p->why, sizeof(p->why), "no PMU (no cpu event source in sysfs)");
		return 0;
	}
	ret = try_open(open, arg, cyc, 0);
	if (ret == -EACCES || ret == -EPERM)
		return dcpi_errf(err, ret, "cycles: %s (kernel.perf_event_paranoid?)",
				 strerror(-ret));
	if (ret) {
		snprintf(p->why, sizeof(p->why), "a PMU is listed but cycles cannot be "
			 "sampled: %s", strerror(-ret));
		return 0;
	}
	p->hardware = 1;
	find_branches(root, open, arg, p);
	find_ibs(root, open, arg, p);
	return 0;
}

void collect_pmu_events(const struct collect_pmu *p, const struct collect_event **out,
			unsigned *n)
{
	*n = 0;
	if (!p->hardware) {
		out[(*n)++] = collect_event_find("cpu-clock");
		return;
	}
	out[(*n)++] = collect_event_find("cycles");
	out[(*n)++] = collect_event_find("instructions");
	if (p->branches)
		out[(*n)++] = &p->branch_ev;
	if (p->ibs)
		out[(*n)++] = &p->ibs_ev;
}

void collect_pmu_describe(const struct collect_pmu *p, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!p->hardware) {
		col_appendf(buf, len, "pmu: none, cpu-clock (%s)", p->why);
		return;
	}
	col_appendf(buf, len, "pmu: %s cycles, instructions", p->vendor[0] ? p->vendor : "cpu");
	if (p->branches)
		col_appendf(buf, len, ", branch stacks (%s, %u entries, every %llu taken branches)",
		       p->branch_kind, p->branch_depth,
		       (unsigned long long)p->branch_ev.default_period);
	if (p->ibs)
		col_appendf(buf, len, ", ibs_op%s", p->ibs_cpu_wide ? " (per CPU)" : "");
	if (p->why[0])
		col_appendf(buf, len, "; %s", p->why);
}

void collect_event_attr(struct perf_event_attr *a, const struct collect_event *ev,
			uint64_t period, uint64_t freq, int kernel)
{
	smp_attr_init(a, ev, period, freq);
	a->exclude_kernel = !kernel;
	if (ev->flags & COLLECT_EV_BRANCHES) {
		/* every kind of taken branch, at the sampled privilege levels:
		 * the one filter Zen 3's BRS accepts (ANY plus privilege) */
		a->sample_type |= PERF_SAMPLE_BRANCH_STACK;
		a->branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER |
					(kernel ? PERF_SAMPLE_BRANCH_KERNEL : 0);
		a->freq = 0;	/* BRS refuses frequency mode: a period always */
		a->sample_period = period ? period : ev->default_period;
	}
	if (ev->flags & COLLECT_EV_RAW)
		a->sample_type |= PERF_SAMPLE_RAW;
	if (ev->flags & COLLECT_EV_CPU_WIDE) {
		a->inherit = 0;
		a->enable_on_exec = 0;
	}
}
