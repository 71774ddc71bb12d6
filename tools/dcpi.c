/*
 * dcpi.c - the one binary.  `dcpi <command>` and the DCPI names (dcpiprof,
 * dcpicalc, ...: links to this binary) land in the same cmd_xxx, as git's
 * builtins do.  Commands not built into this binary are weak and NULL.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"
#include "tools.h"

#pragma weak cmd_record
#pragma weak cmd_daemon
#pragma weak cmd_import
#pragma weak cmd_calc
#pragma weak cmd_cfg
#pragma weak cmd_stats
#pragma weak cmd_diff
#pragma weak cmd_list
#pragma weak cmd_model
#pragma weak cmd_calibrate
#pragma weak cmd_llvm_prof
#pragma weak cmd_gcc_prof
#pragma weak cmd_bolt_prof
#pragma weak cmd_prefetch_hints
#pragma weak cmd_merge
#pragma weak cmd_export
#pragma weak cmd_push
#pragma weak cmd_pull
#pragma weak cmd_timeline
#pragma weak cmd_skidloops
#pragma weak cmd_vlist
#pragma weak cmd_vargs
#pragma weak cmd_vcg
#pragma weak cmd_vblks
#pragma weak cmd_specialize

struct command {
	const char *name;	/* dcpi <name> */
	const char *alias;	/* the DCPI name, or NULL */
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "record", NULL, cmd_record, "run a command and sample it into the database" },
	{ "daemon", "dcpid", cmd_daemon, "sample the whole system until stopped" },
	{ "import", NULL, cmd_import, "import perf.data or callgrind.out into the database" },
	{ "prof", "dcpiprof", cmd_prof, "samples per procedure or per image" },
	{ "timeline", NULL, cmd_timeline, "samples over time, phases marked: an SVG or HTML picture" },
	{ "calc", "dcpicalc", cmd_calc, "frequency, CPI and stalls of one procedure" },
	{ "cfg", "dcpicfg", cmd_cfg, "control-flow graph of one procedure" },
	{ "list", "dcpilist", cmd_list, "annotated listing of one procedure" },
	{ "vlist", "dcpivlist", cmd_vlist, "value profiles of one procedure's instructions" },
	{ "vargs", "dcpivargs", cmd_vargs, "most frequent argument values and call sites" },
	{ "vcg", "dcpivcg", cmd_vcg, "targets of indirect calls and jumps" },
	{ "vblks", "dcpivblks", cmd_vblks, "value profiles per basic block" },
	{ "specialize", NULL, cmd_specialize, "specialization hints from value invariance" },
	{ "mem", "dcpimem", cmd_mem, "hot data objects, pages and shared cache lines" },
	{ "stats", "dcpistats", cmd_stats, "variation across runs" },
	{ "diff", "dcpidiff", cmd_diff, "differences between two profiles" },
	{ "model", NULL, cmd_model, "best-case schedule from the pipeline model" },
	{ "calibrate", NULL, cmd_calibrate,
	  "measure this machine: where samples land, instruction costs" },
	{ "llvm-prof", NULL, cmd_llvm_prof, "LLVM sample profile (clang -fprofile-sample-use)" },
	{ "gcc-prof", NULL, cmd_gcc_prof, "AutoFDO profile for gcc -fauto-profile" },
	{ "bolt-prof", NULL, cmd_bolt_prof, "BOLT fdata from estimated edge counts" },
	{ "prefetch-hints", NULL, cmd_prefetch_hints, "LLVM prefetch hints for stalling strided loads" },
	{ "merge", NULL, cmd_merge, "databases of several hosts or runs into one epoch" },
	{ "export", NULL, cmd_export, "an epoch as a pprof profile (--pprof)" },
	{ "push", NULL, cmd_push, "epochs into a fleet's ClickHouse database" },
	{ "pull", NULL, cmd_pull, "a fleet's aggregate of one image into a database" },
	{ "__skidloops", NULL, cmd_skidloops, NULL },	/* calibrate's loops; hidden */
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const char *tool_name = "dcpi";

int tool_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

const char *tool_db_dir(const char *opt)
{
	const char *env = getenv("DCPIDB");

	if (opt)
		return opt;
	if (env && *env)
		return env;
	return "dcpidb";
}

void tool_db_notes(struct prof_db *db)
{
	const char *s = prof_db_notes(db);

	while (*s) {
		size_t k = strcspn(s, "\n");

		fprintf(stderr, "%s: note: %.*s\n", tool_name, (int)k, s);
		s += k + (s[k] == '\n');
	}
	prof_db_notes_clear(db);
}

int tool_epoch_open(struct tool_epoch *e, const char *dir, const char *epoch,
		    struct dcpi_err *err)
{
	int rc = prof_db_open(tool_db_dir(dir), 0, &e->db, err);

	if (rc == 0)
		rc = rep_load_profiles(e->db, epoch, &e->p, &e->n, e->name, sizeof(e->name), err);
	if (e->db)
		tool_db_notes(e->db);
	return rc;
}

void tool_epoch_close(struct tool_epoch *e)
{
	prof_profiles_free(e->p, e->n);
	if (e->db)
		prof_db_close(e->db);
	*e = (struct tool_epoch){ 0 };
}


void tool_usage(FILE *f, const char *text)
{
	const char *rest = text;

	if (!strncmp(text, "usage: ", 7)) {	/* "dcpiprof" or "dcpi calibrate" */
		rest = text + 7 + (strncmp(text + 7, "dcpi ", 5) ? 0 : 5);
		rest += strcspn(rest, " \n");
		fprintf(f, "usage: %s", tool_name);
	}
	for (; *rest; rest++)
		if (*rest != '%' || *++rest == '%')
			fputc(*rest, f);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: dcpi <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].fn && commands[i].help)
			fprintf(f, "  %-14s %-10s %s\n", commands[i].name,
				commands[i].alias ? commands[i].alias : "", commands[i].help);
	fprintf(f, "\n'dcpi <command> --help' describes a command.\n");
}

static int run(const struct command *c, int argc, char **argv, const char *name)
{
	static char buf[64];

	if (!c->fn) {
		fprintf(stderr, "%s: not built into this dcpi\n", name);
		return 1;
	}
	if (!strncmp(name, "dcpi", 4) && name[4])
		tool_name = name;
	else {
		snprintf(buf, sizeof(buf), "dcpi %s", c->name);
		tool_name = buf;
		argv[0] = buf;	/* getopt's messages say "dcpi calc: ..." too */
	}
	return c->fn(argc, argv);
}

/* "dcpi: 'word' is not a dcpi command" and the nearest names, from the
 * commands (what) or the DCPI names (dcpi's links). */
static int no_command(const char *who, const char *word, int aliases)
{
	const char *names[NCOMMANDS];
	char near[256];
	int n;

	for (size_t i = 0; i < NCOMMANDS; i++)
		names[i] = !commands[i].fn || !commands[i].help ? NULL :
			   aliases ? commands[i].alias : commands[i].name;
	fprintf(stderr, "%s: '%s' is not a dcpi command; see 'dcpi --help'\n", who, word);
	n = tool_suggest(word, names, NCOMMANDS, aliases ? "" : "dcpi ", near, sizeof(near));
	if (n)
		fprintf(stderr, "%s: did you mean %s%s?\n", who, n > 1 ? "one of " : "", near);
	return 1;
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');

	base = base ? base + 1 : argv[0];
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].alias && !strcmp(base, commands[i].alias))
			return run(&commands[i], argc, argv, base);
	if (!strncmp(base, "dcpi", 4) && base[4])
		return no_command(base, base, 1);
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return run(&commands[i], argc - 1, argv + 1, commands[i].name);
	return no_command("dcpi", argv[1], 0);
}

int tool_kernel_image(struct prof_profile **p, size_t *n, const char *vmlinux)
{
	struct img_locate_opts o = { .vmlinux = vmlinux };
	struct dcpi_err err = { 0 };
	char note[DCPI_ERR_MAX];

	if (img_kernel_profiles(p, n, &o, note, sizeof(note), &err) < 0)
		return tool_fail("%s", err.msg);
	if (note[0])
		fprintf(stderr, "%s: note: %s\n", tool_name, note);
	return 0;
}
