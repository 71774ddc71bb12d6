#!/bin/sh
# bench/bench_calc_speed.sh - dcpicalc on one hot procedure of a 30 MB binary
# (cc1 during `gcc -O2 -c` of a generated C file) beside
# `perf annotate --stdio -s SYMBOL` on a perf.data of the same gcc run.
# Prints both times (median of 3) and the ratio.
#
# BUILD (default build), CALC_FUNCS (functions in the generated file, 800).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
N=${CALC_FUNCS:-800}
T=${CALC_WORK:-$B/bench-calc-speed}
for t in gcc perf python3; do
	command -v $t > /dev/null 2>&1 || { echo "bench_calc_speed: $t missing" >&2; exit 1; }
done
[ -x "$B/dcpicalc" ] || { echo "bench_calc_speed: $B/dcpicalc missing" >&2; exit 1; }
rm -rf "$T" && mkdir -p "$T"
CC1=$(gcc -print-prog-name=cc1)

# a largish deterministic C file: loops, switches, structs, inlining work
python3 - "$N" > "$T/big.c" << 'EOF'
import random, sys
n = int(sys.argv[1]); r = random.Random(7)
print("#include <string.h>\nstruct s { int a[16]; double d; long l; };")
for i in range(n):
    k = r.randint(2, 9)
    print("static inline int h%d(int x) { return (x * %d) ^ (x >> %d); }" % (i, r.randint(3, 99), k))
    print("int f%d(struct s *p, int n, const char *q) {" % i)
    print("  int acc = %d; double z = p->d;" % i)
    print("  for (int i = 0; i < n; i++) {")
    print("    switch ((i + q[i & 7]) & 7) {")
    for c in range(8):
        print("    case %d: acc += h%d(p->a[(i + %d) & 15]) * %d; z += acc * %d.5; break;" % (
            c, i, c, r.randint(1, 50), c))
    print("    }")
    print("    if (acc > %d) acc -= (int)z; else p->l += acc;" % r.randint(100, 10000))
    print("  }")
    print("  memset(p->a, acc & 0xff, sizeof p->a); return acc + (int)p->l;")
    print("}")
EOF

echo "bench_calc_speed: $(wc -l < "$T/big.c") lines of C, cc1 $(stat -c %s "$CC1") bytes" >&2
"$B/dcpi" record -e cpu-clock -c 100000 --db "$T/db" -- gcc -O2 -c "$T/big.c" -o "$T/big.o" \
	> "$T/record.log" 2>&1
perf record -q -e cpu-clock -o "$T/perf.data" -- gcc -O2 -c "$T/big.c" -o "$T/big2.o" \
	> "$T/perf.log" 2>&1

# the hottest cc1 procedure perf can also name (cc1 is stripped: .dynsym names)
"$B/dcpiprof" --db "$T/db" --json > "$T/prof.json"
python3 - "$T/prof.json" "$CC1" > "$T/pick.txt" << 'EOF'
import json, os, sys
rows = json.load(open(sys.argv[1]))["procedures"]
cc1 = os.path.realpath(sys.argv[2])
rows = [r for r in rows if os.path.realpath(r["image"]) == cc1]
rows.sort(key=lambda r: -sum(r["samples"].values()))
named = [r for r in rows if "+0x" not in r["name"]]
top = rows[0]
pick = named[0] if named else top
# perf prints C++ names without their parameter lists
perf_name = pick["name"].split("(")[0]
print("\t".join(str(x) for x in (pick["name"], pick["address"], sum(pick["samples"].values()),
                                top["name"], sum(top["samples"].values()), perf_name)))
EOF
IFS='	' read -r SYM ADDR SSAMP TOP TSAMP PSYM < "$T/pick.txt"
echo "bench_calc_speed: hottest cc1 procedure $TOP ($TSAMP samples); timing $SYM ($SSAMP samples)" >&2

# median of 3 wall-clock seconds of a command; its output kept in $T/out.txt
med3() {
	for _ in 1 2 3; do
		s=$(date +%s.%N)
		"$@" > "$T/out.txt" 2> "$T/err.txt" || echo "bench_calc_speed: failed: $* ($(tail -1 "$T/err.txt"))" >&2
		e=$(date +%s.%N)
		echo "$s $e" | awk '{ printf "%.4f\n", $2 - $1 }'
	done | sort -n | sed -n 2p
}
tc=$(med3 "$B/dcpicalc" "$ADDR" --image "$CC1" --db "$T/db")
lc=$(wc -l < "$T/out.txt")
tj=$(med3 "$B/dcpicalc" "$ADDR" --image "$CC1" --db "$T/db" --json --method dcpi)
tp=$(med3 perf annotate --stdio -i "$T/perf.data" -s "$PSYM")
lp=$(wc -l < "$T/out.txt")
echo "procedure: $SYM at $ADDR in cc1 ($(stat -c %s "$CC1") bytes), $SSAMP dcpi samples; perf name $PSYM"
printf 'dcpicalc PROC (text, default method global): %8.3f s  (%s lines)\n' "$tc" "$lc"
printf 'dcpicalc PROC --json --method dcpi:          %8.3f s\n' "$tj"
printf 'perf annotate --stdio -s SYMBOL:             %8.3f s  (%s lines)\n' "$tp" "$lp"
echo "$tc $tp" | awk '{ if ($2 > 0) printf "ratio dcpicalc / perf annotate: %.2f\n", $1 / $2 }'
