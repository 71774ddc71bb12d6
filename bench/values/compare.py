#!/usr/bin/env python3
"""compare.py - dcpi's value samples against the exact counts of truth.c.

  compare.py sites  VLIST.json... > SITES      the sites to check, from dcpi
  compare.py report VLIST.json... TRUTH.json [--min-seen N]

"sites" picks, from `dcpi vlist PROC --json` outputs, every (instruction,
kind) of kinds arg0-5, load, branch and target that dcpi saw at least
--min-seen times (a sample-size filter only: what the values are plays no
part), and prints them as TRUTH_SPECS for truth.c.  "report" prints, per
site, dcpi's top value and its share beside the truth's share of that value
and the truth's own top value, the class each gives (invariant >= 0.9,
semi-invariant >= 0.5, else variant: docs/values.md), and a summary: how
many sites agree on the top value, the share error (points) on them, and
the class agreement.
"""
import json
import re
import sys

ARGREG = ["rdi", "rsi", "rdx", "rcx", "r8", "r9"]
REG64 = {}
for r in ["ax", "bx", "cx", "dx", "si", "di", "bp", "sp"]:
    for n in ["e" + r, r, r[0] + "l" if r.endswith("x") else r + "l"]:
        REG64[n] = "r" + r
for i in range(8, 16):
    for suf in ["", "d", "w", "b"]:
        REG64["r%d%s" % (i, suf)] = "r%d" % i
for r in ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"]:
    REG64[r] = r
WIDTH = {"b": 0xFF, "w": 0xFFFF}


def klass(share):
    return "invariant" if share >= 0.9 else "semi-invariant" if share >= 0.5 else "variant"


def load_vlists(paths):
    insns = []
    for p in paths:
        d = json.load(open(p))
        for ins in d["instructions"]:
            ins["procedure"] = d["procedure"]
            insns.append(ins)
    return insns


def spec_of(ins, lst):
    """(truth key, how to read dcpi's value) for one list, or None."""
    off = int(ins["offset"], 16)
    kind = lst["kind"]
    text = ins["text"]
    if kind.startswith("arg"):
        return "%x:before:%s" % (off, ARGREG[int(kind[3:])]), None
    if kind == "load":
        m = re.search(r"%(\w+)\s*$", text)
        if not m or m.group(1) not in REG64:
            return None
        name = m.group(1)
        mask = None
        if name.endswith("l") and len(name) <= 3 and name not in ("eax",):
            mask = 0xFF
        if re.match(r"r\d+b$", name):
            mask = 0xFF
        if re.match(r"r\d+w$", name) or name in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp"):
            mask = 0xFFFF
        return "%x:after:%s" % (off, REG64[name]), mask
    if kind == "branch":
        m = re.search(r"0x([0-9a-f]+)\s*$", text)
        if not m:
            return None
        return "%x:after:pc" % off, ("branch", int(m.group(1), 16) - int(ins["address"], 16) + off)
    if kind == "target":
        return "%x:after:pc" % off, ("target",)
    return None


def pop_min_seen(args):
    """--min-seen N taken out of args: N, else 200 (a list seen fewer times is
    left out)."""
    if "--min-seen" not in args:
        return 200
    i = args.index("--min-seen")
    n = int(args[i + 1])
    del args[i:i + 2]
    return n


def sites(args):
    min_seen = pop_min_seen(args)
    specs = {}
    for ins in load_vlists(args):
        for lst in ins["lists"]:
            if lst["seen"] < min_seen:
                continue
            s = spec_of(ins, lst)
            if not s:
                continue
            off, when, reg = s[0].split(":")
            specs.setdefault((off, when), set()).add(reg)
    print(";".join("%s:%s:%s" % (o, w, ",".join(sorted(r))) for (o, w), r in sorted(specs.items())))


def report(args):
    min_seen = pop_min_seen(args)
    truth = json.load(open(args[-1]))
    rows = []
    for ins in load_vlists(args[1:-1]):
        for lst in ins["lists"]:
            if lst["seen"] < min_seen:
                continue
            s = spec_of(ins, lst)
            if not s or s[0] not in truth:
                continue
            key, how = s
            t = {int(v, 16): c for v, c in truth[key].items()}
            if isinstance(how, int):            # a load's width
                m = {}
                for v, c in t.items():
                    m[v & how] = m.get(v & how, 0) + c
                t = m
            elif how and how[0] == "branch":    # pc -> taken (1) / not (0)
                t2 = {}
                for v, c in t.items():
                    k = 1 if v == how[1] else 0
                    t2[k] = t2.get(k, 0) + c
                t = t2
            total = sum(t.values())
            if not total:
                continue
            top = lst["values"][0]
            dv = int(top["value"], 16) if kind_is_num(top["value"]) else None
            if how and how[0] == "branch":
                dv = 1 if top["text"] == "taken" else 0
            # targets: dcpi's value is VAL_CODE(tag, offset), tag 0 (this
            # image) is the file offset itself, as truth.c gives it
            tshare = t.get(dv, 0) / total
            ttop = max(t.items(), key=lambda x: x[1])
            if dv not in t and dv is not None and dv >= 1 << 32 and ttop[0] >= 1 << 32:
                # an address: the two runs lay memory out differently (dcpi's
                # runtime is preloaded, the environments differ), so compare
                # the shares of the top values, not the values
                tshare = ttop[1] / total
                dv = ttop[0]
            rows.append({
                "proc": ins["procedure"], "off": ins["offset"], "kind": lst["kind"],
                "seen": lst["seen"], "value": top["text"], "share": top["share"],
                "truth_share": tshare, "truth_top_share": ttop[1] / total,
                "same_top": dv == ttop[0] or abs(t.get(dv, 0) - ttop[1]) <= 0.01 * total,
                "execs": total,
            })
    print("%-22s %-8s %-7s %6s %10s  %-18s %7s %7s %7s  %-15s %-15s" % (
        "procedure", "offset", "kind", "seen", "executions", "dcpi top value", "dcpi", "truth",
        "error", "dcpi class", "truth class"))
    errs = []
    agree = same = 0
    for r in rows:
        err = 100 * (r["share"] - r["truth_share"])
        errs.append(abs(err))
        c1, c2 = klass(r["share"]), klass(r["truth_top_share"])
        agree += c1 == c2
        same += r["same_top"]
        print("%-22s %-8s %-7s %6d %10d  %-18s %6.1f%% %6.1f%% %+6.1f  %-15s %-15s" % (
            r["proc"][:22], r["off"], r["kind"], r["seen"], r["execs"], r["value"][:18],
            100 * r["share"], 100 * r["truth_share"], err, c1, c2))
    if rows:
        errs.sort()
        print("\n%d sites: top value the truth's top on %d; share error (points) mean %.2f, "
              "median %.2f, max %.2f; within 3 points %d/%d; class agrees on %d/%d; "
              "invariant by both %d, by dcpi only %d, by truth only %d" % (
                  len(rows), same, sum(errs) / len(errs), errs[len(errs) // 2], errs[-1],
                  sum(e <= 3 for e in errs), len(errs), agree, len(rows),
                  sum(klass(r["share"]) == "invariant" and klass(r["truth_top_share"]) == "invariant"
                      for r in rows),
                  sum(klass(r["share"]) == "invariant" and klass(r["truth_top_share"]) != "invariant"
                      for r in rows),
                  sum(klass(r["share"]) != "invariant" and klass(r["truth_top_share"]) == "invariant"
                      for r in rows)))


def kind_is_num(v):
    return v.startswith("0x") or v.lstrip("-").isdigit()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if sys.argv[1] == "sites":
        sites(sys.argv[2:])
    else:
        report(sys.argv[1:])
