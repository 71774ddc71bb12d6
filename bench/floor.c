/*
 * floor.c - the least a perf_event sampler can do, as the floor under which
 * no collector's overhead can go (DCPI paper sec. 5: overhead is measured as
 * the workload's slowdown; here it is compared with this floor).
 *
 * It runs a command the way `dcpi record` does: forked stopped on a pipe,
 * one counter per online CPU on the command's pid with inherit=1 (the kernel
 * refuses to mmap an inherited per-task counter, so one ring per CPU) and
 * enable_on_exec=1, so the floor's own start-up is not sampled.  It takes
 * only what every sampler must (PERF_SAMPLE_IP | PERF_SAMPLE_TID), asks for
 * no MMAP/COMM/FORK side-band records, wakes when a ring is a quarter full,
 * walks the records to count them and throws them away.  Whatever a real
 * collector costs beyond this is its own: side-band records, copying,
 * sorting, map lookups, aggregation, extra wake-ups and ioctls.
 *
 * usage: floor [-e cpu-clock|cycles] [-c PERIOD] [-k] [-p PAGES] -- CMD [ARGS]
 *   -c  sample every PERIOD events (ns for cpu-clock; default 100000)
 *   -k  sample the kernel too (default user only, as `dcpi record`)
 * On exit it prints "floor: N samples, L lost, W wakeups" to stderr and
 * exits with the command's status.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define MAX_CPUS 1024

struct ring {
	int fd;
	struct perf_event_mmap_page *pg;
	const uint8_t *data;
	size_t size;
};

static uint64_t samples, lost, wakeups;

/* Walk one ring's records from tail to head, count them, drop them. */
static void drain(struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->pg->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		size_t at = (size_t)(tail & (r->size - 1));

		/* Records are 8-byte aligned and the ring a power of two, so a
		 * header never wraps. */
		memcpy(&h, r->data + at, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			samples++;
		} else if (h.type == PERF_RECORD_LOST) {
			uint64_t v[2];
			size_t vat = (size_t)((tail + sizeof(h)) & (r->size - 1));

			memcpy(v, r->data + vat, sizeof(v));
			lost += v[1];
		}
		tail += h.size;
	}
	__atomic_store_n(&r->pg->data_tail, head, __ATOMIC_RELEASE);
}

static int open_ring(struct ring *r, struct perf_event_attr *a, pid_t pid, int cpu,
		     size_t pages)
{
	long pgsz = sysconf(_SC_PAGESIZE);
	void *base;

	r->fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->size = pages * (size_t)pgsz;
	base = mmap(NULL, r->size + (size_t)pgsz, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	r->pg = base;
	r->data = (const uint8_t *)base + pgsz;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: floor [-e cpu-clock|cycles] [-c PERIOD] [-k] [-p PAGES] "
		"-- CMD [ARGS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct ring rings[MAX_CPUS];
	struct pollfd pfd[MAX_CPUS];
	struct perf_event_attr a;
	uint64_t period = 100000;
	size_t pages = 128;
	int kernel = 0, cycles = 0, nr = 0, gp[2], status = 0, c, done = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	pid_t child;
	char go = 'g';

	while ((c = getopt(argc, argv, "+e:c:kp:")) != -1) {
		switch (c) {
		case 'e':
			if (!strcmp(optarg, "cycles"))
				cycles = 1;
			else if (strcmp(optarg, "cpu-clock"))
				return usage();
			break;
		case 'c':
			period = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			kernel = 1;
			break;
		case 'p':
			pages = strtoul(optarg, NULL, 0);
			break;
		default:
			return usage();
		}
	}
	if (optind >= argc || !period || !pages || (pages & (pages - 1)))
		return usage();
	if (ncpu < 1 || ncpu > MAX_CPUS)
		ncpu = ncpu < 1 ? 1 : MAX_CPUS;
	if (pipe(gp))
		return perror("floor: pipe"), 1;
	child = fork();
	if (child < 0)
		return perror("floor: fork"), 1;
	if (child == 0) {
		close(gp[1]);
		if (read(gp[0], &go, 1) != 1)
			_exit(127);
		close(gp[0]);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "floor: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(gp[0]);

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	a.config = cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	a.disabled = 1;
	a.inherit = 1;
	a.enable_on_exec = 1;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int e = open_ring(&rings[nr], &a, child, cpu, pages);

		if (e == -ENODEV)	/* offline CPU */
			continue;
		if (e) {
			fprintf(stderr, "floor: cpu %d: %s\n", cpu, strerror(-e));
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return 1;
		}
		pfd[nr].fd = rings[nr].fd;
		pfd[nr].events = POLLIN;
		nr++;
	}
	if (write(gp[1], &go, 1) != 1)
		return perror("floor: releasing the command"), 1;
	close(gp[1]);

	while (!done) {
		int hup = 0;

		if (poll(pfd, (nfds_t)nr, 100) > 0)
			wakeups++;
		for (int i = 0; i < nr; i++) {
			drain(&rings[i]);
			hup += !!(pfd[i].revents & POLLHUP);
		}
		/* Every counter gone with the last task: the command has exited,
		 * but may not be reapable yet; wait instead of spinning on HUP. */
		if (waitpid(child, &status, hup == nr ? 0 : WNOHANG) == child)
			done = 1;
	}
	for (int i = 0; i < nr; i++)
		drain(&rings[i]);
	fprintf(stderr, "floor: %llu samples, %llu lost, %llu wakeups\n",
		(unsigned long long)samples, (unsigned long long)lost,
		(unsigned long long)wakeups);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
