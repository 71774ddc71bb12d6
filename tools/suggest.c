/*
 * tools/suggest.c - "did you mean": the nearest names to what the user typed,
 * by Damerau-Levenshtein distance (report/find.c's rep_edit_distance), over
 * the command table (tools/dcpi.c) and a command's long options.  A
 * procedure's nearest names come with the lookup's error (report/find.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/report.h"
#include "tools.h"

int tool_suggest(const char *word, const char *const *names, size_t n, const char *prefix,
		 char *out, size_t len)
{
	int best = rep_suggest_max(word) + 1;
	size_t used = 0, found = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (names[i]) {
			int d = rep_edit_distance(word, names[i]);

			if (d < best)
				best = d;
		}
	for (size_t i = 0; i < n && used < len; i++) {
		if (!names[i] || rep_edit_distance(word, names[i]) != best)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s%s", found ? ", " : "",
					 prefix, names[i]);
		found++;
	}
	return (int)found;
}

/* Was argv[optind - 1] the long option getopt_long did not know? */
static void suggest_long(char **argv, const struct option *longopts)
{
	const char *names[128], *arg = argv[optind - 1];
	char word[64], out[256];
	size_t n = 0, k;
	int found;

	if (!arg || strncmp(arg, "--", 2) || !arg[2])
		return;
	k = strcspn(arg + 2, "=");
	if (k >= sizeof(word))
		return;
	memcpy(word, arg + 2, k);
	word[k] = '\0';
	for (; longopts[n].name && n < 128; n++)
		names[n] = longopts[n].name;
	found = tool_suggest(word, names, n, "--", out, sizeof(out));
	if (found)
		fprintf(stderr, "%s: did you mean %s%s?\n", tool_name, found > 1 ? "one of " : "",
			out);
}

int tool_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *idx)
{
	int c = getopt_long(argc, argv, shortopts, longopts, idx);

	if (c == '?' && !optopt && optind > 1 && optind <= argc)
		suggest_long(argv, longopts);
	return c;
}
