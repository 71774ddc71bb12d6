/*
 * procs.c - the estimates every feedback writer starts from: est_analyze
 * (estimate/analyze.c) over each sampled procedure of one image, plus the
 * small shared helpers (atomic file writes, a text buffer, clone-suffix
 * stripping).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/safefile.h"
#include "internal.h"

void opt_est_default(struct opt_est *e, struct est_input *in)
{
	memset(e, 0, sizeof(*e));
	e->in = in;
	e->min_samples = 1;
}

uint64_t opt_count(double x)
{
	if (!(x > 0))
		return 0;
	if (x > 1e18)
		return (uint64_t)1e18;
	return (uint64_t)llround(x);
}

struct proc_sum {
	const struct img_proc *proc;
	double samples;
};

/* Samples per procedure, in address order (p's entries are by offset, and
 * offsets map to addresses in order within a segment; sort to be sure). */
static int cmp_proc(const void *a, const void *b)
{
	const struct proc_sum *x = a, *y = b;

	return x->proc->addr < y->proc->addr ? -1 : x->proc->addr > y->proc->addr;
}

static int sampled_procs(const struct image *img, const struct prof_profile *p,
			 struct proc_sum **out, size_t *n)
{
	struct proc_sum *ps = NULL;
	size_t np = 0, cap = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct img_proc *pr;
		uint64_t va;

		if (img_offset_to_vaddr(img, p->e[i].offset, &va) < 0)
			continue;
		pr = img_proc_at(img, va);
		if (!pr || pr->source == IMG_SRC_PLT)
			continue;
		if (np && ps[np - 1].proc == pr) {
			ps[np - 1].samples += (double)p->e[i].count;
			continue;
		}
		if (dcpi_grow((void **)&ps, &cap, np + 1, sizeof(*ps))) {
			free(ps);
			return -ENOMEM;
		}
		ps[np].proc = pr;
		ps[np++].samples = (double)p->e[i].count;
	}
	dcpi_qsort(ps, np, sizeof(*ps), cmp_proc);
	/* Merge runs of one procedure the sort brought together. */
	size_t k = 0;
	for (size_t i = 0; i < np; i++) {
		if (k && ps[k - 1].proc == ps[i].proc)
			ps[k - 1].samples += ps[i].samples;
		else
			ps[k++] = ps[i];
	}
	*out = ps;
	*n = k;
	return 0;
}

static int one_proc(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		    const struct img_proc *proc, opt_proc_fn fn, void *ctx,
		    struct dcpi_err *err)
{
	struct est_analysis a;
	int rc = est_analyze(e->in, img, p, proc, &a, err);

	if (rc >= 0)
		rc = fn(img, proc, &a, ctx, err);
	est_analysis_free(&a);
	return rc;
}

int opt_each_proc(struct image *img, const struct prof_profile *p, const struct opt_est *e,
		  opt_proc_fn fn, void *ctx, struct opt_walk *w, struct dcpi_err *err)
{
	struct proc_sum *ps = NULL;
	size_t np = 0, done = 0, skipped = 0;
	double placed = 0;
	int rc;

	if (!e->in)
		return dcpi_errf(err, -EINVAL, "%s: no analysis input", img_path(img));
	if (sampled_procs(img, p, &ps, &np) < 0)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", img_path(img));
	rc = 0;
	for (size_t i = 0; i < np && rc >= 0; i++) {
		if (ps[i].samples < e->min_samples || ps[i].samples <= 0)
			continue;
		rc = one_proc(img, p, e, ps[i].proc, fn, ctx, err);
		if (rc == -EINVAL || rc == -ENOENT) {
			/* A procedure whose bytes cannot be decoded or read:
			 * skip it, its samples are simply not used. */
			dcpi_err_clear(err);
			rc = 0;
			skipped++;
			continue;
		}
		done++;
		placed += ps[i].samples;
	}
	free(ps);
	if (rc < 0)
		return rc;
	if (w) {
		w->nprocs += done;
		w->skipped += skipped;
		w->samples += placed;
	}
	if (!done)
		return dcpi_errf(err, -ENODATA, "%s: no %s samples in any procedure (%llu samples "
				 "in the profile)", img_path(img), p->event,
				 (unsigned long long)p->total);
	return 0;
}

/* ---- helpers ---------------------------------------------------------- */

void opt_buf_put(struct opt_buf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (dcpi_grow((void **)&b->s, &b->cap, b->len + len + 1, 1)) {
		b->oom = 1;
		return;
	}
	memcpy(b->s + b->len, data, len);
	b->len += len;
	b->s[b->len] = 0;
}

void opt_buf_printf(struct opt_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		opt_buf_put(b, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);

	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	opt_buf_put(b, big, (size_t)n);
	free(big);
}

int opt_write_file(const char *path, const void *buf, size_t len, struct dcpi_err *err)
{
	/* "-", devices, FIFOs, links, other users' files: include/dcpi/safefile.h */
	return dcpi_write_output(path, buf, len, 0644, err);
}

void opt_base_name(const char *sym, char *out, size_t len)
{
	const char *at = strstr(sym, "@plt");
	const char *dot = strchr(sym, '.');
	const char *uniq = strstr(sym, ".__uniq.");
	size_t n = strlen(sym);

	/* A leading dot is part of the name (".L..." never gets here). */
	if (dot == sym)
		dot = NULL;
	/* clang's unique internal names (-funique-internal-linkage-names, on
	 * with pseudo probes) keep their ".__uniq.<digits>": it is the name */
	if (uniq && dot == uniq) {
		dot = uniq + strlen(".__uniq.");
		while (*dot >= '0' && *dot <= '9')
			dot++;
		dot = *dot == '.' ? dot : NULL;
	}
	if (at && (size_t)(at - sym) < n)
		n = (size_t)(at - sym);
	if (dot && (size_t)(dot - sym) < n)
		n = (size_t)(dot - sym);
	if (n >= len)
		n = len - 1;
	memcpy(out, sym, n);
	out[n] = 0;
}
