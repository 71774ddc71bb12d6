/*
 * image/internal.h - what the ELF side of image/ shares between its files:
 * the image itself, a string arena, and the list of candidate procedures
 * that elf.c, symbols.c, plt.c and ehframe.c fill and symbols.c finishes
 * into the sorted, non-overlapping array img_proc_at searches.
 *
 * Every offset and size read from the file has been checked against the
 * file size by elf.c before the other files look at section contents, so
 * img_sec_data never points past the buffer.
 */
#ifndef DCPI_IMAGE_INTERNAL_H
#define DCPI_IMAGE_INTERNAL_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "dcpi/image.h"

struct img_dwarf;

/* Strings live in chunks that never move, so pointers to them stay valid. */
struct img_arena_chunk {
	struct img_arena_chunk *next;
	size_t used, cap;
	char buf[];
};

struct img_arena {
	struct img_arena_chunk *head;
};

/* A procedure before sorting and deduplication. */
struct img_cand {
	uint64_t addr, size;
	uint64_t limit;		/* end of its section: bound for zero-size symbols */
	const char *raw;	/* in the arena, or NULL for an unnamed range */
	uint8_t source;		/* enum img_proc_source */
	uint8_t rank;		/* lower wins among aliases at one address */
	uint32_t seq;		/* order of reading: the symbol table's order */
};

struct image {
	char *path;
	const char *base;	/* basename of path */
	unsigned flags;

	const uint8_t *data;	/* the whole file */
	size_t size;
	void *map;		/* our mapping, when img_open made one */
	size_t maplen;

	Elf64_Ehdr eh;
	int shared, stripped;
	const char *build_id;

	struct img_segment *segs;
	size_t nsegs;
	Elf64_Shdr *shdrs;	/* copies, aligned */
	struct img_section *secs;
	size_t nsecs;

	struct img_cand *cands;
	size_t ncands, capcands;
	struct img_proc *procs;
	size_t nprocs;

	struct img_arena arena;

	int dw_state;		/* 0 not tried, 1 loaded, -1 none */
	struct img_dwarf *dw;
	char *debug_path;	/* separate debug file in use */
};

/* Rank of a symbol binding among aliases: global, then weak, then local. */
#define IMG_RANK_GLOBAL	0
#define IMG_RANK_WEAK	1
#define IMG_RANK_LOCAL	2
#define IMG_RANK_PLT	3
#define IMG_RANK_FDE	4

char *img_arena_strdup(struct img_arena *a, const char *s, size_t len);
void img_arena_free(struct img_arena *a);

/* Section contents, or NULL (with *len 0) for NOBITS / out of range. */
const uint8_t *img_sec_data(const struct image *img, size_t idx, size_t *len);
/* Index of the first section named name, or -1. */
long img_sec_index(const struct image *img, const char *name);
/* The separate debug file (elf.c); function symbols from it or from
 * MiniDebugInfo when the image is stripped (debugsyms.c). */
int img_debug_file(struct image *img, char **path);
int img_syms_separate(struct image *img, struct dcpi_err *err);
/* IMG_RANK_* of a symbol's binding (symbols.c). */
unsigned img_sym_rank(unsigned char info);
/* A NUL-terminated string at off in string-table section idx, or NULL. */
const char *img_sec_str(const struct image *img, size_t idx, uint64_t off);
/* Is vaddr inside an executable PT_LOAD segment? */
int img_addr_is_text(const struct image *img, uint64_t vaddr);

int img_cand_add(struct image *img, uint64_t addr, uint64_t size, uint64_t limit,
		 const char *raw, size_t rawlen, enum img_proc_source src, unsigned rank);

/* symbols.c: function symbols from .symtab, else .dynsym. */
int img_syms_load(struct image *img, struct dcpi_err *err);
/* plt.c: name@plt stubs. */
int img_plt_load(struct image *img, struct dcpi_err *err);
/* symbols.c: sort, deduplicate, bound; leaves img->procs named by raw name. */
int img_procs_finish(struct image *img, struct dcpi_err *err);
/* symbols.c: demangle C++ names of img->procs. */
int img_procs_name(struct image *img, struct dcpi_err *err);
/* ehframe.c: add FDE ranges that no procedure covers; needs img->procs. */
int img_ehframe_load(struct image *img, struct dcpi_err *err);

#endif /* DCPI_IMAGE_INTERNAL_H */
