/*
 * collect/session.c - what `dcpi record` and dcpid share (DCPI paper
 * sec. 4.2-4.3): the sampler's rings drained in time order, each record
 * decoded by the one decoder (collect/perf_session.c) into this file's
 * callbacks: the image maps (MMAP2, COMM, FORK, EXIT) and the (image,
 * event, offset) table of aggregate.c; lost samples and throttling counted; the random periods redrawn
 * every SESS_RANDOM_MS; the calibration run at start and end; the tables
 * flushed into an epoch as one profile per (image, event).
 *
 * Data reduction as in DCPI (sec. 4.2-4.3): a sample first goes into the
 * (pid, pc, event) table of hashtab.h; only its entries - one per distinct
 * key - are mapped to (image, offset) and added to the per-image tables,
 * when the table's overflow buffer fills and at the end of every drain.
 * An entry must be mapped with the maps its samples were taken under, so
 * the table is also emptied before an EXIT or an exec (COMM) record is
 * applied; a mapping replaced in place inside one batch (dlclose then
 * dlopen at the same address) is the one case resolved against the newer
 * mapping.  Kernel pcs are told apart by address (the upper half), and
 * maps_place (collect/maps.c) makes every entry an (image, offset), as it
 * does for the importers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>

#include "dcpi/callgraph.h"
#include "dcpi/perf_records.h"
#include "internal.h"
#include "hashtab.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int sess_init(struct session *s, const struct collect_opts *o, struct dcpi_err *err)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->opts = o;
	if (o->nevents) {
		if (o->nevents > COLLECT_MAX_EVENTS)
			return dcpi_errf(err, -E2BIG, "more than %d events", COLLECT_MAX_EVENTS);
		memcpy(s->ev, o->events, o->nevents * sizeof(s->ev[0]));
		s->nev = o->nevents;
	} else if (o->event) {
		s->ev[0] = o->event;
		s->nev = 1;
	} else {
		return dcpi_errf(err, -EINVAL, "no event");
	}
	if (o->period && o->freq)
		return dcpi_errf(err, -EINVAL, "%s: a period and a frequency both given",
				 s->ev[0]->name);
	if (o->freq && smp_sysctl("perf_event_max_sample_rate") > 0 &&
	    o->freq > (uint64_t)smp_sysctl("perf_event_max_sample_rate"))
		return dcpi_errf(err, -EINVAL, "-F %llu: above the kernel's maximum sample "
				 "rate, %d Hz (/proc/sys/kernel/perf_event_max_sample_rate)",
				 (unsigned long long)o->freq,
				 smp_sysctl("perf_event_max_sample_rate"));
	s->cfg.events = s->ev;
	s->cfg.nevents = s->nev;
	s->cfg.period = o->period;
	s->cfg.freq = o->freq;
	s->cfg.pages = o->ring_pages;
	s->cfg.randomize = !o->fixed_period && !o->freq;
	rnd_init(&s->cal_rnd, o->seed);
	s->cfg.seed = s->cal_rnd.seed;	/* the sampler's draws, reproducible */
	s->cfg.callchain = o->callchain;
	s->cal_rnd.s[0] ^= 0x5bd1e995;	/* but not the same sequence */
	ret = maps_new(&s->maps, err);
	if (!ret)
		ret = agg_new(&s->agg, err);
	if (!ret)
		ret = ht_new(HT_DEFAULT_POLICY, HT_DEFAULT_LOG2_ENTRIES, HT_DEFAULT_OVERFLOW,
			     &s->ht, err);
	if (!ret)
		ret = ssl_init(&s->sl, o->no_slices ? 0 : SLICE_DEFAULT_NS, err);
	if (!ret && o->callchain)
		ret = cg_table_new(&s->cg, err);
	if (!ret)
		maps_set_jit(s->maps, 1);
	return ret;
}

void sess_free(struct session *s)
{
	hws_free(s->hw, 1);
	s->hw = NULL;
	if (s->open)
		smp_close(&s->smp);
	smp_batch_free(&s->batch);
	ssl_free(&s->sl);
	agg_free(s->agg);
	cg_table_free(s->cg);
	maps_free(s->maps);
	if (s->ht)
		ht_free(s->ht);
	memset(s, 0, sizeof(*s));
}

int sess_calibrate(struct session *s, struct dcpi_err *err)
{
	int ret = 0;

	if (s->opts->no_calibrate)
		return 0;
	if (s->cal.cycles_per_ns <= 0)
		ret = cal_clock(&s->cal, err);
	if (!ret)
		ret = cal_sample(&s->cal, s->ev[0], &s->cfg, &s->cal_rnd, SESS_CAL_MS, err);
	if (!ret && s->cal.samples)
		s->calibrated = 1;
	if (!ret && !s->cal.exp_steps)
		ret = cal_exposure(&s->cal, s->ev[0], &s->cfg, &s->cal_rnd, SESS_EXP_MS, err);
	return ret;
}

/* Does an event carry hardware evidence (collect/pmu.c)? */
static int sess_hw_events(const struct session *s)
{
	for (unsigned e = 0; e < s->nev; e++)
		if (s->ev[e]->flags & COLLECT_EV_HW_EVIDENCE)
			return 1;
	return 0;
}

int sess_open(struct session *s, pid_t pid, int kernel, struct dcpi_err *err)
{
	int ret;

	s->cfg.pid = pid;
	s->cfg.kernel = kernel;
	ret = smp_open(&s->smp, &s->cfg, err);
	if (!ret) {
		s->open = 1;
		s->kernel = s->smp.kernel;
		s->nrings = s->smp.n;
		s->randomized_ns = mono_ns();
		smp_decoder(&s->smp, s->rattr, &s->dec);
	}
	if (!ret)
		ret = sess_hw_restart(s, err);
	return ret;
}

struct resolve_ctx {
	struct session *s;
	struct dcpi_err *err;
};

/* One table entry: (pid, pc) -> (image, offset), counted under its event.
 * Kernel pcs are told apart by address: x86-64's upper half. */
static int resolve_entry(void *arg, const struct ht_entry *e)
{
	struct resolve_ctx *c = arg;
	struct session *s = c->s;
	enum maps_space sp = !(e->pc >> 63) ? MAPS_USER : s->kernel ? MAPS_KERNEL : MAPS_OTHER;
	uint32_t image;
	uint64_t offset;
	int ret = maps_place(s->maps, e->pid, e->pc, sp, &image, &offset, c->err);

	if (ret)
		return ret;
	if (image == MAPS_UNKNOWN)
		s->unknown += e->count;
	s->samples += e->count;
	s->ht_entries++;
	return agg_add(s->agg, image, e->event, offset, e->count, c->err);
}

static int drain_table(struct session *s, int all, struct dcpi_err *err)
{
	struct resolve_ctx c = { s, err };

	return ht_drain(s->ht, all, resolve_entry, &c);
}

/* A sample at time t: when it starts a new slice, the table's counts so far
 * close the current one (phase.c). */
static int slice_at(struct session *s, uint64_t t, struct dcpi_err *err)
{
	uint64_t k = t / s->sl.slice_ns;
	int ret;

	if (!s->sl.started) {
		s->sl.started = 1;
		s->sl.cur = k;
	}
	if (k <= s->sl.cur)
		return 0;
	ret = drain_table(s, 1, err);
	return ret ? ret : ssl_end(&s->sl, s->agg, k, err);
}

/*
 * Is pid one of the recording's?  An event the kernel takes only per CPU
 * (IBS on some kernels, COLLECT_EV_CPU_WIDE) samples every process: the
 * command's are those whose side-band the per-task counters gave (their
 * exec, fork, mappings: hwspool.c's set), the attached ones' their threads.
 */
static int sess_ours(const struct session *s, uint32_t pid)
{
	if (s->cfg.pid < 0)
		return 1;	/* system-wide: every process is */
	if (s->hw && hws_has(s->hw, pid))
		return 1;
	for (size_t i = 0; i < s->cfg.ntids; i++)
		if ((uint32_t)s->cfg.tids[i] == pid)
			return 1;
	return 0;
}

/* --- the records' callbacks (include/dcpi/perf_records.h) ------------------ */

static int on_sample(void *ctx, const struct perf_sample *ps, struct dcpi_err *err)
{
	struct session *s = ctx;
	struct smp_sample sm;
	int ret;

	if (ps->attr == PERF_ATTR_NONE || ps->attr >= s->nev)
		return 0;	/* not one of our counters */
	smp_sample_from(ps, &sm);
	if (s->self_pid && sm.pid == s->self_pid) {
		s->self++;
		return 0;
	}
	if (sm.stepped) {	/* inside a path burst: the runtime's, not the program's */
		s->stepped++;
		return 0;
	}
	if ((s->ev[ps->attr]->flags & COLLECT_EV_CPU_WIDE) && !sess_ours(s, sm.pid)) {
		s->foreign++;
		return 0;
	}
	s->tee = (s->ev[ps->attr]->flags & COLLECT_EV_HW_EVIDENCE) != 0;
	s->tee_pid = ps->pid;
	if (s->sl.slice_ns && (ret = slice_at(s, sm.time, err)))
		return ret;
	/* user-mode samples only: a kernel sample's user chain would give
	 * its time to the user pc that entered the kernel (callchain.c) */
	if (s->cg && sm.user && ps->nr_callchain &&
	    (ret = cg_table_add(s->cg, s->maps, sm.pid, sm.ev, ps->callchain, ps->nr_callchain,
				err)))
		return ret;
	s->ev_samples[sm.ev]++;
	s->period_sum[sm.ev] += sm.period;
	s->ht_samples++;
	ret = ht_add(s->ht, sm.pid, (uint16_t)sm.ev, sm.ip);
	if (ret < 0)
		return dcpi_errf(err, ret, "sample table: out of memory");
	if (ret > 0)
		return drain_table(s, 0, err);
	return 0;
}

/* Only executable mappings are reported (attr.mmap_data is off). */
static int on_mmap(void *ctx, const struct perf_mmap *m, struct dcpi_err *err)
{
	struct session *s = ctx;

	if (m->pid == (uint32_t)-1)	/* the kernel's own: samples resolve by address */
		return 0;
	return maps_mmap(s->maps, m->pid, m->start, m->len, m->pgoff, m->filename, err);
}

/* A process's mappings about to change (exec) or go (exit), by change: its
 * samples still in the table are placed in the mappings they were taken in. */
static int drain_before(struct session *s, void (*change)(struct maps *, uint32_t),
			uint32_t pid, struct dcpi_err *err)
{
	int ret = drain_table(s, 1, err);

	if (!ret)
		change(s->maps, pid);
	return ret;
}

static int on_comm(void *ctx, const struct perf_comm *c, struct dcpi_err *err)
{
	return c->exec ? drain_before(ctx, maps_exec, c->pid, err) : 0;
}

static int on_fork(void *ctx, const struct perf_task *t, struct dcpi_err *err)
{
	struct session *s = ctx;

	return maps_fork(s->maps, t->pid, t->ppid, err);
}

static int on_task_exit(void *ctx, const struct perf_task *t, struct dcpi_err *err)
{
	if (t->pid != t->tid)		/* one of its threads, not the process */
		return 0;
	return drain_before(ctx, maps_exit, t->pid, err);
}

static int on_lost(void *ctx, const struct perf_lost *l, struct dcpi_err *err)
{
	struct session *s = ctx;

	s->lost += l->lost;
	return 0;
}

static int on_throttle(void *ctx, const struct perf_throttle *t, struct dcpi_err *err)
{
	struct session *s = ctx;

	s->throttled += !t->unthrottle;
	return 0;
}

/* What the importer needs beside the evidence samples: the processes and
 * their mappings (tools/perf's side-band records), and what was lost. */
static int side_band(uint32_t type)
{
	return type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2 ||
	       type == PERF_RECORD_COMM || type == PERF_RECORD_FORK ||
	       type == PERF_RECORD_EXIT || type == PERF_RECORD_LOST;
}

/* The id the first event's counters carry (side-band records name it). */
static uint64_t sess_hw_id(const struct session *s)
{
	for (int k = 0; k < s->smp.nctr; k++)
		if (s->smp.ctr[k].ev == 0)
			return s->smp.ctr[k].id;
	return 0;
}

/* One record to the callbacks, and to the hardware evidence when it is. */
static int deliver(struct session *s, const struct perf_tool *t, const uint8_t *rec,
		   size_t off, struct dcpi_err *err)
{
	const struct perf_event_header *h = (const void *)rec;
	int ret;

	s->tee = 0;
	ret = perf_rec_deliver(&s->dec, t, rec, off, err);
	if (ret || !s->hw)
		return ret;
	if (h->type == PERF_RECORD_SAMPLE) {
		if (!s->tee)
			return 0;
		/* a process that ran before the counters: its maps from /proc */
		ret = hws_synth(s->hw, s->tee_pid, sess_hw_id(s), err);
	} else if (!side_band(h->type)) {
		return 0;
	} else if (h->type != PERF_RECORD_EXIT && h->type != PERF_RECORD_LOST &&
		   h->size >= 12) {
		uint32_t pid;

		memcpy(&pid, rec + 8, 4);
		ret = hws_seen(s->hw, pid, err);
	}
	return ret ? ret : hws_add(s->hw, rec, h->size, err);
}

static const struct perf_tool sess_tool = {
	.sample = on_sample, .mmap = on_mmap, .comm = on_comm, .fork = on_fork,
	.exit = on_task_exit, .lost = on_lost, .throttle = on_throttle,
};

/* Every table entry into the per-image table, then forget the processes
 * that exited before this batch. */
static int end_batch(struct session *s, struct dcpi_err *err)
{
	int ret = drain_table(s, 1, err);

	maps_reap(s->maps);
	return ret;
}

int sess_feed(struct session *s, const uint8_t *buf, size_t len, struct dcpi_err *err)
{
	struct perf_tool t = sess_tool;
	size_t at = 0;
	uint16_t size;
	int ret = 0;

	t.ctx = s;
	smp_decoder(&s->smp, s->rattr, &s->dec);
	while (at < len && !ret) {
		if (len - at < 8 || (memcpy(&size, buf + at + 6, 2), size < 8) ||
		    size > len - at)
			return dcpi_errf(err, -EINVAL, "records: the one at offset %zu is cut "
					 "short", at);
		ret = deliver(s, &t, buf + at, at, err);
		at += size;
	}
	return ret ? ret : end_batch(s, err);
}

int sess_drain(struct session *s, struct dcpi_err *err)
{
	struct perf_tool t = sess_tool;
	uint64_t now = mono_ns();
	int ret = 0;

	t.ctx = s;
	if (s->cfg.randomize && now - s->randomized_ns >= SESS_RANDOM_MS * 1000000ULL) {
		ret = smp_randomize(&s->smp, err);
		s->randomized_ns = now;
	}
	if (!ret)
		ret = smp_drain(&s->smp, &s->batch, err);
	for (size_t i = 0; i < s->batch.n && !ret; i++)
		ret = deliver(s, &t, s->batch.buf + s->batch.r[i].off, s->batch.r[i].off, err);
	if (!ret)
		return end_batch(s, err);
	maps_reap(s->maps);
	return ret;
}

int sess_read_counts(struct session *s, struct dcpi_err *err)
{
	return smp_read_counts(&s->smp, s->counts, err);
}

/* Cycles per unit of ev's period: the measured clock for the clocks, 1 for
 * cycles, unknown (0) for events that are not time. */
static double cycles_per_unit(const struct session *s, const struct collect_event *ev)
{
	if (!strcmp(ev->unit, "ns"))
		return s->cal.cycles_per_ns;
	if (ev->type == PERF_TYPE_HARDWARE && ev->config == PERF_COUNT_HW_CPU_CYCLES)
		return 1;
	return 0;
}

static const struct prof_image_id *sess_image_id(void *ctx, uint32_t image)
{
	return maps_image(ctx, image);
}

int sess_write(struct session *s, struct prof_db *db, const char *epoch,
	       uint64_t *written, struct dcpi_err *err)
{
	struct agg_event ev[COLLECT_MAX_EVENTS];
	const char *names[COLLECT_MAX_EVENTS];
	struct agg_sink k = { ev, s->nev, sess_image_id, NULL, s->maps };
	struct agg_flushed out;
	int ret;

	for (unsigned i = 0; i < s->nev; i++) {
		ev[i].name = names[i] = s->ev[i]->name;
		ev[i].unit = s->ev[i]->unit;
		if (s->ev_samples[i])	/* the mean of the periods actually used */
			ev[i].period = (double)s->period_sum[i] / (double)s->ev_samples[i];
		else
			ev[i].period = (double)(s->cfg.period ? s->cfg.period :
						s->ev[i]->default_period);
		ev[i].cycles_per_unit = cycles_per_unit(s, s->ev[i]);
	}
	ret = ssl_take(&s->sl, s->agg, err);
	if (!ret)
		ret = ssl_write(&s->sl, s->ev[0]->name, sess_image_id, s->maps, db, epoch, err);
	if (!ret)
		ret = agg_flush(s->agg, &k, db, epoch, &out, err);
	if (!ret && s->cg)
		ret = cg_table_flush(s->cg, sess_image_id, s->maps, names, s->nev, db, epoch, err);
	*written = ret ? 0 : out.samples;
	return ret;
}

void sess_clear(struct session *s)
{
	ssl_clear(&s->sl);
	agg_clear(s->agg);
	if (s->cg)
		cg_table_clear(s->cg);
	for (unsigned i = 0; i < s->nev; i++) {
		s->ev_samples[i] = 0;
		s->period_sum[i] = 0;
	}
}

void sess_held(const struct session *s, uint64_t *entries, uint64_t *samples)
{
	*entries = *samples = 0;
	agg_count(s->agg, entries, samples);
}

int sess_flush(struct session *s, struct prof_db *db, const char *epoch,
	       uint64_t *written, struct dcpi_err *err)
{
	int ret = sess_write(s, db, epoch, written, err);

	if (!ret)
		sess_clear(s);
	return ret;
}

void col_appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/* The end's calibration of cycles per sample over the start's, 0 without
 * both. */
static double clock_change(const struct cal_result *c)
{
	return c->cps_first > 0 && c->cps_last > 0 ? c->cps_last / c->cps_first : 0;
}

void sess_describe(const struct session *s, char *buf, size_t len,
		   struct prof_epoch_meta *meta)
{
	const struct collect_event *ev = s->ev[0];
	const char *why;

	buf[0] = '\0';
	col_appendf(buf, len, "event=");
	for (unsigned i = 0; i < s->nev; i++)
		col_appendf(buf, len, "%s%s", i ? "," : "", s->ev[i]->name);
	if (s->cfg.freq)
		col_appendf(buf, len, " freq=%" PRIu64 "Hz", s->cfg.freq);
	else
		col_appendf(buf, len, " period=%" PRIu64 "%s", s->cfg.period ? s->cfg.period :
		       ev->default_period, ev->unit);
	col_appendf(buf, len, s->cfg.pid < 0 ? " system-wide" : " inherit=1");
	col_appendf(buf, len, s->kernel ? " user+kernel" : " user-only");
	col_appendf(buf, len, " rings=%d", s->nrings);
	if (s->cfg.randomize)
		col_appendf(buf, len, " random=15/16 every=%dms seed=%" PRIu64, SESS_RANDOM_MS,
		       s->cfg.seed);
	else if (!s->cfg.freq)
		col_appendf(buf, len, " fixed-period");
	if (s->calibrated)
		col_appendf(buf, len, " calibrated cycles_per_sample=%.1f cycles_per_ns=%.4f "
		       "tsc_per_ns=%.4f cal_samples=%" PRIu64, s->cal.cycles_per_sample,
		       s->cal.cycles_per_ns, s->cal.tsc_per_ns, s->cal.samples);
	if (s->calibrated && clock_change(&s->cal) > 0)
		col_appendf(buf, len, " clock_change=%.4f", clock_change(&s->cal));
	if (s->calibrated && s->cal.exp_samples)
		col_appendf(buf, len, " exposure_witness=%" PRIu64 " exposure_samples=%" PRIu64
			    " exposure_in_loop=%" PRIu64 " exposure_steps=%" PRIu64
			    " exposure_cycles_step=%.2f", s->cal.exp_witness, s->cal.exp_samples,
			    s->cal.exp_in_loop, s->cal.exp_steps, s->cal.exp_cycles_per_step);
	if (!s->calibrated)
		col_appendf(buf, len, " uncalibrated");
	if (s->throttled)
		col_appendf(buf, len, " throttled=%" PRIu64, s->throttled);
	if (s->self)
		col_appendf(buf, len, " self=%" PRIu64, s->self);
	if (s->stepped)
		col_appendf(buf, len, " stepped=%" PRIu64, s->stepped);
	if (s->foreign)
		col_appendf(buf, len, " other_processes=%" PRIu64, s->foreign);
	if (maps_jit_refused(s->maps, &why))
		col_appendf(buf, len, " jit_refused=%u (%s)", maps_jit_refused(s->maps, &why), why);
	if (s->cg) {
		struct cg_table_stats st;

		cg_table_stats(s->cg, &st);
		col_appendf(buf, len, " call-graph=fp chains=%" PRIu64 " no_user=%" PRIu64 " cut=%"
		       PRIu64, st.samples, st.no_user, st.cut);
	}
	if (s->ht_samples)
		col_appendf(buf, len, " table=%s:%" PRIu64 "/%" PRIu64, ht_policy_name(HT_DEFAULT_POLICY),
		       s->ht_entries, s->ht_samples);
	for (unsigned i = 0; i < s->nev; i++)
		col_appendf(buf, len, " event:%s enabled=%" PRIu64 " running=%" PRIu64,
		       s->ev[i]->name, s->counts[i].enabled, s->counts[i].running);
	if (s->opts->pmu)	/* what the machine offered and what was taken */
		col_appendf(buf, len, " [%s]", s->opts->pmu);
	if (meta && s->calibrated) {
		meta->calibrated = 1;
		meta->cycles_per_sample = s->cal.cycles_per_sample;
		meta->cycles_per_ns = s->cal.cycles_per_ns;
		meta->clock_change = clock_change(&s->cal);
		if (s->cal.exp_samples) {
			meta->exposure_witness = s->cal.exp_witness;
			meta->exposure_samples = s->cal.exp_samples;
			meta->exposure_cycles_step = s->cal.exp_cycles_per_step;
		}
	} else if (meta && s->cal.cycles_per_ns > 0) {
		meta->cycles_per_ns = s->cal.cycles_per_ns;
	}
}

/* The events as opened, with their counters' ids, for the file's header. */
static int hw_events(const struct session *s, struct hws_event *ev, uint64_t **ids)
{
	const struct sampler *m = &s->smp;

	for (unsigned e = 0; e < s->nev; e++) {
		ev[e].attr = m->attr[e];
		ev[e].name = s->ev[e]->name;
		ids[e] = calloc((size_t)m->nctr + 1, sizeof(uint64_t));
		if (!ids[e])
			return -ENOMEM;
		ev[e].nids = 0;
		for (int k = 0; k < m->nctr; k++)
			if (m->ctr[k].ev == e)
				ids[e][ev[e].nids++] = m->ctr[k].id;
		ev[e].ids = ids[e];
	}
	return 0;
}

/* A failed import: the file kept as dir/hw-EPOCH.perf.data (a new name,
 * link(2) never replaces one), and the note says where. */
static void hw_keep(struct session *s, const char *epoch, char *note, size_t len,
		    const char *why)
{
	const char *dir = s->opts->hw_spool_dir ? s->opts->hw_spool_dir : s->opts->db_dir;
	char kept[512];

	snprintf(kept, sizeof(kept), "%s/hw-%s.perf.data", dir, epoch);
	if (link(hws_path(s->hw), kept))
		snprintf(kept, sizeof(kept), "nowhere (%s)", strerror(errno));
	snprintf(note, len, "hardware evidence not imported: %.300s; the perf.data is kept "
		 "in %s (dcpi import can read it)", why, kept);
}

int sess_hw_import(struct session *s, struct prof_db *db, const char *epoch, char *note,
		   size_t len, uint64_t *samples)
{
	struct hws_event ev[COLLECT_MAX_EVENTS];
	uint64_t *ids[COLLECT_MAX_EVENTS] = { 0 };
	struct dcpi_err e2 = { 0 };
	int ret;

	note[0] = '\0';
	if (!s->hw)
		return 0;
	*samples = hws_samples(s->hw);
	ret = hw_events(s, ev, ids);
	if (ret)
		dcpi_errf(&e2, ret, "out of memory");
	if (!ret)
		ret = hws_finish(s->hw, ev, s->nev, s->opts->hw_vendor ? s->opts->hw_vendor : "",
				 &e2);
	if (!ret && *samples)
		ret = s->opts->hw_import(hws_path(s->hw), db, epoch, note, len, &e2);
	else if (!ret)
		snprintf(note, len, "no hardware evidence samples (branch stacks, IBS) in this "
			 "run");
	if (ret)
		hw_keep(s, epoch, note, len, e2.msg);
	for (unsigned e = 0; e < s->nev; e++)
		free(ids[e]);
	hws_free(s->hw, 1);
	s->hw = NULL;
	return 0;
}

int sess_hw_restart(struct session *s, struct dcpi_err *err)
{
	if (s->hw || !s->opts->hw_import || !sess_hw_events(s))
		return 0;
	return hws_open(&s->hw, s->opts->hw_spool_dir ? s->opts->hw_spool_dir : s->opts->db_dir,
			err);
}
