/*
 * fleet/internal.h - what the fleet's files share and nobody else sees: a
 * growing string for statements and TabSeparated rows.
 */
#ifndef DCPI_FLEET_INTERNAL_H
#define DCPI_FLEET_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"

struct fleet_sb {
	char *p;
	size_t n, cap;
	int err;		/* an allocation failed: every later call fails */
};

int fleet_sb_reserve(struct fleet_sb *sb, size_t more);
int fleet_sb_printf(struct fleet_sb *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s escaped as a TabSeparated field. */
int fleet_sb_tsv(struct fleet_sb *sb, const char *s);
/* s as a quoted SQL string literal. */
int fleet_sql_str(struct fleet_sb *sb, const char *s);
void fleet_sb_free(struct fleet_sb *sb);

/* The bits of a double as an integer and back: exact through text. */
static inline unsigned long long fleet_dbits(double d)
{
	union { double d; unsigned long long u; } x = { .d = d };

	return x.u;
}

static inline double fleet_bitsd(unsigned long long u)
{
	union { unsigned long long u; double d; } x = { .u = u };

	return x.d;
}

/* Fields of one answer row (TabSeparated, unescaped in place) into f[0..max);
 * their count, 0 at the end of the answer. */
int fleet_next_row(char **s, char **f, int max);

/* The WHERE of the committed rows q selects in a table keyed as samples is
 * (host, epoch, start_ns, end_ns, version, build_id, path): fleet/pull.c. */
void fleet_where(struct fleet_sb *sb, const char *db, const struct fleet_query_spec *q);

/* What every row of a pushed epoch starts with (fleet/push.c). */
struct fleet_key {
	const char *host, *epoch;
	uint64_t start_ns, end_ns, version;
	char day[16];
};

void fleet_key_cols(struct fleet_sb *sb, const struct fleet_key *k);
/* build_id, path, size, mtime of id, each followed by a tab. */
void fleet_image_cols(struct fleet_sb *sb, const struct prof_image_id *id);
/* The columns every kind's row starts with: k's, id's, rec and ord, each
 * followed by a tab. */
void fleet_row_start(struct fleet_sb *sb, const struct fleet_key *k,
		     const struct prof_image_id *id, unsigned rec, size_t ord);
void fleet_image_of(char **f, struct prof_image_id *id);

/*
 * A kind of per-image profile beside the samples (paths, values, data:
 * fleet/kind_*.c), in its own table.  Its columns follow the key and the
 * image: rec (which record of the profile a row is: 0 its header, then the
 * kind's own) and ord (the record's place in the profile's file), then the
 * kind's.  A pull rebuilds each (host, epoch, image)'s profile as the
 * host's file held it and merges them in (host, epoch) order, through the
 * kind's epoch write, as dcpi merge does (fleet/kinds.c).
 */
struct fleet_kind {
	const char *table;
	const char *cols;	/* the kind's columns, SQL types */
	const char *fields;	/* their names, as selected */
	int nfields;
	size_t size;		/* of one profile */
	int (*read)(struct prof_db *db, const char *epoch, void **v, size_t *n,
		    struct dcpi_err *err);
	void (*free_all)(void *v, size_t n);
	uint64_t (*weight)(const void *p);	/* its share of the epoch's version */
	/* p's rows, each after the key's and the image's columns */
	void (*rows)(struct fleet_sb *sb, const struct fleet_key *k, const void *p);
	void (*init)(void *p, const struct prof_image_id *id);
	/* one row (rec, ord, then the kind's fields) into p */
	int (*row)(void *p, unsigned rec, char **f, struct dcpi_err *err);
	int (*write)(struct prof_db *out, const char *epoch, void *p, struct dcpi_err *err);
	void (*free)(void *p);
};

/*
 * A fleet kind's glue over the profile kind PFX of struct TYPE (its
 * PFX_epoch_read, PFX_profiles_free, PFX_epoch_write of
 * include/dcpi/profile.h PROF_KIND_EPOCH_DECLARE, and TYPE_init,
 * TYPE_free): static read_all, free_all, init, write and free_one, and
 * FLEET_KIND_OPS(TYPE) to name them in its struct fleet_kind, with the
 * kind's own static weight, rows and add_row (its row).
 */
#define FLEET_KIND_GLUE(pfx, type)							\
static int read_all(struct prof_db *db, const char *epoch, void **v, size_t *n,		\
		    struct dcpi_err *err)						\
{											\
	return pfx##_epoch_read(db, epoch, (struct type **)v, n, err);			\
}											\
static void free_all(void *v, size_t n)							\
{											\
	pfx##_profiles_free(v, n);							\
}											\
static void init(void *v, const struct prof_image_id *id)				\
{											\
	struct type *p = v;								\
											\
	type##_init(p);									\
	p->image = *id;									\
}											\
static int write(struct prof_db *out, const char *epoch, void *v, struct dcpi_err *err)	\
{											\
	return pfx##_epoch_write(out, epoch, v, err);					\
}											\
static void free_one(void *v)								\
{											\
	type##_free(v);									\
}
#define FLEET_KIND_OPS(type)								\
	.size = sizeof(struct type), .read = read_all, .free_all = free_all,		\
	.init = init, .write = write, .free = free_one, .weight = weight, .rows = rows,	\
	.row = add_row

extern const struct fleet_kind fleet_kind_paths, fleet_kind_values, fleet_kind_data;
extern const struct fleet_kind *const fleet_kinds[3];

/* The CREATE columns of kind k's table. */
void fleet_kind_cols(struct fleet_sb *sb, const struct fleet_kind *k);
/* The profiles of every kind of epoch: their weight is added to *version. */
struct fleet_kind_set {
	void *v[3];
	size_t n[3];
};
int fleet_kinds_read(struct prof_db *db, const char *epoch, struct fleet_kind_set *ks,
		     uint64_t *version, struct dcpi_err *err);
void fleet_kinds_free(struct fleet_kind_set *ks);
/* Insert ks's rows, kind by kind; *rows counts them. */
int fleet_kinds_insert(struct fleet_conn *c, const struct fleet_key *k,
		       const struct fleet_kind_set *ks, uint64_t *rows, struct dcpi_err *err);
/* Every kind's profiles q selects into epoch of out (its transaction
 * open); n[i]: the profiles of fleet_kinds[i] written. */
int fleet_kinds_pull(struct fleet_conn *c, const struct fleet_query_spec *q,
		     struct prof_db *out, const char *epoch, size_t *n, struct dcpi_err *err);

/* A number of a field; an array field "[1,2,3]" into v (at most max), its length
 * or -1 when it is not one. */
static inline uint64_t fleet_u64(const char *s)
{
	return strtoull(s, NULL, 10);
}

int fleet_u64_array(const char *s, uint64_t *v, int max);

#endif /* DCPI_FLEET_INTERNAL_H */
