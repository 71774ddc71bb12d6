/*
 * fleet/queue.c - dcpid --push: a database's epochs not yet pushed, kept in
 * the file push-queue inside it (one epoch name a line, oldest first) so a
 * server that cannot be reached loses nothing (docs/fleet.md, "dcpid
 * --push").  After each flush the flushed epoch joins the queue and the
 * queue is pushed in order; the first failure stops it, and what was not
 * pushed stays for the next flush.  An epoch flushed again while queued is
 * queued once: its push sends its newest version, which replaces any older
 * one in every pull (fleet/push.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/fleet.h"
#include "dcpi/profile.h"
#include "dcpi/safefile.h"
#include "internal.h"

#define QUEUE_NAME "push-queue"
#define QUEUE_MAX (1u << 20)

/* The queue's text (empty when there is no file) into *text. */
static int queue_read(struct prof_db *db, char **text, struct dcpi_err *err)
{
	char path[4200];
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/" QUEUE_NAME, prof_db_path(db));
	rc = dcpi_read_file_at(AT_FDCWD, path, DCPI_OPEN_NOFOLLOW, QUEUE_MAX, &buf, &len, path,
			       err);
	if (rc == -ENOENT) {
		dcpi_err_clear(err);
		buf = (uint8_t *)strdup("");
		rc = buf ? 0 : dcpi_errf(err, -ENOMEM, "out of memory");
	}
	*text = (char *)buf;
	return rc;
}

static int queue_write(struct prof_db *db, const char *text, struct dcpi_err *err)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/" QUEUE_NAME, prof_db_path(db));
	return dcpi_write_file(path, text, strlen(text), 0644, err);
}

/* 1 when name is a line of text. */
static int queued(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *s = text; (s = strstr(s, name)); s += n)
		if ((s == text || s[-1] == '\n') && s[n] == '\n')
			return 1;
	return 0;
}

/* Push the lines of text in order; the unpushed rest back into the file. */
static int drain(struct fleet_conn *c, struct prof_db *db, const char *host, char *text,
		 size_t *left, struct dcpi_err *err)
{
	struct fleet_push_stats st;
	char *s = text, *nl;
	int rc = 0;

	while (!rc && (nl = strchr(s, '\n'))) {
		*nl = '\0';
		rc = fleet_push(c, db, host, s, &st, err);
		*nl = '\n';
		if (!rc)
			s = nl + 1;
	}
	for (const char *p = s; *p; p++)
		*left += *p == '\n';
	if (s != text) {
		struct dcpi_err werr = { 0 };
		int wrc = queue_write(db, s, &werr);

		if (!rc && wrc)
			*err = werr;
		rc = rc ? rc : wrc;
	}
	return rc;
}

int fleet_push_queue(const char *url, struct prof_db *db, const char *host, const char *epoch,
		     size_t *left, struct dcpi_err *err)
{
	struct fleet_conn *c = NULL;
	struct fleet_sb sb = { 0 };
	char *text = NULL;
	int rc = queue_read(db, &text, err);

	*left = 0;
	if (rc)
		return rc;
	fleet_sb_printf(&sb, "%s", text);
	if (epoch && !queued(text, epoch)) {
		fleet_sb_printf(&sb, "%s\n", epoch);
		rc = sb.err ? dcpi_errf(err, -ENOMEM, "out of memory") :
			      queue_write(db, sb.p, err);
	}
	if (!rc && sb.err)
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
	if (!rc && sb.n)
		rc = fleet_connect(url, &c, err);
	if (!rc && sb.n)
		rc = drain(c, db, host, sb.p, left, err);
	else if (rc && sb.p)
		for (const char *p = sb.p; *p; p++)
			*left += *p == '\n';
	fleet_close(c);
	fleet_sb_free(&sb);
	free(text);
	return rc;
}
