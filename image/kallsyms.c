/*
 * image/kallsyms.c - the kernel's procedures from /proc/kallsyms
 * (include/dcpi/kallsyms.h): "ADDRESS TYPE NAME [MODULE]" a line.  Only
 * text symbols are kept; aliases at one address (a global and its local
 * twin) become one procedure, the global name preferred, and each runs up
 * to the next address listed.  An unprivileged reader, or any reader under
 * kernel.kptr_restrict = 2, sees every address as 0: said, not guessed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/kallsyms.h"

/* The last procedure's size, which no next symbol bounds. */
#define KSYMS_LAST_SIZE 4096

struct ksyms_raw {
	size_t n, cap;
	struct ksym *e;
	char *global;		/* by index: a global (T, W) symbol */
	size_t zero;		/* text symbols at address 0 */
};

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int raw_add(struct ksyms_raw *r, uint64_t addr, char type, const char *name,
		   const char *module)
{
	size_t len = strlen(name) + (module ? strlen(module) + 3 : 0) + 1;
	char *s;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 4096;
		struct ksym *e = realloc(r->e, cap * sizeof(*e));
		char *g;

		if (!e)
			return -ENOMEM;
		r->e = e;
		g = realloc(r->global, cap);
		if (!g)
			return -ENOMEM;
		r->global = g;
		r->cap = cap;
	}
	s = malloc(len);
	if (!s)
		return -ENOMEM;
	if (module)
		snprintf(s, len, "%s [%s]", name, module);
	else
		snprintf(s, len, "%s", name);
	r->e[r->n].start = addr;
	r->e[r->n].size = 0;
	r->e[r->n].name = s;
	r->global[r->n] = type == 'T' || type == 'W';
	r->n++;
	return 0;
}

/* One line; 0 also for lines that are not text symbols. */
static int parse_line(struct ksyms_raw *r, char *line)
{
	char type, name[512], module[128];
	uint64_t addr;
	int n;

	line[strcspn(line, "\n")] = '\0';
	n = sscanf(line, "%" SCNx64 " %c %511s [%127[^]]]", &addr, &type, name, module);
	if (n < 3 || !is_text(type))
		return 0;
	if (!addr) {
		r->zero++;
		return 0;
	}
	return raw_add(r, addr, type, name, n == 4 ? module : NULL);
}

/* By address, a global before a local at one address (size holds the
 * global flag while sorting), then by name, so the choice is stable. */
static int order_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sort by address, keep one name per address (a global one when there is
 * one), and size each procedure to the next address. */
static void finish(struct ksyms_raw *r, struct ksyms *out)
{
	size_t k = 0;

	for (size_t i = 0; i < r->n; i++)	/* the global flag rides in size */
		r->e[i].size = (uint64_t)(unsigned char)r->global[i];
	dcpi_qsort(r->e, r->n, sizeof(*r->e), order_cmp);
	for (size_t i = 0; i < r->n; i++) {
		if (k && r->e[k - 1].start == r->e[i].start) {
			free(r->e[i].name);
			continue;
		}
		r->e[k++] = r->e[i];
	}
	for (size_t i = 0; i < k; i++)
		r->e[i].size = i + 1 < k ? r->e[i + 1].start - r->e[i].start : KSYMS_LAST_SIZE;
	out->n = k;
	out->e = r->e;
	r->e = NULL;
	r->n = 0;
}

static void raw_free(struct ksyms_raw *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].name);
	free(r->e);
	free(r->global);
	memset(r, 0, sizeof(*r));
}

int ksyms_load(const char *path, struct ksyms *out, struct dcpi_err *err)
{
	struct ksyms_raw r = { 0 };
	char line[1024];
	FILE *f;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!path)
		path = KSYMS_PATH;
	f = fopen(path, "re");
	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	while (!rc && fgets(line, sizeof(line), f))
		if (parse_line(&r, line) < 0)
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	fclose(f);
	if (!rc && !r.n && r.zero)
		rc = dcpi_errf(err, -EPERM, "%s: the kernel's addresses read as 0 "
			       "(kernel.kptr_restrict, or not root): kernel samples stay "
			       "unnamed", path);
	else if (!rc && !r.n)
		rc = dcpi_errf(err, -ENOENT, "%s: no text symbols", path);
	if (!rc)
		finish(&r, out);
	raw_free(&r);
	return rc;
}

long ksyms_find(const struct ksyms *k, uint64_t addr)
{
	size_t lo = dcpi_upper_bound(k->e, k->n, sizeof(*k->e), offsetof(struct ksym, start),
				     addr);

	if (lo == 0 || addr - k->e[lo - 1].start >= k->e[lo - 1].size)
		return -1;
	return (long)(lo - 1);
}

void ksyms_free(struct ksyms *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->e[i].name);
	free(k->e);
	memset(k, 0, sizeof(*k));
}

int ksyms_text(const char *path, uint64_t *addr, struct dcpi_err *err)
{
	char line[1024], name[64], type;
	uint64_t a;
	FILE *f;
	int rc = -ENOENT;

	if (!path)
		path = KSYMS_PATH;
	f = fopen(path, "re");
	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	while (rc && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %c %63s", &a, &type, name) == 3 &&
		    !strcmp(name, "_text") && a)
			*addr = a, rc = 0;
	fclose(f);
	if (rc)
		return dcpi_errf(err, rc, "%s: no _text at a non-zero address "
				 "(kernel.kptr_restrict, or not root)", path);
	return 0;
}
