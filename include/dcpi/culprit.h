/*
 * culprit.h - who is guilty of a dynamic stall (DCPI paper sec. 6.3).
 *
 * A dynamic stall is the cycles an instruction spent beyond its best case
 * (actual CPI minus M_i, times its executions).  Every cause is guilty until
 * proven innocent: each candidate (D-cache/DTLB, I-cache, ITLB, branch
 * mispredict, store forwarding, long-latency unit, synchronization) is kept
 * unless the code rules it out, and names the instructions that could be to
 * blame.  Event counts, where some exist (a PMU's, or callgrind's simulated
 * cache and branch events imported with dcpi import), bound a cause or clear
 * it.  What no cause explains is "unexplained".  docs/culprits.md gives each
 * rule and its reasoning for an out-of-order core.
 *
 * This part takes plain per-instruction arrays, not an estimate: the
 * estimator's output (estimate.h) is one way to fill them, exact counts are
 * another (how the tests pin the rules).
 */
#ifndef DCPI_CULPRIT_H
#define DCPI_CULPRIT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/cfg.h"
#include "dcpi/util.h"

enum cul_cause {
	CUL_DCACHE,		/* a load missed: D-cache or DTLB */
	CUL_ICACHE,		/* fetch waited for a line */
	CUL_ITLB,		/* fetch crossed into another page */
	CUL_MISPREDICT,		/* a branch before it went the unpredicted way */
	CUL_STORE_FWD,		/* a load could not take a recent store's data */
	CUL_LONG_LAT,		/* divider, square root: latency varies with data */
	CUL_SYNC,		/* lock-prefixed, fences, pause */
	CUL_NCAUSES,
	CUL_UNEXPLAINED = CUL_NCAUSES,
};

const char *cul_cause_name(enum cul_cause c);

/* Event counts per instruction that bound a cause, where the profile has
 * them (NULL otherwise).  Each is a count of events over the whole run. */
enum cul_event {
	CUL_EV_DMISS,		/* data-cache misses, charged to the load */
	CUL_EV_IMISS,		/* instruction-cache misses, to the instruction */
	CUL_EV_MISPREDICT,	/* mispredicted branches, to the branch */
	CUL_NEVENTS,
};

struct cul_input {
	const struct cfg *cfg;
	const double *dyn;		/* per instruction: dynamic stall cycles, total */
	const double *exec;		/* per instruction: executions */
	const double *edge_exec;	/* per edge: executions, or NULL */
	const double *edge_prob;	/* per edge: share of its source's departures,
					 * or NULL (then every branch is uncertain) */
	const double *events[CUL_NEVENTS];	/* per instruction, or NULL */
	/* measured by samples that tag the instruction (IBS op, PEBS): per
	 * instruction the cycles its events cost over the run, which bound
	 * the cause in place of event_cost (NULL: not measured), and of its
	 * D-cache misses those served from DRAM */
	const double *measured_cycles[CUL_NEVENTS];
	const double *dram_misses;
	double event_cost[CUL_NEVENTS];	/* cycles one event can cost at most */
	int skid;			/* a sample lands this many instructions after
					 * the instruction that waits (0 .. 4) */
	double min_dyn;			/* ignore stalls below this share of the
					 * procedure's dynamic cycles (0: none) */
};

void cul_input_default(struct cul_input *in);

#define CUL_MAX_SUSPECTS 8

struct cul_suspect {
	enum cul_cause cause;
	int insn;		/* the guilty instruction (cfg->insns), -1 if none */
	int distance;		/* instructions executed between it and the stall */
	double bound;		/* at most this many of the cycles, < 0: unbounded */
	double score;		/* the ranking: most likely first */
};

struct cul_stall {
	uint32_t insn;		/* the stalled instruction (where cycles landed) */
	double cycles;		/* its dynamic stall cycles */
	size_t nsuspects;	/* 0: unexplained */
	struct cul_suspect sus[CUL_MAX_SUSPECTS];	/* most likely first */
};

/* Fig. 4: per cause the cycles it may account for, as a range.  min: where
 * it is the only suspect left; max: every stall where it is a suspect (bounded
 * by its events where there are some).  Shares are of the dynamic cycles. */
struct cul_summary {
	double dynamic;			/* all dynamic stall cycles considered */
	double min[CUL_NCAUSES + 1];	/* [CUL_UNEXPLAINED]: unexplained */
	double max[CUL_NCAUSES + 1];
	/* a point estimate inside the range: each stall's cycles split over its
	 * causes in proportion to their scores (bounded; what no bound covers
	 * is unexplained); shares add up to dynamic */
	double share[CUL_NCAUSES + 1];
	/* measured events of the procedure (IBS op, PEBS), their cycles, and
	 * the D-cache misses served from DRAM: the ProfileMe evidence */
	double measured_n[CUL_NEVENTS], measured_cycles[CUL_NEVENTS], measured_dram;
};

struct cul_result {
	size_t nstalls;
	struct cul_stall *stalls;	/* by cycles, largest first */
	struct cul_summary sum;
};

int cul_analyze(const struct cul_input *in, struct cul_result *out, struct dcpi_err *err);
void cul_result_free(struct cul_result *r);
/* Each instruction's part of the stall cycles split to cause (the
 * summary's likeliest split, given to the cause's best suspect), added to
 * per_insn[0..n). */
void cul_charges(const struct cul_result *r, enum cul_cause cause, double *per_insn,
		 size_t n);
/* The bytes insn's memory address steps by per iteration of its innermost
 * loop (constant steps of its base and index registers, each run once per
 * iteration); 0 when it is not in a loop or not a constant stride. */
int cul_stride(const struct cfg *cfg, uint32_t insn, int64_t *stride);
/* The stall record of instruction i, or NULL when it has none. */
const struct cul_stall *cul_stall_of(const struct cul_result *r, uint32_t insn);

#endif
