/*
 * import.c - dcpi import: perf.data or callgrind output into a new epoch of
 * the database (include/dcpi/import.h, docs/import.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "dcpi/collect.h"
#include "dcpi/import.h"
#include "dcpi/profile.h"
#include "tools.h"

static const char import_usage[] =
	"usage: dcpi import [options] FILE\n"
	"  FILE is a perf.data file (perf record) or callgrind output\n"
	"  (valgrind --tool=callgrind --dump-instr=yes [--collect-jumps=yes]; with\n"
	"  --skip-plt=no a call through the PLT keeps its own count, not the stub's too);\n"
	"  the type is detected from the file's content.\n"
	"      --db DIR       profile database (default $DCPIDB, then ./dcpidb)\n"
	"      --no-calibrate a perf.data recorded on this host is calibrated here\n"
	"                     (0.1 s of a known loop under its event and period):\n"
	"                     skip that; counts then use period x clock or are relative\n"
	"      --binary FILE  the recorded program's file is FILE (matched by build-id,\n"
	"                     else by file name); may be given several times\n"
	"      --symfs DIR    look for recorded files under DIR (as perf --symfs)\n"
	"      --buildid-dir DIR  perf's build-id cache (default $HOME/.debug)\n"
	"                     profiles name the file where it was found\n"
	"      --vmlinux FILE the recorded kernel's vmlinux (refused unless its build-id\n"
	"                     is the recorded kernel's); without it one is looked for\n"
	"                     as perf does, else kernel samples are named from\n"
	"                     /proc/kallsyms\n"
	"  -q, --quiet        print nothing on success\n";

static void print_stats(const char *path, const struct import_stats *st)
{
	if (st->kind == IMPORT_PERF || st->kind == IMPORT_PERFSCRIPT)
		printf("%s: %" PRIu64 " samples (%" PRIu64 " in no image, %" PRIu64
		       " lost by the kernel) into %" PRIu64 " profiles of %" PRIu64
		       " images, epoch %s\n", path, st->samples, st->unknown_samples, st->lost,
		       st->profiles, st->images, st->epoch);
	else
		printf("%s: %" PRIu64 " cost lines into %" PRIu64 " profiles of %" PRIu64
		       " images, %" PRIu64 " jump edges, epoch %s\n", path, st->samples,
		       st->profiles, st->images, st->jumps, st->epoch);
	if (st->unknown_records)
		printf("%s: skipped %" PRIu64 " records of types not used here\n", path,
		       st->unknown_records);
}

/*
 * A perf.data has no calibration: one sample is worth period x clock minus
 * the sampling overhead, which perf never measures.  When it was recorded on
 * this host (same hostname and CPU), measure what `dcpi record` measures --
 * the known-cycle loop under the same event and period -- and store it in the
 * epoch as calibrated at import.  Otherwise say what the counts rest on.
 */
static void calibrate_import(struct prof_db *db, const struct import_stats *st, int quiet)
{
	struct prof_epoch_meta m, here;
	struct dcpi_err err = { 0 };
	struct utsname u;
	double cps = 0, cpns = 0;
	size_t w;

	if (st->kind != IMPORT_PERF || !st->period_ns || st->period < 1000)
		return;		/* event periods count cycles or events: nothing to do */
	if (prof_epoch_meta_read(db, st->epoch, &m, &err) < 0) {
		fprintf(stderr, "%s: %s\n", tool_name, err.msg);
		return;
	}
	memset(&here, 0, sizeof(here));
	prof_meta_this_machine(&here);
	if (uname(&u) < 0 || !st->hostname[0] || strcmp(u.nodename, st->hostname) ||
	    (m.cpu_family && (strcmp(m.cpu_vendor, here.cpu_vendor) ||
			      m.cpu_family != here.cpu_family || m.cpu_model != here.cpu_model))) {
		if (!quiet)
			printf("uncalibrated: recorded on %s, not this host and CPU: "
			       "1 sample = period x %s\n",
			       st->hostname[0] ? st->hostname : "an unnamed host",
			       m.cycles_per_ns > 0 ? "the nominal clock of its CPU name" :
			       "an unknown clock (dcpicalc counts are relative)");
		return;
	}
	if (collect_calibrate(st->event, (uint64_t)(st->period + 0.5), 100, &cps, &cpns, &err) < 0) {
		fprintf(stderr, "%s: calibration at import skipped: %s\n", tool_name, err.msg);
		return;
	}
	m.calibrated = 1;
	m.cycles_per_sample = cps;
	m.cycles_per_ns = cpns;
	w = strlen(m.settings);
	if (w < sizeof(m.settings))
		snprintf(m.settings + w, sizeof(m.settings) - w,
			 "; calibrated at import on this host (%s): %s every %.0f ns = %.0f cycles "
			 "(clock %.3f GHz)", st->hostname, st->event, st->period, cps, cpns);
	if (prof_epoch_meta_write(db, st->epoch, &m, &err) < 0) {
		fprintf(stderr, "%s: %s\n", tool_name, err.msg);
		return;
	}
	if (!quiet)
		printf("calibrated at import (recorded on this host): 1 sample of %s every %.0f ns "
		       "= %.0f cycles (period x clock would say %.0f)\n", st->event, st->period,
		       cps, st->period * cpns);
}

int cmd_import(int argc, char **argv)
{
	struct tool_opts o = { .usage = import_usage, .shortopts = "qh",
			       .longopts = "no-calibrate:C binary=B symfs=S buildid-dir=I",
			       .common = TOOL_O_DB | TOOL_O_QUIET | TOOL_O_VMLINUX };
	const char *path;
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	int c, quiet, ret, calibrate = 1;
	const char *bins[16];
	struct import_opts io;

	tool_name = "dcpi import";
	memset(&io, 0, sizeof(io));
	io.find.binaries = bins;
	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'C':
			calibrate = 0;
			break;
		case 'B':
			if (tool_opt_keep(bins, &io.find.nbinaries,
					  sizeof(bins) / sizeof(bins[0])) < 0)
				return tool_fail("--binary: at most %zu files", io.find.nbinaries);
			break;
		case 'S':
			io.find.symfs = optarg;
			break;
		case 'I':
			io.find.buildid_dir = optarg;
			break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	quiet = o.val.quiet;
	io.find.vmlinux = o.val.vmlinux;
	if (optind != argc - 1) {
		fputs(import_usage, stderr);
		return 1;
	}
	path = argv[optind];
	memset(&st, 0, sizeof(st));
	ret = prof_db_open(tool_db_dir(o.val.db), PROF_DB_CREATE, &db, &err);
	if (!ret)
		ret = import_file_opts(path, &io, db, &st, &err);
	if (ret) {
		prof_db_close(db);
		return tool_fail("%s", err.msg);
	}
	if (st.note[0])
		fprintf(stderr, "%s: %s: %s\n", tool_name, path, st.note);
	if (!quiet)
		print_stats(path, &st);
	if (calibrate)
		calibrate_import(db, &st, quiet);
	prof_db_close(db);
	return 0;
}
