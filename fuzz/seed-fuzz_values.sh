#!/bin/sh
# Seeds for the value profile reader: no collector writes .values files yet,
# so the unit test's encoded profiles (a multi-list one, a small one, one
# with tagged code values and an images table) when the test is built.
dir="$1"
t="${BUILD:-build}/tests/test_values"
if [ -x "$t" ]; then
	DCPI_VALUES_SEEDS="$dir" "$t" >/dev/null 2>&1 || true
fi
exit 0
