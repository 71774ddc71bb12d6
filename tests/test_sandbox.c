/*
 * test_sandbox.c - the BHive-style timing sandbox (culprit/sandbox/sandbox.c,
 * include/dcpi/sandbox.h): known bodies timed on this machine (an add chain
 * against independent adds), bodies that fault, divide by zero, run past the
 * time limit or kill the child, refusals, an empty batch and huge bodies.
 *
 * Under valgrind the body runs on valgrind's own CPU: the tests then check
 * statuses only and say that the timing assertions were skipped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dcpi/sandbox.h"
#include "tu_main.h"
#include "tu_sbx.h"

static int under_valgrind;

static const uint8_t add1[] = { 0x48, 0x83, 0xc0, 0x01 };	/* add $1,%rax */
/* add $1 to rax rcx rdx rbx rsi rdi r8 r9: independent */
static const uint8_t indep8[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x83, 0xc1, 0x01, 0x48, 0x83, 0xc2, 0x01,
	0x48, 0x83, 0xc3, 0x01, 0x48, 0x83, 0xc6, 0x01, 0x48, 0x83, 0xc7, 0x01,
	0x49, 0x83, 0xc0, 0x01, 0x49, 0x83, 0xc1, 0x01,
};
/* movabs $0x8000000000000000,%rax; mov (%rax),%rax: non-canonical */
static const uint8_t noncanon[] = { 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x48, 0x8b, 0x00 };
/* xor %ecx,%ecx; div %rcx */
static const uint8_t divzero[] = { 0x31, 0xc9, 0x48, 0xf7, 0xf1 };
/* div %rcx: rdx:rax / rcx overflows with rdx = X, not with rdx = 0 */
static const uint8_t divx[] = { 0x48, 0xf7, 0xf1 };
/* mov (%rsp),%rax; mov %rax,8(%rbx): loads and stores near X */
static const uint8_t ldst[] = { 0x48, 0x8b, 0x04, 0x24, 0x48, 0x89, 0x43, 0x08 };
/* movq $0x1234,%fs:0x30 (glibc's pointer guard), then the non-canonical load:
 * siglongjmp back from the fault jumps into nowhere and the child dies */
static const uint8_t killer[] = { 0x64, 0x48, 0xc7, 0x04, 0x25, 0x30, 0, 0, 0, 0x34, 0x12, 0, 0,
				  0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x48, 0x8b, 0x00 };

static uint8_t *chain(size_t n, size_t *len)
{
	uint8_t *b = malloc(n * sizeof(add1));

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		memcpy(b + i * sizeof(add1), add1, sizeof(add1));
	*len = n * sizeof(add1);
	return b;
}

static void opts(struct sbx_opts *o)
{
	sbx_opts_default(o);
	o->reps = under_valgrind ? 3 : 9;
	if (under_valgrind)
		o->iters = 200;
}

static void time_n(const uint8_t *const *b, const size_t *l, size_t n, struct sbx_opts *o,
		   struct sbx_result *r)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(sbx_time(b, l, n, o, r, &err), 0);
	for (size_t i = 0; i < n; i++)
		printf("# body %zu: %s %.3f cycles (low %.3f, min %.3f, spread %.1f%%, U %u) %s\n",
		       i, sbx_status_name(r[i].status), r[i].cycles, r[i].cycles_low,
		       r[i].cycles_min, 100 * r[i].spread, r[i].unroll, r[i].detail);
}

/* The n bodies timed with o as it is (into x), then with flags added (into r). */
static void time_without_with(const uint8_t *const *b, const size_t *l, size_t n,
			      struct sbx_opts *o, unsigned flags, struct sbx_result *x,
			      struct sbx_result *r)
{
	time_n(b, l, n, o, x);
	o->flags |= flags;
	time_n(b, l, n, o, r);
}

/* r ran to the end: timed, steadily or not. */
static int ran(const struct sbx_result *r)
{
	return r->status == SBX_OK || r->status == SBX_UNSTABLE;
}

static void skip_timing(const char *what)
{
	printf("# under valgrind: timing assertions of %s skipped\n", what);
}

/* An 8-deep dependent add chain runs at 8 cycles per iteration; 8 independent
 * adds run at least twice as fast on any core with two or more ALUs. */
static void test_chain_vs_independent(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[2];
	size_t l[2];
	uint8_t *c = chain(8, &l[0]);
	const uint8_t *b[2] = { c, indep8 };

	(void)state;
	l[1] = sizeof(indep8);
	opts(&o);
	time_n(b, l, 2, &o, r);
	assert_true(ran(&r[0]));
	assert_true(ran(&r[1]));
	if (under_valgrind) {
		skip_timing("the add chain");
	} else {
		double lo = r[0].cycles_low;

		assert_true(lo > 6.0 && lo < 11.0);
		assert_true(r[1].cycles_low < 0.75 * lo);
		assert_true(r[0].cycles_per_tsc > 0.2 && r[0].cycles_per_tsc < 5);
		/* the canary: 8 independent adds, at most 8 cycles on any core */
		assert_true(r[0].canary > 0.5 && r[0].canary < 8.5);
		assert_true(r[0].contended == 0 || r[0].contended == 1);
		assert_true(r[0].unroll >= 4 && r[0].unroll <= 100);
	}
	free(c);
}

/* Loads and stores near X run without faults: the region is mapped. */
static void test_memory_body(void **state)
{
	struct sbx_opts o;
	struct sbx_result r;
	const uint8_t *b = ldst;
	size_t l = sizeof(ldst);

	(void)state;
	opts(&o);
	time_n(&b, &l, 1, &o, &r);
	assert_true(ran(&r));
	if (!under_valgrind)
		assert_true(r.cycles_low > 0.1 && r.cycles_low < 20);
}

/* movzbl (%rsi),%eax; addl $1,(%rdi,%rax,4); add $1,%rsi: a histogram */
static const uint8_t hist[] = { 0x0f, 0xb6, 0x06, 0x83, 0x04, 0x87, 0x01, 0x48, 0x83, 0xc6,
				0x01 };
static const uint8_t chase[] = { 0x48, 0x8b, 0x00 };	/* mov (%rax),%rax */

/*
 * SBX_F_RANDOM_MEM: with X in memory the histogram adds to one word every
 * pass (a read-modify-write chain through memory); with random bytes its
 * index varies and it runs several times faster, so that figure is kept.  A
 * pointer chase faults on the random words (not canonical) and keeps X's.
 */
static void test_random_mem(void **state)
{
	struct sbx_opts o;
	struct sbx_result x[2], r[2];
	const uint8_t *b[2] = { hist, chase };
	size_t l[2] = { sizeof(hist), sizeof(chase) };

	(void)state;
	opts(&o);
	time_without_with(b, l, 2, &o, SBX_F_RANDOM_MEM, x, r);
	for (int i = 0; i < 2; i++) {
		assert_true(ran(&x[i]));
		assert_true(ran(&r[i]));
		assert_int_equal(x[i].random_mem, 0);
	}
	assert_int_equal(r[1].random_mem, 0);
	if (under_valgrind) {
		skip_timing("the histogram");	/* valgrind's CPU has no such chain */
		return;
	}
	assert_int_equal(r[0].random_mem, 1);
	if (!(r[0].cycles_low < 0.6 * x[0].cycles_low))
		fail_msg("histogram: %.2f cycles with random memory, %.2f with X",
			 r[0].cycles_low, x[0].cycles_low);
	assert_true(r[1].cycles_low > 2.0);	/* still the chase's load latency */
}

/* add $0x1000,%rsi; mov %eax,(%rsi): a pointer stepping a page per pass */
static const uint8_t pagestep[] = { 0x48, 0x81, 0xc6, 0x00, 0x10, 0x00, 0x00, 0x89, 0x06 };
/* mov %rbx,%rax; sub %rcx,%rax; mov (%rax),%eax: loads at rbx - rcx */
static const uint8_t regdiff[] = { 0x48, 0x89, 0xd8, 0x48, 0x29, 0xc8, 0x8b, 0x00 };

/*
 * SBX_F_WIND: the stepping pointer goes back every U copies, so its stores
 * stay inside the region (no page mapped on demand); without it the run walks
 * 5000 pages past the region's end (a fault, or the time limit first).
 * SBX_F_DISTINCT: rbx and rcx start at different values, so rbx - rcx is an
 * address the sandbox can map; with both at X it is page 0, which nobody can.
 * Neither needs a clock.
 */
static void test_wind_distinct(void **state)
{
	struct sbx_opts o;
	struct sbx_result x[2], r[2];
	const uint8_t *b[2] = { pagestep, regdiff };
	size_t l[2] = { sizeof(pagestep), sizeof(regdiff) };

	(void)state;
	opts(&o);
	if (!under_valgrind)
		o.iters = 5000;	/* 5000 pages: past the region's end */
	time_without_with(b, l, 2, &o, SBX_F_WIND | SBX_F_DISTINCT, x, r);
	if (under_valgrind)
		printf("# under valgrind: 200 pages, inside the region: no unwound walk\n");
	else
		/* a fault past 512 pages, or (ASan's slower restarts after each
		 * page mapped) the time limit first */
		assert_true(x[0].status == SBX_FAULT || x[0].status == SBX_TIMEOUT ||
			    x[0].pages > 0);
	assert_true(ran(&r[0]));
	assert_int_equal(r[0].pages, 0);
	assert_int_equal(x[1].status, SBX_FAULT);
	assert_non_null(strstr(x[1].detail, "SIGSEGV"));
	assert_true(ran(&r[1]));
	assert_int_equal(r[1].pages, 1);
}

/* orl $0x200000,(%rbp); add $0x400,%rbp: a 1 KB stride */
static const uint8_t stride1k[] = { 0x81, 0x4d, 0x00, 0x00, 0x00, 0x20, 0x00,
				    0x48, 0x81, 0xc5, 0x00, 0x04, 0x00, 0x00 };
/* mov (%rbx,%rax,8),%ecx; add $0x80,%rax: 1 KB through a scaled index */
static const uint8_t index1k[] = { 0x8b, 0x0c, 0xc3, 0x48, 0x05, 0x80, 0x00, 0x00, 0x00 };
/* movl $1,(%rax); add $8,%rax */
static const uint8_t stride8[] = { 0xc7, 0x00, 0x01, 0x00, 0x00, 0x00, 0x48, 0x83, 0xc0, 0x08 };
/* movl $1,(%rax); add $0x2000,%rax */
static const uint8_t stride8k[] = { 0xc7, 0x00, 0x01, 0x00, 0x00, 0x00,
				    0x48, 0x05, 0x00, 0x20, 0x00, 0x00 };

/*
 * SBX_F_WIND winds a stepping pointer back every U copies, so the 2U loop
 * walks 2U strides first: a 1 KB stride at U = 100 is 200 KB, past L1 on every
 * access, where the best case is an L1 hit.  The sandbox takes fewer copies,
 * 2U strides within 16 KB (U = 8 for 1 KB, whether the stride is the base's
 * or a scaled index's), never fewer than 4; an 8-byte stride keeps U = 100.
 */
static void test_wind_walk(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[4];
	const uint8_t *b[4] = { stride1k, index1k, stride8, stride8k };
	size_t l[4] = { sizeof(stride1k), sizeof(index1k), sizeof(stride8), sizeof(stride8k) };

	(void)state;
	opts(&o);
	o.flags |= SBX_F_WIND | SBX_F_DISTINCT;
	time_n(b, l, 4, &o, r);
	for (int i = 0; i < 4; i++)
		/* base + 8 x index from registers near 2^30 is past 8 GB, which
		 * ASan's shadow gap keeps from being mapped: a fault there, the
		 * copies chosen all the same */
		assert_true(ran(&r[i]) || (i == 1 && r[i].status == SBX_FAULT));
	assert_int_equal(r[0].unroll, 8);
	assert_int_equal(r[1].unroll, 8);
	assert_int_equal(r[2].unroll, 100);
	assert_int_equal(r[3].unroll, 4);
	assert_int_equal(r[0].pages, 0);
}

/* A fault the sandbox cannot map ends the body, not the batch, nor us. */
static void test_faults(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[4];
	const uint8_t *b[4] = { noncanon, divzero, divx, add1 };
	size_t l[4] = { sizeof(noncanon), sizeof(divzero), sizeof(divx), sizeof(add1) };

	(void)state;
	opts(&o);
	time_n(b, l, 4, &o, r);
	assert_int_equal(r[0].status, SBX_FAULT);
	assert_non_null(strstr(r[0].detail, "SIGSEGV"));
	assert_int_equal(r[1].status, SBX_FAULT);
	assert_non_null(strstr(r[1].detail, "SIGFPE"));
	/* div by X: retried with rdx = 0 and then timed */
	assert_true(ran(&r[2]));
	assert_int_equal(r[2].rdx_zero, 1);
	assert_true(ran(&r[3]));
}

/* A procedure's entry block: push, a frame of 16 and movaps into it, which
 * faults unless rsp starts as a call leaves it and stays so from copy to
 * copy (each moves it 24 bytes).  And a long body (over 512 bytes) that takes
 * its pointer from rdi and then mixes rdi: its next run would load through
 * the mixed value, unless each run starts from the registers' start values. */
static const uint8_t entry_frame[] = {
	0x53,					/* push %rbx */
	0x48, 0x83, 0xec, 0x10,			/* sub $0x10,%rsp */
	0x0f, 0x29, 0x04, 0x24,			/* movaps %xmm0,(%rsp) */
};

/* movzbl (%rdi),%edi: a byte loaded into the pointer it came through (jq's
 * UTF-8 decoder): the next copy loads from the page at 0, unless rdi is set
 * to its start before each copy. */
static const uint8_t byte_ptr[] = { 0x0f, 0xb6, 0x3f };

static uint8_t *mixer(size_t *len)
{
	static const uint8_t head[] = { 0x48, 0x89, 0xfd,		/* mov %rdi,%rbp */
					0x48, 0x8b, 0x45, 0x00 };	/* mov (%rbp),%rax */
	static const uint8_t mix[] = { 0x48, 0x69, 0xff, 0x95, 0xe9, 0xd1, 0x5b,
								/* imul $0x5bd1e995,%rdi,%rdi */
				       0x48, 0x01, 0xc7 };		/* add %rax,%rdi */
	size_t n = 60;
	uint8_t *b = malloc(sizeof(head) + n * sizeof(mix));

	assert_non_null(b);
	memcpy(b, head, sizeof(head));
	for (size_t i = 0; i < n; i++)
		memcpy(b + sizeof(head) + i * sizeof(mix), mix, sizeof(mix));
	*len = sizeof(head) + n * sizeof(mix);
	return b;
}

static void test_relaid(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[4];
	size_t ml;
	uint8_t *m = mixer(&ml);
	const uint8_t *b[4] = { entry_frame, m, add1, byte_ptr };
	size_t l[4] = { sizeof(entry_frame), ml, sizeof(add1), sizeof(byte_ptr) };

	(void)state;
	opts(&o);
	time_n(b, l, 4, &o, r);
	assert_true(ran(&r[3]));
	assert_int_equal(r[3].relaid, 1);
	assert_true(ran(&r[0]));
	assert_int_equal(r[0].relaid, 1);
	assert_true(r[0].unroll > 1);
	assert_true(ran(&r[1]));
	assert_int_equal(r[1].relaid, 1);
	assert_int_equal(r[1].unroll, 1);
	assert_true(ran(&r[2]));
	assert_int_equal(r[2].relaid, 0);
	if (!under_valgrind) {
		/* 60 dependent multiplies and adds on rdi, 240 cycles a copy
		 * on Zen 4 and 5; but each copy starts from the registers'
		 * start values, so copies are independent and a core overlaps
		 * as many as its reorder buffer holds (Zen 5, 448 entries:
		 * 120 or 214 cycles from run to run, two copies in flight or
		 * one).  At most five in flight on any core (a reorder buffer
		 * under 610 entries, 122 instructions a copy): 48 cycles. */
		assert_true(r[1].cycles >= 240.0 / 5);
		assert_true(r[0].cycles < 20);
	} else {
		skip_timing("relaid bodies");
	}
	free(m);
}

/* A body that kills its child: reported, and a new child times the rest. */
static void test_child_restart(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[3];
	const uint8_t *b[3] = { add1, killer, add1 };
	size_t l[3] = { sizeof(add1), sizeof(killer), sizeof(add1) };

	(void)state;
	opts(&o);
	time_n(b, l, 3, &o, r);
	assert_true(ran(&r[0]));
	assert_int_equal(r[1].status, SBX_FAULT);
	assert_true(ran(&r[2]));
	if (!under_valgrind)
		assert_non_null(strstr(r[1].detail, "killed the sandbox"));
}

/* A body run a billion times cannot finish in 50 ms. */
static void test_timeout(void **state)
{
	struct sbx_opts o;
	struct sbx_result r;
	const uint8_t *b = add1;
	size_t l = sizeof(add1);
	uint64_t t0 = dcpi_now_ns();

	(void)state;
	opts(&o);
	o.iters = 1000000000u;
	o.timeout_ms = 50;
	time_n(&b, &l, 1, &o, &r);
	assert_int_equal(r.status, SBX_TIMEOUT);
	assert_true(dcpi_now_ns() - t0 < 4000000000ull);
}

static void refused(const uint8_t *body, size_t len, const char *why)
{
	struct sbx_opts o;
	struct sbx_result r;
	char detail[96];

	assert_int_equal(sbx_check(body, len, detail, sizeof(detail)), SBX_REFUSED);
	printf("# refused: %s\n", detail);
	assert_non_null(strstr(detail, why));
	opts(&o);
	time_n(&body, &len, 1, &o, &r);
	assert_int_equal(r.status, SBX_REFUSED);
}

static void test_refusals(void **state)
{
	/* add; syscall */
	static const uint8_t sys[] = { 0x48, 0x83, 0xc0, 0x01, 0x0f, 0x05 };
	static const uint8_t ret[] = { 0xc3 };
	static const uint8_t jmp[] = { 0x90, 0xeb, 0xfe };
	static const uint8_t jcc[] = { 0x75, 0x00 };
	static const uint8_t call[] = { 0xe8, 0, 0, 0, 0 };
	static const uint8_t cpuid[] = { 0x0f, 0xa2 };
	static const uint8_t rdtsc[] = { 0x0f, 0x31 };
	static const uint8_t rep[] = { 0xf3, 0xa4 };			/* rep movsb */
	static const uint8_t wrfs[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd0 };	/* wrfsbase %rax */
	static const uint8_t movfs[] = { 0x8e, 0xe0 };			/* mov %eax,%fs */
	static const uint8_t outb[] = { 0xee };				/* out %al,(%dx) */
	static const uint8_t bad[] = { 0x90, 0x06 };		/* push %es: not in 64-bit */
	char d[96];

	(void)state;
	refused(sys, sizeof(sys), "syscall at +4");
	refused(ret, sizeof(ret), "leaves the body");
	refused(jmp, sizeof(jmp), "leaves the body at +1");
	refused(jcc, sizeof(jcc), "leaves the body");
	refused(call, sizeof(call), "leaves the body");
	refused(cpuid, sizeof(cpuid), "serialising");
	refused(rdtsc, sizeof(rdtsc), "clock");
	refused(rep, sizeof(rep), "rep");
	refused(wrfs, sizeof(wrfs), "fs base");
	refused(movfs, sizeof(movfs), "system register");
	refused(outb, sizeof(outb), "privileged");
	refused(bad, sizeof(bad), "undecodable at +1");
	refused(bad + 1, 0, "empty");
	refused(noncanon, 5, "undecodable at +0");	/* cut inside the movabs */

	/* what is allowed: vector ops that start like vm*, in-like names, loads */
	assert_int_equal(sbx_check(indep8, sizeof(indep8), d, sizeof(d)), 0);
	{
		/* vmovaps %xmm1,%xmm0; inc %rax; vminps %xmm1,%xmm0,%xmm0 */
		static const uint8_t ok[] = { 0xc5, 0xf8, 0x28, 0xc1, 0x48, 0xff, 0xc0,
					      0xc5, 0xf8, 0x5d, 0xc1 };

		assert_int_equal(sbx_check(ok, sizeof(ok), d, sizeof(d)), 0);
	}
}

/* SBX_F_BRANCHES: forward branches inside the body are timed, others not. */
static void test_internal_branches(void **state)
{
	/* add $1,%rax; jmp +0 (to the end); add; jne -> the add after it */
	static const uint8_t fwd[] = { 0x48, 0x83, 0xc0, 0x01, 0xeb, 0x00, 0x48, 0x83, 0xc0, 0x01,
				       0x75, 0x00, 0x90 };
	static const uint8_t back[] = { 0x90, 0xeb, 0xfd };		/* jmp -3 */
	/* jmp into an instruction */
	static const uint8_t mid[] = { 0xeb, 0x01, 0x48, 0x83, 0xc0, 0x01 };
	static const uint8_t past[] = { 0xeb, 0x02, 0x90 };		/* past the end */
	struct sbx_opts o;
	struct sbx_result r[2];
	const uint8_t *b[2] = { fwd, back };
	size_t l[2] = { sizeof(fwd), sizeof(back) };
	char d[96];

	(void)state;
	assert_int_equal(sbx_check(fwd, sizeof(fwd), d, sizeof(d)), SBX_REFUSED);
	assert_int_equal(sbx_check_flags(fwd, sizeof(fwd), SBX_F_BRANCHES, d, sizeof(d)), 0);
	assert_int_equal(sbx_check_flags(mid, sizeof(mid), SBX_F_BRANCHES, d, sizeof(d)),
			 SBX_REFUSED);
	assert_int_equal(sbx_check_flags(past, sizeof(past), SBX_F_BRANCHES, d, sizeof(d)),
			 SBX_REFUSED);
	opts(&o);
	o.flags = SBX_F_BRANCHES;
	time_n(b, l, 2, &o, r);
	assert_true(ran(&r[0]));
	assert_int_equal(r[1].status, SBX_REFUSED);
}

static void test_empty_batch(void **state)
{
	struct sbx_result r;
	struct dcpi_err err = { 0 };

	(void)state;
	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(sbx_time(NULL, NULL, 0, NULL, &r, &err), 0);
	assert_int_equal(((unsigned char *)&r)[0], 0x5a);
	assert_int_equal(sbx_time(NULL, NULL, 1, NULL, &r, &err), -EINVAL);
}

/* 5000 dependent adds (20 KB, like sha256sum's 3261-instruction block) are
 * timed: 5000 cycles alone, up to 1.6 an add seen in a CI run (a body past
 * the op cache is decoded again each time round, and the host's other
 * tenant can share that front end; the short bodies before it in the same
 * run timed right); more than SBX_BODY_MAX bytes are too large. */
static void test_huge(void **state)
{
	struct sbx_opts o;
	struct sbx_result r[2];
	size_t l[2];
	uint8_t *big = chain(5000, &l[0]);
	uint8_t *huge = chain(SBX_BODY_MAX / 4 + 1, &l[1]);
	const uint8_t *b[2] = { big, huge };

	(void)state;
	opts(&o);
	o.reps = under_valgrind ? 1 : 5;
	time_n(b, l, 2, &o, r);
	assert_true(ran(&r[0]));
	assert_int_equal(r[0].unroll, 1);	/* long: N and 2N runs of one copy */
	if (under_valgrind)
		skip_timing("the 20 KB body");
	else
		assert_true(r[0].cycles_low > 4000 && r[0].cycles_low < 9000);
	assert_int_equal(r[1].status, SBX_TOO_LARGE);
	free(big);
	free(huge);
}

static void test_usable(void **state)
{
	char why[128] = "";
	int u = sbx_usable(why, sizeof(why));

	(void)state;
	if (!u) {
		printf("# sandbox not usable: %s\n", why);
		assert_non_null(strstr(why, "valgrind"));
	} else {
		assert_string_equal(why, "");
	}
}

static int setup(void **state)
{
	(void)state;
	under_valgrind = tu_sbx_unusable("timing assertions");
	return 0;
}

TU_MAIN(setup, NULL,
	cmocka_unit_test(test_chain_vs_independent),
	cmocka_unit_test(test_memory_body),
	cmocka_unit_test(test_random_mem),
	cmocka_unit_test(test_wind_distinct),
	cmocka_unit_test(test_wind_walk),
	cmocka_unit_test(test_faults),
	cmocka_unit_test(test_relaid),
	cmocka_unit_test(test_child_restart),
	cmocka_unit_test(test_timeout),
	cmocka_unit_test(test_refusals),
	cmocka_unit_test(test_internal_branches),
	cmocka_unit_test(test_empty_batch),
	cmocka_unit_test(test_huge),
	cmocka_unit_test(test_usable))
