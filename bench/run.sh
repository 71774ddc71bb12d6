#!/bin/sh
# make bench: run every bench/bench_*.sh; each prints its figures beside the
# peer tool's, measured in the same run.
: "${BUILD:=build}"
export BUILD
status=0
for b in bench/bench_*.sh; do
	[ -e "$b" ] || continue
	echo "== $b"
	sh "$b" || { echo "$b: FAILED"; status=1; }
	echo
done
exit $status
