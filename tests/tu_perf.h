/*
 * tests/tu_perf.h - perf.data records written byte by byte, for the tests
 * of the perf importers (test_import.c, test_session.c, test_ibs.c,
 * test_pebs.c): a buffer the records go into, little-endian as the host
 * writes them, the event attribute of a software event, a file's header
 * and its EVENT_DESC feature, and the pointer-chase epoch that test_ibs.c
 * and test_pebs.c each fill with their own samples.  Header-only; include
 * after <cmocka.h> and testutil.h.
 */
#ifndef DCPI_TU_PERF_H
#define DCPI_TU_PERF_H

#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>

struct tu_pbuf {
	uint8_t b[1 << 16];
	size_t n;
	uint64_t time;		/* of the next record, for the writers that use it */
};

static inline void tu_put(struct tu_pbuf *p, const void *v, size_t n)
{
	assert_true(p->n + n <= sizeof(p->b));
	memcpy(p->b + p->n, v, n);
	p->n += n;
}

static inline void tu_put64(struct tu_pbuf *p, uint64_t v)
{
	tu_put(p, &v, 8);
}

static inline void tu_put32(struct tu_pbuf *p, uint32_t v)
{
	tu_put(p, &v, 4);
}

/* A record's header: type, misc and the record's size in bytes. */
static inline void tu_put_hdr(struct tu_pbuf *p, uint32_t type, uint16_t misc, size_t size)
{
	struct perf_event_header h = { type, misc, (uint16_t)size };

	tu_put(p, &h, sizeof(h));
}

/* A software event's attribute (config: PERF_COUNT_SW_...), sampled every
 * period with the sample_type fields. */
static inline void tu_sw_attr(struct perf_event_attr *a, uint64_t config, uint64_t period,
			      uint64_t sample_type)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->size = sizeof(*a);
	a->sample_period = period;
	a->sample_type = sample_type;
}

/* A sample's identifier, ip, pid and tid (PERF_SAMPLE_IDENTIFIER | IP | TID),
 * in a record of `more` further bytes that the caller writes next. */
static inline void tu_put_ip_sample(struct tu_pbuf *p, uint64_t id, uint64_t ip, size_t more)
{
	tu_put_hdr(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 8 + 8 + 8 + more);
	tu_put64(p, id);
	tu_put64(p, ip);
	tu_put32(p, 7), tu_put32(p, 7);
}

/* A file's header, then its n attributes with one id each (ids[i]) and the
 * ids: what comes next is the data section, data_n bytes; feats is the
 * header's feature bitmap's first word. */
static inline void tu_put_perf_head(struct tu_pbuf *p, const struct perf_event_attr *a,
				    const uint64_t *ids, int n, size_t data_n, uint64_t feats)
{
	size_t asz = sizeof(a[0]) + 16, ids_at = 104 + (size_t)n * asz;

	tu_put(p, "PERFILE2", 8);
	tu_put64(p, 104), tu_put64(p, asz);
	tu_put64(p, 104), tu_put64(p, (size_t)n * asz);
	tu_put64(p, ids_at + 8 * (size_t)n), tu_put64(p, data_n);
	tu_put64(p, 0), tu_put64(p, 0);
	tu_put64(p, feats), tu_put64(p, 0), tu_put64(p, 0), tu_put64(p, 0);
	for (int i = 0; i < n; i++) {
		tu_put(p, &a[i], sizeof(a[i]));
		tu_put64(p, ids_at + 8 * (size_t)i), tu_put64(p, 8);
	}
	for (int i = 0; i < n; i++)
		tu_put64(p, ids[i]);
}

/* The EVENT_DESC feature (the only one, bit 12 of the header's bitmap) of
 * a file whose features start at p->n: its section header, then each of
 * the n attributes with its name (under 16 bytes) and its one id. */
static inline void tu_put_event_desc(struct tu_pbuf *p, const struct perf_event_attr *a,
				     const char *const *names, const uint64_t *ids, int n)
{
	tu_put64(p, p->n + 16);
	tu_put64(p, 8 + (size_t)n * (sizeof(a[0]) + 4 + 4 + 16 + 8));
	tu_put32(p, (uint32_t)n), tu_put32(p, sizeof(a[0]));
	for (int i = 0; i < n; i++) {
		char nm[16] = { 0 };

		tu_put(p, &a[i], sizeof(a[i]));
		tu_put32(p, 1);
		tu_put32(p, 16);
		snprintf(nm, sizeof(nm), "%s", names[i]);
		tu_put(p, nm, 16);
		tu_put64(p, ids[i]);
	}
}

/* --- a pointer chase's epoch (tests/workloads/chase.c's walk) ------------------- */

#define TU_CHASE_LAT 300	/* cycles each measured miss took */
#define TU_CHASE_CYC_PERIOD 100000	/* cycles per cycles sample */

/* Where walk is in the chase binary, from objdump and readelf. */
struct tu_chase {
	uint64_t loop[4];	/* the chase's load and the three instructions after it */
	uint64_t text_va, text_off, text_sz;	/* the executable LOAD segment */
};

static inline void tu_chase_walk(const char *bin, uint64_t *loop)
{
	char l[512];
	int in = 0, k = -1;
	FILE *f = tu_popen("objdump -d --no-show-raw-insn '%s'", bin);

	while (fgets(l, sizeof(l), f)) {
		unsigned long long a;

		if (strstr(l, "<walk>:"))
			in = 1;
		else if (in && l[0] == '\n')
			in = 0;
		else if (in && sscanf(l, " %llx:", &a) == 1 && k < 3 &&
			 (k >= 0 || (strstr(l, "mov") && strstr(l, "(%rdi,"))))
			loop[++k] = a;
	}
	pclose(f);
	assert_int_equal(k, 3);
}

static inline void tu_chase_find(const char *bin, struct tu_chase *c)
{
	char l[512];
	FILE *f;

	memset(c, 0, sizeof(*c));
	tu_chase_walk(bin, c->loop);
	f = tu_popen("readelf -lW '%s'", bin);
	while (fgets(l, sizeof(l), f)) {
		unsigned long long off, va, pa, fs, ms;

		if (sscanf(l, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fs,
			   &ms) == 5 && strstr(l, " E "))
			c->text_off = off, c->text_va = va, c->text_sz = ms;
	}
	pclose(f);
	assert_true(c->text_sz > 0);
}

/* The chase's MMAP2 of its text, then its cycles samples (attribute id 1):
 * the load's wait lands on the add after it. */
static inline void tu_chase_start(struct tu_pbuf *d, const char *bin, const struct tu_chase *c)
{
	char name[600] = { 0 };
	size_t nlen;

	snprintf(name, sizeof(name), "%s", bin);
	nlen = (strlen(name) + 8) & ~7ul;
	tu_put_hdr(d, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 8 + 64 + nlen);
	tu_put32(d, 7), tu_put32(d, 7);
	tu_put64(d, c->text_va & ~0xfffull), tu_put64(d, c->text_sz + (c->text_va & 0xfff)),
	tu_put64(d, c->text_off & ~0xfffull);
	tu_put64(d, 0), tu_put64(d, 0), tu_put64(d, 0);
	tu_put32(d, 5), tu_put32(d, 2);
	tu_put(d, name, nlen);
	for (int k = 0; k < 400; k++)
		tu_put_ip_sample(d, 1, c->loop[1], 0);
	for (int k = 0; k < 20; k++)
		tu_put_ip_sample(d, 1, c->loop[k % 3 == 0 ? 0 : k % 3 + 1], 0);
}

/* The whole file into out: a[0] the cycles attribute (id 1), a[1] the
 * measuring one (id 2) with its name, data d, and EVENT_DESC. */
static inline void tu_chase_file(struct tu_pbuf *out, struct perf_event_attr *a,
				 const char *measured, const struct tu_pbuf *d)
{
	static const uint64_t ids[2] = { 1, 2 };
	const char *const names[2] = { "cycles", measured };

	a[0].type = PERF_TYPE_HARDWARE;
	a[0].config = PERF_COUNT_HW_CPU_CYCLES;
	a[0].sample_period = TU_CHASE_CYC_PERIOD;
	for (int i = 0; i < 2; i++) {
		a[i].size = sizeof(a[i]);
		a[i].sample_type |= PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	}
	out->n = 0;
	tu_put_perf_head(out, a, ids, 2, d->n, 1ull << 12);
	tu_put(out, d->b, d->n);
	tu_put_event_desc(out, a, names, ids, 2);
}

/* A measuring event of the chase's perf.data: its attribute (id 2; size,
 * identifier, IP and TID are added), its name, and what writes its samples
 * after the cycles samples. */
struct tu_chase_event {
	struct perf_event_attr attr;
	const char *name;
	void (*samples)(struct tu_pbuf *d, const struct tu_chase *c);
};

/* The chase bin's perf.data into out: cycles, and the samples of m. */
static inline void tu_chase_perf(const char *bin, const struct tu_chase_event *m,
				 struct tu_pbuf *out)
{
	static struct tu_pbuf d;
	struct perf_event_attr a[2];
	struct tu_chase c;

	tu_chase_find(bin, &c);
	memset(a, 0, sizeof(a));
	a[1] = m->attr;
	d.n = 0;
	tu_chase_start(&d, bin, &c);
	m->samples(&d, &c);
	tu_chase_file(out, a, m->name, &d);
}

/* Build the chase in a workspace named kind, write its perf.data with the
 * measuring event m (tu_chase_perf), import it (the importer must say `imported`), and check that
 * `dcpicalc --summary walk` puts the stall on the D-cache, measured, DRAM,
 * at TU_CHASE_LAT; prof is the measured latency profile's event name. */
static inline void tu_chase_summary(const char *kind, const struct tu_chase_event *m,
				    const char *imported, const char *prof)
{
	const char *src = getenv("DCPI_SRC"), *dcpi = getenv("DCPI_BIN");
	static struct tu_pbuf pd;
	char dir[256], bin[400], data[400], out[400];
	FILE *f;

	if (!dcpi)
		skip();
	assert_int_equal(tu_workspace(dir, sizeof(dir), kind), 0);
	snprintf(bin, sizeof(bin), "%s/chase", dir);
	assert_int_equal(tu_sh("cc -std=gnu11 -O2 -g -no-pie -o '%s' '%s/tests/workloads/chase.c'",
			       bin, src ? src : "."), 0);
	tu_chase_perf(bin, m, &pd);
	snprintf(data, sizeof(data), "%s/%s.data", dir, kind);
	f = fopen(data, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(pd.b, 1, pd.n, f), pd.n);
	assert_int_equal(fclose(f), 0);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	assert_int_equal(tu_sh("'%s' import --db '%s/db' '%s' >'%s' 2>&1", dcpi, dir, data, out),
			 0);
	assert_int_equal(tu_sh("grep -q '%s' '%s'", imported, out), 0);
	assert_int_equal(tu_sh("ls '%s'/db/*/*.%s.prof '%s'/db/*/*.values >/dev/null",
			       dir, prof, dir), 0);
	assert_int_equal(tu_sh("'%s' calc --db '%s/db' --summary walk >'%s' 2>&1", dcpi, dir, out),
			 0);
	tu_sh("cat '%s'", out);
	/* the measured line, and the D-cache with the largest likeliest share */
	assert_int_equal(tu_sh("grep -q 'D-cache misses measured (IBS op / PEBS samples): "
			       "1.6e+05, %d cycles each (mean measured latency), 100%% from DRAM' "
			       "'%s'", TU_CHASE_LAT, out), 0);
	assert_int_equal(tu_sh("awk '/by cause/ { on = 1; next } /^\\*\\*\\*/ { on = 0 } "
			       "on { s = $NF + 0; if (s > best) { best = s; who = $1 } } "
			       "END { exit who != \"D-cache\" }' '%s'", out), 0);
	assert_int_equal(tu_sh("rm -rf '%s'", dir), 0);
}

#endif /* DCPI_TU_PERF_H */
