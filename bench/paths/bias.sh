#!/bin/sh
# bench/paths/bias.sh - path samples see branches weighted by time
# (docs/paths.md, "Time weighting").  Two programs whose branch outcomes
# correlate with how slow the code around them runs:
#   trip.c   a call skips its loop 3 times in 4, else runs 50 cache-missing
#            iterations (the skip/enter decision comes right after fast code);
#   phase.c  phases of short loops after a cache-missing load, then of long
#            loops without misses.
# Each is recorded with `dcpi record --paths RATE:K` and run under callgrind;
# the script prints every two-way branch of the procedure: the probability
# the path samples give (and the transitions seen) beside callgrind's exact.
# Environment: BUILD (default build), PATHS (default 250:64), CC (default cc).
set -eu
: "${BUILD:=build}"
: "${PATHS:=250:64}"
: "${CC:=cc}"
here=$(cd "$(dirname "$0")" && pwd)
DCPI=$(cd "$BUILD" && pwd)/dcpi
W=$(mktemp -d "${TMPDIR:-/tmp}/dcpi-bias.XXXXXX")
trap 'rm -rf "$W"' EXIT
command -v valgrind > /dev/null || { echo "bias.sh: valgrind missing"; exit 1; }
for p in trip:upd phase:inner; do
	prog=${p%%:*} proc=${p#*:}
	$CC -O2 -g -o "$W/$prog" "$here/$prog.c"
	"$DCPI" record -q -c 100000 --paths "$PATHS" --db "$W/$prog.rec" -- "$W/$prog" > /dev/null
	valgrind -q --tool=callgrind --dump-instr=yes --collect-jumps=yes --skip-plt=no --callgrind-out-file="$W/$prog.cg" \
		"$W/$prog" > /dev/null
	"$DCPI" import -q --db "$W/$prog.cgdb" "$W/$prog.cg" 2> "$W/import.log"
	"$DCPI" calc "$proc" --db "$W/$prog.rec" --json > "$W/est.json"
	echo "== $prog.c, procedure $proc, --paths $PATHS"
	python3 - "$W/est.json" "$W/$prog.cgdb" "$here/../accuracy" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import compare
est = json.load(open(sys.argv[1]))
jumps = compare.read_jumps(sys.argv[2]).get(est["image"], {})
print("paths: %(bursts)d bursts, %(transitions)d transitions in the procedure" % est["paths"])
# the conditional jump ending each block: callgrind's taken / executed
last = {}
for b in est["blocks"]:
    for i in est["instructions"]:
        if int(b["start"], 16) <= int(i["address"], 16) < int(b["end"], 16):
            last[b["start"]] = i["offset"]
print("%-8s %-8s %-10s %8s %6s %8s" % ("from", "to", "kind", "paths", "seen", "exact"))
for e in est["edges"]:
    if e["kind"] not in ("taken", "not-taken"):
        continue
    rec = [j for j in jumps.get(last.get(e["from"], -1), []) if j[3] == "c"]
    if not rec or not rec[0][2]:
        continue
    p = rec[0][1] / rec[0][2]
    x = p if e["kind"] == "taken" else 1 - p
    print("%-8s %-8s %-10s %8.3f %6d %8.3f" % (e["from"], e["to"], e["kind"],
                                              e["probability"], e["observed"], x))
PY
done
