#!/usr/bin/env python3
"""Split a sample profile's shortfall into SHAPE and SCALE (bench/feedback).

A profile tells the compiler two things about each function: how hot it is
(its total: the SCALE) and how that total spreads over its blocks, calls and
inlined code (the SHAPE).  Given the profile of exact counts and dcpi's,
this writes profiles that take one from each, so that building with them
says which of the two costs the speed (bench/feedback/README.md, "Shape or
scale").

usage: mix.py scale SHAPE.prof SCALE.prof OUT.txt
           every function of SHAPE with its counts scaled so that its total
           is SCALE's (functions SCALE lacks are left out)
       mix.py swap BASE.prof OTHER.prof OUT.txt NAME...
           BASE, except that the functions whose names contain one of NAME
           take OTHER's shape at BASE's total

Profiles are read through `llvm-profdata-19 merge --sample --text` (any
format it reads, line- or probe-keyed); OUT is text, for `llvm-profdata-19
merge --sample --extbinary` or clang directly.
"""
import re
import subprocess
import sys

PROFDATA = "llvm-profdata-19"
HEAD = re.compile(r"(.+):(\d+):(\d+)$")
BODY = re.compile(r"(\d+(?:\.\d+)?): (.+)$")


def functions(path):
    """{name: (total, [lines])}, the top-level functions of a profile."""
    text = subprocess.run([PROFDATA, "merge", "--sample", "--text", path, "-o", "-"],
                          capture_output=True, text=True, check=True).stdout
    out, cur = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            m = HEAD.match(line)
            if not m:
                sys.exit("mix.py: %s: not a function header: %r" % (path, line))
            cur = m.group(1)
            out[cur] = (int(m.group(2)), [line])
        elif cur is not None:
            out[cur][1].append(line)
    return out


def scaled(line, f):
    """One line of a function's text with every count multiplied by f."""
    if not line.strip() or line.strip().startswith("!"):
        return line                     # !CFGChecksum and the like
    indent = line[:len(line) - len(line.lstrip())]
    s = line.strip()
    if not indent:                      # name:total:head
        m = HEAD.match(s)
        return "%s:%d:%d" % (m.group(1), round(int(m.group(2)) * f),
                             round(int(m.group(3)) * f))
    m = BODY.match(s)
    if not m:
        sys.exit("mix.py: cannot read %r" % line)
    key, rest = m.group(1), m.group(2).split()
    if rest[0].isdigit():               # "N: count [callee:count ...]"
        words = [str(round(int(rest[0]) * f))]
        for t in rest[1:]:
            name, c = t.rsplit(":", 1)
            words.append("%s:%d" % (name, round(int(c) * f)))
        return "%s%s: %s" % (indent, key, " ".join(words))
    name, c = rest[0].rsplit(":", 1)    # an inlined call site: "N: callee:total"
    return "%s%s: %s:%d" % (indent, key, name, round(int(c) * f))


def rescaled(lines, total, want):
    return [scaled(x, want / total) for x in lines] if total > 0 else lines


def main(argv):
    if len(argv) < 5 or argv[1] not in ("scale", "swap") or \
            (argv[1] == "swap" and len(argv) < 6):
        sys.exit(__doc__)
    mode, a, b, out = argv[1:5]
    A, B = functions(a), functions(b)
    lines = []
    if mode == "scale":
        for name, (total, body) in A.items():
            if name in B and total > 0:
                lines += rescaled(body, total, B[name][0])
    else:
        names = argv[5:]
        for name, (total, body) in A.items():
            if any(n in name for n in names) and name in B and B[name][0] > 0:
                lines += rescaled(B[name][1], B[name][0], total)
            else:
                lines += body
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv)
