#!/bin/sh
# Seeds for the data profile reader: the .data files of a short recording.
exec "$(dirname "$0")/record-seeds.sh" "$1" data
