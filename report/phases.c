/*
 * report/phases.c - an epoch's time slices read back (include/dcpi/
 * timeline.h): the phases between the boundaries the collector declared
 * (collect/phase.c), a time range or a phase as slices, the epoch's
 * profiles restricted to them (so every report can take --time or
 * --phase), and dcpiprof --phases.  Times are seconds from the start of
 * the epoch's first slice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/report.h"
#include "dcpi/timeline.h"

void rep_slices_free(struct rep_slices *s)
{
	slice_profiles_free(s->p, s->n);
	free(s->b);
	memset(s, 0, sizeof(*s));
}

static int union_bounds(struct rep_slices *s)
{
	size_t cap = 0, k = 0;

	for (size_t i = 0; i < s->n; i++)
		cap += s->p[i].nb;
	if (cap && !(s->b = malloc(cap * sizeof(*s->b))))
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->p[i].nb; j++)
			s->b[k++] = s->p[i].b[j];
	s->nb = k;
	/* sort and OR duplicates, as a profile's own are */
	{
		struct slice_profile t = { .b = s->b, .nb = k, .capb = cap };

		slice_normalize(&t);
		s->nb = t.nb;
	}
	return 0;
}

int rep_slices_load(struct prof_db *db, const char *epoch, struct rep_slices *s,
		    struct dcpi_err *err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = slice_epoch_read(db, epoch, &s->p, &s->n, err);
	if (rc)
		return rc;
	s->first = UINT64_MAX;
	for (size_t i = 0; i < s->n; i++) {
		const struct slice_profile *p = &s->p[i];

		if (s->slice_ns && (p->slice_ns != s->slice_ns || strcmp(p->event, s->event))) {
			rc = dcpi_errf(err, -EINVAL, "%s/%s: slices of %s at %" PRIu64 " ns beside "
				       "%s at %" PRIu64 " ns", prof_db_path(db), epoch, p->event,
				       p->slice_ns, s->event, s->slice_ns);
			break;
		}
		s->slice_ns = p->slice_ns;
		snprintf(s->event, sizeof(s->event), "%s", p->event);
		if (p->n && p->e[0].slice < s->first)
			s->first = p->e[0].slice;
		if (p->n && p->e[p->n - 1].slice > s->last)
			s->last = p->e[p->n - 1].slice;
	}
	if (!rc && s->first == UINT64_MAX)
		rc = dcpi_errf(err, -ENOENT, "%s/%s: no time slices (recorded with --no-slices, "
			       "or imported)", prof_db_path(db), epoch);
	if (!rc && union_bounds(s))
		rc = dcpi_errf(err, -ENOMEM, "%s/%s: out of memory", prof_db_path(db), epoch);
	if (rc)
		rep_slices_free(s);
	return rc;
}

double rep_slice_seconds(const struct rep_slices *s, uint64_t k)
{
	return (double)(k - s->first) * (double)s->slice_ns / 1e9;
}

int rep_phases(const struct rep_slices *s, unsigned rules, struct rep_phase **out,
	       size_t *n, struct dcpi_err *err)
{
	struct rep_phase *v = malloc((s->nb + 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return dcpi_errf(err, -ENOMEM, "phases: out of memory");
	v[k++] = (struct rep_phase){ s->first, s->last + 1, 0 };
	for (size_t i = 0; i < s->nb; i++) {
		const struct slice_bound *b = &s->b[i];

		if (!(b->rules & rules) || b->slice <= v[k - 1].first || b->slice > s->last)
			continue;
		v[k - 1].end = b->slice;
		v[k++] = (struct rep_phase){ b->slice, s->last + 1, b->rules & rules };
	}
	*out = v;
	*n = k;
	return 0;
}

static int parse_seconds(const char *t, double *v)
{
	char *end;

	*v = strtod(t, &end);
	return end == t || *v < 0;
}

int rep_time_range(const struct rep_slices *s, const char *time, long phase,
		   uint64_t *from, uint64_t *to, struct dcpi_err *err)
{
	const char *dash = time ? strchr(time, '-') : NULL;
	char a[64] = "";
	double lo = 0, hi = 1e18;

	*from = s->first;
	*to = s->last + 1;
	if (phase > 0) {
		struct rep_phase *v;
		size_t n;
		int rc = rep_phases(s, SLICE_RULE_INVERSION, &v, &n, err);

		if (rc)
			return rc;
		if ((size_t)phase > n) {
			free(v);
			return dcpi_errf(err, -EINVAL, "--phase %ld: the epoch has %zu phases",
					 phase, n);
		}
		*from = v[phase - 1].first;
		*to = v[phase - 1].end;
		free(v);
		return 0;
	}
	if (!dash || (size_t)(dash - time) >= sizeof(a))
		return dcpi_errf(err, -EINVAL, "--time %s: not A-B (seconds)", time ? time : "");
	memcpy(a, time, (size_t)(dash - time));
	if ((a[0] && parse_seconds(a, &lo)) || (dash[1] && parse_seconds(dash + 1, &hi)) ||
	    hi <= lo)
		return dcpi_errf(err, -EINVAL, "--time %s: not A-B with 0 <= A < B (seconds)",
				 time);
	/* the slices that overlap [lo, hi) */
	*from = s->first + (uint64_t)(lo * 1e9 / (double)s->slice_ns);
	if (hi * 1e9 / (double)s->slice_ns < (double)(s->last + 1 - s->first))
		*to = s->first + (uint64_t)(hi * 1e9 / (double)s->slice_ns + 0.999999);
	if (*to > s->last + 1)
		*to = s->last + 1;
	if (*from >= *to)
		return dcpi_errf(err, -EINVAL, "--time %s: past the epoch's %.1f s", time,
				 rep_slice_seconds(s, s->last + 1));
	return 0;
}

int rep_slices_window(const struct rep_slices *s, uint64_t from, uint64_t to,
		      const struct prof_profile *in, size_t nin, struct prof_profile **out,
		      size_t *nout, size_t *dropped, struct dcpi_err *err)
{
	return slice_window(s->p, s->n, from, to, in, nin, out, nout, dropped, err);
}

void rep_phase_core(const struct rep_phase *ph, size_t i, size_t nph, uint64_t *from,
		    uint64_t *to)
{
	*from = ph[i].first + (i > 0);
	*to = ph[i].end - (i + 1 < nph);
	if (*from >= *to) {
		*from = ph[i].first;
		*to = ph[i].end;
	}
}

int rep_phase_top(const struct rep_slices *s, const struct prof_profile *p, size_t n,
		  uint64_t from, uint64_t to, struct rep_table *t, struct dcpi_err *err)
{
	struct prof_profile *w;
	size_t nw, dropped;
	int rc = rep_slices_window(s, from, to, p, n, &w, &nw, &dropped, err);

	memset(t, 0, sizeof(*t));
	if (rc)
		return rc;
	rc = rep_summarize(w, nw, 0, t, err);
	if (!rc && t->nevents)
		rep_sort(t, 0);
	prof_profiles_free(w, nw);
	return rc;
}

/* phase i: its range, and the top procedures of its core [from, to) */
static void print_phase(FILE *f, const struct rep_slices *s, const struct rep_phase *ph,
			size_t i, uint64_t from, uint64_t to, const struct rep_table *t, int json,
			size_t top)
{
	uint64_t tot = t->nevents ? t->events[0].total : 0;
	size_t nr = t->nevents && t->nrows < top ? t->nrows : t->nevents ? top : 0;

	if (json) {
		fprintf(f, "%s\n  {\"phase\": %zu, \"start\": %.3f, \"end\": %.3f, "
			"\"top_start\": %.3f, \"top_end\": %.3f, \"samples\": %" PRIu64
			", \"top\": [", i ? "," : "", i + 1, rep_slice_seconds(s, ph->first),
			rep_slice_seconds(s, ph->end), rep_slice_seconds(s, from),
			rep_slice_seconds(s, to), tot);
		for (size_t r = 0; r < nr; r++) {
			fprintf(f, "%s{\"name\": ", r ? ", " : "");
			rep_json_str(f, t->rows[r].name);
			fprintf(f, ", \"samples\": %" PRIu64 "}", t->rows[r].samples[0]);
		}
		fprintf(f, "]}");
		return;
	}
	fprintf(f, "phase %zu  %8.3f s - %8.3f s  %10" PRIu64 " samples%s", i + 1,
		rep_slice_seconds(s, ph->first), rep_slice_seconds(s, ph->end), tot,
		ph->rules ? "" : "  (epoch start)");
	if (from != ph->first || to != ph->end)
		fprintf(f, "  (top of %.3f-%.3f s: edge slices hold both phases)",
			rep_slice_seconds(s, from), rep_slice_seconds(s, to));
	fputc('\n', f);
	for (size_t r = 0; r < nr; r++)
		fprintf(f, "    %10" PRIu64 " %6.2f%%  %s\n", t->rows[r].samples[0],
			tot ? 100.0 * (double)t->rows[r].samples[0] / (double)tot : 0.0,
			t->rows[r].name);
}

int rep_phases_print(FILE *f, const struct rep_slices *s, const struct prof_profile *p,
		     size_t n, int json, size_t top, struct dcpi_err *err)
{
	struct rep_phase *ph;
	size_t nph;
	int rc = rep_phases(s, SLICE_RULE_INVERSION, &ph, &nph, err);

	if (rc)
		return rc;
	if (json) {
		fprintf(f, "{\"slice\": %.3f, \"event\": ", (double)s->slice_ns / 1e9);
		rep_json_str(f, s->event);
		fprintf(f, ", \"phases\": [");
	} else {
		fprintf(f, "%zu phases in %.3f s of %s samples (slices of %.3f s)\n", nph,
			rep_slice_seconds(s, s->last + 1), s->event, (double)s->slice_ns / 1e9);
	}
	for (size_t i = 0; i < nph && !rc; i++) {
		struct rep_table t;
		uint64_t from, to;

		rep_phase_core(ph, i, nph, &from, &to);
		rc = rep_phase_top(s, p, n, from, to, &t, err);
		if (!rc)
			print_phase(f, s, &ph[i], i, from, to, &t, json, top);
		rep_free(&t);
	}
	if (json && !rc)
		fprintf(f, "\n]}\n");
	free(ph);
	return rc;
}

int rep_prof_by_time(FILE *f, struct prof_db *db, const char *epoch, int phases,
		     const char *time, long phase, long limit, int json,
		     struct prof_profile **p, size_t *n, int *done, size_t *dropped,
		     struct dcpi_err *err)
{
	struct rep_slices s;
	struct prof_profile *w;
	uint64_t from, to;
	size_t nw;
	int rc = rep_slices_load(db, epoch, &s, err);

	*done = 0;
	*dropped = 0;
	if (!rc && phases) {
		*done = 1;
		rc = rep_phases_print(f, &s, *p, *n, json, limit >= 0 ? (size_t)limit : 5, err);
	} else if (!rc) {
		rc = rep_time_range(&s, time, phase, &from, &to, err);
		if (!rc)
			rc = rep_slices_window(&s, from, to, *p, *n, &w, &nw, dropped, err);
		if (!rc) {
			prof_profiles_free(*p, *n);
			*p = w;
			*n = nw;
		}
	}
	rep_slices_free(&s);
	return rc;
}
