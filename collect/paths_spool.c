/*
 * collect/paths_spool.c - the runtime's spool files (collect/pathrt.h) into
 * path profiles (include/dcpi/paths.h; docs/paths.md).
 *
 * Each file is replayed in order: a PRT_MAPS record replaces the file's
 * mappings (kept in a struct maps of maps.c, offline, one pseudo-pid per
 * snapshot, so the images get the same identities and keys as the sample
 * profiles), and each PRT_BURST record's pcs are placed as (image, file
 * offset).  Every pc is one step of its image; every consecutive pair is
 * an edge, inside the image when both are in it, else an edge to
 * PATH_ELSEWHERE in the image left and one from PATH_ELSEWHERE in the image
 * entered.  pcs in no image (anonymous memory) are left out.  A record
 * that is malformed or cut short (the process died during the write) is
 * counted and ends that file; nothing else is trusted either.
 *
 * With a plan that counts calls at entries (collect/pathrt.h, PRT_CALLS),
 * each thread's records carry its counts so far: the last (largest) of each
 * thread, named by pid, tid and when its counting started, are summed per
 * entry into one PROF_EVENT_CALLS profile per image (the image of the
 * plan's path, interned in the same maps, so it has the identity the
 * samples and paths of that image get; docs/paths.md, "Calls counted at
 * the entry").
 *
 * With path slices wanted (paths_spool_write), every burst's records also
 * count in the time slice of its start, the record's time (pathrt.c takes
 * CLOCK_MONOTONIC when the burst starts), into one struct pslice_profile
 * per image (include/dcpi/slices.h), so that --time and --phase can cut
 * the paths as they cut the PC samples.  With values too, each slice's
 * value samples go through a vals_acc of their own (values_spool.c), and
 * its profiles into one struct vslice_profile per image: a hotlist cannot
 * be cut by time once made.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/slices.h"
#include "canary.h"
#include "internal.h"
#include "pathrt.h"
#include "plan.h"
#include "spool_maps.h"
#include "paths.h"
#include "values_spool.h"

#define TID_SET_MAX 65536

/* A thread's calls of the counted entries, by line of the plan file. */
struct calls_thread {
	uint32_t pid, tid;
	uint64_t since;		/* when its counting started */
	uint64_t *n;
};

struct acc {
	struct maps *maps;
	struct path_profile *img;	/* by image index of maps */
	struct pslice_profile *ps;	/* the same by time slice, when want_ps */
	int want_ps;
	size_t nimg;
	uint64_t slice;			/* the current burst's time slice */
	uint32_t pid;			/* pseudo-pid of the current snapshot */
	uint32_t next_pid;
	uint64_t *tids;			/* (pid << 32 | tid), for the thread count */
	size_t ntids, cap_tids;
	struct paths_stats *st;
	struct vals_acc *va;		/* value samples wanted, or NULL */
	const struct lat_table *lat;	/* its latency table, or NULL */
	struct vals_acc *vs;		/* want_ps: the values of slice vs_slice */
	uint64_t vs_slice;
	struct vslice_profile *vsl;	/* the slices' values, one per image */
	size_t nvsl, cap_vsl;
	struct plan_rt_mark *pm;	/* calls wanted: the runtime's plan */
	size_t npm;
	struct calls_thread *ct;	/* ... and each thread's counts */
	size_t nct, cap_ct;
};

static int acc_grow(struct acc *a, size_t n)
{
	struct path_profile *v = realloc(a->img, n * sizeof(*v));
	struct pslice_profile *w;

	if (!v)
		return -ENOMEM;
	a->img = v;
	for (size_t i = a->nimg; i < n; i++)
		path_profile_init(&v[i]);
	if (a->want_ps) {
		if (!(w = realloc(a->ps, n * sizeof(*w))))
			return -ENOMEM;
		a->ps = w;
		for (size_t i = a->nimg; i < n; i++)
			pslice_profile_init(&w[i]);
	}
	a->nimg = n;
	return 0;
}

static struct path_profile *acc_image(struct acc *a, uint32_t image)
{
	if (image >= a->nimg && acc_grow(a, (size_t)image + 16))
		return NULL;
	return &a->img[image];
}

/* The image's path slices (a->ps wanted and acc_image called), squashed
 * now and then so that memory stays bounded on long runs. */
static int acc_slices_room(struct pslice_profile *q)
{
	if ((q->n >= (1u << 20) && q->n == q->cap) || (q->ns >= (1u << 20) && q->ns == q->caps))
		return pslice_normalize(q);
	return 0;
}

/* One path record of image into its path profile and, when wanted, its path
 * slices: a step at from (step set), else an edge from -> to.  Memory stays
 * bounded on long runs: duplicates are squashed now and then. */
static int acc_add(struct acc *a, uint32_t image, int step, uint64_t from, uint64_t to)
{
	struct path_profile *p = acc_image(a, image);
	struct pslice_profile *q;
	size_t n, cap;

	if (!p)
		return -ENOMEM;
	n = step ? p->nsteps : p->nedges;
	cap = step ? p->cap_steps : p->cap_edges;
	if (n >= (1u << 20) && n == cap && path_profile_normalize(p))
		return -EOVERFLOW;
	q = a->ps ? &a->ps[image] : NULL;
	if (q && (acc_slices_room(q) || (step ? pslice_add_step(q, a->slice, from, 1) :
					  pslice_add_edge(q, a->slice, from, to, 1))))
		return -ENOMEM;
	return step ? path_profile_add_step(p, from, 1) : path_profile_add_edge(p, from, to, 1);
}

static void note_thread(struct acc *a, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;

	for (size_t i = a->ntids; i-- > 0;)
		if (a->tids[i] == key)
			return;
	if (a->ntids == a->cap_tids) {
		size_t c = a->cap_tids ? 2 * a->cap_tids : 64;
		uint64_t *v;

		if (c > TID_SET_MAX || !(v = realloc(a->tids, c * sizeof(*v))))
			return;
		a->tids = v;
		a->cap_tids = c;
	}
	a->tids[a->ntids++] = key;
	a->st->threads++;
}

/* The current slice's value profiles into a->vsl. */
static int flush_values(struct acc *a, struct dcpi_err *err)
{
	struct vals_stats st = { 0 };
	struct val_profile *v = NULL;
	size_t n = 0;
	int ret;

	if (!a->vs)
		return 0;
	ret = vals_finish(a->vs, a->maps, &v, &n, &st, err);
	for (size_t i = 0; i < n && !ret; i++) {
		struct vslice_profile *q = NULL;

		for (size_t j = 0; j < a->nvsl && !q; j++)
			if (prof_image_id_equal(&a->vsl[j].image, &v[i].image))
				q = &a->vsl[j];
		if (!q && (q = dcpi_append((void **)&a->vsl, &a->nvsl, &a->cap_vsl,
					   sizeof(*a->vsl)))) {
			vslice_profile_init(q);
			q->image = v[i].image;
			q->slice_ns = SLICE_DEFAULT_NS;
		}
		ret = q ? vslice_add(q, a->vs_slice, &v[i], err) :
		      dcpi_errf(err, -ENOMEM, "value slices: out of memory");
	}
	val_profiles_free(v, n);
	vals_acc_free(a->vs);
	a->vs = NULL;
	return ret;
}

/* One burst's values again, into the accumulator of its slice. */
static int slice_values(struct acc *a, const uint64_t *pc, const uint32_t *img,
			const uint64_t *off, const struct prt_regs *regs, size_t n,
			struct dcpi_err *err)
{
	int ret = a->vs && a->vs_slice != a->slice ? flush_values(a, err) : 0;

	if (!ret && !a->vs) {
		ret = vals_acc_new(&a->vs, err);
		if (!ret && a->lat && a->lat->ok)
			vals_acc_latency(a->vs, a->lat);
		a->vs_slice = a->slice;
	}
	return ret ? ret : vals_burst(a->vs, a->maps, a->pid, pc, img, off, regs, n, err);
}

static int burst_pcs(struct acc *a, const uint64_t *pc, const struct prt_regs *regs, size_t n,
		     struct dcpi_err *err)
{
	uint32_t img[PRT_KMAX], touched[PRT_KMAX];
	uint64_t off[PRT_KMAX];
	size_t nt = 0, j;
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		ret = maps_resolve(a->maps, a->pid, pc[i], &img[i], &off[i], err);
		if (ret || img[i] == MAPS_UNKNOWN)
			continue;
		ret = acc_add(a, img[i], 1, off[i], 0);
		j = 0;
		while (j < nt && touched[j] != img[i])
			j++;
		if (j == nt)
			touched[nt++] = img[i];
	}
	for (size_t i = 1; i < n && !ret; i++) {
		uint32_t x = img[i - 1], y = img[i];

		if (x == y && x != MAPS_UNKNOWN) {
			ret = acc_add(a, x, 0, off[i - 1], off[i]);
			continue;
		}
		if (x != MAPS_UNKNOWN)
			ret = acc_add(a, x, 0, off[i - 1], PATH_ELSEWHERE);
		if (!ret && y != MAPS_UNKNOWN)
			ret = acc_add(a, y, 0, PATH_ELSEWHERE, off[i]);
	}
	for (j = 0; j < nt && !ret; j++) {
		a->img[touched[j]].bursts++;
		if (a->ps && pslice_add_burst(&a->ps[touched[j]], a->slice, 1))
			ret = -ENOMEM;
	}
	if (!ret && regs && a->va)
		ret = vals_burst(a->va, a->maps, a->pid, pc, img, off, regs, n, err);
	if (!ret && regs && a->va && a->want_ps)
		ret = slice_values(a, pc, img, off, regs, n, err);
	if (ret == -ENOMEM || ret == -EOVERFLOW)
		return dcpi_errf(err, ret, "path samples: %s", strerror(-ret));
	return ret;
}

/* A burst's canary into the histogram of core cycles per 8 adds. */
static void canary_add(struct paths_stats *st, const struct prt_canary *c)
{
	double cyc = canary_cycles(c);
	size_t bin = (size_t)(cyc * PATHS_CANARY_RES);

	if (!(cyc > 0))
		return;		/* not timed */
	st->canary[bin < PATHS_CANARY_BINS ? bin : PATHS_CANARY_BINS - 1]++;
	st->canaries++;
}

/* The core cycles per 8 adds a histogram bin stands for: its middle. */
static double canary_bin_cycles(size_t b)
{
	return (b + 0.5) / PATHS_CANARY_RES;
}

void paths_canary_summary(const struct paths_stats *st, double beside,
			  struct paths_canary *out)
{
	uint64_t over = 0;
	double sum = 0, sq = 0, n = (double)st->canaries;
	size_t mode = 0;

	memset(out, 0, sizeof(*out));
	out->alone = beside > 0 ? beside : 0;
	if (!st->canaries)
		return;
	for (size_t b = 0; b < PATHS_CANARY_BINS; b++) {
		double c = canary_bin_cycles(b);

		if (st->canary[b] > st->canary[mode])
			mode = b;
		sum += c * st->canary[b];
		sq += c * c * st->canary[b];
	}
	if (out->alone <= 0 || canary_bin_cycles(mode) < out->alone)
		out->alone = canary_bin_cycles(mode);
	out->mean = sum / n;
	out->sd = sqrt(fmax(sq / n - out->mean * out->mean, 0));
	for (size_t b = 0; b < PATHS_CANARY_BINS; b++)
		if (canary_bin_cycles(b) > PATHS_CANARY_SHARED * out->alone)
			over += st->canary[b];
	out->shared = (double)over / n;
}

/* A PRT_CALLS record of thread (pid, tid) that started counting at since:
 * each entry's count is the largest the thread reported (its counts only
 * grow, so whichever file or order its records come in).  -EINVAL for an
 * entry the plan does not count. */
static int calls_record(struct acc *a, uint32_t pid, uint32_t tid, uint64_t since,
			const struct prt_calls *c, size_t n)
{
	struct calls_thread *t = NULL;

	for (size_t i = 0; i < n; i++)
		if (c[i].line >= a->npm || !a->pm[c[i].line].path || c[i].zero ||
		    !(a->pm[c[i].line].flags & PRT_PLAN_COUNT))
			return -EINVAL;
	for (size_t i = a->nct; i-- > 0 && !t;)
		if (a->ct[i].pid == pid && a->ct[i].tid == tid && a->ct[i].since == since)
			t = &a->ct[i];
	if (!t) {
		if (!(t = dcpi_append((void **)&a->ct, &a->nct, &a->cap_ct, sizeof(*t))))
			return -ENOMEM;
		if (!(t->n = calloc(a->npm, sizeof(*t->n)))) {
			a->nct--;
			return -ENOMEM;
		}
		t->pid = pid;
		t->tid = tid;
		t->since = since;
	}
	for (size_t i = 0; i < n; i++)
		if (c[i].calls > t->n[c[i].line])
			t->n[c[i].line] = c[i].calls;
	return 0;
}

/* One spool file; a bad record ends it (it can only be the last one). */
static int replay_file(struct acc *a, const char *path, struct dcpi_err *err)
{
	struct prt_rec h;
	uint8_t *buf = NULL;
	int ret = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return dcpi_errf(err, -errno, "%s: %s", path, strerror(errno));
	a->pid = 0;		/* nothing resolves before the first snapshot */
	a->st->files++;
	while (!ret && fread(&h, sizeof(h), 1, f) == 1) {
		size_t body = h.len - sizeof(h), vrec = 8 + sizeof(struct prt_regs), npc;
		uint8_t *nb;

		if (h.magic != PRT_MAGIC || h.len < sizeof(h) || h.len > PRT_REC_MAX ||
		    (h.type == PRT_BURST && (body % 8 || body / 8 > PRT_KMAX)) ||
		    (h.type == PRT_VBURST && (body % vrec || body / vrec > PRT_KMAX)) ||
		    (h.type == PRT_ARGS && body != sizeof(struct prt_args)) ||
		    (h.type == PRT_CANARY && body != sizeof(struct prt_canary)) ||
		    (h.type == PRT_CALLS && (body % sizeof(struct prt_calls) ||
					     body / sizeof(struct prt_calls) > PRT_PLAN_MAX)) ||
		    (h.type != PRT_BURST && h.type != PRT_VBURST && h.type != PRT_MAPS &&
		     h.type != PRT_ARGS && h.type != PRT_CANARY && h.type != PRT_CALLS) ||
		    !(nb = realloc(buf, body + 1))) {
			a->st->bad++;
			break;
		}
		buf = nb;
		if (body && fread(buf, body, 1, f) != 1) {
			a->st->bad++;
			break;
		}
		if (h.type == PRT_MAPS) {
			a->pid = ++a->next_pid;		/* its mappings from now on */
			ret = maps_replay_text(a->maps, a->pid, (char *)buf, body, err);
			continue;
		}
		if (h.type == PRT_CANARY) {
			canary_add(a->st, (const struct prt_canary *)buf);
			continue;
		}
		if (h.type == PRT_CALLS) {
			if (!a->pm)
				continue;	/* not wanted */
			ret = calls_record(a, h.pid, h.tid, h.time_ns,
					   (const struct prt_calls *)buf,
					   body / sizeof(struct prt_calls));
			if (ret == -EINVAL) {
				a->st->bad++;
				ret = 0;
				break;
			}
			if (ret)
				ret = dcpi_errf(err, ret, "calls: out of memory");
			continue;
		}
		if (h.type == PRT_ARGS) {	/* a marked entry's call (values_spool.c) */
			if (a->pid && a->va)
				ret = vals_args(a->va, a->maps, a->pid,
						(const struct prt_args *)buf, err);
			continue;
		}
		npc = h.type == PRT_VBURST ? body / vrec : body / 8;
		note_thread(a, h.pid, h.tid);
		a->st->bursts++;
		a->st->steps += npc;
		a->st->cut += !!(h.flags & PRT_F_CUT);
		a->st->lost += !!(h.flags & PRT_F_LOST);
		a->slice = h.time_ns / SLICE_DEFAULT_NS;
		if (a->pid)
			ret = burst_pcs(a, (const uint64_t *)buf,
					h.type == PRT_VBURST ?
					(const struct prt_regs *)(buf + 8 * npc) : NULL,
					npc, err);
	}
	free(buf);
	fclose(f);
	return ret;
}

static int is_spool(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 6 && !strcmp(name + n - 6, ".spool");
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int list_spools(const char *dir, char ***names, size_t *n, struct dcpi_err *err)
{
	size_t cap = 0;
	struct dirent *d;
	DIR *dp = opendir(dir);

	*names = NULL;
	*n = 0;
	if (!dp)
		return dcpi_errf(err, -errno, "%s: %s", dir, strerror(errno));
	while ((d = readdir(dp))) {
		char **v;

		if (!is_spool(d->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = realloc(*names, cap * sizeof(*v));
			if (!v)
				goto oom;
			*names = v;
		}
		if (!((*names)[*n] = strdup(d->d_name)))
			goto oom;
		(*n)++;
	}
	closedir(dp);
	dcpi_qsort(*names, *n, sizeof(**names), cmp_str);
	return 0;
oom:
	closedir(dp);
	for (size_t i = 0; i < *n; i++)
		free((*names)[i]);
	free(*names);
	*names = NULL;
	*n = 0;
	return dcpi_errf(err, -ENOMEM, "%s: out of memory", dir);
}

/* Move the non-empty profiles out, each with its image's identity. */
static int acc_finish(struct acc *a, struct path_profile **out, size_t *n,
		      struct dcpi_err *err)
{
	size_t k = 0;

	for (size_t i = 0; i < a->nimg; i++) {
		struct path_profile *p = &a->img[i];

		if (!p->nsteps && !p->nedges) {
			path_profile_free(p);
			continue;
		}
		if (path_profile_normalize(p))
			return dcpi_errf(err, -EOVERFLOW, "path samples: counts overflow");
		p->image = *maps_image(a->maps, (uint32_t)i);
		snprintf(p->source, sizeof(p->source), "%s", PATHS_SOURCE);
		a->st->edges += p->nedges;
		if (k != i) {
			a->img[k] = *p;
			path_profile_init(p);
		}
		k++;
	}
	a->st->images = k;
	if (!k) {
		free(a->img);
		a->img = NULL;
	}
	*out = a->img;
	*n = k;
	a->img = NULL;
	a->nimg = 0;
	return 0;
}

int paths_spool_read(const char *dir, struct path_profile **out, size_t *n,
		     struct paths_stats *st, struct dcpi_err *err)
{
	return paths_spool_read_values(dir, out, n, st, NULL, NULL, NULL, err);
}

/* Each image's path slices into the epoch (before acc_finish moves the
 * profiles: a->ps is indexed by the maps' images). */
static int acc_write_slices(struct acc *a, struct prof_db *db, const char *epoch,
			    struct dcpi_err *err)
{
	int ret = 0;

	for (size_t i = 0; i < a->nimg && a->ps && !ret; i++) {
		struct pslice_profile *q = &a->ps[i];

		if (!q->n && !q->ns)
			continue;
		q->image = *maps_image(a->maps, (uint32_t)i);
		snprintf(q->source, sizeof(q->source), "%s", PATHS_SOURCE);
		q->slice_ns = SLICE_DEFAULT_NS;
		if (pslice_normalize(q))
			return dcpi_errf(err, -EOVERFLOW, "path slices: counts overflow");
		ret = pslice_epoch_write(db, epoch, q, err);
		pslice_profile_free(q);	/* acc_finish forgets a->nimg */
	}
	if (!ret)
		ret = flush_values(a, err);
	for (size_t i = 0; i < a->nvsl && !ret; i++)
		ret = vslice_epoch_write(db, epoch, &a->vsl[i], err);
	return ret;
}

/* The threads' calls summed by entry, into one profile per image, and the
 * executions of counted blocks (PRT_PLAN_BLOCK) into another. */
static int calls_finish(struct acc *a, struct prof_profile **out, size_t *n,
			struct dcpi_err *err)
{
	struct prof_profile *v = NULL;
	size_t nv = 0, cap = 0;
	int ret = 0;

	*out = NULL;
	*n = 0;
	for (size_t l = 0; l < a->npm && !ret; l++) {
		struct prof_profile *p = NULL;
		const char *ev;
		uint64_t sum = 0;
		uint32_t image;

		for (size_t i = 0; i < a->nct; i++)
			sum += a->ct[i].n[l];
		if (!sum)
			continue;	/* patched and never called, or never patched */
		ev = a->pm[l].flags & PRT_PLAN_BLOCK ? PROF_EVENT_EXECS : PROF_EVENT_CALLS;
		ret = maps_intern(a->maps, a->pm[l].path, &image, err);
		for (size_t k = 0; k < nv && !ret && !p; k++)
			if (prof_image_id_equal(&v[k].image, maps_image(a->maps, image)) &&
			    !strcmp(v[k].event, ev))
				p = &v[k];
		if (!ret && !p && (p = dcpi_append((void **)&v, &nv, &cap, sizeof(*p)))) {
			prof_profile_init(p);
			p->image = *maps_image(a->maps, image);
			snprintf(p->event, sizeof(p->event), "%s", ev);
			p->period = 1;
			snprintf(p->period_unit, sizeof(p->period_unit), "events");
			p->cycles_per_unit = 0;
		}
		if (!ret && (!p || prof_profile_add(p, a->pm[l].off, sum)))
			ret = dcpi_errf(err, -ENOMEM, "calls: out of memory");
		if (!ret && (a->pm[l].flags & PRT_PLAN_BLOCK))
			a->st->blocks_counted++;
		else if (!ret) {
			a->st->calls += sum;
			a->st->calls_procs++;
		}
	}
	for (size_t k = 0; k < nv && !ret; k++)
		if (prof_profile_normalize(&v[k]))
			ret = dcpi_errf(err, -ENOMEM, "calls: out of memory");
	if (ret) {
		prof_profiles_free(v, nv);
		return ret;
	}
	*out = v;
	*n = nv;
	return 0;
}

static void acc_free(struct acc *a)
{
	vals_acc_free(a->va);
	vals_acc_free(a->vs);
	for (size_t i = 0; i < a->nvsl; i++)
		vslice_profile_free(&a->vsl[i]);
	free(a->vsl);
	path_profiles_free(a->img, a->nimg);
	for (size_t i = 0; a->ps && i < a->nimg; i++)
		pslice_profile_free(&a->ps[i]);
	free(a->ps);
	free(a->tids);
	for (size_t i = 0; i < a->nct; i++)
		free(a->ct[i].n);
	free(a->ct);
	plan_rt_free(a->pm, a->npm);
	maps_free(a->maps);
}

/* The spool files of dir into profiles; with db, the path slices written
 * into its epoch on the way; with cout, the calls counted at the entries. */
static int spool_read(const char *dir, struct path_profile **out, size_t *n,
		      struct paths_stats *st, struct val_profile **vout, size_t *vn,
		      const struct lat_table *lat, struct prof_db *db, const char *epoch,
		      struct prof_profile **cout, size_t *cn, struct dcpi_err *err)
{
	struct acc a = { .st = st, .want_ps = !!db };
	char **names = NULL, path[PATH_MAX + 256];
	size_t nn = 0;
	int ret;

	*out = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	if (vout) {
		*vout = NULL;
		*vn = 0;
	}
	if (cout) {
		*cout = NULL;
		*cn = 0;
	}
	ret = maps_new(&a.maps, err);
	if (!ret && cout)
		ret = plan_rt_read(dir, &a.pm, &a.npm, err);
	if (!ret && vout)
		ret = vals_acc_new(&a.va, err);
	if (!ret && a.va)
		ret = vals_acc_plan(a.va, dir, err);
	if (!ret && a.va && lat && lat->ok)
		vals_acc_latency(a.va, lat);
	a.lat = lat;
	if (!ret) {
		maps_set_offline(a.maps, 1);
		ret = list_spools(dir, &names, &nn, err);
	}
	for (size_t i = 0; i < nn && !ret; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		ret = replay_file(&a, path, err);
	}
	if (!ret && db)
		ret = acc_write_slices(&a, db, epoch, err);
	if (!ret)
		ret = acc_finish(&a, out, n, err);
	if (!ret && a.va)
		ret = vals_finish(a.va, a.maps, vout, vn, &st->values, err);
	if (!ret && cout)
		ret = calls_finish(&a, cout, cn, err);
	acc_free(&a);
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return ret;
}

int paths_spool_read_values(const char *dir, struct path_profile **out, size_t *n,
			    struct paths_stats *st, struct val_profile **vout, size_t *vn,
			    const struct lat_table *lat, struct dcpi_err *err)
{
	return spool_read(dir, out, n, st, vout, vn, lat, NULL, NULL, NULL, NULL, err);
}

int paths_spool_read_calls(const char *dir, struct prof_profile **out, size_t *n,
			   struct paths_stats *st, struct dcpi_err *err)
{
	struct path_profile *v = NULL;
	size_t nv = 0;
	int ret = spool_read(dir, &v, &nv, st, NULL, NULL, NULL, NULL, NULL, out, n, err);

	path_profiles_free(v, nv);
	return ret;
}

int paths_spool_write(const char *dir, struct prof_db *db, const char *epoch, int values,
		      const struct lat_table *lat, struct paths_stats *st,
		      struct dcpi_err *err)
{
	struct path_profile *v = NULL;
	struct val_profile *vv = NULL;
	struct prof_profile *c = NULL;
	size_t n = 0, vn = 0, cn = 0;
	int ret = spool_read(dir, &v, &n, st, values ? &vv : NULL, values ? &vn : NULL, lat,
			     db, epoch, &c, &cn, err);

	for (size_t i = 0; i < n && !ret; i++)
		ret = path_epoch_write(db, epoch, &v[i], err);
	for (size_t i = 0; i < vn && !ret; i++)
		ret = val_epoch_write(db, epoch, &vv[i], err);
	for (size_t i = 0; i < cn && !ret; i++)
		ret = prof_epoch_write(db, epoch, &c[i], err);
	path_profiles_free(v, n);
	val_profiles_free(vv, vn);
	prof_profiles_free(c, cn);
	return ret;
}
