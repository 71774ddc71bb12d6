#!/usr/bin/env python3
"""How far can window ratios and flow go on these recordings?  Upper bounds on
fig. 8 for any estimator built from this machine's cpu-clock samples, the
pipeline model's best case and the CFG's flow constraints -- computed with
the exact counts as an oracle, so no real estimator can do better with the
same inputs.  Driven by bench/accuracy/run.sh after compare.py.

usage: ceiling.py --bin BUILD_DIR --work WORKDIR [--cover 0.9] [--max-procs 20]
                  [--min-samples 30] WORKLOAD...

Per hot procedure (the same selection as compare.py), from dcpicalc --json
(--method dcpi: block samples S, best-case cycles M, class, executions) and
the exact counts (callgrind-Ir on the cg database):

  window    a sample counts as reachable when SOME block of its
            cycle-equivalence class has a window estimate S x cps / M within
            15% of the exact count: the share a perfect choice of window per
            class could get without flow.
  flow      the classes with such a window are pinned at that window's
            estimate (weight sqrt(samples)), every other class is free
            (a pull of 1e-3 to its own estimate), and the edge counts are
            solved for by non-negative least squares with flow conserved at
            every block: perfect window choice AND perfect grading, then
            flow fills in what it determines.  Scored like fig. 8.
  flow+exact the same with the pinned classes at their EXACT count: what
            flow alone can carry from every class that has a usable window.

Needs scipy (Debian: python3-scipy); without it only `window` is printed.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import arg_parser, prof_rows, run_json  # noqa: E402

try:
    import numpy as np
    from scipy.optimize import lsq_linear
    from scipy.sparse import lil_matrix
    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False

TOL = 0.15
MAX_EDGES = 6000


def load(binp, wdir, row):
    key = row.get("address") or row["name"]
    base = [binp + "/dcpicalc", key, "--image", row["image"], "--json", "--all"]
    est, _ = run_json(base + ["--db", os.path.join(wdir, "rec"), "--method", "dcpi",
                              "--no-paths"])
    ex, _ = run_json(base + ["--db", os.path.join(wdir, "cg"), "--event", "callgrind-Ir",
                             "--method", "dcpi"])
    if not est or not ex or not est["instructions"]:
        return None
    ir = {i["offset"]: i["samples"] for i in ex["instructions"]}
    if not sum(ir.values()):
        return None
    ins = est["instructions"]
    d = ins[0]["offset"] - int(ins[0]["address"], 16)
    cps = est.get("cycles_per_sample") or 1.0
    blocks = []
    k = 0
    for b in est["blocks"]:
        s, e = int(b["start"], 16), int(b["end"], 16)
        while k < len(ins) and int(ins[k]["address"], 16) < s:
            k += 1
        bi = []
        while k < len(ins) and int(ins[k]["address"], 16) < e:
            bi.append((ins[k]["samples"], ir.get(ins[k]["offset"], 0)))
            k += 1
        blocks.append({"start": b["start"], "cls": b.get("class", -1), "S": b.get("samples", 0),
                       "M": b.get("best_cycles", 0), "est": b["executions"],
                       "exact": ir.get(s + d, 0), "insns": bi})
    return {"cps": cps, "blocks": blocks, "edges": est["edges"]}


def within(v, x):
    return x > 0 and abs(v - x) <= TOL * x


def window_sets(p):
    """class -> (best window estimate, class samples) for classes with a
    window within TOL of exact."""
    best = {}
    samples = {}
    for b in p["blocks"]:
        samples[b["cls"]] = samples.get(b["cls"], 0) + b["S"]
        if b["M"] <= 0 or b["S"] <= 0 or b["exact"] <= 0:
            continue
        w = b["S"] * p["cps"] / b["M"]
        if within(w, b["exact"]):
            old = best.get(b["cls"])
            if old is None or abs(w / b["exact"] - 1) < abs(old[0] / old[1] - 1):
                best[b["cls"]] = (w, b["exact"])
    return best, samples


def flow_solve(p, pinned):
    """Block counts from non-negative edge counts: pinned classes at their
    value, others weakly pulled to their own estimate, flow conserved."""
    blocks = p["blocks"]
    idx = {b["start"]: k for k, b in enumerate(blocks)}
    edges = [e for e in p["edges"] if e.get("from") in idx and e.get("to") in idx]
    ne = len(edges)
    if ne == 0 or ne > MAX_EDGES:
        return None
    ins = [[] for _ in blocks]
    outs = [[] for _ in blocks]
    for j, e in enumerate(edges):
        ins[idx[e["to"]]].append(j)
        outs[idx[e["from"]]].append(j)
    scale = max([b["est"] for b in blocks] + [v for v in pinned.values()] + [1.0])
    nrows = 2 * len(blocks)
    A = lil_matrix((nrows, ne))
    rhs = np.zeros(nrows)
    r = 0
    for k, b in enumerate(blocks):
        if ins[k] and outs[k]:
            for j in ins[k]:
                A[r, j] += 100.0
            for j in outs[k]:
                A[r, j] -= 100.0
            r += 1
    for k, b in enumerate(blocks):
        lst = ins[k] or outs[k]
        if not lst:
            continue
        if b["cls"] in pinned:
            t = pinned[b["cls"]] / scale
            w = math.sqrt(max(b["S"], 1)) / max(t, 1e-9)
        else:
            t = max(b["est"], 0) / scale
            w = 1e-3 / max(t, 1e-6)
        for j in lst:
            A[r, j] = w
        rhs[r] = t * w
        r += 1
    A = A[:r].tocsr()
    sol = lsq_linear(A, rhs[:r], bounds=(0, np.inf), lsmr_tol="auto", max_iter=2000)
    y = sol.x * scale
    out = []
    for k, b in enumerate(blocks):
        lst = ins[k] or outs[k]
        out.append(sum(y[j] for j in lst) if lst else b["est"])
    return out


class Share:
    def __init__(self):
        self.w = 0.0
        self.ok = [0.0, 0.0, 0.0]

    def add(self, v, x, s):
        self.w += s
        if x <= 0:
            return
        for k, t in enumerate((0.05, 0.10, 0.15)):
            if abs(v - x) <= t * x + 1e-9:
                self.ok[k] += s

    def fmt(self):
        if not self.w:
            return "   -  /   -  /   - "
        return " / ".join("%5.1f" % (100 * o / self.w) for o in self.ok)


def main():
    ap = arg_parser()
    ap.add_argument("workloads", nargs="+")
    a = ap.parse_args()

    names = ["dcpi", "window", "flow", "flow+exact"]
    tot = {n: Share() for n in names}
    print("== Ceilings: what window ratios + flow can reach on these recordings "
          "(exact counts as the oracle) ==")
    print("%-10s %7s | %-19s | %-19s | %-19s | %-19s" %
          ("workload", "samples", "dcpi (as built)", "any window (class)",
           "oracle-graded flow", "flow from exact pins"))
    for wl in a.workloads:
        wdir = os.path.join(a.work, wl)
        rows = prof_rows(a.bin, os.path.join(wdir, "rec"))
        procs = [r for r in rows["procedures"] if r["samples"].get("cpu-clock", 0) > 0]
        total = sum(r["samples"].get("cpu-clock", 0) for r in procs)
        procs.sort(key=lambda r: -r["samples"].get("cpu-clock", 0))
        cov, n = 0, 0
        per = {n_: Share() for n_ in names}
        for row in procs:
            s = row["samples"].get("cpu-clock", 0)
            if cov >= a.cover * total or n >= a.max_procs or s < a.min_samples:
                break
            cov += s
            n += 1
            p = load(a.bin, wdir, row)
            if p is None:
                continue
            best, _ = window_sets(p)
            f1 = f2 = None
            if HAVE_SCIPY:
                f1 = flow_solve(p, {c: v[0] for c, v in best.items()})
                f2 = flow_solve(p, {c: v[1] for c, v in best.items()})
            for k, b in enumerate(p["blocks"]):
                for S, x in b["insns"]:
                    if S <= 0:
                        continue
                    for acc in (tot, per):
                        acc["dcpi"].add(b["est"], x, S)
                        acc["window"].add(best[b["cls"]][0] if b["cls"] in best else -1, x, S)
                        acc["flow"].add(f1[k] if f1 else b["est"], x, S)
                        acc["flow+exact"].add(f2[k] if f2 else b["est"], x, S)
        print("%-10s %7d | %s | %s | %s | %s" % (wl, per["dcpi"].w, per["dcpi"].fmt(),
                                                  per["window"].fmt(), per["flow"].fmt(),
                                                  per["flow+exact"].fmt()))
    print("%-10s %7d | %s | %s | %s | %s" % ("OVERALL", tot["dcpi"].w, tot["dcpi"].fmt(),
                                              tot["window"].fmt(), tot["flow"].fmt(),
                                              tot["flow+exact"].fmt()))
    if not HAVE_SCIPY:
        print("(scipy missing: the flow ceilings are the dcpi column; install python3-scipy)")
    print("within 5 / 10 / 15 %; 'any window': the class has a block whose S x cps / M is "
          "within 15% of exact, scored with the best such window")


if __name__ == "__main__":
    main()
