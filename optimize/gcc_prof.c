/*
 * gcc_prof.c - the AutoFDO profile gcc -fauto-profile reads (gcc 12's
 * auto-profile.c; AutoFDO's create_gcov writes the same), from estimated
 * counts.  All words are 32-bit, host order; a counter is two words, low
 * first; a string is its byte length (NUL included) and its bytes.
 *
 *   "gcda" magic, version 2, 0
 *   0xaa000000, length, n names, names              the string table
 *   0xac000000, length, n functions, per function:
 *       head (counter), instance                    the function profiles
 *   instance = name index, n positions, n call sites,
 *       per position: offset << 16, n targets (0), count (counter)
 *       per call site: offset << 16, instance       (inlined callee)
 *   0xaf000000, 0                                   an empty working set
 *
 * gcc 12 keys a position by (line - DECL_SOURCE_LINE) << 16 and ignores
 * discriminators, so the profile is built without them (OPT_D_NONE).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GCOV_DATA_MAGIC 0x67636461u
#define AFDO_VERSION 2u
#define TAG_FILE_NAMES 0xaa000000u
#define TAG_FUNCTION 0xac000000u
#define TAG_WORKING_SET 0xaf000000u

struct names {
	const char **v;
	size_t n, cap;
};

static long name_index(struct names *t, const char *s)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i], s))
			return (long)i;
	if (dcpi_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n] = s;
	return (long)t->n++;
}

static int collect(struct names *t, const struct opt_func *f)
{
	if (name_index(t, f->name) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < f->ncalls; i++)
		if (collect(t, f->calls[i].callee) < 0)
			return -ENOMEM;
	return 0;
}

static void put_u32(struct opt_buf *b, uint32_t v)
{
	opt_buf_put(b, &v, 4);
}

static void put_counter(struct opt_buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_string(struct opt_buf *b, const char *s)
{
	size_t n = strlen(s) + 1;

	put_u32(b, (uint32_t)n);
	opt_buf_put(b, s, n);
}

/* Positions with one offset (several discriminators) are one to gcc 12. */
static void put_instance(struct opt_buf *b, struct names *t, const struct opt_func *f)
{
	size_t npos = 0;

	for (size_t i = 0; i < f->nlocs; i++)
		if (!i || f->locs[i].offset != f->locs[i - 1].offset)
			npos++;
	put_u32(b, (uint32_t)name_index(t, f->name));
	put_u32(b, (uint32_t)npos);
	put_u32(b, (uint32_t)f->ncalls);
	for (size_t i = 0; i < f->nlocs;) {
		uint64_t c = 0;
		size_t j = i;

		for (; j < f->nlocs && f->locs[j].offset == f->locs[i].offset; j++)
			if (f->locs[j].count > c)
				c = f->locs[j].count;
		put_u32(b, f->locs[i].offset << 16);
		put_u32(b, 0);
		put_counter(b, c);
		i = j;
	}
	for (size_t i = 0; i < f->ncalls; i++) {
		put_u32(b, f->calls[i].offset << 16);
		put_instance(b, t, f->calls[i].callee);
	}
}

/* Patch the section length (in words) after its tag. */
static void end_section(struct opt_buf *b, size_t len_at)
{
	uint32_t words = (uint32_t)((b->len - len_at - 4) / 4);

	if (!b->oom)
		memcpy(b->s + len_at, &words, 4);
}

int opt_gcc_bytes(const struct opt_src *s, uint8_t **out, size_t *len, struct dcpi_err *err)
{
	struct names t = { 0 };
	struct opt_buf b = { 0 };
	size_t at;

	*out = NULL;
	*len = 0;
	if (!s->nfuncs)
		return dcpi_errf(err, -ENODATA, "no function has estimated executions");
	for (size_t i = 0; i < s->nfuncs; i++)
		if (collect(&t, s->funcs[i]) < 0)
			goto oom;
	put_u32(&b, GCOV_DATA_MAGIC);
	put_u32(&b, AFDO_VERSION);
	put_u32(&b, 0);
	put_u32(&b, TAG_FILE_NAMES);
	at = b.len;
	put_u32(&b, 0);
	put_u32(&b, (uint32_t)t.n);
	for (size_t i = 0; i < t.n; i++)
		put_string(&b, t.v[i]);
	end_section(&b, at);
	put_u32(&b, TAG_FUNCTION);
	at = b.len;
	put_u32(&b, 0);
	put_u32(&b, (uint32_t)s->nfuncs);
	for (size_t i = 0; i < s->nfuncs; i++) {
		put_counter(&b, s->funcs[i]->head);
		put_instance(&b, &t, s->funcs[i]);
	}
	end_section(&b, at);
	put_u32(&b, TAG_WORKING_SET);
	put_u32(&b, 0);
	if (b.oom)
		goto oom;
	free(t.v);
	*out = (uint8_t *)b.s;
	*len = b.len;
	return 0;
oom:
	free(t.v);
	free(b.s);
	return dcpi_errf(err, -ENOMEM, "gcc profile: out of memory");
}
