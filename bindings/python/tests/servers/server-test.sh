#!/bin/bash
# python-gunicorn, python-uwsgi: a Flask application under a real
# pre-fork server, Debian's gunicorn (4 sync workers restarted every ~20
# requests, the application preloaded in the master) or Debian's uWSGI
# (its master and 4 processes recycled every 20 requests, the application
# loaded before the fork, as uWSGI does by default; uWSGI forks in C, so
# no Python fork hook runs in its workers), its prometheus_client metrics
# switched to blamer heaps by one call in the server's configuration,
# scraped by Debian's Prometheus through `blamer export --listen` while a
# load generator sends requests, one route of which kills its worker.
# Over Prometheus's HTTP API: the request counters equal what the load
# generator got answered, exactly; resets() is 0 for every counter; the
# series stay as many under the churn of workers. `blamer postmortem`
# shows the killed worker's last activity. Dir backend on the host (a
# private directory); localhost only; every wait is bounded; the trap
# stops all it started, by pid.
#   server-test.sh BLAMER PYTHONPATH [gunicorn|uwsgi]
set -u
B=$1 PYPATH=$2 SERVER=${3:-gunicorn}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
PLAN=10
REQUESTS=${SERVER_TEST_REQUESTS:-300}
CRASH_EVERY=100
echo "TAP version 13"
echo "1..$PLAN"
skip_all() {
	for i in $(seq 1 $PLAN); do echo "ok $i # SKIP $1"; done
	exit 0
}
case $SERVER in
gunicorn) SERVER_CMD=gunicorn ;;
uwsgi) SERVER_CMD=uwsgi ;;
*) echo "server-test.sh: no server $SERVER (gunicorn or uwsgi)" >&2; exit 2 ;;
esac
for t in prometheus promtool $SERVER_CMD curl; do
	command -v $t >/dev/null || skip_all "$t not installed (scripts/deps.sh installs it)"
done
$PY -c 'import flask, prometheus_client' 2>/dev/null ||
	skip_all "python3-flask or python3-prometheus-client not installed"
[ "$SERVER" != uwsgi ] || uwsgi --plugins python3 --version >/dev/null 2>&1 ||
	skip_all "uwsgi-plugin-python3 not installed (scripts/deps.sh installs it)"
D=$(mktemp -d /tmp/blamer-$SERVER.XXXXXX) || exit 1
PIDS=()
SRV=
cleanup() {
	local p
	# the server first: its master stops its workers (SIGTERM)
	if [ -n "$SRV" ]; then
		kill -TERM "$SRV" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -m 0700 "$D/heaps" "$D/state" && mkdir "$D/tsdb" || exit 1
export BLAMER_BACKEND=dir BLAMER_DIR=$D/heaps PYTHONPATH=$PYPATH PYTHONDONTWRITEBYTECODE=1
# each worker's pid, listed by app.worker_started()
export SERVER_TEST_WORKERS=$D/workers

. "$HERE/../../../../selftests/prometheus/promapi.sh"
# qlabels PROMQL LABEL: "label value" lines of a vector answer
qlabels() {
	q "$1" | $PY -c 'import json,sys
for r in json.load(sys.stdin)["data"]["result"]: print(r["metric"].get(sys.argv[1], ""), r["value"][1])' "$2"
}
eq() { [ "$(qv "$1")" = "$2" ]; }
# nseries SELECTOR SECONDS: the series that existed in the last SECONDS
# (the series API: ended ones too)
nseries() {
	curl -sf -m 5 --get --data-urlencode "match[]=$1" \
		--data-urlencode "start=$(($(date +%s) - $2))" --data-urlencode "end=$(date +%s)" \
		"http://127.0.0.1:$PP/api/v1/series" |
		$PY -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))'
}

AP=$(free_port) BP=$(free_port) PP=$(free_port)
if [ "$SERVER" = gunicorn ]; then
	APP_BIND=127.0.0.1:$AP gunicorn --chdir "$HERE" -c "$HERE/gunicorn.conf.py" \
		--error-logfile "$D/server.log" --log-level info app:app >"$D/server.out" 2>&1 &
else
	# (SIGTERM is a reload to uWSGI unless --die-on-term; recycling by
	# --max-requests waits --min-worker-lifetime, 60 s by default)
	PYTHONPATH=$HERE:$PYPATH uwsgi --plugins python3 --http-socket "127.0.0.1:$AP" \
		--master --processes 4 --max-requests 20 --min-worker-lifetime 0 \
		--chdir "$HERE" --module uwsgi_app:application --need-app --die-on-term \
		--logto "$D/server.log" >"$D/server.out" 2>&1 &
fi
SRV=$!
"$B" export --listen "127.0.0.1:$BP" --state "$D/state/fold.state" --keep-dead 64 \
	2>"$D/export.err" & PIDS+=($!)
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

four_workers() {
	[ "$("$B" list 2>/dev/null | awk '$3 ~ /^worker\// && $4 == "live"' | wc -l)" -eq 4 ]
}
# (readiness by the heaps, not by a request the counters would count)
if wait_for 60 four_workers; then
	echo "ok 1 - $SERVER serves with 4 workers, each a blamer heap of role worker"
else
	echo "not ok 1 - $SERVER did not start 4 workers"; tail -20 "$D/server.log" | sed 's/^/#   /'
	"$B" list 2>&1 | sed 's/^/#   /'; exit 1
fi
R=app_requests_total
if wait_for 60 eq "count(up{job=\"blamer\"} == 1)" 1 &&
   wait_for 30 eq "count(count_over_time(app_response_bytes_count[1m]) >= 1)" 1; then
	echo "ok 2 - Prometheus scrapes blamer export --listen, the application's metrics in it"
else
	echo "not ok 2 - no scrape"; tail -5 "$D/prometheus.log" | sed 's/^/#   /'
	curl -s -m 5 "http://127.0.0.1:$BP/metrics" | head -30 | sed 's/^/#   /'; exit 1
fi
# The series of the application but its liveall gauge (one per worker
# by nature): their number must not follow the workers.
SEL='{__name__=~"app_.*",__name__!="app_worker_started_seconds"}'
load() {
	$PY "$HERE/load.py" "http://127.0.0.1:$AP" "$1" "$CRASH_EVERY" >"$D/load$2.out" 2>"$D/load$2.err"
}
# two halves: the series after the first (every route used, workers
# replaced) are the ones after the second
load $((REQUESTS / 2)) 1 && wait_for 30 eq "count(app_requests_total)" 2 && sleep 2
st1=$?
SERIES_MID=$(qv "count($SEL)")
load $((REQUESTS - REQUESTS / 2)) 2
st=$?
cat "$D/load1.out" "$D/load2.out" | awk '
	/^# crashes/ { c += $3; next } !/^#/ { n[$1 " " $2] += $3 }
	END { for (k in n) print k, n[k]; print "# crashes", c }' | sort >"$D/load.out"
sed 's/^/# load: /' "$D/load.out"
crashes=$(sed -n 's/^# crashes \([0-9]*\).*/\1/p' "$D/load.out")
# deaths: the workers listed that are gone. Not a count of the server's
# log lines: gunicorn 20.1 logs "Autorestarting worker" when a worker
# takes its last request, before answering it, and when that request was
# /crash the worker was counted restarted and crashed, one death twice
# (a fold was then waited for that never came: "folded 13 of 14").
deaths() {
	local p n=0
	for p in $(sort -u "$D/workers"); do kill -0 "$p" 2>/dev/null || n=$((n + 1)); done
	echo $n
}
restarts=$(($(deaths) - ${crashes:-0}))
if [ $st1 -eq 0 ] && [ $st -eq 0 ] && [ "${crashes:-0}" -ge 2 ] && [ "$restarts" -ge 4 ]; then
	echo "ok 3 - $REQUESTS requests sent; $crashes workers killed by /crash, $restarts restarted by max_requests"
else
	echo "not ok 3 - load: exit $st1 $st, crashes ${crashes:-?}, restarts $restarts"
	cat "$D/load1.err" "$D/load2.err" | sed 's/^/#   /'
fi

# every answer the load generator got is in the counter, exactly
want=$(awk '!/^#/ { printf "%s=%s ", $1, $3 }' "$D/load.out")
got_all() {
	q "sum by (route) ($R)" | $PY -c '
import json, sys
got = {r["metric"]["route"]: r["value"][1] for r in json.load(sys.stdin)["data"]["result"]}
want = dict(w.split("=") for w in sys.argv[1].split())
sys.exit(0 if got == want else 1)' "$want"
}
if wait_for 30 got_all; then
	echo "ok 4 - Prometheus's request counters equal what the load generator was answered, exactly ($want)"
else
	echo "not ok 4 - counters: want $want"; qlabels "sum by (route) ($R)" route | sed 's/^/#   got /'
fi
sleep 2	# two more scrapes
RS=
for m in app_requests_total app_request_seconds_count app_request_seconds_sum \
	 app_request_seconds_bucket app_response_bytes_count app_response_bytes_sum; do
	RS="$RS $(qv "sum(resets($m[10m]))")"
done
if [ "$RS" = " 0 0 0 0 0 0" ]; then
	echo "ok 5 - resets() is 0 for every counter, histogram and summary count and sum across restarts and kills"
else
	echo "not ok 5 - resets() =$RS"
fi
LAT=$(qv "sum(app_request_seconds_count)") SIZE=$(qv "sum(app_response_bytes_count)")
ANSWERED=$(awk '!/^#/ { n += $3 } END { print n }' "$D/load.out")
if [ "$LAT" = "$ANSWERED" ] && [ "$SIZE" = "$ANSWERED" ] &&
   eq "sum(app_request_seconds_bucket{le=\"+Inf\"})" "$ANSWERED" &&
   [ -n "$(qv 'histogram_quantile(0.9, sum by (le) (app_request_seconds_bucket))')" ]; then
	echo "ok 6 - the histogram and the summary counted every answer ($ANSWERED); histogram_quantile() answers"
else
	echo "not ok 6 - histogram count $LAT, summary count $SIZE, answers $ANSWERED"
fi
SERIES_END=$(qv "count($SEL)")
EVER=$(nseries "$SEL" 600)
NROUTES=$(qv "count(app_requests_total)")
# the last worker to die may have died with the load's last request:
# its fold, and the scrape that shows it, come up to a second or two later
folded_all() {
	local f
	DEATHS=$(deaths)
	f=$(qv 'max(blamer_folded_heaps_total)')
	[ "${f:-0}" -ge "$DEATHS" ]
}
wait_for 30 folded_all
FOLDED=$(qv 'max(blamer_folded_heaps_total)')
if [ -n "$SERIES_MID" ] && [ "$SERIES_END" = "$SERIES_MID" ] && [ "$EVER" = "$SERIES_END" ] &&
   [ "$NROUTES" = 2 ] && [ "${FOLDED:-0}" -ge "$DEATHS" ]; then
	echo "ok 7 - series flat under worker churn: $SERIES_END mid-run and at the end, $EVER ever; $FOLDED of $DEATHS dead workers folded ($crashes killed by /crash)"
else
	echo "not ok 7 - series: $SERIES_MID mid-run, $SERIES_END at the end, $EVER ever; request counters $NROUTES; folded ${FOLDED:-?} of ${DEATHS:-?} dead workers"
fi
# the killed worker: its heap kept (--keep-dead), its last activity shown
"$B" postmortem >"$D/postmortem.out" 2>&1
if grep -q 'GET /crash' "$D/postmortem.out" && grep -q 'about to crash on /crash' "$D/postmortem.out"; then
	echo "ok 8 - blamer postmortem shows a killed worker's last activity (GET /crash) and its last log line"
else
	echo "not ok 8 - postmortem"; head -40 "$D/postmortem.out" | sed 's/^/#   /'
fi
curl -sf -m 5 "http://127.0.0.1:$BP/metrics" >"$D/metrics.prom"
# (the exporter says once that no heap exists, before the server made any)
grep -v 'no heaps in' "$D/export.err" >"$D/export.err2"
if promtool check metrics <"$D/metrics.prom" >"$D/promtool.out" 2>&1 && [ ! -s "$D/export.err2" ]; then
	echo "ok 9 - promtool check metrics is clean on the export; no error from the exporter"
else
	echo "not ok 9 - promtool / exporter"; cat "$D/promtool.out" "$D/export.err2" | head | sed 's/^/#   /'
fi
# everything stops: the server and its workers on SIGTERM
kill -TERM "$SRV"
for _ in $(seq 150); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
wait "$SRV" 2>/dev/null
gst=$?
left=$("$B" list 2>/dev/null | awk '$4 == "live"' | wc -l)
if ! kill -0 "$SRV" 2>/dev/null && [ "$left" = 0 ]; then
	echo "ok 10 - $SERVER stopped on SIGTERM (status $gst) with all its workers: no live heap left"
else
	echo "not ok 10 - still running after SIGTERM: $left live heaps"
fi
SRV=
exit 0
