#!/bin/bash
# fuzz/run-fuzz.sh FUZZER CORPUS SECONDS WORKDIR: a bounded libFuzzer run as TAP.
# New inputs go to WORKDIR (never into the repo's corpus); a crash leaves
# its input in WORKDIR/crash-* -- copy it to fuzz/regressions/ so the
# reader-unit suite replays it forever.
set -u
fuzzer=$1 corpus=$2 secs=$3 work=$4
rm -rf "$work" && mkdir -p "$work/new" || exit 1
echo "1..1"
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/new" "$corpus" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
if [ $rc -eq 0 ]; then
	echo "ok 1 - fuzz reader ${secs}s: ${runs:-?} inputs, no crash"
else
	tail -40 "$work/log" | sed 's/^/# /'
	echo "not ok 1 - fuzz reader: exit $rc, crash input in $work (add it to fuzz/regressions/)"
fi
