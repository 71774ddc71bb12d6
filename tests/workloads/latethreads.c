/*
 * latethreads.c - threads that start late, for attaching (tests/
 * test_attach.c): the main thread spins in early_work for the first
 * second, then starts two threads that spin in late_work for the given
 * time while it waits.  A collector attached during the first second sees
 * late_work only if it follows threads created after it attached.
 *
 * usage: latethreads [seconds]   (default 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

__attribute__((noinline)) static void *late_work(void *arg)
{
	static unsigned long sink;

	sink += spin((unsigned long)arg, now_s() + secs);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	unsigned long x;

	if (argc > 1)
		secs = atof(argv[1]);
	x = early_work(now_s() + 1.0);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, late_work, (void *)(x + (unsigned long)i)))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%lu\n", x & 1);
	return 0;
}
