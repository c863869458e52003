#!/bin/bash
# json-schema: every --json output validated against
# Documentation/blamer-json-schema.json by jsonschema_lite.py (no pip).
#   json-test.sh BLAMER MKHEAP
set -u
B=$1 MK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=$HERE/../../Documentation/blamer-json-schema.json
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
D=$(mktemp -d /tmp/blamer-json.XXXXXX)
livepid=
trap '[ -n "$livepid" ] && kill $livepid 2>/dev/null; rm -rf "$D" "$D.j" "$D.live"' EXIT
mkdir -p "$D.j"
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" corrupt 3999003 7 || exit 1
"$MK" "$D" live 2 >"$D.live" &
for _ in $(seq 100); do [ -s "$D.live" ] && break; sleep 0.05; done
livepid=$(cat "$D.live")
export BLAMER_DIR=$D

n=0 fails=0
cmds=("list" "dump" "dump 3999001" "dump $livepid" "blame" "blame --dead" "postmortem"
      "top --once" "top --count 2 --interval 0.05" "status --backend dir")
echo "TAP version 13"
echo "1..$(( ${#cmds[@]} + 5 ))"
for c in "${cmds[@]}"; do
	n=$((n + 1))
	f=$D.j/$n.json
	# shellcheck disable=SC2086
	if "$B" $c --json >"$f" 2>"$f.err" && [ -s "$f" ] && $PY "$HERE/jsonschema_lite.py" "$SCHEMA" "$f" >"$f.v"; then
		echo "ok $n - blamer $c --json matches the schema ($(grep -c ^valid "$f.v") documents)"
	else
		fails=$((fails + 1))
		echo "not ok $n - blamer $c --json"
		sed 's/^/#   /' "$f.err" "$f.v" 2>/dev/null | head -20
	fi
done
# dump must carry the details a consumer relies on
n=$((n + 1))
if $PY - "$D.j/3.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 2 and d["kind"] == "snapshot"
p, = d["processes"]
assert p["pid"] == 3999001 and p["state"] == "dead" and p["health"] == "ok"
assert [a["label"] for a in p["threads"][0]["activities"]] == ["main-loop", "handle-request", "cache-lock"]
assert {f["name"]: f["value"] for f in p["user_data"]} == {"requests": 12, "role": "worker"}
assert [l["text"] for l in p["log"]][-1] == "cache warm"
t = {tuple(x["names"]): x["value"] for x in d["attribution"]["totals"] if x["unit_name"] == "cpu_ns"}
assert t[("browser", "tab", "frame")] == 5000000 * 3, t   # scale 1 + live scale 2
PYEOF
then echo "ok $n - dump --json content (activities, user data, log, totals)"
else fails=$((fails + 1)); echo "not ok $n - dump --json content"; fi
# a device's status, as status --json writes it (no device on the host)
n=$((n + 1))
if "$MK" - device-status >"$D.j/status.json" &&
   $PY "$HERE/jsonschema_lite.py" "$SCHEMA" "$D.j/status.json" >/dev/null &&
   $PY - "$D.j/status.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "status" and d["backend"] == "device" and d["max_user_orphans"] == 64
assert d["user_slabs"] == 3 and d["slabs"] == 12
assert d["parameters"] == {"max_user_orphans": "64", "reader_gid": "-1", 'odd "name"': "tab\there\x01"}
PYEOF
then echo "ok $n - a device status --json matches the schema"
else fails=$((fails + 1)); echo "not ok $n - device status --json"; fi
# the inclusive tree: each node's inclusive value is its own plus its subtree's
n=$((n + 1))
if $PY - "$D.j/6.json" <<'PYEOF'
import json, sys
a = json.load(open(sys.argv[1]))["attribution"]
units, tree = [u["unit_name"] for u in a["units"]], a["tree"]
assert units == ["cpu_ns", "bytes"], units
for i, t in enumerate(tree):
    below = [u for u in tree[i + 1:] if u["path"][:len(t["path"])] == t["path"]]
    kids = [u for u in below if len(u["path"]) == len(t["path"]) + 1]
    for k in range(len(units)):
        assert t["inclusive"][k] == t["self"][k] + sum(c["inclusive"][k] for c in kids), t
    assert t["processes"] >= max([c["processes"] for c in kids] or [0])
    # and the totals say the same
    for k, un in enumerate(units):
        assert t["inclusive"][k] == sum(x["value"] for x in a["totals"] if x["unit_name"] == un
                                        and x["path"][:len(t["path"])] == t["path"]), t
assert tree[0]["names"] == ["browser"] and tree[0]["inclusive"][0] > 0, tree[0]
PYEOF
then echo "ok $n - blame --dead --json: the inclusive tree adds up"
else fails=$((fails + 1)); echo "not ok $n - the inclusive tree"; fi
# negative controls: the validator must reject drift
n=$((n + 1))
sed 's/"schema_version":2/"schema_version":3/' "$D.j/2.json" >"$D.j/bad1.json"
if ! $PY "$HERE/jsonschema_lite.py" "$SCHEMA" "$D.j/bad1.json" >/dev/null; then
	echo "ok $n - a wrong schema_version is rejected"
else fails=$((fails + 1)); echo "not ok $n - a wrong schema_version passed"; fi
n=$((n + 1))
sed 's/"health":"ok"/"health":"fine","extra":1/' "$D.j/2.json" >"$D.j/bad2.json"
if ! $PY "$HERE/jsonschema_lite.py" "$SCHEMA" "$D.j/bad2.json" >/dev/null; then
	echo "ok $n - an unknown enum value and property are rejected"
else fails=$((fails + 1)); echo "not ok $n - bad health/extra property passed"; fi
[ "$fails" -eq 0 ]
