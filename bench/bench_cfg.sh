#!/bin/sh
# bench_cfg.sh - CFGs and cycle-equivalence classes for every procedure of a
# large stripped binary (procedure bounds from .eh_frame), as MB/s of code,
# beside `objdump -d` over the same file.  Run by `make bench` with $BUILD set.
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
"$prog" "$target"
text=$(size -A "$target" | awk '$1 == ".text" { print $2 }')
start=$(date +%s.%N)
objdump -d "$target" >/dev/null
end=$(date +%s.%N)
echo "$start $end $text" | awk '{ t = $2 - $1; printf "objdump -d: %.2f s, %.1f MB/s of .text (%.1f MB)\n", t, $3 / 1e6 / t, $3 / 1e6 }'
