#!/usr/bin/env python3
"""The dominant block of each workload, estimated against exact (docs/estimate.md
"Dominant blocks": dcpicalc with measured block costs), on the recordings of
bench/accuracy/run.sh.

usage: dominant.py --bin BUILD_DIR --work WORKDIR [--rec NAME] [--json OUT]
                   [--calc-args "DCPICALC ARGS"] WORKLOAD...

Per workload: its hottest procedure (most cpu-clock samples in WORKDIR/WL/REC,
REC default "rec"), and in it the block with the most samples in dcpicalc's
default estimate (measured best cases, path samples, the global solver).
Printed: that block's share of the procedure's samples, where its best case
came from (measured in the sandbox or modelled), its estimated executions,
callgrind's exact count (WORKDIR/WL/cg) and their ratio.

Two judgements beside the ratio:
- "dominant": the block holds at least half of the procedure's samples, so
  its estimate rests on its own samples and best case more than on the
  procedure's shape (estloops, demo_work, twoprocs and sha256sum are built
  or chosen that way; bzip2's hottest block holds 11%).
- "judgeable": its samples are enough for a 10% verdict at all: the 95%
  Poisson half-width 1.96 / sqrt(S) of a count from S samples is at most 10%
  (S >= 385).
And its stated 90% interval, as ratios to the exact count, and whether the
exact count lies inside it.
"""
import argparse
import json
import math
import os
import shlex
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

SHARE = 0.5          # "dominant": at least this share of the procedure's samples
TOL = 0.10           # within 10% of the exact count (docs/estimate.md)


def hottest(binp, db):
    rows = compare.prof_rows(binp, db)["procedures"]
    rows = [r for r in rows if r["samples"].get("cpu-clock", 0) > 0 and not r["name"].startswith("[")
            and not str(r.get("image", "")).startswith("[")]
    return max(rows, key=lambda r: r["samples"]["cpu-clock"]) if rows else None


def one(binp, wdir, wl, rec, extra):
    db = os.path.join(wdir, wl, rec)
    cg = os.path.join(wdir, wl, "cg")
    if not os.path.isdir(db) or not os.path.isdir(cg):
        return {"workload": wl, "error": "no recording %s or %s" % (db, cg)}
    r = hottest(binp, db)
    if not r:
        return {"workload": wl, "error": "no samples in %s" % db}
    key = r.get("address") or r["name"]
    base = [binp + "/dcpicalc", key, "--image", r["image"], "--json"]
    est, e1 = compare.run_json(base + ["--db", db] + extra)
    ex, e2 = compare.run_json(base + ["--db", cg, "--event", "callgrind-Ir", "--method", "dcpi"])
    if not est or not ex:
        return {"workload": wl, "procedure": r["name"], "error": " ".join(e1 or e2 or ["dcpicalc failed"])}
    exact = {i["address"]: i["samples"] for i in ex["instructions"]}
    total = sum(b["samples"] for b in est["blocks"])
    b = max(est["blocks"], key=lambda b: b["samples"])
    n = exact.get(b["start"], 0)
    ratio = b["executions"] / n if n else None
    lo, hi = b.get("interval", [0, float("inf")])
    half = 1.96 / math.sqrt(b["samples"]) if b["samples"] else None
    return {
        "workload": wl, "procedure": r["name"], "block": b["start"],
        "samples": b["samples"], "procedure_samples": total,
        "share": b["samples"] / total if total else 0,
        "best_source": b.get("best_source"), "best_cycles": b.get("best_cycles"),
        "estimate": b["executions"], "exact": n, "ratio": ratio,
        "within": ratio is not None and abs(ratio - 1) <= TOL,
        "interval": [lo / n if n else None, hi / n if n else None],
        # callgrind's is another run: counts measured (a point) may be a
        # few executions apart (paths.py RUN_TO_RUN)
        "inside": bool(n) and lo * (1 - 1e-4) <= n <= hi * (1 + 1e-4),
        "confidence": b.get("confidence"),
        "dominant": total > 0 and b["samples"] >= SHARE * total,
        "half_width": half, "judgeable": half is not None and half <= TOL,
        "scale_rule": (est.get("paths") or {}).get("scale_rule"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rec", default="rec")
    ap.add_argument("--calc-args", default="", help="more dcpicalc arguments, e.g. \"--no-paths\"")
    ap.add_argument("--json")
    ap.add_argument("workloads", nargs="+")
    a = ap.parse_args()
    extra = shlex.split(a.calc_args)
    rows = [one(a.bin, a.work, wl, a.rec, extra) for wl in a.workloads]

    print("Dominant blocks: the hottest procedure's block with the most samples,")
    print("estimated executions / callgrind's exact count; recording %s%s" % (a.rec, (" " + " ".join(extra)) if extra else ""))
    print("%-10s %-26s %-9s %6s %5s %-17s %10s %10s %6s %-15s %s" % (
        "workload", "procedure", "block", "samples", "share", "best case", "estimate", "exact", "ratio",
        "90% interval", "within 10%"))
    for r in rows:
        if "error" in r:
            print("%-10s %s" % (r["workload"], r["error"]))
            continue
        best = "%s %.2f" % (r["best_source"] or "?", r["best_cycles"] or 0)
        notes = []
        if not r["dominant"]:
            notes.append("not dominant (%.0f%% of the procedure)" % (100 * r["share"]))
        if not r["judgeable"]:
            notes.append("%d samples: +-%.0f%% (95%%)" % (r["samples"], 100 * (r["half_width"] or 1)))
        iv = r["interval"]
        ivs = "[%.2f, %.2f]%s" % (iv[0], iv[1], "" if r["inside"] else "!") if iv[0] is not None else "-"
        print("%-10s %-26.26s %-9s %6d %4.0f%% %-17s %10.4g %10.4g %6s %-15s %s%s" % (
            r["workload"], r["procedure"], r["block"], r["samples"], 100 * r["share"], best,
            r["estimate"], r["exact"], "%.3f" % r["ratio"] if r["ratio"] else "-", ivs,
            "yes" if r["within"] else "no", ("  (" + "; ".join(notes) + ")") if notes else ""))
    ok = [r for r in rows if "error" not in r]
    dom = [r for r in ok if r["dominant"]]
    print("within 10%%: %d of %d workloads; of those with one dominant block: %d of %d; "
          "exact inside the 90%% interval: %d of %d (! marks the others)" % (
              sum(r["within"] for r in ok), len(ok), sum(r["within"] for r in dom), len(dom),
              sum(r["inside"] for r in ok), len(ok)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
