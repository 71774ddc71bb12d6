#!/bin/sh
# bench_procs.sh - many short-lived processes under the system-wide daemon
# (the DCPI paper's gcc case, sec. 5): 1,000 commands, each living a few
# milliseconds, run while `dcpi daemon` samples the whole machine.  Prints
# whether their samples land on the right images (the shell busy loops on
# the shell, gcc's time on cc1, little on [unknown]), the daemon's peak
# memory (VmHWM, sampled during the run) and the commands' wall time with
# and without the daemon, rounds interleaved.  Run by `make bench` with
# $BUILD set; bench/README.md says how to read it.
#
#   PROCS_ROUNDS=N   bare/daemon rounds (default 3)
#   PROCS_COUNT=N    commands per round (default 1000)
#   PROCS_PERIOD=NS  cpu-clock period of the daemon (default 100000: 10 kHz)
set -e
: "${BUILD:=build}"
: "${PROCS_ROUNDS:=3}"
: "${PROCS_COUNT:=1000}"
: "${PROCS_PERIOD:=100000}"
dcpi="$BUILD/dcpi"
tmp=$(mktemp -d /tmp/dcpi-procs.XXXXXX)
dpid=
mpid=
cleanup() {
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ ! -x "$dcpi" ]; then
	echo "bench_procs: $dcpi: not built, skipped"
	exit 0
fi
if "$dcpi" daemon --help >/dev/null 2>&1; then
	mode=daemon
else
	mode=record
	echo "bench_procs: no 'dcpi daemon' in this build: running the commands under" \
		"'dcpi record -- sh -c LOOP' instead"
fi
sh=$(readlink -f /bin/sh)
cc1=
have_gcc=0
if command -v gcc >/dev/null 2>&1; then
	have_gcc=1
	cc1=$(gcc -print-prog-name=cc1)
	cc1=$(readlink -f "$cc1")
	printf 'static int sq(int x) { return x * x; }\nint f(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i); return s; }\n' >"$tmp/tiny.c"
fi

# The commands: a tenth gcc -c of a tiny file (if gcc is here), a quarter
# /bin/sh busy loops, the rest split between /bin/true and ls.
cat >"$tmp/cmds.sh" <<EOF
i=0
while [ \$i -lt $PROCS_COUNT ]; do
	case \$((i % 20)) in
	0|10)	if [ $have_gcc = 1 ]; then gcc -c -O2 -o $tmp/tiny.o $tmp/tiny.c; else /bin/true; fi ;;
	1|5|9|13|17)	$sh -c 'i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done' ;;
	2|4|6|8|12|14|16)	/bin/true ;;
	*)	ls /usr/include >/dev/null ;;
	esac
	i=\$((i + 1))
done
EOF

now() { date +%s.%N; }

# What the busy loops and the compiles get alone under `perf record` at the
# same period (samples on the shell and on cc1): what their images should
# get under the daemon too.  Without perf the check is skipped.
nloops=0 ngcc=0 i=0
while [ $i -lt "$PROCS_COUNT" ]; do
	case $((i % 20)) in
	1|5|9|13|17) nloops=$((nloops + 1)) ;;
	0|10) ngcc=$((ngcc + 1)) ;;
	esac
	i=$((i + 1))
done
exp_sh=0 exp_cc=0
if perf --version >/dev/null 2>&1; then
	[ $have_gcc = 1 ] || ngcc=0
	perf record -q -e cpu-clock:u -c "$PROCS_PERIOD" -o "$tmp/perf.data" -- sh -c "
		i=0; while [ \$i -lt $nloops ]; do
		$sh -c 'i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done'; i=\$((i + 1)); done
		i=0; while [ \$i -lt $ngcc ]; do
		gcc -c -O2 -o $tmp/tiny.o $tmp/tiny.c; i=\$((i + 1)); done" >/dev/null 2>&1
	perf report -i "$tmp/perf.data" --sort dso -n --stdio 2>/dev/null >"$tmp/perf.txt"
	exp_sh=$(awk -v d="${sh##*/}" '$NF == d { print $2 }' "$tmp/perf.txt")
	exp_cc=$(awk -v d="${cc1##*/}" '$NF == d { print $2 }' "$tmp/perf.txt")
fi

# VmHWM and VmRSS of $1 every 0.1 s until it exits; the maxima in $2
watch_mem() {
	hwm=0 rss=0
	while [ -r "/proc/$1/status" ]; do
		set -- "$1" "$2" $(awk '/^VmHWM:/ { h = $2 } /^VmRSS:/ { r = $2 }
			END { print h + 0, r + 0 }' "/proc/$1/status" 2>/dev/null)
		[ "${3:-0}" -gt "$hwm" ] && hwm=$3
		[ "${4:-0}" -gt "$rss" ] && rss=$4
		echo "$hwm $rss" >"$2"
		sleep 0.1
	done
}

run_daemon_round() {	# $1 = round, prints the commands' wall seconds
	db="$tmp/db$1"
	rm -f "$tmp/pid"
	"$dcpi" daemon -q -e cpu-clock -c "$PROCS_PERIOD" --flush 1 --db "$db" \
		--pidfile "$tmp/pid" 2>"$tmp/daemon$1.err" &
	dpid=$!
	n=0
	while [ ! -s "$tmp/pid" ] && [ $n -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if [ ! -s "$tmp/pid" ]; then
		echo "bench_procs: dcpi daemon did not start:" >&2
		cat "$tmp/daemon$1.err" >&2
		exit 1
	fi
	watch_mem "$dpid" "$tmp/mem$1" &
	mpid=$!
	t0=$(now)
	sh "$tmp/cmds.sh"
	t1=$(now)
	kill -INT "$dpid"
	wait "$dpid" || { echo "bench_procs: dcpi daemon failed:" >&2;
		cat "$tmp/daemon$1.err" >&2; exit 1; }
	dpid=
	wait "$mpid" 2>/dev/null || true
	mpid=
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

run_record_round() {
	db="$tmp/db$1"
	t0=$(now)
	"$dcpi" record -q -e cpu-clock -c "$PROCS_PERIOD" --db "$db" -- sh "$tmp/cmds.sh" &
	dpid=$!
	watch_mem "$dpid" "$tmp/mem$1" &
	mpid=$!
	wait "$dpid"
	dpid=
	t1=$(now)
	wait "$mpid" 2>/dev/null || true
	mpid=
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

echo "== procs: $PROCS_COUNT short commands per round (gcc -c, $sh busy loops, true, ls)" \
	"under dcpi $mode, cpu-clock every $PROCS_PERIOD ns, $PROCS_ROUNDS rounds"
r=1
: >"$tmp/times"
while [ $r -le "$PROCS_ROUNDS" ]; do
	t0=$(now)
	sh "$tmp/cmds.sh"
	t1=$(now)
	bare=$(echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }')
	under=$(run_${mode}_round $r)
	echo "$r $bare $under $(cat "$tmp/mem$r")" >>"$tmp/times"
	r=$((r + 1))
done

echo "round  bare s  under $mode s  slowdown  peak RSS (VmHWM) KiB  max VmRSS KiB"
awk '{ printf "%5d %7.2f %15.2f %+8.1f%% %21d %14d\n", $1, $2, $3, 100 * ($3 / $2 - 1), $4, $5 }' \
	"$tmp/times"
sort -n -k2 "$tmp/times" | awk '{ b[NR] = $2 } END { printf "median bare %.2f s", b[int((NR + 1) / 2)] }'
sort -n -k3 "$tmp/times" | awk '{ u[NR] = $3 } END { printf ", under %.2f s", u[int((NR + 1) / 2)] }'
awk '$4 > m { m = $4 } END { printf ", peak RSS %d KiB over all rounds\n", m }' "$tmp/times"

# Where the samples landed: the first round's database.
db="$tmp/db1"
echo
echo "-- images by samples, round 1 (dcpi prof -i; the whole machine's, other users' included)"
"$dcpi" prof --db "$db" -i -n 12 2>/dev/null | sed -n '/cpu-clock *%/,$p'
"$dcpi" prof --db "$db" -i --json 2>/dev/null >"$tmp/prof.json"
python3 - "$tmp/prof.json" "$sh" "$cc1" "$mode" "${exp_sh:-0}" "${exp_cc:-0}" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
sh, cc1, mode = sys.argv[2], sys.argv[3], sys.argv[4]
exp_sh, exp_cc = float(sys.argv[5]), float(sys.argv[6])
ev = j["events"][0]
tot = j["total"][ev] or 1
img = {i["image"]: i["samples"].get(ev, 0) for i in j["images"]}
unk = sum(v for k, v in img.items() if "unknown" in k)
shs = img.get(sh, 0)
cc = img.get(cc1, 0) if cc1 else 0
ok = True
print("total %d samples; %s: %d (%.1f%%); %s: %d (%.1f%%); [unknown]: %d (%.2f%%)"
      % (tot, sh, shs, 100 * shs / tot, cc1 or "cc1", cc, 100 * cc / tot, unk,
         100 * unk / tot))
# Each image should get about what perf record gave it alone.  Other users'
# shells (system-wide) and the sampling's own cost can only add, so the
# check is one-sided.
print("%s: %d samples; perf record of the busy loops alone: %.0f (%.2fx)"
      % (sh, shs, exp_sh, shs / exp_sh if exp_sh else 0))
if exp_sh and shs < 0.6 * exp_sh:
    print("FAIL: the %s busy loops lost their samples (under 0.6x)" % sh); ok = False
if cc1 and exp_cc:
    print("%s: %d samples; perf record of the compiles alone: %.0f (%.2fx)"
          % (cc1, cc, exp_cc, cc / exp_cc))
    if cc < 0.5 * exp_cc:
        print("FAIL: gcc's cc1 lost its samples (under 0.5x)"); ok = False
if unk > 0.02 * tot:
    print("FAIL: more than 2%% of the samples on [unknown]"); ok = False
print("images: PASS" if ok else "images: FAIL")
sys.exit(0 if ok else 1)
EOF
