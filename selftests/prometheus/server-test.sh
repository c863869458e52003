#!/bin/bash
# prometheus-server: the real Prometheus scraping `blamer export --per-process
# --listen` (each process's own series; selftests/fleet has the service's),
# and the real node_exporter reading the file `blamer export --interval`
# rewrites, while a small application (prom-worker, the real library on
# the dir backend) runs two workers, one of which is SIGKILLed, replaced,
# and its dead heap released. Prometheus's HTTP API must then say: no
# counter reset, the crashed worker's last value kept, all three workers
# counted by increase(); `promtool check metrics` is clean.
# Localhost only; every wait is bounded; the trap stops all it started.
#   server-test.sh BLAMER PROM_WORKER
set -u
B=$1 W=$2
PY=/usr/bin/python3
PLAN=8
echo "TAP version 13"
echo "1..$PLAN"
skip_all() {
	for i in $(seq 1 $PLAN); do echo "ok $i # SKIP $1"; done
	exit 0
}
for t in prometheus promtool prometheus-node-exporter curl; do
	command -v $t >/dev/null || skip_all "$t not installed (scripts/deps.sh installs it)"
done
D=$(mktemp -d /tmp/blamer-promsrv.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -m 0700 "$D/heaps" && mkdir "$D/textfile" "$D/tsdb" || exit 1
export BLAMER_BACKEND=dir BLAMER_DIR=$D/heaps

. "$(dirname "$0")/promapi.sh"
# qn PROMQL: the number of series in the answer
qn() {
	q "$1" | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))'
}
ge() { [ -n "$(qv "$1")" ] && $PY -c "import sys; sys.exit(0 if float('$(qv "$1")') >= $2 else 1)"; }
is_empty() { [ "$(qn "$1")" = 0 ]; }

worker() {
	"$W" "$D/ready.$1" & PIDS+=($!)
	wait_for 10 test -e "$D/ready.$1" || { echo "# worker $1 did not start"; exit 1; }
	eval "W$1=$!"
}
worker a
worker b

BP=$(free_port) NP=$(free_port) PP=$(free_port)
"$B" export --prometheus --per-process --listen "127.0.0.1:$BP" 2>"$D/export.err" & PIDS+=($!)
"$B" export --prometheus --per-process --interval 1 --output "$D/textfile/blamer.prom" 2>"$D/textfile.err" &
TF=$!; PIDS+=($TF)
prometheus-node-exporter --web.listen-address="127.0.0.1:$NP" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$D/textfile" \
	>"$D/node.log" 2>&1 & PIDS+=($!)
cat >"$D/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: blamer
    static_configs: [ { targets: ["127.0.0.1:$BP"] } ]
  - job_name: node
    static_configs: [ { targets: ["127.0.0.1:$NP"] } ]
YML
prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/tsdb" \
	--web.listen-address="127.0.0.1:$PP" >"$D/prometheus.log" 2>&1 & PIDS+=($!)

R='blamer_app_requests_total'
if wait_for 60 ge "count(count_over_time(${R}{job=\"blamer\"}[1m]) >= 3)" 2 &&
   wait_for 30 ge "count(count_over_time(${R}{job=\"node\"}[1m]) >= 3)" 2; then
	echo "ok 1 - Prometheus scrapes both workers through --listen and through node_exporter's textfile"
else
	echo "not ok 1 - no samples of both workers"; tail -5 "$D/prometheus.log" | sed 's/^/#   /'; exit 1
fi

# a crash: the heap stays, dead, with its last values
kill -KILL "$Wa"; wait "$Wa" 2>/dev/null
alive() { kill -0 "$1" 2>/dev/null; }
# scrapers within a second of each other share an answer (http.c): the
# one Prometheus just had may still be served, so ask until it is newer
dead_now() {
	curl -sf -m 5 "http://127.0.0.1:$BP/metrics" >"$D/after-kill.prom" &&
		grep -q "^blamer_process_live{pid=\"$Wa\".* 0$" "$D/after-kill.prom"
}
wait_for 10 dead_now
LAST=$(grep "^$R{pid=\"$Wa\"" "$D/after-kill.prom" | awk '{print $2}')
if [ -n "$LAST" ] && grep -q "^blamer_process_live{pid=\"$Wa\".* 0$" "$D/after-kill.prom"; then
	echo "ok 2 - the killed worker's heap is exported dead, with its last count ($LAST)"
else
	echo "not ok 2 - the killed worker's series is gone or not dead"; grep "pid=\"$Wa\"" "$D/after-kill.prom" | sed 's/^/#   /'; exit 1
fi
if promtool check metrics <"$D/after-kill.prom" >"$D/promtool.out" 2>&1; then
	echo "ok 3 - promtool check metrics is clean on the export"
else
	echo "not ok 3 - promtool check metrics"; sed 's/^/#   /' "$D/promtool.out"
fi

worker c
wait_for 30 ge "max(blamer_process_live{job=\"blamer\",pid=\"$Wa\"} == 0) + 1" 1 &&
	wait_for 30 ge "count_over_time(${R}{job=\"blamer\",pid=\"$Wc\"}[1m])" 3 &&
	wait_for 30 ge "count_over_time(${R}{job=\"node\",pid=\"$Wc\"}[1m])" 3 ||
	{ echo "# the replacement was not scraped"; }
# release the dead heap: its series end (stale), they do not go down
"$B" release "$Wa" >/dev/null || echo "# release failed"
wait_for 30 is_empty "${R}{pid=\"$Wa\"}" || echo "# the released worker's series is still there"
sleep 2	# two more scrapes of both targets after the release

for job in blamer node; do
	n=$([ $job = blamer ] && echo 4 || echo 6)
	RS=$(qv "sum(resets(${R}{job=\"$job\"}[10m]))")
	RS2=$(qv "sum(resets({__name__=~\"blamer_.*_total\",job=\"$job\"}[10m]))")
	if [ "$RS" = 0 ] && [ "$RS2" = 0 ]; then
		echo "ok $n - $job: resets() is 0 for every counter across crash, replacement and release"
	else
		echo "not ok $n - $job: resets() = $RS (requests), $RS2 (all counters)"
	fi
	# the crashed worker's last value is what Prometheus kept of it
	MAXA=$(qv "max_over_time(${R}{job=\"$job\",pid=\"$Wa\"}[10m])")
	INC=$(qn "increase(${R}{job=\"$job\"}[10m]) > 0")
	if [ "$MAXA" = "$LAST" ] && [ "$INC" = 3 ]; then
		echo "ok $((n + 1)) - $job: the crashed worker's last value ($LAST) is kept; increase() counts all three workers"
	else
		echo "not ok $((n + 1)) - $job: last value $MAXA (want $LAST), workers with increase() > 0: $INC (want 3)"
	fi
done
# after some 20 rewrites, stopped (SIGTERM is taken only between two
# rewrites; while it runs, a listing may catch a rewrite's temporary
# file): the file alone, no temporary left, as the textfile collector
# wants it, and a clean exit
kill -TERM "$TF"
wait "$TF"
tf_status=$?
left=$(ls -A "$D/textfile")
if [ "$left" = blamer.prom ] && [ "$(stat -c %a "$D/textfile/blamer.prom")" = 644 ] &&
   [ "$tf_status" = 0 ] && [ ! -s "$D/textfile.err" ] && [ ! -s "$D/export.err" ]; then
	echo "ok 8 - --interval: stopped, it leaves only blamer.prom in the textfile directory, mode 0644, exit 0; no error from either exporter"
else
	echo "not ok 8 - textfile directory: $left, exit $tf_status"; cat "$D/textfile.err" "$D/export.err" | sed 's/^/#   /'
fi
exit 0
