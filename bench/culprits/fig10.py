#!/usr/bin/env python3
"""fig10.py - the DCPI paper's fig. 10 redone (docs/culprits.md, "Fig. 10").

For every procedure holding the samples of a workload recorded by `make
accuracy` (bench/accuracy/run.sh: WORK/NAME/rec natively, WORK/NAME/cg the
callgrind run with --cache-sim=yes --branch-sim=yes), dcpicalc attributes
dynamic stall cycles to causes from the code alone (--no-events: the
simulated events are the yardstick, not an input), with executions from
callgrind (--exact) and, for comparison, estimated.  Per cause, the
attributed cycles (min, max of the range, and their midpoint) are correlated
over procedures with the simulated events times their cost:

  D-cache     D1mr x L2 + DLmr x DRAM      (callgrind-D1mr, -DLmr)
  I-cache     I1mr x L2 + ILmr x DRAM
  mispredict  (Bcm + Bim) x penalty

and the share of dynamic stall cycles left unexplained is printed.  The
mispredicts are also taken from bpsim (bench/culprits/bpsim: a TAGE
predictor, WORK/NAME/bp) when that run exists: callgrind's predictor is 2-bit
counters under 7 bits of history, which a current core's beats on every
pattern longer than that.

    fig10.py --bin BUILD --work WORK [--top N] [--min-samples S] NAME...
"""
import argparse
import json
import math
import os
import subprocess
import sys

L2, DRAM, PENALTY = 14, 300, 13	# cycles: Zen 4's L2 hit, a DRAM fill, a flush


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] if p.stderr else ["exit %d" % p.returncode]
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, [str(e)]


def pearson(xs, ys):
    n = len(xs)
    if n < 3:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    if sxx <= 0 or syy <= 0:
        return float("nan")
    return sxy / math.sqrt(sxx * syy)


def procs_of(dcpi, db, top, min_samples):
    d, err = run_json([dcpi, "prof", "--db", db, "--json"])
    if d is None:
        return [], err
    ev = "cpu-clock" if "cpu-clock" in d["events"] else d["events"][0]
    total = d["total"][ev] or 1
    out, cum = [], 0
    for p in sorted(d["procedures"], key=lambda p: -p["samples"].get(ev, 0)):
        s = p["samples"].get(ev, 0)
        if s < min_samples or cum >= 0.99 * total or len(out) >= top:
            break
        cum += s
        out.append(p)
    return out, None


def events_of(dcpi, db):
    d, _ = run_json([dcpi, "prof", "--db", db, "--json"])
    if d is None:
        return {}
    return {(p["image"], p["name"]): p["samples"] for p in d["procedures"]}


BPSIM = "branch mispredict (bpsim)"


def sim_cost(ev, bp):
    g = lambda k: ev.get("callgrind-" + k, 0)
    c = {
        "D-cache": g("D1mr") * L2 + g("DLmr") * DRAM,
        "I-cache": g("I1mr") * L2 + g("ILmr") * DRAM,
        "branch mispredict": (g("Bcm") + g("Bim")) * PENALTY,
    }
    if bp is not None:	# bpsim's file reads as callgrind's: the same event names
        c[BPSIM] = (bp.get("callgrind-Bcm", 0) + bp.get("callgrind-Bim", 0)) * PENALTY
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--min-samples", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    dcpi = a.bin + "/dcpi"
    rows = {"exact": [], "estimated": []}
    skipped = []
    for name in a.names:
        rec, cg = "%s/%s/rec" % (a.work, name), "%s/%s/cg" % (a.work, name)
        procs, err = procs_of(dcpi, rec, a.top, a.min_samples)
        if err:
            skipped.append((name, "-", err))
            continue
        sim = events_of(dcpi, cg)
        bpdb = "%s/%s/bp" % (a.work, name)
        bpsim = events_of(dcpi, bpdb) if os.path.isdir(bpdb) else None
        if bpsim is None:
            skipped.append((name, "-", ["no bpsim run (make bpsim)"]))
        for p in procs:
            ev = sim.get((p["image"], p["name"]))
            if ev is None:
                skipped.append((name, p["name"], ["no callgrind events"]))
                continue
            spec = p["image"] + ":" + p["name"]
            for mode in rows:
                cmd = [dcpi, "calc", spec, "--db", rec, "--no-events", "--json"]
                if mode == "exact":
                    cmd += ["--exact", cg]
                d, err = run_json(cmd)
                if d is None:
                    skipped.append((name, p["name"] + " (" + mode + ")", err))
                    continue
                rows[mode].append({"workload": name, "procedure": p["name"],
                                   "cycles": d["summary"]["cycles"],
                                   "dynamic": d["summary"]["dynamic"],
                                   "causes": d["summary"]["causes"],
                                   "sim": sim_cost(ev, None if bpsim is None else
                                                   bpsim.get((p["image"], p["name"]), {})),
                                   "events": ev})
    print("== Fig. 10: attributed dynamic stall cycles vs simulated events x cost "
          "(callgrind; mispredicts also bpsim's TAGE), per procedure ==")
    print("workloads: %s; costs: L2 %d, DRAM %d, mispredict %d cycles"
          % (" ".join(a.names), L2, DRAM, PENALTY))
    summary = {}
    for mode, rs in rows.items():
        dyn = sum(r["dynamic"] for r in rs)
        unexp = sum(r["causes"]["unexplained"]["share"] for r in rs)
        print("\n%s executions: %d procedures, dynamic stalls %.4g cycles, "
              "unexplained %.1f%%" % (mode, len(rs), dyn, 100 * unexp / dyn if dyn else 0))
        print("  %-18s %8s %8s %8s %8s" % ("cause", "r(min)", "r(mid)", "r(max)", "r(split)"))
        summary[mode] = {"procedures": len(rs), "dynamic": dyn,
                         "unexplained_share": unexp / dyn if dyn else 0}
        for yard in ("D-cache", "branch mispredict", BPSIM, "I-cache"):
            cause = "branch mispredict" if yard == BPSIM else yard
            rsy = [r for r in rs if yard in r["sim"]]
            if not rsy:
                continue
            xs = [r["sim"][yard] for r in rsy]
            rr = []
            for k in ("min", "mid", "max", "share"):
                ys = [(r["causes"][cause]["min"] + r["causes"][cause]["max"]) / 2
                      if k == "mid" else r["causes"][cause][k] for r in rsy]
                rr.append(pearson(xs, ys))
            summary[mode][yard] = rr
            label = {"branch mispredict": "mispredict (cg)",
                     BPSIM: "mispredict (bpsim)"}.get(yard, yard)
            note = "" if len(rsy) == len(rs) else "  (%d procedures)" % len(rsy)
            print("  %-18s %8.3f %8.3f %8.3f %8.3f%s" % (label, *rr, note))
    if skipped:
        print("\nskipped %d: %s" % (len(skipped), "; ".join(
            "%s %s: %s" % (w, p, " ".join(e)) for w, p, e in skipped[:8])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
