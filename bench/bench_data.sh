#!/bin/sh
# bench_data.sh - what the data profiles cost beside the value samples they
# come from (docs/data.md, "Cost"): `dcpi record` (value samples on, the
# default) on tests/workloads/memobj objects and on bzip2-like membound work,
# with data profiles (the default) and without (DCPI_DATA=0 for the
# collector's pass, DCPI_HEAP_MIN=0 for the runtime's allocation records),
# alternated ROUNDS times in one run so both see the same machine; prints
# wall and CPU time (user + sys of dcpi record and its children), medians,
# and their ratio (data / values only).  The target: ratio <= 1.01.
# Written, not run by the tests; the lead times it alone.
#
#   BUILD=build ROUNDS=9 sh bench/bench_data.sh
set -e
: "${BUILD:=build}"
: "${ROUNDS:=9}"
DCPI="$BUILD/dcpi"
. bench/lib.sh
bench_tmp data
T=$tmp
bench_workloads bench_data memobj membound

# one run: "wall cpu" seconds of dcpi record (children included); $1 on|off
one() {
	rm -rf "$T/db"
	if [ "$1" = off ]; then
		set -- env DCPI_DATA=0 DCPI_HEAP_MIN=0 "$2" "$3"
	else
		set -- env "$2" "$3"
	fi
	/usr/bin/env time -f "%e %U %S" -o "$T/t" "$@" >/dev/null 2>&1
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$T/t"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

run() {	# NAME COMMAND...
	name=$1
	shift
	printf '#!/bin/sh\nexec "%s" record --no-calibrate --seed 1 --db "%s/db" -- %s\n' \
		"$DCPI" "$T" "$*" > "$T/cmd.sh"
	: > "$T/on"
	: > "$T/off"
	i=0
	while [ $i -lt "$ROUNDS" ]; do
		one on sh "$T/cmd.sh" >> "$T/on"
		one off sh "$T/cmd.sh" >> "$T/off"
		i=$((i + 1))
	done
	won=$(cut -d' ' -f1 "$T/on" | median)
	woff=$(cut -d' ' -f1 "$T/off" | median)
	con=$(cut -d' ' -f2 "$T/on" | median)
	coff=$(cut -d' ' -f2 "$T/off" | median)
	awk -v w="$name" -v a="$won" -v b="$woff" -v c="$con" -v d="$coff" 'BEGIN {
		printf "%-9s wall %.3f s vs %.3f s (ratio %.4f), cpu %.3f s vs %.3f s " \
		       "(ratio %.4f): data profiles vs value samples only\n", w, a, b, a / b, c, d, c / d
	}'
}

run memobj "$BUILD/workloads/memobj" objects 2
run membound "$BUILD/workloads/membound"
