/*
 * import/perf.c - read perf record's perf.data directly and turn its
 * samples into (image, file offset, event) counts, as the live collector does
 * (DCPI paper sec. 4.3: per-process image maps, then a table of counts).
 *
 * The file (perf's Documentation/perf.data-file-format.txt): a header with
 * the magic "PERFILE2", the attribute section (perf_event_attr + the ids of
 * the event's counters), the data section of records, and after the data the
 * feature sections named by a bitmap (BUILD_ID, EVENT_DESC, CPUID, CMDLINE...).
 *
 * Records are indexed first, then processed in time order (a stable sort:
 * perf writes each CPU's ring in turn, so an MMAP can follow, in the file, a
 * sample that needs it).  Each is decoded by the live collector's decoder
 * (collect/perf_session.c, include/dcpi/perf_records.h) into this file's
 * callbacks: MMAP/MMAP2, COMM (exec), FORK and EXIT maintain each process's
 * maps through collect/maps.c; every SAMPLE becomes one count at (image,
 * offset) by maps_place, in collect/aggregate.c's table, as in the live
 * session.  Kernel samples go to "[kernel.kallsyms]" keyed by address;
 * samples that map to nothing go to the unknown image; with the kernel's
 * vmlinux (image/vmlinux.c: --vmlinux, or found by the recorded kernel
 * build-id), the kernel's own samples go to that file by file offset, the
 * KASLR slide taken off (perf's "[kernel.kallsyms]_text" MMAP record holds
 * the runtime _text in pgoff), and a module's stay by address.  Build-ids
 * from the header name the images (they describe the files as they were when
 * recorded, so they win over the files on disk now).
 *
 * Branch stacks (PERF_SAMPLE_BRANCH_STACK: perf record -b, Intel LBR, AMD
 * BRS / LbrExtV2) become path profiles (dcpi/paths.h, docs/import.md): every entry
 * is a taken transition from -> to, mapped to image offsets like a sample's
 * IP (PATH_ELSEWHERE across images or into the kernel).  Between two
 * consecutive entries of one stack the code from the older entry's target to
 * the newer entry's source ran straight through: decoded from the image
 * file (when it is the one recorded), each conditional branch in it was not
 * taken, which gives the fall-through counts branch records lack.  Only when
 * every branch was recorded (PERF_SAMPLE_BRANCH_ANY); a range that meets an
 * unconditional transfer or misses the newer source is dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/safefile.h"
#include "dcpi/callgraph.h"
#include "dcpi/cfg.h"
#include "dcpi/paths.h"
#include "dcpi/collect.h"
#include "dcpi/perf_records.h"
#include "internal.h"

#define PF_HEADER_SIZE 104
#define PF_FEAT_BITS 256
#define PF_ATTR_VER0 64		/* smallest perf_event_attr */

/* Feature bits (perf's util/header.h). */
enum {
	PF_FEAT_BUILD_ID = 2,
	PF_FEAT_HOSTNAME = 3,
	PF_FEAT_CPUDESC = 8,
	PF_FEAT_CPUID = 9,
	PF_FEAT_CMDLINE = 11,
	PF_FEAT_EVENT_DESC = 12,
};

/* Record types perf itself writes (perf's util/event.h). */
enum {
	PF_REC_FINISHED_ROUND = 68,
	PF_REC_AUXTRACE = 71,
	PF_REC_FINISHED_INIT = 82,
};


struct pf_attr {
	struct perf_event_attr a;	/* zero beyond what the file holds */
	double period_sum;		/* PERIOD values, for freq mode */
	uint64_t period_n;
};

struct pf_id {
	uint64_t id;
	uint32_t attr;
};

struct pf_buildid {
	char *path;
	char hex[PROF_BUILD_ID_MAX];
};

struct pf_rec {
	uint64_t time;
	size_t off;		/* into the file */
};

/* Where an image's file is here (img_locate), and what it cost when not. */
struct pf_img {
	int state;		/* 0 not looked for, 1 found, -1 not found */
	char how[64];
	struct prof_image_id id;	/* of the file found (its path) */
	uint64_t samples;	/* samples in it */
	uint64_t undecoded;	/* ranges not decoded for want of the file */
};

struct pf {
	const char *path;
	const uint8_t *buf;
	size_t len;
	struct pf_attr *attrs;
	struct perf_rec_attr *rattrs;	/* what the decoder needs of each */
	struct perf_decoder dec;
	struct imp_event *events;	/* one per attr */
	size_t nattrs;
	struct pf_id *ids;		/* sorted by id */
	size_t nids;
	struct pf_buildid *bids;
	size_t nbids, bids_cap;
	size_t data_off, data_end;
	const uint8_t *feat_table;	/* NULL when the feature table is missing */
	uint64_t features[PF_FEAT_BITS / 64];
	struct pf_rec *recs;
	size_t nrecs;
	struct maps *maps;
	struct agg *tab;
	struct prof_image_id id_tmp;
	uint64_t first_time, last_time;
	char cmdline[256];
	struct prof_epoch_meta meta;
	struct import_stats *st;
	/* branch stacks (perf record -b): path profiles by image index */
	struct path_profile *paths;
	uint64_t *last_stack;		/* the stack that last touched each */
	FILE **code;			/* the image file, for fall-through ranges */
	size_t npaths;
	uint64_t stacks, ranges, ranges_bad;
	/* images found elsewhere (--binary, --symfs, the build-id cache) */
	const struct import_opts *opts;
	struct pf_img *img;
	size_t nimg;
	/* branch-record counts (import/lbr.c) */
	struct imp_lbr *lbr;
	struct imp_lbr_info lbri;
	uint32_t br_attr;		/* the attribute with branch stacks */
	uint64_t dups;			/* stacks whose duplicated top entry was dropped */
	struct cg_table *cg;		/* call chains (perf record -g; callgraph.h) */
	/* IBS op and PEBS memory samples (import/ibs.c): kind per attribute */
	struct imp_hw *hw;
	int hw_only;		/* import_opts.into_epoch: branch records and
				 * IBS/PEBS only, into an epoch being written */
	int *hw_kind;
	/* the kernel's vmlinux (pf_kernel_vm) */
	int vm_state;			/* 0 not tried, 1 in use, -1 none */
	struct image *vm;
	uint32_t vm_image;		/* its index in maps */
	uint64_t vm_text, run_text, vm_samples, kernel_samples;
	int run_text_set;
	char vm_how[128], vm_why[DCPI_ERR_MAX];
};

/* [off, off + size) inside the file? */
/* No file a header can describe is larger (Linux file systems stop below). */
#define PF_OFFSET_MAX (1ull << 48)

static int pf_in_file(const struct pf *f, uint64_t off, uint64_t size)
{
	return off <= f->len && size <= f->len - off;
}

/* --- header ------------------------------------------------------------------ */

static int id_cmp(const void *x, const void *y)
{
	const struct pf_id *a = x, *b = y;

	return a->id < b->id ? -1 : a->id > b->id;
}

static int pf_attr_of_id(const struct pf *f, uint64_t id, uint32_t *attr)
{
	size_t lo;

	if (f->nattrs == 1) {
		*attr = 0;
		return 0;
	}
	lo = dcpi_lower_bound(f->ids, f->nids, sizeof(*f->ids), offsetof(struct pf_id, id), id);
	if (lo < f->nids && f->ids[lo].id == id) {
		*attr = f->ids[lo].attr;
		return 0;
	}
	return -ENOENT;
}

static const char *const pf_hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branches",
	"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
	"ref-cycles",
};

static const char *const pf_sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
	"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
	"bpf-output",
};

/* Name an event from its type and config when EVENT_DESC does not. */
static void pf_event_default(struct imp_event *ev, const struct perf_event_attr *a)
{
	size_t nhw = sizeof(pf_hw_names) / sizeof(pf_hw_names[0]);
	size_t nsw = sizeof(pf_sw_names) / sizeof(pf_sw_names[0]);

	if (a->type == PERF_TYPE_HARDWARE && a->config < nhw)
		snprintf(ev->name, sizeof(ev->name), "%s", pf_hw_names[a->config]);
	else if (a->type == PERF_TYPE_SOFTWARE && a->config < nsw)
		snprintf(ev->name, sizeof(ev->name), "%s", pf_sw_names[a->config]);
	else
		snprintf(ev->name, sizeof(ev->name), "raw-%u-%llx", a->type,
			 (unsigned long long)a->config);
}

static int pf_read_attrs(struct pf *f, struct dcpi_err *err)
{
	uint64_t attr_size = dcpi_get_le64(f->buf + 16), off = dcpi_get_le64(f->buf + 24);
	uint64_t size = dcpi_get_le64(f->buf + 32), nids = 0;

	if (attr_size < PF_ATTR_VER0 + 16 || attr_size > 4096 || size % attr_size ||
	    !size || !pf_in_file(f, off, size))
		return dcpi_errf(err, -EINVAL, "%s: bad attribute section (offset %" PRIu64
				 ", size %" PRIu64 ", entry size %" PRIu64 ")", f->path, off,
				 size, attr_size);
	f->nattrs = size / attr_size;
	f->attrs = calloc(f->nattrs, sizeof(*f->attrs));
	f->events = calloc(f->nattrs + IMP_HW_NEVENTS, sizeof(*f->events));
	if (!f->attrs || !f->events)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	for (size_t i = 0; i < f->nattrs; i++) {
		const uint8_t *p = f->buf + off + i * attr_size;
		uint64_t n = attr_size - 16;
		uint64_t ioff = dcpi_get_le64(p + n), isize = dcpi_get_le64(p + n + 8);

		memcpy(&f->attrs[i].a, p, n < sizeof(f->attrs[i].a) ? n : sizeof(f->attrs[i].a));
		if (isize % 8 || !pf_in_file(f, ioff, isize))
			return dcpi_errf(err, -EINVAL, "%s: attribute %zu: ids outside the file",
					 f->path, i);
		nids += isize / 8;
		pf_event_default(&f->events[i], &f->attrs[i].a);
	}
	f->ids = calloc(nids ? nids : 1, sizeof(*f->ids));
	if (!f->ids)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	for (size_t i = 0; i < f->nattrs; i++) {
		const uint8_t *p = f->buf + off + i * attr_size + attr_size - 16;

		for (uint64_t k = 0; k < dcpi_get_le64(p + 8) / 8; k++) {
			f->ids[f->nids].id = dcpi_get_le64(f->buf + dcpi_get_le64(p) + 8 * k);
			f->ids[f->nids++].attr = (uint32_t)i;
		}
	}
	dcpi_qsort(f->ids, f->nids, sizeof(*f->ids), id_cmp);
	return 0;
}

/* A perf header string: u32 length (padding included), then the bytes. */
static int pf_string(const uint8_t *p, size_t avail, char *out, size_t len, size_t *used)
{
	uint32_t n;

	if (avail < 4)
		return -EINVAL;
	n = dcpi_get_le32(p);
	if (n > avail - 4)
		return -EINVAL;
	snprintf(out, len, "%.*s", (int)strnlen((const char *)p + 4, n), p + 4);
	*used = 4 + (size_t)n;
	return 0;
}

static int pf_bid_add(struct pf *f, const char *path, const uint8_t *id, size_t n)
{
	struct pf_buildid *b;

	if (n > 32)
		n = 32;
	for (size_t i = 0; i < f->nbids; i++)
		if (!strcmp(f->bids[i].path, path))
			return 0;
	if (dcpi_grow((void **)&f->bids, &f->bids_cap, f->nbids + 1, sizeof(*f->bids)))
		return -ENOMEM;
	b = &f->bids[f->nbids];
	b->path = strdup(path);
	if (!b->path)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		snprintf(b->hex + 2 * i, 3, "%02x", id[i]);
	b->hex[2 * n] = '\0';
	f->nbids++;
	return 0;
}

static const char *pf_bid_find(const struct pf *f, const char *path)
{
	for (size_t i = 0; i < f->nbids; i++)
		if (!strcmp(f->bids[i].path, path))
			return f->bids[i].hex;
	return NULL;
}

/* HEADER_BUILD_ID: build-id records (header, pid, 24 id bytes, name). */
static int pf_feat_build_id(struct pf *f, const uint8_t *p, size_t size,
			    struct dcpi_err *err)
{
	size_t at = 0;

	while (size - at >= 36) {
		uint16_t misc = dcpi_get_le16(p + at + 4), rsize = dcpi_get_le16(p + at + 6);
		size_t idlen = (misc & PERF_RECORD_MISC_EXT_RESERVED) ? p[at + 32] : 20;
		char name[PROF_PATH_MAX];

		/* no size (older perf): a shorter id (8-byte xxHash, 16-byte md5)
		 * padded with zeros to 20, which perf's dso__build_id_equal allows;
		 * four zero bytes or more end no SHA-1 in practice */
		if (!(misc & PERF_RECORD_MISC_EXT_RESERVED) && !memcmp(p + at + 28, "\0\0\0\0", 4))
			while (idlen && !p[at + 12 + idlen - 1])
				idlen--;

		if (rsize < 36 || rsize > size - at)
			return dcpi_errf(err, -EINVAL, "%s: bad build-id record at offset %zu",
					 f->path, (size_t)(p - f->buf) + at);
		snprintf(name, sizeof(name), "%.*s",
			 (int)strnlen((const char *)p + at + 36, rsize - 36), p + at + 36);
		if (name[0] && pf_bid_add(f, name, p + at + 12, idlen))
			return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
		at += rsize;
	}
	return 0;
}

/* HEADER_EVENT_DESC: u32 nr, u32 attr size, then per event: attr, u32 nr_ids,
 * name string, ids. */
static int pf_feat_event_desc(struct pf *f, const uint8_t *p, size_t size)
{
	uint32_t nr, asz;
	size_t at = 8, used;

	if (size < 8)
		return -EINVAL;
	nr = dcpi_get_le32(p);
	asz = dcpi_get_le32(p + 4);
	for (uint32_t i = 0; i < nr; i++) {
		char name[PROF_EVENT_MAX];
		uint32_t nids, attr = i;

		if (size - at < (size_t)asz + 4)
			return -EINVAL;
		at += asz;
		nids = dcpi_get_le32(p + at);
		at += 4;
		if (pf_string(p + at, size - at, name, sizeof(name), &used))
			return -EINVAL;
		at += used;
		if (nids > (size - at) / 8)
			return -EINVAL;
		if (nids && pf_attr_of_id(f, dcpi_get_le64(p + at), &attr))
			attr = i;
		at += 8 * (size_t)nids;
		if (attr < f->nattrs && name[0])
			memcpy(f->events[attr].name, name, sizeof(name));
	}
	return 0;
}

static void pf_feat_cpuid(struct pf *f, const uint8_t *p, size_t size)
{
	char s[256], vendor[16];
	unsigned fam, model, step;
	size_t used;

	if (pf_string(p, size, s, sizeof(s), &used))
		return;
	if (sscanf(s, "%15[^,],%u,%u,%u", vendor, &fam, &model, &step) == 4) {
		snprintf(f->meta.cpu_vendor, sizeof(f->meta.cpu_vendor), "%s", vendor);
		f->meta.cpu_family = fam;
		f->meta.cpu_model = model;
		f->meta.cpu_stepping = step;
	}
}

static void pf_feat_cmdline(struct pf *f, const uint8_t *p, size_t size)
{
	size_t at = 4, used, w = 0;
	uint32_t nr;

	if (size < 4)
		return;
	nr = dcpi_get_le32(p);
	for (uint32_t i = 0; i < nr && at < size; i++) {
		char arg[128];

		if (pf_string(p + at, size - at, arg, sizeof(arg), &used))
			return;
		at += used;
		w += (size_t)snprintf(f->cmdline + w, sizeof(f->cmdline) - w, "%s%s",
				      i ? " " : "", arg);
		if (w >= sizeof(f->cmdline))
			return;
	}
}

/* The feature sections, after the data; absent when the file was cut. */
static int pf_read_features(struct pf *f, struct dcpi_err *err)
{
	size_t nfeat = 0, k = 0;
	int ret;

	for (int b = 0; b < PF_FEAT_BITS; b++)
		nfeat += (f->features[b / 64] >> (b % 64)) & 1;
	if (!f->feat_table || !pf_in_file(f, (size_t)(f->feat_table - f->buf), 16 * nfeat))
		return 0;
	for (int b = 0; b < PF_FEAT_BITS; b++) {
		const uint8_t *s;
		uint64_t off, size;

		if (!((f->features[b / 64] >> (b % 64)) & 1))
			continue;
		s = f->feat_table + 16 * k++;
		off = dcpi_get_le64(s);
		size = dcpi_get_le64(s + 8);
		if (!pf_in_file(f, off, size))
			return dcpi_errf(err, -EINVAL, "%s: header of feature %d: offset %" PRIu64
					 " size %" PRIu64 " is past the end of the file (%zu bytes): "
					 "corrupt", f->path, b, off, size, f->len);
		if (b == PF_FEAT_BUILD_ID) {
			ret = pf_feat_build_id(f, f->buf + off, size, err);
			if (ret)
				return ret;
		} else if (b == PF_FEAT_EVENT_DESC && pf_feat_event_desc(f, f->buf + off, size)) {
			return dcpi_errf(err, -EINVAL, "%s: bad event description at offset "
					 "%" PRIu64, f->path, off);
		} else if (b == PF_FEAT_CPUID) {
			pf_feat_cpuid(f, f->buf + off, size);
		} else if (b == PF_FEAT_CPUDESC) {
			char s2[128];
			size_t used;

			if (!pf_string(f->buf + off, size, s2, sizeof(s2), &used))
				memcpy(f->meta.cpu_name, s2, sizeof(f->meta.cpu_name));
		} else if (b == PF_FEAT_HOSTNAME) {
			size_t used;

			if (pf_string(f->buf + off, size, f->st->hostname, sizeof(f->st->hostname),
				      &used))
				f->st->hostname[0] = 0;
		} else if (b == PF_FEAT_CMDLINE) {
			pf_feat_cmdline(f, f->buf + off, size);
		}
	}
	return 0;
}

/* Append to the note the tool prints about what was dropped. */
static void __attribute__((format(printf, 2, 3))) pf_note(struct pf *f, const char *fmt, ...)
{
	size_t n = strlen(f->st->note);
	va_list ap;

	if (n && n < sizeof(f->st->note) - 2) {
		memcpy(f->st->note + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	if (n < sizeof(f->st->note) - 1)
		vsnprintf(f->st->note + n, sizeof(f->st->note) - n, fmt, ap);
	va_end(ap);
}

static int pf_read_header(struct pf *f, struct dcpi_err *err)
{
	uint64_t hsize, doff, dsize;
	int ret;

	if (f->len < 8 || memcmp(f->buf, "PERFILE2", 8))
		return dcpi_errf(err, -EINVAL, "%s: bad magic (not a perf.data file of "
				 "version 2)", f->path);
	if (f->len < PF_HEADER_SIZE)
		return dcpi_errf(err, -EINVAL, "%s: truncated header (%zu bytes)", f->path,
				 f->len);
	hsize = dcpi_get_le64(f->buf + 8);
	if (hsize == 16)
		return dcpi_errf(err, -EPROTONOSUPPORT, "%s: pipe-mode perf.data is not "
				 "supported (record to a file)", f->path);
	if (hsize < PF_HEADER_SIZE)
		return dcpi_errf(err, -EINVAL, "%s: bad header size %" PRIu64, f->path, hsize);
	ret = pf_read_attrs(f, err);
	if (ret)
		return ret;
	doff = dcpi_get_le64(f->buf + 40);
	dsize = dcpi_get_le64(f->buf + 48);
	memcpy(f->features, f->buf + 72, sizeof(f->features));
	if (doff < PF_HEADER_SIZE || doff > f->len)
		return dcpi_errf(err, -EINVAL, "%s: data section at offset %" PRIu64
				 " is outside the file (%zu bytes): truncated", f->path, doff,
				 f->len);
	f->data_off = (size_t)doff;
	if (!dsize) {
		/* perf record did not finish: the header was never rewritten */
		f->data_end = f->len;
		f->st->truncated = 1;
		pf_note(f, "%" PRIu64 " data bytes and no data size in the header: perf record "
			"did not finish", f->len - doff);
	} else if (dsize > UINT64_MAX - doff || doff + dsize > PF_OFFSET_MAX) {
		return dcpi_errf(err, -EINVAL, "%s: header field data.size = %" PRIu64 " at "
				 "data.offset %" PRIu64 " is implausible (past 2^48 bytes): "
				 "corrupt", f->path, dsize, doff);
	} else if (dsize > f->len - doff) {
		f->data_end = f->len;
		f->st->truncated = 1;
		pf_note(f, "the data section ends at offset %" PRIu64 ", beyond the end of the "
			"file (%zu bytes): truncated", doff + dsize, f->len);
	} else {
		f->data_end = (size_t)(doff + dsize);
		f->feat_table = f->buf + f->data_end;
	}
	return pf_read_features(f, err);
}

/* --- records ------------------------------------------------------------------ */

/* perf_decoder.attr_of_id: the attribute of a sample's id. */
static int pf_dec_attr(void *ctx, uint64_t id, uint32_t *attr)
{
	return pf_attr_of_id(ctx, id, attr);
}

/* The one decoder (collect/perf_session.c) over this file's attributes. */
static int pf_decoder(struct pf *f, struct dcpi_err *err)
{
	f->rattrs = calloc(f->nattrs, sizeof(*f->rattrs));
	if (!f->rattrs)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	for (size_t i = 0; i < f->nattrs; i++) {
		const struct perf_event_attr *a = &f->attrs[i].a;

		f->rattrs[i].sample_type = a->sample_type;
		f->rattrs[i].read_format = a->read_format;
		f->rattrs[i].branch_sample_type = a->branch_sample_type;
		f->rattrs[i].regs_user = a->sample_regs_user;
		f->rattrs[i].regs_intr = a->sample_regs_intr;
		f->rattrs[i].sample_id_all = a->sample_id_all;
	}
	f->dec.attrs = f->rattrs;
	f->dec.nattrs = f->nattrs;
	f->dec.attr_of_id = pf_dec_attr;
	f->dec.id_ctx = f;
	f->dec.what = f->path;
	perf_decoder_init(&f->dec);
	return 0;
}

static int pf_rec_cmp(const void *x, const void *y)
{
	const struct pf_rec *a = x, *b = y;

	/* stable: file order */
	return dcpi_cmp_keys((uint64_t[]){ a->time, a->off }, (uint64_t[]){ b->time, b->off }, 2);
}

static int pf_rec_push(struct pf *f, size_t at, uint64_t t, size_t *cap,
		       struct dcpi_err *err)
{
	if (dcpi_grow((void **)&f->recs, cap, f->nrecs + 1, sizeof(*f->recs)))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory for %zu records", f->path,
				 f->nrecs);
	f->recs[f->nrecs].time = t;
	f->recs[f->nrecs++].off = at;
	return 0;
}

/* Index every complete record; sort by time when the records carry it. */
static int pf_index(struct pf *f, struct dcpi_err *err)
{
	size_t at = f->data_off, cap = 0;
	uint64_t last = 0;
	int ret, timed = (f->attrs[0].a.sample_type & PERF_SAMPLE_TIME) != 0;

	while (at < f->data_end) {
		uint64_t size, t = last;

		if (f->data_end - at < 8 || dcpi_get_le16(f->buf + at + 6) < 8 ||
		    dcpi_get_le16(f->buf + at + 6) > f->data_end - at)
			break;
		size = dcpi_get_le16(f->buf + at + 6);
		if (timed)
			perf_rec_time(&f->dec, f->buf + at, (size_t)size, &t);
		ret = pf_rec_push(f, at, t, &cap, err);
		if (ret)
			return ret;
		last = t;
		if (dcpi_get_le32(f->buf + at) == PF_REC_AUXTRACE && size >= 16) {
			uint64_t aux = dcpi_get_le64(f->buf + at + 8);

			if (aux > f->data_end - at - size)
				break;
			size += aux;
		}
		at += (size_t)size;
	}
	if (at < f->data_end) {
		f->st->truncated = 1;
		pf_note(f, "the record at offset %zu is cut short: imported the %zu complete "
			"records before it", at, f->nrecs);
	}
	if (timed)
		dcpi_qsort(f->recs, f->nrecs, sizeof(*f->recs), pf_rec_cmp);
	return 0;
}

static int pf_do_branches(struct pf *f, const struct perf_sample *s, struct dcpi_err *err);

static struct pf_img *pf_img_of(struct pf *f, uint32_t image)
{
	if (dcpi_grow_zero((void **)&f->img, &f->nimg, (size_t)image + 1, sizeof(*f->img)))
		return NULL;
	return &f->img[image];
}

/* Where image's file is here (NULL: nowhere); pseudo images have none. */
static const struct pf_img *pf_locate(struct pf *f, uint32_t image)
{
	const struct prof_image_id *id = maps_image(f->maps, image);
	struct pf_img *pi = pf_img_of(f, image);
	char found[PROF_PATH_MAX];
	const char *bid;

	if (!pi)
		return NULL;
	if (!pi->state) {
		pi->state = -1;
		bid = pf_bid_find(f, id->path);
		if (image != MAPS_UNKNOWN && id->path[0] == '/' &&
		    !img_locate(id->path, bid, f->opts ? &f->opts->find : NULL, found,
				sizeof(found), pi->how, sizeof(pi->how)) &&
		    !prof_image_id_from_file(&pi->id, found, NULL))
			pi->state = 1;
	}
	return pi->state > 0 ? pi : NULL;
}

/* Where a sample's cpumode says its ip is. */
static enum maps_space pf_space(uint16_t misc)
{
	switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_USER:
		return MAPS_USER;
	case PERF_RECORD_MISC_KERNEL:
	case PERF_RECORD_MISC_GUEST_KERNEL:
		return MAPS_KERNEL;
	default:
		return MAPS_OTHER;
	}
}

static void pf_sample_time(struct pf *f, uint64_t t)
{
	if (!f->first_time || t < f->first_time)
		f->first_time = t;
	if (t > f->last_time)
		f->last_time = t;
}

/* The vmlinux of the recorded kernel, opened at its first sample: 0 (also
 * when there is none: its samples stay by address, and the note says why),
 * or an error when --vmlinux names another kernel's file. */
static int pf_kernel_vm(struct pf *f, struct dcpi_err *err)
{
	const struct img_locate_opts *o = f->opts ? &f->opts->find : NULL;
	const char *bid = pf_bid_find(f, MAPS_KERNEL_PATH);
	char path[PROF_PATH_MAX], abs[PATH_MAX];
	struct dcpi_err verr = { 0 };
	int ret;

	f->vm_state = -1;
	ret = img_vmlinux_find(bid, o, path, sizeof(path), f->vm_how, sizeof(f->vm_how),
			       &verr);
	if (ret < 0 && o && o->vmlinux)
		return dcpi_errf(err, ret, "%s: %s", f->path, verr.msg);
	if (!ret && img_open(path, IMG_NO_DWARF, &f->vm, &verr) < 0) {
		if (o && o->vmlinux)
			return dcpi_errf(err, -EINVAL, "%s: --vmlinux: %s", f->path, verr.msg);
		ret = -EINVAL;
	}
	if (!ret && img_vmlinux_text(f->vm, &f->vm_text) < 0)
		ret = dcpi_errf(&verr, -EINVAL, "%s: no _text and no .text", path);
	/* reports open the image by the path its profiles carry */
	if (!ret && !realpath(path, abs))
		ret = dcpi_errf(&verr, -errno, "%s: %s", path, strerror(errno));
	if (!ret && maps_intern(f->maps, abs, &f->vm_image, err) < 0)
		return -ENOMEM;
	if (ret < 0) {
		img_close(f->vm);
		f->vm = NULL;
		snprintf(f->vm_why, sizeof(f->vm_why), "%s", verr.msg);
		return 0;
	}
	if (!f->run_text_set)	/* no kernel MMAP record: no slide known */
		f->run_text = f->vm_text;
	f->vm_state = 1;
	return 0;
}

/* A kernel sample at address *offset: to the vmlinux when it holds it. */
static int pf_kernel_place(struct pf *f, uint32_t *image, uint64_t *offset,
			   struct dcpi_err *err)
{
	uint64_t off;
	int ret = f->vm_state ? 0 : pf_kernel_vm(f, err);

	if (ret)
		return ret;
	f->kernel_samples++;
	if (f->vm_state < 0 ||
	    img_vmlinux_offset(f->vm, f->vm_text, f->run_text, *offset, &off) < 0)
		return 0;
	f->vm_samples++;
	*image = f->vm_image;
	*offset = off;
	return 0;
}

/* Which kernel image the samples went to, for the tool's note. */
static void pf_note_kernel(struct pf *f)
{
	if (!f->kernel_samples)
		return;
	if (f->vm_state > 0)
		pf_note(f, "kernel: %" PRIu64 " of %" PRIu64 " samples named from vmlinux %s "
			"(%s; _text ran at 0x%" PRIx64 ", linked at 0x%" PRIx64 "%s)%s",
			f->vm_samples, f->kernel_samples,
			maps_image(f->maps, f->vm_image)->path, f->vm_how, f->run_text, f->vm_text,
			f->run_text_set ? "" : ": no kernel MMAP record, no slide assumed",
			f->vm_samples < f->kernel_samples ?
			", the rest (modules) by address in " MAPS_KERNEL_PATH : "");
	else
		pf_note(f, "kernel: %" PRIu64 " samples by address in %s, named from "
			"/proc/kallsyms (%s)", f->kernel_samples, MAPS_KERNEL_PATH, f->vm_why);
}

static int pf_on_sample(void *ctx, const struct perf_sample *s, struct dcpi_err *err)
{
	struct pf *f = ctx;
	enum maps_space sp = pf_space(s->misc);
	uint32_t image;
	uint64_t offset;
	int ret;

	if (s->attr == PERF_ATTR_NONE || !(s->sample_type & PERF_SAMPLE_IP)) {
		f->st->skipped++;
		return 0;
	}
	if (s->sample_type & PERF_SAMPLE_PERIOD) {
		f->attrs[s->attr].period_sum += (double)s->period;
		f->attrs[s->attr].period_n++;
	}
	ret = maps_place(f->maps, s->pid, s->ip, sp, &image, &offset, err);
	if (!ret && sp == MAPS_KERNEL && image != MAPS_UNKNOWN)
		ret = pf_kernel_place(f, &image, &offset, err);
	if (ret)
		return ret;
	if (image == MAPS_UNKNOWN)
		f->st->unknown_samples++;
	else if (pf_img_of(f, image))
		pf_img_of(f, image)->samples++;
	else
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	pf_sample_time(f, s->time);
	f->st->samples++;
	/* into a live epoch: its pc samples are the collector's already */
	ret = f->hw_only ? 0 : agg_add(f->tab, image, s->attr, offset, 1, err);
	if (!ret && !f->hw_only && s->nr_callchain && sp == MAPS_USER && image != MAPS_UNKNOWN)
		ret = cg_table_add(f->cg, f->maps, s->pid, s->attr, s->callchain, s->nr_callchain,
				   err);
	if (!ret && f->hw_kind[s->attr] && image != MAPS_UNKNOWN)
		ret = imp_hw_add(f->hw, f->tab, (uint32_t)f->nattrs, f->hw_kind[s->attr], s->attr,
				 image, offset, s, err);
	/* a stack sampled in the kernel still holds the user's branches
	 * (llvm-profgen and AutoFDO read them too) */
	if (!ret && s->bnr) {
		ret = pf_do_branches(f, s, err);
		if (ret == -ENOMEM)
			return dcpi_errf(err, ret, "%s: out of memory for branch stacks", f->path);
	}
	return ret;
}

/* --- branch stacks -> path profiles ----------------------------------------- */

#define PF_RANGE_MAX 4096		/* longest straight-line range decoded */
#define PF_KERNEL_MIN 0xffff800000000000ull

static const struct prof_image_id *pf_image_id(void *ctx, uint32_t image);

static struct path_profile *pf_paths_of(struct pf *f, uint32_t image)
{
	if (image >= f->npaths) {
		size_t n = (size_t)image + 16;
		struct path_profile *p = realloc(f->paths, n * sizeof(*p));
		uint64_t *ls;
		FILE **c;

		if (!p)
			return NULL;
		f->paths = p;
		ls = realloc(f->last_stack, n * sizeof(*ls));
		if (!ls)
			return NULL;
		f->last_stack = ls;
		c = realloc(f->code, n * sizeof(*c));
		if (!c)
			return NULL;
		f->code = c;
		for (size_t i = f->npaths; i < n; i++) {
			path_profile_init(&f->paths[i]);
			f->last_stack[i] = 0;
			f->code[i] = NULL;
		}
		f->npaths = n;
	}
	if (f->last_stack[image] != f->stacks) {
		f->last_stack[image] = f->stacks;
		f->paths[image].bursts++;
	}
	return &f->paths[image];
}

/* A user address -> (image, offset); 0 when it maps to an image. */
static int pf_br_resolve(struct pf *f, uint32_t pid, uint64_t va, uint32_t *image,
			 uint64_t *off, struct dcpi_err *err)
{
	int ret;

	*image = MAPS_UNKNOWN;
	if (va >= PF_KERNEL_MIN)
		return 1;
	ret = maps_resolve(f->maps, pid, va, image, off, err);
	if (ret)
		return ret;
	return *image == MAPS_UNKNOWN;
}

/* A branch's two ends through pf_br_resolve: fr and tr its answers (0:
 * in image fi at offset fo, ti at to). */
struct pf_br {
	uint32_t fi, ti;
	uint64_t fo, to;
	int fr, tr;
};

/* 0, or pf_br_resolve's error. */
static int pf_br_ends(struct pf *f, uint32_t pid, uint64_t from, uint64_t to,
		      struct pf_br *b, struct dcpi_err *err)
{
	b->fo = b->to = 0;
	b->fr = pf_br_resolve(f, pid, from, &b->fi, &b->fo, err);
	b->tr = b->fr < 0 ? b->fr : pf_br_resolve(f, pid, to, &b->ti, &b->to, err);
	return b->fr < 0 ? b->fr : (b->tr < 0 ? b->tr : 0);
}

static int pf_br_taken(struct pf *f, uint32_t pid, uint64_t from, uint64_t to,
		       struct dcpi_err *err)
{
	struct pf_br b;
	int rc = pf_br_ends(f, pid, from, to, &b, err);
	struct path_profile *p;

	if (rc)
		return rc;
	if (!b.fr) {
		p = pf_paths_of(f, b.fi);
		if (!p || path_profile_add_edge(p, b.fo, !b.tr && b.ti == b.fi ? b.to :
						PATH_ELSEWHERE, 1) < 0)
			return -ENOMEM;
	}
	if (!b.tr && (b.fr || b.ti != b.fi)) {
		p = pf_paths_of(f, b.ti);
		if (!p || path_profile_add_edge(p, PATH_ELSEWHERE, b.to, 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The image file of image, if it is the one recorded; NULL otherwise. */
static FILE *pf_code(struct pf *f, uint32_t image)
{
	const struct pf_img *pi;

	if (!f->code[image]) {
		pi = pf_locate(f, image);
		if (!pi)
			return NULL;
		/* a sampled process's file: a FIFO there must not block us */
		f->code[image] = dcpi_fopen_read(pi->id.path, NULL);
	}
	return f->code[image];
}

#define PF_TRANSFER (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET | CFG_I_TRAP | CFG_I_SYSCALL)

/*
 * Straight-line code from offset a to the newer entry's source at offset b
 * of image: every conditional branch before b fell through.  *end is the
 * last instruction executed: b when it is a transfer (the branch recorded),
 * else the one before it (b was interrupted: an entry into the kernel, b
 * runs after the return).  0, 1 when the range is not straight (or the file
 * is not here), 2 when it ran nothing, -ENOMEM.
 */
static int pf_br_range(struct pf *f, uint32_t image, uint64_t a, uint64_t b, uint64_t *end)
{
	uint8_t buf[PF_RANGE_MAX + 16];
	uint64_t ft[PF_RANGE_MAX / 2], last = UINT64_MAX;
	size_t got, at = 0, nft = 0;
	struct cfg_insn in;
	FILE *fp;

	if (b < a || b - a > PF_RANGE_MAX)
		return 1;
	if (!(fp = pf_code(f, image))) {
		f->img[image].undecoded++;
		return 1;
	}
	if (fseeko(fp, (off_t)a, SEEK_SET) < 0)
		return 1;
	got = fread(buf, 1, (size_t)(b - a) + 16, fp);
	while (at < b - a) {
		if (at >= got || cfg_decode_one(buf + at, got - at, a + at, &in) < 0)
			return 1;
		if (in.flags & CFG_I_COND)
			ft[nft++] = (a + at) | (uint64_t)in.size << 56;
		else if (in.flags & PF_TRANSFER)
			return 1;	/* would have been recorded: not straight */
		last = a + at;
		at += in.size;
	}
	if (at != b - a || at >= got || cfg_decode_one(buf + at, got - at, b, &in) < 0)
		return 1;
	for (size_t k = 0; k < nft; k++) {
		uint64_t o = ft[k] & ((1ull << 56) - 1);

		if (path_profile_add_edge(&f->paths[image], o, o + (ft[k] >> 56), 1) < 0)
			return -ENOMEM;
	}
	*end = (in.flags & PF_TRANSFER) ? b : last;
	return *end == UINT64_MAX ? 2 : 0;
}

/* Does the sampled event count taken branches (so that one stack stands
 * for period taken branches)?  By name, else Intel's and AMD's raw codes. */
static int pf_counts_taken(const struct imp_event *ev, const struct perf_event_attr *a)
{
	const char *n = ev->name;

	if (strcasestr(n, "taken") || strcasestr(n, "tkn"))
		return 1;
	return a->type == PERF_TYPE_RAW && ((a->config & 0xffff) == 0x20c4 ||	/* near_taken */
					    (a->config & 0xffff) == 0x00c4);	/* AMD */
}

/* One entry as a taken-branch count of the images at its ends. */
static int pf_lbr_branch(struct pf *f, uint32_t pid, uint64_t from, uint64_t to,
			 struct dcpi_err *err)
{
	struct pf_br b;
	int rc = pf_br_ends(f, pid, from, to, &b, err);

	if (rc)
		return rc;
	if (!b.fr && !b.tr && b.fi == b.ti)
		return imp_lbr_add(f->lbr, b.fi, 'b', b.fo, b.to);
	if (!b.fr && imp_lbr_add(f->lbr, b.fi, 'b', b.fo, IMPORT_LBR_OUTSIDE))
		return -ENOMEM;
	if (!b.tr && imp_lbr_add(f->lbr, b.ti, 'b', IMPORT_LBR_OUTSIDE, b.to))
		return -ENOMEM;
	return 0;
}

/*
 * Some Intel parts repeat the newest entry (AutoFDO's sample_reader.cc
 * drops it): the top two entries equal, and not a plausible self-loop (a
 * backward branch over at most PF_RANGE_MAX bytes).
 */
static int pf_dup_top(const uint8_t *br, uint64_t n)
{
	uint64_t f0 = dcpi_get_le64(br), t0 = dcpi_get_le64(br + 8);

	return n >= 2 && f0 == dcpi_get_le64(br + 24) && t0 == dcpi_get_le64(br + 32) &&
	       (f0 < t0 || f0 - t0 > PF_RANGE_MAX);
}

static int pf_do_branches(struct pf *f, const struct perf_sample *s, struct dcpi_err *err)
{
	const struct perf_event_attr *a = &f->attrs[s->attr].a;
	int ranges = (a->branch_sample_type & PERF_SAMPLE_BRANCH_ANY) != 0;
	uint64_t k0 = 0;
	int ret;

	f->stacks++;
	f->br_attr = s->attr;
	if (pf_dup_top(s->br, s->bnr)) {
		k0 = 1;
		f->dups++;
	}
	f->lbri.stacks++;
	f->lbri.entries += s->bnr - k0;
	f->lbri.slots += ranges && s->bnr > k0 ? s->bnr - k0 - 1 : 0;
	for (uint64_t k = k0; k < s->bnr; k++) {
		const uint8_t *e = s->br + 24 * k;

		ret = pf_br_taken(f, s->pid, dcpi_get_le64(e), dcpi_get_le64(e + 8), err);
		if (!ret)
			ret = pf_lbr_branch(f, s->pid, dcpi_get_le64(e), dcpi_get_le64(e + 8),
					    err);
		if (ret)
			return ret;
	}
	for (uint64_t k = k0; ranges && k + 1 < s->bnr; k++) {
		uint64_t from = dcpi_get_le64(s->br + 24 * k);
		uint64_t to = dcpi_get_le64(s->br + 24 * (k + 1) + 8);
		uint32_t fi, ti;
		uint64_t fo = 0, too = 0, end = 0;

		if (pf_br_resolve(f, s->pid, from, &fi, &fo, err) ||
		    pf_br_resolve(f, s->pid, to, &ti, &too, err) || fi != ti)
			continue;
		if (!pf_paths_of(f, fi) || !pf_img_of(f, fi))
			return -ENOMEM;
		ret = pf_br_range(f, fi, too, fo, &end);
		if (ret < 0)
			return ret;
		if (!ret && imp_lbr_add(f->lbr, fi, 'r', too, end))
			return -ENOMEM;
		f->ranges++;
		f->ranges_bad += ret == 1;
	}
	return 0;
}

/* Write every image's path profile into the epoch. */
static int pf_write_paths(struct pf *f, struct prof_db *db, struct dcpi_err *err)
{
	const char *src = strstr(f->meta.cpu_vendor, "AMD") ? "brs" : "lbr";
	uint64_t edges = 0, images = 0;
	int ret;

	for (size_t i = 0; i < f->npaths; i++) {
		struct path_profile *p = &f->paths[i];

		if (!p->nedges)
			continue;
		p->image = *pf_image_id(f, (uint32_t)i);
		snprintf(p->source, sizeof(p->source), "%s", src);
		p->flags |= PATH_F_TAKEN_ONLY;
		ret = path_profile_normalize(p);
		if (ret < 0)
			return dcpi_errf(err, ret, "%s: out of memory", f->path);
		/* into a live epoch: its path files are the runtime's (the
		 * counts are in the branch-record file, pf_write_lbr) */
		ret = f->hw_only ? 0 : path_epoch_write(db, f->st->epoch, p, err);
		if (ret < 0)
			return ret;
		edges += p->nedges;
		images++;
	}
	if (f->stacks)
		pf_note(f, "%" PRIu64 " branch stacks: %" PRIu64 " distinct transitions in %"
			PRIu64 " images, %" PRIu64 " of %" PRIu64 " straight-line ranges decoded",
			f->stacks, edges, images, f->ranges - f->ranges_bad, f->ranges);
	if (f->dups)
		pf_note(f, "%" PRIu64 " stacks repeated their newest entry (dropped)", f->dups);
	return 0;
}

/* Branch-record counts per image (import/lbr.c), for est_analyze. */
static int pf_write_lbr(struct pf *f, struct prof_db *db, struct dcpi_err *err)
{
	struct imp_lbr_info *in = &f->lbri;
	size_t n = 0;
	int ret;

	if (!f->stacks)
		return 0;
	in->period = f->events[f->br_attr].period;
	in->taken = in->period > 0 &&
		    pf_counts_taken(&f->events[f->br_attr], &f->attrs[f->br_attr].a);
	snprintf(in->event, sizeof(in->event), "%s", f->events[f->br_attr].name);
	for (char *c = in->event; *c; c++)
		if (*c == ' ')
			*c = '_';
	ret = imp_lbr_write(f->lbr, pf_image_id, f, in, db, f->st->epoch, &n, err);
	if (!ret && n)
		pf_note(f, "counts: branch records of %zu image%s (%s every %g%s)", n,
			n == 1 ? "" : "s", in->event, in->period,
			in->taken ? "" : "; not taken branches: counts relative");
	return ret;
}

/* The images with samples whose file is not here, and what that costs. */
static void pf_note_missing(struct pf *f)
{
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < f->nimg; i++) {
		const struct prof_image_id *id;

		if (!f->img[i].samples && !f->img[i].undecoded)
			continue;
		if (pf_locate(f, (uint32_t)i)) {
			if (strcmp(f->img[i].how, "recorded path"))
				pf_note(f, "%s found at %s (%s)", maps_image(f->maps, (uint32_t)i)->path,
					f->img[i].id.path, f->img[i].how);
			continue;
		}
		id = maps_image(f->maps, (uint32_t)i);
		if (id->path[0] != '/')
			continue;
		if (shown++ >= 3) {
			more++;
			continue;
		}
		pf_note(f, "not found: %s%s%s (%" PRIu64 " samples unnamed, %" PRIu64
			" ranges not decoded; give --binary FILE or --symfs DIR)", id->path,
			pf_bid_find(f, id->path) ? " build-id " : "",
			pf_bid_find(f, id->path) ? pf_bid_find(f, id->path) : "", f->img[i].samples,
			f->img[i].undecoded);
	}
	if (more)
		pf_note(f, "%zu more images not found", more);
}

/*
 * Lost counts the kernel wrote.  A bit flipped in one must not become a
 * count stored in the epoch's meta: a count is implausible beyond 2^20
 * lost samples per byte of the file (a LOST record takes 40 bytes, and
 * perf drains its rings many times a second) or beyond 2^40 in all.
 */
static int pf_on_lost(void *ctx, const struct perf_lost *l, struct dcpi_err *err)
{
	struct pf *f = ctx;
	uint64_t cap = (uint64_t)f->len < (1ull << 20) ? (uint64_t)f->len << 20 : 1ull << 40;

	if (l->lost > cap || f->st->lost > cap - l->lost)
		return dcpi_errf(err, -EINVAL, "%s: record at offset %zu: %s = %" PRIu64 " is "
				 "implausible (more than %" PRIu64 " lost samples for a file of %zu "
				 "bytes): corrupt", f->path, l->off, l->field, l->lost, cap,
				 f->len);
	f->st->lost += l->lost;
	return 0;
}

/* MMAP and MMAP2: executable mappings of a process (data maps are skipped). */
static int pf_on_mmap(void *ctx, const struct perf_mmap *m, struct dcpi_err *err)
{
	struct pf *f = ctx;

	if (m->build_id && m->filename[0] &&
	    pf_bid_add(f, m->filename, m->build_id, m->build_id_size))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	if (m->pid == UINT32_MAX && !strncmp(m->filename, MAPS_KERNEL_PATH,
					     strlen(MAPS_KERNEL_PATH)) && !f->run_text_set) {
		/* "[kernel.kallsyms]_text": pgoff is where _text ran */
		f->run_text = m->pgoff ? m->pgoff : m->start;
		f->run_text_set = 1;
	}
	if ((m->misc & PERF_RECORD_MISC_MMAP_DATA) || m->pid == UINT32_MAX)
		return 0;
	return maps_mmap(f->maps, m->pid, m->start, m->len, m->pgoff, m->filename, err);
}

static int pf_on_comm(void *ctx, const struct perf_comm *c, struct dcpi_err *err)
{
	struct pf *f = ctx;

	if (c->exec)
		maps_exec(f->maps, c->pid);
	return 0;
}

static int pf_on_fork(void *ctx, const struct perf_task *t, struct dcpi_err *err)
{
	struct pf *f = ctx;

	return maps_fork(f->maps, t->pid, t->ppid, err);
}

static int pf_on_exit(void *ctx, const struct perf_task *t, struct dcpi_err *err)
{
	struct pf *f = ctx;

	if (t->pid == t->tid)
		maps_exit(f->maps, t->pid);
	return 0;
}

/* The records not read here: counted for the tool's note. */
static int pf_on_other(void *ctx, uint32_t type, const uint8_t *rec, size_t size,
		       struct dcpi_err *err)
{
	struct pf *f = ctx;

	if (type != PF_REC_FINISHED_ROUND && type != PF_REC_FINISHED_INIT)
		f->st->unknown_records++;
	return 0;
}

static const struct perf_tool pf_tool = {
	.sample = pf_on_sample, .mmap = pf_on_mmap, .comm = pf_on_comm, .fork = pf_on_fork,
	.exit = pf_on_exit, .lost = pf_on_lost, .other = pf_on_other,
};

/* --- output ------------------------------------------------------------------- */

static const struct prof_image_id *pf_image_id(void *ctx, uint32_t image)
{
	struct pf *f = ctx;
	const struct prof_image_id *id;
	const char *bid;

	id = maps_image(f->maps, image);
	if (image != MAPS_UNKNOWN && pf_locate(f, image))
		return &f->img[image].id;
	bid = image == MAPS_UNKNOWN ? NULL : pf_bid_find(f, id->path);
	/* the kernel's build-id names the vmlinux's profiles, when one is used:
	 * the modules' samples left by address must not share its key */
	if (f->vm_state > 0 && !strcmp(id->path, MAPS_KERNEL_PATH))
		bid = "";
	if (!bid || !strcmp(bid, id->build_id))
		return id;
	/* the file on disk is not the one recorded (or is gone) */
	memset(&f->id_tmp, 0, sizeof(f->id_tmp));
	snprintf(f->id_tmp.path, sizeof(f->id_tmp.path), "%s", id->path);
	snprintf(f->id_tmp.build_id, sizeof(f->id_tmp.build_id), "%s", bid);
	return &f->id_tmp;
}

/* Which attributes carry IBS op or PEBS memory samples. */
static int pf_hw_init(struct pf *f, struct dcpi_err *err)
{
	f->hw_kind = calloc(f->nattrs, sizeof(*f->hw_kind));
	if (!f->hw_kind || imp_hw_new(&f->hw))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", f->path);
	for (size_t i = 0; i < f->nattrs; i++)
		f->hw_kind[i] = imp_hw_kind(f->events[i].name, f->attrs[i].a.sample_type);
	return 0;
}

static void pf_finish_events(struct pf *f)
{
	for (size_t i = 0; i < f->nattrs; i++) {
		const struct perf_event_attr *a = &f->attrs[i].a;
		struct imp_event *ev = &f->events[i];

		if (a->freq)
			ev->period = f->attrs[i].period_n ?
				     f->attrs[i].period_sum / (double)f->attrs[i].period_n : 0;
		else
			ev->period = (double)a->sample_period;
		snprintf(ev->unit, sizeof(ev->unit), "%s",
			 a->type == PERF_TYPE_SOFTWARE && a->config <= PERF_COUNT_SW_TASK_CLOCK ?
			 "ns" : "events");
	}
	imp_hw_events(f->hw, f->events, f->events + f->nattrs);
}

/* "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz" -> 2.4; 0 when absent. */
static double nominal_ghz(const char *s)
{
	const char *at = strrchr(s, '@');
	double v;
	char unit[4];

	if (!at || sscanf(at + 1, " %lf%3s", &v, unit) != 2 || v <= 0 || v > 10)
		return 0;
	if (!strncmp(unit, "GHz", 3))
		return v;
	if (!strncmp(unit, "MHz", 3))
		return v / 1000;
	return 0;
}

/* The samples' call chains, one call-graph profile per leaf image. */
static int pf_write_cg(struct pf *f, struct prof_db *db, struct dcpi_err *err)
{
	const char *names[CG_EVENTS_MAX];
	size_t n = f->nattrs < CG_EVENTS_MAX ? f->nattrs : CG_EVENTS_MAX;

	for (size_t i = 0; i < n; i++)
		names[i] = f->events[i].name;
	return cg_table_flush(f->cg, pf_image_id, f, names, (unsigned)n, db, f->st->epoch, err);
}

static int pf_write_meta(struct pf *f, struct prof_db *db, struct dcpi_err *err)
{
	struct prof_epoch_meta *m = &f->meta;
	struct stat sb;
	size_t w;

	w = (size_t)snprintf(m->settings, sizeof(m->settings),
			     "imported from perf.data %s (uncalibrated): %s period %g %s%s",
			     f->path, f->events[0].name, f->events[0].period, f->events[0].unit,
			     f->attrs[0].a.freq ? " (mean, frequency mode)" : "");
	if (f->cmdline[0] && w < sizeof(m->settings))
		snprintf(m->settings + w, sizeof(m->settings) - w, "; cmdline: %s", f->cmdline);
	m->calibrated = 0;
	m->cycles_per_sample = 0;
	/* the brand string's nominal clock ("... @ 2.40GHz"), when it says */
	m->cycles_per_ns = nominal_ghz(m->cpu_name);
	snprintf(f->st->event, sizeof(f->st->event), "%s", f->events[0].name);
	f->st->period = f->events[0].period;
	f->st->period_ns = !strcmp(f->events[0].unit, "ns");
	m->lost_samples = f->st->lost;
	m->samples = f->st->samples;
	if (!stat(f->path, &sb)) {
		m->end_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull +
			    (uint64_t)sb.st_mtim.tv_nsec;
		m->start_ns = m->end_ns - (f->last_time - f->first_time);
	}
	return prof_epoch_meta_write(db, f->st->epoch, m, err);
}

static void pf_free(struct pf *f)
{
	for (size_t i = 0; i < f->nbids; i++)
		free(f->bids[i].path);
	free(f->bids);
	free(f->attrs);
	free(f->rattrs);
	free(f->events);
	free(f->ids);
	free(f->recs);
	for (size_t i = 0; i < f->npaths; i++) {
		path_profile_free(&f->paths[i]);
		if (f->code[i])
			fclose(f->code[i]);
	}
	free(f->paths);
	free(f->last_stack);
	free(f->code);
	maps_free(f->maps);
	agg_free(f->tab);
	cg_table_free(f->cg);
	imp_lbr_free(f->lbr);
	imp_hw_free(f->hw);
	free(f->hw_kind);
	free(f->img);
	img_close(f->vm);
	free((void *)f->buf);
}

int imp_probe_perf(const char *head, size_t n, const char *path, struct dcpi_err *err)
{
	if (n >= 8 && !memcmp(head, "PERFILE2", 8))
		return 1;
	if (n >= 8 && !memcmp(head, "2ELIFREP", 8))
		return dcpi_errf(err, -EPROTONOSUPPORT,
				 "%s: big-endian perf.data is not supported", path);
	if (n >= 8 && !memcmp(head, "PERFFILE", 8))
		return dcpi_errf(err, -EPROTONOSUPPORT,
				 "%s: perf.data version 1 is not supported", path);
	return 0;
}

int import_perf(const char *path, struct prof_db *db, struct import_stats *st,
		struct dcpi_err *err)
{
	return import_perf_opts(path, NULL, db, st, err);
}

int import_perf_opts(const char *path, const struct import_opts *o, struct prof_db *db,
		     struct import_stats *st, struct dcpi_err *err)
{
	uint8_t *buf;
	size_t len;
	int ret;

	memset(st, 0, sizeof(*st));
	st->kind = IMPORT_PERF;
	ret = imp_read_file(path, &buf, &len, err);
	if (ret)
		return ret;
	return imp_perf_buf(path, buf, len, o, db, st, err);
}

int imp_perf_buf(const char *path, uint8_t *buf, size_t len, const struct import_opts *o,
		 struct prof_db *db, struct import_stats *st, struct dcpi_err *err)
{
	struct perf_tool tool;
	struct pf f;
	int ret;

	memset(&f, 0, sizeof(f));
	f.path = path;
	f.st = st;
	f.opts = o;
	f.len = len;
	f.buf = buf;
	f.hw_only = o && o->into_epoch;
	ret = pf_read_header(&f, err);
	if (!ret)
		ret = pf_decoder(&f, err);
	if (!ret)
		ret = pf_index(&f, err);
	if (!ret)
		ret = pf_hw_init(&f, err);
	if (!ret)
		ret = maps_new(&f.maps, err);
	if (!ret)
		maps_set_offline(f.maps, 1);
	if (!ret)
		ret = agg_new(&f.tab, err);
	if (!ret)
		ret = cg_table_new(&f.cg, err);
	if (!ret && imp_lbr_new(&f.lbr))
		ret = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	tool = pf_tool;
	tool.ctx = &f;
	for (size_t i = 0; i < f.nrecs && !ret; i++)
		ret = perf_rec_deliver(&f.dec, &tool, f.buf + f.recs[i].off, f.recs[i].off, err);
	if (ret)
		goto out;
	pf_finish_events(&f);
	/* nothing to write, no epoch: an empty newest epoch would stand in
	 * front of the good ones (a file cut before its first sample) */
	if (!st->samples && !st->lost) {
		ret = dcpi_errf(err, -ENODATA, "%s: no samples%s%s: nothing imported", path,
				st->truncated ? " (" : "", st->truncated ? "truncated)" : "");
		goto out;
	}
	if (f.hw_only)
		snprintf(st->epoch, sizeof(st->epoch), "%s", o->into_epoch);
	else
		ret = imp_epoch_begin(db, st, err);
	if (!ret)
		ret = imp_table_flush(f.tab, pf_image_id, NULL, &f, f.events,
				      f.nattrs + IMP_HW_NEVENTS, db, st->epoch, st, err);
	if (!ret && !f.hw_only)
		ret = pf_write_cg(&f, db, err);
	if (!ret)
		ret = pf_write_paths(&f, db, err);
	if (!ret)
		ret = pf_write_lbr(&f, db, err);
	if (!ret) {
		char hw[512] = "";

		ret = imp_hw_write(f.hw, pf_image_id, &f, db, st->epoch, hw, sizeof(hw), err);
		if (!ret && hw[0])
			pf_note(&f, "%s", hw);
	}
	if (!ret)
		pf_note_missing(&f);
	if (!ret)
		pf_note_kernel(&f);
	if (f.hw_only)
		goto out;	/* the collector writes the meta and commits */
	if (!ret)
		ret = pf_write_meta(&f, db, err);
	ret = imp_epoch_end(db, path, st, ret, err);
out:
	pf_free(&f);
	return ret;
}
