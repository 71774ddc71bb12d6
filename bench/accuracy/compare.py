#!/usr/bin/env python3
"""Accuracy of dcpicalc's frequency estimates against callgrind's exact counts
(DCPI paper sec. 6.2, figs. 8 and 9).  Driven by bench/accuracy/run.sh.

usage: compare.py --bin BUILD_DIR --work WORKDIR [--cover 0.9] [--max-procs 20]
                  [--min-samples 30] [--json OUT] WORKLOAD...

Each WORKDIR/WORKLOAD holds rec/ (dcpi record -e cpu-clock, calibrated) and
cg/ (dcpi import of callgrind --dump-instr=yes --collect-jumps=yes of the same
command and input).  For each hot procedure (covering --cover of the samples,
at most --max-procs, at least --min-samples each):

  exact executions per instruction = callgrind-Ir at the same file offset
      (dcpicalc --event callgrind-Ir on the cg db: its "samples" column);
  exact edge executions from the epoch's <image>.callgrind-jumps: a jump edge
      is its record; the one non-jump edge out of a block (fall-through,
      not-taken, call-return, return) gets Ir(last instruction) minus the
      block's jump records; edges that cannot be derived that way are skipped
      and counted.

Figures: fig. 8 = share of CYCLES (cpu-clock) samples whose instruction's
estimated executions are within +-5/10/15% of exact, histogram of the error;
fig. 9 = the same for edges weighted by exact edge executions.
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
from collections import defaultdict

PAPER = "paper (Alpha, dcpix): insns 73 / 87 / 92 % within 5/10/15%; edges 58% within 10%"
BUCKETS = [(-1e99, -0.45, "<-45"), (-0.45, -0.30, "-45..-30"), (-0.30, -0.15, "-30..-15"),
           (-0.15, -0.05, "-15..-5"), (-0.05, 0.05, "-5..+5"), (0.05, 0.15, "+5..+15"),
           (0.15, 0.30, "+15..+30"), (0.30, 0.45, "+30..+45"), (0.45, 1e99, ">+45")]
CONFS = ["none", "low", "medium", "high"]
# (label, dcpicalc options); the first two are the main comparison
# (window ratios only: paths.py prints the figures with path samples)
CONFIGS = [("dcpi", ["--method", "dcpi", "--no-paths"]),
           ("global", ["--method", "global", "--no-paths"]),
           ("dcpi/insn", ["--method", "dcpi", "--window", "insn", "--no-paths"]),
           ("dcpi/skid", ["--method", "dcpi", "--window", "skid", "--no-paths"]),
           ("global/skid", ["--method", "global", "--window", "skid", "--no-paths"])]
MAIN = ["dcpi", "global"]
# callgrind simulated event -> (cycles charged per event, cause); rough costs
SIM_COST = {"D1mr": (5, "cache"), "D1mw": (2, "cache"), "DLmr": (80, "cache"),
            "DLmw": (20, "cache"), "I1mr": (5, "cache"), "Bcm": (15, "branch"),
            "Bim": (15, "branch")}

# categories of large errors (|err| > 15%), in the order they are tested
CATS = [
    ("no-exact", "procedure never ran under callgrind (ifunc variant / run differs)"),
    ("calc-failed", "dcpicalc failed or timed out on the procedure (no estimate at all)"),
    ("exact-0", "samples on instructions callgrind never executed (skid past a branch)"),
    ("missing-edges", "procedure CFG has missing edges (indirect jumps, unknown targets)"),
    ("no-estimate", "block got no estimate (class without samples, not propagated)"),
    ("few-samples", "class has < 20 samples (sampling noise)"),
    ("stalls-cache", "every window > 1.15x best case; simulated cache misses explain >= 15% of M"),
    ("stalls-branch", "every window > 1.15x best case; simulated mispredicts explain >= 15% of M"),
    ("stalls-everywhere", "every window > 1.15x best case, not explained by simulated misses"),
    ("model-overstates", "every window runs < 0.87x the model's M (model too slow / skid out)"),
    ("propagated", "estimate came from flow propagation / solver, class itself was fine"),
    ("cluster-choice", "a window near best case existed; the cluster picked another (skid/noise)"),
]


TIMEOUT = 30


def cat_add(cats, label, wl, cat, w):
    cats[label][cat] += w
    cats[(label, wl)][cat] += w


def run_json(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, ["timeout: dcpicalc ran more than %d s" % TIMEOUT]
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] or ["exit %d" % p.returncode]
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, ["bad json: %s" % e]


def prof_rows(binp, db):
    p = subprocess.run([binp + "/dcpiprof", "--db", db, "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, check=True)
    return json.loads(p.stdout)


def read_jumps(cgdb):
    """{image path: {from_off: [(to_off, taken, executed, kind)]}} of the newest epoch."""
    out = {}
    epochs = sorted(d for d in os.listdir(cgdb) if os.path.isdir(os.path.join(cgdb, d)))
    if not epochs:
        return out
    for f in glob.glob(os.path.join(cgdb, epochs[-1], "*.callgrind-jumps")):
        img, recs = None, {}
        with open(f) as fh:
            for line in fh:
                if line.startswith("# image "):
                    img = line[8:].strip()
                    continue
                if line.startswith("#") or not line.strip():
                    continue
                a = line.split()
                recs.setdefault(int(a[0], 16), []).append(
                    (int(a[1], 16), int(a[2]), int(a[3]), a[4]))
        if img:
            out[img] = recs
    return out


def err_of(est, exact):
    if exact > 0:
        return (est - exact) / exact
    return 0.0 if est <= 0 else math.inf


def bucket(e):
    for lo, hi, name in BUCKETS:
        if lo <= e < hi or (hi >= 1e99 and e >= lo):
            return name
    return BUCKETS[-1][2]


class Acc:
    """Weighted error distribution."""

    def __init__(self):
        self.w = 0.0
        self.within = [0.0, 0.0, 0.0]
        self.hist = {b[2]: 0.0 for b in BUCKETS}
        self.fine = {}

    def add(self, err, w):
        if w <= 0:
            return
        self.w += w
        for k, t in enumerate((0.05, 0.10, 0.15)):
            if abs(err) <= t + 1e-12:
                self.within[k] += w
        self.hist[bucket(err)] += w
        fb = max(-50, min(50, int(math.floor(err * 20)) * 5)) if math.isfinite(err) else 50
        self.fine[fb] = self.fine.get(fb, 0.0) + w

    def pct(self):
        return [100.0 * x / self.w if self.w else float("nan") for x in self.within]

    def hpct(self):
        return [100.0 * self.hist[b[2]] / self.w if self.w else float("nan") for b in BUCKETS]


def edge_exact(blocks_last, edges, jumps, ir, d):
    """Exact count per estimated edge index, or None when it cannot be derived.
    blocks_last: block start address -> last instruction offset."""
    by_src = {}
    for k, e in enumerate(edges):
        if e["kind"] == "exit-entry":
            continue
        by_src.setdefault(e["from"], []).append(k)
    indeg = {}
    for e in edges:
        if e["kind"] != "exit-entry":
            indeg[e["to"]] = indeg.get(e["to"], 0) + 1
    res = {}
    for src, ks in by_src.items():
        last = blocks_last.get(src)
        if last is None:
            continue
        recs = jumps.get(last, [])
        rec_to = {}
        for to, taken, _ex, _kind in recs:
            rec_to[to] = rec_to.get(to, 0) + taken
        rest = ir.get(last, 0) - sum(rec_to.values())
        left = []
        for k in ks:
            e = edges[k]
            to = e.get("to")
            to_off = None
            if isinstance(to, str) and to.startswith("0x"):
                to_off = int(to, 16) + d
            if to_off is not None and to_off in rec_to and e["kind"] not in ("return",):
                res[k] = rec_to.pop(to_off)
            elif e["kind"] in ("taken", "jump", "table") and to_off is not None:
                # callgrind writes no record for a jump never taken
                res[k] = 0
            else:
                left.append(k)
        if len(left) == 1 and edges[left[0]]["kind"] == "call-return" and \
                indeg.get(edges[left[0]]["to"], 0) == 1:
            # callgrind can count a call instruction twice (PLT/return
            # re-entry); the return point's own count is the edge's
            res[left[0]] = ir.get(int(edges[left[0]]["to"], 16) + d, 0)
        elif len(left) == 1:
            res[left[0]] = max(0, rest)
        elif len(left) > 1 and rest <= 0:
            for k in left:
                res[k] = 0
        else:
            for k in left:
                res[k] = None
    return res


# samples whose exact count lies inside the block's stated 90% interval:
# (label, workload or "all") -> [samples, inside]
COVER = defaultdict(lambda: [0.0, 0.0])
# one row per (method, block with samples): what the interval rested on and where the exact count
# fell (accuracy.json "intervals"; for studying the interval, never read by the tools)
BLOCK_ROWS = []


def analyse_proc(binp, wdir, row, jumps_by_img, stats, per_wl, overall, per_conf, cats, procs_out,
                 wl):
    name, img = row["name"], row["image"]
    addr = row.get("address")
    key = addr if addr else name
    base = [binp + "/dcpicalc", key, "--image", img, "--json"]
    exact, err = run_json(base + ["--db", os.path.join(wdir, "cg"), "--event", "callgrind-Ir",
                                  "--method", "dcpi"])
    S = row["samples"].get("cpu-clock", 0)
    pr = {"workload": wl, "procedure": name, "image": img, "samples": S}
    procs_out.append(pr)
    if exact is None:
        pr["note"] = "no exact counts: " + " ".join(err)
        cat = "calc-failed" if "timeout" in " ".join(err) else "no-exact"
        for c in MAIN:
            cat_add(cats, c, wl, cat, S)
            cat_add(cats, c, wl, "_large", S)
            cat_add(cats, c, wl, "_total", S)
        stats["no_exact_samples"] += S
        return
    ir = {i["offset"]: i["samples"] for i in exact["instructions"]}
    if sum(ir.values()) == 0:
        pr["note"] = "callgrind never executed it"
        for c in MAIN:
            cat_add(cats, c, wl, "no-exact", S)
            cat_add(cats, c, wl, "_large", S)
            cat_add(cats, c, wl, "_total", S)
        stats["no_exact_samples"] += S
        return
    jumps = jumps_by_img.get(img, {})
    # simulated miss / mispredict counts (callgrind --cache-sim --branch-sim)
    sim = {}
    for ev in SIM_COST:
        j, _ = run_json(base + ["--db", os.path.join(wdir, "cg"), "--event", "callgrind-" + ev,
                                "--method", "dcpi"])
        if j:
            sim[ev] = {i["offset"]: i["samples"] for i in j["instructions"]}
    for label, opts in CONFIGS:
        est, err = run_json(base + ["--db", os.path.join(wdir, "rec")] + opts)
        if est is None:
            pr.setdefault("errors", {})[label] = " ".join(err)
            pr["note"] = "%s: %s" % (label, " ".join(err))
            if label in MAIN:
                cat_add(cats, label, wl, "calc-failed", S)
                cat_add(cats, label, wl, "_large", S)
                cat_add(cats, label, wl, "_total", S)
            continue
        insns = est["instructions"]
        if not insns:
            continue
        d = insns[0]["offset"] - int(insns[0]["address"], 16)
        cps = est.get("cycles_per_sample") or 1.0
        # block of each instruction, block data
        blocks = est["blocks"]
        starts = [int(b["start"], 16) for b in blocks]
        blk_of = {}
        order = sorted(range(len(blocks)), key=lambda k: starts[k])
        last_off = {}
        for k in order:
            b = blocks[k]
            lo, hi = int(b["start"], 16), int(b["end"], 16)
            for ins in insns:
                a = int(ins["address"], 16)
                if lo <= a < hi:
                    blk_of[ins["offset"]] = k
                    last_off[b["start"]] = ins["offset"]
        # simulated stall cycles per execution of each block, split by cause
        blk_stall = {}
        for off, k in blk_of.items():
            for ev, (cyc, cause) in SIM_COST.items():
                v = sim.get(ev, {}).get(off, 0)
                if v:
                    st = blk_stall.setdefault(k, {})
                    st[cause] = st.get(cause, 0.0) + v * cyc
        # per class: min over its sampled blocks of stall / M (0 when no data)
        cls_stall = {}
        for k, b in enumerate(blocks):
            ex_b = ir.get(int(b["start"], 16) + d, 0)
            if ex_b <= 0 or b.get("samples", 0) <= 0 or b.get("best_cycles", 0) <= 0:
                continue
            st = blk_stall.get(k, {})
            tot = sum(st.values()) / ex_b / b["best_cycles"]
            cause = max(st, key=st.get) if st else "none"
            c = b.get("class", -1)
            if c not in cls_stall or tot < cls_stall[c][0]:
                cls_stall[c] = (tot, cause)
        # per-class true ratios r_b = S_b * cps / (M_b * exact_b)
        cls_r, cls_S = {}, {}
        for k, b in enumerate(blocks):
            first = int(b["start"], 16) + d
            ex_b = ir.get(first, 0)
            c = b.get("class", -1)
            cls_S[c] = cls_S.get(c, 0) + b.get("samples", 0)
            if ex_b > 0 and b.get("best_cycles", 0) > 0 and b.get("samples", 0) > 0:
                cls_r.setdefault(c, []).append(b["samples"] * cps / (b["best_cycles"] * ex_b))
        if label in MAIN:
            for k, b in enumerate(blocks):
                bs = sum(i["samples"] for i in insns if blk_of.get(i["offset"]) == k)
                if bs > 0 and "interval" in b:
                    row = {kk: b.get(kk) for kk in ("start", "executions", "interval",
                                                    "confidence", "samples", "best_cycles",
                                                    "actual_cpi", "best_cpi", "class",
                                                    "class_source", "source", "observed",
                                                    "best_source")}
                    row.update(method=label, workload=wl, procedure=name, weight=bs,
                               exact=ir.get(int(b["start"], 16) + d, 0), cps=cps)
                    BLOCK_ROWS.append(row)
        acc_p = Acc()
        for ins in insns:
            s = ins["samples"]
            if s <= 0:
                continue
            ex = ir.get(ins["offset"], 0)
            e = err_of(ins["executions"], ex)
            acc_p.add(e, s)
            kb = blk_of.get(ins["offset"])
            if label in MAIN and kb is not None and "interval" in blocks[kb]:
                lo, hi = blocks[kb]["interval"]
                COVER[(label, "all")][0] += s
                COVER[(label, wl)][0] += s
                if lo <= ex <= hi:
                    COVER[(label, "all")][1] += s
                    COVER[(label, wl)][1] += s
            if label in MAIN:
                per_wl[(wl, label)].add(e, s)
                overall[label].add(e, s)
                per_conf[(label, ins.get("confidence", "none"))].add(e, s)
                cat_add(cats, label, wl, "_total", s)
                if abs(e) > 0.15:
                    cat_add(cats, label, wl, "_large", s)
                    k = blk_of.get(ins["offset"])
                    b = blocks[k] if k is not None else {}
                    c = b.get("class", -1)
                    rs = cls_r.get(c, [])
                    if ex == 0:
                        cat = "exact-0"
                    elif est.get("missing_edges"):
                        cat = "missing-edges"
                    elif ins["executions"] <= 0 or b.get("class_source", b.get("source")) == "none":
                        cat = "no-estimate"
                    elif b.get("class_source", b.get("source")) in ("propagated", "solver") and rs and \
                            min(rs) <= 1.15 and max(rs) >= 0.87:
                        cat = "propagated"
                    elif cls_S.get(c, 0) < 20:
                        cat = "few-samples"
                    elif rs and min(rs) > 1.15:
                        st = cls_stall.get(c, (0.0, "none"))
                        cat = "stalls-everywhere"
                        if st[0] >= 0.15:
                            cat = "stalls-" + st[1]
                    elif rs and max(rs) < 0.87:
                        cat = "model-overstates"
                    else:
                        cat = "cluster-choice"
                    cat_add(cats, label, wl, cat, s)
                    # instruction-type view: mnemonic of the sampled instruction
                    mn = ins.get("text", "?").split()[0] if ins.get("text") else "?"
                    cats[label + "/mn"][mn] = cats[label + "/mn"].get(mn, 0) + s
        pr[label] = acc_p.pct()
        # edges
        ex_edges = edge_exact(last_off, est["edges"], jumps, ir, d)
        for k, e in enumerate(est["edges"]):
            if e["kind"] == "exit-entry":
                continue
            x = ex_edges.get(k)
            if label == "dcpi":
                stats["edges_total"] += 1
            if x is None:
                if label == "dcpi":
                    stats["edges_skipped"] += 1
                continue
            if x <= 0:
                continue
            ee = err_of(e["executions"], x)
            if label in MAIN:
                per_wl[(wl, label, "edge")].add(ee, x)
                overall[(label, "edge")].add(ee, x)
                per_conf[(label, "edge", e.get("confidence", "none"))].add(ee, x)
            else:
                per_wl[(wl, label, "edge")].add(ee, x)
        if label == "dcpi":
            # self-check of the derived exact edges: in-flow of each block
            # (not the entry) vs callgrind's count of its first instruction
            inflow = {}
            for k, e in enumerate(est["edges"]):
                if e["kind"] != "exit-entry" and ex_edges.get(k) is not None:
                    inflow[e["to"]] = inflow.get(e["to"], 0) + ex_edges[k]
            entry = insns[0]["address"]
            for b in blocks:
                if b["start"] == entry or b["start"] not in inflow:
                    continue
                f = ir.get(int(b["start"], 16) + d, 0)
                stats["flow_blocks"] += 1
                if abs(inflow[b["start"]] - f) > 0.001 * max(f, 1):
                    stats["flow_bad"] += 1


def fmt3(p):
    return " / ".join("%5.1f" % x if x == x else "  -  " for x in p)


def arg_parser():
    """The options compare.py and ceiling.py share: where the build and the
    recordings are, and which procedures of a recording are compared."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cover", type=float, default=0.9)
    ap.add_argument("--max-procs", type=int, default=20)
    ap.add_argument("--min-samples", type=int, default=30)
    return ap


def main():
    ap = arg_parser()
    ap.add_argument("--json")
    ap.add_argument("workloads", nargs="+")
    a = ap.parse_args()

    from collections import defaultdict
    per_wl = defaultdict(Acc)
    overall = defaultdict(Acc)
    per_conf = defaultdict(Acc)
    cats = defaultdict(lambda: defaultdict(float))
    stats = defaultdict(float)
    procs_out = []
    wl_info = {}
    for wl in a.workloads:
        wdir = os.path.join(a.work, wl)
        rows = prof_rows(a.bin, os.path.join(wdir, "rec"))
        jumps = read_jumps(os.path.join(wdir, "cg"))
        procs = [r for r in rows["procedures"] if r["samples"].get("cpu-clock", 0) > 0]
        total = sum(r["samples"].get("cpu-clock", 0) for r in procs)
        procs.sort(key=lambda r: -r["samples"].get("cpu-clock", 0))
        chosen, cov = [], 0
        for r in procs:
            s = r["samples"].get("cpu-clock", 0)
            if cov >= a.cover * total or len(chosen) >= a.max_procs or s < a.min_samples:
                break
            chosen.append(r)
            cov += s
        wl_info[wl] = (total, cov, len(chosen))
        for r in chosen:
            analyse_proc(a.bin, wdir, r, jumps, stats, per_wl, overall, per_conf, cats,
                         procs_out, wl)

    P = print
    P("== DCPI sec. 6.2 accuracy: cpu-clock -c 100000 vs callgrind exact counts ==")
    P(PAPER)
    P("")
    P("Fig. 8 -- instructions, share of CYCLES samples within +-5 / 10 / 15 %")
    P("%-10s %7s %6s %4s | %-23s | %-23s" % ("workload", "samples", "cover", "proc",
                                            "dcpi (local prop.)", "global solver"))
    for wl in a.workloads:
        t, c, n = wl_info[wl]
        P("%-10s %7d %5.1f%% %4d | %s | %s" % (wl, t, 100.0 * c / t if t else 0, n,
                                              fmt3(per_wl[(wl, "dcpi")].pct()),
                                              fmt3(per_wl[(wl, "global")].pct())))
    P("%-10s %7d %6s %4s | %s | %s" % ("OVERALL", overall["dcpi"].w, "", "",
                                      fmt3(overall["dcpi"].pct()),
                                      fmt3(overall["global"].pct())))
    P("")
    P("Fig. 8 by confidence (share of all compared samples in the level; within 5/10/15%)")
    for cf in CONFS:
        row = []
        for m in MAIN:
            x = per_conf[(m, cf)]
            share = 100.0 * x.w / overall[m].w if overall[m].w else 0
            row.append("%5.1f%% of samples: %s" % (share, fmt3(x.pct())))
        P("%-7s | dcpi %s | global %s" % (cf, row[0], row[1]))
    P("")
    P("Interval calibration: share of samples whose exact count lies inside the stated")
    P("90% interval (estimate/interval.c; right as often as it claims: 85-95%)")
    for key in ["all"] + list(a.workloads):
        row = []
        for m in MAIN:
            n, inside = COVER[(m, key)]
            row.append("%5.1f%% of %7d" % (100.0 * inside / n if n else float("nan"), n))
        P("%-10s | dcpi %s | global %s" % (key[:10], row[0], row[1]))
    P("")
    P("Fig. 8 histogram of errors (% of samples), overall")
    P("%-7s " % "" + " ".join("%8s" % b[2] for b in BUCKETS))
    for m in MAIN:
        P("%-7s " % m + " ".join("%8.1f" % x for x in overall[m].hpct()))
    for wl in a.workloads:
        for m in MAIN:
            P("%-7s " % (wl[:7]) + " ".join("%8.1f" % x for x in per_wl[(wl, m)].hpct()) +
              "  " + m)
    P("")
    P("Fig. 9 -- edges, share of exact edge executions within +-5 / 10 / 15 %")
    P("%-10s | %-23s | %-23s" % ("workload", "dcpi (local prop.)", "global solver"))
    for wl in a.workloads:
        P("%-10s | %s | %s" % (wl, fmt3(per_wl[(wl, "dcpi", "edge")].pct()),
                              fmt3(per_wl[(wl, "global", "edge")].pct())))
    P("%-10s | %s | %s" % ("OVERALL", fmt3(overall[("dcpi", "edge")].pct()),
                          fmt3(overall[("global", "edge")].pct())))
    for cf in CONFS:
        row = []
        for m in MAIN:
            x = per_conf[(m, "edge", cf)]
            tw = overall[(m, "edge")].w
            row.append("%5.1f%%: %s" % (100.0 * x.w / tw if tw else 0, fmt3(x.pct())))
        P("  conf %-7s | dcpi %s | global %s" % (cf, row[0], row[1]))
    P("Fig. 9 histogram of edge errors (% of edge executions), overall")
    P("%-7s " % "" + " ".join("%8s" % b[2] for b in BUCKETS))
    for m in MAIN:
        P("%-7s " % m + " ".join("%8.1f" % x for x in overall[(m, "edge")].hpct()))
    P("edges: %d compared per method, %d (%.1f%%) skipped (exact count not derivable)" % (
        stats["edges_total"] - stats["edges_skipped"], stats["edges_skipped"],
        100.0 * stats["edges_skipped"] / stats["edges_total"] if stats["edges_total"] else 0))
    P("exact-edge self-check: %d of %d non-entry blocks have derived in-flow != exact count" % (
        stats["flow_bad"], stats["flow_blocks"]))
    P("")
    P("Windows (insn = paper's issue points, skid = block windows with skid hand-back):")
    P("%-10s | %-23s | %-23s | %-23s | %-23s" % ("workload", "dcpi/block", "dcpi/insn",
                                               "dcpi/skid", "global/skid"))
    for wl in a.workloads:
        # recompute from per-proc shares weighted by samples
        out = []
        for lab in ("dcpi", "dcpi/insn", "dcpi/skid", "global/skid"):
            w = [0.0, 0.0, 0.0]
            tot = 0.0
            for pr in procs_out:
                if pr["workload"] == wl and lab in pr:
                    tot += pr["samples"]
                    for k in range(3):
                        w[k] += pr[lab][k] * pr["samples"] / 100.0 if pr[lab][k] == pr[lab][k] \
                            else 0
            out.append(fmt3([100.0 * x / tot for x in w]) if tot else "       -")
        P("%-10s | %s" % (wl, " | ".join(out)))
    P("")
    P("What limits the rest: samples with |error| > 15%, by category (% of compared samples)")
    for m in MAIN:
        t = cats[m]["_total"]
        P("  %s: %.1f%% of %d samples off by more than 15%%" % (
            m, 100.0 * cats[m]["_large"] / t if t else 0, t))
        for c, desc in CATS:
            v = cats[m][c]
            if v:
                P("    %-18s %5.1f%%  %s" % (c, 100.0 * v / t, desc))
        mn = sorted(cats[m + "/mn"].items(), key=lambda kv: -kv[1])[:8]
        P("    top mnemonics of those samples: " +
          ", ".join("%s %.1f%%" % (k, 100.0 * v / t) for k, v in mn))
    P("")
    P("Large errors (|err| > 15%) per workload and category, % of the workload's compared samples:")
    short = [c for c, _ in CATS]
    P("%-17s %6s " % ("workload/method", ">15%") + " ".join("%8s" % c[:8] for c in short))
    for wl in a.workloads:
        for m in MAIN:
            cw = cats[(m, wl)]
            t = cw["_total"]
            if not t:
                continue
            P("%-17s %6.1f " % (wl + " " + m, 100.0 * cw["_large"] / t) +
              " ".join("%8.1f" % (100.0 * cw[c] / t) for c in short))
    P("")
    P("Per procedure (samples; within 5/10/15%):")
    for pr in procs_out:
        P("  %-9s %-34s %6d  dcpi %s  global %s%s" % (
            pr["workload"][:9], pr["procedure"][:34], pr["samples"],
            fmt3(pr.get("dcpi", [float("nan")] * 3)), fmt3(pr.get("global", [float("nan")] * 3)),
            ("  [" + pr["note"] + "]") if "note" in pr else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"procedures": procs_out,
                       "overall": {m: overall[m].pct() for m in MAIN},
                       "edges": {m: overall[(m, "edge")].pct() for m in MAIN},
                       "categories": {m: dict(cats[m]) for m in MAIN},
                       "stats": dict(stats), "intervals": BLOCK_ROWS}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
