#!/bin/sh
# make demo: profile the bundled workload with `dcpi record` into a fresh
# database (the workload's own output hidden) and print what the tools say
# about it: dcpiprof, dcpicalc with a key to its columns, dcpilist, a dcpicfg
# picture; then value samples of the valloop workload, and the
# specialization hints they give.
set -e
: "${BUILD:=build}"
DCPI="$BUILD/dcpi"
DB="$BUILD/demo-db"
rm -rf "$DB"
echo "== dcpi record -- $BUILD/workloads/demo_work 4"
"$DCPI" record --db "$DB" -- "$BUILD/workloads/demo_work" 4 > /dev/null
echo
echo "== dcpiprof --db $DB --limit 10"
"$BUILD/dcpiprof" --db "$DB" --limit 10
echo
echo "== dcpiprof --db $DB -i"
"$BUILD/dcpiprof" --db "$DB" -i

hot=$("$BUILD/dcpiprof" --db "$DB" --json --limit 1 | sed -n 's/.*"name": "\([^"]*\)".*/\1/p' | head -n 1)
echo
echo "== dcpicalc --db $DB $hot"
echo "   (per block: the model's best-case cycles/instructions, the actual ones from"
echo "   the samples, the estimated executions with their 90% interval; per"
echo "   instruction: address, instruction, samples, cycles per execution, culprit)"
"$BUILD/dcpicalc" --db "$DB" "$hot" | head -n 40
echo
echo "== dcpilist --db $DB $hot    (samples, executions, CPI per source line)"
"$BUILD/dcpilist" --db "$DB" "$hot" | head -n 30
echo
echo "== dcpicfg --db $DB $hot --format svg -o $BUILD/demo-cfg.svg"
"$BUILD/dcpicfg" --db "$DB" "$hot" --format svg -o "$BUILD/demo-cfg.svg" &&
	echo "   the control-flow graph with its counts: open $BUILD/demo-cfg.svg"

# value samples (docs/values.md): the same workload's values, and what they
# suggest specializing
VDB="$BUILD/demo-values-db"
rm -rf "$VDB"
echo
echo "== dcpi record --values --paths 250:64 -- $BUILD/workloads/valloop 20000000"
"$DCPI" record --db "$VDB" --values --paths 250:64 -- "$BUILD/workloads/valloop" 20000000 \
	> /dev/null
echo
echo "== dcpivargs --db $VDB vl_scale"
"$BUILD/dcpivargs" --db "$VDB" vl_scale
echo
echo "== dcpi specialize --db $VDB"
"$DCPI" specialize --db "$VDB" | head -n 24
