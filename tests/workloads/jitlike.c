/*
 * jitlike.c - what a JIT does, in miniature: generate a loop into anonymous
 * executable memory, describe it in /tmp/perf-PID.map ("START SIZE name",
 * hex, the convention perf and the JITs share) and spend its time there.
 * The collector should keep those samples under the perf map's path.
 *
 * usage: jitlike [seconds]   (default 0.5).  The map file is left behind,
 * as JITs do; whoever runs this removes it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

static const uint8_t code[] = {
	0xb9, 0x40, 0x42, 0x0f, 0x00,	/* mov $1000000, %ecx */
	0xff, 0xc9,			/* 1: dec %ecx */
	0x75, 0xfc,			/* jnz 1b */
	0xc3,				/* ret */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? strtod(argv[1], NULL) : 0.5, end;
	char path[64];
	void (*fn)(void);
	uint8_t *mem;
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(mem + 64, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx jit_loop\n", (unsigned long)(uintptr_t)(mem + 64), sizeof(code));
	fclose(f);
	fn = (void (*)(void))(uintptr_t)(mem + 64);
	end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 10; i++)
			fn();
	return 0;
}
