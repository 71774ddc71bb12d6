/*
 * dlopener.c - load a shared object at run time and spend its time there:
 * dlopen(argv[1]), then call its hot_in_lib(n) for about argv[2] seconds.
 * The collector must place those samples in the shared object, at file
 * offsets of hot_in_lib, though the object was mapped after the exec.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long (*hot)(unsigned long);
	double secs = argc > 2 ? atof(argv[2]) : 0.4, t0 = now();
	unsigned long x = 0;
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: dlopener LIB.so [seconds]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		return 1;
	}
	*(void **)&hot = dlsym(h, "hot_in_lib");
	if (!hot) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		return 1;
	}
	while (now() - t0 < secs)
		x += hot(1000000);
	printf("%lu\n", x);
	dlclose(h);
	return 0;
}
