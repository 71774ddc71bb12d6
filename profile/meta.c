/*
 * meta.c - epoch metadata: the text file "meta" of `key = value` lines in an
 * epoch directory (docs/profile-format.md), and how two epochs' metadata
 * merge.
 *
 * Text, so a person can read which machine and settings produced an epoch
 * and how many samples were lost (docs/architecture.md: nothing dropped silently).  The
 * reader ignores keys it does not know, so newer writers stay readable, and
 * rejects malformed lines with file:line.  Keys are described by a table.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/profile.h"
#include "internal.h"

#define META_FORMAT 1
#define META_NAME "meta"

enum meta_type { META_U64, META_UINT, META_BOOL, META_DOUBLE, META_STR };

struct meta_key {
	const char *key;
	enum meta_type type;
	size_t off, size;
};

#define KEY(k, t) { #k, t, offsetof(struct prof_epoch_meta, k), \
		    sizeof(((struct prof_epoch_meta *)0)->k) }

static const struct meta_key meta_keys[] = {
	KEY(cpu_vendor, META_STR),
	KEY(cpu_family, META_UINT),
	KEY(cpu_model, META_UINT),
	KEY(cpu_stepping, META_UINT),
	KEY(cpu_name, META_STR),
	KEY(cycles_per_ns, META_DOUBLE),
	KEY(cycles_per_sample, META_DOUBLE),
	KEY(calibrated, META_BOOL),
	KEY(clock_change, META_DOUBLE),
	KEY(settings, META_STR),
	KEY(start_ns, META_U64),
	KEY(end_ns, META_U64),
	KEY(lost_samples, META_U64),
	KEY(samples, META_U64),
	KEY(dropped_samples, META_U64),
	KEY(failed_flushes, META_U64),
	KEY(canary_alone, META_DOUBLE),
	KEY(canary_cycles, META_DOUBLE),
	KEY(canary_sd, META_DOUBLE),
	KEY(canary_shared, META_DOUBLE),
	KEY(canary_bursts, META_U64),
	KEY(exposure_witness, META_U64),
	KEY(exposure_samples, META_U64),
	KEY(exposure_cycles_step, META_DOUBLE),
};

#define N_KEYS (sizeof(meta_keys) / sizeof(meta_keys[0]))

/* Append to a growing text buffer; -ENOMEM on failure. */
struct text {
	char *s;
	size_t len, cap;
};

static int text_grow(struct text *t, size_t more)
{
	return dcpi_grow((void **)&t->s, &t->cap, t->len + more + 1, 1);
}

static int text_addf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int text_addf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || text_grow(t, (size_t)n))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
	return 0;
}

/* A double-quoted string with \\ \" \n \r \t and \xHH escapes. */
static int text_add_quoted(struct text *t, const char *s)
{
	int rc = text_addf(t, "\"");

	for (const unsigned char *c = (const unsigned char *)s; *c && !rc; c++) {
		if (*c == '\\' || *c == '"')
			rc = text_addf(t, "\\%c", *c);
		else if (*c == '\n')
			rc = text_addf(t, "\\n");
		else if (*c == '\r')
			rc = text_addf(t, "\\r");
		else if (*c == '\t')
			rc = text_addf(t, "\\t");
		else if (*c < 0x20 || *c == 0x7f)
			rc = text_addf(t, "\\x%02x", *c);
		else
			rc = text_addf(t, "%c", *c);
	}
	return rc ? rc : text_addf(t, "\"");
}

static int meta_format(const struct prof_epoch_meta *m, struct text *t)
{
	int rc = text_addf(t, "# dcpi epoch metadata (docs/profile-format.md)\n"
			   "format = %d\n", META_FORMAT);

	for (size_t i = 0; i < N_KEYS && !rc; i++) {
		const struct meta_key *k = &meta_keys[i];
		const char *f = (const char *)m + k->off;

		rc = text_addf(t, "%s = ", k->key);
		if (rc)
			break;
		switch (k->type) {
		case META_U64:
			rc = text_addf(t, "%" PRIu64, *(const uint64_t *)f);
			break;
		case META_UINT:
			rc = text_addf(t, "%u", *(const unsigned *)f);
			break;
		case META_BOOL:
			rc = text_addf(t, "%d", *(const int *)f ? 1 : 0);
			break;
		case META_DOUBLE:	/* %.17g reads back to the same double */
			rc = text_addf(t, "%.17g", *(const double *)f);
			break;
		case META_STR:
			rc = text_add_quoted(t, f);
			break;
		}
		if (!rc)
			rc = text_addf(t, "\n");
	}
	return rc;
}

int prof_epoch_meta_write(struct prof_db *db, const char *epoch,
			  const struct prof_epoch_meta *m, struct dcpi_err *err)
{
	struct text t = { 0 };
	int rc = meta_format(m, &t);

	if (rc)
		rc = dcpi_errf(err, rc, "%s/%s/%s: out of memory", prof_db_path(db), epoch,
			       META_NAME);
	else
		rc = prof_epoch_write_file(db, epoch, META_NAME, t.s, t.len, err);
	free(t.s);
	return rc;
}

/* Parse a quoted string value into out; the reason on failure. */
static const char *parse_quoted(const char *v, char *out, size_t cap)
{
	size_t k = 0;

	if (*v++ != '"')
		return "string value must be double-quoted";
	for (; *v && *v != '"'; v++) {
		int c = (unsigned char)*v;

		if (c == '\\') {
			switch (*++v) {
			case '\\': c = '\\'; break;
			case '"': c = '"'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'x':
				if (dcpi_hexval(v[1]) < 0 || dcpi_hexval(v[2]) < 0)
					return "bad \\x escape";
				c = dcpi_hexval(v[1]) * 16 + dcpi_hexval(v[2]);
				v += 2;
				break;
			default:
				return "bad escape in string";
			}
			if (c == 0)
				return "NUL in string";
		}
		if (k + 1 >= cap)
			return "string too long";
		out[k++] = (char)c;
	}
	if (*v != '"' || v[1])
		return "unterminated string or text after it";
	out[k] = '\0';
	return NULL;
}

static const char *parse_u64(const char *v, uint64_t *out)
{
	char *end;

	if (*v < '0' || *v > '9')
		return "expected an unsigned integer";
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || *end)
		return "expected an unsigned integer";
	return NULL;
}

static const char *parse_value(const struct meta_key *k, const char *v, void *field)
{
	const char *why;
	uint64_t u;
	double d;
	char *end;

	switch (k->type) {
	case META_U64:
		return parse_u64(v, field);
	case META_UINT:
		if ((why = parse_u64(v, &u)))
			return why;
		if (u > UINT_MAX)
			return "value out of range";
		*(unsigned *)field = (unsigned)u;
		return NULL;
	case META_BOOL:
		if (strcmp(v, "0") && strcmp(v, "1"))
			return "expected 0 or 1";
		*(int *)field = v[0] == '1';
		return NULL;
	case META_DOUBLE:
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(d) || d < 0)
			return "expected a finite non-negative number";
		*(double *)field = d;
		return NULL;
	case META_STR:
		return parse_quoted(v, field, k->size);
	}
	return "unknown type";
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int valid_key(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_'))
			return 0;
	return 1;
}

/* One line: 0, or the reason it is malformed. */
static const char *parse_line(char *line, struct prof_epoch_meta *m, unsigned *seen,
			      int *format)
{
	char *eq, *key, *val;
	const char *why;
	uint64_t u;

	line = trim(line);
	if (!*line || *line == '#')
		return NULL;
	eq = strchr(line, '=');
	if (!eq)
		return "expected `key = value`";
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	if (!valid_key(key))
		return "bad key (lower-case letters, digits and _ only)";
	if (!strcmp(key, "format")) {
		if (*format)
			return "duplicate key format";
		if ((why = parse_u64(val, &u)))
			return why;
		if (u != META_FORMAT)
			return "unsupported meta format";
		*format = 1;
		return NULL;
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(key, meta_keys[i].key))
			continue;
		if (*seen & (1u << i))
			return "duplicate key";
		*seen |= 1u << i;
		return parse_value(&meta_keys[i], val, (char *)m + meta_keys[i].off);
	}
	return NULL;	/* a key from a newer writer */
}

static int meta_parse(char *text, size_t len, const char *path, struct prof_epoch_meta *m,
		      struct dcpi_err *err)
{
	unsigned seen = 0, lineno = 0;
	int format = 0;
	char *line = text, *end = text + len;

	if (memchr(text, '\0', len))
		return dcpi_errf(err, -EINVAL, "%s: NUL byte in a text file", path);
	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *why;

		if (nl)
			*nl = '\0';
		lineno++;
		why = parse_line(line, m, &seen, &format);
		if (why)
			return dcpi_errf(err, -EINVAL, "%s:%u: %s", path, lineno, why);
		if (!nl)
			break;
		line = nl + 1;
	}
	if (!format)
		return dcpi_errf(err, -EINVAL, "%s: missing `format = %d` line", path,
				 META_FORMAT);
	return 0;
}

int prof_epoch_meta_read(struct prof_db *db, const char *epoch,
			 struct prof_epoch_meta *m, struct dcpi_err *err)
{
	char path[PATH_MAX + 8];
	uint8_t *buf;
	size_t len;
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s/%s/%s", prof_db_path(db), epoch, META_NAME);
	rc = prof_epoch_read_file(db, epoch, META_NAME, &buf, &len, err);
	if (rc)
		return rc;
	if (!len)
		rc = dcpi_errf(err, -EINVAL, "%s: empty file (no `format = %d` line)", path,
			       META_FORMAT);
	else
		rc = meta_parse((char *)buf, len, path, m, err);
	free(buf);
	if (rc)
		memset(m, 0, sizeof(*m));
	return rc;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static int cpu_is_empty(const struct prof_epoch_meta *m)
{
	return !m->cpu_vendor[0] && !m->cpu_family && !m->cpu_model && !m->cpu_stepping &&
	       !m->cpu_name[0];
}

static int cpu_cmp(const struct prof_epoch_meta *a, const struct prof_epoch_meta *b)
{
	int c = strcmp(a->cpu_vendor, b->cpu_vendor);

	if (c)
		return c;
	c = dcpi_cmp_keys((uint64_t[]){ a->cpu_family, a->cpu_model, a->cpu_stepping },
			  (uint64_t[]){ b->cpu_family, b->cpu_model, b->cpu_stepping }, 3);
	return c ? c : strcmp(a->cpu_name, b->cpu_name);
}

/*
 * Every rule is commutative and associative with the all-zero meta as
 * identity: counts add, the span is min/max of the known ends, calibration
 * values are sample-weighted means, and of two different machines or
 * settings the one that sorts first is kept (mixing machines in one epoch
 * is legal but then the epoch describes only one of them).
 */
/* Two epochs' clock changes: the one farther from no change (their counts'
 * scale is as uncertain as the less steady of the two); either when the
 * other was not measured (0).  Commutative: a tie goes to the smaller. */
static double clock_change_combine(double a, double b)
{
	double la = a > 0 ? fabs(log(a)) : -1, lb = b > 0 ? fabs(log(b)) : -1;

	return la > lb || (la == lb && a < b) ? a : b;
}

void prof_meta_merge(struct prof_epoch_meta *dst, const struct prof_epoch_meta *src)
{
	double wa = (double)dst->samples, wb = (double)src->samples;

	if (cpu_is_empty(dst) || (!cpu_is_empty(src) && cpu_cmp(src, dst) < 0)) {
		memcpy(dst->cpu_vendor, src->cpu_vendor, sizeof(dst->cpu_vendor));
		dst->cpu_family = src->cpu_family;
		dst->cpu_model = src->cpu_model;
		dst->cpu_stepping = src->cpu_stepping;
		memcpy(dst->cpu_name, src->cpu_name, sizeof(dst->cpu_name));
	}
	if (!dst->settings[0] || (src->settings[0] && strcmp(src->settings, dst->settings) < 0))
		memcpy(dst->settings, src->settings, sizeof(dst->settings));
	dst->cycles_per_ns = prof_mean_combine(dst->cycles_per_ns, wa, src->cycles_per_ns, wb);
	dst->cycles_per_sample = prof_mean_combine(dst->cycles_per_sample, wa,
						   src->cycles_per_sample, wb);
	if (wa <= 0 && wb <= 0)
		dst->calibrated = dst->calibrated || src->calibrated;
	else if (wa <= 0)
		dst->calibrated = src->calibrated;
	else if (wb > 0)
		dst->calibrated = dst->calibrated && src->calibrated;
	dst->calibrated = !!dst->calibrated;
	dst->clock_change = clock_change_combine(dst->clock_change, src->clock_change);
	if (src->start_ns && (!dst->start_ns || src->start_ns < dst->start_ns))
		dst->start_ns = src->start_ns;
	if (src->end_ns > dst->end_ns)
		dst->end_ns = src->end_ns;
	wa = (double)dst->canary_bursts, wb = (double)src->canary_bursts;
	dst->canary_alone = prof_mean_combine(dst->canary_alone, wa, src->canary_alone, wb);
	dst->canary_cycles = prof_mean_combine(dst->canary_cycles, wa, src->canary_cycles, wb);
	dst->canary_sd = prof_mean_combine(dst->canary_sd, wa, src->canary_sd, wb);
	dst->canary_shared = prof_mean_combine(dst->canary_shared, wa, src->canary_shared, wb);
	dst->canary_bursts = add_sat(dst->canary_bursts, src->canary_bursts);
	wa = (double)dst->exposure_samples, wb = (double)src->exposure_samples;
	dst->exposure_cycles_step = prof_mean_combine(dst->exposure_cycles_step, wa,
						      src->exposure_cycles_step, wb);
	dst->exposure_witness = add_sat(dst->exposure_witness, src->exposure_witness);
	dst->exposure_samples = add_sat(dst->exposure_samples, src->exposure_samples);
	dst->lost_samples = add_sat(dst->lost_samples, src->lost_samples);
	dst->samples = add_sat(dst->samples, src->samples);
	dst->dropped_samples = add_sat(dst->dropped_samples, src->dropped_samples);
	dst->failed_flushes = add_sat(dst->failed_flushes, src->failed_flushes);
}
