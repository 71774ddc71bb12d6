/*
 * tools/tools.h - the command table's contract.  Each command lives in its
 * own file as cmd_xxx(argc, argv): it parses options, calls library code and
 * prints.  Errors go to stderr as "<tool>: <what>: <why>"; the return value
 * is the process exit status.
 */
#ifndef DCPI_TOOLS_H
#define DCPI_TOOLS_H

#include <getopt.h>
#include <stdio.h>

#include "dcpi/util.h"

int cmd_prof(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_calc(int argc, char **argv);
int cmd_cfg(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_llvm_prof(int argc, char **argv);
int cmd_gcc_prof(int argc, char **argv);
int cmd_bolt_prof(int argc, char **argv);
int cmd_prefetch_hints(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_vlist(int argc, char **argv);
int cmd_vargs(int argc, char **argv);
int cmd_vcg(int argc, char **argv);
int cmd_vblks(int argc, char **argv);
int cmd_specialize(int argc, char **argv);
int cmd_mem(int argc, char **argv);
/* The feedback commands' shared main (tools/cmd_llvm_prof.c); format: opt_format. */
int tool_feedback(int argc, char **argv, int format);
int cmd_skidloops(int argc, char **argv);

/* The name errors are printed under ("dcpiprof", "dcpi record", ...). */
extern const char *tool_name;

/* Print "<tool>: <msg>" to stderr and return 1 (the exit status). */
int tool_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write s as a JSON string literal (quoted, escaped; NULL as ""). */
void tool_json_str(FILE *f, const char *s);
/* The database directory: --db if given, else $DCPIDB, else ./dcpidb. */
const char *tool_db_dir(const char *opt);
struct prof_db;
/* Print the database's notes (skipped files, empty epochs) as "note:" lines. */
void tool_db_notes(struct prof_db *db);
struct prof_profile;
/* One epoch's profiles, as the commands that print an epoch load them. */
struct tool_epoch {
	struct prof_db *db;		/* NULL where none was opened */
	struct prof_profile *p;
	size_t n;
	char name[256];			/* the epoch read (rep_load_profiles') */
};
/*
 * The database tool_db_dir(dir) opened into e and its epoch (NULL: as
 * rep_load_profiles picks) loaded, the database's notes printed even when
 * the load fails: 0, or negative with err filled.  e starts zeroed;
 * tool_epoch_close frees it whatever this returned.
 */
int tool_epoch_open(struct tool_epoch *e, const char *dir, const char *epoch,
		    struct dcpi_err *err);
void tool_epoch_close(struct tool_epoch *e);

/* A usage text (a printf format without arguments, "usage: NAME ...")
 * with NAME the name the command was run under (tool_name). */
void tool_usage(FILE *f, const char *text);
struct option;
/*
 * The names of names[0..n) (NULL entries skipped) nearest to word, within
 * rep_suggest_max(word) edits (include/dcpi/report.h), each after prefix,
 * joined by ", " into out; how many (0: none near).
 */
int tool_suggest(const char *word, const char *const *names, size_t n, const char *prefix,
		 char *out, size_t len);
/* getopt_long, and after an unknown long option "did you mean --NAME?"
 * from longopts (tools/suggest.c). */
int tool_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *idx);

/*
 * The options most commands share, each taken by the commands that name
 * it in tool_opts.common; tool_opt_next stores their values in the struct.
 */
enum {
	TOOL_O_DB = 1 << 0,	/* --db DIR (then tool_db_dir(db)) */
	TOOL_O_EPOCH = 1 << 1,	/* --epoch E */
	TOOL_O_EVENT = 1 << 2,	/* --event E; -e E where shortopts has "e:" */
	TOOL_O_JSON = 1 << 3,	/* --json */
	TOOL_O_QUIET = 1 << 4,	/* --quiet; -q where shortopts has "q" */
	TOOL_O_OUTPUT = 1 << 5,	/* --output FILE; -o where shortopts has "o:" */
	TOOL_O_VMLINUX = 1 << 6, /* --vmlinux FILE */
};
#define TOOL_OPTS_MAX 64	/* entries of tool_opts.all, the terminator with them */
#define TOOL_LONGOPTS_LEN 256	/* characters of tool_opts.longopts, the NUL with them */
#define TOOL_OPT_HELP (-1)	/* --help: usage printed to stdout, exit 0 */
#define TOOL_OPT_WRONG (-2)	/* a wrong option or value: usage or why printed, exit 1 */
/* The exit status after tool_opt_next returned TOOL_OPT_HELP or TOOL_OPT_WRONG. */
#define TOOL_OPT_STATUS(c) ((c) == TOOL_OPT_HELP ? 0 : 1)

/* The shared options' values (NULL, 0: not given). */
struct tool_values {
	const char *db, *epoch, *event, *out, *vmlinux, *from;
	int json, quiet;
};

struct collect_opts;
struct tool_ana_args;
struct fleet_query_spec;
struct tool_opts {
	/* set by the command */
	const char *usage;		/* printed by tool_usage, */
	void (*help)(FILE *f, int arg);	/* or by help(f, help_arg) when set */
	int help_arg;			/* which of a command's forms */
	const char *shortopts;		/* getopt's, with "h" */
	unsigned common;		/* TOOL_O_* */
	const char *longopts;		/* its own, as tool_longopts_parse reads them */
	/* the sampling options into this when set (tools/sampling.h), -e's list
	 * into event; shortopts then has TOOL_SAMPLING_SHORTOPTS */
	struct collect_opts *sampling;
	/* or the analysis options into this (tools/analysis.h), -e and -m
	 * their --event and --model where shortopts has "e:m:" */
	struct tool_ana_args *ana;
	/* --from URL and the fleet query's --build-id, --image, --hosts,
	 * --since, --until (docs/fleet.md) into this when set */
	struct fleet_query_spec *query;
	struct tool_values val;		/* the shared options' */
	/* the whole table, made at the first call (tools/options.c), and the
	 * names of longopts' entries in it */
	struct option all[TOOL_OPTS_MAX];
	char names[TOOL_LONGOPTS_LEN];
	int built;
};

/*
 * A command's own long options, written as getopt's short options are:
 * entries apart by spaces, each the option's name (a-z, 0-9 and -), then
 * what it takes ('=' an argument: --name ARG or --name=ARG; '?' an optional
 * one: --name=ARG only; ':' none), then the one character getopt_long
 * returns for it (any but '?' and ':'; two names may share one):
 *	"paths=T no-paths:U values:V model?M"
 * Parsed into opts[0..max) ending in a NULL name, the names kept in
 * buf[0..len): how many, or -EINVAL (err names the entry) for a spec not so
 * written, too long, or naming an option twice (tools/optspec.c).
 */
int tool_longopts_parse(const char *spec, struct option *opts, size_t max, char *buf,
			size_t len, struct dcpi_err *err);

/*
 * The option loop over argv from argv[1] (optind is reset at the first call):
 * the next of the command's own options' values (optarg set), after storing
 * any shared ones in o; 0 when the options end (operands from optind on);
 * TOOL_OPT_HELP or TOOL_OPT_WRONG when the command must return
 * TOOL_OPT_STATUS(c) (tools/options.c).
 */
int tool_opt_next(struct tool_opts *o, int argc, char **argv);
/* optarg, the value of an option given once per thing, kept in v[*n] (room
 * for max): 0, or -1 when v is full (the caller says so). */
int tool_opt_keep(const char **v, size_t *n, size_t max);

/* Kernel samples named from a vmlinux (--vmlinux FILE, or found as perf
 * finds one; img_kernel_profiles), the note saying which was used printed;
 * 0, or 1 (printed) when FILE cannot be used. */
int tool_kernel_image(struct prof_profile **p, size_t *n, const char *vmlinux);

#endif /* DCPI_TOOLS_H */
