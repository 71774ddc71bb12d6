/*
 * collect/daemon.c - dcpid: sample every process on every CPU until told to
 * stop (DCPI paper sec. 4.3, the daemon).
 *
 * One counter and ring per CPU per event, pid -1, user code and, when the
 * kernel lets us read kernel addresses (perf_event_paranoid for non-root,
 * kptr_restrict < 2), kernel code too, kept in the pseudo-image
 * "[kernel.kallsyms]" by address.  Idle time is left out (exclude_idle has
 * no effect on hardware events; it keeps cpu-clock from sampling the idle
 * loop of every idle CPU).  Processes already running are read from
 * /proc/PID/maps once the counters are open, so whatever maps they make
 * after that arrives as MMAP2 records and nothing falls between the two.
 *
 * The paper's daemon flushes its hash table to disk periodically and when
 * its memory is short, and starts a new epoch on request (sec. 4.3.3).  So
 * here: every flush_seconds (and on SIGUSR1) each per-event table is
 * merged into the current epoch's profiles (prof_epoch_write merges) and
 * emptied, and the epoch's metadata is rewritten with its running totals;
 * SIGHUP flushes and opens a new epoch; SIGINT/SIGTERM flush and return.
 * Memory holds one interval's samples plus the maps of live processes
 * (exited ones are reaped a batch after their EXIT record).  The daemon's
 * own samples are counted (settings "self=") and left out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define DAEMON_POLL_MS 100

struct daemon {
	struct session s;
	const struct collect_daemon_opts *d;
	struct collect_daemon_result *res;
	struct prof_db *db;
	struct prof_epoch_meta meta;
	uint64_t lost_at_start;		/* s.lost when the epoch began */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int kernel_allowed(const struct collect_daemon_opts *d)
{
	if (d->user_only || smp_sysctl("kptr_restrict") >= 2)
		return 0;
	return geteuid() == 0 || smp_sysctl("perf_event_paranoid") <= 1;
}

static int epoch_begin(struct daemon *dm, struct dcpi_err *err)
{
	int ret = prof_db_epoch_new(dm->db, dm->res->epoch, sizeof(dm->res->epoch), err);

	if (ret)
		return ret;
	memset(&dm->meta, 0, sizeof(dm->meta));
	prof_meta_this_machine(&dm->meta);
	dm->meta.start_ns = dcpi_wall_ns();
	dm->lost_at_start = dm->s.lost;
	dm->res->epochs++;
	return 0;
}

/* Merge the tables into the current epoch and rewrite its metadata. */
static int flush(struct daemon *dm, struct dcpi_err *err)
{
	uint64_t n = 0;
	int ret = sess_flush(&dm->s, dm->db, dm->res->epoch, &n, err);

	if (ret)
		return ret;
	dm->meta.samples += n;
	dm->meta.lost_samples = dm->s.lost - dm->lost_at_start;
	dm->meta.end_ns = dcpi_wall_ns();
	sess_describe(&dm->s, dm->meta.settings, sizeof(dm->meta.settings), &dm->meta);
	ret = prof_epoch_meta_write(dm->db, dm->res->epoch, &dm->meta, err);
	dm->res->samples += n;
	dm->res->lost = dm->s.lost;
	dm->res->self = dm->s.self;
	dm->res->flushes++;
	return ret;
}

static int write_pidfile(const char *path, struct dcpi_err *err)
{
	char tmp[PROF_PATH_MAX + 16];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", tmp, strerror(errno));
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) || rename(tmp, path))
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

static int take(volatile sig_atomic_t *flag)
{
	int v = flag && *flag;

	if (v)
		*flag = 0;
	return v;
}

static int loop(struct daemon *dm, struct dcpi_err *err)
{
	const struct collect_daemon_opts *d = dm->d;
	uint64_t start = mono_ns(), last = start;
	uint64_t every = (uint64_t)(d->flush_seconds ? d->flush_seconds : 60) * 1000000000ULL;
	uint64_t stop_at = d->duration_seconds > 0 ?
			   start + (uint64_t)(d->duration_seconds * 1e9) : 0;
	int poll_ms = dm->s.cfg.randomize ? SESS_RANDOM_MS : DAEMON_POLL_MS;
	int ret = 0;

	while (!ret) {
		uint64_t now;

		ret = smp_wait(&dm->s.smp, poll_ms);
		if (ret)
			return dcpi_errf(err, ret, "poll: %s", strerror(-ret));
		ret = sess_drain(&dm->s, err);
		if (ret)
			break;
		now = mono_ns();
		if ((d->stop && *d->stop) || (stop_at && now >= stop_at))
			break;
		if (take(d->new_epoch)) {
			ret = flush(dm, err);
			if (!ret)
				ret = epoch_begin(dm, err);
			last = now;
		} else if (take(d->flush) || now - last >= every) {
			ret = flush(dm, err);
			last = now;
		}
	}
	return ret;
}

static int run(struct daemon *dm, struct dcpi_err *err)
{
	int ret;

	dm->s.self_pid = (uint32_t)getpid();
	ret = sess_calibrate(&dm->s, err);
	if (!ret)
		ret = sess_open(&dm->s, -1, kernel_allowed(dm->d), err);
	if (ret)
		return ret;
	dm->res->kernel = dm->s.smp.kernel;
	ret = maps_scan_all(dm->s.maps, err);
	if (!ret)
		ret = epoch_begin(dm, err);
	if (!ret && dm->d->pidfile)
		ret = write_pidfile(dm->d->pidfile, err);
	if (ret)
		return ret;
	ret = loop(dm, err);
	if (!ret)
		ret = sess_read_counts(&dm->s, err);
	if (!ret)
		ret = sess_drain(&dm->s, err);
	if (!ret)
		ret = flush(dm, err);
	/* the closing calibration, with the system-wide counters closed so the
	 * loop pays only for its own sampling, as the start's did */
	smp_close(&dm->s.smp);
	dm->s.open = 0;
	if (!ret)
		ret = sess_calibrate(&dm->s, err);
	if (!ret) {
		sess_describe(&dm->s, dm->meta.settings, sizeof(dm->meta.settings),
			      &dm->meta);
		ret = prof_epoch_meta_write(dm->db, dm->res->epoch, &dm->meta, err);
	}
	return ret;
}

int collect_daemon(const struct collect_opts *opts, const struct collect_daemon_opts *d,
		   struct collect_daemon_result *res, struct dcpi_err *err)
{
	struct daemon dm;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&dm, 0, sizeof(dm));
	dm.d = d;
	dm.res = res;
	ret = sess_init(&dm.s, opts, err);
	if (!ret)
		ret = prof_db_open(opts->db_dir, PROF_DB_CREATE, &dm.db, err);
	if (!ret)
		ret = run(&dm, err);
	if (d->pidfile)
		unlink(d->pidfile);
	sess_free(&dm.s);
	prof_db_close(dm.db);
	return ret;
}
