# bench/culprits/bpsim.sh - sourced by bench/culprits/run.sh and
# bench/accuracy/run.sh: bpsim_run DIR CMD... runs CMD (standard input the
# caller's) under bpsim (make bpsim: a TAGE predictor, bench/culprits/bpsim)
# and imports its mispredicts into DIR/bp, the mispredict yardstick of fig. 10
# beside callgrind's 2-bit one (docs/culprits.md).  Needs BPLIB (the
# VALGRIND_LIB make bpsim builds) and DCPI; does nothing when the tool is not
# built.
bpsim_run() {
	bd=$1
	shift
	[ -x "$BPLIB/bpsim-amd64-linux" ] || return 0
	rm -rf "$bd/bp" "$bd/bp.out"
	VALGRIND_LIB=$BPLIB valgrind --tool=bpsim --bpsim-out-file="$bd/bp.out" "$@" \
		> /dev/null 2> "$bd/bpsim.log" ||
		{ echo "bpsim $*: failed" >&2; tail -3 "$bd/bpsim.log" >&2; return 1; }
	"$DCPI" import "$bd/bp.out" --db "$bd/bp" > "$bd/bp-import.log" 2>&1 ||
		{ echo "bpsim $*: import failed" >&2; cat "$bd/bp-import.log" >&2; return 1; }
	rm -f "$bd/bp.out"
}
