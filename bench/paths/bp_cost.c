/*
 * bench/paths/bp_cost.c - what one hit of a hardware execution breakpoint
 * costs here, counted by the kernel (perf_event_open, PERF_TYPE_BREAKPOINT,
 * no signal): the cheapest exact execution counter a machine without a PMU
 * has (docs/paths.md, "Time weighting").  Calls a function N times bare and N
 * times with a breakpoint on it; prints the count and the microseconds per
 * hit.  cc -O1 -o bp_cost bench/paths/bp_cost.c && ./bp_cost 100000
 */
#define _GNU_SOURCE
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static long f(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, s = 0, count = 0;
	struct perf_event_attr a;
	double t0, t1, t2;
	int fd;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (unsigned long)f;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("bp_cost: perf_event_open(PERF_TYPE_BREAKPOINT)");
		return 1;
	}
	t0 = now();
	for (long i = 0; i < n; i++)
		s += f(i);
	t1 = now();
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (long i = 0; i < n; i++)
		s += f(i);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	t2 = now();
	if (read(fd, &count, sizeof(count)) != sizeof(count)) {
		perror("bp_cost: read");
		return 1;
	}
	printf("%ld calls: %ld counted, bare %.4f us/call, with the breakpoint %.3f us/hit "
	       "(checksum %ld)\n", n, count, (t1 - t0) / (double)n * 1e6,
	       (t2 - t1) / (double)n * 1e6, s);
	return 0;
}
