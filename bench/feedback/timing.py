#!/usr/bin/env python3
"""bench/feedback/timing.py RUNS DIR CMD VARIANT:BASE... - time of each
variant (DIR/VARIANT, substituted for BIN in CMD) over RUNS rounds, every
round running all variants in a rotated order.  Per variant: the least wall
time, the median CPU time (user + sys of the children: less disturbed than
wall time by other work on a shared machine), and the medians over rounds of
its wall and CPU time divided by its base's in the same round."""
import os
import resource
import statistics
import subprocess
import sys
import time

runs, d, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3]
pairs = [a.split(":") for a in sys.argv[4:]]
pairs = [(v, b) for v, b in pairs if os.path.exists(os.path.join(d, v))]
names = [v for v, _ in pairs]
wall = {v: [] for v in names}
cpu = {v: [] for v in names}


def cpu_now():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


for r in range(runs):
    order = names[r % len(names):] + names[:r % len(names)]
    for v in order:
        c0, t0 = cpu_now(), time.perf_counter()
        subprocess.run(cmd.replace("BIN", os.path.join(d, v)), shell=True, check=True)
        wall[v].append(time.perf_counter() - t0)
        cpu[v].append(cpu_now() - c0)

print("%-11s %8s %8s %9s %9s %8s  %s" % ("variant", "wall min", "cpu med", "wall/base",
                                          "cpu/base", "speedup", "(cpu ratio; base)"))
for v, b in pairs:
    if b not in wall:
        continue
    rw = statistics.median([x / y for x, y in zip(wall[v], wall[b])])
    rc = statistics.median([x / y for x, y in zip(cpu[v], cpu[b])])
    print("%-11s %8.3f %8.3f %9.3f %9.3f %+7.1f%%  %s" % (
        v, min(wall[v]), statistics.median(cpu[v]), rw, rc, 100 * (1 / rc - 1), b))
print("rounds: %d; load average after: %s" % (runs, open("/proc/loadavg").read().strip()))
