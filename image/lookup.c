/*
 * image/lookup.c - the procedure a user names (PROC in dcpicalc, dcpicfg,
 * dcpi model, ...), by the names people type (tests/test_lookup.c), in tiers, the first
 * tier with a match deciding:
 *
 *   1. an address, "0x1f30" (any byte inside the procedure);
 *   2. the whole name: the mangled symbol ("_Z14bitmap_set_bitP11bitmap_headi"),
 *      the demangled signature ("bitmap_set_bit(bitmap_head*, int)"), or a C
 *      symbol;
 *   3. the plain name without parameters ("bitmap_set_bit", "ns::S::f"),
 *      a procedure itself before its clones ("f(int) [clone .isra.0]", and
 *      "f.cold" for C), so "f" is f and only a clone when no f is left;
 *   4. the same without qualification ("f" for "ns::S::f(long) const").
 *
 * Several procedures in the deciding tier (overloads, or static functions of
 * one name in several files) are an error that lists them and says how to
 * name one.  "IMAGE:PROC" names the image too (its path, its file name, or
 * the file name up to ".so"): rep_find_proc uses it to choose among profiled
 * images, img_proc_find checks it.  perf annotate -s takes plain names too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/image.h"

#define LIST_MAX 8

/* End of the name part of a demangled name: its top-level parameter list. */
static size_t base_len(const char *s)
{
	int angle = 0;

	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '<')
			angle++;
		else if (s[i] == '>' && angle > 0)
			angle--;
		else if (s[i] == '(' && !angle) {
			/* operator() and operator(): the first () is the name */
			if (i >= 8 && !strncmp(s + i - 8, "operator", 8) && s[i + 1] == ')') {
				i++;
				continue;
			}
			return i;
		}
		else if (s[i] == ' ' && !angle && !strncmp(s + i, " [clone ", 8))
			return i;
	}
	return strlen(s);
}

/* Is p a compiler clone (".cold", ".isra.0", ".part.1", ".constprop.0")? */
static int is_clone(const struct img_proc *p)
{
	if (strstr(p->name, " [clone "))
		return 1;
	return p->raw_name[0] != '_' && p->raw_name[0] != '.' && strchr(p->raw_name, '.') &&
	       p->name == p->raw_name;
}

/* The plain name: [s, s + *len).  C clones: up to the first dot. */
static const char *plain(const struct img_proc *p, size_t *len)
{
	const char *dot;

	*len = base_len(p->name);
	if (p->name == p->raw_name && p->name[0] != '.' && (dot = strchr(p->name, '.')) &&
	    (size_t)(dot - p->name) < *len)
		*len = (size_t)(dot - p->name);
	return p->name;
}

/* The plain name past its last top-level "::". */
static const char *unqualified(const char *s, size_t len, size_t *out)
{
	int angle = 0;
	size_t start = 0;

	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] == '<')
			angle++;
		else if (s[i] == '>' && angle > 0)
			angle--;
		else if (!angle && s[i] == ':' && s[i + 1] == ':')
			start = i + 2;
	}
	*out = len - start;
	return s + start;
}

static int tier_of(const struct img_proc *p, const char *q, size_t qlen)
{
	size_t n, m;
	const char *s;

	if (!strcmp(p->name, q) || !strcmp(p->raw_name, q))
		return 0;
	s = plain(p, &n);
	if (n == qlen && !strncmp(s, q, n))
		return is_clone(p) ? 2 : 1;
	if (memchr(q, ':', qlen))
		return -1;
	s = unqualified(s, n, &m);
	if (m == qlen && !strncmp(s, q, m))
		return is_clone(p) ? 4 : 3;
	return -1;
}

int img_spec_split(const char *spec, char *image, size_t len, const char **name)
{
	int depth = 0;

	*name = spec;
	for (size_t i = 0; spec[i]; i++) {
		if (spec[i] == '(' || spec[i] == '<')
			depth++;
		else if ((spec[i] == ')' || spec[i] == '>') && depth > 0)
			depth--;
		else if (spec[i] == ':' && spec[i + 1] == ':')
			i++;
		else if (spec[i] == ':' && !depth && i > 0 && spec[i + 1]) {
			if (i >= len)
				return 0;
			memcpy(image, spec, i);
			image[i] = 0;
			*name = spec + i + 1;
			return 1;
		}
	}
	return 0;
}

static int realpath_equal(const char *a, const char *b)
{
	char *x = realpath(a, NULL), *y = realpath(b, NULL);
	int eq = x && y && !strcmp(x, y);

	free(x);
	free(y);
	return eq;
}

int img_spec_matches(const struct image *img, const char *want)
{
	const char *path = img_path(img), *base = strrchr(path, '/');
	const char *wb = strrchr(want, '/');
	size_t n;

	base = base ? base + 1 : path;
	if (!strcmp(path, want) || !strcmp(base, want))
		return 1;
	if (wb)		/* a path: the same file by another spelling? */
		return !strcmp(base, wb + 1) && realpath_equal(path, want);
	n = strlen(want);
	return !strncmp(base, want, n) && !strncmp(base + n, ".so", 3);
}

static int is_address(const char *s, uint64_t *a)
{
	char *end;

	if (strncmp(s, "0x", 2) && strncmp(s, "0X", 2))
		return 0;
	*a = strtoull(s, &end, 16);
	return *end == 0 && end != s + 2;
}

int img_proc_find(const struct image *img, const char *spec, const struct img_proc **out,
		  struct dcpi_err *err)
{
	const struct img_proc *hit[LIST_MAX];
	char want[4096], list[DCPI_ERR_MAX / 2];
	int best = 5, nbest = 0;
	const char *q;
	size_t qlen, len = 0;
	uint64_t a;

	*out = NULL;
	if (img_spec_split(spec, want, sizeof(want), &q) && !img_spec_matches(img, want))
		return dcpi_errf(err, -ENOENT, "%s: %s is not image %s", spec, img_path(img),
				 want);
	if (is_address(q, &a)) {
		*out = img_proc_at(img, a);
		if (!*out)
			return dcpi_errf(err, -ENOENT, "%s: no procedure at %s in %s", spec, q,
					 img_path(img));
		return 0;
	}
	qlen = strlen(q);
	for (size_t i = 0; i < img_nprocs(img); i++) {
		const struct img_proc *p = img_proc(img, i);
		int t = tier_of(p, q, qlen);

		if (t < 0 || t > best)
			continue;
		if (t < best) {
			best = t;
			nbest = 0;
		}
		if (nbest < LIST_MAX)
			hit[nbest] = p;
		nbest++;
	}
	if (!nbest)
		return dcpi_errf(err, -ENOENT, "%s: no such procedure in %s", spec,
				 img_path(img));
	if (nbest == 1) {
		*out = hit[0];
		return 0;
	}
	list[0] = 0;
	for (int k = 0; k < nbest && k < LIST_MAX && len < sizeof(list); k++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s'%s' (0x%llx)",
					k ? ", " : "", hit[k]->name,
					(unsigned long long)hit[k]->addr);
	return dcpi_errf(err, -EEXIST, "%s: %d procedures of %s match (name one by its "
			 "signature in quotes, its mangled name or its address): %s%s", spec,
			 nbest, img_path(img), list, nbest > LIST_MAX ? ", ..." : "");
}
