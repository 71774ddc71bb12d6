/*
 * fleet/tsv.c - ClickHouse's TabSeparated text: the escaping of one field
 * (backslash before \t \n \r \0 \\ and '), as its docs give it for 18.16,
 * both ways.  Inserts and answers use it; SQL literals use fleet_sql_str.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "internal.h"

size_t fleet_tsv_escape(char *buf, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		char e = 0;

		switch (*s) {
		case '\t': e = 't'; break;
		case '\n': e = 'n'; break;
		case '\r': e = 'r'; break;
		case '\\': e = '\\'; break;
		case '\'': e = '\''; break;
		default: break;
		}
		if (e) {
			if (n + 1 < len)
				buf[n] = '\\';
			n++;
		}
		if (n + 1 < len)
			buf[n] = e ? e : *s;
		n++;
	}
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return n;
}

static char unescape(char c)
{
	switch (c) {
	case 't': return '\t';
	case 'n': return '\n';
	case 'r': return '\r';
	case '0': return '\0';
	case 'b': return '\b';
	case 'f': return '\f';
	default: return c;
	}
}

char *fleet_tsv_field(char *s, char **value, int *end_line)
{
	char *w = s;

	*value = s;
	*end_line = 0;
	while (*s && *s != '\t' && *s != '\n') {
		if (*s == '\\' && s[1]) {
			*w++ = unescape(s[1]);
			s += 2;
		} else {
			*w++ = *s++;
		}
	}
	*end_line = *s != '\t';
	if (*s)
		s++;
	*w = '\0';
	return s;
}

int fleet_sql_str(struct fleet_sb *sb, const char *s)
{
	size_t need = 2 * strlen(s) + 3;
	char *q;

	if (fleet_sb_reserve(sb, need) < 0)
		return -1;
	q = sb->p + sb->n;
	*q++ = '\'';
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			*q++ = '\\';
		*q++ = *s;
	}
	*q++ = '\'';
	*q = '\0';
	sb->n = (size_t)(q - sb->p);
	return 0;
}

int fleet_sb_reserve(struct fleet_sb *sb, size_t more)
{
	if (sb->err)
		return -1;
	if (sb->n + more + 1 > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 4096;
		char *p;

		while (cap < sb->n + more + 1)
			cap *= 2;
		p = realloc(sb->p, cap);
		if (!p) {
			sb->err = 1;
			return -1;
		}
		sb->p = p;
		sb->cap = cap;
	}
	return 0;
}

int fleet_sb_printf(struct fleet_sb *sb, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (sb->err)
		return -1;
	va_start(ap, fmt);
	k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (k < 0 || fleet_sb_reserve(sb, (size_t)k) < 0) {
		sb->err = 1;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(sb->p + sb->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	sb->n += (size_t)k;
	return 0;
}

int fleet_sb_tsv(struct fleet_sb *sb, const char *s)
{
	size_t k = fleet_tsv_escape(NULL, 0, s);

	if (fleet_sb_reserve(sb, k) < 0)
		return -1;
	fleet_tsv_escape(sb->p + sb->n, k + 1, s);
	sb->n += k;
	return 0;
}

void fleet_sb_free(struct fleet_sb *sb)
{
	free(sb->p);
	memset(sb, 0, sizeof(*sb));
}
