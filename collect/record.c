/*
 * collect/record.c - `dcpi record`: run one command under sampling and write
 * what was sampled as a new epoch of the database (DCPI paper sec. 4).
 *
 * The command is forked stopped on a pipe, the events are opened on it with
 * enable_on_exec (so nothing of dcpi itself is sampled), and then it execs.
 * A second, close-on-exec pipe carries execvp's errno back when the exec
 * fails.  The loop waits on the rings, drains them in time order into the
 * image maps and the sample table, and ends when the command has exited and
 * its last records are drained.  SIGINT/SIGTERM reach the loop through
 * opts->pending_signal and are passed on to the command, so an interrupted
 * run still flushes every sample taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/wait.h>

#include "internal.h"

#define RECORD_POLL_MS 50

struct recorder {
	const struct collect_opts *opts;
	struct sampler smp;
	struct smp_batch batch;
	struct maps *maps;
	struct agg *agg;
	uint64_t samples, unknown, lost, period_sum;
	uint64_t throttled;	/* times the kernel stopped sampling for a tick */
};

static int on_sample(struct recorder *r, const void *rec, struct dcpi_err *err)
{
	struct smp_sample s;
	uint32_t image = MAPS_UNKNOWN;
	uint64_t offset;
	int ret;

	if (smp_parse_sample(&r->smp, rec, &s))
		return 0;
	if (s.user) {
		ret = maps_resolve(r->maps, s.pid, s.ip, &image, &offset, err);
		if (ret)
			return ret;
	} else {
		offset = s.ip;
	}
	r->samples++;
	r->period_sum += s.period;
	if (image == MAPS_UNKNOWN)
		r->unknown++;
	return agg_add(r->agg, image, offset, 1, err);
}

/* MMAP2: pid, tid, addr, len, pgoff, 24 bytes of device/inode or build-id,
 * prot, flags, filename.  MMAP: pid, tid, addr, len, pgoff, filename. */
static int on_mmap(struct recorder *r, const uint8_t *rec, struct dcpi_err *err)
{
	const struct perf_event_header *h = (const void *)rec;
	size_t name_at = sizeof(*h) + (h->type == PERF_RECORD_MMAP2 ? 64 : 32);
	uint32_t pid;
	uint64_t v[3];

	if (h->size <= name_at || !memchr(rec + name_at, '\0', h->size - name_at))
		return 0;
	memcpy(&pid, rec + sizeof(*h), 4);
	memcpy(v, rec + sizeof(*h) + 8, sizeof(v));
	return maps_mmap(r->maps, pid, v[0], v[1], v[2], (const char *)rec + name_at, err);
}

static int on_record(struct recorder *r, const uint8_t *rec, struct dcpi_err *err)
{
	const struct perf_event_header *h = (const void *)rec;
	uint32_t ids[4];
	uint64_t v[2];

	if (h->size >= sizeof(*h) + 16)
		memcpy(ids, rec + sizeof(*h), 16);
	else
		memset(ids, 0, sizeof(ids));
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(r, rec, err);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(r, rec, err);
	case PERF_RECORD_COMM:
		if (h->misc & PERF_RECORD_MISC_COMM_EXEC)
			maps_exec(r->maps, ids[0]);
		return 0;
	case PERF_RECORD_FORK:		/* pid, ppid, tid, ptid */
		return maps_fork(r->maps, ids[0], ids[1], err);
	case PERF_RECORD_EXIT:
		if (ids[0] == ids[2])
			maps_exit(r->maps, ids[0]);
		return 0;
	case PERF_RECORD_LOST:		/* id, lost */
		if (h->size >= sizeof(*h) + 16) {
			memcpy(v, rec + sizeof(*h), 16);
			r->lost += v[1];
		}
		return 0;
	case PERF_RECORD_LOST_SAMPLES:	/* lost */
		if (h->size >= sizeof(*h) + 8) {
			memcpy(v, rec + sizeof(*h), 8);
			r->lost += v[0];
		}
		return 0;
	case PERF_RECORD_THROTTLE:
		r->throttled++;
		return 0;
	default:
		return 0;
	}
}

static int drain(struct recorder *r, struct dcpi_err *err)
{
	int ret = smp_drain(&r->smp, &r->batch, err);

	for (size_t i = 0; i < r->batch.n && !ret; i++)
		ret = on_record(r, r->batch.buf + r->batch.r[i].off, err);
	maps_reap(r->maps);
	return ret;
}

static void forward_signal(struct recorder *r, pid_t child)
{
	volatile sig_atomic_t *ps = r->opts->pending_signal;
	int sig;

	if (!ps || !*ps)
		return;
	sig = *ps;
	*ps = 0;
	kill(child, sig);
}

/* Drain until the command has exited and its last records are read. */
static int follow(struct recorder *r, pid_t child, int *status, struct dcpi_err *err)
{
	int ret = 0, done = 0;
	pid_t w;

	while (!done && !ret) {
		forward_signal(r, child);
		ret = smp_wait(&r->smp, RECORD_POLL_MS);
		if (ret) {
			ret = dcpi_errf(err, ret, "poll: %s", strerror(-ret));
			break;
		}
		w = waitpid(child, status, WNOHANG);
		if (w == child || (w < 0 && errno == ECHILD))	/* reaped elsewhere */
			done = 1;
		ret = drain(r, err);
	}
	if (!done) {		/* failed: stop sampling, let the command finish */
		smp_close(&r->smp);
		while (waitpid(child, status, 0) < 0 && errno == EINTR)
			forward_signal(r, child);
	}
	return ret;
}

static void describe(const struct recorder *r, char *buf, size_t len)
{
	const struct collect_opts *o = r->opts;
	const struct collect_event *ev = o->event;
	double mean = r->samples ? (double)r->period_sum / (double)r->samples : 0;

	if (o->freq)
		snprintf(buf, len, "event=%s freq=%" PRIu64 "Hz mean-period=%.0f%s "
			 "inherit=1 user-only rings=%d uncalibrated", ev->name, o->freq, mean,
			 ev->unit, r->smp.n);
	else
		snprintf(buf, len, "event=%s period=%" PRIu64 "%s inherit=1 user-only "
			 "rings=%d uncalibrated", ev->name, o->period ? o->period :
			 ev->default_period, ev->unit, r->smp.n);
	if (r->throttled) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, " throttled=%" PRIu64, r->throttled);
	}
}

static int write_epoch(struct recorder *r, struct prof_db *db, struct prof_epoch_meta *meta,
		       struct collect_result *res, struct dcpi_err *err)
{
	const struct collect_event *ev = r->opts->event;
	struct prof_profile tmpl;
	uint64_t written = 0;
	int ret;

	ret = prof_db_epoch_new(db, res->epoch, sizeof(res->epoch), err);
	if (ret)
		return ret;
	prof_profile_init(&tmpl);
	snprintf(tmpl.event, sizeof(tmpl.event), "%s", ev->name);
	snprintf(tmpl.period_unit, sizeof(tmpl.period_unit), "%s", ev->unit);
	if (r->samples)
		tmpl.period = (double)r->period_sum / (double)r->samples;
	else
		tmpl.period = (double)(r->opts->period ? r->opts->period : ev->default_period);
	tmpl.cycles_per_unit = 0;	/* calibration is a later step */
	ret = agg_flush(r->agg, r->maps, &tmpl, db, res->epoch, &written, err);
	prof_profile_free(&tmpl);
	if (ret)
		return ret;
	meta->samples = written;
	meta->lost_samples = r->lost;
	snprintf(meta->settings, sizeof(meta->settings), "%s", res->settings);
	ret = prof_epoch_meta_write(db, res->epoch, meta, err);
	if (!ret) {
		res->samples = written;
		res->lost = r->lost;
		res->unknown = r->unknown;
	}
	return ret;
}

/* Fork argv stopped on a pipe; *go releases it, *errp reports exec errors. */
static int spawn(char *const argv[], pid_t *pid, int *go, int *errp, struct dcpi_err *err)
{
	int gp[2], ep[2];
	char c;

	if (pipe2(gp, O_CLOEXEC))
		return dcpi_errf(err, -errno, "pipe: %s", strerror(errno));
	if (pipe2(ep, O_CLOEXEC)) {
		int e = errno;

		close(gp[0]);
		close(gp[1]);
		return dcpi_errf(err, -e, "pipe: %s", strerror(e));
	}
	*pid = fork();
	if (*pid < 0) {
		int e = errno;

		close(gp[0]);
		close(gp[1]);
		close(ep[0]);
		close(ep[1]);
		return dcpi_errf(err, -e, "fork: %s", strerror(e));
	}
	if (*pid == 0) {
		int e;

		close(gp[1]);
		close(ep[0]);
		if (read(gp[0], &c, 1) != 1)
			_exit(127);	/* the parent gave up */
		execvp(argv[0], argv);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) != sizeof(e))
			_exit(126);
		_exit(127);
	}
	close(gp[0]);
	close(ep[1]);
	*go = gp[1];
	*errp = ep[0];
	return 0;
}

/* Release the child; 0 once it has exec'd, else its execvp errno. */
static int release(int go, int errp)
{
	ssize_t n;
	int e = 0;

	n = write(go, "g", 1);
	close(go);
	if (n != 1)
		e = EPIPE;
	do
		n = read(errp, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(errp);
	return n == sizeof(e) ? e : (n < 0 ? errno : 0);
}

static int run(struct recorder *r, char *const argv[], struct prof_db *db,
	       struct collect_result *res, struct dcpi_err *err)
{
	struct prof_epoch_meta meta;
	int go = -1, errp = -1, ret, e;
	pid_t child = -1;

	ret = spawn(argv, &child, &go, &errp, err);
	if (ret)
		return ret;
	ret = smp_open(&r->smp, r->opts->event, r->opts->period ? r->opts->period :
		       r->opts->event->default_period, r->opts->freq, child,
		       r->opts->ring_pages, err);
	if (ret) {
		close(go);	/* the child reads EOF and exits */
		close(errp);
		waitpid(child, NULL, 0);
		return ret;
	}
	memset(&meta, 0, sizeof(meta));
	prof_meta_this_machine(&meta);
	meta.start_ns = dcpi_wall_ns();
	e = release(go, errp);
	if (e) {
		waitpid(child, &res->status, 0);
		res->exec_errno = e;
		return dcpi_errf(err, -e, "%s: %s", argv[0], strerror(e));
	}
	ret = follow(r, child, &res->status, err);
	meta.end_ns = dcpi_wall_ns();
	describe(r, res->settings, sizeof(res->settings));
	if (!ret)
		ret = write_epoch(r, db, &meta, res, err);
	return ret;
}

int collect_record(const struct collect_opts *opts, char *const argv[],
		   struct collect_result *res, struct dcpi_err *err)
{
	struct recorder r;
	struct prof_db *db = NULL;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&r, 0, sizeof(r));
	r.opts = opts;
	if (!opts->event || !argv || !argv[0])
		return dcpi_errf(err, -EINVAL, "record: no event or no command");
	if (opts->period && opts->freq)
		return dcpi_errf(err, -EINVAL, "%s: a period and a frequency both given",
				 opts->event->name);
	ret = prof_db_open(opts->db_dir, PROF_DB_CREATE, &db, err);
	if (ret)
		return ret;
	ret = maps_new(&r.maps, err);
	if (!ret)
		ret = agg_new(&r.agg, err);
	if (!ret)
		ret = run(&r, argv, db, res, err);
	smp_close(&r.smp);
	smp_batch_free(&r.batch);
	agg_free(r.agg);
	maps_free(r.maps);
	prof_db_close(db);
	return ret;
}
