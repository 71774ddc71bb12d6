/*
 * collect/pathrt_io.c - the kernel's transfers into and out of the
 * program's buffers, for the data profiles (docs/data.md, "Kernel
 * transfers"); linked into the path-sample runtime beside collect/pathrt.c.
 *
 * No instruction sample sees read(2) fill a buffer: the kernel writes it.
 * Valgrind's DHAT counts those bytes as writes to the block, and for
 * zstd's read buffers they were half of its bytes.  So the runtime wraps
 * the calls that move bytes between the kernel and a buffer, and after
 * each that moved some, hands (buffer, bytes, direction) to pathrt.c
 * (prt_heap_io), which writes a PRT_KIO record into "<pid>.heap" beside
 * the blocks; collect/datarec.c adds the bytes to the block live there at
 * that time, exactly.  Buffers on the calling thread's stack are left out
 * (they are in no block).
 *
 *   in  (the kernel writes memory): read, pread, pread64, readv, preadv,
 *       recv, recvfrom, and fread's direct part (below);
 *   out (the kernel reads memory):  write, pwrite, pwrite64, writev,
 *       pwritev, send, sendto.
 *
 * stdio: glibc's fread reads into the caller's buffer itself (an internal
 * read, not through these wrappers) when what is wanted beyond the FILE's
 * buffer is at least a buffer's size, a whole number of its blocks; the
 * rest goes through the FILE's buffer and is copied (instructions the
 * samples see).  The wrapper tells the two apart from the FILE's pointers:
 * after the call, the bytes copied out of a buffer filled during it are
 * _IO_read_ptr - _IO_buf_base (glibc's _IO_file_xsgetn resets the buffer
 * before a direct read and refills it at most once after, for a regular
 * file).  fwrite, recvmsg and sendmsg are not followed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define IO_EXPORT __attribute__((visibility("default")))
#define IO_STACK (8UL << 20)	/* a buffer this far above the frame is on the stack */

/* collect/pathrt.c: a PRT_KIO record when heap blocks are recorded. */
void prt_heap_io(const void *buf, size_t n, int fd, int out);

static int on_stack(const void *buf)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);

	return (uintptr_t)buf - sp < IO_STACK;
}

static void io_note(int fd, const void *buf, ssize_t n, int out)
{
	if (n > 0 && !on_stack(buf))
		prt_heap_io(buf, (size_t)n, fd, out);
}

/* n bytes moved over the segments v[0..cnt) in order. */
static void io_notev(int fd, const struct iovec *v, int cnt, ssize_t n, int out)
{
	for (int i = 0; i < cnt && n > 0; i++) {
		size_t l = v[i].iov_len < (size_t)n ? v[i].iov_len : (size_t)n;

		io_note(fd, v[i].iov_base, (ssize_t)l, out);
		n -= (ssize_t)l;
	}
}

/* libc's functions (cancellation points, errno), found when the runtime is
 * loaded; a call before that is made directly (raw). */
enum { F_READ, F_PREAD, F_READV, F_PREADV, F_RECVFROM, F_WRITE, F_PWRITE, F_WRITEV,
       F_PWRITEV, F_SENDTO, F_FREAD, F_N };
static const char *const names[F_N] = {
	"read", "pread64", "readv", "preadv", "recvfrom", "write", "pwrite64", "writev",
	"pwritev", "sendto", "fread",
};
static const long sysno[F_N] = {
	SYS_read, SYS_pread64, SYS_readv, SYS_preadv, SYS_recvfrom, SYS_write,
	SYS_pwrite64, SYS_writev, SYS_pwritev, SYS_sendto, -1,
};
typedef long (*io_fn)(long, long, long, long, long, long);
static void *real[F_N];

__attribute__((constructor)) static void io_resolve(void)
{
	for (int i = 0; i < F_N; i++)
		real[i] = dlsym(RTLD_NEXT, names[i]);
}

static long raw(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long rc;

	__asm__ volatile("syscall" : "=a"(rc) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10),
			 "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	if (rc < 0 && rc > -4096) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

static long call(int f, long a, long b, long c, long d, long e, long g)
{
	io_fn fn = (io_fn)real[f];

	return fn ? fn(a, b, c, d, e, g) : raw(sysno[f], a, b, c, d, e, g);
}

#define L(x) ((long)(x))

/* The call f on (fd, buf, n, d, e, g), its bytes noted in direction out. */
static ssize_t io_buf(int f, int fd, const void *buf, size_t n, long d, long e, long g, int out)
{
	ssize_t r = call(f, fd, L(buf), L(n), d, e, g);

	io_note(fd, buf, r, out);
	return r;
}

/* The call f on (fd, v, cnt, off), its bytes noted over v in direction out. */
static ssize_t io_vec(int f, int fd, const struct iovec *v, int cnt, off_t off, int out)
{
	ssize_t r = call(f, fd, L(v), cnt, off, 0, 0);

	io_notev(fd, v, cnt, r, out);
	return r;
}

IO_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	return io_buf(F_READ, fd, buf, n, 0, 0, 0, 0);
}

IO_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return io_buf(F_PREAD, fd, buf, n, off, 0, 0, 0);
}

IO_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
	__attribute__((alias("pread")));

IO_EXPORT ssize_t readv(int fd, const struct iovec *v, int cnt)
{
	return io_vec(F_READV, fd, v, cnt, 0, 0);
}

IO_EXPORT ssize_t preadv(int fd, const struct iovec *v, int cnt, off_t off)
{
	return io_vec(F_PREADV, fd, v, cnt, off, 0);
}

IO_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
			   socklen_t *alen)
{
	return io_buf(F_RECVFROM, fd, buf, n, flags, L(a), L(alen), 0);
}

IO_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	return recvfrom(fd, buf, n, flags, NULL, NULL);
}

IO_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	return io_buf(F_WRITE, fd, buf, n, 0, 0, 0, 1);
}

IO_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return io_buf(F_PWRITE, fd, buf, n, off, 0, 0, 1);
}

IO_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
	__attribute__((alias("pwrite")));

IO_EXPORT ssize_t writev(int fd, const struct iovec *v, int cnt)
{
	return io_vec(F_WRITEV, fd, v, cnt, 0, 1);
}

IO_EXPORT ssize_t pwritev(int fd, const struct iovec *v, int cnt, off_t off)
{
	return io_vec(F_PWRITEV, fd, v, cnt, off, 1);
}

IO_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *a, socklen_t alen)
{
	return io_buf(F_SENDTO, fd, buf, n, flags, L(a), alen, 1);
}

IO_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	return sendto(fd, buf, n, flags, NULL, 0);
}

/* fread's direct part, as the comment at the top says. */
IO_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *fp)
{
	size_t (*fn)(void *, size_t, size_t, FILE *) =
		(size_t (*)(void *, size_t, size_t, FILE *))real[F_FREAD];
	size_t have, got, rest, post;

	if (!fn) {	/* not resolved yet: libc's, as the program would call it */
		if (!(fn = (size_t (*)(void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fread")))
			return 0;
	}
	if (!size || !n)
		return fn(buf, size, n, fp);
	have = fp->_IO_read_ptr && fp->_IO_read_end > fp->_IO_read_ptr ?
	       (size_t)(fp->_IO_read_end - fp->_IO_read_ptr) : 0;
	got = fn(buf, size, n, fp) * size;
	if (got <= have)
		return got / size;
	rest = got - have;
	post = fp->_IO_buf_base && fp->_IO_read_ptr > fp->_IO_buf_base ?
	       (size_t)(fp->_IO_read_ptr - fp->_IO_buf_base) : 0;
	if (rest > post)
		io_note(fileno(fp), (const char *)buf + have, (ssize_t)(rest - post), 0);
	return got / size;
}
