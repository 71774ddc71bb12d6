/*
 * tests/test_timeline.c - dcpi timeline (report/timeline.c) on a recorded
 * run of tests/workloads/phases.c (A-B-A, the workload's own timestamps as
 * truth): the picture, opened in a real headless Chromium, shows the phase
 * marks in their colours where the SVG puts them, as an SVG file and as an
 * HTML page; its phases and top procedures are the truth's; the output
 * follows util/safefile.c's rule (a device or a FIFO is never replaced).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <cmocka.h>

#include "dcpi/timeline.h"
#include "tu_run.h"
#include "tu_slices.h"
#include "tu_main.h"

static char ws[PATH_MAX];
static const char *bin;
static double tr[3][2];		/* the truth's phases, seconds of the reports' time */

/* The workload's truth file: "NAME START_NS END_NS" per phase. */
static int read_truth(const char *path, double t0)
{
	unsigned long long s, e;
	char name[8];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (n < 3 && fscanf(f, "%7s %llu %llu", name, &s, &e) == 3) {
		tr[n][0] = (double)s / 1e9 - t0;
		tr[n][1] = (double)e / 1e9 - t0;
		n++;
	}
	fclose(f);
	return n;
}

static int setup(void **state)
{
	char wl[PATH_MAX], db[PATH_MAX + 8], tpath[PATH_MAX + 8];

	(void)state;
	if (tu_run_setup(&bin, wl, sizeof(wl), "phases", ws, sizeof(ws), "timeline"))
		return -1;
	snprintf(db, sizeof(db), "%s/db", ws);
	snprintf(tpath, sizeof(tpath), "%s/truth", ws);
	if (tu_sh("DCPI_PHASES_OUT=%s %s record --no-calibrate --db %s -- %s A:600,B:600,A:600 "
		  ">/dev/null 2>%s/record.err", tpath, bin, db, wl, ws) ||
	    read_truth(tpath, tu_first_slice(db)) != 3) {
		tu_sh("cat %s/record.err >&2", ws);
		return -1;
	}
	return 0;
}

/* The browser: chromium (Debian's package, scripts/deps.sh), else NULL. */
static const char *browser(void)
{
	static const char *const names[] = { "chromium", "chromium-browser", "google-chrome" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!tu_sh("command -v %s >/dev/null 2>&1", names[i]))
			return names[i];
	return NULL;
}

/*
 * The check, in python3 with no library beyond its own: the PNG decoded
 * (zlib, the five row filters), every phase mark of the SVG (the picture
 * inside the HTML page too) found in the screenshot in its fill colour at
 * the centre of its box; the phases after the start-up's (building the
 * chase) are the truth's three, within a slice, topped by the procedure
 * the workload ran in each.
 */
static const char check_py[] =
	"import re, struct, sys, zlib\n"
	"import xml.etree.ElementTree as ET\n"
	"def png(path):\n"
	"    b = open(path, 'rb').read()\n"
	"    assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n', 'not a PNG'\n"
	"    i, idat = 8, b''\n"
	"    while i < len(b):\n"
	"        n, t = struct.unpack('>I4s', b[i:i + 8])\n"
	"        c = b[i + 8:i + 8 + n]\n"
	"        i += 12 + n\n"
	"        if t == b'IHDR':\n"
	"            w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', c)\n"
	"        elif t == b'IDAT':\n"
	"            idat += c\n"
	"    assert depth == 8 and ctype in (2, 6) and inter == 0, (depth, ctype, inter)\n"
	"    bpp = 3 if ctype == 2 else 4\n"
	"    raw, stride, o = zlib.decompress(idat), w * bpp, 0\n"
	"    rows, prev = [], bytearray(stride)\n"
	"    for y in range(h):\n"
	"        f, line = raw[o], bytearray(raw[o + 1:o + 1 + stride])\n"
	"        o += 1 + stride\n"
	"        for x in range(stride):\n"
	"            a = line[x - bpp] if x >= bpp else 0\n"
	"            u = prev[x]\n"
	"            c = prev[x - bpp] if x >= bpp else 0\n"
	"            if f == 1: line[x] = (line[x] + a) & 255\n"
	"            elif f == 2: line[x] = (line[x] + u) & 255\n"
	"            elif f == 3: line[x] = (line[x] + (a + u) // 2) & 255\n"
	"            elif f == 4:\n"
	"                p = a + u - c\n"
	"                pa, pb, pc = abs(p - a), abs(p - u), abs(p - c)\n"
	"                line[x] = (line[x] + (a if pa <= pb and pa <= pc else\n"
	"                                      u if pb <= pc else c)) & 255\n"
	"        rows.append(line)\n"
	"        prev = line\n"
	"    return w, h, bpp, rows\n"
	"text = open(sys.argv[1]).read()\n"
	"svg = ET.fromstring(text[text.index('<svg'):text.index('</svg>') + 6])\n"
	"ns = '{http://www.w3.org/2000/svg}'\n"
	"marks = [r for r in svg.iter(ns + 'rect') if r.get('class') == 'phase-mark']\n"
	"w, h, bpp, rows = png(sys.argv[2])\n"
	"assert (w, h) == (int(svg.get('width')), int(svg.get('height'))), (w, h)\n"
	"for r in marks:\n"
	"    x = int(float(r.get('x')) + float(r.get('width')) / 2)\n"
	"    y = int(float(r.get('y')) + float(r.get('height')) / 2)\n"
	"    got = rows[y][x * bpp:x * bpp + 3]\n"
	"    want = bytes.fromhex(r.get('fill')[1:])\n"
	"    assert all(abs(g - v) <= 4 for g, v in zip(got, want)), (r.attrib, list(got))\n"
	"top = {t.get('data-phase'): t.text for t in svg.iter(ns + 'text')\n"
	"       if t.get('class') == 'phase-top'}\n"
	"ph = [(float(r.get('data-start')), float(r.get('data-end')), top[r.get('data-phase')])\n"
	"      for r in marks if top.get(r.get('data-phase')) != 'chase_make']\n"
	"tr = eval(sys.argv[3])\n"
	"assert len(ph) == 3, ph\n"
	"for i, ((a, b, name), (ta, tb, tname)) in enumerate(zip(ph, tr)):\n"
	"    assert abs(a - ta) <= 0.1 or i == 0, (a, ta)\n"
	"    assert abs(b - tb) <= 0.1 or i == 2, (b, tb)\n"
	"    assert name.startswith(tname), (name, tname)\n"
	"print('# %d phase marks found in the screenshot in their colours' % len(marks))\n";

/* Screenshot file (an SVG or an HTML page) at the picture's size; check. */
static void shoot(const char *chrome, const char *file)
{
	char png[PATH_MAX + 16], py[PATH_MAX + 16], head[1024];
	const char *svg;
	int w = 0, h = 0;
	FILE *f;

	assert_true(tu_slurp(file, head, sizeof(head)) > 0);
	svg = strstr(head, "<svg ");
	assert_non_null(svg);
	assert_int_equal(sscanf(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
				"height=\"%d\"", &w, &h), 2);
	assert_true(w > 0 && h > 0);
	snprintf(png, sizeof(png), "%s.png", file);
	/* HOME and the profile inside the workspace: nothing written elsewhere */
	assert_int_equal(tu_sh("HOME=%s/home timeout 120 %s --headless --no-sandbox --disable-gpu "
			       "--hide-scrollbars --force-device-scale-factor=1 "
			       "--user-data-dir=%s/chrome --screenshot=%s --window-size=%d,%d "
			       "file://%s >%s/chrome.log 2>&1", ws, chrome, ws, png, w, h, file,
			       ws), 0);
	snprintf(py, sizeof(py), "%s/check.py", ws);
	f = fopen(py, "w");
	assert_non_null(f);
	fputs(check_py, f);
	fclose(f);
	if (tu_sh("python3 %s %s %s '[(%.3f, %.3f, \"phase_alu\"), (%.3f, %.3f, \"phase_chase\"), "
		  "(%.3f, %.3f, \"phase_alu\")]'", py, file, png, tr[0][0], tr[0][1], tr[1][0],
		  tr[1][1], tr[2][0], tr[2][1]))
		fail_msg("%s: the phase marks are not in the screenshot as the SVG says", file);
}

static void test_browser(void **state)
{
	const char *chrome = browser();
	char svg[PATH_MAX + 16], html[PATH_MAX + 16];

	(void)state;
	snprintf(svg, sizeof(svg), "%s/t.svg", ws);
	snprintf(html, sizeof(html), "%s/t.html", ws);
	assert_int_equal(tu_sh("%s timeline --db %s/db -o %s && %s timeline --db %s/db -o %s",
			       bin, ws, svg, bin, ws, html), 0);
	assert_int_equal(tu_sh("head -c 15 %s | grep -q '<!DOCTYPE html>' && "
			       "head -c 4 %s | grep -q '<svg'", html, svg), 0);
	if (!chrome) {
		print_message("no chromium on PATH (scripts/deps.sh installs Debian's "
			      "chromium): the screenshot check is skipped\n");
		skip();
	}
	shoot(chrome, svg);
	shoot(chrome, html);
}

/* -o by util/safefile.c's rule: /dev/null stays a device, a FIFO with no
 * reader is an error and stays a FIFO, a directory is refused; an epoch
 * without slices is a clear error. */
static void test_outputs(void **state)
{
	char fifo[PATH_MAX + 16];
	struct stat st;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/fifo", ws);
	assert_int_equal(tu_sh("%s timeline --db %s/db -o /dev/null", bin, ws), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_not_equal(tu_sh("%s timeline --db %s/db -o %s 2>%s/err", bin, ws, fifo, ws), 0);
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_not_equal(tu_sh("%s timeline --db %s/db -o %s 2>/dev/null", bin, ws, ws), 0);
	assert_int_equal(tu_sh("%s record --no-calibrate --no-slices --db %s/flat -- /bin/true "
			       ">/dev/null 2>&1", bin, ws), 0);
	assert_int_equal(tu_sh("%s timeline --db %s/flat -o %s/flat.svg 2>%s/err; "
			       "grep -q 'no time slices' %s/err && test ! -e %s/flat.svg", bin, ws,
			       ws, ws, ws, ws), 0);
}

TU_MAIN(setup, tu_run_teardown,
	cmocka_unit_test(test_browser),
	cmocka_unit_test(test_outputs))
