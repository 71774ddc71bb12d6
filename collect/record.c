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
 * run still flushes every sample taken.  The known-cycle loop runs before
 * the command starts and after it ends (calibrate.c), and the epoch's
 * metadata carries what one sample is worth.
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
#include "paths.h"

#define RECORD_POLL_MS 50

static void forward_signal(const struct collect_opts *o, pid_t child)
{
	volatile sig_atomic_t *ps = o->pending_signal;
	int sig;

	if (!ps || !*ps)
		return;
	sig = *ps;
	*ps = 0;
	kill(child, sig);
}

/* Drain until the command has exited and its last records are read. */
static int follow(struct session *s, pid_t child, int *status, struct dcpi_err *err)
{
	int ret = 0, done = 0;
	int poll_ms = s->cfg.randomize ? SESS_RANDOM_MS : RECORD_POLL_MS;
	pid_t w;

	while (!done && !ret) {
		forward_signal(s->opts, child);
		ret = smp_wait(&s->smp, poll_ms);
		if (ret) {
			ret = dcpi_errf(err, ret, "poll: %s", strerror(-ret));
			break;
		}
		w = waitpid(child, status, WNOHANG);
		if (w == child || (w < 0 && errno == ECHILD))	/* reaped elsewhere */
			done = 1;
		ret = sess_drain(s, err);
	}
	if (!done) {		/* failed: stop sampling, let the command finish */
		smp_close(&s->smp);
		s->open = 0;
		while (waitpid(child, status, 0) < 0 && errno == EINTR)
			forward_signal(s->opts, child);
	}
	return ret;
}

static int write_epoch(struct session *s, struct prof_db *db, struct prof_epoch_meta *meta,
		       struct collect_result *res, struct dcpi_err *err)
{
	uint64_t written = 0;
	int ret;

	ret = prof_db_epoch_new(db, res->epoch, sizeof(res->epoch), err);
	if (!ret)	/* profiles and meta together, or neither (profile.h) */
		ret = prof_epoch_begin(db, res->epoch, err);
	if (!ret)
		ret = sess_flush(s, db, res->epoch, &written, err);
	meta->samples = written;
	meta->lost_samples = s->lost;
	snprintf(meta->settings, sizeof(meta->settings), "%s", res->settings);
	if (!ret)
		ret = prof_epoch_meta_write(db, res->epoch, meta, err);
	if (!ret)
		ret = prof_epoch_commit(db, err);
	else
		prof_epoch_abort(db);
	if (ret && res->epoch[0])
		prof_db_epoch_drop_empty(db, res->epoch);
	if (!ret) {
		res->samples = written;
		res->lost = s->lost;
		res->unknown = s->unknown;
		res->stepped = s->stepped;
	}
	return ret;
}

/* Fork argv stopped on a pipe; *go releases it, *errp reports exec errors. */
static int spawn(char *const argv[], const struct paths_run *pr, pid_t *pid, int *go,
		 int *errp, struct dcpi_err *err)
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
		paths_child_env(pr);
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

/* The spool files into the epoch; the settings line says what they held. */
static int write_paths(struct paths_run *pr, struct prof_db *db, struct prof_epoch_meta *meta,
		       struct collect_result *res, struct dcpi_err *err)
{
	struct paths_stats st;
	size_t l = strlen(res->settings);
	int ret;

	if (!pr->on)
		return 0;
	ret = paths_collect(pr, db, res->epoch, &st, err);
	if (ret)
		return ret;
	res->paths_bursts = st.bursts;
	res->paths_steps = st.steps;
	res->paths_processes = st.files;
	res->paths_threads = st.threads;
	res->paths_images = st.images;
	res->paths_bad = st.bad;
	res->values_samples = st.values.samples;
	res->values_values = st.values.values;
	res->values_images = st.values.images;
	snprintf(res->settings + l, sizeof(res->settings) - l, " paths=%s bursts=%" PRIu64
		 " steps=%" PRIu64 " cut=%" PRIu64 " lost=%" PRIu64 " spools=%" PRIu64
		 " threads=%" PRIu64 "%s", pr->rate, st.bursts, st.steps, st.cut, st.lost,
		 st.files, st.threads, res->paths_static ? " static" : "");
	l = strlen(res->settings);
	if (pr->values)
		snprintf(res->settings + l, sizeof(res->settings) - l, " values=%" PRIu64
			 " value-images=%" PRIu64, st.values.samples, st.values.images);
	l = strlen(res->settings);
	if (pr->latency)
		snprintf(res->settings + l, sizeof(res->settings) - l, " latency-samples=%" PRIu64
			 " latency-ticks=%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64, st.values.latency,
			 pr->lat.median[0], pr->lat.median[1], pr->lat.median[2],
			 pr->lat.median[3]);
	snprintf(meta->settings, sizeof(meta->settings), "%s", res->settings);
	return prof_epoch_meta_write(db, res->epoch, meta, err);
}

static int run(struct session *s, char *const argv[], struct prof_db *db,
	       struct paths_run *pr, struct collect_result *res, struct dcpi_err *err)
{
	struct prof_epoch_meta meta;
	int go = -1, errp = -1, ret, e;
	pid_t child = -1;

	ret = sess_calibrate(s, err);
	if (ret)
		return ret;
	ret = spawn(argv, pr, &child, &go, &errp, err);
	if (ret)
		return ret;
	ret = sess_open(s, child, 0, err);
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
	ret = follow(s, child, &res->status, err);
	meta.end_ns = dcpi_wall_ns();
	if (!ret && s->open)
		ret = sess_read_counts(s, err);
	if (!ret)
		ret = sess_calibrate(s, err);
	sess_describe(s, res->settings, sizeof(res->settings), &meta);
	if (!ret)
		ret = write_epoch(s, db, &meta, res, err);
	if (!ret)
		ret = write_paths(pr, db, &meta, res, err);
	return ret;
}

int collect_record(const struct collect_opts *opts, char *const argv[],
		   struct collect_result *res, struct dcpi_err *err)
{
	struct session s;
	struct paths_run pr;
	struct prof_db *db = NULL;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	if ((!opts->event && !opts->nevents) || !argv || !argv[0])
		return dcpi_errf(err, -EINVAL, "record: no event or no command");
	memset(&pr, 0, sizeof(pr));
	ret = sess_init(&s, opts, err);
	if (!ret)
		ret = prof_db_open(opts->db_dir, PROF_DB_CREATE, &db, err);
	if (!ret && opts->paths_rate) {
		res->paths_static = paths_static_command(argv[0]);
		if (!res->paths_static)
			ret = paths_prepare(&pr, opts->paths_rate, opts->paths_steps,
					    opts->paths_lib, err);
		pr.values = opts->values;
		pr.latency = opts->values && opts->latency;
		if (!ret && pr.latency)
			ret = lat_calibrate(&pr.lat, err);
		if (ret == -ENOENT) {	/* no runtime: time samples as usual */
			snprintf(res->paths_note, sizeof(res->paths_note), "%s", err->msg);
			dcpi_err_clear(err);
			paths_cleanup(&pr);
			ret = 0;
		}
	}
	if (!ret)
		ret = run(&s, argv, db, &pr, res, err);
	paths_cleanup(&pr);
	sess_free(&s);
	prof_db_close(db);
	return ret;
}
