/*
 * collect/calibrate.c - what one sample is worth in cycles (docs/architecture.md
 * "Units"; the DCPI paper's sec. 5 measures the same cost from outside).
 *
 * The obvious answer, period x clock rate, is wrong by the cost of sampling
 * itself: every interrupt, ring-buffer write and period reprogramming is
 * charged to whatever was running, so a program sampled every 250 us of
 * cpu-clock receives more samples than its own cycles / (250 us x clock)
 * (perf record at 20 kHz here: 4.43 s of samples for 3.2 s of bare run).
 * So the collector runs a loop whose cycle count is known - a chain of
 * dependent adds, one cycle each, written in asm so no compiler can change
 * it - in its own process under the very same event, period and random
 * reprogramming, and divides the loop's cycles by the samples it received.
 * That ratio already contains the overhead, whatever the event or machine.
 *
 * The core clock is measured the same way without sampling: adds per ns.
 * The TSC's rate (rdtsc against CLOCK_MONOTONIC) is measured too and kept
 * beside it: on current x86 the TSC runs at a fixed nominal rate that can
 * differ from the core clock (turbo, power states, a VM's scaling), so it
 * is not used as the cycle count.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "internal.h"

#define CAL_UNROLL 16
#define CAL_RING_PAGES 256	/* 1 MiB: room for 50 ms of 2 us periods */

/* iters x CAL_UNROLL dependent adds: that many cycles on any x86 core with
 * one-cycle integer add latency (every one since the P6). */
static uint64_t cal_loop(uint64_t iters)
{
	uint64_t x = 0;

	__asm__ volatile(
		"1:\n\t"
		"add $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\t"
		"add $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\t"
		"add $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\t"
		"add $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\t"
		"dec %[n]\n\t"
		"jnz 1b\n\t"
		: [x] "+r"(x), [n] "+r"(iters)
		:
		: "cc");
	return x;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

int cal_clock(struct cal_result *r, struct dcpi_err *err)
{
	const uint64_t iters = 500000;	/* 8M cycles, a few ms */
	double best = 0, tsc = 0;

	cal_loop(iters / 4);		/* wake the core up */
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = now_ns(), c0 = rdtsc(), c1, t1;
		double rate;

		cal_loop(iters);
		c1 = rdtsc();
		t1 = now_ns();
		if (t1 <= t0)
			continue;
		/* the fastest run is the one least disturbed by the machine */
		rate = (double)(iters * CAL_UNROLL) / (double)(t1 - t0);
		if (rate > best) {
			best = rate;
			tsc = (double)(c1 - c0) / (double)(t1 - t0);
		}
	}
	if (best <= 0)
		return dcpi_errf(err, -EIO, "calibration: the clock did not advance");
	r->cycles_per_ns = best;
	r->tsc_per_ns = tsc;
	return 0;
}

/* Samples in the ring (and lost ones: they were taken all the same). */
static uint64_t count_samples(void *base)
{
	struct perf_event_mmap_page *pg = base;
	const uint8_t *data = (const uint8_t *)base + sysconf(_SC_PAGESIZE);
	size_t size = CAL_RING_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail, n = 0;

	while (tail < head) {
		struct perf_event_header h;
		size_t at = (size_t)(tail & (size - 1));
		uint64_t lost;

		if (at + sizeof(h) > size)
			break;		/* headers are 8-aligned: cannot straddle */
		memcpy(&h, data + at, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			n++;
		} else if (h.type == PERF_RECORD_LOST && at + 24 <= size) {
			memcpy(&lost, data + at + 16, 8);
			n += lost;
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

int cal_sample(struct cal_result *r, const struct collect_event *ev,
	       const struct smp_config *c, struct rnd *rnd, unsigned ms,
	       struct dcpi_err *err)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (CAL_RING_PAGES + 1) * (size_t)pg;
	uint64_t period = c->period ? c->period : ev->default_period;
	uint64_t chunk = (uint64_t)(r->cycles_per_ns * 1e7) / CAL_UNROLL;	/* 10 ms */
	uint64_t samples = 0, iters = 0;
	struct perf_event_attr a;
	void *base;
	long fd;
	int ret = 0;

	if (r->cycles_per_ns <= 0)
		return dcpi_errf(err, -EINVAL, "calibration: clock not measured");
	smp_attr_init(&a, ev, c->randomize && !c->freq ? rnd_period(rnd, period) : period,
		      c->freq);
	a.inherit = 0;
	a.enable_on_exec = 0;
	a.disabled = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
	a.exclude_kernel = !c->kernel;
	fd = smp_perf_open(&a, 0, -1);
	if (fd < 0 && errno == EACCES && !a.exclude_kernel) {
		a.exclude_kernel = 1;
		fd = smp_perf_open(&a, 0, -1);
	}
	if (fd < 0)
		return smp_open_error(err, errno, ev->name);
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (base == MAP_FAILED) {
		ret = dcpi_errf(err, -errno, "calibration: ring buffer: %s", strerror(errno));
		goto out;
	}
	ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	for (unsigned i = 0; i < (ms + 9) / 10; i++) {
		if (i && c->randomize && !c->freq) {
			uint64_t p = rnd_period(rnd, period);

			ioctl((int)fd, PERF_EVENT_IOC_PERIOD, &p);
		}
		cal_loop(chunk);
		iters += chunk;
		samples += count_samples(base);
	}
	ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0);
	samples += count_samples(base);
	munmap(base, len);
	r->loop_cycles += iters * CAL_UNROLL;
	r->samples += samples;
	r->cycles_per_sample = r->samples ? (double)r->loop_cycles / (double)r->samples : 0;
out:
	close((int)fd);
	return ret;
}

int collect_calibrate(const char *event, uint64_t period, unsigned ms, double *cycles_per_sample,
		      double *cycles_per_ns, struct dcpi_err *err)
{
	const struct collect_event *ev = collect_event_find(event);
	const struct collect_event *evs[1];
	struct smp_config c;
	struct cal_result r;
	struct rnd rnd;
	int ret;

	if (!ev)
		return dcpi_errf(err, -ENOENT, "calibration: unknown event '%s' (known: %s)", event,
				 collect_event_names());
	if (!period)
		return dcpi_errf(err, -EINVAL, "calibration: %s: period 0", event);
	if (!ms)
		ms = 100;
	evs[0] = ev;
	memset(&c, 0, sizeof(c));
	memset(&r, 0, sizeof(r));
	c.events = evs;
	c.nevents = 1;
	c.period = period;
	c.pid = 0;
	rnd_init(&rnd, 1);
	ret = cal_clock(&r, err);
	if (!ret)
		ret = cal_sample(&r, ev, &c, &rnd, ms, err);
	if (!ret && !r.samples)
		ret = dcpi_errf(err, -EIO, "calibration: %s every %" PRIu64 ": no samples in %u ms",
				event, period, ms);
	if (ret)
		return ret;
	*cycles_per_sample = r.cycles_per_sample;
	*cycles_per_ns = r.cycles_per_ns;
	return 0;
}
