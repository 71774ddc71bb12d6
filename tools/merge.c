/*
 * merge.c - dcpi merge: databases from several hosts (or runs) into one
 * epoch of a new database, through the associative merge of profiles, path
 * profiles and metadata (profile/merge.c): the order of the inputs does not
 * change a byte of the result.  Value profiles (profile/values.c) merge too;
 * their merge is commutative but rounds, so with three or more inputs the
 * order may change their counts slightly.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/values.h"
#include "tools.h"

static const char merge_usage[] =
	"usage: dcpi merge DB... -o OUT [--newest]\n"
	"  merges every epoch of each DB (--newest: only each one's newest) into one\n"
	"  new epoch of the database OUT (created if missing)\n";

/* Every kind of profile of epoch src of in into epoch of out. */
static int merge_epoch(struct prof_db *out, const char *epoch, struct prof_db *in,
		       const char *src, struct dcpi_err *err)
{
	int rc = prof_epoch_merge(out, epoch, in, src, err);

	if (rc >= 0)
		rc = path_epoch_merge(out, epoch, in, src, err);
	if (rc >= 0)
		rc = val_epoch_merge(out, epoch, in, src, err);
	return rc;
}

static int merge_one(struct prof_db *out, const char *epoch, const char *dir, int newest,
		     size_t *nep)
{
	struct dcpi_err err = { 0 };
	struct prof_db *in = NULL;
	char **names = NULL, latest[256];
	size_t n = 0;
	int rc = 0;

	if (prof_db_open(dir, 0, &in, &err) < 0)
		return tool_fail("%s", err.msg);
	if (newest) {
		if (prof_db_latest_epoch(in, latest, sizeof(latest), &err) < 0) {
			rc = tool_fail("%s", err.msg);
			goto out;
		}
		rc = merge_epoch(out, epoch, in, latest, &err);
		*nep += rc >= 0;
	} else {
		if (prof_db_epochs(in, &names, &n, &err) < 0) {
			rc = tool_fail("%s", err.msg);
			goto out;
		}
		for (size_t i = 0; i < n && rc >= 0; i++) {
			rc = merge_epoch(out, epoch, in, names[i], &err);
			*nep += rc >= 0;
		}
	}
	if (rc < 0)
		rc = tool_fail("%s", err.msg);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	prof_db_close(in);
	return rc;
}

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "newest", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dcpi_err err = { 0 };
	struct prof_db *out;
	const char *dst = NULL;
	char epoch[64];
	size_t nep = 0;
	int c, newest = 0, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': dst = optarg; break;
		case 'N': newest = 1; break;
		case 'h': printf(merge_usage); return 0;
		default: fprintf(stderr, merge_usage); return 1;
		}
	}
	if (!dst || optind == argc) {
		fprintf(stderr, merge_usage);
		return tool_fail(!dst ? "-o OUT is required" : "no database to merge");
	}
	for (int i = optind; i < argc; i++)
		if (!strcmp(argv[i], dst))
			return tool_fail("%s: the output is one of the inputs", dst);
	if (prof_db_open(dst, PROF_DB_CREATE, &out, &err) < 0 ||
	    prof_db_epoch_new(out, epoch, sizeof(epoch), &err) < 0)
		return tool_fail("%s", err.msg);
	for (int i = optind; i < argc && !rc; i++)
		rc = merge_one(out, epoch, argv[i], newest, &nep);
	prof_db_close(out);
	if (!rc)
		fprintf(stderr, "%s: %zu epoch%s of %d database%s into %s/%s\n", tool_name, nep,
			nep == 1 ? "" : "s", argc - optind, argc - optind == 1 ? "" : "s", dst,
			epoch);
	return rc;
}
