#!/usr/bin/env python3
"""bench/feedback/simulate.py DIR CMD VARIANT:BASE... - what each variant
(DIR/VARIANT for BIN in CMD) executes, counted by valgrind's cachegrind with
its cache and branch simulators: instructions, simulated branch
mispredictions, L1 instruction and data misses.  Deterministic, so it shows
what the feedback changed where the wall clock of a shared machine cannot
(it is a model, not this CPU: no out-of-order overlap, no real predictor)."""
import glob
import os
import re
import subprocess
import sys

d, cmd = sys.argv[1], sys.argv[2]
pairs = [a.split(":") for a in sys.argv[3:]]
pairs = [(v, b) for v, b in pairs if os.path.exists(os.path.join(d, v))]
keys = {r"I\s+refs": "ir", r"I1\s+misses": "i1", r"D1\s+misses": "d1",
        r"Mispredicts": "bm", r"Branches": "br"}


def count(v):
    logs = os.path.join(d, "cg-%s" % v)
    if os.environ.get("REPARSE"):
        return parse(logs)
    for f in glob.glob(logs + ".*"):
        os.unlink(f)
    wrap = ("valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes "
            "--cachegrind-out-file=/dev/null --log-file=%s.%%p" % logs)
    env = dict(os.environ, WRAP=wrap)
    subprocess.run(cmd.replace("BIN", os.path.join(d, v)), shell=True, check=True, env=env)
    return parse(logs)


def parse(logs):
    tot = dict.fromkeys(keys.values(), 0)
    for f in glob.glob(logs + ".*"):
        for line in open(f):
            for k, name in keys.items():
                m = re.search(r"==\d+== %s:\s+([\d,]+)" % k, line)
                if m:
                    tot[name] += int(m.group(1).replace(",", ""))
    return tot


res = {v: count(v) for v, _ in pairs}
print("%-11s %14s %8s %12s %9s %9s %9s" % ("variant", "instructions", "ratio", "mispredicts",
                                           "ratio", "branches", "D1 miss"))
for v, b in pairs:
    r, s = res[v], res[b]

    def q(k):
        return r[k] / s[k] if s[k] else float("nan")
    print("%-11s %14d %8.3f %12d %9.3f %9.3f %9.3f" % (v, r["ir"], q("ir"), r["bm"], q("bm"),
                                                       q("br"), q("d1")))
