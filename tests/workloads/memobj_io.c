/*
 * tests/workloads/memobj_io.c - the kernel's transfers into and out of
 * known heap blocks (tests/test_dsys.c; docs/data.md, "Kernel transfers").
 *
 *   memobj_io IN OUT   reads IN (at least 256 KB) into blocks of five call
 *                      sites and writes one of them to OUT; prints, per
 *                      site, the bytes the kernel wrote into its blocks and
 *                      read from them ("site in out"), from the calls'
 *                      return values
 *
 * Sites (each its own procedure, so each is one allocation site):
 *   alloc_a  64 KB: read(2) until 64 KB; readv's first segment; write(2)
 *   alloc_b  16 KB: pread(2) at four offsets; readv's second segment
 *   alloc_c  1000 bytes, under the runtime's 4 KB threshold: one read(2)
 *   alloc_d  64 KB + 64: fread with a 4 KB stdio buffer; the direct part is
 *            glibc's rule (pathrt_io.c): 40960 bytes, then 100 through the
 *            buffer, then 8192 of which 4096 direct
 *   alloc_e  eight 512-byte blocks, one after another: one read(2) each
 * A read into a buffer on the stack is counted nowhere.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

/*
 * A procedure NAME of its own that returns malloc(SIZE): one allocation
 * site.  The store after the call keeps malloc from being a tail call, so
 * the site is NAME.
 */
#define ALLOC_SITE(name, size)					\
	static NOINL char *name(void)				\
	{							\
		char *p = malloc(size);				\
									\
		if (p)						\
			p[0] = 0;				\
		return p;					\
	}

ALLOC_SITE(alloc_a, 65536)
ALLOC_SITE(alloc_b, 16384)
ALLOC_SITE(alloc_c, 1000)
ALLOC_SITE(alloc_d, 65536 + 64)	/* not alloc_a's code (merged) */
ALLOC_SITE(alloc_e, 512)

static long a_in, a_out, b_in, c_in, d_in, e_in;
static volatile char stack_kept;

static int reads(int fd, char *a, char *b, char *c)
{
	char stack[4096];
	struct iovec v[2] = { { a, 4096 }, { b, 8192 } };
	ssize_t r;

	while (a_in < 65536 && (r = read(fd, a + a_in, 65536 - (size_t)a_in)) > 0)
		a_in += r;
	for (int i = 0; i < 4; i++)
		if ((r = pread(fd, b + 4096 * i, 4096, 8192 * i)) > 0)
			b_in += r;
	if ((r = readv(fd, v, 2)) > 0) {
		a_in += r < 4096 ? r : 4096;
		b_in += r > 4096 ? r - 4096 : 0;
	}
	if ((r = read(fd, c, 1000)) > 0)
		c_in += r;
	if (read(fd, stack, sizeof(stack)) < 0)
		return 1;
	/* keeps the buffer (once its first byte was the exit status: the
	 * random input made one run in 256 fail, test_dsys test_exact) */
	stack_kept = stack[0];
	return 0;
}

static int freads(const char *path, char *d)
{
	FILE *fp = fopen(path, "rb");

	if (!fp || setvbuf(fp, NULL, _IOFBF, 4096))
		return 1;
	if (fread(d, 1, 40960, fp) != 40960 || fread(d + 40960, 1, 100, fp) != 100 ||
	    fread(d + 41060, 1, 8192, fp) != 8192)
		return 1;
	d_in = 40960 + 4096;
	return fclose(fp);
}

static int smalls(int fd)
{
	for (int i = 0; i < 8; i++) {
		char *e = alloc_e();
		ssize_t r;

		if (!e || (r = read(fd, e, 512)) < 0)
			return 1;
		e_in += r;
		free(e);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *a = alloc_a(), *b = alloc_b(), *c = alloc_c(), *d = alloc_d();
	int fd, out;

	if (argc != 3 || !a || !b || !c || !d) {
		fprintf(stderr, "usage: memobj_io IN OUT\n");
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY)) < 0 || reads(fd, a, b, c) || smalls(fd) ||
	    freads(argv[1], d))
		return 1;
	if ((out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
	    (a_out = write(out, a, 32768)) != 32768)
		return 1;
	close(out);
	close(fd);
	printf("alloc_a %ld %ld\nalloc_b %ld 0\nalloc_c %ld 0\nalloc_d %ld 0\nalloc_e %ld 0\n",
	       a_in, a_out, b_in, c_in, d_in, e_in);
	free(a);
	free(b);
	free(c);
	free(d);
	return 0;
}
