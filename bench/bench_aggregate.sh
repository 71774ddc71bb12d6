#!/bin/sh
# bench_aggregate.sh - which policy the collector's aggregation table should
# use (collect/hashtab.h; DCPI sec. 4.2, 5.4; seed note 003), measured on
# real sample streams recorded in this run: perf record -e cpu-clock -c 50000
# (one sample per 50 us of CPU) on a few workloads, turned into "pid ip" text
# by perf script, then replayed by bench/aggregate.c through every policy at
# 4K and 16K entries (DCPI ran 16K).  Prints ns per sample (median of 5
# rounds), hit rate and data reduction side by side, and the winner.
# Streams go to $BUILD/streams (see bench/streams/README.md); REUSE=1 keeps
# the ones already there.  Run by `make bench` with BUILD set.
#
#   BUILD=build sh bench/bench_aggregate.sh
set -e
: "${BUILD:=build}"
CC=${CC:-cc}
LIB="$BUILD/libdcpi.a"
BIN="$BUILD/bench/aggregate"
S="$BUILD/streams"
W="$S/work"

if [ ! -f "$LIB" ]; then
	echo "bench_aggregate: $LIB: not built (make BUILD=$BUILD first)" >&2
	exit 1
fi
if ! command -v perf >/dev/null 2>&1; then
	echo "bench_aggregate: perf not installed; skipped" >&2
	exit 0
fi
mkdir -p "$BUILD/bench" "$W"
# shellcheck disable=SC2046
$CC -std=c11 -D_GNU_SOURCE -Iinclude -O2 -g -o "$BIN" bench/aggregate.c "$LIB" \
	$(pkg-config --libs libelf capstone libcgraph libgvc 2>/dev/null) \
	-ldwarf -liberty -lz -llzma -lm

# --- inputs for the workloads ------------------------------------------------
# a C file of 800 functions with loops and switches for cc1 to chew on
gen_c() {
	awk 'BEGIN {
		print "#include <stddef.h>";
		for (i = 0; i < 800; i++) {
			printf "long f%d(long *a, size_t n, int k)\n{\n\tlong s = %d;\n", i, i;
			print "\tfor (size_t j = 0; j < n; j++) {";
			print "\t\tswitch ((a[j] + k) & 7) {";
			for (c = 0; c < 8; c++)
				printf "\t\tcase %d: s += a[j] * %d - (s >> %d); break;\n", c, c + i, c % 5 + 1;
			print "\t\t}";
			print "\t\tif (s > 1000000) s /= (k | 1);";
			print "\t}";
			if (i > 0) printf "\treturn s + f%d(a, n / 2, k + 1);\n}\n", i - 1;
			else print "\treturn s;\n}";
		}
	}' >"$W/big.c"
}
# MB megabytes of text that compresses about 4:1 (numbers, words, repeats)
gen_text() {
	awk -v mb="$1" 'BEGIN {
		srand(7);
		split("alpha beta gamma delta sample profile cycle stall cache branch", w, " ");
		while (bytes < mb * 1048576) {
			line = sprintf("%08d %s %s %d\n", int(rand() * 1e8), w[int(rand() * 10) + 1],
				       w[int(rand() * 10) + 1], int(rand() * rand() * 1000));
			printf "%s", line;
			bytes += length(line);
		}
	}' >"$2"
}
[ -f "$W/big.c" ] || gen_c
[ -f "$W/text8.txt" ] || gen_text 8 "$W/text8.txt"
[ -f "$W/text24.txt" ] || gen_text 24 "$W/text24.txt"

# record NAME CMD...: a stream of the command's samples (kernel and user)
record() {
	name=$1
	shift
	if [ "${REUSE:-0}" = 1 ] && [ -s "$S/$name.txt" ]; then
		return
	fi
	if ! perf record -q -e cpu-clock -c 50000 -o "$S/$name.data" -- "$@" \
		>/dev/null 2>"$S/$name.err"; then
		echo "bench_aggregate: $name: perf record failed: $(tail -n 1 "$S/$name.err")" >&2
		return
	fi
	perf script -F pid,ip -i "$S/$name.data" >"$S/$name.txt" 2>/dev/null
	rm -f "$S/$name.data" "$S/$name.err"
}

set --
record gcc-O2 gcc -O2 -c -o "$W/big.o" "$W/big.c" && set -- "$@" "$S/gcc-O2.txt"
record gcc-elf gcc -O2 -Iinclude -D_GNU_SOURCE -std=c11 -c -o "$W/elf.o" image/elf.c \
	&& set -- "$@" "$S/gcc-elf.txt"
record xz-9 xz -9 -T1 -k -f -c "$W/text8.txt" && set -- "$@" "$S/xz-9.txt"
record sort sort -S 64M -T "$W" -o "$W/sorted.txt" "$W/text24.txt" && set -- "$@" "$S/sort.txt"
if command -v python3 >/dev/null 2>&1; then
	record python3 python3 -c '
d = {}
for i in range(1500000):
    d[i % 5003] = d.get(i % 5003, 0) + i * i % 7
print(sum(d.values()))' && set -- "$@" "$S/python3.txt"
fi
if [ -x "$BUILD/workloads/demo_work" ]; then
	record demo_work "$BUILD/workloads/demo_work" 2 && set -- "$@" "$S/demo_work.txt"
fi
# every process on the machine for 3 s: many pids, as DCPI's timesharing runs
if [ "${REUSE:-0}" != 1 ] || [ ! -s "$S/system-3s.txt" ]; then
	if perf record -q -a -e cpu-clock -c 50000 -o "$S/system-3s.data" -- sleep 3 \
		>/dev/null 2>&1; then
		perf script -F pid,ip -i "$S/system-3s.data" >"$S/system-3s.txt" 2>/dev/null
	fi
	rm -f "$S/system-3s.data"
fi
set -- "$@" "$S/system-3s.txt"

keep=""
for f in "$@"; do
	[ -s "$f" ] && keep="$keep $f"
done
# shellcheck disable=SC2086
"$BIN" -m "${BENCH_MS:-200}" -k 5 -s 12,14 $keep
