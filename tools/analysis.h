/*
 * tools/analysis.h - what the commands that analyse a procedure share: the
 * analysis options (one table, one meaning each, in dcpicalc, dcpilist,
 * dcpicfg and the feedback writers) and the steps from a database and a
 * procedure name to est_analyze's result (include/dcpi/analysis.h).
 */
#ifndef DCPI_TOOLS_ANALYSIS_H
#define DCPI_TOOLS_ANALYSIS_H

#include <getopt.h>
#include <stdio.h>

#include "dcpi/analysis.h"
#include "dcpi/image.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"
#include "dcpi/report.h"

/* getopt_long codes of the shared options (above any short option). */
enum {
	TA_DB = 0x200, TA_EPOCH, TA_IMAGE, TA_EVENT, TA_MODEL, TA_METHOD, TA_WINDOW,
	TA_SKID, TA_STEADY, TA_CALIB, TA_NO_CALIB, TA_NO_MEASURE, TA_NO_PATHS,
	TA_PATH_EDGES, TA_SCALE, TA_PRIOR, TA_REGIONS, TA_NO_REGIONS, TA_EXACT, TA_NO_EVENTS, TA_REMEASURE,
	TA_NO_REPLAY, TA_NO_CALIBRATE, TA_TIME, TA_PHASE, TA_VMLINUX, TA_NO_CALLS,
};

/* The shared entries of a command's struct option table (tools/options.c
 * puts them in the table of a command whose tool_opts.ana is set). */
#define TOOL_ANA_LONGOPTS \
	{ "db", required_argument, NULL, TA_DB }, \
	{ "epoch", required_argument, NULL, TA_EPOCH }, \
	{ "image", required_argument, NULL, TA_IMAGE }, \
	{ "event", required_argument, NULL, TA_EVENT }, \
	{ "model", required_argument, NULL, TA_MODEL }, \
	{ "method", required_argument, NULL, TA_METHOD }, \
	{ "window", required_argument, NULL, TA_WINDOW }, \
	{ "skid", required_argument, NULL, TA_SKID }, \
	{ "steady", required_argument, NULL, TA_STEADY }, \
	{ "calibration", required_argument, NULL, TA_CALIB }, \
	{ "no-calibration", no_argument, NULL, TA_NO_CALIB }, \
	{ "no-measure", no_argument, NULL, TA_NO_MEASURE }, \
	{ "remeasure", no_argument, NULL, TA_REMEASURE }, \
	{ "no-replay", no_argument, NULL, TA_NO_REPLAY }, \
	{ "no-calls", no_argument, NULL, TA_NO_CALLS }, \
	{ "no-calibrate", no_argument, NULL, TA_NO_CALIBRATE }, \
	{ "no-paths", no_argument, NULL, TA_NO_PATHS }, \
	{ "path-edges", required_argument, NULL, TA_PATH_EDGES }, \
	{ "scale", required_argument, NULL, TA_SCALE }, \
	{ "prior", required_argument, NULL, TA_PRIOR }, \
	{ "regions", no_argument, NULL, TA_REGIONS }, \
	{ "no-regions", no_argument, NULL, TA_NO_REGIONS }, \
	{ "exact", required_argument, NULL, TA_EXACT }, \
	{ "no-events", no_argument, NULL, TA_NO_EVENTS }, \
	{ "time", required_argument, NULL, TA_TIME }, \
	{ "phase", required_argument, NULL, TA_PHASE }, \
	{ "vmlinux", required_argument, NULL, TA_VMLINUX }

/* Their usage lines, for a command's --help. */
extern const char tool_ana_usage[];

struct tool_ana_args {
	const char *db, *epoch, *image, *event, *path_file;
	const char *time;			/* --time A-B */
	const char *vmlinux;			/* --vmlinux FILE */
	long phase;				/* --phase N (0: none) */
	struct est_analysis_opts o;
};

void tool_ana_args_init(struct tool_ana_args *a);
/*
 * Take option c (with -e and -m as --event and --model) if it is a shared
 * one: 0 taken, -1 not a shared option, 1 a bad value (printed).
 */
int tool_ana_option(struct tool_ana_args *a, int c, const char *arg);

/* The feedback writers' request (optimize.h) from the shared options. */
struct opt_request;
int tool_ana_request(struct tool_ana_args *a, struct opt_request *rq);

/* One procedure of one epoch, found and analysed. */
struct tool_proc {
	struct tool_ana_args a;
	const char *spec;			/* PROC as the user named it */
	struct prof_db *db;
	struct prof_profile *p;
	size_t np;
	char epoch[256];			/* the epoch read, or "all" */
	const struct prof_profile *prof;	/* the (image, event) chosen */
	struct image *img;
	const struct img_proc *proc;
	struct path_profile file_pp;		/* --path-edges */
	struct est_input in;
	int in_open;
	struct est_analysis an;
};

/* Open the database, read the epoch, find spec's image and procedure (or,
 * for "IMAGE:*", the image only: t->proc NULL), open the analysis input. */
int tool_proc_open(struct tool_proc *t);
/* est_analyze of t->proc (freeing the previous one); notes printed. */
int tool_proc_analyze(struct tool_proc *t);
/* The analysis as report/ renders it. */
void tool_proc_view(const struct tool_proc *t, int all, int json, struct rep_calc *v);
void tool_proc_close(struct tool_proc *t);

#endif /* DCPI_TOOLS_ANALYSIS_H */
