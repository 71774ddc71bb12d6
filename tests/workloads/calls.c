/*
 * calls.c - a procedure whose calls are known exactly, for calls counted at
 * the entry (docs/paths.md, "Calls counted at the entry"; tests/
 * test_entry_count.c).  cl_count(x) returns x + 1 behind a fixed prologue,
 *   push %rbx; mov %rdi,%rbx; sub $16,%rsp     53 48 89 fb 48 83 ec 10
 * the whole instructions a 5-byte jump displaces (CL_ENTRY, which the test
 * writes into its plan as entry=HEX).
 *
 *   calls N M K     cl_count called N times from main, M times from a
 *                   second thread and K times in a forked child; prints
 *                   "child K sum S" (the child) and "calls N M K sum S"
 *   calls loop N    N calls in a tight loop; prints "loop N sum S ns/call T"
 *                   (docs/paths.md's cost of counting: bench/paths/calls_cost.sh)
 *   calls dlopen LIB N   N calls of LIB's cl_count after dlopen(LIB): this
 *                   file built with -DCL_LIB -shared -fPIC, cl_count alone
 * S, the sum of what the calls returned, is the same with or without
 * counting.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CL_ENTRY "534889fb4883ec10"

__asm__(".text\n"
	".p2align 4\n"
	".globl cl_count\n"
	".type cl_count,@function\n"
	"cl_count:\n"
	"	push %rbx\n"
	"	mov %rdi,%rbx\n"
	"	sub $16,%rsp\n"
	"	lea 1(%rbx),%rax\n"
	"	add $16,%rsp\n"
	"	pop %rbx\n"
	"	ret\n"
	".size cl_count, .-cl_count\n");

unsigned long cl_count(unsigned long x);

#ifndef CL_LIB

static unsigned long calls_of(unsigned long (*fn)(unsigned long), unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++)
		sum += fn(i);
	return sum;
}

static void *thread_main(void *arg)
{
	unsigned long *m = arg;

	m[1] = calls_of(cl_count, m[0]);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int three_ways(unsigned long n, unsigned long m, unsigned long k)
{
	unsigned long tm[2] = { m, 0 }, sum;
	pthread_t th;
	int status;
	pid_t pid;

	if (pthread_create(&th, NULL, thread_main, tm) || pthread_join(th, NULL))
		return 1;
	sum = calls_of(cl_count, n) + tm[1];
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		printf("child %lu sum %lu\n", k, calls_of(cl_count, k));
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	printf("calls %lu %lu %lu sum %lu\n", n, m, k, sum);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "loop")) {
		unsigned long n = strtoul(argv[2], NULL, 10), sum;
		double t0 = now();

		sum = calls_of(cl_count, n);
		printf("loop %lu sum %lu ns/call %.3f\n", n, sum, (now() - t0) * 1e9 / (double)n);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "dlopen")) {
		unsigned long (*fn)(unsigned long);
		unsigned long n = strtoul(argv[3], NULL, 10);
		void *h = dlopen(argv[2], RTLD_NOW);

		if (!h || !(*(void **)&fn = dlsym(h, "cl_count"))) {
			fprintf(stderr, "calls: %s\n", dlerror());
			return 1;
		}
		printf("dlopen %lu sum %lu\n", n, calls_of(fn, n));
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: calls N M K | calls loop N | calls dlopen LIB N\n");
		return 2;
	}
	return three_ways(strtoul(argv[1], NULL, 10), strtoul(argv[2], NULL, 10),
			  strtoul(argv[3], NULL, 10));
}
#endif /* CL_LIB */
