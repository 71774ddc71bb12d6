/*
 * locate.c - where the file of an image recorded elsewhere is on this
 * machine, found as perf finds it (docs/import.md, "Images from elsewhere"):
 * files given by the user (--binary) with the recorded build-id, --symfs DIR
 * + the recorded path, the recorded path itself while it is still that file
 * (reports name the image by it), then perf's build-id cache
 * (DIR/.build-id/xx/rest/elf, the older DIR/.build-id/xx/rest, and
 * DIR/<recorded path>/<build-id>/elf); without a recorded build-id, a
 * --binary of the same file name, then the symfs and recorded paths.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/image.h"
#include "dcpi/profile.h"

static int is_file(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

/* path is a regular file whose build-id is bid ("" : any ELF file). */
static int has_bid(const char *path, const char *bid)
{
	struct prof_image_id id;

	if (!is_file(path) || prof_image_id_from_file(&id, path, NULL))
		return 0;
	return !bid[0] || !strcmp(id.build_id, bid);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int found(char *out, size_t len, const char *path, char *how, size_t hlen,
		 const char *what)
{
	if ((size_t)snprintf(out, len, "%s", path) >= len)
		return 0;
	if (how)
		snprintf(how, hlen, "%s", what);
	return 1;
}

/* perf's build-id cache under dir for bid and the recorded path. */
static int in_cache(const char *dir, const char *bid, const char *rec, char *out, size_t len)
{
	char p[PROF_PATH_MAX + 256];

	if (!dir || strlen(bid) < 3)
		return 0;
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/elf", dir, bid, bid + 2);
	if (has_bid(p, bid))
		return found(out, len, p, NULL, 0, NULL);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s", dir, bid, bid + 2);
	if (has_bid(p, bid))
		return found(out, len, p, NULL, 0, NULL);
	snprintf(p, sizeof(p), "%s/%s/%s/elf", dir, rec, bid);
	if (rec[0] == '/' && has_bid(p, bid))
		return found(out, len, p, NULL, 0, NULL);
	return 0;
}

int img_locate(const char *recorded, const char *bid, const struct img_locate_opts *o,
	       char *out, size_t len, char *how, size_t hlen)
{
	static const struct img_locate_opts none;
	char p[PROF_PATH_MAX + 256], home_cache[PROF_PATH_MAX];
	const char *cache;

	if (!o)
		o = &none;
	if (!bid)
		bid = "";
	cache = o->buildid_dir;
	if (!cache && getenv("HOME") && getenv("HOME")[0]) {
		snprintf(home_cache, sizeof(home_cache), "%s/.debug", getenv("HOME"));
		cache = home_cache;
	}
	if (how)
		how[0] = '\0';
	if (bid[0]) {
		for (size_t i = 0; i < o->nbinaries; i++)
			if (has_bid(o->binaries[i], bid))
				return found(out, len, o->binaries[i], how, hlen,
					     "--binary, same build-id") ? 0 : -ENAMETOOLONG;
	} else {
		for (size_t i = 0; i < o->nbinaries; i++)
			if (!strcmp(base_name(o->binaries[i]), base_name(recorded)) &&
			    has_bid(o->binaries[i], ""))
				return found(out, len, o->binaries[i], how, hlen,
					     "--binary, by file name (no build-id recorded)") ?
				       0 : -ENAMETOOLONG;
	}
	if (o->symfs && recorded[0] == '/') {
		snprintf(p, sizeof(p), "%s%s", o->symfs, recorded);
		if (has_bid(p, bid))
			return found(out, len, p, how, hlen, "--symfs") ? 0 : -ENAMETOOLONG;
	}
	/* the file at the recorded path, when it is still the one recorded, is
	 * what every report names the image by (perf report names a DSO by it
	 * too, wherever it read the bytes from) */
	if (has_bid(recorded, bid))
		return found(out, len, recorded, how, hlen, "recorded path") ? 0 : -ENAMETOOLONG;
	if (bid[0] && in_cache(cache, bid, recorded, out, len)) {
		if (how)
			snprintf(how, hlen, "build-id cache");
		return 0;
	}
	return -ENOENT;
}
