/*
 * bp_main.c - bpsim, a valgrind tool that counts the branch mispredicts of a
 * simulated predictor per instruction, in callgrind's output format: the
 * yardstick of make culprits' fig. 10 (docs/culprits.md).
 *
 *   VALGRIND_LIB=build/bpsim/lib valgrind --tool=bpsim [--predictor=tage|bimodal]
 *       [--bpsim-out-file=F] PROG ARGS
 *
 * Which branches: exactly callgrind's --branch-sim=yes (valgrind 3.19,
 * callgrind/main.c), so that --predictor=bimodal, callgrind's own predictor,
 * reproduces callgrind's Bc, Bcm, Bi and Bim totals:
 *
 *  - a conditional branch is every guest exit (Ist_Exit of kind Boring, Call
 *    or Ret) after the superblock's first instruction mark; its outcome is
 *    the exit's guard, inverted for the superblock's last exit when that
 *    exit goes to the next instruction (VEX turned the branch around).  Like
 *    callgrind, bpsim turns off superblock chasing and unrolling, so the
 *    last exit is the only one VEX may have inverted.  rep-prefixed string
 *    instructions leave through such an exit too and count as conditional
 *    branches, as in callgrind.
 *  - an indirect branch is a superblock ending in a jump or call (Boring or
 *    Call) to a computed address; its target is that address.
 *  - returns are not simulated: a return stack predicts them.
 *
 * Data: one struct bp_site per branch instruction, in an OSet by guest
 * address, made when the instruction is first translated (with its object,
 * function and file address looked up then, while the object is mapped) and
 * passed to the helper calls as a constant.  At exit the sites are sorted by
 * object and function and written as "ob=", "fn=" blocks (names compressed
 * as "(id) name", each id used once) of per-instruction
 * lines "0xADDR Bc Bcm Bi Bim", addresses as in the object's file (what
 * callgrind writes); each function's block starts with its entry address
 * without costs, so that an importer voting for the load bias finds 0.
 * The predictor itself is bp_pred.c.
 */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_oset.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_machine.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
#include "pub_tool_deduppoolalloc.h"

#include "bp_pred.h"

struct bp_site {
	Addr addr;		/* key: the guest address */
	Addr vaddr;		/* the address in the object's file */
	Addr entry;		/* its function's entry, as a file address */
	const HChar *obj;	/* interned */
	const HChar *fn;	/* interned */
	ULong bc, bcm, bi, bim;
};

static const HChar *clo_out_file = "bpsim.out.%p";
static const HChar *clo_predictor = "tage";

static struct bp_pred *pred;
static OSet *sites;
static DedupPoolAlloc *names;

/* --- run time: called from the instrumented code ---------------------------- */

static VG_REGPARM(2) void bp_log_cond(struct bp_site *s, UWord taken)
{
	s->bc++;
	s->bcm += (ULong)bp_cond(pred, s->addr, (int)taken);
}

static VG_REGPARM(2) void bp_log_ind(struct bp_site *s, UWord target)
{
	s->bi++;
	s->bim += (ULong)bp_ind(pred, s->addr, target);
}

/* --- translation time ---------------------------------------------------------- */

static const HChar *intern(const HChar *s)
{
	return VG_(allocEltDedupPA)(names, VG_(strlen)(s) + 1, s);
}

/* "name+123" -> 123; 0 without an offset */
static Addr fn_offset(const HChar *name_off)
{
	const HChar *plus = VG_(strrchr)(name_off, '+');
	Addr off = 0;

	if (!plus || !plus[1])
		return 0;
	for (const HChar *d = plus + 1; *d; d++) {
		if (*d < '0' || *d > '9')
			return 0;
		off = off * 10 + (Addr)(*d - '0');
	}
	return off;
}

static struct bp_site *site_of(Addr addr)
{
	struct bp_site *s = VG_(OSetGen_Lookup)(sites, &addr);
	DiEpoch ep = VG_(current_DiEpoch)();
	DebugInfo *di;
	const HChar *name;
	PtrdiffT bias = 0;
	HChar buf[32];
	Addr off = 0;

	if (s)
		return s;
	s = VG_(OSetGen_AllocNode)(sites, sizeof(*s));
	VG_(memset)(s, 0, sizeof(*s));
	s->addr = addr;
	di = VG_(find_DebugInfo)(ep, addr);
	if (di)
		bias = VG_(DebugInfo_get_text_bias)(di);
	s->obj = intern(di ? VG_(DebugInfo_get_filename)(di) : "???");
	s->vaddr = addr - (Addr)bias;
	if (VG_(get_fnname_w_offset)(ep, addr, &name))
		off = fn_offset(name);
	if (VG_(get_fnname)(ep, addr, &name)) {
		s->fn = intern(name);
	} else {
		VG_(snprintf)(buf, sizeof(buf), "0x%08lx", s->vaddr);
		s->fn = intern(buf);
	}
	s->entry = s->vaddr - off;
	VG_(OSetGen_Insert)(sites, s);
	return s;
}

static void add_call(IRSB *out, const HChar *name, void *fn, struct bp_site *s, IRExpr *arg)
{
	IRExpr **argv = mkIRExprVec_2(mkIRExpr_HWord((HWord)s), arg);
	IRDirty *d = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), argv);

	addStmtToIRSB(out, IRStmt_Dirty(d));
}

/* How many exits follow the first instruction mark, and whether the last
 * instruction's last exit goes to the next instruction (callgrind's
 * CLG_(collectBlockInfo)). */
static void count_exits(const IRSB *sb, Int i, UInt *nexits, Bool *last_inverted)
{
	Addr ia = 0;
	UInt len = 0;
	Bool to_next = False;

	*nexits = 0;
	for (; i < sb->stmts_used; i++) {
		const IRStmt *st = sb->stmts[i];

		if (st->tag == Ist_IMark) {
			ia = st->Ist.IMark.addr;
			len = st->Ist.IMark.len;
			to_next = False;
		} else if (st->tag == Ist_Exit) {
			Addr dst = st->Ist.Exit.dst->tag == Ico_U64 ? st->Ist.Exit.dst->Ico.U64 :
				   st->Ist.Exit.dst->Ico.U32;

			to_next = dst == ia + len;
			(*nexits)++;
		}
	}
	*last_inverted = to_next;
}

static IRSB *bp_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
			   const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
			   IRType gWordTy, IRType hWordTy)
{
	IRSB *out;
	Int i = 0;
	Addr cia = 0;
	UInt nexits, exit_no = 0;
	Bool last_inverted, seen_imark = False;

	if (gWordTy != Ity_I64 || hWordTy != Ity_I64)
		VG_(tool_panic)("bpsim: 64-bit guests only");
	out = deepCopyIRSBExceptStmts(in);
	while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark)
		addStmtToIRSB(out, in->stmts[i++]);	/* the preamble, verbatim */
	count_exits(in, i, &nexits, &last_inverted);
	for (; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];

		if (st->tag == Ist_IMark) {
			cia = st->Ist.IMark.addr + (Addr)st->Ist.IMark.delta;
			seen_imark = True;
		} else if (st->tag == Ist_Exit) {
			IRJumpKind jk = st->Ist.Exit.jk;
			Bool inverted = ++exit_no == nexits && last_inverted;

			if (jk == Ijk_Boring || jk == Ijk_Call || jk == Ijk_Ret) {
				IRTemp g1 = newIRTemp(out->tyenv, Ity_I1);
				IRTemp gw = newIRTemp(out->tyenv, Ity_I64);
				IRExpr *taken;

				addStmtToIRSB(out, IRStmt_WrTmp(g1, st->Ist.Exit.guard));
				addStmtToIRSB(out, IRStmt_WrTmp(gw, IRExpr_Unop(Iop_1Uto64,
									  IRExpr_RdTmp(g1))));
				taken = IRExpr_RdTmp(gw);
				if (inverted) {
					IRTemp inv = newIRTemp(out->tyenv, Ity_I64);

					addStmtToIRSB(out, IRStmt_WrTmp(inv, IRExpr_Binop(
						Iop_Xor64, taken, IRExpr_Const(IRConst_U64(1)))));
					taken = IRExpr_RdTmp(inv);
				}
				add_call(out, "bp_log_cond", bp_log_cond, site_of(cia), taken);
			}
		}
		addStmtToIRSB(out, st);
	}
	if (seen_imark && (in->jumpkind == Ijk_Boring || in->jumpkind == Ijk_Call)) {
		tl_assert(in->next->tag == Iex_Const || in->next->tag == Iex_RdTmp);
		if (in->next->tag == Iex_RdTmp)
			add_call(out, "bp_log_ind", bp_log_ind, site_of(cia), in->next);
	}
	return out;
}

/* --- output ---------------------------------------------------------------------- */

static Int site_cmp(const void *x, const void *y)
{
	const struct bp_site *a = *(const struct bp_site *const *)x;
	const struct bp_site *b = *(const struct bp_site *const *)y;
	Int c = VG_(strcmp)(a->obj, b->obj);

	if (c)
		return c;
	if (a->entry != b->entry)
		return a->entry < b->entry ? -1 : 1;
	if ((c = VG_(strcmp)(a->fn, b->fn)))
		return c;
	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

static void write_cmd(VgFile *fp)
{
	VG_(fprintf)(fp, "cmd: %s", VG_(args_the_exename));
	for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++)
		VG_(fprintf)(fp, " %s", *(HChar **)VG_(indexXA)(VG_(args_for_client), i));
	VG_(fprintf)(fp, "\n");
}

/* Writes the sites, adds up the totals (Bc, Bcm, Bi, Bim). */
static void write_out(ULong tot[4])
{
	HChar *path = VG_(expand_file_name)("--bpsim-out-file", clo_out_file);
	UWord n = VG_(OSetGen_Size)(sites), k = 0;
	struct bp_site **all = VG_(malloc)("bp.out", (n ? n : 1) * sizeof(*all));
	const struct bp_site *prev = NULL;
	UInt nob = 0, nfn = 0;
	VgFile *fp;
	struct bp_site *s;

	VG_(OSetGen_ResetIter)(sites);
	while ((s = VG_(OSetGen_Next)(sites)))
		all[k++] = s;
	VG_(ssort)(all, n, sizeof(*all), site_cmp);
	fp = VG_(fopen)(path, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, VKI_S_IRUSR | VKI_S_IWUSR);
	if (!fp)
		VG_(umsg)("bpsim: cannot open %s: no output\n", path);
	if (fp) {
		VG_(fprintf)(fp, "# callgrind format\nversion: 1\n");
		VG_(fprintf)(fp, "creator: bpsim (dcpi bench/culprits/bpsim), predictor %s\n",
			     clo_predictor);
		VG_(fprintf)(fp, "pid: %d\n", VG_(getpid)());
		write_cmd(fp);
		VG_(fprintf)(fp, "positions: instr\nevents: Bc Bcm Bi Bim\n");
	}
	for (k = 0; k < n; k++) {
		s = all[k];
		tot[0] += s->bc;
		tot[1] += s->bcm;
		tot[2] += s->bi;
		tot[3] += s->bim;
		if (!fp || (!s->bc && !s->bi))
			continue;
		/* every block names its object and function afresh, with a new
		 * id: "(below main)" would otherwise read as a compressed name */
		if (!prev || prev->obj != s->obj)
			VG_(fprintf)(fp, "\nob=(%u) %s\n", ++nob, s->obj);
		if (!prev || prev->obj != s->obj || prev->fn != s->fn || prev->entry != s->entry)
			VG_(fprintf)(fp, "fn=(%u) %s\n0x%lx\n", ++nfn, s->fn, s->entry);
		if (s->bi)
			VG_(fprintf)(fp, "0x%lx %llu %llu %llu %llu\n", s->vaddr, s->bc, s->bcm,
				     s->bi, s->bim);
		else
			VG_(fprintf)(fp, "0x%lx %llu %llu\n", s->vaddr, s->bc, s->bcm);
		prev = s;
	}
	if (fp) {
		VG_(fprintf)(fp, "\ntotals: %llu %llu %llu %llu\n", tot[0], tot[1], tot[2], tot[3]);
		VG_(fclose)(fp);
	}
	VG_(free)(all);
	VG_(free)(path);
}

static void bp_fini(Int exitcode)
{
	ULong t[4] = { 0, 0, 0, 0 };
	ULong b, m;

	write_out(t);
	b = t[0] + t[2];
	m = t[1] + t[3];
	VG_(umsg)("\n");
	VG_(umsg)("Predictor:     %s, %llu bytes\n", clo_predictor,
		  (ULong)(bp_pred_bits(pred) / 8));
	VG_(umsg)("Branches:      %'llu  (%'llu cond + %'llu ind)\n", b, t[0], t[2]);
	VG_(umsg)("Mispredicts:   %'llu  (%'llu cond + %'llu ind)\n", m, t[1], t[3]);
	VG_(umsg)("Mispred rate:  %.2f%% (%.2f%% + %.2f%%)\n", b ? 100.0 * m / b : 0.0,
		  t[0] ? 100.0 * t[1] / t[0] : 0.0, t[2] ? 100.0 * t[3] / t[2] : 0.0);
}

/* --- options and set-up ------------------------------------------------------------- */

static Bool bp_process_cmd_line_option(const HChar *arg)
{
	if VG_STR_CLO(arg, "--bpsim-out-file", clo_out_file) {}
	else if VG_STR_CLO(arg, "--predictor", clo_predictor) {}
	else
		return False;
	return True;
}

static void bp_print_usage(void)
{
	VG_(printf)(
"    --predictor=tage|bimodal   the predictor simulated [tage]: TAGE with an\n"
"                               ITTAGE-like indirect predictor, or callgrind's\n"
"    --bpsim-out-file=<file>    output file name [bpsim.out.%%p]\n");
}

static void bp_print_debug_usage(void)
{
	VG_(printf)("    (none)\n");
}

static void bp_post_clo_init(void)
{
	Int kind = bp_kind_parse(clo_predictor);

	if (kind < 0)
		VG_(fmsg_bad_option)("--predictor", "unknown predictor '%s' (tage, bimodal)\n",
				     clo_predictor);
	pred = VG_(calloc)("bp.pred", 1, sizeof(*pred));
	if (bp_pred_init(pred, (enum bp_kind)kind))
		VG_(tool_panic)("bpsim: predictor set-up");
	sites = VG_(OSetGen_Create)(offsetof(struct bp_site, addr), NULL, VG_(malloc),
				    "bp.sites", VG_(free));
	names = VG_(newDedupPA)(16384, 1, VG_(malloc), "bp.names", VG_(free));
	/* callgrind's conditions: one guest branch at most ends each superblock */
	VG_(clo_vex_control).iropt_unroll_thresh = 0;
	VG_(clo_vex_control).guest_chase = False;
}

static void bp_pre_clo_init(void)
{
	VG_(details_name)("bpsim");
	VG_(details_version)(NULL);
	VG_(details_description)("a branch predictor simulator (dcpi)");
	VG_(details_copyright_author)("dcpi; predictors after Seznec's TAGE and ITTAGE");
	VG_(details_bug_reports_to)("the dcpi tree");
	VG_(details_avg_translation_sizeB)(300);
	VG_(basic_tool_funcs)(bp_post_clo_init, bp_instrument, bp_fini);
	VG_(needs_command_line_options)(bp_process_cmd_line_option, bp_print_usage,
					bp_print_debug_usage);
	VG_(clo_vex_control).iropt_unroll_thresh = 0;
	VG_(clo_vex_control).guest_chase = False;
}

VG_DETERMINE_INTERFACE_VERSION(bp_pre_clo_init)
