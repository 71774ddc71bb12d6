/*
 * test_optimize.c - the feedback writers (optimize/): a small program with
 * an inlined call is compiled here with -g, given synthetic samples over
 * its procedure, and each format is checked by structure (offsets against
 * the source's own line numbers, totals, gcov words read back) and by its
 * consumer where installed (llvm-profdata-19, gcc -fauto-profile,
 * llvm-bolt-19).  Bad inputs (no DWARF, no samples) must give a clear error
 * and leave no file behind.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/optimize.h"
#include "../optimize/internal.h"
#include "testutil.h"
#include "tu_main.h"

/* Line numbers below are the test's expectations: keep them in step. */
static const char src_text[] =
	"#include <stdlib.h>\n"						/* 1 */
	"static inline int mix(int a, int b)\n"				/* 2 */
	"{\n"								/* 3 */
	"\tif (a & 1)\n"						/* 4 */
	"\t\treturn a * 3 + b;\n"					/* 5 */
	"\treturn a / 2 - b;\n"						/* 6 */
	"}\n"								/* 7 */
	"__attribute__((noinline)) long work(int n, int m)\n"		/* 8 */
	"{\n"								/* 9 */
	"\tlong s = 0;\n"						/* 10 */
	"\tfor (int i = 0; i < n; i++) {\n"				/* 11 */
	"\t\tif (i % 7 == 0)\n"						/* 12 */
	"\t\t\ts += mix(i, m);\n"					/* 13 */
	"\t\telse\n"							/* 14 */
	"\t\t\ts += i ^ m;\n"						/* 15 */
	"\t}\n"								/* 16 */
	"\treturn s;\n"							/* 17 */
	"}\n"								/* 18 */
	"int main(int argc, char **argv)\n"				/* 19 */
	"{\n"								/* 20 */
	"\t(void)argv;\n"						/* 21 */
	"\treturn (int)work(argc * 1000, argc) & 1;\n"			/* 22 */
	"}\n";								/* 23 */
#define WORK_DECL 8
#define MIX_DECL 2
#define MIX_CALL 13

static char tmp[256];

static int setup(void **state)
{
	FILE *f;

	if (tu_ws_setup(state, tmp, sizeof(tmp), "optimize"))
		return -1;
	f = fopen(strcat(strcpy((char[300]){ 0 }, tmp), "/fb.c"), "w");
	if (!f)
		return -1;
	fputs(src_text, f);
	fclose(f);
	/* -O2 inlines mix into work; the stripped copy has no DWARF; loc has
	 * a static (local) function, which BOLT calls "sq/1" */
	if (tu_sh("cd %s && cc -O2 -g -o fb fb.c && cc -O2 -o fb_nodw fb.c && strip fb_nodw && "
		  "printf 'static __attribute__((noinline)) int sq(int x)\n{\n"
		  "\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n\t\ts += i * i;\n"
		  "\treturn s;\n}\nint main(int c, char **v)\n{\n\t(void)v;\n"
		  "\treturn sq(c * 100) & 1;\n}\n' > loc.c && cc -O2 -g -o loc loc.c", tmp))
		return -1;
	return 0;
}

static char *path(const char *name)
{
	return tu_in(tmp, name);
}

/* A cpu-clock profile of file (period and unit as given) with 10 samples
 * at every byte of proc (each instruction then has samples; the estimator
 * sees a flat profile). */
static void flat_profile(const char *file, const char *proc, uint64_t period,
			 const char *unit, struct prof_profile *p)
{
	uint64_t lo, hi;

	tu_profile_of(p, file, "cpu-clock", period, unit);
	sym_range(file, proc, &lo, &hi);
	for (uint64_t o = lo; o < hi; o++)
		assert_int_equal(prof_profile_add(p, o, 10), 0);
	assert_int_equal(prof_profile_normalize(p), 0);
}

/* flat_profile of work, every 100 us. */
static void work_profile(const char *file, struct prof_profile *p)
{
	flat_profile(file, "work", 100000, "ns", p);
}

/* The analysis of a profile made here (no database): the model's best
 * cases, relative counts, as est_analyze gives them. */
static void est(struct opt_est *e)
{
	static struct est_input in;
	struct est_analysis_opts o;
	struct dcpi_err err = { 0 };

	est_analysis_opts_default(&o);
	o.no_measure = 1;
	o.no_calib = 1;
	assert_int_equal(est_input_open(&in, NULL, "", "", NULL, 0, &o, &err), 0);
	opt_est_default(e, &in);
	assert_non_null(in.model);
}

static uint64_t check_totals(const struct opt_func *f)
{
	uint64_t t = 0;

	for (size_t i = 0; i < f->nlocs; i++) {
		assert_true(f->locs[i].count > 0);
		if (i)	/* sorted, unique */
			assert_true(f->locs[i - 1].offset < f->locs[i].offset ||
				    (f->locs[i - 1].offset == f->locs[i].offset &&
				     f->locs[i - 1].discr < f->locs[i].discr));
		t += f->locs[i].count;
	}
	for (size_t i = 0; i < f->ncalls; i++)
		t += check_totals(f->calls[i].callee);
	assert_true(t == f->total);
	return t;
}

/* What most tests start from: est's analysis, work's profile of one of
 * the binaries (work_profile), that binary opened, and (fx_build) the
 * source profile built from them. */
struct fx {
	struct opt_est e;
	struct prof_profile p;
	struct image *img;
	struct opt_src *s;
};

static void fx_open(struct fx *f, const char *name)
{
	struct dcpi_err err = { 0 };

	memset(f, 0, sizeof(*f));
	est(&f->e);
	work_profile(path(name), &f->p);
	assert_int_equal(img_open(path(name), 0, &f->img, &err), 0);
}

/* The source profile of f, discriminators as disc says. */
static void fx_build(struct fx *f, int disc)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(opt_src_build(f->img, &f->p, &f->e, disc, &f->s, &err), 0);
}

static void fx_close(struct fx *f)
{
	opt_src_free(f->s);
	img_close(f->img);
	prof_profile_free(&f->p);
}

static void test_source_profile(void **state)
{
	const struct opt_func *w;
	struct opt_src *s;
	struct fx f;
	int found_mix = 0;

	(void)state;
	fx_open(&f, "fb");
	fx_build(&f, OPT_D_LLVM_BASE);
	s = f.s;
	/* one procedure sampled: one function, named as the symbol */
	assert_int_equal(s->nprocs, 1);
	assert_int_equal(s->nfuncs, 1);
	w = s->funcs[0];
	assert_string_equal(w->name, "work");
	assert_int_equal(w->decl_line, WORK_DECL);
	check_totals(w);
	/* body lines lie within work's lines 8..18 */
	for (size_t i = 0; i < w->nlocs; i++)
		assert_true(w->locs[i].offset <= 18 - WORK_DECL);
	for (size_t i = 0; i < w->ncalls; i++) {
		const struct opt_func *c = w->calls[i].callee;

		if (strcmp(c->name, "mix"))
			continue;
		found_mix = 1;
		assert_int_equal(w->calls[i].offset, MIX_CALL - WORK_DECL);
		assert_int_equal(c->decl_line, MIX_DECL);
		for (size_t k = 0; k < c->nlocs; k++)
			assert_true(c->locs[k].offset >= 2 && c->locs[k].offset <= 4);
	}
	assert_true(found_mix);
	fx_close(&f);
}

/* --raw-samples: a location's count is its instructions' largest sample
 * count (10 per byte here: a multiple of 10, at most 10 x 15 bytes). */
static void test_raw_samples(void **state)
{
	struct fx f;

	(void)state;
	fx_open(&f, "fb");
	f.e.raw_samples = 1;
	fx_build(&f, OPT_D_NONE);
	assert_int_equal(f.s->nfuncs, 1);
	for (size_t i = 0; i < f.s->funcs[0]->nlocs; i++) {
		uint64_t c = f.s->funcs[0]->locs[i].count;

		assert_true(c >= 10 && c <= 150 && c % 10 == 0);
	}
	fx_close(&f);
}

/* With main sampled too, work's head is the count of main's call to it. */
static void test_heads_from_calls(void **state)
{
	const struct opt_func *w = NULL, *m = NULL;
	struct opt_src *s;
	struct fx f;
	uint64_t lo, hi, calls = 0;

	(void)state;
	fx_open(&f, "fb");
	sym_range(path("fb"), "main", &lo, &hi);
	for (uint64_t o = lo; o < hi; o++)
		assert_int_equal(prof_profile_add(&f.p, o, 10), 0);
	assert_int_equal(prof_profile_normalize(&f.p), 0);
	fx_build(&f, OPT_D_NONE);
	s = f.s;
	for (size_t i = 0; i < s->nfuncs; i++) {
		if (!strcmp(s->funcs[i]->name, "work"))
			w = s->funcs[i];
		if (!strcmp(s->funcs[i]->name, "main"))
			m = s->funcs[i];
	}
	assert_non_null(w);
	assert_non_null(m);
	for (size_t i = 0; i < m->nlocs; i++)
		for (size_t t = 0; t < m->locs[i].ntargets; t++)
			if (!strcmp(m->locs[i].targets[t].name, "work"))
				calls += m->locs[i].targets[t].count;
	assert_true(calls > 0);
	assert_true(w->head == calls);
	fx_close(&f);
}

static void test_llvm_text(void **state)
{
	struct dcpi_err err = { 0 };
	struct opt_src *s;
	struct fx f;
	unsigned long long tot, head;
	char *txt, name[64];
	size_t len;

	(void)state;
	fx_open(&f, "fb");
	fx_build(&f, OPT_D_LLVM_BASE);
	s = f.s;
	assert_int_equal(opt_llvm_text(s, &txt, &len, &err), 0);
	assert_int_equal(strlen(txt), len);
	assert_int_equal(sscanf(txt, "%63[^:]:%llu:%llu\n", name, &tot, &head), 3);
	assert_string_equal(name, "work");
	assert_true(tot == s->funcs[0]->total);
	/* the inlined call site, at its offset, one space deep */
	assert_non_null(strstr(txt, "\n 5: mix:"));
	assert_int_equal(opt_write_file(path("fb.prof"), txt, len, &err), 0);
	if (tu_sh("llvm-profdata-19 --version > /dev/null 2>&1") == 0) {
		assert_int_equal(tu_sh("llvm-profdata-19 show --sample %s > %s 2>&1",
				       path("fb.prof"), path("show.txt")), 0);
		assert_int_equal(tu_sh("grep -q 'Function: work: %llu' %s && grep -q 'inlined "
				       "callee: mix' %s", tot, path("show.txt"),
				       path("show.txt")), 0);
	} else {
		print_message("no llvm-profdata-19: structure checks only\n");
	}
	free(txt);
	fx_close(&f);
}

/* The test is skipped where clang-19 is not installed. */
static void need_clang19(void)
{
	if (tu_sh("clang-19 --version > /dev/null 2>&1")) {
		print_message("no clang-19: skipped\n");
		skip();
	}
}

/* clang applies the profile: built from a clang binary of fb.c, at least
 * 80% of its records must match (clang warns below the threshold).  Here
 * 6 of 7 do: the prologue's line (the opening brace) has no IR instruction.
 * A profile with lines off by three matched 0 to 71% per function on bzip2,
 * dcpi's own 95 to 100%. */
static void test_llvm_clang_applies(void **state)
{
	struct dcpi_err err = { 0 };
	struct fx f;
	char *txt;
	size_t len;

	(void)state;
	need_clang19();
	assert_int_equal(tu_sh("cd %s && clang-19 -O2 -g -fdebug-info-for-profiling -o fbc fb.c",
			       tmp), 0);
	fx_open(&f, "fbc");
	fx_build(&f, OPT_D_LLVM_BASE);
	assert_int_equal(opt_llvm_text(f.s, &txt, &len, &err), 0);
	assert_int_equal(opt_write_file(path("fbc.prof"), txt, len, &err), 0);
	assert_int_equal(tu_sh("cd %s && clang-19 -O2 -g -fdebug-info-for-profiling "
			       "-fprofile-sample-use=fbc.prof -mllvm "
			       "-sample-profile-check-record-coverage=80 -c fb.c -o fbc.o > cov.log "
			       "2>&1", tmp), 0);
	assert_int_not_equal(tu_sh("grep -q 'were applied' %s", path("cov.log")), 0);
	free(txt);
	fx_close(&f);
}

/* ---- pseudo probes (clang -fpseudo-probe-for-profiling) ----------------- */

static void test_md5(void **state)
{
	static const struct { const char *in, *hex; } v[] = {	/* RFC 1321's */
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
		  "57edf4a22be3c955ac49da2e2107b67a" },
	};
	uint8_t d[16];
	char hex[33];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		dcpi_md5(v[i].in, strlen(v[i].in), d);
		for (int j = 0; j < 16; j++)
			snprintf(hex + 2 * j, 3, "%02x", d[j]);
		assert_string_equal(hex, v[i].hex);
	}
	/* the GUID is the first 8 bytes, little endian */
	assert_true(dcpi_md5_guid("abc", 3) == 0xb04fd23c98500190ull);
}

/* fbp: fb.c built with pseudo probes (clang-19 only: skipped without). */
static void build_fbp(void)
{
	need_clang19();
	assert_int_equal(tu_sh("cd %s && [ -x fbp ] || clang-19 -O2 -g -fdebug-info-for-profiling "
			       "-fpseudo-probe-for-profiling -o fbp fb.c", tmp), 0);
}

/* The probes as decoded here against the ones llvm-profgen prints, address,
 * function and index, and every description's GUID against its name's MD5. */
static void test_probes_decode(void **state)
{
	struct dcpi_err err = { 0 };
	struct opt_probes pp;
	struct image *img;
	FILE *f;
	char line[512], name[256];
	size_t matched = 0, listed = 0, pending = 0;
	unsigned idx[64];
	char fn[64][256];

	(void)state;
	build_fbp();
	assert_int_equal(img_open(path("fbp"), 0, &img, &err), 0);
	assert_int_equal(opt_probes_load(img, &pp, &err), 0);
	assert_true(pp.n > 4 && pp.nd >= 2);
	assert_int_equal(pp.unresolved, 0);
	for (size_t i = 0; i < pp.nd; i++)
		assert_true(pp.desc[i].guid == dcpi_md5_guid(pp.desc[i].name,
							      strlen(pp.desc[i].name)));
	for (size_t i = 0; i < pp.n; i++) {
		const struct img_proc *pr = img_proc_at(img, pp.v[i].addr);

		assert_non_null(pr);
		assert_non_null(opt_probes_desc(&pp, pp.nodes[pp.v[i].node].guid));
	}
	/* an image without probes: -ENOENT, no message */
	{
		struct image *plain;
		struct opt_probes none;

		assert_int_equal(img_open(path("fb"), 0, &plain, &err), 0);
		assert_int_equal(opt_probes_load(plain, &none, &err), -ENOENT);
		img_close(plain);
	}
	if (tu_sh("llvm-profgen-19 --version > /dev/null 2>&1")) {
		print_message("no llvm-profgen-19: decoded probes not compared\n");
		goto out;
	}
	assert_int_equal(tu_sh("llvm-profgen-19 --binary=%s --show-pseudo-probe "
			       "--show-disassembly-only --output=/dev/null > %s 2>&1",
			       path("fbp"), path("probes.txt")), 0);
	f = fopen(path("probes.txt"), "r");
	assert_non_null(f);
	/* "[Probe]: FUNC: NAME Index: I ..." lines stand before the instruction
	 * "    ADDR:\t..." they mark */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		unsigned ix;

		if (sscanf(line, " [Probe]: FUNC: %255s Index: %u", name, &ix) == 2) {
			if (pending < 64) {
				idx[pending] = ix;
				snprintf(fn[pending++], sizeof(fn[0]), "%s", name);
			}
			continue;
		}
		if (!pending || sscanf(line, " %llx:", &a) != 1)
			continue;
		for (size_t k = 0; k < pending; k++) {
			listed++;
			for (size_t i = opt_probes_first(&pp, a); i < pp.n && pp.v[i].addr == a;
			     i++) {
				const struct opt_pdesc *d =
					opt_probes_desc(&pp, pp.nodes[pp.v[i].node].guid);

				if (pp.v[i].index == idx[k] && d && !strcmp(d->name, fn[k])) {
					matched++;
					break;
				}
			}
		}
		pending = 0;
	}
	fclose(f);
	assert_true(listed > 4);
	assert_int_equal(matched, listed);
	assert_int_equal(listed, pp.n);
out:
	opt_probes_free(&pp);
	img_close(img);
}

/* A probe-keyed profile of fbp: work and the inlined mix under its call
 * probe, with their CFG checksums; llvm-profdata reads it and clang applies it
 * (branch weights in the IR; without a profile there are none). */
static void test_probes_profile(void **state)
{
	struct dcpi_err err = { 0 };
	struct opt_probes pp;
	struct opt_src *s;
	struct fx f;
	const struct opt_func *w = NULL;
	char *txt;
	size_t len;

	(void)state;
	build_fbp();
	fx_open(&f, "fbp");
	assert_int_equal(opt_probes_load(f.img, &pp, &err), 0);
	s = f.s = opt_src_new(OPT_D_LLVM_BASE);
	assert_non_null(s);
	s->want_probes = 1;
	assert_int_equal(opt_src_add(s, f.img, &f.p, &f.e, &err), 0);
	assert_int_equal(opt_src_finish(s, &err), 0);
	assert_int_equal(s->probes, 1);
	for (size_t i = 0; i < s->nfuncs; i++)
		if (!strcmp(s->funcs[i]->name, "work"))
			w = s->funcs[i];
	assert_non_null(w);
	assert_true(w->checksum == opt_probes_desc(&pp, dcpi_md5_guid("work", 4))->hash);
	assert_true(w->nlocs >= 3 && w->total > 0);
	for (size_t i = 0; i < w->nlocs; i++)
		assert_true(w->locs[i].offset >= 1 && w->locs[i].discr == 0);
	assert_int_equal(w->ncalls, 1);		/* mix, inlined */
	/* a static function's name: mangled, with clang's unique suffix
	 * ("_ZL3mixii.__uniq.761..."), as .pseudo_probe_desc has it */
	assert_non_null(strstr(w->calls[0].callee->name, "mix"));
	assert_non_null(strstr(w->calls[0].callee->name, ".__uniq."));
	assert_true(w->calls[0].callee->checksum != 0);
	assert_int_equal(opt_llvm_text(s, &txt, &len, &err), 0);
	assert_non_null(strstr(txt, "!CFGChecksum: "));
	assert_int_equal(opt_write_file(path("fbp.prof"), txt, len, &err), 0);
	if (!tu_sh("llvm-profdata-19 --version > /dev/null 2>&1"))
		assert_int_equal(tu_sh("llvm-profdata-19 show --sample %s > /dev/null 2>&1",
				       path("fbp.prof")), 0);
	assert_int_equal(tu_sh("cd %s && clang-19 -O2 -g -fdebug-info-for-profiling "
			       "-fpseudo-probe-for-profiling -fprofile-sample-use=fbp.prof -S "
			       "-emit-llvm -o fbp.ll fb.c 2> fbp.log", tmp), 0);
	assert_int_equal(tu_sh("grep -q 'branch_weights' %s", path("fbp.ll")), 0);
	assert_int_equal(tu_sh("cd %s && clang-19 -O2 -g -fdebug-info-for-profiling "
			       "-fpseudo-probe-for-profiling -S -emit-llvm -o plain.ll fb.c", tmp), 0);
	assert_int_not_equal(tu_sh("grep -q 'branch_weights' %s", path("plain.ll")), 0);
	free(txt);
	opt_probes_free(&pp);
	fx_close(&f);
}

/* Corrupt probe sections: a clear error naming the file, never a crash. */
static void test_probes_corrupt(void **state)
{
	struct dcpi_err err = { 0 };
	struct image *img;
	struct opt_probes pp;
	const struct img_section *sec;
	uint64_t off, size;
	int bad = 0;

	(void)state;
	build_fbp();
	assert_int_equal(img_open(path("fbp"), 0, &img, &err), 0);
	sec = img_section_by_name(img, ".pseudo_probe");
	assert_non_null(sec);
	off = sec->offset;
	size = sec->size;
	img_close(img);
	/* every byte of the section set to 0xff in turn (a few lengths
	 * overflow, deltas fly off): decoded or refused, nothing else */
	for (uint64_t i = 0; i < size; i++) {
		int rc;

		assert_int_equal(tu_sh("cp %s %s && printf '\\377' | dd of=%s bs=1 seek=%llu "
				       "conv=notrunc status=none", path("fbp"), path("fbp_bad"),
				       path("fbp_bad"), (unsigned long long)(off + i)), 0);
		assert_int_equal(img_open(path("fbp_bad"), 0, &img, &err), 0);
		rc = opt_probes_load(img, &pp, &err);
		if (rc < 0) {
			assert_int_equal(rc, -EINVAL);
			assert_non_null(strstr(err.msg, "fbp_bad: malformed"));
			bad++;
		} else {
			opt_probes_free(&pp);
		}
		img_close(img);
	}
	assert_true(bad > 0);
}

/* ---- gcc: read the words back as gcc 12's auto-profile.c does ---------- */

struct rd {
	const uint8_t *b;
	size_t n, at;
};

static uint32_t rd_u32(struct rd *r)
{
	uint32_t v;

	assert_true(r->at + 4 <= r->n);
	memcpy(&v, r->b + r->at, 4);
	r->at += 4;
	return v;
}

static uint64_t rd_counter(struct rd *r)
{
	uint64_t lo = rd_u32(r);

	return lo | (uint64_t)rd_u32(r) << 32;
}

static uint64_t rd_instance(struct rd *r, uint32_t nnames)
{
	uint32_t npos, ncalls;
	uint64_t t = 0;

	assert_true(rd_u32(r) < nnames);
	npos = rd_u32(r);
	ncalls = rd_u32(r);
	for (uint32_t i = 0; i < npos; i++) {
		assert_int_equal(rd_u32(r) & 0xffff, 0);
		assert_int_equal(rd_u32(r), 0);	/* no value targets */
		t += rd_counter(r);
	}
	for (uint32_t i = 0; i < ncalls; i++) {
		rd_u32(r);
		t += rd_instance(r, nnames);
	}
	return t;
}

static void test_gcc_bytes(void **state)
{
	struct dcpi_err err = { 0 };
	struct fx f;
	struct rd r;
	uint8_t *buf;
	size_t len;
	uint32_t nnames, nfuncs;

	(void)state;
	fx_open(&f, "fb");
	fx_build(&f, OPT_D_NONE);
	assert_int_equal(opt_gcc_bytes(f.s, &buf, &len, &err), 0);
	r = (struct rd){ buf, len, 0 };
	assert_int_equal(rd_u32(&r), 0x67636461);
	assert_int_equal(rd_u32(&r), 2);
	rd_u32(&r);
	assert_int_equal(rd_u32(&r), 0xaa000000);
	rd_u32(&r);
	nnames = rd_u32(&r);
	assert_int_equal(nnames, 2);	/* work, mix */
	for (uint32_t i = 0; i < nnames; i++) {
		uint32_t n = rd_u32(&r);

		assert_true(n > 1 && r.at + n <= len && buf[r.at + n - 1] == 0);
		r.at += n;
	}
	assert_int_equal(rd_u32(&r), 0xac000000);
	rd_u32(&r);
	nfuncs = rd_u32(&r);
	assert_int_equal(nfuncs, 1);
	rd_counter(&r);
	/* gcc 12 merges discriminators: the total can only shrink */
	assert_true(rd_instance(&r, nnames) <= f.s->funcs[0]->total);
	assert_int_equal(rd_u32(&r), 0xaf000000);
	assert_int_equal(rd_u32(&r), 0);
	assert_int_equal(r.at, len);
	assert_int_equal(opt_write_file(path("fb.afdo"), buf, len, &err), 0);
	/* gcc reads it, and annotates work with its counts */
	assert_int_equal(tu_sh("cd %s && cc -O2 -g -fauto-profile=fb.afdo "
			       "-fdump-tree-optimized-blocks-details -c fb.c -o fb_afdo.o", tmp), 0);
	assert_int_equal(tu_sh("grep -q '(auto FDO)' %s/fb_afdo.c.*optimized", tmp), 0);
	free(buf);
	fx_close(&f);
}

static void test_bolt_text(void **state)
{
	struct dcpi_err err = { 0 };
	struct fx f;
	char *txt, *line, *save = NULL;
	size_t len, n = 0;
	uint64_t lo, hi;

	(void)state;
	fx_open(&f, "fb");
	sym_range(path("fb"), "work", &lo, &hi);
	assert_int_equal(opt_bolt_text(f.img, &f.p, &f.e, &txt, &len, NULL, &err), 0);
	assert_int_equal(opt_write_file(path("fb.fdata"), txt, len, &err), 0);
	for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char f1[64], f2[64];
		unsigned long long o1, o2, mis, cnt;

		assert_int_equal(sscanf(line, "1 %63s %llx 1 %63s %llx %llu %llu", f1, &o1, f2, &o2,
					&mis, &cnt), 6);
		assert_string_equal(f1, "work");
		assert_true(o1 < hi - lo && cnt > 0 && mis == 0);
		if (!strcmp(f2, "work"))
			assert_true(o2 < hi - lo);
		n++;
	}
	assert_true(n >= 3);	/* the loop's back edge and the if's two ways */
	if (tu_sh("llvm-bolt-19 --version > /dev/null 2>&1") == 0) {
		assert_int_equal(tu_sh("llvm-bolt-19 %s -o %s -data=%s > %s 2>&1", path("fb"),
				       path("fb.bolt"), path("fb.fdata"), path("bolt.log")), 0);
		assert_int_equal(tu_sh("grep -q '1 out of .* functions .* have non-empty "
				       "execution profile' %s", path("bolt.log")), 0);
	} else {
		print_message("no llvm-bolt-19: structure checks only\n");
	}
	free(txt);
	fx_close(&f);
}

/* A local function is named as BOLT (and perf2bolt) name it: "sq/1". */
static void test_bolt_local(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct image *img;
	struct opt_est e;
	char *txt;
	size_t len;

	(void)state;
	est(&e);
	flat_profile(path("loc"), "sq", 0, "", &p);	/* no period: as prof_profile_init */
	assert_int_equal(img_open(path("loc"), 0, &img, &err), 0);
	assert_int_equal(opt_bolt_text(img, &p, &e, &txt, &len, NULL, &err), 0);
	assert_true(!strncmp(txt, "1 sq/1 ", 7));
	assert_null(strstr(txt, " sq "));
	free(txt);
	img_close(img);
	prof_profile_free(&p);
}

/* ---- bad inputs: a message, no file ------------------------------------ */

static void test_no_dwarf(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct image *img;
	struct opt_src *s = (struct opt_src *)1;
	struct opt_est e;

	(void)state;
	est(&e);
	tu_profile_of(&p, path("fb_nodw"), "", 0, "");	/* no event, no period */
	assert_int_equal(prof_profile_add(&p, 0x1100, 5), 0);
	assert_int_equal(img_open(path("fb_nodw"), 0, &img, &err), 0);
	assert_int_equal(opt_src_build(img, &p, &e, OPT_D_NONE, &s, &err), -ENODATA);
	assert_null(s);
	assert_non_null(strstr(err.msg, "no DWARF"));
	assert_non_null(strstr(err.msg, "fb_nodw"));
	img_close(img);
	prof_profile_free(&p);
}

static void test_no_samples(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	struct image *img;
	struct opt_src *s;
	struct opt_est e;
	char *txt = NULL;
	size_t len;

	(void)state;
	est(&e);
	tu_profile_of(&p, path("fb"), "cpu-clock", 0, "");
	assert_int_equal(img_open(path("fb"), 0, &img, &err), 0);
	assert_int_equal(opt_src_build(img, &p, &e, OPT_D_NONE, &s, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "no cpu-clock samples"));
	assert_int_equal(opt_bolt_text(img, &p, &e, &txt, &len, NULL, &err), -ENODATA);
	assert_null(txt);
	img_close(img);
	prof_profile_free(&p);
}

/* The commands over a database: errors exit non-zero and write nothing. */
static void test_commands(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	struct dcpi_err err = { 0 };
	struct prof_profile p, q;
	struct prof_db *db;
	char epoch[64], cmd[1024];

	(void)state;
	tu_need_run(bin != NULL);
	work_profile(path("fb"), &p);
	tu_profile_of(&q, path("fb_nodw"), "cpu-clock", 0, "");
	assert_int_equal(prof_profile_add(&q, 0x1100, 5), 0);
	assert_int_equal(prof_db_open(path("db"), PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, epoch, sizeof(epoch), &err), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
	assert_int_equal(prof_epoch_write(db, epoch, &q, &err), 0);
	prof_db_close(db);
	assert_int_equal(tu_sh("%s llvm-prof --db %s %s -o %s 2> %s", bin, path("db"), path("fb"),
			       path("c.prof"), path("c.log")), 0);
	assert_int_equal(tu_sh("head -1 %s | grep -q '^work:[0-9]*:[0-9]*$'", path("c.prof")), 0);
	assert_int_equal(tu_sh("%s gcc-prof --db %s %s -o %s 2> %s", bin, path("db"), path("fb"),
			       path("c.afdo"), path("c.log")), 0);
	assert_int_equal(tu_sh("%s bolt-prof --db %s %s -o %s 2> %s", bin, path("db"), path("fb"),
			       path("c.fdata"), path("c.log")), 0);
	/* no DWARF: a message naming the file, no output file */
	assert_int_not_equal(tu_sh("%s llvm-prof --db %s %s -o %s 2> %s", bin, path("db"),
				   path("fb_nodw"), path("n.prof"), path("n.log")), 0);
	assert_int_equal(tu_sh("grep -q 'fb_nodw: no DWARF' %s && ! test -e %s", path("n.log"),
			       path("n.prof")), 0);
	/* a program with no samples in the epoch */
	assert_int_not_equal(tu_sh("%s gcc-prof --db %s /bin/true -o %s 2> %s", bin, path("db"),
				   path("t.afdo"), path("t.log")), 0);
	assert_int_equal(tu_sh("grep -q 'no cpu-clock samples' %s && ! test -e %s", path("t.log"),
			       path("t.afdo")), 0);
	/* --exact: work's counts from a callgrind-Ir profile, 1 outside the loop and
	 * 1000 in it, instead of the estimate; the profile's lines say so.  (path()
	 * keeps four names at a time: the commands' other names are held here.) */
	snprintf(cmd, sizeof(cmd), "%s llvm-prof --db %s --exact", bin, path("db"));
	tu_exact_db(path("exact"), path("fb"), "work", (const double[]){ 1, 1000, 1000 });
	assert_int_equal(tu_sh("%s %s %s -o %s 2> %s", cmd, path("exact"), path("fb"),
			       path("x.prof"), path("x.log")), 0);
	assert_int_equal(tu_sh("grep -q '^ [0-9.]*: 1000$' %s && "
			       "! grep -E '^ +[0-9.]+: [0-9]+$' %s | grep -qvE ': (1|1000)$'",
			       path("x.prof"), path("x.prof")), 0);
	assert_int_equal(tu_sh("%s gcc-prof --db %s --exact %s %s -o /dev/null 2> /dev/null", bin,
			       path("db"), path("exact"), path("fb")), 0);
	/* a database without this binary's counts, --raw-samples with it, BOLT */
	assert_int_not_equal(tu_sh("%s %s %s -o %s 2> %s", cmd, path("db"), path("fb"),
				   path("y.prof"), path("y.log")), 0);
	assert_int_equal(tu_sh("grep -q 'no callgrind-Ir' %s && ! test -e %s", path("y.log"),
			       path("y.prof")), 0);
	tu_exact_db(path("exact2"), path("loc"), "sq", (const double[]){ 1, 5, 5 });
	assert_int_not_equal(tu_sh("%s %s %s -o %s 2> %s", cmd, path("exact2"), path("fb"),
				   path("y.prof"), path("y.log")), 0);
	assert_int_equal(tu_sh("grep -q 'fb: no callgrind-Ir counts of it' %s && ! test -e %s",
			       path("y.log"), path("y.prof")), 0);
	assert_int_not_equal(tu_sh("%s %s --raw-samples %s -o %s 2> %s", cmd, path("exact"),
				   path("fb"), path("y.prof"), path("y.log")), 0);
	assert_int_equal(tu_sh("grep -q 'one or the other' %s", path("y.log")), 0);
	snprintf(cmd, sizeof(cmd), "%s bolt-prof --db %s --exact", bin, path("db"));
	assert_int_not_equal(tu_sh("%s %s %s -o %s 2> %s", cmd, path("exact"), path("fb"),
				   path("y.fdata"), path("y.log")), 0);
	assert_int_equal(tu_sh("grep -q 'estimated only' %s", path("y.log")), 0);
	/* no -o */
	assert_int_not_equal(tu_sh("%s bolt-prof --db %s 2> /dev/null", bin, path("db")), 0);
	prof_profile_free(&p);
	prof_profile_free(&q);
}

static void test_base_name(void **state)
{
	char b[64];

	(void)state;
	opt_base_name("foo.cold", b, sizeof(b));
	assert_string_equal(b, "foo");
	opt_base_name("bar.part.0", b, sizeof(b));
	assert_string_equal(b, "bar");
	opt_base_name("memcpy@plt", b, sizeof(b));
	assert_string_equal(b, "memcpy");
	opt_base_name("_ZN1a1bEv", b, sizeof(b));
	assert_string_equal(b, "_ZN1a1bEv");
	opt_base_name("_ZL3fooi.__uniq.1234", b, sizeof(b));	/* clang's unique names */
	assert_string_equal(b, "_ZL3fooi.__uniq.1234");
	opt_base_name("mix.__uniq.99.cold", b, sizeof(b));
	assert_string_equal(b, "mix.__uniq.99");
}

/* LLVM's discriminator encoding (DILocation::encodeDiscriminator): each of
 * base, duplication factor and copy id is 1 (one bit) when 0, else its
 * prefix encoding shifted left once, 7 bits for values up to 31, 14 above.
 * The encodings below are worked out by hand from that rule. */
static void test_discriminators(void **state)
{
	static const struct { uint32_t d, base, dup; } c[] = {
		{ 0, 0, 1 },			/* nothing encoded */
		{ 6, 3, 1 },			/* base 3 alone */
		{ 17, 0, 4 },			/* base 0 (1 bit), factor 4: unrolled x4 */
		{ 6 | 192 << 7, 3, 32 },	/* base 3, factor 32 (VF 8 x UF 4) */
		{ 208 | 4 << 14, 40, 2 },	/* base 40 (14 bits), factor 2 */
		{ 1 | 1 << 1 | 10 << 2, 0, 1 },	/* copy id 5 only */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_int_equal(opt_llvm_base_discr(c[i].d), c[i].base);
		assert_int_equal(opt_llvm_dup_factor(c[i].d), c[i].dup);
	}
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_base_name),
	cmocka_unit_test(test_discriminators),
	cmocka_unit_test(test_md5),
	cmocka_unit_test(test_probes_decode),
	cmocka_unit_test(test_probes_profile),
	cmocka_unit_test(test_probes_corrupt),
	cmocka_unit_test(test_source_profile),
	cmocka_unit_test(test_raw_samples),
	cmocka_unit_test(test_heads_from_calls),
	cmocka_unit_test(test_llvm_text),
	cmocka_unit_test(test_llvm_clang_applies),
	cmocka_unit_test(test_gcc_bytes),
	cmocka_unit_test(test_bolt_text),
	cmocka_unit_test(test_bolt_local),
	cmocka_unit_test(test_no_dwarf),
	cmocka_unit_test(test_no_samples),
	cmocka_unit_test(test_commands))
