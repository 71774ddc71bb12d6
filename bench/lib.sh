# bench/lib.sh - what the bench scripts share, sourced by them (`. bench/lib.sh`)
# from the top of the tree, where bench/run.sh runs them.  Not a bench itself:
# bench/run.sh runs only bench/bench_*.sh.

# bench_tmp NAME: a new folder dcpi-NAME.XXXXXX under $TMPDIR (else /tmp) in
# $tmp, removed when the script exits or is interrupted.
bench_tmp() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/dcpi-$1.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT INT TERM
}

# bench_need SCRIPT TEST FILE...: unless `[ TEST FILE ]` holds for every FILE
# (-x: built and runnable, -e: there), SCRIPT says which is not built and the
# bench is skipped (exit 0).
bench_need() {
	script=$1
	op=$2
	shift 2
	for f in "$@"; do
		if [ ! "$op" "$f" ]; then
			echo "$script: $f: not built (make all-tests), skipped"
			exit 0
		fi
	done
}

# bench_workloads SCRIPT W...: unless $BUILD/workloads/W is built for every W,
# SCRIPT says which is not and fails (exit 1): the bench times them.
bench_workloads() {
	script=$1
	shift
	for w in "$@"; do
		if [ ! -x "$BUILD/workloads/$w" ]; then
			echo "$script: $BUILD/workloads/$w: not built (make $BUILD/workloads/$w)" >&2
			exit 1
		fi
	done
}
