#!/bin/sh
# bench/values/run.sh - value samples on real programs against exact counts
# (docs/values.md, "Accuracy", real programs).  Builds bzip2 1.0.8 and Lua
# 5.4 from Debian's sources (apt-get source; a deb-src entry is added when
# missing), records each with `dcpi record --values` over many runs of one
# input, counts the same sites exactly with truth.c (ptrace breakpoints, a
# single run: the programs are deterministic) and prints compare.py's table.
# ASLR is off for both (setarch -R) so that a run's addresses repeat.
#
#   bench/values/run.sh [WORKDIR]     default /tmp/dcpi-values-bench
# VALUES_RUNS_BZ (default 6000) and VALUES_RUNS_LUA (2400) set the number of
# recorded runs; MIN_SEEN (300) the sites compared.  Takes several minutes,
# most of it in the ptrace truth.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
dcpi=$top/build/dcpi
w=${1:-/tmp/dcpi-values-bench}
runs_bz=${VALUES_RUNS_BZ:-6000}
runs_lua=${VALUES_RUNS_LUA:-2400}
min=${MIN_SEEN:-300}
mkdir -p "$w"
cd "$w"
[ -x "$dcpi" ] || { echo "run make first" >&2; exit 1; }
cc -O2 -o truth "$here/truth.c"

if ! ls -d bzip2-1.0.8 lua5.4-* >/dev/null 2>&1; then
	if ! ls /etc/apt/sources.list.d/*src* >/dev/null 2>&1; then
		sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
			> /etc/apt/sources.list.d/dcpi-deb-src.sources
		apt-get update -qq
	fi
	apt-get source -qq bzip2 lua5.4 >/dev/null 2>&1
fi
# bzip2: every object in the executable, with symbols
(cd bzip2-1.0.8 && cc -O2 -g -D_FILE_OFFSET_BITS=64 -o ../bzip2-dcpi bzip2.c blocksort.c \
	huffman.c crctable.c randtable.c compress.c decompress.c bzlib.c)
# Lua: the interpreter and its library in one executable
l=$(ls -d lua5.4-*/ | head -n 1)
echo '#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"' > "$l/src/lua5.4-deb-multiarch.h"
(cd "$l/src" && cc -O2 -g -DLUA_USE_LINUX -o ../../lua-dcpi $(ls *.c | grep -v luac.c) \
	-lm -ldl)

# inputs: 50 KB of English text; a Lua loop calling four C functions in
# shares 5:3:1:1 through luaD_precall's indirect call
(cat /usr/share/common-licenses/*; zcat /usr/share/man/man1/*.gz 2>/dev/null) |
	head -c 50000 > text50k.txt
cat > calls.lua <<'EOF'
local s = 0
local len, byte, max, floor = string.len, string.byte, math.max, math.floor
local str = "the quick brown fox jumps over the lazy dog"
for i = 1, 300000 do
  local k = i % 10
  if k < 5 then s = s + len(str)
  elseif k < 8 then s = s + byte(str, (i % 40) + 1)
  elseif k < 9 then s = max(s, i)
  else s = s + floor(i / 3) end
end
print(s)
EOF

rm -rf bzdb luadb
"$dcpi" record -q --db bzdb --values --paths 250:128 -- setarch -R sh -c \
	"for i in \$(seq $runs_bz); do ./bzip2-dcpi -9 -c text50k.txt > /dev/null; done"
"$dcpi" record -q --db luadb --values --paths 250:128 -- setarch -R sh -c \
	"for i in \$(seq $runs_lua); do ./lua-dcpi calls.lua > /dev/null; done"

mkdir -p vl
procs=$("$dcpi" prof --db bzdb 2>/dev/null | awk '$5 ~ /bzip2-dcpi$/ && $2+0 >= 1 {print $4}')
for p in $procs; do
	"$dcpi" vlist --db bzdb "$p" --json > "vl/bz-$p.json" 2>/dev/null || rm -f "vl/bz-$p.json"
done
"$dcpi" vlist --db luadb luaD_precall --json > vl/lua-precall.json
specs=$(python3 "$here/compare.py" sites --min-seen "$min" vl/bz-*.json)
setarch -R env TRUTH_SPECS="$specs" ./truth truth-bz.json ./bzip2-dcpi -9 -c text50k.txt
specs=$(python3 "$here/compare.py" sites --min-seen 100 vl/lua-precall.json)
setarch -R env TRUTH_SPECS="$specs" ./truth truth-lua.json ./lua-dcpi calls.lua

echo "== bzip2 -9 of 50 KB of text, $runs_bz runs (sites seen >= $min times)"
python3 "$here/compare.py" report --min-seen "$min" vl/bz-*.json truth-bz.json
echo "== lua calls.lua, $runs_lua runs: luaD_precall's indirect call and its other sites"
python3 "$here/compare.py" report --min-seen 100 vl/lua-precall.json truth-lua.json
