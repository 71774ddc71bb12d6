/*
 * tests/tu_fleet.h - the fixture the fleet tests share (test_fleet.c,
 * test_fleet_kinds.c, test_fleet_sim.c, test_fleet_daemon.c): one
 * clickhouse-server of tests/tu_clickhouse.h for a cmocka group, inside the
 * group's workspace, started where the server is installed and stopped with
 * the workspace removed at the group's end; a test that needs the server
 * skips where it does not run (TU_NEED_SERVER).  Header-only; include it
 * after cmocka.h.
 */
#ifndef DCPI_TU_FLEET_H
#define DCPI_TU_FLEET_H

#include <signal.h>
#include <stdlib.h>

#include "tu_clickhouse.h"
#include "tu_run.h"

/* 1 once tu_fleet_start started the group's server. */
static int tu_fleet_up;

/* In a test that needs the group's server: skipped without it. */
#define TU_NEED_SERVER() do { if (!tu_fleet_up) skip(); } while (0)

/* srv started in ws/ch: 1 (and tu_fleet_up); 0 where no server is
 * installed (the tests that need one skip); -1 when it would not start. */
static inline int tu_fleet_start(struct tu_ch *srv, const char *ws)
{
	if (!tu_ch_available())
		return 0;
	if (tu_ch_prepare(srv, ws, "ch") < 0 || tu_ch_start(srv) < 0) {
		tu_ch_stop(srv, SIGKILL);
		return -1;
	}
	tu_fleet_up = 1;
	return 1;
}

/* A group setup: *bin the dcpi of tests/run.sh, a new workspace ws named
 * after name, and srv in it as tu_fleet_start says; -1 on failure, else 0. */
static inline int tu_fleet_setup(const char **bin, char *ws, size_t len, const char *name,
				 struct tu_ch *srv)
{
	*bin = getenv("DCPI_BIN");
	if (!*bin || tu_workspace(ws, len, name) < 0)
		return -1;
	return tu_fleet_start(srv, ws) < 0 ? -1 : 0;
}

/* A group teardown's work: srv stopped, the workspace ws removed. */
static inline int tu_fleet_stop(struct tu_ch *srv, const char *ws)
{
	tu_ch_stop(srv, SIGTERM);
	if (ws[0])
		tu_rm_tree(ws);
	return 0;
}

/* Every file of a's single epoch is in b's single epoch with the same bytes,
 * and a holds n files. */
static inline void tu_assert_epoch_files_equal(const char *a, const char *b, int n)
{
	assert_int_equal(tu_sh("cd '%s'/0* && test $(ls | wc -l) -eq %d && for f in *; do "
			       "cmp -s \"$f\" '%s'/0*/\"$f\" || { echo \"differs: $f\" >&2; "
			       "exit 1; }; done", a, n, b), 0);
}

#endif
