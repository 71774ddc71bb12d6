#!/bin/sh
# Seeds for the profile reader: the profile files of a short real recording.
exec "$(dirname "$0")/record-seeds.sh" "$1" prof
