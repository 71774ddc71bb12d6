/*
 * import.c - dcpi import: perf.data or callgrind output into a new epoch of
 * the database (include/dcpi/import.h, docs/import.md).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/import.h"
#include "dcpi/profile.h"
#include "tools.h"

static const char import_usage[] =
	"usage: dcpi import [options] FILE\n"
	"  FILE is a perf.data file (perf record) or callgrind output\n"
	"  (valgrind --tool=callgrind --dump-instr=yes [--collect-jumps=yes]);\n"
	"  the type is detected from the file's content.\n"
	"      --db DIR       profile database (default $DCPIDB, then ./dcpidb)\n"
	"  -q, --quiet        print nothing on success\n";

static void print_stats(const char *path, const struct import_stats *st)
{
	if (st->kind == IMPORT_PERF)
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

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db_opt = NULL, *path;
	struct import_stats st;
	struct dcpi_err err = { 0 };
	struct prof_db *db = NULL;
	int c, quiet = 0, ret;

	tool_name = "dcpi import";
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			db_opt = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(import_usage, stdout);
			return 0;
		default:
			fputs(import_usage, stderr);
			return 1;
		}
	}
	if (optind != argc - 1) {
		fputs(import_usage, stderr);
		return 1;
	}
	path = argv[optind];
	memset(&st, 0, sizeof(st));
	ret = prof_db_open(tool_db_dir(db_opt), PROF_DB_CREATE, &db, &err);
	if (!ret)
		ret = import_file(path, db, &st, &err);
	prof_db_close(db);
	if (ret)
		return tool_fail("%s", err.msg);
	if (st.note[0])
		fprintf(stderr, "%s: %s: %s\n", tool_name, path, st.note);
	if (!quiet)
		print_stats(path, &st);
	return 0;
}
