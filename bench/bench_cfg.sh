#!/bin/sh
# bench_cfg.sh - CFGs and cycle-equivalence classes for every procedure of
# large stripped binaries (procedure bounds from .eh_frame; cfg_build_all,
# each distinct instruction decoded once), in CPU seconds beside two peers measured in
# the same run: a bare capstone pass with detail on over .text (the decoder's
# floor, inside cfg_all) and `objdump -d`; least of $RUNS runs each, and peak
# memory beside objdump's.  Also what makes the CFGs trustworthy: the
# indirect-jump resolution rate, the share of procedures with missing edges,
# and a digest of all CFGs checked against bench/cfg_all.golden (taken before
# the decoder was made faster).  By default cc1 and the big
# libraries of the system (libc's and libcrypto's hand-written AVX-512 code
# once sent the builder into an endless loop), those present; or the images
# given.  Run by `make bench` with $BUILD set.
set -e
: "${BUILD:=build}"
: "${CC:=cc}"
: "${RUNS:=3}"
lib=/usr/lib/x86_64-linux-gnu
if [ $# -eq 0 ]; then
	set -- /usr/lib/gcc/x86_64-linux-gnu/12/cc1 "$lib/libc.so.6" "$lib/libcrypto.so.3" \
		"$lib/libstdc++.so.6"
fi
prog="$BUILD/bench/cfg_all"
mkdir -p "$BUILD/bench"
$CC -std=c11 -D_GNU_SOURCE -O2 -Iinclude -o "$prog" bench/cfg_all.c "$BUILD/libdcpi.a" \
	$(pkg-config --libs capstone libelf libcgraph libgvc) -ldwarf -liberty -lz -llzma -lm -lpthread
summary="$BUILD/bench/cfg_all.summary"
: >"$summary"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (times are CPU seconds)"
for target in "$@"; do
	if [ ! -f "$target" ]; then
		echo "bench_cfg: $target: not found, skipped"
		continue
	fi
	name=$(basename "$target")
	out="$BUILD/bench/cfg_all.$name.out"
	echo "== cfg: $target"
	"$prog" --runs "$RUNS" "$target" | tee "$out"
	# the same without the decode memo (every decode by capstone), for comparison
	"$prog" --runs "$RUNS" --no-memo "$target" | grep '^dcpi cfg:' |
		sed 's/^dcpi cfg:/without the decode memo, dcpi cfg:/' | tee "$out.nomemo"
	# objdump -d: least CPU time of $RUNS runs, and its peak RSS
	best=999999
	mem=0
	i=0
	while [ $i -lt "$RUNS" ]; do
		/usr/bin/time -f "%U %S %M" -o "$out.time" objdump -d "$target" >/dev/null
		read -r u s m <"$out.time"
		t=$(echo "$u $s" | awk '{ printf "%.2f", $1 + $2 }')
		best=$(echo "$best $t" | awk '{ print ($2 < $1) ? $2 : $1 }')
		[ "$m" -gt "$mem" ] && mem=$m
		i=$((i + 1))
	done
	echo "objdump -d: $best s CPU, peak memory $(echo "$mem" | awk '{ printf "%.1f", $1 / 1e3 }') MB" |
		tee "$out.objdump"
	awk -v name="$name" -v od="$best" -v odmem="$mem" '
	     /^procedures [0-9]/ { procs = $2; gsub(/,/, "", procs); mb = $4 }
	     /^dcpi cfg:/ { secs = $3; ratio = $8; gsub(/x/, "", ratio) }
	     /^bare capstone/ { cs = $(NF - 2) }
	     /^peak memory/ { pm = $3 }
	     /^digest/ { same = ($3 == "SAME") ? "same" : ($3 == "DIFFERS") ? "DIFFERS" : "-" }
	     /^indirect jumps/ { rate = $8; gsub(/[(]/, "", rate) }
	     /^procedures with missing/ { share = $NF; gsub(/[()]/, "", share) }
	     END { printf "%-16s %6s %6s MB %7s s %7s s %6.2fx %7s s %6.2fx %7s MB %7.1f MB %7s %7s %5s\n",
			  name, procs, mb, secs, cs, ratio, od, secs / od, pm, odmem / 1e3,
			  rate, share, same }' "$out" >>"$summary"
done
echo "summary (CPU seconds, least of $RUNS runs; peak RSS):"
printf "%-16s %6s %9s %9s %9s %7s %9s %7s %10s %10s %7s %7s %5s\n" image procs code "dcpi cfg" \
	"capstone" "ratio" "objdump" "ratio" "dcpi mem" "objdump" tables missing CFGs
cat "$summary"
