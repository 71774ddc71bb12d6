/*
 * pathloop.c - workloads for the path-sample runtime (tests/test_pathrt.c,
 * bench/bench_paths.sh; docs/paths.md).  The core is pl_loop, in assembly
 * so its branch has a known address: each iteration steps an LCG and the
 * conditional branch at pl_branch falls through (to pl_fall) when the
 * top two bits are zero, about 1/4 of the time, else jumps to pl_join.  The
 * exact number of fall-throughs is printed, so a test can compare the
 * ratio the path samples saw with the truth.
 *
 * usage: pathloop MODE N
 *   branch   N iterations; prints "fallthrough F of N"
 *   threads  4 threads of N iterations each
 *   fork     a child runs N iterations, the parent waits
 *   exec     N/4 iterations, then exec "pathloop branch N"
 *   trap     own SIGTRAP and SIGPROF handlers, an int3 every 4096
 *            iterations: exit 3 unless every int3 reached the handler
 *   block    half the iterations with every signal blocked, raise() and
 *            sigprocmask() in between
 *   signals  a SIGALRM every 0.2 ms of CPU time (ITIMER_PROF-like) handled
 *            by on_alarm while the loop runs
 *   rep      rep movsb of 64 KiB, repeatedly (at pl_rep)
 *   syscalls a getppid() system call every 64 iterations
 *   crash    N iterations, then a write through a null pointer
 *   crashmid a loop that watches its own trap flag (pushf) and writes
 *            through a null pointer at the start of the 20th burst it sees,
 *            so the crash happens while it is being single-stepped
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "own_trap.h"

unsigned long pl_loop(unsigned long n, unsigned long seed);
void pl_copy(void *dst, const void *src, unsigned long n);

__asm__(".text\n"
	".globl pl_loop\n"
	".type pl_loop,@function\n"
	"pl_loop:\n"
	"	xor %eax, %eax\n"
	"	movabs $6364136223846793005, %r8\n"
	"	movabs $1442695040888963407, %r9\n"
	"	test %rdi, %rdi\n"
	"	jz 3f\n"
	"1:	imul %r8, %rsi\n"
	"	add %r9, %rsi\n"
	"	mov %rsi, %rdx\n"
	"	shr $62, %rdx\n"
	".globl pl_branch\n"
	"pl_branch:\n"
	"	jnz 2f\n"
	".globl pl_fall\n"
	"pl_fall:\n"
	"	inc %rax\n"
	".globl pl_join\n"
	"2:\n"
	"pl_join:\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"3:	ret\n"
	".size pl_loop, .-pl_loop\n"
	".globl pl_copy\n"
	".type pl_copy,@function\n"
	"pl_copy:\n"
	"	mov %rdx, %rcx\n"
	".globl pl_rep\n"
	"pl_rep:\n"
	"	rep movsb\n"
	"	ret\n"
	".size pl_copy, .-pl_copy\n");

static unsigned long iters;
static volatile unsigned long alarms, traps, int3s, profs;

static unsigned long run(unsigned long n, unsigned long seed)
{
	unsigned long f = pl_loop(n, seed);

	printf("fallthrough %lu of %lu\n", f, n);
	return f;
}

static void *thread_main(void *arg)
{
	run(iters, (unsigned long)(uintptr_t)arg);
	return NULL;
}

static int mode_threads(void)
{
	pthread_t t[4];

	for (unsigned long i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)(i + 1)))
			return 2;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int mode_fork(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 2;
	if (pid == 0) {
		run(iters, 7);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 2;
	return 0;
}

static int mode_exec(const char *self)
{
	char n[32];

	pl_loop(iters / 4, 3);
	snprintf(n, sizeof(n), "%lu", iters);
	fflush(stdout);
	execl(self, self, "branch", n, (char *)NULL);
	return 2;
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SI_KERNEL || si->si_code == TRAP_BRKPT)
		traps++;
}

static void on_prof(int sig)
{
	profs++;
}

static int mode_trap(void)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	if (own_trap(on_trap))
		return 4;	/* the program must see its own handler */
	signal(SIGPROF, on_prof);
	setitimer(ITIMER_PROF, &it, NULL);
	for (unsigned long i = 0; i < iters; i += 4096) {
		pl_loop(4096, i + 1);
		__asm__ volatile("int3");
		int3s++;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	printf("int3 %lu traps %lu profs %lu\n", int3s, traps, profs);
	return traps == int3s && profs > 0 ? 0 : 3;
}

static void on_usr1(int sig)
{
	alarms++;
}

static int mode_block(void)
{
	sigset_t all, none;

	signal(SIGUSR1, on_usr1);
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &all, NULL);
	pl_loop(iters / 2, 5);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (unsigned long i = 0; i < iters / 2; i += 8192) {
		pl_loop(8192, i + 1);
		raise(SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		pthread_sigmask(SIG_SETMASK, &none, NULL);
	}
	printf("usr1 %lu\n", alarms);
	return alarms == (iters / 2 + 8191) / 8192 ? 0 : 3;
}

void on_alarm(int sig)
{
	alarms++;
	for (volatile int i = 0; i < 50; i++)
		;
}

static int mode_signals(void)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };

	signal(SIGVTALRM, on_alarm);
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	run(iters, 9);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	printf("alarms %lu\n", alarms);
	return alarms ? 0 : 3;
}

static int mode_rep(void)
{
	static char a[1 << 16], b[1 << 16];

	for (unsigned long i = 0; i < iters / 4096; i++) {
		a[i & 0xffff] = (char)i;
		pl_copy(b, a, sizeof(a));
	}
	return b[0] == a[0] ? 0 : 3;
}

static int mode_syscalls(void)
{
	unsigned long s = 0;

	/* A syscall every 27 or 35 instructions: a burst starts right after one
	 * (a CPU-time timer expiring in the kernel signals at its return), so a
	 * burst of K = 32 steps reaches the next syscall on every other round:
	 * every run has bursts cut short, not only some (with 64 loop iterations
	 * between syscalls, a quarter of the runs had none). */
	for (unsigned long i = 0; i < iters; i++) {
		pl_loop(i & 1, i + 1);
		s += (unsigned long)syscall(SYS_getppid);
	}
	return s ? 0 : 3;
}

/* EFLAGS.TF as the program sees it: set while a burst steps it. */
static int stepped(void)
{
	unsigned long f;

	__asm__ volatile("pushf; pop %0" : "=r"(f));
	return (f >> 8) & 1;
}

static int mode_crashmid(int small)
{
	int seen = 0, prev = 0;

	for (;;) {
		int s = stepped();

		if (s && !prev && ++seen == 20)
			*(volatile int *)(uintptr_t)small = 0;	/* unmapped */
		prev = s;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "branch";

	iters = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000000;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "branch"))
		return run(iters, 1), 0;
	if (!strcmp(mode, "threads"))
		return mode_threads();
	if (!strcmp(mode, "fork"))
		return mode_fork();
	if (!strcmp(mode, "exec"))
		return mode_exec(argv[0]);
	if (!strcmp(mode, "trap"))
		return mode_trap();
	if (!strcmp(mode, "block"))
		return mode_block();
	if (!strcmp(mode, "signals"))
		return mode_signals();
	if (!strcmp(mode, "rep"))
		return mode_rep();
	if (!strcmp(mode, "syscalls"))
		return mode_syscalls();
	if (!strcmp(mode, "crashmid"))
		return mode_crashmid(argc);
	if (!strcmp(mode, "crash")) {
		run(iters, 1);
		*(volatile int *)(uintptr_t)argc = 0;	/* argc is small: unmapped */
		return 0;
	}
	fprintf(stderr, "pathloop: unknown mode %s\n", mode);
	return 2;
}
