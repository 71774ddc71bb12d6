#!/bin/sh
# Install, with apt-get, the build and test dependencies this machine lacks.
# Each is probed first (pkg-config, a header, a command), so a machine that has
# everything installs nothing and needs no root.
missing=""
need_pc() { pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"; }
need_h() { [ -f "/usr/include/$1" ] || missing="$missing $2"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }

need_cmd pkg-config pkg-config
need_cmd cc gcc
need_cmd make make
need_pc capstone libcapstone-dev
need_pc libelf libelf-dev
need_pc libcgraph libgraphviz-dev
need_pc cmocka libcmocka-dev
need_h libdwarf/libdwarf.h libdwarf-dev
need_h libiberty/demangle.h libiberty-dev
need_h zlib.h zlib1g-dev
need_pc liblzma liblzma-dev
need_cmd valgrind valgrind
need_cmd clang clang
need_cmd readelf binutils
need_cmd perf linux-perf
need_cmd python3 python3
need_cmd dot graphviz
need_cmd llvm-mca-19 llvm-19
# fleet/: pushes over ClickHouse's HTTP interface; tests run a private server and go tool pprof
need_pc libcurl libcurl4-openssl-dev
need_cmd clickhouse-server clickhouse-server
need_cmd go golang-go
# tests/test_timeline.c opens dcpi timeline's picture in a headless browser
need_cmd chromium chromium
# separate debug symbols of libc and ld.so: dcpiprof names them as perf does
[ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 || missing="$missing libc6-dbg"
[ -d /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux ] ||
	ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
	missing="$missing libclang-rt-14-dev"

[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
	echo "deps: not root; install these by hand:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null ||
	{ echo "deps: apt-get install$missing failed" >&2; exit 1; }
