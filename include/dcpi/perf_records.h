/*
 * perf_records.h - one decoder of the kernel's perf records (collect/
 * perf_session.c), behind a table of callbacks, for both the live rings of
 * `dcpi record` and dcpid (collect/session.c) and the perf.data files of
 * `dcpi import` (import/perf.c).  It plays the part of `struct perf_tool`
 * and the record parsing of Linux perf's session: the callers own what the
 * records mean, this file only says what they contain.
 *
 * A public header of collect/ because import/ uses it too: import/ includes
 * only this and dcpi/collect.h, never collect/internal.h.
 *
 * Every field is read with a bounds check against the record's own size; a
 * record whose size cannot hold what its type (and for a sample, its
 * attribute's sample_type) says it holds is an error naming the record type
 * and its offset.  Variable parts (callchain, raw data, branch stack,
 * registers) are returned as pointers into the record, never copied.
 */
#ifndef DCPI_PERF_RECORDS_H
#define DCPI_PERF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

/* What a record's layout depends on, per attribute (one per event). */
struct perf_rec_attr {
	uint64_t sample_type;		/* PERF_SAMPLE_* */
	uint64_t read_format;		/* PERF_FORMAT_* */
	uint64_t branch_sample_type;	/* PERF_SAMPLE_BRANCH_* */
	uint64_t regs_user;		/* sample_regs_user */
	uint64_t regs_intr;		/* sample_regs_intr */
	int sample_id_all;
	uint32_t time_at;		/* set by perf_decoder_init: where a sample's
					 * TIME is, 0 when it has none */
};

#define PERF_ATTR_NONE UINT32_MAX	/* a sample of an id no attribute has */

/* Fill attrs, nattrs, attr_of_id, id_ctx and what, then perf_decoder_init. */
struct perf_decoder {
	struct perf_rec_attr *attrs;
	size_t nattrs;
	/*
	 * The attribute of a sample's id (0, or negative when no attribute
	 * has it).  NULL, or one attribute: every sample is attrs[0]'s.
	 * Called only when the layout carries an id (PERF_SAMPLE_IDENTIFIER,
	 * or PERF_SAMPLE_ID at the position attrs[0] gives it, as perf
	 * requires).
	 */
	int (*attr_of_id)(void *ctx, uint64_t id, uint32_t *attr);
	void *id_ctx;
	const char *what;		/* the file, or the ring, in messages */
	uint32_t id_at;			/* set by perf_decoder_init: where a sample's
					 * id is, 0 when samples name no attribute */
};

/* Work out where ids and times are, once, so each record is read fast. */
void perf_decoder_init(struct perf_decoder *d);

/* A PERF_RECORD_SAMPLE, the fields sample_type selects, in the kernel's order. */
struct perf_sample {
	size_t off;			/* of the record, for messages */
	uint16_t misc;			/* PERF_RECORD_MISC_* (the cpumode) */
	uint32_t attr;			/* PERF_ATTR_NONE: nothing below is set */
	uint64_t sample_type;		/* of attr: which fields below are set */
	uint64_t id, ip, time, addr, stream_id, period;
	uint32_t pid, tid, cpu;
	const uint8_t *callchain;	/* nr_callchain u64 addresses */
	uint64_t nr_callchain;
	const uint8_t *raw;
	uint32_t raw_size;
	const uint8_t *br;		/* bnr entries {from, to, flags}, newest first */
	uint64_t bnr;
	uint64_t regs_abi;		/* 0 (NONE): no registers follow */
	const uint8_t *regs_user;	/* nregs_user u64, in mask order */
	unsigned nregs_user;
	uint64_t weight, data_src, phys_addr;
};

/* MMAP (v2 = 0) and MMAP2. */
struct perf_mmap {
	size_t off;
	uint16_t misc;
	int v2;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	const uint8_t *build_id;	/* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID */
	unsigned build_id_size;
	uint32_t prot, flags;		/* MMAP2 only */
	const char *filename;		/* NUL-terminated (cut at the record's end) */
};

struct perf_comm {
	size_t off;
	uint32_t pid, tid;
	int exec;			/* PERF_RECORD_MISC_COMM_EXEC */
	const char *comm;
};

/* FORK and EXIT. */
struct perf_task {
	size_t off;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* LOST (id, lost) and LOST_SAMPLES (lost). */
struct perf_lost {
	size_t off;
	int samples;			/* 1: PERF_RECORD_LOST_SAMPLES */
	uint64_t id, lost;
	const char *field;		/* "PERF_RECORD_LOST.lost", for messages */
};

/* THROTTLE and UNTHROTTLE. */
struct perf_throttle {
	size_t off;
	int unthrottle;
	uint64_t time, id, stream_id;
};

/*
 * The callbacks (perf's `struct perf_tool`): each returns 0 or a negative
 * errno with err filled.  A NULL callback leaves its records undecoded and
 * hands them to other(), which sees every type without a callback (NULL:
 * ignored), perf's own user-space types (FINISHED_ROUND, ...) included.
 */
struct perf_tool {
	void *ctx;
	int (*sample)(void *ctx, const struct perf_sample *s, struct dcpi_err *err);
	int (*mmap)(void *ctx, const struct perf_mmap *m, struct dcpi_err *err);
	int (*comm)(void *ctx, const struct perf_comm *c, struct dcpi_err *err);
	int (*fork)(void *ctx, const struct perf_task *t, struct dcpi_err *err);
	int (*exit)(void *ctx, const struct perf_task *t, struct dcpi_err *err);
	int (*lost)(void *ctx, const struct perf_lost *l, struct dcpi_err *err);
	int (*throttle)(void *ctx, const struct perf_throttle *t, struct dcpi_err *err);
	int (*other)(void *ctx, uint32_t type, const uint8_t *rec, size_t size,
		     struct dcpi_err *err);
};

/*
 * Decode the record at rec (its header's size already checked against the
 * bytes available: 8 <= size <= avail) and call t's callback for its type.
 * off is where it starts, for messages.
 */
int perf_rec_deliver(const struct perf_decoder *d, const struct perf_tool *t,
		     const uint8_t *rec, size_t off, struct dcpi_err *err);
/* Decode a PERF_RECORD_SAMPLE of size bytes into *s. */
int perf_sample_parse(const struct perf_decoder *d, const uint8_t *rec, size_t size,
		      size_t off, struct perf_sample *s, struct dcpi_err *err);
/*
 * The time of a record, from a sample's TIME field or another record's
 * trailing sample_id (attrs[0]'s sample_id_all): 0, or -ENOENT when it
 * carries none, -EINVAL when it is too short to.  Cheaper than decoding.
 */
int perf_rec_time(const struct perf_decoder *d, const uint8_t *rec, size_t size,
		  uint64_t *time);
/* "PERF_RECORD_MMAP2", or "record type N" into buf. */
const char *perf_rec_name(uint32_t type, char *buf, size_t len);

#endif /* DCPI_PERF_RECORDS_H */
