/*
 * fleet/http.c - one ClickHouse server over its HTTP interface (libcurl):
 * the clickhouse:// URL, the version check and statements with their data.
 * A statement goes in the URL's query parameter and its data (an INSERT's
 * TabSeparated rows) in the POST body; any answer but 200 is an error whose
 * text is the server's own ("Code: 60, e.displayText() = ...").
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "dcpi/fleet.h"
#include "internal.h"

struct fleet_conn {
	struct fleet_url url;
	char base[400];		/* http://host:port/ */
	char version[32];
	CURL *curl;
};

static int parse_port(const char *s, size_t k, unsigned *port)
{
	unsigned v = 0;

	if (!k || k > 5)
		return -1;
	for (size_t i = 0; i < k; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*port = v;
	return v && v < 65536 ? 0 : -1;
}

static int db_name_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

int fleet_url_parse(const char *s, struct fleet_url *u, struct dcpi_err *err)
{
	static const char scheme[] = "clickhouse://";
	const char *h, *slash, *colon;
	size_t hl;

	memset(u, 0, sizeof(*u));
	u->port = 8123;
	if (strncmp(s, scheme, sizeof(scheme) - 1))
		return dcpi_errf(err, -EINVAL, "%s: not a clickhouse://HOST:PORT/DATABASE URL", s);
	h = s + sizeof(scheme) - 1;
	slash = strchr(h, '/');
	if (!slash)
		return dcpi_errf(err, -EINVAL, "%s: no /DATABASE in the URL", s);
	colon = memchr(h, ':', (size_t)(slash - h));
	hl = (size_t)((colon ? colon : slash) - h);
	if (!hl || hl >= sizeof(u->host))
		return dcpi_errf(err, -EINVAL, "%s: no host in the URL", s);
	memcpy(u->host, h, hl);
	for (size_t i = 0; i < hl; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr(".-_", h[i]))
			return dcpi_errf(err, -EINVAL, "%s: bad host name '%s'", s, u->host);
	if (colon && parse_port(colon + 1, (size_t)(slash - colon - 1), &u->port) < 0)
		return dcpi_errf(err, -EINVAL, "%s: bad port '%.*s'", s, (int)(slash - colon - 1),
				 colon + 1);
	if (strlen(slash + 1) >= sizeof(u->db) || !db_name_ok(slash + 1))
		return dcpi_errf(err, -EINVAL, "%s: bad database name '%s' (letters, digits, _)",
				 s, slash + 1);
	strcpy(u->db, slash + 1);
	return 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct fleet_sb *b = arg;
	size_t k = size * nmemb;

	if (fleet_sb_reserve(b, k))
		return 0;
	memcpy(b->p + b->n, p, k);
	b->n += k;
	b->p[b->n] = '\0';
	return k;
}

/* The server's message, one line, without ClickHouse's repetition. */
static void trim_answer(char *s)
{
	char *w = strstr(s, ", e.what() =");

	if (w)
		*w = '\0';
	s[strcspn(s, "\n")] = '\0';
}

int fleet_query(struct fleet_conn *c, const char *sql, const void *body, size_t len,
		char **out, struct dcpi_err *err)
{
	struct fleet_sb b = { 0 };
	char *q = curl_easy_escape(c->curl, sql, 0), *url = NULL;
	long code = 0;
	CURLcode cc;
	int rc = 0;

	/* an insert into a Distributed table returns once every shard has its
	 * rows, so the commit row that follows never precedes them */
	if (!q || asprintf(&url, "%s?%squery=%s", c->base,
			   strncmp(sql, "INSERT", 6) ? "" : "insert_distributed_sync=1&", q) < 0) {
		curl_free(q);
		return dcpi_errf(err, -ENOMEM, "out of memory");
	}
	curl_free(q);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
	cc = curl_easy_perform(c->curl);
	free(url);
	if (cc != CURLE_OK) {
		rc = dcpi_errf(err, cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED,
			       "%s:%u: %s", c->url.host, c->url.port, curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		if (b.p)
			trim_answer(b.p);
		rc = dcpi_errf(err, -EIO, "%s:%u: HTTP %ld: %s", c->url.host, c->url.port, code,
			       b.p && *b.p ? b.p : "(no message)");
		goto out;
	}
	if (out) {
		*out = b.p ? b.p : strdup("");
		b.p = NULL;
		if (!*out)
			rc = dcpi_errf(err, -ENOMEM, "out of memory");
	}
out:
	free(b.p);
	return rc;
}

/* 18.16 or newer: the schema's PARTITION BY expression and the
 * Distributed inserts it relies on (docs/fleet.md). */
static int check_version(struct fleet_conn *c, struct dcpi_err *err)
{
	char *v = NULL;
	unsigned major = 0, minor = 0;
	int rc = fleet_query(c, "SELECT version()", NULL, 0, &v, err);

	if (rc < 0)
		return rc;
	v[strcspn(v, "\r\n")] = '\0';
	snprintf(c->version, sizeof(c->version), "%s", v);
	if (sscanf(v, "%u.%u", &major, &minor) != 2 || major < 18 || (major == 18 && minor < 16))
		rc = dcpi_errf(err, -EPROTONOSUPPORT,
			       "%s:%u: ClickHouse '%s' answered; dcpi needs 18.16 or newer",
			       c->url.host, c->url.port, c->version);
	free(v);
	return rc;
}

int fleet_connect(const char *url, struct fleet_conn **out, struct dcpi_err *err)
{
	struct fleet_conn *c;
	int rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return dcpi_errf(err, -ENOMEM, "out of memory");
	rc = fleet_url_parse(url, &c->url, err);
	if (rc < 0)
		goto fail;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	c->curl = curl_easy_init();
	if (!c->curl) {
		rc = dcpi_errf(err, -ENOMEM, "%s: cannot start libcurl", url);
		goto fail;
	}
	snprintf(c->base, sizeof(c->base), "http://%s:%u/", c->url.host, c->url.port);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 600L);
	curl_easy_setopt(c->curl, CURLOPT_PROXY, "");
	rc = check_version(c, err);
	if (rc < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	fleet_close(c);
	return rc;
}

void fleet_close(struct fleet_conn *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c);
}

const char *fleet_db(const struct fleet_conn *c)
{
	return c->url.db;
}

const char *fleet_server_version(const struct fleet_conn *c)
{
	return c->version;
}
