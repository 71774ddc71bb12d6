/*
 * bench/fleet_gen.c - a simulated fleet from real recordings: HOSTS host
 * databases of EPOCHS epochs each, every epoch the samples of one recorded
 * epoch (taken in turn, each host from a different one) with the counts
 * scaled per host (0.5x-1.5x, the host's share of the load), per epoch (0.7x-1.3x, the time of day) and per
 * entry (0.8x-1.2x, sampling noise), entries that fall to zero left out;
 * each host with its own calibration (cycles per unit and per ns within 3%)
 * and CPU name, epochs a minute apart.  Deterministic for a seed.  Used by
 * tests/test_fleet_sim.c and bench/bench_fleet.sh (docs/fleet.md).
 *
 * usage: fleet_gen SRC_DB OUT_DIR HOSTS EPOCHS [SEED]
 * writes OUT_DIR/host000 ... (OUT_DIR must not exist) and prints the rows
 * (offsets) and samples written.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/profile.h"

struct src {
	struct prof_profile **p;	/* per source epoch */
	size_t *n;
	struct prof_epoch_meta *m;
	int *has_meta;
	size_t epochs;
};

static uint64_t rng_state = 88172645463325252ull;

static double uniform(double lo, double hi)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static int read_src(const char *dir, struct src *s, struct dcpi_err *err)
{
	struct prof_db *db = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc = prof_db_open(dir, 0, &db, err);

	if (!rc)
		rc = prof_db_epochs(db, &names, &n, err);
	if (!rc && !n)
		rc = dcpi_errf(err, -ENOENT, "%s: no epochs", dir);
	if (!rc) {
		s->p = calloc(n, sizeof(*s->p));
		s->n = calloc(n, sizeof(*s->n));
		s->m = calloc(n, sizeof(*s->m));
		s->has_meta = calloc(n, sizeof(*s->has_meta));
		if (!s->p || !s->n || !s->m || !s->has_meta)
			rc = dcpi_errf(err, -ENOMEM, "out of memory");
	}
	for (size_t e = 0; !rc && e < n; e++) {
		rc = prof_epoch_read(db, names[e], &s->p[e], &s->n[e], err);
		s->epochs = e + 1;
		if (!rc)
			s->has_meta[e] = !prof_epoch_meta_read(db, names[e], &s->m[e], err);
		dcpi_err_clear(err);
	}
	prof_names_free(names, n);
	if (db)
		prof_db_close(db);
	return rc;
}

/* One profile of a host's epoch: the source's counts times scale and noise. */
static int noisy(const struct prof_profile *from, double scale, double cpu,
		 struct prof_profile *to)
{
	prof_profile_init(to);
	to->image = from->image;
	memcpy(to->event, from->event, sizeof(to->event));
	memcpy(to->period_unit, from->period_unit, sizeof(to->period_unit));
	to->period = from->period;
	to->cycles_per_unit = from->cycles_per_unit * cpu;
	for (size_t i = 0; i < from->n; i++) {
		uint64_t c = (uint64_t)llround((double)from->e[i].count * scale *
					       uniform(0.8, 1.2));

		if (c && prof_profile_add(to, from->e[i].offset, c) < 0)
			return -ENOMEM;
	}
	return prof_profile_normalize(to);
}

static int write_epoch(struct prof_db *db, const struct src *s, size_t se, int host, int e,
		       double scale, double cpu, uint64_t *rows, uint64_t *samples,
		       struct dcpi_err *err)
{
	struct prof_epoch_meta m = s->m[se];
	char name[64];
	int rc = prof_db_epoch_new(db, name, sizeof(name), err);

	m.samples = 0;
	for (size_t i = 0; !rc && i < s->n[se]; i++) {
		struct prof_profile p;

		rc = noisy(&s->p[se][i], scale, cpu, &p);
		if (rc < 0)
			rc = dcpi_errf(err, rc, "out of memory");
		if (!rc && p.n)
			rc = prof_epoch_write(db, name, &p, err);
		*rows += p.n;
		m.samples += p.total;
		prof_profile_free(&p);
	}
	*samples += m.samples;
	if (rc || !s->has_meta[se])
		return rc;
	snprintf(m.cpu_name, sizeof(m.cpu_name), "%.40s (host%03d)", s->m[se].cpu_name, host);
	m.cycles_per_ns *= cpu;
	m.start_ns = 1700000000000000000ull + (uint64_t)e * 60000000000ull +
		     (uint64_t)host * 1000000ull;
	m.end_ns = m.start_ns + 60000000000ull;
	return prof_epoch_meta_write(db, name, &m, err);
}

static int gen_host(const char *out, const struct src *s, int host, int epochs,
		    uint64_t *rows, uint64_t *samples, struct dcpi_err *err)
{
	struct prof_db *db = NULL;
	double load = uniform(0.5, 1.5), cpu = uniform(0.97, 1.03);
	char dir[4096];
	int rc;

	snprintf(dir, sizeof(dir), "%s/host%03d", out, host);
	rc = prof_db_open(dir, PROF_DB_CREATE, &db, err);
	for (int e = 0; !rc && e < epochs; e++)
		rc = write_epoch(db, s, (size_t)(e + host) % s->epochs, host, e,
				 load * uniform(0.7, 1.3), cpu, rows, samples, err);
	if (db)
		prof_db_close(db);
	return rc;
}

int main(int argc, char **argv)
{
	struct dcpi_err err = { 0 };
	struct src s = { 0 };
	uint64_t rows = 0, samples = 0;
	int hosts, epochs, rc = 0;

	if (argc < 5 || argc > 6 || (hosts = atoi(argv[3])) <= 0 || (epochs = atoi(argv[4])) <= 0) {
		fprintf(stderr, "usage: fleet_gen SRC_DB OUT_DIR HOSTS EPOCHS [SEED]\n");
		return 2;
	}
	if (argc == 6)
		rng_state ^= strtoull(argv[5], NULL, 0) * 0x9e3779b97f4a7c15ull;
	if (mkdir(argv[2], 0700) < 0) {
		fprintf(stderr, "fleet_gen: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	rc = read_src(argv[1], &s, &err);
	for (int h = 0; !rc && h < hosts; h++)
		rc = gen_host(argv[2], &s, h, epochs, &rows, &samples, &err);
	for (size_t e = 0; e < s.epochs; e++)
		prof_profiles_free(s.p[e], s.n[e]);
	free(s.p);
	free(s.n);
	free(s.m);
	free(s.has_meta);
	if (rc) {
		fprintf(stderr, "fleet_gen: %s\n", err.msg);
		return 1;
	}
	printf("%d hosts x %d epochs: %" PRIu64 " rows, %" PRIu64 " samples\n", hosts, epochs,
	       rows, samples);
	return 0;
}
