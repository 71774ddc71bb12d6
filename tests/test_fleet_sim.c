/*
 * tests/test_fleet_sim.c - a simulated fleet on a real clickhouse-server:
 * two recordings of tests/workloads/demo_work made into 20 hosts x 3 epochs
 * by bench/fleet_gen.c (counts scaled per host and epoch, per-entry noise,
 * per-host calibration), pushed with `dcpi push`; then
 *  - `dcpi pull` of demo_work equals `dcpi merge` of the hosts' databases,
 *    byte for byte (fleet/pull.c, docs/fleet.md "Pull equals merge");
 *  - `dcpiprof --from URL` (the server sums, nothing written locally) prints
 *    what dcpiprof prints for the pulled database, text and --json, and,
 *    over every image, what it prints for the merged database.
 * bench/bench_fleet.sh runs the same at 100 hosts x 10 epochs and times it.
 * The server is private to the test (tests/tu_clickhouse.h); without
 * clickhouse-server the tests skip.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "tu_fleet.h"
#include "tu_main.h"

#define HOSTS 20
#define EPOCHS 3

static char ws[400], wl[600], url[200], hosts[8192];
static const char *bin;
static struct tu_ch srv;

/* Record the workload twice into ws/src, and make the fleet of it. */
static int make_fleet(void)
{
	char gen[600];

	tu_build_file(gen, sizeof(gen), "bench/fleet_gen");
	if (tu_sh("'%1$s' record --db '%2$s/src' -- '%3$s' >/dev/null 2>&1 && "
		  "'%1$s' record --db '%2$s/src' -- '%3$s' >/dev/null 2>&1 && "
		  "'%4$s' '%2$s/src' '%2$s/fleet' %5$d %6$d 7 >&2", bin, ws, wl, gen, HOSTS,
		  EPOCHS))
		return -1;
	hosts[0] = '\0';
	for (int h = 0, k = 0; h < HOSTS; h++)
		k += snprintf(hosts + k, sizeof(hosts) - (size_t)k, "'%s/fleet/host%03d' ", ws,
			      h);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int push_fleet(void)
{
	double t0 = now_s();
	int rc;

	rc = tu_sh("'%s' push --to %s --init 2>/dev/null && for d in %s; do '%s' push --to %s "
		   "--db \"$d\" --host \"$(basename \"$d\")\" 2>/dev/null || exit 1; done", bin,
		   url, hosts, bin, url);
	fprintf(stderr, "fleet_sim: %d hosts x %d epochs pushed in %.2f s\n", HOSTS, EPOCHS,
		now_s() - t0);
	return rc;
}

static int group_setup(void **state)
{
	int rc;

	(void)state;
	if (tu_run_setup(&bin, wl, sizeof(wl), "demo_work", ws, sizeof(ws), "fleet-sim") < 0)
		return -1;
	rc = tu_fleet_start(&srv, ws);
	if (rc <= 0)
		return rc;
	snprintf(url, sizeof(url), "clickhouse://127.0.0.1:%d/sim", srv.http);
	if (make_fleet() < 0 || push_fleet())
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return tu_fleet_stop(&srv, ws);
}

/* `dcpi pull` of demo_work from the fleet (with OPTS) into ws/name. */
static void pull(const char *opts, const char *name)
{
	assert_int_equal(tu_sh("'%s' pull --from %s --image demo_work %s -o '%s/%s' 2>/dev/null",
			       bin, url, opts, ws, name), 0);
}

/* The pulled image equals the merged hosts' files, byte for byte. */
static void test_sim_pull_equals_merge(void **state)
{
	char a[600], b[600];

	(void)state;
	TU_NEED_SERVER();
	snprintf(a, sizeof(a), "%s/pulled", ws);
	snprintf(b, sizeof(b), "%s/merged", ws);
	assert_int_equal(tu_sh("'%s' merge %s -o '%s' 2>/dev/null", bin, hosts, b), 0);
	pull("", "pulled");
	/* demo_work's cpu-clock profile and the metadata */
	tu_assert_epoch_files_equal(a, b, 2);
}

/* dcpiprof ARGS_A and ARGS_B print the same, but for the first line (which
 * names the database), and the same JSON but for its "epoch". */
static void assert_prof_same(const char *args_a, const char *args_b)
{
	assert_int_equal(tu_sh("'%1$s' prof %2$s | tail -n +2 > '%4$s/a.txt' && '%1$s' prof %3$s "
			       "| tail -n +2 > '%4$s/b.txt' && test -s '%4$s/a.txt' && "
			       "diff '%4$s/a.txt' '%4$s/b.txt' >&2", bin, args_a, args_b, ws), 0);
	assert_int_equal(tu_sh("'%1$s' prof %2$s --json > '%4$s/a.json' && '%1$s' prof %3$s "
			       "--json > '%4$s/b.json' && python3 -c \"import json, sys\n"
			       "a, b = (json.load(open(f)) for f in sys.argv[1:])\n"
			       "a.pop('epoch'); b.pop('epoch')\nsys.exit(a != b or not "
			       "a['procedures' if 'procedures' in a else 'images'])\" "
			       "'%4$s/a.json' '%4$s/b.json'", bin, args_a, args_b, ws), 0);
}

/*
 * dcpiprof --from URL answers from the server: demo_work's procedures equal
 * dcpiprof's over the pulled database; a subset of hosts, theirs; every
 * image (per procedure and per image) equals dcpiprof's over dcpi merge.
 */
static void test_prof_from_fleet(void **state)
{
	/* dcpiprof --from URL FROM equals dcpiprof --db ws/DB OPTS */
	static const struct {
		const char *from, *db, *opts;
	} same[] = {
		{ "--image demo_work", "pulled", "" },
		{ "--image demo_work --hosts 'host00?'", "pulled10", "" },
		{ "", "merged", "" },
		{ "-i", "merged", "-i" },
	};
	char a[1200], b[1200], p[700];

	(void)state;
	TU_NEED_SERVER();
	snprintf(p, sizeof(p), "%s/pulled", ws);
	if (access(p, F_OK))
		pull("", "pulled");
	pull("--hosts 'host00?'", "pulled10");
	assert_int_equal(tu_sh("test -d '%1$s/merged' || '%2$s' merge %3$s -o '%1$s/merged' "
			       "2>/dev/null", ws, bin, hosts), 0);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(a, sizeof(a), "--from %s %s", url, same[i].from);
		snprintf(b, sizeof(b), "--db '%s/%s' %s", ws, same[i].db, same[i].opts);
		assert_prof_same(a, b);
	}
}

TU_MAIN(group_setup, group_teardown,
	cmocka_unit_test(test_sim_pull_equals_merge),
	cmocka_unit_test(test_prof_from_fleet))
