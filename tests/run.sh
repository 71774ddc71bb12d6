#!/bin/sh
# Run each cmocka test binary given, print its output, and close with one
# summary line "check: N passed, M failed, K skipped".  A binary that dies without
# cmocka's summary counts as one failure.  Exit status is non-zero on any
# failure.  TEST_WRAPPER (e.g. valgrind) runs in front of each binary.
#
# Hermetic: each binary runs with a folder of its own as TMPDIR and HOME
# (XDG_DATA_HOME inside it: no calibrated model file of the developer's is
# read, culprit/model/modelfile.c), removed after.  Settings of the developer's
# that change results (DCPIDB, DCPI_MODEL, ...) are unset, and no model is
# measured on first use (DCPI_NO_CALIBRATE=1).  After each
# binary, /dev/null, /dev/zero and /dev/urandom must still be character
# devices, and nothing may be left in /tmp, /var/tmp, $TMPDIR, /dev,
# /dev/shm, the invoking user's HOME (two levels) or the source tree (less
# .git and the build folders; judged after the last binary, so that what
# other processes make and remove meanwhile is not blamed); a binary that
# breaks this is one more failure, named before the summary line.
: "${BUILD:=build}"
DCPI_BIN="$(pwd)/$BUILD/dcpi"
DCPI_BUILD="$(pwd)/$BUILD"
DCPI_SRC="$(pwd)"
export DCPI_BIN DCPI_BUILD DCPI_SRC
unset DCPIDB DCPI_MODEL DCPI_MODEL_DIR DCPI_MEASURE DCPI_FAILPOINT DCPI_PATHS_LIB \
	XDG_CONFIG_HOME XDG_CACHE_HOME XDG_STATE_HOME
# the shipped model tables: a model measured on first use (estimate/analyze.c)
# would differ from run to run; tests/test_analysis.c's test_auto_model turns
# it on in a folder of its own
DCPI_NO_CALIBRATE=1
export DCPI_NO_CALIBRATE
outer_tmp="${TMPDIR:-/tmp}"
user_home="$HOME"
passed=0
failed=0
skipped=0
failed_names=""
run=$(mktemp -d "$outer_tmp/dcpi-check.XXXXXX") || exit 1
log="$run/log"

# Names in the places a test must not touch (this runner's and concurrent
# runners' folders aside).
snapshot() {
	for d in /tmp /var/tmp "$outer_tmp" /dev /dev/shm; do
		[ -d "$d" ] && ls -A "$d" 2>/dev/null | sed "s|^|$d/|"
	done
	[ -n "$user_home" ] && [ -d "$user_home" ] && find "$user_home" -maxdepth 2 2>/dev/null
	find "$DCPI_SRC" -path "$DCPI_SRC/.git" -prune -o -path "$DCPI_SRC/build*" -prune \
		-o -path "$DCPI_BUILD" -prune -o -print 2>/dev/null
}

left_behind() {
	snapshot | grep -v "^$outer_tmp/dcpi-check\." | sort -u > "$run/after"
	comm -13 "$run/before" "$run/after"
}

devices_ok() {
	[ -c /dev/null ] && [ -c /dev/zero ] && [ -c /dev/urandom ]
}

fail_name() {
	failed=$((failed + 1))
	case " $failed_names " in
	*" $1 "*) ;;
	*) failed_names="$failed_names $1" ;;
	esac
}

devices_ok || echo "warning: /dev/null, /dev/zero or /dev/urandom is not a character device" \
	"before any test ran"
n=0
for t in "$@"; do
	echo "== $t"
	name=$(basename "$t")
	n=$((n + 1))
	ws="$run/$n"
	mkdir -p "$ws/home/.local/share"
	devs_before=0
	devices_ok && devs_before=1
	snapshot | grep -v "^$outer_tmp/dcpi-check\." | sort -u > "$run/before"
	# shellcheck disable=SC2086
	TMPDIR="$ws" HOME="$ws/home" XDG_DATA_HOME="$ws/home/.local/share" \
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
	skipped=$((skipped + k))
	[ "$f" -gt 0 ] && failed=$((failed + f - 1)) && fail_name "$name"
	chmod -R u+rwx "$ws" 2>/dev/null
	rm -rf "$ws"
	if [ "$devs_before" -eq 1 ] && ! devices_ok; then
		echo "$t: /dev/null, /dev/zero or /dev/urandom is no longer a character device:"
		ls -l /dev/null /dev/zero /dev/urandom
		fail_name "$name"
	fi
	# suspects, judged at the end: what another process on the machine made
	# meanwhile (a compiler's temporaries, another checkout's tests) is gone
	# by then, what this binary left is not
	left_behind | sed "s|^|$name |" >> "$run/suspects"
done
sleep 1
while read -r name path; do
	if [ -e "$path" ] || [ -L "$path" ]; then
		echo "$name: left behind outside its folder: $path"
		fail_name "$name"
	fi
done < "$run/suspects"
rm -rf "$run"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
