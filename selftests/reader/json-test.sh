#!/bin/bash
# json-schema: every --json output validated against
# Documentation/blamer-json-schema.json with Debian's python3-jsonschema
# (json-validate.py), and what the documents must say.
#   json-test.sh BLAMER MKHEAP
set -u
B=$1 MK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=$HERE/../../Documentation/blamer-json-schema.json
PY=/usr/bin/python3
V="$PY $HERE/json-validate.py"
D=$(mktemp -d /tmp/blamer-json.XXXXXX)
livepid=
trap '[ -n "$livepid" ] && kill $livepid 2>/dev/null; rm -rf "$D" "$D.j" "$D.live" "$D.m"' EXIT
mkdir -p "$D.j"
chmod 700 "$D"
echo "TAP version 13"
if ! $PY -c 'import jsonschema' 2>/dev/null; then
	# a failure, not a skip: make deps installs it (scripts/deps.sh)
	echo "1..1"
	echo "not ok 1 - python3-jsonschema is not installed for $PY (run make deps)"
	exit 1
fi
# 2^53 + 1 as a start time: a double cannot hold it
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" corrupt 3999003 7 && "$MK" "$D" dead 3999005 9007199254740993 1 ||
	exit 1
: >"$D/notes.txt"	# not a slab file: skipped, and said so
"$MK" "$D" live 2 >"$D.live" &
for _ in $(seq 100); do [ -s "$D.live" ] && break; sleep 0.05; done
livepid=$(cat "$D.live")
export BLAMER_DIR=$D

n=0 fails=0
cmds=("list" "dump" "dump 3999001" "dump $livepid" "blame" "blame --dead" "postmortem"
      "top --once" "top --count 2 --interval 0.05" "status --backend dir")
echo "1..$(( ${#cmds[@]} + 11 ))"
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
for c in "${cmds[@]}"; do
	n=$((n + 1))
	f=$D.j/$n.json
	# shellcheck disable=SC2086
	if "$B" $c --json >"$f" 2>"$f.err" && [ -s "$f" ] && $V "$SCHEMA" "$f" >"$f.v"; then
		echo "ok $n - blamer $c --json matches the schema ($(grep -c ^valid "$f.v") documents)"
	else
		fails=$((fails + 1))
		echo "not ok $n - blamer $c --json"
		sed 's/^/#   /' "$f.err" "$f.v" 2>/dev/null | head -20
	fi
done
$V --schema "$SCHEMA" >"$D.j/schema.v" 2>&1 &&
	pass "the schema is valid 2020-12, has one description and lets members be added" ||
	{ fail "the schema itself"; sed 's/^/#   /' "$D.j/schema.v" | tail -5; }
# dump must carry the details a consumer relies on
if $PY - "$D.j/3.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 4 and d["kind"] == "snapshot"
p, = d["processes"]
assert p["pid"] == 3999001 and p["state"] == "dead" and p["health"] == "ok"
assert [a["label"] for a in p["threads"][0]["activities"]] == ["main-loop", "handle-request", "cache-lock"]
assert {f["name"]: f["value"] for f in p["user_data"]} == {"requests": "12", "role": "worker"}
assert [l["text"] for l in p["log"]][-1] == "cache warm"
t = {tuple(x["names"]): x["value"] for x in d["attribution"]["totals"] if x["unit_name"] == "cpu_ns"}
assert t[("browser", "tab", "frame")] == str(5000000 * 4), t   # scales 1 + 1 + live 2
PYEOF
then pass "dump --json content (activities, user data, log, totals)"
else fail "dump --json content"; fi
# module+offset as the text view shows it, and the raw address
if $PY - "$D.j/3.json" <<'PYEOF'
import json, sys
p, = json.load(open(sys.argv[1]))["processes"]
a = p["threads"][0]["activities"][2]
assert a["calling_address"] == "0x7f0000000120", a
assert a["calling_location"] == "libfoo.so+0x120", a
assert a["calling_module"] == "/usr/lib/libfoo.so", a
assert p["modules"][0]["base"] == "0x7f0000000000", p["modules"]
PYEOF
then pass "calling_location is module+offset as dump shows it, with the module and the raw address"
else fail "calling_location"; fi
# a monotonic "now": every activity's age is now - time_ns, never
# negative, and now is this machine's CLOCK_MONOTONIC, read when the
# document was written (so shortly before this check; the fixtures'
# activity stamps are small, so their ages are about the uptime)
if $PY - "$D.j/4.json" "$D.j/8.json" <<'PYEOF'
import json, sys, time
for f in sys.argv[1:]:
    d = json.load(open(f))
    now = int(d["time_monotonic_ns"])
    assert now > 0 and int(d["time_realtime_ns"]) > now, d
    assert 0 <= time.clock_gettime_ns(time.CLOCK_MONOTONIC) - now < 600 * 10**9, now
    ages = [now - int(a["time_ns"]) for p in d["processes"] for t in p.get("threads", [])
            for a in t["activities"]]
    if "dump" in f or f.endswith("/4.json"):
        assert len(ages) == 4 and all(0 <= x <= now for x in ages), ages
PYEOF
then pass "time_monotonic_ns turns activity times into ages"
else fail "time_monotonic_ns"; fi
# 64-bit values are decimal strings: exact above 2^53
if "$B" dump 3999005 --json >"$D.j/big.json" 2>/dev/null && $PY - "$D.j/big.json" <<'PYEOF'
import json, sys
raw = open(sys.argv[1]).read()
assert '"start_time_ns":"9007199254740993"' in raw, raw[:400]
p, = json.loads(raw)["processes"]
assert int(p["start_time_ns"]) == 2**53 + 1
# no 64-bit member is a number anywhere
assert isinstance(p["size"], str) and isinstance(p["threads"][0]["tid"], str)
assert all(isinstance(v["value"], str) for q in p["dag"]["paths"] for v in q["values"])
PYEOF
then pass "a u64 above 2^53 is a decimal string, exact (start time 2^53+1)"
else fail "u64 above 2^53"; fi
# claims: a dir heap's identity is its writer's word, and says so
if $PY - "$D.j/1.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["processes"]:
    assert p["kernel_facts"] is False, p
    assert {"pid", "uid", "comm", "start_time_ns", "state", "exited", "exit_code", "cmdline"} <= set(p["claimed"]), p
    assert p["heap"].startswith("0x")
assert d["skipped"] == [{"name": "notes.txt", "why": "not a slab file name"}] or \
       [s["name"] for s in d["skipped"]] == ["notes.txt"], d["skipped"]
assert d["skipped_total"] == "1"
PYEOF
then pass "list --json: every dir heap's identity is claimed, skipped entries listed"
else fail "claimed / skipped"; fi
# one summary of a dead heap: list and list --json say the same health and comm
"$B" list >"$D.j/list.txt" 2>/dev/null
if $PY - "$D.j/1.json" "$D.j/list.txt" "$D.j/8.json" <<'PYEOF'
import json, sys
procs = {p["pid"]: p for p in json.load(open(sys.argv[1]))["processes"]}
top = {p["pid"]: p for p in json.load(open(sys.argv[3]))["processes"]}
rows = [l.split() for l in open(sys.argv[2]).read().splitlines()[1:]]
assert len(rows) == len(procs) == len(top) == 4, (rows, procs)
for r in rows:
    p = procs[int(r[0])]
    assert r[1] == p["comm"] and r[-2] == p["health"] and r[-1] == "claimed", (r, p)
    assert top[int(r[0])]["comm"] == p["comm"], (top[int(r[0])], p)
    # list reads headers; top reads a dead heap in full (its values count)
    if p["state"] == "dead":
        assert p["health"] == "unchecked" and top[p["pid"]]["health"] != "unchecked", p
PYEOF
then pass "a dead heap's comm is the same in list, list --json and top --json; list reads its headers, top all of it"
else fail "dead heaps across views"; sed 's/^/#   /' "$D.j/list.txt"; fi
# a device's status, as status --json writes it (no device on the host)
if "$MK" - device-status >"$D.j/status.json" && $V "$SCHEMA" "$D.j/status.json" >/dev/null &&
   $PY - "$D.j/status.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "status" and d["backend"] == "device" and d["max_user_orphans"] == "64"
assert d["user_slabs"] == "3" and d["slabs"] == "12"
assert d["parameters"] == {"max_user_orphans": "64", "reader_gid": "-1", 'odd "name"': "tab\there\x01"}
PYEOF
then pass "a device status --json matches the schema"
else fail "device status --json"; fi
# the inclusive tree: each node's inclusive value is its own plus its subtree's
if $PY - "$D.j/6.json" <<'PYEOF'
import json, sys
a = json.load(open(sys.argv[1]))["attribution"]
units, tree = [u["unit_name"] for u in a["units"]], a["tree"]
assert units == ["cpu_ns", "bytes"], units
for i, t in enumerate(tree):
    below = [u for u in tree[i + 1:] if u["path"][:len(t["path"])] == t["path"]]
    kids = [u for u in below if len(u["path"]) == len(t["path"]) + 1]
    for k in range(len(units)):
        assert int(t["inclusive"][k]) == int(t["self"][k]) + sum(int(c["inclusive"][k]) for c in kids), t
    assert t["processes"] >= max([c["processes"] for c in kids] or [0])
    for k, un in enumerate(units):
        assert int(t["inclusive"][k]) == sum(int(x["value"]) for x in a["totals"] if x["unit_name"] == un
                                             and x["path"][:len(t["path"])] == t["path"]), t
assert tree[0]["names"] == ["browser"] and int(tree[0]["inclusive"][0]) > 0, tree[0]
PYEOF
then pass "blame --dead --json: the inclusive tree adds up"
else fail "the inclusive tree"; fi
# metrics: a process and its fork child (the real library), both dead:
# every command's document matches the schema, and says what they wrote
mkdir -m 0700 "$D.m"
BLAMER_DIR=$D.m "$MK" "$D.m" metrics 2>/dev/null
mok=1
for c in "blame" "dump" "top --once"; do
	# shellcheck disable=SC2086
	BLAMER_DIR=$D.m "$B" $c --json >"$D.j/m-$c.json" 2>/dev/null &&
		$V "$SCHEMA" "$D.j/m-$c.json" >/dev/null || { mok=; echo "# $c --json"; }
done
if [ -n "$mok" ] && $PY - "$D.j/m-blame.json" "$D.j/m-dump.json" <<'PYEOF'
import json, sys
b, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
s = {}
for x in b["service"]["series"]:
    s.setdefault(x["name"], []).append(x)
req = {x["labels"]["route"]: x for x in s["http_requests"]}
# UTF-8 kept, the escape sequence's ESC made U+FFFD; values summed over both
assert req["/h\u00e9llo"]["value"] == 5 and req["/h\u00e9llo"]["processes"] == 2, req
assert req["/a\ufffd[2Jb"]["value"] == 1, req
lat = s["latency_seconds"][0]
assert lat["count"] == "3" and lat["sum"] == 5.55 and lat["names"] == ["server", "hello"], lat
assert [k["count"] for k in lat["buckets"]] == ["0", "1", "1", "1"] and lat["buckets"][-1]["le"] == "+Inf", lat
assert lat["p50"] == 0.55 and lat["p99"] == 1, lat  # in (0.1, 1]; +Inf: the bound below it
assert s["size_bytes"][0]["buckets"][2] == {"le": 4, "count": "1"}, s["size_bytes"]
assert s["inflight"][0]["value"] == 3 and s["inflight"][0]["gauge_mode"] == "sum"
assert sorted(x["value"] for x in s["temperature"]) == [20.5, 21.5], s["temperature"]
assert all("pid" in x for x in s["temperature"])     # ALL: a series per process
assert s["version"][0]["value"] == 2 and int(s["version"][0]["set_time_ns"]) > 0
assert b["service"]["conflicts"] == "0" and b["service"]["roles"][0]["dead"] == 2
# the named unit: its name, not "unit1007", in totals and units
assert [u["unit_name"] for u in b["attribution"]["units"]] == ["requests"], b["attribution"]["units"]
assert b["attribution"]["units"][0]["unit_base"] == ""
per = [p["metrics"] for p in d["processes"]]
assert sorted(len(m) for m in per) == [5, 7], per    # the child wrote 5 of the 7
PYEOF
then pass "metrics: blame, dump and top --json match the schema; merged values, buckets, quantiles, gauge modes, UTF-8 labels, unit names as written"
else fail "metrics in JSON"; fi

# negative controls: the validator must reject drift, and accept additions
bad=
sed 's/"schema_version":4/"schema_version":2/' "$D.j/2.json" >"$D.j/bad1.json"
sed 's/"health":"ok"/"health":"summary"/' "$D.j/2.json" >"$D.j/bad2.json"
sed 's/"size":"\([0-9]*\)"/"size":\1/' "$D.j/2.json" >"$D.j/bad3.json"
sed 's/"claimed":\[/"claimed":["nonsense",/' "$D.j/2.json" >"$D.j/bad4.json"
printf '{"schema_version":4,"kind":"snapshot","backend":"dir","source":"\377"}\n' >"$D.j/bad5.json"
sed 's/"time_monotonic_ns":"[0-9]*",//' "$D.j/5.json" >"$D.j/bad6.json"
for k in 1 2 3 4 5 6; do
	$V "$SCHEMA" "$D.j/bad$k.json" >/dev/null 2>&1 && bad="$bad bad$k"
done
sed 's/"health":"ok"/"health":"ok","added_later":{"x":1}/' "$D.j/2.json" >"$D.j/more.json"
[ -z "$bad" ] && ! cmp -s "$D.j/2.json" "$D.j/bad3.json" && $V "$SCHEMA" "$D.j/more.json" >/dev/null &&
	pass "rejected: old version, old health name, a u64 as a number, an unknown claim, invalid UTF-8, a missing member; an added member is accepted" ||
	fail "negative controls:$bad"
[ "$fails" -eq 0 ]
