/*
 * list.c - dcpilist: a procedure's source lines with their instructions
 * (DWARF lines, the inlined subroutine each belongs to), per line and per
 * instruction the samples, estimated executions, CPI and culprits; what
 * `perf annotate --stdio` shows, with counts where it has percentages.
 *
 * A line's executions are the most any of its instructions ran (one
 * execution of a line runs each of its instructions once), its cycles the
 * sum of theirs, its CPI those cycles over its instructions' executions.
 * Instructions are listed in address order; a line that the compiler split
 * (a loop's test moved to its bottom) appears once per contiguous run.
 *
 * Each line shows its text, as perf annotate does: the file DWARF names
 * (joined with its compilation directory), else under each --source-dir
 * DIR that path whole, then with its leading folders dropped one at a
 * time (DIR/src/hot.c, DIR/hot.c); a file found nowhere is said once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/culprit.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/report.h"
#include "internal.h"

struct where {
	char src[192];		/* "file.c:12" or "" */
	const char *inl;	/* innermost inlined subroutine, or NULL */
	char file[1024];	/* as DWARF names it, or "" */
	unsigned line;
};

/* The source file last read: its lines, for the lines of one procedure. */
struct source {
	const char *const *dirs;	/* --source-dir, in order */
	size_t ndirs;
	char want[1024];		/* the file as DWARF names it */
	char *text;			/* NULL: not found */
	char **lines;
	size_t nlines;
	int said;			/* its absence was said */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64L << 20) &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
		buf[fread(buf, 1, (size_t)n, f)] = '\0';
	}
	fclose(f);
	return buf;
}

/* The file's text where perf would find it: as named, then under each dir. */
static char *find_source(const struct source *sc, const char *file)
{
	char path[4096];
	char *t = slurp(file);

	for (size_t d = 0; !t && d < sc->ndirs; d++)
		for (const char *q = file; q && !t; q = strchr(q + 1, '/')) {
			snprintf(path, sizeof(path), "%s/%s", sc->dirs[d], q + (*q == '/'));
			t = slurp(path);
		}
	return t;
}

static void source_drop(struct source *sc)
{
	free(sc->text);
	free(sc->lines);
	sc->text = NULL;
	sc->lines = NULL;
	sc->nlines = 0;
}

/* Split the text into lines in place (no memory: no lines, said as absent). */
static void source_index(struct source *sc)
{
	size_t n = 1;

	for (char *c = sc->text; *c; c++)
		n += *c == '\n';
	sc->lines = malloc(n * sizeof(*sc->lines));
	if (!sc->lines) {
		source_drop(sc);
		return;
	}
	for (char *c = sc->text; c;) {
		sc->lines[sc->nlines++] = c;
		c = strchr(c, '\n');
		if (c)
			*c++ = '\0';
	}
}

/* Line ln of file, or NULL; when the file is nowhere, say so once to f. */
static const char *source_line(FILE *f, struct source *sc, const char *file, unsigned ln)
{
	if (!file[0])
		return NULL;
	if (strcmp(sc->want, file)) {
		source_drop(sc);
		snprintf(sc->want, sizeof(sc->want), "%s", file);
		sc->said = 0;
		sc->text = find_source(sc, file);
		if (sc->text)
			source_index(sc);
	}
	if (!sc->text && !sc->said && f) {
		fprintf(f, "%31s(source %s not found; --source-dir DIR says where)\n", "", file);
		sc->said = 1;
	}
	if (!sc->text || ln < 1 || ln > sc->nlines)
		return NULL;
	return sc->lines[ln - 1];
}

static void where_of(struct image *img, uint64_t addr, struct where *w)
{
	const struct img_inline *in;
	struct img_line ln;
	size_t n = 0;

	w->src[0] = 0;
	w->file[0] = 0;
	w->line = 0;
	w->inl = NULL;
	if (img_line_at(img, addr, &ln) == 0) {
		const char *b = strrchr(ln.file, '/');

		snprintf(w->src, sizeof(w->src), "%s:%u", b ? b + 1 : ln.file, ln.line);
		snprintf(w->file, sizeof(w->file), "%s", ln.file);
		w->line = ln.line;
	}
	if (img_inlines_at(img, addr, &in, &n) == 0 && n)
		w->inl = in[n - 1].name;
}

static int same_where(const struct where *a, const struct where *b)
{
	return !strcmp(a->src, b->src) && a->inl == b->inl && !strcmp(a->file, b->file);
}

/* The run of instructions from i with the same line: [i, *end). */
static void line_run(const struct cfg *cfg, struct image *img, size_t i, size_t *end,
		     struct where *w)
{
	struct where x;

	where_of(img, cfg->insns[i].addr, w);
	for (*end = i + 1; *end < cfg->ninsns; (*end)++) {
		where_of(img, cfg->insns[*end].addr, &x);
		if (!same_where(w, &x))
			break;
	}
}

static void line_sums(const struct est_result *r, size_t i, size_t end, double *s, double *x,
		      double *cyc, double *cpi)
{
	double ex = 0;

	*s = *x = *cyc = 0;
	for (size_t k = i; k < end; k++) {
		*s += r->insns[k].samples;
		*cyc += r->insns[k].cycles;
		ex += r->insns[k].executions;
		*x = fmax(*x, r->insns[k].executions);
	}
	*cpi = ex > 0 ? *cyc / ex : 0;
}

/* The first culprit of instruction k: static (the model's) or dynamic. */
static void culprit_of(const struct cfg *cfg, const struct est_result *r,
		       const struct cul_result *cul, size_t k, char *buf, size_t len)
{
	const struct est_insn *e = &r->insns[k];
	const struct cul_stall *s = cul ? cul_stall_of(cul, (uint32_t)k) : NULL;

	buf[0] = 0;
	if (s && s->nsuspects) {
		snprintf(buf, len, "%s", cul_cause_name(s->sus[0].cause));
		if (s->sus[0].insn >= 0)
			snprintf(buf + strlen(buf), len - strlen(buf), " 0x%llx",
				 (unsigned long long)cfg->insns[s->sus[0].insn].addr);
	} else if (e->reason != MODEL_R_NONE && e->m >= 1.5) {
		snprintf(buf, len, "%s", model_reason_name((enum model_reason)e->reason));
		if (e->culprit >= 0)
			snprintf(buf + strlen(buf), len - strlen(buf), " 0x%llx",
				 (unsigned long long)cfg->insns[e->culprit].addr);
	}
}

/* The source text of a line, leading blanks dropped. */
static const char *text_of(const char *t)
{
	return t ? t + strspn(t, " \t") : NULL;
}

static void list_text(FILE *f, const struct cfg *cfg, struct image *img,
		      const struct est_result *r, const struct cul_result *cul, struct source *sc)
{
	fprintf(f, "%9s %11s %7s  %s\n", "samples", "executions", "CPI", "source / instruction");
	for (size_t i = 0, end; i < cfg->ninsns; i = end) {
		struct where w;
		double s, x, cyc, cpi;

		const char *t;

		line_run(cfg, img, i, &end, &w);
		line_sums(r, i, end, &s, &x, &cyc, &cpi);
		t = text_of(source_line(f, sc, w.file, w.line));
		fprintf(f, "%9.0f %11.4g %7.2f  %s", s, x, cpi, w.src[0] ? w.src : "(no line)");
		if (t)
			fprintf(f, "  %s", t);
		if (w.inl)
			fprintf(f, "  [inlined %s]", w.inl);
		fprintf(f, "\n");
		for (size_t k = i; k < end; k++) {
			const struct est_insn *e = &r->insns[k];
			char why[96], text[CFG_TEXT_MAX];

			culprit_of(cfg, r, cul, k, why, sizeof(why));
			fprintf(f, "%9.0f %11.4g %7.2f      %8llx  %-36s %s\n", e->samples,
				e->executions, e->cpi, (unsigned long long)cfg->insns[k].addr,
				cfg_insn_text(&cfg->insns[k], text, sizeof(text)), why);
		}
	}
}

void rep_list_text(FILE *f, const struct cfg *cfg, struct image *img,
		   const struct est_result *r, const struct cul_result *cul)
{
	struct source sc = { 0 };

	list_text(f, cfg, img, r, cul, &sc);
	source_drop(&sc);
}

static void list_json(FILE *f, const struct cfg *cfg, struct image *img,
		      const struct est_result *r, const struct cul_result *cul, struct source *sc)
{
	fprintf(f, "[");
	for (size_t i = 0, end, first = 1; i < cfg->ninsns; i = end, first = 0) {
		struct where w;
		double s, x, cyc, cpi;

		const char *t;

		line_run(cfg, img, i, &end, &w);
		line_sums(r, i, end, &s, &x, &cyc, &cpi);
		t = source_line(NULL, sc, w.file, w.line);
		fprintf(f, "%s\n  {\"source\": ", first ? "" : ",");
		rep_json_str(f, w.src);
		fprintf(f, ", \"text\": ");
		rep_json_str_or_null(f, t);
		fprintf(f, ", \"inlined\": ");
		rep_json_str_or_null(f, w.inl);
		fprintf(f, ", \"samples\": %.17g, \"executions\": %.17g, \"cycles\": %.17g, "
			"\"cpi\": %.6g, \"instructions\": [", s, x, cyc, cpi);
		for (size_t k = i; k < end; k++) {
			const struct est_insn *e = &r->insns[k];
			char why[96], text[CFG_TEXT_MAX];

			culprit_of(cfg, r, cul, k, why, sizeof(why));
			fprintf(f, "%s{\"address\": \"0x%llx\", \"samples\": %.17g, \"executions\": "
				"%.17g, \"cpi\": %.6g, \"text\": ", k > i ? ", " : "",
				(unsigned long long)cfg->insns[k].addr, e->samples, e->executions,
				e->cpi);
			rep_json_str(f, cfg_insn_text(&cfg->insns[k], text, sizeof(text)));
			fprintf(f, ", \"culprit\": ");
			rep_json_str(f, why);
			fprintf(f, "}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n]");
}

void rep_list_json(FILE *f, const struct cfg *cfg, struct image *img,
		   const struct est_result *r, const struct cul_result *cul)
{
	struct source sc = { 0 };

	list_json(f, cfg, img, r, cul, &sc);
	source_drop(&sc);
}

void rep_calc_list(FILE *f, const struct rep_calc *c, int json)
{
	struct source sc = { .dirs = c->source_dirs, .ndirs = c->nsource_dirs };

	if (json) {
		fprintf(f, "{");
		rep_calc_json_head(f, c);
		fprintf(f, ", \"samples\": %.17g, \"exact\": %s, \"lines\": ", c->total,
			c->ev.exact ? "true" : "false");
		list_json(f, c->cfg, c->img, &c->r, &c->cul, &sc);
		fprintf(f, "}\n");
		source_drop(&sc);
		return;
	}
	fprintf(f, "dcpilist %s in %s\n", c->proc->name, img_path(c->img));
	fprintf(f, "epoch %s, event %s, %.0f samples, model %s; executions %s\n", c->epoch,
		c->prof->event, c->total, model_name(c->model),
		c->ev.exact ? "exact (callgrind)" : c->r.relative ? "relative (uncalibrated)" :
		"estimated");
	list_text(f, c->cfg, c->img, &c->r, &c->cul, &sc);
	source_drop(&sc);
}
