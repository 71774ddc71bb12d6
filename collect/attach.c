/*
 * collect/attach.c - `dcpi record -p PID[,PID...]` and `-t TID[,TID...]`:
 * sample processes that are already running, as perf record -p does, and
 * write one epoch as collect_record does (DCPI paper sec. 4: the daemon
 * samples whatever runs; this is the same for a chosen few processes).
 *
 * A running program's threads get counters of their own, one per CPU,
 * writing into that CPU's ring (collect/sampler.c, smp_config.tids), read
 * from /proc/PID/task.  With -p the counters are inherited (attr.inherit):
 * perf_event copies a thread's counters into every thread and process it
 * starts after they were opened, so threads that live a millisecond are
 * sampled from their first instruction, which no look at /proc every few
 * milliseconds could do (tests/workloads/latethreads.c "churn": 6x the
 * samples).  The one gap is a thread started while the counters are being
 * opened, before its creator's were: it is not sampled.  With -t only the
 * threads named are sampled (no inherit).  The mappings come from
 * /proc/PID/maps at the start and from MMAP2 records after (and FORK
 * records for the processes the targets start).
 *
 * Recording stops after the duration, when the trailing command (`-p PID
 * -- sleep 5`, run unsampled) exits, on SIGINT/SIGTERM, or when every target
 * has exited.  The path and value runtime is preloaded when a command
 * execs; it cannot be put into a running process safely, so an attached
 * recording has time samples (and -g call chains) only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "internal.h"

#define ATTACH_POLL_MS 50
#define ATTACH_CHECK_MS 20	/* how often the targets' lives are checked */

struct attach {
	struct session s;
	const struct collect_attach_opts *a;
	pid_t *tids;		/* the threads found at the start */
	size_t ntids, cap;
	pid_t *procs;		/* the processes the targets belong to */
	size_t nprocs;
	pid_t cmd;		/* the trailing command, or 0 */
	int cmd_status;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The process or thread id runs (a zombie has exited: its parent has not
 * reaped it yet). */
static int alive(pid_t id)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The process thread tid belongs to, or -1. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	int tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static int known(const struct attach *at, pid_t tid)
{
	for (size_t i = 0; i < at->ntids; i++)
		if (at->tids[i] == tid)
			return 1;
	return 0;
}

static int remember(struct attach *at, pid_t tid)
{
	if (at->ntids == at->cap) {
		size_t cap = at->cap ? 2 * at->cap : 64;
		pid_t *t = realloc(at->tids, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		at->tids = t;
		at->cap = cap;
	}
	at->tids[at->ntids++] = tid;
	return 0;
}

/* The threads of process pid not yet known, remembered. */
static int scan_threads(struct attach *at, pid_t pid, struct dcpi_err *err)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;	/* exited */
	while (!ret && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0 || known(at, (pid_t)tid))
			continue;
		if (remember(at, (pid_t)tid))
			ret = dcpi_errf(err, -ENOMEM, "threads of %d: out of memory", (int)pid);
	}
	closedir(d);
	return ret;
}

static int add_proc(struct attach *at, pid_t pid, struct dcpi_err *err)
{
	pid_t *p;

	for (size_t i = 0; i < at->nprocs; i++)
		if (at->procs[i] == pid)
			return 0;
	p = realloc(at->procs, (at->nprocs + 1) * sizeof(*p));
	if (!p)
		return dcpi_errf(err, -ENOMEM, "attach: out of memory");
	at->procs = p;
	at->procs[at->nprocs++] = pid;
	return maps_scan_pid(at->s.maps, (uint32_t)pid, err);
}

/* The targets as they are now: every thread to attach to, and the
 * mappings of their processes. */
static int find_targets(struct attach *at, struct dcpi_err *err)
{
	const struct collect_attach_opts *a = at->a;
	int ret = 0;

	for (size_t i = 0; i < a->nids && !ret; i++) {
		pid_t id = a->ids[i], pid = a->threads ? tgid_of(id) : id;

		if (id <= 0 || pid <= 0 || !alive(id))
			return dcpi_errf(err, -ESRCH, "%s %d: no such %s", a->threads ? "thread" :
					 "process", (int)id, a->threads ? "thread" : "process");
		ret = add_proc(at, pid, err);
		if (!ret && a->threads && !known(at, id) && remember(at, id))
			ret = dcpi_errf(err, -ENOMEM, "attach: out of memory");
		if (!ret && !a->threads)
			ret = scan_threads(at, pid, err);
	}
	return ret;
}

/* 1 while a target lives. */
static int targets_live(const struct attach *at)
{
	if (at->a->threads) {
		for (size_t i = 0; i < at->a->nids; i++)
			if (alive(at->a->ids[i]))
				return 1;
		return 0;
	}
	for (size_t i = 0; i < at->nprocs; i++)
		if (alive(at->procs[i]))
			return 1;
	return 0;
}

/* The trailing command, unsampled and without the path runtime. */
static int start_command(struct attach *at, struct dcpi_err *err)
{
	char *const *argv = at->a->argv;
	int ep[2], e = 0;
	ssize_t n;

	if (pipe2(ep, O_CLOEXEC))
		return dcpi_errf(err, -errno, "pipe: %s", strerror(errno));
	at->cmd = fork();
	if (at->cmd < 0) {
		e = errno;
		close(ep[0]);
		close(ep[1]);
		at->cmd = 0;
		return dcpi_errf(err, -e, "fork: %s", strerror(e));
	}
	if (!at->cmd) {
		close(ep[0]);
		rec_exec(argv, ep[1]);
	}
	close(ep[1]);
	n = rec_exec_read(ep[0], &e);
	if (n == sizeof(e)) {
		waitpid(at->cmd, &at->cmd_status, 0);
		at->cmd = 0;
		return dcpi_errf(err, -e, "%s: %s", argv[0], strerror(e));
	}
	return 0;
}

/* 1 when recording should stop now. */
static int should_stop(struct attach *at, uint64_t deadline)
{
	volatile sig_atomic_t *ps = at->s.opts->pending_signal;

	if (ps && *ps) {
		if (at->cmd > 0)
			kill(at->cmd, *ps);
		*ps = 0;
		return 1;
	}
	if (deadline && now_ns() >= deadline)
		return 1;
	if (at->cmd > 0 && waitpid(at->cmd, &at->cmd_status, WNOHANG) == at->cmd) {
		at->cmd = 0;
		return 1;
	}
	return 0;
}

static int follow(struct attach *at, struct dcpi_err *err)
{
	const struct collect_attach_opts *a = at->a;
	uint64_t deadline = 0, checked = 0;
	int poll_ms = at->s.cfg.randomize ? SESS_RANDOM_MS : ATTACH_POLL_MS;
	int ret = 0;

	if (a->duration_seconds > 0)
		deadline = now_ns() + (uint64_t)(a->duration_seconds * 1e9);
	while (!ret) {
		ret = smp_wait(&at->s.smp, poll_ms);
		if (ret) {
			ret = dcpi_errf(err, ret, "poll: %s", strerror(-ret));
			break;
		}
		ret = sess_drain(&at->s, err);
		if (ret || should_stop(at, deadline))
			break;
		if (now_ns() - checked >= ATTACH_CHECK_MS * 1000000ULL) {
			checked = now_ns();
			if (!targets_live(at))
				break;
		}
	}
	if (!ret)	/* what the last wait let in */
		ret = sess_drain(&at->s, err);
	if (at->cmd > 0) {	/* stopped first: the command's part is over */
		kill(at->cmd, SIGTERM);
		waitpid(at->cmd, &at->cmd_status, 0);
		at->cmd = 0;
	}
	return ret;
}

/* What the settings say beyond the session's: whom we attached to. */
static void describe_targets(const struct attach *at, char *buf, size_t len)
{
	size_t l = strlen(buf);

	snprintf(buf + l, len - l, " attach=%s:", at->a->threads ? "tid" : "pid");
	for (size_t i = 0; i < at->a->nids; i++) {
		l = strlen(buf);
		snprintf(buf + l, len - l, "%s%d", i ? "," : "", at->a->ids[i]);
	}
	l = strlen(buf);
	snprintf(buf + l, len - l, " threads=%zu%s", at->ntids,
		 at->a->threads ? "" : "+inherited");
}

static int run(struct attach *at, struct prof_db *db, struct collect_result *res,
	       struct dcpi_err *err)
{
	struct prof_epoch_meta meta;
	int ret;

	ret = find_targets(at, err);
	if (ret)
		return ret;
	at->s.cfg.tids = at->tids;
	at->s.cfg.ntids = at->ntids;
	at->s.cfg.attach_inherit = !at->a->threads;
	ret = sess_open(&at->s, at->procs[0], !at->s.opts->no_kernel, err);
	if (ret)
		return ret;
	memset(&meta, 0, sizeof(meta));
	prof_meta_this_machine(&meta);
	meta.start_ns = dcpi_wall_ns();
	if (at->a->argv && at->a->argv[0])
		ret = start_command(at, err);
	if (!ret)
		ret = follow(at, err);
	meta.end_ns = dcpi_wall_ns();
	if (!ret)
		ret = sess_read_counts(&at->s, err);
	/* Both calibration runs after: the targets run meanwhile either way,
	 * and the user asked to attach now, not in a second (record.c runs
	 * one before the command starts and one after it ends). */
	for (int i = 0; i < 2 && !ret; i++)
		ret = sess_calibrate(&at->s, err);
	sess_describe(&at->s, res->settings, sizeof(res->settings), &meta);
	describe_targets(at, res->settings, sizeof(res->settings));
	if (!ret)
		ret = rec_write_epoch(&at->s, db, &meta, res, err);
	res->status = at->cmd_status;
	return ret;
}

int collect_attach(const struct collect_opts *opts, const struct collect_attach_opts *a,
		   struct collect_result *res, struct dcpi_err *err)
{
	struct attach at;
	struct prof_db *db = NULL;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&at, 0, sizeof(at));
	if ((!opts->event && !opts->nevents) || !a || !a->nids)
		return dcpi_errf(err, -EINVAL, "record: no event or nothing to attach to");
	at.a = a;
	ret = sess_init(&at.s, opts, err);
	if (!ret)
		ret = prof_db_open(opts->db_dir, PROF_DB_CREATE, &db, err);
	if (!ret)
		ret = run(&at, db, res, err);
	if (at.cmd > 0) {	/* failed while it ran */
		kill(at.cmd, SIGTERM);
		waitpid(at.cmd, NULL, 0);
	}
	sess_free(&at.s);
	prof_db_close(db);
	free(at.tids);
	free(at.procs);
	return ret;
}
