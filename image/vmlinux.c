/*
 * image/vmlinux.c - the kernel as an image: a vmlinux (the kernel's ELF file,
 * with .symtab and, when built with debug info, DWARF) found as perf finds
 * it (tools/perf/util/symbol.c, vmlinux_path__init and dso__load_vmlinux):
 * --vmlinux FILE, perf's build-id cache, the distribution's debug files,
 * then /boot and /lib/modules for the running release.  A file is taken only
 * when its build-id is the recorded kernel's (the running kernel's is in the
 * GNU build-id note of /sys/kernel/notes).
 *
 * Kernel samples are runtime addresses; KASLR moves the kernel at each boot.
 * The recorded address of _text (perf's kernel MMAP record, or /proc/kallsyms
 * "_text") minus the vmlinux's link-time _text is the slide to take off an
 * address before it is looked up in the file (include/dcpi/image.h).
 * Reports move a kernel profile's samples that the vmlinux holds to a
 * profile of the vmlinux file by file offset (img_kernel_profiles), so every
 * tool names, disassembles and lists them as it does any image's.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "dcpi/image.h"
#include "dcpi/kallsyms.h"
#include "dcpi/profile.h"

#define NOTES_PATH "/sys/kernel/notes"
#define NOTES_MAX 65536

/* The GNU build-id note among the notes in buf, as hex into out. */
static int note_build_id(const uint8_t *buf, size_t len, char *out, size_t olen)
{
	size_t at = 0;

	while (len - at >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_at = at + 12, desc_at;

		memcpy(&namesz, buf + at, 4);
		memcpy(&descsz, buf + at + 4, 4);
		memcpy(&type, buf + at + 8, 4);
		if (namesz > len - name_at)
			return -EINVAL;
		desc_at = name_at + ((namesz + 3u) & ~3u);
		if (desc_at > len || descsz > len - desc_at)
			return -EINVAL;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name_at, "GNU", 4)) {
			if (2 * (size_t)descsz + 1 > olen || !descsz)
				return -EINVAL;
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(out + 2 * i, 3, "%02x", buf[desc_at + i]);
			return 0;
		}
		at = desc_at + ((descsz + 3u) & ~3u);
	}
	return -ENOENT;
}

int img_kernel_build_id(const char *notes, char *out, size_t len, struct dcpi_err *err)
{
	uint8_t *buf = malloc(NOTES_MAX);
	ssize_t got;
	size_t n = 0;
	int fd, rc;

	if (!notes)
		notes = NOTES_PATH;
	if (len)
		out[0] = '\0';
	if (!buf)
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", notes);
	fd = open(notes, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = dcpi_errf(err, -errno, "%s: %s", notes, strerror(errno));
		goto out;
	}
	while (n < NOTES_MAX && (got = read(fd, buf + n, NOTES_MAX - n)) > 0)
		n += (size_t)got;
	close(fd);
	rc = note_build_id(buf, n, out, len);
	if (rc < 0)
		rc = dcpi_errf(err, rc, "%s: no GNU build-id note", notes);
out:
	free(buf);
	return rc;
}

/* path's build-id into bid ("" when it has none); 0 when it is a file. */
static int file_bid(const char *path, char *bid, size_t len)
{
	struct prof_image_id id;
	struct stat sb;

	if (stat(path, &sb) || !S_ISREG(sb.st_mode) || prof_image_id_from_file(&id, path, NULL))
		return -ENOENT;
	snprintf(bid, len, "%s", id.build_id);
	return 0;
}

struct vm_search {
	const char *bid;
	char *out;
	size_t len;
	char other[PROF_PATH_MAX];	/* the first file with another build-id */
	char other_bid[PROF_BUILD_ID_MAX];
};

/* 1 when path is the kernel's vmlinux (copied to out), else 0. */
static int try_path(struct vm_search *s, const char *path)
{
	char bid[PROF_BUILD_ID_MAX];

	if (file_bid(path, bid, sizeof(bid)))
		return 0;
	if (!strcmp(bid, s->bid))
		return (size_t)snprintf(s->out, s->len, "%s", path) < s->len;
	if (!s->other[0]) {
		snprintf(s->other, sizeof(s->other), "%s", path);
		snprintf(s->other_bid, sizeof(s->other_bid), "%s", bid[0] ? bid : "none");
	}
	return 0;
}

/* perf's build-id cache (DIR/.build-id/xx/rest/{vmlinux,elf}) and the
 * distribution's debug files by build-id. */
static int try_by_bid(struct vm_search *s, const char *cache, const char *symfs)
{
	static const char *const fmts[] = {
		"%s/.build-id/%.2s/%s/vmlinux", "%s/.build-id/%.2s/%s/elf",
	};
	char p[PROF_PATH_MAX + 128];

	for (size_t i = 0; cache && i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(p, sizeof(p), fmts[i], cache, s->bid, s->bid + 2);
		if (try_path(s, p))
			return 1;
	}
	snprintf(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", symfs, s->bid,
		 s->bid + 2);
	return try_path(s, p);
}

/* perf's vmlinux_path: the usual places of the running release's vmlinux. */
static int try_release(struct vm_search *s, const char *symfs)
{
	static const char *const fmts[] = {
		"%s/boot/vmlinux-%s", "%s/usr/lib/debug/boot/vmlinux-%s",
		"%s/lib/modules/%s/build/vmlinux", "%s/usr/lib/debug/lib/modules/%s/vmlinux",
		"%s/usr/lib/debug/boot/vmlinux-%s.debug",
	};
	char p[PROF_PATH_MAX + 128];
	struct utsname u;

	if (try_path(s, "vmlinux"))
		return 1;
	snprintf(p, sizeof(p), "%s/boot/vmlinux", symfs);
	if (try_path(s, p))
		return 1;
	if (uname(&u) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(p, sizeof(p), fmts[i], symfs, u.release);
		if (try_path(s, p))
			return 1;
	}
	return 0;
}

/* --vmlinux FILE: taken when its build-id is bid (or none was recorded). */
static int given(const char *file, const char *bid, char *out, size_t len, char *how,
		 size_t hlen, struct dcpi_err *err)
{
	char vb[PROF_BUILD_ID_MAX];

	if (file_bid(file, vb, sizeof(vb)))
		return dcpi_errf(err, -ENOENT, "--vmlinux %s: not a readable file", file);
	if (bid[0] && strcmp(vb, bid))
		return dcpi_errf(err, -EINVAL, "--vmlinux %s: build-id %s, but the recorded "
				 "kernel's is %s: another kernel's vmlinux, refused", file,
				 vb[0] ? vb : "(none)", bid);
	if ((size_t)snprintf(out, len, "%s", file) >= len)
		return dcpi_errf(err, -ENAMETOOLONG, "--vmlinux %s: path too long", file);
	snprintf(how, hlen, "%s", bid[0] ? "--vmlinux, same build-id" :
		 "--vmlinux, unchecked: no kernel build-id recorded");
	return 0;
}

int img_vmlinux_find(const char *bid, const struct img_locate_opts *o, char *out, size_t len,
		     char *how, size_t hlen, struct dcpi_err *err)
{
	struct vm_search s = { .bid = bid ? bid : "", .out = out, .len = len };
	char home_cache[PROF_PATH_MAX];
	const char *cache = o ? o->buildid_dir : NULL, *symfs = o && o->symfs ? o->symfs : "";

	if (o && o->vmlinux)
		return given(o->vmlinux, s.bid, out, len, how, hlen, err);
	if (strlen(s.bid) < 3)
		return dcpi_errf(err, -ENOENT, "no kernel build-id recorded: a vmlinux is "
				 "taken only from --vmlinux");
	if (!cache && getenv("HOME") && getenv("HOME")[0]) {
		snprintf(home_cache, sizeof(home_cache), "%s/.debug", getenv("HOME"));
		cache = home_cache;
	}
	if (try_by_bid(&s, cache, symfs)) {
		snprintf(how, hlen, "by build-id");
		return 0;
	}
	if (try_release(&s, symfs)) {
		snprintf(how, hlen, "vmlinux path of this release");
		return 0;
	}
	if (s.other[0])
		return dcpi_errf(err, -ENOENT, "no vmlinux with the kernel's build-id %s (%s has "
				 "build-id %s: refused)", s.bid, s.other, s.other_bid);
	return dcpi_errf(err, -ENOENT, "no vmlinux with the kernel's build-id %s", s.bid);
}

/* The value of symbol name in .symtab; -ENOENT when it has none. */
static int symtab_value(const struct image *vm, const char *name, uint64_t *val)
{
	const struct img_section *sym = img_section_by_name(vm, ".symtab"), *str;
	const uint8_t *sd, *sn;
	size_t sl, nl;

	str = img_section_by_name(vm, ".strtab");
	if (!sym || !str || img_section_bytes(vm, sym, &sd, &sl) ||
	    img_section_bytes(vm, str, &sn, &nl))
		return -ENOENT;
	for (size_t at = 0; at + sizeof(Elf64_Sym) <= sl; at += sizeof(Elf64_Sym)) {
		Elf64_Sym s;

		memcpy(&s, sd + at, sizeof(s));
		if (s.st_name < nl && s.st_shndx != SHN_UNDEF &&
		    !strncmp((const char *)sn + s.st_name, name, nl - s.st_name) &&
		    strnlen((const char *)sn + s.st_name, nl - s.st_name) == strlen(name)) {
			*val = s.st_value;
			return 0;
		}
	}
	return -ENOENT;
}

int img_vmlinux_text(const struct image *vm, uint64_t *text)
{
	const struct img_section *s;

	if (!symtab_value(vm, "_text", text))
		return 0;
	s = img_section_by_name(vm, ".text");
	if (!s)
		return -ENOENT;
	*text = s->addr;
	return 0;
}

int img_vmlinux_offset(const struct image *vm, uint64_t link_text, uint64_t run_text,
		       uint64_t addr, uint64_t *off)
{
	return img_vaddr_to_offset(vm, addr - run_text + link_text, off);
}

/* --- reports: kernel profiles named from a vmlinux ---------------------------- */

struct kvm {
	struct image *vm;
	struct prof_image_id id;	/* the vmlinux file's */
	uint64_t link_text, run_text;
	uint64_t moved, total;
	char path[PROF_PATH_MAX], how[128];
};

static int is_kernel(const struct prof_profile *p)
{
	return !strcmp(p->image.path, KSYMS_IMAGE);
}

/* The vmlinux for the kernel profile k, opened, and this boot's _text. */
static int kvm_open(struct kvm *v, const struct prof_profile *k,
		    const struct img_locate_opts *o, struct dcpi_err *err)
{
	char bid[PROF_BUILD_ID_MAX] = "", abs[PATH_MAX];
	int rc;

	snprintf(bid, sizeof(bid), "%s", k->image.build_id);
	if (!bid[0])
		img_kernel_build_id(NULL, bid, sizeof(bid), NULL);
	rc = img_vmlinux_find(bid, o, v->path, sizeof(v->path), v->how, sizeof(v->how), err);
	if (!rc)
		rc = ksyms_text(getenv("DCPI_KALLSYMS"), &v->run_text, err);
	if (!rc)
		rc = img_open(v->path, IMG_NO_DWARF, &v->vm, err);
	if (!rc && img_vmlinux_text(v->vm, &v->link_text) < 0)
		rc = dcpi_errf(err, -EINVAL, "%s: no _text and no .text", v->path);
	if (!rc && !realpath(v->path, abs))
		rc = dcpi_errf(err, -errno, "%s: %s", v->path, strerror(errno));
	if (!rc)
		rc = prof_image_id_from_file(&v->id, abs, err);
	return rc;
}

/* k's samples in the vmlinux into *q (a new profile of it); the rest stay. */
static int kvm_split(struct kvm *v, struct prof_profile *k, struct prof_profile *q)
{
	size_t keep = 0;
	uint64_t off;
	int rc = 0;

	prof_profile_init(q);
	q->image = v->id;
	memcpy(q->event, k->event, sizeof(q->event));
	memcpy(q->period_unit, k->period_unit, sizeof(q->period_unit));
	q->period = k->period;
	q->cycles_per_unit = k->cycles_per_unit;
	for (size_t i = 0; i < k->n && !rc; i++) {
		v->total += k->e[i].count;
		if (img_vmlinux_offset(v->vm, v->link_text, v->run_text, k->e[i].offset, &off)) {
			k->e[keep++] = k->e[i];
			continue;
		}
		rc = prof_profile_add(q, off, k->e[i].count);
		v->moved += k->e[i].count;
	}
	k->n = keep;
	if (!rc)
		rc = prof_profile_normalize(k);
	if (!rc)
		rc = prof_profile_normalize(q);
	return rc;
}

/* Split every kernel profile of the n0 first; empty ones dropped. */
static int kvm_split_all(struct kvm *v, struct prof_profile **p, size_t *n, size_t n0)
{
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < n0 && !rc; i++) {
		struct prof_profile *all;

		if (!is_kernel(&(*p)[i]))
			continue;
		all = realloc(*p, (*n + 1) * sizeof(**p));
		if (!all)
			return -ENOMEM;
		*p = all;
		rc = kvm_split(v, &all[i], &all[*n]);
		if (rc)
			prof_profile_free(&all[*n]);
		else
			(*n)++;
	}
	for (size_t i = 0; i < *n; i++) {
		if (is_kernel(&(*p)[i]) && !(*p)[i].n) {
			prof_profile_free(&(*p)[i]);
			continue;
		}
		(*p)[keep++] = (*p)[i];
	}
	*n = keep;
	return rc;
}

int img_kernel_profiles(struct prof_profile **p, size_t *n, const struct img_locate_opts *o,
			char *note, size_t nlen, struct dcpi_err *err)
{
	struct kvm v = { 0 };
	struct dcpi_err verr = { 0 };
	size_t k;
	int rc;

	if (nlen)
		note[0] = '\0';
	for (k = 0; k < *n && !is_kernel(&(*p)[k]); k++)
		;
	if (k == *n)
		return 0;
	rc = kvm_open(&v, &(*p)[k], o, &verr);
	if (rc < 0 && o && o->vmlinux) {
		img_close(v.vm);
		return dcpi_errf(err, rc, "%s", verr.msg);
	}
	if (rc < 0) {
		snprintf(note, nlen, "kernel: samples named from /proc/kallsyms (%s)", verr.msg);
		img_close(v.vm);
		return 0;
	}
	rc = kvm_split_all(&v, p, n, *n);
	if (rc < 0)
		rc = dcpi_errf(err, rc, "%s: out of memory", v.path);
	else
		snprintf(note, nlen, "kernel: %llu of %llu samples named from vmlinux %s (%s; "
			 "_text at 0x%llx this boot, linked at 0x%llx)",
			 (unsigned long long)v.moved, (unsigned long long)v.total, v.id.path,
			 v.how, (unsigned long long)v.run_text, (unsigned long long)v.link_text);
	img_close(v.vm);
	return rc;
}
