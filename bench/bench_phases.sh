#!/bin/sh
# bench_phases.sh - what keeping time slices and detecting phases costs the
# collector (collect/phase.c, docs/phases.md): `dcpi record` on a fixed
# amount of work (tests/workloads/cpubound, then membound), with and without
# --no-slices, alternated ROUNDS times in one run so that both see the same
# machine; prints the collector's own CPU time (user + sys of dcpi record
# less the workload's, from /proc via `time`) and the wall time, medians,
# and their ratio (slices / none).  The target: within 1% (ratio <= 1.01).
# Not run by the tests; the lead times it alone.
#
#   BUILD=build ROUNDS=9 sh bench/bench_phases.sh
set -e
: "${BUILD:=build}"
: "${ROUNDS:=9}"
DCPI="$BUILD/dcpi"
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-phases-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM

for w in cpubound membound; do
	if [ ! -x "$BUILD/workloads/$w" ]; then
		echo "bench_phases: $BUILD/workloads/$w: not built (make $BUILD/workloads/$w)" >&2
		exit 1
	fi
done

# one run: "wall cpu" seconds of dcpi record (children included)
one() {
	rm -rf "$T/db"
	/usr/bin/env time -f "%e %U %S" -o "$T/t" "$DCPI" record --no-calibrate --no-paths \
		--seed 1 $1 --db "$T/db" -- "$BUILD/workloads/$2" >/dev/null 2>&1
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$T/t"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

for w in cpubound membound; do
	: > "$T/on"
	: > "$T/off"
	i=0
	while [ $i -lt "$ROUNDS" ]; do
		one "" $w >> "$T/on"
		one --no-slices $w >> "$T/off"
		i=$((i + 1))
	done
	won=$(cut -d' ' -f1 "$T/on" | median)
	woff=$(cut -d' ' -f1 "$T/off" | median)
	con=$(cut -d' ' -f2 "$T/on" | median)
	coff=$(cut -d' ' -f2 "$T/off" | median)
	awk -v w=$w -v a="$won" -v b="$woff" -v c="$con" -v d="$coff" 'BEGIN {
		printf "%-9s wall %.3f s vs %.3f s (ratio %.4f), cpu %.3f s vs %.3f s " \
		       "(ratio %.4f): slices+phases vs --no-slices\n", w, a, b, a / b, c, d, c / d
	}'
done
