/*
 * tests/tu_lbr.h - branch stacks of a real run, for the tests of branch
 * records as counts (test_lbr.c, test_lbr_peer.c; docs/import.md "Branch
 * records are counts"): a program is single-stepped under ptrace and every
 * taken branch with an end in its executable is kept in order; 16-entry
 * stacks are sampled from that sequence and written as a perf.data that
 * perf, dcpi import and AutoFDO's create_llvm_prof all read.  Also a reader
 * of LLVM text sample profiles and the comparisons the tests make on them.
 * Header-only; include after <cmocka.h> and testutil.h.
 */
#ifndef DCPI_TU_LBR_H
#define DCPI_TU_LBR_H

#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "dcpi/cfg.h"

#define TU_LBR_STACK 16

struct tu_lbr_br {
	uint64_t from, to;
};

struct tu_lbr_map {
	uint64_t start, end, off;
	char name[256];
};

struct tu_lbr {
	struct tu_lbr_br *brs;		/* taken branches touching the executable, in order */
	size_t n, cap;
	uint64_t x_start, x_end, x_off;	/* its executable mapping */
	struct tu_lbr_map other[16];	/* the process's other executable mappings */
	size_t nother;
	size_t steps;			/* instructions single-stepped */
};

static inline void tu_lbr_add(struct tu_lbr *t, uint64_t from, uint64_t to)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1 << 16;
		t->brs = realloc(t->brs, t->cap * sizeof(*t->brs));
		assert_non_null(t->brs);
	}
	t->brs[t->n++] = (struct tu_lbr_br){ from, to };
}

/*
 * The executable mapping of path in pid, and the others (libc, ld.so,
 * vdso): they go in the file as perf record writes them, since AutoFDO's
 * reader drops the rest of a stack from its first address in no mapping
 * (quipper's perf_parser.cc, MapBranchStack).
 */
static inline void tu_lbr_exec_map(struct tu_lbr *t, pid_t pid, const char *path)
{
	char maps[64], line[1024], perm[8], name[600];
	unsigned long long s, e, off;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	assert_non_null(f);
	t->nother = 0;
	while (fgets(line, sizeof(line), f)) {
		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %599s", &s, &e, perm, &off, name) < 4)
			continue;
		if (perm[2] != 'x' || !name[0])
			continue;
		if (!strcmp(name, path)) {
			t->x_start = s;
			t->x_end = e;
			t->x_off = off;
		} else if (t->nother < sizeof(t->other) / sizeof(t->other[0])) {
			struct tu_lbr_map *m = &t->other[t->nother++];

			*m = (struct tu_lbr_map){ s, e, off, "" };
			snprintf(m->name, sizeof(m->name), "%.255s", name);
		}
	}
	fclose(f);
	assert_true(t->x_end > t->x_start);
}

/* Whether a is in one of t's other mappings. */
static inline int tu_lbr_other(const struct tu_lbr *t, uint64_t a)
{
	for (size_t i = 0; i < t->nother; i++)
		if (a >= t->other[i].start && a < t->other[i].end)
			return 1;
	return 0;
}

static inline int tu_lbr_in(const struct tu_lbr *t, uint64_t a)
{
	return a >= t->x_start && a < t->x_end;
}

/* Keep a taken branch; a new mapping at either end (ld.so loaded libc) is read. */
static inline void tu_lbr_note(struct tu_lbr *t, pid_t pid, const char *path, uint64_t from,
			       uint64_t to)
{
	tu_lbr_add(t, from, to);
	if ((!tu_lbr_in(t, from) && !tu_lbr_other(t, from)) ||
	    (!tu_lbr_in(t, to) && !tu_lbr_other(t, to)))
		tu_lbr_exec_map(t, pid, path);
}

static inline uint64_t tu_lbr_rip(pid_t pid)
{
	return (uint64_t)ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), NULL);
}

/*
 * Run pid freely until it reaches at (an address in its executable): an
 * int3 there, the byte put back and rip moved back onto it.  0, or -1 when
 * the program ended first.
 */
static inline int tu_lbr_run_to(pid_t pid, uint64_t at)
{
	long word = ptrace(PTRACE_PEEKTEXT, pid, at, NULL);
	int status;

	assert_int_equal(ptrace(PTRACE_POKETEXT, pid, at, (word & ~0xffL) | 0xcc), 0);
	assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) || WIFSIGNALED(status))
		return -1;
	assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);
	assert_true(tu_lbr_rip(pid) == at + 1);
	assert_int_equal(ptrace(PTRACE_POKETEXT, pid, at, word), 0);
	assert_int_equal(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, rip), at),
			 0);
	return 0;
}

/*
 * When a step left the executable at to (a call or jump out of it, as a
 * PLT stub's jump into libc): the return address on the stack.  0 when the
 * step was the program's last return (main's, into libc) and nothing of
 * the executable runs again.
 */
static inline uint64_t tu_lbr_return_to(const struct tu_lbr *t, pid_t pid,
					const struct cfg_insn *left)
{
	uint64_t rsp = (uint64_t)ptrace(PTRACE_PEEKUSER, pid,
					offsetof(struct user_regs_struct, rsp), NULL);
	uint64_t ret = (uint64_t)ptrace(PTRACE_PEEKDATA, pid, rsp, NULL);

	if (left->flags & CFG_I_RET)
		return 0;
	/* lazy binding would push the PLT's link words first: link with -z now */
	assert_true(tu_lbr_in(t, ret));
	return ret;
}

/*
 * Run path with argv under ptrace and keep every taken branch with an end
 * in its executable, in order.  With main_at 0 every instruction of the run
 * is stepped (ld.so and libc too, ~30-80 us a step here); otherwise the
 * program runs freely to main_at and each call out of the executable runs
 * freely to its return address (the program must not call back into itself
 * from outside, and must be linked with -z now): the return entry's source
 * is then the callee's entry, outside the executable as the real one is.
 */
static inline void tu_lbr_trace(struct tu_lbr *t, const char *path, char *const argv[],
				uint64_t main_at)
{
	uint8_t *code, *isz;
	uint64_t prev = 0;
	size_t len;
	int status, fd;
	pid_t pid;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	code = malloc(1 << 22);
	assert_non_null(code);
	len = fread(code, 1, 1 << 22, f);
	fclose(f);
	isz = calloc(len, 1);
	assert_non_null(isz);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(path, argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSTOPPED(status));
	tu_lbr_exec_map(t, pid, path);
	if (main_at)
		assert_int_equal(tu_lbr_run_to(pid, main_at), 0);
	for (;;) {
		uint64_t ip = tu_lbr_rip(pid);

		if (prev && tu_lbr_in(t, prev)) {
			uint64_t o = prev - t->x_start + t->x_off, ret;
			struct cfg_insn in;

			assert_true(o < len);
			assert_true(cfg_decode_one(code + o, len - o, prev, &in) >= 0);
			isz[o] = in.size;
			if (ip != prev + isz[o] && ip != prev)
				tu_lbr_note(t, pid, path, prev, ip);
			if (main_at && !tu_lbr_in(t, ip)) {
				ret = tu_lbr_return_to(t, pid, &in);
				if (!ret || tu_lbr_run_to(pid, ret))
					break;
				tu_lbr_note(t, pid, path, ip, ret);
				ip = ret;
			}
		} else if (prev && tu_lbr_in(t, ip)) {
			tu_lbr_note(t, pid, path, prev, ip);
		}
		prev = ip;
		t->steps++;
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) < 0)
			break;
		if (waitpid(pid, &status, 0) != pid || WIFEXITED(status) || WIFSIGNALED(status))
			break;
	}
	if (!WIFEXITED(status) && !WIFSIGNALED(status)) {
		assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(code);
	free(isz);
}

/* --- the perf.data ------------------------------------------------------------- */

static inline void tu_lbr_w64(FILE *f, uint64_t v)
{
	assert_int_equal(fwrite(&v, 8, 1, f), 1);
}

static inline void tu_lbr_w32(FILE *f, uint32_t v)
{
	assert_int_equal(fwrite(&v, 4, 1, f), 1);
}

static inline void tu_lbr_whdr(FILE *f, uint32_t type, uint16_t misc, uint16_t size)
{
	tu_lbr_w32(f, type);
	assert_int_equal(fwrite(&misc, 2, 1, f), 1);
	assert_int_equal(fwrite(&size, 2, 1, f), 1);
}

/* An MMAP or MMAP2 record's file name, padded to 8 bytes; its padded length. */
static inline size_t tu_lbr_name(char *name, size_t size, const char *s)
{
	memset(name, 0, size);
	snprintf(name, size, "%s", s);
	return (strlen(name) + 1 + 7) & ~(size_t)7;
}

/*
 * The kernel's MMAP, first in the data as perf record writes it: AutoFDO's
 * perf reader (quipper, perf_parser.cc MapMmapEvent) takes the file's first
 * mapping for the kernel's and drops its pgoff, which moved every address of
 * an executable mapped first by one page (create_llvm_prof then wrote
 * nothing).
 */
static inline void tu_lbr_kernel_mmap(FILE *f)
{
	char name[64];
	size_t nlen = tu_lbr_name(name, sizeof(name), "[kernel.kallsyms]_text");

	tu_lbr_whdr(f, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, (uint16_t)(8 + 32 + nlen + 16));
	tu_lbr_w32(f, (uint32_t)-1), tu_lbr_w32(f, 0);
	tu_lbr_w64(f, 0xffffffff81000000ull), tu_lbr_w64(f, 0x1000000);
	tu_lbr_w64(f, 0xffffffff81000000ull);
	assert_int_equal(fwrite(name, nlen, 1, f), 1);
	tu_lbr_w32(f, (uint32_t)-1), tu_lbr_w32(f, 0), tu_lbr_w64(f, 0);
}

/* The MMAP2 of the traced executable: recorded names it, bid (or NULL) its build-id. */
static inline void tu_lbr_exec_mmap(FILE *f, const struct tu_lbr *t, const char *recorded,
				    const uint8_t *bid)
{
	char name[640];
	size_t nlen = tu_lbr_name(name, sizeof(name), recorded);

	tu_lbr_whdr(f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER |
		    (bid ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0), (uint16_t)(8 + 64 + nlen + 16));
	tu_lbr_w32(f, 42), tu_lbr_w32(f, 42);
	tu_lbr_w64(f, t->x_start), tu_lbr_w64(f, t->x_end - t->x_start), tu_lbr_w64(f, t->x_off);
	if (bid) {
		uint8_t b[24] = { 20 };

		memcpy(b + 4, bid, 20);
		assert_int_equal(fwrite(b, 24, 1, f), 1);
	} else {
		tu_lbr_w32(f, 0), tu_lbr_w32(f, 0), tu_lbr_w64(f, 0), tu_lbr_w64(f, 0);
	}
	tu_lbr_w32(f, 5), tu_lbr_w32(f, 2);		/* prot r-x, flags private */
	assert_int_equal(fwrite(name, nlen, 1, f), 1);
	tu_lbr_w32(f, 42), tu_lbr_w32(f, 42), tu_lbr_w64(f, 1);	/* sample_id: pid, tid, time */
}

/* The MMAP2 of one of the process's other executable mappings. */
static inline void tu_lbr_other_mmap(FILE *f, const struct tu_lbr_map *m)
{
	char name[320];
	size_t nlen = tu_lbr_name(name, sizeof(name), m->name);

	tu_lbr_whdr(f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, (uint16_t)(8 + 64 + nlen + 16));
	tu_lbr_w32(f, 42), tu_lbr_w32(f, 42);
	tu_lbr_w64(f, m->start), tu_lbr_w64(f, m->end - m->start), tu_lbr_w64(f, m->off);
	tu_lbr_w32(f, 0), tu_lbr_w32(f, 0), tu_lbr_w64(f, 0), tu_lbr_w64(f, 0);
	tu_lbr_w32(f, 5), tu_lbr_w32(f, 2);
	assert_int_equal(fwrite(name, nlen, 1, f), 1);
	tu_lbr_w32(f, 42), tu_lbr_w32(f, 42), tu_lbr_w64(f, 1);
}

/*
 * Write out a perf.data of 16-entry stacks sampled from t's branches every
 * 3/4 to 5/4 period of them (a taken-branch event, raw 0x20c4):
 * recorded names the executable in its MMAP2 record, bid (NULL: none) its
 * build-id (the MMAP2 build-id form).  Returns the number of stacks.
 */
static inline size_t tu_lbr_write_perf(const struct tu_lbr *t, const char *out,
				       const char *recorded, const uint8_t *bid, unsigned period)
{
	struct perf_event_attr attr;
	uint64_t data_at, dsize, seed = 0x2545f4914f6cdd1dull;
	size_t stacks = 0;
	FILE *f = fopen(out, "wb");

	assert_non_null(f);
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_RAW;
	attr.config = 0x20c4;		/* BR_INST_RETIRED.NEAR_TAKEN */
	attr.size = sizeof(attr);
	attr.sample_period = period;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_BRANCH_STACK;
	attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
	attr.sample_id_all = 1;
	data_at = 104 + sizeof(attr) + 16;
	fwrite("PERFILE2", 1, 8, f);
	tu_lbr_w64(f, 104);
	tu_lbr_w64(f, sizeof(attr) + 16);
	tu_lbr_w64(f, 104), tu_lbr_w64(f, sizeof(attr) + 16);
	tu_lbr_w64(f, data_at), tu_lbr_w64(f, 0);	/* data size patched below */
	tu_lbr_w64(f, 0), tu_lbr_w64(f, 0);
	for (int i = 0; i < 4; i++)
		tu_lbr_w64(f, 0);
	assert_int_equal(fwrite(&attr, sizeof(attr), 1, f), 1);
	tu_lbr_w64(f, 0), tu_lbr_w64(f, 0);
	tu_lbr_kernel_mmap(f);
	tu_lbr_exec_mmap(f, t, recorded, bid);
	for (size_t i = 0; i < t->nother; i++)
		tu_lbr_other_mmap(f, &t->other[i]);
	for (size_t i = TU_LBR_STACK + 7; i < t->n;) {
		tu_lbr_whdr(f, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
			    (uint16_t)(8 + 8 + 8 + 8 + 8 + 24 * TU_LBR_STACK));
		tu_lbr_w64(f, t->brs[i].to);
		tu_lbr_w32(f, 42), tu_lbr_w32(f, 42);
		tu_lbr_w64(f, 10 + i);
		tu_lbr_w64(f, TU_LBR_STACK);
		for (size_t k = 0; k < TU_LBR_STACK; k++) {
			tu_lbr_w64(f, t->brs[i - k].from);
			tu_lbr_w64(f, t->brs[i - k].to);
			tu_lbr_w64(f, 0);
		}
		stacks++;
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		i += period - period / 4 + seed % (period / 2 + 1);
	}
	dsize = (uint64_t)ftell(f) - data_at;
	fseek(f, 48, SEEK_SET);
	tu_lbr_w64(f, dsize);
	assert_int_equal(fclose(f), 0);
	return stacks;
}

/*
 * perf itself reads the file (when installed): one line per stack from
 * `perf script -F ip,brstack`, each with 16 entries.
 */
static inline void tu_lbr_perf_script(const char *data, size_t stacks)
{
	if (tu_sh("command -v perf >/dev/null 2>&1")) {
		print_message("perf is not installed: the file is not checked with perf script\n");
		return;
	}
	assert_int_equal(tu_sh("test \"$(perf script -F ip,brstack -i '%s' 2>/dev/null | "
			       "awk 'NF == %d' | wc -l)\" = %zu", data, TU_LBR_STACK + 1, stacks),
			 0);
}

/* --- LLVM sample profiles (text) ------------------------------------------------ */

struct tu_line {
	char fn[128];
	unsigned line, disc;
	double count;
};

struct tu_sprof {
	struct tu_line v[4096];
	size_t n;
	char fns[64][128];
	double totals[64];	/* sums of their top-level line counts */
	size_t nfns;
};

/* Read the top-level body lines of a text profile ("fn:total:head", " N[.D]: C"). */
static inline void tu_read_prof(const char *path, struct tu_sprof *p)
{
	char l[4096], fn[128] = "";
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	memset(p, 0, sizeof(*p));
	while (fgets(l, sizeof(l), f)) {
		unsigned line, disc = 0;
		double c;

		if (l[0] != ' ') {
			char *colon = strchr(l, ':');

			if (!colon || p->nfns == 64)
				continue;
			snprintf(fn, sizeof(fn), "%.*s", (int)(colon - l), l);
			snprintf(p->fns[p->nfns++], 128, "%s", fn);
			continue;
		}
		if (l[1] == ' ' || !p->nfns || p->n == 4096)
			continue;		/* inlined callee bodies */
		if (sscanf(l, " %u.%u: %lf", &line, &disc, &c) != 3 &&
		    sscanf(l, " %u: %lf", &line, &c) != 2)
			continue;
		snprintf(p->v[p->n].fn, sizeof(p->v[p->n].fn), "%s", fn);
		p->v[p->n].line = line;
		p->v[p->n].disc = disc;
		p->v[p->n++].count = c;
		p->totals[p->nfns - 1] += c;
	}
	fclose(f);
}

static inline double tu_line_of(const struct tu_sprof *p, const char *fn, unsigned line,
				unsigned disc)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].fn, fn) && p->v[i].line == line && p->v[i].disc == disc)
			return p->v[i].count;
	return -1;
}

static inline double tu_total_of(const struct tu_sprof *p, const char *fn)
{
	for (size_t i = 0; i < p->nfns; i++)
		if (!strcmp(p->fns[i], fn))
			return p->totals[i];
	return 0;
}

static inline double tu_sprof_sum(const struct tu_sprof *p)
{
	double s = 0;

	for (size_t i = 0; i < p->nfns; i++)
		s += p->totals[i];
	return s;
}

/*
 * Lines of fn in ref with at least 5% of its hottest line's count: got's
 * count x scale within tol of ref's.  Returns how many were compared.
 */
static inline size_t tu_compare_lines(const struct tu_sprof *got, const struct tu_sprof *ref,
				      const char *fn, double scale, double tol)
{
	double max = 0;
	size_t n = 0;

	for (size_t i = 0; i < ref->n; i++)
		if (!strcmp(ref->v[i].fn, fn) && ref->v[i].count > max)
			max = ref->v[i].count;
	for (size_t i = 0; i < ref->n; i++) {
		const struct tu_line *r = &ref->v[i];
		double g;

		if (strcmp(r->fn, fn) || r->count < 0.05 * max)
			continue;
		g = tu_line_of(got, fn, r->line, r->disc) * scale;
		if (!(fabs(g - r->count) <= tol * r->count))
			fail_msg("%s line %u.%u: %.0f, reference %.0f (more than %.0f%% apart)",
				 fn, r->line, r->disc, g, r->count, 100 * tol);
		n++;
	}
	return n;
}

/*
 * Every procedure with at least 1% of ref's total: got's total x scale
 * within tol of ref's.  Returns how many were compared.
 */
static inline size_t tu_compare_totals(const struct tu_sprof *got, const struct tu_sprof *ref,
				       double scale, double tol)
{
	double all = tu_sprof_sum(ref);
	size_t n = 0;

	for (size_t i = 0; i < ref->nfns; i++) {
		double mine = tu_total_of(got, ref->fns[i]) * scale;

		if (ref->totals[i] < 0.01 * all)
			continue;
		if (!(fabs(mine - ref->totals[i]) <= tol * ref->totals[i]))
			fail_msg("%s: total %.0f, reference %.0f (more than %.0f%% apart)",
				 ref->fns[i], mine, ref->totals[i], 100 * tol);
		n++;
	}
	return n;
}

/*
 * The exact counts of prog run with args under callgrind in dir: imported
 * into dir/cgdb, written by dcpi llvm-prof --exact over dir/db as
 * dir/exact.prof, and read into exact.
 */
static inline void tu_lbr_exact(const char *dcpi, const char *dir, const char *prog,
				const char *args, struct tu_sprof *exact)
{
	char path[700];

	assert_int_equal(tu_sh("cd '%s' && valgrind -q --tool=callgrind --dump-instr=yes "
			       "--collect-jumps=yes --callgrind-out-file=cg.out '%s' %s"
			       " >/dev/null 2>&1", dir, prog, args), 0);
	assert_int_equal(tu_sh("'%s' import -q --db '%s/cgdb' '%s/cg.out'", dcpi, dir, dir), 0);
	assert_int_equal(tu_sh("'%s' llvm-prof --db '%s/db' --exact '%s/cgdb' -o '%s/exact.prof' "
			       "'%s' 2>/dev/null", dcpi, dir, dir, dir, prog), 0);
	snprintf(path, sizeof(path), "%s/exact.prof", dir);
	tu_read_prof(path, exact);
}

/*
 * Our profile against create_llvm_prof's (peer) of the same perf.data:
 * AutoFDO's counts are range occurrences, ours executions, so one scale;
 * then at least two procedures' totals within 5% and five of hot's lines
 * within 10%.
 */
static inline void tu_lbr_against_peer(const struct tu_sprof *ours, const struct tu_sprof *peer,
				       const char *hot)
{
	double scale;
	size_t n;

	assert_true(tu_sprof_sum(ours) > 0);
	assert_true(tu_sprof_sum(peer) > 0);
	scale = tu_sprof_sum(peer) / tu_sprof_sum(ours);
	n = tu_compare_totals(ours, peer, scale, 0.05);
	assert_true(n >= 2);
	print_message("%zu procedures with >= 1%% within 5%% of create_llvm_prof's\n", n);
	n = tu_compare_lines(ours, peer, hot, scale, 0.10);
	assert_true(n >= 5);
	print_message("%s: %zu lines within 10%% of create_llvm_prof's\n", hot, n);
}

#endif
