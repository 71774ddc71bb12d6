/*
 * collect/maps.c - where each image is loaded in each process (DCPI paper
 * sec. 4.3.2), so that a sample's (pid, pc) becomes (image, file offset).
 *
 * The kernel reports the mappings itself: MMAP2 for every executable
 * mapping, COMM with the exec flag when a process replaces its image, FORK
 * (a new process starts with a copy of its parent's maps) and EXIT.  When a
 * sample names a process or address we have no record of (its records were
 * lost, or it was running before we started) /proc/PID/maps is read once.
 *
 * Data structures: processes in an array sorted by pid (binary search), each
 * with its mappings sorted by start address and never overlapping (a new
 * mapping cuts away what it covers, as mmap MAP_FIXED does).  Images are
 * interned by path in an open-addressing hash; image 0 is "unknown" and
 * "[vdso]" gets its own image, so the only samples that land in unknown are
 * those in anonymous memory (JIT code) or in no mapping at all.
 *
 * JIT code (maps_set_jit): a process that writes /tmp/perf-PID.map (the
 * "START SIZE name" convention of perf, V8, the JVM agents, LuaJIT...) has
 * its anonymous-memory samples kept in a pseudo-image whose path is that
 * file, offset = the raw pc, so they can be named later from the file.  The
 * file is looked for when such a sample first arrives and again every
 * JIT_RECHECK samples while it is absent (JITs write it lazily), and used
 * only under perf's trust rule (util/jitmap_trust.c, the reports' rule too).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/image.h"
#include "dcpi/jitmap.h"
#include "internal.h"
#include "pathrt.h"
#include "spool_maps.h"
#include "slots.h"

#define JIT_RECHECK 256

struct map {
	uint64_t start, end, pgoff;
	uint32_t image;
};

struct proc {
	uint32_t pid;
	int dead;		/* 1: exited in this batch, 2: in an earlier one */
	int scanned;		/* /proc/PID/maps already read */
	int jit;		/* 1: has a perf map; 0: not seen yet */
	uint32_t jit_image;
	unsigned jit_misses;	/* anonymous samples since we last looked */
	size_t n;
	struct map *m;
};

struct image_ent {
	char *path;
	struct prof_image_id id;
};

struct maps {
	struct proc **procs;		/* sorted by pid */
	size_t nprocs, procs_cap;
	struct image_ent **images;	/* by index; 0 is unknown */
	size_t nimages, images_cap;
	uint32_t *hash;			/* image index + 1, 0 = empty */
	size_t hash_cap;		/* power of two */
	int jit;			/* resolve anonymous code via perf maps */
	int offline;			/* never read /proc: the pids are from a file */
	uint32_t kernel_image;		/* "[kernel.kallsyms]"; 0 until first used */
	unsigned jit_refused;		/* perf maps refused (jitmap_check) */
	struct dcpi_err jit_err;	/* why, the last time */
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static uint64_t image_hash(const void *m, size_t i)
{
	return hash_str(((const struct maps *)m)->images[i]->path);
}

/* The images by path (image 0, unknown, is not in it). */
static int hash_grow(struct maps *m)
{
	return slots_grow(&m->hash, &m->hash_cap, 64, 1, m->nimages, image_hash, m);
}

/* A new image entry; its identity comes from the file, or from the path
 * alone when the file is gone or unreadable (deleted, another namespace). */
static int image_add(struct maps *m, const char *path, uint32_t *out)
{
	struct image_ent *e;

	if (m->nimages == m->images_cap) {
		size_t cap = m->images_cap ? 2 * m->images_cap : 16;
		struct image_ent **p = realloc(m->images, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->images = p;
		m->images_cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->path = strdup(path);
	if (!e->path) {
		free(e);
		return -ENOMEM;
	}
	if (!strcmp(path, PROF_UNKNOWN_PATH)) {
		prof_image_id_unknown(&e->id);
	} else if (path[0] != '/' || !strncmp(path, "/tmp/perf-", 10) || prof_image_id_from_file(&e->id, path, NULL)) {
		memset(&e->id, 0, sizeof(e->id));
		snprintf(e->id.path, sizeof(e->id.path), "%s", path);
	}
	/* the running kernel's build-id, for finding its vmlinux (image/vmlinux.c);
	 * a perf.data's recorded one replaces it (import/perf.c), and one that
	 * records none is taken as this kernel's, as perf report takes it */
	if (!strcmp(path, MAPS_KERNEL_PATH))
		img_kernel_build_id(NULL, e->id.build_id, sizeof(e->id.build_id), NULL);
	m->images[m->nimages] = e;
	*out = (uint32_t)m->nimages++;
	return 0;
}

static int image_intern(struct maps *m, const char *path, uint32_t *out)
{
	size_t j;
	int ret;

	if (!strcmp(path, PROF_UNKNOWN_PATH)) {
		*out = MAPS_UNKNOWN;
		return 0;
	}
	if (2 * m->nimages >= m->hash_cap && hash_grow(m))
		return -ENOMEM;
	j = hash_str(path) & (m->hash_cap - 1);
	for (; m->hash[j]; j = (j + 1) & (m->hash_cap - 1)) {
		if (!strcmp(m->images[m->hash[j] - 1]->path, path)) {
			*out = m->hash[j] - 1;
			return 0;
		}
	}
	ret = image_add(m, path, out);
	if (!ret)
		m->hash[j] = *out + 1;
	return ret;
}

/* dcpi record's own copy of the path-sample runtime: TMP/dcpi-paths-XXXXXX/
 * libdcpi-paths.so (collect/paths_run.c), gone when the reports run. */
static int is_paths_runtime(const char *filename)
{
	const char *base = strrchr(filename, '/'), *dir;

	if (!base || strcmp(base + 1, PRT_LIB_NAME))
		return 0;
	for (dir = base; dir > filename && dir[-1] != '/'; dir--)
		;
	return !strncmp(dir, PRT_TMP_PREFIX, strlen(PRT_TMP_PREFIX));
}

/* Mappings whose samples the profile can place: files and the vdso. */
static const char *image_path_of(const char *filename)
{
	if (is_paths_runtime(filename))
		return PROF_PATHRT_PATH;
	if (filename[0] == '/' && filename[1] != '/' && strncmp(filename, "/memfd:", 7) &&
	    strncmp(filename, "/dev/zero", 9) && strncmp(filename, "/SYSV", 5))
		return filename;
	if (!strcmp(filename, "[vdso]"))
		return filename;
	return PROF_UNKNOWN_PATH;
}

int maps_new(struct maps **out, struct dcpi_err *err)
{
	struct maps *m = calloc(1, sizeof(*m));
	uint32_t idx;

	if (!m || image_add(m, PROF_UNKNOWN_PATH, &idx)) {
		maps_free(m);
		return dcpi_errf(err, -ENOMEM, "image maps: out of memory");
	}
	*out = m;
	return 0;
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
	free(p->m);
	free(p);
}

void maps_free(struct maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nprocs; i++)
		proc_free(m->procs[i]);
	for (size_t i = 0; i < m->nimages; i++) {
		free(m->images[i]->path);
		free(m->images[i]);
	}
	free(m->procs);
	free(m->images);
	free(m->hash);
	free(m);
}

/* Index of pid in procs, or where it would go (*found = 0). */
static size_t proc_pos(const struct maps *m, uint32_t pid, int *found)
{
	size_t lo = 0, hi = m->nprocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->procs[mid]->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < m->nprocs && m->procs[lo]->pid == pid;
	return lo;
}

static struct proc *proc_find(struct maps *m, uint32_t pid)
{
	int found;
	size_t i = proc_pos(m, pid, &found);

	return found ? m->procs[i] : NULL;
}

static struct proc *proc_get(struct maps *m, uint32_t pid)
{
	int found;
	size_t i = proc_pos(m, pid, &found);
	struct proc *p;

	if (found)
		return m->procs[i];
	if (m->nprocs == m->procs_cap) {
		size_t cap = m->procs_cap ? 2 * m->procs_cap : 16;
		struct proc **pp = realloc(m->procs, cap * sizeof(*pp));

		if (!pp)
			return NULL;
		m->procs = pp;
		m->procs_cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	memmove(&m->procs[i + 1], &m->procs[i], (m->nprocs - i) * sizeof(*m->procs));
	m->procs[i] = p;
	m->nprocs++;
	return p;
}

/* Add nm to p, cutting away whatever older mappings it covers. */
static int proc_insert(struct proc *p, struct map nm)
{
	struct map *n = malloc((p->n + 2) * sizeof(*n));
	size_t k = 0;
	int placed = 0;

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		struct map o = p->m[i];

		if (o.end <= nm.start || o.start >= nm.end) {
			if (!placed && o.start >= nm.end) {
				n[k++] = nm;
				placed = 1;
			}
			n[k++] = o;
			continue;
		}
		if (o.start < nm.start) {
			n[k] = o;
			n[k++].end = nm.start;
		}
		if (!placed) {
			n[k++] = nm;
			placed = 1;
		}
		if (o.end > nm.end) {
			n[k] = o;
			n[k].pgoff += nm.end - o.start;
			n[k++].start = nm.end;
		}
	}
	if (!placed)
		n[k++] = nm;
	free(p->m);
	p->m = n;
	p->n = k;
	return 0;
}

static int add_map(struct maps *m, struct proc *p, uint64_t start, uint64_t len,
		   uint64_t pgoff, const char *filename)
{
	struct map nm = { start, start + len, pgoff, 0 };

	if (!len || nm.end < start)
		return 0;
	if (image_intern(m, image_path_of(filename), &nm.image))
		return -ENOMEM;
	return proc_insert(p, nm);
}

int maps_mmap(struct maps *m, uint32_t pid, uint64_t start, uint64_t len,
	      uint64_t pgoff, const char *filename, struct dcpi_err *err)
{
	struct proc *p = proc_get(m, pid);

	if (!p || add_map(m, p, start, len, pgoff, filename))
		return dcpi_errf(err, -ENOMEM, "maps of pid %" PRIu32 ": out of memory", pid);
	return 0;
}

int maps_replay_text(struct maps *m, uint32_t pid, char *text, size_t len,
		     struct dcpi_err *err)
{
	char *line = text, *end = text + len;

	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		uint64_t lo, hi, off;
		int name = 0, rc;

		if (!nl)
			break;
		*nl = '\0';
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %n", &lo, &hi, &off,
			   &name) == 3 && name && hi > lo &&
		    (rc = maps_mmap(m, pid, lo, hi - lo, off, line + name, err)))
			return rc;
		line = nl + 1;
	}
	return 0;
}

int maps_fork(struct maps *m, uint32_t pid, uint32_t ppid, struct dcpi_err *err)
{
	struct proc *parent, *p;
	struct map *copy = NULL;
	size_t n = 0;

	if (pid == ppid)	/* a new thread shares its process's maps */
		return 0;
	parent = proc_find(m, ppid);
	if (parent && parent->n) {
		n = parent->n;
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			goto nomem;
		memcpy(copy, parent->m, n * sizeof(*copy));
	}
	p = proc_get(m, pid);
	if (!p) {
		free(copy);
		goto nomem;
	}
	free(p->m);
	p->m = copy;
	p->n = n;
	p->dead = 0;
	p->jit = 0;
	p->jit_misses = 0;
	p->scanned = parent ? parent->scanned : 0;
	return 0;
nomem:
	return dcpi_errf(err, -ENOMEM, "maps of pid %" PRIu32 ": out of memory", pid);
}

void maps_exec(struct maps *m, uint32_t pid)
{
	struct proc *p = proc_find(m, pid);

	if (!p)
		return;
	free(p->m);
	p->m = NULL;
	p->n = 0;
	p->scanned = 0;
	p->dead = 0;
	p->jit = 0;
	p->jit_misses = 0;
}

void maps_exit(struct maps *m, uint32_t pid)
{
	struct proc *p = proc_find(m, pid);

	if (p && !p->dead)
		p->dead = 1;
}

void maps_reap(struct maps *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		struct proc *p = m->procs[i];

		if (p->dead == 2) {
			proc_free(p);
			continue;
		}
		if (p->dead)
			p->dead = 2;
		m->procs[k++] = p;
	}
	m->nprocs = k;
}

/* Read the executable mappings of a live process we have no record of. */
int maps_proc_exec(uint32_t pid, maps_exec_fn fn, void *arg)
{
	char path[64], line[PROF_PATH_MAX + 128];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* gone: its samples stay unknown */
	while (!ret && fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char perms[8];
		int name = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
			   &start, &end, perms, &pgoff, &name) < 4 || !name)
			continue;
		if (perms[2] != 'x')
			continue;
		ret = fn(arg, start, end, pgoff, line + name);
	}
	fclose(f);
	return ret;
}

struct scan_ctx {
	struct maps *m;
	struct proc *p;
};

static int scan_one(void *arg, uint64_t start, uint64_t end, uint64_t pgoff, const char *name)
{
	struct scan_ctx *c = arg;

	return add_map(c->m, c->p, start, end - start, pgoff, name);
}

static int scan_proc(struct maps *m, struct proc *p)
{
	struct scan_ctx c = { m, p };

	p->scanned = 1;
	return maps_proc_exec(p->pid, scan_one, &c);
}

static const struct map *map_at(const struct proc *p, uint64_t ip)
{
	/* the first map ending after ip */
	size_t lo = dcpi_upper_bound(p->m, p->n, sizeof(*p->m), offsetof(struct map, end), ip);

	return lo < p->n && p->m[lo].start <= ip ? &p->m[lo] : NULL;
}

/* The perf-map pseudo-image of p into *image, if p has a perf map. */
static int jit_image(struct maps *m, struct proc *p, uint32_t *image)
{
	char path[64];

	if (!p->jit && p->jit_misses++ % JIT_RECHECK == 0) {
		snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", p->pid);
		if (!jitmap_trusted(path, &m->jit_err)) {
			if (image_intern(m, path, &p->jit_image))
				return -ENOMEM;
			p->jit = 1;
		} else if (m->jit_err.code != -ENOENT) {
			m->jit_refused++;	/* m->jit_err says why */
		}
	}
	if (p->jit)
		*image = p->jit_image;
	return 0;
}

int maps_resolve(struct maps *m, uint32_t pid, uint64_t ip, uint32_t *image,
		 uint64_t *offset, struct dcpi_err *err)
{
	struct proc *p = proc_get(m, pid);
	const struct map *mp;

	if (!p)
		return dcpi_errf(err, -ENOMEM, "maps of pid %" PRIu32 ": out of memory", pid);
	mp = map_at(p, ip);
	if (!mp && !p->scanned && !m->offline) {
		if (scan_proc(m, p))
			return dcpi_errf(err, -ENOMEM, "/proc/%" PRIu32 "/maps: out of memory",
					 pid);
		mp = map_at(p, ip);
	}
	if (!mp || mp->image == MAPS_UNKNOWN) {
		*image = MAPS_UNKNOWN;
		*offset = ip;	/* anonymous code keeps its address */
		if (m->jit && jit_image(m, p, image))
			return dcpi_errf(err, -ENOMEM, "perf map of pid %" PRIu32
					 ": out of memory", pid);
		return 0;
	}
	*image = mp->image;
	*offset = ip - mp->start + mp->pgoff;
	return 0;
}

int maps_place(struct maps *m, uint32_t pid, uint64_t pc, enum maps_space space,
	       uint32_t *image, uint64_t *offset, struct dcpi_err *err)
{
	if (space == MAPS_USER)
		return maps_resolve(m, pid, pc, image, offset, err);
	*offset = pc;
	*image = MAPS_UNKNOWN;
	if (space != MAPS_KERNEL)
		return 0;
	if (!m->kernel_image && image_intern(m, MAPS_KERNEL_PATH, &m->kernel_image))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", MAPS_KERNEL_PATH);
	*image = m->kernel_image;
	return 0;
}

unsigned maps_jit_refused(const struct maps *m, const char **why)
{
	*why = m->jit_err.msg;
	return m->jit_refused;
}

const struct prof_image_id *maps_image(const struct maps *m, uint32_t image)
{
	if (image >= m->nimages)
		image = MAPS_UNKNOWN;
	return &m->images[image]->id;
}

int maps_intern(struct maps *m, const char *path, uint32_t *image, struct dcpi_err *err)
{
	if (image_intern(m, path, image))
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	return 0;
}

void maps_set_jit(struct maps *m, int on)
{
	m->jit = on;
}

void maps_set_offline(struct maps *m, int on)
{
	m->offline = on;
}

int maps_scan_all(struct maps *m, struct dcpi_err *err)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int ret = 0;

	if (!d)
		return dcpi_errf(err, -errno, "/proc: %s", strerror(errno));
	while (!ret && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		struct proc *p;

		if (*end || !pid || pid > UINT32_MAX)
			continue;
		p = proc_get(m, (uint32_t)pid);
		if (!p || (!p->scanned && scan_proc(m, p)))
			ret = dcpi_errf(err, -ENOMEM, "/proc/%lu/maps: out of memory", pid);
	}
	closedir(d);
	return ret;
}

int maps_scan_pid(struct maps *m, uint32_t pid, struct dcpi_err *err)
{
	struct proc *p = proc_get(m, pid);

	if (!p || scan_proc(m, p))
		return dcpi_errf(err, -ENOMEM, "/proc/%" PRIu32 "/maps: out of memory", pid);
	return 0;
}
