#!/bin/sh
# bench/feedback/run.sh - compiler feedback from dcpi's estimated counts
# against the usual ways of getting it, on real programs built from Debian
# source packages (make feedback; figures in bench/feedback/README.md).
#
# Per program: a training input (profiles are collected on it) and a
# different evaluation input (timed).  One perf.data (cpu-clock, no LBR: this
# machine has no PMU) per profiling binary feeds both dcpi (dcpi import) and
# the existing tools (AutoFDO's create_llvm_prof / create_gcov, perf2bolt
# -nl).  Variants, each timed RUNS times in rotating order:
#   clang -O2 (the profiling build: -g -fdebug-info-for-profiling -Wl,-q)
#   clang instrumented PGO (-fprofile-instr-generate / -use)
#   clang -fprofile-sample-use with dcpi llvm-prof / create_llvm_prof, and
#     with dcpi llvm-prof --raw-samples (the same file from raw samples) and
#     --exact (from callgrind's exact counts of the training run: the ceiling
#     of better estimates); every sample profile with -fsample-profile-use-profi
#     (LLVM's flow-based inference of the counts a line profile leaves open;
#     SAMPLE_FLAGS= to leave it out)
#   clang with pseudo probes (-fpseudo-probe-for-profiling at both builds):
#     the probe build alone, and with dcpi llvm-prof's probe-keyed profile
#     (estimated, and --exact)
#   llvm-bolt on the -O2 build with dcpi bolt-prof / perf2bolt -nl
#   gcc -O2, gcc PGO (-fprofile-generate / -use),
#   gcc -fauto-profile with dcpi gcc-prof (and --raw-samples, --exact) / create_gcov
# timing.py prints times and per-round ratios to the base (wall and CPU);
# simulate.py then counts instructions, branch mispredictions and cache
# misses under cachegrind on a slice of the evaluation input (deterministic:
# the wall clock of a shared 2-vCPU machine is not).
#
# Environment: BUILD (dcpi's build dir), FEEDBACK_DIR (work dir, default
# /tmp/dcpi-feedback), RUNS (default 11), PROGRAMS (default "bzip2 lz4 zstd"),
# SIM_BYTES (cachegrind's slice, default 1000000), REPEATS (recordings of the
# training run for dcpi's clang profiles, default 1; with more than one, also
# a profile of all of them merged), EVALS (evaluation inputs:
# eval, binary; eval-text, other text than the training's; default both),
# PATHS (RATE:K: dcpi's profiles from its own `dcpi record -c 50000 --paths
# RATE:K` of the training run, path samples included, instead of an import
# of the perf.data the other tools get; default unset).
set -eu
: "${BUILD:=build}"
: "${SAMPLE_FLAGS=-fsample-profile-use-profi}"
: "${FEEDBACK_DIR:=/tmp/dcpi-feedback}"
: "${RUNS:=11}"
: "${PROGRAMS:=bzip2 lz4 zstd}"
: "${SIM_BYTES:=1000000}"
: "${EVALS:=eval eval-text}"
here=$(cd "$(dirname "$0")" && pwd)
DCPI=$(pwd)/$BUILD/dcpi
HERE=$(cd "$(dirname "$0")" && pwd)
W=$FEEDBACK_DIR
mkdir -p "$W"

need() {
	command -v "$1" > /dev/null 2>&1 || { echo "feedback: $1 missing ($2)"; exit 1; }
}
need clang-19 "apt-get install clang-19"
need llvm-profdata-19 "apt-get install llvm-19"
need llvm-bolt-19 "apt-get install bolt-19"
need perf2bolt-19 "apt-get install bolt-19"
need create_llvm_prof "apt-get install autofdo"
need create_gcov "apt-get install autofdo"
need perf "apt-get install linux-perf"
need valgrind "apt-get install valgrind"

"$here/fetch.sh" "$W/src" $PROGRAMS

# ---- programs: sources, build, training and evaluation runs -------------
# build_<p> CC "FLAGS" OUT ; run_<p> BIN INPUT (from the program's dir)

srcdir() {
	case $1 in zstd) ls -d "$W"/src/libzstd-*/ ;; *) ls -d "$W/src/$1"-*/ ;; esac | head -1
}
build_bzip2() {
	(cd "$(srcdir bzip2)" && $1 $2 -D_FILE_OFFSET_BITS=64 -w -o "$3" blocksort.c huffman.c \
		crctable.c randtable.c compress.c decompress.c bzlib.c bzip2.c)
}
build_lz4() {
	(cd "$(srcdir lz4)" && $1 $2 -w -Ilib -o "$3" lib/lz4.c lib/lz4frame.c lib/lz4hc.c \
		lib/xxhash.c lib/lz4file.c programs/*.c)
}
build_zstd() {
	(cd "$(srcdir zstd)" && $1 $2 -w -DZSTD_DISABLE_ASM -DZSTD_LEGACY_SUPPORT=0 -Ilib \
		-Ilib/common -o "$3" lib/common/*.c lib/compress/*.c lib/decompress/*.c \
		lib/dictBuilder/*.c programs/*.c -lpthread)
}
# The same inputs for every program: training on C headers (text);
# evaluation on shared libraries (binary code and data: another kind of
# input, where a profile of text can mislead) and on Python's library sources
# (text again, other text).
inputs() {
	[ -s "$W/train.dat" ] || tar cf - /usr/include 2>/dev/null | head -c 4000000 \
		> "$W/train.dat"
	[ -s "$W/eval.dat" ] || cat /usr/lib/x86_64-linux-gnu/lib*.so* 2>/dev/null | \
		head -c 4000000 > "$W/eval.dat"
	[ -s "$W/eval-text.dat" ] || cat /usr/lib/python3*/*.py 2>/dev/null | \
		head -c 4000000 > "$W/eval-text.dat"
}

# ---- one program ---------------------------------------------------------
# profile NAME BIN: one perf.data of the training run, and a dcpi database of
# it (or of its own recording with path samples, PATHS=RATE:K)
profile() {
	cmd=$(printf '%s' "$runcmd" | sed "s|BIN|$2|g; s|INPUT|$train|g")
	perf record -q -e cpu-clock -F 20000 -o "$d/perf.$1.data" -- sh -c "$cmd" \
		> /dev/null 2>&1
	if [ -n "${PATHS:-}" ]; then
		# dcpi's own collector, with path samples, for dcpi's profiles
		"$DCPI" record -q -c 50000 --paths "$PATHS" --db "$d/db.$1" -- sh -c "$cmd" \
			> /dev/null 2>&1
	else
		"$DCPI" import -q --db "$d/db.$1" "$d/perf.$1.data"
	fi
}

# exact NAME BIN: callgrind's exact counts of the training run (both of its
# processes) in one epoch of $d/cg.NAME, for --exact: what dcpi's writers make
# of exact counts for the procedures the samples found (their ceiling)
exact() {
	rm -rf "$d/cgout.$1" "$d/cg.$1" && mkdir -p "$d/cgout.$1"
	WRAP="valgrind -q --tool=callgrind --dump-instr=yes \
		--callgrind-out-file=$d/cgout.$1/cg.%p" "$here/runone.sh" "$p" "$2" "$train" "$W"
	dbs=""
	for f in "$d/cgout.$1"/cg.*; do
		"$DCPI" import -q --db "$f.db" "$f" && dbs="$dbs $f.db"
	done
	# shellcheck disable=SC2086
	"$DCPI" merge $dbs --newest -o "$d/cg.$1" > /dev/null
}

# clang_use NAME FLAGS PROFILE: $d/clang-NAME, clang with FLAGS and the sample
# profile PROFILE (program $p)
clang_use() {
	build_$p clang-19 "$2 -fprofile-sample-use=$3" "$d/clang-$1" 2> "$d/clang-$1.log" ||
		{ echo "clang -fprofile-sample-use ($1) failed:"; head -3 "$d/clang-$1.log"; }
}

# clang_dcpi NAME DB BIN FLAGS: dcpi's profile of BIN from $d/DB into
# $d/NAME.llvm.prof, and $d/clang-NAME built with it (clang_use)
clang_dcpi() {
	"$DCPI" llvm-prof --db "$d/$2" "$3" -o "$d/$1.llvm.prof"
	clang_use "$1" "$4" "$d/$1.llvm.prof"
}

bench_one() {
	p=$1
	d=$W/$p
	rm -rf "$d"
	mkdir -p "$d"
	inputs
	train=$W/train.dat
	eval=$W/eval.dat
	runcmd="$(command -v "$here/runone.sh") $p BIN INPUT $W"
	echo "== $p: builds and profiles (training input $(wc -c < "$train") bytes)"
	line="-O2 -gdwarf-4 -fdebug-info-for-profiling"
	probe="$line -fpseudo-probe-for-profiling"
	# LLVM side: the profiling build is also the -O2 base and BOLT's input
	# DWARF 4: AutoFDO 0.19 (Debian's) cannot read DWARF 5 and makes empty profiles
	build_$p clang-19 "$line -Wl,-q" "$d/clang-O2"
	build_$p clang-19 "-O2 -fprofile-instr-generate" "$d/clang-instr"
	LLVM_PROFILE_FILE="$d/instr-%p.profraw" "$here/runone.sh" "$p" "$d/clang-instr" "$train" "$W"
	llvm-profdata-19 merge -o "$d/instr.profdata" "$d"/instr-*.profraw
	build_$p clang-19 "-O2 -fprofile-instr-use=$d/instr.profdata" "$d/clang-pgo"
	profile clang "$d/clang-O2"
	"$DCPI" llvm-prof --db "$d/db.clang" "$d/clang-O2" -o "$d/dcpi.llvm.prof"
	"$DCPI" llvm-prof --raw-samples --db "$d/db.clang" "$d/clang-O2" -o "$d/raw.llvm.prof"
	exact clang "$d/clang-O2"
	"$DCPI" llvm-prof --exact "$d/cg.clang" --db "$d/db.clang" "$d/clang-O2" \
		-o "$d/exact.llvm.prof"
	"$DCPI" bolt-prof --db "$d/db.clang" "$d/clang-O2" -o "$d/dcpi.fdata"
	create_llvm_prof --binary="$d/clang-O2" --profile="$d/perf.clang.data" --use_lbr=false \
		--format=text --out="$d/afdo.raw.prof" > "$d/afdo.llvm.log" 2>&1 || echo "create_llvm_prof failed"
	# AutoFDO 0.19 writes names with their NUL terminator inside the text,
	# which llvm-profdata rejects: delete the NULs (the only repair made)
	[ -s "$d/afdo.raw.prof" ] && tr -d '\000' < "$d/afdo.raw.prof" > "$d/afdo.llvm.prof"
	# BOLT aggregates only when called by the name perf2bolt
	mkdir -p "$W/bin" && ln -sf "$(command -v perf2bolt-19)" "$W/bin/perf2bolt"
	"$W/bin/perf2bolt" -nl -p "$d/perf.clang.data" -o "$d/nl.fdata" "$d/clang-O2" \
		> "$d/perf2bolt.log" 2>&1 || echo "perf2bolt -nl failed"
	for v in dcpi raw afdo exact; do
		f=$d/$v.llvm.prof
		[ -s "$f" ] || continue
		if ! llvm-profdata-19 show --sample "$f" > "$f.show" 2>&1; then
			echo "$v: llvm-profdata-19 rejects $f:"; head -1 "$f.show"
			continue
		fi
		clang_use "$v" "$line $SAMPLE_FLAGS" "$f"
	done
	# probe-based: the profiling and the final build with pseudo probes
	# (-fpseudo-probe-for-profiling), dcpi llvm-prof keying by probe ids
	build_$p clang-19 "$probe" "$d/clang-probe"
	profile probe "$d/clang-probe"
	"$DCPI" llvm-prof --db "$d/db.probe" "$d/clang-probe" -o "$d/dcpi-probe.llvm.prof"
	exact probe "$d/clang-probe"
	"$DCPI" llvm-prof --exact "$d/cg.probe" --db "$d/db.probe" "$d/clang-probe" \
		-o "$d/exact-probe.llvm.prof"
	for v in dcpi-probe exact-probe; do
		clang_use "$v" "$probe" "$d/$v.llvm.prof"
	done
	# REPEATS > 1: as many more recordings of the training run, each its own
	# dcpi profile and clang build (line- and probe-keyed): how much the
	# result moves from one recording to the next
	extra=""
	lines_dbs="$d/db.clang" probe_dbs="$d/db.probe"
	r=2
	while [ "$r" -le "${REPEATS:-1}" ]; do
		profile "clang$r" "$d/clang-O2"
		clang_dcpi "dcpi$r" "db.clang$r" "$d/clang-O2" "$line $SAMPLE_FLAGS"
		profile "probe$r" "$d/clang-probe"
		clang_dcpi "dcpi-probe$r" "db.probe$r" "$d/clang-probe" "$probe"
		extra="$extra clang-dcpi$r:clang-O2 clang-dcpi-probe$r:clang-O2"
		lines_dbs="$lines_dbs $d/db.clang$r" probe_dbs="$probe_dbs $d/db.probe$r"
		r=$((r + 1))
	done
	# and all the recordings merged into one epoch (dcpi merge): the same as
	# one training run REPEATS times as long
	if [ "${REPEATS:-1}" -gt 1 ]; then
		# shellcheck disable=SC2086
		"$DCPI" merge $lines_dbs --newest -o "$d/db.clang-all" > /dev/null
		# shellcheck disable=SC2086
		"$DCPI" merge $probe_dbs --newest -o "$d/db.probe-all" > /dev/null
		clang_dcpi dcpi-all db.clang-all "$d/clang-O2" "$line $SAMPLE_FLAGS"
		clang_dcpi dcpi-probe-all db.probe-all "$d/clang-probe" "$probe"
		extra="$extra clang-dcpi-all:clang-O2 clang-dcpi-probe-all:clang-O2"
	fi
	bolt="-reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions \
		-split-all-cold -dyno-stats"
	for v in dcpi nl; do
		[ -s "$d/$v.fdata" ] || continue
		# shellcheck disable=SC2086
		llvm-bolt-19 "$d/clang-O2" -o "$d/bolt-$v" -data="$d/$v.fdata" $bolt \
			> "$d/bolt-$v.log" 2>&1 || { echo "llvm-bolt $v failed"; rm -f "$d/bolt-$v"; }
	done
	# GCC side
	build_$p gcc "-O2 -gdwarf-4" "$d/gcc-O2"
	# instrumented and final build under one name: gcc finds its .gcda by it
	build_$p gcc "-O2 -fprofile-generate=$d/gcda" "$d/gcc-pgo"
	"$here/runone.sh" "$p" "$d/gcc-pgo" "$train" "$W"
	build_$p gcc "-O2 -fprofile-use=$d/gcda -Wmissing-profile -Wno-coverage-mismatch" "$d/gcc-pgo" \
		2> "$d/gcc-pgo.log" || { echo "gcc -fprofile-use failed"; head -3 "$d/gcc-pgo.log"; }
	profile gcc "$d/gcc-O2"
	"$DCPI" gcc-prof --db "$d/db.gcc" "$d/gcc-O2" -o "$d/dcpi.afdo"
	"$DCPI" gcc-prof --raw-samples --db "$d/db.gcc" "$d/gcc-O2" -o "$d/raw.afdo"
	exact gcc "$d/gcc-O2"
	"$DCPI" gcc-prof --exact "$d/cg.gcc" --db "$d/db.gcc" "$d/gcc-O2" -o "$d/exact.afdo"
	create_gcov --binary="$d/gcc-O2" --profile="$d/perf.gcc.data" --use_lbr=false \
		--gcov_version=2 --gcov="$d/afdo.gcov" > "$d/afdo.gcov.log" 2>&1 || \
		echo "create_gcov failed"
	for v in dcpi raw afdo exact; do
		f=$d/$v.afdo
		[ "$v" = afdo ] && f=$d/afdo.gcov
		[ -s "$f" ] || continue
		build_$p gcc "-O2 -g -fauto-profile=$f" "$d/gcc-$v" 2> "$d/gcc-$v.log" && continue
		echo "gcc -fauto-profile ($v) failed:"; grep -m2 'error' "$d/gcc-$v.log"
		# gcc 12 can divide by zero in the vectorizer's profile scaling
		# (an ICE, "Floating point exception"): once more without it
		grep -q 'Floating point exception' "$d/gcc-$v.log" || continue
		build_$p gcc "-O2 -g -fauto-profile=$f -fno-tree-vectorize" "$d/gcc-$v" \
			2> "$d/gcc-$v.log" && echo "  built with -fno-tree-vectorize"
	done
	variants="clang-O2:clang-O2 clang-pgo:clang-O2 clang-dcpi:clang-O2 clang-raw:clang-O2
		clang-exact:clang-O2 clang-afdo:clang-O2 clang-probe:clang-O2
		clang-dcpi-probe:clang-O2 clang-exact-probe:clang-O2 bolt-dcpi:clang-O2 bolt-nl:clang-O2
		gcc-O2:gcc-O2 gcc-pgo:gcc-O2 gcc-dcpi:gcc-O2 gcc-raw:gcc-O2 gcc-exact:gcc-O2
		gcc-afdo:gcc-O2$extra"
	: > "$d/results.txt"
	for e in $EVALS; do
		eval=$W/$e.dat
		echo "== $p: timing the evaluation input $e ($(wc -c < "$eval") bytes), $RUNS rounds" |
			tee -a "$d/results.txt"
		# shellcheck disable=SC2086
		python3 "$here/timing.py" "$RUNS" "$d" "$here/runone.sh $p BIN $eval $W" $variants |
			tee -a "$d/results.txt"
		echo "== $p: cachegrind on the first $SIM_BYTES bytes of $e" | tee -a "$d/results.txt"
		head -c "$SIM_BYTES" "$eval" > "$W/$e.small"
		# shellcheck disable=SC2086
		python3 "$here/simulate.py" "$d" "$here/runone.sh $p BIN $W/$e.small $W" $variants |
			tee -a "$d/results.txt"
	done
}

for p in $PROGRAMS; do
	bench_one "$p"
done

# prefetch hints on a strided, cache-missing loop (docs: README.md here)
BUILD=$(dirname "$DCPI") sh "$HERE/prefetch.sh"
