#!/bin/sh
# bench_overhead.sh - what sampling costs the sampled program (DCPI paper
# sec. 5): a CPU-bound and a memory-bound workload, each timing itself, run
# bare, under bench/floor.c (the least a perf_event sampler can do), under
# `dcpi record` and under `perf record`, at 1 kHz and 10 kHz of the same
# event and period.  Configurations are interleaved run by run and every
# figure is a median over runs of a ratio taken within one run, because the
# machines are shared.  Run by `make bench` with $BUILD set; bench/README.md
# says how to read the tables.
#
#   OVH_RUNS=N      runs of every configuration (default 5)
#   OVH_EVENT=E     force the event (default cycles if the PMU has it, else
#                   cpu-clock)
#   OVH_NICE=N      run every configuration at nice N (default -20 as root,
#                   so other users' jobs on a shared machine steal less of
#                   the wall time being measured; 0 to turn off)
set -e
: "${BUILD:=build}"
: "${CC:=cc}"
: "${OVH_RUNS:=5}"
if [ -z "$OVH_NICE" ]; then
	OVH_NICE=0
	[ "$(id -u)" = 0 ] && OVH_NICE=-20
fi
dcpi="$BUILD/dcpi"
floor="$BUILD/bench/floor"
wl="$BUILD/workloads"
. bench/lib.sh
bench_tmp ovh
bench_need bench_overhead -x "$dcpi" "$wl/cpubound" "$wl/membound"
mkdir -p "$BUILD/bench"
$CC -std=gnu11 -O2 -o "$floor" bench/floor.c
have_perf=0
perf --version >/dev/null 2>&1 && have_perf=1

if [ -z "$OVH_EVENT" ]; then
	OVH_EVENT=cpu-clock
	if perf stat -e cycles true 2>&1 | grep -q '[0-9] *cycles'; then
		OVH_EVENT=cycles
	fi
fi
if [ "$OVH_EVENT" = cycles ]; then
	# about 1 and 10 kHz at the clock rate of these machines
	mhz=$(awk -F: '/cpu MHz/ { printf "%d", $2; exit }' /proc/cpuinfo)
	[ -n "$mhz" ] || mhz=3000
	periods="$((mhz * 1000)):1k $((mhz * 100)):10k"
	note="cycles (hardware PMU)"
else
	periods="1000000:1k 100000:10k"
	note="cpu-clock (no hardware PMU: perf stat -e cycles says not supported)"
fi
echo "== overhead: event $note, $OVH_RUNS interleaved runs of each, at nice $OVH_NICE"
echo "   dcpi record -q -e $OVH_EVENT -c P | perf record -e $OVH_EVENT -c P |" \
	"floor -e $OVH_EVENT -c P (user-only, IP|TID, no side-band)"

# one WORKLOAD CONFIG PERIOD: prints "elapsed cpu samples collector_cpu"
one() {
	w=$1 cfg=$2 p=$3 out="$tmp/out" err="$tmp/err" rus="$tmp/rusage"
	samples=0
	case $cfg in
	bare)
		nice -n "$OVH_NICE" /usr/bin/time -f "%U %S" -o "$rus" "$wl/$w" >"$out" 2>"$err" ;;
	floor)
		nice -n "$OVH_NICE" /usr/bin/time -f "%U %S" -o "$rus" \
			"$floor" -e "$OVH_EVENT" -c "$p" -- "$wl/$w" >"$out" 2>"$err"
		samples=$(awk '/^floor:/ { print $2 }' "$err") ;;
	dcpi)
		# the sampler alone, beside perf record; bench_paths.sh measures path samples
		rm -rf "$tmp/db"
		nice -n "$OVH_NICE" /usr/bin/time -f "%U %S" -o "$rus" "$dcpi" record -q -e "$OVH_EVENT" \
			--no-paths -c "$p" --db "$tmp/db" -- "$wl/$w" >"$out" 2>"$err"
		samples=$(cat "$tmp"/db/*/meta | awk '$1 == "samples" { s += $3 } END { print s + 0 }') ;;
	perf)
		nice -n "$OVH_NICE" /usr/bin/time -f "%U %S" -o "$rus" perf record -q -e "$OVH_EVENT" -c "$p" \
			-o "$tmp/perf.data" -- "$wl/$w" >"$out" 2>"$err"
		samples=$(perf report -i "$tmp/perf.data" --stats 2>/dev/null |
			awk '/SAMPLE events:/ { print $3; exit }')
		rm -f "$tmp/perf.data" ;;
	esac
	awk -v s="${samples:-0}" -v rus="$(cat "$rus" | tail -1)" '
		$1 == "elapsed" { e = $2 } $1 == "cpu" { c = $2 }
		END { split(rus, u, " "); printf "%s %s %s %.6f\n", e, c, s, u[1] + u[2] - c }' "$out"
}

cfgs="floor dcpi"
[ $have_perf = 1 ] && cfgs="$cfgs perf"
results="$tmp/results"
: >"$results"
r=1
while [ "$r" -le "$OVH_RUNS" ]; do
	for w in cpubound membound; do
		# the bare run between the sampled ones, the order rotated per run
		list="bare"
		for pr in $periods; do
			for c in $cfgs; do
				list="$list $c:$pr"
			done
		done
		n=$(echo "$list" | wc -w)
		k=$(( (r - 1) % n ))
		rot=$(echo "$list" | tr ' ' '\n' | awk -v k="$k" '
			{ a[NR - 1] = $0 } END { for (i = 0; i < NR; i++) print a[(i + k) % NR] }')
		for item in $rot; do
			c=${item%%:*}
			p=$(echo "$item" | cut -d: -f2)
			rate=$(echo "$item" | cut -d: -f3)
			[ "$c" = bare ] && p=0 rate=-
			echo "$w $c $rate $r $(one "$w" "$c" "$p")" >>"$results"
		done
	done
	r=$((r + 1))
done

# Per run: overhead = t/bare - 1 and cost per sample = (t - bare)/samples,
# both against the bare run of the same round; then medians over the runs.
awk -v have_perf=$have_perf '
function median(key,    n, i, j, t, v) {
	n = cnt[key]
	if (!n)
		return "nan"
	for (i = 1; i <= n; i++)
		v[i] = val[key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(key, x) { val[key, ++cnt[key]] = x }
{
	w = $1; c = $2; rate = $3; run = $4
	if (c == "bare") {
		be[w, run] = $5; bc[w, run] = $6; bo[w, run] = $8
		add("bare_e" SUBSEP w, $5); add("bare_c" SUBSEP w, $6)
		next
	}
	row[++nrow] = $0
	rates[rate] = 1
}
END {
	for (i = 1; i <= nrow; i++) {
		split(row[i], f, " ")
		w = f[1]; c = f[2]; rate = f[3]; run = f[4]
		if (!((w, run) in be))
			continue
		k = w SUBSEP rate SUBSEP c
		add("ov_e" SUBSEP k, 100 * (f[5] / be[w, run] - 1))
		add("ov_c" SUBSEP k, 100 * (f[6] / bc[w, run] - 1))
		add("smp" SUBSEP k, f[7])
		if (f[7] > 0) {
			add("us_e" SUBSEP k, 1e6 * (f[5] - be[w, run]) / f[7])
			add("us_c" SUBSEP k, 1e6 * (f[6] - bc[w, run]) / f[7])
		}
		add("col" SUBSEP k, 1000 * (f[8] - bo[w, run]))
	}
	split("floor dcpi perf", C, " ")
	nc = have_perf ? 3 : 2
	for (pass = 1; pass <= 2; pass++) {
		m = pass == 1 ? "e" : "c"
		printf "\n%s\n", pass == 1 ? "-- slowdown of the workload'"'"'s wall time (its own elapsed line)" : \
			"-- slowdown of the workload'"'"'s own CPU time (its cpu line: sampling interrupts, cache and TLB damage; not the collector'"'"'s CPU)"
		printf "%-9s %5s %7s | %8s %8s %8s | %7s %7s %7s | %6s %6s %6s | %s\n",
			"workload", "rate", "bare s", "floor%", "dcpi%", "perf%",
			"smp fl", "smp dc", "smp pf", "us fl", "us dc", "us pf", "dcpi/floor"
		for (wi = 1; wi <= 2; wi++) {
			w = wi == 1 ? "cpubound" : "membound"
			for (ri = 1; ri <= 2; ri++) {
				rate = ri == 1 ? "1k" : "10k"
				if (!(rate in rates))
					continue
				printf "%-9s %5s %7.3f |", w, rate, median("bare_" m SUBSEP w)
				for (ci = 1; ci <= 3; ci++)
					if (ci <= nc)
						printf " %+7.1f%%", median("ov_" m SUBSEP w SUBSEP rate SUBSEP C[ci])
					else
						printf " %8s", "-"
				printf " |"
				for (ci = 1; ci <= 3; ci++)
					printf " %7s", ci <= nc ? median("smp" SUBSEP w SUBSEP rate SUBSEP C[ci]) : "-"
				printf " |"
				for (ci = 1; ci <= 3; ci++)
					if (ci <= nc)
						printf " %6.1f", median("us_" m SUBSEP w SUBSEP rate SUBSEP C[ci])
					else
						printf " %6s", "-"
				fl = median("ov_" m SUBSEP w SUBSEP rate SUBSEP "floor")
				dc = median("ov_" m SUBSEP w SUBSEP rate SUBSEP "dcpi")
				if (fl > 0.05)
					printf " | %.2fx\n", dc / fl
				else
					printf " | %s\n", "floor~0"
			}
		}
	}
	printf "\n-- the collector'"'"'s own CPU, ms per run: user+sys of collector and workload, minus the\n"
	printf "   workload'"'"'s timed CPU, minus the same for the bare run of the round (its set-up)\n"
	printf "%-9s %5s | %8s %8s %8s   (dcpi record includes its 2 x 50 ms calibration loop)\n",
		"workload", "rate", "floor", "dcpi", "perf"
	for (wi = 1; wi <= 2; wi++) {
		w = wi == 1 ? "cpubound" : "membound"
		for (ri = 1; ri <= 2; ri++) {
			rate = ri == 1 ? "1k" : "10k"
			printf "%-9s %5s |", w, rate
			for (ci = 1; ci <= 3; ci++)
				if (ci <= nc)
					printf " %8.1f", median("col" SUBSEP w SUBSEP rate SUBSEP C[ci])
				else
					printf " %8s", "-"
			printf "\n"
		}
	}
}' "$results"
if [ -n "$OVH_KEEP" ]; then
	cp "$results" "$OVH_KEEP"
fi
