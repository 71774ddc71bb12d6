#!/bin/sh
# bench/feedback/runone.sh PROGRAM BIN INPUT WORKDIR - one run of a program
# on an input (what is profiled and what is timed), checked for correctness.
# WRAP (e.g. valgrind and its options) goes in front of each run of BIN.
set -eu
: "${WRAP:=}"
case $1 in
bzip2)
	$WRAP "$2" -9 -c < "$3" > "$4/out.$$.bz2"
	$WRAP "$2" -d -c < "$4/out.$$.bz2" > "$4/out.$$.raw"
	cmp -s "$4/out.$$.raw" "$3" || { echo "$2: wrong output" >&2; exit 1; }
	rm -f "$4/out.$$.bz2" "$4/out.$$.raw"
	;;
lz4)
	$WRAP "$2" -12 -c < "$3" > "$4/out.$$.lz4"
	$WRAP "$2" -d -c < "$4/out.$$.lz4" > "$4/out.$$.raw"
	cmp -s "$4/out.$$.raw" "$3" || { echo "$2: wrong output" >&2; exit 1; }
	rm -f "$4/out.$$.lz4" "$4/out.$$.raw"
	;;
zstd)
	$WRAP "$2" -q -15 -c < "$3" > "$4/out.$$.zst"
	$WRAP "$2" -q -d -c < "$4/out.$$.zst" > "$4/out.$$.raw"
	cmp -s "$4/out.$$.raw" "$3" || { echo "$2: wrong output" >&2; exit 1; }
	rm -f "$4/out.$$.zst" "$4/out.$$.raw"
	;;
*)
	echo "runone: unknown program $1" >&2
	exit 1
	;;
esac
