/* tools/record.h - what tools/cmd_record.c and tools/record_attach.c share. */
#ifndef DCPI_TOOLS_RECORD_H
#define DCPI_TOOLS_RECORD_H

#include <signal.h>

struct collect_opts;
struct collect_attach_opts;

/* The signal SIGINT/SIGTERM delivered, for the collector to pass on. */
extern volatile sig_atomic_t record_pending_signal;
void record_catch_signals(void);
/* 0 when DIR can take an epoch; else 1, the reason printed. */
int record_check_db(const char *dir);
/* -p LIST, -t LIST, --duration S (option letters 'p', 't', 'R') into a. */
int record_attach_option(int c, const char *arg, struct collect_attach_opts *a);
/* -p/-t: time samples of running threads; CMD, if any, only says how long. */
int record_attached(struct collect_opts *o, struct collect_attach_opts *a, char *const *cmd,
		    const char *db, int quiet);

#endif
