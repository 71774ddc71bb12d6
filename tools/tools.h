/*
 * tools/tools.h - the command table's contract.  Each command lives in its
 * own file as cmd_xxx(argc, argv): it parses options, calls library code and
 * prints.  Errors go to stderr as "<tool>: <what>: <why>"; the return value
 * is the process exit status.
 */
#ifndef DCPI_TOOLS_H
#define DCPI_TOOLS_H

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

/* Kernel samples named from a vmlinux (--vmlinux FILE, or found as perf
 * finds one; img_kernel_profiles), the note saying which was used printed;
 * 0, or 1 (printed) when FILE cannot be used. */
struct prof_profile;
int tool_kernel_image(struct prof_profile **p, size_t *n, const char *vmlinux);

#endif /* DCPI_TOOLS_H */
