/*
 * culprit/sandbox/sandbox.c - time bodies of machine code on this machine, as BHive does (Chen,
 * Brahmakshatriya, Amarasinghe, Carbin, "BHive: A Benchmark Suite and Measurement
 * Framework for Validating x86-64 Basic Block Performance Models", IISWC 2019);
 * the contract is include/dcpi/sandbox.h, the method bench/bhive/README.md.
 *
 * The caller's process only checks bodies (sbx_check) and reads results: all
 * timing runs in a forked child, which maps its region, runs the bodies one
 * after the other and writes one struct sbx_msg per body into a pipe.  A body
 * that kills the child (or runs past the parent's watchdog) is reported and a
 * new child takes the rest of the batch.
 *
 * In the child, each body is copied U times into an executable page, inside a
 * counted loop whose counter lives in memory (every general-purpose register
 * belongs to the body):
 *
 *	loop:	body x U
 *		subq $1, counter(%rip)
 *		jnz loop
 *		jmp *exit(%rip)
 *
 * sbx_enter (below, in assembly) saves the callee-saved registers and rsp, sets
 * MXCSR to flush denormals (DAZ|FTZ), fills the vector registers with 1.0f
 * pairs and the mask registers with ones, cleans the upper halves, points every
 * general-purpose register, rsp included, at X (the middle of a 16 MB region)
 * and jumps to the loop; the loop jumps back to sbx_exit.  The region is filled
 * with the 8-byte value X, so a loaded pointer is again X.  A fault on an
 * unmapped page outside the region maps that page too (its own physical page)
 * and the run starts again; other faults (non-canonical address, write to the
 * code, #UD) end the body.  A divide that faults with rdx = X is retried once
 * with rdx = 0, a general protection fault once laid out again (sbx_realign).
 *
 * Time: rdtsc between lfences around one run; per repetition the lowest of
 * three runs with U and with 2U copies, and
 *	cycles/iter = (T(2U) - T(U)) / (N U) x cycles_per_tsc
 * which cancels the loop overhead, the entry and the timer.  cycles_per_tsc
 * comes from the same measurement of a chain of dependent `add $1,%rax` (one
 * cycle each) before and after the repetition.  The figure is the median over
 * the repetitions, with the lower quartile and the minimum-based figure beside.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/safefile.h"
#include "dcpi/sandbox.h"

#define SBX_HIDDEN __attribute__((visibility("hidden")))

void sbx_opts_default(struct sbx_opts *o)
{
	o->reps = 15;
	o->timeout_ms = 2000;
	o->cpu = -1;
	o->iters = 5000;
	o->flags = 0;
}

const char *sbx_status_name(enum sbx_status s)
{
	switch (s) {
	case SBX_OK: return "ok";
	case SBX_REFUSED: return "refused";
	case SBX_FAULT: return "fault";
	case SBX_TIMEOUT: return "timeout";
	case SBX_UNSTABLE: return "unstable";
	case SBX_TOO_LARGE: return "too large";
	case SBX_ERROR: return "error";
	}
	return "?";
}

/* --- sbx_check ------------------------------------------------------------ */

/* Mnemonics (AT&T, as capstone prints them, size suffix dropped by prefix
 * match) that a body may not contain, and why. */
static const struct {
	const char *prefix;
	const char *why;
} sbx_refused[] = {
	{ "syscall", "syscall" }, { "sysenter", "syscall" }, { "sysexit", "privileged" },
	{ "sysret", "privileged" }, { "int", "interrupt" }, { "iret", "leaves the body" },
	{ "cpuid", "serialising" }, { "rdtsc", "reads the clock" },
	{ "rdpmc", "reads a counter" }, { "serialize", "serialising" },
	{ "hlt", "privileged" }, { "cli", "privileged" }, { "sti", "privileged" },
	{ "in", "privileged" }, { "out", "privileged" }, { "lgdt", "privileged" },
	{ "lidt", "privileged" }, { "lldt", "privileged" }, { "ltr", "privileged" },
	{ "lmsw", "privileged" }, { "clts", "privileged" }, { "invd", "privileged" },
	{ "wbinvd", "privileged" }, { "invlpg", "privileged" }, { "invpcid", "privileged" },
	{ "rdmsr", "privileged" }, { "wrmsr", "privileged" }, { "swapgs", "privileged" },
	{ "xsetbv", "privileged" }, { "rsm", "privileged" }, { "ins", "privileged" },
	{ "outs", "privileged" }, { "lfs", "loads a segment" }, { "lgs", "loads a segment" },
	{ "lss", "loads a segment" }, { "mwaitx", "waits" }, { "monitorx", "waits" },
	{ "vmcall", "virtualisation" }, { "vmmcall", "virtualisation" },
	{ "vmfunc", "virtualisation" }, { "vmlaunch", "virtualisation" },
	{ "vmresume", "virtualisation" }, { "vmxon", "virtualisation" },
	{ "vmxoff", "virtualisation" }, { "vmread", "virtualisation" },
	{ "vmwrite", "virtualisation" }, { "vmptrld", "virtualisation" },
	{ "vmptrst", "virtualisation" }, { "vmclear", "virtualisation" },
	{ "vmrun", "virtualisation" }, { "vmload", "virtualisation" },
	{ "vmsave", "virtualisation" },
	{ "getsec", "privileged" }, { "encl", "enclave" }, { "monitor", "waits" },
	{ "mwait", "waits" }, { "umonitor", "waits" }, { "umwait", "waits" },
	{ "tpause", "waits" }, { "xbegin", "transaction" }, { "xend", "transaction" },
	{ "xabort", "transaction" }, { "ud", "traps" }, { "wrfsbase", "writes fs base" },
	{ "wrgsbase", "writes gs base" }, { "wrpkru", "writes protection keys" },
	{ "xrstor", "restores state" }, { "fxrstor", "restores state" },
	{ "rep", "rep string op (count from the region's address)" },
	{ "clui", "privileged" }, { "stui", "privileged" }, { "uiret", "privileged" },
	{ "senduipi", "privileged" }, { "hreset", "privileged" },
};

/* Does mnemonic m start with p, followed by nothing, a size suffix or more
 * letters where p names a family ("ud", "rep", "int", "encl")? */
static int sbx_mnemonic_is(const char *m, const char *p)
{
	size_t n = strlen(p);

	if (strncmp(m, p, n))
		return 0;
	if (!m[n] || m[n] == ' ')
		return 1;
	if (!strcmp(p, "ud") || !strcmp(p, "rep") ||
	    !strcmp(p, "encl") || !strcmp(p, "iret") || !strcmp(p, "int") ||
	    !strcmp(p, "xrstor") || !strcmp(p, "fxrstor") || !strcmp(p, "rdtsc"))
		return 1;
	/* size suffixes of AT&T mnemonics: inb, outl, sysretq, lgdtq */
	return m[n + 1] == '\0' && strchr("bwlq", m[n]) != NULL;
}

static int sbx_refuse(char *detail, size_t dlen, const char *why, const char *text, size_t off)
{
	if (detail && dlen)
		snprintf(detail, dlen, "%s at +%zu (%s)", why, off, text);
	return SBX_REFUSED;
}

/* sbx_refuse for instruction in, its text made only when it is asked for */
static int sbx_refuse_insn(char *detail, size_t dlen, const char *why,
			   const struct cfg_insn *in, size_t off)
{
	char text[CFG_TEXT_MAX];

	return sbx_refuse(detail, dlen, why,
			  detail && dlen ? cfg_insn_text(in, text, sizeof(text)) : "", off);
}

/* A write to a segment register (mov %ax,%fs; pop %gs) changes the child's TLS. */
static int sbx_writes_segment(const struct cfg_insn *in)
{
	char t[CFG_TEXT_MAX];
	const char *comma;

	if (strncmp(in->mnemonic, "pop", 3) && strncmp(in->mnemonic, "mov", 3))
		return 0;
	cfg_insn_text(in, t, sizeof(t));
	comma = strrchr(t, ',');

	if (!strncmp(in->mnemonic, "pop", 3) && strstr(t, "%fs"))
		return 1;
	if (!strncmp(in->mnemonic, "pop", 3) && strstr(t, "%gs"))
		return 1;
	if (strncmp(in->mnemonic, "mov", 3) || !comma)
		return 0;
	comma++;
	while (*comma == ' ')
		comma++;
	return !strcmp(comma, "%fs") || !strcmp(comma, "%gs") || !strcmp(comma, "%ss") ||
	       !strcmp(comma, "%ds") || !strcmp(comma, "%es") || !strncmp(comma, "%cr", 3) ||
	       !strncmp(comma, "%dr", 3);
}

/* Is off the start of one of in[0..n) or the end of the body? */
static int sbx_boundary(const struct cfg_insn *in, size_t n, uint64_t off, size_t len)
{
	size_t lo = 0, hi = n;

	if (off == len)
		return 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (in[mid].addr < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && in[lo].addr == off;
}

static int sbx_check_insn(const struct cfg_insn *v, size_t n, size_t k, size_t len,
			  unsigned flags, char *detail, size_t dlen)
{
	const struct cfg_insn *in = &v[k];
	size_t off = (size_t)in->addr;

	if (in->flags & (CFG_I_CALL | CFG_I_RET))
		return sbx_refuse_insn(detail, dlen, "leaves the body", in, off);
	if (in->flags & CFG_I_BRANCH) {
		/* SBX_F_BRANCHES: a direct forward branch to an instruction of the
		 * body or to its end stays inside it and cannot loop */
		if (!(flags & SBX_F_BRANCHES) || (in->flags & CFG_I_INDIRECT) ||
		    in->target <= in->addr || in->target > len ||
		    !sbx_boundary(v, n, in->target, len))
			return sbx_refuse_insn(detail, dlen, "leaves the body", in, off);
	}
	if (in->flags & CFG_I_SYSCALL)
		return sbx_refuse_insn(detail, dlen, "syscall", in, off);
	if (in->flags & CFG_I_TRAP)
		return sbx_refuse_insn(detail, dlen, "traps", in, off);
	for (size_t i = 0; i < sizeof(sbx_refused) / sizeof(sbx_refused[0]); i++)
		if (sbx_mnemonic_is(in->mnemonic, sbx_refused[i].prefix))
			return sbx_refuse_insn(detail, dlen, sbx_refused[i].why, in, off);
	if (sbx_writes_segment(in))
		return sbx_refuse_insn(detail, dlen, "writes a system register", in, off);
	return 0;
}

int sbx_check_flags(const uint8_t *body, size_t len, unsigned flags, char *detail,
		    size_t dlen)
{
	struct cfg_insn *v = NULL;
	size_t n = 0, end = 0;
	int rc;

	if (detail && dlen)
		detail[0] = '\0';
	if (!len)
		return sbx_refuse(detail, dlen, "empty body", "", 0);
	rc = cfg_decode(body, len, 0, &v, &n, NULL);
	if (rc == -ENOMEM) {
		free(v);
		return sbx_refuse(detail, dlen, "out of memory decoding", "", 0);
	}
	for (size_t k = 0; k < n; k++) {
		if (v[k].flags & CFG_I_INVALID)
			break;
		rc = sbx_check_insn(v, n, k, len, flags, detail, dlen);
		if (rc) {
			free(v);
			return rc;
		}
		end = (size_t)v[k].addr + v[k].size;
	}
	free(v);
	if (end != len)
		return sbx_refuse(detail, dlen, "undecodable", "?", end);
	return 0;
}

int sbx_check(const uint8_t *body, size_t len, char *detail, size_t dlen)
{
	return sbx_check_flags(body, len, 0, detail, dlen);
}

int sbx_usable(char *why, size_t len)
{
#if defined(__x86_64__)
	const char *pre = getenv("LD_PRELOAD");
	FILE *f;
	char line[512];
	int vg = pre && strstr(pre, "vgpreload");

	if (!vg && (f = fopen("/proc/self/maps", "r"))) {
		while (!vg && fgets(line, sizeof(line), f))
			vg = strstr(line, "vgpreload") != NULL;
		fclose(f);
	}
	if (vg) {
		if (why && len)
			snprintf(why, len, "running under valgrind (its CPU is not this one)");
		return 0;
	}
	return 1;
#else
	if (why && len)
		snprintf(why, len, "not an x86-64 build");
	return 0;
#endif
}

#if defined(__x86_64__)
#include <cpuid.h>

/* --- the child: state shared with the assembly ----------------------------- */

#define SBX_X		0x40000000ull	/* register value; low half reads as 2.0f */
#define SBX_REGION	(16ull << 20)
#define SBX_CODE_MAX	(1u << 20)
#define SBX_MAX_PAGES	512			/* pages mapped on demand per body */
#define SBX_CODE_BUDGET	2048			/* bytes of unrolled body at U */
#define SBX_WIND_BYTES	16384			/* SBX_F_WIND: the most 2U bodies walk */
#define SBX_MAX_REPS	256

SBX_HIDDEN uint64_t sbx_gpr[16];	/* rax rcx rdx rbx rsp rbp rsi rdi r8 .. r15 */
SBX_HIDDEN uint64_t sbx_saved_rsp;
SBX_HIDDEN uint64_t sbx_target;
SBX_HIDDEN uint64_t sbx_vec[8] __attribute__((aligned(64)));
SBX_HIDDEN uint32_t sbx_mxcsr = 0x9fc0, sbx_mxcsr_default = 0x1f80;
SBX_HIDDEN int sbx_veclevel;		/* 0 SSE, 1 AVX, 2 AVX-512 F+BW */

void sbx_enter(void) SBX_HIDDEN;
void sbx_exit(void) SBX_HIDDEN;

__asm__(
	".text\n"
	".globl sbx_enter\n"
	".hidden sbx_enter\n"
	".type sbx_enter, @function\n"
	"sbx_enter:\n"
	"	push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"	mov %rsp, sbx_saved_rsp(%rip)\n"
	"	fninit\n"
	"	cld\n"
	"	ldmxcsr sbx_mxcsr(%rip)\n"
	"	cmpl $1, sbx_veclevel(%rip)\n"
	"	jb 3f\n"
	"	je 1f\n"
	"	vmovdqa64 sbx_vec(%rip), %zmm0\n"
	"	.irp r,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23\n"
	"	vmovdqa64 %zmm0, %zmm\\r\n"
	"	.endr\n"
	"	.irp r,24,25,26,27,28,29,30,31\n"
	"	vmovdqa64 %zmm0, %zmm\\r\n"
	"	.endr\n"
	"	kxnorq %k0, %k0, %k1\n"
	"	.irp r,2,3,4,5,6,7\n"
	"	kmovq %k1, %k\\r\n"
	"	.endr\n"
	"	jmp 2f\n"
	"1:	vmovdqa sbx_vec(%rip), %ymm0\n"
	"	.irp r,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	vmovdqa %ymm0, %ymm\\r\n"
	"	.endr\n"
	/* clean upper halves, as in real programs: with dirty ones every legacy
	 * SSE write merges and runs at half throughput (docs/models.md) */
	"2:	vzeroupper\n"
	"	jmp 4f\n"
	"3:	movdqa sbx_vec(%rip), %xmm0\n"
	"	.irp r,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	movdqa %xmm0, %xmm\\r\n"
	"	.endr\n"
	"4:	mov sbx_gpr+0(%rip), %rax\n"
	"	mov sbx_gpr+8(%rip), %rcx\n"
	"	mov sbx_gpr+16(%rip), %rdx\n"
	"	mov sbx_gpr+24(%rip), %rbx\n"
	"	mov sbx_gpr+40(%rip), %rbp\n"
	"	mov sbx_gpr+48(%rip), %rsi\n"
	"	mov sbx_gpr+56(%rip), %rdi\n"
	"	mov sbx_gpr+64(%rip), %r8\n"
	"	mov sbx_gpr+72(%rip), %r9\n"
	"	mov sbx_gpr+80(%rip), %r10\n"
	"	mov sbx_gpr+88(%rip), %r11\n"
	"	mov sbx_gpr+96(%rip), %r12\n"
	"	mov sbx_gpr+104(%rip), %r13\n"
	"	mov sbx_gpr+112(%rip), %r14\n"
	"	mov sbx_gpr+120(%rip), %r15\n"
	"	mov sbx_gpr+32(%rip), %rsp\n"
	"	jmp *sbx_target(%rip)\n"
	".globl sbx_exit\n"
	".hidden sbx_exit\n"
	"sbx_exit:\n"
	"	mov sbx_saved_rsp(%rip), %rsp\n"
	"	ldmxcsr sbx_mxcsr_default(%rip)\n"
	"	cmpl $0, sbx_veclevel(%rip)\n"
	"	je 5f\n"
	"	vzeroupper\n"
	"5:	fninit\n"
	"	pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"	ret\n"
	".size sbx_enter, .-sbx_enter\n");

struct sbx_code {
	uint8_t *code;		/* SBX_CODE_MAX bytes, then one data page */
	uint64_t *data;		/* [0] counter, [1] exit address, [2..17] the
				 * registers' start values (sbx_layout) */
};

/* One message per body from the child. */
struct sbx_msg {
	uint32_t index;
	struct sbx_result r;
};

static sigjmp_buf sbx_jmp;
static volatile sig_atomic_t sbx_sig, sbx_in_run, sbx_alarm;
static volatile uintptr_t sbx_fault_addr;
static volatile int sbx_fault_code;
static uintptr_t sbx_pages[SBX_MAX_PAGES];
static int sbx_npages;
static struct sbx_code sbx_c1, sbx_c2, sbx_cal1, sbx_cal2, sbx_can1, sbx_can2;

static void sbx_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!sbx_in_run) {
		if (sig == SIGALRM) {
			sbx_alarm = 1;
			return;
		}
		/* the child's own code faulted (a body corrupted it): die, the
		 * parent reports the body and restarts */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	sbx_sig = sig;
	sbx_fault_addr = (uintptr_t)si->si_addr;
	sbx_fault_code = si->si_code;
	/* a fault on the way back (the body overwrote what siglongjmp needs, the
	 * pointer guard at %fs:0x30) then kills the child instead of looping */
	sbx_in_run = 0;
	siglongjmp(sbx_jmp, 1);
}

static int sbx_signals(void)
{
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGALRM };

	if (sigaltstack(&ss, NULL))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sbx_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL))
			return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int sbx_random_mem;		/* 0: X; 1: random bytes; 2: small dwords */

/* A word of random bytes for address a, the same every run (splitmix64). */
static uint64_t sbx_mix(uint64_t a)
{
	a += 0x9e3779b97f4a7c15ull;
	a = (a ^ (a >> 30)) * 0xbf58476d1ce4e5b9ull;
	a = (a ^ (a >> 27)) * 0x94d049bb133111ebull;
	return a ^ (a >> 31);
}

/* Fill [p, p + len) with X, so that loaded words are pointers into the
 * region; or, for the random-memory run, with random bytes: byte and word
 * indices take all their values, as real data's do, and a loaded 8-byte word
 * is a canonical address once in 2^16, so a body that dereferences one
 * faults (a general protection fault) instead of writing somewhere. */
static void sbx_fill_range(uintptr_t p, size_t len)
{
	uint64_t *w = (uint64_t *)p;

	for (size_t i = 0; i < len / 8; i++) {
		uint64_t m = sbx_mix((uint64_t)(uintptr_t)&w[i]);

		/* the third fill: each 4-byte word random below 1024, for a 32-bit
		 * index loaded from memory (a table of counts indexed by a loaded
		 * int: with random bytes its address is gigabytes away) */
		w[i] = sbx_random_mem == 2 ? (m & 0x3ff) | (m >> 32 & 0x3ff) << 32 :
		       sbx_random_mem ? m : SBX_X;
	}
}

/*
 * SBX_F_DISTINCT: register r starts at sbx_start(r) instead of X.
 * Two pointer registers then address different lines and sets (a body's two
 * arrays are not one array), and an index register scaled by 4 or 8 does not
 * land on an address whose low 32 bits are the base's: with X = 2^30, X + 4X
 * differs from X only in bit 32, and this core's L1 keeps one line per
 * linear-address micro-tag, so two such lines evict each other on every access
 * (47 cycles per swap in bzip2's sort).  The low byte stays 0 (shift counts of
 * %cl stay 0, alignments stay 256), and all lie in the region.
 */
#define SBX_XD		(SBX_X + 0x2a5000ull)
#define SBX_XD_STEP	0x40100ull
static int sbx_distinct;

static uint64_t sbx_start(int r)
{
	return sbx_distinct ? SBX_XD + (uint64_t)r * SBX_XD_STEP : SBX_X;
}

/* Before each run, the 64 KB around X, where every register points on entry
 * (with SBX_F_DISTINCT, 8 KB around each register's start as well); the
 * whole region and the pages mapped on demand at the start of each body and
 * after the first faults (sbx_fill_all). */
static void sbx_fill(void)
{
	sbx_fill_range(SBX_X - 32768, 65536);
	for (int i = 0; sbx_distinct && i < 16; i++)
		sbx_fill_range(sbx_start(i) - 4096, 8192);
}

static void sbx_fill_all(void)
{
	sbx_fill_range(SBX_X - SBX_REGION / 2, SBX_REGION);
	for (int i = 0; i < sbx_npages; i++)
		sbx_fill_range(sbx_pages[i], 4096);
}

/* Private pages: a different physical page per virtual page, so a store and a
 * load through different virtual pages never alias physically (they would with
 * BHive's one shared page, and the core then pays memory-ordering penalties
 * real code does not). */
static int sbx_map(uintptr_t addr, size_t len)
{
	void *p = mmap((void *)addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	if ((uintptr_t)p != addr) {
		munmap(p, len);
		return -EEXIST;
	}
	return 0;
}

static int sbx_map_page(uintptr_t page)
{
	int rc = sbx_map(page, 4096);

	if (!rc)
		sbx_fill_range(page, 4096);
	return rc;
}

static int sbx_region(void)
{
	int rc = sbx_map(SBX_X - SBX_REGION / 2, SBX_REGION);

	if (!rc)
		sbx_fill_all();
	return rc;
}

static void sbx_unmap_extra(void)
{
	for (int i = 0; i < sbx_npages; i++)
		munmap((void *)sbx_pages[i], 4096);
	sbx_npages = 0;
}

static int sbx_code_init(struct sbx_code *c)
{
	c->code = mmap(NULL, SBX_CODE_MAX + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->code == MAP_FAILED)
		return -errno;
	c->data = (uint64_t *)(c->code + SBX_CODE_MAX);
	c->data[1] = (uint64_t)(uintptr_t)sbx_exit;
	return 0;
}

static void sbx_put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* Whether in moves register r (which it writes) by a constant, in *d: a
 * 32- or 64-bit add or sub of an immediate, inc, dec, a lea of r plus a
 * displacement, and for rsp a push or pop. */
static int sbx_step_of(const struct cfg_insn *in, unsigned r, int64_t *d)
{
	const char *mn = in->mnemonic;
	int wide = strlen(mn) == 4 && (mn[3] == 'q' || mn[3] == 'l');
	int reg = in->form == CFG_F_REG, imm = reg && (in->flags & CFG_I_IMM);

	if (r == CFG_R_RSP && (in->flags & CFG_I_STACK) &&
	    !(in->flags & (CFG_I_CALL | CFG_I_RET))) {
		if (!strncmp(mn, "push", 4) && strcmp(mn, "pushw"))
			return *d = -8, 1;
		if (!strncmp(mn, "pop", 3) && strcmp(mn, "popw"))
			return *d = 8, 1;
	}
	if (!wide)
		return 0;
	if (imm && !strncmp(mn, "add", 3))
		*d = (int64_t)in->imm;
	else if (imm && !strncmp(mn, "sub", 3))
		*d = -(int64_t)in->imm;
	else if (reg && !strncmp(mn, "inc", 3))
		*d = 1;
	else if (reg && !strncmp(mn, "dec", 3))
		*d = -1;
	else if ((in->flags & CFG_I_LEA) && in->mem.base == r &&
		 in->mem.index == CFG_REG_NONE && !in->mem.rip_relative)
		*d = in->mem.disp;
	else
		return 0;
	return 1;
}

/* Whether in's memory operand can walk: a load or store, not a lea's address
 * nor the stack's, not rip-relative. */
static int sbx_walks(const struct cfg_insn *in)
{
	return in->nmem && !(in->flags & (CFG_I_LEA | CFG_I_STACK)) && !in->mem.rip_relative;
}

/*
 * The byte step per body pass of each general-purpose register that only
 * constant steps (sbx_step_of) move; 0 for the others.  0 for all when the
 * body branches (a taken branch would skip some of the steps).  *walk: the
 * bytes the body's memory operands move per pass, each distinct base, index
 * and scale counted once (base step + index step x scale).
 */
static void sbx_steps(const uint8_t *body, size_t len, int64_t step[16], uint64_t *walk)
{
	struct cfg_insn *v = NULL;
	size_t n = 0;
	uint32_t other = 0;

	memset(step, 0, 16 * sizeof(step[0]));
	*walk = 0;
	if (cfg_decode(body, len, 0, &v, &n, NULL) < 0) {
		free(v);
		return;
	}
	for (size_t i = 0; i < n && other != 0xffff; i++) {
		if (v[i].flags & CFG_I_BRANCH)
			other = 0xffff;
		for (unsigned r = 0; r < 16 && other != 0xffff; r++) {
			int64_t d;

			if (!(v[i].regs_written & CFG_RBIT(r)))
				continue;
			if (sbx_step_of(&v[i], r, &d))
				step[r] += d;
			else
				other |= 1u << r;
		}
	}
	for (unsigned r = 0; r < 16; r++)
		if (other & (1u << r))
			step[r] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cfg_mem *m = &v[i].mem;
		int64_t d = 0;
		size_t j;

		if (!sbx_walks(&v[i]))
			continue;
		for (j = 0; j < i; j++)
			if (sbx_walks(&v[j]) && v[j].mem.base == m->base &&
			    v[j].mem.index == m->index && v[j].mem.scale == m->scale)
				break;
		if (j < i)
			continue;
		if (m->base < 16)
			d += step[m->base];
		if (m->index < 16)
			d += step[m->index] * m->scale;
		*walk += (uint64_t)(d < 0 ? -d : d);
	}
	free(v);
}

/* lea -d(%r), %r: 8 bytes */
static uint8_t *sbx_put_lea(uint8_t *p, unsigned r, int32_t d)
{
	*p++ = 0x48 | (r >= 8 ? 0x05 : 0);
	*p++ = 0x8d;
	*p++ = (uint8_t)(0x80 | (r & 7) << 3 | (r & 7));
	if ((r & 7) == 4)
		*p++ = 0x24;
	sbx_put32(p, -d);
	return p + 4;
}

/* How a body that faulted is laid out again (sbx_realign); NULL: as it is. */
struct sbx_layout {
	int rsp_pad;		/* lea -8(%rsp), %rsp after each copy */
	uint32_t top;		/* registers set to their start at each iteration */
	uint32_t each;		/* and before each copy */
};

/* mov data[2 + r](%rip), %r for each register of mask: the data page
 * follows the code, and sbx_run copies the start values there. */
static uint8_t *sbx_put_starts(struct sbx_code *c, uint8_t *p, uint32_t mask)
{
	for (unsigned r = 0; r < 16; r++) {
		if (!(mask & (1u << r)))
			continue;
		p[0] = 0x48 | (r >= 8 ? 0x04 : 0);
		p[1] = 0x8b;
		p[2] = (uint8_t)((r & 7) << 3 | 5);
		sbx_put32(p + 3, (int32_t)((uint8_t *)&c->data[2 + r] - (p + 7)));
		p += 7;
	}
	return p;
}

/*
 * Lay out the loop with u copies of the body; -E2BIG if it does not fit.
 * With step (sbx_steps), each loop iteration ends by winding every stepping
 * register back by u steps, so that a pointer walks the same u bodies' bytes
 * in every iteration (they stay in L1, as BHive keeps only runs without cache
 * misses) instead of megabytes; one lea per register per iteration, the same
 * in the U and 2U loops, so the difference cancels it.
 */
static int sbx_emit(struct sbx_code *c, const uint8_t *body, size_t len, unsigned u,
		    const int64_t *step, const struct sbx_layout *lay)
{
	uint8_t *p = c->code, *loop;
	uint8_t *cnt = (uint8_t *)&c->data[0], *ex = (uint8_t *)&c->data[1];
	int rsp_pad = lay ? lay->rsp_pad : 0;
	size_t each = lay ? (size_t)rsp_pad + 7 * (size_t)__builtin_popcount(lay->each) : 0;
	size_t top = lay ? 7 * (size_t)__builtin_popcount(lay->top) : 0;

	if ((size_t)u * (len + each) + top + 256 > SBX_CODE_MAX)
		return -E2BIG;
	if (mprotect(c->code, SBX_CODE_MAX, PROT_READ | PROT_WRITE))
		return -errno;
	loop = p;
	if (lay)
		p = sbx_put_starts(c, p, lay->top);
	for (unsigned i = 0; i < u; i++) {
		if (lay)
			p = sbx_put_starts(c, p, lay->each);
		memcpy(p, body, len);
		p += len;
		/* lea -8(%rsp), %rsp: the next copy's frame as aligned as
		 * this one's */
		if (rsp_pad)
			p = sbx_put_lea(p, 4, rsp_pad);
	}
	for (unsigned r = 0; step && r < 16; r++) {
		int64_t d = step[r] * (int64_t)u;

		if (r == CFG_R_RSP && rsp_pad && step[r])
			d -= (int64_t)rsp_pad * u;
		if (step[r] && d > -(1ll << 30) && d < (1ll << 30))
			p = sbx_put_lea(p, r, (int32_t)d);
	}
	/* subq $1, counter(%rip) */
	p[0] = 0x48; p[1] = 0x83; p[2] = 0x2d;
	sbx_put32(p + 3, (int32_t)(cnt - (p + 8)));
	p[7] = 0x01;
	p += 8;
	/* jnz loop */
	p[0] = 0x0f; p[1] = 0x85;
	sbx_put32(p + 2, (int32_t)(loop - (p + 6)));
	p += 6;
	/* jmp *exit(%rip) */
	p[0] = 0xff; p[1] = 0x25;
	sbx_put32(p + 2, (int32_t)(ex - (p + 6)));
	if (mprotect(c->code, SBX_CODE_MAX, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

static inline uint64_t sbx_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n rdtsc\n lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

static void sbx_regs(int rdx_zero, int rsp_entry)
{
	for (int i = 0; i < 16; i++)
		sbx_gpr[i] = sbx_start(i);
	if (rdx_zero)
		sbx_gpr[2] = 0;		/* rdx: the high half of a dividend */
	if (rsp_entry)
		sbx_gpr[4] -= 8;	/* rsp as a call leaves it: 8 below 16 */
}

enum sbx_run { SBX_RUN_OK, SBX_RUN_RETRY, SBX_RUN_FAULT };

/*
 * One run of n loop iterations: ticks in *t.  RETRY after mapping a page the
 * body touched; FAULT with the signal in sbx_sig otherwise (SIGALRM: the
 * body's time is up).
 */
static enum sbx_run sbx_run(struct sbx_code *c, uint64_t n, uint64_t *t)
{
	uint64_t t0, t1;

	if (sbx_alarm) {
		sbx_sig = SIGALRM;
		return SBX_RUN_FAULT;
	}
	sbx_fill();
	c->data[0] = n;
	memcpy(&c->data[2], sbx_gpr, sizeof(sbx_gpr));
	sbx_target = (uint64_t)(uintptr_t)c->code;
	sbx_sig = 0;
	if (sigsetjmp(sbx_jmp, 1)) {
		sbx_in_run = 0;
		__asm__ volatile("ldmxcsr %0\n fninit" :: "m"(sbx_mxcsr_default));
		if (sbx_veclevel)
			__asm__ volatile("vzeroupper");
		if (sbx_sig == SIGSEGV && sbx_fault_code == SEGV_MAPERR &&
		    sbx_fault_addr >= 0x10000 && sbx_fault_addr < 0x7fffffff0000ull &&
		    sbx_npages < SBX_MAX_PAGES) {
			uintptr_t page = sbx_fault_addr & ~(uintptr_t)4095;

			if (!sbx_map_page(page)) {
				sbx_pages[sbx_npages++] = page;
				/* the partial run may have written anywhere; after a few
				 * pages the body is walking, and refilling 16 MB for
				 * each of hundreds of pages took seconds (the new page
				 * is filled, the windows are before every run) */
				if (sbx_npages <= 8)
					sbx_fill_all();
				return SBX_RUN_RETRY;
			}
		}
		return SBX_RUN_FAULT;
	}
	sbx_in_run = 1;
	t0 = sbx_tsc();
	sbx_enter();
	t1 = sbx_tsc();
	sbx_in_run = 0;
	*t = t1 - t0;
	return SBX_RUN_OK;
}

/* Run until no new page is needed. */
static enum sbx_run sbx_run_settled(struct sbx_code *c, uint64_t n, uint64_t *t)
{
	enum sbx_run s;

	while ((s = sbx_run(c, n, t)) == SBX_RUN_RETRY)
		;
	return s;
}

/* The clock: add $1,%rax is one cycle per instruction on every x86-64 core. */
static const uint8_t sbx_add1[] = { 0x48, 0x83, 0xc0, 0x01 };
#define SBX_CAL_U	100
#define SBX_CAL_N	200

/* Ticks per copy of the body in c1 (u copies) and c2 (2u copies), by the
 * same U / 2U difference, the lowest of three tries (the vCPU being
 * descheduled only ever inflates a try); 0 on failure. */
static double sbx_pair_ticks(struct sbx_code *c1, struct sbx_code *c2, unsigned u)
{
	double best = 0;

	sbx_regs(0, 0);
	for (int i = 0; i < 3; i++) {
		uint64_t a, b;
		double t;

		if (sbx_run_settled(c1, SBX_CAL_N, &a) != SBX_RUN_OK ||
		    sbx_run_settled(c2, SBX_CAL_N, &b) != SBX_RUN_OK)
			return 0;
		t = ((double)b - (double)a) / (SBX_CAL_N * u);
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	return best;
}

/* Ticks per add of the clock chain. */
static double sbx_cal_ticks(void)
{
	return sbx_pair_ticks(&sbx_cal1, &sbx_cal2, SBX_CAL_U);
}

/* The contention canary: 8 independent adds, bound by the ALUs' throughput,
 * which a busy sibling thread of the host core halves (bench/bhive/README.md). */
static const uint8_t sbx_adds8[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x83, 0xc1, 0x01, 0x48, 0x83, 0xc2, 0x01,
	0x48, 0x83, 0xc3, 0x01, 0x48, 0x83, 0xc6, 0x01, 0x48, 0x83, 0xc7, 0x01,
	0x49, 0x83, 0xc0, 0x01, 0x49, 0x83, 0xc1, 0x01,
};
#define SBX_CAN_U	25
#define SBX_CAN_QUIET	1.05	/* a repetition whose canary is within 5% of the
				 * least seen ran with the core to itself */
static double sbx_can_min;	/* the least canary cycles of this child */

/* Ticks per copy of the canary's 8 adds. */
static double sbx_canary_ticks(void)
{
	return sbx_pair_ticks(&sbx_can1, &sbx_can2, SBX_CAN_U);
}

/* Insertion sort: the child calls nothing that may take a lock or allocate. */
static void sbx_sort(double *a, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		double v = a[i];
		unsigned j = i;

		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

static const char *sbx_signame(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGTRAP: return "SIGTRAP";
	case SIGALRM: return "timeout";
	}
	return "signal";
}

static void sbx_fault(struct sbx_result *r)
{
	if (sbx_sig == SIGALRM) {
		r->status = SBX_TIMEOUT;
		snprintf(r->detail, sizeof(r->detail), "ran past the time limit");
		return;
	}
	r->status = SBX_FAULT;
	if (sbx_sig == SIGSEGV && sbx_npages >= SBX_MAX_PAGES)
		snprintf(r->detail, sizeof(r->detail), "more than %d pages touched",
			 SBX_MAX_PAGES);
	else if (sbx_sig == SIGSEGV || sbx_sig == SIGBUS)
		snprintf(r->detail, sizeof(r->detail), "%s at 0x%llx", sbx_signame(sbx_sig),
			 (unsigned long long)sbx_fault_addr);
	else
		snprintf(r->detail, sizeof(r->detail), "%s", sbx_signame(sbx_sig));
}

/* Bodies per timed run: n loop iterations of u copies, about iters body
 * executions, fewer for long bodies (at most 128 bytes of code per iters). */
static uint64_t sbx_loop_count(size_t len, unsigned u, unsigned iters)
{
	uint64_t n = iters / u, cap = (uint64_t)iters * 128 / ((uint64_t)u * len);

	if (n > cap)
		n = cap;
	return n < 4 ? 4 : n;
}

/* The fault a body laid out again may not take: a general protection or
 * stack fault (a misaligned frame, a non-canonical address), or a load
 * from the page at 0 (a byte or a count taken for a pointer); not in a run
 * with random memory, whose loaded pointers are meant to fault. */
static int sbx_relayable(void)
{
	if (sbx_random_mem)
		return 0;	/* random pointers fault: that run is dropped */
	if ((sbx_sig == SIGSEGV || sbx_sig == SIGBUS) && sbx_fault_code == SI_KERNEL)
		return 1;
	return sbx_sig == SIGSEGV && sbx_fault_code == SEGV_MAPERR && sbx_fault_addr < 0x10000;
}

/* The registers a body both writes and addresses memory through (rsp
 * aside): the next copy would address through what this one wrote. */
static uint32_t sbx_addr_clobbers(const struct cfg_insn *v, size_t n)
{
	uint32_t addr = 0, written = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].nmem && !(v[i].flags & CFG_I_LEA) && !v[i].mem.rip_relative) {
			if (v[i].mem.base < 16)
				addr |= 1u << v[i].mem.base;
			if (v[i].mem.index < 16)
				addr |= 1u << v[i].mem.index;
		}
		for (unsigned r = 0; r < 16; r++)
			if (v[i].regs_written & CFG_RBIT(r))
				written |= 1u << r;
	}
	return addr & written & ~(1u << CFG_R_RSP);
}

/*
 * A general protection fault: an aligned store to the frame of a procedure's
 * entry block (its pushes and frame assume the rsp a call leaves, and a body
 * that moves rsp by 8 modulo 16 misaligns every other copy), or an address
 * the body computed itself for the next copy (b2sum's compression, which
 * mixes the rdi it copied its context pointer from; jq's UTF-8 decoder,
 * which loads a byte into the rdi it read it through).  rsp then starts as a
 * call leaves it (sbx_regs), and the copies are laid out again: a long body,
 * run once an iteration, from every register's start value each time, as
 * each call of it in the program runs (16 loads from L1 beside hundreds of
 * instructions); a shorter one with the registers it writes and addresses
 * through set to their start before each copy (a load each, which the
 * core overlaps), and `lea -8(%rsp), %rsp` after each copy where its frame
 * needs it (the stack engine's, a cycle at most).  Only bodies that faulted
 * so are timed this way; -1 when there is nothing to lay out otherwise.
 */
static int sbx_realign(const uint8_t *body, size_t len, unsigned u, const int64_t *wind,
		       int long_body)
{
	struct sbx_layout lay = { 0 };
	struct cfg_insn *v = NULL;
	int64_t step[16];
	uint64_t walk;
	size_t n = 0;

	sbx_steps(body, len, step, &walk);
	lay.rsp_pad = !long_body && (step[CFG_R_RSP] & 15) ? 8 : 0;
	if (long_body)
		lay.top = 0xffff;
	else if (cfg_decode(body, len, 0, &v, &n, NULL) == 0)
		lay.each = sbx_addr_clobbers(v, n);
	free(v);
	if (!lay.rsp_pad && !lay.top && !lay.each)
		return -1;
	if (sbx_emit(&sbx_c1, body, len, u, wind, &lay) < 0 ||
	    (!long_body && sbx_emit(&sbx_c2, body, len, 2 * u, wind, &lay) < 0))
		return -1;
	return 0;
}

/*
 * Warm up and map what 2U touches (it runs further than U): cb2 run n2
 * times, again with rdx = 0 after a divide fault (r->rdx_zero), laid out
 * again once after a fault sbx_relayable names (r->relaid).
 */
static enum sbx_run sbx_warm(const uint8_t *body, size_t len, unsigned u, const int64_t *wind,
			     struct sbx_code *cb2, uint64_t n2, struct sbx_result *r)
{
	enum sbx_run s;
	uint64_t t;

	r->rdx_zero = 0;
	r->relaid = 0;
	for (;;) {
		sbx_regs(r->rdx_zero, r->relaid);
		s = sbx_run_settled(cb2, n2, &t);
		if (s == SBX_RUN_OK)
			break;
		if (sbx_sig == SIGFPE && !r->rdx_zero)
			r->rdx_zero = 1;
		else if (!r->relaid && sbx_relayable() &&
			 sbx_realign(body, len, u, wind, cb2 == &sbx_c1) == 0)
			r->relaid = 1;
		else
			break;
	}
	return s;
}

/*
 * Each repetition times the clock (add chain), the body at U and 2U copies
 * (lowest of three tries each), and the clock again, and converts its own tick
 * difference with the faster of its two clock readings: the core clock of a
 * shared VM moves with the load of the host.
 */
static void sbx_measure_once(const uint8_t *body, size_t len, const int64_t *wind,
			     uint64_t walk, const struct sbx_opts *o, struct sbx_result *r)
{
	static double e[SBX_MAX_REPS], cpts[SBX_MAX_REPS], can[SBX_MAX_REPS], eq[SBX_MAX_REPS];
	unsigned quiet = 0;
	uint64_t n, m1 = UINT64_MAX, m2 = UINT64_MAX;
	unsigned u = SBX_CODE_BUDGET / (unsigned)len, k = 0;
	unsigned reps = o->reps > SBX_MAX_REPS ? SBX_MAX_REPS : (unsigned)o->reps;
	double cmax = 0;
	enum sbx_run s = SBX_RUN_FAULT;
	struct sbx_code *cb2;
	uint64_t n2;
	int long_body;

	sbx_distinct = (o->flags & SBX_F_DISTINCT) != 0;
	u = u > 100 ? 100 : u < 4 ? 1 : u;
	/* wound back every U copies, the 2U loop still walks 2U passes' bytes
	 * first: a stride of 1 KB at U = 100 is 200 KB, past L1 on every access.
	 * Fewer copies keep the walk within SBX_WIND_BYTES (half of the smallest
	 * L1 of these cores), an L1 hit as the best case means; at least 4, or
	 * the loop's own counter would be timed with the body */
	if (u >= 4 && wind && walk && 2 * (uint64_t)u * walk > SBX_WIND_BYTES) {
		u = (unsigned)(SBX_WIND_BYTES / (2 * walk));
		u = u < 4 ? 4 : u;
	}
	n = sbx_loop_count(len, u, o->iters);
	r->unroll = u;
	sbx_unmap_extra();
	sbx_fill_all();
	/* a long body (more than 512 bytes) runs once per loop iteration, N and 2N
	 * times: copies of it would not fit the instruction cache, which one copy
	 * of a real block of that length does; the loop's own cost is then a
	 * cycle against hundreds */
	long_body = u == 1;
	if (sbx_emit(&sbx_c1, body, len, u, wind, NULL) < 0 ||
	    (!long_body && sbx_emit(&sbx_c2, body, len, 2 * u, wind, NULL) < 0)) {
		r->status = SBX_TOO_LARGE;
		snprintf(r->detail, sizeof(r->detail), "%zu bytes x %u copies", len, 2 * u);
		return;
	}
	cb2 = long_body ? &sbx_c1 : &sbx_c2;
	n2 = long_body ? 2 * n : n;
	s = sbx_warm(body, len, u, wind, cb2, n2, r);
	if (s != SBX_RUN_OK)
		goto fault;
	for (unsigned i = 0; i < reps; i++) {
		uint64_t t1 = UINT64_MAX, t2 = UINT64_MAX;
		double ca, cb, cn;

		ca = sbx_cal_ticks();
		cn = sbx_canary_ticks();
		sbx_regs(r->rdx_zero, r->relaid);
		for (int j = 0; j < 3; j++) {
			uint64_t a, b;

			if (sbx_run_settled(&sbx_c1, n, &a) != SBX_RUN_OK ||
			    sbx_run_settled(cb2, n2, &b) != SBX_RUN_OK)
				goto fault;
			t1 = a < t1 ? a : t1;
			t2 = b < t2 ? b : t2;
		}
		cb = sbx_cal_ticks();
		cn = fmax(cn, sbx_canary_ticks());
		if (ca <= 0 || cb <= 0)
			continue;
		cpts[k] = 1 / (ca < cb ? ca : cb);
		e[k] = ((double)t2 - (double)t1) / (double)(n * u) * cpts[k];
		can[k] = cn * cpts[k];
		if (can[k] > 0 && (sbx_can_min <= 0 || can[k] < sbx_can_min))
			sbx_can_min = can[k];
		if (cpts[k] > cmax)
			cmax = cpts[k];
		k++;
		m1 = t1 < m1 ? t1 : m1;
		m2 = t2 < m2 ? t2 : m2;
	}
	if (!k) {
		r->status = SBX_ERROR;
		snprintf(r->detail, sizeof(r->detail), "the add-chain clock did not run");
		return;
	}
	/* the repetitions that ran with the core to themselves, when there are
	 * three or more; else all of them, and the figure says so */
	for (unsigned i = 0; i < k; i++)
		if (can[i] > 0 && can[i] <= SBX_CAN_QUIET * sbx_can_min)
			eq[quiet++] = e[i];
	r->canary = sbx_can_min;
	r->contended = quiet < 3 && quiet < k;
	if (!r->contended && quiet < k) {
		memcpy(e, eq, quiet * sizeof(e[0]));
		k = quiet;
	}
	sbx_sort(e, k);
	sbx_sort(cpts, k);
	r->status = SBX_OK;
	r->cycles = e[k / 2];
	r->cycles_low = e[k / 4];
	r->spread = e[k / 2] != 0 ? (e[k * 3 / 4] - e[k / 4]) / fabs(e[k / 2]) : 0;
	r->cycles_per_tsc = cpts[k / 2];
	r->cycles_min = ((double)m2 - (double)m1) / (double)(n * u) * cmax;
	r->pages = (unsigned)sbx_npages;
	/* contention slows throughput-bound bodies by up to 75% (bench/bhive/README.md):
	 * a spread beyond that is not contention */
	if (k >= 4 && r->spread > 1.0) {
		r->status = SBX_UNSTABLE;
		snprintf(r->detail, sizeof(r->detail), "repetitions spread %.0f%%",
			 100 * r->spread);
	}
	return;
fault:
	sbx_fault(r);
}

/* One body: with X in memory, and with SBX_F_RANDOM_MEM also with the two
 * random fills, keeping the lowest figure (a run that faults keeps the
 * others); with SBX_F_WIND its stepping registers wound back. */
static void sbx_measure(const uint8_t *body, size_t len, const struct sbx_opts *o,
			struct sbx_result *r)
{
	struct sbx_result rr;
	int64_t step[16];
	const int64_t *wind = NULL;
	uint64_t walk = 0;

	if (o->flags & SBX_F_WIND) {
		sbx_steps(body, len, step, &walk);
		wind = step;
	}
	sbx_measure_once(body, len, wind, walk, o, r);
	r->random_mem = 0;
	if (!(o->flags & SBX_F_RANDOM_MEM))
		return;
	for (int fill = 1; fill <= 2; fill++) {
		memset(&rr, 0, sizeof(rr));
		sbx_random_mem = fill;
		sbx_measure_once(body, len, wind, walk, o, &rr);	/* it unmaps and refills first */
		sbx_random_mem = 0;
		if (rr.status == SBX_OK &&
		    (r->status != SBX_OK || rr.cycles_low < r->cycles_low)) {
			*r = rr;
			r->random_mem = fill;
		}
	}
}

static void sbx_cpu_features(void)
{
	unsigned a, b, c, d;
	uint64_t xcr0 = 0;

	sbx_veclevel = 0;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 28)))
		return;		/* no OSXSAVE or no AVX */
	__asm__ volatile("xgetbv" : "=a"(a), "=d"(d) : "c"(0));
	xcr0 = (uint64_t)d << 32 | a;
	if ((xcr0 & 6) != 6)
		return;
	sbx_veclevel = 1;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 16)) && (b & (1u << 30)) &&
	    (xcr0 & 0xe6) == 0xe6)
		sbx_veclevel = 2;
}

static int sbx_child_setup(int cpu)
{
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);	/* best effort */
	}
	sbx_cpu_features();
	for (int i = 0; i < 8; i++)
		sbx_vec[i] = 0x3f8000003f800000ull;	/* 1.0f, 1.0f; 0.0078125 as double */
	if (sbx_signals() || sbx_region() || sbx_code_init(&sbx_c1) || sbx_code_init(&sbx_c2) ||
	    sbx_code_init(&sbx_cal1) || sbx_code_init(&sbx_cal2))
		return -1;
	if (sbx_emit(&sbx_cal1, sbx_add1, sizeof(sbx_add1), SBX_CAL_U, NULL, NULL) ||
	    sbx_emit(&sbx_cal2, sbx_add1, sizeof(sbx_add1), 2 * SBX_CAL_U, NULL, NULL))
		return -1;
	if (sbx_code_init(&sbx_can1) || sbx_code_init(&sbx_can2) ||
	    sbx_emit(&sbx_can1, sbx_adds8, sizeof(sbx_adds8), SBX_CAN_U, NULL, NULL) ||
	    sbx_emit(&sbx_can2, sbx_adds8, sizeof(sbx_adds8), 2 * SBX_CAN_U, NULL, NULL))
		return -1;
	sbx_can_min = 0;
	return 0;
}

/* The child: bodies todo[0..ntodo), one message each, then exit. */
static void __attribute__((noreturn))
sbx_child(int fd, const uint8_t *const *bodies, const size_t *lens, const uint32_t *todo,
	  size_t ntodo, const struct sbx_opts *o)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sbx_msg m;
	int setup = sbx_child_setup(o->cpu);

	for (size_t i = 0; i < ntodo; i++) {
		struct itimerval it = { { 0, 0 }, { o->timeout_ms / 1000,
						     (o->timeout_ms % 1000) * 1000 } };

		memset(&m, 0, sizeof(m));
		m.index = todo[i];
		if (setup) {
			m.r.status = SBX_ERROR;
			snprintf(m.r.detail, sizeof(m.r.detail), "sandbox setup failed");
		} else {
			sbx_alarm = 0;
			setitimer(ITIMER_REAL, &it, NULL);
			sbx_measure(bodies[todo[i]], lens[todo[i]], o, &m.r);
			setitimer(ITIMER_REAL, &off, NULL);
			if (sbx_alarm && m.r.status == SBX_OK) {
				m.r.status = SBX_TIMEOUT;
				snprintf(m.r.detail, sizeof(m.r.detail),
					 "ran past the time limit");
			}
		}
		if (dcpi_write_full(fd, &m, sizeof(m)))
			_exit(1);
	}
	_exit(0);
}

/* --- the parent ------------------------------------------------------------ */

static void sbx_set(struct sbx_result *r, enum sbx_status s, const char *why)
{
	memset(r, 0, sizeof(*r));
	r->status = s;
	snprintf(r->detail, sizeof(r->detail), "%.*s", (int)sizeof(r->detail) - 1, why);
}

/* Read one message, waiting at most ms: 1 read, 0 end of file, -1 timed out. */
static int sbx_read_msg(int fd, struct sbx_msg *m, int ms)
{
	size_t got = 0;
	uint64_t deadline = dcpi_now_ns() + (uint64_t)ms * 1000000u;

	while (got < sizeof(*m)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = dcpi_now_ns();
		int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;
		ssize_t r;
		int pr = poll(&p, 1, left);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		r = read(fd, (char *)m + got, sizeof(*m) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

/*
 * One child over todo[0..ntodo): fills res[] for the bodies it reports.
 * Returns how many of todo were settled (reported, or the one that killed the
 * child), or a negative errno when no child could be started.
 */
static long sbx_batch(const uint8_t *const *bodies, const size_t *lens, const uint32_t *todo,
		      size_t ntodo, const struct sbx_opts *o, struct sbx_result *res,
		      struct dcpi_err *err)
{
	int fds[2], status = 0, rc = 1;
	size_t done = 0;
	pid_t pid;
	struct sbx_msg m;
	char why[64];

	if (pipe2(fds, O_CLOEXEC))
		return dcpi_errf(err, -errno, "sandbox: pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return dcpi_errf(err, rc, "sandbox: fork: %s", strerror(-rc));
	}
	if (pid == 0) {
		close(fds[0]);
		sbx_child(fds[1], bodies, lens, todo, ntodo, o);
	}
	close(fds[1]);
	while (done < ntodo) {
		/* the child enforces timeout_ms itself; this is the watchdog for a
		 * child that cannot (setup, a body that broke it) */
		rc = sbx_read_msg(fds[0], &m, o->timeout_ms + 5000);
		if (rc < 0) {
			kill(pid, SIGKILL);
			sbx_set(&res[todo[done]], SBX_TIMEOUT, "killed by the watchdog");
			done++;
			break;
		}
		if (rc == 0 || m.index != todo[done]) {
			if (rc > 0)
				kill(pid, SIGKILL);
			break;
		}
		res[todo[done]] = m.r;
		res[todo[done]].detail[sizeof(m.r.detail) - 1] = '\0';
		done++;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (done < ntodo && (rc == 0 || rc > 0)) {
		/* the child died on todo[done] */
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed the sandbox (signal %d)",
				 WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "the sandbox exited (status %d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		sbx_set(&res[todo[done]], SBX_FAULT, why);
		done++;
	}
	return (long)done;
}

int sbx_time(const uint8_t *const *bodies, const size_t *lens, size_t n,
	     const struct sbx_opts *opts, struct sbx_result *res, struct dcpi_err *err)
{
	struct sbx_opts o;
	uint32_t *todo;
	size_t ntodo = 0, at = 0;

	if (!n)
		return 0;
	if (!bodies || !lens || !res)
		return dcpi_errf(err, -EINVAL, "sandbox: no bodies");
	sbx_opts_default(&o);
	if (opts) {
		o.reps = opts->reps > 0 ? opts->reps : o.reps;
		o.timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : o.timeout_ms;
		o.cpu = opts->cpu;
		o.iters = opts->iters ? opts->iters : o.iters;
		o.flags = opts->flags;
	}
	if (o.reps > SBX_MAX_REPS)
		o.reps = SBX_MAX_REPS;
	todo = calloc(n, sizeof(*todo));
	if (!todo)
		return dcpi_errf(err, -ENOMEM, "sandbox: out of memory");
	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		if (lens[i] > SBX_BODY_MAX) {
			res[i].status = SBX_TOO_LARGE;
			snprintf(res[i].detail, sizeof(res[i].detail), "%zu bytes (at most %u)",
				 lens[i], SBX_BODY_MAX);
		} else if (!bodies[i] || sbx_check_flags(bodies[i], lens[i], o.flags,
							 res[i].detail,
							 sizeof(res[i].detail))) {
			res[i].status = SBX_REFUSED;
		} else {
			todo[ntodo++] = (uint32_t)i;
		}
	}
	while (at < ntodo) {
		long d = sbx_batch(bodies, lens, todo + at, ntodo - at, &o, res, err);

		if (d < 0) {
			for (; at < ntodo; at++)
				sbx_set(&res[todo[at]], SBX_ERROR, err ? err->msg : "fork");
			free(todo);
			return (int)d;
		}
		at += (size_t)d;
	}
	free(todo);
	return 0;
}

#else /* !__x86_64__ */

int sbx_time(const uint8_t *const *bodies, const size_t *lens, size_t n,
	     const struct sbx_opts *opts, struct sbx_result *res, struct dcpi_err *err)
{
	(void)bodies; (void)lens; (void)opts;
	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].status = SBX_ERROR;
		snprintf(res[i].detail, sizeof(res[i].detail), "not an x86-64 build");
	}
	return n ? dcpi_errf(err, -ENOSYS, "sandbox: not an x86-64 build") : 0;
}

#endif
