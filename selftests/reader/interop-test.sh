#!/bin/bash
# reader-interop: heaps written by the real writer library (tools/demo/demo-app
# linked with libblamer.a) read by blamer on the dir backend, while the
# writers keep changing them (--busy), and after they were SIGKILLed.
#   interop-test.sh BLAMER DEMO_APP
set -u
B=$1 APP=$2
PY=/usr/bin/python3
D=$(mktemp -d /tmp/blamer-interop.XXXXXX)
app=
parent= w0= w1= w2=
trap 'kill -9 $app $parent $w0 $w1 $w2 2>/dev/null; rm -rf "$D" "$D".*' EXIT
export BLAMER_DIR=$D BLAMER_BACKEND=dir
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

echo "TAP version 13"
echo "1..7"
"$APP" --workers 3 --iterations 5 --busy --ready "$D.ready" &
app=$!
for _ in $(seq 200); do [ -s "$D.ready" ] && break; sleep 0.05; done
read -r parent w0 w1 w2 <"$D.ready"

# 100 snapshots while 3 workers push, pop and count as fast as they can.
# Every activity time (the heap's clock, TSC or not, converted by the
# reader) must lie between its thread's registration (CLOCK_MONOTONIC,
# written as such) and the moment the snapshot was read.
bad=0 torn=0
for i in $(seq 100); do
	"$B" dump --json >"$D.j" 2>"$D.e" || { bad=$((bad + 1)); continue; }
	r=$($PY -c '
import json, sys, time
d = json.load(open(sys.argv[1]))
h = [p["health"] for p in d["processes"]]
# 64-bit values are decimal strings (schema 3); the document says its own now
now = int(d["time_monotonic_ns"])
when = [int(a["time_ns"]) - int(t["start_time_ns"]) for p in d["processes"]
        for t in p.get("threads", []) for a in t["activities"]]
wrong = sum(1 for p in d["processes"] for t in p.get("threads", []) for a in t["activities"]
            if not int(t["start_time_ns"]) - 1000000 <= int(a["time_ns"]) <= now)
print(len(h), h.count("corrupt") + h.count("unreadable") + h.count("empty"), h.count("torn"),
      len(when), wrong)' "$D.j")
	set -- $r
	[ "$1" -eq 4 ] && [ "$2" -eq 0 ] && [ "$4" -gt 0 ] && [ "$5" -eq 0 ] ||
		{ bad=$((bad + 1)); echo "# snapshot $i: heaps, bad, torn, activities, wrong times: $r"; }
	torn=$((torn + $3))
done
[ $bad -eq 0 ] && ok "100 snapshots of 4 busy heaps: none corrupt, activity times in range ($torn heaps with torn records, retried and marked)" ||
	nok "$bad of 100 snapshots of busy heaps were wrong"
"$B" blame >"$D.b" && grep -q '^ .* app$' "$D.b" && grep -q 'worker-2' "$D.b" && grep -q '      parse$' "$D.b" &&
	ok "blame of writer-made heaps: app/worker-N/parse|render" || { nok "blame"; sed 's/^/#   /' "$D.b"; }
"$B" dump "$w1" >"$D.d" && grep -q 'role = "worker"' "$D.d" && grep -q 'worker-1 started' "$D.d" &&
	grep -q 'thread .* "worker-1"' "$D.d" && ok "dump of a busy worker: user data, log, thread" ||
	{ nok "dump worker"; sed 's/^/#   /' "$D.d" | head; }

# SIGKILL: supervisor first (so nobody reaps and cleans up), then a worker
kill -9 "$parent"
kill -9 "$w0"
sleep 0.3
"$B" postmortem "$w0" >"$D.p" && grep -q "^pid $w0 (.*) \[claimed\]: gone, cause unknown" "$D.p" &&
	grep -q 'task "\(request\|parse\|render\)"\|idle-wait' "$D.p" &&
	ok "postmortem of a SIGKILLed writer: its last activities" || { nok "postmortem"; sed 's/^/#   /' "$D.p" | head -20; }
kill -9 "$w1" "$w2" 2>/dev/null
sleep 0.3
"$B" release --all >/dev/null && [ -z "$(ls "$D")" ] && ok "release --all removes every dead heap" ||
	{ nok "release --all"; ls "$D" | sed 's/^/#   /'; }
wait $app 2>/dev/null
app= parent= w0= w1= w2=

# a worker dies of SIGSEGV; its supervisor reaps it and keeps running:
# the crashed heap stays for postmortem (only clean exits are cleaned up)
rm -f "$D.ready"
"$APP" --workers 2 --crash 1 --iterations 6 --ready "$D.ready" &
app=$!
for _ in $(seq 200); do [ -s "$D.ready" ] && break; sleep 0.05; done
read -r parent w0 w1 <"$D.ready"
"$B" postmortem "$w1" >"$D.p" 2>&1 && grep -q "^pid $w1 (.*) \[claimed\]: killed by SIGSEGV (signal 11), as its parent $parent says" "$D.p" &&
	grep -q 'task "render"' "$D.p" && grep -q 'bad pointer' "$D.p" &&
	ok "postmortem of a crashed worker its supervisor reaped: last activity and log" ||
	{ nok "postmortem of a reaped crash"; sed 's/^/#   /' "$D.p" | head -20; }
kill "$app"
wait "$app" 2>/dev/null
app= parent= w0= w1=
"$B" list >"$D.l" && [ "$(tail -n +2 "$D.l" | wc -l)" -eq 1 ] &&
	ok "after a clean shutdown only the crashed worker's heap is left" ||
	{ nok "leftover heaps after clean shutdown"; sed 's/^/#   /' "$D.l"; }
[ $fails -eq 0 ]
