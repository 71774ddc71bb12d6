#!/bin/sh
# bench/culprits/run.sh - `make culprits`: the DCPI paper's fig. 10 redone
# (docs/culprits.md).  Three programs the culprit rules were not tuned on
# (sort, mawk counting words, zstd -9; 8 MB of text) are recorded natively with dcpi record
# and under callgrind (--cache-sim=yes --branch-sim=yes), like make accuracy's
# workloads; fig10.py then correlates, per procedure, the stall cycles
# dcpicalc attributes to D-cache misses, mispredicts and I-cache misses (from
# the code alone: --no-events) with the simulated events x cost.  When make
# bpsim has built the valgrind tool bpsim ($BUILD/bpsim/lib), each workload
# also runs under it (a TAGE predictor, bench/culprits/bpsim) into NAME/bp, a
# second mispredict yardstick beside callgrind's 2-bit counters.  The
# workloads of make accuracy (the ones the rules were tuned on) are added when
# their recordings exist (ACC_WORK, default $BUILD/accuracy).
#
# Environment: BUILD (default build), CUL_WORK (default $BUILD/culprits),
# CUL_REUSE=1 (keep recordings; run only a missing bpsim), ACC_WORK.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
W=${CUL_WORK:-$B/culprits}
ACC=${ACC_WORK:-$B/accuracy}
DCPI=$B/dcpi
[ -x "$DCPI" ] || { echo "culprits: $DCPI missing: make BUILD=$BUILD all" >&2; exit 1; }
for t in valgrind sort mawk zstd python3; do
	command -v "$t" > /dev/null 2>&1 || { echo "culprits: $t missing" >&2; exit 1; }
done
mkdir -p "$W"
if [ ! -s "$W/words.txt" ]; then
	python3 "$ROOT/bench/accuracy/gen_inputs.py" "$W" 8 10 > /dev/null
fi
printf '{ for (i = 1; i <= NF; i++) c[$i]++ }\nEND { for (k in c) n += c[k]; print n }\n' \
	> "$W/count.awk"
WL="sort|sort $W/words.txt
mawk|mawk -f $W/count.awk $W/words.txt
zstd|zstd -9 -T1 -c $W/words.txt"

BPLIB=$B/bpsim/lib
[ -x "$BPLIB/bpsim-amd64-linux" ] || echo "culprits: no $BPLIB (make bpsim): callgrind's mispredicts only" >&2

. "$ROOT/bench/culprits/bpsim.sh"

# bpsim NAME DIR CMD...: the TAGE mispredicts of CMD into DIR/bp
bpsim() {
	[ -x "$BPLIB/bpsim-amd64-linux" ] || return 0
	echo "culprits: bpsim $1" >&2
	bn=$2
	shift 2
	bpsim_run "$bn" "$@" < /dev/null
}

echo "$WL" | while IFS='|' read -r name cmd; do
	d=$W/$name
	if [ "${CUL_REUSE:-0}" = 1 ] && [ -d "$d/rec" ] && [ -d "$d/cg" ]; then
		if [ ! -d "$d/bp" ]; then
			# shellcheck disable=SC2086
			bpsim "$name" "$d" $cmd || exit 1
		fi
		continue
	fi
	rm -rf "$d" && mkdir -p "$d"
	echo "culprits: record $name" >&2
	# shellcheck disable=SC2086
	"$DCPI" record -e cpu-clock -c 100000 --db "$d/rec" -- $cmd > /dev/null 2> "$d/record.log" ||
		{ tail -3 "$d/record.log" >&2; exit 1; }
	# shellcheck disable=SC2086
	valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --cache-sim=yes \
		--branch-sim=yes --callgrind-out-file="$d/cg.out" $cmd > /dev/null 2> "$d/callgrind.log" ||
		{ tail -3 "$d/callgrind.log" >&2; exit 1; }
	"$DCPI" import "$d/cg.out" --db "$d/cg" > "$d/import.log" 2>&1 ||
		{ cat "$d/import.log" >&2; exit 1; }
	rm -f "$d/cg.out"
	# shellcheck disable=SC2086
	bpsim "$name" "$d" $cmd || exit 1
done

echo "== not tuned on: sort, mawk, zstd =="
python3 "$ROOT/bench/culprits/fig10.py" --bin "$B" --work "$W" --json "$W/fig10-holdout.json" \
	sort mawk zstd
tuned=""
for n in estloops demo_work twoprocs bzip2 gzip xz sqlite3 bc sha256sum; do
	[ -d "$ACC/$n/rec" ] && [ -d "$ACC/$n/cg" ] && tuned="$tuned $n"
done
if [ -n "$tuned" ]; then
	echo
	echo "== tuned on: make accuracy's workloads:$tuned =="
	# shellcheck disable=SC2086
	python3 "$ROOT/bench/culprits/fig10.py" --bin "$B" --work "$ACC" \
		--json "$W/fig10-tuned.json" $tuned
else
	echo "(make accuracy first for the workloads the rules were tuned on)"
fi
