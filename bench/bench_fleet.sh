#!/bin/sh
# bench_fleet.sh - a simulated fleet on ClickHouse (docs/fleet.md): real
# recordings (dcpi record of tests/workloads and of cc compiling) made into HOSTS host databases
# of EPOCHS epochs each by bench/fleet_gen.c (per-host and per-epoch load,
# per-entry noise, per-host calibration), pushed with `dcpi push` to a
# private clickhouse-server (its files in a temporary folder, loopback ports
# found free, stopped at the end), then one build-id pulled back.  Prints,
# measured in this one run: the push rate (sample rows/s), the pull time for
# the build-id, `dcpi merge` of the same databases locally, their ratio, and
# dcpiprof --from URL against dcpiprof over the merged database; checks the
# pulled profile equals the merge's byte for byte.
#
#   BUILD=build sh bench/bench_fleet.sh            # 100 hosts x 10 epochs
#   HOSTS=4 EPOCHS=2 BUILD=build sh bench/bench_fleet.sh   # a quick try
set -e
: "${BUILD:=build}"
: "${HOSTS:=100}"
: "${EPOCHS:=10}"
CH=/usr/sbin/clickhouse-server
DCPI="$BUILD/dcpi"
GEN="$BUILD/bench/fleet_gen"

if [ ! -x "$CH" ]; then
	echo "bench_fleet: $CH not installed (scripts/deps.sh); skipped" >&2
	exit 0
fi
make -s BUILD="$BUILD" "$DCPI" "$GEN" "$BUILD/workloads/demo_work" \
	"$BUILD/workloads/cpubound" "$BUILD/workloads/switchy" >/dev/null
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-fleet-XXXXXX")
CHPID=
cleanup() {
	if [ -n "$CHPID" ]; then
		kill "$CHPID" 2>/dev/null || true
		wait "$CHPID" 2>/dev/null || true
	fi
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); \
print(s.getsockname()[1])'
}

# --- the server --------------------------------------------------------------
HTTP=$(free_port); TCP=$(free_port); INTER=$(free_port)
mkdir -p "$W/ch"
cat > "$W/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
<logger><level>warning</level><log>$W/ch/server.log</log><errorlog>$W/ch/err.log</errorlog>
<size>10M</size><count>1</count></logger>
<http_port>$HTTP</http_port><tcp_port>$TCP</tcp_port>
<interserver_http_port>$INTER</interserver_http_port>
<interserver_http_host>127.0.0.1</interserver_http_host><listen_host>127.0.0.1</listen_host>
<path>$W/ch/data/</path><tmp_path>$W/ch/tmp/</tmp_path>
<user_files_path>$W/ch/user_files/</user_files_path>
<format_schema_path>$W/ch/format_schemas/</format_schema_path>
<mark_cache_size>268435456</mark_cache_size>
<users_config>$W/ch/users.xml</users_config><default_profile>default</default_profile>
<default_database>default</default_database><mlock_executable>false</mlock_executable>
</yandex>
EOF
cat > "$W/ch/users.xml" <<EOF
<?xml version="1.0"?>
<yandex><profiles><default></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks>
<profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
EOF
(cd "$W/ch" && exec "$CH" --config-file="$W/ch/config.xml" >"$W/ch/stdout.log" 2>&1) &
CHPID=$!
i=0
until curl -sf "http://127.0.0.1:$HTTP/ping" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$CHPID" 2>/dev/null; then
		echo "bench_fleet: clickhouse-server did not start ($W/ch/stdout.log)" >&2
		exit 1
	fi
	sleep 0.1
done
URL="clickhouse://127.0.0.1:$HTTP/bench"

# --- the fleet -----------------------------------------------------------------
# the recordings: three workloads, and cc1 compiling 300 generated functions
# (thousands of sampled offsets in one image, as a real service has)
for w in demo_work cpubound switchy; do
	"$DCPI" record --db "$W/src" -- "$BUILD/workloads/$w" >/dev/null 2>&1
done
awk 'BEGIN { for (i = 0; i < 300; i++) printf "long f%d(long *a, long n, int k) { long s = %d; " \
	"for (long j = 0; j < n; j++) { switch ((a[j] + k) & 7) { case 0: s += a[j] * %d; break; " \
	"case 1: s -= a[j] >> 2; break; case 3: s ^= j; break; default: s += k; } } return s; }\n",
	i, i, i }' > "$W/big.c"
"$DCPI" record --db "$W/src" -- cc -O2 -c -o "$W/big.o" "$W/big.c" >/dev/null 2>&1
GENOUT=$("$GEN" "$W/src" "$W/fleet" "$HOSTS" "$EPOCHS" 1)
ROWS=$(echo "$GENOUT" | awk '{ print $(NF-3) }')
CC1=$(cc -print-prog-name=cc1)
BID=$(readelf -n "$CC1" 2>/dev/null | awk '/Build ID/ { print $3 }')
if [ -z "$BID" ]; then
	CC1="$BUILD/workloads/demo_work"
	BID=$(readelf -n "$CC1" | awk '/Build ID/ { print $3 }')
fi
DBS=$(ls -d "$W"/fleet/host*)
echo "fleet: $GENOUT (recordings of demo_work, cpubound, switchy, cc -O2)"
echo "pulled: $CC1 (build-id $BID)"

"$DCPI" push --to "$URL" --init 2>/dev/null
t=$(now)
for d in $DBS; do
	"$DCPI" push --to "$URL" --db "$d" --host "$(basename "$d")" 2>/dev/null
done
PUSH=$(since "$t")

t=$(now)
"$DCPI" pull --from "$URL" --build-id "$BID" -o "$W/pulled" 2>/dev/null
PULL=$(since "$t")
t=$(now)
# shellcheck disable=SC2086
"$DCPI" merge $DBS -o "$W/merged" 2>/dev/null
MERGE=$(since "$t")
# the build-id's profiles (the metadata is that of the epochs holding it,
# where dcpi merge's is every epoch's)
for f in $(ls "$W"/pulled/0*/* | grep -v '/meta$'); do
	cmp -s "$f" "$W"/merged/0*/"$(basename "$f")" || {
		echo "bench_fleet: pulled $(basename "$f") differs from dcpi merge's" >&2
		exit 1
	}
done

t=$(now)
"$DCPI" prof --from "$URL" >"$W/from.txt" 2>/dev/null
FROM=$(since "$t")
t=$(now)
"$DCPI" prof --db "$W/merged" >"$W/local.txt" 2>/dev/null
LOCAL=$(since "$t")

awk -v h="$HOSTS" -v e="$EPOCHS" -v rows="$ROWS" -v push="$PUSH" -v pull="$PULL" \
    -v merge="$MERGE" -v from="$FROM" -v local="$LOCAL" 'BEGIN {
	printf "%d hosts x %d epochs, %d sample rows\n", h, e, rows
	printf "  push (dcpi push per host):       %8.3f s  %10.0f rows/s\n", push, rows / push
	printf "  pull of one build-id:            %8.3f s\n", pull
	printf "  dcpi merge of the same, locally: %8.3f s  (merge / pull = %.2fx)\n", merge,
	       merge / pull
	printf "  dcpiprof --from (every image):   %8.3f s\n", from
	printf "  dcpiprof over the merged db:     %8.3f s  (local / --from = %.2fx)\n", local,
	       local / from
	print  "  the pulled profiles = dcpi merge'"'"'s, byte for byte"
}'
