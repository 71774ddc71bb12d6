/*
 * fleet/internal.h - what the fleet's files share and nobody else sees: a
 * growing string for statements and TabSeparated rows.
 */
#ifndef DCPI_FLEET_INTERNAL_H
#define DCPI_FLEET_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

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

#endif /* DCPI_FLEET_INTERNAL_H */
