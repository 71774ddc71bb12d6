/*
 * import/perfscript.c - perf script's branch-stack text, the input
 * llvm-profgen reads (`perf script -F ip,brstack --show-mmap-events`), into
 * the same branch-stack path as a perf.data's (import/perf.c, import/lbr.c).
 *
 * The text is turned into a perf.data image in memory -- one attribute
 * (IP | TID | BRANCH_STACK, branch_sample_type ANY), an MMAP2 record per
 * "PERF_RECORD_MMAP2" / "PERF_RECORD_MMAP" line, a SAMPLE per sample line --
 * and handed to the perf.data reader (imp_perf_buf), so that mappings,
 * straight-line ranges, the duplicated-entry quirk, path profiles and
 * branch-record counts are the ones a perf.data gets, by the same code.
 *
 * Lines (docs/import.md "perf script text"):
 *
 *   PERF_RECORD_MMAP2 5595/5595: [0x5629ec742000(0x1000) @ 0 00:6a 2006 16]: r-xp /bin/x
 *   [event:mod:]  [5629ec742901]  0x5629ec7428f4/0x5629ec742901/P/-/-/19/ ...
 *
 * Entries are FROM/TO/flags, newest first (perf's brstack order); the
 * flags' first letter is M (mispredicted) or P.  A token ending in ':'
 * names the event (its first part).  A leading bare hex address is the
 * sample's ip.  Lines holding only addresses are a callchain (llvm-profgen's
 * context-sensitive form) when the next sample line has no ip of its own,
 * whose ip is then the first of them; otherwise each is a sample with no
 * branch stack.  Anything else is an error naming the line.
 *
 * perf script -F ip,brstack prints no pid: every mapping and sample goes
 * to one process, as llvm-profgen reads it.  A text without mappings (the
 * binary loaded where it was linked) gets one MMAP2 per executable PT_LOAD
 * of each --binary file, at its address.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "internal.h"

#define PS_HEADER_SIZE 104
#define PS_FEAT_EVENT_DESC 12
#define PS_PID 1
#define PS_MAX_ENTRIES 256		/* a record's size is 16 bits */
#define PS_MAX_CHAIN 1024
#define PS_KERNEL_MIN 0xffff800000000000ull

struct ps {
	const char *path;
	struct dcpi_buf out;		/* the data section */
	struct dcpi_buf pre;		/* mappings made for --binary: first */
	char event[PROF_EVENT_MAX];
	uint64_t samples, mmaps;
	uint64_t pending[PS_MAX_CHAIN];	/* address-only lines not yet placed */
	size_t npending;
	uint64_t br[3 * PS_MAX_ENTRIES];
};

static void ps_u64(struct dcpi_buf *b, uint64_t v)
{
	dcpi_buf_put(b, &v, 8);
}

static void ps_u32(struct dcpi_buf *b, uint32_t v)
{
	dcpi_buf_put(b, &v, 4);
}

static void ps_hdr(struct dcpi_buf *b, uint32_t type, uint16_t misc, size_t size)
{
	uint16_t m = misc, s = (uint16_t)size;

	ps_u32(b, type);
	dcpi_buf_put(b, &m, 2);
	dcpi_buf_put(b, &s, 2);
}

/* One MMAP2 record of pid PS_PID (data mappings flagged as such). */
static void ps_mmap_to(struct ps *s, struct dcpi_buf *b, uint64_t start, uint64_t len,
		       uint64_t pgoff, int exec, const char *name)
{
	size_t nlen = strlen(name) + 1, pad = (8 - nlen % 8) % 8;
	static const uint8_t zero[8];

	ps_hdr(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER |
	       (exec ? 0 : PERF_RECORD_MISC_MMAP_DATA), 8 + 64 + nlen + pad);
	ps_u32(b, PS_PID);
	ps_u32(b, PS_PID);
	ps_u64(b, start);
	ps_u64(b, len);
	ps_u64(b, pgoff);
	ps_u64(b, 0);			/* maj, min */
	ps_u64(b, 0);			/* ino */
	ps_u64(b, 0);			/* ino_generation */
	ps_u32(b, exec ? 5 : 1);		/* PROT_READ | PROT_EXEC */
	ps_u32(b, 2);			/* MAP_PRIVATE */
	dcpi_buf_put(b, name, nlen);
	dcpi_buf_put(b, zero, pad);
	s->mmaps++;
}

static void ps_mmap(struct ps *s, uint64_t start, uint64_t len, uint64_t pgoff, int exec,
		    const char *name)
{
	ps_mmap_to(s, &s->out, start, len, pgoff, exec, name);
}

/* One SAMPLE: ip, pid/tid, n entries of s->br. */
static void ps_sample(struct ps *s, uint64_t ip, size_t n)
{
	/* perf script prints no cpumode: a kernel address is the kernel's */
	ps_hdr(&s->out, PERF_RECORD_SAMPLE, ip >= PS_KERNEL_MIN ? PERF_RECORD_MISC_KERNEL :
	       PERF_RECORD_MISC_USER, 8 + 8 + 8 + 8 + 24 * n);
	ps_u64(&s->out, ip);
	ps_u32(&s->out, PS_PID);
	ps_u32(&s->out, PS_PID);
	ps_u64(&s->out, n);
	dcpi_buf_put(&s->out, s->br, 24 * n);
	s->samples++;
}

static int ps_line_err(const struct ps *s, unsigned line, const char *what,
		       struct dcpi_err *err)
{
	return dcpi_errf(err, -EINVAL, "%s:%u: %s", s->path, line, what);
}

/* "PERF_RECORD_MMAP2 pid/tid: [0xSTART(0xLEN) @ PGOFF ...]: PROT PATH". */
static int ps_parse_mmap(struct ps *s, const char *l, unsigned line, struct dcpi_err *err)
{
	const char *b = strchr(l, '['), *e = strstr(l, "]: ");
	unsigned long long start, len, pgoff;
	char prot[8];
	int used = 0;

	if (!b || !e || sscanf(b, "[%llx(%llx) @ %llx", &start, &len, &pgoff) != 3 ||
	    sscanf(e + 3, "%7s %n", prot, &used) != 1 || !used || !e[3 + used])
		return ps_line_err(s, line, "not a PERF_RECORD_MMAP line perf script prints", err);
	ps_mmap(s, start, len, pgoff, strchr(prot, 'x') != NULL, e + 3 + used);
	return 0;
}

/* A bare hex address ("5629ec742901" or "0x..."); 0 when it is one. */
static int ps_addr(const char *t, uint64_t *v)
{
	char *end;

	if (!*t || strchr(t, '/'))
		return -1;
	errno = 0;
	*v = strtoull(t, &end, 16);
	return errno || *end ? -1 : 0;
}

/* "0xFROM/0xTO/M/..." into entry k of s->br; 0 when it is one. */
static int ps_entry(struct ps *s, char *t, size_t k)
{
	unsigned long long from, to;
	char flag = '-';
	int n = 0;

	if (sscanf(t, "%llx/%llx%n", &from, &to, &n) != 2 || t[n] != '/')
		return -1;
	flag = t[n + 1];
	s->br[3 * k] = from;
	s->br[3 * k + 1] = to;
	/* perf_branch_entry: bit 0 mispred, bit 1 predicted */
	s->br[3 * k + 2] = flag == 'M' ? 1 : flag == 'P' ? 2 : 0;
	return 0;
}

/* The address-only lines before a sample line: samples of their own. */
static void ps_flush_pending(struct ps *s)
{
	for (size_t i = 0; i < s->npending; i++)
		ps_sample(s, s->pending[i], 0);
	s->npending = 0;
}

static int ps_parse_sample(struct ps *s, char *l, unsigned line, struct dcpi_err *err)
{
	size_t n = 0;
	uint64_t ip = 0, v;
	int have_ip = 0;

	char *sv = NULL;

	for (char *t = strtok_r(l, " \t\r", &sv); t; t = strtok_r(NULL, " \t\r", &sv)) {
		size_t tl = strlen(t);

		if (t[tl - 1] == ':' && !n && !have_ip) {
			if (!s->event[0])
				snprintf(s->event, sizeof(s->event), "%.*s",
					 (int)strcspn(t, ":"), t);
		} else if (!n && !have_ip && !ps_addr(t, &v)) {
			ip = v;
			have_ip = 1;
		} else if (n < PS_MAX_ENTRIES && !ps_entry(s, t, n)) {
			n++;
		} else {
			return ps_line_err(s, line, n >= PS_MAX_ENTRIES ?
					   "more than 256 branch entries" :
					   "neither an address nor a FROM/TO/... branch entry",
					   err);
		}
	}
	if (have_ip && !n) {			/* an address alone: wait */
		if (s->npending == PS_MAX_CHAIN)
			ps_flush_pending(s);
		s->pending[s->npending++] = ip;
		return 0;
	}
	if (!have_ip && !n)
		return 0;			/* an event name alone */
	if (!have_ip && s->npending) {		/* the callchain before it */
		ip = s->pending[0];
		s->npending = 0;
	}
	ps_flush_pending(s);
	ps_sample(s, have_ip ? ip : s->br[1], n);	/* else: the newest target */
	return 0;
}

/* No mappings in the text: each --binary where it was linked. */
static int ps_binary_maps(struct ps *s, const struct import_opts *o, struct dcpi_err *err)
{
	for (size_t i = 0; o && i < o->find.nbinaries; i++) {
		const char *bin = o->find.binaries[i];
		uint8_t *b = NULL;
		size_t len;
		const Elf64_Ehdr *eh;
		int ret = imp_read_file(bin, &b, &len, err);

		if (ret)
			return ret;
		eh = (const Elf64_Ehdr *)b;
		if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
		    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
		    eh->e_phoff > len || eh->e_phnum > (len - eh->e_phoff) / sizeof(Elf64_Phdr)) {
			free(b);
			return dcpi_errf(err, -EINVAL, "%s: --binary %s: not a 64-bit ELF file",
					 s->path, bin);
		}
		for (unsigned k = 0; k < eh->e_phnum; k++) {
			Elf64_Phdr ph;

			memcpy(&ph, b + eh->e_phoff + k * sizeof(ph), sizeof(ph));
			if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				ps_mmap_to(s, &s->pre, ph.p_vaddr & ~0xfffull,
					ph.p_memsz + (ph.p_vaddr & 0xfff),
					ph.p_offset & ~0xfffull, 1, bin);
		}
		free(b);
	}
	return 0;
}

static int ps_parse(struct ps *s, char *text, const struct import_opts *o,
		    struct dcpi_err *err)
{
	unsigned line = 0;
	char *next;
	int ret = 0;

	for (char *l = text; l && !ret; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		line++;
		l += strspn(l, " \t");
		if (!*l || *l == '#' || *l == '\r') {
			ps_flush_pending(s);
		} else if (!strncmp(l, "PERF_RECORD_MMAP", 16)) {
			ps_flush_pending(s);
			ret = ps_parse_mmap(s, l, line, err);
		} else if (!strncmp(l, "PERF_RECORD_", 12)) {
			ps_flush_pending(s);	/* COMM, FORK, ...: not needed */
		} else {
			ret = ps_parse_sample(s, l, line, err);
		}
	}
	ps_flush_pending(s);
	if (!ret && !s->mmaps)
		ret = ps_binary_maps(s, o, err);
	if (!s->event[0])
		snprintf(s->event, sizeof(s->event), "perf-script");
	return ret;
}

/* The perf.data image: header, attribute, data, EVENT_DESC feature. */
static int ps_perf_data(struct ps *s, uint8_t **out, size_t *len, struct dcpi_err *err)
{
	struct perf_event_attr a;
	struct dcpi_buf b = { 0 };
	size_t asz = sizeof(a) + 16, aoff = PS_HEADER_SIZE, doff = aoff + asz;
	size_t foff = doff + s->pre.n + s->out.n, nlen = strlen(s->event) + 1;
	size_t npad = (nlen + 7) / 8 * 8;
	uint64_t feat[4] = { 0 };
	static const uint8_t zero[8];

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.sample_period = 0;	/* unknown: counts relative (import/lbr.c) */
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_BRANCH_STACK;
	a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
	if (s->event[0])
		feat[0] = 1ull << PS_FEAT_EVENT_DESC;
	dcpi_buf_put(&b, "PERFILE2", 8);
	ps_u64(&b, PS_HEADER_SIZE);
	ps_u64(&b, asz);
	ps_u64(&b, aoff);
	ps_u64(&b, asz);
	ps_u64(&b, doff);
	ps_u64(&b, s->pre.n + s->out.n);
	ps_u64(&b, 0);			/* event types: none */
	ps_u64(&b, 0);
	dcpi_buf_put(&b, feat, sizeof(feat));
	dcpi_buf_put(&b, &a, sizeof(a));
	ps_u64(&b, 0);			/* no ids */
	ps_u64(&b, 0);
	if (s->pre.n)
		dcpi_buf_put(&b, s->pre.p, s->pre.n);
	if (s->out.n)
		dcpi_buf_put(&b, s->out.p, s->out.n);
	if (s->event[0]) {
		ps_u64(&b, foff + 16);
		ps_u64(&b, 8 + sizeof(a) + 4 + 4 + npad);
		ps_u32(&b, 1);
		ps_u32(&b, sizeof(a));
		dcpi_buf_put(&b, &a, sizeof(a));
		ps_u32(&b, 0);		/* ids */
		ps_u32(&b, (uint32_t)npad);
		dcpi_buf_put(&b, s->event, nlen);
		dcpi_buf_put(&b, zero, npad - nlen);
	}
	if (b.oom || s->out.oom || s->pre.oom) {
		free(b.p);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", s->path);
	}
	*out = b.p;
	*len = b.n;
	return 0;
}

int imp_probe_perfscript(const char *head, size_t n, const char *path, struct dcpi_err *err)
{
	unsigned long long a, b;
	const char *l = head;

	(void)n;
	(void)path;
	(void)err;
	if (!strncmp(head, "PERF_RECORD_MMAP", 16))
		return 1;
	/* the first line with a FROM/TO/ entry, within the head */
	for (const char *p = strstr(l, "0x"); p; p = strstr(p + 2, "0x")) {
		int used = 0;

		if (sscanf(p, "0x%llx/0x%llx/%n", &a, &b, &used) == 2 && used)
			return 1;
	}
	return 0;
}

int import_perfscript_opts(const char *path, const struct import_opts *o, struct prof_db *db,
			   struct import_stats *st, struct dcpi_err *err)
{
	struct ps *s = calloc(1, sizeof(*s));
	uint8_t *text = NULL, *pd = NULL;
	size_t len, pdlen = 0;
	int ret;

	memset(st, 0, sizeof(*st));
	st->kind = IMPORT_PERFSCRIPT;
	if (!s)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	s->path = path;
	ret = imp_read_file(path, &text, &len, err);
	if (!ret && memchr(text, '\0', len))
		ret = dcpi_errf(err, -EINVAL, "%s: a NUL byte in perf script text", path);
	if (!ret)
		ret = ps_parse(s, (char *)text, o, err);
	if (!ret)
		ret = ps_perf_data(s, &pd, &pdlen, err);
	free(text);
	free(s->out.p);
	free(s->pre.p);
	free(s);
	if (ret)
		return ret;
	ret = imp_perf_buf(path, pd, pdlen, o, db, st, err);
	st->kind = IMPORT_PERFSCRIPT;
	return ret;
}
