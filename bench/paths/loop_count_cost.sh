#!/bin/sh
# bench/paths/loop_count_cost.sh - what counting the blocks of loops (those
# that walk a chain, those that hold the data accesses) costs
# (docs/estimate.md, "Loops counted"): each workload is
# recorded once for its plan, then RUNS times alternately with that plan and
# with the plan less its block lines (the entries still counted), at
# `-e cpu-clock -c 100000`, so that its samples are its CPU time in 0.1 ms;
# prints the least of each and their ratio.  The workloads: pointer chases
# over 16 KB (within L1: the plan leaves it uncounted), 256 KB and 64 MB
# (tests/workloads/chase), and a hash table's chain walk
# (tests/workloads/chain); more by "NAME=COMMAND" arguments.
# Environment: BUILD (default build), RUNS (default 5).
set -eu
: "${BUILD:=build}"
: "${RUNS:=5}"
B=$(cd "$BUILD" && pwd)
DCPI=$B/dcpi
W=$(mktemp -d "${TMPDIR:-/tmp}/dcpi-loop-cost.XXXXXX")
trap 'rm -rf "$W"' EXIT
[ -x "$B/workloads/chase" ] && [ -x "$B/workloads/chain" ] ||
	{ echo "loop_count_cost.sh: $B/workloads missing (make all-tests)"; exit 1; }
samples() {	# $1: log; the samples line's count
	sed -n 's/^dcpi record: \([0-9]*\) samples (.*/\1/p' "$1"
}
one() {	# $1 name, $2 command
	d=$W/$1
	mkdir -p "$d"
	# shellcheck disable=SC2086
	"$DCPI" record -q --db "$d/db" -- $2 > /dev/null 2>&1 || true
	[ -f "$d/db/00000001/plan.txt" ] ||
		{ printf '%-10s no plan: the first run failed or took no value sample\n' "$1"; return 0; }
	cp "$d/db/00000001/plan.txt" "$d/with.txt"
	grep -v '^block ' "$d/with.txt" > "$d/without.txt"
	: > "$d/with"
	: > "$d/without"
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		for v in with without; do
			rm -rf "$d/db$v"
			# shellcheck disable=SC2086
			"$DCPI" record -e cpu-clock -c 100000 --plan "$d/$v.txt" --db "$d/db$v" -- $2 \
				> /dev/null 2> "$d/log"
			samples "$d/log" >> "$d/$v"
		done
		i=$((i + 1))
	done
	w=$(sort -g "$d/with" | head -n 1)
	wo=$(sort -g "$d/without" | head -n 1)
	printf '%-10s %4d block lines  %7d samples counted  %7d not  x%s\n' "$1" \
		"$(grep -c '^block ' "$d/with.txt" || true)" "$w" "$wo" \
		"$(echo "scale=3; $w / $wo" | bc -l | sed 's/^\./0./')"
}
echo "least of $RUNS runs each, samples of 0.1 ms (CPU time); x: counted / not"
[ -n "${ONLY:-}" ] || one chase16k "$B/workloads/chase 16384 100000000"
[ -n "${ONLY:-}" ] || one chase256k "$B/workloads/chase 262144 30000000"
[ -n "${ONLY:-}" ] || one chase64m "$B/workloads/chase 67108864 3000000"
[ -n "${ONLY:-}" ] || one chain "$B/workloads/chain 1048576 4000000"
for a in "$@"; do
	one "${a%%=*}" "${a#*=}"
done
