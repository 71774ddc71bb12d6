#!/bin/sh
# Seeds for the path profile reader: the .paths files of a short recording.
exec "$(dirname "$0")/record-seeds.sh" "$1" paths
