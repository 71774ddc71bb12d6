/*
 * tools/record_attach.c - the parts of `dcpi record` (tools/cmd_record.c)
 * that a run and an attach share (signals passed on, the database checked
 * before anything runs) and the attach itself: -p/-t/--duration parsed,
 * then collect_attach (collect/attach.c).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/collect.h"
#include "dcpi/profile.h"
#include "record.h"
#include "tools.h"

volatile sig_atomic_t record_pending_signal;

static void on_signal(int sig)
{
	record_pending_signal = sig;
}

void record_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The database must take an epoch before the command runs, not after. */
int record_check_db(const char *dir)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	int rc = prof_db_open(dir, PROF_DB_CREATE, &db, &err);

	if (!rc)
		rc = prof_db_check_writable(db, &err);
	prof_db_close(db);
	return rc ? tool_fail("%s (the command was not run)", err.msg) : 0;
}

#define ATTACH_MAX 256

/* -p LIST, -t LIST, --duration S into a. */
int record_attach_option(int c, const char *arg, struct collect_attach_opts *a)
{
	static int ids[ATTACH_MAX];
	char *end;

	if (c == 'R') {
		a->duration_seconds = strtod(arg, &end);
		if (end == arg || *end || !(a->duration_seconds > 0))
			return tool_fail("--duration %s: want a number of seconds above 0", arg);
		return 0;
	}
	if (a->nids && a->threads != (c == 't'))
		return tool_fail("-p and -t: give one or the other");
	a->threads = c == 't';
	a->ids = ids;
	for (const char *p = arg; *p; p = *end ? end + 1 : end) {
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0 || v > INT32_MAX || (*end && *end != ','))
			return tool_fail("-%c %s: want ids separated by commas", c, arg);
		if (a->nids == ATTACH_MAX)
			return tool_fail("-%c: more than %d ids", c, ATTACH_MAX);
		ids[a->nids++] = (int)v;
	}
	return 0;
}

/* -p/-t: time samples of running threads (collect/attach.c); CMD, if any,
 * only says how long. */
int record_attached(struct collect_opts *o, struct collect_attach_opts *a,
			   char *const *cmd, const char *db, int quiet)
{
	struct collect_result res;
	struct dcpi_err err = { 0 };

	if (!a->nids)
		return tool_fail("--duration needs -p or -t");
	if (o->latency)
		return tool_fail("--latency needs the program started by "
				 "dcpi record (drop -p/-t)");
	if (o->paths_rate)
		fprintf(stderr, "%s: note: path and value samples need the program started by "
			"dcpi record; -%c records PC samples only\n", tool_name,
			a->threads ? 't' : 'p');
	o->paths_rate = o->paths_steps = 0;
	o->values = 0;
	a->argv = cmd[0] ? cmd : NULL;
	o->db_dir = tool_db_dir(db);
	if (record_check_db(o->db_dir))
		return 1;
	o->pending_signal = &record_pending_signal;
	record_catch_signals();
	if (collect_attach(o, a, &res, &err))
		return tool_fail("%s", err.msg);
	if (!quiet)
		fprintf(stderr, "%s: %llu samples (%llu lost) of %s into %s/%s\n", tool_name,
			(unsigned long long)res.samples, (unsigned long long)res.lost,
			o->events[0]->name, o->db_dir, res.epoch);
	return 0;
}
