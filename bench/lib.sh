# bench/lib.sh - what the bench scripts share, sourced by them (`. bench/lib.sh`)
# from the top of the tree, where bench/run.sh runs them.  Not a bench itself:
# bench/run.sh runs only bench/bench_*.sh.

# bench_tmp NAME: a new folder /tmp/dcpi-NAME.XXXXXX in $tmp, removed when the
# script exits or is interrupted.
bench_tmp() {
	tmp=$(mktemp -d "/tmp/dcpi-$1.XXXXXX")
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
