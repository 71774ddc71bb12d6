/*
 * sysloop.c - a program that spends most of its time in the kernel: a loop
 * of small write(2)s to /dev/null and getpid(2) calls (made as system calls,
 * not answered from a cache), for kernel samples (tests/test_attach.c).
 *
 * usage: sysloop [seconds]   (default 1; 0 runs until killed)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static long burst(int fd)
{
	static const char buf[64];
	long sum = 0;

	for (int i = 0; i < 1000; i++) {
		sum += write(fd, buf, sizeof(buf));
		sum += syscall(SYS_getpid);
	}
	return sum;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = now_s();
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	long sum = 0;

	if (fd < 0) {
		perror("sysloop: /dev/null");
		return 1;
	}
	while (secs <= 0 || now_s() - t0 < secs)
		sum += burst(fd);
	close(fd);
	printf("%ld\n", sum > 0);
	return 0;
}
