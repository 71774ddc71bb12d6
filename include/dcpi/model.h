/*
 * model.h - pipeline models of x86-64 cores and the best-case scheduler
 * (DCPI paper sec. 6.1.3 and 6.3).
 *
 * A model is data: widths, reorder-buffer size, execution ports, load and
 * store ports, cache and TLB latencies, and a table of instruction classes
 * keyed by mnemonic, operand form and vector width.  The shipped models are
 * one base class table (culprit/model/model_base.c) plus a short file of
 * differences per microarchitecture (culprit/model/model_zen5.c, ...); a model file
 * measured on this machine by `dcpi calibrate --fit-model` overrides them
 * (culprit/model/modelfile.c).  Chosen from CPUID or by name.
 *
 * The scheduler runs a block through the model with no dynamic stalls (every
 * load hits L1, every branch is predicted) and gives, per instruction, M_i:
 * the cycles it spends as the oldest unretired instruction (at the head of
 * the reorder buffer), which is where an x86 interrupt reports the time.
 * M_i = retire_i - retire_{i-1}, so the block's best-case cycles = sum M_i.
 * Instructions whose M_i is more than the retire width allows carry the
 * static-stall reason and the culprit instruction (sec. 6.3).
 */
#ifndef DCPI_MODEL_H
#define DCPI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/cfg.h"
#include "dcpi/util.h"

#define MODEL_MAX_PORTS 24

/* Class row traits: conditions a row can require or exclude (classify.c). */
enum {
	MODEL_T_Q	= 1u << 0,	/* 64-bit integer operation */
	MODEL_T_L	= 1u << 1,	/* 32-bit */
	MODEL_T_W	= 1u << 2,	/* 16-bit */
	MODEL_T_B	= 1u << 3,	/* 8-bit */
	MODEL_T_IMM	= 1u << 4,	/* has an immediate operand */
	MODEL_T_REGMOV	= 1u << 5,	/* register-to-register copy (no imm, no mem) */
	MODEL_T_LEA3	= 1u << 6,	/* lea base + index + displacement */
	MODEL_T_LEASC	= 1u << 7,	/* lea with a scaled index */
	MODEL_T_LEAIDX	= 1u << 8,	/* lea with base and index */
	MODEL_T_FP	= 1u << 9,	/* CFG_I_FP */
	MODEL_T_VEC	= 1u << 10,	/* CFG_I_VECTOR */
	MODEL_T_BRANCH	= 1u << 11,	/* jump, call or return */
	MODEL_T_NOP	= 1u << 12,
	MODEL_T_ZERO	= 1u << 13,	/* zero idiom */
	MODEL_T_CL	= 1u << 14,	/* shift/rotate count in %cl */
	MODEL_T_PACKED	= 1u << 15,	/* packed (ps/pd, integer SIMD), not scalar ss/sd */
	MODEL_T_LOCK	= 1u << 16,	/* atomic: lock prefix, or xchg with memory */
	MODEL_T_LONG	= 1u << 17,	/* encoding of 8 bytes or more */
	MODEL_T_WIDE	= 1u << 18,	/* mul/imul writing rdx:rax (one operand) */
};

/* Class row kinds: how the scheduler treats the instruction beyond latency. */
enum {
	MODEL_K_ELIM	= 1u << 0,	/* handled at rename: no port, latency 0 */
	MODEL_K_FUSE	= 1u << 1,	/* fuses with a following jcc into one op */
	MODEL_K_PUSH	= 1u << 2,	/* implicit store (push, call) */
	MODEL_K_POP	= 1u << 3,	/* implicit load (pop, ret) */
	MODEL_K_SERIAL	= 1u << 4,	/* waits for all older instructions (lock, cpuid) */
	MODEL_K_WIDE	= 1u << 5,	/* writes rdx:rax, rdx mul_hi_extra later (mul) */
};

/*
 * One instruction class.  pattern is a mnemonic ("imul": also matches the
 * AT&T-suffixed "imulq"), a prefix ending in '*' ("cmov*"), or "*".  The
 * first row that matches mnemonic, form, vector width and traits wins.
 * lat is the register-to-register latency; memory forms add the model's
 * load-to-use latency and use load/store ports on top of ports.
 */
struct model_class {
	const char *pattern;
	uint8_t forms;			/* bit (1 << enum cfg_form); 0 = any */
	uint16_t min_vec, max_vec;	/* vec_bits range (0..512 = any) */
	uint32_t need, avoid;		/* MODEL_T_* all required / none allowed */
	uint8_t lat;			/* cycles to the result */
	uint8_t uops;			/* dispatch slots; 0: none, nor a retire slot */
	uint32_t ports;			/* usable ports, bit per port */
	uint8_t busy;			/* cycles the port stays busy (1 = pipelined) */
	uint8_t kind;			/* MODEL_K_* */
	const char *name;		/* its class ("fadd"), as model files name it */
};
#define MODEL_FORM(f) (1u << (f))
#define MODEL_ANYVEC 0, 512

struct model {
	const char *name;		/* "zen5" */
	const char *desc;		/* "AMD Zen 5 (family 1Ah)" */
	int dispatch_width;		/* macro-ops renamed/dispatched per cycle */
	int retire_width;		/* macro-ops retired per cycle */
	int rob_size;
	int sched_size;			/* integer + FP scheduler entries (reported) */
	int nports;
	const char *const *port_names;	/* nports names */
	uint32_t alu_ports, branch_ports, load_ports, store_addr_ports, store_data_ports;
	uint32_t fp_ports;
	int load_lat;			/* integer load-to-use, L1 hit, simple address */
	int load_lat_fp;		/* vector/FP load-to-use */
	int load_lat_complex;		/* more for a complex address: an index scaled
					 * by 2-8, or base + index + displacement */
	int load_lat_sext;		/* more for a sign-extending integer load
					 * (movsx, movsxd) */
	int store_imm_alu;		/* a store of an immediate takes an ALU slot for
					 * its data (Zen: measured on Zen 4) */
	int mul_hi_extra;		/* a widening multiply's high half (rdx) comes
					 * this much after its low half (rax) */
	int store_fwd_lat;		/* store data ready -> dependent load result */
	int store_fwd_fail;		/* the same when the load is not inside the
					 * store (wider, or overlapping it elsewhere):
					 * no forwarding, it waits for the commit */
	int mem_rename;			/* store-reload of a register forwarded at 0 */
	int move_elim;			/* reg-reg moves eliminated at rename */
	int taken_per_cycle;		/* taken branches per cycle */
	int loop_line_bytes;		/* a loop takes at least a cycle per line of
					 * this many bytes its code spans in an
					 * iteration (the op cache's; 0: no such
					 * floor; Zen 4 measured 64) */
	/* for culprit bounds of dynamic stalls (later parts) */
	int l1_lat, l2_lat, l3_lat, dram_lat, tlb_miss_lat;
	int mispredict_penalty;
	const struct model_class *classes;
	size_t nclasses;
	const struct model_class *fallback;	/* for forms no row matches */
	/* Zen 4 style cores (0 = not so) */
	uint32_t vec_load_ports;	/* ports for loads into vector registers; 0: load_ports */
	int vec_pipe_bits;		/* width of the vector pipes and load paths: a wider
					 * op holds its port twice as long (double-pumped) */
	uint32_t vec_store_data_ports;	/* store data from vector registers; 0: store_data_ports */
	/*
	 * Store commit (0 = not modelled): stores leave the store queue in program
	 * order, one per cycle, or two when the two oldest fall in one
	 * store_pair_bytes-aligned block; a store crossing a 64-byte line takes
	 * two cycles.  A full store queue (store_queue entries) stalls dispatch.
	 */
	int store_queue;
	int store_pair_bytes;
	/* NULL for the shipped models; a model read from a model file or made by
	 * model_copy (culprit/model/modelfile.c) keeps its sources here */
	struct model_file_data *file;
};

/* The models, by name ("zen5", "zen4", "zen3", "skylake", "generic"). */
const struct model *model_by_name(const char *name);
/* The model for the processor this runs on: $DCPI_MODEL if it names one,
 * else from CPUID vendor, family and model. */
const struct model *model_for_this_cpu(void);
/* Same decision from CPUID values (vendor "AuthenticAMD", display family/model). */
const struct model *model_for_cpuid(const char *vendor, unsigned family, unsigned model);
const char *model_name(const struct model *m);
/*
 * The front end's floor for a loop (loop_line_bytes): the code of one
 * iteration as runs [lo[i], hi[i]) of bytes executed straight through (a run
 * ends at a taken branch), each costing a cycle per aligned line it touches.
 * The sum of the runs' lines, or 0 when the model has no such floor.
 */
int model_loop_lines(const struct model *m, const uint64_t *lo, const uint64_t *hi, size_t n);
/*
 * Time one small loop (two adds, compare, branch back) in this process at
 * three places in 64-byte-aligned code, pinned to cpu (-1: not pinned):
 * fig[0] inside one line, fig[1] across a 64-byte line, fig[2] across a
 * 32-byte boundary only, in core cycles an iteration (estimate/calibrate/loop_lines.c).
 * model_loop_line_bytes_of(fig) is the loop_line_bytes they show: 64, 32,
 * or 0 when crossing costs nothing.
 */
int model_time_loop_lines(int cpu, double fig[3], struct dcpi_err *err);
int model_loop_line_bytes_of(const double fig[3]);
/* Fill up to max names; returns how many models there are. */
size_t model_list(const char **names, size_t max);

/*
 * Model files (docs/models.md "Model files"; culprit/model/modelfile.c): a shipped
 * model refined by values measured on one CPU, keyed by CPUID vendor,
 * family, model and stepping, stored per machine in $DCPI_MODEL_DIR, else
 * $XDG_DATA_HOME/dcpi/models, else ~/.local/share/dcpi/models, as
 * <vendor>-<family>-<model>-<stepping>.model.  model_for_this_cpu() uses the
 * file when it matches this CPU and reads cleanly; otherwise the shipped
 * table, with the reason kept for model_file_status().
 */
#define MODEL_FILE_VERSION 1

struct model_cpuid {
	char vendor[16];	/* "AuthenticAMD" */
	unsigned family, model, stepping;	/* display family and model */
};

/* This processor's CPUID; -ENOTSUP when there is none. */
int model_cpuid_this(struct model_cpuid *id);
/* Where this machine keeps the model file of id; -ENAMETOOLONG, -ENOENT (no home). */
int model_file_path(const struct model_cpuid *id, char *buf, size_t len);
/* The directory alone (created by the caller). */
int model_file_dir(char *buf, size_t len);

/*
 * Parse a model file held in buf[0..len) (name for messages).  want, when not
 * NULL, must match the file's cpu line.  *out is a new model: the file's base
 * model with the file's values; free with model_free.  Errors name the file,
 * the line and the reason.
 */
int model_file_parse(const char *buf, size_t len, const char *name,
		     const struct model_cpuid *want, struct model **out, struct dcpi_err *err);
int model_file_read(const char *path, const struct model_cpuid *want, struct model **out,
		    struct dcpi_err *err);
/* Write m (a model_copy or a read model) for CPU id to path, every value with its source. */
int model_file_write(const char *path, const struct model *m, const struct model_cpuid *id,
		     struct dcpi_err *err);

/* A modifiable copy of base named name (NULL: base's name); every value "shipped". */
struct model *model_copy(const struct model *base, const char *name, struct dcpi_err *err);
void model_free(struct model *m);
/* Set machine parameter param ("load_lat", "alu_ports" ...) from its text value;
 * src NULL keeps the value's source (trial values). */
int model_set_param(struct model *m, const char *param, const char *value, const char *src,
		    struct dcpi_err *err);
/* Set field ("lat", "uops", "ports", "busy") of class cls on every row of it. */
int model_set_class(struct model *m, const char *cls, const char *field, const char *value,
		    const char *src, struct dcpi_err *err);
/* Add a port (a unit the shipped table lacks); its index, or negative errno. */
int model_add_port(struct model *m, const char *name, const char *src, struct dcpi_err *err);

/* The machine parameters a model file may set, in file order. */
size_t model_param_count(void);
const char *model_param_name(size_t i);
/* Value of parameter i as the model file writes it ("4", "alu0,alu1"). */
void model_param_text(const struct model *m, size_t i, char *buf, size_t len);
/* The classes: names in base order, and whether m uses class i (has rows of it). */
size_t model_class_count(void);
const char *model_class_name(size_t i);
const char *model_class_what(size_t i);
const struct model_class *model_class_row(const struct model *m, const char *cls);
/* Where a number came from: "shipped", or the model file's source text. */
const char *model_param_source(const struct model *m, const char *param);
const char *model_class_source(const struct model *m, const char *cls, const char *field);
/* The shipped model m refines (m itself when shipped), and its file (NULL). */
const struct model *model_base(const struct model *m);
const char *model_origin(const struct model *m);
/* Ports as "alu0,alu1" ("none" for 0). */
void model_ports_text(const struct model *m, uint32_t ports, char *buf, size_t len);
/*
 * Why model_for_this_cpu() did not use this machine's model file: "" when it
 * did or there is none, else "FILE:LINE: reason" (the shipped table is used).
 */
const char *model_file_status(void);

/*
 * Calibration (culprit/model/probes.txt, culprit/model/fit.c): microbenchmark bodies timed
 * on this machine, and the fit of a model's machine parameters and per-class
 * latency, dispatch slots, ports and busy cycles to their cycles per
 * iteration.  The fit is pure: measurements in, model values out.
 */
struct model_probe {
	const char *name;	/* "lat.fadd" (assembly in culprit/model/probes.txt) */
	size_t len;
	const uint8_t *bytes;
};

/* The built-in probe suite. */
size_t model_probes(const struct model_probe **out);

struct model_fit_report {
	size_t nused;			/* probes with a measurement that decode */
	double err_before, err_after;	/* mean relative error on them */
	int nchanged;			/* values that moved */
	int ports_added;
	char log[4096];			/* one line per change: "fadd lat 3 -> 2" */
};

/*
 * Time probes[0..n) on this machine (estimate/calibrate/probe_time.c, the sandbox):
 * passes whole passes, pinned to cpu (-1: not pinned); cycles[i] is the
 * second lowest of the passes' figures (lowest with fewer than 3 passes), 0
 * when no pass timed it.  probe_load[pass] (may be NULL) is that pass's
 * figure for 12 independent adds, the contention probe.  progress (may be
 * NULL) is called after each pass.
 */
typedef void (*model_progress_fn)(void *arg, int pass, int passes, double add12);
int model_time_probes(const struct model_probe *probes, size_t n, int passes, int cpu,
		      double *cycles, double *probe_load, model_progress_fn progress,
		      void *arg, struct dcpi_err *err);

/*
 * Fit m (from model_copy, changed in place) to cycles[i], the measured core
 * cycles per iteration of probes[i] (<= 0: not measured).  Values that the
 * probes determine move to the best fit (coordinate descent over each value's
 * candidates, the scheduler as the forward model); the others keep their
 * source.  A changed value's source becomes "measured DATE by probe P".
 */
int model_fit(struct model *m, const struct model_probe *probes, const double *cycles,
	      size_t n, const char *date, struct model_fit_report *rep, struct dcpi_err *err);

/* The class row of an instruction; *known = 0 when it is the fallback. */
const struct model_class *model_classify(const struct model *m, const struct cfg_insn *insn,
					 int *known);
/* MODEL_T_* traits of an instruction, as classify matches them. */
uint32_t model_traits(const struct cfg_insn *insn);

/* Why an instruction's M_i is what it is (static stalls, sec. 6.3). */
enum model_reason {
	MODEL_R_NONE,		/* no stall: M_i within the retire-width minimum */
	MODEL_R_LATENCY,	/* its own execution latency */
	MODEL_R_REG_DEP,	/* waited for a register written by culprit */
	MODEL_R_FLAGS_DEP,	/* waited for flags written by culprit */
	MODEL_R_MEM_DEP,	/* load waited for the store culprit (forwarding) */
	MODEL_R_PORT,		/* port or unit busy with culprit */
	MODEL_R_DIVIDER,	/* non-pipelined unit (divider) busy with culprit */
	MODEL_R_DISPATCH,	/* dispatch width or full reorder buffer */
	MODEL_R_RETIRE,		/* retire width */
	MODEL_R_COUNT
};
const char *model_reason_name(enum model_reason r);

struct sched_insn {
	uint64_t address;
	int dispatch, issue, complete, retire;	/* cycles, single pass */
	int m;				/* M_i, single pass */
	double m_loop;			/* M_i per iteration in the steady state */
	int reason;			/* enum model_reason */
	int culprit;			/* index into the block's insns, or -1 */
	int class_known;		/* 0: conservative fallback class used */
	int fused;			/* jcc fused with the instruction before it */
};

struct sched_block {
	int cycles;			/* single pass best case: sum of M_i */
	double steady_cycles;		/* cycles per iteration as a loop body */
	size_t n;
	struct sched_insn *insns;
	unsigned unknown_forms;		/* instructions that used the fallback class */
	int loop_lines;			/* a loop on itself whose steady state is the
					 * front end's: the lines its code spans
					 * (model_loop_lines); 0 otherwise */
};

/*
 * Best-case schedule of insns[0..n).  pre[0..npre) (may be NULL) are the
 * instructions executed before the block: they warm up the machine state
 * (their results' readiness, ports) and are not reported.  steady_cycles
 * comes from running the block many times in a row, carrying registers,
 * stores and ports across iterations.  out is filled; free with
 * sched_block_free.
 */
int model_schedule(const struct model *m, const struct cfg_insn *insns, size_t n,
		   const struct cfg_insn *pre, size_t npre, struct sched_block *out,
		   struct dcpi_err *err);
void sched_block_free(struct sched_block *b);

#endif /* DCPI_MODEL_H */
