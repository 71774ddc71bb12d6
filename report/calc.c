/*
 * calc.c - what dcpicalc prints: the paper's fig. 2 for one procedure (per
 * block the best-case and actual CPI and the executions, per instruction the
 * samples, CPI and stall bubbles with their culprits, source lines between),
 * its JSON, and the model's static schedule (--static).  tools/cmd_calc.c runs
 * the analysis and fills struct rep_calc; this file only renders it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/culprit.h"
#include "dcpi/data.h"
#include "dcpi/estimate.h"
#include "dcpi/image.h"
#include "dcpi/model.h"
#include "dcpi/paths.h"
#include "dcpi/report.h"
#include "dcpi/values.h"
#include "internal.h"

/* The JSON fields every report of one procedure opens with (no braces). */
void rep_json_damaged(FILE *f, const struct prof_db *db)
{
	const char *const *v;
	size_t n = db ? prof_db_damaged(db, &v) : 0;

	fprintf(f, "\"damaged\": [");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, i ? ", " : "");
		rep_json_str(f, v[i]);
	}
	fprintf(f, "]");
}

void rep_calc_json_head(FILE *f, const struct rep_calc *c)
{
	fprintf(f, "\"procedure\": ");
	rep_json_str(f, c->proc->name);
	fprintf(f, ", \"image\": ");
	rep_json_str(f, img_path(c->img));
	fprintf(f, ", \"epoch\": ");
	rep_json_str(f, c->epoch);
	fprintf(f, ", ");
	rep_json_damaged(f, c->db);
	fprintf(f, ", \"event\": ");
	rep_json_str(f, c->prof->event);
}

void rep_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void rep_json_str_or_null(FILE *f, const char *s)
{
	if (s)
		rep_json_str(f, s);
	else
		fprintf(f, "null");
}

static int block_hot(const struct rep_calc *c, size_t b)
{
	const struct est_block *eb = &c->r.blocks[b];
	double xmax = 0;

	if (c->a.all)
		return c->cfg->blocks[b].n > 0;
	if (!c->cfg->blocks[b].n)
		return 0;
	for (size_t k = 0; k < c->r.nblocks; k++)
		xmax = fmax(xmax, c->r.blocks[k].executions);
	return eb->samples >= 0.01 * c->total && eb->samples > 0 ? 1 :
	       xmax > 0 && eb->executions >= 0.01 * xmax;
}

static int in_block(const struct cfg *cfg, size_t b, uint32_t i)
{
	return i >= cfg->blocks[b].first && i < cfg->blocks[b].first + cfg->blocks[b].n;
}

/* The next of the replays (estimate/replay.c) from *k on whose load shows in
 * block b, *k moved past it; NULL when none is left. */
static const struct est_replay *next_replay(const struct rep_calc *c, size_t b, size_t *k)
{
	while (*k < c->nreplays) {
		const struct est_replay *rp = &c->replays[(*k)++];

		if (in_block(c->cfg, b, rp->shown))
			return rp;
	}
	return NULL;
}

/* "replayed": the loads of block b replayed (estimate/replay.c). */
static void json_replays(FILE *f, const struct rep_calc *c, size_t b)
{
	const struct est_replay *rp;
	int first = 1;

	for (size_t k = 0; (rp = next_replay(c, b, &k));) {
		fprintf(f, "%s{\"load\": \"0x%llx\", \"bytes\": %llu, \"element\": %u, "
			"\"addresses\": %zu, \"cycles\": %.6g, \"l1_cycles\": %.6g, "
			"\"extra\": %.6g, \"spread\": %.4g, \"bytes_range\": [%llu, %llu], "
			"\"cycles_range\": [%.6g, %.6g], \"count_spread\": %.4g}",
			first ? ", \"replayed\": [" : ", ",
			(unsigned long long)c->cfg->insns[rp->insn].addr,
			(unsigned long long)rp->bytes, rp->elem, rp->addrs, rp->walk.cycles,
			rp->walk.l1_cycles, rp->extra, rp->walk.spread,
			(unsigned long long)rp->bytes_lo, (unsigned long long)rp->bytes_hi,
			rp->cycles_lo, rp->cycles_hi, rp->spread);
		first = 0;
	}
	if (!first)
		fprintf(f, "]");
}

/* Where a block's best case came from: "best_source", and the figures. */
static void json_block_best(FILE *f, const struct rep_calc *c, size_t b)
{
	const struct est_meas_block *mb = c->have_meas ? &c->meas.blocks[b] : NULL;

	fprintf(f, "\"best_source\": \"%s\"",
	       mb && mb->source == EST_BEST_MEASURED ? "measured" : "modelled");
	if (!mb || !mb->tried)
		return;
	fprintf(f, ", \"measured_cycles\": %.6g, \"measured_median\": %.6g, "
	       "\"measured_spread\": %.4g, \"model_cycles\": %.6g, \"cached\": %s",
	       mb->source == EST_BEST_MEASURED ? mb->cycles : 0, mb->median, mb->spread,
	       mb->model, mb->cached ? "true" : "false");
	if (mb->lines)
		fprintf(f, ", \"front_end_lines\": %d", mb->lines);
	if (mb->why[0]) {
		fprintf(f, ", \"why_modelled\": ");
		rep_json_str(f, mb->why);
	}
}

/* The loops tried: one iteration along the dominant path each. */
static void json_loops(FILE *f, const struct rep_calc *c)
{
	fprintf(f, "\n], \"loops\": [");
	for (size_t l = 0; c->have_meas && l < c->meas.nloops; l++) {
		const struct est_meas_loop *ml = &c->meas.loops[l];

		fprintf(f, "%s\n  {\"header\": \"0x%llx\", \"path\": [", l ? "," : "",
		       (unsigned long long)c->cfg->blocks[c->cfg->loops[ml->loop].header].start);
		for (uint32_t k = 0; k < ml->npath; k++)
			fprintf(f, "%s\"0x%llx\"", k ? ", " : "",
			       (unsigned long long)c->cfg->blocks[ml->path[k]].start);
		fprintf(f, "], \"path_from\": \"%s\", \"best_source\": \"%s\", "
		       "\"cycles_per_iteration\": %.6g, \"measured_median\": %.6g, "
		       "\"measured_spread\": %.4g, \"model_cycles\": %.6g, \"cached\": %s",
		       ml->from_paths ? "path samples" : "static",
		       ml->source == EST_BEST_MEASURED ? "measured" : "modelled",
		       ml->source == EST_BEST_MEASURED ? ml->cycles : ml->model, ml->median,
		       ml->spread, ml->model, ml->cached ? "true" : "false");
		if (ml->lines)
			fprintf(f, ", \"front_end_lines\": %d", ml->lines);
		if (ml->why[0]) {
			fprintf(f, ", \"why_modelled\": ");
			rep_json_str(f, ml->why);
		}
		fprintf(f, "}");
	}
}

static void json_block_edges(FILE *f, const struct rep_calc *c)
{
	const struct cfg *cfg = c->cfg;

	fprintf(f, "\"blocks\": [");
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		const struct est_block *eb = &c->r.blocks[b];
		int cls = bl->cls;

		if (!bl->n)
			continue;
		fprintf(f, "%s\n  {\"start\": \"0x%llx\", \"end\": \"0x%llx\", \"executions\": %.17g, "
		       "\"best_cpi\": %.6g, \"actual_cpi\": %.6g, \"samples\": %.17g, "
		       "\"best_cycles\": %.6g, \"class\": %d, \"loop_depth\": %d, "
		       "\"class_source\": \"%s\", \"source\": \"%s\", \"observed\": %.17g, "
		       "\"interval\": [%.17g, %.17g], \"confidence\": \"%s\", ",
		       b ? "," : "", (unsigned long long)bl->start, (unsigned long long)bl->end,
		       eb->executions, eb->best_cpi, eb->actual_cpi, eb->samples, eb->best, cls,
		       bl->loop_depth,
		       cls >= 0 ? est_source_name(c->r.classes[cls].source) : "none",
		       c->pinfo.source ? est_bsource_name(c->pinfo.source[b]) : "windows",
		       c->pinfo.block_obs ? c->pinfo.block_obs[b] : 0, eb->lo, eb->hi,
		       est_conf_name(eb->conf));
		if (c->r.counted && c->r.counted[b])
			fprintf(f, "\"counted\": true, ");
		json_block_best(f, c, b);
		json_replays(f, c, b);
		fprintf(f, "}");
	}
	fprintf(f, "\n], \"edges\": [");
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];

		fprintf(f, "%s\n  {\"from\": \"0x%llx\", \"to\": ", e ? "," : "",
		       (unsigned long long)cfg->blocks[ed->from].start);
		if (ed->to == cfg->exit)
			fprintf(f, "\"exit\"");
		else
			fprintf(f, "\"0x%llx\"", (unsigned long long)cfg->blocks[ed->to].start);
		fprintf(f, ", \"kind\": \"%s\", \"executions\": %.17g, \"probability\": %.6g, "
		       "\"observed\": %.17g, \"interval\": [%.17g, %.17g], "
		       "\"confidence\": \"%s\"}",
		       cfg_edge_kind_name(ed->kind),
		       c->r.edges[e].executions, c->r.edges[e].prob,
		       c->pinfo.edge_obs ? c->pinfo.edge_obs[e] : 0, c->r.edges[e].lo,
		       c->r.edges[e].hi, est_conf_name(c->r.edges[e].conf));
	}
	json_loops(f, c);
	fprintf(f, "\n]}\n");
}

/* "paths": what the path samples contributed (null: none). */
static void json_paths(FILE *f, const struct rep_calc *c)
{
	const struct est_path_info *pi = &c->pinfo;

	fprintf(f, "\"paths\": ");
	if (!c->pp) {
		fprintf(f, "null,\n");
		return;
	}
	fprintf(f, "{\"source\": ");
	rep_json_str(f, c->pp->source);
	fprintf(f, ", \"used\": %s, \"bursts\": %.17g, \"transitions\": %.17g, "
	       "\"entries\": %.17g, \"unmatched\": %.17g, \"scale_rule\": \"%s\", "
	       "\"scale\": %.17g, \"scales\": {", pi->used ? "true" : "false", pi->bursts,
	       pi->transitions, pi->entries, pi->unmatched,
	       est_scale_rule_name(c->a.popts.rule), pi->scale);
	for (int r = 0; r < EST_SCALE_NRULES; r++)
		fprintf(f, "%s\"%s\": %.17g", r ? ", " : "",
		       est_scale_rule_name((enum est_scale_rule)r), pi->rule_scale[r]);
	fprintf(f, "}},\n");
}

/* The object the instruction's sampled accesses fell in (anonymous memory
 * is none), from the data profiles (report/mem.c); NULL when none. */
static const struct rep_mem_insn *object_of_insn(const struct rep_calc *c,
						  const struct cfg_insn *in)
{
	const struct rep_mem_insn *o;
	uint64_t off;

	if (!c->nobjs || img_vaddr_to_offset(c->img, in->addr, &off))
		return NULL;
	o = rep_mem_insn_find(c->objs, c->nobjs, off);
	return o && o->accesses && strcmp(o->kind, "anon") ? o : NULL;
}

static void json_object(FILE *f, const struct rep_calc *c, const struct cfg_insn *in)
{
	const struct rep_mem_insn *o = object_of_insn(c, in);

	fprintf(f, ", \"object\": ");
	if (!o) {
		fprintf(f, "null");
		return;
	}
	fprintf(f, "{\"name\": ");
	rep_json_str(f, o->object);
	fprintf(f, ", \"kind\": \"%s\", \"share\": %.4f, \"accesses\": %llu}", o->kind,
		(double)o->in_object / o->accesses, (unsigned long long)o->accesses);
}

void rep_calc_json(FILE *f, const struct rep_calc *c)
{
	const struct cfg *cfg = c->cfg;
	int first = 1;

	fprintf(f, "{");
	rep_calc_json_head(f, c);
	fprintf(f, ", \"cpu\": ");
	rep_json_str(f, c->have_meas ? c->meas.cpu : "");
	fprintf(f, ", \"measured\": %s, \"measure_seconds\": %.3f, \"timed\": %u, \"cached\": %u"
		", \"contended\": %u",
	       c->have_meas ? "true" : "false", c->meas.seconds, c->meas.timed, c->meas.cached,
	       c->meas.contended);
	if (!c->have_meas) {
		fprintf(f, ", \"why_not_measured\": ");
		rep_json_str(f, c->meas_why);
	}
	fprintf(f, ", \"calibration\": ");
	rep_json_str_or_null(f, c->have_cal ? c->cal_path : NULL);
	fprintf(f, ", \"stall_exposure\": %.6g, \"exposure\": ", c->a.opts.stall_exposure);
	rep_json_str_or_null(f, c->exposure_note && c->exposure_note[0] ? c->exposure_note : NULL);
	fprintf(f, ", \"model\": \"%s\", \"method\": \"%s\", \"window\": \"%s\", "
	       "\"cycles_per_sample\": %.17g, \"calibrated\": %s, \"clock_change\": %.6g, "
	       "\"clock_allowance\": %.6g, \"relative\": %s, \"samples\": %.17g, "
	       "\"flow_residual\": %.3g, \"missing_edges\": %s,\n",
	       model_name(c->model), est_method_name(c->r.method),
	       est_window_name(c->r.window), c->r.cycles_per_sample,
	       c->have_meta && c->meta.calibrated ? "true" : "false",
	       c->have_meta ? c->meta.clock_change : 0, exp(c->r.clock_h),
	       c->r.relative ? "true" : "false", c->total, c->r.flow_residual,
	       cfg->missing_edges ? "true" : "false");
	json_paths(f, c);
	if (c->r.calls > 0)
		fprintf(f, "\"calls\": {\"counted\": %.17g, \"scale_read\": %.6g, \"solved\": %s},\n",
			c->r.calls, c->r.calls_scale, c->r.calls_solved ? "true" : "false");
	if (c->r.classes_counted)
		fprintf(f, "\"counted_classes\": {\"classes\": %zu, \"solved\": %s},\n",
			c->r.classes_counted, c->r.calls_solved ? "true" : "false");
	if (c->have_meta && c->meta.canary_bursts)
		fprintf(f, "\"core\": {\"bursts\": %llu, \"shared\": %.17g, \"canary_mean\": %.4g, "
			"\"canary_sd\": %.4g, \"canary_alone\": %.4g, \"lowering\": %.4g},\n",
			(unsigned long long)c->meta.canary_bursts, c->r.shared_core,
			c->meta.canary_cycles, c->meta.canary_sd, c->meta.canary_alone,
			est_shared_lowering(&c->r));
	fprintf(f, "\"instructions\": [");
	for (size_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];

		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			char text[CFG_TEXT_MAX];
			const struct cfg_insn *in = &cfg->insns[i];
			const struct est_insn *ei = &c->r.insns[i];
			uint64_t off = 0;

			img_vaddr_to_offset(c->img, in->addr, &off);
			fprintf(f, "%s\n  {\"address\": \"0x%llx\", \"offset\": %llu, \"samples\": %.17g, "
			       "\"executions\": %.17g, \"cpi\": %.6g, \"m\": %.4g, "
			       "\"confidence\": \"%s\", \"text\": ", first ? "" : ",",
			       (unsigned long long)in->addr, (unsigned long long)off, ei->samples,
			       ei->executions, ei->cpi, ei->m, est_conf_name(ei->conf));
			rep_json_str(f, cfg_insn_text(in, text, sizeof(text)));
			fprintf(f, ", \"reason\": \"%s\", \"static_culprit\": ",
			       model_reason_name((enum model_reason)ei->reason));
			if (ei->culprit >= 0 && ei->reason != MODEL_R_NONE)
				fprintf(f, "\"0x%llx\"", (unsigned long long)cfg->insns[ei->culprit].addr);
			else
				fprintf(f, "null");
			rep_culprit_json(f, cfg, cul_stall_of(&c->cul, i));
			json_object(f, c, in);
			fprintf(f, "}");
			first = 0;
		}
	}
	fprintf(f, "\n], \"exact\": %s, \"summary\": ", c->ev.exact ? "true" : "false");
	rep_culprit_summary_json(f, cfg, &c->r, &c->cul);
	fprintf(f, ", \"events\": {");
	for (size_t k = 0; k < c->ev.n; k++) {
		double t = 0;

		for (size_t i = 0; i < cfg->ninsns; i++)
			t += c->ev.counts[k][i];
		fprintf(f, "%s\"%s\": %.17g", k ? ", " : "", c->ev.names[k], t);
	}
	fprintf(f, "},\n");
	json_block_edges(f, c);
}

static void print_source(FILE *f, const struct rep_calc *c, uint64_t addr, char *last, size_t len)
{
	struct img_line ln;
	char buf[PROF_PATH_MAX + 32];
	const char *base;

	if (img_line_at(c->img, addr, &ln) < 0)
		return;
	base = strrchr(ln.file, '/');
	snprintf(buf, sizeof(buf), "%s:%u", base ? base + 1 : ln.file, ln.line);
	if (!strcmp(buf, last))
		return;
	snprintf(last, len, "%s", buf);
	fprintf(f, "          %s\n", buf);
}

/* Bubbles above instruction i: static (s) with the model's reason, and
 * dynamic (d): the cycles beyond the best case and their culprits. */
static void print_bubbles(FILE *f, const struct rep_calc *c, uint32_t i)
{
	const struct est_insn *ei = &c->r.insns[i];
	double dyn = ei->cpi - ei->m;

	if (ei->m >= 1.5 && ei->reason != MODEL_R_NONE) {
		fprintf(f, "   s  %s", model_reason_name((enum model_reason)ei->reason));
		if (ei->culprit >= 0)
			fprintf(f, " on 0x%llx", (unsigned long long)c->cfg->insns[ei->culprit].addr);
		fprintf(f, "\n");
		if (ei->m >= 2.5)
			fprintf(f, "   s  ... %.1fcy\n", ei->m);
	}
	if (ei->executions > 0 && dyn >= 1.0 && ei->conf != EST_CONF_NONE)
		rep_culprit_bubbles(f, c->cfg, cul_stall_of(&c->cul, i), dyn);
}

/* "(measured, spread 0.4%; model 550.0)" after a block's best case. */
static void print_best_source(FILE *f, const struct rep_calc *c, size_t b)
{
	const struct est_meas_block *mb = c->have_meas ? &c->meas.blocks[b] : NULL;
	int in_loop = 0;

	for (size_t l = 0; c->have_meas && l < c->meas.nloops; l++)
		for (uint32_t k = 0; k < c->meas.loops[l].npath; k++)
			in_loop |= c->meas.loops[l].path[k] == b &&
				   c->meas.loops[l].source == EST_BEST_MEASURED;
	if (mb && mb->source == EST_BEST_MEASURED) {
		if (mb->lines)
			fprintf(f, "  (front end: its loop's code spans %d lines; measured %.1f "
			       "unrolled", mb->lines, mb->median);
		else
			fprintf(f, "  (measured %.1f", mb->cycles);
		fprintf(f, ", spread %.1f%%%s; model %.1f%s)\n", 100 * mb->spread,
		       mb->cached ? ", cached" : "", mb->model, in_loop ? "; scaled with its loop" : "");
	} else if (mb && mb->tried)
		fprintf(f, "  (modelled: %s%s)\n", mb->why, in_loop ? "; scaled with its loop" : "");
	else
		fprintf(f, "  (modelled%s)\n", in_loop ? "; scaled with its measured loop" : "");
}

/* The loops timed as one iteration along their dominant path. */
static void print_loops(FILE *f, const struct rep_calc *c)
{
	if (!c->have_meas || !c->meas.nloops)
		return;
	fprintf(f, "\nLoops (one iteration along the dominant path, timed as one body):\n");
	for (size_t l = 0; l < c->meas.nloops; l++) {
		const struct est_meas_loop *ml = &c->meas.loops[l];

		fprintf(f, "  loop at 0x%llx, %u block%s (%s):",
		       (unsigned long long)c->cfg->blocks[c->cfg->loops[ml->loop].header].start,
		       ml->npath, ml->npath == 1 ? "" : "s",
		       ml->from_paths ? "path samples" : "static path");
		for (uint32_t k = 0; k < ml->npath && k < 8; k++)
			fprintf(f, " %llx", (unsigned long long)c->cfg->blocks[ml->path[k]].start);
		if (ml->npath > 8)
			fprintf(f, " ...");
		if (ml->source == EST_BEST_MEASURED)
			fprintf(f, "\n    measured %.2f cycles/iteration (spread %.1f%%%s), "
			       "model %.1f\n",
			       ml->cycles, 100 * ml->spread, ml->cached ? ", cached" : "",
			       ml->model);
		else
			fprintf(f, "\n    modelled %.1f cycles/iteration: %s\n", ml->model, ml->why);
	}
}

/* A block whose load walked a region timed here (estimate/replay.c). */
static void print_replays(FILE *f, const struct rep_calc *c, size_t b)
{
	const struct est_replay *rp;

	for (size_t k = 0; (rp = next_replay(c, b, &k));) {
		fprintf(f, "*** Replayed: the load at %llx walks %.3g MB (%u-byte elements, from "
			"%zu addresses); that walk timed here: %.1f cycles a step, %.1f beyond an "
			"L1 hit (spread %.0f%%), expected with the best case\n",
			(unsigned long long)c->cfg->insns[rp->insn].addr, rp->bytes / 1048576.0,
			rp->elem, rp->addrs, rp->walk.cycles, rp->extra, 100 * rp->walk.spread);
		if (rp->bytes_hi > rp->bytes_lo && rp->cycles_lo > 0)
			fprintf(f, "*** Its region from %zu addresses: 90%% within %.3g - %.3g MB, "
				"walked in %.1f - %.1f cycles a step\n", rp->addrs,
				rp->bytes_lo / 1048576.0, rp->bytes_hi / 1048576.0, rp->cycles_lo,
				rp->cycles_hi);
	}
}

/* A block counted from the instruction after a stalled load's waiter. */
static void print_stall(FILE *f, const struct rep_calc *c, size_t b)
{
	print_replays(f, c, b);
	for (size_t k = 0; k < c->r.nstalls; k++) {
		const struct est_stall *st = &c->r.stalls[k];

		if (st->block != b)
			continue;
		if (st->replayed) {
			fprintf(f, "*** Cross-check: %.0f samples of %llx after the waiter %llx "
				"say %.4g executions\n", st->witness_samples,
				(unsigned long long)c->cfg->insns[st->waiter + 1].addr,
				(unsigned long long)c->cfg->insns[st->waiter].addr,
				st->per_cps * c->r.cycles_per_sample);
			continue;
		}
		fprintf(f, "*** Counted from %.0f samples of %llx (the load at %llx missed; "
			"its waiter %llx shows %.2f cycles an execution): the windows said "
			"%.4g\n", st->witness_samples,
			(unsigned long long)c->cfg->insns[st->waiter + 1].addr,
			(unsigned long long)c->cfg->insns[st->load].addr,
			(unsigned long long)c->cfg->insns[st->waiter].addr, st->exposure,
			st->window_per_cps * c->r.cycles_per_sample);
	}
}

static void print_block(FILE *f, const struct rep_calc *c, size_t b, char *last, size_t len)
{
	const struct cfg_block *bl = &c->cfg->blocks[b];
	const struct est_block *eb = &c->r.blocks[b];
	double actual = eb->executions > 0 ? eb->cycles / eb->executions : 0;

	fprintf(f, "\n*** Best-case %.1f/%u = %.2fCPI", eb->best, bl->n, eb->best_cpi);
	print_best_source(f, c, b);
	if (eb->executions > 0)
		fprintf(f, "*** Actual %.1f/%u = %.2fCPI\n", actual, bl->n, eb->actual_cpi);
	else
		fprintf(f, "*** Actual -/%u (not executed)\n", bl->n);
	fprintf(f, "*** Executions %.4g (90%%: %.3g - %.3g, %s confidence)\n", eb->executions,
		eb->lo, eb->hi, est_conf_name(eb->conf));
	print_stall(f, c, b);
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		char text[CFG_TEXT_MAX];
		const struct cfg_insn *in = &c->cfg->insns[i];
		const struct est_insn *ei = &c->r.insns[i];
		const struct rep_mem_insn *o;

		print_source(f, c, in->addr, last, len);
		print_bubbles(f, c, i);
		fprintf(f, "%8llx  %-40s %8.0f", (unsigned long long)in->addr,
			cfg_insn_text(in, text, sizeof(text)), ei->samples);
		if (ei->executions > 0)
			fprintf(f, " %7.1fcy", ei->cpi);
		else
			fprintf(f, " %9s", "-");
		if (ei->culprit >= 0 && ei->reason != MODEL_R_NONE)
			fprintf(f, " %llx", (unsigned long long)c->cfg->insns[ei->culprit].addr);
		if ((o = object_of_insn(c, in)))
			fprintf(f, "  -> %s, %.0f%%", o->object, 100.0 * o->in_object / o->accesses);
		fprintf(f, "\n");
	}
}

/* What this epoch's marking plan would have counted in c's procedure
 * (report/plan.c): its entry (entry=), *blocks blocks of its loops (block
 * lines).  `dcpi record --plan auto` counts them (estimate/calls.c). */
static int plan_counts(const struct rep_calc *c, size_t *blocks)
{
	struct dcpi_err e = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t off;
	char *line, *save = NULL, img[32] = "";
	int entry = 0;

	*blocks = 0;
	if (!c->db || !c->epoch || !strcmp(c->epoch, "all") || !c->img || !c->proc ||
	    img_vaddr_to_offset(c->img, c->proc->addr, &off) ||
	    prof_epoch_read_file((struct prof_db *)c->db, c->epoch, VAL_PLAN_FILE, &buf, &len, &e))
		return 0;
	for (line = strtok_r((char *)buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char num[32], path[4096];
		unsigned long long o;

		if (sscanf(line, "image %31s %*s %4095s", num, path) == 2)
			snprintf(img, sizeof(img), "%s", strcmp(path, img_path(c->img)) ? "" : num);
		else if (img[0] && sscanf(line, "proc %31s %llx", num, &o) == 2 && !strcmp(num, img) &&
			 o == off && strstr(line, "entry="))
			entry = 1;
		else if (img[0] && sscanf(line, "block %31s %llx", num, &o) == 2 &&
			 !strcmp(num, img) && o >= off && o - off < c->proc->size)
			++*blocks;
	}
	free(buf);
	return entry;
}

/* Where nothing of c's procedure was counted but the epoch's plan would
 * count some of it, say how. */
static void plan_hint(FILE *f, const struct rep_calc *c)
{
	char what[96] = "";
	size_t blocks = 0;
	int entry;

	if (c->r.calls > 0 || c->r.classes_counted)
		return;
	entry = plan_counts(c, &blocks);
	if (blocks)
		snprintf(what, sizeof(what), "%s%zu block%s of loops",
			 entry ? "the entry and " : "", blocks, blocks > 1 ? "s" : "");
	else if (entry)
		snprintf(what, sizeof(what), "the entry");
	if (what[0])
		fprintf(f, "counts: none measured here; this epoch's plan marks %s to be counted, "
			"so `dcpi record --plan auto` gives these counts a measured scale%s\n", what,
			blocks ? " and the loops their iterations" : "");
}

void rep_calc_text(FILE *f, const struct rep_calc *c)
{
	char last[PROF_PATH_MAX + 32] = "";
	size_t shown = 0;

	fprintf(f, "dcpicalc %s in %s\n", c->proc->name, img_path(c->img));
	fprintf(f, "epoch %s, event %s, %.0f samples, model %s, method %s, window %s\n", c->epoch,
	       c->prof->event, c->total, model_name(c->model), est_method_name(c->r.method),
	       est_window_name(c->r.window));
	fprintf(f, "model %s: %s\n", model_name(c->model),
		c->model_from ? c->model_from :
		"the shipped table (no model file measured on this CPU)");
	if (c->r.lbr_stacks)
		fprintf(f, "counts: branch records (%llu stacks)%s\n",
			(unsigned long long)c->r.lbr_stacks,
			c->r.relative ? ", relative (the event does not count taken branches)" : "");
	if (c->r.relative && !c->r.lbr_stacks)
		fprintf(f, "uncalibrated: counts are relative (1 sample = 1 cycle)\n");
	else if (c->r.clock_h > 0)
		fprintf(f, "1 sample = %.0f cycles (calibrated before and after the run: the "
			"clock moved %+.1f%%; every count's interval allows %.1f%% for it)\n",
			c->r.cycles_per_sample, 100 * (c->meta.clock_change - 1),
			100 * (exp(c->r.clock_h) - 1));
	else
		fprintf(f, "1 sample = %.0f cycles%s\n", c->r.cycles_per_sample,
		       c->have_meta && c->meta.calibrated && c->meta.clock_change > 0 ?
		       " (calibrated before and after the run: the clock held)" :
		       c->have_meta && c->meta.calibrated ?
		       " (calibrated before the run only: the intervals do not allow for the "
		       "clock's wander during it)" : " (period x clock, uncalibrated)");
	if (c->have_meta && c->meta.canary_bursts && c->r.shared_core > 0)
		fprintf(f, "core: shared with a busy sibling in %.0f%% of %llu path bursts (canary "
			"%.2f cycles a mean, %.2f alone): counts may read up to %.2fx high where "
			"ports and slots bind the code; this procedure's sampled code would run "
			"%.2fx slower on half a core, so the intervals reach down %.2fx\n",
			100 * c->r.shared_core, (unsigned long long)c->meta.canary_bursts,
			c->meta.canary_cycles, c->meta.canary_alone, est_shared_allowance(&c->r),
			c->r.shared_slowdown, est_shared_lowering(&c->r));
	else if (c->have_meta && c->meta.canary_bursts)
		fprintf(f, "core: to itself in all %llu path bursts (canary %.2f cycles a mean, "
			"%.2f alone)\n", (unsigned long long)c->meta.canary_bursts,
			c->meta.canary_cycles, c->meta.canary_alone);
	if (c->have_cal)
		fprintf(f, "calibration %s: skid %d instruction%s, %.0f%% handed back%s\n",
		       c->cal_path, c->a.opts.skid, c->a.opts.skid > 1 ? "s" : "",
		       100 * c->a.opts.skid_share, c->a.skid_given ? " (--skid given)" : "");
	if (c->exposure_note && c->exposure_note[0])
		fprintf(f, "after a missing load: %s\n", c->exposure_note);
	if (c->have_meas) {
		fprintf(f, "cpu %s: best cases measured here for %u bodies (%u timed in %.2f s, "
		       "%u cached), the model's elsewhere\n", c->meas.cpu,
		       c->meas.timed + c->meas.cached, c->meas.timed, c->meas.seconds,
		       c->meas.cached);
		if (c->meas.contended)
			fprintf(f, "  %u of them timed while another thread shared the core "
			       "(their figures may be high; --remeasure times them again)\n",
			       c->meas.contended);
	} else {
		fprintf(f, "best cases from the model only (%s)\n", c->meas_why);
	}
	if (c->pp && c->pinfo.used && !c->r.lbr_stacks)
		fprintf(f, "paths (%s): %.0f transitions in this procedure (%.0f entries) from %.0f "
		       "bursts of the image; counts = path shape x scale (%s rule)\n",
		       c->pp->source, c->pinfo.transitions, c->pinfo.entries, c->pinfo.bursts,
		       est_scale_rule_name(c->a.popts.rule));
	else if (c->pp && c->pinfo.transitions >= c->a.popts.min_transitions &&
		 c->pinfo.transitions > 0)
		fprintf(f, "paths (%s): %.0f transitions in this procedure, not used (no sampled "
		       "block with a best case to scale their shape by, or too large to solve): "
		       "counts from the windows\n", c->pp->source, c->pinfo.transitions);
	else if (c->pp)
		fprintf(f, "paths (%s): %.0f transitions in this procedure, too few to use (< %.0f)\n",
		       c->pp->source, c->pinfo.transitions, c->a.popts.min_transitions);
	plan_hint(f, c);
	if (c->r.classes_counted)
		fprintf(f, "counted: the executions of %zu block%s of loops (the plan's counting "
			"trampolines): exact%s\n", c->r.classes_counted,
			c->r.classes_counted > 1 ? "s" : "",
			c->r.calls_solved ? "; the rest of those loops is solved around them" : "");
	if (c->r.calls > 0 && c->r.calls_solved)
		fprintf(f, "calls: %.0f counted at the entry (the plan's counting trampoline): the "
			"straight code is solved around them, loops %skeep their samples' counts; the "
			"samples read %.3gx at the entry\n", c->r.calls,
			c->r.classes_counted ? "without a counted block " : "", c->r.calls_scale);
	else if (c->r.calls > 0)
		fprintf(f, "calls: %.0f counted at the entry (the plan's counting trampoline): its "
			"class holds them; the flow could not be solved around them keeping the "
			"loops' counts, so the rest is the samples' (they read %.3gx there)\n",
			c->r.calls, c->r.calls_scale);
	if (c->cfg->missing_edges)
		fprintf(f, "note: the CFG is missing edges (unresolved indirect jump): every block "
		       "is its own class\n");
	fprintf(f, "Addr      Instruction                               Samples     CPI Culprit\n");
	for (size_t b = 0; b < c->cfg->nblocks; b++) {
		if (!block_hot(c, b))
			continue;
		print_block(f, c, b, last, sizeof(last));
		shown++;
	}
	print_loops(f, c);
	if (!c->a.all && shown < c->cfg->nblocks - 1)
		fprintf(f, "\n(%zu of %zu blocks shown; --all for every block)\n", shown,
		       c->cfg->nblocks - 1);
}

int rep_calc_static(FILE *f, const struct rep_calc *c, struct dcpi_err *err)
{
	const struct cfg *cfg = c->cfg;
	double *m = NULL;
	int *reason = NULL, *culprit = NULL, rc = 0;

	m = calloc(cfg->ninsns + 1, sizeof(*m));
	reason = calloc(cfg->ninsns + 1, sizeof(*reason));
	culprit = calloc(cfg->ninsns + 1, sizeof(*culprit));
	if (!m || !reason || !culprit) {
		rc = dcpi_errf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = est_model_m(cfg, c->model, c->a.opts.steady, m, reason, culprit, err);
	if (rc < 0)
		goto out;
	if (c->a.json) {
		fprintf(f, "{\"procedure\": ");
		rep_json_str(f, c->proc->name);
		fprintf(f, ", \"image\": ");
		rep_json_str(f, img_path(c->img));
		fprintf(f, ", \"model\": \"%s\", \"static\": true,\n\"instructions\": [",
		       model_name(c->model));
	} else {
		fprintf(f, "dcpicalc --static %s in %s, model %s (best case: every load hits L1, "
		       "every branch predicted)\n", c->proc->name, img_path(c->img),
		       model_name(c->model));
		fprintf(f, "Addr      Instruction                                   M_i  Reason      "
		       "Culprit\n");
	}
	for (size_t b = 0, first = 1; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		double best = 0;

		if (!bl->n)
			continue;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			best += m[i];
		if (!c->a.json)
			fprintf(f, "\n*** Best-case %.1f/%u = %.2fCPI%s\n", best, bl->n, best / bl->n,
			       bl->loop_depth ? "  (in a loop)" : "");
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++, first = 0) {
			char text[CFG_TEXT_MAX];
			const struct cfg_insn *in = &cfg->insns[i];
			const char *why = reason[i] != MODEL_R_NONE ?
					  model_reason_name((enum model_reason)reason[i]) : "";

			if (c->a.json) {
				fprintf(f, "%s\n  {\"address\": \"0x%llx\", \"m\": %.4g, \"reason\": "
				       "\"%s\", \"culprit\": ", first ? "" : ",",
				       (unsigned long long)in->addr, m[i],
				       model_reason_name((enum model_reason)reason[i]));
				if (culprit[i] >= 0)
					fprintf(f, "\"0x%llx\"", (unsigned long long)
					       cfg->insns[culprit[i]].addr);
				else
					fprintf(f, "null");
				fprintf(f, ", \"text\": ");
				rep_json_str(f, cfg_insn_text(in, text, sizeof(text)));
				fprintf(f, "}");
				continue;
			}
			fprintf(f, "%8llx  %-44s %5.2f  %-11s", (unsigned long long)in->addr,
				cfg_insn_text(in, text, sizeof(text)),
			       m[i], why);
			if (culprit[i] >= 0 && reason[i] != MODEL_R_NONE)
				fprintf(f, " %llx", (unsigned long long)cfg->insns[culprit[i]].addr);
			fprintf(f, "\n");
		}
	}
	if (c->a.json)
		fprintf(f, "\n]}\n");
out:
	free(m);
	free(reason);
	free(culprit);
	return rc;
}


void rep_calc_of(struct rep_calc *v, const struct est_input *in, const struct est_analysis *an)
{
	memset(v, 0, sizeof(*v));
	v->a.opts = in->o.opts;
	v->a.popts = in->o.popts;
	v->meta = in->meta;
	v->have_meta = in->have_meta;
	v->model = in->model;
	v->model_from = est_model_source(in);
	v->cal_path = in->cal_path;
	v->have_cal = in->have_cal;
	v->exposure_note = in->exposure_note;
	v->cfg = an->cfg;
	v->total = an->total;
	v->r = an->r;
	v->meas = an->meas;
	v->have_meas = an->have_meas;
	v->meas_why = an->meas_why;
	v->pp = an->pp;
	v->pinfo = an->pinfo;
	v->ev = an->ev;
	v->cul = an->cul;
	v->replays = an->replays;
	v->nreplays = an->nreplays;
}
