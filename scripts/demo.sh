#!/bin/sh
# make demo: profile the bundled workload with `dcpi record` into a fresh
# database and print what the tools say about it.
set -e
: "${BUILD:=build}"
DCPI="$BUILD/dcpi"
DB="$BUILD/demo-db"
rm -rf "$DB"
echo "== dcpi record -- $BUILD/workloads/demo_work 4"
"$DCPI" record --db "$DB" -- "$BUILD/workloads/demo_work" 4
echo
echo "== dcpiprof --db $DB --limit 10"
"$BUILD/dcpiprof" --db "$DB" --limit 10
echo
echo "== dcpiprof --db $DB -i"
"$BUILD/dcpiprof" --db "$DB" -i

hot=$("$BUILD/dcpiprof" --db "$DB" --json --limit 1 | sed -n 's/.*"name": "\([^"]*\)".*/\1/p' | head -n 1)
echo
echo "== dcpicalc --db $DB $hot"
"$BUILD/dcpicalc" --db "$DB" "$hot"
