#!/usr/bin/env python3
"""bench/data/exec_oracle.py - heap sites' shares with exact executions.

Why do `dcpi mem`'s heap shares differ from DHAT's (docs/data.md, "Why the
shares differ")?  `dcpi mem --weighted` weighs each sampled access of
instruction i by E_i / A_i: its estimated executions over its appearances in
the step samples.  This script puts callgrind's exact executions (Ir of
`valgrind --tool=callgrind --dump-instr=yes` on the same command) in place
of the estimates, for the instructions of the program's image: if the shares
then meet DHAT's, the appearances are placed right and only the executions
are wrong; if not, the difference is in what the samples see.  It prints,
per heap site of DHAT's top, DHAT's share, dcpi's by appearances, by exact
executions, and the procedures whose accesses carry the site with their
appearances per million executions (A/E: the same for every procedure if
the samples were proportional to executions).

Instructions outside the image (libc's memmove under valgrind is another
ifunc variant) weigh the image's overall ratio sum(E) / sum(A); so do the
image's instructions callgrind never saw.

  exec_oracle.py --callgrind OUT.cg --dhat OUT.dhat --db DCPIDB --image PROG [--top 5]
                 [--runs N]

With --runs N (the recordings merged in the epoch), each site's kernel bytes
(collect/pathrt_io.c, counted) divided by N are added to its exact-E bytes,
which are one run's.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True		# no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dhat_compare  # noqa: E402

NUM = re.compile(r'^(0x[0-9a-fA-F]+|[+-]\d+|\*)$')


def callgrind_ir(path, image):
    """{link address: Ir} of the instructions of image (callgrind's ob)."""
    ir, ob, cur, last, skip = {}, {}, None, 0, False
    real = os.path.realpath(image)
    for line in open(path, errors='replace'):
        if line.startswith(('ob=', 'cob=')):	# a name is defined where first used
            m = re.match(r'c?ob=\((\d+)\)(?: (.*))?', line.strip())
            if m.group(2):
                ob[m.group(1)] = m.group(2)
            if line.startswith('ob='):
                cur = ob.get(m.group(1))
            continue
        if line.startswith('calls='):
            skip = True		# the next line is the call's inclusive cost
            continue
        f = line.split()
        if not f or not NUM.match(f[0]):
            continue
        a = f[0]
        if a.startswith('0x'):
            addr = int(a, 16)
        elif a == '*':
            addr = last
        else:
            addr = last + int(a)
        last = addr
        if skip:
            skip = False
            continue
        if cur and os.path.realpath(cur) == real and len(f) >= 3:
            ir[addr] = ir.get(addr, 0) + int(f[2])
    return ir


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--callgrind', required=True)
    ap.add_argument('--dhat', required=True)
    ap.add_argument('--db', required=True)
    ap.add_argument('--image', required=True)
    ap.add_argument('--dcpi', default=os.path.join(os.path.dirname(__file__), '..', '..',
                                                   'build', 'dcpi'))
    ap.add_argument('--epoch', default='all')
    ap.add_argument('--top', type=int, default=5)
    ap.add_argument('--runs', type=int, default=0,
                    help='recordings in the epoch: add each site\'s kernel bytes per run')
    args = ap.parse_args()

    pie, _, syms = dhat_compare.elf_info(args.image)
    by_name = {name: addr for addr, _, name in syms}
    ir = callgrind_ir(args.callgrind, args.image)
    if not ir:
        sys.exit('no instruction of %s in %s' % (args.image, args.callgrind))
    out = subprocess.run([args.dcpi, 'mem', '--json', '--top', '1000000', '--insns', '1000000',
                          '--epoch', args.epoch, '--db', args.db], capture_output=True,
                         text=True, check=True).stdout
    d = json.loads(out)
    prog = os.path.basename(args.image)
    appear = {}			# site -> appearances in every object
    for o in d['objects']:
        for i in o['instructions']:
            appear[i['site']] = appear.get(i['site'], 0) + i['accesses']

    def execs(site):
        """Exact executions of an instruction of the image, or None."""
        m = re.match(r'^(.*)\+0x([0-9a-f]+)$', site)
        if not m or m.group(1) not in by_name:
            return None
        return ir.get(by_name[m.group(1)] + int(m.group(2), 16))

    e_all = sum(execs(s) or 0 for s in appear)
    a_all = sum(a for s, a in appear.items() if execs(s))
    ratio = e_all / a_all if a_all else 0
    truth = dhat_compare.shares(dhat_compare.dhat_sites(args.dhat, args.image))
    app, ex, procs = {}, {}, {}
    for o in d['objects']:
        if o['kind'] != 'heap':
            continue
        site = o['name'].split(' at ', 1)[1]
        key = site if o['image'] == prog else site.split('+')[0]
        if args.runs:		# exact-E bytes are one run's: so are these
            ex[key] = ex.get(key, 0) + (o['kernel_in'] + o['kernel_out']) / args.runs
        for i in o['instructions']:
            e = execs(i['site'])
            w = e / appear[i['site']] if e else ratio
            app[key] = app.get(key, 0) + i['bytes']
            ex[key] = ex.get(key, 0) + w * i['bytes']
            p = procs.setdefault(key, {}).setdefault(i['site'].rsplit('+', 1)[0],
                                                     [0, 0, 0])
            p[0] += i['bytes']
            if e:
                p[1] += i['accesses']
                p[2] += e * i['accesses'] / appear[i['site']]
    app_s, ex_s = dhat_compare.shares(app), dhat_compare.shares(ex)
    print('image instructions: %d executions per appearance overall (%d of %d appearances '
          'matched)' % (ratio, a_all, sum(appear.values())))
    print('%-4s %-44s %7s %7s %7s  %s' % ('rank', 'site (DHAT top)', 'DHAT', 'appear',
                                          'exact-E' + ('+k' if args.runs else ''),
                                          'procedures: bytes share, A per M execs'))
    for r, k in enumerate(sorted(truth, key=lambda k: -truth[k])[:args.top]):
        ps = sorted(procs.get(k, {}).items(), key=lambda x: -x[1][0])[:3]
        tb = sum(v[0] for v in procs.get(k, {}).values()) or 1
        desc = '; '.join('%s %.0f%% %s' % (n, 100.0 * v[0] / tb,
                                            '%.2f' % (1e6 * v[1] / v[2]) if v[2] else '-')
                         for n, v in ps)
        print('%-4d %-44.44s %6.1f%% %6.1f%% %6.1f%%  %s' %
              (r + 1, k, truth[k], app_s.get(k, 0), ex_s.get(k, 0), desc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
