/*
 * timeline.h - reports over time: an epoch's time slices and detected
 * phases (include/dcpi/slices.h) as phases with their top procedures
 * (dcpiprof --phases), any report restricted to a time range or a phase
 * (--time A-B, --phase N), and the timeline picture (dcpi timeline).
 * docs/phases.md.
 */
#ifndef DCPI_TIMELINE_H
#define DCPI_TIMELINE_H

#include <stdio.h>

#include "dcpi/profile.h"
#include "dcpi/slices.h"

/* An epoch's slices: every image's, one width, slices [first, last]. */
struct rep_slices {
	uint64_t slice_ns, first, last;
	struct slice_profile *p;
	size_t n;
	struct slice_bound *b;		/* the union of the images' boundaries */
	size_t nb;
	char event[PROF_EVENT_MAX];
};

/* -ENOENT (err says so) when the epoch has no slices. */
int rep_slices_load(struct prof_db *db, const char *epoch, struct rep_slices *s,
		    struct dcpi_err *err);
void rep_slices_free(struct rep_slices *s);

struct rep_phase {
	uint64_t first, end;		/* slices [first, end) */
	unsigned rules;			/* what declared its start, 0 for the first */
};

/* The phases: from the first slice to the last, cut at each boundary
 * declared by one of rules (SLICE_RULE_*).  Free *out. */
int rep_phases(const struct rep_slices *s, unsigned rules, struct rep_phase **out,
	       size_t *n, struct dcpi_err *err);

/* Seconds from the epoch's first slice to the start of slice k. */
double rep_slice_seconds(const struct rep_slices *s, uint64_t k);

/*
 * The slices [from, to) to keep for --time A-B (seconds from the epoch's
 * first slice, "A-", "-B" open) or --phase N (1-based, as dcpiprof
 * --phases numbers them); exactly one of time and phase (> 0) given.
 */
int rep_time_range(const struct rep_slices *s, const char *time, long phase,
		   uint64_t *from, uint64_t *to, struct dcpi_err *err);

/*
 * The profiles in[0..nin) of an epoch restricted to slices [from, to), into
 * *out (free with prof_profiles_free): a profile of the slices' event gets
 * its image's counts in the range (its period and units kept); profiles of
 * other events are left out (the slices hold one event): *dropped counts
 * them.
 */
int rep_slices_window(const struct rep_slices *s, uint64_t from, uint64_t to,
		      const struct prof_profile *in, size_t nin, struct prof_profile **out,
		      size_t *nout, size_t *dropped, struct dcpi_err *err);

/* dcpiprof --phases: each phase's time range and top procedures. */
int rep_phases_print(FILE *f, const struct rep_slices *s, const struct prof_profile *p,
		     size_t n, int json, size_t top, struct dcpi_err *err);

/*
 * The slices [*from, *to) that speak for phase i of ph[0..nph): the phase
 * without a slice at a boundary with another phase (a change inside a
 * slice leaves it mixed: 59 samples of the next phase's first procedure
 * were seen in one), unless that leaves nothing.
 */
void rep_phase_core(const struct rep_phase *ph, size_t i, size_t nph, uint64_t *from,
		    uint64_t *to);

struct rep_table;
/* The procedures of p restricted to slices [from, to), sorted by samples
 * (rep_summarize's table; rep_free it, also on failure). */
int rep_phase_top(const struct rep_slices *s, const struct prof_profile *p, size_t n,
		  uint64_t from, uint64_t to, struct rep_table *t, struct dcpi_err *err);

/*
 * dcpi timeline (report/timeline.c): an SVG of samples per slice with the
 * phases (inversion boundaries) marked as boxes of class "phase-mark" in
 * colours the heat scale never takes, each phase's top procedures
 * labelled, and FlameScope's sub-second heat map; with html, inside a page
 * that needs no server.
 */
int rep_timeline_svg(FILE *f, const struct rep_slices *s, const struct prof_profile *p,
		     size_t n, size_t top, int html, struct dcpi_err *err);

/*
 * dcpiprof's time options over an epoch's profiles p[0..n): --phases prints
 * the phases to f (*done set); else --time / --phase (time, phase) cut p to
 * that window, replacing *p and *n; *dropped: profiles of events the slices
 * do not keep.
 */
int rep_prof_by_time(FILE *f, struct prof_db *db, const char *epoch, int phases,
		     const char *time, long phase, long limit, int json,
		     struct prof_profile **p, size_t *n, int *done, size_t *dropped,
		     struct dcpi_err *err);

#endif /* DCPI_TIMELINE_H */
