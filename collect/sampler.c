/*
 * collect/sampler.c - the paper's device driver (sec. 4.2) is the kernel's
 * perf_event subsystem here; this file opens it and reads it.
 *
 * One event per online CPU on the command's pid, inherited by its children,
 * enabled when it execs.  The kernel refuses to mmap an inherited per-task
 * (cpu = -1) event, so each CPU gets its own ring buffer, as perf record's
 * do.  Because a process's MMAP2 record can sit in one CPU's ring and its
 * samples in another's, a drain copies every ring into one batch and sorts
 * it by timestamp before anything is interpreted.
 *
 * Several events at once are separate counters, each CPU's all writing into
 * that CPU's one ring (PERF_EVENT_IOC_SET_OUTPUT); PERF_SAMPLE_IDENTIFIER
 * says which counter took a sample (an inherited counter reports its
 * parent's id).  Not a group: a group is scheduled all or nothing and a
 * hardware group too big for the PMU would never count; separate counters
 * are multiplexed instead, and TOTAL_TIME_ENABLED/RUNNING say by how much.
 *
 * Random periods (DCPI sec. 4.1.1).  The paper's driver drew a new period
 * in the interrupt handler after every sample.  perf_event has no such
 * hook: the period can only be changed with PERF_EVENT_IOC_PERIOD, a system
 * call (and an IPI to the counter's CPU) per counter, far too slow to follow
 * every sample from user space without giving up the ring buffer.  So
 * smp_randomize() draws a new period for every counter each time the
 * collector's loop wakes (every RANDOM_MS): the period is random per batch
 * of tens of samples instead of per sample.  That is enough to break
 * lock-step with a loop: within a batch the period differs from the loop's
 * by a random amount up to P/16, so successive samples walk across the
 * loop's phase in at most a few dozen samples, and each reprogramming also
 * restarts the count from zero, a random phase jump.  Freq mode (-F) is not
 * randomized: the kernel steers the period there, smoothly, not at random.
 * Counters a command's children inherit take the period current at their
 * fork (the ioctl reaches only the counter it is given).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "internal.h"

#define SMP_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
			 PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD)
/*
 * Every sample also carries the interrupted user context's flags register
 * (PERF_SAMPLE_REGS_USER, one register): a sample whose user flags hold the
 * trap flag was taken while the path-sample runtime single-stepped the
 * thread (collect/pathrt.c).  Such a sample does not measure the program: a
 * stepped instruction takes a trap, a signal and a sigreturn, thousands of
 * cycles, and the user-mode part of that lands on the instruction.  The
 * session leaves these samples out and counts them (settings "stepped=");
 * there are few, 0.05-0.2% of the samples at 250 bursts of 64 steps per CPU
 * second (docs/paths.md), as nearly all of a step's cost is in the kernel.
 * Now that kernel code is sampled too, a kernel sample whose user flags
 * hold TF is that cost (the trap, the signal's delivery) and is left out
 * the same way.  Kernels that refuse the register (EINVAL) get the plain sample type and
 * keep every sample.
 */
#define SMP_X86_FLAGS 9		/* PERF_REG_X86_FLAGS (asm/perf_regs.h) */
#define SMP_TF 0x100ULL
#ifdef __x86_64__
#define SMP_REGS PERF_SAMPLE_REGS_USER
#else
#define SMP_REGS 0
#endif

/* The flags register in every sample of a (on), or no registers. */
static void attr_regs(struct perf_event_attr *a, int on)
{
	if (on)
		a->sample_type |= PERF_SAMPLE_REGS_USER;
	else
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = on ? 1ULL << SMP_X86_FLAGS : 0;
}

long smp_perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

void smp_attr_init(struct perf_event_attr *a, const struct collect_event *ev,
		   uint64_t period, uint64_t freq)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->type;
	a->config = ev->config;
	if (freq) {
		a->freq = 1;
		a->sample_freq = freq;
	} else {
		a->sample_period = period;
	}
	a->sample_type = SMP_SAMPLE_TYPE;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
}

int smp_sysctl(const char *name)
{
	char path[128];
	FILE *f;
	int v = -100;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	f = fopen(path, "r");

	if (!f)
		return v;
	if (fscanf(f, "%d", &v) != 1)
		v = -100;
	fclose(f);
	return v;
}

int smp_open_error(struct dcpi_err *err, int e, const char *name)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return dcpi_errf(err, -EACCES, "%s: permission denied by the kernel "
				 "(kernel.perf_event_paranoid = %d); run as root or lower it",
				 name, smp_sysctl("perf_event_paranoid"));
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return dcpi_errf(err, -EOPNOTSUPP, "%s: not supported on this machine "
				 "(no hardware performance counters?)", name);
	case EMFILE:
		return dcpi_errf(err, -EMFILE, "%s: too many open files (one event per CPU)",
				 name);
	default:
		return dcpi_errf(err, -e, "%s: perf_event_open: %s", name, strerror(e));
	}
}

/* The online CPUs from sysfs ("0-3,6"), else 0 .. nprocs-1. */
static int online_cpus(int **out, int *n)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int *cpus, cnt = 0, a, b;
	char c;

	if (conf < 1)
		conf = 1;
	cpus = calloc((size_t)conf + 1024, sizeof(*cpus));
	if (!cpus) {
		if (f)
			fclose(f);
		return -ENOMEM;
	}
	if (f) {
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			c = (char)fgetc(f);
			if (c == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				c = (char)fgetc(f);
			}
			for (int i = a; i <= b && cnt < conf + 1024; i++)
				cpus[cnt++] = i;
			if (c != ',')
				break;
		}
		fclose(f);
	}
	if (!cnt)
		for (int i = 0; i < conf; i++)
			cpus[cnt++] = i;
	*out = cpus;
	*n = cnt;
	return 0;
}

static int map_ring(struct smp_ring *r, size_t pages, const char *name,
		    struct dcpi_err *err)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *base;

	r->size = pages * (size_t)pg;
	base = mmap(NULL, r->size + (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (base == MAP_FAILED) {
		int e = errno;

		return dcpi_errf(err, -e, "%s: ring buffer of %zu KiB on cpu %d: %s%s", name,
				 r->size / 1024, r->cpu, strerror(e),
				 e == EPERM ? " (kernel.perf_event_mlock_kb?)" : "");
	}
	r->base = base;
	return 0;
}

static uint64_t config_period(const struct smp_config *c, const struct collect_event *ev)
{
	return c->period ? c->period : ev->default_period;
}

static int ctr_reserve(struct sampler *s)
{
	struct smp_counter *k;
	int cap;

	if (s->nctr < s->ctr_cap)
		return 0;
	cap = s->ctr_cap ? 2 * s->ctr_cap : 16;
	k = realloc(s->ctr, (size_t)cap * sizeof(*k));
	if (!k)
		return -ENOMEM;
	s->ctr = k;
	s->ctr_cap = cap;
	return 0;
}

static void attr_mode(struct perf_event_attr *a, const struct smp_config *c)
{
	if (c->pid < 0) {	/* system-wide: no inherit, start now */
		a->inherit = 0;
		a->enable_on_exec = 0;
		a->disabled = 0;
		a->exclude_idle = 1;
	} else if (c->ntids) {	/* attach: this thread (and its new ones), now */
		a->inherit = !!c->attach_inherit;
		a->enable_on_exec = 0;
		a->disabled = 0;
	}
}

/*
 * Open every event for pid on ring r's CPU: the ring's first counter owns
 * it (maps it), the others write into it.  1: the CPU is offline; -ESRCH:
 * the thread has exited.
 */
static int open_on(struct sampler *s, struct smp_ring *r, pid_t pid, struct dcpi_err *err)
{
	const struct smp_config *c = &s->cfg;
	struct perf_event_attr a;

	for (unsigned e = 0; e < c->nevents; e++) {
		const struct collect_event *ev = c->events[e];
		uint64_t period = config_period(c, ev);
		struct smp_counter *k;
		long fd;

		if (ctr_reserve(s))
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", ev->name);
		k = &s->ctr[s->nctr];
		if (c->randomize && !c->freq)
			period = rnd_period(&s->rnd, period);
		collect_event_attr(&a, ev, period, c->freq, s->kernel);
		attr_regs(&a, !!(s->sample_type & PERF_SAMPLE_REGS_USER));
		if (s->sample_type & PERF_SAMPLE_CALLCHAIN) {	/* user frames: callchain.c */
			a.sample_type |= PERF_SAMPLE_CALLCHAIN;
			a.exclude_callchain_kernel = 1;
		}
		a.watermark = 1;
		a.wakeup_watermark = (uint32_t)(c->pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
		a.exclude_kernel = !s->kernel;
		attr_mode(&a, c);
		if (e) {		/* side-band records once per CPU is enough */
			a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
		}
		if (ev->flags & COLLECT_EV_CPU_WIDE) {	/* every process: the import
							 * keeps the command's */
			if (c->ntids && pid != c->tids[0])
				continue;
			a.inherit = a.enable_on_exec = a.disabled = 0;
		}
		fd = smp_perf_open(&a, ev->flags & COLLECT_EV_CPU_WIDE ? -1 : pid, r->cpu);
		if (fd < 0 && errno == EINVAL && !s->nctr &&
		    (s->sample_type & PERF_SAMPLE_REGS_USER)) {
			/* no user registers in samples here: the plain type */
			s->sample_type &= ~(uint64_t)PERF_SAMPLE_REGS_USER;
			attr_regs(&a, 0);
			fd = smp_perf_open(&a, pid, r->cpu);
		}
		if (fd < 0) {
			if (errno == ENODEV && r->fd < 0)	/* went offline since we looked */
				return 1;
			if (errno == ESRCH && c->ntids)
				return dcpi_errf(err, -ESRCH, "thread %d has exited", (int)pid);
			return smp_open_error(err, errno, ev->name);
		}
		s->attr[e] = a;
		k->fd = (int)fd;
		k->cpu = r->cpu;
		k->ev = e;
		s->nctr++;
		if (ioctl(k->fd, PERF_EVENT_IOC_ID, &k->id))
			return dcpi_errf(err, -errno, "%s: PERF_EVENT_IOC_ID: %s", ev->name,
					 strerror(errno));
		if (r->fd < 0) {
			int ret;

			r->fd = k->fd;
			ret = map_ring(r, c->pages, ev->name, err);
			if (ret)
				return ret;
		} else if (ioctl(k->fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
			return dcpi_errf(err, -errno, "%s: sharing cpu %d's ring: %s", ev->name,
					 r->cpu, strerror(errno));
		}
	}
	return 0;
}

/* Every thread attached to, on r's CPU; the ones gone since are skipped. */
static int open_threads(struct sampler *s, struct smp_ring *r, struct dcpi_err *err)
{
	int ret = 0;

	for (size_t i = 0; i < s->cfg.ntids; i++) {
		ret = open_on(s, r, s->cfg.tids[i], err);
		if (ret == -ESRCH) {
			dcpi_err_clear(err);
			ret = 0;
		}
		if (ret)
			return ret;
	}
	if (r->fd < 0)
		return dcpi_errf(err, -ESRCH, "no thread left to attach to: all have exited");
	return 0;
}

/* Open every event on one CPU; the first owns the ring.  1: CPU offline. */
static int open_cpu(struct sampler *s, int cpu, struct dcpi_err *err)
{
	struct smp_ring *r = &s->rings[s->n];
	int ret;

	r->fd = -1;
	r->cpu = cpu;
	ret = s->cfg.ntids ? open_threads(s, r, err) : open_on(s, r, s->cfg.pid, err);
	if (ret)
		return ret;
	s->pfd[s->n].fd = r->fd;
	s->pfd[s->n].events = POLLIN;
	s->n++;
	return 0;
}

static int ctr_cmp(const void *x, const void *y)
{
	const struct smp_counter *a = x, *b = y;

	return a->id < b->id ? -1 : a->id > b->id;
}

int smp_open(struct sampler *s, const struct smp_config *c, struct dcpi_err *err)
{
	const char *name = c->nevents ? c->events[0]->name : "sampler";
	int *cpus = NULL, ncpu = 0, ret = 0;

	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	if (!s->cfg.pages)
		s->cfg.pages = 128;
	if (!c->nevents || c->nevents > COLLECT_MAX_EVENTS)
		return dcpi_errf(err, -EINVAL, "%u events: between 1 and %d", c->nevents,
				 COLLECT_MAX_EVENTS);
	if (s->cfg.pages & (s->cfg.pages - 1))
		return dcpi_errf(err, -EINVAL, "ring buffer of %u pages: not a power of two",
				 s->cfg.pages);
	rnd_init(&s->rnd, c->seed);
	s->kernel = c->kernel;
	if (online_cpus(&cpus, &ncpu))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
	s->rings = calloc((size_t)ncpu, sizeof(*s->rings));
	s->pfd = calloc((size_t)ncpu, sizeof(*s->pfd));
	if (!s->rings || !s->pfd) {
		ret = dcpi_errf(err, -ENOMEM, "%s: out of memory", name);
		goto fail;
	}
	s->sample_type = SMP_SAMPLE_TYPE | SMP_REGS | (c->callchain ? PERF_SAMPLE_CALLCHAIN : 0);
	for (int i = 0; i < ncpu; i++) {
		int nctr = s->nctr;

		ret = open_cpu(s, cpus[i], err);
		if (ret == -EACCES && s->kernel && !i) {	/* kernel not allowed */
			for (int k = nctr; k < s->nctr; k++)
				close(s->ctr[k].fd);
			s->nctr = nctr;
			s->kernel = 0;
			ret = open_cpu(s, cpus[i], err);
		}
		if (ret < 0) {
			if (s->rings[s->n].base)
				s->n++;		/* so smp_close unmaps it */
			goto fail;
		}
	}
	free(cpus);
	cpus = NULL;
	dcpi_qsort(s->ctr, (size_t)s->nctr, sizeof(*s->ctr), ctr_cmp);
	if (!s->n)
		return dcpi_errf(err, -ENODEV, "%s: no online CPU to sample on", name);
	return 0;
fail:
	free(cpus);
	smp_close(s);
	return ret;
}

int smp_randomize(struct sampler *s, struct dcpi_err *err)
{
	if (!s->cfg.randomize || s->cfg.freq)
		return 0;
	for (int i = 0; i < s->nctr; i++) {
		const struct collect_event *ev = s->cfg.events[s->ctr[i].ev];
		uint64_t p = rnd_period(&s->rnd, config_period(&s->cfg, ev));

		if (ioctl(s->ctr[i].fd, PERF_EVENT_IOC_PERIOD, &p))
			return dcpi_errf(err, -errno, "%s: PERF_EVENT_IOC_PERIOD: %s",
					 ev->name, strerror(errno));
	}
	return 0;
}

int smp_read_counts(struct sampler *s, struct smp_count *out, struct dcpi_err *err)
{
	memset(out, 0, s->cfg.nevents * sizeof(*out));
	for (int i = 0; i < s->nctr; i++) {
		uint64_t v[3];
		struct smp_count *c = &out[s->ctr[i].ev];

		if (read(s->ctr[i].fd, v, sizeof(v)) != (ssize_t)sizeof(v))
			return dcpi_errf(err, -EIO, "%s: reading counter on cpu %d: %s",
					 s->cfg.events[s->ctr[i].ev]->name, s->ctr[i].cpu,
					 strerror(errno));
		c->value += v[0];
		c->running += v[2];
		/* A command's counter on each CPU is enabled whenever the command
		 * runs anywhere and running only while it runs on that CPU: the
		 * command's time is one counter's enabled, not their sum. */
		if (s->cfg.ntids)	/* attached threads: one counter of each */
			c->enabled += s->ctr[i].cpu == s->rings[0].cpu ? v[1] : 0;
		else if (s->cfg.pid >= 0)
			c->enabled = v[1] > c->enabled ? v[1] : c->enabled;
		else
			c->enabled += v[1];
	}
	return 0;
}

void smp_close(struct sampler *s)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < s->n; i++)
		if (s->rings[i].base)
			munmap(s->rings[i].base, s->rings[i].size + (size_t)pg);
	for (int i = 0; s->ctr && i < s->nctr; i++)
		close(s->ctr[i].fd);
	free(s->rings);
	free(s->pfd);
	free(s->ctr);
	memset(s, 0, sizeof(*s));
}

int smp_wait(struct sampler *s, int timeout_ms)
{
	if (poll(s->pfd, (nfds_t)s->n, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static int batch_reserve(struct smp_batch *b, size_t bytes)
{
	if (b->len + bytes > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		uint8_t *p;

		while (cap < b->len + bytes)
			cap *= 2;
		p = realloc(b->buf, cap);
		if (!p)
			return -ENOMEM;
		b->buf = p;
		b->cap = cap;
	}
	if (b->n == b->ncap) {
		size_t ncap = b->ncap ? 2 * b->ncap : 1024;
		struct smp_rec *r = realloc(b->r, ncap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		b->r = r;
		b->ncap = ncap;
	}
	return 0;
}

/* Copy len bytes at ring position pos (which may wrap) to dst. */
static void ring_copy(const struct smp_ring *r, const uint8_t *data, uint64_t pos,
		      void *dst, size_t len)
{
	size_t at = (size_t)(pos & (r->size - 1));
	size_t first = r->size - at < len ? r->size - at : len;

	memcpy(dst, data + at, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

/* The record's timestamp: in the body of a sample (after IDENTIFIER, IP and
 * TID), else in the sample_id trailer that sample_id_all appends (TID, TIME,
 * IDENTIFIER: TIME is the last but one). */
static uint64_t rec_time(const uint8_t *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t t = 0;

	if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 32)
		memcpy(&t, rec + sizeof(*h) + 24, 8);
	else if (h->type != PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24)
		memcpy(&t, rec + h->size - 16, 8);
	return t;
}

static int drain_ring(struct smp_ring *r, struct smp_batch *b, struct dcpi_err *err)
{
	struct perf_event_mmap_page *pg = r->base;
	const uint8_t *data = (const uint8_t *)r->base + sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	int ret = 0;

	while (tail < head) {
		struct perf_event_header h;
		struct smp_rec *rec;

		ring_copy(r, data, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			ret = dcpi_errf(err, -EIO, "ring buffer of cpu %d: record of %u bytes "
					"at %llu is corrupt", r->cpu, h.size,
					(unsigned long long)tail);
			tail = head;	/* resynchronize past the damage */
			break;
		}
		if (batch_reserve(b, ((size_t)h.size + 7) & ~(size_t)7)) {
			ret = dcpi_errf(err, -ENOMEM, "ring buffer of cpu %d: out of memory",
					r->cpu);
			break;
		}
		ring_copy(r, data, tail, b->buf + b->len, h.size);
		rec = &b->r[b->n];
		rec->off = b->len;
		rec->seq = b->n;
		rec->time = rec_time(b->buf + b->len);
		b->len += ((size_t)h.size + 7) & ~(size_t)7;
		b->n++;
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}

static int rec_cmp(const void *x, const void *y)
{
	const struct smp_rec *a = x, *b = y;

	return dcpi_cmp_keys((uint64_t[]){ a->time, a->seq }, (uint64_t[]){ b->time, b->seq }, 2);
}

int smp_drain(struct sampler *s, struct smp_batch *b, struct dcpi_err *err)
{
	int ret = 0;

	b->len = 0;
	b->n = 0;
	for (int i = 0; i < s->n && !ret; i++)
		ret = drain_ring(&s->rings[i], b, err);
	dcpi_qsort(b->r, b->n, sizeof(*b->r), rec_cmp);
	return ret;
}

void smp_batch_free(struct smp_batch *b)
{
	free(b->buf);
	free(b->r);
	memset(b, 0, sizeof(*b));
}

static const struct smp_counter *ctr_find(const struct sampler *s, uint64_t id)
{
	size_t lo = dcpi_lower_bound(s->ctr, (size_t)s->nctr, sizeof(*s->ctr),
				     offsetof(struct smp_counter, id), id);

	return lo < (size_t)s->nctr && s->ctr[lo].id == id ? &s->ctr[lo] : NULL;
}

/* perf_decoder.attr_of_id over the counters: an id's event. */
static int smp_attr_of_id(void *ctx, uint64_t id, uint32_t *attr)
{
	const struct smp_counter *k = ctr_find(ctx, id);

	if (!k)
		return -ENOENT;
	*attr = k->ev;
	return 0;
}

void smp_decoder(const struct sampler *s, struct perf_rec_attr attrs[COLLECT_MAX_EVENTS],
		 struct perf_decoder *d)
{
	for (unsigned i = 0; i < COLLECT_MAX_EVENTS; i++) {
		const struct collect_event *ev = i < s->cfg.nevents ? s->cfg.events[i] : NULL;

		memset(&attrs[i], 0, sizeof(attrs[i]));
		attrs[i].sample_type = s->sample_type;
		if (ev && (ev->flags & COLLECT_EV_BRANCHES)) {
			attrs[i].sample_type |= PERF_SAMPLE_BRANCH_STACK;
			attrs[i].branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
		}
		if (ev && (ev->flags & COLLECT_EV_RAW))
			attrs[i].sample_type |= PERF_SAMPLE_RAW;
		attrs[i].regs_user = (s->sample_type & PERF_SAMPLE_REGS_USER) ?
				     1ULL << SMP_X86_FLAGS : 0;
		attrs[i].read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
				       PERF_FORMAT_TOTAL_TIME_RUNNING;
		attrs[i].sample_id_all = 1;
	}
	memset(d, 0, sizeof(*d));
	d->attrs = attrs;
	d->nattrs = COLLECT_MAX_EVENTS;
	d->attr_of_id = smp_attr_of_id;
	d->id_ctx = (void *)s;
	d->what = "perf ring buffer";
	perf_decoder_init(d);
}

void smp_sample_from(const struct perf_sample *ps, struct smp_sample *out)
{
	uint64_t flags;

	out->ev = ps->attr;
	out->ip = ps->ip;
	out->pid = ps->pid;
	out->tid = ps->tid;
	out->time = ps->time;
	out->period = ps->period;
	out->user = (ps->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	out->stepped = 0;
	if (ps->regs_abi && ps->nregs_user) {	/* the one register: flags */
		memcpy(&flags, ps->regs_user, 8);
		/* a kernel sample of a stepped thread is the step's trap and
		 * signal delivery: the runtime's cost too */
		out->stepped = !!(flags & SMP_TF);
	}
}

/* Kept for its callers (tests/test_record.c): one sample through the one
 * decoder (collect/perf_session.c). */
int smp_parse_sample(const struct sampler *s, const void *rec, struct smp_sample *out)
{
	const struct perf_event_header *h = rec;
	struct perf_rec_attr attrs[COLLECT_MAX_EVENTS];
	struct perf_decoder d;
	struct perf_sample ps;

	if (h->type != PERF_RECORD_SAMPLE ||
	    (s->sample_type & ~(uint64_t)PERF_SAMPLE_REGS_USER) != SMP_SAMPLE_TYPE ||
	    h->size < sizeof(*h))
		return -EINVAL;
	smp_decoder(s, attrs, &d);
	if (perf_sample_parse(&d, rec, h->size, 0, &ps, NULL))
		return -EINVAL;
	if (ps.attr == PERF_ATTR_NONE)
		return -ENOENT;
	smp_sample_from(&ps, out);
	return 0;
}
