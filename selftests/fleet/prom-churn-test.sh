#!/bin/bash
# fleet-prometheus: the pre-fork example (examples/prefork-server.c) as a
# service whose workers come and go all day, scraped by the real
# Prometheus through `blamer export --listen`. Four workers, each leaving
# after 15 requests (--max-requests, as gunicorn's max_requests) and
# replaced (--restart); a load generator that sends GET /hello one at a
# time, now and then a GET /crash (the worker dies of SIGSEGV mid-request),
# now and then SIGKILLs a worker, and now and then SIGKILLs the exporter
# itself and starts it again on the same state. Then, over Prometheus's
# HTTP API: the aggregate request counter equals, exactly, the requests
# the load generator had answered; resets() is 0 on every counter series
# of the exporter; the number of series is the same at the end as over
# the whole run (no series came and went with the workers);
# histogram_quantile() over the merged buckets answers; the dead heaps
# were folded and released. Localhost only; every wait is bounded; the
# trap stops all it started.
#   prom-churn-test.sh BLAMER PREFORK_SERVER [SECONDS]
set -u
B=$1 SRV=$2 SECS=${3:-25}
PY=/usr/bin/python3
PLAN=10
echo "TAP version 13"
echo "1..$PLAN"
skip_all() {
	for i in $(seq 1 $PLAN); do echo "ok $i # SKIP $1"; done
	exit 0
}
for t in prometheus promtool curl; do
	command -v $t >/dev/null || skip_all "$t not installed (scripts/deps.sh installs it)"
done
D=$(mktemp -d /tmp/blamer-churn.XXXXXX)
PIDS=()
cleanup() {
	local p
	[ -s "$D/exporter.pid" ] && PIDS+=("$(cat "$D/exporter.pid")")
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -m 0700 "$D/heaps" "$D/state" && mkdir "$D/tsdb" || exit 1
export BLAMER_BACKEND=dir BLAMER_DIR=$D/heaps
uid=$(id -u)

. "$(dirname "$0")/../prometheus/promapi.sh"
is() { [ "$(qv "$1")" = "$2" ]; }

START=$(date +%s)
"$SRV" --workers 4 --restart --max-requests 15 --port-file "$D/port" >"$D/server.log" 2>&1 &
PIDS+=($!)
wait_for 10 test -s "$D/port" || { echo "Bail out! the server did not start"; exit 1; }
SP=$(cut -d' ' -f1 "$D/port") MASTER=$(cut -d' ' -f2 "$D/port")
BP=$(free_port) PP=$(free_port)
cat >"$D/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: blamer
    static_configs: [ { targets: ["127.0.0.1:$BP"] } ]
YML
prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/tsdb" \
	--web.listen-address="127.0.0.1:$PP" >"$D/prometheus.log" 2>&1 & PIDS+=($!)

# The load, and the exporter started (and SIGKILLed, and started again)
# by the load generator: it writes the exporter's pid for the trap, and
# at the end the requests answered and what it did.
$PY - "$B" "$BP" "$D" "$SP" "$MASTER" "$SECS" >"$D/load.out" 2>"$D/load.err" <<'PYEOF'
import os, random, signal, subprocess, sys, time, urllib.request
blamer, bp, d, sp, master, secs = sys.argv[1:7]
state = os.path.join(d, "state", "fold.state")
def start_exporter():
    e = subprocess.Popen([blamer, "export", "--listen", "127.0.0.1:" + bp, "--state", state,
                          "--keep-dead", "4"], stderr=open(os.path.join(d, "exporter.err"), "a"))
    open(os.path.join(d, "exporter.pid"), "w").write(str(e.pid))
    return e
def workers():
    try:
        kids = open("/proc/%s/task/%s/children" % (master, master)).read().split()
    except OSError:
        return []
    return [int(k) for k in kids]
def get(route):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s%s" % (sp, route), timeout=5) as r:
            return r.status
    except Exception:
        return None
random.seed(int(time.time()))
exporter = start_exporter()
answered = crashes = kills = restarts = 0
end = time.time() + float(secs)
i = 0
while time.time() < end:
    i += 1
    if get("/hello") == 200:
        answered += 1
    if i % 37 == 0:
        get("/crash")              # no answer: the worker died mid-request
        crashes += 1
        time.sleep(0.05)
    w = workers() if i % 53 == 0 else []
    if w:
        try:    # it may have just left by itself (--max-requests)
            os.kill(random.choice(w), signal.SIGKILL)
            kills += 1
        except ProcessLookupError:
            pass
        time.sleep(0.05)
    if i % 211 == 0:
        # the exporter killed mid-whatever, started again on its state
        exporter.kill()
        exporter.wait()
        time.sleep(random.random())
        exporter = start_exporter()
        restarts += 1
    time.sleep(0.004)
print(answered, crashes, kills, restarts, i)
PYEOF
read -r ANSWERED CRASHES KILLS RESTARTS SENT <"$D/load.out" ||
	{ echo "Bail out! the load generator failed: $(cat "$D/load.err")"; exit 1; }
R="http_requests_total{job=\"blamer\",route=\"/hello\",code=\"200\",uid=\"$uid\"}"
if wait_for 40 is "$R" "$ANSWERED"; then
	echo "ok 1 - the aggregate counter is exactly the $ANSWERED requests answered ($SENT sent, $CRASHES crashed a worker, $KILLS workers SIGKILLed, the exporter SIGKILLed and restarted $RESTARTS times)"
else
	echo "not ok 1 - aggregate $(qv "$R"), want $ANSWERED"; tail -5 "$D/exporter.err" | sed 's/^/#   /'
fi
sleep 3	# more scrapes of the settled series
# every counter series the exporter wrote over the run (the series API:
# functions drop the metric name, so series of one label set would
# collide in one query), resets() of each name
$PY - "$PP" "$START" >"$D/resets" <<'PYEOF'
import json, re, sys, time, urllib.parse, urllib.request
pp, start = sys.argv[1], sys.argv[2]
def api(path, **args):
    url = "http://127.0.0.1:%s/api/v1/%s?%s" % (pp, path, urllib.parse.urlencode(args, doseq=True))
    return json.load(urllib.request.urlopen(url, timeout=10))["data"]
series = api("series", **{"match[]": '{job="blamer"}', "start": start, "end": str(time.time())})
names = sorted({s["__name__"] for s in series
                if re.search(r"(_total|_bucket|_count|_sum)$", s["__name__"])})
counters = [s for s in series if s["__name__"] in names]
resets = 0
for n in names:
    r = api("query", query='sum(resets(%s{job="blamer"}[10m]))' % n)["result"]
    resets += int(float(r[0]["value"][1])) if r else 0
app = [s for s in series if s["__name__"].startswith("http_")]
now = api("query", query='count({job="blamer",__name__=~"http_.*"})')["result"]
print(resets, len(counters), len(names), len(app), now[0]["value"][1] if now else "")
PYEOF
read -r RS NC NN EVER NOW <"$D/resets"
if [ "$RS" = 0 ] && [ "${NC:-0}" -gt 0 ]; then
	echo "ok 2 - resets() is 0 on all $NC counter series ($NN names) of the exporter, through worker deaths, folds, releases and exporter restarts"
else
	echo "not ok 2 - resets() = $RS over $NC series"
fi
if [ -n "$EVER" ] && [ "$EVER" = "$NOW" ]; then
	echo "ok 3 - the service's series are as many at the end as over the whole run ($NOW): none came and went with the workers"
else
	echo "not ok 3 - $EVER series over the run, $NOW now"
fi
P99=$(qv 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="blamer"}[5m])))')
if $PY -c "import math,sys; v=float('$P99'); sys.exit(0 if math.isfinite(v) and 0 < v <= 1 else 1)" 2>/dev/null; then
	echo "ok 4 - histogram_quantile(0.99) over the merged buckets answers: $P99 s"
else
	echo "not ok 4 - histogram_quantile: '$P99'"
fi
FOLDED=$(qv 'max(blamer_folded_heaps_total{job="blamer"})')
if [ -n "$FOLDED" ] && [ "$FOLDED" -gt 20 ]; then
	echo "ok 5 - $FOLDED dead heaps folded into the remainder (worker lifetimes that came and went)"
else
	echo "not ok 5 - folded heaps: '$FOLDED'"
fi
# released: what stays is the live ones, and at most --keep-dead 4 dead
NH=$(ls "$D/heaps" | sed 's/\..*//' | sort -u | wc -l)
if [ "$NH" -le $((5 + 4 + 2)) ]; then
	echo "ok 6 - the folded heaps were released: $NH heaps left (5 live, --keep-dead 4)"
else
	echo "not ok 6 - $NH heaps left in the directory"
fi
if is 'blamer_processes{job="blamer",role="worker",state="live"}' 4 &&
   [ -n "$(qv 'blamer_busy_threads{job="blamer",role="worker"}')" ]; then
	echo "ok 7 - blamer_processes{role=\"worker\",state=\"live\"} is 4; blamer_busy_threads{role=\"worker\"} is exported"
else
	echo "not ok 7 - worker processes $(qv 'blamer_processes{job="blamer",role="worker",state="live"}')"
fi
curl -sf -m 5 "http://127.0.0.1:$BP/metrics" >"$D/scrape.prom"
if promtool check metrics <"$D/scrape.prom" >"$D/promtool.out" 2>&1; then
	echo "ok 8 - promtool check metrics is clean on a scrape"
else
	echo "not ok 8 - promtool check metrics"; sed 's/^/#   /' "$D/promtool.out" | head
fi
# A worker SIGKILLed between making its slab file and writing the heap's
# header leaves a file that holds no heap: every exporter run says so
# once (reader.rst, "Files that hold no heap"), which is no error of the
# exporter's. Anything else it says is.
grep -v 'that holds no heap (empty, or not a heap.s first bytes)$' "$D/exporter.err" >"$D/exporter.errors" || true
if ! grep -q 'pid=' "$D/scrape.prom" && [ ! -s "$D/exporter.errors" ]; then
	echo "ok 9 - no per-process series, and no error from any exporter run ($(grep -c 'holds no heap' "$D/exporter.err") reports of a file that holds no heap)"
else
	echo "not ok 9 - per-process series or errors"; sed 's/^/#   /' "$D/exporter.errors" | head
fi
# the in-flight gauge, summed over live workers, is back to 0
if is "http_requests_in_flight{job=\"blamer\",uid=\"$uid\"}" 0; then
	echo "ok 10 - http_requests_in_flight (a LIVESUM gauge) is 0 with no request in flight: the crashed workers' left with them"
else
	echo "not ok 10 - in flight: $(qv "http_requests_in_flight{job=\"blamer\"}")"
fi
exit 0
