/*
 * culprit/model/modelfile.c - model files: a shipped pipeline model refined by
 * numbers measured on one CPU (`dcpi calibrate --fit-model`), read back by every
 * tool on a machine with that CPU (DCPI paper sec. 6.1.3 needs the best case
 * of the machine that took the samples; docs/models.md "Model files").
 *
 * A model file is text, one directive a line, '#' to the end of a line a
 * comment:
 *
 *	dcpi-model 1
 *	cpu AuthenticAMD 26 2 0
 *	base zen5
 *	port alu6 measured 2026-11-23 by probe tp.add
 *	param load_lat 4 measured 2026-11-23 by probe lat.load
 *	class fadd lat 2 measured 2026-11-23 by probe lat.fadd
 *	class fadd ports fp2,fp3 shipped
 *
 * Whatever follows the value is its source, kept and shown by `dcpi model
 * --show`.  The model in memory is a copy of the base with the values set
 * through model_set_param / model_set_class, the same calls the fit makes,
 * so a model written and read back is the model that was written.
 */
#include <cpuid.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "model_tables.h"

#define SRC_MAX 96
#define LINE_MAX_LEN 512
#define FILE_MAX (1u << 20)
#define NFIELDS 4

static const char *const fields[NFIELDS] = { "lat", "uops", "ports", "busy" };

enum { P_INT, P_PORTS };

static const struct {
	const char *name;
	size_t off;
	int type, lo, hi;
} params[] = {
#define PI(f, lo, hi) { #f, offsetof(struct model, f), P_INT, lo, hi }
#define PP(f) { #f, offsetof(struct model, f), P_PORTS, 0, 0 }
	PI(dispatch_width, 1, 32), PI(retire_width, 1, 32), PI(rob_size, 8, 4096),
	PI(load_lat, 0, 64), PI(load_lat_fp, 0, 64), PI(load_lat_complex, 0, 16),
	PI(load_lat_sext, 0, 16), PI(store_imm_alu, 0, 1), PI(mul_hi_extra, 0, 8),
	PI(store_fwd_lat, 0, 64), PI(store_fwd_fail, 0, 64),
	PI(mem_rename, 0, 1), PI(move_elim, 0, 1), PI(taken_per_cycle, 0, 8),
	PI(loop_line_bytes, 0, 4096),
	PI(store_queue, 0, 1024), PI(store_pair_bytes, 0, 4096), PI(vec_pipe_bits, 0, 512),
	PI(mispredict_penalty, 0, 200), PI(l1_lat, 0, 100), PI(l2_lat, 0, 1000),
	PI(l3_lat, 0, 10000),
	PP(alu_ports), PP(branch_ports), PP(load_ports), PP(store_addr_ports),
	PP(store_data_ports), PP(fp_ports), PP(vec_load_ports), PP(vec_store_data_ports),
#undef PI
#undef PP
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

struct model_file_data {
	struct model m;			/* first: the model handed out */
	const struct model *base;
	struct model_class rows[MODEL_BASE_MAXROWS], fallback;
	char name[40], origin[256];
	char pnames[MODEL_MAX_PORTS][16];
	const char *pname_ptrs[MODEL_MAX_PORTS];
	char psrc[NPARAMS][SRC_MAX];
	char csrc[MC_COUNT][NFIELDS][SRC_MAX];
	char portsrc[MODEL_MAX_PORTS][SRC_MAX];
};

size_t model_param_count(void)
{
	return NPARAMS;
}

const char *model_param_name(size_t i)
{
	return i < NPARAMS ? params[i].name : NULL;
}

size_t model_class_count(void)
{
	return MC_COUNT;
}

const char *model_class_name(size_t i)
{
	return i < MC_COUNT ? model_base_classes[i].name : NULL;
}

const char *model_class_what(size_t i)
{
	return i < MC_COUNT ? model_base_classes[i].what : NULL;
}

static int param_index(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (!strcmp(params[i].name, name))
			return (int)i;
	return -1;
}

static int class_index(const char *name)
{
	for (int i = 0; i < MC_COUNT; i++)
		if (!strcmp(model_base_classes[i].name, name))
			return i;
	return -1;
}

static int field_index(const char *name)
{
	for (int i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i], name))
			return i;
	return -1;
}

const struct model_class *model_class_row(const struct model *m, const char *cls)
{
	if (!m || !cls)
		return NULL;
	if (!strcmp(cls, "unknown"))
		return m->fallback;
	for (size_t i = 0; i < m->nclasses; i++)
		if (m->classes[i].name && !strcmp(m->classes[i].name, cls))
			return &m->classes[i];
	return NULL;
}

void model_ports_text(const struct model *m, uint32_t ports, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (int p = 0; p < m->nports && p < 32; p++) {
		if (!(ports & (1u << p)))
			continue;
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
				      m->port_names[p]);
		if (o >= len)
			break;
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

void model_param_text(const struct model *m, size_t i, char *buf, size_t len)
{
	const int *v;

	if (i >= NPARAMS || !len)
		return;
	v = (const int *)((const char *)m + params[i].off);
	if (params[i].type == P_INT)
		snprintf(buf, len, "%d", *v);
	else
		model_ports_text(m, *(const uint32_t *)v, buf, len);
}

const struct model *model_base(const struct model *m)
{
	return m && m->file ? m->file->base : m;
}

const char *model_origin(const struct model *m)
{
	return m && m->file && m->file->origin[0] ? m->file->origin : NULL;
}

const char *model_param_source(const struct model *m, const char *param)
{
	int i = param_index(param);

	if (!m || !m->file || i < 0 || !m->file->psrc[i][0])
		return "shipped";
	return m->file->psrc[i];
}

const char *model_class_source(const struct model *m, const char *cls, const char *field)
{
	int c = class_index(cls), f = field_index(field);

	if (!m || !m->file || c < 0 || f < 0 || !m->file->csrc[c][f][0])
		return "shipped";
	return m->file->csrc[c][f];
}

struct model *model_copy(const struct model *base, const char *name, struct dcpi_err *err)
{
	struct model_file_data *d;

	if (!base) {
		dcpi_errf(err, -EINVAL, "model_copy: no base model");
		return NULL;
	}
	if (base->nclasses > MODEL_BASE_MAXROWS || base->nports > MODEL_MAX_PORTS) {
		dcpi_errf(err, -EINVAL, "model %s: too large to copy", base->name);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		dcpi_errf(err, -ENOMEM, "model %s: out of memory", base->name);
		return NULL;
	}
	d->m = *base;
	d->base = model_base(base);
	snprintf(d->name, sizeof(d->name), "%s", name ? name : base->name);
	d->m.name = d->name;
	memcpy(d->rows, base->classes, base->nclasses * sizeof(d->rows[0]));
	d->m.classes = d->rows;
	d->fallback = *base->fallback;
	d->m.fallback = &d->fallback;
	for (int p = 0; p < base->nports; p++) {
		snprintf(d->pnames[p], sizeof(d->pnames[p]), "%s", base->port_names[p]);
		d->pname_ptrs[p] = d->pnames[p];
	}
	d->m.port_names = d->pname_ptrs;
	if (base->file) {
		memcpy(d->psrc, base->file->psrc, sizeof(d->psrc));
		memcpy(d->csrc, base->file->csrc, sizeof(d->csrc));
		memcpy(d->portsrc, base->file->portsrc, sizeof(d->portsrc));
	}
	d->m.file = d;
	return &d->m;
}

void model_free(struct model *m)
{
	if (m && m->file)
		free(m->file);
}

static void set_src(char *dst, const char *src)
{
	snprintf(dst, SRC_MAX, "%s", *src ? src : "model file");
}

/* "alu0,alu1" or "none" -> port bits of m; -EINVAL on an unknown name. */
static int parse_ports(const struct model *m, const char *s, uint32_t *out)
{
	char buf[LINE_MAX_LEN], *tok, *save = NULL;

	*out = 0;
	if (!strcmp(s, "none"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int p;

		for (p = 0; p < m->nports; p++)
			if (!strcmp(m->port_names[p], tok))
				break;
		if (p == m->nports)
			return -EINVAL;
		*out |= 1u << p;
	}
	return *out ? 0 : -EINVAL;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int model_set_param(struct model *m, const char *param, const char *value, const char *src,
		    struct dcpi_err *err)
{
	int i = param_index(param), v;
	char *at;

	if (!m || !m->file)
		return dcpi_errf(err, -EINVAL, "param %s: model is not modifiable", param);
	if (i < 0)
		return dcpi_errf(err, -EINVAL, "no machine parameter %s", param);
	at = (char *)m + params[i].off;
	if (params[i].type == P_PORTS) {
		uint32_t p;

		if (parse_ports(m, value, &p) < 0)
			return dcpi_errf(err, -EINVAL, "param %s: %s is not a list of ports of %s",
					 param, value, m->name);
		memcpy(at, &p, sizeof(p));
	} else {
		if (parse_int(value, params[i].lo, params[i].hi, &v) < 0)
			return dcpi_errf(err, -EINVAL, "param %s: %s is not a number in %d..%d",
					 param, value, params[i].lo, params[i].hi);
		memcpy(at, &v, sizeof(v));
	}
	if (src)
		set_src(m->file->psrc[i], src);
	return 0;
}

static void set_field(struct model_class *r, int f, int v, uint32_t ports)
{
	switch (f) {
	case 0: r->lat = (uint8_t)v; break;
	case 1: r->uops = (uint8_t)v; break;
	case 2: r->ports = ports; break;
	default: r->busy = (uint8_t)v; break;
	}
}

/*
 * Turn on class c, which the base model does not use (zen5 has no lock
 * class): rebuild the rows in base order, so first-match stays right, with
 * the base class's values; a unit role the base CPU has no port for becomes a
 * port of its own, named after the class.
 */
static int use_class(struct model *m, int c, struct dcpi_err *err)
{
	const struct model_base_class *b = &model_base_classes[c];
	struct model_class v = { 0 }, rows[MODEL_BASE_MAXROWS];
	uint32_t ports = model_unit_ports(model_base(m), b->unit);
	size_t n = 0, nbase;
	const struct model_base_row *base = model_base_rows(&nbase);

	if (c == MC_UNKNOWN)
		return dcpi_errf(err, -EINVAL, "class %s: always used", b->name);
	for (int p = 0; !ports && b->unit != MODEL_U_NONE && p < m->nports; p++)
		if (!strcmp(m->port_names[p], b->name))
			ports = 1u << p;
	if (!ports && b->unit != MODEL_U_NONE) {
		int p = model_add_port(m, b->name, "model file", err);

		if (p < 0)
			return p;
		ports = 1u << p;
	}
	v.lat = b->lat, v.uops = b->uops, v.busy = b->busy, v.kind = b->kind;
	v.ports = ports;
	v.name = b->name;
	for (size_t i = 0; i < nbase; i++) {
		const struct model_base_row *r = &base[i];
		const struct model_class *have = r->cls == c ? &v :
			model_class_row(m, model_base_classes[r->cls].name);

		if (!have || have == m->fallback || n == MODEL_BASE_MAXROWS)
			continue;
		rows[n++] = model_row_of(r, have);
	}
	memcpy(m->file->rows, rows, n * sizeof(rows[0]));
	m->nclasses = n;
	return 0;
}

int model_set_class(struct model *m, const char *cls, const char *field, const char *value,
		    const char *src, struct dcpi_err *err)
{
	static const int lo[NFIELDS] = { 0, 0, 0, 1 }, hi[NFIELDS] = { 255, 16, 0, 255 };
	int c = class_index(cls), f = field_index(field), v = 0, hits = 0;
	uint32_t ports = 0;

	if (!m || !m->file)
		return dcpi_errf(err, -EINVAL, "class %s: model is not modifiable", cls);
	if (c < 0)
		return dcpi_errf(err, -EINVAL, "no instruction class %s", cls);
	if (f < 0)
		return dcpi_errf(err, -EINVAL, "class %s: no field %s (lat, uops, ports, busy)",
				 cls, field);
	if (f == 2 && parse_ports(m, value, &ports) < 0)
		return dcpi_errf(err, -EINVAL, "class %s: %s is not a list of ports of %s", cls,
				 value, m->name);
	if (f != 2 && parse_int(value, lo[f], hi[f], &v) < 0)
		return dcpi_errf(err, -EINVAL, "class %s %s: %s is not a number in %d..%d", cls,
				 field, value, lo[f], hi[f]);
	for (size_t i = 0; i < m->nclasses; i++)
		if (m->file->rows[i].name && !strcmp(m->file->rows[i].name, cls))
			set_field(&m->file->rows[i], f, v, ports), hits++;
	if (c == MC_UNKNOWN)
		set_field(&m->file->fallback, f, v, ports), hits++;
	if (!hits) {
		int rc = use_class(m, c, err);

		if (rc < 0)
			return rc;
		return model_set_class(m, cls, field, value, src, err);
	}
	if (src)
		set_src(m->file->csrc[c][f], src);
	return 0;
}

int model_add_port(struct model *m, const char *name, const char *src, struct dcpi_err *err)
{
	int n;

	if (!m || !m->file)
		return dcpi_errf(err, -EINVAL, "port %s: model is not modifiable", name);
	n = m->nports;
	if (n >= MODEL_MAX_PORTS)
		return dcpi_errf(err, -E2BIG, "port %s: at most %d ports", name, MODEL_MAX_PORTS);
	if (!*name || strlen(name) >= sizeof(m->file->pnames[0]) || strchr(name, ','))
		return dcpi_errf(err, -EINVAL, "port %s: not a port name", name);
	for (int p = 0; p < n; p++)
		if (!strcmp(m->port_names[p], name))
			return dcpi_errf(err, -EEXIST, "port %s: already a port of %s", name,
					 m->name);
	snprintf(m->file->pnames[n], sizeof(m->file->pnames[n]), "%s", name);
	m->file->pname_ptrs[n] = m->file->pnames[n];
	set_src(m->file->portsrc[n], src ? src : "model file");
	m->nports = n + 1;
	return n;
}

/* ---- reading --------------------------------------------------------------- */

struct reader {
	const char *name;
	int line;
	int version, have_cpu;
	struct model_cpuid cpu;
	const struct model_cpuid *want;
	struct model *m;
	struct dcpi_err *err;
};

/* Split line into at most max words; the rest after word max-1's end in *rest. */
static int split(char *line, char **w, int max, char **rest)
{
	int n = 0;
	char *p = line;

	*rest = NULL;
	while (n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		w[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (!*p)
			break;
		*p++ = 0;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p)
		*rest = p;
	return n;
}

static int bad(struct reader *r, const char *why, const char *what)
{
	return dcpi_errf(r->err, -EINVAL, "%s:%d: %s%s%s", r->name, r->line, why,
			 what ? ": " : "", what ? what : "");
}

static int cpu_matches(const struct model_cpuid *a, const struct model_cpuid *b)
{
	return !strcmp(a->vendor, b->vendor) && a->family == b->family &&
	       a->model == b->model && a->stepping == b->stepping;
}

static int do_cpu(struct reader *r, char **w, int n)
{
	int fam, mod, step;

	if (n != 5 || strlen(w[1]) >= sizeof(r->cpu.vendor) ||
	    parse_int(w[2], 0, 0xfff, &fam) < 0 || parse_int(w[3], 0, 0xfff, &mod) < 0 ||
	    parse_int(w[4], 0, 0xff, &step) < 0)
		return bad(r, "expected cpu VENDOR FAMILY MODEL STEPPING", NULL);
	snprintf(r->cpu.vendor, sizeof(r->cpu.vendor), "%s", w[1]);
	r->cpu.family = (unsigned)fam;
	r->cpu.model = (unsigned)mod;
	r->cpu.stepping = (unsigned)step;
	r->have_cpu = 1;
	if (r->want && !cpu_matches(&r->cpu, r->want))
		return dcpi_errf(r->err, -ESRCH, "%s:%d: made for %s family %u model %u stepping %u,"
				 " this is %s family %u model %u stepping %u", r->name, r->line,
				 r->cpu.vendor, r->cpu.family, r->cpu.model, r->cpu.stepping,
				 r->want->vendor, r->want->family, r->want->model,
				 r->want->stepping);
	return 0;
}

static int do_base(struct reader *r, char **w, int n)
{
	const struct model *b;
	char name[48];

	if (n != 2)
		return bad(r, "expected base MODEL", NULL);
	if (r->m)
		return bad(r, "second base line", NULL);
	b = model_shipped_by_name(w[1]);
	if (!b)
		return bad(r, "no shipped model", w[1]);
	snprintf(name, sizeof(name), "%s-calibrated", b->name);
	r->m = model_copy(b, name, r->err);
	return r->m ? 0 : -ENOMEM;
}

/* A value directive's error, prefixed with where it is. */
static int here(struct reader *r, int rc)
{
	char msg[sizeof(r->err->msg)];

	if (rc >= 0)
		return rc;
	snprintf(msg, sizeof(msg), "%s", r->err->msg);
	return dcpi_errf(r->err, rc, "%s:%d: %s", r->name, r->line, msg);
}

/* Words a directive takes before its source text. */
static int directive_words(const char *d)
{
	if (!strcmp(d, "dcpi-model") || !strcmp(d, "base") || !strcmp(d, "port"))
		return 2;
	if (!strcmp(d, "param"))
		return 3;
	if (!strcmp(d, "class"))
		return 4;
	if (!strcmp(d, "cpu"))
		return 5;
	return 1;
}

static int do_value(struct reader *r, char **w, int n, const char *rest)
{
	if (!r->m)
		return bad(r, "a base line must come first", NULL);
	if (rest && strlen(rest) >= SRC_MAX)
		return bad(r, "source text too long", NULL);
	if (!strcmp(w[0], "port"))
		return n < 2 ? bad(r, "expected port NAME [SOURCE]", NULL) :
		       here(r, model_add_port(r->m, w[1], rest ? rest : "model file", r->err));
	if (!strcmp(w[0], "param"))
		return n < 3 ? bad(r, "expected param NAME VALUE [SOURCE]", NULL) :
		       here(r, model_set_param(r->m, w[1], w[2], rest ? rest : "model file",
						r->err));
	return n < 4 ? bad(r, "expected class NAME FIELD VALUE [SOURCE]", NULL) :
	       here(r, model_set_class(r->m, w[1], w[2], w[3], rest ? rest : "model file",
				       r->err));
}

static int do_line(struct reader *r, char *line)
{
	char *w[6], *rest;
	int n, k;

	line[strcspn(line, "#")] = 0;
	n = split(line, w, 1, &rest);
	if (!n)
		return 0;
	k = directive_words(w[0]);
	if (rest)
		n += split(rest, w + 1, k - 1, &rest);
	if (!r->version) {
		if (strcmp(w[0], "dcpi-model") || n != 2 || rest)
			return bad(r, "not a dcpi model file (expected \"dcpi-model 1\")", NULL);
		if (parse_int(w[1], 1, 1000, &r->version) < 0 || r->version > MODEL_FILE_VERSION)
			return bad(r, "unsupported version", w[1]);
		return 0;
	}
	if (k == 1)
		return bad(r, "unknown directive", w[0]);
	if (!strcmp(w[0], "dcpi-model"))
		return bad(r, "second dcpi-model line", NULL);
	if (!strcmp(w[0], "cpu"))
		return rest ? bad(r, "trailing words after cpu", rest) : do_cpu(r, w, n);
	if (!strcmp(w[0], "base"))
		return rest ? bad(r, "trailing words after base", rest) : do_base(r, w, n);
	return do_value(r, w, n, rest);
}

int model_file_parse(const char *buf, size_t len, const char *name,
		     const struct model_cpuid *want, struct model **out, struct dcpi_err *err)
{
	struct dcpi_err local;
	struct reader r = { .name = name ? name : "model file", .want = want,
			    .err = err ? err : &local };
	char line[LINE_MAX_LEN + 2];
	size_t i = 0;
	int rc = 0;

	*out = NULL;
	err = r.err;
	if (len > FILE_MAX)
		return dcpi_errf(err, -EFBIG, "%s: larger than %u bytes", r.name, FILE_MAX);
	while (i < len && rc >= 0) {
		size_t n = 0;

		r.line++;
		while (i < len && buf[i] != '\n') {
			if (!buf[i] || n >= LINE_MAX_LEN) {
				rc = bad(&r, buf[i] ? "line too long" : "NUL byte", NULL);
				break;
			}
			line[n++] = buf[i++];
		}
		if (rc < 0)
			break;
		i++;
		line[n] = 0;
		rc = do_line(&r, line);
	}
	if (rc >= 0 && !r.version)
		rc = dcpi_errf(err, -EINVAL, "%s: empty, not a dcpi model file", r.name);
	else if (rc >= 0 && (!r.have_cpu || !r.m))
		rc = dcpi_errf(err, -EINVAL, "%s: no %s line", r.name, r.have_cpu ? "base" : "cpu");
	if (rc < 0) {
		model_free(r.m);
		return rc;
	}
	snprintf(r.m->file->origin, sizeof(r.m->file->origin), "%s", r.name);
	*out = r.m;
	return 0;
}

int model_file_read(const char *path, const struct model_cpuid *want, struct model **out,
		    struct dcpi_err *err)
{
	FILE *f;
	char *buf;
	size_t n;
	int rc;

	*out = NULL;
	f = dcpi_fopen_read(path, err);
	if (!f)
		return err && err->code ? err->code : -EIO;
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	}
	n = fread(buf, 1, FILE_MAX + 1, f);
	if (ferror(f))
		rc = dcpi_errf(err, -EIO, "%s: read error", path);
	else
		rc = model_file_parse(buf, n, path, want, out, err);
	fclose(f);
	free(buf);
	return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static void write_class(FILE *f, const struct model *m, int c)
{
	const struct model_class *r = model_class_row(m, model_base_classes[c].name);
	const char *name = model_base_classes[c].name;
	char ports[256];

	if (!r)
		return;
	model_ports_text(m, r->ports, ports, sizeof(ports));
	fprintf(f, "class %s lat %u %s\n", name, r->lat, model_class_source(m, name, "lat"));
	fprintf(f, "class %s uops %u %s\n", name, r->uops, model_class_source(m, name, "uops"));
	fprintf(f, "class %s ports %s %s\n", name, ports, model_class_source(m, name, "ports"));
	fprintf(f, "class %s busy %u %s\n", name, r->busy, model_class_source(m, name, "busy"));
}

static void write_model(FILE *f, const struct model *m, const struct model_cpuid *id)
{
	const struct model *b = model_base(m);
	char v[256];

	fprintf(f, "# dcpi model file (docs/models.md \"Model files\"): %s refined on this CPU\n"
		"dcpi-model %d\ncpu %s %u %u %u\nbase %s\n", b->name, MODEL_FILE_VERSION,
		id->vendor, id->family, id->model, id->stepping, b->name);
	for (int p = b->nports; p < m->nports; p++)
		fprintf(f, "port %s %s\n", m->port_names[p],
			m->file && m->file->portsrc[p][0] ? m->file->portsrc[p] : "model file");
	for (size_t i = 0; i < NPARAMS; i++) {
		model_param_text(m, i, v, sizeof(v));
		fprintf(f, "param %s %s %s\n", params[i].name, v,
			model_param_source(m, params[i].name));
	}
	for (int c = 0; c < MC_COUNT; c++)
		write_class(f, m, c);
}

int model_file_write(const char *path, const struct model *m, const struct model_cpuid *id,
		     struct dcpi_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	write_model(f, m, id);
	if (fclose(f)) {
		free(buf);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	}
	rc = dcpi_write_output(path, buf, len, 0644, err);
	free(buf);
	return rc;
}

/* ---- where, and this CPU ---------------------------------------------------- */

int model_cpuid_this(struct model_cpuid *id)
{
	unsigned a, b, c, d, base;

	memset(id, 0, sizeof(*id));
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return -ENOTSUP;
	memcpy(id->vendor, &b, 4);
	memcpy(id->vendor + 4, &d, 4);
	memcpy(id->vendor + 8, &c, 4);
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return -ENOTSUP;
	base = (a >> 8) & 0xf;
	id->family = base;
	id->model = (a >> 4) & 0xf;
	id->stepping = a & 0xf;
	if (base == 0xf)
		id->family += (a >> 20) & 0xff;
	if (base == 0xf || base == 6)
		id->model |= ((a >> 16) & 0xf) << 4;
	return 0;
}

int model_file_dir(char *buf, size_t len)
{
	const char *d = getenv("DCPI_MODEL_DIR"), *x = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n;

	if (d && *d)
		n = snprintf(buf, len, "%s", d);
	else if (x && *x)
		n = snprintf(buf, len, "%s/dcpi/models", x);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.local/share/dcpi/models", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int model_file_path(const struct model_cpuid *id, char *buf, size_t len)
{
	char dir[PATH_MAX];
	int rc = model_file_dir(dir, sizeof(dir)), n;

	if (rc < 0)
		return rc;
	n = snprintf(buf, len, "%s/%s-%u-%u-%u.model", dir, id->vendor, id->family, id->model,
		     id->stepping);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
