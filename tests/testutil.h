/*
 * tests/testutil.h - helpers the end-to-end tests share: where a symbol's
 * bytes are in its file (from nm and readelf, never from dcpi's own image
 * code), and which profile and how many samples fall there.  Header-only:
 * each test is one binary.  Include after <cmocka.h>.
 */
#ifndef DCPI_TESTUTIL_H
#define DCPI_TESTUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/profile.h"

/* A process spinning beside the test (the other vCPU busy) when on, else
 * none (0); gone with the test, or after a minute if an assertion left it
 * running.  tu_spinner_stop ends it. */
static inline pid_t tu_spinner(int on)
{
	pid_t pid;

	if (!on)
		return 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
		for (volatile unsigned long i = 0;; i++)
			;
	}
	return pid;
}

static inline void tu_spinner_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A cmocka test f run between the file's each_setup and each_teardown. */
#define TU_EACH(f) cmocka_unit_test_setup_teardown(f, each_setup, each_teardown)

/* Run a shell command built printf-style; system()'s status. */
static inline int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int tu_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* popen of a shell command built printf-style, for reading; never NULL. */
static inline FILE *tu_popen(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline FILE *tu_popen(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	assert_non_null(f);
	return f;
}

/* The output of the shell command cmd, its first len - 1 bytes, in out; the
 * command's wait status. */
static inline int tu_sh_out(const char *cmd, char *out, size_t len)
{
	FILE *p = tu_popen("%s", cmd);
	size_t n = fread(out, 1, len - 1, p);

	out[n] = '\0';
	return pclose(p);
}

/* The first line of the output of the shell command cmd, without its
 * newline, in line (unchanged when there is none). */
static inline void tu_sh_line(const char *cmd, char *line, size_t len)
{
	FILE *p = tu_popen("%s", cmd);

	if (fgets(line, (int)len, p))
		line[strcspn(line, "\n")] = '\0';
	pclose(p);
}

/* A file at path holding text. */
static inline void tu_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* Skip the test, saying why, when tests/run.sh did not set what it needs
 * (set: whether DCPI_BIN, and what else the test reads, are there). */
static inline void tu_need_run(int set)
{
	if (!set) {
		print_message("DCPI_BIN unset: run through tests/run.sh\n");
		skip();
	}
}

/* Remove a test program's workspace dir, unless KEEP is set (to look in it). */
static inline void tu_rm_unless_kept(const char *dir)
{
	tu_sh("test -n \"$KEEP\" || rm -rf %s", dir);
}

/*
 * A new empty folder for one test program: mkdtemp of
 * "$TMPDIR/dcpi-test-<name>-XXXXXX" ("/tmp" when TMPDIR is unset or empty).
 * tests/run.sh points TMPDIR at a folder of the test's own, removed after;
 * a test removes its workspace itself all the same.  0, or -1 with errno.
 */
static inline int tu_workspace(char *out, size_t len, const char *name)
{
	const char *t = getenv("TMPDIR");
	int n;

	if (!t || !*t)
		t = "/tmp";
	n = snprintf(out, len, "%s/dcpi-test-%s-XXXXXX", t, name);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			out[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdtemp(out) ? 0 : -1;
}

/* For a cmocka group setup: the workspace of tu_workspace in dir, which
 * *state names for tu_ws_teardown.  0, or -1 with errno. */
static inline int tu_ws_setup(void **state, char *dir, size_t len, const char *name)
{
	*state = dir;
	if (tu_workspace(dir, len, name) == 0)
		return 0;
	fprintf(stderr, "%s: no workspace under %s (%zu bytes for its name): %s\n", name,
		getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", len, strerror(errno));
	return -1;
}

/* The group teardown: the workspace *state names removed, with all in it. */
static inline int tu_ws_teardown(void **state)
{
	const char *dir = *state;

	if (!dir || !*dir)
		return 0;
	return tu_sh("rm -rf '%s'", dir) ? -1 : 0;
}

/* dir/name, in the next of eight buffers: eight can be in use at once. */
static inline char *tu_in(const char *dir, const char *name)
{
	static char buf[8][PROF_PATH_MAX];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

/* Marsaglia's xorshift64, one fixed sequence per test program. */
static inline uint64_t tu_rng(void)
{
	static uint64_t s = 88172645463325252ULL;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

/* Whether path ends in suffix. */
static inline int tu_ends_with(const char *path, const char *suffix)
{
	size_t lp = strlen(path), ls = strlen(suffix);

	return lp >= ls && !strcmp(path + lp - ls, suffix);
}

static inline const struct prof_profile *find_image(const struct prof_profile *p, size_t n,
						    const char *suffix)
{
	for (size_t i = 0; i < n; i++)
		if (tu_ends_with(p[i].image.path, suffix))
			return &p[i];
	return NULL;
}

/* The address of symbol sym of file, from nm; with clones, of a gcc clone
 * of it (sym.constprop.0) too.  The last one nm lists; there must be one. */
static inline uint64_t tu_nm_addr(const char *file, const char *sym, int clones)
{
	char buf[512];
	size_t len = strlen(sym);
	uint64_t a = 0;
	FILE *p = tu_popen("nm '%s'", file);

	while (fgets(buf, sizeof(buf), p)) {
		unsigned long long v;
		char type, name[256];

		if (sscanf(buf, "%llx %c %255s", &v, &type, name) == 3 &&
		    !strncmp(name, sym, len) &&
		    (name[len] == '\0' || (clones && name[len] == '.')))
			a = v;
	}
	pclose(p);
	assert_true(a != 0);
	return a;
}

/* File offset of symbol sym of file and, unless size is NULL, its size (0
 * when nm gives none), from nm -S and readelf -l. */
static inline uint64_t tu_sym_off(const char *file, const char *sym, uint64_t *size)
{
	char line[512];
	unsigned long long va = 0, sz = 0, off, vaddr, pa, filesz;
	int found = 0;
	FILE *f = tu_popen("nm -S --defined-only '%s'", file);

	while (!found && fgets(line, sizeof(line), f)) {
		char name[256], type;

		if (sscanf(line, "%llx %llx %c %255s", &va, &sz, &type, name) == 4)
			found = !strcmp(name, sym);
		else if (sscanf(line, "%llx %c %255s", &va, &type, name) == 3)
			found = !strcmp(name, sym), sz = 0;
	}
	pclose(f);
	assert_true(found);
	if (size)
		*size = sz;
	f = tu_popen("readelf -lW '%s'", file);
	found = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &vaddr, &pa,
			   &filesz) == 4 && va >= vaddr && va < vaddr + filesz &&
		    va + sz <= vaddr + filesz) {
			va = va - vaddr + off;
			found = 1;
			break;
		}
	}
	pclose(f);
	assert_true(found);
	return va;
}

/* File offsets [lo, hi) of symbol sym of file, which has a size. */
static inline void sym_range(const char *file, const char *sym, uint64_t *lo, uint64_t *hi)
{
	uint64_t size;

	*lo = tu_sym_off(file, sym, &size);
	assert_true(size > 0);
	*hi = *lo + size;
}

static inline uint64_t count_in(const struct prof_profile *p, uint64_t lo, uint64_t hi)
{
	uint64_t c = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].offset >= lo && p->e[i].offset < hi)
			c += p->e[i].count;
	return c;
}

/* The samples of the n profiles p, all told. */
static inline uint64_t tu_sum_totals(const struct prof_profile *p, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += p[i].total;
	return t;
}

/*
 * Normalize p and write it, then free it, as a new epoch of the database at
 * dir (created if absent).  With db, the database stays open in *db and the
 * epoch's name goes to epoch; without, it is closed.
 */
static inline void tu_write_epoch(const char *dir, struct prof_profile *p, struct prof_db **db,
				  char *epoch, size_t len)
{
	struct dcpi_err err = { 0 };
	struct prof_db *d;
	char name[64];

	assert_int_equal(prof_profile_normalize(p), 0);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &d, &err), 0);
	assert_int_equal(prof_db_epoch_new(d, name, sizeof(name), &err), 0);
	assert_int_equal(prof_epoch_write(d, name, p, &err), 0);
	prof_profile_free(p);
	if (epoch)
		snprintf(epoch, len, "%s", name);
	if (db)
		*db = d;
	else
		prof_db_close(d);
}

/* p, new and empty: a profile of the file image for event, one sample every
 * period units ("events", "ns"). */
static inline void tu_profile_of(struct prof_profile *p, const char *image, const char *event,
				 uint64_t period, const char *unit)
{
	struct dcpi_err err = { 0 };

	prof_profile_init(p);
	assert_int_equal(prof_image_id_from_file(&p->image, image, &err), 0);
	snprintf(p->event, sizeof(p->event), "%s", event);
	snprintf(p->period_unit, sizeof(p->period_unit), "%s", unit);
	p->period = period;
}

/* The image bin, open in *img, and the CFG of its procedure proc in *cfg. */
static inline void tu_proc_cfg(const char *bin, const char *proc, struct image **img,
			       struct cfg **cfg)
{
	const struct img_proc *ip;
	struct dcpi_err err;

	assert_int_equal(img_open(bin, 0, img, &err), 0);
	assert_int_equal(img_proc_find(*img, proc, &ip, &err), 0);
	assert_int_equal(cfg_build(*img, ip, cfg, &err), 0);
}

/* One place of a profile and its samples. */
struct tu_at {
	uint64_t offset, count;
};

/*
 * A new database at dir whose one epoch holds a cycles profile of the file
 * image (one sample every 1000 events) with the n samples at; open in *db,
 * the epoch's name in epoch.
 */
static inline void tu_cycles_db(const char *dir, const char *image, const struct tu_at *at,
				size_t n, struct prof_db **db, char *epoch, size_t len)
{
	struct prof_profile p;

	tu_profile_of(&p, image, "cycles", 1000, "events");
	for (size_t i = 0; i < n; i++)
		assert_int_equal(prof_profile_add(&p, at[i].offset, at[i].count), 0);
	tu_write_epoch(dir, &p, db, epoch, len);
}

/* A database at dir whose one epoch holds the exact executions of proc in
 * bin, as `dcpi import` of callgrind writes them (callgrind-Ir), known by
 * construction: by_depth[d] for every block at loop depth d (0, 1, 2+). */
static inline void tu_exact_db(const char *dir, const char *bin, const char *proc,
			       const double by_depth[3])
{
	struct prof_profile p;
	struct image *img;
	struct cfg *cfg;

	tu_proc_cfg(bin, proc, &img, &cfg);
	tu_profile_of(&p, bin, "callgrind-Ir", 1, "events");
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++) {
			int d = cfg->blocks[b].loop_depth > 2 ? 2 : cfg->blocks[b].loop_depth;
			uint64_t off;

			assert_int_equal(img_vaddr_to_offset(img,
				cfg->insns[cfg->blocks[b].first + j].addr, &off), 0);
			assert_int_equal(prof_profile_add(&p, off, (uint64_t)by_depth[d]), 0);
		}
	tu_write_epoch(dir, &p, NULL, NULL, 0);
	cfg_free(cfg);
	img_close(img);
}

/*
 * A database at dir whose one epoch holds a cycles profile (one sample every
 * 1000) of proc in bin: by_depth[d] cycles on each instruction at loop depth
 * d (0, 1, 2+), and stall more on the one after the first load of the
 * depth-1 loop, where the samples of a load that waits land.  That load's
 * address (there must be one).
 */
static inline uint64_t tu_stalled_db(const char *dir, const char *bin, const char *proc,
				     const double by_depth[3], double stall)
{
	struct prof_profile p;
	struct image *img;
	struct cfg *cfg;
	uint64_t load = 0;
	int after = 0;

	tu_proc_cfg(bin, proc, &img, &cfg);
	tu_profile_of(&p, bin, "cycles", 1000, "events");
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t j = 0; j < cfg->blocks[b].n; j++) {
			const struct cfg_insn *in = &cfg->insns[cfg->blocks[b].first + j];
			int depth = cfg->blocks[b].loop_depth > 2 ? 2 : cfg->blocks[b].loop_depth;
			double cyc = by_depth[depth] + (after ? stall : 0);
			uint64_t off;

			after = !load && depth == 1 && (in->flags & CFG_I_LOAD) && in->nmem;
			if (after)
				load = in->addr;
			assert_int_equal(img_vaddr_to_offset(img, in->addr, &off), 0);
			assert_int_equal(prof_profile_add(&p, off, (uint64_t)(cyc / p.period)), 0);
		}
	assert_true(load != 0);
	tu_write_epoch(dir, &p, NULL, NULL, 0);
	cfg_free(cfg);
	img_close(img);
	return load;
}

#endif /* DCPI_TESTUTIL_H */
