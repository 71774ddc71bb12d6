/*
 * report/proftable.c - dcpiprof's table of samples per procedure or per image
 * (report/summary.c's struct rep_table) as text, after DCPI fig. 1, and as
 * JSON.
 */
#include <stdio.h>
#include <string.h>

#include "dcpi/report.h"

void rep_prof_json(FILE *f, const struct rep_table *t, int by_image, const char *epoch,
		   size_t nrows, const struct prof_db *db)
{
	fprintf(f, "{\"epoch\": ");
	rep_json_str(f, epoch);
	fprintf(f, ", \"events\": [");
	for (size_t e = 0; e < t->nevents; e++) {
		fprintf(f, e ? ", " : "");
		rep_json_str(f, t->events[e].name);
	}
	fprintf(f, "], \"total\": {");
	for (size_t e = 0; e < t->nevents; e++) {
		fprintf(f, e ? ", " : "");
		rep_json_str(f, t->events[e].name);
		fprintf(f, ": %llu", (unsigned long long)t->events[e].total);
	}
	fprintf(f, "}, \"period\": {");
	for (size_t e = 0; e < t->nevents; e++) {
		fprintf(f, e ? ", " : "");
		rep_json_str(f, t->events[e].name);
		fprintf(f, ": {\"mean\": %.17g, \"unit\": ", t->events[e].period);
		rep_json_str(f, t->events[e].period_unit);
		fprintf(f, "}");
	}
	fprintf(f, "}, \"%s\": [", by_image ? "images" : "procedures");
	for (size_t r = 0; r < nrows; r++) {
		const struct rep_row *row = &t->rows[r];

		fprintf(f, r ? ",\n  {" : "\n  {");
		if (!by_image) {
			fprintf(f, "\"name\": ");
			rep_json_str(f, row->name);
			fprintf(f, ", \"address\": \"0x%llx\", ", (unsigned long long)row->addr);
		}
		fprintf(f, "\"image\": ");
		rep_json_str(f, row->image);
		fprintf(f, ", \"samples\": {");
		for (size_t e = 0; e < t->nevents; e++) {
			fprintf(f, e ? ", " : "");
			rep_json_str(f, t->events[e].name);
			fprintf(f, ": %llu", (unsigned long long)row->samples[e]);
		}
		fprintf(f, "}}");
	}
	fprintf(f, "\n], ");
	rep_json_damaged(f, db);
	fprintf(f, ", \"notes\": [");
	for (size_t i = 0; i < t->nnotes; i++) {
		fprintf(f, i ? ", " : "");
		rep_json_str(f, t->notes[i]);
	}
	fprintf(f, "]}\n");
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

void rep_prof_text(FILE *f, const struct rep_table *t, int by_image, const char *where,
		   const char *epoch, size_t nrows, size_t ev)
{
	int width = 9;
	uint64_t cum = 0;

	for (size_t r = 0; r < nrows; r++) {
		int len = (int)strlen(t->rows[r].name);

		if (!by_image && len > width)
			width = len > 48 ? 48 : len;
	}
	fprintf(f, "Database %s, epoch %s\n", where, epoch);
	fprintf(f, "Total samples for event type");
	for (size_t e = 0; e < t->nevents; e++)
		fprintf(f, "%s %s = %llu", e ? "," : "", t->events[e].name,
		       (unsigned long long)t->events[e].total);
	fprintf(f, "\nSampling period:");
	for (size_t e = 0; e < t->nevents; e++)
		fprintf(f, "%s %s every %.0f %s", e ? "," : "", t->events[e].name,
		       t->events[e].period, t->events[e].period_unit);
	fprintf(f, "\nThe counts given below are the number of samples for each listed event "
		"type.\n");
	fprintf(f, "=======================================" /* 79 of them */
		"========================================\n");
	fprintf(f, "%12s %7s %7s", t->events[ev].name, "%", "cum%");
	for (size_t e = 0; e < t->nevents; e++)
		if (e != ev)
			fprintf(f, " %12s %7s", t->events[e].name, "%");
	if (by_image)
		fprintf(f, "  image\n");
	else
		fprintf(f, "  %-*s  image\n", width, "procedure");
	for (size_t r = 0; r < nrows; r++) {
		const struct rep_row *row = &t->rows[r];
		uint64_t tot = t->events[ev].total;

		cum += row->samples[ev];
		fprintf(f, "%12llu %6.2f%% %6.2f%%", (unsigned long long)row->samples[ev],
		       pct(row->samples[ev], tot), pct(cum, tot));
		for (size_t e = 0; e < t->nevents; e++)
			if (e != ev)
				fprintf(f, " %12llu %6.2f%%", (unsigned long long)row->samples[e],
				       pct(row->samples[e], t->events[e].total));
		if (by_image)
			fprintf(f, "  %s\n", row->image);
		else
			fprintf(f, "  %-*s  %s\n", width, row->name, row->image);
	}
}
