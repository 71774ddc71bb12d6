/*
 * image.h - executable images: ELF sections, segments, procedures, build-id,
 * DWARF lines and inlines, demangled names.
 *
 * Procedure bounds come from .symtab, else .dynsym, else .eh_frame FDEs
 * (stripped binaries are the common case); PLT entries are named name@plt;
 * unnamed procedures are named "<image basename>+0x<vaddr>".  Separate debug
 * files are found through /usr/lib/debug/.build-id/xx/rest.debug and
 * .gnu_debuglink.  Lookups are binary searches over sorted arrays.
 */
#ifndef DCPI_IMAGE_H
#define DCPI_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

enum img_proc_source {
	IMG_SRC_SYMTAB,		/* .symtab function symbol */
	IMG_SRC_DYNSYM,		/* .dynsym function symbol */
	IMG_SRC_EH_FRAME,	/* .eh_frame FDE, no symbol */
	IMG_SRC_PLT,		/* PLT stub */
};

struct img_proc {
	uint64_t addr;		/* virtual address as in the file */
	uint64_t size;		/* bytes; never 0 */
	const char *name;	/* demangled when C++, else the symbol */
	const char *raw_name;	/* the symbol as in the file */
	enum img_proc_source source;
};

struct img_segment {		/* a PT_LOAD segment */
	uint64_t vaddr, memsz;
	uint64_t offset, filesz;
	unsigned flags;		/* PF_X | PF_W | PF_R */
};

struct img_section {
	const char *name;
	uint64_t addr, size, offset;
	unsigned type;		/* SHT_* */
	uint64_t flags;		/* SHF_* */
};

/* A source position from DWARF. */
struct img_line {
	const char *file;	/* as DWARF names it (joined with comp dir) */
	unsigned line, column, discriminator;
};

/* One level of inlining at an address, outermost first. */
struct img_inline {
	const char *name;	/* the inlined subroutine */
	uint64_t lo, hi;	/* the range containing the address, hi exclusive */
	const char *call_file;	/* where it was inlined */
	unsigned call_line, call_column, discriminator;
	unsigned decl_line;	/* the inlined subroutine's DW_AT_decl_line, 0 if none */
};

struct image;

#define IMG_NO_DWARF 1		/* do not look for or load debug information */
#define IMG_NO_DEBUG_SYMS 2	/* nor the function symbols of a stripped image's
				 * separate debug file or MiniDebugInfo (which
				 * IMG_NO_DWARF alone still reads: they name
				 * procedures, as perf does) */

/* Load an ELF file.  Errors name the file and the reason (not ELF, truncated,
 * not x86-64, ...). */
int img_open(const char *path, unsigned flags, struct image **out, struct dcpi_err *err);
/* Same, from a buffer the caller keeps alive until img_close (fuzzing). */
int img_open_mem(const void *buf, size_t len, const char *name, unsigned flags,
		 struct image **out, struct dcpi_err *err);
void img_close(struct image *img);

const char *img_path(const struct image *img);
/* Lower-case hex build-id, "" when the image has none. */
const char *img_build_id(const struct image *img);
int img_is_shared(const struct image *img);	/* ET_DYN (PIE or .so) */
int img_is_stripped(const struct image *img);	/* no .symtab */

size_t img_nsegments(const struct image *img);
const struct img_segment *img_segment(const struct image *img, size_t i);
size_t img_nsections(const struct image *img);
const struct img_section *img_section(const struct image *img, size_t i);
const struct img_section *img_section_by_name(const struct image *img, const char *name);
/* A section's bytes in the file: -ENOENT for SHT_NOBITS, -EINVAL when the
 * header points outside the file. */
int img_section_bytes(const struct image *img, const struct img_section *s,
		      const uint8_t **data, size_t *len);

/* Procedures sorted by address, non-overlapping. */
size_t img_nprocs(const struct image *img);
const struct img_proc *img_proc(const struct image *img, size_t i);
const struct img_proc *img_proc_at(const struct image *img, uint64_t vaddr);
/* By name as printed (demangled) or raw; first match. */
const struct img_proc *img_proc_by_name(const struct image *img, const char *name);
/* What a user types for a procedure (img_proc_find's rules); NULL when no
 * procedure or several match. */
const struct img_proc *img_proc_lookup(const struct image *img, const char *spec);
/*
 * PROC as every command takes it (image/lookup.c): "0x1f30" (an address
 * inside it), the mangled name, the demangled signature, or the plain name
 * without parameters ("bitmap_set_bit", "ns::S::f", or unqualified "f"; the
 * procedure before its clones), optionally prefixed "IMAGE:" (path, file
 * name, or file name up to ".so").  0 and *out; -ENOENT when none matches;
 * -EEXIST when several do (overloads): err lists them and how to pick one.
 */
int img_proc_find(const struct image *img, const char *spec, const struct img_proc **out,
		  struct dcpi_err *err);
/* "IMAGE:PROC": 1 with the image part copied to image (len bytes) and *name
 * after the colon; 0 (and *name = spec) when there is none ("::" is not one). */
int img_spec_split(const char *spec, char *image, size_t len, const char **name);
/* Does the image part of a spec name img? */
int img_spec_matches(const struct image *img, const char *want);

/* File offset <-> virtual address through the PT_LOAD segments.
 * -ENOENT when the value is in no loadable segment. */
int img_offset_to_vaddr(const struct image *img, uint64_t off, uint64_t *vaddr);
int img_vaddr_to_offset(const struct image *img, uint64_t vaddr, uint64_t *off);
/* Copy file bytes backing [vaddr, vaddr+len); -ENOENT if not all in the file. */
int img_read(const struct image *img, uint64_t vaddr, void *buf, size_t len);
/* Pointer to the file bytes at vaddr and how many follow in its segment. */
const uint8_t *img_bytes(const struct image *img, uint64_t vaddr, size_t *avail);

/* DWARF.  img_has_dwarf is 0 when no debug information was found; the
 * lookups then return -ENOENT. */
int img_has_dwarf(const struct image *img);
/* The separate debug file in use, or NULL. */
const char *img_debug_path(const struct image *img);
/* -ENOENT also for DWARF's line 0 ("no line"). */
int img_line_at(struct image *img, uint64_t vaddr, struct img_line *out);
/* Declaration line of the procedure containing vaddr. */
int img_decl_line(struct image *img, uint64_t vaddr, struct img_line *out);
/* Inline stack at vaddr, outermost first; *n = 0 when not inlined.
 * -ENOENT when no procedure in the debug information covers vaddr (padding,
 * code outside every compilation unit).  Names are DWARF's bare names.
 * The array stays valid until the next call or img_close. */
int img_inlines_at(struct image *img, uint64_t vaddr, const struct img_inline **out,
		   size_t *n);

/*
 * A procedure's formal parameters from DWARF (image/dwarf.c), in order, with
 * where the System V x86-64 ABI passes each: INTEGER eightbytes (integers,
 * pointers, enums, bool, char) in rdi, rsi, rdx, rcx, r8, r9; float and
 * double in xmm0..7; structs and unions of at most 16 bytes one register
 * per eightbyte, larger ones (and long double) in memory.  A struct returned
 * in memory adds a hidden first parameter, named "(sret)", in rdi.
 */
#define IMG_REG_XMM0 16		/* reg[i] >= IMG_REG_XMM0: xmm(reg[i] - IMG_REG_XMM0) */

struct img_param {
	const char *name;	/* DWARF's name, "" when it has none */
	const char *type;	/* as C spells it: "int", "const char *", "struct big" */
	uint64_t size;		/* bytes, 0 when DWARF does not say */
	int nregs;		/* 0: passed in memory (on the stack) */
	int reg[2];		/* per eightbyte: 0..5 the argument register (rdi..r9),
				 * or IMG_REG_XMM0 + k for xmm k */
};

/* The parameters of the DWARF subprogram that covers vaddr (the procedure's
 * entry).  -ENOENT when no debug information describes it.  *variadic (may be
 * NULL) is 1 when it also takes "...".  The array stays valid until the next
 * call or img_close, the strings until img_close. */
int img_params(struct image *img, uint64_t vaddr, const struct img_param **out, size_t *n,
	       int *variadic);
/* "rdi" .. "r9", "xmm0" .. "xmm7" for an img_param reg value; "?" otherwise. */
const char *img_param_reg_name(int reg);

/* Demangle a C++ (Itanium ABI) name; malloc'd, or NULL if not mangled. */
char *img_demangle(const char *name);

/*
 * Where the file of an image recorded on another machine is here, found as
 * perf finds it (image/locate.c, docs/import.md "Images from elsewhere"):
 * with a recorded build-id bid, a file of binaries[] with that build-id,
 * perf's build-id cache (buildid_dir, NULL: $HOME/.debug), symfs + recorded,
 * recorded itself, each only with that build-id; without one (bid NULL or
 * ""), a file of binaries[] with recorded's file name, then symfs + recorded,
 * then recorded.  0 with the path in out and how it was found in how (may be
 * NULL), -ENOENT when nowhere.
 */
struct img_locate_opts {
	const char *symfs;
	const char *const *binaries;
	size_t nbinaries;
	const char *buildid_dir;
	const char *vmlinux;		/* --vmlinux FILE (img_vmlinux_find) */
};
int img_locate(const char *recorded, const char *bid, const struct img_locate_opts *o,
	       char *out, size_t len, char *how, size_t hlen);

/*
 * The kernel as an image (image/vmlinux.c): a vmlinux with .symtab and, when
 * built with debug info, DWARF; kernel samples are runtime addresses.
 *
 * img_kernel_build_id: the running kernel's build-id, hex, from the GNU note
 * of notes (NULL: /sys/kernel/notes).
 * img_vmlinux_find: the vmlinux of the kernel with build-id bid, as perf
 * looks for one: o->vmlinux when set (refused, -EINVAL and an error naming
 * both build-ids, when its build-id is not bid; taken unchecked when bid is
 * NULL or ""), else, only with that build-id, perf's build-id cache
 * (o->buildid_dir, NULL: $HOME/.debug) .build-id/xx/rest/vmlinux and /elf,
 * /usr/lib/debug/.build-id/xx/rest.debug, ./vmlinux, /boot/vmlinux,
 * /boot/vmlinux-R, /usr/lib/debug/boot/vmlinux-R, /lib/modules/R/build/vmlinux,
 * /usr/lib/debug/lib/modules/R/vmlinux, /usr/lib/debug/boot/vmlinux-R.debug
 * (R: uname -r; the system paths under o->symfs when set).  0 with the path
 * in out and how it was found in how; -ENOENT and why when none is.
 * img_vmlinux_text: the link-time address of _text (the symbol, else .text).
 * img_vmlinux_offset: the file offset of the instruction at runtime address
 * addr of a kernel whose _text ran at run_text (the KASLR slide is
 * run_text - link_text); -ENOENT when it is not in vm (a module's code).
 */
int img_kernel_build_id(const char *notes, char *out, size_t len, struct dcpi_err *err);
int img_vmlinux_find(const char *bid, const struct img_locate_opts *o, char *out, size_t len,
		     char *how, size_t hlen, struct dcpi_err *err);
int img_vmlinux_text(const struct image *vm, uint64_t *text);
int img_vmlinux_offset(const struct image *vm, uint64_t link_text, uint64_t run_text,
		       uint64_t addr, uint64_t *off);
/*
 * Reports: the profiles of the pseudo-image "[kernel.kallsyms]" in (*p, *n)
 * (samples by runtime address, include/dcpi/kallsyms.h) named from the
 * kernel's vmlinux: the samples it holds move to profiles of the vmlinux
 * file (by file offset, so every report reads it as any image), the rest
 * (modules) stay by address.  The build-id matched is the profile's
 * (recorded), else the running kernel's; the slide comes from _text in
 * $DCPI_KALLSYMS, else /proc/kallsyms (this boot's).  note says which was
 * used ("" when no kernel samples).  0; an error only when o->vmlinux is
 * set and cannot be used (another kernel's build-id: both named).
 */
struct prof_profile;
int img_kernel_profiles(struct prof_profile **p, size_t *n, const struct img_locate_opts *o,
			char *note, size_t nlen, struct dcpi_err *err);

#endif /* DCPI_IMAGE_H */
