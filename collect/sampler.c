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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "internal.h"

#define SMP_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_PERIOD)

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

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -100;

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
				 name, read_paranoid());
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

static int open_ring(struct smp_ring *r, struct perf_event_attr *a, pid_t pid,
		     size_t pages, const char *name, struct dcpi_err *err)
{
	long pg = sysconf(_SC_PAGESIZE);
	long fd = smp_perf_open(a, pid, r->cpu);
	void *base;

	if (fd < 0) {
		if (errno == ENODEV)	/* went offline since we looked */
			return 1;
		return smp_open_error(err, errno, name);
	}
	r->fd = (int)fd;
	r->size = pages * (size_t)pg;
	base = mmap(NULL, r->size + (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (base == MAP_FAILED) {
		int e = errno;

		close(r->fd);
		r->fd = -1;
		return dcpi_errf(err, -e, "%s: ring buffer of %zu KiB on cpu %d: %s%s", name,
				 r->size / 1024, r->cpu, strerror(e),
				 e == EPERM ? " (kernel.perf_event_mlock_kb?)" : "");
	}
	r->base = base;
	return 0;
}

int smp_open(struct sampler *s, const struct collect_event *ev, uint64_t period,
	     uint64_t freq, pid_t pid, unsigned pages, struct dcpi_err *err)
{
	struct perf_event_attr a;
	int *cpus = NULL, ncpu = 0, ret;

	memset(s, 0, sizeof(*s));
	if (!pages)
		pages = 128;
	if (pages & (pages - 1))
		return dcpi_errf(err, -EINVAL, "ring buffer of %u pages: not a power of two",
				 pages);
	if (online_cpus(&cpus, &ncpu))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", ev->name);
	s->rings = calloc((size_t)ncpu, sizeof(*s->rings));
	s->pfd = calloc((size_t)ncpu, sizeof(*s->pfd));
	if (!s->rings || !s->pfd) {
		ret = dcpi_errf(err, -ENOMEM, "%s: out of memory", ev->name);
		goto fail;
	}
	smp_attr_init(&a, ev, period, freq);
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	s->sample_type = a.sample_type;
	for (int i = 0; i < ncpu; i++) {
		struct smp_ring *r = &s->rings[s->n];

		r->fd = -1;
		r->cpu = cpus[i];
		ret = open_ring(r, &a, pid, pages, ev->name, err);
		if (ret < 0)
			goto fail;
		if (ret > 0)
			continue;
		s->pfd[s->n].fd = r->fd;
		s->pfd[s->n].events = POLLIN;
		s->n++;
	}
	free(cpus);
	if (!s->n)
		return dcpi_errf(err, -ENODEV, "%s: no online CPU to sample on", ev->name);
	return 0;
fail:
	free(cpus);
	smp_close(s);
	return ret;
}

void smp_close(struct sampler *s)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < s->n; i++) {
		if (s->rings[i].base)
			munmap(s->rings[i].base, s->rings[i].size + (size_t)pg);
		if (s->rings[i].fd >= 0)
			close(s->rings[i].fd);
	}
	free(s->rings);
	free(s->pfd);
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

/* The record's timestamp: in the body of a sample, else in the sample_id
 * trailer that sample_id_all appends (TID then TIME: TIME ends it). */
static uint64_t rec_time(const uint8_t *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t t = 0;

	if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24)
		memcpy(&t, rec + sizeof(*h) + 16, 8);
	else if (h->type != PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 16)
		memcpy(&t, rec + h->size - 8, 8);
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

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int smp_drain(struct sampler *s, struct smp_batch *b, struct dcpi_err *err)
{
	int ret = 0;

	b->len = 0;
	b->n = 0;
	for (int i = 0; i < s->n && !ret; i++)
		ret = drain_ring(&s->rings[i], b, err);
	if (b->n > 1)
		qsort(b->r, b->n, sizeof(*b->r), rec_cmp);
	return ret;
}

void smp_batch_free(struct smp_batch *b)
{
	free(b->buf);
	free(b->r);
	memset(b, 0, sizeof(*b));
}

int smp_parse_sample(const struct sampler *s, const void *rec, struct smp_sample *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *p = (const uint8_t *)rec + sizeof(*h);
	uint32_t ids[2];

	if (h->type != PERF_RECORD_SAMPLE || s->sample_type != SMP_SAMPLE_TYPE ||
	    h->size < sizeof(*h) + 32)
		return -EINVAL;
	memcpy(&out->ip, p, 8);
	memcpy(ids, p + 8, 8);
	out->pid = ids[0];
	out->tid = ids[1];
	memcpy(&out->time, p + 16, 8);
	memcpy(&out->period, p + 24, 8);
	out->user = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	return 0;
}
