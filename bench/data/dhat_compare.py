#!/usr/bin/env python3
"""bench/data/dhat_compare.py - `dcpi mem`'s heap sites against DHAT's.

The truth is valgrind's DHAT (--tool=dhat) on the same command: per
allocation stack, the bytes read and written.  dcpi names a heap block by
the return address of its malloc/calloc/realloc call (collect/pathrt.c), so
a DHAT stack is keyed by its first frame after the allocator: in the
program's image as the ELF function symbol and offset of the return address
(DHAT prints return address - 1; valgrind loads a PIE at --base), elsewhere
by the function's name alone.  dcpi's share of a site is its bytes over all
heap sites' bytes, the unit DHAT counts, as --mode says (docs/data.md,
"Weighting"): appearances, each sampled access times its operand's size,
a read-modify-write twice (`dcpi mem --json` "bytes"); weighted, each weighing its instruction's
estimated executions (`dcpi mem --weighted`, "weighted_bytes");
with-syscalls, those plus the bytes the kernel moved into and out of the
site's blocks, counted (`dcpi mem --with-syscalls`: DHAT counts them too).
The sampled accesses' shares are printed beside them.

  dhat_compare.py --dhat OUT.dhat --db DCPIDB --image PROGRAM [--top 5] [--tol 5]
                  [--mode appearances|weighted|with-syscalls]

Exits 1 when dcpi's top sites are not DHAT's in order or a share of DHAT's
top is off by more than --tol points (docs/data.md, "A real program").
"""
import argparse
import bisect
import json
import os
import re
import subprocess
import sys

FRAME = re.compile(r'^0x([0-9A-Fa-f]+): (\S+)')
VALGRIND_PIE_BASE = 0x108000     # where valgrind maps a PIE main program (amd64)


def elf_info(path):
    """(is PIE, end of the highest PT_LOAD, sorted [(addr, size, name)])."""
    hdr = subprocess.run(['readelf', '-hlW', path], capture_output=True, text=True,
                         check=True).stdout
    pie = 'DYN (' in hdr
    end = 0
    for line in hdr.splitlines():
        f = line.split()
        if f and f[0] == 'LOAD':
            end = max(end, int(f[3], 16) + int(f[5], 16))
    syms = []
    out = subprocess.run(['nm', '-S', '--defined-only', path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tTwW':
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    return pie, end, syms


def sym_off(syms, va):
    i = bisect.bisect_right(syms, (va, float('inf'), '')) - 1
    while i >= 0 and syms[i][0] <= va:
        if va < syms[i][0] + max(syms[i][1], 1):
            return '%s+0x%x' % (syms[i][2], va - syms[i][0])
        i -= 1
    return None


def dhat_sites(path, image):
    d = json.load(open(path))
    pie, end, syms = elf_info(image)
    base = VALGRIND_PIE_BASE if pie else 0
    sites, checked, wrong = {}, 0, 0
    for pp in d['pps']:
        frames = [d['ftbl'][i] for i in pp['fs']]
        k = 0
        while k < len(frames) and 'vgpreload' in frames[k]:
            k += 1
        if k == len(frames):
            continue
        m = FRAME.match(frames[k])
        if not m:
            continue
        addr, func = int(m.group(1), 16), m.group(2)
        key = None
        if base <= addr < base + end:
            key = sym_off(syms, addr + 1 - base)
            # the outermost frame at this address is the ELF function
            names = [FRAME.match(f).group(2) for f in frames[k:]
                     if FRAME.match(f) and int(FRAME.match(f).group(1), 16) == addr]
            checked += 1
            if not key or key.split('+')[0] not in names:
                wrong += 1
        if not key:
            key = func
        sites[key] = sites.get(key, 0) + pp.get('rb', 0) + pp.get('wb', 0)
    if wrong:
        print('warning: %d of %d DHAT frames in %s do not symbolize at base 0x%x'
              % (wrong, checked, image, base), file=sys.stderr)
    return sites


def dcpi_sites(args):
    mode = {'appearances': [], 'weighted': ['--weighted'],
            'with-syscalls': ['--with-syscalls']}[args.mode]
    out = subprocess.run([args.dcpi, 'mem', '--json', '--top', '1000000', '--epoch',
                          args.epoch, '--db', args.db] + mode, capture_output=True,
                         text=True, check=True).stdout
    d = json.loads(out)
    prog = os.path.basename(args.image)
    by, acc = {}, {}
    for o in d['objects']:
        if o['kind'] != 'heap':
            continue
        site = o['name'].split(' at ', 1)[1]
        key = site if o['image'] == prog else site.split('+')[0]
        v = o.get('weighted_bytes') if mode else o.get('bytes', o['accesses'])
        by[key] = by.get(key, 0) + v
        acc[key] = acc.get(key, 0) + o['accesses']
    return by, acc


def shares(v):
    t = float(sum(v.values())) or 1.0
    return {k: 100.0 * n / t for k, n in v.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dhat', required=True)
    ap.add_argument('--db', required=True)
    ap.add_argument('--image', required=True, help='the program (its ELF symbols)')
    ap.add_argument('--dcpi', default=os.path.join(os.path.dirname(__file__), '..', '..',
                                                   'build', 'dcpi'))
    ap.add_argument('--epoch', default='all')
    ap.add_argument('--top', type=int, default=5)
    ap.add_argument('--tol', type=float, default=5.0)
    ap.add_argument('--mode', choices=['appearances', 'weighted', 'with-syscalls'],
                    default='appearances')
    args = ap.parse_args()

    truth = shares(dhat_sites(args.dhat, args.image))
    b, a = dcpi_sites(args)
    got, got_acc = shares(b), shares(a)
    t_rank = sorted(truth, key=lambda k: -truth[k])[:args.top]
    g_rank = sorted(got, key=lambda k: -got[k])[:args.top]
    print('%-4s %-48s %8s %8s %8s  %s' % ('rank', 'site (DHAT top)', 'DHAT', 'dcpi',
                                         'dcpi acc', 'dcpi rank'))
    ok = True
    for i, k in enumerate(t_rank):
        r = g_rank.index(k) + 1 if k in g_rank else '-'
        diff = abs(truth[k] - got.get(k, 0.0))
        ok &= diff <= args.tol
        print('%-4d %-48.48s %7.1f%% %7.1f%% %7.1f%%  %s%s' %
              (i + 1, k, truth[k], got.get(k, 0.0), got_acc.get(k, 0.0), r,
               '' if diff <= args.tol else '  off by %.1f' % diff))
    ok &= g_rank == t_rank
    extra = [k for k in g_rank if k not in t_rank]
    for k in extra:
        print('dcpi top %d has %s (%.1f%%; DHAT %.1f%%)' %
              (args.top, k, got[k], truth.get(k, 0.0)))
    print('order %s, shares %s' % ('same' if g_rank == t_rank else 'differs',
                                   'within %.0f points' % args.tol if all(
                                       abs(truth[k] - got.get(k, 0.0)) <= args.tol
                                       for k in t_rank) else 'not all within'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
