/*
 * tools/cmd_merge.c - dcpi merge: databases from several hosts (or runs) into one
 * epoch of a new database, through the associative merge of profiles, path
 * profiles and metadata (profile/merge.c): the order of the inputs does not
 * change a byte of the result.  Value profiles (profile/values.c) merge too;
 * their merge is commutative but rounds, so with three or more inputs the
 * order may change their counts slightly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgraph.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/data.h"
#include "dcpi/slices.h"
#include "dcpi/values.h"
#include "tools.h"

static const char merge_usage[] =
	"usage: dcpi merge DB... -o OUT [--newest]\n"
	"  merges every epoch of each DB (--newest: only each one's newest) into one\n"
	"  new epoch of the database OUT (created if missing; an existing OUT must be\n"
	"  empty or a database, and no input). All or nothing: on any error (a\n"
	"  damaged profile, a full disk) OUT is left as it was.\n";

/* Every kind of profile of epoch src of in into epoch of out, in this order. */
static int merge_epoch(struct prof_db *out, const char *epoch, struct prof_db *in,
		       const char *src, struct dcpi_err *err)
{
	static int (*const kinds[])(struct prof_db *, const char *, struct prof_db *,
				    const char *, struct dcpi_err *) = {
		prof_epoch_merge, path_epoch_merge, val_epoch_merge, slice_epoch_merge,
		pslice_epoch_merge, vslice_epoch_merge, data_epoch_merge, cg_epoch_merge,
	};
	int rc = 0;

	for (size_t k = 0; rc >= 0 && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		rc = kinds[k](out, epoch, in, src, err);
	return rc;
}

/* Every epoch of in (or its newest holding profiles) into the open
 * transaction on epoch of out. */
static int merge_one(struct prof_db *out, const char *epoch, struct prof_db *in, int newest,
		     size_t *nep, struct dcpi_err *err)
{
	char **names = NULL, latest[256];
	size_t n = 0;
	int rc = 0;

	if (newest) {
		rc = prof_db_latest_epoch(in, latest, sizeof(latest), err);
		if (rc >= 0)
			rc = merge_epoch(out, epoch, in, latest, err);
		*nep += rc >= 0;
		return rc;
	}
	rc = prof_db_epochs(in, &names, &n, err);
	for (size_t i = 0; i < n && rc >= 0; i++) {
		rc = merge_epoch(out, epoch, in, names[i], err);
		*nep += rc >= 0;
	}
	prof_names_free(names, n);
	return rc;
}

static void close_all(struct prof_db **in, int n)
{
	for (int i = 0; i < n; i++)
		prof_db_close(in[i]);
	free(in);
}

/*
 * Everything is checked before anything is written (the inputs open, the
 * output is not one of them by device and inode, nor someone's directory),
 * and all the inputs go into one transaction on the new epoch: a failure
 * anywhere leaves the output as it was, so a retry cannot count twice.
 */
static int merge_all(const char *dst, char **inputs, int ninputs, int newest)
{
	struct dcpi_err err = { 0 };
	struct prof_db **in, *out = NULL;
	char epoch[64] = "";
	size_t nep = 0;
	int rc = 0, empty;

	if (prof_db_check_target(dst, &err) < 0)
		return tool_fail("%s", err.msg);
	in = calloc((size_t)ninputs, sizeof(*in));
	if (!in)
		return tool_fail("out of memory");
	for (int i = 0; i < ninputs && !rc; i++) {
		if (prof_db_open(inputs[i], 0, &in[i], &err) < 0)
			rc = tool_fail("%s", err.msg);
		else if (prof_db_is_dir(in[i], dst))
			rc = tool_fail("%s: the output is the input %s (the same directory)", dst,
				       inputs[i]);
	}
	if (!rc && (prof_db_open(dst, PROF_DB_CREATE, &out, &err) < 0 ||
		    prof_db_epoch_new(out, epoch, sizeof(epoch), &err) < 0 ||
		    prof_epoch_begin(out, epoch, &err) < 0))
		rc = tool_fail("%s", err.msg);
	for (int i = 0; i < ninputs && !rc; i++)
		if (merge_one(out, epoch, in[i], newest, &nep, &err) < 0)
			rc = tool_fail("%s", err.msg);
	empty = rc ? 0 : prof_epoch_is_empty(out, epoch, &err);
	if (empty < 0)
		rc = tool_fail("%s", err.msg);
	if (!rc && !empty && prof_epoch_commit(out, &err) < 0)
		rc = tool_fail("%s (nothing merged)", err.msg);
	else if (out && (rc || empty))
		prof_epoch_abort(out);
	if (out && epoch[0] && (rc || empty))
		prof_db_epoch_drop_empty(out, epoch);
	if (!rc && empty)
		fprintf(stderr, "%s: no profiles in %d database%s: no epoch written to %s\n",
			tool_name, ninputs, ninputs == 1 ? "" : "s", dst);
	else if (!rc)
		fprintf(stderr, "%s: %zu epoch%s of %d database%s into %s/%s\n", tool_name, nep,
			nep == 1 ? "" : "s", ninputs, ninputs == 1 ? "" : "s", dst, epoch);
	if (out)
		tool_db_notes(out);
	prof_db_close(out);
	close_all(in, ninputs);
	return rc;
}

int cmd_merge(int argc, char **argv)
{
	struct tool_opts o = { .usage = merge_usage, .shortopts = "o:h", .longopts = "newest:N",
			       .common = TOOL_O_OUTPUT };
	const char *dst;
	int c, newest = 0;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'N': newest = 1; break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	dst = o.val.out;
	if (!dst || optind == argc) {
		fprintf(stderr, merge_usage);
		return tool_fail(!dst ? "-o OUT is required" : "no database to merge");
	}
	return merge_all(dst, argv + optind, argc - optind, newest);
}
