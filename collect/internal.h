/*
 * collect/internal.h - the collector's parts as collect_record() wires them:
 *
 *   sampler.c    perf_event_open per CPU on the command, ring buffers, and
 *                batches of records in time order (the paper's driver, 4.2)
 *   maps.c       each process's executable mappings and the images they name,
 *                so a (pid, pc) becomes an (image, file offset) (4.3.2)
 *   aggregate.c  a hash table of (image, offset) counts flushed into one
 *                profile per (image, event) (4.3.1)
 *   events.c     the event table
 *   record.c     fork, exec, the drain loop, the epoch
 */
#ifndef DCPI_COLLECT_INTERNAL_H
#define DCPI_COLLECT_INTERNAL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dcpi/collect.h"
#include "dcpi/profile.h"

/* --- sampler.c ------------------------------------------------------------ */

struct smp_ring {
	int fd;
	int cpu;
	void *base;		/* the control page, data follows */
	size_t size;		/* data bytes, a power of two */
};

struct sampler {
	struct smp_ring *rings;
	struct pollfd *pfd;
	int n;
	uint64_t sample_type;
};

/* A drained batch: record bytes copied out of the rings, in time order. */
struct smp_rec {
	uint64_t time;
	size_t off;		/* into smp_batch.buf */
	size_t seq;		/* arrival order, to keep the sort stable */
};

struct smp_batch {
	uint8_t *buf;
	size_t len, cap;
	struct smp_rec *r;
	size_t n, ncap;
};

/* What the collector reads from a PERF_RECORD_SAMPLE. */
struct smp_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t period;
	int user;		/* the pc is in user space */
};

/* Open ev on pid (created stopped: enable_on_exec) on every online CPU. */
int smp_open(struct sampler *s, const struct collect_event *ev, uint64_t period,
	     uint64_t freq, pid_t pid, unsigned pages, struct dcpi_err *err);
void smp_close(struct sampler *s);
/* Wait up to timeout_ms for data; 0, or -errno (-EINTR is not an error). */
int smp_wait(struct sampler *s, int timeout_ms);
/* Copy every available record into b (emptied first), sorted by time. */
int smp_drain(struct sampler *s, struct smp_batch *b, struct dcpi_err *err);
void smp_batch_free(struct smp_batch *b);
/* Decode a PERF_RECORD_SAMPLE of the layout smp_open asked for. */
int smp_parse_sample(const struct sampler *s, const void *rec, struct smp_sample *out);
/* The perf_event_attr for ev (shared with the probe). */
struct perf_event_attr;
void smp_attr_init(struct perf_event_attr *a, const struct collect_event *ev,
		   uint64_t period, uint64_t freq);
long smp_perf_open(struct perf_event_attr *a, pid_t pid, int cpu);
/* Explain a perf_event_open errno for event name. */
int smp_open_error(struct dcpi_err *err, int e, const char *name);

/* --- maps.c ---------------------------------------------------------------- */

#define MAPS_UNKNOWN 0		/* image index of the "unknown" image */

struct maps;

int maps_new(struct maps **out, struct dcpi_err *err);
void maps_free(struct maps *m);
int maps_mmap(struct maps *m, uint32_t pid, uint64_t start, uint64_t len,
	      uint64_t pgoff, const char *filename, struct dcpi_err *err);
int maps_fork(struct maps *m, uint32_t pid, uint32_t ppid, struct dcpi_err *err);
void maps_exec(struct maps *m, uint32_t pid);
void maps_exit(struct maps *m, uint32_t pid);
/* Forget processes that exited before the batch just processed. */
void maps_reap(struct maps *m);
/* (pid, ip) -> (image index, file offset); MAPS_UNKNOWN when unmapped. */
int maps_resolve(struct maps *m, uint32_t pid, uint64_t ip, uint32_t *image,
		 uint64_t *offset, struct dcpi_err *err);
const struct prof_image_id *maps_image(const struct maps *m, uint32_t image);

/* --- aggregate.c ------------------------------------------------------------ */

struct agg;

int agg_new(struct agg **out, struct dcpi_err *err);
void agg_free(struct agg *a);
int agg_add(struct agg *a, uint32_t image, uint64_t offset, uint64_t count,
	    struct dcpi_err *err);
/*
 * Write one profile per image into epoch, each a copy of tmpl (event,
 * period, unit) filled with that image's counts.  *samples gets the total.
 */
int agg_flush(struct agg *a, const struct maps *m, const struct prof_profile *tmpl,
	      struct prof_db *db, const char *epoch, uint64_t *samples,
	      struct dcpi_err *err);

#endif /* DCPI_COLLECT_INTERNAL_H */
