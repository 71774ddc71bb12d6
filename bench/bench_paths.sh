#!/bin/sh
# bench_paths.sh - what path samples cost the recorded program (docs/paths.md):
# a CPU-bound workload (tests/workloads/cpubound) and bzip2 -9 of a generated
# file, each run bare, under `dcpi record --no-paths` and under dcpi record
# with path samples at several rates (the default first, then the default
# with --values: docs/values.md).  The figure is the
# command's own CPU time (user + system, where the trap handling is charged),
# the least over PATHS_RUNS interleaved runs, printed as a ratio to the bare
# run and to --no-paths measured in the same invocation.  Run by `make bench`
# with $BUILD set.  First bench/step_cost.c prints what one single step costs
# here, in the process (the runtime's way) and through ptrace.
#
#   PATHS_RUNS=N     runs of every configuration (default 5)
#   PATHS_RATES="R:K ..."   rates besides the default (default 50:32 100:32 250:32)
set -e
: "${BUILD:=build}"
: "${CC:=cc}"
: "${PATHS_RUNS:=5}"
: "${PATHS_RATES:=50:32 100:32 250:32}"
dcpi="$BUILD/dcpi"
cpu="$BUILD/workloads/cpubound"
. bench/lib.sh
bench_tmp bpaths

command -v bash >/dev/null 2>&1 || { echo "bench_paths: needs bash (its time builtin)"; exit 0; }
bench_need bench_paths -e "$dcpi" "$cpu" "$BUILD/libdcpi-paths.so"
mkdir -p "$BUILD/bench"
if $CC -std=gnu11 -O2 -o "$BUILD/bench/step_cost" bench/step_cost.c; then
	echo "== one single step, least of 5 runs of 20000; load $(cut -d' ' -f1-3 /proc/loadavg)"
	"$BUILD/bench/step_cost" 20000
fi
default=$("$dcpi" record --help | sed -n 's/.*(default \([0-9]*:[0-9]*\);.*/\1/p')
[ -n "$default" ] || default=25:32
configs="bare no-paths $default values $PATHS_RATES"

workloads="cpubound"
if command -v bzip2 >/dev/null 2>&1; then
	head -c 6000000 /dev/urandom | base64 >"$tmp/input"
	workloads="$workloads bzip2"
fi

# one WORKLOAD CONFIG: prints the command's CPU seconds and the bursts taken
one() {
	case $1 in
	cpubound) cmd="$cpu 1000000000" ;;
	bzip2) cmd="bzip2 -9 -c $tmp/input" ;;
	esac
	rm -rf "$tmp/db"
	# bash's time: the command's user and system time to the millisecond
	timed="bash -c 'TIMEFORMAT=\"%3U %3S\"; { time \"\$@\" >/dev/null; } 2>$tmp/t' timed"
	case $2 in
	bare)
		eval "$timed $cmd" 2>"$tmp/err" ;;
	no-paths)
		eval "$dcpi record -q --no-calibrate --no-paths --db $tmp/db -- $timed $cmd" \
			2>"$tmp/err" ;;
	values)		# the default rate, every step a value sample (docs/values.md)
		eval "$dcpi record -q --no-calibrate --values --db $tmp/db -- $timed $cmd" \
			2>"$tmp/err" ;;
	*)
		eval "$dcpi record -q --no-calibrate --paths $2 --db $tmp/db -- $timed $cmd" \
			2>"$tmp/err" ;;
	esac
	bursts=0 steps=0
	if [ -d "$tmp/db" ]; then
		bursts=$(sed -n 's/.* bursts=\([0-9]*\).*/\1/p' "$tmp"/db/*/meta | head -n 1)
		steps=$(sed -n 's/.* steps=\([0-9]*\).*/\1/p' "$tmp"/db/*/meta | head -n 1)
	fi
	awk -v b="${bursts:-0}" -v s="${steps:-0}" '{ printf "%.4f %d %d\n", $1 + $2, b, s }' \
		"$tmp/t"
}

echo "== path-sample overhead: least CPU time of the command over $PATHS_RUNS" \
	"interleaved runs; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in $workloads; do
	: >"$tmp/res"
	r=0
	while [ "$r" -lt "$PATHS_RUNS" ]; do
		for c in $configs; do
			echo "$c $(one "$w" "$c")" >>"$tmp/res"
		done
		r=$((r + 1))
	done
	echo "-- $w"
	printf "%-10s %9s %9s %11s %11s %9s\n" config "cpu s" bursts/s "x bare" "x no-paths" \
		"us/step"
	awk -v configs="$configs" -v def="$default" '
		{ if (!($1 in best) || $2 < best[$1]) { best[$1] = $2; b[$1] = $3; st[$1] = $4 } }
		END {
			n = split(configs, c, " ")
			for (i = 1; i <= n; i++) {
				k = c[i]
				if (seen[k]++) continue
				name = k
				if (k == def) name = k "*"
				rate = 0
				if (best[k] > 0) rate = b[k] / best[k]
				us = 0
				if (st[k] > 0) us = (best[k] - best["no-paths"]) / st[k] * 1e6
				printf "%-10s %9.3f %9.1f %11.4f %11.4f %9.1f\n", name, best[k],
				       rate, best[k] / best["bare"], best[k] / best["no-paths"], us
			}
		}' "$tmp/res"
done
echo "(* the default rate; values = the default rate with --values; RATE:K = bursts per"
echo " CPU second of each thread : steps;"
echo " us/step = extra CPU over --no-paths per recorded step, timer signals included)"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
