/*
 * tools/cmd_model.c - dcpi model: the best-case schedule (DCPI paper sec.
 * 6.1.3, 6.3) of each basic block of a procedure, or of raw instruction bytes
 * taken as one loop body: per instruction dispatch, issue, complete and
 * retire cycles, M_i, and the reason and culprit of static stalls
 * (report/model.c prints them); --show, the table's sources.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/report.h"
#include "tools.h"

struct model_args {
	const char *model, *image, *proc, *hex;
	int json, list, show;
};

static const char model_usage[] =
	"usage: dcpi model [--model NAME] (--image FILE PROC | --hex \"48 01 d8 ...\") [--json]\n"
	"       dcpi model [--model NAME] --show\n"
	"      --show         which table is in use and where each number came from\n"
	"  -m, --model NAME   pipeline model (default: from CPUID); --list-models\n"
	"  -i, --image FILE   ELF file; PROC is a name (with or without\n"
	"                     parameters), a mangled name, or 0xADDRESS\n"
	"  -x, --hex BYTES    instruction bytes in hex, scheduled as one loop body\n"
	"      --json         machine-readable output\n";

/* "48 01 d8", "4801d8", "0x48,0x01" -> bytes.  -EINVAL on a stray char. */
static int parse_hex(const char *s, uint8_t **out, size_t *n)
{
	size_t len = strlen(s), cnt = 0;
	uint8_t *b = malloc(len / 2 + 1);
	int nib = -1;

	if (!b)
		return -ENOMEM;
	for (; *s; s++) {
		int v;

		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && nib < 0) {
			s++;
			continue;
		}
		if (isspace((unsigned char)*s) || *s == ',') {
			if (nib >= 0)
				b[cnt++] = (uint8_t)nib;
			nib = -1;
			continue;
		}
		if (!isxdigit((unsigned char)*s)) {
			free(b);
			return -EINVAL;
		}
		v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		if (nib < 0) {
			nib = v;
		} else {
			b[cnt++] = (uint8_t)(nib << 4 | v);
			nib = -1;
		}
	}
	if (nib >= 0)
		b[cnt++] = (uint8_t)nib;
	*out = b;
	*n = cnt;
	return 0;
}

static int run_hex(const struct model *m, const struct model_args *a)
{
	struct cfg_insn *insns = NULL;
	struct dcpi_err err = { 0 };
	uint8_t *bytes;
	size_t nbytes, n;
	int rc, first = 1;

	rc = parse_hex(a->hex, &bytes, &nbytes);
	if (rc == -ENOMEM)
		return tool_fail("--hex: out of memory");
	if (rc < 0 || !nbytes)
		return tool_fail("--hex: not hex bytes: %s", a->hex);
	rc = cfg_decode(bytes, nbytes, 0, &insns, &n, &err);
	free(bytes);
	if (rc < 0) {
		free(insns);
		return tool_fail("--hex: %s", err.msg);
	}
	rc = rep_model_block(stdout, m, insns, n, a->json, &first, &err);
	if (rc < 0)
		rc = tool_fail("schedule: %s", err.msg);
	free(insns);
	return rc;
}

static int run_image(const struct model *m, const struct model_args *a)
{
	struct dcpi_err err = { 0 };
	const struct img_proc *proc;
	struct image *img = NULL;
	struct cfg *cfg = NULL;
	int rc = 1, first = 1;

	if (img_open(a->image, IMG_NO_DWARF, &img, &err) < 0)
		return tool_fail("%s", err.msg);
	if (img_proc_find(img, a->proc, &proc, &err) < 0) {
		tool_fail("%s", err.msg);
		goto out;
	}
	if (cfg_build(img, proc, &cfg, &err) < 0) {
		tool_fail("%s: %s", proc->name, err.msg);
		goto out;
	}
	for (size_t i = 0; i < cfg->nblocks; i++) {
		const struct cfg_block *bl = &cfg->blocks[i];

		if (!bl->n)
			continue;
		if (rep_model_block(stdout, m, &cfg->insns[bl->first], bl->n, a->json, &first,
				    &err) < 0) {
			tool_fail("schedule: %s", err.msg);
			goto out;
		}
	}
	rc = 0;
out:
	cfg_free(cfg);
	img_close(img);
	return rc;
}

static int parse_args(int argc, char **argv, struct model_args *a)
{
	struct tool_opts o = { .usage = model_usage, .shortopts = "m:i:x:h",
			       .longopts = "model=m image=i hex=x list-models:l show:s",
			       .common = TOOL_O_JSON };
	int c;

	while ((c = tool_opt_next(&o, argc, argv)) > 0) {
		switch (c) {
		case 'm': a->model = optarg; break;
		case 'i': a->image = optarg; break;
		case 'x': a->hex = optarg; break;
		case 'l': a->list = 1; break;
		case 's': a->show = 1; break;
		}
	}
	if (c < 0)
		return TOOL_OPT_STATUS(c);
	a->json = o.val.json;
	if (a->image && optind < argc)
		a->proc = argv[optind++];
	if (optind < argc || (!a->list && !a->show && !a->hex == !a->image) ||
	    (a->image && !a->proc)) {
		fputs(model_usage, stderr);
		return 1;
	}
	return -1;
}

int cmd_model(int argc, char **argv)
{
	struct model_args a = { 0 };
	const struct model *m;
	int rc;

	tool_name = "dcpi model";
	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.list) {
		const char *names[16];
		size_t n = model_list(names, 16);

		for (size_t i = 0; i < n && i < 16; i++)
			printf("%s%s\n", names[i],
			       model_by_name(names[i]) == model_for_this_cpu() ?
			       " (this cpu)" : "");
		if (model_origin(model_for_this_cpu()))
			printf("%s (this cpu: %s)\n", model_name(model_for_this_cpu()),
			       model_origin(model_for_this_cpu()));
		return 0;
	}
	m = a.model ? model_by_name(a.model) : model_for_this_cpu();
	if (!m)
		return tool_fail("--model %s: no such model (try --list-models)", a.model);
	if (!a.model && model_file_status()[0])
		fprintf(stderr, "%s: warning: %s\n", tool_name, model_file_status());
	if (a.show)
		return rep_model_show(stdout, m, !a.model), 0;
	if (a.json)
		printf("{\"model\": \"%s\", \"blocks\": [", model_name(m));
	rc = a.hex ? run_hex(m, &a) : run_image(m, &a);
	if (a.json)
		printf("]}\n");
	return rc;
}
