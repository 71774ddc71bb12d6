/*
 * fleet/since.c - the times of a query spec's --since and --until, parsed
 * alike for dcpi pull and dcpiprof --from (tools/cmd_pull.c,
 * tools/cmd_prof.c): seconds since 1970, or YYYY-MM-DD[THH:MM:SS] in UTC.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/fleet.h"

/* ns since the Unix epoch, 0 on a bad time. */
static uint64_t parse(const char *s)
{
	struct tm tm;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*s && !*end)
		return (uint64_t)v * 1000000000u;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end && *end == 'T')
		end = strptime(end + 1, "%H:%M:%S", &tm);
	if (!end || *end)
		return 0;
	return (uint64_t)timegm(&tm) * 1000000000u;
}

int fleet_time_parse(const char *s, uint64_t *ns, struct dcpi_err *err)
{
	*ns = parse(s);
	if (!*ns)
		return dcpi_errf(err, -EINVAL, "%s: not a time (seconds, or YYYY-MM-DD"
				 "[THH:MM:SS])", s);
	return 0;
}
