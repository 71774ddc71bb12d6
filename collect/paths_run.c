/*
 * collect/paths_run.c - path samples around one `dcpi record` run
 * (docs/paths.md): find the preloaded runtime, make the private spool
 * directory, put the settings in the command's environment, and at the end
 * write the spool files as path profiles into the epoch and remove them.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dcpi/safefile.h"
#include "internal.h"
#include "pathrt.h"
#include "paths.h"
#include "values_spool.h"

static int usable(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, R_OK);
}

/* The embedded runtime into dir, unless dir's file system cannot map it
 * executable (noexec). */
static int write_blob(const char *dir, char *out, size_t len)
{
	size_t n, done = 0;
	const unsigned char *b = paths_blob(&n);
	struct statvfs vfs;
	int fd;

	if (!b || !n || statvfs(dir, &vfs) || (vfs.f_flag & ST_NOEXEC) ||
	    (size_t)snprintf(out, len, "%s/%s", dir, PRT_LIB_NAME) >= len)
		return -ENOENT;
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
	if (fd < 0)
		return -ENOENT;
	while (done < n) {
		ssize_t w = write(fd, b + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (close(fd) || done < n) {
		unlink(out);
		return -ENOENT;
	}
	return 0;
}

/* The runtime: given, from the environment, embedded, or beside this
 * executable. */
static int find_lib(char *out, size_t len, const char *given, const char *dir)
{
	static const char *const rel[] = { "", "/..", "/../lib/dcpi" };
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	const char *env = getenv("DCPI_PATHS_LIB");
	ssize_t n;

	if (!given && env && env[0])
		given = env;
	if (given)
		return realpath(given, out) && usable(out) ? 0 : -ENOENT;
	if (!write_blob(dir, out, len))
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s/%s", exe, rel[i], PRT_LIB_NAME);
		if (usable(cand) && realpath(cand, out) && strlen(out) < len)
			return 0;
	}
	return -ENOENT;
}

int paths_prepare(struct paths_run *r, unsigned rate, unsigned k, const char *lib,
		  struct dcpi_err *err)
{
	const char *tmp = getenv("TMPDIR"), *old = getenv("LD_PRELOAD");

	memset(r, 0, sizeof(*r));
	if (!rate || rate > 100000 || k < 2 || k > PRT_KMAX)
		return dcpi_errf(err, -EINVAL, "paths %u:%u: rate must be 1..100000 bursts "
				 "per CPU second and K 2..%d steps", rate, k, PRT_KMAX);
	/* LD_PRELOAD splits at spaces and colons: such a TMPDIR cannot hold it */
	if (!tmp || !tmp[0] || strpbrk(tmp, " :"))
		tmp = "/tmp";
	snprintf(r->dir, sizeof(r->dir), "%s/" PRT_TMP_PREFIX "XXXXXX", tmp);
	if (!mkdtemp(r->dir))		/* mode 0700 */
		return dcpi_errf(err, -errno, "%s: %s", r->dir, strerror(errno));
	r->on = 1;			/* paths_cleanup removes the directory */
	if (find_lib(r->lib, sizeof(r->lib), lib, r->dir))
		return dcpi_errf(err, -ENOENT, "%s: the path-sample runtime is missing "
				 "(build it with make, or give --no-paths)",
				 lib ? lib : PRT_LIB_NAME);
	if (strpbrk(r->lib, " :"))
		return dcpi_errf(err, -EINVAL, "%s: a path with a space or colon cannot go "
				 "in LD_PRELOAD", r->lib);
	snprintf(r->rate, sizeof(r->rate), "%u:%u", rate, k);
	if (old && old[0])
		snprintf(r->preload, sizeof(r->preload), "%s:%s", r->lib, old);
	else
		snprintf(r->preload, sizeof(r->preload), "%s", r->lib);
	return 0;
}

void paths_child_env(const struct paths_run *r)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char buf[4096];

	if (!r || !r->on)
		return;
	setenv(PRT_ENV_DIR, r->dir, 1);
	setenv(PRT_ENV_RATE, r->rate, 1);
	if (r->values)
		setenv(PRT_ENV_VALUES, r->latency ? "2" : "1", 1);
	else
		unsetenv(PRT_ENV_VALUES);
	if (r->plan[0])
		setenv(PRT_ENV_PLAN, r->plan, 1);
	else
		unsetenv(PRT_ENV_PLAN);
	setenv("LD_PRELOAD", r->preload, 1);
	/* A program built with -fsanitize=address refuses to start when a
	 * preloaded library comes before its runtime; that check only. */
	if (asan && asan[0])
		snprintf(buf, sizeof(buf), "%s:verify_asan_link_order=0", asan);
	else
		snprintf(buf, sizeof(buf), "verify_asan_link_order=0");
	setenv("ASAN_OPTIONS", buf, 1);
}

int paths_collect(struct paths_run *r, struct prof_db *db, const char *epoch,
		  struct paths_stats *st, struct dcpi_err *err)
{
	int ret;

	memset(st, 0, sizeof(*st));
	if (!r->on)
		return 0;
	ret = paths_spool_write(r->dir, db, epoch, r->values, &r->lat, st, err);
	/* data profiles from the same steps (docs/data.md); DCPI_DATA=0: not
	 * (bench/bench_data.sh measures what they cost) */
	if (!ret && r->values && !(getenv("DCPI_DATA") && !strcmp(getenv("DCPI_DATA"), "0")))
		ret = data_spool_collect(r->dir, db, epoch, &st->data, err);
	return ret;
}

static int is_note(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".note");
}

/* One note file's lines into out (at most PATHS_NOTES_MAX in all). */
static void notes_of(const char *path, char *out, size_t len, unsigned *n)
{
	char line[512];
	size_t l;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n'))
			continue;	/* cut short, or not ours */
		if ((*n)++ >= PATHS_NOTES_MAX)
			continue;
		l = strlen(out);
		snprintf(out + l, len - l, "%s", line);
	}
	fclose(f);
}

unsigned paths_notes(const struct paths_run *r, char *out, size_t len)
{
	char path[PATH_MAX + 256];
	struct dirent *d;
	unsigned n = 0;
	size_t l;
	DIR *dp;

	if (!len)
		return 0;
	out[0] = '\0';
	if (!r->on || !(dp = opendir(r->dir)))
		return 0;
	while ((d = readdir(dp))) {
		if (!is_note(d->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dir, d->d_name);
		notes_of(path, out, len, &n);
	}
	closedir(dp);
	l = strlen(out);
	if (n > PATHS_NOTES_MAX)
		snprintf(out + l, len - l, "and %u more of the same kind\n", n - PATHS_NOTES_MAX);
	return n;
}

void paths_cleanup(struct paths_run *r)
{
	char path[PATH_MAX + 256];
	struct dirent *d;
	DIR *dp;

	if (!r->on)
		return;
	dp = opendir(r->dir);
	while (dp && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dir, d->d_name);
		unlink(path);
	}
	if (dp)
		closedir(dp);
	rmdir(r->dir);
	r->on = 0;
}

/* cmd as execvp would find it. */
static int which(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *e;

	if (strchr(cmd, '/'))
		return (size_t)snprintf(out, len, "%s", cmd) < len && usable(out) ? 0 : -1;
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)(e - p), e == p ? "." : p,
				     cmd) >= len)
			continue;
		if (usable(out) && !access(out, X_OK))
			return 0;
	}
	return -1;
}

int paths_static_command(const char *cmd)
{
	char path[PATH_MAX];
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd, interp = 0, elf = 0;

	if (which(cmd, path, sizeof(path)))
		return 0;
	fd = dcpi_open_read(AT_FDCWD, path, 0, NULL, path, NULL);
	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(ph)) {
		elf = 1;
		for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    sizeof(ph)) {
				elf = 0;
				break;
			}
			interp = ph.p_type == PT_INTERP;
		}
	}
	close(fd);
	return elf && !interp;
}
