/*
 * report/model.c - what `dcpi model` prints: the best-case schedule of a
 * block (DCPI paper sec. 6.1.3, 6.3; culprit/model/schedule.c) per
 * instruction - dispatch, issue, complete and retire cycles, M_i, the reason
 * and culprit of static stalls - as text or JSON, and `--show`: which table
 * is in use and the source of every number in it (docs/models.md).
 */
#include <stdio.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/model.h"
#include "dcpi/report.h"

static void print_text(FILE *f, const struct cfg_insn *insns, const struct sched_block *b)
{
	fprintf(f, "block 0x%llx: %d cycles single pass, %.2f cycles/iteration as a loop",
		(unsigned long long)insns[0].addr, b->cycles, b->steady_cycles);
	if (b->loop_lines)
		fprintf(f, " (front end: its code spans %d lines)", b->loop_lines);
	if (b->unknown_forms)
		fprintf(f, " (%u unknown forms)", b->unknown_forms);
	fprintf(f, "\n  %-10s %-36s %4s %4s %4s %4s %3s %6s  %s\n", "address", "instruction",
		"D", "I", "C", "R", "M", "M/it", "reason");
	for (size_t i = 0; i < b->n; i++) {
		const struct sched_insn *s = &b->insns[i];
		char text[CFG_TEXT_MAX];

		fprintf(f, "  %-10llx %-36.36s %4d %4d %4d %4d %3d %6.2f  %s",
			(unsigned long long)s->address,
			cfg_insn_text(&insns[i], text, sizeof(text)), s->dispatch, s->issue,
			s->complete, s->retire, s->m, s->m_loop,
			s->reason ? model_reason_name(s->reason) : "");
		if (s->culprit >= 0)
			fprintf(f, " <- 0x%llx", (unsigned long long)b->insns[s->culprit].address);
		if (s->fused)
			fprintf(f, " (fused)");
		if (!s->class_known)
			fprintf(f, " (unknown form)");
		fputc('\n', f);
	}
}

static void print_json_block(FILE *f, const struct cfg_insn *insns, const struct sched_block *b,
			     int first)
{
	fprintf(f, "%s{\"start\": \"0x%llx\", \"cycles\": %d, \"steady_cycles\": %.3f, "
		"\"loop_lines\": %d, \"unknown_forms\": %u, \"instructions\": [",
		first ? "" : ", ",
		(unsigned long long)insns[0].addr, b->cycles, b->steady_cycles, b->loop_lines,
		b->unknown_forms);
	for (size_t i = 0; i < b->n; i++) {
		const struct sched_insn *s = &b->insns[i];
		char text[CFG_TEXT_MAX];

		fprintf(f, "%s{\"address\": \"0x%llx\", \"text\": ", i ? ", " : "",
			(unsigned long long)s->address);
		rep_json_str(f, cfg_insn_text(&insns[i], text, sizeof(text)));
		fprintf(f, ", \"m\": %d, \"m_loop\": %.3f, \"dispatch\": %d, \"issue\": %d, "
			"\"complete\": %d, \"retire\": %d, \"reason\": \"%s\", \"culprit\": ",
			s->m, s->m_loop, s->dispatch, s->issue, s->complete, s->retire,
			model_reason_name(s->reason));
		if (s->culprit >= 0)
			fprintf(f, "\"0x%llx\"", (unsigned long long)b->insns[s->culprit].address);
		else
			fprintf(f, "null");
		fprintf(f, ", \"known\": %s}", s->class_known ? "true" : "false");
	}
	fprintf(f, "]}");
}

int rep_model_block(FILE *f, const struct model *m, const struct cfg_insn *insns, size_t n,
		    int json, int *first, struct dcpi_err *err)
{
	struct sched_block b;
	int rc;

	if (!n)
		return 0;
	rc = model_schedule(m, insns, n, NULL, 0, &b, err);
	if (rc < 0)
		return rc;
	if (json)
		print_json_block(f, insns, &b, *first);
	else
		print_text(f, insns, &b);
	*first = 0;
	sched_block_free(&b);
	return 0;
}

/* Where the table came from: this CPU, the model file, or why not. */
static void show_origin(FILE *f, const struct model *m, int auto_chosen)
{
	struct model_cpuid id;
	char path[4096];

	if (model_cpuid_this(&id) == 0)
		fprintf(f, "this cpu: %s family %u model %u stepping %u\n", id.vendor, id.family,
			id.model, id.stepping);
	if (model_origin(m))
		fprintf(f, "model %s: file %s, refining the shipped table %s\n", m->name,
			model_origin(m), model_base(m)->name);
	else
		fprintf(f, "model %s: the shipped table (%s)\n", m->name, m->desc);
	if (!auto_chosen || model_origin(m))
		return;
	if (model_file_status()[0])
		fprintf(f, "model file not used: %s\n", model_file_status());
	else if (model_cpuid_this(&id) == 0 && model_file_path(&id, path, sizeof(path)) == 0)
		fprintf(f, "no model file for this cpu (%s): run dcpi calibrate --fit-model\n", path);
}

static void show_class(FILE *f, const struct model *m, size_t c)
{
	static const char *const field[] = { "lat", "uops", "ports", "busy" };
	const char *name = model_class_name(c), *s0;
	const struct model_class *r = model_class_row(m, name);
	char ports[256];
	int same = 1;

	if (!r)
		return;
	model_ports_text(m, r->ports, ports, sizeof(ports));
	fprintf(f, "  %-12s lat %3u  uops %u  busy %3u  ports %-24s", name, r->lat, r->uops,
		r->busy, ports);
	s0 = model_class_source(m, name, field[0]);
	for (int i = 1; i < 4; i++)
		same &= !strcmp(s0, model_class_source(m, name, field[i]));
	if (same) {
		fprintf(f, " %s\n", s0);
		return;
	}
	for (int i = 0; i < 4; i++)
		fprintf(f, "%s%s: %s", i ? "; " : " ", field[i],
			model_class_source(m, name, field[i]));
	fputc('\n', f);
}

void rep_model_show(FILE *f, const struct model *m, int auto_chosen)
{
	char v[256];

	show_origin(f, m, auto_chosen);
	fprintf(f, "ports:");
	for (int p = 0; p < m->nports; p++)
		fprintf(f, " %s", m->port_names[p]);
	fprintf(f, "\nmachine parameters:\n");
	for (size_t i = 0; i < model_param_count(); i++) {
		model_param_text(m, i, v, sizeof(v));
		fprintf(f, "  %-20s %-24s %s\n", model_param_name(i), v,
			model_param_source(m, model_param_name(i)));
	}
	fprintf(f, "instruction classes:\n");
	for (size_t c = 0; c < model_class_count(); c++)
		show_class(f, m, c);
}

/* The loop whose load missed: of those the model did not hold, the one
 * farthest beyond it; NULL when none. */
static const char *missed(const struct est_calibration *cal)
{
	const char *name = NULL;
	double worst = 1;

	for (size_t l = 0; l < cal->nloops; l++) {
		const struct est_calib_loop *lp = &cal->loops[l];

		if (!lp->used && lp->model_iter > 0 && lp->cyc_iter / lp->model_iter > worst)
			worst = lp->cyc_iter / lp->model_iter, name = lp->name;
	}
	return name;
}

/* What `dcpi calibrate` measured (estimate/calibrate/): per loop, where its
 * samples land, and the machine's figures; the file it went to. */
void rep_calibration_text(FILE *f, const struct est_calibration *cal, const char *path)
{
	fprintf(f, "calibration of model %s, event %s, 1 sample = %.0f cycles\n", cal->model,
	       cal->event, cal->cycles_per_sample);
	fprintf(f, "%-10s %7s %8s %8s %6s  %-29s %6s %6s %6s %5s\n", "loop", "samples", "cyc/it",
	       "model/it", "used", "lands k later: 0    1    2    3    4", "cross", "head",
	       "headEx", "fit");
	for (size_t l = 0; l < cal->nloops; l++) {
		const struct est_calib_loop *lp = &cal->loops[l];

		fprintf(f, "%-10s %7.0f %8.2f %8.2f %6s  %15s", lp->name, lp->samples, lp->cyc_iter,
		       lp->model_iter, lp->used ? "yes" : "no", "");
		for (int k = 0; k <= EST_CALIB_K; k++)
			fprintf(f, "%4.0f%%", 100 * lp->attrib[k]);
		fprintf(f, " %5.1f%% %5.1f%% %5.1f%% %4.0f%%\n", 100 * lp->cross,
		       100 * lp->head_samples, 100 * lp->head_insns, 100 * (1 - lp->residual));
	}
	fprintf(f, "%-10s %42s", "machine", "");
	for (int k = 0; k <= EST_CALIB_K; k++)
		fprintf(f, "%4.0f%%", 100 * cal->attrib[k]);
	fprintf(f, " %5.1f%% %5.1f%% %5.1f%%\n", 100 * cal->cross, 100 * cal->head_samples,
	       100 * cal->head_insns);
	fprintf(f, "block-leading instructions: %.1f%% of the executed instructions, %.1f%% of "
	       "the samples\n", 100 * cal->head_insns, 100 * cal->head_samples);
	fprintf(f, "samples in another block than the model places their cycles: %.1f%%\n",
	       100 * cal->block_tv);
	fprintf(f, "skid window: %d instruction%s, %.0f%% of their samples from the block before\n",
	       cal->skid, cal->skid > 1 ? "s" : "", 100 * cal->skid_share);
	if (cal->exposure > 0)
		fprintf(f, "after a missing load: the timer shows %.2f of its waiter's cycles "
		       "(sk_miss; estimate/destall.c's f, %.2f when not measured)\n",
		       cal->exposure, EST_STALL_EXPOSURE);
	else if (missed(cal))
		fprintf(f, "after a missing load: no sample on the witness after %s's waiter "
		       "(this machine shows too little to measure here; every recording measures "
		       "its own, collect/calibrate.c cal_exposure)\n", missed(cal));
	else
		fprintf(f, "after a missing load: not measured (no loop missed), f = %.2f\n",
		       EST_STALL_EXPOSURE);
	fprintf(f, "written to %s\n", path);
}
