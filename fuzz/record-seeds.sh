#!/bin/sh
# Seeds from a short recording: record demo_work into a new database and
# copy its files ending in .$2 (prof, paths) into the corpus directory $1.
dir="$1"
db=$(mktemp -d)
if "${BUILD:-build}/dcpi" record -q --db "$db" -- "${BUILD:-build}/workloads/demo_work" 1 \
	>/dev/null 2>&1; then
	i=0
	for f in "$db"/*/*."$2"; do
		[ -f "$f" ] && cp "$f" "$dir/seed$i" && i=$((i + 1))
	done
fi
rm -rf "$db"
exit 0
