/*
 * fleet.h - a fleet of hosts on ClickHouse (docs/fleet.md).
 *
 * Hosts push their databases' epochs into ClickHouse over its HTTP interface;
 * a pull builds a local database holding the fleet's aggregate for some
 * images as one epoch, so every tool runs on fleet data unchanged.  A push is
 * idempotent per epoch: rows carry (host, epoch, start, version) and a pull
 * counts only the rows of an epoch's newest committed version, each once
 * (docs/fleet.md, "Idempotence").
 */
#ifndef DCPI_FLEET_H
#define DCPI_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

#define FLEET_SCHEMA_VERSION 5

struct prof_db;
struct fleet_conn;	/* one server and database, over HTTP */

/* clickhouse://HOST[:PORT]/DATABASE (PORT 8123 by default). */
struct fleet_url {
	char host[256];
	unsigned port;
	char db[64];		/* [A-Za-z0-9_]+ */
};

int fleet_url_parse(const char *s, struct fleet_url *u, struct dcpi_err *err);
/* Parse url, reach the server and check its version (18.16 or newer). */
int fleet_connect(const char *url, struct fleet_conn **out, struct dcpi_err *err);
void fleet_close(struct fleet_conn *c);
/* The database's name and the server's version ("18.16.1"). */
const char *fleet_db(const struct fleet_conn *c);
const char *fleet_server_version(const struct fleet_conn *c);
/*
 * Run one statement; body (len bytes, may be NULL) is sent after it, as the
 * data of an INSERT.  The answer, NUL-terminated, goes to *out when out is
 * not NULL (free it).  An error names the server and says what it answered.
 */
int fleet_query(struct fleet_conn *c, const char *sql, const void *body, size_t len,
		char **out, struct dcpi_err *err);

/*
 * The schema (docs/fleet.md): the database and its tables, created when
 * missing.  cluster: NULL for one server; else the name of a cluster of the
 * servers' remote_servers, and the tables become Distributed ones over
 * <table>_local tables sharded by host name (run it on every shard).
 */
int fleet_init(struct fleet_conn *c, const char *cluster, struct dcpi_err *err);
/* 0 when the database holds this schema version, else an error saying so. */
int fleet_check_schema(struct fleet_conn *c, struct dcpi_err *err);

struct fleet_push_stats {
	size_t epochs;		/* epochs sent */
	size_t skipped;		/* already on the server, the same version */
	uint64_t rows;		/* sample rows sent */
	uint64_t samples;	/* their counts */
	uint64_t kind_rows;	/* rows of path, value and data profiles sent */
};

/*
 * Push one epoch of db (or every epoch when epoch is NULL) as host's.  An
 * epoch already on the server with the same content is skipped; one whose
 * push was cut short is sent again and counted once.
 */
int fleet_push(struct fleet_conn *c, struct prof_db *db, const char *host, const char *epoch,
	       struct fleet_push_stats *st, struct dcpi_err *err);

/*
 * dcpid --push (fleet/queue.c): epoch (NULL: nothing new) joins db's queue of
 * epochs not yet pushed (the file push-queue in db), then the queue is
 * pushed to url in order, oldest first, up to the first failure; what was
 * pushed leaves it.  *left: the epochs still queued.  On failure the queue
 * is kept for the next call.
 */
int fleet_push_queue(const char *url, struct prof_db *db, const char *host, const char *epoch,
		     size_t *left, struct dcpi_err *err);

/* What to pull: one image (by build-id, or by path or file name), a time
 * range (ns since the Unix epoch, 0 for none) and hosts (a shell glob). */
struct fleet_query_spec {
	const char *build_id;
	const char *image;
	uint64_t since_ns, until_ns;
	const char *hosts;
};

/* T of --since and --until: seconds since 1970 or YYYY-MM-DD[THH:MM:SS] (UTC),
 * into ns since 1970 (fleet/since.c); a bad one is -EINVAL, saying so. */
int fleet_time_parse(const char *s, uint64_t *ns, struct dcpi_err *err);

struct fleet_pull_stats {
	size_t epochs;		/* (host, epoch) pairs aggregated */
	size_t hosts;
	size_t profiles;	/* (image, event) profiles written */
	uint64_t samples;
	size_t paths, values, data;	/* path, value and data profiles merged in */
};

/* The aggregate of the matching epochs into a new epoch of out (its name to
 * epoch, at least 64 bytes), all or nothing. */
int fleet_pull(struct fleet_conn *c, const struct fleet_query_spec *q, struct prof_db *out,
	       char *epoch, size_t len, struct fleet_pull_stats *st, struct dcpi_err *err);

/*
 * The same aggregate in memory: the server sums the counts per (image, event,
 * offset) over the matching hosts' committed epochs, and the profiles (*out,
 * *n: free with prof_profiles_free) and merged metadata (*m, when *has_meta)
 * are what a pull would write.  q may name no image: then every image.
 */
struct prof_profile;
struct prof_epoch_meta;
int fleet_aggregate(struct fleet_conn *c, const struct fleet_query_spec *q,
		    struct prof_profile **out, size_t *n, struct prof_epoch_meta *m,
		    int *has_meta, struct fleet_pull_stats *st, struct dcpi_err *err);
/* The same over a new connection to url, for a report: *what says what was
 * read ("fleet (E epochs of H hosts)"). */
int fleet_load_profiles(const char *url, const struct fleet_query_spec *q,
			struct prof_profile **p, size_t *n, char *what, size_t len,
			struct dcpi_err *err);

/* Write s escaped for a TabSeparated field into buf; bytes needed. */
size_t fleet_tsv_escape(char *buf, size_t len, const char *s);
/* Unescape a TabSeparated field in place (its end at the next tab or
 * newline): returns the next field's start, *end_line set at a newline. */
char *fleet_tsv_field(char *s, char **value, int *end_line);

#endif /* DCPI_FLEET_H */
