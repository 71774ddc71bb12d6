/*
 * test_calibrate.c - where samples land (estimate/calibrate/attribution.c, `dcpi
 * calibrate`): the attribution fitted on a loop with a known skid, and the
 * calibration file's round trip.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcpi/cfg.h"
#include "dcpi/estimate.h"
#include "dcpi/model.h"
#include "dcpi/report.h"
#include "loop_if.h"
#include "testutil.h"
#include "tu_main.h"

/* Samples of E x M moved k instructions on along the executed path. */
static void shifted(const struct cfg *cfg, const double *e, const double *m, int k, double *s)
{
	double *cur = calloc(cfg->ninsns, sizeof(double)), *nxt = calloc(cfg->ninsns,
									 sizeof(double));

	assert_non_null(cur);
	assert_non_null(nxt);
	for (size_t i = 0; i < cfg->ninsns; i++)
		cur[i] = e[i] * m[i];
	for (int step = 0; step < k; step++) {
		memset(nxt, 0, cfg->ninsns * sizeof(double));
		for (size_t b = 0; b < cfg->nblocks; b++) {
			const struct cfg_block *bl = &cfg->blocks[b];
			uint32_t last = bl->first + bl->n - 1;
			double out = 0;

			if (!bl->n)
				continue;
			for (uint32_t i = bl->first; i < last; i++)
				nxt[i + 1] += cur[i];
			for (uint32_t j = 0; j < bl->nsucc; j++) {
				const struct cfg_block *t = &cfg->blocks[cfg->edges[bl->succ[j]].to];

				if (t->n)
					out += e[t->first];
			}
			for (uint32_t j = 0; j < bl->nsucc && out > 0; j++) {
				const struct cfg_block *t = &cfg->blocks[cfg->edges[bl->succ[j]].to];

				if (t->n)
					nxt[t->first] += cur[last] * e[t->first] / out;
			}
		}
		memcpy(cur, nxt, cfg->ninsns * sizeof(double));
	}
	for (size_t i = 0; i < cfg->ninsns; i++)
		s[i] = round(cur[i] / 1000);
	free(cur);
	free(nxt);
}

static void test_fit_known_skid(void **state)
{
	struct cfg *cfg;
	struct dcpi_err err = { 0 };
	const struct model *model = model_by_name("zen4");
	double *e, *m, *s;
	struct est_calib_loop lp;

	(void)state;
	assert_non_null(model);
	cfg = loop_if_cfg(0x1000);
	e = calloc(cfg->ninsns, sizeof(double));
	m = calloc(cfg->ninsns, sizeof(double));
	s = calloc(cfg->ninsns, sizeof(double));
	assert_true(e && m && s);
	for (size_t b = 0, k = 0; b < cfg->nblocks; b++)
		if (cfg->blocks[b].n) {
			for (uint32_t i = cfg->blocks[b].first;
			     i < cfg->blocks[b].first + cfg->blocks[b].n; i++)
				e[i] = block_count[k];
			k++;
		}
	assert_int_equal(est_model_m(cfg, model, EST_STEADY_SELF, m, NULL, NULL, &err), 0);
	for (int k = 0; k <= 2; k++) {
		shifted(cfg, e, m, k, s);
		assert_int_equal(est_calib_loop(cfg, model, e, s, 1000, &lp, &err), 0);
		print_message("skid %d: attrib %.3f %.3f %.3f %.3f %.3f, cross %.3f, heads %.3f "
			      "of samples, %.3f of insns\n", k, lp.attrib[0], lp.attrib[1],
			      lp.attrib[2], lp.attrib[3], lp.attrib[4], lp.cross, lp.head_samples,
			      lp.head_insns);
		assert_true(lp.attrib[k] > 0.95);
		assert_true(lp.residual < 0.05);
		assert_true(fabs(lp.cyc_iter - lp.model_iter) < 0.02 * lp.model_iter);
		assert_int_equal(lp.used, 1);
		if (k == 0)
			assert_true(lp.cross < 1e-9);
	}
	free(e);
	free(m);
	free(s);
	cfg_free(cfg);
}

/* rep_calibration_text of cal holds want. */
static void calib_text(const struct est_calibration *cal, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rep_calibration_text(f, cal, "calibration.txt");
	fclose(f);
	if (!strstr(buf, want))
		print_message("want \"%s\" in:\n%s", want, buf);
	assert_non_null(strstr(buf, want));
	free(buf);
}

static void test_file_round_trip(void **state)
{
	struct est_calibration cal, back;
	struct dcpi_err err = { 0 };
	struct est_opts o;
	char dir[256], path[300], dbpath[4200];

	(void)state;
	memset(&cal, 0, sizeof(cal));
	snprintf(cal.model, sizeof(cal.model), "zen4");
	snprintf(cal.event, sizeof(cal.event), "cpu-clock");
	cal.cycles_per_sample = 815300;
	cal.nloops = 2;
	snprintf(cal.loops[0].name, sizeof(cal.loops[0].name), "sk_imul");
	cal.loops[0].used = 1, cal.loops[0].samples = 1500, cal.loops[0].attrib[1] = 0.75;
	cal.loops[0].attrib[2] = 0.25, cal.loops[0].head_samples = 0.02;
	cal.loops[0].head_from_pred = 0.5, cal.loops[0].head_insns = 0.2;
	snprintf(cal.loops[1].name, sizeof(cal.loops[1].name), "sk_branch");
	cal.loops[1].samples = 900, cal.loops[1].attrib[0] = 1;
	/* a loop that misses names the exposure, sample-weighted, used or not */
	cal.loops[1].exposure = 0.9;
	est_calib_combine(&cal);
	assert_true(fabs(cal.exposure - 0.9) < 1e-9);
	assert_true(fabs(cal.attrib[1] - 0.75) < 1e-9);	/* the unused loop left out */
	assert_int_equal(cal.skid, 2);			/* 25% still reaches position 1 */
	assert_true(fabs(cal.skid_share - 0.5) < 1e-9);
	assert_int_equal(tu_workspace(dir, sizeof(dir), "calibrate"), 0);
	snprintf(path, sizeof(path), "%s/calibration.txt", dir);
	assert_int_equal(est_calib_write(path, &cal, &err), 0);
	assert_int_equal(est_calib_read(path, &back, &err), 0);
	assert_string_equal(back.model, "zen4");
	assert_string_equal(back.event, "cpu-clock");
	assert_int_equal(back.skid, 2);
	assert_int_equal((int)back.nloops, 2);
	assert_string_equal(back.loops[1].name, "sk_branch");
	assert_int_equal(back.loops[0].used, 1);
	for (int k = 0; k <= EST_CALIB_K; k++)
		assert_true(fabs(back.attrib[k] - cal.attrib[k]) < 1e-4);
	assert_true(fabs(back.skid_share - cal.skid_share) < 1e-4);
	est_opts_default(&o);
	est_opts_calibrated(&o, &back);
	assert_int_equal(o.skid, 2);
	assert_true(fabs(o.skid_share - 0.5) < 1e-4);
	assert_true(fabs(back.exposure - 0.9) < 1e-4);	/* stall_exposure */
	assert_true(fabs(o.stall_exposure - 0.9) < 1e-4);
	o.stall_exposure = -1;			/* destalling off stays off */
	est_opts_calibrated(&o, &back);
	assert_true(o.stall_exposure < 0);
	/* the report: the exposure measured; or a loop beyond the model whose
	 * witness saw nothing, named (report/model.c) */
	calib_text(&back, "the timer shows 0.90 of its waiter's cycles");
	back.loops[1].exposure = 0, back.loops[1].model_iter = 5, back.loops[1].cyc_iter = 480;
	est_calib_combine(&back);
	calib_text(&back, "no sample on the witness after sk_branch's waiter");
	back.loops[1].cyc_iter = 5, back.loops[1].used = 1;
	est_calib_combine(&back);
	calib_text(&back, "not measured (no loop missed)");
	/* a later version is refused, not misread */
	tu_write_text(path, "version 2\nmodel zen4\nskid 1\n");
	assert_int_equal(est_calib_read(path, &back, &err), -EINVAL);
	tu_write_text(path, "version 1\nmodel zen4\nskid 9\n");
	assert_int_equal(est_calib_read(path, &back, &err), -EINVAL);
	remove(path);
	assert_int_equal(est_calib_read(path, &back, &err), -ENOENT);
	rmdir(dir);
	assert_int_equal(est_calib_path("/db", "zen4", dbpath, sizeof(dbpath)), 0);
	assert_string_equal(dbpath, "/db/calibration-zen4.txt");
}

/*
 * `dcpi calibrate` with nothing but the binary: copied alone (as make install
 * puts it) into an empty directory and run from another, the source and
 * build trees out of reach.  The skid loops are its own (dcpi __skidloops);
 * --model times the probes and writes a model file that tools then use.
 */
static void test_installed_binary(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	char dir[64], cmd[2048], out[16384], *scratch;
	int rc;

	(void)state;
#ifdef __SANITIZE_ADDRESS__
	/* calibration runs dcpi's own loops under callgrind: an ASan-built dcpi
	 * cannot run under valgrind */
	skip();
	return;
#endif
	if (!bin || access(bin, X_OK) || system("valgrind --version >/dev/null 2>&1")) {
		skip();
		return;
	}
	assert_int_equal(tu_workspace(dir, sizeof(dir), "inst"), 0);
	assert_int_equal(tu_sh("mkdir -p %s/usr/bin %s/run && install -m 755 '%s' "
			       "%s/usr/bin/dcpi", dir, dir, bin, dir), 0);
	/* the loops run as a hidden command, and are not in the command list */
	snprintf(cmd, sizeof(cmd), "cd %s/run && ../usr/bin/dcpi __skidloops 1", dir);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_true(strlen(out) > 1);
	snprintf(cmd, sizeof(cmd), "%s/usr/bin/dcpi help", dir);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_null(strstr(out, "__skidloops"));
	/* skid calibration: record and callgrind of the binary itself (not of an
	 * ASan build: valgrind cannot run one) */
	if (getenv("ASAN_OPTIONS"))
		goto tables;
	snprintf(cmd, sizeof(cmd), "cd %s/run && env -u DCPI_MODEL DCPI_MODEL_DIR=%s/models "
		 "../usr/bin/dcpi calibrate --no-model --scale 100 --db db --keep 2>&1", dir, dir);
	rc = tu_sh_out(cmd, out, sizeof(out));
	scratch = strstr(out, "scratch kept in ");
	if (scratch) {
		char log[4096] = "", sdir[256];

		scratch += strlen("scratch kept in ");
		snprintf(sdir, sizeof(sdir), "%.*s", (int)strcspn(scratch, "\n"), scratch);
		snprintf(cmd, sizeof(cmd), "cat '%s/record.log' 2>/dev/null; rm -rf '%s'", sdir,
			 sdir);
		tu_sh_out(cmd, log, sizeof(log));
		if (rc)
			fail_msg("%s\nrecord.log: %s", out, log);
	}
	if (rc)
		fail_msg("%s", out);
	assert_non_null(strstr(out, "sk_imul"));
	assert_non_null(strstr(out, "written to db/calibration-"));
tables:
	/* the tables: one quick pass, a model file, and the tools use it */
	snprintf(cmd, sizeof(cmd), "cd %s/run && env -u DCPI_MODEL DCPI_MODEL_DIR=%s/models "
		 "../usr/bin/dcpi calibrate --model --passes 1 2>&1 && "
		 "DCPI_MODEL_DIR=%s/models ../usr/bin/dcpi model --show", dir, dir, dir);
	if (tu_sh_out(cmd, out, sizeof(out)))
		fail_msg("%s", out);
	assert_non_null(strstr(out, "probes, pass 1 of 1"));
	assert_non_null(strstr(out, "-calibrated: file "));
	assert_non_null(strstr(out, "by probe lat."));
	assert_int_equal(tu_sh("rm -rf '%s'", dir), 0);
}

/* probes[i]'s line for a measurements file: name, hex, cycles (zen4's figure
 * times k). */
static void meas_line(FILE *f, const struct model_probe *p, double k)
{
	struct cfg_insn *insns;
	struct sched_block b;
	size_t n;

	assert_int_equal(cfg_decode(p->bytes, p->len, 0, &insns, &n, NULL), 0);
	assert_int_equal(model_schedule(model_by_name("zen4"), insns, n, NULL, 0, &b, NULL), 0);
	fprintf(f, "%s\t", p->name);
	for (size_t j = 0; j < p->len; j++)
		fprintf(f, "%s%02x", j ? " " : "", p->bytes[j]);
	fprintf(f, "\t%.3f\n", b.steady_cycles * k);
	sched_block_free(&b);
	free(insns);
}

/*
 * `dcpi calibrate --refit F`: the fit on saved probe cycles, no timing.  Zen
 * 4's figures for the load chains, fitted from Skylake's table, give Zen 4's
 * load latencies with their probes as sources; a bad number is an error
 * naming the line; a row timed as other bytes is left out with a note; a file
 * without any probe is an error.
 */
static void test_refit(void **state)
{
	static const char *const want[] = { "lat.load", "lat.loadop", "lat.cload",
					    "lat.cload_bid", "lat.sxload", "lat.sxload_b" };
	const char *bin = getenv("DCPI_BIN");
	const struct model_probe *p;
	size_t np = model_probes(&p);
	char dir[64], path[128], cmd[1024], out[16384];
	FILE *f;

	(void)state;
	if (!bin || access(bin, X_OK)) {
		skip();
		return;
	}
	assert_int_equal(tu_workspace(dir, sizeof(dir), "refit"), 0);
	snprintf(path, sizeof(path), "%s/m.tsv", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "name\thex\tcycles\n");
	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
		for (size_t i = 0; i < np; i++)
			if (!strcmp(p[i].name, want[w]))
				meas_line(f, &p[i], 1.0);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' calibrate --refit %s --base skylake "
		 "--model-file %s/fit.model 2>&1 && cat %s/fit.model", bin, path, dir, dir);
	if (tu_sh_out(cmd, out, sizeof(out)))
		fail_msg("%s", out);
	assert_non_null(strstr(out, "fitted to 6 probes"));
	assert_non_null(strstr(out, "probe cycles from"));
	assert_non_null(strstr(out, "param load_lat 4 measured"));
	assert_non_null(strstr(out, "param load_lat_complex 1 measured"));
	assert_non_null(strstr(out, "by probe lat.cload,lat.cload_bid"));
	assert_non_null(strstr(out, "param load_lat_sext 1 measured"));

	/* a row with other bytes is left out; a cycles field that is no number
	 * stops it at that line */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "name\thex\tcycles\nlat.load\t90 90\t32.0\n");
	meas_line(f, &p[0], 1.0);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' calibrate --refit %s --model-file %s/b.model 2>&1",
		 bin, path, dir);
	if (tu_sh_out(cmd, out, sizeof(out)))
		fail_msg("%s", out);
	assert_non_null(strstr(out, ":2: lat.load was timed as other bytes"));
	assert_non_null(strstr(out, "fitted to 1 probes"));
	f = fopen(path, "a");
	assert_non_null(f);
	fprintf(f, "%s\t90\tfast\n", p[1].name);
	fclose(f);
	assert_int_not_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "m.tsv:4: "));
	assert_non_null(strstr(out, "not a positive number"));
	/* nothing of ours in it, and no file at all */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "name\thex\tcycles\nnot.a.probe\t90\t1.0\n");
	fclose(f);
	assert_int_not_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "no probe of this dcpi's in it"));
	snprintf(cmd, sizeof(cmd), "'%s' calibrate --refit %s/none --model-file %s/b.model 2>&1",
		 bin, dir, dir);
	assert_int_not_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "none: No such file"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

TU_MAIN(NULL, NULL,
	cmocka_unit_test(test_fit_known_skid),
	cmocka_unit_test(test_file_round_trip),
	cmocka_unit_test(test_installed_binary),
	cmocka_unit_test(test_refit))
