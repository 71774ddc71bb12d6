#!/bin/sh
# Seeds for the time-slice profile reader: the .slices files of a short recording.
exec "$(dirname "$0")/record-seeds.sh" "$1" slices
