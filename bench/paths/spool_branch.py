#!/usr/bin/env python3
"""One branch as raw path bursts see it (docs/paths.md, "Time weighting").

usage: spool_branch.py SPOOLDIR IMAGE BRANCH TAKEN [LO HI]

SPOOLDIR holds the runtime's spool files (collect/pathrt.h): run the program
with the runtime preloaded and no `dcpi record` around it, which would
replay and remove them:

    mkdir -m 700 /tmp/sp
    DCPI_PATHS_DIR=/tmp/sp DCPI_PATHS=250:64 LD_PRELOAD=build/libdcpi-paths.so PROG ...

IMAGE is the path (or its tail) of the mapped file; BRANCH the file offset
of a conditional branch and TAKEN of its target; LO..HI (file offsets, the
loop's blocks) picks the bursts that start inside a loop.  Prints how often
the branch was seen taken and not, overall and for bursts starting in
LO..HI, and for those how many back edges they saw before the exit.
"""
import collections
import glob
import struct
import sys

MAGIC, MAPS, BURST, VBURST = 0x48544150, 1, 2, 3
HDR = struct.Struct("<IIIIIIQ")


def bursts(d, image):
    """(flags, [file offset or None]) per burst of every spool file in d."""
    for f in sorted(glob.glob(d + "/*.spool")):
        data = open(f, "rb").read()
        off, maps = 0, []
        while off + HDR.size <= len(data):
            magic, typ, ln, _pid, _tid, flags, _t = HDR.unpack_from(data, off)
            if magic != MAGIC or ln < HDR.size or off + ln > len(data):
                sys.exit("%s: bad record at byte %d" % (f, off))
            body = data[off + HDR.size:off + ln]
            if typ == MAPS:
                maps = []
                for line in body.decode(errors="replace").splitlines():
                    a = line.split(None, 3)
                    if len(a) == 4 and a[3].endswith(image):
                        maps.append((int(a[0], 16), int(a[1], 16), int(a[2], 16)))
            elif typ in (BURST, VBURST):
                n = len(body) // 8 if typ == BURST else len(body) // (8 + 136)
                pcs = struct.unpack_from("<%dQ" % n, body)
                out = []
                for pc in pcs:
                    hit = [pc - s + o for s, e, o in maps if s <= pc < e]
                    out.append(hit[0] if hit else None)
                yield flags, out
            off += ln


def main():
    if len(sys.argv) not in (5, 7):
        sys.exit(__doc__)
    d, image = sys.argv[1], sys.argv[2]
    br, tk = int(sys.argv[3], 0), int(sys.argv[4], 0)
    lo, hi = (int(sys.argv[5], 0), int(sys.argv[6], 0)) if len(sys.argv) == 7 else (1, 0)
    seen = collections.Counter()
    before_exit = collections.Counter()
    nb = inside = 0
    for _flags, pcs in bursts(d, image):
        nb += 1
        start_in = pcs[0] is not None and lo <= pcs[0] < hi
        inside += start_in
        backs, ended = 0, False
        for a, b in zip(pcs, pcs[1:]):
            if a != br or b is None:
                continue
            taken = b == tk
            seen[(start_in, taken)] += 1
            if start_in and not ended:
                if taken:
                    backs += 1
                else:
                    before_exit[("exit", backs)] += 1
                    ended = True
        if start_in and not ended:
            before_exit[("no exit", backs)] += 1
    t = seen[(False, True)] + seen[(True, True)]
    nt = seen[(False, False)] + seen[(True, False)]
    print("%d bursts, %d starting in %#x..%#x" % (nb, inside, lo, hi))
    print("branch %#x: taken %d, not taken %d, p(taken) %.3f" %
          (br, t, nt, t / (t + nt) if t + nt else float("nan")))
    if inside:
        ti, ni = seen[(True, True)], seen[(True, False)]
        print("  from bursts starting inside: taken %d, not taken %d, p %.3f" %
              (ti, ni, ti / (ti + ni) if ti + ni else float("nan")))
        for (what, k), v in sorted(before_exit.items()):
            print("  %-7s after %d back edges: %d bursts" % (what, k, v))


if __name__ == "__main__":
    main()
