/*
 * collect.h - the collector: sample a command with perf_event_open and write
 * what it finds into the profile database (DCPI paper sec. 4).
 *
 * The paper's driver and daemon become three parts here: a sampler (one
 * perf_event ring buffer per CPU, sec. 4.2), an image tracker that follows
 * each process's mappings from the kernel's MMAP2/COMM/FORK/EXIT records
 * (sec. 4.3.2), and an aggregator that turns (pid, pc) samples into
 * per-(image, event) counts keyed by file offset (sec. 4.3.1) and flushes
 * them as one epoch of profiles (sec. 4.3.3).
 *
 * Three drivers use them: collect_record() follows one command,
 * collect_attach() processes already running, and
 * collect_daemon() (dcpid) samples every process on every CPU until stopped,
 * flushing into the current epoch every few seconds (sec. 4.3).  Both draw
 * each event's period at random below the nominal one (sec. 4.1.1) and
 * calibrate what one sample is worth in cycles (docs/architecture.md "Units").
 */
#ifndef DCPI_COLLECT_H
#define DCPI_COLLECT_H

#include <signal.h>
#include <stdint.h>

#include "dcpi/util.h"

/* Default periods: about 4 kHz of cpu-clock, or a prime near one million
 * cycles so the period cannot beat with a power-of-two loop. */
#define COLLECT_CLOCK_PERIOD_NS 250000ULL
#define COLLECT_CYCLES_PERIOD 1000003ULL

/* An event the collector knows by name ("cycles", "cpu-clock", ...). */
struct collect_event {
	const char *name;
	uint32_t type;		/* PERF_TYPE_* */
	uint64_t config;	/* PERF_COUNT_* */
	const char *unit;	/* what a period counts: "ns" or "events" */
	uint64_t default_period;
	unsigned flags;		/* COLLECT_EV_*: what a sample carries beyond the pc */
};

/*
 * Hardware evidence (collect/pmu.c): a sample that carries the last taken
 * branches (Intel LBR, AMD BRS / LbrExtV2), or the PMU's raw record (AMD
 * IBS op); an event the kernel takes only per CPU, not per task (the
 * collector then opens it on every CPU for every process and the import
 * keeps the command's).  Samples of such events are kept as a perf.data
 * (collect/hwspool.c) and imported into the epoch (collect_opts.hw_import).
 */
#define COLLECT_EV_BRANCHES	1u
#define COLLECT_EV_RAW		2u
#define COLLECT_EV_CPU_WIDE	4u
#define COLLECT_EV_HW_EVIDENCE	(COLLECT_EV_BRANCHES | COLLECT_EV_RAW)

#define COLLECT_MAX_EVENTS 8

/* The event named name, or NULL when the collector does not know it. */
const struct collect_event *collect_event_find(const char *name);
/* Names of the known events, comma-separated, for messages. */
const char *collect_event_names(void);
/*
 * Whether this machine can sample ev for the calling user: 0, -EOPNOTSUPP
 * (no such counter, e.g. no PMU), -EACCES (perf_event_paranoid), or another
 * negative errno.  err names the event and the reason.
 */
int collect_event_probe(const struct collect_event *ev, struct dcpi_err *err);
/*
 * What one sample of event every period is worth in cycles on this machine,
 * overhead included: runs the known-cycle loop ms milliseconds (0: 100)
 * sampled that way in the calling process, as `dcpi record` does (used by
 * `dcpi import` for a perf.data recorded on this host).  Also the core clock.
 */
int collect_calibrate(const char *event, uint64_t period, unsigned ms, double *cycles_per_sample,
		      double *cycles_per_ns, struct dcpi_err *err);
/*
 * cycles when this machine can sample it, else cpu-clock: 0, 1 when it fell
 * back to cpu-clock (no PMU), or a negative errno (err says why).
 */
int collect_event_default(const struct collect_event **out, struct dcpi_err *err);
/* "cycles,branch-misses" -> out[0..*n); unknown or repeated names are errors. */
int collect_events_parse(const char *list, const struct collect_event **out,
			 unsigned *n, struct dcpi_err *err);

/*
 * What this machine's PMU offers (collect/pmu.c, docs/collect.md "Hardware
 * evidence"), found from sysfs and /proc/cpuinfo under a root ("/" on the
 * machine, a constructed tree in tests) and confirmed by opening each event
 * through open (perf_event_open; a stand-in in tests).
 */
struct perf_event_attr;
typedef long (*collect_open_fn)(struct perf_event_attr *a, int pid, int cpu, void *arg);

struct collect_pmu {
	char vendor[16];		/* "AMD", "Intel" or "" */
	int hardware;			/* cycles and instructions can be sampled */
	unsigned branch_depth;		/* caps/branches: stack entries, 0 = none */
	char branch_kind[8];		/* "lbr", "brs", "lbrv2" or "" */
	int branches;			/* the taken-branch event with stacks opened */
	int ibs_op_type;		/* the ibs_op PMU's type, -1 = none */
	int ibs;			/* ibs_op opened */
	int ibs_cpu_wide;		/* only per CPU (the kernel refused per task) */
	/* the events that carry them, made for this machine */
	struct collect_event branch_ev, ibs_ev;
	char why[256];			/* what was not taken and why, for the settings */
};

/* Find and confirm what root's machine offers; 0 even when it is nothing
 * (a VM: hardware 0).  open NULL = perf_event_open. */
int collect_pmu_detect(const char *root, collect_open_fn open, void *arg,
		       struct collect_pmu *p, struct dcpi_err *err);
/* The events a recording takes by default on p's machine: cycles,
 * instructions, the taken branches with their stacks, ibs_op; cpu-clock
 * alone without a PMU.  *n <= COLLECT_MAX_EVENTS. */
void collect_pmu_events(const struct collect_pmu *p, const struct collect_event **out,
			unsigned *n);
/* One line: what was taken ("cycles, instructions, branch stacks (lbr, 32
 * entries), ibs_op") or "no PMU (cpu-clock)", and what was not and why. */
void collect_pmu_describe(const struct collect_pmu *p, char *buf, size_t len);
/* The attribute the collector opens for ev (shared by the sampler, the
 * probe and the tests): kernel = kernel code sampled too. */
void collect_event_attr(struct perf_event_attr *a, const struct collect_event *ev,
			uint64_t period, uint64_t freq, int kernel);

struct prof_db;

/* Hardware evidence into the epoch being written: the tool gives the
 * importer (tools/cmd_record.c: import_perf_opts into an open epoch);
 * note gets what it did, for the tool to print. */
typedef int (*collect_hw_import_fn)(const char *perf_data, struct prof_db *db,
				    const char *epoch, char *note, size_t len,
				    struct dcpi_err *err);

struct collect_opts {
	const struct collect_event *event;	/* one event, when nevents is 0 */
	const struct collect_event *events[COLLECT_MAX_EVENTS];
	unsigned nevents;	/* sampled at once, each on its own counter */
	uint64_t period;	/* events (or ns) per sample; 0 = event default */
	uint64_t freq;		/* samples per second instead of a period; 0 = off */
	const char *db_dir;	/* the database, created if absent */
	unsigned ring_pages;	/* data pages per CPU ring (power of 2); 0 = 128 */
	/*
	 * Where the caller's signal handler stores SIGINT/SIGTERM (or NULL):
	 * the collector forwards it to the command and keeps draining, so
	 * nothing already sampled is lost.
	 */
	volatile sig_atomic_t *pending_signal;
	/*
	 * Each period is drawn at random from [period * 15/16, period] and
	 * redrawn every few milliseconds, so sampling cannot lock onto a loop
	 * (DCPI sec. 4.1.1).  fixed_period turns that off.  seed 0 seeds from
	 * the kernel; the seed used is in the settings.
	 */
	int fixed_period;
	uint64_t seed;
	int no_calibrate;	/* skip the calibration loops (about 0.2 s) */
	/*
	 * Path samples (record only; docs/paths.md): paths_rate bursts per
	 * second of each thread's CPU time, paths_steps single steps each;
	 * rate 0 = none.  paths_lib: the preloaded runtime, NULL = found
	 * beside the executable.
	 */
	unsigned paths_rate, paths_steps;
	const char *paths_lib;
	/* Value samples (docs/values.md): the paths' steps also carry the
	 * registers, made into value hotlists per instruction.  Needs paths.
	 * latency: also a timed re-load of each decoded load's address
	 * (docs/values.md says what it can and cannot see). */
	int values, latency;
	/* The marking plan file (docs/values.md, "Marking plan"; with values),
	 * as collect_plan_resolve found it, or NULL. */
	const char *plan;
	/* Keep no time slices (include/dcpi/slices.h) and detect no phases. */
	int no_slices;
	/* User call chains by frame pointers (docs/callgraph.md). */
	int callchain;
	/* Kernel code is sampled too (image "[kernel.kallsyms]", named from
	 * /proc/kallsyms by the reports) when perf_event_paranoid lets this
	 * user; no_kernel leaves it out (exclude_kernel). */
	int no_kernel;
	/* Samples of COLLECT_EV_HW_EVIDENCE events: kept as a perf.data in
	 * hw_spool_dir (NULL: the database's folder) and given to hw_import
	 * before the epoch commits; without hw_import they are only counted. */
	collect_hw_import_fn hw_import;
	const char *hw_spool_dir;
	const char *hw_vendor;	/* collect_pmu.vendor: the file's CPUID */
	const char *pmu;	/* collect_pmu_describe's line, for the settings */
};

/* What collect_daemon() does beyond collect_opts (pending_signal is unused:
 * the flags below carry the signals). */
struct prof_db;

struct collect_daemon_opts {
	unsigned flush_seconds;		/* flush into the epoch this often; 0 = 60 */
	double duration_seconds;	/* stop after this long; 0 = until a signal */
	const char *pidfile;		/* written once sampling runs, removed at exit */
	int user_only;			/* do not sample the kernel even if allowed */
	volatile sig_atomic_t *stop;	/* SIGINT/SIGTERM: flush and return */
	volatile sig_atomic_t *flush;	/* SIGUSR1: flush now */
	volatile sig_atomic_t *new_epoch;	/* SIGHUP: flush, then a new epoch */
	uint64_t max_held;		/* entries kept through failed flushes; 0 = 2^20 */
	void (*note)(const char *msg);	/* failed flushes, files set aside; may be NULL */
	/* after each flush that succeeded: the epoch it committed (NULL when
	 * nothing was written), e.g. dcpid --push's; may be NULL */
	void (*flushed)(void *arg, struct prof_db *db, const char *epoch);
	void *flushed_arg;
};

struct collect_daemon_result {
	uint64_t samples;	/* samples written, all epochs */
	uint64_t lost;		/* PERF_RECORD_LOST */
	uint64_t self;		/* the daemon's own samples, left out */
	uint64_t flushes;
	uint64_t failed_flushes;	/* retried at the next interval */
	uint64_t dropped;	/* samples never written (held past max_held, or the
				 * last flush failed) */
	unsigned epochs;	/* epochs written */
	int kernel;		/* kernel code was sampled */
	uint64_t hw_samples;	/* branch stacks and IBS samples imported */
	char epoch[64];		/* the last epoch */
};

struct collect_result {
	int status;		/* wait status of the command */
	int exec_errno;		/* non-zero when the command could not be run */
	uint64_t samples;	/* samples written */
	uint64_t lost;		/* samples the kernel dropped */
	uint64_t unknown;	/* samples that mapped to no image */
	uint64_t stepped;	/* taken inside path bursts, left out (sampler.c) */
	char epoch[64];		/* the epoch written */
	char settings[2048];	/* as recorded in the epoch metadata */
	/* Path samples: the command is statically linked (the runtime cannot
	 * be preloaded, so it ran without paths); what the spool held. */
	int paths_static;
	char paths_note[512];	/* why there are no paths (runtime missing), or "" */
	char paths_stopped[1024];	/* the runtime's notes, a line each: threads
					 * it stopped stepping, processes it left alone */
	uint64_t paths_bursts, paths_steps, paths_processes, paths_threads;
	uint64_t paths_images, paths_bad;
	/* Value samples: instructions seen with their registers, values given
	 * to hotlists, images with a value profile. */
	uint64_t values_samples, values_values, values_images;
	/* The plan: procedures marked (with a breakpoint), dropped (their image
	 * changed), and calls caught at the breakpoints. */
	uint64_t plan_marks, plan_breakpoints, plan_dropped, plan_calls;
	/* Its procedures whose calls were to be counted at the entry (entry=),
	 * the calls counted and the procedures they were counted in (the
	 * epoch's PROF_EVENT_CALLS profiles; docs/paths.md, "Calls counted at
	 * the entry"). */
	uint64_t plan_counts, calls_counted, calls_procs, blocks_counted;
	/* Hardware evidence: samples kept for the import, what it said (or
	 * why it failed, and where the perf.data was left). */
	uint64_t hw_samples;
	char hw_note[1024];
};

/* The plan file of `--plan spec`: spec itself, or for "auto" the plan.txt
 * of dbdir's newest epoch that has one (-ENOENT: none). */
int collect_plan_resolve(const char *dbdir, const char *spec, char *path, size_t len,
			 struct dcpi_err *err);

/*
 * Run argv[0] with argv (searched in PATH) under sampling and write one new
 * epoch of the database with what was sampled.  Children of the command are
 * followed.  Returns 0 when the command ran, whatever its exit status
 * (res->status); when it could not be executed, -errno with res->exec_errno
 * set and no epoch written.
 */
int collect_record(const struct collect_opts *opts, char *const argv[],
		   struct collect_result *res, struct dcpi_err *err);

/*
 * What collect_attach() follows: running processes (every thread, those
 * they start after too) or only the threads named; until duration_seconds
 * (0: no limit), until argv (when not NULL; run as a plain child, not
 * sampled, as perf's `-p PID -- sleep 5`) exits, until *pending_signal, or
 * until every target has exited.
 */
struct collect_attach_opts {
	const int *ids;		/* pids, or tids with threads */
	size_t nids;
	int threads;		/* ids are threads (-t), not processes (-p) */
	double duration_seconds;
	char *const *argv;
};

/*
 * Sample running processes or threads (collect/attach.c): one counter per
 * thread and CPU, new threads found in /proc/PID/task as they appear,
 * mappings from /proc/PID/maps at the start and MMAP2 records after.
 * Time samples (and -g call chains) only: the path and value runtime is
 * preloaded at exec and cannot be put into a running process safely.
 * Writes one new epoch like collect_record (res->status is 0).
 */
int collect_attach(const struct collect_opts *opts, const struct collect_attach_opts *a,
		   struct collect_result *res, struct dcpi_err *err);

/*
 * Sample every process on every CPU (pid -1, one counter and ring per CPU
 * per event), user code and, when perf_event_paranoid and kptr_restrict
 * allow, kernel code (image "[kernel.kallsyms]", offset = address).  Runs
 * until *d->stop or the duration; flushes every d->flush_seconds into the
 * current epoch (merging), clearing the in-memory tables, so memory stays
 * bounded however long it runs.  Processes running before the start get
 * their images from /proc/PID/maps.
 */
int collect_daemon(const struct collect_opts *opts, const struct collect_daemon_opts *d,
		   struct collect_daemon_result *res, struct dcpi_err *err);

/*
 * Process mappings (collect/maps.c): which image and file offset a (pid,
 * address) of a sample falls in, kept from MMAP, FORK, EXEC and EXIT records
 * (the live collector's ring buffers, or a perf.data being imported).
 */

#define MAPS_UNKNOWN 0		/* image index of the "unknown" image */
#define MAPS_KERNEL_PATH "[kernel.kallsyms]"

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
/* The index of the image named path (a pseudo-image such as "[kernel.kallsyms]"). */
int maps_intern(struct maps *m, const char *path, uint32_t *image, struct dcpi_err *err);
/* Read /proc/PID/maps of every live process now (the daemon's start). */
int maps_scan_all(struct maps *m, struct dcpi_err *err);
/* ... of one process now (attaching to it); a process gone is no error. */
int maps_scan_pid(struct maps *m, uint32_t pid, struct dcpi_err *err);
/* Each executable mapping of pid in /proc/PID/maps to fn (its name: a path
 * or a pseudo-name such as "[vdso]"); fn's first non-zero return stops
 * and is returned.  A process gone is no error. */
typedef int (*maps_exec_fn)(void *arg, uint64_t start, uint64_t end, uint64_t pgoff,
			    const char *name);
int maps_proc_exec(uint32_t pid, maps_exec_fn fn, void *arg);
/*
 * JIT code: when on, a pc in anonymous memory of a process that has a
 * /tmp/perf-PID.map resolves to the pseudo-image of that path, offset = pc.
 */
void maps_set_jit(struct maps *m, int on);
/* How many perf maps were refused as untrusted (util/jitmap_trust.c); *why
 * the last refusal's reason ("" when none). */
unsigned maps_jit_refused(const struct maps *m, const char **why);
/*
 * Offline (imported files): the pids are another time's, so an address with
 * no mapping record stays unknown instead of being looked up in /proc, where
 * that pid may now be an unrelated process.
 */
void maps_set_offline(struct maps *m, int on);

/* Which address space a sample's pc is in (its cpumode, or its address). */
enum maps_space {
	MAPS_USER,		/* the process's: through its maps */
	MAPS_KERNEL,		/* "[kernel.kallsyms]", offset = the address */
	MAPS_OTHER,		/* a hypervisor's, a guest's, an unsampled kernel's */
};

/*
 * The one place a sample's (pid, pc) becomes (image, offset), for the live
 * session and the importers alike: user code by maps_resolve, kernel code
 * in the image "[kernel.kallsyms]" keyed by address, anything else in the
 * unknown image keyed by address.
 */
int maps_place(struct maps *m, uint32_t pid, uint64_t pc, enum maps_space space,
	       uint32_t *image, uint64_t *offset, struct dcpi_err *err);

/*
 * The count tables that keep their records in the slots (collect/aggregate.c,
 * collect/phase.c, import/lbr.c: open addressing, linear probing, cap a
 * power of 2) grow and rebuild here (collect/slots.c): the *cap records of
 * size bytes at *t that live() says are in use, moved into a new zeroed
 * table of ncap slots, each probing from home(rec).  0 with *t, *cap and
 * (when n is not NULL) *n, the records moved, those of the new table; or
 * -ENOMEM with all as it was.  A record live() says no to is dropped, and a
 * zeroed slot must be one it says no to.
 */
int recs_rehash(void **t, size_t *cap, size_t ncap, size_t size, int (*live)(const void *rec),
		uint64_t (*home)(const void *rec), size_t *n);

/*
 * Counts per (image, event, file offset) (collect/aggregate.c), the one
 * table the live session and the importers count into, flushed as one
 * profile per (image, event) (DCPI sec. 4.3.1, 4.3.3).
 */
struct agg;
struct prof_db;

int agg_new(struct agg **out, struct dcpi_err *err);
void agg_free(struct agg *a);
/* Forget every count (after a flush). */
void agg_clear(struct agg *a);
/* Add the table's distinct entries and samples to *entries and *samples. */
void agg_count(const struct agg *a, uint64_t *entries, uint64_t *samples);
int agg_add(struct agg *a, uint32_t image, uint32_t event, uint64_t offset, uint64_t count,
	    struct dcpi_err *err);
/* Hand every count added since the last call to fn (stopping at its first
 * nonzero return, which is returned) and restart them; the cumulative
 * counts stay (include/dcpi/slices.h). */
typedef int agg_interval_fn(void *ctx, uint32_t image, uint32_t event, uint64_t offset,
			    uint64_t count);
int agg_interval(struct agg *a, agg_interval_fn *fn, void *ctx);
/* Move counts to other keys: fn may change an entry's image and offset
 * (returning 1 when it did); counts that meet add up.  *moved gets the
 * samples moved. */
typedef int agg_remap_fn(void *ctx, uint32_t *image, uint64_t *offset);
int agg_remap(struct agg *a, agg_remap_fn *fn, void *ctx, uint64_t *moved,
	      struct dcpi_err *err);

/* What the profiles of one event say besides their counts. */
struct agg_event {
	const char *name;
	const char *unit;		/* what a period counts: "ns" or "events" */
	double period;			/* 0 when unknown */
	double cycles_per_unit;		/* 0 when unknown */
};

/* How a flush names images and offsets. */
struct agg_sink {
	const struct agg_event *events;	/* by the event index of agg_add */
	size_t nevents;
	const struct prof_image_id *(*image_id)(void *ctx, uint32_t image);
	/* The file offset written for a key's offset; nonzero drops the
	 * count (into skipped).  NULL: offsets are written as they are. */
	int (*offset)(void *ctx, uint32_t image, uint64_t *offset);
	void *ctx;
};

struct agg_flushed {
	uint64_t samples;		/* written */
	uint64_t skipped;		/* dropped by the sink's offset() */
	uint64_t images, profiles;	/* distinct images, profiles written */
};

/* Write one profile per (image, event) of a into epoch (the table is kept:
 * agg_clear once the epoch is committed). */
int agg_flush(struct agg *a, const struct agg_sink *k, struct prof_db *db, const char *epoch,
	      struct agg_flushed *out, struct dcpi_err *err);

#endif /* DCPI_COLLECT_H */
