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
 *
 * Faults (tests/test_harden.c): one flush is one epoch transaction (profile.h), so a
 * kill at any point leaves the epoch as the last flush committed it.  A
 * flush that fails keeps its samples in the tables for the next one (up to
 * max_held entries, then they are dropped and counted in the metadata); a
 * corrupt profile in the live epoch is set aside by the writer and reported
 * through d->note.  An epoch directory is made at the first flush that has
 * something to write, so a daemon that stops early leaves no empty epoch.
 * The database must not be writable by other users (PROF_DB_STRICT).
 * Memory holds one interval's samples plus the maps of live processes
 * (exited ones are reaped a batch after their EXIT record).  The daemon's
 * own samples are counted (settings "self=") and left out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "internal.h"

#define DAEMON_POLL_MS 100
#define DAEMON_HOLD_MAX (1u << 20)	/* entries kept through failed flushes */

struct daemon {
	struct session s;
	const struct collect_daemon_opts *d;
	struct collect_daemon_result *res;
	struct prof_db *db;
	struct prof_epoch_meta meta;	/* as last committed */
	uint64_t lost_at_start;		/* s.lost when the epoch began */
	int have_epoch;			/* its directory exists */
	int pidfile_written;
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

static void note(struct daemon *dm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct daemon *dm, const char *fmt, ...)
{
	char buf[DCPI_ERR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (dm->d->note)
		dm->d->note(buf);
}

/* What the database skipped or set aside, passed on. */
static void pass_notes(struct daemon *dm)
{
	char *s = strdup(prof_db_notes(dm->db)), *save = NULL;

	for (char *l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
		note(dm, "%s", l);
	free(s);
	prof_db_notes_clear(dm->db);
}

/* A new epoch starts; its directory is made when there is something to write. */
static void epoch_begin(struct daemon *dm)
{
	memset(&dm->meta, 0, sizeof(dm->meta));
	prof_meta_this_machine(&dm->meta);
	dm->meta.start_ns = dcpi_wall_ns();
	dm->lost_at_start = dm->s.lost;
	dm->have_epoch = 0;
}

static int epoch_make(struct daemon *dm, struct dcpi_err *err)
{
	uint64_t entries, held;
	int ret;

	if (dm->have_epoch)
		return 0;
	sess_held(&dm->s, &entries, &held);
	if (!held && dm->s.lost == dm->lost_at_start && !dm->meta.dropped_samples)
		return 1;	/* nothing to write yet */
	ret = prof_db_epoch_new(dm->db, dm->res->epoch, sizeof(dm->res->epoch), err);
	if (ret)
		return ret;
	dm->have_epoch = 1;
	dm->res->epochs++;
	return 0;
}

/* Profiles and metadata of one interval, committed together. */
static int flush_once(struct daemon *dm, struct dcpi_err *err)
{
	struct prof_epoch_meta m = dm->meta;
	char hwnote[1024];
	uint64_t n = 0;
	int ret = epoch_make(dm, err);

	if (ret)
		return ret > 0 ? 0 : ret;
	ret = prof_epoch_begin(dm->db, dm->res->epoch, err);
	if (!ret)
		ret = sess_write(&dm->s, dm->db, dm->res->epoch, &n, err);
	if (!ret && dm->s.hw) {		/* this interval's branch stacks, IBS */
		uint64_t hw = 0;

		sess_hw_import(&dm->s, dm->db, dm->res->epoch, hwnote, sizeof(hwnote), &hw);
		dm->res->hw_samples += hw;
		if (strstr(hwnote, "not imported"))
			note(dm, "%s", hwnote);
		ret = sess_hw_restart(&dm->s, err);
	}
	m.samples += n;
	m.lost_samples = dm->s.lost - dm->lost_at_start;
	m.end_ns = dcpi_wall_ns();
	sess_describe(&dm->s, m.settings, sizeof(m.settings), &m);
	if (!ret)
		ret = prof_epoch_meta_write(dm->db, dm->res->epoch, &m, err);
	if (!ret)
		ret = prof_epoch_commit(dm->db, err);
	else
		prof_epoch_abort(dm->db);
	if (ret)
		return ret;
	dm->meta = m;
	sess_clear(&dm->s);
	dm->res->samples += n;
	dm->res->flushes++;
	return 0;
}

/*
 * Merge the tables into the current epoch and rewrite its metadata.  A
 * failed flush (full disk, I/O error, a lock held too long) leaves the
 * samples counted in memory for the next one, up to a bound past which they
 * are dropped and counted; the daemon runs on.  Only the last flush's
 * failure is returned (final): there is no next interval.
 */
static int flush(struct daemon *dm, int final, struct dcpi_err *err)
{
	uint64_t entries, held, cap = dm->d->max_held ? dm->d->max_held : DAEMON_HOLD_MAX;
	int ret = flush_once(dm, err);

	pass_notes(dm);
	dm->res->lost = dm->s.lost;
	dm->res->self = dm->s.self;
	if (!ret && dm->d->flushed)
		dm->d->flushed(dm->d->flushed_arg, dm->db, dm->have_epoch ? dm->res->epoch : NULL);
	if (!ret)
		return 0;
	dm->meta.failed_flushes++;
	dm->res->failed_flushes++;
	sess_held(&dm->s, &entries, &held);
	if (final) {
		char why[DCPI_ERR_MAX];

		snprintf(why, sizeof(why), "%s", err->msg);
		dm->res->dropped += held;
		return dcpi_errf(err, ret, "%s; %" PRIu64 " samples not written", why, held);
	}
	if (entries > cap) {
		sess_clear(&dm->s);
		dm->meta.dropped_samples += held;
		dm->res->dropped += held;
		note(dm, "flush failed: %s; %" PRIu64 " samples dropped (more than %" PRIu64
		     " entries held)", err->msg, held, cap);
	} else {
		note(dm, "flush failed: %s; %" PRIu64 " samples held, retried at the next "
		     "flush", err->msg, held);
	}
	dcpi_err_clear(err);
	return 0;
}

static int write_pidfile(const char *path, struct dcpi_err *err)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());

	/* never through a link planted at the name or a temporary; 0644 */
	return dcpi_write_file(path, text, (size_t)n, 0644, err);
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
			ret = flush(dm, 0, err);
			if (!ret && dm->have_epoch)
				epoch_begin(dm);
			last = now;
		} else if (take(d->flush) || now - last >= every) {
			ret = flush(dm, 0, err);
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
	if (ret)
		return ret;
	epoch_begin(dm);
	if (dm->d->pidfile) {
		ret = write_pidfile(dm->d->pidfile, err);
		if (ret)
			return ret;
		dm->pidfile_written = 1;
	}
	ret = loop(dm, err);
	if (!ret)
		ret = sess_read_counts(&dm->s, err);
	if (!ret)
		ret = sess_drain(&dm->s, err);
	if (!ret)
		ret = flush(dm, 1, err);
	/* the closing calibration, with the system-wide counters closed so the
	 * loop pays only for its own sampling, as the start's did */
	smp_close(&dm->s.smp);
	dm->s.open = 0;
	if (!ret)
		ret = sess_calibrate(&dm->s, err);
	if (!ret && dm->have_epoch) {
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
		ret = prof_db_open(opts->db_dir, PROF_DB_CREATE | PROF_DB_STRICT, &dm.db, err);
	if (!ret)
		ret = run(&dm, err);
	if (dm.pidfile_written)
		unlink(d->pidfile);
	sess_free(&dm.s);
	prof_db_close(dm.db);
	return ret;
}
