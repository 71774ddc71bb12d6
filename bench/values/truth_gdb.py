# truth_gdb.py - exact value counts at chosen instructions of a short run, by
# gdb breakpoints: the truth that bench/values/compare.py holds dcpi's value
# samples against (docs/values.md, "Accuracy on a real program").
#
#   gdb -q -batch -x truth_gdb.py --args PROG ARGS...
# with the environment:
#   TRUTH_SPECS  "OFF:before:REG,REG...;OFF:after:REG;..."  file offsets
#                (hex) of instructions in PROG; "before": registers as the
#                instruction is about to run (procedure arguments), "after":
#                registers after one stepi (a load's destination, or pc for
#                an indirect call's target, given as an offset into PROG)
#   TRUTH_OUT    JSON file: {"OFF:KIND:REG": {"value": count, ...}, ...}
#   TRUTH_STDOUT where the program's standard output goes (default /dev/null)
#   TRUTH_MAX    stop counting a site after this many hits (default 10^6)
import collections
import json
import os

import gdb

specs = []
for part in os.environ["TRUTH_SPECS"].split(";"):
    if part:
        off, kind, regs = part.split(":")
        specs.append((int(off, 16), kind, regs.split(",")))
out = os.environ["TRUTH_OUT"]
maxhits = int(os.environ.get("TRUTH_MAX", "1000000"))
prog_out = os.environ.get("TRUTH_STDOUT", "/dev/null")

gdb.execute("set pagination off")
gdb.execute("set confirm off")
shown = gdb.execute("show args", to_string=True)
args = shown[shown.index('"') + 1:shown.rindex('"')]
gdb.execute("starti %s > %s" % (args, prog_out))  # "run ARGS" replaces the args
base = None
for line in gdb.execute("info proc mappings", to_string=True).splitlines():
    f = line.split()
    if len(f) >= 5 and f[-1] == gdb.current_progspace().filename and int(f[3], 16) == 0:
        base = int(f[0], 16)
        break
assert base is not None, "no mapping of the program at offset 0"
# a PIE: file offset = vaddr for the usual layout (first PT_LOAD at 0)
by_addr = {}
for off, kind, regs in specs:
    by_addr.setdefault(base + off, []).append((off, kind, regs))
    gdb.execute("break *0x%x" % (base + off), to_string=True)
counts = collections.defaultdict(collections.Counter)
hits = collections.Counter()


def reg(name):
    v = int(gdb.parse_and_eval("$" + name)) & 0xFFFFFFFFFFFFFFFF
    return v


while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    try:
        pc = reg("pc")
    except gdb.error:
        break
    if pc not in by_addr:
        continue
    todo = by_addr[pc]
    after = []
    for off, kind, regs in todo:
        if hits[off, kind] >= maxhits:
            continue
        hits[off, kind] += 1
        if kind == "before":
            for r in regs:
                counts["%x:before:%s" % (off, r)][reg(r)] += 1
        else:
            after.append((off, regs))
    if after:
        gdb.execute("stepi", to_string=True)
        for off, regs in after:
            for r in regs:
                v = reg(r)
                if r == "pc":
                    v -= base
                counts["%x:after:%s" % (off, r)][v] += 1
json.dump({k: {"%x" % v: c for v, c in cnt.items()} for k, cnt in counts.items()},
          open(out, "w"))
