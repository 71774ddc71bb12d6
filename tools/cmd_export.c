/*
 * tools/cmd_export.c - dcpi export --pprof: an epoch as a gzip'd pprof profile.proto
 * (report/pprof.c), for `go tool pprof` and the continuous-profiling back
 * ends that read it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"
#include "dcpi/optimize.h"
#include "dcpi/report.h"
#include "tools.h"

static const char export_usage[] =
	"usage: dcpi export --pprof [-o FILE] [--db DIR] [--epoch E|all]\n"
	"  writes the epoch's samples as a gzip'd pprof profile (profile.proto): one\n"
	"  sample type per event, locations with function, file and line, mappings\n"
	"  with build-ids (default FILE: dcpi.pb.gz; '-': standard output)\n";

int cmd_export(int argc, char **argv)
{
	struct tool_opts o = { .usage = export_usage, .shortopts = "o:h", .longopts = "pprof:p",
			       .common = TOOL_O_DB | TOOL_O_EPOCH | TOOL_O_OUTPUT };
	const char *out = "dcpi.pb.gz", *db, *epoch;
	struct prof_epoch_meta meta;
	struct dcpi_err err = { 0 };
	struct prof_profile *p = NULL;
	struct prof_db *d = NULL;
	char used[256];
	uint8_t *buf = NULL;
	struct cg_profile *cg = NULL;	/* stacks, with record -g */
	size_t n = 0, len = 0, ncg = 0;
	int c, pprof = 0, rc = 0, have_meta;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'p': pprof = 1; break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	if (o.val.out)
		out = o.val.out;
	db = o.val.db;
	epoch = o.val.epoch;
	if (!pprof || optind != argc) {
		fprintf(stderr, export_usage);
		return tool_fail(pprof ? "unexpected argument %s" : "--pprof is the one format",
				 pprof ? argv[optind] : "");
	}
	if (prof_db_open(tool_db_dir(db), 0, &d, &err) < 0 ||
	    rep_load_profiles(d, epoch, &p, &n, used, sizeof(used), &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	tool_db_notes(d);
	if (!n) {
		rc = tool_fail("%s: epoch %s holds no samples: nothing to export",
			       tool_db_dir(db), used);
		goto out;
	}
	have_meta = strcmp(used, "all") && prof_epoch_meta_read(d, used, &meta, &err) == 0;
	if (rep_cg_load(d, used, &cg, &ncg, &err) < 0 ||
	    rep_pprof_cg(p, n, cg, ncg, have_meta ? &meta : NULL, &buf, &len, &err) < 0 ||
	    opt_write_file(out, buf, len, &err) < 0) {
		rc = tool_fail("%s", err.msg);
		goto out;
	}
	if (strcmp(out, "-"))
		fprintf(stderr, "%s: %s: pprof profile of epoch %s, %zu bytes\n", tool_name, out,
			used, len);
out:
	free(buf);
	prof_profiles_free(p, n);
	cg_profiles_free(cg, ncg);
	if (d)
		prof_db_close(d);
	return rc;
}
