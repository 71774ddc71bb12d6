#!/bin/sh
# make fuzz: run each libFuzzer target for FUZZ_SECONDS from a seed corpus of
# small real inputs; any crash or leak fails.
: "${BUILD:=build}"
: "${FUZZ_SECONDS:=60}"
status=0
for f in "$@"; do
	name=$(basename "$f")
	corpus="$BUILD/fuzz/corpus-$name"
	mkdir -p "$corpus"
	if [ -x "fuzz/seed-$name.sh" ]; then
		"fuzz/seed-$name.sh" "$corpus"
	fi
	echo "== $name for ${FUZZ_SECONDS}s"
	if "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$BUILD/fuzz/$name-" "$corpus" >"$BUILD/fuzz/$name.log" 2>&1; then
		tail -n 12 "$BUILD/fuzz/$name.log" | grep -E 'stat::number_of_executed_units|Done' || true
		echo "$name: ok"
	else
		tail -n 40 "$BUILD/fuzz/$name.log"
		echo "$name: FAILED"
		status=1
	fi
done
exit $status
