#!/usr/bin/env python3
"""Every tool prints the same counts for one procedure of one recording.

tests/test_analysis.c runs the commands and hands their outputs here:
  consistency.py PROC DIR
with DIR holding calc.json (dcpicalc --json), list.json (dcpilist --json),
cfg.json (dcpicfg --json), cfg.dot (dcpicfg --all, DOT with its dcpi_*
attributes), llvm.prof (llvm-prof --lines -o -), bolt.fdata (bolt-prof -o -)
and diff.json (dcpidiff of the database against itself).  dcpicalc's counts
are the reference; each other output must carry the same numbers (as they
round them: llvm-prof and bolt-prof write whole counts).  Prints one line per
check and exits 1 on the first disagreement.
"""
import json
import re
import sys

proc, d = sys.argv[1], sys.argv[2]
fails = []


def check(what, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, (": " + detail) if detail and not ok else ""))
    if not ok:
        fails.append(what)


def close(a, b, rel=1e-9, absol=1e-6):
    return abs(a - b) <= max(absol, rel * max(abs(a), abs(b)))


calc = json.load(open(d + "/calc.json"))
insns = {int(i["address"], 16): i["executions"] for i in calc["instructions"]}
addrs = sorted(insns)
blocks = {int(b["start"], 16): b for b in calc["blocks"]}
edges = {(int(e["from"], 16), int(e["to"], 16) if str(e["to"]).startswith("0x") else e["to"]):
         e["executions"] for e in calc["edges"]}
check("dcpicalc has counts", calc["samples"] > 0 and max(insns.values()) > 0)

# dcpicfg --json is the same analysis
cfgj = json.load(open(d + "/cfg.json"))
check("dcpicfg --json blocks", [b["executions"] for b in cfgj["blocks"]] ==
      [b["executions"] for b in calc["blocks"]])
check("dcpicfg --json edges", [e["executions"] for e in cfgj["edges"]] ==
      [e["executions"] for e in calc["edges"]])

# dcpilist: every instruction's executions
lst = json.load(open(d + "/list.json"))
seen = 0
for ln in lst["lines"]:
    for i in ln["instructions"]:
        a = int(i["address"], 16)
        seen += 1
        if not close(i["executions"], insns.get(a, -1)):
            check("dcpilist %#x" % a, False, "%r vs %r" % (i["executions"], insns.get(a)))
check("dcpilist lists every instruction with dcpicalc's executions", seen == len(insns),
      "%d of %d" % (seen, len(insns)))

# dcpicfg's DOT: the unrounded dcpi_executions of blocks and edges
dot = open(d + "/cfg.dot").read()
node_start, node_x, dot_edges = {}, {}, []
for m in re.finditer(r"\n\s*(b\d+)\s*\[([^\]]*)\]", dot):
    attrs = m.group(2)
    s = re.search(r'dcpi_start="(0x[0-9a-f]+)"', attrs)
    x = re.search(r"dcpi_executions=([0-9.eE+-]+)", attrs)
    if s and x:
        node_start[m.group(1)] = int(s.group(1), 16)
        node_x[m.group(1)] = float(x.group(1))
for m in re.finditer(r"\n\s*(b\d+)\s*->\s*(b\d+)\s*\[([^\]]*)\]", dot):
    x = re.search(r"dcpi_executions=([0-9.eE+-]+)", m.group(3))
    if x:
        dot_edges.append((m.group(1), m.group(2), float(x.group(1))))
check("dcpicfg DOT draws every block", len(node_x) == len(blocks), "%d of %d" % (len(node_x), len(blocks)))
for n, s in node_start.items():
    if not close(node_x[n], blocks[s]["executions"], rel=1e-12):
        check("dcpicfg DOT block %#x" % s, False, "%r vs %r" % (node_x[n], blocks[s]["executions"]))
check("dcpicfg DOT edges drawn", len(dot_edges) > 0)
for a, b, x in dot_edges:
    key = (node_start.get(a), node_start.get(b))
    if key in edges and not close(x, edges[key], rel=1e-12):
        check("dcpicfg DOT edge %s->%s" % (a, b), False, "%r vs %r" % (x, edges[key]))


def last_insn(start):
    end = int(blocks[start]["end"], 16)
    return max(a for a in addrs if start <= a < end)


# bolt-prof: "1 PROC FROM 1 PROC TO 0 COUNT", offsets from the procedure's start
entry = addrs[0]
bolt = 0
for line in open(d + "/bolt.fdata"):
    f = line.split()
    if len(f) != 8 or f[1] != proc or f[4] != proc:
        continue
    frm, to, n = entry + int(f[2], 16), entry + int(f[5], 16), int(f[7])
    want = [x for (s, t), x in edges.items() if t == to and s in blocks and last_insn(s) == frm]
    bolt += 1
    if len(want) != 1 or abs(n - round(want[0])) > 1:
        check("bolt-prof edge %#x->%#x" % (frm, to), False, "%d vs %r" % (n, want))
check("bolt-prof writes PROC's edges", bolt > 0)

# llvm-prof --lines: a line's count is the most any of its instructions ran;
# lines keyed by their offset from the procedure's first line (DWARF), as
# dcpilist names them, inlined ones under their call site
prof = open(d + "/llvm.prof").read().split("\n")
body, depth, cur = {}, None, None
for line in prof:
    if re.match(r"^%s:\d+:\d+$" % re.escape(proc), line):
        depth, cur = 0, body
        continue
    if depth is not None and line and not line.startswith(" "):
        break   # the next function
    m = re.match(r"^ (\d+)(?:\.\d+)?: (\d+)", line)
    if depth is not None and m:
        off = int(m.group(1))
        body[off] = max(body.get(off, 0), int(m.group(2)))
by_line = {}
for ln in lst["lines"]:
    if ln["inlined"]:
        continue
    n = int(ln["source"].rsplit(":", 1)[1])
    for i in ln["instructions"]:
        if not i["text"].startswith("call"):
            by_line[n] = max(by_line.get(n, 0), round(i["executions"]))
check("llvm-prof writes PROC's lines", len(body) > 0)
first = min(by_line) if by_line else 0
decl = [n for n in range(first - 3, first + 1) if n - (first - 3) >= 0]
# the offset base is the procedure's declaration line: the one that makes
# the most lines agree (dcpilist does not print it)
best = max(decl, key=lambda b: sum(1 for n, x in by_line.items() if body.get(n - b) == x))
agree = sum(1 for n, x in by_line.items() if abs(body.get(n - best, -9) - x) <= 1)
check("llvm-prof line counts are dcpilist's (%d of %d lines)" % (agree, len(by_line)),
      agree == len(by_line))

# dcpidiff: instructions executed = the sum over dcpicalc's instructions
diff = json.load(open(d + "/diff.json"))
row = [p for p in diff["procedures"] if p["name"] == proc]
total = sum(insns.values())
check("dcpidiff row for PROC", len(row) == 1)
if row:
    check("dcpidiff executed instructions", close(row[0]["instructions_before"], total, rel=2e-5),
          "%r vs %r" % (row[0]["instructions_before"], total))

print("%d checks failed" % len(fails))
sys.exit(1 if fails else 0)
