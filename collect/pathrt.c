/*
 * collect/pathrt.c - the path-sample runtime, built alone as
 * build/libdcpi-paths.so and preloaded by `dcpi record` into the command and
 * its children (docs/paths.md; docs/architecture.md "Three kinds of evidence").  It
 * links nothing of dcpi's analysis side; uftrace's libmcount is the model.
 *
 * Each thread gets a timer on its own CPU time (timer_create with
 * CLOCK_THREAD_CPUTIME_ID and SIGEV_THREAD_ID) that fires a realtime signal
 * about RATE times per CPU second, at random intervals in [P/2, 3P/2).  The
 * signal's handler records the interrupted pc and sets the trap flag
 * (EFLAGS.TF) in the interrupted context, so after sigreturn every
 * instruction traps: the SIGTRAP handler (si_code TRAP_TRACE) records the
 * next pc and counts down, and after K recorded pcs clears TF again and
 * appends the burst to this process's spool file with one write(2), so a
 * crash loses at most the burst in flight.
 *
 * Safety rules (each tested in tests/test_pathrt.c):
 *  - never start a burst when the interrupted context blocks SIGTRAP, when
 *    TF is already set (someone else is stepping), or at a syscall;
 *  - end a burst before any syscall instruction (syscall, sysenter,
 *    int 0x80): a stepped thread that blocks SIGTRAP (sigprocmask, raise,
 *    glibc's internal block-all around clone and posix_spawn) would be
 *    killed by the forced trap, and fork, clone, exec and exit are not
 *    stepped into.  Blocking signals therefore needs no interposition
 *    (sighold and sigblock of SIGTRAP: test_blocking_trap);
 *  - the program's own SIGTRAP handler and handler for our signal get
 *    every trap that is not one of our steps, as the kernel would call
 *    them: every glibc way of installing one is interposed (sigaction,
 *    __sigaction, signal, bsd_signal, ssignal, sysv_signal, __sysv_signal,
 *    sigset, sigignore, siginterrupt, sigvec, syscall(SYS_rt_sigaction)):
 *    ours stays installed, theirs is remembered;
 *  - a SIGTRAP handler installed behind our back anyway (an inline system
 *    call) is noticed at the thread's next timer signal (one rt_sigaction
 *    query): that thread is never stepped again, and a note says so;
 *  - a thread that asks to be traced (PTRACE_TRACEME, by ptrace or
 *    syscall) is never stepped again, and a process that starts traced is
 *    left alone: each of our signals would be a stop for its tracer;
 *  - a rep-prefixed instruction traps once per iteration: repeats of one pc
 *    are recorded once and count against a budget of K + 64 traps (a
 *    short rep completes, a long one ends the burst);
 *  - a burst that lost TF without us (popf, a handler that longjmps out)
 *    is written, flagged, at the thread's next timer signal;
 *  - threads: pthread_create is wrapped so each new thread arms its timer
 *    (deleted at thread exit by a key destructor) and, when it was created
 *    with every signal blocked, unblocks SIGTRAP and ours; fork: the child opens a
 *    new spool file and re-arms; exec: LD_PRELOAD carries the runtime over;
 *  - the spool descriptor is checked (fstat) before each write, so a
 *    program that closes descriptors it does not know cannot make us write
 *    into its files.
 * With a plan that counts calls (PRT_PLAN_COUNT), the entries it names are
 * patched at start, and after a dlopen of a path, with a jump to a counting
 * trampoline (docs/paths.md, "Calls counted at the entry"; the section
 * "calls counted at the entry" below).
 * Everything the handlers touch is thread-local (initial-exec TLS) or
 * guarded by an atomic flag; they call only async-signal-safe functions.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <malloc.h>
#include <unistd.h>

#include "loadea.h"
#include "canary.h"
#include "pathrt.h"

#define TF 0x100ULL
#define PRT_RANGES 1024		/* executable mappings remembered */
#define PRT_DRANGES 4096	/* readable mappings, for the latency probe */
#define PRT_MAPS_BUF (256 * 1024)
#define PRT_REREAD_NS 10000000ULL	/* re-read /proc/self/maps at most every 10 ms */

#define PRT_EXPORT __attribute__((visibility("default")))
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000	/* Linux 4.17; older kernels take it as a hint */
#endif

struct prt_burst {
	struct prt_rec h;
	uint64_t pc[PRT_KMAX];
};

struct prt_thread {
	int active;		/* a burst is being stepped */
	int bp_step;		/* the breakpoint goes back in at the next step */
	int bp_tf;		/* ... a step we asked for (not a burst's) */
	long credit;		/* plan: bursts' budget in 1/1024 steps */
	long bp_credit;		/* plan: the captures', in ns of CPU time */
	uint64_t cpu_ns;	/* plan: the thread's CPU time when last earned */
	int armed;
	int stopped;		/* never stepped again (stop_thread) */
	unsigned n, left;	/* pcs recorded, traps left */
	uint64_t t0;		/* CLOCK_MONOTONIC when the burst started */
	timer_t timer;
	uint64_t rnd;
	struct prt_burst b;
	struct prt_regs *regs;	/* values on: PRT_KMAX register files (mmap) */
	struct {
		struct prt_rec h;
		struct prt_canary c;
	} can;			/* timed at the burst's start (can.c.chain 0: not) */
	uint64_t calls_since;	/* CLOCK_MONOTONIC when t_calls started (PRT_CALLS) */
	uint64_t calls_ns;	/* ... when last written */
	uint64_t calls_sum;	/* their sum then */
};

struct prt_range {
	uint64_t lo, hi;
	int readable;		/* 0: execute-only (protection keys, vsyscall) */
	int writable;		/* rwx: never patched (a JIT's own code) */
};

/* A value of an argument register at a marked entry, and its calls. */
struct prt_vcount {
	uint64_t v;
	uint32_t n;
};

/* A procedure of the marking plan (pathrt.h), and where it is mapped now;
 * for an entry with a breakpoint, the calls caught in this process and
 * their argument registers' values (written by the breakpoint's owner). */
struct prt_mark {
	uint64_t off, size;
	uint32_t flags;		/* PRT_PLAN_* */
	uint32_t path;		/* into g.mpaths */
	uint64_t lo;		/* its entry's address; 0: not mapped (yet) */
	int misses;		/* armings in a row that caught no call */
	int done;		/* its question is closed: never armed again */
	uint32_t caught;
	struct prt_vcount vals[6][PRT_PLAN_VALS];
	uint32_t line;		/* in the plan file: PRT_CALLS names it so */
	int count;		/* PRT_PLAN_COUNT: COUNT_* */
	uint8_t nentry;		/* ... the bytes a jump displaces */
	uint8_t entry[PRT_ENTRY_MAX];
	uint64_t patched;	/* COUNT_ON: the entry patched */
};

/* A counted entry (PRT_PLAN_COUNT): not placed yet, patched, not counted
 * (a note said why). */
enum { COUNT_WAIT, COUNT_ON, COUNT_OFF };

/* A page of counting trampolines, PRT_TRAMP_SLOT bytes each: the mark of
 * each slot used (index into g.marks). */
#define PRT_TRAMP_PAGES 16
#define PRT_TRAMP_SLOT PRT_TRAMP_SLOT_BYTES
#define PRT_TRAMP_SLOTS (4096 / PRT_TRAMP_SLOT)
#define PRT_TRAMP_INC PRT_TRAMP_HEAD	/* incq %fs:disp32 */
struct prt_tpage {
	uint64_t page;
	unsigned used;
	uint16_t mark[PRT_TRAMP_SLOTS];
};

/* The one breakpoint of a process (docs/values.md, "Marking plan"). */
enum { BP_IDLE, BP_BUSY, BP_ARMED };

static struct {
	int on;
	int values;		/* DCPI_VALUES=1: register files with the pcs;
				 * 2: and latency probes of the loads */
	int sig;
	unsigned k;
	uint64_t period_ns;
	char dir[PATH_MAX];
	int fd;
	dev_t dev;
	ino_t ino;
	uint64_t heap_min;	/* values on: blocks recorded in "<pid>.heap" */
	int heap_fd, heap_pid;
	pthread_key_t key;
	struct sigaction user_trap, user_timer;	/* the program's own */
	int intr_trap, intr_timer;		/* siginterrupt(sig, 1) of each */
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	/* /proc/self/maps as last read: executable ranges, and the record */
	int maps_lock;
	size_t nranges;
	struct prt_range ranges[PRT_RANGES];
	size_t ndranges;			/* readable mappings, sorted */
	struct prt_range dranges[PRT_DRANGES];
	uint64_t maps_ns;
	/* the marking plan, and its breakpoint */
	int plan, plan_bp;	/* plan_bp: some mark wants its entry's calls */
	uint64_t burst_ns;	/* plan: the burst period (the timer's is shorter) */
	size_t nmarks;
	struct prt_mark marks[PRT_PLAN_MAX];
	char mpaths[32768];
	int threads;		/* threads started through pthread_create, alive */
	int bp_state, bp_chain, bp_off;	/* bp_off: breakpoints refused (a note) */
	struct prt_mark *bp_mark;	/* the armed entry's */
	uint32_t bp_caught;		/* its calls when armed */
	size_t bp_next;			/* the mark to try next (in turn) */
	uint64_t bp_addr, bp_page, bp_ns;
	uint8_t bp_orig;
	/* calls counted at the entry: marks with PRT_PLAN_COUNT, those patched;
	 * patching allowed (the start's and a dlopen's reading of the maps);
	 * dlopens of ours under way (their own reading decides) */
	int ncount, counting, patching, dlopening;
	size_t ntramp;
	struct prt_tpage tramp[PRT_TRAMP_PAGES];
	char mbuf[PRT_MAPS_BUF];
	char line[4096];
} g;	/* zero: in .bss, so the file stays small; fd set in prt_start */

static __thread struct prt_thread t_self __attribute__((tls_model("initial-exec")));
/* The calls of each counted entry (by index into g.marks) in this thread:
 * a trampoline's incq %fs:OFF adds one (initial-exec, so OFF, the counter's
 * distance from the thread pointer, is the same in every thread). */
static __thread uint64_t t_calls[PRT_PLAN_MAX] __attribute__((tls_model("initial-exec")));

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

typedef long (*prt_syscall_fn)(long, ...);
long prt_syscall_slow(long n, ...);
extern prt_syscall_fn prt_real_syscall;

static void resolve(void)
{
	if (prt_real_syscall == prt_syscall_slow) {
		prt_syscall_fn real = (prt_syscall_fn)dlsym(RTLD_NEXT, "syscall");

		if (real)
			prt_real_syscall = real;
	}
	if (!g.sigaction)
		g.sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
			dlsym(RTLD_NEXT, "sigaction");
	if (!g.pthread_create)
		g.pthread_create = (int (*)(pthread_t *, const pthread_attr_t *,
					    void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
}

/* --- the spool file ----------------------------------------------------- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static void fmt_u(char **p, unsigned long v)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*(*p)++ = tmp[--n];
}

/* "<dir>/<pid>-<n>.spool", the first n free (an exec keeps the pid). */
static void spool_open(void)
{
	char path[PATH_MAX + 64];
	struct stat st;

	g.fd = -1;
	for (unsigned n = 0; n < 1000 && g.fd < 0; n++) {
		size_t l = strlen(g.dir);
		char *p = path + l;

		memcpy(path, g.dir, l);
		*p++ = '/';
		fmt_u(&p, (unsigned long)getpid());
		*p++ = '-';
		fmt_u(&p, n);
		memcpy(p, ".spool", 7);
		g.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
		if (g.fd < 0 && errno != EEXIST)
			return;
	}
	if (g.fd >= 0 && g.fd < 200) {	/* out of the way of programs' own numbers */
		int hi = fcntl(g.fd, F_DUPFD_CLOEXEC, 200);

		if (hi >= 0) {
			close(g.fd);
			g.fd = hi;
		}
	}
	if (g.fd >= 0 && !fstat(g.fd, &st)) {
		g.dev = st.st_dev;
		g.ino = st.st_ino;
	}
}

/* Our descriptor still names our file (programs close what they like). */
static int spool_ok(void)
{
	struct stat st;

	return g.fd >= 0 && !fstat(g.fd, &st) && st.st_dev == g.dev && st.st_ino == g.ino;
}

static void fill_header(struct prt_rec *h, uint32_t type, size_t len, uint32_t flags)
{
	h->magic = PRT_MAGIC;
	h->type = type;
	h->len = (uint32_t)len;
	h->pid = (uint32_t)getpid();
	h->tid = (uint32_t)gettid();
	h->flags = flags;
	h->time_ns = now_ns();
}

/* --- /proc/self/maps: what the reader needs to place the pcs ------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static const char *get_hex(const char *s, uint64_t *v)
{
	int d;

	*v = 0;
	if (hexval(*s) < 0)
		return NULL;
	while ((d = hexval(*s)) >= 0) {
		*v = (*v << 4) | (uint64_t)d;
		s++;
	}
	return s;
}

static void put_hex(char **p, uint64_t v)
{
	char tmp[17];
	int n = 0;

	do
		tmp[n++] = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	while (n)
		*(*p)++ = tmp[--n];
}

static void count_place(struct prt_mark *m, uint64_t entry);

/* The marks of the executable mapping [lo, hi) of path at file offset off:
 * where their entries are now (and the counted ones patched, or not). */
static void plan_place(uint64_t lo, uint64_t hi, uint64_t off, const char *path)
{
	for (size_t i = 0; i < g.nmarks; i++) {
		struct prt_mark *m = &g.marks[i];

		if (m->off < off || m->off - off >= hi - lo || strcmp(g.mpaths + m->path, path))
			continue;
		__atomic_store_n(&m->lo, lo + (m->off - off), __ATOMIC_RELAXED);
		if (m->flags & PRT_PLAN_COUNT)
			count_place(m, lo + (m->off - off));
	}
}

/* One line of /proc/self/maps: remember executable ranges, and put the
 * named ones in the record as "start end offset path". */
static void maps_line(const char *s, char **out, char *end)
{
	uint64_t lo, hi, off;
	const char *perm, *path;
	size_t pl;

	if (!(s = get_hex(s, &lo)) || *s++ != '-' || !(s = get_hex(s, &hi)) || *s++ != ' ')
		return;
	perm = s;
	if (strlen(perm) < 5)
		return;
	if (!(s = get_hex(perm + 5, &off)))
		return;
	for (int f = 0; f < 2; f++) {		/* device, inode */
		while (*s == ' ')
			s++;
		while (*s && *s != ' ')
			s++;
	}
	while (*s == ' ')
		s++;
	path = s;
	if (perm[0] == 'r' && g.ndranges < PRT_DRANGES) {
		g.dranges[g.ndranges].lo = lo;
		g.dranges[g.ndranges++].hi = hi;
	}
	if (perm[2] != 'x')
		return;
	if (g.nranges < PRT_RANGES) {
		g.ranges[g.nranges].lo = lo;
		g.ranges[g.nranges].hi = hi;
		g.ranges[g.nranges].writable = perm[1] == 'w';
		g.ranges[g.nranges++].readable = perm[0] == 'r';
	}
	plan_place(lo, hi, off, path);
	pl = strlen(path);
	if (!pl || (path[0] != '/' && strcmp(path, "[vdso]")) || *out + pl + 60 > end)
		return;
	put_hex(out, lo);
	*(*out)++ = ' ';
	put_hex(out, hi);
	*(*out)++ = ' ';
	put_hex(out, off);
	*(*out)++ = ' ';
	memcpy(*out, path, pl);
	*out += pl;
	*(*out)++ = '\n';
}

/* Read /proc/self/maps and append a PRT_MAPS record.  Caller holds maps_lock. */
static void maps_snapshot(void)
{
	struct prt_rec *h = (struct prt_rec *)g.mbuf;
	char *out = g.mbuf + sizeof(*h), *end = g.mbuf + sizeof(g.mbuf);
	char chunk[1024];
	size_t ll = 0;
	ssize_t r;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	g.maps_ns = now_ns();
	if (fd < 0)
		return;
	g.nranges = 0;
	g.ndranges = 0;
	for (size_t i = 0; i < g.nmarks; i++)
		__atomic_store_n(&g.marks[i].lo, 0, __ATOMIC_RELAXED);
	while ((r = read(fd, chunk, sizeof(chunk))) > 0 || (r < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < r; i++) {
			if (chunk[i] != '\n') {
				if (ll < sizeof(g.line) - 1)
					g.line[ll++] = chunk[i];
				continue;
			}
			g.line[ll] = '\0';
			maps_line(g.line, &out, end);
			ll = 0;
		}
	}
	close(fd);
	fill_header(h, PRT_MAPS, (size_t)(out - g.mbuf), 0);
	if (spool_ok())
		write_all(g.fd, g.mbuf, (size_t)(out - g.mbuf));
}

static int lock_maps(void)
{
	return !__atomic_exchange_n(&g.maps_lock, 1, __ATOMIC_ACQUIRE);
}

static void unlock_maps(void)
{
	__atomic_store_n(&g.maps_lock, 0, __ATOMIC_RELEASE);
}

/* The trampoline page holding pc (calls counted at the entry), or NULL. */
static struct prt_tpage *tramp_page(uint64_t pc)
{
	size_t n = __atomic_load_n(&g.ntramp, __ATOMIC_ACQUIRE);

	for (size_t i = 0; i < n && i < PRT_TRAMP_PAGES; i++)
		if (pc - g.tramp[i].page < 4096)
			return &g.tramp[i];
	return NULL;
}

static int mapped(uint64_t pc)
{
	if (tramp_page(pc))
		return 1;
	for (size_t i = 0; i < g.nranges; i++)
		if (pc >= g.ranges[i].lo && pc < g.ranges[i].hi)
			return 1;
	return 0;
}

/* The timer interrupted code outside every known mapping (a dlopen since
 * the last read): read the maps now, so the burst can start there. */
static void refresh_maps(uint64_t pc)
{
	if (mapped(pc) || !lock_maps())
		return;
	if (!mapped(pc) && now_ns() - g.maps_ns >= PRT_REREAD_NS)
		maps_snapshot();
	unlock_maps();
}

/* A pc outside every known executable mapping: dlopen, or a new JIT area. */
static void check_maps(const struct prt_thread *t)
{
	unsigned i;

	if (!lock_maps())
		return;
	for (i = 0; i < t->n && mapped(t->b.pc[i]); i++)
		;
	if (i < t->n && now_ns() - g.maps_ns >= PRT_REREAD_NS)
		maps_snapshot();
	unlock_maps();
}

/* --- bursts -------------------------------------------------------------- */

static void burst_end(struct prt_thread *t, uint32_t flags)
{
	size_t len = sizeof(t->b.h) + t->n * sizeof(t->b.pc[0]);
	size_t vlen = t->regs ? t->n * sizeof(*t->regs) : 0;	/* values on */

	t->active = 0;
	if (!t->n)
		return;
	check_maps(t);
	fill_header(&t->b.h, vlen ? PRT_VBURST : PRT_BURST, len + vlen, flags);
	t->b.h.time_ns = t->t0;	/* the sample's time, as the time slices use */
	if (!spool_ok()) {
		spool_open();
		if (lock_maps()) {
			maps_snapshot();
			unlock_maps();
		}
	}
	if (spool_ok()) {
		/* one write: the burst, its registers, its canary */
		struct iovec iov[3] = { { &t->b, len } };
		int n = 1;
		ssize_t w;

		if (vlen)
			iov[n++] = (struct iovec){ t->regs, vlen };
		if (t->can.c.chain) {
			fill_header(&t->can.h, PRT_CANARY, sizeof(t->can), 0);
			t->can.h.time_ns = t->t0;
			iov[n++] = (struct iovec){ &t->can, sizeof(t->can) };
		}
		do
			w = writev(g.fd, iov, n);
		while (w < 0 && errno == EINTR);
		(void)w;	/* a short write is a cut record: the reader drops it */
	}
	t->n = 0;
}

static uint64_t latency_of(uint64_t pc, const uint64_t *r);

/* The integer registers of a context in the instruction set's order. */
static void copy_regs(uint64_t *out, const greg_t *r)
{
	static const int order[PRT_NREGS] = {
		REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
	};

	for (int k = 0; k < PRT_NREGS; k++)
		out[k] = (uint64_t)r[order[k]];
}

static void save_regs(struct prt_thread *t, unsigned i, const greg_t *r)
{
	if (!t->regs || i >= PRT_KMAX)
		return;
	copy_regs(t->regs[i].r, r);
	/* the burst's first instruction gives no values (values_spool.c) */
	t->regs[i].lat = i && g.values == 2 ? latency_of((uint64_t)r[REG_RIP], t->regs[i].r) : 0;
}

/* [pc, pc + len) lies in one mapping we know to be readable (not
 * execute-only memory, which faults when read). */
static int readable(uint64_t pc, uint64_t len)
{
	size_t n = __atomic_load_n(&g.nranges, __ATOMIC_RELAXED);
	const struct prt_tpage *tp = tramp_page(pc);

	if (tp)		/* ours, r-x */
		return pc + len <= tp->page + 4096;

	for (size_t i = 0; i < n && i < PRT_RANGES; i++)
		if (pc >= g.ranges[i].lo && pc < g.ranges[i].hi)
			return pc + len <= g.ranges[i].hi && g.ranges[i].readable;
	return 0;
}

/* --- latency samples (seed 000: a timed dependent re-load) ---------------- */

/* [a, a + 8) in one readable mapping as last read (caller holds the maps
 * lock: a snapshot being rewritten by another thread says no). */
static int data_readable(uint64_t a)
{
	size_t lo = 0, hi = g.ndranges;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a >= g.dranges[mid].hi)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g.ndranges && a >= g.dranges[lo].lo && a + 8 <= g.dranges[lo].hi;
}

/* The latency sample of the instruction at pc, about to run with r: 0 when
 * it is not a load we decode, or its address is not known to be mapped. */
static uint64_t latency_of(uint64_t pc, const uint64_t *r)
{
	uint64_t ea;
	int ok;

	if (!readable(pc, 15) || !load_ea((const uint8_t *)(uintptr_t)pc, r, pc, &ea) ||
	    !lock_maps())
		return 0;
	ok = data_readable(ea);
	if (!ok && now_ns() - g.maps_ns >= PRT_REREAD_NS) {
		/* mapped since the maps were read (malloc's mmap, a new heap):
		 * read them again, at most every PRT_REREAD_NS */
		maps_snapshot();
		ok = data_readable(ea);
	}
	unlock_maps();
	return ok ? lat_timed_load(ea) + 1 : 0;
}

/* The instruction at pc enters the kernel, or we cannot look at it (then
 * the burst ends there, as at a syscall).  Only its first byte is read
 * unless that byte starts such an instruction, whose second byte must then
 * be mapped too. */
static int at_syscall(uint64_t pc)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)pc;

	if (!readable(pc, 1))
		return 1;
	if (p[0] == 0x0f)
		return p[1] == 0x05 || p[1] == 0x34;
	if (p[0] == 0xcd)
		return p[1] == 0x80;
	return 0;
}

static uint64_t rnd_next(struct prt_thread *t)
{
	uint64_t x = t->rnd ? t->rnd : 0x9e3779b97f4a7c15ULL ^ (uint64_t)gettid();

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return t->rnd = x;
}

/* The next expiry in [P/2, 3P/2); the first one of a thread in [0, P), the
 * residual of a period already running, so that a thread living less than
 * a period is sampled in proportion to its time too (short processes). */
static void timer_set(struct prt_thread *t, int first)
{
	uint64_t p = g.period_ns ? g.period_ns : 1;
	uint64_t ns = first ? 1 + rnd_next(t) % p : p / 2 + rnd_next(t) % p;
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(ns / 1000000000ULL);
	its.it_value.tv_nsec = (long)(ns % 1000000000ULL);
	timer_settime(t->timer, 0, &its, NULL);
}

static void timer_next(struct prt_thread *t)
{
	timer_set(t, 0);
}

static void arm_thread(struct prt_thread *t)
{
	struct sigevent sev;

	if (!g.on || t->armed)
		return;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = g.sig;
	sev.sigev_value.sival_ptr = &g;
	sev._sigev_un._tid = gettid();
	if (g.values && !t->regs) {
		void *m = mmap(NULL, PRT_KMAX * sizeof(*t->regs), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t->regs = m == MAP_FAILED ? NULL : m;	/* none: bursts without values */
	}
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer))
		return;
	t->armed = 1;
	t->rnd = now_ns() ^ ((uint64_t)gettid() << 32);
	timer_set(t, 1);
}

/* --- notes for dcpi record ------------------------------------------------ */

/* Append line[0..len) to "<dir>/<pid><suffix>" with one write.
 * Async-signal-safe. */
static void spool_append(const char *suffix, const char *line, size_t len)
{
	char path[PATH_MAX + 64], *p = path;
	size_t l = strlen(g.dir);
	int fd;

	if (!g.dir[0] || strlen(suffix) > 16)
		return;
	memcpy(p, g.dir, l);
	p += l;
	*p++ = '/';
	fmt_u(&p, (unsigned long)getpid());
	memcpy(p, suffix, strlen(suffix) + 1);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	write_all(fd, line, len);
	close(fd);
}

/* Append "<what> <id>: <why>\n" to "<dir>/<pid>.note" with one write;
 * paths_notes (paths_run.c) gathers them for dcpi record to print.
 * Async-signal-safe. */
static void note(const char *what, long id, const char *why)
{
	char line[256], *p;
	size_t wl = strlen(what), yl = strlen(why);

	if (!g.dir[0] || wl + yl + 32 > sizeof(line))
		return;
	p = line;
	memcpy(p, what, wl);
	p += wl;
	*p++ = ' ';
	fmt_u(&p, (unsigned long)id);
	*p++ = ':';
	*p++ = ' ';
	memcpy(p, why, yl);
	p += yl;
	*p++ = '\n';
	spool_append(".note", line, (size_t)(p - line));
}

/* Never step this thread again: end a burst in flight (clearing the trap
 * flag in r, the interrupted context, when given), disarm its timer (the
 * key destructor deletes it) and say why. */
static void stop_thread(struct prt_thread *t, greg_t *r, const char *why)
{
	struct itimerspec off;

	if (t->stopped)
		return;
	t->stopped = 1;
	if (t->active) {
		if (r)
			r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] & ~TF);
		burst_end(t, PRT_F_CUT | PRT_F_LOST);
	}
	if (t->armed) {
		memset(&off, 0, sizeof(off));
		timer_settime(t->timer, 0, &off, NULL);
	}
	note("path samples stopped in thread", (long)gettid(), why);
}

static void on_trap(int sig, siginfo_t *si, void *ucv);
static void on_timer(int sig, siginfo_t *si, void *ucv);

/* The kernel still calls our handler for sig (one rt_sigaction system
 * call): else a way of installing a handler we do not interpose (an
 * inline system call, libc's sigaction found by dlsym on its handle)
 * replaced it. */
static int handler_ours(int sig)
{
	struct sigaction cur;

	if (g.sigaction(sig, NULL, &cur))
		return 1;	/* cannot tell: keep going */
	return (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == (sig == SIGTRAP ? on_trap : on_timer);
}

/* --- chaining to the program's own handlers -------------------------------- */

/* Default action for sig: the program dies of it (with a core for
 * SIGTRAP), as it would have without us. */
static void die_of(int sig)
{
	struct sigaction dfl;
	sigset_t set;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	g.sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	tgkill(getpid(), gettid(), sig);
}

/* What the program asked for sig: call it the way the kernel would have.
 * SIG_DFL and SIG_IGN are the handler's value whatever the flags say; a
 * SIGTRAP the kernel raised (int3, a hardware breakpoint) is forced, so
 * ignoring it kills, as it does natively; SA_RESETHAND makes the program's
 * disposition SIG_DFL before its handler runs; the handler runs with the
 * mask it asked for (SA_NODEFER: sig not blocked), our timer signal kept
 * blocked. */
static void chain(struct sigaction *sa, int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sigaction act = *sa;
	sigset_t m;

	if (act.sa_handler == SIG_IGN && !(sig == SIGTRAP && si && si->si_code > 0))
		return;
	if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN) {
		die_of(sig);
		return;
	}
	if (act.sa_flags & SA_RESETHAND) {
		memset(sa, 0, sizeof(*sa));
		sa->sa_handler = SIG_DFL;
	}
	m = uc->uc_sigmask;
	sigorset(&m, &m, &act.sa_mask);
	if (!(act.sa_flags & SA_NODEFER))
		sigaddset(&m, sig);
	else
		sigdelset(&m, sig);
	sigaddset(&m, g.sig);
	pthread_sigmask(SIG_SETMASK, &m, NULL);	/* sigreturn restores uc's */
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, ucv);
	else
		act.sa_handler(sig);
}

/* --- the marking plan: bursts where it says, and its one breakpoint ------------ */

/* The mark whose procedure holds pc and wants the bursts (PRT_PLAN_HOT),
 * or NULL. */
static struct prt_mark *mark_at(uint64_t pc)
{
	for (size_t i = 0; i < g.nmarks; i++) {
		uint64_t lo = __atomic_load_n(&g.marks[i].lo, __ATOMIC_RELAXED);

		if (!(g.marks[i].flags & PRT_PLAN_HOT))
			continue;
		if (lo && pc >= lo && pc - lo < g.marks[i].size)
			return &g.marks[i];
	}
	return NULL;
}

/* The mapping of addr we know: r-x, so it may be patched and put back so. */
static int patchable(uint64_t addr)
{
	for (size_t i = 0; i < g.nranges && i < PRT_RANGES; i++)
		if (addr >= g.ranges[i].lo && addr < g.ranges[i].hi)
			return g.ranges[i].readable && !g.ranges[i].writable;
	return 0;
}

static void bp_protect(uint64_t page)
{
	mprotect((void *)(uintptr_t)page, 4096, PROT_READ | PROT_EXEC);
}

/* Take the breakpoint out (its owner, state BUSY): the byte back, the page
 * back to r-x, the state idle. */
static void bp_remove(void)
{
	__atomic_store_n((uint8_t *)(uintptr_t)g.bp_addr, g.bp_orig, __ATOMIC_SEQ_CST);
	bp_protect(g.bp_page);
	__atomic_store_n(&g.bp_state, BP_IDLE, __ATOMIC_RELEASE);
}

/*
 * Arm the breakpoint at m's entry for as many of its next calls as calls: int3
 * patched into the first byte, the page made writable until the chain ends.
 * Only in a process whose only thread is this one (a thread that called the
 * entry with SIGTRAP blocked would be killed by the int3, as by any
 * breakpoint; threads we did not see start are still handled in on_trap).
 * Under the maps lock, so m->lo is the entry of the mapping as read.
 */
static int bp_arm(struct prt_mark *m, int calls)
{
	uint64_t addr;
	int ok = 0, idle = BP_IDLE;

	if (__atomic_load_n(&g.threads, __ATOMIC_RELAXED) || g.bp_off || !lock_maps())
		return 0;
	addr = m->lo;
	if (addr && patchable(addr) && readable(addr, 1) && !at_syscall(addr) &&
	    *(const uint8_t *)(uintptr_t)addr != 0xcc &&
	    __atomic_compare_exchange_n(&g.bp_state, &idle, BP_BUSY, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		uint64_t page = addr & ~4095ULL;

		if (mprotect((void *)(uintptr_t)page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC)) {
			g.bp_off = 1;
			__atomic_store_n(&g.bp_state, BP_IDLE, __ATOMIC_RELEASE);
			note("breakpoints off in process", (long)getpid(),
			     "mprotect refused to make code writable");
		} else {
			g.bp_addr = addr;
			g.bp_page = page;
			g.bp_orig = *(const uint8_t *)(uintptr_t)addr;
			g.bp_chain = calls;
			g.bp_mark = m;
			g.bp_caught = m->caught;
			g.bp_ns = now_ns();
			/* the int3 goes in as on_timer returns (bp_unguard) */
			__atomic_store_n(&g.bp_state, BP_ARMED, __ATOMIC_RELEASE);
			ok = 1;
		}
	}
	unlock_maps();
	return ok;
}

/*
 * Our handlers run with SIGTRAP blocked (on_timer's mask, on_trap's own)
 * and call libc: clock_gettime, getpid, write, and the program's handlers
 * they chain to call anything.  An int3 met there is a SIGTRAP the kernel
 * forces on a blocked signal: the process dies (a plan that asked for the
 * arguments of clock_gettime, which our ticks had made hot, killed grep).
 * So while a handler of ours runs, the armed entry keeps its own byte:
 * bp_guard takes the int3 out as it starts, bp_unguard puts it in as it
 * returns, while the breakpoint is still armed; bp_arm and bp_step leave
 * the int3 to bp_unguard.  The breakpoint is armed only in a process of one
 * thread (bp_arm), so no other thread runs the entry meanwhile.
 */
static void bp_guard(void)
{
	if (__atomic_load_n(&g.bp_state, __ATOMIC_ACQUIRE) == BP_ARMED && g.bp_addr &&
	    *(const uint8_t *)(uintptr_t)g.bp_addr == 0xcc)
		__atomic_store_n((uint8_t *)(uintptr_t)g.bp_addr, g.bp_orig, __ATOMIC_SEQ_CST);
}

static void bp_unguard(void)
{
	if (__atomic_load_n(&g.bp_state, __ATOMIC_ACQUIRE) == BP_ARMED && g.bp_addr)
		__atomic_store_n((uint8_t *)(uintptr_t)g.bp_addr, 0xcc, __ATOMIC_SEQ_CST);
}

/* A breakpoint armed for longer than PRT_PLAN_ARM_NS (its procedure is no
 * longer called) is taken out, so another can be armed; the captures it did
 * not make go back to t's budget, and an arming that caught nothing is a
 * miss (bp_pick). */
static void bp_expire(struct prt_thread *t)
{
	int armed = BP_ARMED;

	if (__atomic_load_n(&g.bp_state, __ATOMIC_ACQUIRE) != BP_ARMED ||
	    now_ns() - g.bp_ns < PRT_PLAN_ARM_NS)
		return;
	if (__atomic_compare_exchange_n(&g.bp_state, &armed, BP_BUSY, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		t->bp_credit += (long)g.bp_chain * PRT_PLAN_CAPTURE_NS;
		if (g.bp_mark->caught == g.bp_caught)
			g.bp_mark->misses++;
		bp_remove();
	}
}

/* No more breakpoints in this process, and the armed one out: a tracer
 * would take its SIGTRAP (and might drop it), a handler that took SIGTRAP
 * over would get it. */
static void bp_disable(void)
{
	int armed = BP_ARMED;

	g.bp_off = 1;
	if (__atomic_compare_exchange_n(&g.bp_state, &armed, BP_BUSY, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		bp_remove();
}

/* The thread's CPU time since its last tick, in ns (a CPU-time timer fires
 * at most once a kernel tick, so the budgets are earned from this). */
static uint64_t plan_cpu(struct prt_thread *t)
{
	struct timespec ts;
	uint64_t cpu, d = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	cpu = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (cpu > t->cpu_ns)
		d = cpu - t->cpu_ns;
	t->cpu_ns = cpu;
	return d < 1000000000ULL ? d : 1000000000ULL;
}

/* The entry to arm at a tick in m (NULL: in no marked procedure): m's when
 * its calls are still wanted and it missed fewer than PRT_PLAN_GIVEUP times
 * in a row, else the next one in turn that missed fewer than
 * PRT_PLAN_MISSES (an entry called once, main's, is left alone soon). */
static struct prt_mark *bp_pick(struct prt_mark *m)
{
	if (m && (m->flags & PRT_PLAN_BP) && !m->done && m->misses < PRT_PLAN_GIVEUP)
		return m;
	for (size_t i = 0; i < g.nmarks; i++) {
		struct prt_mark *c = &g.marks[(g.bp_next + i) % g.nmarks];

		if ((c->flags & PRT_PLAN_BP) && !c->done && c->misses < PRT_PLAN_MISSES &&
		    __atomic_load_n(&c->lo, __ATOMIC_RELAXED)) {
			g.bp_next = (size_t)(c - g.marks) + 1;
			return c;
		}
	}
	return NULL;
}

/* The captures' account: 1 / PRT_PLAN_SHARE of the CPU time, at most
 * PRT_PLAN_CHAIN captures; at a tick with the breakpoint idle it arms an
 * entry (bp_pick) for as many calls as the account pays. */
static void plan_captures(struct prt_thread *t, struct prt_mark *m, uint64_t cpu)
{
	long cap = (long)PRT_PLAN_CHAIN * PRT_PLAN_CAPTURE_NS, calls;
	struct prt_mark *b;

	t->bp_credit += (long)(cpu / PRT_PLAN_SHARE);
	if (t->bp_credit > cap)
		t->bp_credit = cap;
	bp_expire(t);
	calls = t->bp_credit / PRT_PLAN_CAPTURE_NS;
	if (calls < PRT_PLAN_CHAIN_MIN ||
	    __atomic_load_n(&g.bp_state, __ATOMIC_ACQUIRE) != BP_IDLE || !(b = bp_pick(m)))
		return;
	if (bp_arm(b, (int)calls))
		t->bp_credit -= calls * PRT_PLAN_CAPTURE_NS;
}

/*
 * One timer tick with a plan: 1 when a burst starts here.  Bursts earn K
 * steps a burst period of CPU time, as without a plan, and start in marked
 * code whenever their account allows, elsewhere only when it is full (one
 * a burst period when marked code takes none).  The breakpoint's captures
 * have their own account (plan_captures).
 */
static int plan_tick(struct prt_thread *t, uint64_t pc)
{
	long burst = (long)g.k * 1024;
	uint64_t cpu = plan_cpu(t);
	long e = (long)(cpu * g.k * 1024 / g.burst_ns);
	struct prt_mark *m = mark_at(pc);

	t->credit = t->credit + e > 2 * burst ? 2 * burst : t->credit + e;
	if (g.plan_bp)
		plan_captures(t, m, cpu);
	if (t->credit < (m ? burst : 2 * burst))
		return 0;
	t->credit -= burst;
	return 1;
}

/* The call at the breakpoint, as a PRT_ARGS record: r before the entry ran,
 * the return address at rsp (the stack is mapped: the call just wrote it). */
static void bp_record(const greg_t *r)
{
	struct {
		struct prt_rec h;
		struct prt_args a;
	} rec;
	copy_regs(rec.a.regs.r, r);
	rec.a.regs.lat = 0;
	rec.a.pc = g.bp_addr;
	rec.a.ret = *(const uint64_t *)(uintptr_t)r[REG_RSP];
	fill_header(&rec.h, PRT_ARGS, sizeof(rec), 0);
	if (spool_ok())
		write_all(g.fd, &rec, sizeof(rec));
}

/* Add v to a register's value counts; the most calls of one value. */
static uint32_t vcount_add(struct prt_vcount *c, uint64_t v)
{
	uint32_t top = 0;
	int added = 0;

	for (int i = 0; i < PRT_PLAN_VALS; i++) {
		if (!added && (!c[i].n || c[i].v == v)) {
			c[i].v = v;
			c[i].n++;
			added = 1;
		}
		if (c[i].n > top)
			top = c[i].n;
	}
	return top;
}

/* x calls of n with one value: is its share known well enough (pathrt.h:
 * n >= PRT_PLAN_NEED_K p (1 - p) at p = (x + 2) / (n + 4))? */
static int share_known(uint64_t x, uint64_t n)
{
	uint64_t xa = x + 2, na = n + 4;

	if (n >= PRT_PLAN_NEED_K / 4)
		return 1;	/* the most any share needs, at p = 1/2 */
	return n * na * na >= (uint64_t)PRT_PLAN_NEED_K * xa * (na - xa);
}

/* Count the call at m's entry (registers r); 1 when m's question is now
 * closed: every argument register it takes known well enough. */
static int bp_count(struct prt_mark *m, const greg_t *r)
{
	static const int regs[6] = { REG_RDI, REG_RSI, REG_RDX, REG_RCX, REG_R8, REG_R9 };
	uint32_t mask = (m->flags >> PRT_PLAN_REGS_SHIFT) & 63u;
	int open = 0;

	m->caught++;
	m->misses = 0;
	for (int k = 0; k < 6; k++) {
		if (mask && !(mask & (1u << k)))
			continue;
		open |= !share_known(vcount_add(m->vals[k], (uint64_t)r[regs[k]]), m->caught);
	}
	if (!open && m->caught >= PRT_PLAN_MIN_CALLS)
		m->done = 1;
	return m->done;
}

/*
 * A SIGTRAP from an int3 (SI_KERNEL, rip after it) at the breakpoint's
 * address: 1 when it was ours.  The first thread to take it (ARMED to BUSY)
 * records and counts the call, puts the byte back and runs the instruction;
 * while the chain lasts and the entry's question is open it steps that one
 * instruction (TF) and bp_step puts the int3 back.  Any other thread that
 * ran the int3 meanwhile runs the instruction again from its start (it
 * finds the byte restored, or traps once more).
 */
static int bp_hit(struct prt_thread *t, greg_t *r)
{
	uint64_t addr = (uint64_t)r[REG_RIP] - 1;
	int armed = BP_ARMED, done;

	if (!g.bp_addr || addr != g.bp_addr)
		return 0;
	if (!__atomic_compare_exchange_n(&g.bp_state, &armed, BP_BUSY, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		if (armed == BP_IDLE && *(const uint8_t *)(uintptr_t)addr == 0xcc)
			return 0;	/* the program's own int3 */
		r[REG_RIP] = (greg_t)addr;
		return 1;
	}
	bp_record(r);
	done = bp_count(g.bp_mark, r);
	__atomic_store_n((uint8_t *)(uintptr_t)addr, g.bp_orig, __ATOMIC_SEQ_CST);
	r[REG_RIP] = (greg_t)addr;
	if (--g.bp_chain > 0 && !done) {
		t->bp_step = 1;
		if (!((uint64_t)r[REG_EFL] & TF)) {
			t->bp_tf = 1;
			r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] | TF);
		}
		return 1;
	}
	t->bp_credit += (long)g.bp_chain * PRT_PLAN_CAPTURE_NS;	/* unspent */
	bp_protect(g.bp_page);
	__atomic_store_n(&g.bp_state, BP_IDLE, __ATOMIC_RELEASE);
	return 1;
}

/* The step after a capture: the int3 back in for the next call.  1 when
 * the step was ours alone (not a burst's). */
static int bp_step(struct prt_thread *t, greg_t *r)
{
	int ours = t->bp_tf;

	t->bp_step = 0;
	t->bp_tf = 0;
	g.bp_ns = now_ns();
	/* the int3 goes back in as on_trap returns (bp_unguard) */
	__atomic_store_n(&g.bp_state, BP_ARMED, __ATOMIC_RELEASE);
	if (ours && !t->active)
		r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] & ~TF);
	return ours && !t->active;
}

/* --- calls counted at the entry ---------------------------------------------- */

/*
 * A counted entry's first bytes (the plan's, the whole instructions a 5-byte
 * jump displaces: position-independent, no control transfer, entered by no
 * edge but the entry itself, cfg_entry_displaced) become `jmp rel32` to a
 * trampoline of its own, within +-2 GB:
 *   incq %fs:OFF       64 48 ff 04 25 disp32: the thread's t_calls[mark]
 *   the displaced bytes, verbatim
 *   jmp rel32          back to the entry + their length
 * The flags the incq clobbers are dead at a procedure's entry (the ABI).
 * Entries are patched only where no code of the program can be running
 * their bytes: in the constructor, and after a dlopen we wrap, with this
 * thread the process's only one (as for the breakpoint); a mapping seen in
 * any other reading of the maps is not counted (its earlier calls would be
 * missing), nor is an entry whose bytes are not the plan's, and a note
 * says which and why.  A new trampoline page is written while RW, then
 * r-x; one in use gets its next trampoline while rwx (a handler may run
 * the others meanwhile), as the entry's page gets its jump.
 * A burst stepping through a trampoline records the displaced bytes' copies
 * at their own addresses and nothing else, so its path is the program's.
 */

/* Say once that m's calls are not counted, and why. */
static void count_off(struct prt_mark *m, const char *why)
{
	const char *path = g.mpaths + m->path, *base = strrchr(path, '/');
	char line[160], *p = line;
	size_t bl, wl = strlen(why);

	m->count = COUNT_OFF;
	base = base ? base + 1 : path;
	bl = strlen(base) < 64 ? strlen(base) : 64;
	if (wl > sizeof(line) - bl - 24)
		wl = sizeof(line) - bl - 24;
	memcpy(p, base, bl);
	p += bl;
	memcpy(p, "+0x", 3);
	p += 3;
	put_hex(&p, m->off);
	memcpy(p, ": ", 2);
	p += 2;
	memcpy(p, why, wl);
	p[wl] = '\0';
	note(m->flags & PRT_PLAN_BLOCK ? "executions not counted in process"
				       : "calls not counted in process", (long)getpid(), line);
}

/* b within a rel32 of a (with room for a page either side). */
static int near(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;

	return d < (1ULL << 31) - 2 * 4096;
}

/* A new trampoline page near entry (mmap at hints ever farther below and
 * above it, never over a mapping), RW; 0: none. */
static uint64_t tramp_map(uint64_t entry)
{
	uint64_t base = entry & ~0xfffffULL;

	for (uint64_t d = 1ULL << 20; d <= 1ULL << 30; d <<= 1) {
		for (int up = 0; up < 2; up++) {
			uint64_t hint = up ? base + d : base - d;
			void *p;

			if (!up && base < d + (1ULL << 20))
				continue;
			p = mmap((void *)(uintptr_t)hint, 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if (near((uint64_t)(uintptr_t)p, entry))	/* an old kernel's hint */
				return (uint64_t)(uintptr_t)p;
			munmap(p, 4096);
		}
	}
	return 0;
}

/* The trampoline of m (index i of g.marks), entry at entry, written into a
 * free slot of a page near it: the slot's address, 0 when there is none. */
static uint64_t tramp_make(struct prt_mark *m, size_t i, uint64_t entry)
{
	static const uint8_t inc[5] = { 0x64, 0x48, 0xff, 0x04, 0x25 };
	struct prt_tpage *tp = NULL;
	uint64_t tpr, slot, to = entry;
	int64_t off, back;
	uint8_t *c;
	int fresh, jl = prt_jcc_len(m->entry, m->nentry, m->flags);

	__asm__("mov %%fs:0, %0" : "=r"(tpr));	/* the thread pointer (glibc's TCB) */
	off = (int64_t)((uint64_t)(uintptr_t)&t_calls[i] - tpr);
	if (off != (int32_t)off || jl < 0)
		return 0;
	if (jl) {	/* where the block's jcc goes */
		const uint8_t *j = m->entry + m->nentry - jl;

		to = entry + m->nentry +
		     (uint64_t)(jl == 2 ? (int64_t)(int8_t)j[1]
					: (int64_t)(int32_t)((uint32_t)j[2] | (uint32_t)j[3] << 8 |
							     (uint32_t)j[4] << 16 |
							     (uint32_t)j[5] << 24));
	}
	for (size_t k = 0; k < g.ntramp && !tp; k++)
		if (g.tramp[k].used < PRT_TRAMP_SLOTS && near(g.tramp[k].page, entry) &&
		    near(g.tramp[k].page, to))
			tp = &g.tramp[k];
	/* a page in use stays executable: a handler may run its trampolines */
	if (tp && mprotect((void *)(uintptr_t)tp->page, 4096,
			   PROT_READ | PROT_WRITE | PROT_EXEC))
		return 0;
	if (!tp) {
		uint64_t page;

		if (g.ntramp == PRT_TRAMP_PAGES || !(page = tramp_map(entry)))
			return 0;
		if (!near(page, to)) {
			munmap((void *)(uintptr_t)page, 4096);
			return 0;
		}
		tp = &g.tramp[g.ntramp];
		tp->page = page;
		tp->used = 0;
	}
	slot = tp->page + tp->used * PRT_TRAMP_SLOT;
	c = (uint8_t *)(uintptr_t)slot;
	memcpy(c, inc, sizeof(inc));
	memcpy(c + 5, &(int32_t){ (int32_t)off }, 4);
	memcpy(c + PRT_TRAMP_INC, m->entry, m->nentry - jl);
	c += PRT_TRAMP_INC + m->nentry - jl;
	if (jl) {	/* the block's jcc, near, to its own target */
		const uint8_t *j = m->entry + m->nentry - jl;
		int64_t rel = (int64_t)to - (int64_t)((uint64_t)(uintptr_t)c + 6);

		c[0] = 0x0f;
		c[1] = (uint8_t)(0x80 | ((jl == 2 ? j[0] : j[1]) & 0x0f));
		memcpy(c + 2, &(int32_t){ (int32_t)rel }, 4);
		c += 6;
	}
	back = (int64_t)(entry + m->nentry) - (int64_t)((uint64_t)(uintptr_t)c + 5);
	c[0] = 0xe9;
	memcpy(c + 1, &(int32_t){ (int32_t)back }, 4);
	tp->mark[tp->used++] = (uint16_t)i;
	fresh = tp == &g.tramp[g.ntramp];
	if (mprotect((void *)(uintptr_t)tp->page, 4096, PROT_READ | PROT_EXEC)) {
		if (fresh)	/* it cannot run (W^X): gone */
			munmap((void *)(uintptr_t)tp->page, 4096);
		return 0;
	}
	if (fresh)
		__atomic_store_n(&g.ntramp, g.ntramp + 1, __ATOMIC_RELEASE);
	return slot;
}

/* `jmp slot` over the entry's first 5 bytes (the page, or both pages they
 * span, writable meanwhile); -1 when mprotect refused. */
static int entry_patch(uint64_t entry, uint64_t slot)
{
	uint64_t p0 = entry & ~4095ULL, p1 = (entry + 4) & ~4095ULL;
	size_t len = (size_t)(p1 - p0) + 4096;
	uint8_t j[5] = { 0xe9 };

	memcpy(j + 1, &(int32_t){ (int32_t)((int64_t)slot - (int64_t)(entry + 5)) }, 4);
	if (mprotect((void *)(uintptr_t)p0, len, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -1;
	memcpy((void *)(uintptr_t)entry, j, sizeof(j));
	mprotect((void *)(uintptr_t)p0, len, PROT_READ | PROT_EXEC);
	return 0;
}

/* Append "<slot> <bytes moved> <plan line> <jcc length>\n" (decimal) to
 * "<dir>/<pid>.tramp": dcpi record gives the time samples taken in the
 * trampoline to the instructions it runs copies of (PRT_TRAMP_SUFFIX). */
static void tramp_note(const struct prt_mark *m, uint64_t slot)
{
	char line[96], *p = line;
	int jl = prt_jcc_len(m->entry, m->nentry, m->flags);

	fmt_u(&p, (unsigned long)slot);
	*p++ = ' ';
	fmt_u(&p, m->nentry);
	*p++ = ' ';
	fmt_u(&p, m->line);
	*p++ = ' ';
	fmt_u(&p, (unsigned long)(jl > 0 ? jl : 0));
	*p++ = '\n';
	spool_append(PRT_TRAMP_SUFFIX, line, (size_t)(p - line));
}

/* m's entry is now at entry (plan_place, in a reading of the maps): patch
 * it when this reading may, else say it is not counted. */
static void count_place(struct prt_mark *m, uint64_t entry)
{
	const uint8_t *b = (const uint8_t *)(uintptr_t)entry;
	const char *why = NULL;
	uint64_t slot = 0;

	if (m->count == COUNT_OFF)
		return;
	if (m->count == COUNT_ON && m->patched == entry &&
	    (!readable(entry, m->nentry) || memcmp(b, m->entry, m->nentry)))
		return;		/* patched (a mapping put back would hold the plan's bytes) */
	if (!g.patching) {
		if (!__atomic_load_n(&g.dlopening, __ATOMIC_RELAXED))
			count_off(m, "its image was mapped after the start, not by a dlopen "
				  "of a path (its earlier calls would be missing)");
		return;		/* else the dlopen's own reading decides */
	}
	if (__atomic_load_n(&g.threads, __ATOMIC_RELAXED))
		why = "the process had other threads when its image was mapped";
	else if (!patchable(entry) || !readable(entry, m->nentry))
		why = "its code is writable or cannot be read";
	else if (memcmp(b, m->entry, m->nentry))
		why = m->flags & PRT_PLAN_BLOCK
			      ? "the bytes of its block are not the plan's (another build?)"
			      : "the bytes at its entry are not the plan's (another build?)";
	else if (!(slot = tramp_make(m, (size_t)(m - g.marks), entry)))
		why = "no page for its trampoline within 2 GB of it, or mprotect refused";
	else if (entry_patch(entry, slot))
		why = "mprotect refused to make its code writable";
	if (why) {
		count_off(m, why);
		return;
	}
	m->count = COUNT_ON;
	m->patched = entry;
	g.counting = 1;
	tramp_note(m, slot);
}

/* pc as a burst step: itself, or in a trampoline the address of the
 * displaced instruction it runs a copy of; 0 for the trampoline's own
 * instructions (the count, the jump back), which are no step. */
static uint64_t step_pc(uint64_t pc)
{
	const struct prt_tpage *tp = g.ntramp ? tramp_page(pc) : NULL;
	unsigned s;
	const struct prt_mark *m;
	uint64_t at;
	int jl;

	if (!tp)
		return pc;
	s = (unsigned)((pc - tp->page) / PRT_TRAMP_SLOT);
	if (s >= tp->used)
		return 0;
	m = &g.marks[tp->mark[s]];
	at = pc - tp->page - s * PRT_TRAMP_SLOT;
	jl = prt_jcc_len(m->entry, m->nentry, m->flags);
	if (jl > 0 && at >= PRT_TRAMP_INC + (uint64_t)(m->nentry - jl) &&
	    at < PRT_TRAMP_INC + (uint64_t)(m->nentry - jl) + 6)
		return m->patched + m->nentry - jl;	/* the jcc, near here */
	if (at < PRT_TRAMP_INC || at >= PRT_TRAMP_INC + (uint64_t)(m->nentry - (jl > 0 ? jl : 0)))
		return 0;
	return m->patched + (at - PRT_TRAMP_INC);
}

/* This thread's counts as a PRT_CALLS record, when they changed since the
 * last one (one write; the record's time is when they started). */
static void calls_write(struct prt_thread *t)
{
	struct {
		struct prt_rec h;
		struct prt_calls c[PRT_PLAN_MAX];
	} r;
	uint64_t sum = 0;
	size_t n = 0;

	if (!g.counting)
		return;
	for (size_t i = 0; i < g.nmarks && i < PRT_PLAN_MAX; i++) {
		if (!t_calls[i])
			continue;
		r.c[n].line = g.marks[i].line;
		r.c[n].zero = 0;
		r.c[n++].calls = t_calls[i];
		sum += t_calls[i];
	}
	t->calls_ns = now_ns();
	if (sum == t->calls_sum)
		return;
	fill_header(&r.h, PRT_CALLS, sizeof(r.h) + n * sizeof(r.c[0]), 0);
	r.h.time_ns = t->calls_since;
	if (spool_ok() && !write_all(g.fd, &r, sizeof(r.h) + n * sizeof(r.c[0])))
		t->calls_sum = sum;
}

/* The counts at a timer tick: at most every PRT_CALLS_NS. */
static void calls_tick(struct prt_thread *t)
{
	if (g.counting && now_ns() - t->calls_ns >= PRT_CALLS_NS)
		calls_write(t);
}

/* Counting starts now in this thread (its start, a fork's child). */
static void calls_start(struct prt_thread *t)
{
	memset(t_calls, 0, sizeof(t_calls));
	t->calls_since = t->calls_ns = now_ns();
	t->calls_sum = 0;
}

/* Entries of a plan's line: "<hex bytes> " before the path. */
static const char *entry_bytes(const char *q, struct prt_mark *m)
{
	int hi, lo;

	m->nentry = 0;
	while ((hi = hexval(q[0])) >= 0 && (lo = hexval(q[1])) >= 0 &&
	       m->nentry < PRT_ENTRY_MAX) {
		m->entry[m->nentry++] = (uint8_t)(hi << 4 | lo);
		q += 2;
	}
	return m->nentry >= PRT_ENTRY_MIN && *q == ' ' ? q + 1 : NULL;
}

/* The runtime's plan file: "<off> <size> <flags> [<entry bytes> ]<path>"
 * lines (pathrt.h).  Read once at start, before any handler runs. */
static void plan_load(const char *file)
{
	static char buf[65536];
	size_t used = 0, pl = 0;
	uint32_t line = 0;
	ssize_t r;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (used < sizeof(buf) - 1 &&
	       ((r = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0 ||
		(r < 0 && errno == EINTR)))
		used += r > 0 ? (size_t)r : 0;
	close(fd);
	buf[used] = '\0';
	for (char *s = buf, *e; *s && g.nmarks < PRT_PLAN_MAX; s = e + 1, line++) {
		struct prt_mark *m = &g.marks[g.nmarks];
		uint64_t flags;
		size_t l;
		const char *q;

		if (!(e = strchr(s, '\n')))
			break;
		*e = '\0';
		if (!(q = get_hex(s, &m->off)) || *q++ != ' ' || !(q = get_hex(q, &m->size)) ||
		    *q++ != ' ' || !(q = get_hex(q, &flags)) || *q++ != ' ' ||
		    ((flags & PRT_PLAN_COUNT) && !(q = entry_bytes(q, m))) || *q != '/' ||
		    pl + (l = strlen(q)) + 1 > sizeof(g.mpaths) ||
		    ((flags & PRT_PLAN_COUNT) && !prt_jcc_ok(m->entry, m->nentry, (unsigned)flags)))
			continue;
		memcpy(g.mpaths + pl, q, l + 1);
		m->path = (uint32_t)pl;
		m->flags = (uint32_t)flags;
		m->line = line;
		m->lo = 0;
		g.plan_bp |= !!(flags & PRT_PLAN_BP);
		g.ncount += !!(flags & PRT_PLAN_COUNT);
		pl += l + 1;
		g.nmarks++;
	}
	g.plan = g.nmarks > 0;
}

static void on_timer(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *r = uc->uc_mcontext.gregs;
	struct prt_thread *t = &t_self;
	int saved = errno;
	uint64_t pc;

	bp_guard();
	if (si->si_code != SI_TIMER || si->si_value.sival_ptr != &g) {
		chain(&g.user_timer, sig, si, ucv);
		bp_unguard();
		errno = saved;
		return;
	}
	if (!t->armed || t->stopped)
		goto out;
	if (!handler_ours(SIGTRAP)) {
		stop_thread(t, r, "the program replaced the SIGTRAP handler");
		bp_disable();
		goto out;
	}
	timer_next(t);
	calls_tick(t);
	if (t->active) {
		if ((uint64_t)r[REG_EFL] & TF)
			goto out;		/* still stepping: let it finish */
		burst_end(t, PRT_F_LOST);
	}
	if (((uint64_t)r[REG_EFL] & TF) || sigismember(&uc->uc_sigmask, SIGTRAP))
		goto out;
	refresh_maps((uint64_t)r[REG_RIP]);
	/* in a trampoline only where it runs the entry's own instructions */
	if (at_syscall((uint64_t)r[REG_RIP]) || !(pc = step_pc((uint64_t)r[REG_RIP])))
		goto out;
	if (g.plan && !plan_tick(t, pc))
		goto out;
	time_canary(&t->can.c);
	t->active = 1;
	t->t0 = now_ns();
	t->n = 1;
	t->left = g.k + 64;	/* a rep-prefixed instruction traps per iteration */
	t->b.pc[0] = pc;
	save_regs(t, 0, r);
	r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] | TF);
out:
	bp_unguard();
	errno = saved;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *r = uc->uc_mcontext.gregs;
	struct prt_thread *t = &t_self;
	uint64_t pc = (uint64_t)r[REG_RIP];
	int saved = errno;

	bp_guard();
	if (si->si_code == TRAP_TRACE && t->bp_step && bp_step(t, r))
		goto out;
	if (si->si_code == SI_KERNEL && g.plan && bp_hit(t, r))
		goto out;
	if (si->si_code == TRAP_TRACE && t->active) {
		uint64_t at = step_pc(pc);	/* a trampoline's: the entry's */

		if (at && at != t->b.pc[t->n - 1]) {
			save_regs(t, t->n, r);
			t->b.pc[t->n++] = at;
		}
		t->left--;
		if (t->n >= g.k || !t->left || at_syscall(pc)) {
			r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] & ~TF);
			burst_end(t, t->n >= g.k ? 0 : PRT_F_CUT);
		}
	} else if (si->si_code == TRAP_TRACE && ((uint64_t)r[REG_EFL] & TF) &&
		   (g.user_trap.sa_handler == SIG_DFL || g.user_trap.sa_handler == SIG_IGN)) {
		/* A stray step of ours (a popf of flags pushed in a burst): the
		 * program steps nothing itself, so stop. */
		r[REG_EFL] = (greg_t)((uint64_t)r[REG_EFL] & ~TF);
	} else {
		chain(&g.user_trap, sig, si, ucv);
	}
out:
	bp_unguard();
	errno = saved;
}

/* --- interposed: every way to install a handler ---------------------------- */

/* libc's own name (the next definition after ours), looked up once. */
#define REAL(type, name) ({						\
	static type real_;						\
	if (!real_)							\
		real_ = (type)dlsym(RTLD_NEXT, name);			\
	real_; })

typedef sighandler_t (*prt_signal_fn)(int, sighandler_t);
typedef int (*prt_sig_fn)(int);
typedef int (*prt_sig2_fn)(int, int);

#define PRT_SA_RESTORER 0x04000000	/* the kernel's; not in glibc's headers */

/* sig is one of ours and our handler still holds it: once the program
 * took it over behind our back, what it asks goes to the kernel. */
static int ours(int sig)
{
	return g.on && (sig == SIGTRAP || sig == g.sig) && handler_ours(sig);
}

/* The program's view of SIGTRAP or our signal: read and replace what it
 * asked for, the kernel keeps ours. */
static int user_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction *user = sig == SIGTRAP ? &g.user_trap : &g.user_timer;

	if (old)
		*old = *user;
	if (act)
		*user = *act;
	return 0;
}

PRT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	resolve();
	if (!ours(sig))
		return g.sigaction(sig, act, old);
	return user_action(sig, act, old);
}

PRT_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/* sig set with flags and a mask of sig alone or nothing: the old handler. */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, int self_mask)
{
	struct sigaction sa, old;

	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (self_mask)
		sigaddset(&sa.sa_mask, sig);
	user_action(sig, &sa, &old);
	return old.sa_handler;
}

/* glibc's signal(): BSD semantics, SA_RESTART unless siginterrupt said
 * otherwise (for our two signals, remembered here). */
static sighandler_t bsd_set(int sig, sighandler_t h)
{
	int intr = sig == SIGTRAP ? g.intr_trap : g.intr_timer;

	return set_handler(sig, h, intr ? 0 : SA_RESTART, 1);
}

PRT_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	resolve();
	if (!ours(sig))
		return REAL(prt_signal_fn, "signal")(sig, h);
	return bsd_set(sig, h);
}

/* glibc's other names of its signal() (one function there, as here) */
PRT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) __THROW
	__attribute__((alias("signal")));
PRT_EXPORT sighandler_t ssignal(int sig, sighandler_t h) __THROW
	__attribute__((alias("signal")));

/* System V semantics: one-shot, the signal not blocked in its handler.
 * (A program built for strict ISO C gets this as its signal().) */
PRT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	resolve();
	if (!ours(sig))
		return REAL(prt_signal_fn, "sysv_signal")(sig, h);
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

/* the same function's other name in glibc */
PRT_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
	__attribute__((alias("sysv_signal")));

/* System V's sigset: SIG_HOLD blocks sig; anything else installs it with
 * no flags and unblocks sig; SIG_HOLD is returned when sig was blocked. */
PRT_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	struct sigaction old;
	sigset_t set, oset;

	resolve();
	if (!ours(sig))
		return REAL(prt_signal_fn, "sigset")(sig, h);
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (h == SIG_HOLD) {
		if (pthread_sigmask(SIG_BLOCK, &set, &oset))
			return SIG_ERR;
		user_action(sig, NULL, &old);
		return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
	}
	old.sa_handler = set_handler(sig, h, 0, 0);
	if (old.sa_handler == SIG_ERR || pthread_sigmask(SIG_UNBLOCK, &set, &oset))
		return SIG_ERR;
	return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
}

PRT_EXPORT int sigignore(int sig)
{
	resolve();
	if (!ours(sig))
		return REAL(prt_sig_fn, "sigignore")(sig);
	set_handler(sig, SIG_IGN, 0, 0);
	return 0;
}

PRT_EXPORT int siginterrupt(int sig, int flag)
{
	struct sigaction *user = sig == SIGTRAP ? &g.user_trap : &g.user_timer;

	resolve();
	if (!ours(sig))
		return REAL(prt_sig2_fn, "siginterrupt")(sig, flag);
	*(sig == SIGTRAP ? &g.intr_trap : &g.intr_timer) = !!flag;
	if (flag)
		user->sa_flags &= ~SA_RESTART;
	else
		user->sa_flags |= SA_RESTART;
	return 0;
}

/* 4.2BSD's sigvec, a compatibility symbol of glibc (old binaries only). */
struct prt_sigvec {
	sighandler_t sv_handler;
	int sv_mask;		/* signals 1..32, bit sig - 1 */
	int sv_flags;
};
#define PRT_SV_ONSTACK 1
#define PRT_SV_INTERRUPT 2
#define PRT_SV_RESETHAND 4

typedef int (*prt_sigvec_fn)(int, const struct prt_sigvec *, struct prt_sigvec *);

PRT_EXPORT int sigvec(int sig, const struct prt_sigvec *vec, struct prt_sigvec *ovec)
{
	struct sigaction sa, old;

	resolve();
	if (!ours(sig)) {
		static prt_sigvec_fn real;

		if (!real)
			real = (prt_sigvec_fn)dlvsym(RTLD_NEXT, "sigvec", "GLIBC_2.2.5");
		if (!real) {
			errno = ENOSYS;
			return -1;
		}
		return real(sig, vec, ovec);
	}
	if (vec) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = vec->sv_handler;
		sigemptyset(&sa.sa_mask);
		for (int s = 1; s <= 32; s++)
			if ((unsigned)vec->sv_mask & (1u << (s - 1)))
				sigaddset(&sa.sa_mask, s);
		sa.sa_flags = (vec->sv_flags & PRT_SV_ONSTACK ? SA_ONSTACK : 0) |
			      (vec->sv_flags & PRT_SV_INTERRUPT ? 0 : SA_RESTART) |
			      (vec->sv_flags & PRT_SV_RESETHAND ? SA_RESETHAND : 0);
	}
	user_action(sig, vec ? &sa : NULL, &old);
	if (ovec) {
		ovec->sv_handler = old.sa_handler;
		ovec->sv_mask = 0;
		for (int s = 1; s <= 32; s++)
			if (sigismember(&old.sa_mask, s) == 1)
				ovec->sv_mask |= (int)(1u << (s - 1));
		ovec->sv_flags = (old.sa_flags & SA_ONSTACK ? PRT_SV_ONSTACK : 0) |
				 (old.sa_flags & SA_RESTART ? 0 : PRT_SV_INTERRUPT) |
				 (old.sa_flags & SA_RESETHAND ? PRT_SV_RESETHAND : 0);
	}
	return 0;
}

/* The kernel's struct sigaction (x86-64), for rt_sigaction by syscall(). */
struct prt_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static long raw_sigaction(int sig, const struct prt_ksigaction *ka, struct prt_ksigaction *ko,
			  unsigned long setsize)
{
	struct sigaction sa, old;

	if (setsize != sizeof(ka->mask)) {
		errno = EINVAL;
		return -1;
	}
	if (ka) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = (sighandler_t)ka->handler;
		sa.sa_flags = (int)ka->flags;
		sa.sa_restorer = (void (*)(void))ka->restorer;
		memcpy(&sa.sa_mask, &ka->mask, sizeof(ka->mask));
	}
	user_action(sig, ka ? &sa : NULL, &old);
	if (ko) {
		ko->handler = (void *)old.sa_handler;
		ko->flags = (unsigned long)(unsigned)old.sa_flags;
		ko->restorer = (void *)old.sa_restorer;
		memcpy(&ko->mask, &old.sa_mask, sizeof(ko->mask));
	}
	return 0;
}

/* --- interposed: being traced ---------------------------------------------- */

/* The calling thread is now traced by our parent (dcpi record, or whoever
 * it is): each of our signals and steps would be a stop for its tracer. */
static void traced_now(void)
{
	if (!g.on)
		return;
	stop_thread(&t_self, NULL, "the program asked to be traced (PTRACE_TRACEME)");
	bp_disable();
}

typedef long (*prt_ptrace_fn)(enum __ptrace_request, pid_t, void *, void *);

PRT_EXPORT long ptrace(enum __ptrace_request req, ...)
{
	prt_ptrace_fn real = REAL(prt_ptrace_fn, "ptrace");
	va_list ap;
	pid_t pid;
	void *addr, *data;
	long rc;

	va_start(ap, req);
	pid = va_arg(ap, pid_t);
	addr = va_arg(ap, void *);
	data = va_arg(ap, void *);
	va_end(ap);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	rc = real(req, pid, addr, data);
	if (req == PTRACE_TRACEME && !rc)
		traced_now();
	return rc;
}

/*
 * glibc's syscall(): rt_sigaction of our signals and PTRACE_TRACEME are
 * seen here too (an inline system call is not: docs/paths.md).  The entry
 * is in assembly so that any number above SYS_ptrace (101) costs a
 * compare and two jumps on the way to libc's, with the arguments
 * untouched: a burst stepping from one system call to the next sees three
 * more instructions (tests/workloads/pathloop.c's syscalls mode is tuned
 * to within a few of K).  Lower numbers, ours among them, take the C
 * path.
 */
prt_syscall_fn prt_real_syscall = prt_syscall_slow;	/* libc's once resolve() ran */

#define PRT_STR2(x) #x
#define PRT_STR(x) PRT_STR2(x)
#ifdef __CET__		/* built with -fcf-protection: indirect branch tracking */
#define PRT_ENDBR "	endbr64\n"
#else
#define PRT_ENDBR ""
#endif
__asm__(".text\n"
	".globl syscall\n"
	".type syscall,@function\n"
	"syscall:\n"
	PRT_ENDBR
	"	cmp $" PRT_STR(SYS_ptrace) ", %rdi\n"
	"	jbe prt_syscall_slow\n"
	"	jmp *prt_real_syscall(%rip)\n"
	".size syscall, .-syscall\n");

long prt_syscall_slow(long n, ...)
{
	prt_syscall_fn real;
	long a[6], rc;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	resolve();
	real = prt_real_syscall;
	if (n == SYS_rt_sigaction && ours((int)a[0]))
		return raw_sigaction((int)a[0], (const struct prt_ksigaction *)a[1],
				     (struct prt_ksigaction *)a[2], (unsigned long)a[3]);
	if (real == prt_syscall_slow) {
		errno = ENOSYS;
		return -1;
	}
	rc = real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (n == SYS_ptrace && a[0] == PTRACE_TRACEME && !rc)
		traced_now();
	return rc;
}

/*
 * dlopen: a library whose calls a plan counts must be patched before its
 * code runs (count_place), so the maps are read, patching allowed, as soon
 * as libc's dlopen returns.  glibc looks a bare name up along its caller's
 * RUNPATH and RPATH and expands $ORIGIN from the caller's file: only a name
 * with a '/' and no '$' is opened from here (the caller does not matter
 * then: this preloaded library is in the base namespace, as is every caller
 * that finds this definition); any other, and every dlopen without a plan
 * that counts, jumps to libc's with the caller's return address untouched
 * (a plan's entries in such a library are not counted: a note).
 */
typedef void *(*prt_dlopen_fn)(const char *, int);
prt_dlopen_fn prt_real_dlopen;

/* 1 when the dlopen of file goes through prt_dlopen_wrapped. */
int prt_dlopen_wrap(const char *file);
int prt_dlopen_wrap(const char *file)
{
	if (!prt_real_dlopen)
		prt_real_dlopen = (prt_dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	return !prt_real_dlopen ||
	       (g.on && g.ncount && file && strchr(file, '/') && !strchr(file, '$'));
}

/* Does a counted entry wait for one of the objects from h's on (what its
 * dlopen loaded comes after it in the list: its dependencies too)?  Then
 * the maps are worth reading (a program may dlopen hundreds of objects);
 * by file name, so 1 at worst for nothing. */
static int count_waits(void *h)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm))
		return 1;
	for (; lm; lm = lm->l_next) {
		const char *b = strrchr(lm->l_name, '/');

		b = b ? b + 1 : lm->l_name;
		for (size_t i = 0; i < g.nmarks && *b; i++) {
			const char *p = g.mpaths + g.marks[i].path, *mb = strrchr(p, '/');

			if ((g.marks[i].flags & PRT_PLAN_COUNT) && g.marks[i].count == COUNT_WAIT &&
			    !strcmp(mb ? mb + 1 : p, b))
				return 1;
		}
	}
	return 0;
}

void *prt_dlopen_wrapped(const char *file, int mode);
void *prt_dlopen_wrapped(const char *file, int mode)
{
	void *h;

	if (!prt_real_dlopen)
		return NULL;
	__atomic_add_fetch(&g.dlopening, 1, __ATOMIC_RELAXED);
	h = prt_real_dlopen(file, mode);
	__atomic_sub_fetch(&g.dlopening, 1, __ATOMIC_RELAXED);
	/* (a library opened inside this one's constructors was read by its own
	 * dlopen's wrapper: no frame returns into a displaced instruction) */
	if (h && count_waits(h) && lock_maps()) {
		g.patching = 1;
		maps_snapshot();
		g.patching = 0;
		unlock_maps();
	}
	return h;
}

__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen,@function\n"
	"dlopen:\n"
	PRT_ENDBR
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n"
	"	call prt_dlopen_wrap\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	test %eax, %eax\n"
	"	jnz prt_dlopen_wrapped\n"
	"	jmp *prt_real_dlopen(%rip)\n"
	".size dlopen, .-dlopen\n");

/* --- interposed: threads, fork ----------------------------------------------- */

struct prt_start {
	void *(*fn)(void *);
	void *arg;
};

static void thread_gone(void *v)
{
	struct prt_thread *t = &t_self;

	(void)v;
	calls_write(t);
	__atomic_sub_fetch(&g.threads, 1, __ATOMIC_RELAXED);
	if (t->armed) {
		timer_delete(t->timer);
		t->armed = 0;
	}
	if (t->regs) {
		munmap(t->regs, PRT_KMAX * sizeof(*t->regs));
		t->regs = NULL;
	}
}

/* A thread created with every signal blocked (xz's mythread_create blocks
 * them all around pthread_create) would never take our timer signal, and
 * with SIGTRAP blocked no burst may start in it: when it blocks our own
 * realtime signal, which no program knows, the block was a blanket one, and
 * the thread gets SIGTRAP and ours back; every other signal stays blocked. */
static void unblock_ours(void)
{
	sigset_t cur, set;

	if (pthread_sigmask(SIG_BLOCK, NULL, &cur) || sigismember(&cur, g.sig) != 1)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sigaddset(&set, g.sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void *thread_start(void *v)
{
	struct prt_start s = *(struct prt_start *)v;

	free(v);
	unblock_ours();
	calls_start(&t_self);
	arm_thread(&t_self);
	__atomic_add_fetch(&g.threads, 1, __ATOMIC_RELAXED);	/* no breakpoints now */
	pthread_setspecific(g.key, &g);
	return s.fn(s.arg);
}

PRT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
			      void *(*fn)(void *), void *arg)
{
	struct prt_start *s;
	int rc;

	resolve();
	if (!g.on || !(s = malloc(sizeof(*s))))
		return g.pthread_create(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = g.pthread_create(th, attr, thread_start, s);
	if (rc)
		free(s);
	return rc;
}

static void on_fork_child(void)
{
	struct prt_thread *t = &t_self;

	t->active = 0;
	t->n = 0;
	t->armed = 0;		/* POSIX timers are not inherited */
	t->stopped = 0;		/* nor being traced; a replaced handler is seen again */
	g.threads = 0;		/* the child has this thread alone */
	calls_start(t);		/* the parent counts the calls before the fork */
	if (g.fd >= 0)
		close(g.fd);
	spool_open();
	g.maps_lock = 0;
	maps_snapshot();
	arm_thread(t);
}

/* --- heap blocks for the data profiles (collect/datarec.c) ---------------- */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* One record in "<pid>.heap", opened again after a fork. */
static void heap_record(uint32_t type, const void *p, size_t size, const void *caller,
			uint32_t weight)
{
	struct {
		struct prt_rec h;
		struct prt_alloc a;
	} r;
	int pid = (int)getpid(), fd = __atomic_load_n(&g.heap_fd, __ATOMIC_ACQUIRE);

	if (g.heap_pid != pid || fd < 0) {
		char path[PATH_MAX + 64], *q = path + strlen(g.dir);

		memcpy(path, g.dir, strlen(g.dir));
		*q++ = '/';
		fmt_u(&q, (unsigned long)pid);
		memcpy(q, ".heap", 6);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0)
			return;
		g.heap_pid = pid;
		__atomic_store_n(&g.heap_fd, fd, __ATOMIC_RELEASE);
	}
	fill_header(&r.h, type, sizeof(r), weight > 1 ? weight : 0);
	r.a.addr = (uint64_t)(uintptr_t)p;
	r.a.size = size;
	r.a.caller = (uint64_t)(uintptr_t)caller;
	write_all(fd, &r, sizeof(r));
}

/*
 * Blocks under heap_min are recorded too, by call site: a site's small
 * long-lived object (a context struct, a state) is often among the hottest
 * data, and a size threshold alone lost it (docs/data.md, "Accuracy"); a
 * site's later small blocks (lbzip2's 1 KB sort buckets, one per block
 * compressed) were anonymous when only its first was.  A site's first
 * HEAP_SITE_ALL small blocks are each recorded; of its blocks i in
 * [HEAP_SITE_ALL 2^k, HEAP_SITE_ALL 2^(k+1)) one in 2^(k+1), its record
 * carrying that weight in the header's flags (collect/datarec.c counts its
 * accesses that many times): HEAP_SITE_ALL / 2 records per doubling, so a
 * busy site's records grow with the logarithm of its mallocs and the cost
 * stays bounded (bench/data/heap_small.c measures it).  heap_site holds
 * the call sites seen (full: no more small blocks) and heap_count their
 * small blocks; heap_small the recorded small blocks live, one slot per
 * address hash (taken: that block is not recorded), so a free looks at one
 * slot.
 */
#define HEAP_SITES 4096			/* a power of two */
#define HEAP_SMALL 16384		/* a power of two */
#define HEAP_SITE_ALL 64
#define HEAP_STRIDE_MAX 24		/* weights up to 2^24; later blocks not recorded */
static uintptr_t heap_site[HEAP_SITES];
static unsigned long heap_count[HEAP_SITES];
static uintptr_t heap_small[HEAP_SMALL];

static size_t heap_hash(uintptr_t x, size_t cap)
{
	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(x >> 29) & (cap - 1);
}

/* The slot of site v in heap_site, claimed when new; -1 when full. */
static long heap_site_slot(uintptr_t v)
{
	size_t s = heap_hash(v, HEAP_SITES);

	for (size_t n = 0; n < HEAP_SITES; n++, s = (s + 1) & (HEAP_SITES - 1)) {
		uintptr_t cur = __atomic_load_n(&heap_site[s], __ATOMIC_RELAXED);

		if (cur == v)
			return (long)s;
		if (!cur && (__atomic_compare_exchange_n(&heap_site[s], &cur, v, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED) ||
			     cur == v))
			return (long)s;
	}
	return -1;
}

/* A small block p from caller: its weight when recorded (the blocks of
 * its site it stands for), else 0. */
static uint32_t heap_small_weight(const void *p, const void *caller)
{
	long s = heap_site_slot((uintptr_t)caller);
	unsigned long i;
	uintptr_t zero = 0;
	uint32_t w = 1;

	if (s < 0)
		return 0;
	i = __atomic_fetch_add(&heap_count[s], 1, __ATOMIC_RELAXED);
	if (i >= HEAP_SITE_ALL) {	/* one in 2^(k+1): i / HEAP_SITE_ALL in [2^k, 2^(k+1)) */
		unsigned k = 63 - (unsigned)__builtin_clzl(i / HEAP_SITE_ALL);

		if (k >= HEAP_STRIDE_MAX || (i & ((2UL << k) - 1)))
			return 0;
		w = 2u << k;
	}
	if (!__atomic_compare_exchange_n(&heap_small[heap_hash((uintptr_t)p, HEAP_SMALL)], &zero,
					 (uintptr_t)p, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0;
	return w;
}

/* Was p a recorded small block?  It is forgotten. */
static int heap_small_freed(const void *p)
{
	uintptr_t *slot = &heap_small[heap_hash((uintptr_t)p, HEAP_SMALL)], cur = (uintptr_t)p;

	return __atomic_load_n(slot, __ATOMIC_RELAXED) == cur &&
	       __atomic_compare_exchange_n(slot, &cur, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void heap_freed(void *p)
{
	if (p && g.heap_min && (heap_small_freed(p) || malloc_usable_size(p) >= g.heap_min))
		heap_record(PRT_FREE, p, 0, NULL, 0);
}

/* Is the block p of n bytes from caller recorded?  Its weight, else 0. */
static uint32_t heap_keep(const void *p, size_t n, const void *caller)
{
	if (!p || !g.heap_min)
		return 0;
	return n >= g.heap_min ? 1 : heap_small_weight(p, caller);
}

PRT_EXPORT void *malloc(size_t n)
{
	void *p = __libc_malloc(n);
	const void *caller = __builtin_return_address(0);
	uint32_t w = heap_keep(p, n, caller);

	if (w)
		heap_record(PRT_ALLOC, p, n, caller, w);
	return p;
}

PRT_EXPORT void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	const void *caller = __builtin_return_address(0);
	uint32_t w = heap_keep(p, n * size, caller);

	if (w)
		heap_record(PRT_ALLOC, p, n * size, caller, w);
	return p;
}

PRT_EXPORT void *realloc(void *old, size_t n)
{
	const void *caller = __builtin_return_address(0);
	uint32_t w;
	void *p;

	heap_freed(old);
	p = __libc_realloc(old, n);
	if ((w = heap_keep(p, n, caller)))
		heap_record(PRT_ALLOC, p, n, caller, w);
	return p;
}

PRT_EXPORT void free(void *p)
{
	heap_freed(p);
	__libc_free(p);
}

/* The kernel moved n bytes at buf (collect/pathrt_io.c): a PRT_KIO record,
 * unless heap blocks are not recorded or fd is one of ours. */
void prt_heap_io(const void *buf, size_t n, int fd, int out)
{
	if (g.heap_min && fd != g.fd && fd != __atomic_load_n(&g.heap_fd, __ATOMIC_RELAXED))
		heap_record(PRT_KIO, buf, n, (const void *)(uintptr_t)(out ? PRT_KIO_OUT : 0), 0);
}

static void heap_start(void)
{
	const char *s = getenv(PRT_ENV_HEAP);

	g.heap_fd = -1;
	if (g.values)
		g.heap_min = s ? strtoull(s, NULL, 10) : 4096;
}

/* --- start --------------------------------------------------------------- */

static int parse_settings(const char *s)
{
	char *end;
	unsigned long rate, k;

	errno = 0;
	rate = strtoul(s, &end, 10);
	if (errno || end == s || *end != ':' || !rate || rate > 100000)
		return -1;
	k = strtoul(end + 1, &end, 10);
	if (errno || *end || k < 2 || k > PRT_KMAX)
		return -1;
	g.period_ns = 1000000000ULL / rate;
	g.k = (unsigned)k;
	return 0;
}

static int install(int sig, void (*fn)(int, siginfo_t *, void *), int block,
		   struct sigaction *user)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, block);
	return g.sigaction(sig, &sa, user);
}

/* The pid tracing this process (TracerPid of /proc/self/status), 0: none. */
static long tracer_pid(void)
{
	char buf[4096], *p;
	ssize_t n = 0, r;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (n < (ssize_t)sizeof(buf) - 1 &&
	       ((r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0 ||
		(r < 0 && errno == EINTR)))
		n += r > 0 ? r : 0;
	close(fd);
	buf[n] = '\0';
	p = strstr(buf, "\nTracerPid:");
	return p ? strtol(p + 12, NULL, 10) : 0;
}

/* Started traced (a debugger's, or exec'd after PTRACE_TRACEME): every
 * signal of ours would stop the process for its tracer, and our steps
 * would look like its own.  The runtime stays out of the way. */
static int started_traced(void)
{
	char why[64], *p = why;
	long tp = tracer_pid();

	if (tp <= 0)
		return 0;
	memcpy(p, "it is traced by process ", 24);
	p += 24;
	fmt_u(&p, (unsigned long)tp);
	*p = '\0';
	note("path samples off in process", (long)getpid(), why);
	return 1;
}

__attribute__((constructor)) static void prt_start(void)
{
	const char *dir = getenv(PRT_ENV_DIR), *rate = getenv(PRT_ENV_RATE);
	const char *sig = getenv(PRT_ENV_SIGNAL), *values = getenv(PRT_ENV_VALUES);

	g.fd = -1;
	resolve();
	if (!dir || !rate || !g.sigaction || !g.pthread_create ||
	    strlen(dir) >= sizeof(g.dir) || parse_settings(rate))
		return;
	memcpy(g.dir, dir, strlen(dir) + 1);
	g.values = values && (!strcmp(values, "1") || !strcmp(values, "2")) ? values[0] - '0' : 0;
	g.sig = sig ? atoi(sig) : SIGRTMAX - 3;
	if (g.values && getenv(PRT_ENV_PLAN)) {
		plan_load(getenv(PRT_ENV_PLAN));
		g.burst_ns = g.period_ns;
		if (g.plan && g.period_ns >= PRT_PLAN_TICKS)	/* PRT_PLAN_TICKS a period */
			g.period_ns /= PRT_PLAN_TICKS;
	}
	if (g.sig < SIGRTMIN || g.sig > SIGRTMAX || started_traced())
		return;
	spool_open();
	if (g.fd < 0)
		return;
	if (pthread_key_create(&g.key, thread_gone) ||
	    install(SIGTRAP, on_trap, g.sig, &g.user_trap) ||
	    install(g.sig, on_timer, SIGTRAP, &g.user_timer))
		return;
	calls_start(&t_self);
	lock_maps();
	g.patching = g.ncount > 0;	/* no code of the program ran yet */
	maps_snapshot();
	g.patching = 0;
	unlock_maps();
	pthread_atfork(NULL, NULL, on_fork_child);
	heap_start();
	g.on = 1;
	arm_thread(&t_self);
}

/* The exiting thread's counts (other threads' since their last record are
 * lost: docs/paths.md). */
__attribute__((destructor)) static void prt_stop(void)
{
	if (g.on)
		calls_write(&t_self);
}
