/*
 * test_callgraph.c - call graphs (include/dcpi/callgraph.h,
 * docs/callgraph.md): the .cg codec, its merge (sums, order-independent
 * bytes) and its checks; `dcpi record -g` on tests/workloads/calltree.c,
 * whose call tree is known, with `dcpiprof --callers/--callees` giving
 * each path's share within 2 points of the truth; stacks in the pprof
 * export; perf.data callchains kept by `dcpi import`; `dcpi merge` of both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dcpi/callgraph.h"
#include "tu_run.h"
#include "tu_main.h"

static const char *bin;
static char wl[PROF_PATH_MAX], ws[512];

static int setup(void **state)
{
	(void)state;
	return tu_run_setup(&bin, wl, sizeof(wl), "calltree", ws, sizeof(ws), "callgraph");
}

static void make_id(struct prof_image_id *id, const char *path, const char *bid)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->path, sizeof(id->path), "%s", path);
	snprintf(id->build_id, sizeof(id->build_id), "%s", bid);
	id->size = 1000;
	id->mtime = 5;
}

/* A profile of image "leaf" with stacks through "lib" and "exe", added in
 * the order given by seed (0 or 1). */
static void build(struct cg_profile *p, int seed)
{
	struct prof_image_id leaf, lib, exe;
	struct cg_frame f[4];
	int ev, tl, te;

	make_id(&leaf, "/x/leaf.so", "aa");
	make_id(&lib, "/x/lib.so", "bb");
	make_id(&exe, "/x/exe", "cc");
	cg_profile_init(p);
	p->image = leaf;
	if (seed) {
		te = cg_profile_tag(p, &exe);
		tl = cg_profile_tag(p, &lib);
	} else {
		tl = cg_profile_tag(p, &lib);
		te = cg_profile_tag(p, &exe);
	}
	assert_true(tl > 0 && te > 0 && tl != te);
	ev = cg_profile_event(p, seed ? "cycles" : "cpu-clock");
	assert_true(ev >= 0);
	assert_true(cg_profile_event(p, seed ? "cpu-clock" : "cycles") >= 0);
	ev = cg_profile_event(p, "cpu-clock");
	f[0] = (struct cg_frame){ 0, 0x1234 };
	f[1] = (struct cg_frame){ 0, 0x1100 };
	f[2] = (struct cg_frame){ (uint32_t)tl, 0x40 };
	f[3] = (struct cg_frame){ (uint32_t)te, 0x9000 };
	assert_int_equal(cg_profile_add(p, (uint32_t)ev, f, 4, 7), 0);
	assert_int_equal(cg_profile_add(p, (uint32_t)ev, f, 3, 2), 0);
	assert_int_equal(cg_profile_add(p, (uint32_t)ev, f, 4, 1), 0);	/* a duplicate */
	ev = cg_profile_event(p, "cycles");
	assert_int_equal(cg_profile_add(p, (uint32_t)ev, f, 1, 5), 0);
	assert_int_equal(cg_normalize(p), 0);
}

static void encode(const struct cg_profile *p, uint8_t **buf, size_t *len)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(cg_encode(p, buf, len, &err), 0);
}

/* Built in two orders, the same bytes; decoded, the same profile. */
static void test_codec(void **state)
{
	struct cg_profile a, b, d;
	struct dcpi_err err = { 0 };
	uint8_t *ba, *bb, *bd;
	size_t la, lb, ld;

	(void)state;
	build(&a, 0);
	build(&b, 1);
	assert_int_equal(a.n, 3);	/* the duplicate summed */
	assert_int_equal(cg_profile_total(&a), 15);
	encode(&a, &ba, &la);
	encode(&b, &bb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(ba, bb, la);
	assert_int_equal(cg_decode(ba, la, "a", &d, &err), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.nimgs, 2);
	assert_int_equal(d.nevents, 2);
	encode(&d, &bd, &ld);
	assert_int_equal(ld, la);
	assert_memory_equal(bd, ba, la);
	free(ba);
	free(bb);
	free(bd);
	cg_profile_free(&a);
	cg_profile_free(&b);
	cg_profile_free(&d);
}

/* a + b and b + a give the same bytes; counts are summed. */
static void test_merge(void **state)
{
	struct cg_profile a, b, a2, b2;
	struct dcpi_err err = { 0 };
	uint8_t *x, *y;
	size_t lx, ly;

	(void)state;
	build(&a, 0);
	build(&b, 1);
	build(&a2, 0);
	build(&b2, 1);
	assert_int_equal(cg_profile_merge(&a, &b, &err), 0);
	assert_int_equal(cg_profile_merge(&b2, &a2, &err), 0);
	assert_int_equal(cg_profile_total(&a), 30);
	assert_int_equal(a.n, 3);
	encode(&a, &x, &lx);
	encode(&b2, &y, &ly);
	assert_int_equal(lx, ly);
	assert_memory_equal(x, y, lx);
	strcpy(b.image.build_id, "dd");	/* another image: refused */
	assert_int_equal(cg_profile_merge(&a, &b, &err), -EINVAL);
	free(x);
	free(y);
	cg_profile_free(&a);
	cg_profile_free(&b);
	cg_profile_free(&a2);
	cg_profile_free(&b2);
}

/* Every damage is an error naming the file, never a crash: a flipped
 * byte (checksum), a cut, and with the checksum redone, a bad tag. */
static void test_decode_rejects(void **state)
{
	struct cg_profile a, d;
	struct dcpi_err err = { 0 };
	uint8_t *buf;
	size_t len;

	(void)state;
	build(&a, 0);
	encode(&a, &buf, &len);
	buf[len - 3] ^= 0x10;
	assert_int_equal(cg_decode(buf, len, "flip.cg", &d, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "flip.cg"));
	buf[len - 3] ^= 0x10;
	assert_int_equal(cg_decode(buf, len - 1, "cut.cg", &d, &err), -EINVAL);
	for (size_t i = 72; i < len; i++) {	/* any body byte resealed */
		uint8_t *c = malloc(len);

		memcpy(c, buf, len);
		c[i] ^= 0x5a;
		prof_file_reseal(c, len);
		if (cg_decode(c, len, "byte.cg", &d, &err) == 0) {
			/* still a valid profile (an offset changed): it re-encodes */
			uint8_t *e;
			size_t le;

			encode(&d, &e, &le);
			free(e);
			cg_profile_free(&d);
		}
		free(c);
	}
	free(buf);
	cg_profile_free(&a);
}

/* Two writes into one epoch merge; the epoch reads back as one profile. */
static void test_epoch(void **state)
{
	char dir[PROF_PATH_MAX], name[64];
	struct prof_db *db;
	struct cg_profile a, *v;
	struct dcpi_err err = { 0 };
	size_t n;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/epochdb", ws);
	build(&a, 0);
	assert_int_equal(prof_db_open(dir, PROF_DB_CREATE, &db, &err), 0);
	assert_int_equal(prof_db_epoch_new(db, name, sizeof(name), &err), 0);
	if (cg_epoch_write(db, name, &a, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(cg_epoch_write(db, name, &a, &err), 0);
	assert_int_equal(cg_epoch_read(db, name, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cg_profile_total(&v[0]), 2 * cg_profile_total(&a));
	cg_profiles_free(v, n);
	prof_db_close(db);
	cg_profile_free(&a);
}

/* The known tree (tests/workloads/calltree.c) recorded with -g: each
 * caller's and callee's share within 2 points of its share of the work. */
static const struct {
	const char *list, *proc, *want;	/* --callers or --callees of proc: shares */
} shares[] = {
	{ "callers", "leaf", "{'a': 30, 'b': 10, 'mid': 60}" },
	{ "callers", "mid", "{'a': 100 / 3, 'b': 200 / 3}" },
	{ "callees", "b", "{'leaf': 20, 'mid': 80}" },
	{ "callees", "main", "{'a': 50, 'b': 50}" },
};

static void test_record_callers(void **state)
{
	char args[2 * PROF_PATH_MAX];
	static const char share[] =
		"s = {r['name']: 100 * r['share'] for r in d['%s']}\n"
		"print(s, file=sys.stderr)\n"
		"want = %s\n"
		"assert d['samples'] > 1000, d['samples']\n"
		"for k, v in want.items():\n"
		"    assert abs(s.get(k, 0) - v) <= 2, (k, s.get(k), v)\n";
	char py[1024];

	(void)state;
	if (tu_sh("cd %s && %s record -q --db db -g --no-paths --no-calibrate -- %s 200 "
		  "> rec.out 2> rec.err", ws, bin, wl)) {
		tu_sh("cat %s/rec.err >&2", ws);
		fail_msg("dcpi record -g failed");
	}
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		snprintf(args, sizeof(args), "prof --db %s/db --%s %s", ws, shares[i].list,
			 shares[i].proc);
		snprintf(py, sizeof(py), share, shares[i].list, shares[i].want);
		tu_check_json(bin, ws, args, py);
	}
}

/* The pprof export of the same recording: each path to leaf a sample of
 * its frames, its share within 2 points of the truth (callgrind's
 * inclusive counts: main>a>leaf 30%, main>a>mid>leaf 20%, main>b>leaf 10%,
 * main>b>mid>leaf 40%).  The profile.proto is read by a few lines of
 * python: varints and length-delimited fields. */
static const char pprof_py[] =
	"import gzip, sys\n"
	"b = gzip.open(sys.argv[1]).read()\n"
	"def vi(b, i):\n"
	"    r = s = 0\n"
	"    while True:\n"
	"        c = b[i]; i += 1; r |= (c & 0x7f) << s; s += 7\n"
	"        if c < 0x80: return r, i\n"
	"def fields(b):\n"
	"    i = 0\n"
	"    while i < len(b):\n"
	"        k, i = vi(b, i)\n"
	"        if k & 7 == 0: v, i = vi(b, i)\n"
	"        else:\n"
	"            n, i = vi(b, i); v = b[i:i + n]; i += n\n"
	"        yield k >> 3, v\n"
	"def ints(v):\n"
	"    if isinstance(v, int): return [v]\n"
	"    out, i = [], 0\n"
	"    while i < len(v):\n"
	"        x, i = vi(v, i); out.append(x)\n"
	"    return out\n"
	"st, fn, loc, smp = [], {}, {}, []\n"
	"for f, v in fields(b):\n"
	"    if f == 6: st.append(v.decode())\n"
	"    elif f == 5: d = dict(fields(v)); fn[d[1]] = d[2]\n"
	"    elif f == 4:\n"
	"        lines = [dict(fields(x)) for g, x in fields(v) if g == 4]\n"
	"        loc[dict(fields(v))[1]] = lines[-1][1]\n"
	"    elif f == 2:\n"
	"        ids, vals = [], []\n"
	"        for g, x in fields(v):\n"
	"            if g == 1: ids += ints(x)\n"
	"            if g == 2: vals += ints(x)\n"
	"        smp.append((ids, sum(vals)))\n"
	"paths = {}\n"
	"for ids, n in smp:\n"
	"    names = [st[fn[loc[i]]] for i in ids]\n"
	"    if names[0] != 'leaf': continue\n"
	"    k = '>'.join(x for x in reversed(names) if x in ('main', 'a', 'b', 'mid', 'leaf'))\n"
	"    paths[k] = paths.get(k, 0) + n\n"
	"tot = sum(paths.values())\n"
	"s = {k: 100 * v / tot for k, v in paths.items()}\n"
	"print(s, file=sys.stderr)\n"
	"want = {'main>a>leaf': 30, 'main>a>mid>leaf': 20, 'main>b>leaf': 10,\n"
	"        'main>b>mid>leaf': 40}\n"
	"assert tot > 1000, tot\n"
	"for k, v in want.items():\n"
	"    assert abs(s.get(k, 0) - v) <= 2, (k, s.get(k), v)\n";

static void test_pprof_stacks(void **state)
{
	char path[PROF_PATH_MAX];

	(void)state;
	snprintf(path, sizeof(path), "%s/pprof.py", ws);
	tu_write_text(path, pprof_py);
	if (tu_sh("cd %s && %s export --pprof --db db -o p.pb.gz 2> exp.err && "
		  "python3 pprof.py p.pb.gz", ws, bin)) {
		tu_sh("cat %s/exp.err >&2", ws);
		fail_msg("pprof export: paths not within 2 points");
	}
}

/* perf record -g's perf.data imports with its stacks: the callers of leaf
 * and mid as from dcpi record (skipped without perf). */
static void test_import_perf(void **state)
{
	char args[2 * PROF_PATH_MAX], py[1024];
	static const char share[] =
		"s = {r['name']: 100 * r['share'] for r in d['callers']}\n"
		"print(s, file=sys.stderr)\n"
		"want = %s\n"
		"assert d['samples'] > 1000, d['samples']\n"
		"for k, v in want.items():\n"
		"    assert abs(s.get(k, 0) - v) <= 2, (k, s.get(k), v)\n";

	(void)state;
	if (tu_sh("perf --version > /dev/null 2>&1")) {
		skip();
		return;
	}
	if (tu_sh("cd %s && perf record -q -N -e cpu-clock -g -o perf.data -- %s 200 "
		  "> perf.out 2> perf.err && %s import --db idb perf.data > imp.out 2> imp.err",
		  ws, wl, bin)) {
		tu_sh("cat %s/perf.err %s/imp.err >&2", ws, ws);
		fail_msg("perf record -g or dcpi import failed");
	}
	snprintf(args, sizeof(args), "prof --db %s/idb --callers leaf", ws);
	snprintf(py, sizeof(py), share, "{'a': 30, 'b': 10, 'mid': 60}");
	tu_check_json(bin, ws, args, py);
	snprintf(args, sizeof(args), "prof --db %s/idb --callers mid", ws);
	snprintf(py, sizeof(py), share, "{'a': 100 / 3, 'b': 200 / 3}");
	tu_check_json(bin, ws, args, py);
	/* dcpi merge keeps the stacks of both: leaf is on every one of them */
	if (tu_sh("cd %s && %s merge -o mdb db idb > m.out 2> m.err && %s prof --db mdb "
		  "--epoch all --callers leaf --json > m.json && %s prof --db db --callers leaf "
		  "--json > a.json && %s prof --db idb --callers leaf --json > b.json && "
		  "python3 -c 'import json; m, a, b = (json.load(open(f)) for f in "
		  "(\"m.json\", \"a.json\", \"b.json\")); "
		  "assert m[\"samples\"] == a[\"samples\"] + b[\"samples\"], "
		  "(m[\"samples\"], a[\"samples\"], b[\"samples\"])'", ws, bin, bin, bin, bin))
		fail_msg("dcpi merge: the merged stacks are not the sum of both");
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_codec),
	cmocka_unit_test(test_merge),
	cmocka_unit_test(test_decode_rejects),
	cmocka_unit_test(test_epoch),
	cmocka_unit_test(test_record_callers),
	cmocka_unit_test(test_pprof_stacks),
	cmocka_unit_test(test_import_perf))
