#!/usr/bin/env python3
"""bench/accuracy/coverage.py - the interval calibration of several recording sets, each and
pooled: the share of samples whose exact count lies inside their block's stated 90% interval
(bench/accuracy/paths.py, which writes the JSON this reads with --json), by confidence word and
for the held-out programs, beside what chance alone allows.

One set of make accuracy's 21 programs weighs as about 23 equal blocks (a block is inside or
not, all its samples together), so intervals that are right 90% of the time read 90 +- 6 points
on one set by chance alone; pooled over k sets, about 6 / sqrt(k).

    coverage.py [--config paths] [--holdout "python sed ..."] SET.json [SET.json ...]
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paths  # noqa: E402


def rows_of(path, config):
    with open(path) as f:
        d = json.load(f)
    for r in d["intervals"]:
        lo, hi = r["interval"]
        if r["config"] != config or r["weight"] <= 0 or paths.is_point((lo, hi)):
            continue
        yield r


def inside(r):
    lo, hi = r["interval"]
    return lo * (1 - paths.RUN_TO_RUN) <= r["exact"] <= hi * (1 + paths.RUN_TO_RUN)


def line(name, rows):
    W = float(sum(r["weight"] for r in rows))
    if not W:
        return "%-14s -" % name
    n, sd = paths.chance([r["weight"] for r in rows])
    i = sum(r["weight"] for r in rows if inside(r)) / W
    below = sum(r["weight"] for r in rows if not inside(r) and r["exact"] < r["interval"][0]) / W
    return ("%-14s %5.1f%% inside of %7d samples (truth below %4.1f%%, above %4.1f%%); "
            "%4d blocks weigh as %5.1f: chance alone 90 +- %.1f" %
            (name, 100 * i, W, 100 * below, 100 * (1 - i - below), len(rows), n, 100 * sd))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="paths")
    ap.add_argument("--holdout", default="")
    ap.add_argument("sets", nargs="+")
    a = ap.parse_args()
    hold = set(a.holdout.split())
    pooled = []
    for path in a.sets:
        rows = list(rows_of(path, a.config))
        pooled += rows
        print(line(path, rows))
    if len(a.sets) > 1:
        print(line("pooled", pooled))
    for word in ("high", "medium", "low"):
        print(line("  " + word, [r for r in pooled if r.get("confidence") == word]))
    if hold:
        print(line("  held out", [r for r in pooled if r["workload"] in hold]))
        print(line("  tuned", [r for r in pooled if r["workload"] not in hold]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
