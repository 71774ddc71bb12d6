#!/bin/sh
# bench_cfg.sh - CFGs and cycle-equivalence classes for every procedure of a
# large stripped binary (procedure bounds from .eh_frame), as MB/s of code,
# beside `objdump -d` over the same file, with what makes the CFGs trustworthy:
# the indirect-jump resolution rate and the share of procedures with missing
# edges.  Run by `make bench` with $BUILD set.
set -e
: "${BUILD:=build}"
: "${CC:=cc}"
target=${1:-/usr/lib/gcc/x86_64-linux-gnu/12/cc1}
if [ ! -f "$target" ]; then
	echo "bench_cfg: $target: not found, skipped"
	exit 0
fi
prog="$BUILD/bench/cfg_all"
mkdir -p "$BUILD/bench"
$CC -std=c11 -D_GNU_SOURCE -O2 -Iinclude -o "$prog" bench/cfg_all.c "$BUILD/libdcpi.a" \
	$(pkg-config --libs capstone libelf libcgraph libgvc) -ldwarf -liberty -lz -lm -lpthread
echo "== cfg: $target"
"$prog" "$target" | tee "$BUILD/bench/cfg_all.out"
text=$(size -A "$target" | awk '$1 == ".text" { print $2 }')
start=$(date +%s.%N)
objdump -d "$target" >/dev/null
end=$(date +%s.%N)
echo "$start $end $text" | awk '{ t = $2 - $1; printf "objdump -d: %.2f s, %.1f MB/s of .text (%.1f MB)\n", t, $3 / 1e6 / t, $3 / 1e6 }'
awk '/^dcpi cfg:/ { speed = $5 } /^indirect jumps/ { rate = $8; gsub(/[(]/, "", rate) }
     /^procedures with missing/ { share = $NF; gsub(/[()]/, "", share) }
     END { printf "summary: dcpi cfg %s MB/s, indirect jumps resolved %s, procedures with missing edges %s\n", speed, rate, share }' "$BUILD/bench/cfg_all.out"
