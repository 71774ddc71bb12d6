/*
 * dwarf.c - source lines, procedure declarations and inline stacks from DWARF
 * (2 to 5) through libdwarf, so samples can be charged to source lines and
 * inlined procedures (the paper's dcpilist / dcpicalc source views, section 5).
 *
 * Everything is read once at open into three sorted arrays, and the lookups
 * are binary searches:
 *
 *   rows    every line-table row of every CU, sorted by address.  Within a run
 *           of rows at one address the last one wins (as addr2line does), and
 *           an end_sequence row sorts before a row that starts another
 *           sequence at the same address.  The row for vaddr is the last one
 *           with address <= vaddr; if that row ends a sequence, vaddr has no
 *           line.
 *   procs   DW_TAG_subprogram pc ranges (one entry per range of DW_AT_ranges)
 *           with the declaration file and line, sorted by low address.
 *   inls    DW_TAG_inlined_subroutine pc ranges with their depth, name and
 *           call site.  Each procs entry knows the slice of inls ranges that
 *           lie in its subprogram, so an inline stack is a scan of one
 *           subprogram's ranges, keeping the ranges that contain vaddr, ordered
 *           by depth.
 *
 * File names are interned: a row holds an index into d->strs.  Names are the
 * ones libdwarf joins from the line table's directories and DW_AT_comp_dir,
 * which are the paths addr2line prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "dcpi/safefile.h"
#include "dwarf.h"

#define NO_FILE UINT32_MAX

struct dw_row {
	uint64_t addr;
	uint32_t seq;		/* input order, to keep sorting stable */
	uint32_t file;		/* index into strs, NO_FILE if none */
	uint32_t line, column, discriminator;
	uint8_t end;		/* end_sequence: first address after a sequence */
};

struct dw_proc {
	uint64_t lo, hi;	/* hi exclusive */
	uint32_t file;		/* declaration file (strs), NO_FILE if none */
	uint32_t line, column;
	uint32_t id;		/* subprogram number, shared by all its ranges */
	uint64_t die;		/* .debug_info offset of its DIE (img_dwarf_params) */
};

struct dw_inl {
	uint64_t lo, hi;
	uint32_t proc;		/* subprogram number (dw_proc.id) */
	uint32_t depth;		/* 0 = inlined directly into the subprogram */
	uint32_t name, call_file;	/* strs, NO_FILE if none */
	uint32_t call_line, call_column, discriminator;
	uint32_t decl_line;	/* of the inlined subroutine (its abstract origin) */
};

/* A subprogram's slice of the sorted inls array. */
struct dw_slice {
	uint32_t first, count;
};

struct str_slot {
	uint32_t idx;		/* index + 1 into strs, 0 when empty */
	uint32_t hash;
};

struct img_dwarf {
	Dwarf_Debug dbg;
	int fd;			/* libdwarf reads through it until dwarf_finish */
	char *path;

	struct dw_row *rows;
	size_t nrows, caprows;
	struct dw_proc *procs;
	size_t nprocs, capprocs;
	struct dw_inl *inls;
	size_t ninls, capinls;
	struct dw_slice *slices;	/* by subprogram number */
	uint32_t nsubprogs;

	char **strs;
	size_t nstrs, capstrs;
	struct str_slot *slots;
	size_t nslots;

	struct img_inline *chain;	/* returned by img_dwarf_inlines_at */
	size_t capchain;
	struct img_param *params;	/* returned by img_dwarf_params */
	size_t capparams;
};

/* Per-CU state while walking. */
struct dw_cu {
	Dwarf_Half version;
	uint64_t base;			/* CU base address (DW_AT_low_pc) */
	uint32_t *files;		/* srcfiles index -> strs */
	Dwarf_Signed nfiles;
	Dwarf_Signed file_base;		/* attribute value of files[0] */
	Dwarf_Off die_off;		/* .debug_info offset of the CU DIE */
};

/* libdwarf calls this only when no Dwarf_Error * was passed; never abort. */
static void dw_handler(Dwarf_Error e, Dwarf_Ptr arg)
{
	(void)e;
	(void)arg;
}

static int dw_fail(struct img_dwarf *d, Dwarf_Error *e, struct dcpi_err *err,
		   const char *what)
{
	const char *msg = *e ? dwarf_errmsg(*e) : "unknown error";

	dcpi_errf(err, -EINVAL, "%s: corrupt DWARF (%s): %s", d->path, what, msg);
	if (*e) {
		dwarf_dealloc_error(d->dbg, *e);
		*e = NULL;
	}
	return -EINVAL;
}

static void dw_drop_error(struct img_dwarf *d, Dwarf_Error *e)
{
	if (*e) {
		dwarf_dealloc_error(d->dbg, *e);
		*e = NULL;
	}
}

/* Grow *arr (elements of size sz) so one more fits. */
static int dw_grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	return dcpi_grow(arr, cap, n + 1, sz);
}

static uint32_t dw_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int dw_rehash(struct img_dwarf *d)
{
	size_t n = d->nslots ? d->nslots * 2 : 256;
	struct str_slot *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < d->nslots; i++) {
		size_t j;

		if (!d->slots[i].idx)
			continue;
		for (j = d->slots[i].hash & (n - 1); s[j].idx; j = (j + 1) & (n - 1))
			;
		s[j] = d->slots[i];
	}
	free(d->slots);
	d->slots = s;
	d->nslots = n;
	return 0;
}

/* Index of s in d->strs, adding a copy if new. */
static int dw_intern(struct img_dwarf *d, const char *s, uint32_t *out)
{
	uint32_t h = dw_hash(s);
	size_t j;
	char *copy;

	if ((d->nstrs + 1) * 2 > d->nslots && dw_rehash(d))
		return -ENOMEM;
	for (j = h & (d->nslots - 1); d->slots[j].idx; j = (j + 1) & (d->nslots - 1)) {
		if (d->slots[j].hash == h && !strcmp(d->strs[d->slots[j].idx - 1], s)) {
			*out = d->slots[j].idx - 1;
			return 0;
		}
	}
	if (dw_grow((void **)&d->strs, &d->capstrs, d->nstrs, sizeof(*d->strs)))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	d->strs[d->nstrs] = copy;
	d->slots[j].idx = (uint32_t)d->nstrs + 1;
	d->slots[j].hash = h;
	*out = (uint32_t)d->nstrs++;
	return 0;
}

static const char *dw_str(const struct img_dwarf *d, uint32_t i)
{
	return i == NO_FILE ? NULL : d->strs[i];
}

/* Map a DW_AT_decl_file / call_file value to strs. */
static uint32_t dw_cu_file(const struct dw_cu *cu, Dwarf_Unsigned v)
{
	Dwarf_Signed i = (Dwarf_Signed)v - cu->file_base;

	if (!cu->files || i < 0 || i >= cu->nfiles)
		return NO_FILE;
	return cu->files[i];
}

/* The CU's file table, as joined names (DW_AT_decl_file indexes it). */
static int dw_load_files(struct img_dwarf *d, Dwarf_Die cu_die, struct dw_cu *cu,
			 struct dcpi_err *err)
{
	Dwarf_Error e = NULL;
	char **files = NULL;
	Dwarf_Signed n = 0;
	int res, rc = 0;

	res = dwarf_srcfiles(cu_die, &files, &n, &e);
	if (res == DW_DLV_ERROR)
		return dw_fail(d, &e, err, "file table");
	if (res == DW_DLV_NO_ENTRY)
		return 0;
	cu->files = malloc(sizeof(*cu->files) * (size_t)(n ? n : 1));
	if (!cu->files)
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", d->path);
	for (Dwarf_Signed i = 0; i < n; i++) {
		if (!rc && dw_intern(d, files[i], &cu->files[i]))
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", d->path);
		dwarf_dealloc(d->dbg, files[i], DW_DLA_STRING);
	}
	dwarf_dealloc(d->dbg, files, DW_DLA_LIST);
	cu->nfiles = rc ? 0 : n;
	return rc;
}

static int dw_line_fields(Dwarf_Line ln, struct dw_row *r, Dwarf_Unsigned *fno,
			  Dwarf_Error *e)
{
	Dwarf_Addr addr;
	Dwarf_Unsigned line, col, isa, discr;
	Dwarf_Bool end, pe, eb;

	if (dwarf_lineaddr(ln, &addr, e) != DW_DLV_OK ||
	    dwarf_lineno(ln, &line, e) != DW_DLV_OK ||
	    dwarf_lineoff_b(ln, &col, e) != DW_DLV_OK ||
	    dwarf_lineendsequence(ln, &end, e) != DW_DLV_OK ||
	    dwarf_line_srcfileno(ln, fno, e) != DW_DLV_OK ||
	    dwarf_prologue_end_etc(ln, &pe, &eb, &isa, &discr, e) != DW_DLV_OK)
		return -1;
	r->addr = addr;
	r->line = (uint32_t)line;
	r->column = (uint32_t)col;
	r->discriminator = (uint32_t)discr;
	r->end = end ? 1 : 0;
	return 0;
}

/* Append the CU's line-table rows. */
static int dw_load_lines(struct img_dwarf *d, Dwarf_Die cu_die, struct dw_cu *cu,
			 struct dcpi_err *err)
{
	Dwarf_Error e = NULL;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Unsigned version;
	Dwarf_Small tables;
	Dwarf_Line *lines;
	Dwarf_Signed n, base, cnt, endi;
	int res, rc = 0;

	res = dwarf_srclines_b(cu_die, &version, &tables, &ctx, &e);
	if (res == DW_DLV_NO_ENTRY)
		return 0;
	if (res == DW_DLV_ERROR)
		return dw_fail(d, &e, err, "line table");
	if (dwarf_srclines_files_indexes(ctx, &base, &cnt, &endi, &e) == DW_DLV_OK)
		cu->file_base = base;
	else
		dw_drop_error(d, &e);
	res = dwarf_srclines_from_linecontext(ctx, &lines, &n, &e);
	if (res == DW_DLV_ERROR) {
		rc = dw_fail(d, &e, err, "line table");
		goto out;
	}
	if (res == DW_DLV_NO_ENTRY)
		goto out;
	for (Dwarf_Signed i = 0; i < n; i++) {
		struct dw_row r;
		Dwarf_Unsigned fno;

		if (dw_line_fields(lines[i], &r, &fno, &e)) {
			rc = dw_fail(d, &e, err, "line row");
			goto out;
		}
		r.file = dw_cu_file(cu, fno);
		r.seq = (uint32_t)d->nrows;
		if (dw_grow((void **)&d->rows, &d->caprows, d->nrows, sizeof(r))) {
			rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", d->path);
			goto out;
		}
		d->rows[d->nrows++] = r;
	}
out:
	dwarf_srclines_dealloc_b(ctx);
	return rc;
}

/* A struct to collect one DIE's pc ranges. */
struct dw_ranges {
	uint64_t (*r)[2];
	size_t n, cap;
};

static int dw_add_range(struct dw_ranges *rs, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (dw_grow((void **)&rs->r, &rs->cap, rs->n, sizeof(*rs->r)))
		return -ENOMEM;
	rs->r[rs->n][0] = lo;
	rs->r[rs->n][1] = hi;
	rs->n++;
	return 0;
}

/* DWARF 5 DW_AT_ranges: .debug_rnglists, cooked to addresses by libdwarf. */
static int dw_rnglists(struct img_dwarf *d, Dwarf_Attribute at, Dwarf_Half form,
		       struct dw_ranges *rs, Dwarf_Error *e)
{
	Dwarf_Rnglists_Head head = NULL;
	Dwarf_Unsigned val, count, goff;
	int res;

	if (form == DW_FORM_rnglistx)
		res = dwarf_formudata(at, &val, e);
	else
		res = dwarf_global_formref(at, &val, e);
	if (res != DW_DLV_OK)
		return -1;
	if (dwarf_rnglists_get_rle_head(at, form, val, &head, &count, &goff, e) != DW_DLV_OK)
		return -1;
	for (Dwarf_Unsigned i = 0; i < count; i++) {
		unsigned len, code;
		Dwarf_Unsigned raw1, raw2, lo, hi;
		Dwarf_Bool noaddr;

		if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &raw1, &raw2,
						      &noaddr, &lo, &hi, e) != DW_DLV_OK) {
			dwarf_dealloc_rnglists_head(head);
			return -1;
		}
		if (code == DW_RLE_end_of_list || code == DW_RLE_base_address ||
		    code == DW_RLE_base_addressx || noaddr)
			continue;
		if (dw_add_range(rs, lo, hi)) {
			dwarf_dealloc_rnglists_head(head);
			return -ENOMEM;
		}
	}
	dwarf_dealloc_rnglists_head(head);
	return 0;
}

/* DWARF 2-4 DW_AT_ranges: .debug_ranges, relative to the CU base address. */
static int dw_debug_ranges(struct img_dwarf *d, Dwarf_Die die, Dwarf_Attribute at,
			   const struct dw_cu *cu, struct dw_ranges *rs, Dwarf_Error *e)
{
	Dwarf_Ranges *buf;
	Dwarf_Signed n;
	Dwarf_Unsigned bytes;
	Dwarf_Off off, real;
	uint64_t base = cu->base;
	int rc = 0;

	if (dwarf_global_formref(at, &off, e) != DW_DLV_OK) {
		Dwarf_Unsigned u;

		dw_drop_error(d, e);
		if (dwarf_formudata(at, &u, e) != DW_DLV_OK)
			return -1;
		off = u;
	}
	if (dwarf_get_ranges_b(d->dbg, off, die, &real, &buf, &n, &bytes, e) != DW_DLV_OK)
		return -1;
	for (Dwarf_Signed i = 0; i < n && !rc; i++) {
		if (buf[i].dwr_type == DW_RANGES_ADDRESS_SELECTION)
			base = buf[i].dwr_addr2;
		else if (buf[i].dwr_type == DW_RANGES_ENTRY)
			rc = dw_add_range(rs, base + buf[i].dwr_addr1, base + buf[i].dwr_addr2);
	}
	dwarf_ranges_dealloc(d->dbg, buf, n);
	return rc;
}

/* die's attribute name into *at (dwarf_dealloc_attribute it): 1; 0 when die
 * has none; -1 on a libdwarf error. */
static int dw_attr(Dwarf_Die die, Dwarf_Half name, Dwarf_Attribute *at, Dwarf_Error *e)
{
	int res = dwarf_attr(die, name, at, e);

	if (res == DW_DLV_NO_ENTRY)
		return 0;
	return res == DW_DLV_OK ? 1 : -1;
}

/* The DIE's pc ranges: low_pc/high_pc (high as address or offset) or ranges.
 * Returns 0 with rs->n == 0 when it has none; -1 on a libdwarf error. */
static int dw_die_ranges(struct img_dwarf *d, Dwarf_Die die, const struct dw_cu *cu,
			 struct dw_ranges *rs, Dwarf_Error *e)
{
	Dwarf_Attribute at = NULL;
	Dwarf_Addr lo, hi;
	Dwarf_Half form;
	enum Dwarf_Form_Class cls;
	int res, rc;

	rs->n = 0;
	res = dwarf_lowpc(die, &lo, e);
	if (res == DW_DLV_ERROR)
		return -1;
	if (res == DW_DLV_OK) {
		res = dwarf_highpc_b(die, &hi, &form, &cls, e);
		if (res == DW_DLV_ERROR)
			return -1;
		if (res == DW_DLV_NO_ENTRY)
			return 0;
		if (cls == DW_FORM_CLASS_CONSTANT)
			hi += lo;
		return dw_add_range(rs, lo, hi);
	}
	res = dw_attr(die, DW_AT_ranges, &at, e);
	if (res <= 0)
		return res;
	if (dwarf_whatform(at, &form, e) != DW_DLV_OK) {
		dwarf_dealloc_attribute(at);
		return -1;
	}
	if (cu->version >= 5 || form == DW_FORM_rnglistx)
		rc = dw_rnglists(d, at, form, rs, e);
	else
		rc = dw_debug_ranges(d, die, at, cu, rs, e);
	dwarf_dealloc_attribute(at);
	return rc;
}

/* dwarf_formudata, plus DW_FORM_implicit_const (gcc 11+ uses it for
 * decl_file and the like), which libdwarf 20210528 reads only as signed. */
static int dw_formudata(Dwarf_Attribute at, Dwarf_Unsigned *u, Dwarf_Error *e)
{
	Dwarf_Half form;
	Dwarf_Signed s;
	int res;

	res = dwarf_whatform(at, &form, e);
	if (res != DW_DLV_OK)
		return res;
	if (form != DW_FORM_implicit_const)
		return dwarf_formudata(at, u, e);
	res = dwarf_formsdata(at, &s, e);
	if (res == DW_DLV_OK)
		*u = (Dwarf_Unsigned)s;
	return res;
}

/* die's attribute name read by form into *v (and freed): DW_DLV_OK;
 * DW_DLV_NO_ENTRY when die has none (or form reads none); DW_DLV_ERROR. */
static int dw_attr_form(Dwarf_Die die, Dwarf_Half name,
			int (*form)(Dwarf_Attribute, Dwarf_Unsigned *, Dwarf_Error *),
			Dwarf_Unsigned *v, Dwarf_Error *e)
{
	Dwarf_Attribute at;
	int res = dw_attr(die, name, &at, e);

	if (res <= 0)
		return res ? DW_DLV_ERROR : DW_DLV_NO_ENTRY;
	res = form(at, v, e);
	dwarf_dealloc_attribute(at);
	return res;
}

/* An unsigned attribute, *v untouched when absent.  -1 on a libdwarf error. */
static int dw_udata(Dwarf_Die die, Dwarf_Half name, uint32_t *v, Dwarf_Error *e)
{
	Dwarf_Unsigned u;
	int res = dw_attr_form(die, name, dw_formudata, &u, e);

	if (res == DW_DLV_ERROR)
		return -1;
	if (res == DW_DLV_OK)
		*v = (uint32_t)u;
	return 0;
}

/* The DIE that die's reference attribute name points to; NULL when absent. */
static int dw_ref(struct img_dwarf *d, Dwarf_Die die, Dwarf_Half name, Dwarf_Die *out,
		  Dwarf_Error *e)
{
	Dwarf_Off off;
	int res = dw_attr_form(die, name, dwarf_global_formref, &off, e);

	*out = NULL;
	if (res == DW_DLV_NO_ENTRY)
		return 0;
	if (res != DW_DLV_OK)
		return -1;
	return dwarf_offdie_b(d->dbg, off, 1, out, e) == DW_DLV_OK ? 0 : -1;
}

/* The DIE that die's abstract_origin or else specification refers to, or NULL. */
static int dw_origin(struct img_dwarf *d, Dwarf_Die die, Dwarf_Die *out, Dwarf_Error *e)
{
	static const Dwarf_Half refs[] = { DW_AT_abstract_origin, DW_AT_specification };

	*out = NULL;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]) && !*out; i++)
		if (dw_ref(d, die, refs[i], out, e))
			return -1;
	return 0;
}

/* What the walk collects about a subprogram or inlined subroutine: its name
 * and declaration, following abstract_origin / specification chains. */
static int dw_same_cu(struct img_dwarf *d, Dwarf_Die die, const struct dw_cu *cu)
{
	Dwarf_Error e = NULL;
	Dwarf_Off off;

	if (dwarf_CU_dieoffset_given_die(die, &off, &e) != DW_DLV_OK) {
		dw_drop_error(d, &e);
		return 0;
	}
	return off == cu->die_off;
}

struct dw_decl {
	uint32_t name;		/* strs or NO_FILE */
	uint32_t file, line, column;
};

static int dw_decl(struct img_dwarf *d, Dwarf_Die die, const struct dw_cu *cu,
		   struct dw_decl *out, Dwarf_Error *e)
{
	Dwarf_Die cur = die, next;
	int rc = 0;

	out->name = out->file = NO_FILE;
	out->line = out->column = 0;
	/* Bounded: a cyclic chain in a corrupt file must not loop forever. */
	for (int hop = 0; hop < 8 && cur; hop++) {
		char *name = NULL;
		uint32_t f = UINT32_MAX;
		int res;

		if (out->name == NO_FILE) {
			res = dwarf_diename(cur, &name, e);
			if (res == DW_DLV_ERROR)
				goto fail;
			if (res == DW_DLV_OK && dw_intern(d, name, &out->name)) {
				rc = -ENOMEM;
				goto out;
			}
		}
		if (!out->line) {
			if (dw_udata(cur, DW_AT_decl_line, &out->line, e) ||
			    dw_udata(cur, DW_AT_decl_column, &out->column, e) ||
			    dw_udata(cur, DW_AT_decl_file, &f, e))
				goto fail;
			/* A DIE from another CU (DW_FORM_ref_addr, LTO) would
			 * need that CU's file table; only trust the one we are in. */
			if (f != UINT32_MAX && dw_same_cu(d, cur, cu))
				out->file = dw_cu_file(cu, f);
		}
		if (out->name != NO_FILE && out->line)
			break;
		if (dw_origin(d, cur, &next, e))
			goto fail;
		if (cur != die)
			dwarf_dealloc_die(cur);
		cur = next;
	}
	goto out;
fail:
	rc = -1;
out:
	if (cur && cur != die)
		dwarf_dealloc_die(cur);
	return rc;
}

struct dw_walk {
	struct img_dwarf *d;
	struct dw_cu *cu;
	struct dw_ranges rs;
	struct dcpi_err *err;
	uint32_t proc;		/* current subprogram number, UINT32_MAX outside */
};

static int dw_add_proc(struct dw_walk *w, Dwarf_Die die, Dwarf_Error *e)
{
	struct img_dwarf *d = w->d;
	struct dw_decl dc;
	Dwarf_Off off;
	int rc;

	if (dw_die_ranges(d, die, w->cu, &w->rs, e))
		return dw_fail(d, e, w->err, "subprogram ranges");
	if (!w->rs.n)
		return 0;
	if (dwarf_dieoffset(die, &off, e) != DW_DLV_OK)
		return dw_fail(d, e, w->err, "subprogram offset");
	rc = dw_decl(d, die, w->cu, &dc, e);
	if (rc == -ENOMEM)
		return dcpi_errf(w->err, -ENOMEM, "%s: out of memory", d->path);
	if (rc)
		return dw_fail(d, e, w->err, "subprogram");
	w->proc = d->nsubprogs++;
	for (size_t i = 0; i < w->rs.n; i++) {
		struct dw_proc p = {
			.lo = w->rs.r[i][0], .hi = w->rs.r[i][1], .file = dc.file,
			.line = dc.line, .column = dc.column, .id = w->proc, .die = off,
		};

		if (dw_grow((void **)&d->procs, &d->capprocs, d->nprocs, sizeof(p)))
			return dcpi_errf(w->err, -ENOMEM, "%s: out of memory", d->path);
		d->procs[d->nprocs++] = p;
	}
	return 0;
}

static int dw_add_inline(struct dw_walk *w, Dwarf_Die die, uint32_t depth, Dwarf_Error *e)
{
	struct img_dwarf *d = w->d;
	struct dw_inl in = { .proc = w->proc, .depth = depth };
	struct dw_decl dc;
	uint32_t f = UINT32_MAX;
	int rc;

	if (dw_die_ranges(d, die, w->cu, &w->rs, e))
		return dw_fail(d, e, w->err, "inlined subroutine ranges");
	if (!w->rs.n)
		return 0;
	rc = dw_decl(d, die, w->cu, &dc, e);
	if (rc == -ENOMEM)
		return dcpi_errf(w->err, -ENOMEM, "%s: out of memory", d->path);
	if (rc || dw_udata(die, DW_AT_call_file, &f, e) ||
	    dw_udata(die, DW_AT_call_line, &in.call_line, e) ||
	    dw_udata(die, DW_AT_call_column, &in.call_column, e) ||
	    dw_udata(die, DW_AT_GNU_discriminator, &in.discriminator, e))
		return dw_fail(d, e, w->err, "inlined subroutine");
	in.name = dc.name;
	in.decl_line = dc.line;
	in.call_file = f == UINT32_MAX ? NO_FILE : dw_cu_file(w->cu, f);
	for (size_t i = 0; i < w->rs.n; i++) {
		in.lo = w->rs.r[i][0];
		in.hi = w->rs.r[i][1];
		if (dw_grow((void **)&d->inls, &d->capinls, d->ninls, sizeof(in)))
			return dcpi_errf(w->err, -ENOMEM, "%s: out of memory", d->path);
		d->inls[d->ninls++] = in;
	}
	return 0;
}

/* Walk die and its siblings.  depth counts enclosing inlined subroutines.
 * Only the kinds of DIE that can hold code are entered, which skips the bulk
 * of a C++ CU (types). */
static int dw_walk(struct dw_walk *w, Dwarf_Die die, uint32_t depth)
{
	struct img_dwarf *d = w->d;
	Dwarf_Error e = NULL;
	Dwarf_Die cur = die, next;
	int rc = 0, res;

	while (cur) {
		Dwarf_Half tag;
		uint32_t saved = w->proc, cdepth = depth;
		int enter = 0;

		if (dwarf_tag(cur, &tag, &e) != DW_DLV_OK) {
			rc = dw_fail(d, &e, w->err, "DIE tag");
			break;
		}
		switch (tag) {
		case DW_TAG_subprogram:
			rc = dw_add_proc(w, cur, &e);
			enter = w->proc != saved;
			cdepth = 0;
			break;
		case DW_TAG_inlined_subroutine:
			if (w->proc != UINT32_MAX)
				rc = dw_add_inline(w, cur, depth, &e);
			enter = 1;
			cdepth = depth + 1;
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			enter = 1;
			break;
		}
		if (!rc && enter) {
			res = dwarf_child(cur, &next, &e);
			if (res == DW_DLV_ERROR)
				rc = dw_fail(d, &e, w->err, "DIE child");
			else if (res == DW_DLV_OK)
				rc = dw_walk(w, next, cdepth);
		}
		w->proc = saved;
		if (rc)
			break;
		res = dwarf_siblingof_b(d->dbg, cur, 1, &next, &e);
		if (res == DW_DLV_ERROR) {
			rc = dw_fail(d, &e, w->err, "DIE sibling");
			break;
		}
		dwarf_dealloc_die(cur);
		cur = res == DW_DLV_OK ? next : NULL;
	}
	if (cur)
		dwarf_dealloc_die(cur);
	return rc;
}

static int dw_load_cu(struct img_dwarf *d, Dwarf_Half version, struct dcpi_err *err)
{
	Dwarf_Error e = NULL;
	Dwarf_Die cu_die, child;
	struct dw_cu cu = { .version = version, .file_base = version >= 5 ? 0 : 1 };
	struct dw_walk w = { .d = d, .cu = &cu, .err = err, .proc = UINT32_MAX };
	Dwarf_Addr lo;
	int res, rc;

	res = dwarf_siblingof_b(d->dbg, NULL, 1, &cu_die, &e);
	if (res == DW_DLV_ERROR)
		return dw_fail(d, &e, err, "CU DIE");
	if (res == DW_DLV_NO_ENTRY)
		return 0;
	res = dwarf_lowpc(cu_die, &lo, &e);
	if (res == DW_DLV_OK)
		cu.base = lo;
	dw_drop_error(d, &e);
	if (dwarf_dieoffset(cu_die, &cu.die_off, &e) != DW_DLV_OK) {
		rc = dw_fail(d, &e, err, "CU DIE offset");
		goto out;
	}
	rc = dw_load_files(d, cu_die, &cu, err);
	if (!rc)
		rc = dw_load_lines(d, cu_die, &cu, err);
	if (rc)
		goto out;
	res = dwarf_child(cu_die, &child, &e);
	if (res == DW_DLV_ERROR)
		rc = dw_fail(d, &e, err, "CU children");
	else if (res == DW_DLV_OK)
		rc = dw_walk(&w, child, 0);
out:
	free(w.rs.r);
	free(cu.files);
	dwarf_dealloc_die(cu_die);
	return rc;
}

static int dw_cmp_row(const void *a, const void *b)
{
	const struct dw_row *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->end != y->end)
		return x->end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int dw_cmp_proc(const void *a, const void *b)
{
	const struct dw_proc *x = a, *y = b;

	return dcpi_cmp_keys((uint64_t[]){ x->lo, x->hi }, (uint64_t[]){ y->lo, y->hi }, 2);
}

static int dw_cmp_inl(const void *a, const void *b)
{
	const struct dw_inl *x = a, *y = b;

	return dcpi_cmp_keys((uint64_t[]){ x->proc, x->lo, x->depth },
			     (uint64_t[]){ y->proc, y->lo, y->depth }, 3);
}

/* Sort everything and index each subprogram's inline ranges. */
static int dw_index(struct img_dwarf *d)
{
	/* dcpi_qsort(NULL, 0, ...) is undefined behaviour: empty arrays are NULL */
	dcpi_qsort(d->rows, d->nrows, sizeof(*d->rows), dw_cmp_row);
	dcpi_qsort(d->procs, d->nprocs, sizeof(*d->procs), dw_cmp_proc);
	dcpi_qsort(d->inls, d->ninls, sizeof(*d->inls), dw_cmp_inl);
	d->slices = calloc(d->nsubprogs ? d->nsubprogs : 1, sizeof(*d->slices));
	if (!d->slices)
		return -ENOMEM;
	for (size_t i = 0; i < d->ninls; i++) {
		struct dw_slice *s = &d->slices[d->inls[i].proc];

		if (!s->count)
			s->first = (uint32_t)i;
		s->count++;
	}
	return 0;
}

int img_dwarf_open(const char *path, struct img_dwarf **out, struct dcpi_err *err)
{
	struct img_dwarf *d;
	Dwarf_Error e = NULL;
	Dwarf_Half version;
	Dwarf_Unsigned next;
	char magic[4];
	int res, rc = 0;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
	}
	d->fd = -1;
	d->fd = dcpi_open_read(AT_FDCWD, path, 0, NULL, path, err);
	if (d->fd < 0) {
		rc = d->fd;
		d->fd = -1;
		goto fail;
	}
	if (pread(d->fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", sizeof(magic))) {
		rc = dcpi_errf(err, -EINVAL, "%s: not an ELF file", path);
		goto fail;
	}
	res = dwarf_init_b(d->fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, dw_handler, NULL,
			   &d->dbg, &e);
	if (res == DW_DLV_NO_ENTRY) {
		rc = dcpi_errf(err, -ENOENT, "%s: no DWARF debug information", path);
		goto fail;
	}
	if (res == DW_DLV_ERROR) {
		rc = dcpi_errf(err, -EINVAL, "%s: cannot read DWARF: %s", path,
			       e ? dwarf_errmsg(e) : "not an object file libdwarf reads");
		if (e)
			dwarf_dealloc_error(NULL, e);
		d->dbg = NULL;
		goto fail;
	}
	for (;;) {
		res = dwarf_next_cu_header_d(d->dbg, 1, NULL, &version, NULL, NULL, NULL,
					     NULL, NULL, NULL, &next, NULL, &e);
		if (res == DW_DLV_NO_ENTRY)
			break;
		if (res == DW_DLV_ERROR) {
			rc = dw_fail(d, &e, err, "CU header");
			goto fail;
		}
		rc = dw_load_cu(d, version, err);
		if (rc)
			goto fail;
	}
	if (!d->nrows) {
		rc = dcpi_errf(err, -ENOENT, "%s: no DWARF line information", path);
		goto fail;
	}
	if (dw_index(d)) {
		rc = dcpi_errf(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	*out = d;
	return 0;
fail:
	img_dwarf_close(d);
	return rc;
}

void img_dwarf_close(struct img_dwarf *d)
{
	if (!d)
		return;
	if (d->dbg) {
		Dwarf_Error e = NULL;

		if (dwarf_finish(d->dbg, &e) == DW_DLV_ERROR && e)
			dwarf_dealloc_error(NULL, e);
	}
	if (d->fd >= 0)
		close(d->fd);
	for (size_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	free(d->strs);
	free(d->slots);
	free(d->rows);
	free(d->procs);
	free(d->inls);
	free(d->slices);
	free(d->chain);
	free(d->params);
	free(d->path);
	free(d);
}

int img_dwarf_line_at(struct img_dwarf *d, uint64_t vaddr, struct img_line *out)
{
	size_t lo = dcpi_upper_bound(d->rows, d->nrows, sizeof(*d->rows),
				     offsetof(struct dw_row, addr), vaddr);
	const struct dw_row *r;

	if (!lo)
		return -ENOENT;
	r = &d->rows[lo - 1];
	if (r->end || !r->line || r->file == NO_FILE)
		return -ENOENT;
	out->file = dw_str(d, r->file);
	out->line = r->line;
	out->column = r->column;
	out->discriminator = r->discriminator;
	return 0;
}

/* The subprogram range containing vaddr, or NULL. */
static const struct dw_proc *dw_proc_at(const struct img_dwarf *d, uint64_t vaddr)
{
	size_t lo = dcpi_upper_bound(d->procs, d->nprocs, sizeof(*d->procs),
				     offsetof(struct dw_proc, lo), vaddr);

	/* Ranges do not nest in C, but look back a little in case an odd
	 * producer emits an overlapping one. */
	for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) {
		if (vaddr < d->procs[i - 1].hi)
			return &d->procs[i - 1];
	}
	return NULL;
}

int img_dwarf_decl_line(struct img_dwarf *d, uint64_t vaddr, struct img_line *out)
{
	const struct dw_proc *p = dw_proc_at(d, vaddr);

	if (!p || !p->line)
		return -ENOENT;
	out->file = dw_str(d, p->file);
	out->line = p->line;
	out->column = p->column;
	out->discriminator = 0;
	return 0;
}

int img_dwarf_inlines_at(struct img_dwarf *d, uint64_t vaddr,
			 const struct img_inline **out, size_t *n)
{
	const struct dw_proc *p = dw_proc_at(d, vaddr);
	const struct dw_slice *s;
	size_t depth = 0;

	*out = NULL;
	*n = 0;
	if (!p)
		return -ENOENT;
	s = &d->slices[p->id];
	for (uint32_t i = s->first; i < s->first + s->count; i++) {
		const struct dw_inl *in = &d->inls[i];
		struct img_inline *c;

		/* Sorted by lo: nothing later can contain vaddr. */
		if (in->lo > vaddr)
			break;
		if (vaddr >= in->hi || in->depth != depth)
			continue;
		if (dcpi_grow((void **)&d->chain, &d->capchain, depth + 1, sizeof(*d->chain)))
			return -ENOMEM;
		c = &d->chain[depth++];
		c->name = in->name == NO_FILE ? "??" : d->strs[in->name];
		c->lo = in->lo;
		c->hi = in->hi;
		c->call_file = dw_str(d, in->call_file);
		c->call_line = in->call_line;
		c->call_column = in->call_column;
		c->discriminator = in->discriminator;
		c->decl_line = in->decl_line;
	}
	*out = depth ? d->chain : NULL;
	*n = depth;
	return 0;
}

/* ---- formal parameters ---------------------------------------------------
 *
 * Read when asked, from the subprogram DIE recorded in dw_proc.die (libdwarf
 * keeps the sections open until img_dwarf_close).  Each parameter's type is
 * classified as the System V x86-64 ABI does (section 3.2.3): one class per
 * eightbyte, INTEGER or SSE, from the scalar fields that overlap it; longer
 * than 16 bytes, long double and unaligned leftovers go to memory.  The
 * registers are then dealt out in order, and an argument that does not fit
 * in the registers left goes wholly to memory.
 */

enum { DW_EB_NONE, DW_EB_INT, DW_EB_SSE };

struct dw_type {
	uint64_t size;
	uint8_t eb[2];		/* the class of each eightbyte */
	int memory;		/* passed in memory */
};

/* Typedef chains, nesting and origins are bounded: a corrupt file may loop. */
#define DW_TYPE_HOPS 16


/* DW_AT_type of die, or of its abstract origin or specification (a concrete
 * copy of an inline procedure carries no type of its own); NULL: void. */
static int dw_type_of(struct img_dwarf *d, Dwarf_Die die, Dwarf_Die *out, Dwarf_Error *e)
{
	Dwarf_Die cur = die, next;
	int rc = 0;

	*out = NULL;
	for (int hop = 0; hop < 8 && cur; hop++) {
		if (dw_ref(d, cur, DW_AT_type, out, e)) {
			rc = -1;
			break;
		}
		if (*out)
			break;
		if (dw_origin(d, cur, &next, e)) {
			rc = -1;
			break;
		}
		if (cur != die)
			dwarf_dealloc_die(cur);
		cur = next;
	}
	if (cur && cur != die)
		dwarf_dealloc_die(cur);
	return rc;
}

static int dw_is_alias(Dwarf_Half tag)
{
	return tag == DW_TAG_typedef || tag == DW_TAG_const_type ||
	       tag == DW_TAG_volatile_type || tag == DW_TAG_restrict_type ||
	       tag == DW_TAG_atomic_type;
}

/* Follow typedefs and qualifiers from *t (replaced; NULL when they end in
 * void). */
static int dw_strip(struct img_dwarf *d, Dwarf_Die *t, Dwarf_Error *e)
{
	for (int hop = 0; *t && hop < DW_TYPE_HOPS; hop++) {
		Dwarf_Half tag;
		Dwarf_Die next;

		if (dwarf_tag(*t, &tag, e) != DW_DLV_OK)
			return -1;
		if (!dw_is_alias(tag))
			return 0;
		if (dw_ref(d, *t, DW_AT_type, &next, e))
			return -1;
		dwarf_dealloc_die(*t);
		*t = next;
	}
	return 0;
}

static uint64_t dw_size(struct img_dwarf *d, Dwarf_Die t, Dwarf_Error *e)
{
	Dwarf_Unsigned u;

	if (dwarf_bytesize(t, &u, e) == DW_DLV_OK)
		return u;
	dw_drop_error(d, e);
	return 0;
}

/* Bytes [off, off + size) of the argument hold a scalar of class cls. */
static void dw_mark(struct dw_type *ty, uint64_t off, uint64_t size, int cls)
{
	uint64_t last = off + (size ? size : 1) - 1;

	if (last >= 16) {
		ty->memory = 1;
		return;
	}
	for (uint64_t b = off / 8; b <= last / 8; b++)
		if (ty->eb[b] != DW_EB_INT)
			ty->eb[b] = (uint8_t)cls;
}

static int dw_classify(struct img_dwarf *d, Dwarf_Die t, uint64_t off, struct dw_type *ty,
		       int depth, Dwarf_Error *e);

/* The stripped type of die (a member, an array), classified at off. */
static int dw_classify_ref(struct img_dwarf *d, Dwarf_Die die, uint64_t off,
			   struct dw_type *ty, int depth, Dwarf_Error *e)
{
	Dwarf_Die t;
	int rc;

	if (dw_ref(d, die, DW_AT_type, &t, e) || dw_strip(d, &t, e))
		return -1;
	if (!t)
		return 0;
	rc = dw_classify(d, t, off, ty, depth + 1, e);
	dwarf_dealloc_die(t);
	return rc;
}

/* A data member (or base class) of a struct placed at off. */
static int dw_classify_member(struct img_dwarf *d, Dwarf_Die m, uint64_t off,
			      struct dw_type *ty, int depth, Dwarf_Error *e)
{
	uint32_t loc = 0, bit = UINT32_MAX;
	Dwarf_Bool decl = 0;

	/* C++ static members are declarations, not bytes of the object */
	if (dwarf_hasattr(m, DW_AT_declaration, &decl, e) != DW_DLV_OK)
		return -1;
	if (decl)
		return 0;
	/* a location expression (DWARF 2 producers): taken as offset 0 */
	if (dw_udata(m, DW_AT_data_member_location, &loc, e))
		dw_drop_error(d, e);
	if (dw_udata(m, DW_AT_data_bit_offset, &bit, e))
		return -1;
	if (bit != UINT32_MAX)
		loc = bit / 8;
	return dw_classify_ref(d, m, off + loc, ty, depth, e);
}

static int dw_classify_struct(struct img_dwarf *d, Dwarf_Die t, uint64_t off,
			      struct dw_type *ty, int depth, Dwarf_Error *e)
{
	Dwarf_Die c, next;
	int res, rc = 0;

	res = dwarf_child(t, &c, e);
	if (res != DW_DLV_OK)
		return res == DW_DLV_ERROR ? -1 : 0;
	while (c && !rc) {
		Dwarf_Half tag;

		if (dwarf_tag(c, &tag, e) != DW_DLV_OK)
			rc = -1;
		else if (tag == DW_TAG_member || tag == DW_TAG_inheritance)
			rc = dw_classify_member(d, c, off, ty, depth, e);
		next = NULL;
		if (!rc && dwarf_siblingof_b(d->dbg, c, 1, &next, e) == DW_DLV_ERROR)
			rc = -1;
		dwarf_dealloc_die(c);
		c = next;
	}
	if (c)
		dwarf_dealloc_die(c);
	return rc;
}

/* Elements of an array member that fall in the first 16 bytes. */
static int dw_classify_array(struct img_dwarf *d, Dwarf_Die t, uint64_t off,
			     struct dw_type *ty, int depth, Dwarf_Error *e)
{
	uint32_t count = 0, upper = UINT32_MAX;
	Dwarf_Die sub, el;
	uint64_t esize;
	int res, rc = 0;

	res = dwarf_child(t, &sub, e);
	if (res != DW_DLV_OK)
		return res == DW_DLV_ERROR ? -1 : 0;
	if (dw_udata(sub, DW_AT_count, &count, e) || dw_udata(sub, DW_AT_upper_bound, &upper, e))
		rc = -1;
	dwarf_dealloc_die(sub);
	if (rc)
		return rc;
	if (upper != UINT32_MAX)
		count = upper + 1;
	if (dw_ref(d, t, DW_AT_type, &el, e) || dw_strip(d, &el, e))
		return -1;
	if (!el)
		return 0;
	esize = dw_size(d, el, e);
	for (uint32_t i = 0; i < count && !rc; i++) {
		if (!esize || off + i * esize >= 16) {
			ty->memory = off + (uint64_t)count * esize > 16 || !esize;
			break;
		}
		rc = dw_classify(d, el, off + i * esize, ty, depth + 1, e);
	}
	dwarf_dealloc_die(el);
	return rc;
}

/* Classify the stripped type t placed at byte off of the argument. */
static int dw_classify(struct img_dwarf *d, Dwarf_Die t, uint64_t off, struct dw_type *ty,
		       int depth, Dwarf_Error *e)
{
	uint64_t size = dw_size(d, t, e);
	uint32_t enc = 0;
	Dwarf_Half tag;

	if (depth > DW_TYPE_HOPS || dwarf_tag(t, &tag, e) != DW_DLV_OK)
		return depth > DW_TYPE_HOPS ? 0 : -1;
	switch (tag) {
	case DW_TAG_base_type:
		if (dw_udata(t, DW_AT_encoding, &enc, e))
			return -1;
		if (enc != DW_ATE_float && enc != DW_ATE_complex_float)
			break;
		/* long double is x87 (memory); so is complex long double */
		if ((enc == DW_ATE_float && size > 8) || size > 16)
			ty->memory = 1;
		else
			dw_mark(ty, off, size, DW_EB_SSE);
		return 0;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		return dw_classify_struct(d, t, off, ty, depth, e);
	case DW_TAG_array_type:
		return dw_classify_array(d, t, off, ty, depth, e);
	}
	/* integers, bool, char, pointers, references, enums */
	dw_mark(ty, off, size ? size : 8, DW_EB_INT);
	return 0;
}

/* The ABI classes of type t (unstripped; consumed; NULL: void). */
static int dw_type_info(struct img_dwarf *d, Dwarf_Die t, struct dw_type *ty, Dwarf_Error *e)
{
	Dwarf_Half tag;
	int rc = -1;

	memset(ty, 0, sizeof(*ty));
	if (dw_strip(d, &t, e))
		goto out;
	rc = 0;
	if (!t)
		goto out;
	ty->size = dw_size(d, t, e);
	if (dwarf_tag(t, &tag, e) != DW_DLV_OK) {
		rc = -1;
		goto out;
	}
	if (!ty->size && (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
			  tag == DW_TAG_rvalue_reference_type))
		ty->size = 8;
	if (ty->size > 16)
		ty->memory = 1;
	else
		rc = dw_classify(d, t, 0, ty, 0, e);
out:
	if (t)
		dwarf_dealloc_die(t);
	return rc;
}

/* Append to buf (len bytes, NUL-terminated). */
static void dw_cat(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s", s);
}

/* Type t as C spells it, roughly ("const char *", "struct big"); t is not
 * consumed. */
static void dw_type_text(struct img_dwarf *d, Dwarf_Die t, char *buf, size_t len, int depth)
{
	Dwarf_Error e = NULL;
	Dwarf_Half tag;
	Dwarf_Die in = NULL;
	char *name = NULL;
	const char *kw = NULL;

	if (!t) {
		dw_cat(buf, len, "void");
		return;
	}
	if (depth > DW_TYPE_HOPS || dwarf_tag(t, &tag, &e) != DW_DLV_OK) {
		dw_drop_error(d, &e);
		dw_cat(buf, len, "?");
		return;
	}
	if (dwarf_diename(t, &name, &e) != DW_DLV_OK) {
		dw_drop_error(d, &e);
		name = NULL;
	}
	switch (tag) {
	case DW_TAG_structure_type:
		kw = "struct ";
		break;
	case DW_TAG_union_type:
		kw = "union ";
		break;
	case DW_TAG_enumeration_type:
		kw = "enum ";
		break;
	case DW_TAG_class_type:
		kw = "class ";
		break;
	}
	if (name || kw) {
		dw_cat(buf, len, kw ? kw : "");
		dw_cat(buf, len, name ? name : "<anonymous>");
		return;
	}
	if (dw_ref(d, t, DW_AT_type, &in, &e))
		dw_drop_error(d, &e);
	if (tag == DW_TAG_const_type || tag == DW_TAG_volatile_type)
		dw_cat(buf, len, tag == DW_TAG_const_type ? "const " : "volatile ");
	if (tag == DW_TAG_subroutine_type)
		dw_cat(buf, len, "function");
	else
		dw_type_text(d, in, buf, len, depth + 1);
	if (tag == DW_TAG_pointer_type)
		dw_cat(buf, len, buf[0] && buf[strlen(buf) - 1] == '*' ? "*" : " *");
	else if (tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type)
		dw_cat(buf, len, tag == DW_TAG_reference_type ? " &" : " &&");
	else if (tag == DW_TAG_array_type)
		dw_cat(buf, len, "[]");
	if (in)
		dwarf_dealloc_die(in);
}

/* Deal out registers to an argument of classes ty (System V: all of it in
 * registers, or all of it in memory). */
static void dw_assign(struct img_param *p, const struct dw_type *ty, int *gpr, int *xmm)
{
	int neb = ty->size > 8 ? 2 : 1, ni = 0, ns = 0;

	p->nregs = 0;
	p->reg[0] = p->reg[1] = -1;
	if (ty->memory)
		return;
	for (int b = 0; b < neb; b++) {
		if (ty->eb[b] == DW_EB_SSE)
			ns++;
		else
			ni++;
	}
	if (*gpr + ni > 6 || *xmm + ns > 8)
		return;
	for (int b = 0; b < neb; b++)
		p->reg[b] = ty->eb[b] == DW_EB_SSE ? IMG_REG_XMM0 + (*xmm)++ : (*gpr)++;
	p->nregs = neb;
}

struct dw_plist {
	size_t n;
	int gpr, xmm, variadic;
};

static int dw_param_add(struct img_dwarf *d, struct dw_plist *l, const char *name,
			const char *type, const struct dw_type *ty)
{
	struct img_param *p;
	uint32_t in, it;

	if (dcpi_grow((void **)&d->params, &d->capparams, l->n + 1, sizeof(*d->params)) ||
	    dw_intern(d, name, &in) || dw_intern(d, type, &it))
		return -ENOMEM;
	p = &d->params[l->n++];
	p->name = d->strs[in];
	p->type = d->strs[it];
	p->size = ty->size;
	dw_assign(p, ty, &l->gpr, &l->xmm);
	return 0;
}

/* One DW_TAG_formal_parameter: its name and type follow abstract_origin. */
static int dw_param_one(struct img_dwarf *d, Dwarf_Die c, struct dw_plist *l, Dwarf_Error *e)
{
	struct dw_cu nocu = { .die_off = 0 };
	char text[256] = "";
	struct dw_decl dc;
	struct dw_type ty;
	Dwarf_Die t;
	int rc;

	rc = dw_decl(d, c, &nocu, &dc, e);
	if (rc)
		return rc == -ENOMEM ? rc : -EINVAL;
	if (dw_type_of(d, c, &t, e))
		return -EINVAL;
	dw_type_text(d, t, text, sizeof(text), 0);
	if (dw_type_info(d, t, &ty, e))
		return -EINVAL;
	return dw_param_add(d, l, dc.name == NO_FILE ? "" : d->strs[dc.name], text, &ty);
}

/* The parameters listed under die; count only (l NULL) or added to l.
 * Returns how many DIEs describe parameters ("..." included), or < 0. */
static int dw_param_walk(struct img_dwarf *d, Dwarf_Die die, struct dw_plist *l,
			 Dwarf_Error *e)
{
	Dwarf_Die c, next;
	int res, rc = 0, count = 0;

	res = dwarf_child(die, &c, e);
	if (res != DW_DLV_OK)
		return res == DW_DLV_ERROR ? -EINVAL : 0;
	while (c && rc == 0) {
		Dwarf_Half tag;

		if (dwarf_tag(c, &tag, e) != DW_DLV_OK) {
			rc = -EINVAL;
		} else if (tag == DW_TAG_formal_parameter) {
			count++;
			if (l)
				rc = dw_param_one(d, c, l, e);
		} else if (tag == DW_TAG_unspecified_parameters) {
			count++;
			if (l)
				l->variadic = 1;
		}
		next = NULL;
		if (!rc && dwarf_siblingof_b(d->dbg, c, 1, &next, e) == DW_DLV_ERROR)
			rc = -EINVAL;
		dwarf_dealloc_die(c);
		c = next;
	}
	if (c)
		dwarf_dealloc_die(c);
	return rc ? rc : count;
}

/* A struct returned in memory: the caller passes where, in rdi. */
static int dw_param_sret(struct img_dwarf *d, Dwarf_Die sub, struct dw_plist *l,
			 Dwarf_Error *e)
{
	char text[256] = "";
	struct dw_type ty, ptr = { .size = 8, .eb = { DW_EB_INT } };
	Dwarf_Die t;

	if (dw_type_of(d, sub, &t, e))
		return -EINVAL;
	dw_type_text(d, t, text, sizeof(text), 0);
	if (dw_type_info(d, t, &ty, e))
		return -EINVAL;
	if (!ty.memory || !ty.size)
		return 0;
	dw_cat(text, sizeof(text), " *");
	return dw_param_add(d, l, "(sret)", text, &ptr);
}

/* The DIE whose children list the parameters: sub, else the first of its
 * origins that lists some (a concrete copy may list none). */
static int dw_param_die(struct img_dwarf *d, Dwarf_Die sub, Dwarf_Die *out, Dwarf_Error *e)
{
	Dwarf_Die cur = sub, next;
	int n;

	*out = sub;
	for (int hop = 0; hop < 8 && cur; hop++) {
		n = dw_param_walk(d, cur, NULL, e);
		if (n < 0)
			goto fail;
		if (n > 0) {
			*out = cur;
			return 0;
		}
		if (dw_origin(d, cur, &next, e))
			goto fail;
		if (cur != sub)
			dwarf_dealloc_die(cur);
		cur = next;
	}
	if (cur && cur != sub)
		dwarf_dealloc_die(cur);
	return 0;
fail:
	if (cur && cur != sub)
		dwarf_dealloc_die(cur);
	return -EINVAL;
}

int img_dwarf_params(struct img_dwarf *d, uint64_t vaddr, const struct img_param **out,
		     size_t *n, int *variadic)
{
	const struct dw_proc *p = dw_proc_at(d, vaddr);
	struct dw_plist l = { 0 };
	Dwarf_Error e = NULL;
	Dwarf_Die sub = NULL, src = NULL;
	int rc;

	*out = NULL;
	*n = 0;
	if (!p)
		return -ENOENT;
	if (dwarf_offdie_b(d->dbg, p->die, 1, &sub, &e) != DW_DLV_OK) {
		rc = -EINVAL;
		goto out;
	}
	rc = dw_param_sret(d, sub, &l, &e);
	if (!rc)
		rc = dw_param_die(d, sub, &src, &e);
	if (!rc) {
		rc = dw_param_walk(d, src, &l, &e);
		rc = rc < 0 ? rc : 0;
	}
	if (!rc) {
		*out = l.n ? d->params : NULL;
		*n = l.n;
		if (variadic)
			*variadic = l.variadic;
	}
out:
	dw_drop_error(d, &e);
	if (src && src != sub)
		dwarf_dealloc_die(src);
	if (sub)
		dwarf_dealloc_die(sub);
	return rc;
}

const char *img_param_reg_name(int reg)
{
	static const char *const gpr[6] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };
	static const char *const xmm[8] = { "xmm0", "xmm1", "xmm2", "xmm3",
					    "xmm4", "xmm5", "xmm6", "xmm7" };

	if (reg >= 0 && reg < 6)
		return gpr[reg];
	if (reg >= IMG_REG_XMM0 && reg < IMG_REG_XMM0 + 8)
		return xmm[reg - IMG_REG_XMM0];
	return "?";
}
