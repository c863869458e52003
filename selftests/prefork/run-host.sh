#!/bin/sh
# prefork suite, host: the pre-fork example and its test on the dir
# backend, in a private directory made and removed here.
# run-host.sh TEST SERVER BLAMER
set -u
dir=$(mktemp -d /tmp/prefork-heaps.XXXXXX) || exit 1
chmod 0700 "$dir"
trap 'rm -rf "$dir"' EXIT
BLAMER_BACKEND=dir BLAMER_DIR=$dir "$1" "$2" "$3"
