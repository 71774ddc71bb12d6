/*
 * test_profile.c - the profile database (profile/): encoding round trips,
 * detection of every kind of corruption, the directory and epoch layer, the
 * metadata file, and merge laws (associative, commutative, identity) checked
 * on seeded random profiles.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/profile.h"
#include "tu_db.h"
#include "tu_main.h"

/* Geometric count >= 1 with success probability 1/2^k per trial. */
static uint64_t rng_geometric(unsigned k)
{
	uint64_t c = 1;

	while (rng() & ((1ull << k) - 1))
		c++;
	return c;
}

static void make_profile(struct prof_profile *p, int image, const char *event,
			 size_t n, uint64_t span, double period)
{
	prof_profile_init(p);
	make_id(&p->image, image);
	snprintf(p->event, sizeof(p->event), "%s", event);
	strcpy(p->period_unit, "ns");
	p->period = period;
	p->cycles_per_unit = 3.7;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(prof_profile_add(p, rng() % span, rng_geometric(1)), 0);
	assert_int_equal(prof_profile_normalize(p), 0);
}

static void assert_same_entries(const struct prof_profile *a, const struct prof_profile *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->total, b->total);
	if (a->n)
		assert_memory_equal(a->e, b->e, a->n * sizeof(*a->e));
}

static void assert_close(double a, double b)
{
	assert_true(fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))));
}

static void assert_same_profile(const struct prof_profile *a, const struct prof_profile *b)
{
	assert_same_entries(a, b);
	assert_true(prof_image_id_equal(&a->image, &b->image));
	assert_string_equal(a->image.path, b->image.path);
	assert_string_equal(a->image.build_id, b->image.build_id);
	assert_int_equal(a->image.size, b->image.size);
	assert_int_equal(a->image.mtime, b->image.mtime);
	assert_string_equal(a->event, b->event);
	assert_string_equal(a->period_unit, b->period_unit);
	assert_close(a->period, b->period);
	assert_close(a->cycles_per_unit, b->cycles_per_unit);
}

static void roundtrip(const struct prof_profile *p)
{
	struct dcpi_err err = { 0 };
	struct prof_profile q;
	uint8_t *buf;
	size_t len;

	assert_int_equal(prof_encode(p, &buf, &len, &err), 0);
	assert_int_equal(len, prof_encoded_size(p));
	assert_int_equal(prof_decode(buf, len, "rt.prof", &q, &err), 0);
	assert_same_profile(p, &q);
	assert_true(q.period == p->period);	/* bit-exact in the file */
	free(buf);
	prof_profile_free(&q);
}

/* LEB128 both ways, DWARF's examples (DWARF 5, table 7.6 and 7.7) and the
 * ends: a value that does not end, one past 10 bytes. */
static void test_leb128(void **state)
{
	static const struct { uint8_t b[4]; size_t n; int64_t s; uint64_t u; } v[] = {
		{ { 0x02 }, 1, 2, 2 },
		{ { 0x7e }, 1, -2, 126 },
		{ { 0xff, 0x00 }, 2, 127, 127 },
		{ { 0x81, 0x7f }, 2, -127, 16257 },
		{ { 0x80, 0x01 }, 2, 128, 128 },
		{ { 0x80, 0x7f }, 2, -128, 16256 },
	};
	uint8_t long11[11];
	uint64_t u;
	int64_t sv;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(dcpi_svarint_get(v[i].b, 4, &sv), v[i].n);
		assert_true(sv == v[i].s);
		assert_int_equal(dcpi_varint_get(v[i].b, 4, &u), v[i].n);
		assert_true(u == v[i].u);
	}
	assert_int_equal(dcpi_svarint_get((const uint8_t[]){ 0x80, 0x80 }, 2, &sv), 0);
	memset(long11, 0x80, sizeof(long11));
	long11[10] = 0;
	assert_int_equal(dcpi_svarint_get(long11, sizeof(long11), &sv), 0);
	assert_int_equal(dcpi_varint_get(long11, sizeof(long11), &u), 0);
}

struct kv {
	uint64_t k, v;
};

static int kv_cmp(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;

	return a->k < b->k ? -1 : a->k > b->k;
}

/* Values of one key concatenated as decimal digits (shows the fold order);
 * a value 0 fails the fold. */
static int kv_fold(void *into, const void *from, void *ctx)
{
	struct kv *d = into;
	const struct kv *s = from;

	if (!d->v || !s->v)
		return -EOVERFLOW;
	d->v = d->v * 10 + s->v;
	return 0;
}

/* util.h's dcpi_sort_fold: sorted, equal keys folded in sorted order, and a
 * fold's failure handed back with the count left as it was. */
static void test_sort_fold(void **state)
{
	struct kv v[] = { { 7, 1 }, { 3, 2 }, { 7, 3 }, { 5, 4 }, { 3, 5 }, { 9, 6 } };
	struct kv bad[] = { { 2, 1 }, { 1, 1 }, { 1, 0 } };
	size_t n = 6, nb = 3;

	(void)state;
	assert_int_equal(dcpi_sort_fold(v, &n, sizeof(*v), kv_cmp, kv_fold, NULL), 0);
	assert_int_equal(n, 4);
	assert_true(v[0].k == 3 && v[1].k == 5 && v[2].k == 7 && v[3].k == 9);
	/* qsort may order equal keys either way: both folds are right */
	assert_true(v[0].v == 25 || v[0].v == 52);
	assert_true(v[1].v == 4 && v[3].v == 6);
	assert_true(v[2].v == 13 || v[2].v == 31);
	assert_int_equal(dcpi_sort_fold(bad, &nb, sizeof(*bad), kv_cmp, kv_fold, NULL), -EOVERFLOW);
	assert_int_equal(nb, 3);
	n = 0;
	assert_int_equal(dcpi_sort_fold(NULL, &n, sizeof(*v), kv_cmp, kv_fold, NULL), 0);
	assert_int_equal(n, 0);
}

static void test_roundtrip(void **state)
{
	struct prof_profile p;

	rng_seed(1);
	make_profile(&p, 0, "cpu-clock", 0, 1, 50000);
	roundtrip(&p);
	assert_int_equal(prof_profile_add(&p, UINT64_MAX, 7), 0);
	roundtrip(&p);
	prof_profile_free(&p);
	make_profile(&p, 1, "cycles", 100000, 1ull << 40, 1e6 / 3);
	roundtrip(&p);
	prof_profile_free(&p);
	prof_image_id_unknown(&p.image);
	make_profile(&p, 2, "mem_load_retired.l3_miss", 3, 100, 0);
	prof_image_id_unknown(&p.image);
	roundtrip(&p);
	prof_profile_free(&p);
}

static void test_normalize(void **state)
{
	struct prof_profile p;

	prof_profile_init(&p);
	assert_int_equal(prof_profile_add(&p, 30, 2), 0);
	assert_int_equal(prof_profile_add(&p, 10, 1), 0);
	assert_int_equal(prof_profile_add(&p, 30, 5), 0);
	assert_int_equal(prof_profile_add(&p, 20, 0), 0);
	assert_int_equal(prof_profile_normalize(&p), 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.total, 8);
	assert_int_equal(prof_profile_count(&p, 30), 7);
	assert_int_equal(prof_profile_count(&p, 10), 1);
	assert_int_equal(prof_profile_count(&p, 20), 0);
	assert_int_equal(prof_profile_add(&p, 40, UINT64_MAX), -EOVERFLOW);
	prof_profile_free(&p);
}

/* The figure the issue asks for: 10,000 offsets over 1 MB, geometric counts. */
static void test_bytes_per_entry(void **state)
{
	struct prof_profile p;
	double bpe;

	rng_seed(42);
	make_profile(&p, 0, "cpu-clock", 10000, 1 << 20, 50000);
	bpe = (double)prof_encoded_size(&p) / (double)p.n;
	printf("bytes per entry: %.3f (%zu entries, %zu bytes with header)\n", bpe, p.n,
	       prof_encoded_size(&p));
	assert_true(bpe < 3.0);
	prof_profile_free(&p);
}

static void encode_sample(uint8_t **buf, size_t *len)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;

	rng_seed(7);
	make_profile(&p, 0, "cycles", 50, 4096, 1000);
	assert_int_equal(prof_encode(&p, buf, len, &err), 0);
	prof_profile_free(&p);
}

static int decode_fails(const uint8_t *buf, size_t len, const char *reason)
{
	struct dcpi_err err = { 0 };
	struct prof_profile q;
	int rc = prof_decode(buf, len, "bad.prof", &q, &err);

	if (rc == 0) {
		prof_profile_free(&q);
		return 0;
	}
	assert_int_equal(q.n, 0);
	assert_null(q.e);
	assert_non_null(strstr(err.msg, "bad.prof: "));
	return tu_err_says(&err, "bad.prof", reason);
}

/* Flip every byte of the file: each field is detected, with its reason. */
static void test_corrupt_every_byte(void **state)
{
	tu_flip_every_byte(encode_sample, 3, decode_fails);
}

static void test_truncate_and_append(void **state)
{
	tu_truncate_and_append(encode_sample, decode_fails);
}

/* Content errors behind a valid checksum: the reader's own checks. */
static void test_semantic_errors(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	uint8_t *buf, *b;
	size_t len, body;

	prof_profile_init(&p);
	make_id(&p.image, 1);
	strcpy(p.event, "cycles");
	strcpy(p.period_unit, "events");
	assert_int_equal(prof_profile_add(&p, 0x10, 1), 0);
	assert_int_equal(prof_profile_add(&p, 0x20, 2), 0);
	assert_int_equal(prof_encode(&p, &buf, &len, &err), 0);
	body = len - 4;	/* 10 01 10 02 */
	assert_int_equal(buf[body], 0x10);
	b = malloc(len);
	assert_non_null(b);

	memcpy(b, buf, len);
	b[body + 2] = 0;
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "duplicate offset 0x10"));

	memcpy(b, buf, len);
	b[body + 3] = 0;
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "zero count at offset 0x20"));

	memcpy(b, buf, len);
	b[32] = 4;	/* total */
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "counts add to 3, header total says 4"));

	memcpy(b, buf, len);
	b[24] = 3;	/* n */
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "entry count 3 does not fit"));

	memcpy(b, buf, len);
	b[24] = 1;	/* n = 1 leaves two bytes unread */
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "garbage after 1 entries"));

	memcpy(b, buf, len);
	b[body + 3] = 0x80;	/* varint that never ends */
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "truncated or overlong varint"));

	memcpy(b, buf, len);
	b[40 + 7] = 0xff;	/* period becomes NaN */
	b[40 + 6] = 0xf8;
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "period"));

	memcpy(b, buf, len);
	b[72] = 0;	/* empty event name: strings then misalign */
	prof_file_reseal(b, len);
	assert_true(decode_fails(b, len, "bad header"));

	free(b);
	free(buf);
	prof_profile_free(&p);
}

static void test_encode_rejects(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile p;
	uint8_t *buf;
	size_t len;

	prof_profile_init(&p);
	make_id(&p.image, 1);
	strcpy(p.event, "cycles");
	assert_int_equal(prof_profile_add(&p, 0x20, 1), 0);
	assert_int_equal(prof_profile_add(&p, 0x10, 1), 0);
	assert_int_equal(prof_encode(&p, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not normalized"));
	assert_null(buf);
	assert_int_equal(prof_profile_normalize(&p), 0);
	p.event[0] = '\0';
	assert_int_equal(prof_encode(&p, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "event"));
	prof_profile_free(&p);
}

static int setup_tmp(void **state)
{
	return tu_tmp_make("profile");
}

static void test_db_missing(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = (void *)1;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/nope", tmp_root);
	assert_int_equal(prof_db_open(dir, 0, &db, &err), -ENOENT);
	assert_null(db);
	assert_non_null(strstr(err.msg, dir));
	assert_non_null(strstr(err.msg, "No such file or directory"));
}

static void test_db_roundtrip(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("rt");
	struct prof_profile a, b, *v;
	char e1[64], e2[64], e3[64], latest[64], path[1024];
	char **names;
	size_t n;

	assert_int_equal(prof_db_latest_epoch(db, latest, sizeof(latest), &err), -ENOENT);
	assert_int_equal(prof_db_epoch_new(db, e1, sizeof(e1), &err), 0);
	assert_int_equal(prof_db_epoch_new(db, e2, sizeof(e2), &err), 0);
	assert_string_equal(e1, "00000001");
	assert_true(strcmp(e1, e2) < 0);
	assert_int_equal(prof_db_latest_epoch(db, latest, sizeof(latest), &err), 0);
	assert_string_equal(latest, e2);
	assert_int_equal(prof_db_epochs(db, &names, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], e1);
	prof_names_free(names, n);

	rng_seed(3);
	make_profile(&a, 0, "cpu-clock", 500, 1 << 16, 50000);
	make_profile(&b, 1, "cpu-clock", 10, 1 << 10, 50000);
	assert_int_equal(prof_epoch_write(db, e2, &a, &err), 0);
	assert_int_equal(prof_epoch_write(db, e2, &b, &err), 0);
	assert_int_equal(prof_epoch_write(db, e2, &a, &err), 0);	/* merges */
	/* Temp files and unknown files are not profiles. */
	snprintf(path, sizeof(path), "%s/%s/.x.prof.tmp1-0", prof_db_path(db), e2);
	tu_write_text(path, "half a file");
	snprintf(path, sizeof(path), "%s/%s/README", prof_db_path(db), e2);
	tu_write_text(path, "hello");
	assert_int_equal(prof_epoch_read(db, e2, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		const struct prof_profile *src = v[i].image.build_id[0] ? &a : &b;
		uint64_t k = src == &a ? 2 : 1;

		assert_int_equal(v[i].total, k * src->total);
		assert_int_equal(v[i].n, src->n);
		assert_int_equal(prof_profile_count(&v[i], src->e[0].offset),
				 k * src->e[0].count);
	}
	prof_profiles_free(v, n);

	/* A corrupt profile is skipped with a note naming it and why, listed as
	 * damaged; the rest of the epoch is read.  A merge refuses it. */
	snprintf(path, sizeof(path), "%s/%s/ffff.cycles.prof", prof_db_path(db), e2);
	tu_write_text(path, "DCPIPROF but not really");
	assert_int_equal(prof_epoch_read(db, e2, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	prof_profiles_free(v, n);
	assert_non_null(strstr(prof_db_notes(db), "ffff.cycles.prof: truncated"));
	{
		const char *const *bad;

		assert_int_equal(prof_db_damaged(db, &bad), 1);
		assert_string_equal(bad[0], path);
		assert_int_equal(prof_epoch_read(db, e2, &v, &n, &err), 0);	/* once */
		prof_profiles_free(v, n);
		assert_int_equal(prof_db_damaged(db, &bad), 1);
	}
	assert_int_equal(prof_db_epoch_new(db, e3, sizeof(e3), &err), 0);
	assert_int_equal(prof_epoch_merge(db, e3, db, e2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ffff.cycles.prof"));
	assert_int_equal(prof_epoch_is_empty(db, e3, &err), 1);
	prof_db_epoch_drop_empty(db, e3);
	unlink(path);

	assert_int_equal(prof_epoch_read(db, e1, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	prof_profiles_free(v, n);
	assert_int_not_equal(prof_epoch_read(db, "../etc", &v, &n, &err), 0);
	assert_non_null(strstr(err.msg, "bad epoch name"));
	prof_profile_free(&a);
	prof_profile_free(&b);
	prof_db_close(db);
}

static void test_file_merge(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile a, b, r, m;
	char path[512];

	snprintf(path, sizeof(path), "%s/merge.prof", tmp_root);
	rng_seed(5);
	make_profile(&a, 1, "cycles", 200, 1000, 100);
	make_profile(&b, 1, "cycles", 200, 1000, 300);
	assert_int_equal(prof_file_merge(path, &a, &err), 0);
	assert_int_equal(prof_file_merge(path, &b, &err), 0);
	assert_int_equal(prof_file_read(path, &r, &err), 0);
	prof_profile_init(&m);
	m = a;
	m.e = NULL;
	m.n = m.cap = 0;
	m.total = 0;
	assert_int_equal(prof_profile_merge(&m, &a, &err), 0);
	assert_int_equal(prof_profile_merge(&m, &b, &err), 0);
	assert_same_profile(&r, &m);
	assert_close(r.period, (100.0 * (double)a.total + 300.0 * (double)b.total) /
		     (double)(a.total + b.total));
	prof_profile_free(&r);
	/* A different image under the same name is refused. */
	b.image.size++;
	assert_int_equal(prof_file_merge(path, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "different images"));
	prof_profile_free(&a);
	prof_profile_free(&b);
	prof_profile_free(&m);
	snprintf(path, sizeof(path), "%s/absent.prof", tmp_root);
	assert_int_equal(prof_file_read(path, &r, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "absent.prof"));
}

/* Epoch e's meta file at path written as text: it does not read, and the
 * error says want. */
static void bad_meta(struct prof_db *db, const char *e, const char *path, const char *text,
		     const char *want)
{
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta r;

	tu_write_text(path, text);
	assert_int_equal(prof_epoch_meta_read(db, e, &r, &err), -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("%s: wanted \"%s\" in \"%s\"", text, want, err.msg);
}

static void test_meta(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("meta");
	struct prof_epoch_meta m, r;
	char e[64], path[1024];

	assert_int_equal(prof_db_epoch_new(db, e, sizeof(e), &err), 0);
	assert_int_equal(prof_epoch_meta_read(db, e, &r, &err), -ENOENT);
	memset(&m, 0, sizeof(m));
	prof_meta_this_machine(&m);
#if defined(__x86_64__)
	assert_true(strlen(m.cpu_vendor) == 12);
	assert_true(m.cpu_family > 0);
#endif
	m.cycles_per_ns = 2.9876543210987654;
	m.cycles_per_sample = 1e5 / 3;
	m.calibrated = 1;
	m.clock_change = 0.96031746031746035;
	strcpy(m.settings, "event=cpu-clock \"freq\"=20000\n\ttab\\back\x01");
	m.start_ns = 1700000000123456789ull;
	m.end_ns = m.start_ns + 60000000000ull;
	m.lost_samples = 17;
	m.samples = UINT64_MAX;
	m.canary_alone = 2.0078125;
	m.canary_cycles = 2.2890625;
	m.canary_sd = 0.42676116453203;
	m.canary_shared = 0.25;
	m.canary_bursts = 8;
	m.exposure_witness = 3;
	m.exposure_samples = 2000;
	m.exposure_cycles_step = 18.75;
	assert_int_equal(prof_epoch_meta_write(db, e, &m, &err), 0);
	assert_int_equal(prof_epoch_meta_read(db, e, &r, &err), 0);
	assert_memory_equal(&m, &r, sizeof(m));

	snprintf(path, sizeof(path), "%s/%s/meta", prof_db_path(db), e);
	tu_write_text(path, "format = 1\n# comment\n\nfuture_key = {whatever}\nlost_samples = 5\n");
	assert_int_equal(prof_epoch_meta_read(db, e, &r, &err), 0);
	assert_int_equal(r.lost_samples, 5);
	bad_meta(db, e, path, "format = 1\nsamples = 3\nthis line is wrong\n", "meta:3: ");
	bad_meta(db, e, path, "format = 1\nsamples = -3\n",
		 "meta:2: expected an unsigned integer");
	bad_meta(db, e, path, "format = 1\ncpu_name = \"unterminated\n", "meta:2: ");
	bad_meta(db, e, path, "samples = 3\n", "missing `format");
	bad_meta(db, e, path, "format = 2\n", "meta:1: unsupported");
	prof_db_close(db);
}

static void random_merge_profile(struct prof_profile *p, int empty)
{
	static const double periods[] = { 1000, 1000, 2500, 333.3 };

	make_profile(p, 0, "cycles", empty ? 0 : rng() % 60, 200,
		     periods[rng() % 4]);
	p->cycles_per_unit = (double)(rng() % 3);
}

static void copy_profile(struct prof_profile *dst, const struct prof_profile *src)
{
	struct dcpi_err err = { 0 };

	*dst = *src;
	dst->e = NULL;
	dst->n = dst->cap = 0;
	dst->total = 0;
	assert_int_equal(prof_profile_merge(dst, src, &err), 0);
}

static void test_merge_laws(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile a, b, c, ab, ba, ab_c, bc, a_bc, ae;

	rng_seed(2024);
	for (int t = 0; t < 400; t++) {
		random_merge_profile(&a, t % 17 == 0);
		random_merge_profile(&b, t % 23 == 0);
		random_merge_profile(&c, 0);
		copy_profile(&ab, &a);
		assert_int_equal(prof_profile_merge(&ab, &b, &err), 0);
		copy_profile(&ba, &b);
		assert_int_equal(prof_profile_merge(&ba, &a, &err), 0);
		assert_same_profile(&ab, &ba);
		assert_true(ab.period == ba.period);	/* commutative exactly */
		copy_profile(&ab_c, &ab);
		assert_int_equal(prof_profile_merge(&ab_c, &c, &err), 0);
		copy_profile(&bc, &b);
		assert_int_equal(prof_profile_merge(&bc, &c, &err), 0);
		copy_profile(&a_bc, &a);
		assert_int_equal(prof_profile_merge(&a_bc, &bc, &err), 0);
		assert_same_profile(&ab_c, &a_bc);	/* period to 1e-9 */
		for (size_t i = 0; i < ab_c.n; i++)
			assert_int_equal(ab_c.e[i].count,
					 prof_profile_count(&a, ab_c.e[i].offset) +
					 prof_profile_count(&b, ab_c.e[i].offset) +
					 prof_profile_count(&c, ab_c.e[i].offset));
		random_merge_profile(&ae, 1);
		assert_int_equal(prof_profile_merge(&ae, &a, &err), 0);
		if (a.total) {
			assert_same_profile(&ae, &a);
			assert_true(ae.period == a.period);
		}
		prof_profile_free(&ae);
		prof_profile_free(&a);
		prof_profile_free(&b);
		prof_profile_free(&c);
		prof_profile_free(&ab);
		prof_profile_free(&ba);
		prof_profile_free(&ab_c);
		prof_profile_free(&bc);
		prof_profile_free(&a_bc);
	}
}

static void test_merge_mismatch(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_profile a, b;
	uint64_t total;
	size_t n;

	rng_seed(9);
	make_profile(&a, 0, "cycles", 10, 100, 1);
	make_profile(&b, 1, "cycles", 10, 100, 1);
	n = a.n;
	total = a.total;
	assert_int_equal(prof_profile_merge(&a, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "different images"));
	assert_int_equal(a.n, n);	/* a failed merge leaves dst alone */
	assert_int_equal(a.total, total);
	prof_profile_free(&b);
	make_profile(&b, 0, "instructions", 10, 100, 1);
	assert_int_equal(prof_profile_merge(&a, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "instructions"));
	prof_profile_free(&b);
	/* Same build-id, other path: the same image. */
	make_profile(&b, 0, "cycles", 10, 100, 1);
	strcpy(b.image.path, "/a/copy/of/bc");
	assert_int_equal(prof_profile_merge(&a, &b, &err), 0);
	assert_string_equal(a.image.path, "/a/copy/of/bc");
	prof_profile_free(&a);
	prof_profile_free(&b);
}

static void fill_epoch(struct prof_db *db, char *epoch, size_t len, int trial, int which)
{
	static const char *events[] = { "cycles", "cpu-clock", "l2:miss" };
	struct dcpi_err err = { 0 };
	struct prof_epoch_meta m;
	struct prof_profile p;

	assert_int_equal(prof_db_epoch_new(db, epoch, len, &err), 0);
	for (int k = 0; k < 3; k++) {
		int image = (int)(rng() % 3);

		make_profile(&p, image, events[rng() % 3], 1 + rng() % 30, 300, 1000);
		if (image == 2)
			prof_image_id_unknown(&p.image);
		assert_int_equal(prof_epoch_write(db, epoch, &p, &err), 0);
		prof_profile_free(&p);
	}
	memset(&m, 0, sizeof(m));
	if (which == 1 && trial % 2)
		return;	/* an epoch without metadata */
	prof_meta_this_machine(&m);
	m.samples = rng() % 1000;
	m.lost_samples = rng() % 10;
	m.start_ns = 1000 + rng() % 100;
	m.end_ns = m.start_ns + rng() % 100;
	m.cycles_per_ns = 2.5 + (double)(which % 2);
	m.calibrated = (int)(rng() % 2);
	{	/* not measured, or moved either way; 0.98 and 1/0.98 tie */
		static const double change[] = { 0, 0.98, 1 / 0.98, 1.05, 0.9 };

		m.clock_change = change[rng() % 5];
	}
	m.canary_bursts = rng() % 20;
	m.canary_alone = m.canary_bursts ? 2.0 : 0;
	m.canary_cycles = m.canary_bursts ? 2.0 + (double)(which % 3) / 2 : 0;
	m.canary_shared = m.canary_bursts ? (double)(which % 3) / 2 : 0;
	m.exposure_samples = rng() % 500;
	m.exposure_witness = m.exposure_samples ? rng() % 10 : 0;
	m.exposure_cycles_step = m.exposure_samples ? 14.0 + (double)(which % 3) : 0;
	snprintf(m.settings, sizeof(m.settings), "setting %d", which);
	assert_int_equal(prof_epoch_meta_write(db, epoch, &m, &err), 0);
}

static void merge_into(struct prof_db *dst, const char *de, struct prof_db *src,
		       const char *se)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(prof_epoch_merge(dst, de, src, se, &err), 0);
}

static void assert_same_epoch(struct prof_db *x, const char *ex, struct prof_db *y,
			      const char *ey)
{
	struct dcpi_err err = { 0 };
	struct prof_profile *a, *b;
	struct prof_epoch_meta ma, mb;
	size_t na, nb;
	int ra, rb;

	assert_int_equal(prof_epoch_read(x, ex, &a, &na, &err), 0);
	assert_int_equal(prof_epoch_read(y, ey, &b, &nb, &err), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		assert_same_profile(&a[i], &b[i]);
	prof_profiles_free(a, na);
	prof_profiles_free(b, nb);
	ra = prof_epoch_meta_read(x, ex, &ma, &err);
	rb = prof_epoch_meta_read(y, ey, &mb, &err);
	assert_int_equal(ra, rb);
	assert_memory_equal(ma.cpu_vendor, mb.cpu_vendor, sizeof(ma.cpu_vendor));
	assert_string_equal(ma.settings, mb.settings);
	assert_int_equal(ma.samples, mb.samples);
	assert_int_equal(ma.lost_samples, mb.lost_samples);
	assert_int_equal(ma.start_ns, mb.start_ns);
	assert_int_equal(ma.end_ns, mb.end_ns);
	assert_int_equal(ma.calibrated, mb.calibrated);
	assert_close(ma.cycles_per_ns, mb.cycles_per_ns);
	assert_true(ma.clock_change == mb.clock_change);
	assert_int_equal(ma.canary_bursts, mb.canary_bursts);
	assert_close(ma.canary_cycles, mb.canary_cycles);
	assert_close(ma.canary_shared, mb.canary_shared);
	assert_int_equal(ma.exposure_witness, mb.exposure_witness);
	assert_int_equal(ma.exposure_samples, mb.exposure_samples);
	assert_close(ma.exposure_cycles_step, mb.exposure_cycles_step);
}

/* Epoch merge is a reduce: (A+B)+C == A+(B+C) == (C+A)+B, with metadata. */
static void test_epoch_merge_laws(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *src = open_db("em-src"), *dst = open_db("em-dst");
	char a[64], b[64], c[64], x[64], y[64], z[64], bc[64];

	rng_seed(77);
	for (int t = 0; t < 6; t++) {
		fill_epoch(src, a, sizeof(a), t, 0);
		fill_epoch(src, b, sizeof(b), t, 1);
		fill_epoch(src, c, sizeof(c), t, 2);
		assert_int_equal(prof_db_epoch_new(dst, x, sizeof(x), &err), 0);
		merge_into(dst, x, src, a);
		merge_into(dst, x, src, b);
		merge_into(dst, x, src, c);
		assert_int_equal(prof_db_epoch_new(dst, bc, sizeof(bc), &err), 0);
		merge_into(dst, bc, src, b);
		merge_into(dst, bc, src, c);
		assert_int_equal(prof_db_epoch_new(dst, y, sizeof(y), &err), 0);
		merge_into(dst, y, src, a);
		merge_into(dst, y, dst, bc);
		assert_int_equal(prof_db_epoch_new(dst, z, sizeof(z), &err), 0);
		merge_into(dst, z, src, c);
		merge_into(dst, z, src, a);
		merge_into(dst, z, src, b);
		assert_same_epoch(dst, x, dst, y);
		assert_same_epoch(dst, x, dst, z);
	}
	assert_int_equal(prof_epoch_merge(dst, x, dst, x, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "itself"));
	prof_db_close(src);
	prof_db_close(dst);
}

static void test_image_id(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_image_id id, u, v;
	char path[512];
	struct stat st;

	assert_int_equal(prof_image_id_from_file(&id, "/proc/self/exe", &err), 0);
	/* gcc on Debian links with --build-id (sha1: 20 bytes). */
	assert_int_equal(strlen(id.build_id), 40);
	assert_true(id.size > 0);
	snprintf(path, sizeof(path), "%s/not-elf", tmp_root);
	tu_write_text(path, "#!/bin/sh\n");
	assert_int_equal(prof_image_id_from_file(&id, path, &err), 0);
	assert_string_equal(id.build_id, "");
	assert_int_equal(id.size, 10);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(id.mtime, st.st_mtime);
	assert_string_equal(id.path, path);
	assert_int_equal(prof_image_id_from_file(&id, "/nonexistent/x", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/x"));

	prof_image_id_unknown(&u);
	assert_string_equal(u.path, PROF_UNKNOWN_PATH);
	assert_string_equal(u.build_id, "");
	prof_image_id_unknown(&v);
	assert_true(prof_image_id_equal(&u, &v));
	make_id(&v, 0);
	assert_false(prof_image_id_equal(&u, &v));
}

static void test_unknown_image_db(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("unknown");
	struct prof_profile p, *v;
	char e[64];
	size_t n;

	rng_seed(11);
	assert_int_equal(prof_db_epoch_new(db, e, sizeof(e), &err), 0);
	make_profile(&p, 1, "cycles", 20, 1 << 20, 1000);
	prof_image_id_unknown(&p.image);
	assert_int_equal(prof_epoch_write(db, e, &p, &err), 0);
	assert_int_equal(prof_epoch_write(db, e, &p, &err), 0);
	assert_int_equal(prof_epoch_read(db, e, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].image.path, PROF_UNKNOWN_PATH);
	assert_int_equal(v[0].total, 2 * p.total);
	prof_profiles_free(v, n);
	prof_profile_free(&p);
	prof_db_close(db);
}

/* Any file of an epoch: inside a transaction it is invisible until commit,
 * abort drops it, a second write in one transaction replaces the first, and
 * names that could escape the epoch or hide as temporaries are refused. */
static void test_epoch_write_file(void **state)
{
	struct dcpi_err err = { 0 };
	struct prof_db *db = open_db("files");
	uint8_t *buf;
	size_t len;
	char e[64];

	assert_int_equal(prof_db_epoch_new(db, e, sizeof(e), &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "x.paths", "one", 3, &err), 0);
	assert_int_equal(prof_epoch_read_file(db, e, "x.paths", &buf, &len, &err), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(buf, "one", 3);
	free(buf);
	assert_int_equal(prof_epoch_begin(db, e, &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "x.paths", "two", 3, &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "x.paths", "three", 5, &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "y.paths", "new", 3, &err), 0);
	/* this handle sees its own transaction; the abort drops it */
	assert_int_equal(prof_epoch_read_file(db, e, "x.paths", &buf, &len, &err), 0);
	assert_int_equal(len, 5);
	free(buf);
	prof_epoch_abort(db);
	assert_int_equal(prof_epoch_read_file(db, e, "x.paths", &buf, &len, &err), 0);
	assert_memory_equal(buf, "one", 3);
	free(buf);
	assert_int_equal(prof_epoch_read_file(db, e, "y.paths", &buf, &len, &err), -ENOENT);
	assert_int_equal(prof_epoch_begin(db, e, &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "x.paths", "three", 5, &err), 0);
	assert_int_equal(prof_epoch_write_file(db, e, "y.paths", "new", 3, &err), 0);
	assert_int_equal(prof_epoch_commit(db, &err), 0);
	assert_int_equal(prof_epoch_read_file(db, e, "y.paths", &buf, &len, &err), 0);
	assert_memory_equal(buf, "new", 3);
	free(buf);
	assert_int_equal(prof_epoch_write_file(db, e, "../escape", "x", 1, &err), -EINVAL);
	assert_int_equal(prof_epoch_write_file(db, e, ".hidden", "x", 1, &err), -EINVAL);
	assert_int_equal(prof_epoch_write_file(db, e, "", "x", 1, &err), -EINVAL);
	assert_int_equal(prof_epoch_write_file(db, "../x", "a", "x", 1, &err), -EINVAL);
	prof_db_close(db);
}

TU_MAIN(setup_tmp, teardown_tmp,
	cmocka_unit_test(test_leb128),
	cmocka_unit_test(test_sort_fold),
	cmocka_unit_test(test_roundtrip),
	cmocka_unit_test(test_normalize),
	cmocka_unit_test(test_bytes_per_entry),
	cmocka_unit_test(test_corrupt_every_byte),
	cmocka_unit_test(test_truncate_and_append),
	cmocka_unit_test(test_semantic_errors),
	cmocka_unit_test(test_encode_rejects),
	cmocka_unit_test(test_db_missing),
	cmocka_unit_test(test_db_roundtrip),
	cmocka_unit_test(test_file_merge),
	cmocka_unit_test(test_meta),
	cmocka_unit_test(test_merge_laws),
	cmocka_unit_test(test_merge_mismatch),
	cmocka_unit_test(test_epoch_merge_laws),
	cmocka_unit_test(test_image_id),
	cmocka_unit_test(test_unknown_image_db),
	cmocka_unit_test(test_epoch_write_file))
