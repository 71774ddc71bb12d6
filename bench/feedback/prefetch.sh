#!/bin/sh
# bench/feedback/prefetch.sh - does `dcpi prefetch-hints` make a program
# faster?  (make feedback runs it after the PGO comparison; alone:
# BUILD=build sh bench/feedback/prefetch.sh)
#
# tests/workloads/strided.c walks one 8-byte key of each 4160-byte record: a
# constant stride across pages, which the hardware prefetchers do not follow,
# over more records than the caches hold.  It is built with clang-19 as a
# profiling build (-g -fdebug-info-for-profiling -mllvm
# -x86-discriminate-memops), trained on TRAIN records (dcpi record for the
# samples, callgrind for the exact executions: dcpi import), given the hints
# dcpi prefetch-hints writes, rebuilt with them, and timed on EVAL records (a
# different size), each binary RUNS times interleaved: the walk's own time
# (the program prints it), least and median.
#
# Knobs: TRAIN (default "300000 8": records, passes), EVAL ("600000 12"),
# RUNS (7).  Memory: records x 4160 bytes (2.5 GB at the default EVAL).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
DCPI=$B/dcpi
TRAIN=${TRAIN:-300000 8}
EVAL=${EVAL:-600000 12}
RUNS=${RUNS:-7}
CC19=${CC19:-clang-19}
command -v "$CC19" > /dev/null 2>&1 || { echo "prefetch: $CC19 missing (apt-get install clang-19)" >&2; exit 1; }
command -v valgrind > /dev/null 2>&1 || { echo "prefetch: valgrind missing" >&2; exit 1; }
W=$B/feedback/prefetch
rm -rf "$W" && mkdir -p "$W"
FLAGS="-O2 -g -fdebug-info-for-profiling -mllvm -x86-discriminate-memops"

# shellcheck disable=SC2086
"$CC19" $FLAGS "$ROOT/tests/workloads/strided.c" -o "$W/base"
echo "prefetch: training on $TRAIN (records passes)" >&2
# shellcheck disable=SC2086
"$DCPI" record --no-paths --db "$W/rec" -- "$W/base" $TRAIN > /dev/null 2> "$W/record.log"
# shellcheck disable=SC2086
valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --cache-sim=yes --branch-sim=yes \
	--callgrind-out-file="$W/cg.out" "$W/base" $TRAIN > /dev/null 2> "$W/callgrind.log"
"$DCPI" import "$W/cg.out" --db "$W/cg" > "$W/import.log" 2>&1
"$DCPI" prefetch-hints --db "$W/rec" --exact "$W/cg" "$W/base" -o "$W/hints.afdo" | tee "$W/report.txt"
[ -s "$W/hints.afdo" ] || { echo "prefetch: no hint written" >&2; exit 1; }
# shellcheck disable=SC2086
"$CC19" $FLAGS -mllvm -prefetch-hints-file="$W/hints.afdo" "$ROOT/tests/workloads/strided.c" \
	-o "$W/hinted"
objdump -d "$W/hinted" | grep -q prefetcht0 || { echo "prefetch: clang inserted no prefetch" >&2; exit 1; }

echo "prefetch: timing on $EVAL, $RUNS runs interleaved" >&2
for r in $(seq "$RUNS"); do
	for v in base hinted; do
		# shellcheck disable=SC2086
		t=$("$W/$v" $EVAL 2>&1 > /dev/null | sed -n 's/^walk \([0-9.]*\) s$/\1/p')
		echo "$v $t"
	done
done > "$W/times.txt"
stat() {	# least and median of variant $1's times
	grep "^$1 " "$W/times.txt" | cut -d' ' -f2 | sort -n |
		awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
			printf "%.3f %.3f\n", a[1], m }'
}
b=$(stat base)
h=$(stat hinted)
printf '%-8s %10s %10s   (load average %s)\n' binary "least s" "median s" "$(cut -d' ' -f1 /proc/loadavg)"
printf '%-8s %10s %10s\n' base ${b} hinted ${h}
echo "$b $h" | awk '{ printf "speedup (base / hinted): least %.2fx, median %.2fx\n", $1 / $3, $2 / $4 }'
