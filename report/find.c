/*
 * find.c - which profiled image holds the procedure a user names.  dcpicalc
 * and dcpicfg take PROC without an image path, by the rules of
 * image/lookup.c (address, mangled name, signature, plain name, IMAGE:NAME):
 * the epoch's profiles say which images to look in, "IMAGE:" narrows them.
 * A bare address is in many images (every image starts near 0): the one
 * with samples in the procedure there is meant.  A name in none of them
 * gets the nearest procedure names (Damerau-Levenshtein distance).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/image.h"
#include "dcpi/report.h"
#include "internal.h"

int rep_still_profiled(const struct prof_image_id *id, const struct image *img)
{
	struct stat st;

	if (id->build_id[0] && img_build_id(img)[0])
		return !strcmp(id->build_id, img_build_id(img));
	if (stat(id->path, &st) < 0)
		return 0;
	return (uint64_t)st.st_size == id->size && (int64_t)st.st_mtime == id->mtime;
}

/* Has an earlier profile of p (of event, when given) named the same file? */
static int seen_path(const struct prof_profile *p, size_t i, const char *event)
{
	for (size_t k = 0; k < i; k++)
		if ((!event || !strcmp(p[k].event, event)) &&
		    !strcmp(p[k].image.path, p[i].image.path))
			return 1;
	return 0;
}

static int is_address(const char *spec)
{
	return !strncmp(spec, "0x", 2) || !strncmp(spec, "0X", 2);
}

/* Is profile p's image the one "IMAGE:" names, when spec has that part? */
static int image_named(const struct prof_profile *p, const char *spec)
{
	char want[PROF_PATH_MAX];
	const char *name, *base = strrchr(p->image.path, '/');
	size_t n;

	if (!img_spec_split(spec, want, sizeof(want), &name))
		return 1;
	base = base ? base + 1 : p->image.path;
	n = strlen(want);
	return !strcmp(p->image.path, want) || !strcmp(base, want) ||
	       (!strncmp(base, want, n) && !strncmp(base + n, ".so", 3)) ||
	       (strchr(want, '/') && !strcmp(base, strrchr(want, '/') + 1));
}

int rep_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *d, rc;

	if (la > 256 || lb > 256)
		return (int)(la > lb ? la : lb);
	d = malloc((la + 1) * (lb + 1) * sizeof(*d));
	if (!d)
		return (int)(la > lb ? la : lb);
#define D(i, j) d[(i) * (lb + 1) + (j)]
	for (size_t i = 0; i <= la; i++)
		D(i, 0) = (int)i;
	for (size_t j = 0; j <= lb; j++)
		D(0, j) = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1], v = D(i - 1, j - 1) + cost;

			if (D(i - 1, j) + 1 < v)
				v = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < v)
				v = D(i, j - 1) + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    D(i - 2, j - 2) + 1 < v)
				v = D(i - 2, j - 2) + 1;	/* a transposition */
			D(i, j) = v;
		}
	rc = D(la, lb);
#undef D
	free(d);
	return rc;
}

int rep_suggest_max(const char *word)
{
	size_t n = strlen(word);

	return n <= 3 ? 1 : n <= 6 ? 2 : 3;
}

/* The procedure of img nearest to name (plain names, no parameters). */
static void nearest_proc(const struct image *img, const char *name, char *best, size_t len,
			 int *bestd)
{
	char plain[256];

	for (size_t i = 0; i < img_nprocs(img); i++) {
		const char *pn = img_proc(img, i)->name;
		size_t k = strcspn(pn, "(");
		int d;

		if (k >= sizeof(plain))
			continue;
		memcpy(plain, pn, k);
		plain[k] = 0;
		d = rep_edit_distance(name, plain);
		if (d < *bestd && d <= rep_suggest_max(name)) {
			*bestd = d;
			snprintf(best, len, "%s", plain);
		}
	}
}

/* Samples of the image of p[i] (every profile of its path and event) in q. */
static uint64_t samples_in(const struct prof_profile *p, size_t n, size_t i, const char *event,
			   const struct image *img, const struct img_proc *q)
{
	uint64_t lo, hi, sum = 0;

	if (img_vaddr_to_offset(img, q->addr, &lo) < 0)
		return 0;
	hi = lo + q->size;
	for (size_t k = i; k < n; k++) {
		if (strcmp(p[k].image.path, p[i].image.path) ||
		    (event && strcmp(p[k].event, event)))
			continue;
		for (size_t e = 0; e < p[k].n; e++)
			if (p[k].e[e].offset >= lo && p[k].e[e].offset < hi)
				sum += p[k].e[e].count;
	}
	return sum;
}

/* Keep im and q as the choice when it has more samples than the one kept. */
static void keep_better(struct image *im, const struct img_proc *q, size_t i, uint64_t s,
			struct image **img, const struct img_proc **proc, size_t *which,
			uint64_t *best)
{
	if (*img && s <= *best) {
		img_close(im);
		return;
	}
	img_close(*img);
	*img = im;
	*proc = q;
	*which = i;
	*best = s;
}

static int not_found(const char *spec, const char *near, struct dcpi_err *err)
{
	return dcpi_errf(err, -ENOENT, "%s: in none of the profiled images (a procedure "
			 "is named by its address, its name with or without parameters, "
			 "or its mangled name; IMAGE:NAME picks the image)%s%s%s", spec,
			 near[0] ? "; did you mean '" : "", near, near[0] ? "'?" : "");
}

int rep_find_proc(const struct prof_profile *p, size_t n, const char *event, const char *spec,
		  unsigned img_flags, struct image **img, const struct img_proc **proc,
		  size_t *which, struct dcpi_err *err)
{
	size_t nfound = 0, nsampled = 0, len = 0;
	char list[1024] = "", near[256] = "", want[PROF_PATH_MAX];
	const char *name = spec;
	uint64_t best = 0;
	int addr, neard = 1 << 20, rc;

	*img = NULL;
	*proc = NULL;
	(void)img_spec_split(spec, want, sizeof(want), &name);
	addr = is_address(name);
	for (size_t i = 0; i < n; i++) {
		const struct img_proc *q;
		struct image *im;
		uint64_t s;

		if ((event && strcmp(p[i].event, event)) || p[i].image.path[0] == '[' ||
		    !p[i].image.path[0] || seen_path(p, i, event) || !image_named(&p[i], spec))
			continue;
		if (img_open(p[i].image.path, img_flags, &im, NULL) < 0)
			continue;
		q = NULL;
		rc = -ENOENT;
		if (rep_still_profiled(&p[i].image, im))
			rc = img_proc_find(im, spec, &q, err);
		if (rc == -EEXIST) {	/* overloads in one image: the user must choose */
			img_close(im);
			img_close(*img);
			*img = NULL;
			*proc = NULL;
			return rc;
		}
		if (!q) {
			if (!addr && rep_still_profiled(&p[i].image, im))
				nearest_proc(im, name, near, sizeof(near), &neard);
			img_close(im);
			continue;
		}
		s = addr ? samples_in(p, n, i, event, im, q) : 0;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						nfound ? ", " : "", p[i].image.path);
		if (addr && len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, " (%s, %llu "
						"samples)", q->name, (unsigned long long)s);
		nfound++;
		nsampled += s > 0;
		keep_better(im, q, i, s, img, proc, which, &best);
	}
	if (nfound > 1 && !(addr && nsampled == 1)) {
		img_close(*img);
		*img = NULL;
		*proc = NULL;
		return dcpi_errf(err, -EEXIST, "%s: in several images (%s): give --image FILE "
				 "or IMAGE:%s", spec, list, name);
	}
	if (!nfound && rep_kernel_proc_note(p, n, spec, err) < 0)
		return -ENOENT;
	if (!nfound)
		return not_found(spec, near, err);
	dcpi_err_clear(err);
	return 0;
}

/* ---- the target of an analysis -------------------------------------------- */

/* "; did you mean 'NAME'?" after err when a procedure of img is near spec. */
static void near_in_image(const struct image *img, const char *spec, struct dcpi_err *err)
{
	char near[256] = "", want[PROF_PATH_MAX];
	const char *name = spec;
	int d = 1 << 20;
	size_t len = strlen(err->msg);

	(void)img_spec_split(spec, want, sizeof(want), &name);
	if (is_address(name))
		return;
	nearest_proc(img, name, near, sizeof(near), &d);
	if (near[0] && len < sizeof(err->msg))
		snprintf(err->msg + len, sizeof(err->msg) - len, "; did you mean '%s'?", near);
}

int rep_whole_image(const char *spec)
{
	size_t n = strlen(spec);

	return n && spec[n - 1] == '*' && (n == 1 || spec[n - 2] == ':');
}

static const char *pick_event(const struct prof_profile *p, size_t n, const char *event)
{
	const char *best = NULL;

	if (event)
		return event;
	for (size_t i = 0; i < n; i++)
		if (!best || rep_event_rank(p[i].event) < rep_event_rank(best))
			best = p[i].event;
	return best;
}

/* "IMAGE:*": the most sampled image whose path ends in IMAGE (any for "*"). */
static const struct prof_profile *whole_image(const struct prof_profile *p, size_t n,
					      const char *ev, const char *spec)
{
	const struct prof_profile *best = NULL;
	size_t k = strlen(spec) - 1;	/* "IMAGE:" or "" */

	for (size_t i = 0; i < n; i++) {
		const char *path = p[i].image.path;
		size_t lp = strlen(path), li = k ? k - 1 : 0;

		if (strcmp(p[i].event, ev) || path[0] == '[')
			continue;
		if (k && !(lp >= li && !strncmp(path + lp - li, spec, li) &&
			   (lp == li || path[lp - li - 1] == '/')))
			continue;
		if (!best || p[i].total > best->total)
			best = &p[i];
	}
	return best;
}

/* image's profile of event ev, by identity or path. */
static int in_image(const struct prof_profile *p, size_t n, const char *ev, const char *image,
		    const struct prof_profile **prof, struct dcpi_err *err)
{
	struct prof_image_id id;
	int rc = prof_image_id_from_file(&id, image, err);

	*prof = NULL;
	for (size_t i = 0; rc >= 0 && i < n && !*prof; i++)
		if (!strcmp(p[i].event, ev) && (prof_image_id_equal(&id, &p[i].image) ||
						 !strcmp(p[i].image.path, image)))
			*prof = &p[i];
	if (rc >= 0 && !*prof)
		rc = dcpi_errf(err, -ENOENT, "%s: no %s samples", image, ev);
	return rc;
}

int rep_find_target(const struct prof_profile *p, size_t n, const char *event, const char *spec,
		    const char *image, struct image **img, const struct img_proc **proc,
		    const struct prof_profile **prof, struct dcpi_err *err)
{
	const char *ev = pick_event(p, n, event);
	size_t k;
	int rc;

	*img = NULL;
	*proc = NULL;
	*prof = NULL;
	if (ev && rep_whole_image(spec) && !image) {
		*prof = whole_image(p, n, ev, spec);
		if (!*prof)
			return dcpi_errf(err, -ENOENT, "%s: no image with %s samples", spec, ev);
		return img_open((*prof)->image.path, 0, img, err);
	}
	/* a file that is not an image says so first, whatever the samples */
	if (image && (rc = img_open(image, 0, img, err)) < 0)
		return rc;
	if (!ev)
		return dcpi_errf(err, -ENODATA, "the epoch holds no samples");
	if (image) {
		rc = in_image(p, n, ev, image, prof, err);
		if (rc >= 0 && !rep_whole_image(spec))
			rc = img_proc_find(*img, spec, proc, err);
		if (rc == -ENOENT && *prof)
			near_in_image(*img, spec, err);
		return rc;
	}
	rc = rep_find_proc(p, n, ev, spec, 0, img, proc, &k, err);
	if (rc >= 0)
		*prof = &p[k];
	return rc;
}
