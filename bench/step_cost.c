/*
 * step_cost.c - what one single step costs on this machine, the two ways a
 * collector can take path samples (docs/paths.md, "Why a preloaded
 * runtime"): in the process (EFLAGS.TF set by the program, a SIGTRAP
 * handler that records the pc and returns) and from a tracer
 * (PTRACE_SINGLESTEP and waitpid per step, PTRACE_GETREGS for the pc).
 * Prints microseconds per step, wall and CPU, the least of 5 runs of each.
 *
 * usage: step_cost [steps]   (default 20000)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile long left;
static volatile unsigned long sink;

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	sink += (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	if (--left <= 0)
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
}

static void spin_stepped(long n)
{
	left = n;
	__asm__ volatile("pushf; orq $0x100, (%%rsp); popf" ::: "memory", "cc");
	while (left > 0)
		sink++;
}

/* In-process: seconds of wall and of this process's CPU for n steps. */
static void in_process(long n, double *wall, double *cpu)
{
	struct sigaction sa;
	double w0, c0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	spin_stepped(n);
	*wall = now(CLOCK_MONOTONIC) - w0;
	*cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
}

static double child_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* A tracer steps a child n times: wall, and CPU of both processes. */
static int traced(long n, double *wall, double *cpu)
{
	struct user_regs_struct regs;
	double w0, c0, k0;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		for (;;)
			sink++;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		return -1;
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	k0 = child_cpu();
	for (long i = 0; i < n; i++) {
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) || waitpid(pid, &status, 0) != pid)
			return -1;
		ptrace(PTRACE_GETREGS, pid, NULL, &regs);
		sink += regs.rip;
	}
	*wall = now(CLOCK_MONOTONIC) - w0;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	*cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0 + child_cpu() - k0;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	double bw[2] = { 1e9, 1e9 }, bc[2] = { 1e9, 1e9 }, w, c;

	if (n <= 0)
		n = 20000;
	for (int r = 0; r < 5; r++) {
		in_process(n, &w, &c);
		if (w < bw[0])
			bw[0] = w;
		if (c < bc[0])
			bc[0] = c;
		if (traced(n, &w, &c))
			continue;
		if (w < bw[1])
			bw[1] = w;
		if (c < bc[1])
			bc[1] = c;
	}
	printf("in-process TF + SIGTRAP: %.2f us/step wall, %.2f us/step cpu\n",
	       bw[0] / (double)n * 1e6, bc[0] / (double)n * 1e6);
	if (bw[1] < 1e9)
		printf("ptrace single step:      %.2f us/step wall, %.2f us/step cpu "
		       "(tracer + tracee)\n", bw[1] / (double)n * 1e6, bc[1] / (double)n * 1e6);
	else
		printf("ptrace single step:      not permitted here\n");
	return 0;
}
