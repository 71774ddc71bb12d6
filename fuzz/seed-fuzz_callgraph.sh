#!/bin/sh
# Seeds for the call-graph profile reader: the .cg files of a short
# recording with call chains (record -g) of tests/workloads/calltree.c.
dir="$1"
db=$(mktemp -d)
if "${BUILD:-build}/dcpi" record -q -g --no-paths --db "$db" -- \
	"${BUILD:-build}/workloads/calltree" 20 >/dev/null 2>&1; then
	i=0
	for f in "$db"/*/*.cg; do
		[ -f "$f" ] && cp "$f" "$dir/seed$i" && i=$((i + 1))
	done
fi
rm -rf "$db"
exit 0
