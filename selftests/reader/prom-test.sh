#!/bin/bash
# prometheus: `blamer export --prometheus` parsed by python3-prometheus-client's
# text parser (the format node_exporter's textfile collector reads).
#   prom-test.sh BLAMER MKHEAP
set -u
B=$1 MK=$2
PY=/usr/bin/python3
D=$(mktemp -d /tmp/blamer-prom.XXXXXX)
trap 'rm -rf "$D" "$D.prom"' EXIT
echo "TAP version 13"
echo "1..2"
if ! $PY -c 'import prometheus_client' 2>/dev/null; then
	echo "ok 1 # SKIP python3-prometheus-client not installed (scripts/deps.sh installs it)"
	echo "ok 2 # SKIP python3-prometheus-client not installed"
	exit 0
fi
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" dead 3999002 6 2 && "$MK" "$D" corrupt 3999003 7 || exit 1
if BLAMER_DIR=$D "$B" export --prometheus --dead >"$D.prom" &&
   $PY - "$D.prom" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
cpu = fams["blamer_attribution_cpu_seconds"]
assert cpu.type == "counter", cpu.type
v = {s.labels["path"]: s.value for s in cpu.samples if s.name.endswith("_total")}
# scales 1 + 2; the corrupt heap's list loops before its DAG records
assert abs(v["/browser/tab/frame"] - 0.015) < 1e-9, v
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
