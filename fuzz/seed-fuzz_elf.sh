#!/bin/sh
# Seeds for the ELF loader: a few small real ELF files of different kinds.
dir="$1"
for f in /bin/true /usr/lib/x86_64-linux-gnu/libdl.so.2 "${BUILD:-build}/workloads/demo_work"; do
	[ -f "$f" ] && cp "$f" "$dir/$(basename "$f")" 2>/dev/null
done
exit 0
