/*
 * latethreads.c - threads that start late, for attaching (tests/
 * test_attach.c): the main thread spins in early_work for the first
 * second, then starts two threads that spin in late_work for the given
 * time while it waits.  A collector attached during the first second sees
 * late_work only if it follows threads created after it attached.  With
 * "churn", the late work is done by one short thread after another (about
 * 2 ms each, one at a time), for a collector that must let go of threads
 * as they end.
 *
 * The last line of stdout is "cpu SECONDS", the process's CPU time, all
 * threads.
 *
 * usage: latethreads [seconds [churn]]   (default 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

static double secs = 2.0;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline __attribute__((always_inline)) unsigned long spin(unsigned long x, double until)
{
	while (now_s() < until)
		for (int i = 0; i < 100000; i++) {
			x = x * 6364136223846793005UL + 1;
			__asm__ volatile("" : "+r"(x));
		}
	return x;
}

__attribute__((noinline)) static unsigned long early_work(double until)
{
	return spin(1, until);
}

static double slice = -1;	/* each late thread's time; -1: secs */

__attribute__((noinline)) static void *late_work(void *arg)
{
	static unsigned long sink;

	sink += spin((unsigned long)arg, now_s() + (slice < 0 ? secs : slice));
	return NULL;
}

static void print_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("cpu %.3f\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
}

static int churn(unsigned long x)
{
	double end = now_s() + secs;
	pthread_t t;

	slice = 0.002;
	while (now_s() < end) {
		if (pthread_create(&t, NULL, late_work, (void *)x))
			return 1;
		pthread_join(t, NULL);
	}
	printf("%lu\n", x & 1);
	print_cpu();
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	unsigned long x;

	if (argc > 1)
		secs = atof(argv[1]);
	x = early_work(now_s() + 1.0);
	if (argc > 2)
		return churn(x);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, late_work, (void *)(x + (unsigned long)i)))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%lu\n", x & 1);
	print_cpu();
	return 0;
}
