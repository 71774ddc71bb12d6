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
};

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

struct collect_opts {
	const struct collect_event *event;
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
};

struct collect_result {
	int status;		/* wait status of the command */
	int exec_errno;		/* non-zero when the command could not be run */
	uint64_t samples;	/* samples written */
	uint64_t lost;		/* samples the kernel dropped */
	uint64_t unknown;	/* samples that mapped to no image */
	char epoch[64];		/* the epoch written */
	char settings[512];	/* as recorded in the epoch metadata */
};

/*
 * Run argv[0] with argv (searched in PATH) under sampling and write one new
 * epoch of the database with what was sampled.  Children of the command are
 * followed.  Returns 0 when the command ran, whatever its exit status
 * (res->status); when it could not be executed, -errno with res->exec_errno
 * set and no epoch written.
 */
int collect_record(const struct collect_opts *opts, char *const argv[],
		   struct collect_result *res, struct dcpi_err *err);

#endif /* DCPI_COLLECT_H */
