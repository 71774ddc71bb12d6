/*
 * model_speed.c - how fast the pipeline model schedules loop bodies in
 * process, and how close it is to the bodies' measured cycles.
 *
 * Reads bench/bhive/measured-*.tsv (name<TAB>hex<TAB>cycles ...), decodes
 * every body once, then runs model_schedule() over all of them -n times and
 * prints blocks per second.  With -e it also prints, per body, the measured
 * and predicted cycles per iteration and the relative error, and the mean,
 * median and p90 of that error (the same figures as bench/bhive/compare.awk,
 * without re-timing anything), then the same over the bodies without a
 * harness artefact (find_artefact below).
 *
 * With -M K it also times one llvm-mca-19 process per body (-mcpu=znver4,
 * 1000 iterations, on the bytes as llvm-mc-19 disassembles them, which is
 * what bench_model.sh runs) for the first K bodies, and prints the ratio.
 *
 * With -r COLUMN the reference is that column of the file's header line
 * instead of the measured cycles (third column): e.g. `-m skylake -r
 * mca_skylake $BUILD/bhive/loops.tsv` prints |ours - llvm-mca| / llvm-mca
 * for the skylake model (bodies whose column is "-" are left out).
 *
 * With -e the summary also gives each model's coverage: the share of the
 * bodies' instructions some class row matches (the rest get the fallback
 * class); -u adds the forms that fall back in the chosen model, most
 * frequent first (mnemonic, operand form, vector width).
 *
 *	model_speed [-m MODEL] [-n N] [-e] [-u] [-M K] [-r COLUMN] FILE.tsv...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/cfg.h"
#include "dcpi/model.h"
#include "../tests/tu_hex.h"

struct body {
	char name[160];
	char *hex;
	double meas;
	struct cfg_insn *insns;
	size_t n;
	size_t bytes;
	const char *artefact;		/* why the harness's figure is not the code's, or NULL */
};

/*
 * Harness artefacts (bench/bhive/README.md, "What a figure is not"; docs/models.md,
 * "Checks"): bodies whose measured figure says more about the harness than about
 * the code.  Every general-purpose register starts as the same X, loads return X,
 * and a pointer stepping by s bytes walks s * U * 5000 bytes per run (U = 2048 /
 * body bytes, 4..100).  The vector registers' upper halves are clean since
 * harness.c's vzeroupper in bh_enter, so legacy-SSE bodies are no longer an
 * artefact ("sse-upper" in the references before 2026-11-22 04:30 UTC).
 */
#define L2_BYTES (1 << 20)
#define RUN_ITERS 5000

/* Byte step of reg per pass when only constant add/sub/inc/dec/lea move it, else 0
 * (and *data = 1 when something else writes it: a value from memory, in the harness
 * the same X every time). */
static long reg_step(const struct body *b, unsigned reg, int *data)
{
	long step = 0;

	*data = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct cfg_insn *in = &b->insns[i];
		const char *mn = in->mnemonic;

		if (!(in->regs_written & CFG_RBIT(reg)))
			continue;
		if (!strncmp(mn, "add", 3) && in->form == CFG_F_REG && (in->flags & CFG_I_IMM))
			step += (long)in->imm;
		else if (!strncmp(mn, "sub", 3) && in->form == CFG_F_REG && (in->flags & CFG_I_IMM))
			step -= (long)in->imm;
		else if (!strncmp(mn, "inc", 3))
			step++;
		else if (!strncmp(mn, "dec", 3))
			step--;
		else if ((in->flags & CFG_I_LEA) && in->mem.base == reg &&
			 in->mem.index == CFG_REG_NONE)
			step += in->mem.disp;
		else
			*data = 1;
	}
	return step;
}

/* The harness's address of insns[i]'s memory operand in pass k; 0 when unknown. */
static long harness_addr(const struct body *b, size_t i, long k)
{
	const struct cfg_insn *in = &b->insns[i];
	unsigned regs[2] = { in->mem.base, in->mem.index };
	long a = in->mem.disp;

	for (int r = 0; r < 2; r++) {
		long v = 0x40000000;
		int data;

		if (regs[r] == CFG_REG_NONE)
			continue;
		if (regs[r] >= 16)
			return 0;
		v += reg_step(b, regs[r], &data) * k;
		if (data)
			return 0;
		for (size_t j = 0; j < i; j++) {	/* this pass's updates so far */
			struct body one = *b;

			if (!(b->insns[j].regs_written & CFG_RBIT(regs[r])))
				continue;
			one.insns = &b->insns[j];
			one.n = 1;
			v += reg_step(&one, regs[r], &data);
		}
		a += r ? v * in->mem.scale : v;
	}
	return a;
}

#define ALIAS_PASSES 16

/* Does the load insns[j] read bytes the store insns[i] wrote, in the harness? */
static int harness_alias(const struct body *b, size_t i, size_t j)
{
	long sw = b->insns[i].mem.size ? b->insns[i].mem.size : 8;
	long sl = b->insns[j].mem.size ? b->insns[j].mem.size : 8;

	for (long k = 0; k < 4; k++) {
		long w = harness_addr(b, i, k);

		if (!w)
			return 0;
		for (long d = j > i ? 0 : 1; d <= ALIAS_PASSES; d++) {
			long l = harness_addr(b, j, k + d);

			if (l && l < w + sw && w < l + sl)
				return 1;
		}
	}
	return 0;
}

/*
 * Files timed with the harness's real-code flags (a "# harness flags: -W -D"
 * comment: bench_model.sh's loops since 2026-11-26 12:00 UTC) know fewer
 * artefacts: registers start at values of their own (no two pointers are
 * one), and a stepping pointer is wound back every U copies, so it walks
 * s * 2U bytes, and the harness takes fewer copies where that would pass
 * 16 KB (since 2026-11-26 evening; the 4 bodies it changed were re-timed):
 * no stream.  A store address loaded from memory stays an alias (X, or
 * random bytes with -R: the best over both).
 */
static int real_flags;

static const char *find_artefact(const struct body *b)
{
	int u = (int)(2048 / (b->bytes ? b->bytes : 1));
	long walk;

	u = u < 4 ? 4 : u > 100 ? 100 : u;
	/* passes a stepping pointer covers per run (classic: every body of the
	 * run; a stream beyond L2) */
	walk = (long)u * RUN_ITERS;
	for (size_t i = 0; i < b->n; i++) {
		const struct cfg_insn *w = &b->insns[i];
		unsigned regs[2] = { w->mem.base, w->mem.index };

		if (!w->nmem || (w->flags & (CFG_I_LEA | CFG_I_STACK)) ||
		    !(w->flags & CFG_I_STORE))
			continue;
		for (int r = 0; r < 2; r++) {
			int data;
			long step;

			if (regs[r] >= 16)
				continue;
			step = reg_step(b, regs[r], &data);
			/* a store address from memory: the same X every pass */
			if (data)
				return "alias";
			if (r == 1)
				step *= w->mem.scale;
			if (!real_flags && (step < 0 ? -step : step) * walk > L2_BYTES)
				return "stream";
		}
		/* a later load (this pass or the next ALIAS_PASSES) that reads what
		 * it stored only because every register started as X */
		for (size_t j = 0; !real_flags && j < b->n; j++) {
			const struct cfg_insn *l = &b->insns[j];

			if (!l->nmem || (l->flags & (CFG_I_LEA | CFG_I_STACK | CFG_I_PREFETCH)) ||
			    !(l->flags & CFG_I_LOAD) || l->mem.rip_relative ||
			    (l->mem.base == w->mem.base && l->mem.index == w->mem.index))
				continue;
			if (harness_alias(b, i, j))
				return "alias";
		}
	}
	return NULL;
}

/* The col-th tab-separated field of line (0-based), NUL-terminated in place. */
static char *field(char *line, int col)
{
	char *p = line, *e;

	for (int i = 0; i < col && p; i++) {
		p = strchr(p, '\t');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return NULL;
	e = p + strcspn(p, "\t\n");
	*e = 0;
	return p;
}

static int load_file(const char *path, const char *refcol, struct body **bv, size_t *nb,
		     size_t *cap)
{
	char line[8192], copy[8192];
	FILE *f = fopen(path, "r");
	int col = 2;

	if (!f)
		return -errno;
	real_flags = 0;
	while (fgets(line, sizeof(line), f)) {
		char *name, *hex, *cyc;

		if (refcol && !strncmp(line, "name\t", 5)) {
			col = -1;
			for (int c = 0; c < 64; c++) {
				memcpy(copy, line, sizeof(copy));
				cyc = field(copy, c);
				if (!cyc)
					break;
				if (!strcmp(cyc, refcol))
					col = c;
			}
			if (col < 0) {
				fclose(f);
				return -ENOENT;
			}
			continue;
		}
		if (line[0] == '#' && strstr(line, "harness flags:") && strstr(line, "-W") &&
		    strstr(line, "-D"))
			real_flags = 1;
		memcpy(copy, line, sizeof(copy));
		cyc = field(copy, col);
		name = strtok(line, "\t");
		hex = strtok(NULL, "\t");
		if (!cyc || atof(cyc) <= 0)
			continue;
		struct dcpi_err err = { 0 };
		uint8_t bytes[4096];
		struct body *b;
		int len;

		if (!name || !hex || name[0] == '#' || !strcmp(name, "name"))
			continue;
		len = (int)tu_parse_hex(hex, bytes, sizeof(bytes));
		if (len <= 0)
			continue;
		if (*nb == *cap) {
			*cap = *cap ? *cap * 2 : 256;
			*bv = realloc(*bv, *cap * sizeof(**bv));
			if (!*bv)
				return -ENOMEM;
		}
		b = &(*bv)[*nb];
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->hex = strdup(hex);
		if (!b->hex)
			return -ENOMEM;
		b->meas = atof(cyc);
		if (cfg_decode(bytes, (size_t)len, 0, &b->insns, &b->n, &err) < 0) {
			fprintf(stderr, "%s: %s\n", name, err.msg);
			free(b->insns);
			continue;
		}
		b->bytes = (size_t)len;
		b->artefact = find_artefact(b);
		(*nb)++;
	}
	fclose(f);
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now(void);

struct form_count {
	char key[48];			/* "mnemonic form vec_bits" */
	unsigned n;
};

static int cmp_count(const void *a, const void *b)
{
	const struct form_count *x = a, *y = b;

	return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->key, y->key);
}

/*
 * Coverage: the share of the bodies' instructions that some class row of a
 * model matches (the rest get its fallback class), for every model; with
 * list, the forms that fall back in that model, most frequent first.
 */
static void print_coverage(const struct body *bv, size_t nb, const struct model *list)
{
	static const char *const form_names[] = { "-", "reg", "load", "store", "rmw" };
	const char *names[16];
	size_t nm = model_list(names, 16), total = 0, nf = 0, capf = 0;
	struct form_count *fc = NULL;

	if (nm > 16)
		nm = 16;
	for (size_t k = 0; k < nb; k++)
		total += bv[k].n;
	printf("# coverage (instructions with a known class, %zu bodies, %zu instructions):",
	       nb, total);
	for (size_t j = 0; j < nm; j++) {
		const struct model *mj = model_by_name(names[j]);
		size_t known = 0;

		for (size_t k = 0; k < nb; k++) {
			for (size_t i = 0; i < bv[k].n; i++) {
				int kn;

				model_classify(mj, &bv[k].insns[i], &kn);
				known += kn;
			}
		}
		printf(" %s %.1f%%", names[j], total ? 100.0 * known / total : 100.0);
	}
	printf("\n");
	if (!list)
		return;
	for (size_t k = 0; k < nb; k++) {
		for (size_t i = 0; i < bv[k].n; i++) {
			const struct cfg_insn *in = &bv[k].insns[i];
			char key[48];
			size_t f;
			int kn;

			model_classify(list, in, &kn);
			if (kn)
				continue;
			snprintf(key, sizeof(key), "%s %s %u", in->mnemonic,
				 (unsigned)in->form < 5 ? form_names[in->form] : "?",
				 (unsigned)in->vec_bits);
			for (f = 0; f < nf && strcmp(fc[f].key, key); f++)
				;
			if (f == nf) {
				if (nf == capf) {
					struct form_count *t;

					capf = capf ? 2 * capf : 64;
					t = realloc(fc, capf * sizeof(*fc));
					if (!t)
						goto out;
					fc = t;
				}
				snprintf(fc[nf].key, sizeof(fc[nf].key), "%s", key);
				fc[nf++].n = 0;
			}
			fc[f].n++;
		}
	}
	qsort(fc, nf, sizeof(*fc), cmp_count);
	for (size_t f = 0; f < nf; f++)
		printf("# %s fallback: %5u  %s\n", model_name(list), fc[f].n, fc[f].key);
out:
	free(fc);
}

/* Seconds per body of one llvm-mca-19 process (the disassembly not counted). */
static double time_mca(size_t nb, const char *const *hex, int k)
{
	char cmd[8192 + 256], path[] = "/tmp/model_speed_XXXXXX";
	double t = 0, t0;
	int fd = mkstemp(path), done = 0;

	if (fd < 0)
		return -1;
	close(fd);
	for (size_t i = 0; i < nb && done < k; i++) {
		snprintf(cmd, sizeof(cmd), "echo '%s' | sed 's/\\([0-9a-f][0-9a-f]\\)/0x\\1/g' | "
			 "llvm-mc-19 --disassemble -triple=x86_64 2>/dev/null | "
			 "grep -v '^\\s*\\.text' >%s", hex[i], path);
		if (system(cmd) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "llvm-mca-19 -mcpu=znver4 -iterations=1000 %s "
			 ">/dev/null 2>&1", path);
		t0 = now();
		if (system(cmd) != 0)
			break;
		t += now() - t0;
		done++;
	}
	unlink(path);
	return done ? t / done : -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const struct model *m = model_for_this_cpu();
	struct body *bv = NULL;
	size_t nb = 0, cap = 0;
	int reps = 10, errs = 0, mca = 0, unknown = 0, i;
	const char *refcol = NULL;
	size_t nx = 0;
	double t0, t, sum = 0, sumx = 0, *e, *ex;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc)
			m = model_by_name(argv[++i]);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-e"))
			errs = 1;
		else if (!strcmp(argv[i], "-M") && i + 1 < argc)
			mca = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			refcol = argv[++i];
		else if (!strcmp(argv[i], "-u"))
			unknown = 1;
		else
			break;
	}
	if (!m || i >= argc || reps < 1) {
		fprintf(stderr, "usage: model_speed [-m MODEL] [-n N] [-e] [-u] [-M K] "
			"[-r COLUMN] FILE.tsv...\n");
		return 2;
	}
	for (; i < argc; i++) {
		if (load_file(argv[i], refcol, &bv, &nb, &cap) < 0) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			return 1;
		}
	}
	e = calloc(nb ? nb : 1, sizeof(*e));
	ex = calloc(nb ? nb : 1, sizeof(*ex));
	if (!e || !ex)
		return 1;
	t0 = now();
	for (int r = 0; r < reps; r++) {
		for (size_t k = 0; k < nb; k++) {
			struct dcpi_err err = { 0 };
			struct sched_block sb;

			if (model_schedule(m, bv[k].insns, bv[k].n, NULL, 0, &sb, &err) < 0) {
				fprintf(stderr, "%s: %s\n", bv[k].name, err.msg);
				return 1;
			}
			if (r == 0 && errs) {
				double d = (sb.steady_cycles - bv[k].meas) / bv[k].meas;

				e[k] = d < 0 ? -d : d;
				sum += e[k];
				if (!bv[k].artefact) {
					ex[nx++] = e[k];
					sumx += e[k];
				}
				printf("%s\t%.3f\t%.3f\t%+.1f%%\t%s\n", bv[k].name, bv[k].meas,
				       sb.steady_cycles, 100 * d,
				       bv[k].artefact ? bv[k].artefact : "");
			}
			sched_block_free(&sb);
		}
	}
	t = now() - t0;
	if (errs && nb)
		print_coverage(bv, nb, unknown ? m : NULL);
	if (errs && nb) {
		qsort(e, nb, sizeof(*e), cmp_dbl);
		printf("# %s: %zu bodies, error%s%s mean %.1f%% median %.1f%% p90 %.1f%%\n",
		       model_name(m), nb, refcol ? " against " : "", refcol ? refcol : "",
		       100 * sum / nb, 100 * e[(nb + 1) / 2 - 1],
		       100 * e[(size_t)(nb * 0.9 + 0.999) - 1]);
		if (nx) {
			qsort(ex, nx, sizeof(*ex), cmp_dbl);
			printf("# %s: %zu bodies without harness artefacts, error mean %.1f%% "
			       "median %.1f%% p90 %.1f%%\n", model_name(m), nx, 100 * sumx / nx,
			       100 * ex[(nx + 1) / 2 - 1], 100 * ex[(size_t)(nx * 0.9 + 0.999) - 1]);
		}
	}
	printf("# %s: %zu blocks x %d in %.3f s: %.0f blocks/s, %.1f us/block\n",
	       model_name(m), nb, reps, t, nb * reps / t, 1e6 * t / (nb * reps));
	if (mca > 0) {
		const char **hex = malloc(nb * sizeof(*hex));
		double tm;

		if (!hex)
			return 1;
		for (size_t k = 0; k < nb; k++)
			hex[k] = bv[k].hex;
		tm = time_mca(nb, hex, mca);
		free(hex);
		if (tm > 0)
			printf("# llvm-mca-19 -mcpu=znver4, one process per block: %.1f ms/block; "
			       "in-process model %.0fx faster\n", 1e3 * tm, tm * nb * reps / t);
		else
			printf("# llvm-mca-19: not run\n");
	}
	for (size_t k = 0; k < nb; k++) {
		free(bv[k].insns);
		free(bv[k].hex);
	}
	free(bv);
	free(e);
	free(ex);
	return 0;
}
