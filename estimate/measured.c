/*
 * measured.c - best cases measured on this machine instead of modelled
 * (docs/estimate.md, "Measured block costs"; tests/test_measured.c).  Every execution count is
 * samples x cycles per sample / best case (DCPI paper sec. 6.1.3), so the best
 * case must be this machine's: the hot blocks of a procedure, and one
 * iteration of each hot innermost loop along its dominant path, are timed in
 * the BHive-style sandbox (culprit/sandbox/sandbox.c) and est_procedure uses those
 * figures where they exist (est_apply_measured).
 *
 * A block's body is its bytes without the ending branch, call or return; a
 * loop's body is the blocks of its dominant path (path samples when given,
 * else the successor that stays in the loop: the back edge, else the block
 * with more samples, else the fall-through), branches inside made nops of the
 * same length and the back edge left out.  The figure kept is the sandbox's
 * lower quartile (contention only slows a body), with the spread beside.
 *
 * Cache: DIR/measured-costs.txt, one line per (CPU, body): FNV-1a 64 and
 * CRC-32C of the bytes and their length identify a body; written whole to a
 * temporary file in the same directory and renamed over the old one.  A body
 * the sandbox timed on a shared core is timed again at once (three rounds at
 * most, the lower kept); a figure still noisy is cached as such and used, so
 * repeated reports print the same numbers; est_measure_opts.remeasure times
 * noisy figures again (dcpicalc --remeasure).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "dcpi/estimate.h"
#include "dcpi/paths.h"
#include "dcpi/profile.h"

#define MC_VERSION 3
#define MC_NAME "measured-costs.txt"
#define MC_NOISY 0.05	/* a cached figure spread more than this is timed again */

void est_measure_opts_default(struct est_measure_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->hot_share = 0.99;
	o->min_share = 0.002;
	o->max_blocks = 24;
	o->max_loops = 8;
	o->max_path = 64;
	o->steady = EST_STEADY_SELF;
	sbx_opts_default(&o->sbx);
	o->sbx.timeout_ms = 1000;
	/* real code: pointers in different registers are different objects, and a
	 * pointer stepping through memory stays in L1 (culprit/sandbox/sandbox.c) */
	o->sbx.flags = SBX_F_WIND | SBX_F_DISTINCT;
}

int est_measure_cache_path(const char *dbdir, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", dbdir, MC_NAME);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --- bodies ------------------------------------------------------------------ */

/* Same-length nops (the recommended multi-byte forms; longer as several). */
static void put_nops(uint8_t *p, size_t n)
{
	static const uint8_t nops[9][9] = {
		{ 0x90 },
		{ 0x66, 0x90 },
		{ 0x0f, 0x1f, 0x00 },
		{ 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};

	while (n) {
		size_t k = n > 9 ? 9 : n;

		memcpy(p, nops[k - 1], k);
		p += k;
		n -= k;
	}
}

static int ends_block(const struct cfg_insn *in)
{
	return (in->flags & (CFG_I_BRANCH | CFG_I_CALL | CFG_I_RET)) != 0;
}

int est_block_body(const struct cfg *cfg, uint32_t b, uint8_t *out, size_t *len)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	uint32_t n = bl->n;

	*len = 0;
	if (!n)
		return -EINVAL;
	if (ends_block(&cfg->insns[bl->first + n - 1]))
		n--;
	for (uint32_t i = bl->first; i < bl->first + n; i++) {
		memcpy(out + *len, cfg->insns[i].bytes, cfg->insns[i].size);
		*len += cfg->insns[i].size;
	}
	return 0;
}

int est_path_body(const struct cfg *cfg, const uint32_t *path, uint32_t n, uint8_t *out,
		  size_t *len, char *why, size_t wlen)
{
	*len = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct cfg_block *bl = &cfg->blocks[path[k]];

		if (!bl->n) {
			snprintf(why, wlen, "empty block on the path");
			return -EINVAL;
		}
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
			const struct cfg_insn *in = &cfg->insns[i];

			if (in->flags & (CFG_I_CALL | CFG_I_RET | CFG_I_INDIRECT)) {
				snprintf(why, wlen, "%s at 0x%llx on the path",
					 in->flags & CFG_I_CALL ? "call" :
					 in->flags & CFG_I_RET ? "return" : "indirect jump",
					 (unsigned long long)in->addr);
				return -EINVAL;
			}
			if (in->flags & CFG_I_BRANCH) {
				if (k + 1 < n)
					put_nops(out + *len, in->size);
				else
					continue;	/* the back edge: the sandbox loops */
			} else {
				memcpy(out + *len, in->bytes, in->size);
			}
			*len += in->size;
		}
	}
	return 0;
}

/* --- the dominant path of a loop -------------------------------------------- */

static double block_samples(const struct cfg *cfg, const double *s, uint32_t b)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double sum = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		sum += s[i];
	return sum;
}

/* Transitions from the last instruction of `from` to the first of `to` in
 * the path profile (sorted by from, to); -1 when unknown. */
static double path_count(const struct cfg *cfg, const struct est_measure_opts *o,
			 uint32_t from, uint32_t to)
{
	const struct cfg_block *a = &cfg->blocks[from], *b = &cfg->blocks[to];
	const struct path_profile *p = o->paths;
	uint64_t fo, to_off;
	size_t lo = 0, hi;

	if (!p || !a->n || !b->n || (p->flags & PATH_F_TAKEN_ONLY))
		return -1;
	fo = cfg->insns[a->first + a->n - 1].addr;
	to_off = cfg->insns[b->first].addr;
	if (o->img && (img_vaddr_to_offset(o->img, fo, &fo) < 0 ||
		       img_vaddr_to_offset(o->img, to_off, &to_off) < 0))
		return -1;
	hi = p->nedges;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->edges[mid].from < fo ||
		    (p->edges[mid].from == fo && p->edges[mid].to < to_off))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nedges && p->edges[lo].from == fo && p->edges[lo].to == to_off)
		return (double)p->edges[lo].count;
	/* other transitions from the same instruction exist: this one is 0 */
	if ((lo < p->nedges && p->edges[lo].from == fo) ||
	    (lo > 0 && p->edges[lo - 1].from == fo))
		return 0;
	return -1;
}

/*
 * The next block after b on loop l's dominant path: the header (back edge
 * taken) when the evidence does not say otherwise, else the in-loop successor
 * not yet on the path with the most path transitions, else samples, else
 * the fall-through.  -1 when none.
 */
static long next_block(const struct cfg *cfg, const double *s, const struct est_measure_opts *o,
		       const uint8_t *in_loop, const uint8_t *on_path, uint32_t header,
		       uint32_t b, int *from_paths)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	long best = -1, back = -1;
	double best_c = -1, best_s = -1, back_c = -1;
	int best_ft = 0;

	for (uint32_t k = 0; k < bl->nsucc; k++) {
		const struct cfg_edge *e = &cfg->edges[bl->succ[k]];
		double c, sm;
		int ft;

		if (e->to == header) {
			back = header;
			back_c = path_count(cfg, o, b, e->to);
			continue;
		}
		if (!in_loop[e->to] || on_path[e->to])
			continue;
		c = path_count(cfg, o, b, e->to);
		sm = block_samples(cfg, s, e->to);
		ft = e->kind == CFG_E_NOT_TAKEN || e->kind == CFG_E_FALLTHROUGH;
		if (best < 0 || c > best_c || (c == best_c && (sm > best_s ||
		    (sm == best_s && ft && !best_ft)))) {
			best = e->to;
			best_c = c;
			best_s = sm;
			best_ft = ft;
		}
	}
	if (back >= 0 && (best < 0 || best_c < 0 || back_c < 0 || back_c >= best_c)) {
		*from_paths |= back_c >= 0 && best_c >= 0;
		return back;
	}
	if (best >= 0 && best_c >= 0)
		*from_paths = 1;
	return best;
}

/* The iteration of loop l along its dominant path into ml->path. */
static int loop_path(const struct cfg *cfg, const double *s, const struct est_measure_opts *o,
		     uint32_t l, struct est_meas_loop *ml)
{
	const struct cfg_loop *lp = &cfg->loops[l];
	uint8_t *in_loop = calloc(cfg->nblocks, 1), *on_path = calloc(cfg->nblocks, 1);
	uint32_t b = lp->header;
	int rc = 0;

	ml->path = calloc(o->max_path + 1, sizeof(*ml->path));
	if (!in_loop || !on_path || !ml->path) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < lp->nblocks; k++)
		in_loop[lp->blocks[k]] = 1;
	for (;;) {
		long nx;

		if (ml->npath == o->max_path) {
			snprintf(ml->why, sizeof(ml->why), "path longer than %u blocks",
				 o->max_path);
			ml->npath = 0;
			break;
		}
		ml->path[ml->npath++] = b;
		on_path[b] = 1;
		nx = next_block(cfg, s, o, in_loop, on_path, lp->header, b, &ml->from_paths);
		if (nx == (long)lp->header)
			break;
		if (nx < 0) {
			snprintf(ml->why, sizeof(ml->why), "no path back to the header");
			ml->npath = 0;
			break;
		}
		b = (uint32_t)nx;
	}
out:
	free(in_loop);
	free(on_path);
	return rc;
}

/* --- the cache -------------------------------------------------------------- */

struct mc_entry {
	char cpu[64];
	uint64_t fnv;
	uint32_t crc, len;
	int status;
	double cycles, median, spread;
};

struct mc_cache {
	struct mc_entry *e;
	size_t n, cap;
	int dirty;
};

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static const char *const mc_status[] = { "ok", "refused", "fault", "timeout", "unstable",
					 "too-large", "error" };

static struct mc_entry *mc_find(struct mc_cache *c, const char *cpu, uint64_t fnv, uint32_t crc,
				uint32_t len)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].fnv == fnv && c->e[i].crc == crc && c->e[i].len == len &&
		    !strcmp(c->e[i].cpu, cpu))
			return &c->e[i];
	return NULL;
}

static int mc_add(struct mc_cache *c, const struct mc_entry *e)
{
	struct mc_entry *old = mc_find(c, e->cpu, e->fnv, e->crc, e->len);

	if (!old) {
		if (dcpi_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)))
			return -ENOMEM;
		old = &c->e[c->n++];
	}
	*old = *e;
	c->dirty = 1;
	return 0;
}

/* One line; 0, or -EINVAL with why. */
static int mc_parse(const char *line, struct mc_entry *e, const char **why)
{
	char st[16];
	unsigned long long fnv;
	unsigned crc, len;
	int k;

	memset(e, 0, sizeof(*e));
	if (sscanf(line, "%63s %16llx %8x %u %15s %lf %lf %lf", e->cpu, &fnv, &crc, &len, st,
		   &e->cycles, &e->median, &e->spread) != 8) {
		*why = "not <cpu> <fnv64> <crc32c> <length> <status> <cycles> <median> <spread>";
		return -EINVAL;
	}
	e->fnv = fnv;
	e->crc = crc;
	e->len = len;
	for (k = 0; k < 7 && strcmp(st, mc_status[k]); k++)
		;
	if (k == 7) {
		*why = "unknown status";
		return -EINVAL;
	}
	e->status = k;
	if (!isfinite(e->cycles) || !isfinite(e->median) || !isfinite(e->spread) ||
	    e->cycles < 0 || e->median < 0 || e->spread < 0 || !len) {
		*why = "bad figures";
		return -EINVAL;
	}
	return 0;
}

/* Read the cache; a missing file is empty; a bad one is reported in note
 * and its bad lines dropped (the next write leaves them out). */
static int mc_read(const char *path, struct mc_cache *c, char *note, size_t nlen)
{
	FILE *f = dcpi_fopen_read(path, NULL);
	char line[512];
	unsigned ln = 0;
	int rc = 0;

	if (!f) {
		if (errno != ENOENT)
			snprintf(note, nlen, "%.160s: %.60s (not used)", path, strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		struct mc_entry e;
		const char *why = NULL;
		unsigned v;

		ln++;
		if (ln == 1) {
			if (sscanf(line, "# dcpi measured costs v%u", &v) != 1 ||
			    v != MC_VERSION) {
				snprintf(note, nlen, "%.160s: not a v%d measured-costs file "
					 "(rewritten)", path, MC_VERSION);
				c->dirty = 1;
				break;
			}
			continue;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (mc_parse(line, &e, &why) < 0) {
			if (!note[0])
				snprintf(note, nlen, "%.150s:%u: %.70s (line dropped)", path,
					 ln, why);
			c->dirty = 1;
			continue;
		}
		rc = mc_add(c, &e);
		if (rc < 0)
			break;
	}
	fclose(f);
	if (rc == 0)
		c->dirty = c->dirty && note[0];
	return rc;
}

/* Write the whole cache: temporary file beside it, then rename. */
static int mc_write(const char *path, const struct mc_cache *c, struct dcpi_err *err)
{
	char tmp[4300];
	FILE *f;
	int fd = -1, rc = 0;

	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		snprintf(tmp, sizeof(tmp), "%.4200s.%ld.%llx", path, (long)getpid(),
			 (unsigned long long)(dcpi_now_ns() + (uint64_t)tries));
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return dcpi_errf(err, -errno, "%s: %s", tmp, strerror(errno));
	}
	if (fd < 0)
		return dcpi_errf(err, -EEXIST, "%s: cannot create a temporary file", path);
	fchmod(fd, 0644);	/* whatever the umask */
	f = fdopen(fd, "w");
	if (!f) {
		rc = dcpi_errf(err, -errno, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return rc;
	}
	fprintf(f, "# dcpi measured costs v%d (estimate/measured.c, docs/estimate.md)\n"
		"# cpu fnv64 crc32c length status cycles median spread\n", MC_VERSION);
	for (size_t i = 0; i < c->n; i++) {
		const struct mc_entry *e = &c->e[i];

		fprintf(f, "%s %016llx %08x %u %s %.4f %.4f %.4f\n", e->cpu,
			(unsigned long long)e->fnv, e->crc, e->len, mc_status[e->status],
			e->cycles, e->median, e->spread);
	}
	if (fflush(f) || ferror(f))
		rc = dcpi_errf(err, -EIO, "%s: write failed", tmp);
	if (fclose(f) && !rc)
		rc = dcpi_errf(err, -EIO, "%s: write failed", tmp);
	if (!rc && rename(tmp, path))
		rc = dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}

/* --- measuring ---------------------------------------------------------------- */

/* One body to time: a block (loop < 0) or a loop. */
struct job {
	long block, loop;
	uint8_t *bytes;
	size_t len;
	struct mc_entry key;
	int hit;		/* 1 cached, 2 timed now */
	long dup;		/* the job with the same bytes, or -1 */
	struct mc_entry prev;	/* a noisy cached figure, timed again */
	int has_prev;		/* 2: timed again with no figure, prev kept */
};

struct meas {
	const struct cfg *cfg;
	const double *s;
	const struct est_measure_opts *o;
	struct est_measurements *out;
	struct job *jobs;
	size_t njobs;
	struct mc_cache cache;
	char cpu_key[64];
};

static void cpu_identity(struct meas *m)
{
	struct prof_epoch_meta pm;

	memset(&pm, 0, sizeof(pm));
	prof_meta_this_machine(&pm);
	snprintf(m->cpu_key, sizeof(m->cpu_key), "%.16s:%u:%u:%u",
		 pm.cpu_vendor[0] ? pm.cpu_vendor : "unknown", pm.cpu_family, pm.cpu_model,
		 pm.cpu_stepping);
	snprintf(m->out->cpu, sizeof(m->out->cpu),
		 "%.16s family %u model %u stepping %u%s%.128s%s",
		 pm.cpu_vendor[0] ? pm.cpu_vendor : "unknown", pm.cpu_family, pm.cpu_model,
		 pm.cpu_stepping, pm.cpu_name[0] ? " (" : "", pm.cpu_name,
		 pm.cpu_name[0] ? ")" : "");
}

/*
 * A figure of this CPU's kept in the same cache under a name instead of a
 * body (a replayed walk's, estimate/replay.c): cycles, median and spread.
 * Lookup: 1 found, 0 not.  Store: written at once (a lost write only costs
 * a timing again); a note on failure, no error.
 */
static void named_key(const char *name, struct mc_entry *e)
{
	struct meas m = { 0 };
	struct est_measurements out;

	memset(e, 0, sizeof(*e));
	m.out = &out;
	cpu_identity(&m);
	snprintf(e->cpu, sizeof(e->cpu), "%s", m.cpu_key);
	e->fnv = fnv1a((const uint8_t *)name, strlen(name));
	e->len = (uint32_t)strlen(name);
}

int est_cache_lookup(const char *dir, const char *name, double fig[3], char *note, size_t nlen)
{
	struct mc_cache c = { 0 };
	struct mc_entry key;
	const struct mc_entry *e;
	char path[4200];
	int found = 0;

	if (!dir || est_measure_cache_path(dir, path, sizeof(path)) < 0)
		return 0;
	named_key(name, &key);
	if (mc_read(path, &c, note, nlen) == 0 &&
	    (e = mc_find(&c, key.cpu, key.fnv, key.crc, key.len)) && e->status == 0) {
		fig[0] = e->cycles, fig[1] = e->median, fig[2] = e->spread;
		found = 1;
	}
	free(c.e);
	return found;
}

void est_cache_store(const char *dir, const char *name, const double fig[3], char *note,
		     size_t nlen)
{
	struct mc_cache c = { 0 };
	struct mc_entry key;
	struct dcpi_err err = { 0 };
	char path[4200];

	if (!dir || est_measure_cache_path(dir, path, sizeof(path)) < 0)
		return;
	named_key(name, &key);
	key.cycles = fig[0], key.median = fig[1], key.spread = fig[2];
	if (mc_read(path, &c, note, nlen) < 0 || mc_add(&c, &key) < 0 ||
	    mc_write(path, &c, &err) < 0) {
		if (!note[0])
			snprintf(note, nlen, "%.250s", err.msg[0] ? err.msg : "out of memory");
	}
	free(c.e);
}

static int add_job(struct meas *m, long block, long loop, uint8_t *bytes, size_t len)
{
	struct job *j = &m->jobs[m->njobs++];

	memset(j, 0, sizeof(*j));
	j->block = block;
	j->loop = loop;
	j->bytes = bytes;
	j->len = len;
	j->dup = -1;
	snprintf(j->key.cpu, sizeof(j->key.cpu), "%s", m->cpu_key);
	j->key.fnv = fnv1a(bytes, len);
	j->key.crc = dcpi_crc32c(0, bytes, len);
	j->key.len = (uint32_t)len;
	return 0;
}

static int cmp_hot(const void *a, const void *b, const double *bs)
{
	double x = bs[*(const uint32_t *)a], y = bs[*(const uint32_t *)b];

	return x > y ? -1 : x < y;
}

static const double *g_sort_key;	/* dcpi_qsort has no context argument */
static int cmp_hot_g(const void *a, const void *b)
{
	return cmp_hot(a, b, g_sort_key);
}

/* The hot blocks: flags hot[b]. */
static int pick_blocks(struct meas *m, double *bs, uint8_t *hot)
{
	const struct cfg *cfg = m->cfg;
	uint32_t *order = calloc(cfg->nblocks + 1, sizeof(*order));
	double total = 0, acc = 0;
	unsigned taken = 0;

	if (!order)
		return -ENOMEM;
	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		order[b] = b;
		bs[b] = block_samples(cfg, m->s, b);
		total += bs[b];
	}
	g_sort_key = bs;
	dcpi_qsort(order, cfg->nblocks, sizeof(*order), cmp_hot_g);
	for (uint32_t k = 0; k < cfg->nblocks && total > 0; k++) {
		uint32_t b = order[k];

		if (acc >= m->o->hot_share * total || taken >= m->o->max_blocks ||
		    bs[b] < m->o->min_share * total || bs[b] <= 0)
			break;
		hot[b] = 1;
		acc += bs[b];
		taken++;
	}
	free(order);
	return 0;
}

static int block_jobs(struct meas *m, const uint8_t *hot)
{
	const struct cfg *cfg = m->cfg;

	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		const struct cfg_block *bl = &cfg->blocks[b];
		uint8_t *bytes;
		size_t len;

		if (!hot[b] || !bl->n)
			continue;
		bytes = malloc(bl->end - bl->start + 16);
		if (!bytes)
			return -ENOMEM;
		est_block_body(cfg, b, bytes, &len);
		m->out->blocks[b].tried = 1;
		if (!len) {
			free(bytes);
			snprintf(m->out->blocks[b].why, sizeof(m->out->blocks[b].why),
				 "only a branch");
			m->out->blocks[b].status = SBX_REFUSED;
			continue;
		}
		add_job(m, b, -1, bytes, len);
	}
	return 0;
}

/* Does loop l's path stay in l's own blocks, out of the loops nested in it,
 * and store nothing (loop_jobs)? */
static int path_own(const struct cfg *cfg, uint32_t l, const struct est_meas_loop *ml)
{
	for (uint32_t k = 0; k < ml->npath; k++) {
		const struct cfg_block *bl = &cfg->blocks[ml->path[k]];

		if (bl->loop != (int)l)
			return 0;
		for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
			if (cfg->insns[i].flags & CFG_I_STORE)
				return 0;
	}
	return 1;
}

/*
 * Loops holding a hot block, the hottest first: innermost ones, and an outer
 * one whose dominant path stays out of the loops nested in it (grep's DFA:
 * state = trans[state][c] around four blocks, with two self loops beside the
 * path; timed block by block, each block's copies are independent and the
 * chain of four dependent loads is nowhere, 3.2 cycles an iteration against
 * 20).  A path through a nested loop is left to that loop: its iteration
 * holds one pass of a body that runs many, and the samples would not share
 * the cycles out.  A path that stores is left to its blocks: the sandbox
 * starts every register at one address, and the path's loads would wait on
 * its stores as the program's do not (sqlite3's parser: 87 cycles timed as
 * one body, its counts 4x low).
 */
static int loop_jobs(struct meas *m, const uint8_t *hot, const double *bs)
{
	const struct cfg *cfg = m->cfg;
	struct est_measurements *out = m->out;
	double *ls = calloc(cfg->nloops + 1, sizeof(*ls));
	uint8_t *cand = calloc(cfg->nloops + 1, 1);
	int rc = 0;

	if (!ls || !cand) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t l = 0; l < cfg->nloops; l++)
		cand[l] = !cfg->loops[l].irreducible;
	for (size_t l = 0; l < cfg->nloops; l++) {
		int any = 0;

		for (uint32_t k = 0; k < cfg->loops[l].nblocks; k++) {
			ls[l] += bs[cfg->loops[l].blocks[k]];
			any |= hot[cfg->loops[l].blocks[k]];
		}
		if (!any)
			cand[l] = 0;
	}
	while (out->nloops < m->o->max_loops) {
		long best = -1;
		struct est_meas_loop *ml;
		uint8_t *bytes;
		size_t len = 0, cap = 0;

		for (size_t l = 0; l < cfg->nloops; l++)
			if (cand[l] && (best < 0 || ls[l] > ls[best]))
				best = (long)l;
		if (best < 0)
			break;
		cand[best] = 0;
		ml = &out->loops[out->nloops++];
		ml->loop = (uint32_t)best;
		ml->status = -1;
		rc = loop_path(cfg, m->s, m->o, (uint32_t)best, ml);
		if (rc < 0)
			goto out;
		if (!cfg_loop_innermost(cfg, (size_t)best) &&
		    (!ml->npath || !path_own(cfg, (uint32_t)best, ml))) {
			free(ml->path);
			memset(ml, 0, sizeof(*ml));
			out->nloops--;
			continue;
		}
		if (!ml->npath)
			continue;
		for (uint32_t k = 0; k < ml->npath; k++)
			cap += cfg->blocks[ml->path[k]].end - cfg->blocks[ml->path[k]].start;
		bytes = malloc(cap + 16);
		if (!bytes) {
			rc = -ENOMEM;
			goto out;
		}
		if (est_path_body(cfg, ml->path, ml->npath, bytes, &len, ml->why,
				  sizeof(ml->why)) < 0 || !len) {
			if (!len && !ml->why[0])
				snprintf(ml->why, sizeof(ml->why), "only a branch");
			free(bytes);
			continue;
		}
		add_job(m, -1, (long)(out->nloops - 1), bytes, len);
	}
out:
	free(ls);
	free(cand);
	return rc;
}

/* An earlier job with the same bytes, or -1. */
static long same_body(const struct meas *m, size_t j)
{
	for (size_t k = 0; k < j; k++)
		if (m->jobs[k].key.fnv == m->jobs[j].key.fnv &&
		    m->jobs[k].key.crc == m->jobs[j].key.crc &&
		    m->jobs[k].key.len == m->jobs[j].key.len)
			return (long)k;
	return -1;
}


/* x as the cache file writes it (%.4f) and strtod reads it back: the
 * quotient of two integers is the double nearest the decimal. */
static double cache_precision(double x)
{
	return x < 1e12 ? round(x * 1e4) / 1e4 : x;
}

/*
 * Time bodies[0..n) into res, and again, up to ROUNDS in all, the ones the
 * sandbox's canary saw timed on a shared core, keeping each body's lower
 * figure: contention only slows a body.  A figure is taken in one run and
 * cached, so every later report uses the same one (include/dcpi/analysis.h).
 */
#define ROUNDS 3
static int time_rounds(const struct est_measure_opts *o, const uint8_t **bodies,
		       const size_t *lens, size_t n, struct sbx_result *res,
		       struct dcpi_err *err)
{
	const uint8_t **b2 = calloc(n + 1, sizeof(*b2));
	size_t *l2 = calloc(n + 1, sizeof(*l2)), *at = calloc(n + 1, sizeof(*at));
	struct sbx_result *r2 = calloc(n + 1, sizeof(*r2));
	int rc = sbx_time(bodies, lens, n, &o->sbx, res, err);

	for (int round = 1; rc >= 0 && round < ROUNDS && b2 && l2 && at && r2; round++) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (res[i].status == SBX_OK && res[i].contended) {
				b2[k] = bodies[i];
				l2[k] = lens[i];
				at[k++] = i;
			}
		if (!k || sbx_time(b2, l2, k, &o->sbx, r2, err) < 0)
			break;
		for (size_t j = 0; j < k; j++) {
			struct sbx_result *was = &res[at[j]];

			if (r2[j].status != SBX_OK)
				continue;
			if (!r2[j].contended || r2[j].cycles_low < was->cycles_low)
				*was = r2[j];
		}
	}
	free(b2);
	free(l2);
	free(at);
	free(r2);
	return rc;
}

/* Time what the cache does not hold. */
static double positive_or_zero(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

static int run_jobs(struct meas *m, struct dcpi_err *err)
{
	const uint8_t **bodies = calloc(m->njobs + 1, sizeof(*bodies));
	size_t *lens = calloc(m->njobs + 1, sizeof(*lens)), n = 0;
	size_t *which = calloc(m->njobs + 1, sizeof(*which));
	struct sbx_result *res = calloc(m->njobs + 1, sizeof(*res));
	struct dcpi_err serr = { 0 };
	uint64_t t0;
	int rc = 0;

	if (!bodies || !lens || !which || !res) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", m->cfg->name);
		goto out;
	}
	for (size_t j = 0; j < m->njobs; j++) {
		struct mc_entry *e = mc_find(&m->cache, m->jobs[j].key.cpu, m->jobs[j].key.fnv,
					     m->jobs[j].key.crc, m->jobs[j].key.len);

		if (same_body(m, j) >= 0)
			continue;	/* a one-block loop is its block: timed once */
		if (e && ((e->status == SBX_OK && e->spread > MC_NOISY) || e->status == SBX_FAULT) &&
		    m->o->remeasure && !m->o->cache_only) {
			/* taken under contention, or faulted in a sandbox that
			 * since learnt to lay out more bodies (sbx_realign), and
			 * asked to: time again, keep the lower */
			m->jobs[j].prev = *e;
			m->jobs[j].has_prev = 1;
			e = NULL;
		}
		if (e) {
			m->jobs[j].key = *e;
			m->jobs[j].hit = 1;
			m->out->cached++;
			continue;
		}
		if (m->o->cache_only)
			continue;
		bodies[n] = m->jobs[j].bytes;
		lens[n] = m->jobs[j].len;
		which[n++] = j;
	}
	t0 = dcpi_now_ns();
	if (n && time_rounds(m->o, bodies, lens, n, res, &serr) < 0 && !m->out->note[0])
		snprintf(m->out->note, sizeof(m->out->note), "%.250s", serr.msg);
	m->out->seconds = (double)(dcpi_now_ns() - t0) / 1e9;
	for (size_t j = 0; j < m->njobs; j++) {
		long k = same_body(m, j);

		if (k >= 0)
			m->jobs[j].dup = k;
	}
	for (size_t k = 0; k < n; k++) {
		struct job *j = &m->jobs[which[k]];
		int figure;

		j->key.status = (int)res[k].status;
		j->key.cycles = res[k].cycles_low;
		j->key.median = res[k].cycles;
		j->key.spread = res[k].spread;
		/* a run whose U and 2U times came out backwards (valgrind's
		 * synthetic CPU does that) has no figure: unstable, and nothing
		 * negative written, which the cache's reader would drop */
		figure = positive_or_zero(j->key.cycles) > 0 && positive_or_zero(j->key.median) > 0 &&
			 isfinite(j->key.spread) && j->key.spread >= 0;
		/* as the cache keeps them (four decimals), so this run uses the
		 * very figures every later one reads back */
		j->key.cycles = cache_precision(positive_or_zero(j->key.cycles));
		j->key.median = cache_precision(positive_or_zero(j->key.median));
		j->key.spread = cache_precision(positive_or_zero(j->key.spread));
		if (res[k].status == SBX_OK && !figure) {
			res[k].status = SBX_UNSTABLE;
			snprintf(res[k].detail, sizeof(res[k].detail),
				 "no positive figure (%.3g cycles)", res[k].cycles_low);
			j->key.status = SBX_UNSTABLE;
		}
		if (res[k].status == SBX_OK && res[k].contended) {
			/* shared core in every round: cached as noisy, used as it
			 * is until a run asks to time it again (remeasure) */
			m->out->contended++;
			if (j->key.spread <= MC_NOISY)
				j->key.spread = 2 * MC_NOISY;
		}
		j->hit = 2;	/* timed now */
		if (j->has_prev && res[k].status != SBX_OK) {
			j->key = j->prev;	/* no figure: the cached one stands */
			j->has_prev = 2;
			j->hit = 1;
		} else if (j->has_prev && j->prev.status == SBX_OK && j->prev.cycles < j->key.cycles) {
			j->key = j->prev;	/* contention only ever slows a body */
		}
		m->out->timed++;
		if (res[k].status != SBX_ERROR && mc_add(&m->cache, &j->key) < 0) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", m->cfg->name);
			goto out;
		}
		/* why, for the record (not cached: the cache keeps the status) */
		if (res[k].status != SBX_OK) {
			char *why = j->block >= 0 ? m->out->blocks[j->block].why :
				    m->out->loops[j->loop].why;

			snprintf(why, 112, "%s%s: %.80s", j->has_prev == 2 ? "cached kept, retimed " : "",
				 sbx_status_name(res[k].status), res[k].detail);
		}
	}
out:
	free(bodies);
	free(lens);
	free(which);
	free(res);
	return rc;
}

/* Fill a result from its job's figures. */
static void settle(struct job *j, enum est_best_source *src, double *cyc, double *med,
		   double *spread, int *cached, int *status, char *why, size_t wlen)
{
	*status = j->hit ? j->key.status : -1;
	*cached = j->hit == 1;
	if (!j->hit) {
		snprintf(why, wlen, "not in the cache (not timed)");
		return;
	}
	*med = j->key.median;
	*spread = j->key.spread;
	if (j->key.status == SBX_OK && j->key.cycles > 0) {
		*src = EST_BEST_MEASURED;
		*cyc = j->key.cycles;
		if (j->has_prev != 2)
			why[0] = '\0';	/* else: why the retiming gave nothing */
	} else if (!why[0]) {
		snprintf(why, wlen, "%s%s", mc_status[j->key.status],
			 j->hit == 1 ? " (cached)" : "");
	}
}

/*
 * The front end's floor (model_loop_lines): the sandbox times a loop's
 * iteration unrolled, straight-line code, but the loop itself fetches its
 * code a line a cycle at best, and a loop of a few instructions that crosses
 * a line boundary runs at the floor (Zen 4: 1.00 cycles inside one 64-byte
 * line, 2.02 across two).  Blocks that follow one another in memory are one
 * run of fetched code, the last running on into the first when it falls
 * through to the header.
 */
int est_path_lines(const struct cfg *cfg, const struct model *model, const uint32_t *path,
		   uint32_t n)
{
	uint64_t *lo, *hi;
	size_t k = 0;
	int lines;

	if (!model || !n || !(lo = calloc(2 * (size_t)n, sizeof(*lo))))
		return 0;
	hi = lo + n;
	for (uint32_t i = 0; i < n; i++) {
		const struct cfg_block *b = &cfg->blocks[path[i]];

		if (k && hi[k - 1] == b->start) {
			hi[k - 1] = b->end;
		} else {
			lo[k] = b->start;
			hi[k++] = b->end;
		}
	}
	if (k > 1 && hi[k - 1] == lo[0]) {
		lo[0] = lo[k - 1];
		k--;
	}
	lines = model_loop_lines(model, lo, hi, k);
	free(lo);
	return lines;
}

/* A measured figure below the front end's floor is raised to it. */
static void fetch_floors(struct meas *m)
{
	const struct cfg *cfg = m->cfg;
	struct est_measurements *out = m->out;

	for (uint32_t b = 0; b < cfg->nblocks; b++) {
		struct est_meas_block *mb = &out->blocks[b];
		int lines;

		if (mb->source != EST_BEST_MEASURED || !cfg->blocks[b].n || !cfg_self_loop(cfg, b))
			continue;
		lines = est_path_lines(cfg, m->o->model, &b, 1);
		if (lines > mb->cycles) {
			mb->cycles = lines;
			mb->lines = lines;
		}
	}
	for (size_t l = 0; l < out->nloops; l++) {
		struct est_meas_loop *ml = &out->loops[l];
		int lines;

		if (ml->source != EST_BEST_MEASURED)
			continue;
		lines = est_path_lines(cfg, m->o->model, ml->path, ml->npath);
		if (lines > ml->cycles) {
			ml->cycles = lines;
			ml->lines = lines;
		}
	}
}

/*
 * How the model's figure compares with the sandbox's on the blocks both
 * have: the model's single pass exposes every latency of a block, the
 * sandbox's copies overlap as the program's executions do (the median
 * measured / model over the hot procedures of make accuracy's 15 programs:
 * 0.17-0.40).  A block the sandbox could not time (it faulted, was refused)
 * or was not asked to (cold) may then be as far from its model figure as
 * the timed ones of its procedure are: their 5% and 95% quantiles bound its
 * interval (interval.c).  Its count keeps the model's figure: scaled by the
 * median, make accuracy's counts within 15% went from 47.9 to 46.5% over
 * 19 programs (sort 11 -> 71%, sed 4 -> 15%, xz 21 -> 0.3%), docs/estimate.md.
 */
static void model_scale(struct meas *m)
{
	struct est_measurements *out = m->out;
	double *r = calloc(out->nblocks + 1, sizeof(*r));
	size_t n = 0;

	for (size_t b = 0; r && b < out->nblocks; b++)
		if (out->blocks[b].source == EST_BEST_MEASURED && out->blocks[b].model > 0 &&
		    out->blocks[b].cycles > 0)
			r[n++] = out->blocks[b].cycles / out->blocks[b].model;
	if (n >= EST_MODEL_SCALE_MIN) {
		qsort(r, n, sizeof(*r), dcpi_cmp_double);
		out->model_scale = r[n / 2];
		out->model_scale_lo = r[(size_t)(0.05 * (double)(n - 1))];
		out->model_scale_hi = r[(size_t)ceil(0.95 * (double)(n - 1))];
		out->model_scale_n = (unsigned)n;
	}
	free(r);
}

static void model_figures(struct meas *m)
{
	const struct cfg *cfg = m->cfg;
	struct est_measurements *out = m->out;
	double *mm;

	if (!m->o->model)
		return;
	mm = calloc(cfg->ninsns + 1, sizeof(*mm));
	if (!mm || est_model_m(cfg, m->o->model, m->o->steady, mm, NULL, NULL, NULL) < 0) {
		free(mm);
		return;
	}
	for (size_t b = 0; b < cfg->nblocks; b++)
		for (uint32_t i = cfg->blocks[b].first;
		     i < cfg->blocks[b].first + cfg->blocks[b].n; i++)
			out->blocks[b].model += mm[i];
	for (size_t l = 0; l < out->nloops; l++)
		for (uint32_t k = 0; k < out->loops[l].npath; k++)
			out->loops[l].model += out->blocks[out->loops[l].path[k]].model;
	free(mm);
}

int est_measure(const struct cfg *cfg, const double *samples, const struct est_measure_opts *o,
		struct est_measurements *out, struct dcpi_err *err)
{
	struct meas m = { .cfg = cfg, .s = samples, .o = o, .out = out };
	double *bs = calloc(cfg->nblocks + 1, sizeof(*bs));
	uint8_t *hot = calloc(cfg->nblocks + 1, 1);
	char path[4200] = "";
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->apply_loops = 1;
	out->nblocks = cfg->nblocks;
	out->blocks = calloc(cfg->nblocks + 1, sizeof(*out->blocks));
	out->loops = calloc(o->max_loops + 1, sizeof(*out->loops));
	m.jobs = calloc(o->max_blocks + o->max_loops + 1, sizeof(*m.jobs));
	if (!bs || !hot || !out->blocks || !out->loops || !m.jobs) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	cpu_identity(&m);
	if (o->cache_dir && est_measure_cache_path(o->cache_dir, path, sizeof(path)) == 0 &&
	    (rc = mc_read(path, &m.cache, out->note, sizeof(out->note))) < 0) {
		dcpi_errf(err, rc, "%s: out of memory", path);
		goto out;
	}
	rc = pick_blocks(&m, bs, hot);
	if (rc == 0)
		rc = block_jobs(&m, hot);
	if (rc == 0)
		rc = loop_jobs(&m, hot, bs);
	if (rc < 0) {
		dcpi_errf(err, rc, "%s: out of memory", cfg->name);
		goto out;
	}
	rc = run_jobs(&m, err);
	if (rc < 0)
		goto out;
	for (size_t j = 0; j < m.njobs; j++) {
		struct job *jb = &m.jobs[j];

		if (jb->dup >= 0) {
			jb->hit = m.jobs[jb->dup].hit;
			jb->key = m.jobs[jb->dup].key;
		}
		if (jb->block >= 0) {
			struct est_meas_block *b = &out->blocks[jb->block];

			settle(jb, &b->source, &b->cycles, &b->median, &b->spread, &b->cached,
			       &b->status, b->why, sizeof(b->why));
		} else {
			struct est_meas_loop *l = &out->loops[jb->loop];

			settle(jb, &l->source, &l->cycles, &l->median, &l->spread, &l->cached,
			       &l->status, l->why, sizeof(l->why));
		}
	}
	model_figures(&m);
	model_scale(&m);
	fetch_floors(&m);
	if (path[0] && m.cache.dirty) {
		struct dcpi_err werr = { 0 };

		if (mc_write(path, &m.cache, &werr) < 0 && !out->note[0])
			snprintf(out->note, sizeof(out->note), "%.250s", werr.msg);
	}
	rc = 0;
out:
	for (size_t j = 0; j < m.njobs; j++)
		free(m.jobs[j].bytes);
	free(m.jobs);
	free(m.cache.e);
	free(bs);
	free(hot);
	if (rc < 0)
		est_measurements_free(out);
	return rc;
}

void est_measurements_free(struct est_measurements *m)
{
	if (m->loops)
		for (size_t l = 0; l < m->nloops; l++)
			free(m->loops[l].path);
	free(m->blocks);
	free(m->loops);
	memset(m, 0, sizeof(*m));
}

/* --- feeding the estimator ---------------------------------------------------- */

/* Scale the M_i of block b to sum to target, keeping their distribution. */
static void scale_block(const struct cfg *cfg, uint32_t b, double target, double *m)
{
	const struct cfg_block *bl = &cfg->blocks[b];
	double sum = 0;

	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		sum += m[i];
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++)
		m[i] = sum > 0 ? m[i] * target / sum : target / bl->n;
}

/* Samples and M of a block. */
static void block_sums(const struct cfg *cfg, uint32_t b, const double *samples, const double *m,
		       double *s, double *msum)
{
	const struct cfg_block *bl = &cfg->blocks[b];

	*s = *msum = 0;
	for (uint32_t i = bl->first; i < bl->first + bl->n; i++) {
		*s += samples ? samples[i] : 0;
		*msum += m[i];
	}
}

/*
 * A loop's iteration as one body: its blocks overlap, so together they cost
 * what the iteration costs.  How the core spreads that over them is what the
 * samples show (a block whose cycles retire in another's shadow gets none),
 * so the share of each block is its share of the path's samples, each then
 * estimating the path's iterations; with fewer than EST_LOOP_MIN_SAMPLES on
 * the path, its share of the path's best cases.
 */
#define EST_LOOP_MIN_SAMPLES 20

static void apply_loop(const struct cfg *cfg, const struct est_meas_loop *ml,
		       const double *samples, double *m)
{
	double stot = 0, mtot = 0, s, msum;
	int by_samples;

	for (uint32_t k = 0; k < ml->npath; k++) {
		block_sums(cfg, ml->path[k], samples, m, &s, &msum);
		stot += s;
		mtot += msum;
	}
	by_samples = stot >= EST_LOOP_MIN_SAMPLES;
	if (!by_samples && mtot <= 0)
		return;
	for (uint32_t k = 0; k < ml->npath; k++) {
		uint32_t b = ml->path[k];

		block_sums(cfg, b, samples, m, &s, &msum);
		if (by_samples)
			scale_block(cfg, b, ml->cycles * s / stot, m);
		else
			scale_block(cfg, b, ml->cycles * msum / mtot, m);
	}
}

void est_apply_measured(const struct cfg *cfg, const struct est_measurements *meas,
			const double *samples, double *m)
{
	if (!meas || meas->nblocks != cfg->nblocks)
		return;
	for (uint32_t b = 0; b < cfg->nblocks; b++)
		if (meas->blocks[b].source == EST_BEST_MEASURED && cfg->blocks[b].n)
			scale_block(cfg, b, meas->blocks[b].cycles, m);
	if (!meas->apply_loops)
		return;
	for (size_t l = 0; l < meas->nloops; l++)
		if (meas->loops[l].source == EST_BEST_MEASURED && meas->loops[l].npath)
			apply_loop(cfg, &meas->loops[l], samples, m);
}
