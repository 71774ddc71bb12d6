#!/bin/sh
# Seeds for the path profile reader: the .paths files of a short recording.
dir="$1"
db=$(mktemp -d)
if "${BUILD:-build}/dcpi" record -q --db "$db" -- "${BUILD:-build}/workloads/demo_work" 1 \
	>/dev/null 2>&1; then
	i=0
	for f in "$db"/*/*.paths; do
		[ -f "$f" ] && cp "$f" "$dir/seed$i" && i=$((i + 1))
	done
fi
rm -rf "$db"
exit 0
