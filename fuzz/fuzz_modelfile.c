/*
 * fuzz_modelfile.c - libFuzzer target for the model file reader
 * (culprit/model/modelfile.c, docs/models.md "Model files").
 *
 * Each input is parsed as a model file; whatever parses must schedule a
 * small block without error (its numbers are in range) and be freed.  A
 * second parse puts a valid header in front of the input, so the fuzzer
 * reaches the param, class and port lines without having to find it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/model.h"

static const uint8_t body[] = { 0x48, 0x0f, 0xaf, 0xc0, 0xf2, 0x0f, 0x58, 0xc1, 0x48, 0x89,
				0x07, 0x48, 0x8b, 0x07 };

static void parse_once(const char *buf, size_t len)
{
	struct dcpi_err err = { 0 };
	struct cfg_insn *insns = NULL;
	struct sched_block b;
	struct model *m;
	size_t n;

	if (model_file_parse(buf, len, "fuzz.model", NULL, &m, &err) < 0)
		return;
	if (cfg_decode(body, sizeof(body), 0, &insns, &n, &err) == 0) {
		if (model_schedule(m, insns, n, NULL, 0, &b, &err) < 0)
			abort();
		sched_block_free(&b);
	}
	free(insns);
	model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char head[] = "dcpi-model 1\ncpu AuthenticAMD 26 2 1\nbase zen5\n";
	char *b;

	parse_once((const char *)data, size);
	b = malloc(sizeof(head) + size);
	if (!b)
		return 0;
	memcpy(b, head, sizeof(head) - 1);
	memcpy(b + sizeof(head) - 1, data, size);
	parse_once(b, sizeof(head) - 1 + size);
	free(b);
	return 0;
}
