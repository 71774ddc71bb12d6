#!/bin/sh
# Run each cmocka test binary given, print its output, and close with one
# summary line "check: N passed, M failed, K skipped".  A binary that dies without
# cmocka's summary counts as one failure.  Exit status is non-zero on any
# failure.  TEST_WRAPPER (e.g. valgrind) runs in front of each binary.
: "${BUILD:=build}"
DCPI_BIN="$(pwd)/$BUILD/dcpi"
DCPI_BUILD="$(pwd)/$BUILD"
DCPI_SRC="$(pwd)"
export DCPI_BIN DCPI_BUILD DCPI_SRC
passed=0
failed=0
skipped=0
log=$(mktemp)
for t in "$@"; do
	echo "== $t"
	# shellcheck disable=SC2086
	$TEST_WRAPPER "$t" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	k=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	[ -n "$k" ] || k=0
	[ -n "$p" ] || p=0
	[ -n "$f" ] || f=0
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$t: exited with status $rc"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + k))
done
rm -f "$log"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
