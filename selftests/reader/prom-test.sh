#!/bin/bash
# prometheus: `blamer export --prometheus` parsed by python3-prometheus-client's
# text parser (the format node_exporter's textfile collector reads), and
# the exposition of a hostile snapshot (prom-snap: 0xff and escape
# sequences in comm, '/' and '%' in names, names two nodes share, a node
# named 0x600 beside unnamed 0x600, a path recorded twice, two heaps of
# one key): valid UTF-8, no control characters, every series once.
#   prom-test.sh BLAMER MKHEAP PROM_SNAP
set -u
B=$1 MK=$2 SNAP=$3
PY=/usr/bin/python3
D=$(mktemp -d /tmp/blamer-prom.XXXXXX)
SRV=
SRV2=
LIVE=
trap '[ -z "$SRV" ] || kill "$SRV" 2>/dev/null; [ -z "$SRV2" ] || kill "$SRV2" 2>/dev/null
      [ -z "$LIVE" ] || kill "$LIVE" 2>/dev/null
      rm -rf "$D" "$D.prom" "$D.snap" "$D.lint" "$D.down" "$D.dout" "$D.file" "$D.state"* "$D.state2"* "$D.mdown" "$D.mfile" "$D.pfile" "$D.poison"*' EXIT
echo "TAP version 13"
echo "1..11"
if ! $PY -c 'import prometheus_client' 2>/dev/null; then
	echo "ok 1 # SKIP python3-prometheus-client not installed (scripts/deps.sh installs it)"
	for i in 2 3 4 5 6 7 8 9 10; do echo "ok $i # SKIP python3-prometheus-client not installed"; done
	exit 0
fi
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" dead 3999002 6 2 && "$MK" "$D" corrupt 3999003 7 || exit 1
if BLAMER_DIR=$D "$B" export --prometheus --per-process >"$D.prom" &&
   $PY - "$D.prom" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
cpu = fams["blamer_attribution_cpu_seconds"]
assert cpu.type == "counter", cpu.type
v = {}
for s in cpu.samples:
    if s.name.endswith("_total"):
        # per process: pid, start time, heap key and identity every counter's key
        assert {"pid", "start_time_ns", "heap", "identity", "path"} <= set(s.labels), s
        assert s.labels["identity"] == "claimed", s  # dir backend: the heap's word
        v[s.labels["path"]] = v.get(s.labels["path"], 0) + s.value
# scales 1 + 2, summed as `sum without(pid, ...)` would; the corrupt
# heap's list loops before its DAG records
assert abs(v["/browser/tab/frame"] - 0.015) < 1e-9, v
info = {s.labels["pid"]: s.labels for s in fams["blamer_process_info"].samples}
assert info["3999001"]["identity"] == "claimed", info  # dir backend: the heap's word
assert fams["blamer_heaps"].type == "gauge"
dead = [s for s in fams["blamer_heaps"].samples if s.labels["state"] == "dead"][0]
assert dead.value == 3, dead
corrupt = {s.labels["pid"]: s.value for s in fams["blamer_heap_corrupt"].samples}
assert corrupt["3999003"] == 1 and corrupt["3999001"] == 0, corrupt
print("# families:", len(fams))
PYEOF
then echo "ok 1 - exposition parses; counters, gauges and values as expected"
else echo "not ok 1 - exposition did not parse or values are wrong"; sed 's/^/#   /' "$D.prom" | head -30; exit 1; fi
# the grammar, line by line (names, labels, values), beyond what the parser tolerates
if $PY - "$D.prom" <<'PYEOF'
import sys, re
text = open(sys.argv[1]).read()
for line in text.splitlines():
    if line.startswith("#"):
        m = re.match(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ", line)
        assert m, line
    else:
        assert re.match(r'[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [-+0-9.eE]+$', line), line
PYEOF
then echo "ok 2 - every line is a valid HELP/TYPE or sample line"
else echo "not ok 2 - malformed exposition line"; exit 1; fi

"$SNAP" >"$D.snap" || { echo "not ok 3 - prom-snap failed"; exit 1; }
if $PY - "$D.snap" <<'PYEOF'
import sys, unicodedata
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # strict: byte 0xff must not get through
bad = [c for c in text if c != "\n" and unicodedata.category(c) == "Cc"]
assert not bad, bad  # no ESC, BEL, CR...
PYEOF
then echo "ok 3 - hostile strings: the exposition is valid UTF-8 with no control characters"
else echo "not ok 3 - invalid UTF-8 or control characters in the exposition"; fi
if $PY - "$D.snap" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
seen = set()
paths = set()
for fam in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
    for s in fam.samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        assert key not in seen, key   # Prometheus rejects a scrape with duplicates
        seen.add(key)
        if s.name == "blamer_attribution_count_total":
            paths.add(s.labels["path"])
        if s.name == "blamer_process_info" and s.labels["pid"] == "4242":
            assert s.labels["comm"].startswith("\ufffd\ufffd]52"), s.labels
            assert '"\\\nz' in s.labels["comm"], s.labels
            assert s.labels["identity"] == "claimed", s.labels
        if s.name == "blamer_process_info" and s.labels["pid"] == "-2147483648":
            assert s.labels == {"pid": "-2147483648", "start_time_ns": "18446744073709551615",
                                "heap": "ffffffffffffffff", "identity": "kernel",
                                "comm": "kernel-said", "role": "", "instance": ""}, s.labels
# two nodes of one name, a node named 0x600 and unnamed 0x600: all apart
assert len(paths) == 5, paths
assert "/root/0x600" in paths and "/root/%30x600" in paths, paths
PYEOF
then echo "ok 4 - every series once: same-name nodes, 0x600 named and unnamed, repeated paths, one key twice; the longest key whole"
else echo "not ok 4 - duplicate or ambiguous series"; fi
if $PY - "$D.snap" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read())}
cpu = {s.labels["path"]: s.value for s in fams["blamer_attribution_cpu_seconds"].samples
       if s.labels["pid"] == "4242"}
# '/' inside a name is %2F, a '%' is %25: "a/b" and "a%2Fb" stay apart
assert cpu == {"/root/a%2Fb": 1.5, "/root/a%252Fb": 2e-9}, cpu
req = {(s.labels["path"], s.labels["unit"]): s.value for s in fams["blamer_app_requests"].samples}
# named units: two units of one name share a family, apart by unit; the
# least definition wins ("requests" over "zzz")
assert req[("/root/a%2Fb", "1007")] == 1 and req[("/root/\u00e9t\u00e9", "1009")] == 9, req
assert fams["blamer_app_handling_seconds"].type == "counter"
val = {s.labels["unit"]: s.value for s in fams["blamer_attribution_value"].samples}
assert val == {"1010": 23, "1011": 14}, val  # one unit twice in a path: one series, the sum
byt = {s.labels["path"]: s.value for s in fams["blamer_attribution_bytes"].samples}
assert byt == {'/root/q"\\': 13}, byt  # a name's " and \ escaped in the label, read back
PYEOF
then echo "ok 5 - path labels escape '/' and '%'; named units make their own families"
else echo "not ok 5 - path escaping or unit families wrong"; fi
if command -v promtool >/dev/null; then
	promtool check metrics <"$D.snap" >"$D.lint" 2>&1 || { echo "# promtool:"; sed 's/^/#   /' "$D.lint"; }
fi

# --listen as an attacker meets it: bad requests, a client that never
# finishes, then a real scrape; SIGTERM ends it with status 0. Started
# at a soft descriptor limit of 512, as a service at 1,024: it raises
# its own to the hard limit (its reader's kept files and pidfds).
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(ulimit -Sn 512 && BLAMER_DIR=$D exec "$B" export --prometheus --state "$D.state" \
	--listen "127.0.0.1:$PORT" 2>"$D.lint") & SRV=$!
if $PY - "$PORT" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
def ask(data, close_write=True, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    if close_write:
        s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out
for _ in range(100):  # until it listens
    try:
        ask(b"GET /metrics HTTP/1.0\r\n\r\n"); break
    except OSError:
        time.sleep(0.1)
r = ask(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n")
head, body = r.split(b"\r\n\r\n", 1)
assert head.startswith(b"HTTP/1.1 200 "), head
assert b"Content-Type: text/plain; version=0.0.4" in head, head
assert b"Content-Length: %d" % len(body) in head, head
assert b"\nblamer_heaps{" in body, body[:200]
r = ask(b"HEAD /metrics HTTP/1.1\r\n\r\n")
assert r.startswith(b"HTTP/1.1 200 ") and r.endswith(b"\r\n\r\n"), r[:200]
# bare LF line ends, and LF then CRLF: the head ends at the empty line
# (the client keeps its side open, so only that can end the read)
for req in (b"GET /metrics HTTP/1.1\nHost: a\n\n", b"GET /metrics HTTP/1.1\nHost: a\n\r\n"):
    r = ask(req, close_write=False)
    assert r.startswith(b"HTTP/1.1 200 "), (req, r[:80])
want = [(b"GET /other HTTP/1.1\r\n\r\n", b"404"), (b"GET /metrics/ HTTP/1.1\r\n\r\n", b"404"),
        (b"POST /metrics HTTP/1.1\r\n\r\n", b"405"), (b"garbage\r\n\r\n", b"400"),
        (b"GET metrics HTTP/1.1\r\n\r\n", b"400"), (b"GET /metrics SPDY/9\r\n\r\n", b"400"),
        (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", b"431"),
        (b"\x00\xff\x1b[2J\r\n\r\n", b"400")]
for req, code in want:
    r = ask(req)
    assert r.startswith(b"HTTP/1.1 " + code), (req[:40], r[:80])
ask(b"")                       # connects and closes
ask(b"\x00" * 20000)           # NUL bytes, past the limit
# slowloris: a request that never ends, and one that never reads
slow = socket.create_connection(("127.0.0.1", port)); slow.sendall(b"GET /metr")
mute = socket.create_connection(("127.0.0.1", port))
mute.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
mute.sendall(b"GET /metrics HTTP/1.1\r\n\r\n" * 1)
r = ask(b"GET /metrics HTTP/1.1\r\n\r\n", timeout=60)
assert r.startswith(b"HTTP/1.1 200 "), r[:80]
slow.close(); mute.close()
PYEOF
then
	nofile=$(awk '/^Max open files/ { print $4, $5 }' "/proc/$SRV/limits")
	if [ "$(ulimit -Hn)" -gt 512 ] && [ "${nofile% *}" != "${nofile#* }" ]; then
		echo "not ok 6 - --listen left its soft descriptor limit below the hard one: $nofile"
	else
		echo "ok 6 - --listen: 200 with the exposition, HEAD, 404, 405, 400, 431, NUL bytes; a stalled client does not stop the next; soft descriptor limit raised ($nofile)"
	fi
else echo "not ok 6 - --listen answers"; fi
# a port in use: one line, status 1 (not a usage error)
BLAMER_DIR=$D "$B" export --prometheus --state "$D.state2" --listen "127.0.0.1:$PORT" 2>"$D.snap"; st2=$?
kill -TERM "$SRV"; wait "$SRV"; st=$?; SRV=
if [ "$st" = 0 ] && [ ! -s "$D.lint" ] && [ "$st2" = 1 ] && [ "$(wc -l <"$D.snap")" = 1 ] &&
   grep -q "cannot listen on 127.0.0.1:$PORT: Address already in use" "$D.snap"; then
	echo "ok 7 - --listen ends with status 0 on SIGTERM, nothing on stderr; a port in use is one line, status 1"
else echo "not ok 7 - --listen exit status $st, port in use $st2"; sed 's/^/#   /' "$D.lint" "$D.snap"; fi
# --dead is accepted for old command lines and changes nothing: export
# reads dead heaps in full always
if BLAMER_DIR=$D "$B" export --prometheus --per-process --dead >"$D.lint" && cmp -s "$D.prom" "$D.lint" &&
   grep -q 'state="dead"} 3$' "$D.lint"; then
	echo "ok 8 - export without --dead is the same exposition: dead heaps counted"
else echo "not ok 8 - export --dead and export differ"; fi

# No counter goes down, whatever the heap does: a live writer rewrites
# its counters lower between scrapes (mkheap live-down: SIGUSR1); the
# long-lived exporter (--listen, and --interval's file) holds each series
# at its highest and counts the decreases for that heap; the one-off
# export shows what the heap says (it has no memory of an earlier run).
mkdir -m 700 "$D.down"
"$MK" "$D.down" live-down 5 >"$D.dout" & LIVE=$!
for _ in $(seq 100); do [ -s "$D.dout" ] && break; sleep 0.05; done
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BLAMER_DIR=$D.down "$B" export --prometheus --per-process --listen "127.0.0.1:$PORT" --interval 0.2 \
	--output "$D.file" 2>"$D.lint" & SRV=$!
if $PY - "$PORT" "$LIVE" "$D.file" "$D.dout" "$B" "$D.down" <<'PYEOF'
import os, signal, subprocess, sys, time, urllib.request
port, live, path, dout, blamer, hdir = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:]
from prometheus_client.parser import text_string_to_metric_families
def values(text):
    v = {}
    for f in text_string_to_metric_families(text):
        for s in f.samples:
            v[(s.name, s.labels.get("path", ""), s.labels.get("pid"))] = s.value
    return v
def scrape():
    for _ in range(100):
        try:
            return values(urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                                 timeout=10).read().decode())
        except OSError:
            time.sleep(0.1)
    raise SystemExit("no answer")
def from_file():
    time.sleep(0.6)  # a rewrite of the file (every 0.2 s) after the change
    return values(open(path).read())
frame = ("blamer_attribution_cpu_seconds_total", "/browser/tab/frame", str(live))
dec = ("blamer_counter_decreases_total", "", str(live))
first, ffirst = scrape(), from_file()
assert abs(first[frame] - 0.025) < 1e-9 and dec not in first, first.get(frame)
assert abs(ffirst[frame] - 0.025) < 1e-9 and dec not in ffirst, ffirst.get(frame)
counters = {k: x for k, x in first.items() if k[0].endswith("_total")}
for down in (4, 3):
    os.kill(live, signal.SIGUSR1)
    for _ in range(100):
        if ("down %d\n" % down) in open(dout).read():
            break
        time.sleep(0.05)
    time.sleep(1.1)  # past the answer scrapers share (HTTP_FRESH_MS)
    now, fnow = scrape(), from_file()
    for k, x in counters.items():
        assert now[k] >= x, (k, x, now[k])    # never lower than emitted before
        assert fnow[k] >= x, (k, x, fnow[k])
    assert now[dec] >= 1 and fnow[dec] >= 1, (now.get(dec), fnow.get(dec))
one = values(subprocess.run([blamer, "--dir", hdir, "export", "--prometheus", "--per-process"],
                            capture_output=True, text=True).stdout)
assert abs(one[frame] - 0.015) < 1e-9, one[frame]   # the one-off: the heap's word
PYEOF
then echo "ok 9 - a heap that rewrites its counters lower: --listen and --interval hold every counter at its highest and count the decreases; a one-off export shows the heap's word"
else echo "not ok 9 - a counter went down"; sed 's/^/#   /' "$D.lint"; fi
kill "$SRV" "$LIVE" 2>/dev/null; wait "$SRV" "$LIVE" 2>/dev/null; SRV= LIVE=

# The same of the service's series (the default) and of each process's
# metrics (--per-process): a live writer rewrites its metrics lower
# (mkheap live-down-metrics); every counter sample (counters, a
# histogram's buckets, count and sum) stays at its highest in both, and
# blamer_counter_decreases_total counts what was turned back.
mkdir -m 700 "$D.mdown"
"$MK" "$D.mdown" live-down-metrics 5 >"$D.dout" & LIVE=$!
for _ in $(seq 100); do [ -s "$D.dout" ] && break; sleep 0.05; done
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BLAMER_DIR=$D.mdown "$B" export --state "$D.state3" --listen "127.0.0.1:$PORT" --interval 0.2 \
	--output "$D.mfile" 2>"$D.lint" & SRV=$!
BLAMER_DIR=$D.mdown "$B" export --per-process --interval 0.2 --output "$D.pfile" 2>>"$D.lint" & SRV2=$!
if $PY - "$PORT" "$LIVE" "$D.mfile" "$D.pfile" "$D.dout" "$B" "$D.mdown" <<'PYEOF'
import os, signal, subprocess, sys, time, urllib.request
port, live, path, ppath, dout, blamer, hdir = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:]
from prometheus_client.parser import text_string_to_metric_families
def values(text):
    v = {}
    for f in text_string_to_metric_families(text):
        for s in f.samples:
            v[(s.name, tuple(sorted((k, x) for k, x in s.labels.items()
                                    if k not in ("start_time_ns", "heap", "identity"))))] = s.value
    return v
def scrape():
    for _ in range(100):
        try:
            return values(urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                                 timeout=10).read().decode())
        except OSError:
            time.sleep(0.1)
    raise SystemExit("no answer")
def from_file(p):
    return values(open(p).read())
for _ in range(100):
    if os.path.exists(path) and os.path.exists(ppath):
        break
    time.sleep(0.1)
time.sleep(0.5)
uid = str(os.getuid())
agg = lambda name, **l: (name, tuple(sorted(dict(l, uid=uid).items())))
own = lambda name, **l: (name, tuple(sorted(dict(l, pid=str(live)).items())))
reqs, lat = agg("reqs_total", route="/a"), agg("lat_count")
first, ffirst, pfirst = scrape(), from_file(path), from_file(ppath)
# scale 5: 2*5 + 0.5*5 on /a; lat's series and its shard: 3*5 + 3*5 observations
assert first[reqs] == 12.5 and ffirst[reqs] == 12.5, (first.get(reqs), ffirst.get(reqs))
assert pfirst[own("reqs_total", route="/a")] == 12.5, pfirst
assert first[lat] == 30, first[lat]
dec = ("blamer_counter_decreases_total", ())
assert dec not in first, first[dec]   # none yet
held = lambda v: {k: x for k, x in v.items()
                  if k[0].endswith(("_total", "_bucket", "_count", "_sum"))
                  and not k[0].startswith("blamer_")}
counters, fcounters, pcounters = held(first), held(ffirst), held(pfirst)
assert len(counters) >= 10 and len(pcounters) >= 10, (counters, pcounters)
for down in (4, 3):
    os.kill(live, signal.SIGUSR1)
    for _ in range(100):
        if ("down %d\n" % down) in open(dout).read():
            break
        time.sleep(0.05)
    time.sleep(1.1)  # past the answer scrapers share, and two file rewrites
    now, fnow, pnow = scrape(), from_file(path), from_file(ppath)
    for have, was in ((now, counters), (fnow, fcounters), (pnow, pcounters)):
        for k, x in was.items():
            assert have[k] >= x, (k, x, have[k])   # never lower than emitted before
    assert now[dec] >= 1 and fnow[dec] >= 1, (now[dec], fnow[dec])
    assert pnow[own("blamer_counter_decreases_total")] >= 1, pnow
one = values(subprocess.run([blamer, "--dir", hdir, "export"], capture_output=True,
                            text=True).stdout)
assert one[reqs] == 7.5 and dec not in one, (one[reqs], one.get(dec))  # the one-off: the heap's word
PYEOF
then echo "ok 10 - a heap that rewrites its metrics lower: the service's series (--listen, --interval) and each process's (--per-process) hold every counter, bucket, count and sum at its highest and count the decreases; a one-off export shows the heap's word"
else echo "not ok 10 - a metric counter went down"; sed 's/^/#   /' "$D.lint"; fi
kill "$SRV" "$SRV2" "$LIVE" 2>/dev/null; wait "$SRV" "$SRV2" "$LIVE" 2>/dev/null; SRV= SRV2= LIVE=

# A dead heap holding a value no writer leaves (a NaN in series /a's
# shard) beside an honest one: the export leaves that series out and
# says a heap was corrupt; the fold takes the poisoned heap's other
# series, and the service's durable total stays a number (one NaN folded
# would be NaN for good). Twice: the state holds no NaN sum either.
mkdir -m 700 "$D.poison"
"$MK" "$D.poison" dead-metrics 3999011 5 && "$MK" "$D.poison" poisoned 3999012 6 || exit 1
ok=1
u=$(id -u)
for run in 0 1 2; do
	if [ $run = 0 ]; then
		BLAMER_DIR=$D.poison "$B" export >"$D.lint" 2>&1 || ok=
		grep -q "^blamer_corrupt_heaps 1\$" "$D.lint" || ok=
	else
		BLAMER_DIR=$D.poison "$B" export --state "$D.poison.state" --keep-dead 0 >"$D.lint" 2>&1 || ok=
		grep -q "^blamer_folded_heaps_total 2\$" "$D.lint" || ok=
	fi
	grep -q "^reqs_total{route=\"/a\",uid=\"$u\"} 2.5\$" "$D.lint" &&
		grep -q "^reqs_total{route=\"/b\",uid=\"$u\"} 2\$" "$D.lint" &&
		! grep -qi "nan" "$D.lint" || ok=
done
# the counter's series in the state: sums, no NaN (a gauge's unset mark may be)
grep -q "^series 0 .*nan" "$D.poison.state" && ok=
if [ -n "$ok" ]; then
	echo "ok 11 - a dead heap holding a NaN counter part: left out and counted (blamer_corrupt_heaps 1), folded without that series, the service's total stays 2.5"
else echo "not ok 11 - a poisoned heap reached the service's total"; sed 's/^/#   /' "$D.lint"; fi
