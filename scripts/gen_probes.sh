#!/bin/sh
# gen_probes.sh - assemble culprit/model/probes.txt into
# culprit/model/probes_data.c (the probes `dcpi calibrate --fit-model` times;
# built into dcpi, so no assembler is needed where it runs).  Needs GNU as and
# objcopy.  Run from the top of the tree after editing probes.txt;
# tests/test_fit.c checks the two agree.
set -e
in=culprit/model/probes.txt
out=culprit/model/probes_data.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "/*"
	echo " * culprit/model/probes_data.c - culprit/model/probes.txt assembled"
	echo " * (scripts/gen_probes.sh; do not edit): the calibration microbenchmarks as bytes."
	echo " */"
	echo '#include "probes.h"'
	echo
	echo "const struct model_probe probes[] = {"
	grep -v '^#' "$in" | grep . | while IFS='|' read -r name body; do
		echo "$body" | tr ';' '\n' >"$tmp/p.s"
		as "$tmp/p.s" -o "$tmp/p.o"
		objcopy -O binary -j .text "$tmp/p.o" "$tmp/p.bin"
		hex=$(od -An -tx1 -v "$tmp/p.bin" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
		n=$(echo "$hex" | wc -w)
		printf '\t{ "%s", %d, (const uint8_t[]){\n' "$name" "$n"
		echo "$hex" | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g' | fold -s -w 72 |
			sed 's/^/\t\t/; s/ $//'
		printf '\t} },\n'
	done
	echo "};"
	echo "const size_t nprobes = sizeof(probes) / sizeof(probes[0]);"
} >"$out"
echo "wrote $out"
