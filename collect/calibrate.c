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
#include <stdlib.h>
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

/* Copy n bytes at ring offset at, across the ring's end. */
static void ring_copy(const uint8_t *data, size_t size, uint64_t at, void *out, size_t n)
{
	for (size_t k = 0; k < n; k++)
		((uint8_t *)out)[k] = data[(at + k) & (size - 1)];
}

/* Samples in the ring (and lost ones: they were taken all the same); where
 * in_ip is given, *in_ip counts the samples at an address in [ip_lo, ip_hi)
 * and *at_ip those at ip_at (the sample's IP follows its identifier,
 * sampler.c SMP_SAMPLE_TYPE). */
static uint64_t drain(void *base, uint64_t ip_lo, uint64_t ip_hi, uint64_t ip_at,
		      uint64_t *in_ip, uint64_t *at_ip)
{
	struct perf_event_mmap_page *pg = base;
	const uint8_t *data = (const uint8_t *)base + sysconf(_SC_PAGESIZE);
	size_t size = CAL_RING_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail, n = 0;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t v;

		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			n++;
			if (in_ip && h.size >= 24) {
				ring_copy(data, size, tail + 16, &v, sizeof(v));
				*in_ip += v >= ip_lo && v < ip_hi;
				*at_ip += v == ip_at;
			}
		} else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
			ring_copy(data, size, tail + 16, &v, sizeof(v));
			n += v;
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* The calibration's own sampling event, this thread only, as c samples:
 * its descriptor in *fd and its ring at *base (length *len), disabled. */
static int cal_open(const struct collect_event *ev, const struct smp_config *c,
		    struct rnd *rnd, long *fd, void **base, size_t *len, struct dcpi_err *err)
{
	uint64_t period = c->period ? c->period : ev->default_period;
	struct perf_event_attr a;

	*len = (CAL_RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
	smp_attr_init(&a, ev, c->randomize && !c->freq ? rnd_period(rnd, period) : period,
		      c->freq);
	a.inherit = 0;
	a.enable_on_exec = 0;
	a.disabled = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
	a.exclude_kernel = !c->kernel;
	*fd = smp_perf_open(&a, 0, -1);
	if (*fd < 0 && errno == EACCES && !a.exclude_kernel) {
		a.exclude_kernel = 1;
		*fd = smp_perf_open(&a, 0, -1);
	}
	if (*fd < 0)
		return smp_open_error(err, errno, ev->name);
	*base = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)*fd, 0);
	if (*base == MAP_FAILED) {
		int e = errno;

		close((int)*fd);
		return dcpi_errf(err, -e, "calibration: ring buffer: %s", strerror(e));
	}
	return 0;
}

/* A new random period every 10 ms, as the collector reprograms it. */
static void cal_reperiod(long fd, const struct collect_event *ev, const struct smp_config *c,
			 struct rnd *rnd)
{
	uint64_t p = rnd_period(rnd, c->period ? c->period : ev->default_period);

	if (c->randomize && !c->freq)
		ioctl((int)fd, PERF_EVENT_IOC_PERIOD, &p);
}

int cal_sample(struct cal_result *r, const struct collect_event *ev,
	       const struct smp_config *c, struct rnd *rnd, unsigned ms,
	       struct dcpi_err *err)
{
	uint64_t chunk = (uint64_t)(r->cycles_per_ns * 1e7) / CAL_UNROLL;	/* 10 ms */
	uint64_t samples = 0, iters = 0;
	void *base;
	size_t len;
	long fd;
	int ret;

	if (r->cycles_per_ns <= 0)
		return dcpi_errf(err, -EINVAL, "calibration: clock not measured");
	ret = cal_open(ev, c, rnd, &fd, &base, &len, err);
	if (ret)
		return ret;
	ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	for (unsigned i = 0; i < (ms + 9) / 10; i++) {
		if (i)
			cal_reperiod(fd, ev, c, rnd);
		cal_loop(chunk);
		iters += chunk;
		samples += drain(base, 0, 0, 0, NULL, NULL);
	}
	ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0);
	samples += drain(base, 0, 0, 0, NULL, NULL);
	munmap(base, len);
	close((int)fd);
	r->loop_cycles += iters * CAL_UNROLL;
	r->samples += samples;
	if (samples) {
		double own = (double)(iters * CAL_UNROLL) / (double)samples;

		if (r->cps_first > 0)
			r->cps_last = own;
		else
			r->cps_first = own;
	}
	r->cycles_per_sample = r->samples ? (double)r->loop_cycles / (double)r->samples : 0;
	return 0;
}

/*
 * What the timer shows of a load waiter's cycles once the data is there
 * (estimate/destall.c's f): a chase through a ring the size of an L2 (each
 * step misses L1, about 15 cycles), the loaded index added by the next
 * instruction (the waiter, one cycle) and a cheap one after it (the
 * witness).  Were the timer to show the waiter's cycle as it shows the
 * others, the witness would receive one sample per cycle per step:
 * f = witness samples x cycles per step / all samples.  On a Zen 4 VM
 * chases showed 0.45 - 1.05; on a Zen 5 VM the witness is nearly silent (5
 * samples of a 256 KB chase's 1e8 steps where f = 0.55 expects about 390).
 */
#define EXP_RING (64u << 10)	/* 4-byte indices: 256 KiB */

uint64_t cal_exposure_walk(const uint32_t *next, uint64_t steps);
extern const char cal_exposure_loop[], cal_exposure_witness[], cal_exposure_end[];
__asm__(".text\n"
	".p2align 5\n"
	".globl cal_exposure_walk\n"
	".type cal_exposure_walk, @function\n"
	"cal_exposure_walk:\n\t"
	"xor %eax, %eax\n\t"
	"xor %edx, %edx\n"
	".globl cal_exposure_loop\n"
	"cal_exposure_loop:\n\t"
	"mov (%rdi,%rdx,4), %edx\n\t"	/* the load: i = next[i] */
	"add %rdx, %rax\n"			/* the waiter */
	".globl cal_exposure_witness\n"
	"cal_exposure_witness:\n\t"
	"sub $1, %rsi\n\t"			/* the witness */
	"jnz cal_exposure_loop\n"
	".globl cal_exposure_end\n"
	"cal_exposure_end:\n\t"
	"ret\n"
	".size cal_exposure_walk, .-cal_exposure_walk\n");

int cal_exposure(struct cal_result *r, const struct collect_event *ev,
		 const struct smp_config *c, struct rnd *rnd, unsigned ms, struct dcpi_err *err)
{
	uint64_t lo = (uint64_t)(uintptr_t)cal_exposure_loop;
	uint64_t hi = (uint64_t)(uintptr_t)cal_exposure_end;
	uint64_t wit = (uint64_t)(uintptr_t)cal_exposure_witness;
	uint64_t t0, steps = 0, samples = 0, in = 0, at = 0;
	uint32_t *next = malloc(EXP_RING * sizeof(*next));
	void *base;
	size_t len;
	long fd;
	int ret;

	if (!next)
		return dcpi_errf(err, -ENOMEM, "calibration: out of memory");
	/* one cycle through every slot (Sattolo), in random order */
	for (uint32_t k = 0; k < EXP_RING; k++)
		next[k] = k;
	for (uint32_t k = EXP_RING - 1; k > 0; k--) {
		uint32_t j = (uint32_t)(rnd_next(rnd) % k), t = next[k];

		next[k] = next[j];
		next[j] = t;
	}
	cal_exposure_walk(next, EXP_RING);	/* into the caches */
	ret = cal_open(ev, c, rnd, &fd, &base, &len, err);
	if (ret) {
		free(next);
		return ret;
	}
	ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	t0 = now_ns();
	for (unsigned i = 0; now_ns() - t0 < (uint64_t)ms * 1000000; i++) {
		if (i && i % 32 == 0)	/* 32 rounds of the ring: about 10 ms */
			cal_reperiod(fd, ev, c, rnd);
		cal_exposure_walk(next, EXP_RING);
		steps += EXP_RING;
		samples += drain(base, lo, hi, wit, &in, &at);
	}
	r->exp_ns = now_ns() - t0;
	ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0);
	samples += drain(base, lo, hi, wit, &in, &at);
	munmap(base, len);
	close((int)fd);
	free(next);
	r->exp_steps = steps;
	r->exp_samples = samples;
	r->exp_in_loop = in;
	r->exp_witness = at;
	r->exp_cycles_per_step = steps ? (double)r->exp_ns * r->cycles_per_ns / (double)steps : 0;
	return 0;
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
