#!/bin/sh
# bench/feedback/fetch.sh DIR PACKAGE... - the Debian source of each package
# into DIR (apt-get source), adding a deb-src entry (a copy of the system's
# debian.sources with Types: deb-src) when apt has none.  Nothing fetched is
# committed: the bench builds from DIR.
set -eu
dir=$1
shift
mkdir -p "$dir"
if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
		> /etc/apt/sources.list.d/debian-src.sources
	apt-get update -qq
fi
cd "$dir"
for p in "$@"; do
	ls ./*"$p"_*.dsc > /dev/null 2>&1 || apt-get source -qq "$p" > /dev/null 2>&1
done
