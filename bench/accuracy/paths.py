#!/usr/bin/env python3
"""Accuracy with and without path samples (docs/estimate.md), side by side: DCPI
figs. 8 and 9 against callgrind's exact counts, on the recordings of
bench/accuracy/run.sh.

usage: paths.py --bin BUILD_DIR --work WORKDIR [--sim STEPS_PER_SAMPLE]
                [--rules] [--holdout "bc sha256sum perl sort"] [--json OUT] WORKLOAD...

Per workload the same hot procedures as compare.py (90% of the samples, at
most 20, at least 30 samples each).  For each: dcpicalc --no-paths (window
ratios + global solver, as before) and dcpicalc with the epoch's path
samples (what `dcpi record` took).  --sim N replaces the recorded paths by
transitions simulated from callgrind's exact edge counts: every edge
execution seen with probability N x samples / instructions executed (N steps
per sample: 20 ms bursts of 32 steps at 10 kHz samples give 0.16), for
developing without a collector.  --sim figures are NOT results.
--rules "all" adds every scale rule (sum, quantile, loops, minloop, windows,
each with --no-regions and with --regions) to the table, or --rules "sum windows+reg"
the ones named.

Fig. 8: share of cpu-clock samples whose instruction's estimated executions
are within 5/10/15% of exact.  Fig. 9: share of exact edge executions whose
edge estimate is within 5/10/15%.
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

RULES = ["sum", "quantile", "loops", "minloop", "windows"]


def binom(rng, n, p):
    """Binomial(n, p) draw without numpy."""
    n = int(n)
    if n <= 0 or p <= 0:
        return 0
    if p >= 1:
        return n
    mean = n * p
    if n < 50:
        return sum(1 for _ in range(n) if rng.random() < p)
    if mean < 30:
        # Poisson (Knuth)
        lim, k, t = math.exp(-mean), 0, rng.random()
        while t > lim:
            k += 1
            t *= rng.random()
        return min(k, n)
    v = rng.gauss(mean, math.sqrt(mean * (1 - p)))
    return max(0, min(n, int(round(v))))


def sim_edges(est, ex_edges, ir, d, rate, rng, path):
    """Write a --path-edges file: exact edge counts thinned to rate."""
    insns = est["instructions"]
    blocks = est["blocks"]
    last = {}
    for b in blocks:
        lo, hi = int(b["start"], 16), int(b["end"], 16)
        for ins in insns:
            a = int(ins["address"], 16)
            if lo <= a < hi:
                last[b["start"]] = ins["offset"]
    inflow = {}
    lines = []
    for k, e in enumerate(est["edges"]):
        x = ex_edges.get(k)
        if e["kind"] == "exit-entry" or not x or e["from"] not in last:
            continue
        if e["to"] != "exit":
            inflow[e["to"]] = inflow.get(e["to"], 0) + x
        n = binom(rng, x, rate)
        if not n:
            continue
        src = "%x" % last[e["from"]]
        if e["kind"] in ("call-return", "return", "tailcall") or e["to"] == "exit":
            dst = "-"
        else:
            dst = "%x" % (int(e["to"], 16) + d)
        lines.append("%s %s %d" % (src, dst, n))
    entry = insns[0]["address"]
    n_entry = ir.get(int(entry, 16) + d, 0) - inflow.get(entry, 0)
    n = binom(rng, max(n_entry, 0), rate)
    if n:
        lines.append("- %x %d" % (int(entry, 16) + d, n))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def oracle_factor(est, ir):
    """The one factor per procedure (sample-weighted median of exact /
    estimate) that an oracle scale would apply: what the shape alone gives."""
    r = sorted((ir.get(i["offset"], 0) / i["executions"], i["samples"])
               for i in est["instructions"] if i["samples"] > 0 and i["executions"] > 0)
    tot, acc = sum(w for _, w in r), 0.0
    for v, w in r:
        acc += w
        if acc >= 0.5 * tot:
            return v
    return 1.0


def blocks_of(est):
    """Each sampled instruction's block (its JSON record), by address."""
    spans = [(int(b["start"], 16), int(b["end"], 16), b) for b in est["blocks"]]
    out = {}
    for ins in est["instructions"]:
        a = int(ins["address"], 16)
        for lo, hi, b in spans:
            if lo <= a < hi:
                out[ins["offset"]] = b
                break
    return out


RUN_TO_RUN = 1e-4  # two runs' counts of one block, relative: see cover()


def cover(est, ir, acc, accm, rows=None, tag=None):
    """Interval calibration: acc.add(0 inside / 1 outside, samples) per instruction against its
    block's stated 90% interval; a count measured (calls or executions counted: the interval a
    point) goes to accm instead, 0 where callgrind's count agrees; rows (if given) get one
    record per sampled block."""
    blk = blocks_of(est)
    seen = {}
    for ins in est["instructions"]:
        b = blk.get(ins["offset"])
        if ins["samples"] <= 0 or b is None or "interval" not in b:
            continue
        lo, hi = b["interval"]
        ex = ir.get(ins["offset"], 0)
        # callgrind's run is another run: a few executions apart where the
        # recording counted (perl's %ENV holds dcpi's variables, valgrind's
        # its own: hv_common 1,665,444 counted, 1,665,440 under callgrind)
        point = is_point((lo, hi))
        lo, hi = lo * (1 - RUN_TO_RUN), hi * (1 + RUN_TO_RUN)
        (accm if point else acc).add(0 if lo <= ex <= hi else 1, ins["samples"])
        if rows is not None:
            r = seen.get(b["start"])
            if r is None:
                r = dict(tag, start=b["start"], executions=b["executions"], interval=b["interval"],
                         confidence=b.get("confidence"), block_samples=b.get("samples"),
                         best_cycles=b.get("best_cycles"), class_source=b.get("class_source"),
                         source=b.get("source"), observed=b.get("observed"),
                         best_source=b.get("best_source"), exact=ex, weight=0)
                seen[b["start"]] = r
                rows.append(r)
            r["weight"] += ins["samples"]


def chance(weights):
    """Blocks of these sample weights, each inside its 90% interval or not with all its
    samples: how many equal blocks they weigh as (1 / sum (w / W)^2), and the standard
    deviation of the share inside if each interval is right 90% of the time (blocks
    independent): sqrt(0.09 sum w^2) / sum w."""
    W = float(sum(weights))
    s2 = sum(x * x for x in weights) / (W * W)
    return 1 / s2, math.sqrt(0.09 * s2)


def is_point(interval):
    """A measured count (calls or executions counted): its interval a point; cover() and
    bench/accuracy/coverage.py report those apart."""
    return interval[0] == interval[1] and interval[0] > 0


def lumpiness(rows, labels):
    """How far the interval calibration above may read from 90% by chance alone: a block is
    inside its interval or not, all its samples together, so with weights w the share inside
    of intervals each right 90% of the time has a standard deviation of
    sqrt(0.09 sum w^2) / sum w (blocks independent), and 1 / sum (w / W)^2 blocks count as
    many equal ones (bench/accuracy/coverage.py pools several recording sets)."""
    cells = []
    for lab in labels:
        w = [r["weight"] for r in rows if r["config"] == lab and r["weight"] > 0 and
             not is_point(r["interval"])]
        if not sum(w):
            continue
        n, sd = chance(w)
        cells.append("%s: %d blocks weigh as %.1f equal ones, so intervals right 90%% of the "
                     "time read 90 +- %.1f here (1 sd)" % (lab, len(w), n, 100 * sd))
    return "Chance alone: " + "; ".join(cells)


def score(est, ir, ex_edges, acc8, acc9, f=1.0):
    for ins in est["instructions"]:
        s = ins["samples"]
        if s > 0:
            acc8.add(compare.err_of(f * ins["executions"], ir.get(ins["offset"], 0)), s)
    for k, e in enumerate(est["edges"]):
        x = ex_edges.get(k)
        if e["kind"] == "exit-entry" or not x or x <= 0:
            continue
        acc9.add(compare.err_of(f * e["executions"], x), x)


def configs(rules):
    """rules: "" (none), "all", or names; NAME alone is one scale for the whole
    procedure (--no-regions), NAME+reg each hot outer loop its own (--regions,
    the default)."""
    out = [("no paths", ["--no-paths"]), ("paths", [])]
    names = []
    if rules == "all":
        names = [r + x for r in RULES for x in ("", "+reg")]
    elif rules:
        names = rules.split()
    for n in names:
        r = n.split("+")[0].replace("q", "quantile:") if n.startswith("q0") else n.split("+")[0]
        out.append((n, ["--scale", r] + (["--regions"] if n.endswith("+reg") else
                                         ["--no-regions"])))
    return out


def one_proc(a, wl, row, jumps, seed):
    """[(label, est json or None)], exact, ex_edges, info."""
    wdir = os.path.join(a.work, wl)
    img = row["image"]
    key = row.get("address") or row["name"]
    base = [a.bin + "/dcpicalc", key, "--image", img, "--json"]
    exact, _ = compare.run_json(base + ["--db", os.path.join(wdir, "cg"), "--event",
                                        "callgrind-Ir", "--method", "dcpi"])
    if exact is None:
        return None
    ir = {i["offset"]: i["samples"] for i in exact["instructions"]}
    if sum(ir.values()) == 0:
        return None
    rec = base + ["--db", os.path.join(wdir, a.rec)] + a.extra.split()
    win, _ = compare.run_json(rec + ["--no-paths"])
    if win is None or not win["instructions"]:
        return None
    insns = win["instructions"]
    d = insns[0]["offset"] - int(insns[0]["address"], 16)
    last_off = {}
    for b in win["blocks"]:
        lo, hi = int(b["start"], 16), int(b["end"], 16)
        for ins in insns:
            if lo <= int(ins["address"], 16) < hi:
                last_off[b["start"]] = ins["offset"]
    ex_edges = compare.edge_exact(last_off, win["edges"], jumps.get(img, {}), ir, d)
    extra = []
    tmp = None
    if a.sim:
        rate = min(1.0, a.sim * a.samples[wl] / max(a.insns[wl], 1))
        tmp = tempfile.NamedTemporaryFile("w", suffix=".paths.txt", delete=False)
        tmp.close()
        sim_edges(win, ex_edges, ir, d, rate, random.Random(seed), tmp.name)
        extra = ["--path-edges", tmp.name]
    res = [("no paths", win)]
    if a.prior is not None:
        extra = extra + ["--prior", a.prior]
    for label, opts in configs(a.rules)[1:]:
        est, _ = compare.run_json(rec + extra + opts)
        res.append((label, est))
    if tmp:
        os.unlink(tmp.name)
    return res, ir, ex_edges


def total_insns(a, wl):
    rows = compare.prof_rows(a.bin, os.path.join(a.work, wl, "cg"))
    return sum(r["samples"].get("callgrind-Ir", 0) for r in rows["procedures"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--sim", type=float, default=0)
    ap.add_argument("--rules", default="", help='"all" or names, e.g. "sum windows+reg"')
    ap.add_argument("--prior", default=None, help="--prior W for every dcpicalc with paths")
    ap.add_argument("--holdout", default="bc sha256sum perl sort")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rec", default="rec", help="the recording's directory in WORKDIR/WL")
    ap.add_argument("--extra", default="", help='more options for every dcpicalc on the '
                    'recording, e.g. "--no-calls"')
    ap.add_argument("--json")
    ap.add_argument("workloads", nargs="+")
    a = ap.parse_args()
    from collections import defaultdict
    acc = defaultdict(compare.Acc)
    a.samples, a.insns = {}, {}
    todo = []
    for wl in a.workloads:
        wdir = os.path.join(a.work, wl)
        rows = compare.prof_rows(a.bin, os.path.join(wdir, a.rec))
        procs = [r for r in rows["procedures"] if r["samples"].get("cpu-clock", 0) > 0]
        total = sum(r["samples"].get("cpu-clock", 0) for r in procs)
        a.samples[wl] = total
        if a.sim:
            a.insns[wl] = total_insns(a, wl)
        procs.sort(key=lambda r: -r["samples"].get("cpu-clock", 0))
        cov = 0
        jumps = compare.read_jumps(os.path.join(wdir, "cg"))
        for r in procs[:20]:
            s = r["samples"].get("cpu-clock", 0)
            if cov >= 0.9 * total or s < 30:
                break
            cov += s
            todo.append((wl, r, jumps))
    factors, block_rows = [], []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = [ex.submit(one_proc, a, wl, r, j, 1000 + k) for k, (wl, r, j) in enumerate(todo)]
        for (wl, r, _), f in zip(todo, futs):
            out = f.result()
            if out is None:
                continue
            res, ir, ex_edges = out
            hold = "holdout" if wl in a.holdout.split() else "tuned"
            for label, est in res:
                if est is None:
                    continue
                f = oracle_factor(est, ir)
                factors.append({"workload": wl, "procedure": r["name"], "config": label,
                                "samples": r["samples"].get("cpu-clock", 0),
                                "oracle_factor": f,
                                "transitions": (est.get("paths") or {}).get("transitions", 0)})
                for key in (wl, hold, "ALL"):
                    score(est, ir, ex_edges, acc[(key, label, 8)], acc[(key, label, 9)])
                    score(est, ir, ex_edges, acc[(key, label + "@oracle", 8)],
                          acc[(key, label + "@oracle", 9)], f)
                for key in (wl, hold, "ALL"):
                    cover(est, ir, acc[(key, label, "cover")], acc[(key, label, "measured")],
                          block_rows if key == "ALL" else None,
                          {"workload": wl, "procedure": r["name"], "config": label,
                           "cps": est.get("cycles_per_sample")})
                used = est.get("paths") and est["paths"].get("used")
                acc[(wl, label, "used")].add(0 if used else 1, r["samples"].get("cpu-clock", 0))
    labels = [lab for lab, _ in configs(a.rules)]
    labels += [lab + "@oracle" for lab in labels[:2]]
    P = print
    P("== Path samples: fig. 8 (samples) and fig. 9 (edges) within 5/10/15%%%s ==" %
      ("  [SIMULATED paths: --sim %g, not a result]" % a.sim if a.sim else ""))
    P("done when: >= 73 / 87 / 92% of samples within 5/10/15%, edges >= 80% within 10%")
    P("%-10s | " % "workload" + " | ".join("%-34s" % lab for lab in labels))
    P("%-10s | " % "" + " | ".join("%-34s" % "insns 5/10/15       edges 10" for _ in labels))
    keys = a.workloads + ["tuned", "holdout", "ALL"]
    out = {}
    for wl in keys:
        cells = []
        for lab in labels:
            p8, p9 = acc[(wl, lab, 8)].pct(), acc[(wl, lab, 9)].pct()
            out.setdefault(wl, {})[lab] = {"insns": p8, "edges": p9}
            cells.append("%s  %5.1f" % (compare.fmt3(p8), p9[1]) if acc[(wl, lab, 8)].w
                         else "%-34s" % "-")
        P("%-10s | " % wl + " | ".join("%-34s" % c for c in cells))
    P("Interval calibration: share of samples whose exact count lies inside the block's "
      "stated 90% interval (right as often as it claims: 85-95%), over the blocks whose count "
      "is estimated; then the samples on blocks whose count was measured (calls or executions "
      "counted: a point), and the share of those callgrind's count agrees with (to 0.01%: "
      "another run)")
    for wl in keys:
        cells = []
        for lab in labels[:len(configs(a.rules))]:
            c, m = acc[(wl, lab, "cover")], acc[(wl, lab, "measured")]
            inside = 100.0 * c.within[0] / c.w if c.w else float("nan")
            agree = 100.0 * m.within[0] / m.w if m.w else float("nan")
            share = 100.0 * m.w / (m.w + c.w) if m.w + c.w else float("nan")
            o = out.setdefault(wl, {}).setdefault(lab, {})
            o["inside"], o["measured_share"], o["measured_agree"] = inside, share, agree
            cells.append("%-34s" % (("%5.1f%% of %d" % (inside, c.w) if c.w else "-") +
                                    ("; %4.1f%% measured, %5.1f%% agree" % (share, agree)
                                     if m.w else "")))
        P("%-10s | " % wl + " | ".join(cells))
    P(lumpiness(block_rows, labels[:len(configs(a.rules))]))
    P("@oracle: each procedure's counts times the one factor an oracle would choose (the "
      "median of exact / estimate over its samples): the shape alone, the scale perfect")
    P("tuned on: %s; not tuned on (holdout): %s" % (
        " ".join(w for w in a.workloads if w not in a.holdout.split()),
        " ".join(w for w in a.workloads if w in a.holdout.split())))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"figures": out, "procedures": factors, "intervals": block_rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
