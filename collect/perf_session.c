/*
 * collect/perf_session.c - the one decoder of perf records (public header
 * include/dcpi/perf_records.h, so import/ can use it): the header (type,
 * misc, size), PERF_RECORD_SAMPLE with the fields sample_type selects in the
 * kernel's order (include/uapi/linux/perf_event.h, "PERF_RECORD_SAMPLE"),
 * MMAP, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES, THROTTLE, UNTHROTTLE;
 * each handed to a callback of a `struct perf_tool`, as Linux perf's
 * session does for both `perf record` and `perf report`.
 *
 * Both the live session (collect/session.c: the sampler's rings, for
 * `dcpi record` and dcpid) and the perf.data importer (import/perf.c) call
 * perf_rec_deliver(); they differ only in their callbacks and in how a
 * sample's id names its attribute.  Every read is checked against the
 * record's size: a record too short for its fields is an error naming the
 * record's type and offset, never a read past it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/perf_event.h>

#include "dcpi/perf_records.h"

#ifndef PERF_SAMPLE_BRANCH_COUNTERS
#define PERF_SAMPLE_BRANCH_COUNTERS (1ULL << 19)	/* Linux 6.8 */
#endif

/* A cursor over one record's body, for the bounds-checked reads. */
struct cur {
	const uint8_t *p;	/* the record */
	size_t at, n;		/* next byte, size */
	const char *field;	/* the field that did not fit */
};

static int cur_skip(struct cur *c, uint64_t bytes, const char *field)
{
	if (bytes > c->n - c->at) {
		c->field = field;
		return -EINVAL;
	}
	c->at += (size_t)bytes;
	return 0;
}

static int cur_u64(struct cur *c, uint64_t *v, const char *field)
{
	if (c->n - c->at < 8) {
		c->field = field;
		return -EINVAL;
	}
	*v = dcpi_get_le64(c->p + c->at);
	c->at += 8;
	return 0;
}

/* n items of size bytes each, their start into *where. */
static int cur_array(struct cur *c, uint64_t n, size_t size, const uint8_t **where,
		     const char *field)
{
	if (n > (c->n - c->at) / size) {
		c->field = field;
		return -EINVAL;
	}
	*where = c->p + c->at;
	c->at += (size_t)n * size;
	return 0;
}

static const char *const rec_names[] = {
	[PERF_RECORD_MMAP] = "MMAP", [PERF_RECORD_LOST] = "LOST",
	[PERF_RECORD_COMM] = "COMM", [PERF_RECORD_EXIT] = "EXIT",
	[PERF_RECORD_THROTTLE] = "THROTTLE", [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
	[PERF_RECORD_FORK] = "FORK", [PERF_RECORD_READ] = "READ",
	[PERF_RECORD_SAMPLE] = "SAMPLE", [PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX", [PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES", [PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
	[PERF_RECORD_NAMESPACES] = "NAMESPACES", [PERF_RECORD_KSYMBOL] = "KSYMBOL",
	[PERF_RECORD_BPF_EVENT] = "BPF_EVENT", [PERF_RECORD_CGROUP] = "CGROUP",
	[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
};

const char *perf_rec_name(uint32_t type, char *buf, size_t len)
{
	if (type < sizeof(rec_names) / sizeof(rec_names[0]) && rec_names[type])
		snprintf(buf, len, "PERF_RECORD_%s", rec_names[type]);
	else
		snprintf(buf, len, "record type %" PRIu32, type);
	return buf;
}

static int rec_error(const struct perf_decoder *d, const uint8_t *rec, size_t off,
		     const char *field, struct dcpi_err *err)
{
	char name[40];
	uint16_t size;

	size = dcpi_get_le16(rec + 6);
	return dcpi_errf(err, -EINVAL, "%s: %s at offset %zu: its size, %u bytes, cannot hold "
			 "%s: corrupt", d->what,
			 perf_rec_name(dcpi_get_le32(rec), name, sizeof(name)), off, size, field);
}

/* --- PERF_RECORD_SAMPLE --------------------------------------------------- */

#define HEAD_BITS (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		   PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | \
		   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define MIDDLE_BITS (PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | \
		     PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

static uint32_t words(uint64_t bits)
{
	return 8 * (uint32_t)__builtin_popcountll(bits);
}

void perf_decoder_init(struct perf_decoder *d)
{
	uint64_t st = d->nattrs ? d->attrs[0].sample_type : 0;

	d->id_at = 0;
	if (d->nattrs > 1 && d->attr_of_id && (st & PERF_SAMPLE_IDENTIFIER))
		d->id_at = 8;
	else if (d->nattrs > 1 && d->attr_of_id && (st & PERF_SAMPLE_ID))
		d->id_at = 8 + words(st & (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					   PERF_SAMPLE_ADDR));
	for (size_t i = 0; i < d->nattrs; i++) {
		st = d->attrs[i].sample_type;
		d->attrs[i].time_at = !(st & PERF_SAMPLE_TIME) ? 0 :
			8 + words(st & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID));
	}
}

/* The attribute of a sample, from its id when the layout has one. */
static int sample_attr(const struct perf_decoder *d, struct cur *c, uint32_t *attr)
{
	*attr = 0;
	if (!d->id_at)
		return 0;
	if (c->n < d->id_at + 8) {
		c->field = "the sample's id";
		return -EINVAL;
	}
	if (d->attr_of_id(d->id_ctx, dcpi_get_le64(c->p + d->id_at), attr) < 0)
		*attr = PERF_ATTR_NONE;
	return 0;
}

/* IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD. */
static int sample_head(struct cur *c, uint64_t st, struct perf_sample *s)
{
	uint64_t v;

	if ((st & PERF_SAMPLE_IDENTIFIER) && cur_u64(c, &s->id, "IDENTIFIER"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_IP) && cur_u64(c, &s->ip, "IP"))
		return -EINVAL;
	if (st & PERF_SAMPLE_TID) {
		if (cur_u64(c, &v, "TID"))
			return -EINVAL;
		s->pid = (uint32_t)v;	/* little-endian: pid first */
		s->tid = (uint32_t)(v >> 32);
	}
	if ((st & PERF_SAMPLE_TIME) && cur_u64(c, &s->time, "TIME"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_ADDR) && cur_u64(c, &s->addr, "ADDR"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_ID) && cur_u64(c, &s->id, "ID"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STREAM_ID) && cur_u64(c, &s->stream_id, "STREAM_ID"))
		return -EINVAL;
	if (st & PERF_SAMPLE_CPU) {
		if (cur_u64(c, &v, "CPU"))
			return -EINVAL;
		s->cpu = (uint32_t)v;
	}
	if ((st & PERF_SAMPLE_PERIOD) && cur_u64(c, &s->period, "PERIOD"))
		return -EINVAL;
	return 0;
}

/* READ: one value, or a group (nr, then nr values), each with its extras. */
static int sample_read(struct cur *c, const struct perf_rec_attr *a)
{
	uint64_t rf = a->read_format, nr = 1;
	size_t per = 8 + ((rf & PERF_FORMAT_ID) ? 8 : 0) + ((rf & PERF_FORMAT_LOST) ? 8 : 0);
	const uint8_t *where;

	if ((rf & PERF_FORMAT_GROUP) && cur_u64(c, &nr, "READ.nr"))
		return -EINVAL;
	if (cur_skip(c, 8 * (uint64_t)__builtin_popcountll(rf & (PERF_FORMAT_TOTAL_TIME_ENABLED |
					PERF_FORMAT_TOTAL_TIME_RUNNING)), "READ's times"))
		return -EINVAL;
	return cur_array(c, nr, per, &where, "READ's values");
}

/* BRANCH_STACK: nr, hw_idx (BRANCH_HW_INDEX), nr {from, to, flags}, then
 * nr counters (BRANCH_COUNTERS). */
static int sample_branches(struct cur *c, const struct perf_rec_attr *a, struct perf_sample *s)
{
	const uint8_t *cntr;

	if (cur_u64(c, &s->bnr, "BRANCH_STACK.nr"))
		return -EINVAL;
	if ((a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) &&
	    cur_skip(c, 8, "BRANCH_STACK.hw_idx"))
		return -EINVAL;
	if (cur_array(c, s->bnr, 24, &s->br, "BRANCH_STACK's entries"))
		return -EINVAL;
	if ((a->branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS) &&
	    cur_array(c, s->bnr, 8, &cntr, "BRANCH_STACK's counters"))
		return -EINVAL;
	return 0;
}

/* REGS_USER and REGS_INTR: abi, then one u64 per bit of mask unless abi is 0. */
static int sample_regs(struct cur *c, uint64_t mask, uint64_t *abi, const uint8_t **regs,
		       unsigned *nregs, const char *field)
{
	unsigned n = (unsigned)__builtin_popcountll(mask);

	if (cur_u64(c, abi, field))
		return -EINVAL;
	if (!*abi)
		return 0;
	*nregs = n;
	return cur_array(c, n, 8, regs, field);
}

/* READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_USER, STACK_USER. */
static int sample_middle(struct cur *c, const struct perf_rec_attr *a, struct perf_sample *s)
{
	uint64_t st = a->sample_type, v;

	if ((st & PERF_SAMPLE_READ) && sample_read(c, a))
		return -EINVAL;
	if ((st & PERF_SAMPLE_CALLCHAIN) &&
	    (cur_u64(c, &s->nr_callchain, "CALLCHAIN.nr") ||
	     cur_array(c, s->nr_callchain, 8, &s->callchain, "CALLCHAIN's addresses")))
		return -EINVAL;
	if (st & PERF_SAMPLE_RAW) {
		if (c->n - c->at < 4) {
			c->field = "RAW.size";
			return -EINVAL;
		}
		s->raw_size = dcpi_get_le32(c->p + c->at);
		c->at += 4;
		if (cur_array(c, s->raw_size, 1, &s->raw, "RAW's data"))
			return -EINVAL;
	}
	if ((st & PERF_SAMPLE_BRANCH_STACK) && sample_branches(c, a, s))
		return -EINVAL;
	if ((st & PERF_SAMPLE_REGS_USER) &&
	    sample_regs(c, a->regs_user, &s->regs_abi, &s->regs_user, &s->nregs_user,
			"REGS_USER"))
		return -EINVAL;
	if (st & PERF_SAMPLE_STACK_USER) {
		if (cur_u64(c, &v, "STACK_USER.size") || cur_skip(c, v, "STACK_USER's data"))
			return -EINVAL;
		if (v && cur_skip(c, 8, "STACK_USER.dyn_size"))
			return -EINVAL;
	}
	return 0;
}

/* WEIGHT, DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, CGROUP, the page
 * sizes, AUX. */
static int sample_tail(struct cur *c, const struct perf_rec_attr *a, struct perf_sample *s)
{
	uint64_t st = a->sample_type, v, abi;
	const uint8_t *regs;
	unsigned nregs;

	if ((st & PERF_SAMPLE_WEIGHT_TYPE) && cur_u64(c, &s->weight, "WEIGHT"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_DATA_SRC) && cur_u64(c, &s->data_src, "DATA_SRC"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TRANSACTION) && cur_skip(c, 8, "TRANSACTION"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_REGS_INTR) &&
	    sample_regs(c, a->regs_intr, &abi, &regs, &nregs, "REGS_INTR"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_PHYS_ADDR) && cur_u64(c, &s->phys_addr, "PHYS_ADDR"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_CGROUP) && cur_skip(c, 8, "CGROUP"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_DATA_PAGE_SIZE) && cur_skip(c, 8, "DATA_PAGE_SIZE"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_CODE_PAGE_SIZE) && cur_skip(c, 8, "CODE_PAGE_SIZE"))
		return -EINVAL;
	if ((st & PERF_SAMPLE_AUX) &&
	    (cur_u64(c, &v, "AUX.size") || cur_skip(c, v, "AUX's data")))
		return -EINVAL;
	return 0;
}

int perf_sample_parse(const struct perf_decoder *d, const uint8_t *rec, size_t size,
		      size_t off, struct perf_sample *s, struct dcpi_err *err)
{
	struct cur c = { rec, 8, size, NULL };
	const struct perf_rec_attr *a;

	memset(s, 0, sizeof(*s));
	s->off = off;
	s->misc = dcpi_get_le16(rec + 4);
	if (d->id_at && sample_attr(d, &c, &s->attr))
		return rec_error(d, rec, off, c.field, err);
	if (s->attr >= d->nattrs) {
		s->attr = PERF_ATTR_NONE;
		return 0;
	}
	a = &d->attrs[s->attr];
	s->sample_type = a->sample_type;
	if (sample_head(&c, a->sample_type, s) ||
	    ((a->sample_type & MIDDLE_BITS) && sample_middle(&c, a, s)) ||
	    ((a->sample_type & ~(uint64_t)(HEAD_BITS | MIDDLE_BITS)) && sample_tail(&c, a, s)))
		return rec_error(d, rec, off, c.field, err);
	return 0;
}

/* --- the other records ------------------------------------------------------ */

/* A string field from at to the record's end, NUL-terminated in copy when
 * the record does not terminate it. */
static const char *rec_string(const uint8_t *rec, size_t at, size_t size, char *copy,
			      size_t len)
{
	if (memchr(rec + at, '\0', size - at))
		return (const char *)rec + at;
	snprintf(copy, len, "%.*s", (int)(size - at), (const char *)rec + at);
	return copy;
}

/* MMAP: pid, tid, addr, len, pgoff, filename.  MMAP2 puts between pgoff
 * and the filename 24 bytes of device and inode or of build-id (MISC_MMAP_
 * BUILD_ID: size, 3 reserved bytes, 20 id bytes), then prot and flags. */
static int do_mmap(const struct perf_decoder *d, const struct perf_tool *t, const uint8_t *rec,
		   size_t off, size_t size, struct dcpi_err *err)
{
	char copy[4096];
	struct perf_mmap m = { .off = off };
	size_t name_at;

	m.misc = dcpi_get_le16(rec + 4);
	m.v2 = dcpi_get_le32(rec) == PERF_RECORD_MMAP2;
	name_at = m.v2 ? 8 + 32 + 24 + 8 : 8 + 32;
	if (size <= name_at)
		return rec_error(d, rec, off, m.v2 ? "pid, tid, addr, len, pgoff, ids, prot, "
				 "flags and a file name" : "pid, tid, addr, len, pgoff and a file "
				 "name", err);
	m.pid = dcpi_get_le32(rec + 8);
	m.tid = dcpi_get_le32(rec + 12);
	m.start = dcpi_get_le64(rec + 16);
	m.len = dcpi_get_le64(rec + 24);
	m.pgoff = dcpi_get_le64(rec + 32);
	if (m.v2 && (m.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		m.build_id = rec + 44;
		m.build_id_size = rec[40] <= 20 ? rec[40] : 20;
	}
	if (m.v2) {
		m.prot = dcpi_get_le32(rec + 64);
		m.flags = dcpi_get_le32(rec + 68);
	}
	m.filename = rec_string(rec, name_at, size, copy, sizeof(copy));
	return t->mmap(t->ctx, &m, err);
}

static int do_comm(const struct perf_decoder *d, const struct perf_tool *t, const uint8_t *rec,
		   size_t off, size_t size, struct dcpi_err *err)
{
	char copy[64];
	struct perf_comm c = { .off = off };
	uint16_t misc;

	if (size <= 16)
		return rec_error(d, rec, off, "pid, tid and a name", err);
	misc = dcpi_get_le16(rec + 4);
	c.pid = dcpi_get_le32(rec + 8);
	c.tid = dcpi_get_le32(rec + 12);
	c.exec = (misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
	c.comm = rec_string(rec, 16, size, copy, sizeof(copy));
	return t->comm(t->ctx, &c, err);
}

/* FORK and EXIT: pid, ppid, tid, ptid, time. */
static int do_task(const struct perf_decoder *d, const struct perf_tool *t, const uint8_t *rec,
		   size_t off, size_t size, struct dcpi_err *err)
{
	struct perf_task k = { .off = off };

	if (size < 8 + 24)
		return rec_error(d, rec, off, "pid, ppid, tid, ptid and time", err);
	k.pid = dcpi_get_le32(rec + 8);
	k.ppid = dcpi_get_le32(rec + 12);
	k.tid = dcpi_get_le32(rec + 16);
	k.ptid = dcpi_get_le32(rec + 20);
	k.time = dcpi_get_le64(rec + 24);
	if (dcpi_get_le32(rec) == PERF_RECORD_FORK)
		return t->fork(t->ctx, &k, err);
	return t->exit(t->ctx, &k, err);
}

static int do_lost(const struct perf_decoder *d, const struct perf_tool *t, const uint8_t *rec,
		   size_t off, size_t size, struct dcpi_err *err)
{
	struct perf_lost l = { .off = off };

	l.samples = dcpi_get_le32(rec) == PERF_RECORD_LOST_SAMPLES;
	if (l.samples) {
		if (size < 16)
			return rec_error(d, rec, off, "lost", err);
		l.lost = dcpi_get_le64(rec + 8);
		l.field = "PERF_RECORD_LOST_SAMPLES.lost";
	} else {
		if (size < 24)
			return rec_error(d, rec, off, "id and lost", err);
		l.id = dcpi_get_le64(rec + 8);
		l.lost = dcpi_get_le64(rec + 16);
		l.field = "PERF_RECORD_LOST.lost";
	}
	return t->lost(t->ctx, &l, err);
}

static int do_throttle(const struct perf_decoder *d, const struct perf_tool *t,
		       const uint8_t *rec, size_t off, size_t size, struct dcpi_err *err)
{
	struct perf_throttle k = { .off = off };

	if (size < 8 + 24)
		return rec_error(d, rec, off, "time, id and stream_id", err);
	k.unthrottle = dcpi_get_le32(rec) == PERF_RECORD_UNTHROTTLE;
	k.time = dcpi_get_le64(rec + 8);
	k.id = dcpi_get_le64(rec + 16);
	k.stream_id = dcpi_get_le64(rec + 24);
	return t->throttle(t->ctx, &k, err);
}

static int do_sample(const struct perf_decoder *d, const struct perf_tool *t,
		     const uint8_t *rec, size_t off, size_t size, struct dcpi_err *err)
{
	struct perf_sample s;
	int ret = perf_sample_parse(d, rec, size, off, &s, err);

	return ret ? ret : t->sample(t->ctx, &s, err);
}

int perf_rec_deliver(const struct perf_decoder *d, const struct perf_tool *t,
		     const uint8_t *rec, size_t off, struct dcpi_err *err)
{
	uint32_t type = dcpi_get_le32(rec);
	uint16_t size;

	size = dcpi_get_le16(rec + 6);
	switch (type) {
	case PERF_RECORD_SAMPLE:
		if (t->sample)
			return do_sample(d, t, rec, off, size, err);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (t->mmap)
			return do_mmap(d, t, rec, off, size, err);
		break;
	case PERF_RECORD_COMM:
		if (t->comm)
			return do_comm(d, t, rec, off, size, err);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (type == PERF_RECORD_FORK ? !!t->fork : !!t->exit)
			return do_task(d, t, rec, off, size, err);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (t->lost)
			return do_lost(d, t, rec, off, size, err);
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (t->throttle)
			return do_throttle(d, t, rec, off, size, err);
		break;
	}
	return t->other ? t->other(t->ctx, type, rec, size, err) : 0;
}

/* --- time, for putting records in order ------------------------------------- */

/* A non-sample record's trailing sample_id: TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER of the attribute (by its IDENTIFIER, the last u64). */
static int id_time(const struct perf_decoder *d, const uint8_t *rec, size_t size,
		   uint64_t *time)
{
	const struct perf_rec_attr *a = &d->attrs[0];
	uint64_t t;
	uint32_t attr;
	size_t idsz;

	if (!a->sample_id_all)
		return -ENOENT;
	if (d->nattrs > 1 && (a->sample_type & PERF_SAMPLE_IDENTIFIER) && d->attr_of_id &&
	    size >= 16 &&
	    d->attr_of_id(d->id_ctx, dcpi_get_le64(rec + size - 8), &attr) >= 0 &&
	    attr < d->nattrs)
		a = &d->attrs[attr];
	if (!(a->sample_type & PERF_SAMPLE_TIME))
		return -ENOENT;
	t = a->sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
	idsz = 8 * (size_t)__builtin_popcountll(t);
	if (size < 8 + idsz)
		return -EINVAL;
	*time = dcpi_get_le64(rec + size - idsz + ((t & PERF_SAMPLE_TID) ? 8 : 0));
	return 0;
}

int perf_rec_time(const struct perf_decoder *d, const uint8_t *rec, size_t size,
		  uint64_t *time)
{
	struct cur c = { rec, 8, size, NULL };
	uint32_t attr = 0, at, type = dcpi_get_le32(rec);

	if (!d->nattrs)
		return -ENOENT;
	if (type != PERF_RECORD_SAMPLE)
		return type < PERF_RECORD_MAX ? id_time(d, rec, size, time) : -ENOENT;
	if (d->id_at && sample_attr(d, &c, &attr))
		return -EINVAL;
	if (attr >= d->nattrs || !(at = d->attrs[attr].time_at))
		return -ENOENT;
	if (size < at + 8)
		return -EINVAL;
	*time = dcpi_get_le64(rec + at);
	return 0;
}
