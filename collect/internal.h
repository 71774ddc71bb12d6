/*
 * collect/internal.h - the collector's parts as collect_record() wires them:
 *
 *   sampler.c    perf_event_open per CPU on the command, ring buffers, and
 *                batches of records in time order (the paper's driver, 4.2)
 *   maps.c       each process's executable mappings and the images they name,
 *                so a (pid, pc) becomes an (image, file offset) (4.3.2)
 *   aggregate.c  a hash table of (image, event, offset) counts flushed into
 *                one profile per (image, event) (4.3.1)
 *   perf_session.c  the one decoder of perf records, behind callbacks
 *                (include/dcpi/perf_records.h; the importer uses it too)
 *   events.c     the event table
 *   random.c     the random sampling periods (4.1.1)
 *   calibrate.c  what one sample is worth in cycles (docs/architecture.md "Units")
 *   record.c     fork, exec, the drain loop, the epoch
 *   daemon.c     dcpid: every CPU, every process, flushes and epochs (4.3)
 */
#ifndef DCPI_COLLECT_INTERNAL_H
#define DCPI_COLLECT_INTERNAL_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dcpi/collect.h"
#include "dcpi/perf_records.h"
#include "dcpi/phase.h"
#include "dcpi/profile.h"
#include "dcpi/slices.h"

/* --- random.c ------------------------------------------------------------- */

struct rnd {
	uint64_t s[4];		/* xoshiro256** */
	uint64_t seed;
};

/* Seed from seed, or from the kernel when seed is 0. */
void rnd_init(struct rnd *r, uint64_t seed);
uint64_t rnd_next(struct rnd *r);
/* A period drawn uniformly from [period - period/16, period] (sec. 4.1.1). */
uint64_t rnd_period(struct rnd *r, uint64_t period);

/* --- sampler.c ------------------------------------------------------------ */

struct smp_ring {
	int fd;
	int cpu;
	void *base;		/* the control page, data follows */
	size_t size;		/* data bytes, a power of two */
};

/* One counter: an event on a CPU.  Every counter of a CPU writes into that
 * CPU's ring (PERF_EVENT_IOC_SET_OUTPUT); samples carry its id. */
struct smp_counter {
	int fd;
	int cpu;
	unsigned ev;		/* index into smp_config.events */
	uint64_t id;
};

struct smp_config {
	const struct collect_event *const *events;
	unsigned nevents;
	uint64_t period;	/* 0 = each event's default */
	uint64_t freq;
	pid_t pid;		/* -1: every process (system-wide) */
	unsigned pages;
	int kernel;		/* sample kernel code too */
	int randomize;		/* redraw periods in smp_randomize() */
	uint64_t seed;
	int callchain;		/* PERF_SAMPLE_CALLCHAIN, user frames only */
	/* Attach (collect/attach.c): one counter per thread and CPU, enabled
	 * at once, inherited by the threads and processes they start when
	 * attach_inherit. */
	const pid_t *tids;
	size_t ntids;
	int attach_inherit;
};

struct sampler {
	struct perf_event_attr attr[COLLECT_MAX_EVENTS];	/* as opened */
	struct smp_ring *rings;
	struct pollfd *pfd;
	int n;
	struct smp_counter *ctr;	/* sorted by id once open */
	int nctr, ctr_cap;
	uint64_t sample_type;
	struct smp_config cfg;
	struct rnd rnd;
	int kernel;		/* kernel code is sampled */
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
	unsigned ev;		/* which event */
	int user;		/* the pc is in user space */
	int stepped;		/* taken in a path burst: user flags hold TF */
};

/* Counts of one event summed over its counters (PERF_FORMAT_TOTAL_TIME_*):
 * running < enabled when the PMU multiplexed it; value * enabled / running
 * estimates the full count. */
struct smp_count {
	uint64_t value, enabled, running;
};

/*
 * Open every event of c on every online CPU.  A command (pid > 0) gets
 * counters created stopped with enable_on_exec and inherit; system-wide
 * (pid -1) counters start at once, without inherit.
 */
int smp_open(struct sampler *s, const struct smp_config *c, struct dcpi_err *err);
void smp_close(struct sampler *s);
/* Draw a new random period for every counter (no-op unless randomize). */
int smp_randomize(struct sampler *s, struct dcpi_err *err);
/* Sum each event's counters: out[0..nevents). */
int smp_read_counts(struct sampler *s, struct smp_count *out, struct dcpi_err *err);
/* Wait up to timeout_ms for data; 0, or -errno (-EINTR is not an error). */
int smp_wait(struct sampler *s, int timeout_ms);
/* Copy every available record into b (emptied first), sorted by time. */
int smp_drain(struct sampler *s, struct smp_batch *b, struct dcpi_err *err);
void smp_batch_free(struct smp_batch *b);
/* Decode a PERF_RECORD_SAMPLE of the layout smp_open asked for (a thin
 * wrapper of perf_sample_parse and smp_sample_from). */
int smp_parse_sample(const struct sampler *s, const void *rec, struct smp_sample *out);
/* The decoder of s's rings (include/dcpi/perf_records.h): one attribute per
 * event index, a sample's id naming its event through the counters. */
void smp_decoder(const struct sampler *s, struct perf_rec_attr attrs[COLLECT_MAX_EVENTS],
		 struct perf_decoder *d);
/* What the collector keeps of a decoded sample (ev = its attribute). */
void smp_sample_from(const struct perf_sample *ps, struct smp_sample *out);
/* The perf_event_attr for ev (shared with the probe and calibration). */
struct perf_event_attr;
void smp_attr_init(struct perf_event_attr *a, const struct collect_event *ev,
		   uint64_t period, uint64_t freq);
long smp_perf_open(struct perf_event_attr *a, pid_t pid, int cpu);
/* Explain a perf_event_open errno for event name. */
int smp_open_error(struct dcpi_err *err, int e, const char *name);
/* kernel.perf_event_paranoid, kernel.kptr_restrict (-100 when unreadable). */
int smp_sysctl(const char *name);

/* --- calibrate.c ------------------------------------------------------------ */

struct cal_result {
	double cycles_per_ns;		/* core clock, from a dependent-add chain */
	double tsc_per_ns;		/* the TSC's rate, which may differ */
	double cycles_per_sample;	/* loop cycles / samples it received */
	double cps_first, cps_last;	/* the first cal_sample's own figure (the
					 * start's) and the latest's (the end's) */
	uint64_t loop_cycles, samples;
	/* cal_exposure: the chase's steps, its samples, those in its loop and
	 * those on its witness, its cycles a step, its time */
	uint64_t exp_steps, exp_samples, exp_in_loop, exp_witness, exp_ns;
	double exp_cycles_per_step;
};

/* Measure the core clock (no sampling). */
int cal_clock(struct cal_result *r, struct dcpi_err *err);
/*
 * Run ms milliseconds of the known-cycle loop in this process sampled with
 * ev as c would sample it; adds to r->loop_cycles and r->samples and sets
 * r->cycles_per_sample.  Needs r->cycles_per_ns from cal_clock().
 */
int cal_sample(struct cal_result *r, const struct collect_event *ev,
	       const struct smp_config *c, struct rnd *rnd, unsigned ms,
	       struct dcpi_err *err);

/*
 * Run about ms milliseconds of a chase whose loaded index the next
 * instruction waits on, sampled with ev as c would sample it, and count the
 * samples on the instruction after that waiter (estimate/destall.c's
 * witness): sets r->exp_*.  Needs r->cycles_per_ns from cal_clock().
 */
int cal_exposure(struct cal_result *r, const struct collect_event *ev,
		 const struct smp_config *c, struct rnd *rnd, unsigned ms,
		 struct dcpi_err *err);

/* --- maps.c: in include/dcpi/collect.h (the importers use it too) --------- */

/* --- aggregate.c: in include/dcpi/collect.h (the importers use it too) --- */

/* --- phase.c: a session's time slices and phases (include/dcpi/slices.h) -- */

struct sess_slices {
	uint64_t slice_ns;		/* 0: none kept */
	uint64_t cur;			/* the slice being counted */
	int started;
	struct slice_profile *img;	/* by image index (maps.c) */
	size_t nimg;
	struct slice_bound *b;		/* declared since the last write */
	size_t nb, capb;
	uint64_t bounds;		/* declared in all */
	struct phase_det *det;
};

int ssl_init(struct sess_slices *t, uint64_t slice_ns, struct dcpi_err *err);
void ssl_free(struct sess_slices *t);
/* The aggregation table's interval counts into the current slice. */
int ssl_take(struct sess_slices *t, struct agg *a, struct dcpi_err *err);
/* ... and end it (the detector judges it); next is the slice that starts. */
int ssl_end(struct sess_slices *t, struct agg *a, uint64_t next, struct dcpi_err *err);
typedef const struct prof_image_id *ssl_image_fn(void *ctx, uint32_t image);
/* Every image's slices, with the boundaries, into epoch (merging). */
int ssl_write(struct sess_slices *t, const char *event, ssl_image_fn *id, void *ctx,
	      struct prof_db *db, const char *epoch, struct dcpi_err *err);
/* Forget what was written. */
void ssl_clear(struct sess_slices *t);

/* --- session.c -------------------------------------------------------------- */

#define SESS_RANDOM_MS 10	/* how often the random periods are redrawn */
#define SESS_CAL_MS 50		/* calibration loop at start and at end */
#define SESS_EXP_MS 100		/* the exposure's chase, at start (cal_exposure) */

/* What record and the daemon share: the sampler, maps, one table per event,
 * the counts the settings report, and the calibration. */
struct session {
	const struct collect_opts *opts;
	const struct collect_event *ev[COLLECT_MAX_EVENTS];
	unsigned nev;
	struct smp_config cfg;
	struct sampler smp;
	int open;
	int kernel, nrings;	/* as opened, kept after the sampler closes */
	struct smp_batch batch;
	struct maps *maps;
	struct perf_rec_attr rattr[COLLECT_MAX_EVENTS];
	struct perf_decoder dec;	/* the rings' records (perf_session.c) */
	struct agg *agg;		/* (image, event, offset) counts */
	struct hashtab *ht;	/* first-level (pid, pc, event) counts (hashtab.h) */
	struct cg_table *cg;	/* call chains (callchain.c); NULL without -g */
	uint64_t ht_samples, ht_entries;	/* into the table, out of it */
	uint64_t ev_samples[COLLECT_MAX_EVENTS], period_sum[COLLECT_MAX_EVENTS];
	uint64_t samples, unknown, lost, throttled, self;
	uint64_t stepped;	/* taken inside path bursts, left out */
	uint64_t foreign;	/* a per-CPU event's samples of other processes */
	uint32_t self_pid;		/* samples of this pid are left out; 0 = none */
	struct smp_count counts[COLLECT_MAX_EVENTS];
	struct cal_result cal;
	struct rnd cal_rnd;
	int calibrated;
	uint64_t randomized_ns;
	struct sess_slices sl;		/* time slices, phases (phase.c) */
	struct hw_spool *hw;		/* hardware evidence (hwspool.c), or NULL */
	int tee;			/* the record just delivered goes to hw */
	uint32_t tee_pid;		/* its process */
};

int sess_init(struct session *s, const struct collect_opts *o, struct dcpi_err *err);
void sess_free(struct session *s);
/* Calibrate (no-op with opts->no_calibrate); call at start and at end. */
int sess_calibrate(struct session *s, struct dcpi_err *err);
int sess_open(struct session *s, pid_t pid, int kernel, struct dcpi_err *err);
/* Drain the rings into the maps and tables; redraw periods when due. */
int sess_drain(struct session *s, struct dcpi_err *err);
/* The same for records back to back in buf, as the rings hold them (the
 * tests feed the live path's callbacks this way). */
int sess_feed(struct session *s, const uint8_t *buf, size_t len, struct dcpi_err *err);
/* Read the counters' totals into s->counts (before closing them). */
int sess_read_counts(struct session *s, struct dcpi_err *err);
/* Write every table into epoch (merging) and clear them; *written samples. */
int sess_flush(struct session *s, struct prof_db *db, const char *epoch,
	       uint64_t *written, struct dcpi_err *err);
/* sess_flush in two steps: write every table (inside the caller's epoch
 * transaction), then, once it committed, forget what was written. */
int sess_write(struct session *s, struct prof_db *db, const char *epoch,
	       uint64_t *written, struct dcpi_err *err);
void sess_clear(struct session *s);
/* The hardware evidence into epoch (inside the caller's transaction),
 * through opts->hw_import; what it did into note.  A failed import is a
 * note, the file kept beside the database, never an error that loses the
 * epoch: returns 0. */
int sess_hw_import(struct session *s, struct prof_db *db, const char *epoch, char *note,
		   size_t len, uint64_t *samples);
/* A new file for the next epoch's evidence (dcpid: after each flush). */
int sess_hw_restart(struct session *s, struct dcpi_err *err);
/* Distinct entries and samples the tables hold, not yet written. */
void sess_held(const struct session *s, uint64_t *entries, uint64_t *samples);
/* The settings line of the epoch metadata; fills meta's calibration. */
void sess_describe(const struct session *s, char *buf, size_t len,
		   struct prof_epoch_meta *meta);
/* printf at the end of buf's string, cut at len. */
void col_appendf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- hwspool.c: hardware evidence as a perf.data ------------------------------ */

struct hw_spool;
struct hws_event {
	struct perf_event_attr attr;
	const char *name;
	const uint64_t *ids;
	size_t nids;
};

/* A new file in dir (O_EXCL, a temporary name); -errno with err filled. */
int hws_open(struct hw_spool **out, const char *dir, struct dcpi_err *err);
int hws_add(struct hw_spool *h, const void *rec, size_t size, struct dcpi_err *err);
/* Write the attributes, names and ids of the n events and the header. */
int hws_finish(struct hw_spool *h, const struct hws_event *ev, unsigned n, const char *vendor,
	       struct dcpi_err *err);
/* pid's mappings are in the file (its MMAP2, COMM or FORK went in);
 * hws_has: are they? */
int hws_seen(struct hw_spool *h, uint32_t pid, struct dcpi_err *err);
int hws_has(const struct hw_spool *h, uint32_t pid);
/* Unless seen: pid's executable mappings from /proc/PID/maps as MMAP2
 * records (a process running before the recording: attach, dcpid), with
 * the sample_id of counter id. */
int hws_synth(struct hw_spool *h, uint32_t pid, uint64_t id, struct dcpi_err *err);
const char *hws_path(const struct hw_spool *h);
uint64_t hws_samples(const struct hw_spool *h);
/* Close; remove: unlink the file (it was ours: hws_open created it). */
void hws_free(struct hw_spool *h, int remove);

/* --- record.c ---------------------------------------------------------------- */

/* In a forked child, exec argv; should that fail, its errno goes down fd
 * (the write end of a close-on-exec pipe: nothing comes when the exec
 * works) and the child exits 127 (126: the write failed too). */
void rec_exec(char *const argv[], int fd) __attribute__((noreturn));
/* The parent's side: what rec_exec sent down fd (the read end, closed
 * after) into *e, retrying on EINTR; read's result. */
ssize_t rec_exec_read(int fd, int *e);

/* The session's tables and meta as a new epoch (attach.c writes its own so). */
struct collect_result;
int rec_write_epoch(struct session *s, struct prof_db *db, struct prof_epoch_meta *meta,
		    struct collect_result *res, struct dcpi_err *err);

#endif /* DCPI_COLLECT_INTERNAL_H */
