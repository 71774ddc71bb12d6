/*
 * sigways.c - a program that installs, resets or blocks the signals the
 * path-sample runtime uses (SIGTRAP and its realtime timer signal) through
 * every entry point glibc has, and programs that ask to be traced by their
 * parent (PTRACE_TRACEME), for tests/test_pathrt.c and tests/test_record.c
 * (docs/paths.md, "What the runtime interposes").
 *
 * usage: sigways MODE N
 * Every mode then runs N iterations of a loop with no system calls and
 * prints "sum S traps T"; the exit status is 0 when the program saw what
 * it would see natively (its own SIGTRAP handler called exactly once per
 * raise, its handler reported back), else 3.  Modes:
 *   sigset sysv __sysv bsd ssignal __sigaction sigvec siginterrupt
 *            install h for SIGTRAP that way, raise(SIGTRAP) once
 *   rtreset  sigset(s, SIG_DFL) for every s in SIGRTMIN..SIGRTMAX
 *   rawsys   syscall(SYS_rt_sigaction) through glibc's syscall(): h for
 *            SIGTRAP (with its own restorer), SIG_DFL for every RT signal
 *   asm      h for SIGTRAP by an inline rt_sigaction system call that no
 *            library call sees, raise(SIGTRAP) once
 *   sighold  sighold(SIGTRAP) for the loop (sigrelse after)
 *   sigblock sigblock(sigmask(SIGTRAP)) for the loop
 *   sig      h for SIGUSR1, raise(SIGUSR1) 3 times during the loop
 *   exec     exec "sigways plain N"
 *   stop     SIGSTOP to itself; a child sends SIGCONT 300 ms later;
 *            prints "stopped MS"
 *   kill     the loop, then SIGTERM to itself
 *   traceme, tracesig, traceexec, tracestop, tracekill
 *            ptrace(PTRACE_TRACEME) first, then as plain, sig, exec, stop,
 *            kill (natively, with a parent that is no tracer, any signal
 *            but SIGKILL then stops it for good)
 *   threadsig, threadtrace
 *            sig in a second thread, which asks to be traced first in
 *            threadtrace (so the tracer sees its tid, not the process's)
 *   plain    the loop alone
 */
#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Not declared for POSIX 2008 (which _GNU_SOURCE selects). */
sighandler_t bsd_signal(int sig, sighandler_t h);

/* sigvec is a compatibility symbol only (no declaration any more). */
struct old_sigvec {
	void (*sv_handler)(int);
	int sv_mask;
	int sv_flags;
};
int old_sigvec(int sig, const struct old_sigvec *vec, struct old_sigvec *ovec);
__asm__(".symver old_sigvec, sigvec@GLIBC_2.2.5");

/* The kernel's struct sigaction (x86-64). */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
#define K_SA_RESTORER 0x04000000UL

void sw_restore(void);
__asm__(".text\n"
	".globl sw_restore\n"
	".type sw_restore,@function\n"
	"sw_restore:\n"
	"	mov $15, %eax\n"	/* rt_sigreturn */
	"	syscall\n"
	".size sw_restore, .-sw_restore\n");

static volatile unsigned long traps, usr1s;

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1s++;
}

static unsigned long work(unsigned long n)
{
	unsigned long x = 88172645463325252ULL, s = 0;

	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s += x >> 60;
	}
	return s;
}

static long raw_sigaction(int sig, const struct ksigaction *act, struct ksigaction *old)
{
	register long r10 __asm__("r10") = 8;	/* sizeof the kernel's sigset */
	long rc;

	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"((long)SYS_rt_sigaction), "D"((long)sig), "S"(act), "d"(old),
			   "r"(r10)
			 : "rcx", "r11", "memory");
	return rc;
}

/* Install h for SIGTRAP the way mode says; 0 when the mode is not one. */
static int install(const char *mode)
{
	if (!strcmp(mode, "sigset"))
		return sigset(SIGTRAP, on_trap) != SIG_ERR ? 1 : -1;
	if (!strcmp(mode, "sysv"))
		return sysv_signal(SIGTRAP, on_trap) != SIG_ERR ? 1 : -1;
	if (!strcmp(mode, "__sysv"))
		return __sysv_signal(SIGTRAP, on_trap) != SIG_ERR ? 1 : -1;
	if (!strcmp(mode, "bsd"))
		return bsd_signal(SIGTRAP, on_trap) != SIG_ERR ? 1 : -1;
	if (!strcmp(mode, "ssignal"))
		return ssignal(SIGTRAP, on_trap) != SIG_ERR ? 1 : -1;
	if (!strcmp(mode, "siginterrupt")) {
		if (signal(SIGTRAP, on_trap) == SIG_ERR)
			return -1;
		return siginterrupt(SIGTRAP, 1) ? -1 : 1;
	}
	if (!strcmp(mode, "__sigaction")) {
		extern int __sigaction(int, const struct sigaction *, struct sigaction *);
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_trap;
		return __sigaction(SIGTRAP, &sa, NULL) ? -1 : 1;
	}
	if (!strcmp(mode, "sigvec")) {
		struct old_sigvec v = { on_trap, 0, 0 };

		return old_sigvec(SIGTRAP, &v, NULL) ? -1 : 1;
	}
	if (!strcmp(mode, "rawsys") || !strcmp(mode, "asm")) {
		struct ksigaction k = { on_trap, K_SA_RESTORER, sw_restore, 0 };

		if (!strcmp(mode, "asm"))
			return raw_sigaction(SIGTRAP, &k, NULL) ? -1 : 1;
		return syscall(SYS_rt_sigaction, SIGTRAP, &k, NULL, 8) ? -1 : 1;
	}
	return 0;
}

/* The handler for SIGTRAP as the program believes it: h after install. */
static int handler_is_ours(const char *mode)
{
	struct sigaction sa;

	if (!strcmp(mode, "sysv") || !strcmp(mode, "__sysv"))
		return 1;	/* reset to SIG_DFL by the raise: checked below */
	if (sigaction(SIGTRAP, NULL, &sa))
		return 0;
	return sa.sa_handler == on_trap;
}

static int reset_rt(const char *mode)
{
	struct ksigaction dfl = { SIG_DFL, 0, NULL, 0 };

	for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
		if (!strcmp(mode, "rtreset") && sigset(s, SIG_DFL) == SIG_ERR)
			return -1;
		if (!strcmp(mode, "rawsys") && syscall(SYS_rt_sigaction, s, &dfl, NULL, 8))
			return -1;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The modes after "trace" (or alone, untraced, to compare with); -1: not one. */
static int special(const char *what, unsigned long n, char *self)
{
	int ok = 1;

	if (!strcmp(what, "exec")) {
		char num[32];
		char *argv[] = { self, "plain", num, NULL };

		snprintf(num, sizeof(num), "%lu", n);
		execv("/proc/self/exe", argv);
		perror("exec");
		return 3;
	}
	if (!strcmp(what, "sig")) {
		signal(SIGUSR1, on_usr1);
		for (int i = 0; i < 3; i++) {
			printf("part %lu\n", work(n / 3));
			raise(SIGUSR1);
		}
		ok = usr1s == 3;
		printf("usr1 %lu\n", usr1s);
	} else if (!strcmp(what, "stop")) {
		pid_t me = getpid(), c = fork();
		double t0;

		if (c == 0) {
			struct timespec ts = { 0, 300000000L };

			nanosleep(&ts, NULL);
			kill(me, SIGCONT);
			_exit(0);
		}
		t0 = now_ms();
		raise(SIGSTOP);
		printf("stopped %.0f\n", now_ms() - t0);
		waitpid(c, NULL, 0);
	} else if (strcmp(what, "me") && strcmp(what, "kill")) {
		return -1;
	}
	printf("sum %lu traps %lu\n", work(n), traps);
	if (!strcmp(what, "kill"))
		raise(SIGTERM);
	return ok ? 0 : 3;
}

struct thr {
	int trace;
	unsigned long n;
	int rc;
};

static void *thread_main(void *v)
{
	struct thr *t = v;

	if (t->trace && ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
		perror("PTRACE_TRACEME");
		t->rc = 3;
		return NULL;
	}
	t->rc = special("sig", t->n, NULL);
	return NULL;
}

/* "sig" in a second thread, traced or not; the main thread waits for it. */
static int in_thread(int trace, unsigned long n)
{
	struct thr t = { trace, n, 3 };
	pthread_t th;

	if (pthread_create(&th, NULL, thread_main, &t) || pthread_join(th, NULL))
		return 3;
	return t.rc;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000;
	int ok = 1, r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "threadsig") || !strcmp(mode, "threadtrace"))
		return in_thread(!strcmp(mode, "threadtrace"), n);
	if (!strncmp(mode, "trace", 5) && ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
		perror("PTRACE_TRACEME");
		return 3;
	}
	r = special(!strncmp(mode, "trace", 5) ? mode + 5 : mode, n, argv[0]);
	if (r >= 0)
		return r;
	r = install(mode);
	if (r < 0) {
		perror(mode);
		return 3;
	}
	if (r > 0) {
		raise(SIGTRAP);
		ok = traps == 1 && handler_is_ours(mode);
	}
	if (reset_rt(mode)) {
		perror(mode);
		return 3;
	}
	if (!strcmp(mode, "sighold"))
		sighold(SIGTRAP);
	if (!strcmp(mode, "sigblock"))
		sigblock(1 << (SIGTRAP - 1));	/* sigmask(SIGTRAP) */
	printf("sum %lu traps %lu\n", work(n), traps);
	if (!strcmp(mode, "sighold"))
		sigrelse(SIGTRAP);
	if (!strcmp(mode, "sysv") || !strcmp(mode, "__sysv")) {
		/* one-shot: SIG_DFL now, as the kernel would have left it */
		struct sigaction sa;

		ok = ok && !sigaction(SIGTRAP, NULL, &sa) && sa.sa_handler == SIG_DFL;
	}
	return ok ? 0 : 3;
}
