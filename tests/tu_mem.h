/*
 * tests/tu_mem.h - what the data profile tests (tests/test_mem.c,
 * tests/test_dsys.c) share: a profile of the program "/bin/prog" to fill,
 * and the codec's round trip (include/dcpi/data.h: data_encode,
 * data_decode; docs/profile-format.md, "Data files"): the bytes decode to
 * the same entries, shares and transfers, encode again to the same bytes,
 * and every damaged or truncated copy is refused.  End to end: `dcpi mem
 * --json` checked by python3 that compares with what a workload printed.
 * Header-only: each test is one binary.  Include after <cmocka.h>.
 */
#ifndef DCPI_TU_MEM_H
#define DCPI_TU_MEM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/data.h"
#include "tu_run.h"

/* p empty, of the image /bin/prog (size 100, mtime 5). */
static inline void tu_mem_prog(struct data_profile *p)
{
	data_profile_init(p);
	snprintf(p->image.path, sizeof(p->image.path), "/bin/prog");
	p->image.size = 100;
	p->image.mtime = 5;
}

/*
 * p encoded (format version byte `version`), decoded into *q (the caller
 * frees it) with the same counts, encoded again to the same bytes; every
 * step-th byte damaged, and the copy one byte short, are refused.
 */
static inline void tu_mem_roundtrip(const struct data_profile *p, struct data_profile *q,
				    uint8_t version, size_t step)
{
	struct data_profile r;
	struct dcpi_err err = { 0 };
	uint8_t *b, *c;
	size_t n, m;

	assert_int_equal(data_encode(p, &b, &n, &err), 0);
	assert_true(n > 8);
	assert_int_equal(b[8], version);
	assert_int_equal(data_decode(b, n, "t", q, &err), 0);
	assert_int_equal(q->n, p->n);
	assert_int_equal(q->ns, p->ns);
	assert_int_equal(q->nk, p->nk);
	if (p->nk)
		assert_memory_equal(q->kio, p->kio, p->nk * sizeof(*p->kio));
	assert_int_equal(data_encode(q, &c, &m, &err), 0);
	assert_int_equal(m, n);
	assert_memory_equal(b, c, n);
	free(c);
	for (size_t i = 0; i < n; i += step) {
		b[i] ^= 0x5a;
		assert_int_not_equal(data_decode(b, n, "t", &r, &err), 0);
		b[i] ^= 0x5a;
	}
	assert_int_not_equal(data_decode(b, n - 1, "t", &r, &err), 0);
	free(b);
}

/*
 * python3 that tu_mem_check puts before a test's lines.  exact_of(name):
 * the counts the workload printed into ws/NAME.out (tu_record_into), a
 * line "key count" each, or "key count count ..." (then a tuple).
 * shares_close(exact, got): each key's share of got is within 5 points of
 * its share of exact (both printed).
 */
#define TU_MEM_PY \
	"def exact_of(name):\n" \
	"    r = {}\n" \
	"    for l in open(sys.argv[1].replace('out.json', name + '.out')):\n" \
	"        k, *v = l.split()\n" \
	"        r[k] = int(v[0]) if len(v) == 1 else tuple(int(x) for x in v)\n" \
	"    return r\n" \
	"def shares_close(exact, got):\n" \
	"    tot, gt = sum(exact.values()), sum(got.values())\n" \
	"    for k in exact:\n" \
	"        e, g = 100.0 * exact[k] / tot, 100.0 * got[k] / gt\n" \
	"        print(k, 'exact %.1f%% dcpi %.1f%%' % (e, g), file=sys.stderr)\n" \
	"        assert abs(e - g) <= 5, (k, e, g)\n"

/* `bin mem --db ws/db OPTS --json` checked by python3 py after TU_MEM_PY. */
static inline void tu_mem_check(const char *bin, const char *ws, const char *db,
				const char *opts, const char *py)
{
	char args[600], all[4096];

	snprintf(args, sizeof(args), "mem --db %s/%s %s", ws, db, opts);
	assert_true(snprintf(all, sizeof(all), "%s%s", TU_MEM_PY, py) < (int)sizeof(all));
	tu_check_json(bin, ws, args, all);
}

#endif /* DCPI_TU_MEM_H */
