#!/bin/sh
# bench/paths/calls_cost.sh - what counting a procedure's calls at its entry
# costs (docs/paths.md, "Calls counted at the entry"): tests/workloads/calls
# calls cl_count, 8 bytes of prologue and 4 more instructions, N times in a
# tight loop and times the loop itself; recorded by `dcpi record` at the
# fewest path bursts (--paths 1:2), with and without a plan that counts its
# calls (entry=534889fb4883ec10), RUNS interleaved runs each.  Prints the
# least ns per call of each and their difference: the trampoline's cost.
# Environment: BUILD (default build), N (default 100000000), RUNS (default 5).
set -eu
: "${BUILD:=build}"
: "${N:=100000000}"
: "${RUNS:=5}"
DCPI=$(cd "$BUILD" && pwd)/dcpi
WL=$(cd "$BUILD" && pwd)/workloads/calls
W=$(mktemp -d "${TMPDIR:-/tmp}/dcpi-calls-cost.XXXXXX")
trap 'rm -rf "$W"' EXIT
[ -x "$WL" ] || { echo "calls_cost.sh: $WL missing (make all-tests)"; exit 1; }
bid=$(readelf -n "$WL" | awk '/Build ID/ { print $3 }')
off=$(nm "$WL" | awk '$3 == "cl_count" { print $1 }')
printf 'dcpi-plan 1\nimage 0 %s %s\nproc 0 %x 12 entry=534889fb4883ec10 cl_count\n' \
	"${bid:--}" "$WL" "$((0x$off))" > "$W/plan.txt"
run() {	# $1: extra options; prints ns per call
	rm -rf "$W/db"
	"$DCPI" record -q --no-calibrate --paths 1:2 $1 --db "$W/db" -- "$WL" loop "$N" \
		2> "$W/err" | awk '{ print $6 }'
}
least() { sort -g | head -n 1; }
: > "$W/bare"
: > "$W/counted"
i=0
while [ "$i" -lt "$RUNS" ]; do
	run "" >> "$W/bare"
	run "--plan $W/plan.txt" >> "$W/counted"
	i=$((i + 1))
done
grep -q " counted-calls=$N " "$W/db/00000001/meta" ||
	{ echo "calls_cost.sh: not counted:"; cat "$W/err"; exit 1; }
b=$(least < "$W/bare")
c=$(least < "$W/counted")
echo "cl_count, $N calls, least of $RUNS runs: $b ns/call, counted $c ns/call," \
	"$(echo "$c - $b" | bc -l | sed 's/^\./0./;s/^-\./-0./') ns/call added"
