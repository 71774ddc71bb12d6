/*
 * collect/hwspool.c - the hardware evidence of a recording (branch stacks,
 * IBS op samples; collect/pmu.c) kept as a perf.data file, so that the one
 * importer of such records (import/perf.c: AutoFDO's range and branch
 * counting, the known LBR quirks, IBS decoding) turns them into the epoch's
 * counts, and `perf script -i` can read what was taken.
 *
 * The records are the rings' own, copied as they are drained: the side-band
 * (MMAP2, COMM, FORK, EXIT, LOST) and the samples of evidence events.  The
 * layout is perf's (tools/perf/util/header.c): the 104-byte header, the data
 * section, the feature table right after it (EVENT_DESC names the events,
 * CPUID the vendor), the features, each attribute's ids, the attributes.
 * The file is created O_EXCL in the database's folder under a temporary
 * name and removed once imported; a failed import leaves it, named, for
 * `dcpi import` later (docs/collect.md, "Hardware evidence").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "dcpi/safefile.h"
#include "internal.h"

#define HWS_HEADER	104
#define FEAT_CPUID	9
#define FEAT_EVENT_DESC	12

struct hw_spool {
	int fd;
	char path[1024];
	uint64_t data;		/* data bytes written */
	uint64_t samples;
	uint32_t *seen;		/* pids whose mappings the file has, sorted */
	size_t nseen, cap;
};

int hws_open(struct hw_spool **out, const char *dir, struct dcpi_err *err)
{
	struct hw_spool *h = calloc(1, sizeof(*h));
	uint8_t zero[HWS_HEADER] = { 0 };
	char tmp[256];
	int dfd;

	if (!h)
		return dcpi_errf(err, -ENOMEM, "hardware evidence: out of memory");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	h->fd = dfd < 0 ? -errno : dcpi_create_temp(dfd, "hw.perf.data", tmp, sizeof(tmp), 0600);
	if (dfd >= 0)
		close(dfd);
	if (h->fd < 0) {
		int e = h->fd;

		free(h);
		return dcpi_errf(err, e, "%s: hardware evidence file: %s", dir, strerror(-e));
	}
	snprintf(h->path, sizeof(h->path), "%s/%s", dir, tmp);
	if (dcpi_write_full(h->fd, zero, sizeof(zero))) {
		int e = -errno;

		dcpi_errf(err, e, "%s: %s", h->path, strerror(-e));
		hws_free(h, 1);
		return e;
	}
	*out = h;
	return 0;
}

const char *hws_path(const struct hw_spool *h)
{
	return h->path;
}

uint64_t hws_samples(const struct hw_spool *h)
{
	return h ? h->samples : 0;
}

int hws_add(struct hw_spool *h, const void *rec, size_t size, struct dcpi_err *err)
{
	const struct perf_event_header *eh = rec;

	if (dcpi_write_full(h->fd, rec, size))
		return dcpi_errf(err, -errno, "%s: %s", h->path, strerror(errno));
	h->data += size;
	h->samples += eh->type == PERF_RECORD_SAMPLE;
	return 0;
}

/* Is pid's side-band in the file (seen, or synthesized)?  A sorted set. */
static int seen_pos(const struct hw_spool *h, uint32_t pid, size_t *at)
{
	size_t lo = 0, hi = h->nseen;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->seen[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < h->nseen && h->seen[lo] == pid;
}

static int seen_add(struct hw_spool *h, uint32_t pid)
{
	size_t at;

	if (seen_pos(h, pid, &at))
		return 0;
	if (dcpi_grow((void **)&h->seen, &h->cap, h->nseen + 1, sizeof(*h->seen)))
		return -ENOMEM;
	memmove(h->seen + at + 1, h->seen + at, (h->nseen - at) * sizeof(*h->seen));
	h->seen[at] = pid;
	h->nseen++;
	return 0;
}

int hws_has(const struct hw_spool *h, uint32_t pid)
{
	size_t at;

	return seen_pos(h, pid, &at);
}

int hws_seen(struct hw_spool *h, uint32_t pid, struct dcpi_err *err)
{
	if (seen_add(h, pid))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", h->path);
	return 0;
}

struct synth {
	struct hw_spool *h;
	uint32_t pid;
	uint64_t id;
	struct dcpi_err *err;
};

/* One MMAP2 of a file mapped by pid, time 0 (the importer sorts by time:
 * before every sample), with the sample_id trailer (pid, tid, time, id). */
static int synth_one(void *arg, uint64_t start, uint64_t end, uint64_t pgoff, const char *name)
{
	const struct synth *s = arg;
	uint8_t rec[8 + 64 + 4096 + 24];
	size_t nlen = (strlen(name) + 1 + 7) & ~(size_t)7, at = 8;
	uint64_t v[3] = { start, end - start, pgoff };
	uint32_t prot[2] = { 5, 2 };	/* r-x, private */
	struct perf_event_header eh = { PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER,
					(uint16_t)(8 + 64 + nlen + 24) };

	if (name[0] != '/' || nlen > 4096)
		return 0;	/* [vdso], [stack]: no file the importer opens */
	memset(rec, 0, sizeof(rec));
	memcpy(rec, &eh, 8);
	memcpy(rec + at, &s->pid, 4), memcpy(rec + at + 4, &s->pid, 4);
	memcpy(rec + at + 8, v, 24);
	memcpy(rec + at + 56, prot, 8);	/* after maj, min, ino, generation */
	at += 64;
	memcpy(rec + at, name, strlen(name));
	at += nlen;
	memcpy(rec + at, &s->pid, 4), memcpy(rec + at + 4, &s->pid, 4);
	memcpy(rec + at + 16, &s->id, 8);
	return hws_add(s->h, rec, eh.size, s->err);
}

int hws_synth(struct hw_spool *h, uint32_t pid, uint64_t id, struct dcpi_err *err)
{
	struct synth s = { h, pid, id, err };
	int ret;

	if (hws_has(h, pid))
		return 0;
	ret = hws_seen(h, pid, err);
	return ret ? ret : maps_proc_exec(pid, synth_one, &s);
}

static void put64(struct dcpi_buf *t, uint64_t v)
{
	dcpi_buf_put(t, &v, 8);
}

static void put32(struct dcpi_buf *t, uint32_t v)
{
	dcpi_buf_put(t, &v, 4);
}

/* A header string: u32 length (padded to 8, NUL included), the bytes. */
static void put_str(struct dcpi_buf *t, const char *s)
{
	uint32_t n = (uint32_t)((strlen(s) + 1 + 7) & ~7ul);
	char pad[8] = { 0 };

	put32(t, n);
	dcpi_buf_put(t, s, strlen(s));
	dcpi_buf_put(t, pad, n - strlen(s));
}

static void put_at(struct dcpi_buf *t, size_t at, uint64_t v)
{
	if (!t->oom)
		memcpy(t->p + at, &v, 8);
}

/*
 * The file's tail, from file offset base (the data's end): the feature
 * table (CPUID, EVENT_DESC: feature-bit order), their bodies, each
 * attribute's ids, the attributes; *attr_off where those start.
 */
static void tail_build(struct dcpi_buf *t, uint64_t base, const struct hws_event *ev, unsigned n,
		       const char *vendor, uint64_t *attr_off)
{
	size_t table, cpuid, desc;
	uint64_t ids_at;
	char id[64];

	table = t->n;
	put64(t, 0), put64(t, 0), put64(t, 0), put64(t, 0);
	cpuid = t->n;
	snprintf(id, sizeof(id), "%s,0,0,0", vendor[0] ? vendor : "unknown");
	put_str(t, id);
	desc = t->n;
	put32(t, n);
	put32(t, sizeof(struct perf_event_attr));
	for (unsigned i = 0; i < n; i++) {
		dcpi_buf_put(t, &ev[i].attr, sizeof(ev[i].attr));
		put32(t, (uint32_t)ev[i].nids);
		put_str(t, ev[i].name);
		for (size_t k = 0; k < ev[i].nids; k++)
			put64(t, ev[i].ids[k]);
	}
	put_at(t, table, base + cpuid);
	put_at(t, table + 8, desc - cpuid);
	put_at(t, table + 16, base + desc);
	put_at(t, table + 24, t->n - desc);
	ids_at = base + t->n;
	for (unsigned i = 0; i < n; i++)
		for (size_t k = 0; k < ev[i].nids; k++)
			put64(t, ev[i].ids[k]);
	*attr_off = base + t->n;
	for (unsigned i = 0; i < n; i++) {
		dcpi_buf_put(t, &ev[i].attr, sizeof(ev[i].attr));
		put64(t, ids_at);
		put64(t, 8 * (uint64_t)ev[i].nids);
		ids_at += 8 * (uint64_t)ev[i].nids;
	}
}

int hws_finish(struct hw_spool *h, const struct hws_event *ev, unsigned n, const char *vendor,
	       struct dcpi_err *err)
{
	uint64_t base = HWS_HEADER + h->data, attr_off = 0, v[13] = { 0 };
	struct dcpi_buf t = { 0 };
	int ret = 0;

	tail_build(&t, base, ev, n, vendor, &attr_off);
	if (t.oom) {
		free(t.p);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", h->path);
	}
	memcpy(v, "PERFILE2", 8);
	v[1] = HWS_HEADER;
	v[2] = sizeof(struct perf_event_attr) + 16;
	v[3] = attr_off;			/* attrs */
	v[4] = (uint64_t)n * v[2];
	v[5] = HWS_HEADER;			/* data */
	v[6] = h->data;
	v[9] = (1ull << FEAT_CPUID) | (1ull << FEAT_EVENT_DESC);	/* adds_features[0] */
	if (dcpi_write_full(h->fd, t.p, t.n) || pwrite(h->fd, v, sizeof(v), 0) != sizeof(v) ||
	    fsync(h->fd))
		ret = dcpi_errf(err, -errno, "%s: %s", h->path, strerror(errno));
	free(t.p);
	return ret;
}

void hws_free(struct hw_spool *h, int remove)
{
	if (!h)
		return;
	if (h->fd >= 0)
		close(h->fd);
	if (remove && h->path[0])
		unlink(h->path);
	free(h->seen);
	free(h);
}
