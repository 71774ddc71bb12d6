#!/bin/sh
# bench_image.sh - how long loading an image's procedures takes, beside the
# binutils tools that read the same tables.  Our figure is img_open with
# IMG_NO_DWARF (symbols, PLT, .eh_frame bounds), the median of 7 loads, from
# bench/image_load.c; readelf -s -W and objdump --dwarf=frames are the median
# of 5 runs each, output discarded.  Run by `make bench` with BUILD set.
#
#   BUILD=build sh bench/bench_image.sh [FILE...]
# default FILE: cc1 (30 MB, stripped: bounds from .eh_frame) and libc.so.6.
set -e
: "${BUILD:=build}"
CC=${CC:-cc}
LIB="$BUILD/libdcpi.a"
BIN="$BUILD/bench/image_load"

if [ ! -f "$LIB" ]; then
	echo "bench_image: $LIB: not built (make BUILD=$BUILD first)" >&2
	exit 1
fi
mkdir -p "$BUILD/bench"
# shellcheck disable=SC2046
$CC -std=c11 -D_GNU_SOURCE -Iinclude -O2 -g -o "$BIN" bench/image_load.c "$LIB" \
	$(pkg-config --libs libelf capstone libcgraph libgvc 2>/dev/null) \
	-ldwarf -liberty -lz -llzma -lm

if [ $# -eq 0 ]; then
	for f in /usr/lib/gcc/x86_64-linux-gnu/12/cc1 /lib/x86_64-linux-gnu/libc.so.6; do
		[ -f "$f" ] && set -- "$@" "$f"
	done
fi

# median wall time in seconds of 5 runs of a command (its output discarded)
median5() {
	i=0
	: >"$tmp"
	while [ $i -lt 5 ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		echo $((t1 - t0)) >>"$tmp"
		i=$((i + 1))
	done
	sort -n "$tmp" | sed -n 3p | awk '{ printf "%.4f", $1 / 1e9 }'
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
printf '%-40s %8s %10s %10s %10s %8s %8s\n' file procs dcpi_s readelf_s objdump_s \
	x_readelf x_objdump
for f in "$@"; do
	out=$("$BIN" "$f")
	procs=$(echo "$out" | awk '{ print $2 }')
	ours=$(echo "$out" | awk '{ print $4 }')
	re=$(median5 readelf -s -W "$f")
	od=$(median5 objdump --dwarf=frames "$f")
	printf '%-40s %8s %10s %10s %10s %8s %8s\n' "$(basename "$f")" "$procs" "$ours" \
		"$re" "$od" \
		"$(awk -v a="$re" -v b="$ours" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')" \
		"$(awk -v a="$od" -v b="$ours" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')"
done
echo "x_readelf, x_objdump: how many times longer the binutils tool takes than dcpi's load"
