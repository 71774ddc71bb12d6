/*
 * test_modelfile.c - model files (culprit/model/modelfile.c, docs/models.md "Model
 * files"): a model changed through model_set_* is written and read back to
 * the same schedules and sources; every kind of bad input is refused with
 * the file, the line and the reason, and leaves no model; the per-machine
 * path follows $DCPI_MODEL_DIR / $XDG_DATA_HOME / $HOME; model_for_this_cpu
 * picks up a file made for this CPU and `dcpi model --show` says where each
 * number came from, or why a bad file was not used.
 */
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
#include "dcpi/model.h"
#include "testutil.h"
#include "tu_main.h"

/* addsd %xmm1,%xmm0 chain; 4 independent adds; imul chain */
static const uint8_t fadd_chain[] = { 0xf2, 0x0f, 0x58, 0xc1 };
static const uint8_t add4[] = { 0x48, 0x01, 0xc0, 0x48, 0x01, 0xdb, 0x48, 0x01, 0xc9,
				0x48, 0x01, 0xd2 };
static const uint8_t imul_chain[] = { 0x48, 0x0f, 0xaf, 0xc0 };

static double steady(const struct model *m, const uint8_t *b, size_t len)
{
	struct dcpi_err err = { 0 };
	struct cfg_insn *insns;
	struct sched_block sb;
	size_t n;
	double c;

	assert_int_equal(cfg_decode(b, len, 0, &insns, &n, &err), 0);
	assert_int_equal(model_schedule(m, insns, n, NULL, 0, &sb, &err), 0);
	c = sb.steady_cycles;
	sched_block_free(&sb);
	free(insns);
	return c;
}

static char tmpdir[256];

static int setup(void **state)
{
	return tu_ws_setup(state, tmpdir, sizeof(tmpdir), "modelfile");
}

static const struct model_cpuid cpu = { "AuthenticAMD", 26, 2, 1 };

static void test_round_trip(void **state)
{
	struct dcpi_err err = { 0 };
	struct model *m, *r;
	char path[PROF_PATH_MAX];

	(void)state;
	m = model_copy(model_by_name("zen3"), "zen3-calibrated", &err);
	assert_non_null(m);
	assert_true(steady(m, fadd_chain, sizeof(fadd_chain)) == 3.0);
	assert_true(steady(m, add4, sizeof(add4)) == 1.0);
	assert_int_equal(model_add_port(m, "alu4", "measured by probe tp.add", &err), 17);
	assert_int_equal(model_set_class(m, "fadd", "lat", "2", "measured 2026-11-23 by probe "
					 "lat.fadd", &err), 0);
	assert_int_equal(model_set_class(m, "imul", "lat", "5", "", &err), 0);
	assert_int_equal(model_set_param(m, "dispatch_width", "2", "test", &err), 0);
	assert_int_equal(model_set_param(m, "alu_ports", "alu0,alu1,alu2,alu3,alu4", "t", &err),
			 0);
	assert_int_equal(model_set_class(m, "alu_fuse", "ports", "alu0,alu1,alu2,alu3,alu4",
					 "t", &err), 0);
	assert_true(steady(m, fadd_chain, sizeof(fadd_chain)) == 2.0);
	assert_true(steady(m, imul_chain, sizeof(imul_chain)) == 5.0);
	assert_true(steady(m, add4, sizeof(add4)) == 2.0);	/* dispatch 2 wide */
	/* the shipped table is untouched */
	assert_true(steady(model_by_name("zen3"), fadd_chain, sizeof(fadd_chain)) == 3.0);

	snprintf(path, sizeof(path), "%s/rt.model", tmpdir);
	assert_int_equal(model_file_write(path, m, &cpu, &err), 0);
	assert_int_equal(model_file_read(path, &cpu, &r, &err), 0);
	assert_string_equal(r->name, "zen3-calibrated");
	assert_string_equal(model_base(r)->name, "zen3");
	assert_string_equal(model_origin(r), path);
	assert_int_equal(r->nports, 18);
	assert_true(steady(r, fadd_chain, sizeof(fadd_chain)) == 2.0);
	assert_true(steady(r, imul_chain, sizeof(imul_chain)) == 5.0);
	assert_true(steady(r, add4, sizeof(add4)) == 2.0);
	assert_string_equal(model_class_source(r, "fadd", "lat"),
			    "measured 2026-11-23 by probe lat.fadd");
	assert_string_equal(model_class_source(r, "fadd", "busy"), "shipped");
	assert_string_equal(model_class_source(r, "imul", "lat"), "model file");
	assert_string_equal(model_param_source(r, "dispatch_width"), "test");
	assert_string_equal(model_param_source(r, "rob_size"), "shipped");
	assert_string_equal(model_class_source(model_by_name("zen5"), "fadd", "lat"), "shipped");
	/* a class zen3's table does not use is turned on by setting it, on a port
	 * of its own, and read back so */
	assert_null(model_class_row(r, "lock"));
	assert_int_equal(model_set_class(r, "lock", "lat", "20", "measured", &err), 0);
	assert_non_null(model_class_row(r, "lock"));
	assert_int_equal(model_class_row(r, "lock")->lat, 20);
	assert_string_equal(r->port_names[r->nports - 1], "lock");
	assert_int_equal(model_file_write(path, r, &cpu, &err), 0);
	model_free(r);
	assert_int_equal(model_file_read(path, &cpu, &r, &err), 0);
	assert_int_equal(model_class_row(r, "lock")->lat, 20);
	assert_true(steady(r, fadd_chain, sizeof(fadd_chain)) == 2.0);
	/* another CPU's file is refused */
	{
		struct model_cpuid other = cpu;
		struct model *o;

		other.stepping = 0;
		assert_true(model_file_read(path, &other, &o, &err) < 0);
		assert_null(o);
		assert_non_null(strstr(err.msg, "stepping 1"));
	}
	model_free(r);
	model_free(m);
}

struct bad_case {
	const char *text, *why;
	int line;
};

static const struct bad_case bad_cases[] = {
	{ "", "empty", 0 },
	{ "hello\n", "not a dcpi model file", 1 },
	{ "dcpi-model 2\n", "unsupported version", 1 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26\n", "expected cpu", 2 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 x\n", "expected cpu", 2 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\n", "no base line", 0 },
	{ "dcpi-model 1\nbase zen5\n", "no cpu line", 0 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase pentium\n", "no shipped model", 3 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nbase zen4\n", "second base", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nparam load_lat 4\n", "base line must", 3 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nfrob 1\n", "unknown directive", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nparam nosuch 4\n",
	  "no machine parameter", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nparam load_lat 99999\n",
	  "not a number in", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nparam load_lat\n",
	  "expected param", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nparam alu_ports alu9\n",
	  "not a list of ports", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass nosuch lat 1\n",
	  "no instruction class", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass fadd color 1\n",
	  "no field", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass fadd lat -1\n",
	  "not a number", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass fadd busy 0\n",
	  "not a number", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass fadd ports fp0,,zz\n",
	  "not a list of ports", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nport alu0\n", "already a port", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nport a,b\n", "not a port name", 4 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nport p1\nport p2\nport p3\n"
	  "port p4\nport p5\n", "at most", 8 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\nclass fadd lat 2 "
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", "source text too long", 4 },
	{ "dcpi-model 1\ndcpi-model 1\n", "second dcpi-model", 2 },
	{ "dcpi-model 1\ncpu AuthenticAMD 26 2 1 7\n", "trailing words", 2 },
};

static void test_bad_input(void **state)
{
	struct dcpi_err err;
	struct model *m;
	char want[64];

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		memset(&err, 0, sizeof(err));
		m = (struct model *)1;
		assert_true(model_file_parse(c->text, strlen(c->text), "t.model", NULL, &m,
					     &err) < 0);
		assert_null(m);
		if (!strstr(err.msg, c->why))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, c->why);
		snprintf(want, sizeof(want), c->line ? "t.model:%d: " : "t.model: ", c->line);
		if (strncmp(err.msg, want, strlen(want)))
			fail_msg("case %zu: \"%s\" does not start \"%s\"", i, err.msg, want);
	}
	/* a NUL byte, an overlong line, no error struct at all */
	assert_true(model_file_parse("dcpi-model 1\n\0", 14, "t.model", NULL, &m, &err) < 0);
	assert_non_null(strstr(err.msg, "t.model:2: NUL"));
	{
		char big[700];

		memset(big, 'a', sizeof(big));
		assert_true(model_file_parse(big, sizeof(big), "t.model", NULL, &m, &err) < 0);
		assert_non_null(strstr(err.msg, "line too long"));
	}
	assert_true(model_file_parse("x", 1, "t.model", NULL, &m, NULL) < 0);
	assert_true(model_file_read("/nonexistent/x.model", NULL, &m, &err) < 0);
	assert_non_null(strstr(err.msg, "/nonexistent/x.model"));
	/* comments, blank lines and a minimal file are fine */
	{
		const char *ok = "# c\n\ndcpi-model 1 # v\ncpu GenuineIntel 6 85 4\nbase skylake\n";

		assert_int_equal(model_file_parse(ok, strlen(ok), "t.model", NULL, &m, &err), 0);
	}
	assert_string_equal(m->name, "skylake-calibrated");
	model_free(m);
}

static void test_paths(void **state)
{
	char buf[512];

	(void)state;
	setenv("DCPI_MODEL_DIR", "/x/models", 1);
	assert_int_equal(model_file_path(&cpu, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/models/AuthenticAMD-26-2-1.model");
	unsetenv("DCPI_MODEL_DIR");
	setenv("XDG_DATA_HOME", "/xdg", 1);
	assert_int_equal(model_file_path(&cpu, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/xdg/dcpi/models/AuthenticAMD-26-2-1.model");
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/home/u", 1);
	assert_int_equal(model_file_path(&cpu, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/.local/share/dcpi/models/AuthenticAMD-26-2-1.model");
	assert_true(model_file_path(&cpu, buf, 10) < 0);
}

/* This CPU's file is used by model_for_this_cpu and shown with its sources;
 * a bad one is named with its line and the shipped table is used. */
static void test_this_cpu(void **state)
{
	const char *bin = getenv("DCPI_BIN");
	struct dcpi_err err = { 0 };
	struct model_cpuid id;
	struct model *m;
	const struct model *shipped;
	char path[512], cmd[1024], out[16384];
	FILE *f;

	(void)state;
	if (model_cpuid_this(&id) < 0) {
		skip();
		return;
	}
	shipped = model_for_cpuid(id.vendor, id.family, id.model);
	m = model_copy(shipped, NULL, &err);
	assert_non_null(m);
	assert_int_equal(model_set_class(m, "imul", "lat", "7", "measured by test", &err), 0);
	setenv("DCPI_MODEL_DIR", tmpdir, 1);
	unsetenv("DCPI_MODEL");
	assert_int_equal(model_file_path(&id, path, sizeof(path)), 0);
	assert_int_equal(model_file_write(path, m, &id, &err), 0);
	model_free(m);
	/* in process: the first call reads it */
	assert_string_not_equal(model_name(model_for_this_cpu()), shipped->name);
	assert_true(steady(model_for_this_cpu(), imul_chain, sizeof(imul_chain)) == 7.0);
	assert_string_equal(model_file_status(), "");
	assert_ptr_equal(model_by_name(model_name(model_for_this_cpu())), model_for_this_cpu());
	if (!bin || access(bin, X_OK)) {
		skip();
		return;
	}
	/* the binary runs natively: under valgrind its CPUID is not ours */
	snprintf(cmd, sizeof(cmd), "%s model --show --model zen5", bin);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_int_equal(sscanf(out, "this cpu: %15s family %u model %u stepping %u", id.vendor,
				&id.family, &id.model, &id.stepping), 4);
	shipped = model_for_cpuid(id.vendor, id.family, id.model);
	m = model_copy(shipped, NULL, &err);
	assert_int_equal(model_set_class(m, "imul", "lat", "7", "measured by test", &err), 0);
	assert_int_equal(model_file_path(&id, path, sizeof(path)), 0);
	assert_int_equal(model_file_write(path, m, &id, &err), 0);
	model_free(m);
	snprintf(cmd, sizeof(cmd), "DCPI_MODEL_DIR='%s' %s model --show 2>&1", tmpdir, bin);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, path));
	assert_non_null(strstr(out, "measured by test"));
	assert_non_null(strstr(out, "shipped"));
	/* bad file: the reason with its line, and the shipped table */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "dcpi-model 1\ncpu %s %u %u %u\nbase %s\nclass imul lat many\n", id.vendor,
		id.family, id.model, id.stepping, shipped->name);
	fclose(f);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, ":4: class imul lat: many is not a number"));
	snprintf(cmd, sizeof(cmd), "DCPI_MODEL_DIR='%s' %s model --json --hex '48 0f af c0' "
		 "2>/dev/null", tmpdir, bin);
	assert_int_equal(tu_sh_out(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"steady_cycles\": 3.000"));
}

TU_MAIN(setup, tu_ws_teardown,
	cmocka_unit_test(test_round_trip),
	cmocka_unit_test(test_bad_input),
	cmocka_unit_test(test_paths),
	cmocka_unit_test(test_this_cpu))
