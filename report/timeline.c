/*
 * report/timeline.c - dcpi timeline: an epoch's time slices as one picture
 * (include/dcpi/timeline.h; docs/phases.md, "The picture").
 *
 * One SVG, fixed pixel sizes so that what it says is where a browser draws
 * it (tests/test_timeline.c reads the marks' boxes from the SVG and their
 * colours from a headless Chromium's screenshot):
 *
 *   samples per slice    a bar per slice, its height and colour the slice's
 *                        samples (white-orange-red, the heat scale)
 *   phases               a band under the bars: one box per phase (cut at
 *                        the inversion boundaries, as dcpiprof --phases),
 *                        class "phase-mark", in a colour of its own that the
 *                        heat scale never takes; a line at each boundary
 *   time axis            seconds from the epoch's first slice
 *   legend               per phase: its range, samples and top procedures
 *   sub-second map       FlameScope's heat map: one column per second, one
 *                        row per slice offset within it, the same heat scale
 *
 * With html, the SVG sits inline in a page that needs no server.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/report.h"
#include "dcpi/timeline.h"

#define TL_W		960
#define TL_LEFT		60
#define TL_RIGHT	20
#define TL_PLOT		(TL_W - TL_LEFT - TL_RIGHT)
#define TL_BARS_Y	40
#define TL_BARS_H	140
#define TL_BAND_Y	(TL_BARS_Y + TL_BARS_H + 8)
#define TL_BAND_H	24
#define TL_AXIS_Y	(TL_BAND_Y + TL_BAND_H + 16)
#define TL_LEGEND_Y	(TL_AXIS_Y + 26)
#define TL_ROW		18
#define TL_CELL_H	14
#define TL_CELL_W_MAX	48

/* The phases' colours: none is on the heat scale (white-orange-red). */
static const char *const phase_colours[] = {
	"#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22",
	"#393b79",
};
#define NCOLOURS (sizeof(phase_colours) / sizeof(phase_colours[0]))

/* Samples per slice [first, last] of every image. */
static uint64_t *per_slice(const struct rep_slices *s, uint64_t *max)
{
	size_t n = (size_t)(s->last - s->first + 1);
	uint64_t *v = calloc(n, sizeof(*v));

	*max = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->p[i].n; j++)
			v[s->p[i].e[j].slice - s->first] += s->p[i].e[j].count;
	for (size_t k = 0; k < n; k++)
		if (v[k] > *max)
			*max = v[k];
	return v;
}

/* The heat scale at x in [0, 1]: white, orange, dark red. */
static void heat(double x, char out[8])
{
	static const int stop[3][3] = { { 255, 247, 236 }, { 253, 141, 60 }, { 127, 0, 0 } };
	int i = x < 0.5 ? 0 : 1;
	double t = x < 0.5 ? x * 2 : (x - 0.5) * 2;
	int c[3];

	for (int k = 0; k < 3; k++)
		c[k] = (int)(stop[i][k] + t * (stop[i + 1][k] - stop[i][k]) + 0.5);
	snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* s as XML character data. */
static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
}

static double slice_x(const struct rep_slices *s, uint64_t k)
{
	return TL_LEFT + (double)(k - s->first) * TL_PLOT / (double)(s->last + 1 - s->first);
}

static void draw_bars(FILE *f, const struct rep_slices *s, const uint64_t *v, uint64_t max)
{
	double w = (double)TL_PLOT / (double)(s->last + 1 - s->first);
	char c[8];

	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n",
		TL_LEFT, TL_BARS_Y, TL_PLOT, TL_BARS_H);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRIu64 "</text>\n",
		TL_LEFT - 6, TL_BARS_Y + 10, max);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", TL_LEFT - 6,
		TL_BARS_Y + TL_BARS_H);
	for (uint64_t k = s->first; k <= s->last; k++) {
		double x = max ? (double)v[k - s->first] / (double)max : 0;

		if (!v[k - s->first])
			continue;
		heat(x, c);
		fprintf(f, "<rect class=\"slice\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
			"height=\"%.2f\" fill=\"%s\"><title>%.3f s: %" PRIu64 " samples</title>"
			"</rect>\n", slice_x(s, k), TL_BARS_Y + TL_BARS_H * (1 - x), w,
			TL_BARS_H * x, c, rep_slice_seconds(s, k), v[k - s->first]);
	}
}

/* Seconds on the axis: a tick every 0.1, 0.2, 0.5, 1, ... s, at most 12. */
static void draw_axis(FILE *f, const struct rep_slices *s)
{
	static const double steps[] = { 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 300, 600, 1800,
					3600 };
	double len = rep_slice_seconds(s, s->last + 1), step;
	size_t i = 0;

	while (i + 1 < sizeof(steps) / sizeof(steps[0]) && len / steps[i] > 12)
		i++;
	step = steps[i];
	for (double t = 0; t <= len + 1e-9; t += step) {
		double x = TL_LEFT + t / len * TL_PLOT;

		fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#000\"/>\n"
			"<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x,
			TL_AXIS_Y - 6, x, TL_AXIS_Y, x, TL_AXIS_Y + 12, t);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\">s</text>\n", TL_W - TL_RIGHT + 4, TL_AXIS_Y + 12);
}

/* The phase's box in the band, its boundary line and its top procedure over
 * the bars; its legend row. */
static void draw_phase(FILE *f, const struct rep_slices *s, const struct rep_phase *ph,
		       size_t i, const struct rep_table *t, size_t top)
{
	const char *col = phase_colours[i % NCOLOURS];
	double x0 = slice_x(s, ph->first), x1 = slice_x(s, ph->end);
	uint64_t tot = t->nevents ? t->events[0].total : 0;
	size_t nr = t->nevents ? (t->nrows < top ? t->nrows : top) : 0;
	int y = TL_LEGEND_Y + (int)i * TL_ROW;

	fprintf(f, "<rect class=\"phase-mark\" data-phase=\"%zu\" data-start=\"%.3f\" "
		"data-end=\"%.3f\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"stroke=\"#fff\" stroke-width=\"1\"/>\n", i + 1, rep_slice_seconds(s, ph->first),
		rep_slice_seconds(s, ph->end), x0, TL_BAND_Y, x1 - x0, TL_BAND_H, col);
	if (ph->rules)
		fprintf(f, "<line class=\"boundary\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
			"stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n", x0,
			TL_BARS_Y, x0, TL_BAND_Y + TL_BAND_H, col);
	if (nr) {
		fprintf(f, "<text class=\"phase-top\" data-phase=\"%zu\" x=\"%.2f\" y=\"%d\" "
			"fill=\"%s\">", i + 1, x0 + 3, TL_BARS_Y - 4, col);
		xml_str(f, t->rows[0].name);
		fputs("</text>\n", f);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
		"<text class=\"legend\" x=\"%d\" y=\"%d\">phase %zu: %.3f-%.3f s, %" PRIu64
		" samples", TL_LEFT, y - 10, col, TL_LEFT + 18, y, i + 1,
		rep_slice_seconds(s, ph->first), rep_slice_seconds(s, ph->end), tot);
	for (size_t r = 0; r < nr; r++) {
		fputs(r ? ", " : ": ", f);
		xml_str(f, t->rows[r].name);
		fprintf(f, " %.0f%%", tot ? 100.0 * (double)t->rows[r].samples[0] / (double)tot
			: 0.0);
	}
	fputs("</text>\n", f);
}

/* FlameScope's map: column = second of the epoch, row = slice within it. */
static void draw_subsecond(FILE *f, const struct rep_slices *s, const uint64_t *v,
			   uint64_t max, int y0)
{
	uint64_t per = 1000000000ULL / s->slice_ns, ncol;
	double cw;
	char c[8];

	if (!per)
		return;		/* slices of a second or longer: no sub-second offsets */
	ncol = (s->last - s->first) / per + 1;
	cw = (double)TL_PLOT / (double)ncol;
	if (cw > TL_CELL_W_MAX)
		cw = TL_CELL_W_MAX;
	fprintf(f, "<text x=\"%d\" y=\"%d\">samples per slice by second (columns) and offset "
		"within it (rows, %.0f ms each, down), as FlameScope shows them</text>\n",
		TL_LEFT, y0 - 6, (double)s->slice_ns / 1e6);
	for (uint64_t k = s->first; k <= s->last; k++) {
		uint64_t col = (k - s->first) / per, row = (k - s->first) % per;

		heat(max ? (double)v[k - s->first] / (double)max : 0, c);
		fprintf(f, "<rect class=\"subsecond\" x=\"%.2f\" y=\"%" PRIu64 "\" width=\"%.2f\" "
			"height=\"%d\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>"
			"%.3f s: %" PRIu64 " samples</title></rect>\n", TL_LEFT + (double)col * cw,
			(uint64_t)y0 + row * TL_CELL_H, cw, TL_CELL_H, c, rep_slice_seconds(s, k),
			v[k - s->first]);
		if (!row)
			fprintf(f, "<text x=\"%.2f\" y=\"%" PRIu64 "\" text-anchor=\"middle\">%"
				PRIu64 " s</text>\n", TL_LEFT + ((double)col + 0.5) * cw,
				(uint64_t)y0 + per * TL_CELL_H + 12, col);
	}
}

static int draw(FILE *f, const struct rep_slices *s, const struct prof_profile *p, size_t n,
		const struct rep_phase *ph, size_t nph, size_t top, int html,
		struct dcpi_err *err)
{
	uint64_t max, per = s->slice_ns < 1000000000ULL ? 1000000000ULL / s->slice_ns : 0;
	uint64_t *v = per_slice(s, &max);
	int sub_y = TL_LEGEND_Y + (int)nph * TL_ROW + 20;
	int h = sub_y + (int)per * TL_CELL_H + 20;
	int rc = 0;

	if (!v)
		return dcpi_errf(err, -ENOMEM, "timeline: out of memory");
	if (html)
		fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dcpi timeline"
		      "</title><style>body { margin: 0 }</style></head><body>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		"<text x=\"%d\" y=\"16\" font-size=\"13\">samples of %s per %.0f ms slice, "
		"%zu phases</text>\n", TL_W, h, TL_W, h, TL_LEFT, s->event,
		(double)s->slice_ns / 1e6, nph);
	draw_bars(f, s, v, max);
	for (size_t i = 0; i < nph && !rc; i++) {
		struct rep_table t;
		uint64_t from, to;

		rep_phase_core(ph, i, nph, &from, &to);
		rc = rep_phase_top(s, p, n, from, to, &t, err);
		if (!rc)
			draw_phase(f, s, &ph[i], i, &t, top);
		rep_free(&t);
	}
	draw_axis(f, s);
	draw_subsecond(f, s, v, max, sub_y);
	fputs("</svg>\n", f);
	if (html)
		fputs("</body></html>\n", f);
	free(v);
	return rc;
}

int rep_timeline_svg(FILE *f, const struct rep_slices *s, const struct prof_profile *p,
		     size_t n, size_t top, int html, struct dcpi_err *err)
{
	struct rep_phase *ph;
	size_t nph;
	int rc = rep_phases(s, SLICE_RULE_INVERSION, &ph, &nph, err);

	if (rc)
		return rc;
	rc = draw(f, s, p, n, ph, nph, top, html, err);
	free(ph);
	return rc;
}
