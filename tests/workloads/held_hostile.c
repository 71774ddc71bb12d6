/*
 * held_hostile.c - programs that make life hard for a profiler, for the
 * "held list" of tests/test_held.c and bench/soak/soak.sh: each mode checks
 * itself and, when all went as it should, exits with STATUS (default 0), so
 * a test can compare the status under `dcpi record` with the native one.
 * A failed self-check exits 100 or more.
 *
 * usage: held_hostile MODE [N] [STATUS]
 *   children N  N children, each spinning a little and exiting with its
 *               index mod 64; the parent checks every status
 *   threads N   N threads spinning at once, each result checked after join
 *   blocked     every signal blocked while it spins, then a pending SIGUSR1
 *               delivered at unblock
 *   trap        its own SIGTRAP handler (sigaction, SA_SIGINFO) and an int3
 *               every 4096 iterations: every one must reach the handler
 *   segv        spins, then writes through a null pointer
 *   setuid      as root: drops to uid/gid 65534 while it runs, then forks
 *               and spins (as another user: a no-op)
 *   cgo         what the Go runtime does to signals: SIGURG and SIGPROF
 *               handlers with SA_ONSTACK on each thread's sigaltstack,
 *               ITIMER_PROF at 1 ms, and threads preempting each other with
 *               pthread_kill(SIGURG) while they spin; checks each thread's
 *               alternate stack was used and is still its own
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "own_trap.h"

static volatile uint64_t sink;

static uint64_t spin(uint64_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static int mode_children(int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			return 101;
		if (pid == 0) {
			sink = spin(200000, (uint64_t)i);
			_exit(i % 64);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != i % 64)
			bad++;
	}
	if (bad)
		fprintf(stderr, "held_hostile: %d of %d children with a wrong status\n", bad, n);
	return bad ? 102 : 0;
}

struct job {
	pthread_t t;
	uint64_t seed, out;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;

	j->out = spin(2000000, j->seed);
	return NULL;
}

static int mode_threads(int n)
{
	struct job *j = calloc((size_t)n, sizeof(*j));
	int bad = 0;

	if (!j)
		return 101;
	for (int i = 0; i < n; i++) {
		j[i].seed = (uint64_t)i + 1;
		if (pthread_create(&j[i].t, NULL, thread_main, &j[i]))
			return 103;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(j[i].t, NULL);
		bad += j[i].out != spin(2000000, (uint64_t)i + 1);
	}
	free(j);
	return bad ? 104 : 0;
}

static volatile sig_atomic_t usr1_seen, traps;

static void on_usr1(int sig)
{
	usr1_seen++;
}

static int mode_blocked(void)
{
	sigset_t all, old;

	signal(SIGUSR1, on_usr1);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sink = spin(30000000, 7);
	raise(SIGUSR1);
	sink = spin(30000000, 8);
	if (usr1_seen)
		return 105;	/* delivered while blocked */
	sigprocmask(SIG_SETMASK, &old, NULL);
	return usr1_seen == 1 ? 0 : 106;
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	traps++;
}

static int mode_trap(void)
{
	int expect = 0;

	if (own_trap(on_trap))
		return 107;
	for (int i = 0; i < 64 * 4096; i++) {
		sink = spin(1024, (uint64_t)i);
		if (i % 4096 == 0) {
			__asm__ volatile("int3");
			expect++;
		}
	}
	if (traps != expect) {
		fprintf(stderr, "held_hostile: %d of %d int3 reached the handler\n",
			(int)traps, expect);
		return 108;
	}
	return 0;
}

static int mode_segv(void)
{
	sink = spin(30000000, 9);
	*(volatile int *)0 = 1;
	return 109;
}

static int mode_setuid(void)
{
	pid_t pid;
	int st;

	sink = spin(50000000, 10);
	if (geteuid() == 0 && (setgid(65534) || setuid(65534) || getuid() != 65534))
		return 110;
	sink = spin(50000000, 11);
	pid = fork();
	if (pid < 0)
		return 111;
	if (pid == 0) {
		sink = spin(50000000, 12);
		_exit(geteuid() == 0 ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 112;
	return 0;
}

/* ---- cgo: the Go runtime's way with signals ------------------------------ */

#define CGO_THREADS 4
#define ALT_SIZE (64 * 1024)

struct gthread {
	pthread_t t;
	char *alt;
	volatile sig_atomic_t urg, on_alt;
};

static struct gthread g[CGO_THREADS];
static volatile sig_atomic_t profs;
static pthread_barrier_t all_made;
static int finished;

static struct gthread *self_g(void)
{
	for (int i = 0; i < CGO_THREADS; i++)
		if (pthread_equal(g[i].t, pthread_self()))
			return &g[i];
	return NULL;
}

static void on_urg(int sig)
{
	struct gthread *me = self_g();
	char here;

	if (!me)
		return;
	me->urg++;
	if (&here >= me->alt && &here < me->alt + ALT_SIZE)
		me->on_alt++;
}

static void on_prof(int sig)
{
	profs++;
}

static void *gthread_main(void *arg)
{
	struct gthread *me = arg;
	stack_t ss = { .ss_sp = me->alt, .ss_size = ALT_SIZE }, now;

	if (sigaltstack(&ss, NULL))
		return (void *)1;
	pthread_barrier_wait(&all_made);	/* every g[].t is set */
	for (int i = 0; i < 200; i++) {
		sink = spin(100000, (uint64_t)i);
		pthread_kill(g[(me - g + 1) % CGO_THREADS].t, SIGURG);	/* preempt the next */
	}
	if (sigaltstack(NULL, &now) || now.ss_sp != me->alt || now.ss_size != ALT_SIZE)
		return (void *)2;
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
	/* stay until no one sends any more: a SIGURG to a gone thread is undefined */
	while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) < CGO_THREADS)
		sink = spin(1000, 1);
	return NULL;
}

static int mode_cgo(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	int bad = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_urg;
	if (sigaction(SIGURG, &sa, NULL))
		return 113;
	sa.sa_handler = on_prof;
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL))
		return 114;
	for (int i = 0; i < CGO_THREADS; i++) {
		g[i].alt = malloc(ALT_SIZE);
		if (!g[i].alt)
			return 101;
	}
	pthread_barrier_init(&all_made, NULL, CGO_THREADS + 1);
	for (int i = 0; i < CGO_THREADS; i++)
		if (pthread_create(&g[i].t, NULL, gthread_main, &g[i]))
			return 103;
	pthread_barrier_wait(&all_made);
	for (int i = 0; i < CGO_THREADS; i++) {
		void *r;

		pthread_join(g[i].t, &r);
		bad += r != NULL;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	for (int i = 0; i < CGO_THREADS; i++) {
		bad += !g[i].urg || g[i].on_alt != g[i].urg;
		free(g[i].alt);
	}
	if (bad || !profs) {
		fprintf(stderr, "held_hostile: cgo: %d threads wrong, %d SIGPROF\n", bad,
			(int)profs);
		return 115;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	int status = argc > 3 ? atoi(argv[3]) : 0;
	int rc;

	if (!strcmp(m, "children"))
		rc = mode_children(n > 0 ? n : 200);
	else if (!strcmp(m, "threads"))
		rc = mode_threads(n > 0 ? n : 64);
	else if (!strcmp(m, "blocked"))
		rc = mode_blocked();
	else if (!strcmp(m, "trap"))
		rc = mode_trap();
	else if (!strcmp(m, "segv"))
		rc = mode_segv();
	else if (!strcmp(m, "setuid"))
		rc = mode_setuid();
	else if (!strcmp(m, "cgo"))
		rc = mode_cgo();
	else {
		fprintf(stderr, "usage: held_hostile children|threads|blocked|trap|segv|setuid|"
			"cgo [N] [STATUS]\n");
		return 2;
	}
	return rc ? rc : status;
}
