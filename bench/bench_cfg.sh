#!/bin/sh
# bench_cfg.sh - CFGs and cycle-equivalence classes for every procedure of
# large stripped binaries (procedure bounds from .eh_frame), as MB/s of code,
# beside `objdump -d` over the same file, with what makes the CFGs trustworthy:
# the indirect-jump resolution rate and the share of procedures with missing
# edges.  By default cc1 and the big libraries of the system (libc's and
# libcrypto's hand-written AVX-512 code once sent the builder into an endless
# loop), those present; or the images given.  Run by `make bench` with $BUILD
# set.
set -e
: "${BUILD:=build}"
: "${CC:=cc}"
lib=/usr/lib/x86_64-linux-gnu
if [ $# -eq 0 ]; then
	set -- /usr/lib/gcc/x86_64-linux-gnu/12/cc1 "$lib/libc.so.6" "$lib/libcrypto.so.3" \
		"$lib/libstdc++.so.6"
fi
prog="$BUILD/bench/cfg_all"
mkdir -p "$BUILD/bench"
$CC -std=c11 -D_GNU_SOURCE -O2 -Iinclude -o "$prog" bench/cfg_all.c "$BUILD/libdcpi.a" \
	$(pkg-config --libs capstone libelf libcgraph libgvc) -ldwarf -liberty -lz -lm -lpthread
summary="$BUILD/bench/cfg_all.summary"
: >"$summary"
for target in "$@"; do
	if [ ! -f "$target" ]; then
		echo "bench_cfg: $target: not found, skipped"
		continue
	fi
	name=$(basename "$target")
	out="$BUILD/bench/cfg_all.$name.out"
	echo "== cfg: $target"
	"$prog" "$target" | tee "$out"
	text=$(size -A "$target" | awk '$1 == ".text" { print $2 }')
	start=$(date +%s.%N)
	objdump -d "$target" >/dev/null
	end=$(date +%s.%N)
	echo "$start $end $text" | awk '{ t = $2 - $1
		printf "objdump -d: %.2f s, %.1f MB/s of .text (%.1f MB)\n", t, $3 / 1e6 / t, $3 / 1e6 }' |
		tee "$out.objdump"
	awk -v name="$name" -v od="$(awk '{ print $5 }' "$out.objdump")" '
	     /^procedures [0-9]/ { procs = $2; gsub(/,/, "", procs); mb = $4 }
	     /^dcpi cfg:/ { secs = $3; speed = $5 }
	     /^indirect jumps/ { rate = $8; gsub(/[(]/, "", rate) }
	     /^procedures with missing/ { share = $NF; gsub(/[()]/, "", share) }
	     END { printf "%-16s %6s %6s MB %7s s %6s MB/s %6s MB/s %10s %8s\n", name, procs,
			  mb, secs, speed, od, rate, share }' "$out" >>"$summary"
done
echo "summary:"
printf "%-16s %6s %9s %9s %11s %11s %10s %8s\n" image procs code "dcpi cfg" "dcpi cfg" \
	"objdump -d" "tables" "missing"
cat "$summary"
