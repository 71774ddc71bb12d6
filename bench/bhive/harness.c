/*
 * harness.c - time loop bodies on this machine, as BHive does (Chen, Brahmakshatriya,
 * Amarasinghe, Carbin, "BHive: A Benchmark Suite and Measurement Framework for
 * Validating x86-64 Basic Block Performance Models", IISWC 2019).
 *
 * Input, one body per line: "name<TAB>hex bytes" (spaces inside the hex are allowed;
 * lines starting with '#' are skipped).  Output, one line per body:
 * "name<TAB>hex<TAB>cycles/iter<TAB>status<TAB>detail", cycles "-" when skipped.
 *
 * Each body is copied U times into an executable page, inside a counted loop whose
 * counter lives in memory (every general-purpose register belongs to the body):
 *
 *	loop:	body x U
 *		subq $1, counter(%rip)
 *		jnz loop
 *		jmp *exit(%rip)
 *
 * bh_enter (below, in assembly) saves the callee-saved registers and rsp, sets MXCSR to
 * flush denormals (DAZ|FTZ), fills the vector registers with 1.0f pairs and the mask
 * registers with ones, points every general-purpose register, rsp included, at X (the
 * middle of a 16 MB region), and jumps to the loop; the loop jumps back to bh_exit.
 * The region is filled with the 8-byte value X, so a loaded pointer is again X.  A
 * fault on an unmapped page outside the region maps that page too and the run starts
 * again (BHive maps every such page onto one physical page; here each has its own, see
 * bh_map); other faults (non-canonical address, write to the code, #DE, #UD) skip the
 * body.  A divide that faults with rdx = X is retried once with rdx = 0.
 *
 * Time: rdtsc between lfences around one call; for each body, runs with U and 2U
 * copies alternate, the minimum of each over the repetitions is kept, and
 *	cycles/iter = (min(2U) - min(U)) / (N * U) * cycles_per_tsc
 * which cancels the loop overhead, the entry and the timer.  cycles_per_tsc comes from
 * the same measurement of a chain of dependent `add $1,%rax` (1 cycle each).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>
#include <cpuid.h>

#define BH_X		0x40000000ull		/* register value; low half reads as 2.0f */
#define BH_REGION	(16ull << 20)
#define BH_CODE_MAX	(1u << 20)
#define BH_MAX_PAGES	512			/* pages mapped on demand per body */
#define BH_BODY_MAX	4096
#define BH_CODE_BUDGET	2048			/* bytes of unrolled body at U */

/* Shared with the assembly. */
uint64_t bh_gpr[16];		/* rax rcx rdx rbx rsp rbp rsi rdi r8 .. r15 */
uint64_t bh_saved_rsp;
uint64_t bh_target;
uint64_t bh_vec[8] __attribute__((aligned(64)));
uint32_t bh_mxcsr = 0x9fc0, bh_mxcsr_default = 0x1f80;
int bh_avx512;

void bh_enter(void);

__asm__(
	".text\n"
	".globl bh_enter\n"
	".type bh_enter, @function\n"
	"bh_enter:\n"
	"	push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"	mov %rsp, bh_saved_rsp(%rip)\n"
	"	fninit\n"
	"	cld\n"
	"	ldmxcsr bh_mxcsr(%rip)\n"
	"	cmpl $0, bh_avx512(%rip)\n"
	"	je 1f\n"
	"	vmovdqa64 bh_vec(%rip), %zmm0\n"
	"	.irp r,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"	vmovdqa64 %zmm0, %zmm\\r\n"
	"	.endr\n"
	"	kxnorq %k0, %k0, %k1\n"
	"	.irp r,2,3,4,5,6,7\n"
	"	kmovq %k1, %k\\r\n"
	"	.endr\n"
	"	jmp 2f\n"
	"1:	vmovdqa bh_vec(%rip), %ymm0\n"
	"	.irp r,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	vmovdqa %ymm0, %ymm\\r\n"
	"	.endr\n"
	/* clean upper halves, as in real programs: with dirty ones every legacy
	 * SSE write merges and runs at half throughput (docs/models.md) */
	"2:	vzeroupper\n"
	"	mov bh_gpr+0(%rip), %rax\n"
	"	mov bh_gpr+8(%rip), %rcx\n"
	"	mov bh_gpr+16(%rip), %rdx\n"
	"	mov bh_gpr+24(%rip), %rbx\n"
	"	mov bh_gpr+40(%rip), %rbp\n"
	"	mov bh_gpr+48(%rip), %rsi\n"
	"	mov bh_gpr+56(%rip), %rdi\n"
	"	mov bh_gpr+64(%rip), %r8\n"
	"	mov bh_gpr+72(%rip), %r9\n"
	"	mov bh_gpr+80(%rip), %r10\n"
	"	mov bh_gpr+88(%rip), %r11\n"
	"	mov bh_gpr+96(%rip), %r12\n"
	"	mov bh_gpr+104(%rip), %r13\n"
	"	mov bh_gpr+112(%rip), %r14\n"
	"	mov bh_gpr+120(%rip), %r15\n"
	"	mov bh_gpr+32(%rip), %rsp\n"
	"	jmp *bh_target(%rip)\n"
	".globl bh_exit\n"
	"bh_exit:\n"
	"	mov bh_saved_rsp(%rip), %rsp\n"
	"	ldmxcsr bh_mxcsr_default(%rip)\n"
	"	vzeroupper\n"
	"	fninit\n"
	"	pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"	ret\n"
	".size bh_enter, .-bh_enter\n");

void bh_exit(void);

struct bh_code {
	uint8_t *code;		/* BH_CODE_MAX bytes, then one data page */
	uint64_t *data;		/* [0] counter, [1] exit address */
};

static sigjmp_buf bh_jmp;
static volatile sig_atomic_t bh_sig;
static volatile uintptr_t bh_fault_addr;
static volatile int bh_fault_code;

static void bh_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	bh_sig = sig;
	bh_fault_addr = (uintptr_t)si->si_addr;
	bh_fault_code = si->si_code;
	siglongjmp(bh_jmp, 1);
}

static int bh_signals(void)
{
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGALRM };

	if (sigaltstack(&ss, NULL))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bh_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL))
			return -errno;
	return 0;
}

/* Fill [p, p + len) with X: loaded words are pointers into the region. */
static void bh_fill_range(uintptr_t p, size_t len)
{
	uint64_t *w = (uint64_t *)p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = BH_X;
}

/*
 * Before each run, the 64 KB around X, where every register points on entry; the
 * whole region and the pages mapped on demand at the start of each body and after a
 * fault (bh_fill_all).
 */
static void bh_fill(void)
{
	bh_fill_range(BH_X - 32768, 65536);
}

static uintptr_t bh_pages[BH_MAX_PAGES];
static int bh_npages;

static void bh_fill_all(void)
{
	bh_fill_range(BH_X - BH_REGION / 2, BH_REGION);
	for (int i = 0; i < bh_npages; i++)
		bh_fill_range(bh_pages[i], 4096);
}

/* Private pages: a different physical page per virtual page, so a store and a load
 * through different virtual pages never alias physically (they would with BHive's one
 * shared page, and the core then pays memory-ordering penalties real code does not). */
static int bh_map(uintptr_t addr, size_t len)
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

static int bh_map_page(uintptr_t page)
{
	int rc = bh_map(page, 4096);

	if (!rc)
		bh_fill_range(page, 4096);
	return rc;
}

static int bh_region(void)
{
	int rc = bh_map(BH_X - BH_REGION / 2, BH_REGION);

	if (!rc)
		bh_fill_all();
	return rc;
}

static void bh_unmap_extra(void)
{
	for (int i = 0; i < bh_npages; i++)
		munmap((void *)bh_pages[i], 4096);
	bh_npages = 0;
}

static int bh_code_init(struct bh_code *c)
{
	c->code = mmap(NULL, BH_CODE_MAX + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->code == MAP_FAILED)
		return -errno;
	c->data = (uint64_t *)(c->code + BH_CODE_MAX);
	c->data[1] = (uint64_t)(uintptr_t)bh_exit;
	return 0;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* Lay out the loop with u copies of the body; -E2BIG if it does not fit. */
static int bh_emit(struct bh_code *c, const uint8_t *body, size_t len, unsigned u)
{
	uint8_t *p = c->code, *loop;
	uint8_t *cnt = (uint8_t *)&c->data[0], *ex = (uint8_t *)&c->data[1];

	if ((size_t)u * len + 64 > BH_CODE_MAX)
		return -E2BIG;
	if (mprotect(c->code, BH_CODE_MAX, PROT_READ | PROT_WRITE))
		return -errno;
	loop = p;
	for (unsigned i = 0; i < u; i++, p += len)
		memcpy(p, body, len);
	/* subq $1, counter(%rip) */
	p[0] = 0x48; p[1] = 0x83; p[2] = 0x2d;
	put32(p + 3, (int32_t)(cnt - (p + 8)));
	p[7] = 0x01;
	p += 8;
	/* jnz loop */
	p[0] = 0x0f; p[1] = 0x85;
	put32(p + 2, (int32_t)(loop - (p + 6)));
	p += 6;
	/* jmp *exit(%rip) */
	p[0] = 0xff; p[1] = 0x25;
	put32(p + 2, (int32_t)(ex - (p + 6)));
	p += 6;
	if (mprotect(c->code, BH_CODE_MAX, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

static inline uint64_t bh_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n rdtsc\n lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

static void bh_regs(int variant)
{
	for (int i = 0; i < 16; i++)
		bh_gpr[i] = BH_X;
	if (variant == 1)
		bh_gpr[2] = 0;		/* rdx: the high half of a dividend */
}

enum bh_status { BH_OK, BH_RETRY, BH_FAULT };

/*
 * One run of n loop iterations: ticks in *t.  BH_RETRY after mapping a page the
 * body touched; BH_FAULT with the signal in bh_sig otherwise.
 */
static enum bh_status bh_run(struct bh_code *c, uint64_t n, uint64_t *t)
{
	struct itimerval it = { .it_value = { .tv_sec = 2 } };
	struct itimerval off = { 0 };
	uint64_t t0, t1;

	bh_fill();
	c->data[0] = n;
	bh_target = (uint64_t)(uintptr_t)c->code;
	bh_sig = 0;
	if (sigsetjmp(bh_jmp, 1)) {
		setitimer(ITIMER_REAL, &off, NULL);
		__asm__ volatile("ldmxcsr %0\n vzeroupper\n fninit" :: "m"(bh_mxcsr_default));
		if (bh_sig == SIGSEGV && bh_fault_code == SEGV_MAPERR &&
		    bh_fault_addr >= 0x10000 && bh_fault_addr < 0x7fffffff0000ull &&
		    bh_npages < BH_MAX_PAGES) {
			uintptr_t page = bh_fault_addr & ~(uintptr_t)4095;

			if (!bh_map_page(page)) {
				bh_pages[bh_npages++] = page;
				bh_fill_all();
				return BH_RETRY;
			}
		}
		return BH_FAULT;
	}
	setitimer(ITIMER_REAL, &it, NULL);
	t0 = bh_tsc();
	bh_enter();
	t1 = bh_tsc();
	setitimer(ITIMER_REAL, &off, NULL);
	*t = t1 - t0;
	return BH_OK;
}

/* Run until no new page is needed. */
static enum bh_status bh_run_settled(struct bh_code *c, uint64_t n, uint64_t *t)
{
	enum bh_status s;

	while ((s = bh_run(c, n, t)) == BH_RETRY)
		;
	return s;
}

struct bh_result {
	double cycles;		/* per body iteration: median over the repetitions */
	double cycles_min;	/* from the minimum tick counts (and the fastest clock) */
	double spread;		/* (p75 - p25) / median of the per-repetition figures */
	double cpt;		/* median core cycles per TSC tick seen meanwhile */
	unsigned u;
	int variant;
	const char *why;	/* when skipped */
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const char *bh_signame(int sig)
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

static unsigned reps = 31;
/* Body executions per run at U: short runs (10-100 us) so that the lowest of a few
 * tries misses the hypervisor's time slices. */
static uint64_t body_iters = 5000;

/* The clock: add $1,%rax is one cycle per instruction on every x86-64 core. */
static const uint8_t bh_add1[] = { 0x48, 0x83, 0xc0, 0x01 };
#define BH_CAL_U	100
#define BH_CAL_N	200
static struct bh_code cal1, cal2;

static int bh_cal_init(void)
{
	if (bh_code_init(&cal1) || bh_code_init(&cal2))
		return -1;
	if (bh_emit(&cal1, bh_add1, sizeof(bh_add1), BH_CAL_U) ||
	    bh_emit(&cal2, bh_add1, sizeof(bh_add1), 2 * BH_CAL_U))
		return -1;
	return 0;
}

/*
 * Ticks per add, by the same U / 2U difference, the lowest of three tries (the vCPU
 * being descheduled only ever inflates a try); 0 on failure.
 */
static double bh_cal_ticks(void)
{
	double best = 0;

	for (int i = 0; i < 3; i++) {
		uint64_t a, b;
		double t;

		if (bh_run_settled(&cal1, BH_CAL_N, &a) != BH_OK ||
		    bh_run_settled(&cal2, BH_CAL_N, &b) != BH_OK)
			return 0;
		t = ((double)b - (double)a) / (BH_CAL_N * BH_CAL_U);
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	return best;
}

/*
 * Each repetition times the clock (add chain), the body at U and 2U copies (lowest of
 * three tries each), and the clock again, and converts its own tick difference with
 * the faster of its two clock readings: the core
 * clock of this shared VM moves with the load of the host.  The figure is the median
 * over repetitions (robust to preemption and clock changes); the minimum-based one,
 * with the fastest clock seen, is printed beside it.
 */
static int bh_measure(struct bh_code *c1, struct bh_code *c2, const uint8_t *body,
		      size_t len, struct bh_result *r)
{
	double e[256], cpts[256], q[256];
	uint64_t n, t, t1, t2, m1 = UINT64_MAX, m2 = UINT64_MAX;
	unsigned u = BH_CODE_BUDGET / (len ? len : 1), k = 0;
	double cmax = 0;
	enum bh_status s = BH_FAULT;

	u = u > 100 ? 100 : u < 4 ? 4 : u;
	n = body_iters / u;
	if (!n)
		n = 1;
	r->u = u;
	r->why = NULL;
	bh_unmap_extra();
	bh_fill_all();
	if (bh_emit(c1, body, len, u) < 0 || bh_emit(c2, body, len, 2 * u) < 0) {
		r->why = "too large";
		return -1;
	}
	for (r->variant = 0; r->variant < 2; r->variant++) {
		bh_regs(r->variant);
		/* Warm up and map what 2U touches (it runs further than U). */
		s = bh_run_settled(c2, n, &t);
		if (s == BH_OK || bh_sig != SIGFPE)
			break;
	}
	if (s != BH_OK)
		goto fault;
	for (unsigned i = 0; i < reps; i++) {
		double ca, cb;

		ca = bh_cal_ticks();
		t1 = t2 = UINT64_MAX;
		for (int j = 0; j < 3; j++) {
			uint64_t a, b;

			if (bh_run_settled(c1, n, &a) != BH_OK ||
			    bh_run_settled(c2, n, &b) != BH_OK)
				goto fault;
			t1 = a < t1 ? a : t1;
			t2 = b < t2 ? b : t2;
		}
		cb = bh_cal_ticks();
		if (ca <= 0 || cb <= 0)
			continue;
		cpts[k] = 1 / (ca < cb ? ca : cb);
		e[k] = ((double)t2 - (double)t1) / (double)(n * u) * cpts[k];
		if (cpts[k] > cmax)
			cmax = cpts[k];
		k++;
		m1 = t1 < m1 ? t1 : m1;
		m2 = t2 < m2 ? t2 : m2;
	}
	if (!k) {
		r->why = "clock";
		return -1;
	}
	memcpy(q, e, k * sizeof(e[0]));
	qsort(q, k, sizeof(q[0]), cmp_dbl);
	qsort(cpts, k, sizeof(cpts[0]), cmp_dbl);
	r->cycles = q[k / 2];
	r->spread = q[k / 2] != 0 ? (q[k * 3 / 4] - q[k / 4]) / fabs(q[k / 2]) : 0;
	r->cpt = cpts[k / 2];
	r->cycles_min = ((double)m2 - (double)m1) / (double)(n * u) * cmax;
	return 0;
fault:
	r->why = bh_signame(bh_sig);
	if (bh_sig == SIGSEGV && bh_npages >= BH_MAX_PAGES)
		r->why = "too many pages";
	return -1;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static ssize_t parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (*s) {
		int hi, lo;

		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
			s++;
			continue;
		}
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
			s += 2;
		hi = hexval(s[0]);
		lo = hi < 0 ? -1 : hexval(s[1]);
		if (lo < 0 || n == max)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return (ssize_t)n;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: harness [-c cpu] [-r reps] [-n body-iterations] [file]\n"
		"  input lines: name<TAB>hex; output: name<TAB>hex<TAB>cycles<TAB>status"
		"<TAB>detail\n");
}

int main(int argc, char **argv)
{
	struct bh_code code, code2;
	int cpu = -1, opt;
	unsigned eax, ebx, ecx, edx;
	FILE *in = stdin;
	char *line = NULL;
	size_t cap = 0;
	double cpt_lo = 1e9, cpt_hi = 0;
	unsigned nok = 0, nskip = 0;
	uint8_t body[BH_BODY_MAX];

	while ((opt = getopt(argc, argv, "c:r:n:h")) != -1) {
		switch (opt) {
		case 'c': cpu = atoi(optarg); break;
		case 'r': reps = (unsigned)atoi(optarg); break;
		case 'n': body_iters = strtoull(optarg, NULL, 0); break;
		default: usage(); return opt == 'h' ? 0 : 2;
		}
	}
	if (reps < 1 || reps > 256)
		reps = 31;
	if (optind < argc && !(in = fopen(argv[optind], "r"))) {
		perror(argv[optind]);
		return 1;
	}
	if (cpu >= 0 && pin_cpu(cpu))
		fprintf(stderr, "harness: cannot pin to cpu %d: %s\n", cpu, strerror(errno));
	if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
		bh_avx512 = !!(ebx & (1u << 16)) && !!(ebx & (1u << 30));	/* F, BW */
	for (int i = 0; i < 8; i++)
		bh_vec[i] = 0x3f8000003f800000ull;	/* 1.0f, 1.0f; 0.0078125 as double */
	if (bh_signals() || bh_region() || bh_code_init(&code) || bh_code_init(&code2) ||
	    bh_cal_init()) {
		fprintf(stderr, "harness: setup failed: %s\n", strerror(errno));
		return 1;
	}
	printf("# reps %u  body_iters %llu  avx512 %d  cpu %d\n", reps,
	       (unsigned long long)body_iters, bh_avx512, cpu);
	fflush(stdout);
	while (getline(&line, &cap, in) > 0) {
		char *tab, *name = line;
		ssize_t len;
		struct bh_result r;

		line[strcspn(line, "\n")] = 0;
		if (!*line || *line == '#')
			continue;
		tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		len = parse_hex(tab + 1, body, sizeof(body));
		if (len <= 0) {
			printf("%s\t%s\t-\tskipped\tbad hex\n", name, tab + 1);
			nskip++;
			continue;
		}
		if (bh_measure(&code, &code2, body, (size_t)len, &r)) {
			printf("%s\t%s\t-\tskipped\t%s\n", name, tab + 1, r.why);
			nskip++;
		} else {
			printf("%s\t%s\t%.3f\tok\tmin %.3f iqr %.1f%% cpt %.3f U %u%s pages %d\n",
			       name, tab + 1, r.cycles, r.cycles_min, 100 * r.spread, r.cpt, r.u,
			       r.variant ? " rdx=0" : "", bh_npages);
			cpt_lo = r.cpt < cpt_lo ? r.cpt : cpt_lo;
			cpt_hi = r.cpt > cpt_hi ? r.cpt : cpt_hi;
			nok++;
		}
		fflush(stdout);
	}
	printf("# core cycles per TSC tick (add chain): %.4f .. %.4f over the bodies; "
	       "%u measured, %u skipped\n", cpt_lo, cpt_hi, nok, nskip);
	bh_unmap_extra();
	free(line);
	return 0;
}
