/*
 * test_paths.c - the path profile kind (profile/paths.c, docs/profile-format.md
 * "Path files"): normalizing, encoding round trips with PATH_ELSEWHERE on
 * either side, every truncation and bit flip rejected with the file named,
 * content errors behind a valid checksum, merge laws on seeded random
 * profiles, and the epoch layer (write merges, read ignores .prof files,
 * prof_epoch_read ignores .paths files, epoch merge).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/paths.h"
#include "testutil.h"
#include "tu_db.h"
#include "tu_main.h"

/* A random path profile: walks of short jumps, some leaving the image. */
static void make_paths(struct path_profile *p, int image, size_t n, uint64_t span)
{
	path_profile_init(p);
	make_id(&p->image, image);
	strcpy(p->source, "tf-step");
	p->bursts = n / 8 + 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t from = rng() % span, to = from + 1 + rng() % 15;
		uint64_t c = 1 + (rng() % 4 == 0 ? rng() % 100 : 0);

		if (rng() % 32 == 0)
			to = PATH_ELSEWHERE;
		else if (rng() % 32 == 0)
			from = PATH_ELSEWHERE;
		else if (rng() % 8 == 0)
			to = from - rng() % 200;	/* a backward branch */
		assert_int_equal(path_profile_add_edge(p, from, to, c), 0);
		assert_int_equal(path_profile_add_step(p, from == PATH_ELSEWHERE ? to : from,
						       c), 0);
	}
	assert_int_equal(path_profile_normalize(p), 0);
}

static void assert_same(const struct path_profile *a, const struct path_profile *b)
{
	assert_true(prof_image_id_equal(&a->image, &b->image));
	assert_string_equal(a->image.path, b->image.path);
	assert_string_equal(a->source, b->source);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->bursts, b->bursts);
	assert_int_equal(a->nedges, b->nedges);
	assert_int_equal(a->nsteps, b->nsteps);
	for (size_t i = 0; i < a->nedges; i++) {
		assert_int_equal(a->edges[i].from, b->edges[i].from);
		assert_int_equal(a->edges[i].to, b->edges[i].to);
		assert_int_equal(a->edges[i].count, b->edges[i].count);
	}
	for (size_t i = 0; i < a->nsteps; i++) {
		assert_int_equal(a->steps[i].offset, b->steps[i].offset);
		assert_int_equal(a->steps[i].count, b->steps[i].count);
	}
}

static void test_normalize(void **state)
{
	struct path_profile p;

	path_profile_init(&p);
	assert_int_equal(path_profile_add_edge(&p, 0x20, 0x10, 1), 0);
	assert_int_equal(path_profile_add_edge(&p, 0x10, 0x14, 2), 0);
	assert_int_equal(path_profile_add_edge(&p, 0x20, 0x10, 3), 0);
	assert_int_equal(path_profile_add_edge(&p, PATH_ELSEWHERE, 0x10, 1), 0);
	assert_int_equal(path_profile_add_edge(&p, 0x10, 0x12, 0), 0);
	assert_int_equal(path_profile_add_step(&p, 0x20, 1), 0);
	assert_int_equal(path_profile_add_step(&p, 0x10, 1), 0);
	assert_int_equal(path_profile_add_step(&p, 0x20, 4), 0);
	assert_int_equal(path_profile_normalize(&p), 0);
	assert_int_equal(p.nedges, 3);
	assert_int_equal(p.edges[0].from, 0x10);
	assert_int_equal(p.edges[2].from, PATH_ELSEWHERE);
	assert_int_equal(path_profile_edge(&p, 0x20, 0x10), 4);
	assert_int_equal(path_profile_edge(&p, 0x10, 0x12), 0);
	assert_int_equal(path_profile_edge(&p, PATH_ELSEWHERE, 0x10), 1);
	assert_int_equal(p.nsteps, 2);
	assert_int_equal(path_profile_step(&p, 0x20), 5);
	assert_int_equal(path_profile_step(&p, 0x30), 0);
	path_profile_free(&p);
}

static void test_roundtrip(void **state)
{
	struct dcpi_err err = { 0 };
	struct path_profile a, b;
	uint8_t *buf;
	size_t len;

	rng_seed(1);
	for (int k = 0; k < 4; k++) {
		make_paths(&a, k & 1, k ? 1000u * (unsigned)k : 0, (uint64_t)1 << (10 + 4 * k));
		a.flags = (k == 3) ? PATH_F_TAKEN_ONLY : 0;
		assert_int_equal(path_encode(&a, &buf, &len, &err), 0);
		assert_int_equal(len, path_encoded_size(&a));
		assert_int_equal(path_decode(buf, len, "x.paths", &b, &err), 0);
		assert_same(&a, &b);
		free(buf);
		path_profile_free(&a);
		path_profile_free(&b);
	}
	/* Extremes: offset 0, offsets near 2^64, ELSEWHERE both ways. */
	path_profile_init(&a);
	make_id(&a.image, 0);
	strcpy(a.source, "lbr");
	assert_int_equal(path_profile_add_edge(&a, 0, PATH_ELSEWHERE, 1), 0);
	assert_int_equal(path_profile_add_edge(&a, PATH_ELSEWHERE, 0, UINT64_MAX / 2), 0);
	assert_int_equal(path_profile_add_edge(&a, PATH_ELSEWHERE - 1, 1, 1), 0);
	assert_int_equal(path_profile_add_step(&a, PATH_ELSEWHERE, 7), 0);
	assert_int_equal(path_profile_normalize(&a), 0);
	assert_int_equal(path_encode(&a, &buf, &len, &err), 0);
	assert_int_equal(path_decode(buf, len, "x.paths", &b, &err), 0);
	assert_same(&a, &b);
	free(buf);
	path_profile_free(&a);
	path_profile_free(&b);
}

/* Short jumps take a byte or two each: the format stays compact. */
static void test_size(void **state)
{
	struct path_profile a;

	rng_seed(2);
	make_paths(&a, 0, 10000, 1 << 20);
	/* from delta (1-3 bytes), to (1-2), count (1): at most ~6 per edge
	 * plus 2-4 per step. */
	assert_true(path_encoded_size(&a) < 4 * (a.nedges + a.nsteps));
	print_message("%zu edges, %zu steps: %zu bytes (%.2f per record)\n", a.nedges,
		      a.nsteps, path_encoded_size(&a),
		      (double)path_encoded_size(&a) / (double)(a.nedges + a.nsteps));
	path_profile_free(&a);
}

static void encode_sample(uint8_t **buf, size_t *len)
{
	struct dcpi_err err = { 0 };
	struct path_profile a;

	rng_seed(5);
	make_paths(&a, 0, 40, 4096);
	assert_int_equal(path_encode(&a, buf, len, &err), 0);
	path_profile_free(&a);
}

static int decode_fails(const uint8_t *buf, size_t len, const char *reason)
{
	struct dcpi_err err = { 0 };
	struct path_profile p;
	int rc = path_decode(buf, len, "bad.paths", &p, &err);

	path_profile_free(&p);
	return rc != 0 && tu_err_says(&err, "bad.paths", reason);
}

static void test_corrupt_every_bit(void **state)
{
	tu_flip_every_byte(encode_sample, 1, decode_fails);
}

static void test_truncate_and_append(void **state)
{
	tu_truncate_and_append(encode_sample, decode_fails);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Build a file by hand: header fields, strings, then raw record bytes. */
static size_t hand_file(uint8_t *b, uint64_t ne, uint64_t ns, uint64_t et, uint64_t st,
			uint32_t flags, const uint8_t *rec, size_t nrec)
{
	static const char src[] = "tf-step", path[] = "/bin/x";
	size_t pos = 84;

	memset(b, 0, 84);
	memcpy(b, "DCPIPATH", 8);
	b[8] = 1;
	put64(b + 24, ne);
	put64(b + 32, ns);
	put64(b + 40, et);
	put64(b + 48, st);
	put64(b + 56, 1);
	b[80] = (uint8_t)flags;
	b[pos++] = sizeof(src) - 1;
	memcpy(b + pos, src, sizeof(src) - 1);
	pos += sizeof(src) - 1;
	b[pos++] = 0;
	b[pos++] = sizeof(path) - 1;
	memcpy(b + pos, path, sizeof(path) - 1);
	pos += sizeof(path) - 1;
	memcpy(b + pos, rec, nrec);
	pos += nrec;
	prof_file_reseal(b, pos);
	return pos;
}

static void test_semantic_errors(void **state)
{
	uint8_t b[256];
	size_t n;
	/* edge: from delta, zigzag(to - from), count; step: delta, count */
	static const uint8_t ok[] = { 0x10, 0x08, 1, 0, 0x0a, 2, 0x10, 1 };
	static const uint8_t dup[] = { 0x10, 0x08, 1, 0, 0x08, 2 };
	static const uint8_t unsorted[] = { 0x10, 0x08, 1, 0, 0x06, 2 };
	static const uint8_t cut[] = { 0x10, 0x08, 1, 0x80, 0x80, 0x80 };
	static const uint8_t zero[] = { 0x10, 0x08, 0 };
	static const uint8_t dupstep[] = { 0x10, 1, 0, 1 };
	static const uint8_t zstep[] = { 0x10, 0 };
	static const uint8_t longv[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0x01, 0, 1 };
	static const struct {
		uint64_t ne, ns, et, st;
		unsigned flags;
		const uint8_t *rec;
		size_t nrec;
		const char *reason;
	} bad[] = {
		{ 2, 0, 3, 0, 0, dup, sizeof(dup), "duplicate or not sorted" },
		{ 2, 0, 3, 0, 0, unsorted, sizeof(unsorted), "duplicate or not sorted" },
		{ 1, 0, 0, 0, 0, zero, sizeof(zero), "zero count" },
		{ 0, 2, 0, 2, 0, dupstep, sizeof(dupstep), "duplicate step offset" },
		{ 0, 1, 0, 0, 0, zstep, sizeof(zstep), "zero step count" },
		{ 1, 0, 1, 0, 0, longv, sizeof(longv), "overlong varint" },
		{ 2, 1, 4, 1, 0, ok, sizeof(ok), "edge counts add to 3" },
		{ 2, 1, 3, 9, 0, ok, sizeof(ok), "step counts add to 1" },
		{ 2, 1, 3, 1, 0x80, ok, sizeof(ok), "unknown flags" },
		{ 1000, 1, 3, 1, 0, ok, sizeof(ok), "do not fit" },
		{ UINT64_MAX, UINT64_MAX, 3, 1, 0, ok, sizeof(ok), "do not fit" },
		{ 2, 0, 3, 0, 0, ok, sizeof(ok), "garbage after" },
		{ 2, 0, 3, 0, 0, cut, sizeof(cut), "edge 1: truncated or overlong" },
	};
	struct dcpi_err err = { 0 };
	struct path_profile p;

	n = hand_file(b, 2, 1, 3, 1, 0, ok, sizeof(ok));
	assert_int_equal(path_decode(b, n, "bad.paths", &p, &err), 0);
	assert_int_equal(path_profile_edge(&p, 0x10, 0x14), 1);
	assert_int_equal(path_profile_edge(&p, 0x10, 0x15), 2);
	path_profile_free(&p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = hand_file(b, bad[i].ne, bad[i].ns, bad[i].et, bad[i].st, bad[i].flags,
			      bad[i].rec, bad[i].nrec);
		if (!decode_fails(b, n, bad[i].reason))
			fail_msg("case %zu: %s", i, bad[i].reason);
	}
}

static void test_encode_rejects(void **state)
{
	struct dcpi_err err = { 0 };
	struct path_profile a;
	uint8_t *buf;
	size_t len;

	rng_seed(9);
	make_paths(&a, 0, 10, 256);
	a.source[0] = '\0';
	assert_int_equal(path_encode(&a, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "source"));
	strcpy(a.source, "tf-step");
	a.flags = 0x40;
	assert_int_equal(path_encode(&a, &buf, &len, &err), -EINVAL);
	a.flags = 0;
	assert_int_equal(path_profile_add_edge(&a, 0, 1, 1), 0);	/* unsorted now */
	assert_int_equal(path_encode(&a, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not normalized"));
	assert_non_null(strstr(err.msg, "/usr/bin/bc"));
	path_profile_free(&a);
}

static void merged(const struct path_profile *x, const struct path_profile *y,
		   struct path_profile *out)
{
	struct dcpi_err err = { 0 };

	path_profile_init(out);
	out->image = x->image;
	memcpy(out->source, x->source, sizeof(out->source));
	out->flags = x->flags;
	assert_int_equal(path_profile_merge(out, x, &err), 0);
	assert_int_equal(path_profile_merge(out, y, &err), 0);
}

static void test_merge_laws(void **state)
{
	struct path_profile a, b, c, ab, bc, ab_c, a_bc, ba;
	struct dcpi_err err = { 0 };

	rng_seed(11);
	make_paths(&a, 0, 300, 1 << 12);
	make_paths(&b, 0, 200, 1 << 12);
	make_paths(&c, 0, 500, 1 << 14);
	merged(&a, &b, &ab);
	merged(&b, &a, &ba);
	assert_same(&ab, &ba);
	merged(&ab, &c, &ab_c);
	merged(&b, &c, &bc);
	merged(&a, &bc, &a_bc);
	assert_same(&ab_c, &a_bc);
	assert_int_equal(ab_c.bursts, a.bursts + b.bursts + c.bursts);
	for (size_t i = 0; i < a.nedges; i++) {
		const struct path_edge *e = &a.edges[i];

		assert_int_equal(path_profile_edge(&ab_c, e->from, e->to),
				 e->count + path_profile_edge(&b, e->from, e->to) +
				 path_profile_edge(&c, e->from, e->to));
	}
	/* Different image, different source, different flags: refused. */
	path_profile_free(&bc);
	make_paths(&bc, 1, 10, 64);
	assert_int_equal(path_profile_merge(&ab, &bc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "different images"));
	make_id(&bc.image, 0);
	strcpy(bc.source, "lbr");
	assert_int_equal(path_profile_merge(&ab, &bc, &err), -EINVAL);
	strcpy(bc.source, "tf-step");
	bc.flags = PATH_F_TAKEN_ONLY;
	assert_int_equal(path_profile_merge(&ab, &bc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cannot merge paths from"));
	path_profile_free(&a);
	path_profile_free(&b);
	path_profile_free(&c);
	path_profile_free(&ab);
	path_profile_free(&ba);
	path_profile_free(&bc);
	path_profile_free(&ab_c);
	path_profile_free(&a_bc);
}

static int setup_tmp(void **state)
{
	return tu_tmp_make("paths");
}

static void test_epoch(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("db"), *db2 = open_db("db2");
	struct path_profile a, b, *v, *w;
	struct prof_profile pp, *pv;
	char e1[64], e2[64], path[1024];
	size_t n, m;

	assert_int_equal(prof_db_epoch_new(db, e1, sizeof(e1), &err), 0);
	assert_int_equal(path_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	rng_seed(21);
	make_paths(&a, 0, 100, 4096);
	make_paths(&b, 1, 50, 4096);
	assert_int_equal(path_epoch_write(db, e1, &a, &err), 0);
	assert_int_equal(path_epoch_write(db, e1, &b, &err), 0);
	assert_int_equal(path_epoch_write(db, e1, &a, &err), 0);	/* merges */
	/* A sample profile beside them: each reader keeps to its own kind. */
	prof_profile_init(&pp);
	make_id(&pp.image, 0);
	strcpy(pp.event, "cpu-clock");
	strcpy(pp.period_unit, "ns");
	assert_int_equal(prof_profile_add(&pp, 0x40, 3), 0);
	assert_int_equal(prof_epoch_write(db, e1, &pp, &err), 0);
	assert_int_equal(prof_epoch_read(db, e1, &pv, &m, &err), 0);
	assert_int_equal(m, 1);
	prof_profiles_free(pv, m);
	snprintf(path, sizeof(path), "%s/%s/.x.paths.tmp1-0", prof_db_path(db), e1);
	tu_write_text(path, "half a file");
	assert_int_equal(path_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		const struct path_profile *src = v[i].image.build_id[0] ? &a : &b;
		uint64_t k = src == &a ? 2 : 1;

		assert_int_equal(v[i].nedges, src->nedges);
		assert_int_equal(v[i].bursts, k * src->bursts);
		assert_int_equal(path_profile_edge(&v[i], src->edges[0].from,
						   src->edges[0].to), k * src->edges[0].count);
	}
	/* Merge into another database's epoch, twice: counts double. */
	assert_int_equal(prof_db_epoch_new(db2, e2, sizeof(e2), &err), 0);
	assert_int_equal(path_epoch_merge(db2, e2, db, e1, &err), 0);
	assert_int_equal(path_epoch_merge(db2, e2, db, e1, &err), 0);
	assert_int_equal(path_epoch_read(db2, e2, &w, &m, &err), 0);
	assert_int_equal(m, n);
	for (size_t i = 0; i < m; i++)
		assert_int_equal(w[i].bursts, 2 * v[i].bursts);
	path_profiles_free(w, m);
	path_profiles_free(v, n);
	assert_int_equal(path_epoch_merge(db, e1, db, e1, &err), -EINVAL);
	/* A corrupt path file is skipped with a note naming it and listed as
	 * damaged; the rest of the epoch is read; a merge refuses it. */
	snprintf(path, sizeof(path), "%s/%s/ffff.paths", prof_db_path(db), e1);
	tu_write_text(path, "DCPIPATH but not really");
	assert_int_equal(path_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, m);
	path_profiles_free(v, n);
	assert_non_null(strstr(prof_db_notes(db), "ffff.paths"));
	{
		const char *const *dmg;

		assert_int_equal(prof_db_damaged(db, &dmg), 1);
		assert_non_null(strstr(dmg[0], "ffff.paths"));
	}
	assert_int_equal(path_epoch_merge(db2, e2, db, e1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ffff.paths"));
	/* ... and does not disturb the sample profiles' reader. */
	assert_int_equal(prof_epoch_read(db, e1, &pv, &m, &err), 0);
	assert_int_equal(m, 1);
	prof_profiles_free(pv, m);
	/* Image identity mismatch inside a file is refused, not mixed. */
	snprintf(path, sizeof(path), "%s/%s/x.paths", prof_db_path(db), e1);
	assert_int_equal(path_file_write(path, &a, &err), 0);
	assert_int_equal(path_file_merge(path, &b, &err), -EINVAL);
	prof_profile_free(&pp);
	path_profile_free(&a);
	path_profile_free(&b);
	prof_db_close(db);
	prof_db_close(db2);
}

TU_MAIN(setup_tmp, teardown_tmp,
	cmocka_unit_test(test_normalize),
	cmocka_unit_test(test_roundtrip),
	cmocka_unit_test(test_size),
	cmocka_unit_test(test_corrupt_every_bit),
	cmocka_unit_test(test_truncate_and_append),
	cmocka_unit_test(test_semantic_errors),
	cmocka_unit_test(test_encode_rejects),
	cmocka_unit_test(test_merge_laws),
	cmocka_unit_test(test_epoch))
