/*
 * culprit/model/model.c - the registry of pipeline models and the choice of one:
 * by name (`--model zen4`) or from CPUID (vendor, display family and model)
 * of the processor we run on.  The models themselves are data, one file per
 * microarchitecture: the base class table (model_base.c) and each CPU's
 * differences (model_zen5.c, ...), expanded here into the row tables the
 * classifier walks, once per process.  DCPI paper sec. 6.1.3.
 *
 * This machine's model file (modelfile.c), measured by `dcpi calibrate
 * --model`, wins over the shipped table it refines when its CPUID matches.
 * $DCPI_MODEL, when it names a shipped model (or is the path of a model
 * file), wins over both: hypervisors often
 * report an older family than the hardware (this project's Zen 5 VMs say
 * family 19h model 11h, a Zen 4 Genoa).
 */
#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_tables.h"

extern struct model model_zen5, model_zen4, model_zen3, model_skylake, model_generic;

static struct model *const models[] = {
	&model_zen5, &model_zen4, &model_zen3, &model_skylake, &model_generic,
};
static const struct model_cpu *const cpus[] = {
	&model_cpu_zen5, &model_cpu_zen4, &model_cpu_zen3, &model_cpu_skylake,
	&model_cpu_generic,
};
#define NMODELS (sizeof(models) / sizeof(models[0]))

static struct model_class rows[NMODELS][MODEL_BASE_MAXROWS], fallbacks[NMODELS];
static pthread_once_t expanded = PTHREAD_ONCE_INIT;

/* One class as cpu has it: the base's values with cpu's differences. */
static void class_values(const struct model_cpu *cpu, int c, struct model_class *out,
			 int *on)
{
	const struct model_base_class *b = &model_base_classes[c];
	int unit = b->unit;

	out->lat = b->lat;
	out->uops = b->uops;
	out->busy = b->busy;
	out->kind = b->kind;
	*on = !b->optional;
	for (size_t i = 0; i < cpu->ndelta; i++) {
		const struct model_delta *d = &cpu->delta[i];

		if (d->cls != c)
			continue;
		if (d->lat)
			out->lat = d->lat - 1;
		if (d->uops)
			out->uops = d->uops - 1;
		if (d->unit)
			unit = d->unit - 1;
		if (d->busy)
			out->busy = d->busy - 1;
		if (d->kind)
			out->kind = d->kind - 1;
		if (d->on)
			*on = d->on - 1;
	}
	out->ports = cpu->units[unit];
	out->name = b->name;
}

struct model_class model_row_of(const struct model_base_row *r, const struct model_class *v)
{
	struct model_class row = *v;

	row.pattern = r->pattern;
	row.forms = r->forms;
	row.min_vec = r->min_vec;
	row.max_vec = r->max_vec;
	row.need = r->need;
	row.avoid = r->avoid;
	return row;
}

void model_tables_expand(const struct model_cpu *cpu, struct model_class *out,
			 struct model_class *fallback)
{
	struct model_class v[MC_COUNT];
	int on[MC_COUNT];
	size_t n = 0, nbase;
	const struct model_base_row *base = model_base_rows(&nbase);

	for (int c = 0; c < MC_COUNT; c++)
		class_values(cpu, c, &v[c], &on[c]);
	for (size_t i = 0; i < nbase; i++) {
		const struct model_base_row *r = &base[i];

		if (!on[r->cls])
			continue;
		out[n++] = model_row_of(r, &v[r->cls]);
	}
	*fallback = v[MC_UNKNOWN];
	fallback->pattern = "?";
	fallback->max_vec = 512;
	cpu->m->classes = out;
	cpu->m->nclasses = n;
	cpu->m->fallback = fallback;
}

static void expand_all(void)
{
	for (size_t i = 0; i < NMODELS; i++)
		model_tables_expand(cpus[i], rows[i], &fallbacks[i]);
}

uint32_t model_unit_ports(const struct model *shipped, int unit)
{
	for (size_t i = 0; i < NMODELS; i++)
		if (models[i] == shipped && unit >= 0 && unit < MODEL_U_COUNT)
			return cpus[i]->units[unit];
	return 0;
}

static struct model *file_model;
static pthread_once_t file_once = PTHREAD_ONCE_INIT;
static void load_file_model(void);

const struct model *model_shipped_by_name(const char *name)
{
	if (!name)
		return NULL;
	pthread_once(&expanded, expand_all);
	for (size_t i = 0; i < NMODELS; i++)
		if (!strcmp(models[i]->name, name))
			return models[i];
	return NULL;
}

/* A shipped model, or this machine's model file's by its name ("zen5-calibrated"). */
const struct model *model_by_name(const char *name)
{
	const struct model *m = model_shipped_by_name(name);

	if (m || !name)
		return m;
	if (strchr(name, '-')) {
		pthread_once(&file_once, load_file_model);
		if (file_model && !strcmp(file_model->name, name))
			return file_model;
	}
	return NULL;
}

const char *model_name(const struct model *m)
{
	return m ? m->name : "none";
}

int model_loop_lines(const struct model *m, const uint64_t *lo, const uint64_t *hi, size_t n)
{
	uint64_t line = m && m->loop_line_bytes > 0 ? (uint64_t)m->loop_line_bytes : 0;
	int lines = 0;

	for (size_t i = 0; line && i < n; i++)
		if (hi[i] > lo[i])
			lines += (int)((hi[i] - 1) / line - lo[i] / line + 1);
	return lines;
}

size_t model_list(const char **names, size_t max)
{
	for (size_t i = 0; i < NMODELS && i < max; i++)
		names[i] = models[i]->name;
	return NMODELS;
}

/* AMD family 19h holds Zen 3 and Zen 4: Zen 4 models are 10h-1Fh, 60h-7Fh, A0h-AFh. */
static int is_zen4(unsigned model)
{
	return (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
	       (model >= 0xa0 && model <= 0xaf);
}

const struct model *model_for_cpuid(const char *vendor, unsigned family, unsigned model)
{
	pthread_once(&expanded, expand_all);
	if (vendor && !strcmp(vendor, "AuthenticAMD")) {
		if (family >= 0x1a)
			return &model_zen5;
		if (family == 0x19)
			return is_zen4(model) ? &model_zen4 : &model_zen3;
		if (family == 0x17)
			return &model_zen3;	/* Zen 1/2: the closest we describe */
		return &model_generic;
	}
	if (vendor && !strcmp(vendor, "GenuineIntel") && family == 6)
		return &model_skylake;	/* Skylake and its many derivatives */
	return &model_generic;
}

static char file_status[DCPI_ERR_MAX + 64];

/*
 * This machine's model file, once per process: $DCPI_MODEL when it is a path
 * (contains a '/'), else the file model_file_path names for this CPU.  A
 * missing file is no error; a bad one is kept in file_status.
 */
static void load_file_model(void)
{
	const char *env = getenv("DCPI_MODEL");
	struct dcpi_err err = { 0 };
	struct model_cpuid id;
	char path[4096];
	int rc;

	pthread_once(&expanded, expand_all);
	if (env && strchr(env, '/')) {
		rc = model_file_read(env, NULL, &file_model, &err);
	} else {
		if (model_cpuid_this(&id) < 0 || model_file_path(&id, path, sizeof(path)) < 0 ||
		    access(path, F_OK) < 0)
			return;
		rc = model_file_read(path, &id, &file_model, &err);
	}
	if (rc < 0)
		snprintf(file_status, sizeof(file_status), "%s (the shipped table is used)",
			 err.msg);
}

const char *model_file_status(void)
{
	pthread_once(&file_once, load_file_model);
	return file_status;
}

const struct model *model_for_this_cpu(void)
{
	const char *env = getenv("DCPI_MODEL");
	struct model_cpuid id;
	const struct model *shipped;

	pthread_once(&expanded, expand_all);
	if (env && !strchr(env, '/') && model_by_name(env))
		return model_by_name(env);
	pthread_once(&file_once, load_file_model);
	if (model_cpuid_this(&id) < 0)
		shipped = &model_generic;
	else
		shipped = model_for_cpuid(id.vendor, id.family, id.model);
	if (file_model)		/* its cpu line matched this CPU when read */
		return file_model;
	return shipped;
}
