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
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "canary.h"
#include "internal.h"
#include "paths.h"
#include "plan.h"

#define RECORD_POLL_MS 50
#define TRACE_POLL_MS 1		/* a traced command waits for us at each stop */
#define TRACE_STOPPED_MAX 64	/* traced threads in group-stop remembered */
#define TRACE_BATCH 64		/* stops handled before the rings are drained again */

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

/*
 * A traced command.  A program may make its parent, us, its tracer
 * (ptrace(PTRACE_TRACEME), as anti-debugging code does); then each signal
 * it gets stops it and waitpid reports the stop, which is not its end.
 * We act as a tracer that changes nothing: each signal-delivery-stop is
 * continued with its signal, so the program sees its signals as before;
 * the SIGTRAP the kernel sends a traced thread after a successful execve
 * (no PTRACE_O_TRACEEXEC: we set no options) is dropped, as a debugger
 * does; a group-stop (SIGSTOP and the like, PTRACE_GETSIGINFO says
 * EINVAL) is left stopped until SIGCONT is sent, as when untraced.  A
 * traced thread other than the main one is found by a waitid peek and
 * waited for by its tid (__WALL).  The path runtime stops stepping a
 * thread that asks to be traced (collect/pathrt.c), so the stops are the
 * program's own signals only.
 */
struct trace {
	pid_t child;
	int seen;			/* a stop was seen: poll faster */
	int continued;			/* SIGCONT reported (WIFCONTINUED) */
	size_t nstopped;
	pid_t stopped[TRACE_STOPPED_MAX];	/* threads left in group-stop */
};

/* The SIGTRAP of a traced thread's own successful execve: sent by the
 * kernel as from itself (SI_USER, its own pid) while the thread returns
 * 0 from execve or execveat. */
static int exec_trap(const struct trace *tr, pid_t tid, const siginfo_t *si)
{
	struct user_regs_struct regs;

	if (si->si_code != SI_USER || si->si_pid != tr->child ||
	    ptrace(PTRACE_GETREGS, tid, NULL, &regs))
		return 0;
	return (regs.orig_rax == SYS_execve || regs.orig_rax == SYS_execveat) && !regs.rax;
}

static void trace_forget(struct trace *tr, pid_t tid)
{
	for (size_t i = 0; i < tr->nstopped; i++)
		if (tr->stopped[i] == tid)
			tr->stopped[i--] = tr->stopped[--tr->nstopped];
}

static void trace_stop(struct trace *tr, pid_t tid, int status)
{
	int sig = WSTOPSIG(status);
	siginfo_t si;

	tr->seen = 1;
	if (status >> 16) {	/* an event stop: we ask for none */
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si)) {
		if (errno == EINVAL && tr->nstopped < TRACE_STOPPED_MAX) {	/* group-stop */
			trace_forget(tr, tid);
			tr->stopped[tr->nstopped++] = tid;
		} else if (errno == EINVAL) {
			ptrace(PTRACE_CONT, tid, NULL, NULL);	/* too many: let it run */
		}
		return;
	}
	if (sig == SIGTRAP && exec_trap(tr, tid, &si))
		sig = 0;
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

/* SIGCONT is pending for tid (its own or its process's queue). */
static int cont_pending(pid_t child, pid_t tid)
{
	char path[96], line[256];
	unsigned long long mask;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)child, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & (1ULL << (SIGCONT - 1))))
			found = 1;
	fclose(f);
	return found;
}

/* Threads in group-stop go on once a SIGCONT came (they then stop again
 * to deliver it, and we pass it on). */
static void trace_resume(struct trace *tr)
{
	for (size_t i = 0; i < tr->nstopped; i++) {
		pid_t tid = tr->stopped[i];

		if (!tr->continued && !cont_pending(tr->child, tid))
			continue;
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		tr->stopped[i--] = tr->stopped[--tr->nstopped];
	}
	tr->continued = 0;
}

/* A thread of the command other than its main one has something to report:
 * one that is traced by us. */
static pid_t traced_thread(const struct trace *tr)
{
	char path[96];
	struct stat st;
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) || si.si_pid <= 0 ||
	    si.si_pid == tr->child)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)tr->child, (int)si.si_pid);
	return stat(path, &st) ? 0 : si.si_pid;
}

/* 1 once the command has exited (*status, unless another waiter reaped
 * it), 0 while it runs; its stops are handled on the way. */
static int reap(struct trace *tr, int *status)
{
	for (int i = 0; i < TRACE_BATCH; i++) {
		pid_t tid = traced_thread(tr), w;
		int st;

		if (tid)
			w = waitpid(tid, &st, WNOHANG | __WALL);
		else
			w = waitpid(tr->child, &st, WNOHANG | __WALL | WCONTINUED);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && !tid)
			return errno == ECHILD;		/* reaped elsewhere */
		if (w <= 0)
			return 0;
		if (WIFSTOPPED(st)) {
			trace_stop(tr, w, st);
		} else if (WIFCONTINUED(st)) {
			tr->continued = 1;
		} else if (w == tr->child) {
			*status = st;
			return 1;
		} else {
			trace_forget(tr, w);	/* a traced thread's exit */
		}
	}
	return 0;
}

/* Drain until the command has exited and its last records are read. */
static int follow(struct session *s, pid_t child, int *status, struct dcpi_err *err)
{
	struct trace tr = { .child = child };
	int ret = 0, done = 0;
	int poll_ms = s->cfg.randomize ? SESS_RANDOM_MS : RECORD_POLL_MS;

	while (!done && !ret) {
		forward_signal(s->opts, child);
		ret = smp_wait(&s->smp, tr.seen ? TRACE_POLL_MS : poll_ms);
		if (ret) {
			ret = dcpi_errf(err, ret, "poll: %s", strerror(-ret));
			break;
		}
		done = reap(&tr, status);
		trace_resume(&tr);
		ret = sess_drain(s, err);
	}
	if (!done) {		/* failed: stop sampling, let the command finish */
		struct timespec pause = { 0, 2000000L };

		smp_close(&s->smp);
		s->open = 0;
		while (!reap(&tr, status)) {
			forward_signal(s->opts, child);
			trace_resume(&tr);
			nanosleep(&pause, NULL);
		}
	}
	return ret;
}

int rec_write_epoch(struct session *s, struct prof_db *db, struct prof_epoch_meta *meta,
		       struct collect_result *res, struct dcpi_err *err)
{
	uint64_t written = 0, entries = 0, held = 0;
	int ret;

	sess_held(s, &entries, &held);
	ret = prof_db_epoch_new(db, res->epoch, sizeof(res->epoch), err);
	if (!ret)	/* profiles and meta together, or neither (profile.h) */
		ret = prof_epoch_begin(db, res->epoch, err);
	if (!ret)
		ret = sess_flush(s, db, res->epoch, &written, err);
	if (!ret)
		ret = sess_hw_import(s, db, res->epoch, res->hw_note, sizeof(res->hw_note),
				     &res->hw_samples);
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
	if (ret) {	/* say what the failure cost, as dcpid does */
		char why[DCPI_ERR_MAX];

		snprintf(why, sizeof(why), "%s", err->msg);
		dcpi_errf(err, ret, "%s; %llu samples of the command lost (not written)", why,
			  (unsigned long long)(held + s->lost));
		res->lost = held + s->lost;
	}
	if (!ret) {
		res->samples = written;
		res->lost = s->lost;
		res->unknown = s->unknown;
		res->stepped = s->stepped;
	}
	return ret;
}

void rec_exec(char *const argv[], int fd)
{
	int e;

	execvp(argv[0], argv);
	e = errno;
	if (write(fd, &e, sizeof(e)) != sizeof(e))
		_exit(126);
	_exit(127);
}

ssize_t rec_exec_read(int fd, int *e)
{
	ssize_t n;

	do
		n = read(fd, e, sizeof(*e));
	while (n < 0 && errno == EINTR);
	close(fd);
	return n;
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
		close(gp[1]);
		close(ep[0]);
		if (read(gp[0], &c, 1) != 1)
			_exit(127);	/* the parent gave up */
		paths_child_env(pr);
		rec_exec(argv, ep[1]);
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
	n = rec_exec_read(errp, &e);
	return n == sizeof(e) ? e : (n < 0 ? errno : 0);
}

/* The canary timed here, after the run: the median of 40 (the least is an
 * outlier of the clock's reads), the core's figure alone unless this core is
 * shared all the while. */
static double canary_beside(void)
{
	double x[40];
	int n = 0;

	for (int i = 0; i < 40; i++) {
		struct prt_canary c;

		time_canary(&c);
		if (canary_cycles(&c) > 0)
			x[n++] = canary_cycles(&c);
	}
	if (!n)
		return 0;
	qsort(x, (size_t)n, sizeof(x[0]), dcpi_cmp_double);
	return x[n / 2];
}

/* The spool files into the epoch; the settings line says what they held. */
static int write_paths(struct paths_run *pr, struct prof_db *db, struct prof_epoch_meta *meta,
		       struct collect_result *res, struct dcpi_err *err)
{
	struct paths_stats st;
	struct paths_canary can;
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
	res->plan_calls = st.values.calls;
	res->calls_counted = st.calls;
	res->calls_procs = st.calls_procs;
	res->blocks_counted = st.blocks_counted;
	paths_canary_summary(&st, canary_beside(), &can);
	meta->canary_alone = can.alone;
	meta->canary_cycles = can.mean;
	meta->canary_sd = can.sd;
	meta->canary_shared = can.shared;
	meta->canary_bursts = st.canaries;
	snprintf(res->settings + l, sizeof(res->settings) - l, " paths=%s bursts=%" PRIu64
		 " steps=%" PRIu64 " cut=%" PRIu64 " lost=%" PRIu64 " spools=%" PRIu64
		 " threads=%" PRIu64 " canary=%.2f/%.2f/%.2f/%" PRIu64 "%s", pr->rate, st.bursts,
		 st.steps, st.cut, st.lost, st.files, st.threads, meta->canary_alone,
		 meta->canary_cycles, meta->canary_shared, st.canaries,
		 res->paths_static ? " static" : "");
	l = strlen(res->settings);
	if (pr->values)
		snprintf(res->settings + l, sizeof(res->settings) - l, " values=%" PRIu64
			 " value-images=%" PRIu64, st.values.samples, st.values.images);
	l = strlen(res->settings);
	if (pr->plan[0])
		snprintf(res->settings + l, sizeof(res->settings) - l, " plan=%" PRIu64
			 " plan-calls=%" PRIu64, res->plan_marks, st.values.calls);
	l = strlen(res->settings);
	if (pr->plan[0] && res->plan_counts)
		snprintf(res->settings + l, sizeof(res->settings) - l, " counted=%" PRIu64
			 " counted-calls=%" PRIu64 " counted-procs=%" PRIu64 " counted-blocks=%"
			 PRIu64, res->plan_counts, st.calls, st.calls_procs, st.blocks_counted);
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

	s->cfg.kernel = !s->opts->no_kernel;	/* calibrated as it samples */
	ret = sess_calibrate(s, err);
	if (ret)
		return ret;
	ret = spawn(argv, pr, &child, &go, &errp, err);
	if (ret)
		return ret;
	ret = sess_open(s, child, !s->opts->no_kernel, err);
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
	paths_notes(pr, res->paths_stopped, sizeof(res->paths_stopped));
	if (!ret && s->open)
		ret = sess_read_counts(s, err);
	if (!ret)
		ret = sess_calibrate(s, err);
	sess_describe(s, res->settings, sizeof(res->settings), &meta);
	if (!ret && pr->on && pr->plan[0]) {	/* the trampolines' samples */
		uint64_t moved = 0;

		ret = plan_tramp_remap(pr->dir, s->maps, s->agg, &moved, err);
		s->unknown -= moved < s->unknown ? moved : s->unknown;
	}
	if (!ret)
		ret = rec_write_epoch(s, db, &meta, res, err);
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
		if (!ret && pr.on && pr.values && opts->plan)
			ret = plan_prepare_run(&pr, opts->plan, res, err);
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
