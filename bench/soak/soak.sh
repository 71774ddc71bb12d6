#!/bin/sh
# soak.sh - the held list at the stress run's full figures: the checks of
# tests/test_held.c (one binary; `make check` runs its short form) with
#
#   45 concurrent `dcpi record` into one database
#   60 s of records, merges and reports at once
#   1,035 SIGUSR1 and 5 SIGHUP to dcpid
#   20 SIGKILLs of dcpid during flushes
#   SOAK_SECONDS (300) of short processes under dcpid, RSS growth <= 8 MB
#   1,592 damaged perf.data files imported by the ASan build, when there is one
#   220 damaged databases, three reports each
#   the hostile programs of tests/workloads/held_hostile.c
#   7 full-disk flushes in a row
#
# Each check runs alone (HELD_ONLY) and prints its "held:" figures, its
# verdict and its wall time; the script exits 1 if any failed.  Not run by
# `make bench`: it takes about SOAK_SECONDS + 4 minutes.  bench/README.md
# says how to read it.
#
#   BUILD=DIR         the build to check (default build)
#   SOAK_SECONDS=S    length of the process soak (default 300)
#   SOAK_ASAN=DIR     the ASan build whose dcpi imports the damaged perf.data
#                     (default build-asan; make it with `make BUILD=build-asan
#                     CFLAGS="-O1 -g -fsanitize=address,undefined
#                     -fno-omit-frame-pointer -fno-sanitize-recover=all"
#                     build-asan/dcpi`); without it, BUILD's dcpi does
#   SOAK_ONLY=NAME    one check (test_soak, test_mixed, ...)
: "${BUILD:=build}"
: "${SOAK_SECONDS:=300}"
: "${SOAK_ASAN:=build-asan}"
export BUILD

make -s --no-print-directory BUILD="$BUILD" all "$BUILD/tests/test_held" \
	"$BUILD/workloads/twoprocs" "$BUILD/workloads/held_hostile" || exit 1

DCPI_BIN="$(pwd)/$BUILD/dcpi"
DCPI_BUILD="$(pwd)/$BUILD"
DCPI_SRC="$(pwd)"
export DCPI_BIN DCPI_BUILD DCPI_SRC
HELD_RECORDS=45
HELD_MIXED_SECONDS=60
HELD_USR1=1035
HELD_HUP=5
HELD_KILLS=20
HELD_SOAK_SECONDS=$SOAK_SECONDS
HELD_RSS_MB=8
HELD_PERF_FILES=1592
HELD_DB_FILES=220
HELD_ENOSPC=7
export HELD_RECORDS HELD_MIXED_SECONDS HELD_USR1 HELD_HUP HELD_KILLS HELD_SOAK_SECONDS \
	HELD_RSS_MB HELD_PERF_FILES HELD_DB_FILES HELD_ENOSPC
if [ -x "$SOAK_ASAN/dcpi" ]; then
	HELD_IMPORT_BIN="$(pwd)/$SOAK_ASAN/dcpi"
	export HELD_IMPORT_BIN
	ASAN_OPTIONS=detect_leaks=1
	export ASAN_OPTIONS
	importer="$SOAK_ASAN/dcpi (ASan)"
else
	importer="$BUILD/dcpi (no $SOAK_ASAN/dcpi: not under ASan)"
fi

checks="test_concurrent_records test_mixed test_signal_storm test_sigkill_in_flush test_soak
test_corrupt_perf_data test_corrupt_databases test_hostile_programs test_disk_full_recovers"
[ -n "$SOAK_ONLY" ] && checks=$SOAK_ONLY

echo "soak: $BUILD/dcpi, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs;" \
	"perf.data imported by $importer"
log=$(mktemp "${TMPDIR:-/tmp}/dcpi-soak.XXXXXX")
trap 'rm -f "$log"' EXIT
trap 'exit 1' INT TERM
failed=0
for t in $checks; do
	t0=$(date +%s.%N)
	HELD_ONLY=$t "$BUILD/tests/test_held" >"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	secs=$(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }')
	grep '^held:' "$log" | sed 's/^held: /  /'
	if [ $rc -eq 0 ] && grep -q "^\[       OK \] $t" "$log"; then
		echo "$t: ok, $secs s"
	elif grep -q "^\[  SKIPPED \] $t" "$log"; then
		echo "$t: skipped, $secs s"
	else
		echo "$t: FAILED (status $rc), $secs s"
		grep -v '^held:' "$log" | sed 's/^/    /' | tail -n 20
		failed=$((failed + 1))
	fi
done
echo "soak: $failed check(s) failed; load $(cut -d' ' -f1-3 /proc/loadavg)"
[ $failed -eq 0 ]
